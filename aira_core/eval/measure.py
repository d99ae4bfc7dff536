"""Measure a model's part on a kernel, for :func:`aira_core.eval.checks.score`: volume,
bounding box and solids of every body (the kernel's ``massProperties``, ``boundingBox`` and
``topology`` queries), and the cylindrical faces each hole and fillet check asks about
(``selectEntities`` with a radius range). Every call goes through
:mod:`aira_core.kernel_guard`: a kernel that fails a measure leaves it unmeasured (and the
check that needed it failed), never a traceback.

The queries are the OCCT kernel's (``query.*@1.0.0``); a kernel without them measures
nothing, and its part fails every check with the kernel's own diagnostic as the reason.
"""

from __future__ import annotations

from typing import Any

from aira_core.eval.checks import Measures
from aira_core.eval.suite import Checks

MASS = "query.massProperties@1.0.0"
BOX = "query.boundingBox@1.0.0"
TOPOLOGY = "query.topology@1.0.0"
SELECT = "query.selectEntities@1.0.0"


def measure(kernel: Any, document: Any, checks: Checks) -> Measures:
    """What ``checks`` needs to know of every body of ``document`` (an AMIR document)."""
    from aira_core.kernel_guard import KernelFailure, finite
    from aira_core.kernel_guard import query as guarded_query

    problems: list[str] = []

    def ask(ref: str, args: dict[str, Any]) -> dict[str, Any] | None:
        try:
            answer = guarded_query(kernel, document, ref, args)
        except KernelFailure as exc:
            problems.append(f"{exc.code}: {exc.diagnostic.message}")
            return None
        if answer.diagnostics:
            first = answer.diagnostics[0]
            problems.append(f"{first.code}: {first.message}")
            return None
        return dict(answer.data)

    bodies = [b.id for b in getattr(document, "bodies", ())]
    volume: float | None = 0.0
    solids, watertight = 0, True
    low, high = [float("inf")] * 3, [float("-inf")] * 3
    for body in bodies:
        mass = ask(MASS, {"target": body})
        if mass is None or not finite(mass.get("volume")):
            watertight, volume = False, None
        elif volume is not None:
            volume += float(mass["volume"])
        topology = ask(TOPOLOGY, {"target": body})
        if topology is not None and _count(topology.get("solids")):
            solids += int(topology["solids"])
        box = ask(BOX, {"target": body})
        corners = box.get("boundingBox") if box else None
        if isinstance(corners, list) and len(corners) == 6 and all(map(finite, corners)):
            low = [min(a, float(b)) for a, b in zip(low, corners[:3], strict=True)]
            high = [max(a, float(b)) for a, b in zip(high, corners[3:], strict=True)]
    size = None
    if bodies and all(h >= lo for lo, h in zip(low, high, strict=True)):
        size = (high[0] - low[0], high[1] - low[1], high[2] - low[2])
    cylinders: dict[str, int] = {}
    for feature in checks.features():
        low, high = feature.radii()
        found = 0
        for body in bodies:
            picked = ask(
                SELECT,
                {
                    "target": body,
                    "entity": "Face",
                    "select": "%CYLINDER",
                    "radius": {"min": max(low, 1e-9), "max": high},
                },
            )
            if picked is not None and _count(picked.get("count")):
                found += int(picked["count"])
        cylinders[feature.key()] = found
    return Measures(
        bodies=len(bodies),
        solids=solids,
        watertight=watertight and bool(bodies),
        volume=volume if bodies else None,
        size=size,
        cylinders=cylinders,
        problems=tuple(problems),
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
