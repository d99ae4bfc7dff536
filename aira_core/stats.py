"""Percentiles of measured samples: the one implementation the benchmarks and
``aira bench providers`` (:mod:`aira_core.gateway.bench`) report with.

A percentile is the inclusive quantile of :func:`statistics.quantiles` (linear interpolation
between the two samples around the position ``p / 100 * (len - 1)`` of the sorted samples;
the 50th is the median), or, with ``interpolate=False``, the sample at the position rounded
to the nearest one: always a value that was measured. One sample is every percentile.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from fractions import Fraction


def percentile(samples: Iterable[float], p: int | float, *, interpolate: bool = True) -> float:
    """The ``p``-th percentile (0 to 100) of ``samples`` (at least one)."""
    ordered = sorted(samples)
    if not ordered:
        raise ValueError("a percentile of no samples")
    if not 0 <= p <= 100:
        raise ValueError(f"a percentile is from 0 to 100, not {p}")
    if not interpolate:
        return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]
    # the i-th of n cut points, in lowest terms: p = 95 is the 19th of 20, p = 50 the median
    q = Fraction(p) / 100
    if len(ordered) == 1 or q.numerator == 0:
        return ordered[0]
    if q.numerator == q.denominator:
        return ordered[-1]
    return statistics.quantiles(ordered, n=q.denominator, method="inclusive")[q.numerator - 1]


def quantiles(samples: Iterable[float], *ps: int) -> dict[str, float]:
    """``{"min": …, "p50": …, …, "max": …}``: the extremes of ``samples`` and the
    interpolated percentile of each of ``ps``, in that order."""
    ordered = sorted(samples)
    return {
        "min": percentile(ordered, 0),
        **{f"p{p}": percentile(ordered, p) for p in ps},
        "max": percentile(ordered, 100),
    }
