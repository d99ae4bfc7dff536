"""A FAKE geometry kernel for tests: analytic boxes and vertical-edge fillets, no CAD.

:class:`FakeGeometryKernel` implements the :class:`aira_core.extensions.Kernel` protocol by
arithmetic, the way ``httpx.MockTransport`` implements a transport without a network: a
plugin author (or the runtime's own tests) can evaluate, query, validate and export AMIR
documents without cadquery or OpenCASCADE. It knows five operations, declared by the
package in :mod:`aira_core.testing.package`. It is not a CAD kernel and must never be
registered outside tests.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aira_core.contracts.amir import (
    AmirDocument,
    Assertion,
    LiteralInput,
    Node,
    NodeInput,
    ParamInput,
    ParamType,
    SemanticInput,
    dimension_of,
    to_base,
)
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import (
    BodyResult,
    Evaluation,
    Implementation,
    QueryResult,
    ValidationOutcome,
)
from aira_core.testing.package import (
    BOX,
    BOX_DIMENSION_NONPOSITIVE,
    FILLET,
    FILLET_RADIUS_TOO_LARGE,
    MASS_PROPERTIES,
    MESH_BOX,
    QUERY_TARGET_UNKNOWN,
    SELECTION_EMPTY,
    VOLUME_OUT_OF_RANGE,
    VOLUME_RANGE,
    fake_implementations,
    fake_kernel_manifest,
)

KERNEL_OPERATION_UNKNOWN = "KERNEL_OPERATION_UNKNOWN"
KERNEL_METHODS = ("evaluate", "query", "validate", "export")


@dataclass(frozen=True)
class Solid:
    """An analytic solid: a box ``length × width × height``, optionally with its four
    vertical edges filleted at ``radius``; ``representation`` is ExactSolid or MeshSolid."""

    length: float
    width: float
    height: float
    centered: bool = True
    radius: float = 0.0
    representation: str = "ExactSolid"

    @property
    def volume(self) -> float:
        r = self.radius
        return self.length * self.width * self.height - 4 * (1 - math.pi / 4) * r * r * self.height

    @property
    def area(self) -> float:
        l, w, h, r = self.length, self.width, self.height, self.radius  # noqa: E741
        sides = 2 * (l + w) * h - 4 * (2 * r - math.pi * r / 2) * h
        caps = 2 * (l * w - 4 * (1 - math.pi / 4) * r * r)
        return sides + caps

    @property
    def bounding_box(self) -> tuple[float, float, float, float, float, float]:
        l, w, h = self.length, self.width, self.height  # noqa: E741
        if self.centered:
            return (-l / 2, -w / 2, -h / 2, l / 2, w / 2, h / 2)
        return (0.0, 0.0, 0.0, l, w, h)

    def result(self) -> BodyResult:
        return BodyResult(
            valid=True, volume=self.volume, area=self.area, bounding_box=self.bounding_box
        )


def box_volume(length: float, width: float, height: float, radius: float = 0.0) -> float:
    """The analytic volume the fake kernel computes (for expectations in tests)."""
    return Solid(length, width, height, radius=radius).volume


# What one node computed: its solid, or a failure (code, message) for that node.
_Outcome = tuple[Solid | None, tuple[str, str] | None]


class FakeGeometryKernel:
    """A FAKE geometry kernel for tests: analytic boxes and vertical-edge fillets, no CAD.
    Not for production: it knows five operations and computes them by formula.

    - ``exact.box@1.0.0`` / ``mesh.box@1.0.0``: an ``l × w × h`` solid (centered by default);
    - ``exact.fillet@1.0.0`` with ``select`` ``"|Z"``: the four vertical edges rounded,
      volume ``l·w·h − 4·(1 − π/4)·r²·h``; ``FILLET_RADIUS_TOO_LARGE`` (subject: the node
      id) when ``r ≥ min(l, w)/2``, ``SELECTION_EMPTY`` for a selector it does not know;
    - ``validate.volumeRange@1.0.0``, ``query.massProperties@1.0.0``, ``export`` as JSON.

    Nodes are cached by ``(op, resolved inputs)``: a node whose operation and resolved
    inputs (parameter values in mm, upstream solids) are unchanged is served from the cache
    and not listed in ``evaluated_nodes``. ``calls`` counts every call of each Kernel method
    so that tests can assert the runtime never reached the kernel; ``changed_args`` records
    the ``changed`` argument of each ``evaluate``, ``export_tolerances`` the ``(tolerance,
    angular_tolerance)`` of each ``export`` (the JSON it writes has no mesh to apply them to).

    ``implementations`` are what :meth:`implementations` lists for conformance; by default
    accept-all ones for every target of :func:`~aira_core.testing.package.fake_kernel_manifest`,
    so that package is admitted with this kernel registered and no implementations of its own.
    """

    name = "fake-analytic"
    build_hash = "fake:analytic:1"

    def __init__(self, implementations: Sequence[Implementation] | None = None) -> None:
        self._implementations = list(
            implementations
            if implementations is not None
            else fake_implementations(fake_kernel_manifest())
        )
        self.calls: Counter[str] = Counter()
        self.evaluated_nodes: list[str] = []
        self.evaluations: list[list[str]] = []
        self.changed_args: list[set[str] | None] = []
        self.export_tolerances: list[tuple[float | None, float | None]] = []
        self.cache: dict[Any, _Outcome] = {}
        self.on_evaluate: Callable[[AmirDocument], None] | None = None
        """Called at the start of ``evaluate`` (e.g. to simulate a concurrent writer)."""

    @property
    def total_calls(self) -> int:
        return sum(self.calls[m] for m in KERNEL_METHODS)

    def implementations(self) -> Sequence[Implementation]:
        return list(self._implementations)

    # -- geometry ----------------------------------------------------------------------------

    @staticmethod
    def _scalar(document: AmirDocument, value: Any) -> Any:
        if isinstance(value, ParamInput):
            param = next((p for p in document.parameters if p.id == value.param), None)
            if param is None:
                return None
            if param.type in (ParamType.LENGTH, ParamType.ANGLE) and not isinstance(
                param.value, bool
            ):
                return to_base(float(param.value), param.unit, param.type)
            return param.value
        if isinstance(value, LiteralInput):
            if value.unit is not None and isinstance(value.value, int | float):
                dim = dimension_of(value.unit)
                return to_base(float(value.value), value.unit, dim or ParamType.LENGTH)
            return value.value
        return value

    def _node(
        self,
        document: AmirDocument,
        node_id: str,
        memo: dict[str, _Outcome],
        evaluated: list[str],
    ) -> _Outcome:
        if node_id in memo:
            return memo[node_id]
        node: Node | None = next((n for n in document.nodes if n.id == node_id), None)
        if node is None:
            memo[node_id] = (None, (KERNEL_OPERATION_UNKNOWN, f"no node {node_id!r}"))
            return memo[node_id]
        resolved: dict[str, Any] = {}
        for name, value in node.inputs.items():
            if isinstance(value, NodeInput):
                solid, _failure = self._node(document, value.node, memo, evaluated)
                if solid is None:  # an upstream failure is reported on the upstream node
                    memo[node_id] = (None, None)
                    return memo[node_id]
                resolved[name] = solid
            elif isinstance(value, SemanticInput):
                source = value.body if value.node is None else f"node {value.node}"
                resolved[name] = (source, value.select, value.entity.value)
            else:
                resolved[name] = self._scalar(document, value)
        key = (node.op, tuple(sorted(resolved.items())))
        outcome = self.cache.get(key)
        if outcome is None:
            outcome = self._compute(node.op, resolved)
            self.cache[key] = outcome
            evaluated.append(node_id)
        memo[node_id] = outcome
        return outcome

    @staticmethod
    def _compute(op: str, inputs: Mapping[str, Any]) -> _Outcome:
        if op in (BOX, MESH_BOX):
            dims = [inputs.get(k) for k in ("length", "width", "height")]
            if not all(isinstance(x, int | float) and x > 0 for x in dims):
                return None, (BOX_DIMENSION_NONPOSITIVE, f"box dimensions {dims} must be > 0")
            representation = "MeshSolid" if op == MESH_BOX else "ExactSolid"
            length, width, height = (float(x) for x in dims)  # type: ignore[arg-type]
            centered = bool(inputs.get("centered", True))
            return Solid(length, width, height, centered, 0.0, representation), None
        if op == FILLET:
            target, edges, radius = inputs.get("target"), inputs.get("edges"), inputs.get("radius")
            if not isinstance(target, Solid) or not isinstance(radius, int | float):
                return None, (SELECTION_EMPTY, "the fillet has no solid to work on")
            select = edges[1] if isinstance(edges, tuple) else None
            if select != "|Z" or target.radius > 0:
                return None, (SELECTION_EMPTY, f"selector {select!r} selects no sharp edge")
            if radius >= min(target.length, target.width) / 2:
                return None, (
                    FILLET_RADIUS_TOO_LARGE,
                    f"radius {radius:g} mm reaches half the smaller side "
                    f"({min(target.length, target.width):g} mm)",
                )
            return Solid(
                target.length,
                target.width,
                target.height,
                target.centered,
                float(radius),
                target.representation,
            ), None
        return None, (KERNEL_OPERATION_UNKNOWN, f"the fake kernel does not implement {op}")

    def _body_solid(self, document: AmirDocument, body_id: str) -> Solid | None:
        body = next((b for b in document.bodies if b.id == body_id), None)
        if body is None:
            return None
        return self._node(document, body.tip, {}, [])[0]

    # -- the Kernel protocol -----------------------------------------------------------------

    def evaluate(
        self, document: AmirDocument, changed: Collection[str] | None = None
    ) -> Evaluation:
        self.calls["evaluate"] += 1
        self.changed_args.append(None if changed is None else set(changed))
        if self.on_evaluate is not None:
            self.on_evaluate(document)
        memo: dict[str, _Outcome] = {}
        evaluated: list[str] = []
        for node in document.nodes:
            self._node(document, node.id, memo, evaluated)
        diagnostics = [
            Diagnostic(code=failure[0], message=failure[1], subject=node_id)
            for node_id, (_, failure) in memo.items()
            if failure is not None
        ]
        bodies = {
            b.id: (s.result() if (s := memo[b.tip][0]) is not None else BodyResult(valid=False))
            for b in document.bodies
        }
        self.evaluated_nodes = evaluated
        self.evaluations.append(evaluated)
        return Evaluation(bodies=bodies, evaluated_nodes=evaluated, diagnostics=diagnostics)

    def query(self, document: AmirDocument, ref: str, args: Mapping[str, Any]) -> QueryResult:
        self.calls["query"] += 1
        if ref != MASS_PROPERTIES:
            return QueryResult({}, [Diagnostic(code=KERNEL_OPERATION_UNKNOWN, message=ref)])
        target = args.get("target")
        solid = self._body_solid(document, str(target))
        if solid is None and any(n.id == target for n in document.nodes):
            solid = self._node(document, str(target), {}, [])[0]
        if solid is None:
            return QueryResult(
                {},
                [
                    Diagnostic(
                        code=QUERY_TARGET_UNKNOWN,
                        message=f"{target!r} is neither a body nor a node of the document",
                        subject=str(target),
                    )
                ],
            )
        return QueryResult(
            {
                "volume": solid.volume,
                "area": solid.area,
                "boundingBox": list(solid.bounding_box),
            }
        )

    def validate(self, document: AmirDocument, assertion: Assertion) -> ValidationOutcome:
        self.calls["validate"] += 1
        if assertion.validator_ref != VOLUME_RANGE:
            return ValidationOutcome(
                assertion.id,
                False,
                diagnostics=[
                    Diagnostic(
                        code=KERNEL_OPERATION_UNKNOWN,
                        message=f"no validator {assertion.validator_ref}",
                        subject=assertion.id,
                    )
                ],
            )
        solid = self._body_solid(document, assertion.target)
        if solid is None:
            return ValidationOutcome(
                assertion.id,
                False,
                diagnostics=[
                    Diagnostic(
                        code=QUERY_TARGET_UNKNOWN,
                        message=f"no body {assertion.target!r}",
                        subject=assertion.id,
                    )
                ],
            )
        low = self._scalar(document, assertion.args.get("min"))
        high = self._scalar(document, assertion.args.get("max"))
        volume = solid.volume
        passed = (low is None or volume >= low) and (high is None or volume <= high)
        diagnostics = (
            []
            if passed
            else [
                Diagnostic(
                    code=VOLUME_OUT_OF_RANGE,
                    message=f"volume {volume:g} mm³ is outside [{low}, {high}]",
                    subject=assertion.id,
                )
            ]
        )
        return ValidationOutcome(assertion.id, passed, {"volume": volume}, diagnostics)

    def export(
        self,
        document: AmirDocument,
        format: str,
        body: str | None = None,
        *,
        tolerance: float | None = None,
        angular_tolerance: float | None = None,
    ) -> bytes:
        self.calls["export"] += 1
        self.export_tolerances.append((tolerance, angular_tolerance))
        if format != "json":
            return b""
        out = {}
        for b in document.bodies:
            if body is not None and b.id != body:
                continue
            solid = self._body_solid(document, b.id)
            out[b.id] = None if solid is None else {"volume": solid.volume}
        return json.dumps(out, sort_keys=True).encode()
