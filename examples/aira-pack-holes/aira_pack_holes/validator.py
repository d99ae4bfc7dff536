"""The hole-to-edge DFM rule behind ``cap:holes.edgeDistance@1``.

It is no kernel: it judges the evaluated document only through the read-only view's query
capabilities (a body's bounding box, its circular edges), so it runs on any kernel that
admits those two queries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from aira_core.diagnostics import Diagnostic
from aira_core.extensions import ModelView, ValidationOutcome

REF = "holes.edgeDistance@1.0.0"
TOO_CLOSE = "HOLES_TOO_CLOSE_TO_EDGE"
ARGS_INVALID = "HOLES_ARGS_INVALID"
BOUNDING_BOX = "query.boundingBox@1.0.0"
SELECT = "query.selectEntities@1.0.0"
MAX_DISTANCE = 100.0
"""mm: a DFM margin beyond this is a typo, which only the validator's own check can tell."""
MAX_RATIO = 10.0


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


class HoleEdgeDistance:
    """For each full circular edge of the body (a hole's rim): the distance in XY from the
    circle to the nearest side of the body's bounding box, which must be at least
    ``minDistance`` and at least ``diameterRatio`` times the hole's diameter."""

    name = "acme-holes-edge-distance"
    ref = REF
    diagnostics = frozenset({TOO_CLOSE, ARGS_INVALID})
    fingerprint = "acme-holes-edge-distance/1"

    def check(self, inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        # the schema bounds types; these are the rule's own limits, told apart from typos
        minimum, ratio = inputs.get("minDistance"), inputs.get("diameterRatio", 0)
        if not _number(minimum) or not 0 < minimum <= MAX_DISTANCE:
            return [
                Diagnostic(
                    code=ARGS_INVALID,
                    message=f"minDistance must be a length in (0, {MAX_DISTANCE:g}] mm",
                )
            ]
        if not _number(ratio) or not 0 <= ratio <= MAX_RATIO:
            return [
                Diagnostic(
                    code=ARGS_INVALID, message=f"diameterRatio must be in [0, {MAX_RATIO:g}]"
                )
            ]
        return []

    def validate(self, view: ModelView, assertion: Any) -> ValidationOutcome:
        minimum = float(assertion.args["minDistance"])
        ratio = float(assertion.args.get("diameterRatio", 0))
        box = view.query(BOUNDING_BOX, {"target": assertion.target})
        xmin, ymin, _, xmax, ymax, _ = box.data["boundingBox"]
        edges = view.query(
            SELECT, {"target": assertion.target, "select": "%CIRCLE", "entity": "Edge"}
        ).data["entities"]
        # a full circle is a hole's rim; a fillet's arc is only part of one
        rims = [
            e for e in edges if math.isclose(e["length"], 2 * math.pi * e["radius"], rel_tol=1e-6)
        ]
        worst: tuple[float, float, float] | None = None  # (margin, distance, required)
        for e in rims:
            (x, y, _), r = e["center"], e["radius"]
            distance = min(x - r - xmin, xmax - x - r, y - r - ymin, ymax - y - r)
            required = max(minimum, ratio * 2 * r)
            if worst is None or distance - required < worst[0]:
                worst = (distance - required, distance, required)
        measured = {
            "holes": len({tuple(e["center"][:2]) for e in rims}),
            "minDistance": None if worst is None else round(worst[1], 6),
        }
        if worst is None or worst[0] >= -1e-9:
            return ValidationOutcome(assertion.id, True, measured)
        _, distance, required = worst
        return ValidationOutcome(
            assertion.id,
            False,
            measured,
            [
                Diagnostic(
                    code=TOO_CLOSE,
                    message=f"a hole's rim is {distance:.3g} mm from the edge of "
                    f"{assertion.target}; at least {required:.3g} mm is required",
                    expected={"minDistance": round(required, 6)},
                    actual={"minDistance": round(distance, 6)},
                )
            ],
        )
