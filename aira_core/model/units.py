"""Units of AMIR values: lengths in millimetres and angles in degrees unless a unit says
otherwise. A unit of another dimension is ``UNIT_MISMATCH``; an unknown one ``UNIT_UNKNOWN``."""

from __future__ import annotations

import math

from aira_core.contracts.amir import ParamType
from aira_core.diagnostics import AiraError

UNIT_MISMATCH = "UNIT_MISMATCH"
UNIT_UNKNOWN = "UNIT_UNKNOWN"

# Factor to the base unit of each dimension.
UNITS: dict[ParamType, dict[str, float]] = {
    ParamType.LENGTH: {"mm": 1.0, "cm": 10.0, "m": 1000.0, "um": 0.001, "in": 25.4, "ft": 304.8},
    ParamType.ANGLE: {"deg": 1.0, "rad": 180.0 / math.pi, "turn": 360.0},
}
BASE_UNIT = {ParamType.LENGTH: "mm", ParamType.ANGLE: "deg"}


def dimension_of(unit: object) -> ParamType | None:
    if not isinstance(unit, str):
        return None
    return next((dim for dim, table in UNITS.items() if unit in table), None)


def to_base(value: float, unit: str | None, expected: ParamType) -> float:
    """``value`` in ``unit`` converted to the base unit of ``expected`` (mm, deg).

    No unit means the base unit. Dimensionless types (Count, Real) take no unit.
    """
    if unit is None or unit == BASE_UNIT.get(expected):
        return value
    if not isinstance(unit, str):
        raise AiraError(UNIT_UNKNOWN, f"a unit is a name such as 'mm', not {unit!r}")
    dim = dimension_of(unit)
    if dim is None:
        raise AiraError(
            UNIT_UNKNOWN,
            f"unknown unit {unit!r}; known: "
            + ", ".join(u for table in UNITS.values() for u in table),
        )
    if dim != expected:
        raise AiraError(
            UNIT_MISMATCH, f"a {expected.value} cannot be given in {unit!r}, a unit of {dim.value}"
        )
    return value * UNITS[dim][unit]
