"""Test-only builders for the plan runtime: a signed capability package, a FAKE kernel and
a ready :class:`PlanContext` over a fresh revision store.

Everything here is a test fake. The package ``test.runtime`` declares a small exact-modelling
vocabulary (box, fillet, a mesh box, a volume-range validator, a mass-properties query and the
two parameter patch templates) whose input schemas carry ``x-amir-type``; its
implementations are in-process stand-ins that accept every input. :class:`FakeGeometryKernel`
computes geometry analytically (boxes and vertical-edge fillets only); it is not a CAD kernel.
Production code never imports this module.
"""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amir_factory import commit_patch
from factory import Signer, accept_all, package_source, trust_policy

from aira_core.catalog.catalog import Catalog, build_catalog
from aira_core.catalog.state import CatalogState
from aira_core.catalog.trust import TrustPolicy
from aira_core.contracts.amir import (
    AmirDocument,
    Assertion,
    LiteralInput,
    Node,
    NodeInput,
    ParamInput,
    ParamType,
    SemanticInput,
)
from aira_core.contracts.capability import SessionGrant
from aira_core.contracts.plan import IntentFrame, Plan, PlanStep
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import (
    BodyResult,
    Evaluation,
    Implementation,
    QueryResult,
    ValidationOutcome,
)
from aira_core.model.repository import ModelRepository
from aira_core.model.units import dimension_of, to_base
from aira_core.plugins import Registered, Registry
from aira_core.runtime.plan import LOCAL_GRANT, PlanContext, capability_index, node_signatures

PACKAGE = "test.runtime"
PUBLISHER = "test-vendor"
PLUGIN = "runtime-tests"

BOX = "exact.box@1.0.0"
MESH_BOX = "mesh.box@1.0.0"
FILLET = "exact.fillet@1.0.0"
VOLUME_RANGE = "validate.volumeRange@1.0.0"
MASS_PROPERTIES = "query.massProperties@1.0.0"
PARAMETER_DEFINE = "parameter.define@1.0.0"
PARAMETER_SET = "parameter.set@1.0.0"

BOX_CAP = "cap:exact.box@1"
MESH_BOX_CAP = "cap:mesh.box@1"
FILLET_CAP = "cap:exact.fillet@1"
VOLUME_RANGE_CAP = "cap:validate.volumeRange@1"
MASS_PROPERTIES_CAP = "cap:query.massProperties@1"
DEFINE_CAP = "cap:parameter.define@1"
SET_CAP = "cap:parameter.set@1"

FILLET_RADIUS_TOO_LARGE = "FILLET_RADIUS_TOO_LARGE"
SELECTION_EMPTY = "SELECTION_EMPTY"
VOLUME_OUT_OF_RANGE = "VOLUME_OUT_OF_RANGE"
QUERY_TARGET_UNKNOWN = "QUERY_TARGET_UNKNOWN"
KERNEL_OPERATION_UNKNOWN = "KERNEL_OPERATION_UNKNOWN"
KERNEL_METHODS = ("evaluate", "query", "validate", "export")

LENGTH = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
SHAPE = {"type": "string", "x-amir-type": "Shape"}
REAL = {"type": "number", "x-amir-type": "Real"}
SELECTION = {
    "type": "object",
    "x-amir-type": "Selection",
    "properties": {
        "body": {"type": "string"},
        "select": {"type": "string"},
        "entity": {"enum": ["Edge", "Face"]},
    },
    "required": ["body", "select"],
}
PARAM_TYPES = [t.value for t in ParamType]


# -- the package ---------------------------------------------------------------------------------


def _io(kind: str, ref: str, part: str) -> str:
    name, version = ref.split("@")
    return f"amir://{kind}/{name}/{version}/{part}"


def _box_schema(length: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "length": dict(length),
            "width": dict(length),
            "height": dict(length),
            "centered": {"type": "boolean", "x-amir-type": "Bool"},
        },
        "required": ["length", "width", "height"],
        "additionalProperties": False,
    }


def _box_descriptor(cap: str, ref: str, taxonomy: str, produces: str) -> dict[str, Any]:
    mesh = produces != "ExactSolid"
    return {
        "capabilityId": cap,
        "kind": "authoring.operation",
        "operationRef": ref,
        "profileVersion": "1.0.0",
        "title": "Mesh box" if mesh else "Box",
        "summary": "A triangulated box." if mesh else "An exact box from length, width, height.",
        "aliases": ["cuboid", "block"],
        "taxonomy": {"primary": taxonomy, "facets": ["primitive"]},
        "intentExamples": ["a 20 mm mesh cube"] if mesh else ["make a 40 by 30 by 10 mm plate"],
        "inputExamples": [{"title": "plate", "input": {"length": 40, "width": 30, "height": 10}}],
        "inputs": {"schemaRef": _io("ops", ref, "input"), "semanticTypes": ["Length"]},
        "outputs": {"schemaRef": _io("ops", ref, "output"), "semanticTypes": [produces]},
        "defaults": {"centered": True},
        "applicability": {"predicates": [{"id": "input.positive", "args": {"input": "length"}}]},
        "effects": ["createsFeature", "additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "interactive"},
        "diagnostics": ["BOX_DIMENSION_NONPOSITIVE"],
        "relations": {"produces": [produces]},
    }


def _fillet_descriptor() -> dict[str, Any]:
    return {
        "capabilityId": FILLET_CAP,
        "kind": "authoring.operation",
        "operationRef": FILLET,
        "profileVersion": "1.0.0",
        "title": "Fillet edges",
        "summary": "Round selected edges of an exact solid.",
        "taxonomy": {"primary": "authoring.exact.finishing"},
        "intentExamples": ["round the vertical edges of the plate by 2 mm"],
        "inputExamples": [
            {
                "input": {
                    "target": "b:plate",
                    "edges": {"body": "b:plate", "select": "|Z", "entity": "Edge"},
                    "radius": 2,
                }
            }
        ],
        "inputs": {
            "schemaRef": _io("ops", FILLET, "input"),
            "semanticTypes": ["ExactSolid", "EntitySet<Edge>", "Length"],
        },
        "outputs": {"schemaRef": _io("ops", FILLET, "output"), "semanticTypes": ["ExactSolid"]},
        "applicability": {
            "requiresRepresentation": ["ExactSolid"],
            "selection": {"entityKind": "Edge", "cardinality": "oneOrMore"},
            "predicates": [{"id": "input.greaterThanTolerance", "args": {"input": "radius"}}],
        },
        "effects": ["createsFeature", "changesTopology"],
        "risk": {"level": "medium", "mayInvalidateRefs": True},
        "execution": {
            "quality": ["preview", "authoritative"],
            "costClass": "interactive-to-heavy",
            "cancellable": True,
        },
        "diagnostics": [FILLET_RADIUS_TOO_LARGE, SELECTION_EMPTY],
        "guidance": {
            "failureModes": [
                {
                    "diagnostic": FILLET_RADIUS_TOO_LARGE,
                    "explanation": "the radius reaches half the smaller side of the face",
                    "repair": "reduce the radius",
                }
            ]
        },
        "relations": {"composesWith": [BOX_CAP], "accepts": ["ExactSolid"]},
    }


def _read_only(
    cap: str, kind: str, target_field: str, ref: str, taxonomy: str, extra: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "capabilityId": cap,
        "kind": kind,
        target_field: ref,
        "profileVersion": "1.0.0",
        "inputs": {"schemaRef": _io("ops", ref, "input"), "semanticTypes": ["ExactSolid"]},
        "taxonomy": {"primary": taxonomy},
        "effects": ["readOnly"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "instant"},
        **extra,
    }


def _validator_descriptor() -> dict[str, Any]:
    return _read_only(
        VOLUME_RANGE_CAP,
        "validator",
        "validatorRef",
        VOLUME_RANGE,
        "validation.geometric",
        {
            "title": "Volume range",
            "summary": "The body's volume lies within [min, max] mm³.",
            "intentExamples": ["the plate must weigh in between 10 and 20 cm³"],
            "inputExamples": [{"input": {"target": "b:plate", "min": 1000, "max": 20000}}],
            "diagnostics": [VOLUME_OUT_OF_RANGE],
        },
    )


def _query_descriptor() -> dict[str, Any]:
    return _read_only(
        MASS_PROPERTIES_CAP,
        "model.query",
        "queryRef",
        MASS_PROPERTIES,
        "query.geometric",
        {
            "title": "Mass properties",
            "summary": "Volume, area and bounding box of a body.",
            "intentExamples": ["how big is the plate"],
            "inputExamples": [{"input": {"target": "b:plate"}}],
            "diagnostics": [QUERY_TARGET_UNKNOWN],
        },
    )


def _template_descriptor(cap: str, ref: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "capabilityId": cap,
        "kind": "authoring.operation",
        "patchTemplateRef": ref,
        "profileVersion": "1.0.0",
        "inputs": {"schemaRef": _io("templates", ref, "input")},
        "taxonomy": {"primary": "authoring"},
        "effects": ["additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "instant"},
        **extra,
    }


def runtime_manifest(
    name: str = PACKAGE, version: str = "1.0.0", publisher: str = PUBLISHER
) -> dict[str, Any]:
    """The lint-clean manifest of the runtime test package (a test fixture, not a product)."""
    descriptors = [
        _box_descriptor(BOX_CAP, BOX, "authoring.exact.primitive", "ExactSolid"),
        _fillet_descriptor(),
        _validator_descriptor(),
        _query_descriptor(),
        _template_descriptor(
            DEFINE_CAP,
            PARAMETER_DEFINE,
            {
                "title": "Define a parameter",
                "summary": "Add a named, typed parameter with a value, a unit and bounds.",
                "intentExamples": ["let the width be a parameter of 40 mm"],
                "inputExamples": [
                    {"input": {"name": "width", "value": 40, "unit": "mm", "type": "Length"}}
                ],
                "defaults": {"type": "Length"},
            },
        ),
        _template_descriptor(
            SET_CAP,
            PARAMETER_SET,
            {
                "title": "Set a parameter",
                "summary": "Change the value of an existing parameter.",
                "intentExamples": ["make the width 50 mm"],
                "inputExamples": [{"input": {"parameter": "p:width", "value": 50}}],
            },
        ),
        _box_descriptor(MESH_BOX_CAP, MESH_BOX, "authoring.mesh", "MeshSolid"),
    ]
    value = {"type": ["number", "boolean", "string"]}
    schemas = {
        _io("ops", BOX, "input"): _box_schema(LENGTH),
        _io("ops", BOX, "output"): {"type": "object"},
        _io("ops", MESH_BOX, "input"): _box_schema(LENGTH),
        _io("ops", MESH_BOX, "output"): {"type": "object"},
        _io("ops", FILLET, "input"): {
            "type": "object",
            "properties": {
                "target": SHAPE,
                "edges": SELECTION,
                "radius": {"type": "number", "x-amir-type": "Length"},
            },
            "required": ["target", "edges", "radius"],
            "additionalProperties": False,
        },
        _io("ops", FILLET, "output"): {"type": "object"},
        _io("ops", VOLUME_RANGE, "input"): {
            "type": "object",
            "properties": {"target": SHAPE, "min": REAL, "max": REAL},
            "required": ["target"],
            "additionalProperties": False,
        },
        _io("ops", MASS_PROPERTIES, "input"): {
            "type": "object",
            "properties": {"target": SHAPE},
            "required": ["target"],
            "additionalProperties": False,
        },
        _io("templates", PARAMETER_DEFINE, "input"): {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,47}$"},
                "value": value,
                "unit": {"type": "string"},
                "min": {"type": "number"},
                "max": {"type": "number"},
                "type": {"enum": PARAM_TYPES},
            },
            "required": ["name", "value"],
            "additionalProperties": False,
        },
        _io("templates", PARAMETER_SET, "input"): {
            "type": "object",
            "properties": {
                "parameter": {"type": "string"},
                "value": {
                    "oneOf": [
                        value,
                        {
                            "type": "object",
                            "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
                            "required": ["value"],
                            "additionalProperties": False,
                        },
                    ]
                },
            },
            "required": ["parameter", "value"],
            "additionalProperties": False,
        },
    }
    return {
        "format": "aira.capability-package/1",
        "name": name,
        "version": version,
        "publisher": publisher,
        "descriptors": descriptors,
        "schemas": schemas,
    }


def runtime_implementations(m: Mapping[str, Any]) -> list[Implementation]:
    """FAKE in-process implementations of every target of ``m``: accept-all ``check``,
    declaring exactly each descriptor's diagnostics."""
    targets = ("operationRef", "patchTemplateRef", "queryRef", "validatorRef", "ioRef")
    return [
        Implementation(
            ref=d[k], check_inputs=accept_all, diagnostics=frozenset(d.get("diagnostics", []))
        )
        for d in m["descriptors"]
        for k in targets
        if k in d
    ]


# -- the fake kernel -----------------------------------------------------------------------------


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

    - ``exact.box@1.0.0`` / ``mesh.box@1.0.0``: an ``l × w × h`` solid (centered by default);
    - ``exact.fillet@1.0.0`` with ``select`` ``"|Z"``: the four vertical edges rounded,
      volume ``l·w·h − 4·(1 − π/4)·r²·h``; ``FILLET_RADIUS_TOO_LARGE`` (subject: the node
      id) when ``r ≥ min(l, w)/2``, ``SELECTION_EMPTY`` for a selector it does not know;
    - ``validate.volumeRange@1.0.0``, ``query.massProperties@1.0.0``, ``export`` as JSON.

    Nodes are cached by ``(op, resolved inputs)``: a node whose operation and resolved
    inputs (parameter values in mm, upstream solids) are unchanged is served from the cache
    and not listed in ``evaluated_nodes``. ``calls`` counts every call of each Kernel method
    so that tests can assert the runtime never reached the kernel; ``changed_args`` records
    the ``changed`` argument of each ``evaluate``.
    """

    name = "fake-analytic"
    build_hash = "fake:analytic:1"

    def __init__(self, implementations: Sequence[Implementation] = ()) -> None:
        self._implementations = list(implementations)
        self.calls: Counter[str] = Counter()
        self.evaluated_nodes: list[str] = []
        self.evaluations: list[list[str]] = []
        self.changed_args: list[set[str] | None] = []
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
                resolved[name] = (value.body, value.select, value.entity.value)
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
                return None, ("BOX_DIMENSION_NONPOSITIVE", f"box dimensions {dims} must be > 0")
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

    def export(self, document: AmirDocument, format: str, body: str | None = None) -> bytes:
        self.calls["export"] += 1
        if format != "json":
            return b""
        out = {}
        for b in document.bodies:
            if body is not None and b.id != body:
                continue
            solid = self._body_solid(document, b.id)
            out[b.id] = None if solid is None else {"volume": solid.volume}
        return json.dumps(out, sort_keys=True).encode()


# -- a runtime over a fresh store ----------------------------------------------------------------


@dataclass
class Runtime:
    catalog: Catalog
    trust: TrustPolicy
    registry: Registry


def admit(
    tmp_path: Path, m: Mapping[str, Any] | None = None, kernel: FakeGeometryKernel | None = None
) -> Runtime:
    """Sign ``m`` (default: :func:`runtime_manifest`) with a throwaway key and admit it
    through ``build_catalog`` with a registry built in-process (kernel registered too)."""
    m = copy.deepcopy(dict(m)) if m is not None else runtime_manifest()
    signer = Signer(PUBLISHER)
    trust = trust_policy(signer)
    impls = runtime_implementations(m)
    registry = Registry()
    registry.by_type["capability_packages"][m["name"]] = Registered(
        package_source(m, signer, impls), PLUGIN, PLUGIN
    )
    if kernel is not None:
        registry.by_type["kernels"][kernel.name] = Registered(kernel, PLUGIN, PLUGIN)
    state = CatalogState(tmp_path / "catalog.sqlite3")
    try:
        catalog = build_catalog(registry, trust=trust, state=state)
    finally:
        state.close()
    if catalog.quarantine or m["name"] not in catalog.packages:
        reasons = [str(r) for q in catalog.quarantine for r in q.reasons]
        raise AssertionError(f"the runtime test package was not admitted: {reasons}")
    return Runtime(catalog, trust, registry)


def make_runtime(
    tmp_path: Path,
    *,
    grant: SessionGrant = LOCAL_GRANT,
    intent: IntentFrame | None = None,
) -> tuple[PlanContext, FakeGeometryKernel, ModelRepository]:
    """Admit the test package, open a store at ``tmp_path/"store.sqlite3"`` initialised with
    an empty document, and build a :class:`PlanContext` for it."""
    kernel = FakeGeometryKernel(runtime_implementations(runtime_manifest()))
    runtime = admit(tmp_path, kernel=kernel)
    index = capability_index(runtime.catalog)
    signatures = node_signatures(index)
    repository = ModelRepository.open(tmp_path / "store.sqlite3", signatures)
    repository.init()
    ctx = PlanContext(
        catalog=runtime.catalog,
        repository=repository,
        grant=grant,
        intent=intent,
        capabilities=index,
    )
    kernel.calls.clear()
    return ctx, kernel, repository


def step(
    sid: str,
    capability: str,
    label: str | None = None,
    depends_on: Sequence[str] = (),
    **args: Any,
) -> PlanStep:
    return PlanStep(
        id=sid, capability=capability, args=args, label=label, depends_on=list(depends_on)
    )


def plan(base_rev: str, *steps: PlanStep | Mapping[str, Any], **kw: Any) -> Plan:
    """A plan bound to ``base_rev``; steps are :class:`PlanStep` or their wire dicts; ``kw``
    are further Plan fields (``bindings``, ``acceptance_assertions`` …)."""
    return Plan.model_validate(
        {
            "base_revision": base_rev,
            "steps": [s if isinstance(s, PlanStep) else PlanStep.model_validate(s) for s in steps],
            **kw,
        }
    )


# The composite plan of the tests: a parameter, a plate whose length is that parameter, its
# vertical edges rounded, a volume-range check and a mass-properties query.
PLATE = {"length": 40.0, "width": 30.0, "height": 10.0, "radius": 2.0}


def composite_steps(
    *, radius: Any = None, vmin: float = 1000.0, vmax: float = 20000.0
) -> list[PlanStep]:
    return [
        step(
            "width",
            DEFINE_CAP,
            name="width",
            value=PLATE["length"],
            unit="mm",
            type="Length",
            min=1,
            max=500,
        ),
        step(
            "plate",
            BOX_CAP,
            label="plate",
            length={"param": "p:width"},
            width=PLATE["width"],
            height=PLATE["height"],
        ),
        step(
            "round",
            FILLET_CAP,
            target="b:plate",
            edges={"body": "b:plate", "select": "|Z", "entity": "Edge"},
            radius=radius if radius is not None else {"value": 0.2, "unit": "cm"},
        ),
        step("check", VOLUME_RANGE_CAP, label="volume", target="b:plate", min=vmin, max=vmax),
        step("mass", MASS_PROPERTIES_CAP, target="b:plate"),
    ]


def plate_volume(length: float = PLATE["length"], radius: float = PLATE["radius"]) -> float:
    return box_volume(length, PLATE["width"], PLATE["height"], radius)


def seed(repository: ModelRepository, *labels: str, length: float = PLATE["length"]) -> str:
    """Commit on main, without the plan runtime, parameter ``p:width`` and one box body per
    label (``b:<label>``, length = the parameter, 30 × 10 mm); returns the new head."""
    ops: list[dict[str, Any]] = [
        {
            "op": "parameter.add",
            "parameter": {
                "id": "pwidth",
                "label": "width",
                "type": "Length",
                "unit": "mm",
                "value": length,
            },
        }
    ]
    for label in labels:
        ops.append(
            {
                "op": "node.add",
                "node": {
                    "id": f"n{label}",
                    "label": label,
                    "op": BOX,
                    "inputs": {
                        "length": {"param": "pwidth"},
                        "width": {"value": PLATE["width"]},
                        "height": {"value": PLATE["height"]},
                    },
                },
            }
        )
        ops.append(
            {"op": "body.add", "body": {"id": f"b{label}", "label": label, "tip": f"n{label}"}}
        )
    return commit_patch(repository, "main", repository.head(), {"ops": ops}, message="seed").rev


def input_schema(capability: str) -> dict[str, Any]:
    """The full input schema the package declares for ``capability``."""
    m = runtime_manifest()
    d = next(d for d in m["descriptors"] if d["capabilityId"] == capability)
    return m["schemas"][d["inputs"]["schemaRef"]]
