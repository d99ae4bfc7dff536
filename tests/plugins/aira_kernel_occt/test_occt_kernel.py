"""The OCCT kernel through the Kernel protocol: AMIR documents in, core result types out, the
examples of every operation executed on the real kernel, and a host that never imports
CadQuery."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("cadquery")

from aira_core.catalog.conformance import ImplementationIndex, check_descriptor
from aira_core.catalog.package import parse_package
from aira_core.contracts.amir import AmirDocument, Assertion
from aira_core.contracts.capability import Exactness, ExecutionLocation, ExecutionQuality
from aira_core.extensions import (
    BodyResult,
    CapabilityPackageSource,
    Evaluation,
    Kernel,
    TargetImplementation,
)
from aira_kernel_occt import manifest
from aira_kernel_occt.kernel import OcctKernel
from aira_kernel_occt.operations import BY_REF, OPERATIONS


@pytest.fixture(scope="module")
def kernel() -> Iterator[OcctKernel]:
    k = OcctKernel()
    yield k
    k.close()


def plate(
    length: float = 40, radius: float | None = None, *, assertions: list[Any] = ()
) -> AmirDocument:
    """A 40 × 30 × 10 plate whose length is parameter ``len``, optionally with its vertical
    edges rounded (the fillet node is the body's tip, as the plan runtime lowers it)."""
    nodes: list[dict[str, Any]] = [
        {
            "id": "nplate",
            "op": "exact.box@1.0.0",
            "inputs": {
                "length": {"param": "len"},
                "width": {"value": 3, "unit": "cm"},
                "height": {"value": 10},
            },
        },
        {
            "id": "nboss",
            "op": "exact.cylinder@1.0.0",
            "inputs": {"radius": {"value": 5}, "height": {"value": 20}},
        },
    ]
    tip = "nplate"
    if radius is not None:
        nodes.append(
            {
                "id": "nround",
                "op": "exact.fillet@1.0.0",
                "inputs": {
                    "target": {"node": "nplate"},
                    "edges": {"body": "bplate", "select": "|Z", "entity": "Edge"},
                    "radius": {"value": radius},
                },
            }
        )
        tip = "nround"
    return AmirDocument.model_validate(
        {
            "parameters": [
                {"id": "len", "label": "len", "type": "Length", "unit": "mm", "value": length}
            ],
            "nodes": nodes,
            "bodies": [
                {"id": "bplate", "label": "plate", "tip": tip},
                {"id": "bboss", "label": "boss", "tip": "nboss"},
            ],
            "assertions": list(assertions),
        }
    )


def test_it_is_a_kernel_identified_by_its_cadquery_and_ocp_versions(kernel: OcctKernel) -> None:
    import importlib.metadata

    assert isinstance(kernel, Kernel) and kernel.name == "occt"
    for dist in ("cadquery", "cadquery-ocp"):
        assert f"{dist}={importlib.metadata.version(dist)}" in kernel.build_hash


def test_evaluate_returns_body_results_and_the_nodes_it_computed(kernel: OcctKernel) -> None:
    first = kernel.evaluate(plate(radius=2))
    assert isinstance(first, Evaluation) and first.ok, first.diagnostics
    body = first.bodies["bplate"]
    assert isinstance(body, BodyResult) and body.valid
    assert body.volume == pytest.approx(40 * 30 * 10 - 4 * (1 - math.pi / 4) * 4 * 10, rel=1e-9)
    assert body.bounding_box == pytest.approx((-20, -15, -5, 20, 15, 5), abs=1e-9)
    assert first.bodies["bboss"].volume == pytest.approx(math.pi * 25 * 20, rel=1e-9)
    assert first.result_hash

    # the worker keeps its cache: the length changes, the boss is not rebuilt
    longer = kernel.evaluate(plate(length=50, radius=2), changed={"nplate", "nround"})
    assert sorted(longer.evaluated_nodes) == ["nplate", "nround"]
    assert longer.bodies["bplate"].bounding_box[3] == pytest.approx(25)
    assert kernel.evaluate(plate(length=50, radius=2), changed=set()).evaluated_nodes == []


def test_failures_are_diagnostics_on_the_node(kernel: OcctKernel) -> None:
    evaluation = kernel.evaluate(plate(radius=15))
    assert not evaluation.ok
    (d,) = evaluation.diagnostics
    assert (d.code, d.subject, d.phase) == ("FILLET_RADIUS_TOO_LARGE", "nround", "preview")
    assert evaluation.bodies["bplate"] == BodyResult(valid=False)
    assert evaluation.bodies["bboss"].valid


def test_query_and_validate(kernel: OcctKernel) -> None:
    mass = kernel.query(plate(), "query.massProperties@1.0.0", {"target": "bplate"})
    assert mass.diagnostics == []
    assert mass.data["volume"] == pytest.approx(12000, rel=1e-9)
    assert mass.data["centerOfMass"] == pytest.approx([0, 0, 0], abs=1e-9)
    unknown = kernel.query(plate(), "query.nothing@1.0.0", {"target": "bplate"})
    assert [d.code for d in unknown.diagnostics] == ["KERNEL_OPERATION_UNKNOWN"]

    check = Assertion.model_validate(
        {
            "id": "avol",
            "validatorRef": "validate.volumeRange@1.0.0",
            "target": "bplate",
            "args": {"min": {"value": 1000}, "max": {"value": 11000}},
        }
    )
    outcome = kernel.validate(plate(assertions=[check]), check)
    assert outcome.assertion == "avol" and not outcome.passed
    assert outcome.measured["volume"] == pytest.approx(12000, rel=1e-9)
    assert [(d.code, d.subject) for d in outcome.diagnostics] == [("VOLUME_OUT_OF_RANGE", "avol")]
    valid = Assertion.model_validate(
        {"id": "avalid", "validatorRef": "validate.solidValidity@1.0.0", "target": "bplate"}
    )
    assert kernel.validate(plate(assertions=[valid]), valid).passed


def test_step_export_of_one_body_and_of_all(kernel: OcctKernel) -> None:
    one = kernel.export(plate(radius=2), "step", "bplate")
    assert one.startswith(b"ISO-10303-21") and one.count(b"MANIFOLD_SOLID_BREP") == 1
    both = kernel.export(plate(radius=2), "step")
    assert both.count(b"MANIFOLD_SOLID_BREP") == 2
    assert len(kernel.export(plate(), "stl", "bboss")) > 84
    assert kernel.export(plate(), "step", "nope") == b""
    assert [d.code for d in kernel.last_export_diagnostics] == ["QUERY_TARGET_UNKNOWN"]


def test_a_worker_failure_reaches_the_caller_as_a_diagnostic() -> None:
    class Down:
        def call(self, method: str, payload: Any = None, timeout: float | None = None) -> dict:
            return {"ok": False, "diagnostics": [{"code": "KERNEL_TIMEOUT", "message": "slow"}]}

    k = OcctKernel(worker=Down())  # type: ignore[arg-type]
    evaluation = k.evaluate(plate())
    assert [d.code for d in evaluation.diagnostics] == ["KERNEL_TIMEOUT"]
    assert evaluation.bodies == {"bplate": BodyResult(False), "bboss": BodyResult(False)}
    assert k.query(plate(), "query.boundingBox@1.0.0", {"target": "bplate"}).data == {}
    check = Assertion(id="a", validator_ref="validate.solidValidity@1.0.0", target="bplate")
    outcome = k.validate(plate(), check)
    assert not outcome.passed and outcome.diagnostics[0].subject == "a"
    assert k.export(plate(), "step") == b""


# -- implementations ----------------------------------------------------------------------------


def test_every_example_runs_on_the_real_kernel(kernel: OcctKernel) -> None:
    impls = {impl.ref: impl for impl in kernel.implementations()}
    assert set(impls) == {op.ref for op in OPERATIONS}
    for op in OPERATIONS:
        impl = impls[op.ref]
        assert isinstance(impl, TargetImplementation)
        assert impl.diagnostics == frozenset(op.diagnostics)
        for example in op.examples:
            assert impl.check(example) == [], (op.ref, example)


def test_checks_execute_and_report_real_failures(kernel: OcctKernel) -> None:
    impls = {impl.ref: impl for impl in kernel.implementations()}
    fillet = dict(BY_REF["exact.fillet@1.0.0"].examples[0], radius=15)
    assert [d.code for d in impls["exact.fillet@1.0.0"].check(fillet)] == [
        "FILLET_RADIUS_TOO_LARGE"
    ]
    no_edges = dict(fillet, radius=1, edges={"body": "b:plate", "select": "%CIRCLE"})
    assert [d.code for d in impls["exact.fillet@1.0.0"].check(no_edges)] == ["SELECTION_EMPTY"]
    # b:pin goes through b:plate (a valid cut); the plate cut by itself leaves nothing
    assert impls["exact.cut@1.0.0"].check({"target": "b:plate", "tool": "b:pin"}) == []
    assert [
        d.code for d in impls["exact.cut@1.0.0"].check({"target": "b:plate", "tool": "b:plate"})
    ] == ["BOOLEAN_EMPTY_RESULT"]
    assert [
        d.code for d in impls["validate.volumeRange@1.0.0"].check({"target": "b:plate", "max": 100})
    ] == ["VOLUME_OUT_OF_RANGE"]
    define = impls["parameter.define@1.0.0"]
    assert [d.code for d in define.check({"name": "w", "value": 600, "max": 500})] == [
        "PARAMETER_OUT_OF_RANGE"
    ]
    assert [d.code for d in define.check({"name": "w", "value": 6, "unit": "deg"})] == [
        "UNIT_MISMATCH"
    ]


def test_the_signed_package_passes_conformance_on_this_kernel(kernel: OcctKernel) -> None:
    parsed = parse_package(CapabilityPackageSource.from_directory(manifest.PACKAGE_DIR))
    assert parsed.manifest is not None
    index = ImplementationIndex(kernel.implementations())
    failing = [
        c for d in parsed.manifest.descriptors if not (c := check_descriptor(d, index)).passed
    ]
    assert failing == []


def test_the_runtime_snapshot_is_native_exact_and_says_what_is_not(kernel: OcctKernel) -> None:
    snapshot = kernel.runtime_snapshot()
    by_name = {c.name: c for c in snapshot.components}
    exact, mesh, sampled = by_name["occt"], by_name["occt.mesh"], by_name["occt.sampled"]
    assert exact.location is ExecutionLocation.NATIVE and exact.exactness is Exactness.EXACT
    assert mesh.exactness is Exactness.APPROXIMATE
    assert set(mesh.supported_operations) == {
        "io.exportStl@1.0.0",
        "io.export3mf@1.0.0",
        "convert.displayMesh@1.0.0",
    }
    assert sampled.exactness is Exactness.APPROXIMATE
    assert sampled.quality_profiles == [ExecutionQuality.SAMPLED]
    assert sampled.supported_operations == ["validate.minWallThickness@1.0.0"]
    executed = {op.ref for op in OPERATIONS if op.target != "patchTemplateRef"}
    svg = by_name["occt.svg"]
    assert svg.exactness is Exactness.PREVIEW_ONLY
    assert svg.supported_operations == ["io.exportSvg@1.0.0"]
    parts = [set(c.supported_operations) for c in (exact, mesh, sampled, svg)]
    assert set().union(*parts) == executed
    assert sum(len(p) for p in parts) == len(executed)  # each in exactly one component
    # what a descriptor declares agrees with where the snapshot puts it
    by_ref = {op.ref: op for op in OPERATIONS}
    assert all("authoritative" in by_ref[r].quality for r in exact.supported_operations)
    assert all(by_ref[r].quality == ("approximate",) for r in mesh.supported_operations)
    assert exact.build_hash == kernel.build_hash


def test_importing_the_kernel_does_not_import_cadquery() -> None:
    code = (
        "import sys; import aira_kernel_occt.kernel as k; k.OcctKernel(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'cadquery', 'OCP'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
