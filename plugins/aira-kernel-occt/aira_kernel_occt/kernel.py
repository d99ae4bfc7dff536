"""The OCCT kernel as the host sees it: the :class:`~aira_core.extensions.Kernel` protocol on top
of a warm worker process (:mod:`aira_kernel_occt.worker`) that runs the geometry.

Importing this module does not import CadQuery (the worker does); constructing the kernel
starts nothing (the first call starts the worker). Documents and assertions cross the pipe as
AMIR wire dicts; results come back as plain dicts and are turned into the core's result types
here. Every failure, the worker's timeout or crash included, is a diagnostic, never an
exception.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aira_core.canonical import CanonicalJSONError, sha256_bytes_hex, sha256_hex
from aira_core.contracts.amir import BASE_UNIT, ParamType, dimension_of, to_base
from aira_core.contracts.capability import (
    ComponentStatus,
    Exactness,
    ExecutionLocation,
    ExecutionQuality,
    RuntimeCapabilitySnapshot,
    RuntimeComponent,
)
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import (
    BodyResult,
    Evaluation,
    Implementation,
    QueryResult,
    TargetImplementation,
    ValidationOutcome,
)
from aira_kernel_occt.operations import OPERATIONS, SELECTION, SHAPE, Operation, is_profile
from aira_kernel_occt.warm import WarmClient, warm_enabled
from aira_kernel_occt.worker import DEFAULT_TIMEOUT, WorkerClient

KERNEL_NAME = "occt"
KERNEL_EXPORT_FAILED = "KERNEL_EXPORT_FAILED"
KERNEL_INPUT_INVALID = "KERNEL_INPUT_INVALID"
KERNEL_REFERENCE_UNRESOLVED = "KERNEL_REFERENCE_UNRESOLVED"
ASSERTION_FAILED = "ASSERTION_FAILED"
SOLID_INVALID = "SOLID_INVALID"
SVG_EXPORT = "io.exportSvg@1.0.0"
IMPORT_STEP = "io.importStep@1.0.0"
TESSELLATED = tuple(op.ref for op in OPERATIONS if op.quality == ("approximate",))
"""Capabilities that work on a tessellation: approximate, not exact."""
SAMPLED = tuple(op.ref for op in OPERATIONS if op.quality == ("sampled",))
"""Capabilities that measure at sample points: approximate, not exact."""


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def build_hash() -> str:
    """``occt:cadquery=<v>;cadquery-ocp=<v>`` from the installed distributions (no import)."""
    parts = [f"{d}={_version(d) or 'missing'}" for d in ("cadquery", "cadquery-ocp")]
    return "occt:" + ";".join(parts)


def implementations_fingerprint() -> str:
    """What the conformance checks of this kernel's implementations depend on: the plugin's
    version, the CadQuery and OCP versions (from the installed distributions: no import),
    the operation table, and the plugin's own source (an edited checkout keeps its version
    number). The catalog reuses a passed report while this stays the same."""
    source = sorted(Path(__file__).parent.glob("*.py"))
    return sha256_hex(
        {
            "plugin": _version("aira-kernel-occt") or "missing",
            "build": build_hash(),
            # frozen dataclasses of str, numbers, tuples and dicts: repr is exact and stable
            "operations": sha256_bytes_hex(repr(OPERATIONS).encode()),
            "source": [[p.name, sha256_bytes_hex(p.read_bytes())] for p in source],
        }
    )


def _wire(value: Any) -> dict[str, Any]:
    return value.to_wire() if hasattr(value, "to_wire") else dict(value)


def _diagnostics(found: Sequence[Mapping[str, Any]], phase: str) -> list[Diagnostic]:
    return [
        Diagnostic(
            code=str(d["code"]),
            message=str(d.get("message", "")),
            subject=d.get("subject"),
            phase=phase,
            # typed values a repair computes from (a refused fillet's maxRadius …)
            expected=d.get("expected"),
            actual=d.get("actual"),
            cause="kernel" if str(d["code"]).startswith("KERNEL_") else "geometry",
        )
        for d in found
    ]


def _body_result(data: Mapping[str, Any]) -> BodyResult:
    box = data.get("boundingBox")
    return BodyResult(
        valid=bool(data.get("valid")),
        volume=data.get("volume"),
        area=data.get("area"),
        bounding_box=tuple(box) if box else None,  # type: ignore[arg-type]
    )


class OcctKernel:
    """Exact B-rep modelling with CadQuery/OpenCASCADE in a warm worker process."""

    name = KERNEL_NAME

    def __init__(
        self, *, timeout: float = DEFAULT_TIMEOUT, worker: WorkerClient | WarmClient | None = None
    ):
        self.build_hash = build_hash()
        if worker is None:
            # opt-in: a per-user worker that outlives the command (aira_kernel_occt.warm)
            worker = (
                WarmClient(timeout, fingerprint=implementations_fingerprint())
                if warm_enabled()
                else WorkerClient(timeout)
            )
        self.worker = worker
        self.last_export_diagnostics: list[Diagnostic] = []
        self._implementations: list[TargetImplementation] | None = None
        self._checked: dict[str, list[Diagnostic]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop the worker process (a later call starts a new one); a warm worker stays up
        for the next command."""
        self.worker.close()

    # -- the Kernel protocol --------------------------------------------------------------------

    def evaluate(self, document: Any, changed: Collection[str] | None = None) -> Evaluation:
        wire = _wire(document)
        reply = self.worker.call(
            "evaluate",
            {"document": wire, "changed": None if changed is None else sorted(changed)},
        )
        if not reply["ok"]:
            return Evaluation(
                bodies={b["id"]: BodyResult(valid=False) for b in wire.get("bodies", [])},
                diagnostics=_diagnostics(reply["diagnostics"], "preview"),
            )
        result = reply["result"]
        return Evaluation(
            bodies={bid: _body_result(data) for bid, data in result["bodies"].items()},
            evaluated_nodes=list(result["evaluatedNodes"]),
            diagnostics=_diagnostics(result["diagnostics"], "preview"),
            result_hash=result.get("resultHash"),
        )

    def query(self, document: Any, ref: str, args: Mapping[str, Any]) -> QueryResult:
        reply = self.worker.call(
            "query", {"document": _wire(document), "ref": ref, "args": dict(args)}
        )
        if not reply["ok"]:
            return QueryResult({}, _diagnostics(reply["diagnostics"], "query"))
        result = reply["result"]
        return QueryResult(dict(result["data"]), _diagnostics(result["diagnostics"], "query"))

    def validate(self, document: Any, assertion: Any) -> ValidationOutcome:
        wire = _wire(assertion)
        reply = self.worker.call("validate", {"document": _wire(document), "assertion": wire})
        if not reply["ok"]:
            return ValidationOutcome(
                str(wire.get("id")),
                False,
                diagnostics=[
                    d.model_copy(update={"subject": wire.get("id")})
                    for d in _diagnostics(reply["diagnostics"], "validate")
                ],
            )
        result = reply["result"]
        return ValidationOutcome(
            str(wire.get("id")),
            bool(result["passed"]),
            dict(result["measured"]),
            _diagnostics(result["diagnostics"], "validate"),
        )

    def export(
        self,
        document: Any,
        format: str,
        body: str | None = None,
        *,
        tolerance: float | None = None,
        angular_tolerance: float | None = None,
    ) -> bytes:
        """The bytes of ``step``, ``stl``, ``3mf``, ``svg`` or ``mesh`` (one body, or all
        bodies); ``b""`` on failure, with the reasons in :attr:`last_export_diagnostics`.

        A mesh's ``tolerance`` (mm) and ``angular_tolerance`` (degrees) default to 1/2000 of
        each body's bounding-box diagonal (within 0.001-1 mm) and 0.3 rad; a tolerance finer
        than 1/30000 of a body's diagonal is ``KERNEL_INPUT_INVALID`` (it would not mesh in
        time). STEP and SVG ignore them."""
        payload: dict[str, Any] = {"document": _wire(document), "format": format, "body": body}
        if tolerance is not None:
            payload["tolerance"] = tolerance
        if angular_tolerance is not None:
            payload["angularTolerance"] = angular_tolerance
        reply = self.worker.call("export", payload)
        if not reply["ok"]:
            self.last_export_diagnostics = _diagnostics(reply["diagnostics"], "export")
            return b""
        result = reply["result"]
        self.last_export_diagnostics = _diagnostics(result["diagnostics"], "export")
        return bytes(result["data"]) if not result["diagnostics"] else b""

    # -- implementations and conformance --------------------------------------------------------

    def implementations(self) -> Sequence[TargetImplementation]:
        """One implementation per operation of :data:`operations.OPERATIONS`, whose ``check``
        runs the input on this kernel (patch templates, lowered by the core runtime, are
        checked statically)."""
        if self._implementations is None:
            fingerprint = implementations_fingerprint()
            self._implementations = [
                Implementation(
                    ref=op.ref,
                    check_inputs=lambda inputs, op=op: self.check(op, inputs),
                    diagnostics=frozenset(op.diagnostics),
                    fingerprint=fingerprint,
                )
                for op in OPERATIONS
            ]
        return list(self._implementations)

    def check(self, op: Operation, inputs: Mapping[str, Any]) -> list[Diagnostic]:
        """The diagnostics ``op`` raises for ``inputs`` (an input example: body aliases
        ``b:plate``, ``b:boss``, ``b:pin`` name the fixture bodies); empty when it works."""
        try:
            memo: str | None = sha256_hex({"ref": op.ref, "inputs": dict(inputs)})
        except (CanonicalJSONError, TypeError):
            memo = None
        with self._lock:
            if memo is not None and memo in self._checked:
                return list(self._checked[memo])
        if op.target == "patchTemplateRef":
            found = _check_template(op, inputs)
        else:
            found = self._run_example(op, inputs)
        with self._lock:
            if memo is not None:
                self._checked[memo] = list(found)
        return found

    def _run_example(self, op: Operation, inputs: Mapping[str, Any]) -> list[Diagnostic]:
        document = fixture_document()
        specs = {i.name: i for i in op.inputs}
        unknown = sorted(set(inputs) - set(specs))
        if unknown:
            return [_check_diag(KERNEL_INPUT_INVALID, f"{op.ref} has no input {unknown}", op)]
        tips = {b["id"]: b["tip"] for b in document["bodies"]}
        try:
            resolved = {
                name: _fixture_input(value, specs[name].type, tips)
                for name, value in inputs.items()
            }
            if op.ref == IMPORT_STEP and resolved.get("data") == {"value": FIXTURE_STEP}:
                step = self.export(fixture_document(), "step", "plate")
                if not step:
                    return list(self.last_export_diagnostics)
                resolved["data"] = {"value": step.decode()}
        except LookupError as exc:
            return [_check_diag(KERNEL_REFERENCE_UNRESOLVED, str(exc.args[0]), op)]
        if op.target == "operationRef" or op.kind == "importer":
            return self._run_operation(op, document, resolved)
        target = resolved.get("target")
        body = target["body"] if isinstance(target, dict) else None
        shapes = {k for k in resolved if specs[k].type == SHAPE and k != "target"}
        if op.target == "queryRef":
            # as the runtime lowers them: a query's bodies as ids …
            args = {**inputs, **{k: resolved[k]["body"] for k in shapes}, "target": body}
            result = self.query(document, op.ref, args)
            return list(result.diagnostics)
        if op.target == "validatorRef":
            # … a validator's other shapes as the body's tip node
            assertion = {
                "id": "fx_check",
                "validatorRef": op.ref,
                "target": body,
                "args": {
                    k: {"node": v["tip"]} if k in shapes else v
                    for k, v in resolved.items()
                    if k != "target"
                },
            }
            outcome = self.validate(document, assertion)
            if outcome.passed:
                return []
            return list(outcome.diagnostics) or [
                _check_diag(ASSERTION_FAILED, f"failed: {dict(outcome.measured)}", op)
            ]
        options = {}
        for name, keyword in (
            ("tolerance", "tolerance"),
            ("angularTolerance", "angular_tolerance"),
        ):
            if name in resolved:  # in the host's units (mm, degrees), as kernel_guard passes them
                raw = resolved[name]
                try:
                    options[keyword] = to_base(
                        float(raw["value"]), raw.get("unit"), ParamType(specs[name].type)
                    )
                except AiraError as exc:
                    return [_check_diag(exc.code, f"{name}: {exc.diagnostic.message}", op)]
                except (KeyError, TypeError, ValueError):
                    return [_check_diag(KERNEL_INPUT_INVALID, f"{name} must be a number", op)]
        data = self.export(document, op.ref, body, **options)
        if data:
            return []
        return list(self.last_export_diagnostics) or [
            _check_diag(KERNEL_EXPORT_FAILED, "the export wrote nothing", op)
        ]

    def _run_operation(
        self, op: Operation, document: dict[str, Any], resolved: Mapping[str, Any]
    ) -> list[Diagnostic]:
        node_inputs = {
            name: {"node": value["tip"]} if "tip" in value else value
            for name, value in resolved.items()
        }
        document["nodes"].append({"id": "fx_example", "op": op.ref, "inputs": node_inputs})
        if is_profile(op):  # a sketch: a node for a sweep, no body
            evaluation = self.evaluate(document)
            return list(evaluation.diagnostics)
        target = resolved.get("target")
        if isinstance(target, dict) and "body" in target:  # a feature moves its body's tip
            result_body = target["body"]
            for b in document["bodies"]:
                if b["id"] == result_body:
                    b["tip"] = "fx_example"
        else:
            result_body = "example"
            document["bodies"].append({"id": "example", "label": "example", "tip": "fx_example"})
        evaluation = self.evaluate(document)
        if evaluation.diagnostics:
            return list(evaluation.diagnostics)
        result = evaluation.bodies.get(result_body)
        if result is None or not result.valid:
            return [_check_diag(SOLID_INVALID, "the example's result is not a valid solid", op)]
        return []

    # -- runtime snapshot -----------------------------------------------------------------------

    def runtime_snapshot(self) -> RuntimeCapabilitySnapshot:
        """What this environment executes: exact operations, queries, validators and STEP in
        one native component; what works on a tessellation (STL, 3MF, display mesh) and the
        sampled wall-thickness check as approximate ones; the SVG line drawing as a
        preview-only one."""
        status = (
            ComponentStatus.AVAILABLE
            if _version("cadquery") is not None
            else ComponentStatus.UNAVAILABLE
        )
        executed = [op for op in OPERATIONS if op.target != "patchTemplateRef"]
        inexact = {*TESSELLATED, *SAMPLED, SVG_EXPORT}
        exact = [op.ref for op in executed if op.ref not in inexact]
        Q = ExecutionQuality
        parts = [  # name, role, operations, quality profiles, exactness
            (KERNEL_NAME, "kernel", exact, [Q.PREVIEW, Q.AUTHORITATIVE], Exactness.EXACT),
            (
                f"{KERNEL_NAME}.mesh",
                "exporter",
                list(TESSELLATED),
                [Q.APPROXIMATE],
                Exactness.APPROXIMATE,
            ),
            (
                f"{KERNEL_NAME}.sampled",
                "validator",
                list(SAMPLED),
                [Q.SAMPLED],
                Exactness.APPROXIMATE,
            ),
            (f"{KERNEL_NAME}.svg", "exporter", [SVG_EXPORT], [Q.PREVIEW], Exactness.PREVIEW_ONLY),
        ]
        return RuntimeCapabilitySnapshot(
            captured_at=datetime.now(UTC),
            components=[
                RuntimeComponent(
                    name=name,
                    role=role,
                    build_hash=self.build_hash,
                    location=ExecutionLocation.NATIVE,
                    supported_operations=operations,
                    quality_profiles=qualities,
                    exactness=exactness,
                    status=status,
                )
                for name, role, operations, qualities, exactness in parts
            ],
        )


# -- the fixture of the example checks ----------------------------------------------------------

FIXTURE_ALIASES = {"b:plate": "plate", "b:boss": "boss", "b:pin": "pin"}
FIXTURE_STEPS = {
    "sketch": "fx_sketch",
    "section": "fx_section",
    "waist": "fx_waist",
    "top": "fx_top",
    "ring": "fx_ring",
    "outline": "fx_outline",
    "hole": "fx_hole",
    "hole2": "fx_hole2",
}
"""Sketch steps the examples of profile-taking operations refer to as ``{"step": name}``."""
FIXTURE_STEP = "fixture:plate.step"
"""The importer example's stand-in for the STEP text of the fixture's plate."""


def fixture_document() -> dict[str, Any]:
    """Bodies the input examples refer to: ``plate`` a 40 × 30 × 10 box standing on the XY
    plane (z 0…10), ``boss`` a cylinder r 5, h 20 moved up 10 (on the plate), ``pin`` a
    cylinder r 3, h 30 moved down 10 (through the plate); and sketch profiles: ``sketch`` a
    20 × 10 rectangle on XY, ``section`` a 4 × 10 rectangle on XZ (x 8…12, z 0…10), ``waist``
    and ``top`` circles r 3 and r 4 on XY at z 10 and 20 (loft sections above ``sketch``),
    ``ring`` a circle r 1 on XZ at x 10 (a helix's start), ``outline`` a 20 × 10 rectangle
    with R2 corners on the plate's top face (z 10)."""

    def v(x: float) -> dict[str, Any]:
        return {"value": x}

    def moved(nid: str, of: str, z: float) -> dict[str, Any]:
        return {
            "id": nid,
            "op": "exact.translate@1.0.0",
            "inputs": {"target": {"node": of}, "z": v(z)},
        }

    nodes = [
        {
            "id": "fx_plate0",
            "op": "exact.box@1.0.0",
            "inputs": {"length": v(40), "width": v(30), "height": v(10)},
        },
        moved("fx_plate", "fx_plate0", 5),
        {
            "id": "fx_boss0",
            "op": "exact.cylinder@1.0.0",
            "inputs": {"radius": v(5), "height": v(20)},
        },
        moved("fx_boss", "fx_boss0", 10),
        {
            "id": "fx_pin0",
            "op": "exact.cylinder@1.0.0",
            "inputs": {"radius": v(3), "height": v(30)},
        },
        moved("fx_pin", "fx_pin0", -10),
        {
            "id": "fx_sketch",
            "op": "sketch.rectangle@1.0.0",
            "inputs": {"plane": v("XY"), "width": v(20), "height": v(10)},
        },
        {
            "id": "fx_section",
            "op": "sketch.rectangle@1.0.0",
            "inputs": {"plane": v("XZ"), "width": v(4), "height": v(10), "center": v([10, 5])},
        },
        {
            "id": "fx_waist",
            "op": "sketch.circle@1.0.0",
            "inputs": {"plane": v("XY"), "offset": v(10), "radius": v(3)},
        },
        {
            "id": "fx_top",
            "op": "sketch.circle@1.0.0",
            "inputs": {"plane": v("XY"), "offset": v(20), "radius": v(4)},
        },
        {
            "id": "fx_ring",
            "op": "sketch.circle@1.0.0",
            "inputs": {"plane": v("XZ"), "radius": v(1), "center": v([10, 0])},
        },
        {
            "id": "fx_hole",
            "op": "sketch.circle@1.0.0",
            "inputs": {"plane": v("XY"), "radius": v(2), "center": v([5, 0])},
        },
        {
            "id": "fx_hole2",
            "op": "sketch.circle@1.0.0",
            "inputs": {"plane": v("XY"), "radius": v(2), "center": v([-5, 0])},
        },
        {
            "id": "fx_outline",
            "op": "sketch.roundedRectangle@1.0.0",
            "inputs": {
                "plane": v("XY"),
                "offset": v(10),
                "width": v(20),
                "height": v(10),
                "radius": v(2),
            },
        },
    ]
    bodies = [{"id": name, "label": name, "tip": f"fx_{name}"} for name in ("plate", "boss", "pin")]
    return {"format": "aira.amir/1", "parameters": [], "nodes": nodes, "bodies": bodies}


def _fixture_body(alias: Any, tips: Mapping[str, str]) -> str:
    body = FIXTURE_ALIASES.get(alias, alias) if isinstance(alias, str) else None
    if body not in tips:
        raise LookupError(f"{alias!r} names no fixture body ({', '.join(FIXTURE_ALIASES)})")
    return body  # type: ignore[return-value]


def _fixture_input(value: Any, kind: str, tips: Mapping[str, str]) -> dict[str, Any]:
    """An example's argument as an AMIR input on the fixture (a Shape as ``{body, tip}``)."""
    if kind == SHAPE and isinstance(value, Mapping) and "step" in value:
        node = FIXTURE_STEPS.get(value["step"])
        if node is None:
            raise LookupError(f"{value!r} names no fixture sketch ({', '.join(FIXTURE_STEPS)})")
        return {"tip": node}
    if kind == SHAPE:
        body = _fixture_body(value, tips)
        return {"body": body, "tip": tips[body]}
    if kind == SELECTION and isinstance(value, Mapping):
        return {**value, "body": _fixture_body(value.get("body"), tips)}
    if isinstance(value, Mapping) and ("value" in value or "param" in value):
        return dict(value)
    return {"value": value}


def _check_diag(code: str, message: str, op: Operation) -> Diagnostic:
    return Diagnostic(code=code, message=f"{op.ref}: {message}", subject=op.ref, phase="check")


def _check_template(op: Operation, inputs: Mapping[str, Any]) -> list[Diagnostic]:
    """Static check of a patch template's arguments (the core runtime lowers them)."""
    from jsonschema import Draft202012Validator  # only when conformance runs

    found = [
        _check_diag(
            KERNEL_INPUT_INVALID, f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}", op
        )
        for e in Draft202012Validator(op.input_schema()).iter_errors(dict(inputs))
    ]
    if found or op.ref != "parameter.define@1.0.0":
        return found
    value, low, high = inputs.get("value"), inputs.get("min"), inputs.get("max")
    if (low is not None and value < low) or (high is not None and value > high):
        found.append(
            _check_diag("PARAMETER_OUT_OF_RANGE", f"value {value} is outside [{low}, {high}]", op)
        )
    unit, kind = inputs.get("unit"), inputs.get("type", ParamType.LENGTH.value)
    if unit is not None:
        dim = dimension_of(unit)
        expected = ParamType(kind) if kind in {t.value for t in ParamType} else None
        if dim is None or expected not in BASE_UNIT or dim != expected:
            found.append(
                _check_diag("UNIT_MISMATCH", f"unit {unit!r} does not measure a {kind}", op)
            )
    return found
