"""A part's measures against its task's :class:`~aira_core.eval.suite.Checks`: one
:class:`Outcome` per check, each saying what was expected and what was measured, so a
failing task names the check it failed. Pure: the measuring is
:mod:`aira_core.eval.measure`'s."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from aira_core.eval.suite import Checks


@dataclass(frozen=True)
class Measures:
    """What was measured of a part (every body of the final model together)."""

    bodies: int
    """Bodies in the model (0: the model is empty)."""
    solids: int
    watertight: bool
    """Every body a valid closed solid."""
    volume: float | None = None
    """mm³, summed over the bodies (None when a body had none to measure)."""
    size: tuple[float, float, float] | None = None
    """The extents (mm) of the bodies' joint axis-aligned bounding box."""
    cylinders: Mapping[str, int] = field(default_factory=dict)
    """How many cylindrical faces each feature check found, by the check's
    :meth:`~aira_core.eval.suite.FeatureCheck.key` (``hole:4.5``, ``fillet:3``)."""
    problems: tuple[str, ...] = ()
    """What the kernel said when a measure could not be taken."""

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Outcome:
    check: str
    """``volume``, ``boundingBox``, ``components``, ``watertight``, ``hole:<d>``,
    ``fillet:<r>``."""
    passed: bool
    expected: Any
    measured: Any
    message: str

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)


def score(checks: Checks, m: Measures) -> list[Outcome]:
    """Every check of ``checks`` applied to ``m``, in a fixed order."""
    out: list[Outcome] = []
    if m.bodies == 0:
        return [Outcome("part", False, "a part", "no body", "the model has no body")]
    if checks.watertight:
        out.append(
            Outcome(
                "watertight",
                m.watertight,
                True,
                m.watertight,
                "every body is a valid closed solid"
                if m.watertight
                else "a body is not a valid closed solid"
                + (f": {m.problems[0]}" if m.problems else ""),
            )
        )
    if checks.components is not None:
        ok = m.solids == checks.components
        out.append(
            Outcome(
                "components",
                ok,
                checks.components,
                m.solids,
                f"{m.solids} solid(s), {checks.components} expected",
            )
        )
    if checks.volume is not None:
        want, tol = checks.volume.value, checks.volume.rel_tol
        if m.volume is None:
            out.append(Outcome("volume", False, want, None, "no volume could be measured"))
        else:
            off = abs(m.volume - want) / want
            out.append(
                Outcome(
                    "volume",
                    off <= tol,
                    want,
                    round(m.volume, 3),
                    f"{m.volume:.1f} mm³ against {want:g} mm³ ({off:.1%} off, {tol:.0%} allowed)",
                )
            )
    if checks.bounding_box is not None:
        box = checks.bounding_box
        if m.size is None:
            out.append(Outcome("boundingBox", False, list(box.size), None, "no bounding box"))
        else:
            want = list(box.size) if box.oriented else sorted(box.size, reverse=True)
            got = list(m.size) if box.oriented else sorted(m.size, reverse=True)
            worst = max(abs(a - b) for a, b in zip(want, got, strict=True))
            out.append(
                Outcome(
                    "boundingBox",
                    worst <= box.tol,
                    want,
                    [round(g, 3) for g in got],
                    " x ".join(f"{g:.2f}" for g in got)
                    + f" mm against {' x '.join(f'{w:g}' for w in want)} mm "
                    f"({worst:.2f} mm off at most, {box.tol:g} allowed)",
                )
            )
    for feature in checks.features():
        found = m.cylinders.get(feature.key(), 0)
        out.append(
            Outcome(
                feature.key(),
                found == feature.count,
                feature.count,
                found,
                f"{found} cylindrical face(s) of {feature.said()} ± {feature.tol:g} mm, "
                f"{feature.count} expected",
            )
        )
    return out


def passed(outcomes: list[Outcome]) -> bool:
    return bool(outcomes) and all(o.passed for o in outcomes)
