"""How plan steps of other kinds lower: a step that produces only an intermediate type (a
sketch profile) adds a node and no body, an importer's step adds a node and a body and needs
a write grant for its taxonomy path. Static (plan.check); no kernel is involved."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.amir import BodyAdd, NodeAdd
from aira_core.contracts.capability import SessionGrant
from aira_core.model.repository import ModelRepository
from aira_core.runtime.plan import PlanContext, check_plan
from tests.runtime_factory import _io, admit, plan, runtime_manifest, step

SKETCH = "sketch.square@1.0.0"
PAD = "exact.pad@1.0.0"
IMPORT = "io.importThing@1.0.0"
SHAPE = {"type": ["string", "object"], "x-amir-type": "Shape"}


def _descriptor(cap: str, kind: str, target: str, ref: str, **extra: Any) -> dict[str, Any]:
    return {
        "capabilityId": cap,
        "kind": kind,
        target: ref,
        "profileVersion": "1.0.0",
        "title": extra.pop("title"),
        "summary": extra.pop("summary"),
        "taxonomy": {"primary": extra.pop("taxonomy")},
        "intentExamples": [extra.pop("intent")],
        "inputExamples": [{"input": extra.pop("example")}],
        "inputs": {"schemaRef": _io("ops", ref, "input")},
        "outputs": {"schemaRef": _io("ops", ref, "output"), "semanticTypes": extra.pop("out")},
        "effects": ["additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "instant"},
        **extra,
    }


def manifest() -> dict[str, Any]:
    """The runtime test package plus a FAKE sketch, a sweep of it and an importer."""
    m = copy.deepcopy(runtime_manifest())
    m["descriptors"] += [
        _descriptor(
            "cap:sketch.square@1",
            "authoring.operation",
            "operationRef",
            SKETCH,
            title="Square profile",
            summary="A square profile to sweep.",
            taxonomy="authoring.sketch.profile",
            intent="sketch a 10 mm square",
            example={"size": 10},
            out=["Profile"],
        ),
        _descriptor(
            "cap:exact.pad@1",
            "authoring.operation",
            "operationRef",
            PAD,
            title="Pad",
            summary="Extrude a profile.",
            taxonomy="authoring.exact.feature",
            intent="extrude the square 5 mm",
            example={"profile": {"step": "square"}, "distance": 5},
            out=["ExactSolid"],
        ),
        _descriptor(
            "cap:io.importThing@1",
            "importer",
            "ioRef",
            IMPORT,
            title="Import a thing",
            summary="A body from a file's text.",
            taxonomy="io.import",
            intent="import the thing file",
            example={"data": "thing"},
            out=["ExactSolid"],
        ),
    ]
    number = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
    for ref, props in [
        (SKETCH, {"size": number}),
        (PAD, {"profile": {**SHAPE, "x-amir-accepts": "Profile"}, "distance": number}),
        (IMPORT, {"data": {"type": "string", "x-amir-type": "String"}}),
    ]:
        m["schemas"][_io("ops", ref, "input")] = {
            "type": "object",
            "properties": props,
            "required": sorted(props),
            "additionalProperties": False,
        }
        m["schemas"][_io("ops", ref, "output")] = {"type": "object"}
    return m


@pytest.fixture
def ctx(tmp_path: Path):
    runtime = admit(tmp_path, manifest())
    index = capability_index(runtime.catalog)
    signatures = node_signatures(index)
    assert IMPORT in signatures  # an importer's node is a node like any other
    repository = ModelRepository.open(tmp_path / "store.sqlite3", signatures)
    repository.init()
    context = PlanContext(
        catalog=runtime.catalog,
        repository=repository,
        grant=LOCAL_GRANT,
        capabilities=index,
    )
    yield context
    repository.close()


def test_a_profile_step_adds_a_node_and_no_body_and_its_sweep_adds_the_body(ctx) -> None:
    head = ctx.repository.head("main")
    report, lowered = check_plan(
        plan(
            head,
            step("square", "cap:sketch.square@1", size=10),
            step("pad", "cap:exact.pad@1", label="block", profile={"step": "square"}, distance=5),
        ),
        ctx,
    )
    assert report.ok, report.diagnostics
    nodes = [op.node for op in lowered.ops if isinstance(op, NodeAdd)]
    bodies = [op.body for op in lowered.ops if isinstance(op, BodyAdd)]
    assert [n.op for n in nodes] == [SKETCH, PAD]
    assert nodes[1].inputs["profile"].node == nodes[0].id
    assert [b.label for b in bodies] == ["block"] and bodies[0].tip == nodes[1].id
    assert "square" not in lowered.body_of_step


def test_an_import_step_adds_a_body_and_needs_a_write_grant(ctx) -> None:
    head = ctx.repository.head("main")
    imported = plan(head, step("in", "cap:io.importThing@1", label="part", data="thing"))
    report, lowered = check_plan(imported, ctx)
    assert report.ok, report.diagnostics
    (body,) = [op.body for op in lowered.ops if isinstance(op, BodyAdd)]
    assert body.label == "part"

    reader = SessionGrant.model_validate(
        {
            **LOCAL_GRANT.to_wire(),
            "grantId": "grant:reader",
            "writeClasses": ["authoring"],  # io.import only as a query class
        }
    )
    ctx.grant = reader
    report, lowered = check_plan(imported, ctx)
    assert not report.ok and lowered is None
    assert [d.code for d in report.diagnostics] == ["PLAN_CLASS_DENIED"]
    assert "writing io.import" in report.diagnostics[0].message


def test_step_references_are_checked_against_what_the_step_makes(ctx) -> None:
    head = ctx.repository.head("main")
    square = step("square", "cap:sketch.square@1", size=10)
    box = step("box", "cap:exact.box@1", label="b", length=1, width=1, height=1)

    def codes(*steps: Any) -> list[str]:
        report, _ = check_plan(plan(head, *steps), ctx)
        return [d.code for d in report.diagnostics]

    # a validator's target must be a body, not a profile
    check = step("check", "cap:validate.volumeRange@1", target={"step": "square"}, min=1)
    assert codes(square, check) == ["PLAN_STEP_REFERENCE_INVALID"]
    # a sweep takes a profile: not a step that made a body, not a body alias
    pad_box = step("pad", "cap:exact.pad@1", profile={"step": "box"}, distance=5)
    assert codes(box, pad_box) == ["PLAN_STEP_REFERENCE_INVALID"]
    pad_alias = step("pad", "cap:exact.pad@1", profile="b:b", distance=5)
    assert codes(box, pad_alias) == ["PLAN_ARGS_INVALID"]
    pad_square = step("pad", "cap:exact.pad@1", profile={"step": "square"}, distance=5)
    assert codes(square, pad_square) == []


def test_a_huge_rejected_value_is_not_echoed_in_full(ctx) -> None:
    head = ctx.repository.head("main")
    report, _ = check_plan(
        plan(head, step("in", "cap:io.importThing@1", data={"x": "y" * 50_000})), ctx
    )
    assert [d.code for d in report.diagnostics] == ["PLAN_ARGS_INVALID"]
    assert len(report.diagnostics[0].message) < 1000
