"""Units of AMIR values: defined in :mod:`aira_core.contracts.amir` (the public vocabulary the
host and the kernels share); imported here for callers of the old location."""

from __future__ import annotations

from aira_core.contracts.amir import (
    BASE_UNIT,
    UNIT_MISMATCH,
    UNIT_UNKNOWN,
    UNITS,
    dimension_of,
    to_base,
)

__all__ = ["BASE_UNIT", "UNITS", "UNIT_MISMATCH", "UNIT_UNKNOWN", "dimension_of", "to_base"]
