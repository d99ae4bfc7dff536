"""How ``plan.check`` lowers a step that consumes a body (issue 17): a Shape input marked
``x-amir-consumes`` takes the body it names out of the model in the same patch (its
``body.remove`` after the step's node and tip move), unless the Bool input the keyword
names is true; the ``body.remove@1.0.0`` patch template removes a body. Static, against the
signed test package plus FAKE descriptors (a combine with a consumed tool, the template);
no kernel is involved. The same rules on the real kernel, with the store checked unchanged:
tests/plugins/aira_kernel_occt/test_occt_consume.py."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amir_factory import commit_patch

from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.amir import AMIR_CONSUMES_KEYWORD, BodyRemove, BodySetTip, NodeAdd
from aira_core.model.patch import apply_patch
from aira_core.model.repository import ModelRepository
from aira_core.runtime.plan import PlanContext, check_plan
from tests.runtime_factory import (
    BOX_CAP,
    FILLET_CAP,
    VOLUME_RANGE,
    VOLUME_RANGE_CAP,
    _io,
    admit,
    plan,
    runtime_manifest,
    seed,
    step,
)

COMBINE = "exact.combine@1.0.0"
COMBINE_CAP = "cap:exact.combine@1"
REMOVE = "body.remove@1.0.0"
REMOVE_CAP = "cap:body.remove@1"
SHAPE = {"anyOf": [{"type": "string"}, {"type": "object"}], "x-amir-type": "Shape"}


def manifest() -> dict[str, Any]:
    """The runtime test package plus a FAKE boolean whose tool is consumed, a FAKE mark
    whose Shape input is not, and the body.remove template."""
    m = copy.deepcopy(runtime_manifest())

    def descriptor(cap: str, target: str, ref: str, example: dict[str, Any]) -> dict[str, Any]:
        return {
            "capabilityId": cap,
            "kind": "authoring.operation",
            target: ref,
            "profileVersion": "1.0.0",
            "title": cap,
            "summary": f"The test's {cap}.",
            "taxonomy": {"primary": "authoring.exact.feature"},
            "intentExamples": [f"use {cap}"],
            "inputExamples": [{"input": example}],
            "inputs": {"schemaRef": _io("ops", ref, "input")},
            "outputs": {"schemaRef": _io("ops", ref, "output"), "semanticTypes": ["ExactSolid"]},
            "effects": ["additive"],
            "risk": {"level": "low"},
            "execution": {"quality": ["authoritative"], "costClass": "instant"},
        }

    m["descriptors"] += [
        descriptor(COMBINE_CAP, "operationRef", COMBINE, {"target": "b:plate", "tool": "b:pin"}),
        descriptor("cap:exact.mark@1", "operationRef", "exact.mark@1.0.0", {"target": "b:plate"}),
        descriptor(REMOVE_CAP, "patchTemplateRef", REMOVE, {"body": "b:pin"}),
    ]
    keep = {"type": "boolean", "x-amir-type": "Bool"}
    for ref, props in [
        (
            COMBINE,
            {
                "target": SHAPE,
                "tool": {**SHAPE, AMIR_CONSUMES_KEYWORD: "keepTool"},
                "keepTool": keep,
            },
        ),
        ("exact.mark@1.0.0", {"target": SHAPE, "other": SHAPE}),
        (REMOVE, {"body": SHAPE}),
    ]:
        m["schemas"][_io("ops", ref, "input")] = {
            "type": "object",
            "properties": props,
            "required": ["target"] if "target" in props else ["body"],
            "additionalProperties": False,
        }
        m["schemas"][_io("ops", ref, "output")] = {"type": "object"}
    return m


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[PlanContext]:
    runtime = admit(tmp_path, manifest())
    index = capability_index(runtime.catalog)
    repository = ModelRepository.open(tmp_path / "store.sqlite3", node_signatures(index))
    repository.init()
    seed(repository, "plate", "pin")
    yield PlanContext(
        catalog=runtime.catalog, repository=repository, grant=LOCAL_GRANT, capabilities=index
    )
    repository.close()


def check(ctx: PlanContext, *steps: Any, **kw: Any) -> tuple[Any, Any]:
    return check_plan(plan(ctx.repository.head(), *steps, **kw), ctx)


def codes(ctx: PlanContext, *steps: Any, **kw: Any) -> list[tuple[str, str | None]]:
    report, lowered = check(ctx, *steps, **kw)
    assert (lowered is None) == (not report.ok)
    return [(d.code, d.pointer) for d in report.diagnostics]


def test_a_consumed_tool_is_removed_after_the_steps_node(ctx: PlanContext) -> None:
    report, lowered = check(ctx, step("c", COMBINE_CAP, target="b:plate", tool="b:pin"))
    assert report.ok, report.diagnostics
    assert [op.op for op in lowered.ops] == ["node.add", "body.setTip", "body.remove"]
    node, tip, gone = lowered.ops
    assert isinstance(node, NodeAdd) and isinstance(tip, BodySetTip)
    assert isinstance(gone, BodyRemove) and gone.id == "bpin" and tip.id == "bplate"
    assert node.node.inputs["tool"].node == "npin"  # the tool's shape, taken before it goes
    assert set(node.node.inputs) == {"target", "tool"}
    assert lowered.removed_by_step == {"c": ["bpin"]}
    # the patch applies: one body left, the tool's history still feeding the new node
    document = apply_patch(ctx.repository.document(ctx.repository.head()), {"ops": lowered.ops})
    assert [b.id for b in document.bodies] == ["bplate"]


@pytest.mark.parametrize("keep", [True, {"value": True}])
def test_keep_tool_true_keeps_it_and_is_not_stored_in_the_node(ctx: PlanContext, keep) -> None:
    report, lowered = check(
        ctx, step("c", COMBINE_CAP, target="b:plate", tool="b:pin", keepTool=keep)
    )
    assert report.ok, report.diagnostics
    assert [op.op for op in lowered.ops] == ["node.add", "body.setTip"]
    assert set(lowered.ops[0].node.inputs) == {"target", "tool"}
    # false is the default, said or not: the same node inputs, the tool consumed
    _, said = check(ctx, step("c", COMBINE_CAP, target="b:plate", tool="b:pin", keepTool=False))
    _, unsaid = check(ctx, step("c", COMBINE_CAP, target="b:plate", tool="b:pin"))
    for lowered in (said, unsaid):
        assert [op.op for op in lowered.ops] == ["node.add", "body.setTip", "body.remove"]
    assert said.ops[0].node.inputs == unsaid.ops[0].node.inputs


def test_a_shape_input_without_the_keyword_consumes_nothing(ctx: PlanContext) -> None:
    report, lowered = check(ctx, step("m", "cap:exact.mark@1", target="b:plate", other="b:pin"))
    assert report.ok, report.diagnostics
    assert not any(isinstance(op, BodyRemove) for op in lowered.ops)


def test_a_tool_made_earlier_in_the_plan_is_added_then_removed(ctx: PlanContext) -> None:
    made = step("peg", BOX_CAP, label="peg", length=1, width=1, height=1)
    report, lowered = check(ctx, made, step("c", COMBINE_CAP, target="b:plate", tool="peg"))
    assert report.ok, report.diagnostics
    peg = lowered.body_of_step["peg"]
    assert [op.op for op in lowered.ops] == [
        "node.add",
        "body.add",
        "node.add",
        "body.setTip",
        "body.remove",
    ]
    assert lowered.ops[-1].id == peg


def test_an_earlier_state_of_a_body_as_tool_consumes_nothing(ctx: PlanContext) -> None:
    """A ``{"step"}`` tool whose body has changed since is a shape no body has: the body
    (in its later state) stays."""
    made = step("peg", BOX_CAP, label="peg", length=1, width=1, height=1)
    moved = step("again", "cap:exact.mark@1", target="b:peg")
    report, lowered = check(
        ctx, made, moved, step("c", COMBINE_CAP, target="b:plate", tool={"step": "peg"})
    )
    assert report.ok, report.diagnostics
    assert not any(isinstance(op, BodyRemove) for op in lowered.ops)


def test_the_hostile_cases_have_stable_codes(ctx: PlanContext) -> None:
    combine = step("c", COMBINE_CAP, target="b:plate", tool="b:pin")
    assert codes(ctx, step("c", COMBINE_CAP, target="b:plate", tool="b:plate")) == [
        ("PLAN_CONSUMES_TARGET", "/steps/0/args/tool")
    ]
    later = step("m", "cap:exact.mark@1", target="b:pin")
    assert codes(ctx, combine, later) == [("PLAN_REFERENCE_UNRESOLVED", "/steps/1/args/target")]
    again = step("d", COMBINE_CAP, target="b:plate", tool="b:pin")
    assert codes(ctx, combine, again) == [("PLAN_REFERENCE_UNRESOLVED", "/steps/1/args/tool")]
    select = step(
        "f", FILLET_CAP, target="b:plate", edges={"body": "b:pin", "select": "|Z"}, radius=1
    )
    assert codes(ctx, combine, select) == [("PLAN_REFERENCE_UNRESOLVED", "/steps/1/args/edges")]
    asserted = step("v", VOLUME_RANGE_CAP, target="b:pin", min=1)
    assert codes(ctx, asserted, combine) == [("PLAN_BODY_STILL_REFERENCED", "/steps/1/args/tool")]
    assert codes(ctx, combine, asserted) == [("PLAN_REFERENCE_UNRESOLVED", "/steps/1/args/target")]


def test_an_assertion_of_the_base_revision_on_the_tool_is_named(ctx: PlanContext) -> None:
    head = ctx.repository.head()
    assertion = {"id": "apin", "validatorRef": VOLUME_RANGE, "target": "bpin", "args": {}}
    commit_patch(
        ctx.repository, "main", head, {"ops": [{"op": "assertion.add", "assertion": assertion}]}
    )
    report, _ = check(ctx, step("c", COMBINE_CAP, target="b:plate", tool="b:pin"))
    (d,) = report.diagnostics
    alias = ctx.repository.aliases(ctx.repository.head()).alias_of("apin")
    assert d.code == "PLAN_BODY_STILL_REFERENCED" and alias in d.message
    assert "keepTool: true" in d.message and "remove the assertion" in d.message
    assert report.failed_step == "c" and report.step_schema is not None
    # the repair it names
    report, lowered = check(
        ctx, step("c", COMBINE_CAP, target="b:plate", tool="b:pin", keepTool=True)
    )
    assert report.ok and not any(isinstance(op, BodyRemove) for op in lowered.ops)


def test_the_body_remove_template(ctx: PlanContext) -> None:
    report, lowered = check(ctx, step("r", REMOVE_CAP, body="b:pin"))
    assert report.ok, report.diagnostics
    assert [(op.op, op.id) for op in lowered.ops] == [("body.remove", "bpin")]
    assert codes(ctx, step("r", REMOVE_CAP, body="b:pin"), step("s", REMOVE_CAP, body="b:pin")) == [
        ("PLAN_REFERENCE_UNRESOLVED", "/steps/1/args/body")
    ]
    assert codes(ctx, step("r", REMOVE_CAP, body={"step": "x"})) == [
        ("PLAN_STEP_REFERENCE_INVALID", "/steps/0/args/body")
    ]
    assert codes(ctx, step("r", REMOVE_CAP, body="b:none")) == [
        ("PLAN_REFERENCE_UNRESOLVED", "/steps/0/args/body")
    ]
    asserted = step("v", VOLUME_RANGE_CAP, target="b:pin", min=1)
    assert codes(ctx, asserted, step("r", REMOVE_CAP, body="b:pin")) == [
        ("PLAN_BODY_STILL_REFERENCED", "/steps/1/args/body")
    ]
    # a body a plan step changed, by that step
    marked = step("m", "cap:exact.mark@1", target="b:pin")
    report, lowered = check(ctx, marked, step("r", REMOVE_CAP, body={"step": "m"}))
    assert report.ok and lowered.ops[-1] == BodyRemove(op="body.remove", id="bpin")


def test_an_acceptance_assertion_on_a_removed_body(ctx: PlanContext) -> None:
    found = codes(
        ctx,
        step("r", REMOVE_CAP, body="b:pin"),
        acceptance_assertions=[{"validatorRef": VOLUME_RANGE, "target": "b:pin", "args": {}}],
    )
    assert found == [("PLAN_REFERENCE_UNRESOLVED", "/acceptanceAssertions/0/target")]
