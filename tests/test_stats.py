"""aira_core.stats: the percentiles the benchmarks and ``aira bench providers`` report."""

from __future__ import annotations

import random
import statistics

import pytest

from aira_core.stats import percentile, quantiles


def samples(count: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.lognormvariate(-7, 1) for _ in range(count)]


@pytest.mark.parametrize("count", [2, 3, 10, 11, 200])
def test_an_interpolated_percentile_is_the_inclusive_quantile_to_the_bit(count: int) -> None:
    xs = samples(count, count)
    assert percentile(xs, 50) == statistics.median(xs)
    assert percentile(xs, 90) == statistics.quantiles(xs, n=10, method="inclusive")[8]
    assert percentile(xs, 95) == statistics.quantiles(xs, n=20, method="inclusive")[18]
    assert percentile(xs, 99) == statistics.quantiles(xs, n=100, method="inclusive")[98]
    assert (percentile(xs, 0), percentile(xs, 100)) == (min(xs), max(xs))


def test_without_interpolation_a_percentile_is_a_measured_sample() -> None:
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0]  # sorted: 1 2 3 4 5 10, at positions 0 to 5
    assert percentile(xs, 50, interpolate=False) == 3.0  # position 2.5, rounded half to even
    assert percentile(xs, 90, interpolate=False) == 5.0  # position 4.5: 4
    assert percentile(xs, 95, interpolate=False) == 10.0  # position 4.75: 5
    assert (percentile(xs, 50), percentile(xs, 90)) == (3.5, 7.5)  # interpolated


def test_one_sample_is_every_percentile_and_none_is_refused() -> None:
    assert {percentile([0.25], p) for p in (0, 50, 95, 100)} == {0.25}
    assert percentile([0.25], 90, interpolate=False) == 0.25
    assert quantiles([0.25], 50, 95) == {"min": 0.25, "p50": 0.25, "p95": 0.25, "max": 0.25}
    with pytest.raises(ValueError, match="no samples"):
        percentile([], 50)
    with pytest.raises(ValueError, match="from 0 to 100"):
        percentile([1.0, 2.0], 101)


def test_quantiles_are_min_the_percentiles_then_max_in_that_order() -> None:
    xs = samples(40, 1)
    got = quantiles(xs, 50, 90)
    assert list(got) == ["min", "p50", "p90", "max"]
    assert got == {
        "min": min(xs),
        "p50": statistics.median(xs),
        "p90": statistics.quantiles(xs, n=10, method="inclusive")[8],
        "max": max(xs),
    }
