"""``plan.check``: the ten static checks of RFC-0002 §10.2 and the lowering of a composite plan.

Everything here runs against the signed test package and the FAKE kernel of
``runtime_factory`` (a test fake, not a CAD kernel). A refused plan names its stable code, a
JSON pointer into the plan, the first failing step and that step's full input schema; it
changes nothing in the store and never reaches the kernel, also when it goes through
``WritePath.apply``.

Known production bugs are marked ``xfail(strict=True)`` with the reason (``bug(...)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import (
    BOX,
    BOX_CAP,
    DEFINE_CAP,
    FILLET,
    FILLET_CAP,
    MASS_PROPERTIES,
    MASS_PROPERTIES_CAP,
    MESH_BOX_CAP,
    SET_CAP,
    VOLUME_RANGE,
    VOLUME_RANGE_CAP,
    composite_steps,
    input_schema,
    make_runtime,
    plan,
    runtime_manifest,
    seed,
    step,
)

from aira_core.catalog.lint import lint_manifest
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.amir import (
    AssertionAdd,
    BodyAdd,
    BodySetTip,
    LiteralInput,
    NodeAdd,
    NodeInput,
    ParameterAdd,
    ParamInput,
    SemanticInput,
)
from aira_core.contracts.capability import (
    Applicability,
    Effect,
    GrantBudgets,
    ReadScope,
    RiskLevel,
    SessionGrant,
    TaxonomyPath,
)
from aira_core.contracts.package import PackageManifest
from aira_core.contracts.plan import IntentFrame, PlanStep
from aira_core.model.store import MAIN
from aira_core.runtime.plan import check_plan
from aira_core.runtime.write import WritePath

# -- known production bugs -------------------------------------------------------------------


# -- helpers ---------------------------------------------------------------------------------


def codes_at(diagnostics: Any) -> list[tuple[str, str | None]]:
    return [(d.code, d.pointer) for d in diagnostics]


def snapshot(repository: Any) -> tuple[str, list[Any], dict[str, str]]:
    return (
        repository.head(MAIN),
        repository.store.log(MAIN, limit=None),
        repository.store.branches(),
    )


# -- the package -----------------------------------------------------------------------------


def test_runtime_package_is_lint_clean_and_admitted(tmp_path: Path) -> None:
    manifest = PackageManifest.model_validate(runtime_manifest())
    assert lint_manifest(manifest, known_capabilities=set()) == []
    ctx, kernel, _ = make_runtime(tmp_path)
    assert ctx.catalog.quarantine == []
    assert set(ctx.capabilities) == {d["capabilityId"] for d in runtime_manifest()["descriptors"]}
    assert ctx.capabilities[FILLET_CAP].signature.inputs["edges"].type == "Selection"
    assert ctx.capabilities[FILLET_CAP].signature.inputs["target"].type == "Shape"
    assert ctx.capabilities[BOX_CAP].signature.inputs["length"].type == "Length"
    assert kernel.total_calls == 0


# -- a valid composite plan ------------------------------------------------------------------


def test_composite_plan_passes_and_lowers_into_one_patch(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    before = snapshot(repository)
    p = plan(repository.head(), *composite_steps())

    report, lowered = check_plan(p, ctx)

    assert report.ok, report.diagnostics
    assert report.diagnostics == [] and report.failed_step is None
    assert lowered is not None
    kinds = [op.op for op in lowered.ops]
    assert sorted(kinds) == sorted(
        ["parameter.add", "node.add", "body.add", "node.add", "body.setTip", "assertion.add"]
    )
    param = next(op.parameter for op in lowered.ops if isinstance(op, ParameterAdd))
    assert (param.label, param.value, param.unit) == ("width", 40.0, "mm")
    box, fillet = (op.node for op in lowered.ops if isinstance(op, NodeAdd))
    assert box.op == BOX and fillet.op == FILLET
    assert box.inputs["length"] == ParamInput(param=param.id)
    body = next(op.body for op in lowered.ops if isinstance(op, BodyAdd))
    assert (body.label, body.tip) == ("plate", box.id)
    assert fillet.inputs["target"] == NodeInput(node=box.id)
    assert fillet.inputs["edges"] == SemanticInput(body=body.id, select="|Z", entity="Edge")
    assert fillet.inputs["radius"] == LiteralInput(value=0.2, unit="cm")
    tip = next(op for op in lowered.ops if isinstance(op, BodySetTip))
    assert (tip.id, tip.tip) == (body.id, fillet.id)
    assertion = next(op.assertion for op in lowered.ops if isinstance(op, AssertionAdd))
    assert (assertion.validator_ref, assertion.target) == (VOLUME_RANGE, body.id)
    assert set(assertion.args) == {"min", "max"}
    assert [(s, ref) for s, ref, _ in lowered.queries] == [("mass", MASS_PROPERTIES)]
    assert lowered.node_of_step == {"plate": box.id, "round": fillet.id}
    assert lowered.body_of_step == {"plate": body.id, "round": body.id}
    assert lowered.assertion_of_step == {"check": assertion.id}
    assert set(lowered.node_of_step.values()) == {box.id, fillet.id}

    # Re-checking the same plan lowers to the same entity ids.
    again = check_plan(p, ctx)[1]
    assert again is not None and again.ops == lowered.ops
    # The six kinds of uncertainty, kept apart.
    u = report.uncertainty
    assert u.reference_resolution["p:width"] == f"resolved:{param.id}"
    assert u.reference_resolution["b:plate"] == f"resolved:{body.id}"
    assert u.estimated_geometric_risk is RiskLevel.MEDIUM
    assert u.validation_coverage == {"assertions": 1, "authoringSteps": 2, "uncovered": 0}
    assert u.runtime_applicability["plate"] is Applicability.APPLICABLE
    assert u.capability_sufficiency == [] and u.intent_ambiguity == []
    assert snapshot(repository) == before
    assert kernel.total_calls == 0


# -- every check, provoked -------------------------------------------------------------------

ANY_SCHEMA = object()
STEPS = composite_steps


def _replace(index: int, new: PlanStep) -> Callable[[], list[PlanStep]]:
    def steps() -> list[PlanStep]:
        out = composite_steps()
        out[index] = new
        return out

    return steps


def _with_args(index: int, **args: Any) -> Callable[[], list[PlanStep]]:
    def steps() -> list[PlanStep]:
        out = composite_steps()
        out[index] = out[index].model_copy(update={"args": {**out[index].args, **args}})
        return out

    return steps


def _without_arg(index: int, name: str) -> Callable[[], list[PlanStep]]:
    def steps() -> list[PlanStep]:
        out = composite_steps()
        args = {k: v for k, v in out[index].args.items() if k != name}
        out[index] = out[index].model_copy(update={"args": args})
        return out

    return steps


def _depends(**deps: list[str]) -> Callable[[], list[PlanStep]]:
    def steps() -> list[PlanStep]:
        return [
            s.model_copy(update={"depends_on": deps[s.id]}) if s.id in deps else s
            for s in composite_steps()
        ]

    return steps


def _grant(**update: Any) -> SessionGrant:
    return LOCAL_GRANT.model_copy(update=update)


def _mesh_then_fillet() -> list[PlanStep]:
    return [
        step("mesh", MESH_BOX_CAP, label="mesh", length=40, width=30, height=10),
        step(
            "round",
            FILLET_CAP,
            target="b:mesh",
            edges={"body": "b:mesh", "select": "|Z", "entity": "Edge"},
            radius=2,
        ),
    ]


def _fillet_on_seeded_plate() -> list[PlanStep]:
    return [
        step(
            "round",
            FILLET_CAP,
            target="b:plate",
            edges={"body": "b:plate", "select": "|Z", "entity": "Edge"},
            radius=2,
        )
    ]


@dataclass
class Bad:
    id: str
    steps: Callable[[], list[PlanStep]]
    code: str
    pointer: str
    failed_step: str | None
    schema: str | object | None = None
    """Capability whose input schema is the stepSchema; ANY_SCHEMA: not checked here."""
    grant: SessionGrant = LOCAL_GRANT
    intent: IntentFrame | None = None
    seed: tuple[str, ...] = ()
    stale: bool = False
    plan_kw: dict[str, Any] = field(default_factory=dict)


BAD = [
    # 1. capability and version exist, catalog not replaced
    Bad(
        "unknown-capability",
        _replace(2, step("round", "cap:exact.chamfer@1", target="b:plate")),
        "PLAN_CAPABILITY_UNKNOWN",
        "/steps/2/capability",
        "round",
    ),
    Bad(
        "unknown-major-version",
        _replace(1, step("plate", "cap:exact.box@2", label="plate", length=1, width=1, height=1)),
        "PLAN_CAPABILITY_UNKNOWN",
        "/steps/1/capability",
        "plate",
    ),
    Bad(
        "stale-catalog-binding",
        STEPS,
        "PLAN_CATALOG_STALE",
        "/bindings/discoveryCatalogHash",
        None,
        plan_kw={"bindings": {"discoveryCatalogHash": "disc:sha256:" + "0" * 64}},
    ),
    # 2. input/output type flow
    Bad(
        "missing-required-argument",
        _without_arg(1, "height"),
        "PLAN_ARGS_INVALID",
        "/steps/1/args",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "unknown-argument",
        _with_args(1, depth=3),
        "PLAN_ARGS_INVALID",
        "/steps/1/args",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "argument-of-wrong-type",
        _with_args(1, width="wide"),
        "PLAN_ARGS_INVALID",
        "/steps/1/args/width",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "template-missing-argument",
        _without_arg(0, "value"),
        "PLAN_ARGS_INVALID",
        "/steps/0/args",
        "width",
        DEFINE_CAP,
    ),
    Bad(
        "wrong-unit",
        _with_args(1, height={"value": 2, "unit": "deg"}),
        "UNIT_MISMATCH",
        "/steps/1/args/height",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "unknown-unit",
        _with_args(2, radius={"value": 2, "unit": "furlong"}),
        "UNIT_UNKNOWN",
        "/steps/2/args/radius",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "unit-not-a-name",
        _with_args(1, length={"value": 5, "unit": ["mm"]}),
        "PLAN_ARGS_INVALID",
        "/steps/1/args/length",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "unit-not-a-name-on-a-real",
        _with_args(3, min={"value": 1, "unit": {"mm": 1}}),
        "PLAN_ARGS_INVALID",
        "/steps/3/args/min",
        "check",
        VOLUME_RANGE_CAP,
    ),
    Bad(
        "selection-body-not-a-string",
        _with_args(2, edges={"body": ["b:plate"], "select": "|Z"}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-not-an-object",
        _with_args(2, edges="b:plate"),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-negative-radius",
        _with_args(2, edges={"body": "b:plate", "select": "|Z", "entity": "Edge", "radius": -1}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-radius-range-inverted",
        _with_args(2, edges={"body": "b:plate", "entity": "Edge", "radius": {"min": 3, "max": 1}}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-radius-not-a-number",
        _with_args(2, edges={"body": "b:plate", "entity": "Edge", "radius": True}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-nearest-two-coordinates",
        _with_args(2, edges={"body": "b:plate", "entity": "Edge", "nearest": [1, 2]}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-between-one-selector",
        _with_args(2, edges={"body": "b:plate", "entity": "Edge", "between": [">Z"]}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-length-of-a-face",
        _with_args(2, edges={"body": "b:plate", "entity": "Face", "length": 10}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "selection-without-a-filter",
        _with_args(2, edges={"body": "b:plate", "entity": "Edge"}),
        "PLAN_ARGS_INVALID",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "angle-parameter-into-a-length",
        _replace(0, step("width", DEFINE_CAP, name="width", value=5, unit="deg", type="Angle")),
        "UNIT_MISMATCH",
        "/steps/1/args/length",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "string-parameter-into-a-length",
        _replace(0, step("width", DEFINE_CAP, name="width", value="wide", type="String")),
        "AMIR_TYPE_MISMATCH",
        "/steps/1/args/length",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "unknown-body-alias",
        _with_args(2, target="b:nope"),
        "PLAN_REFERENCE_UNRESOLVED",
        "/steps/2/args/target",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "unknown-parameter-alias",
        _with_args(1, length={"param": "p:nope"}),
        "PLAN_REFERENCE_UNRESOLVED",
        "/steps/1/args/length",
        "plate",
        BOX_CAP,
    ),
    Bad(
        "selection-on-unknown-body",
        _with_args(2, edges={"body": "b:nope", "select": "|Z"}),
        "PLAN_REFERENCE_UNRESOLVED",
        "/steps/2/args/edges",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "set-unknown-parameter",
        lambda: [step("set", SET_CAP, parameter="p:nope", value=3)],
        "PLAN_REFERENCE_UNRESOLVED",
        "/steps/0/args/parameter",
        "set",
        SET_CAP,
    ),
    Bad(
        "step-reference-to-later-step",
        _with_args(2, target={"step": "mass"}),
        "PLAN_STEP_REFERENCE_INVALID",
        "/steps/2/args/target",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "step-reference-to-unknown-step",
        _with_args(2, target={"step": "ghost"}),
        "PLAN_STEP_REFERENCE_INVALID",
        "/steps/2/args/target",
        "round",
        FILLET_CAP,
    ),
    # 3. known preconditions
    Bad(
        "radius-zero",
        _with_args(2, radius=0),
        "PLAN_PRECONDITION_UNMET",
        "/steps/2/args/radius",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "radius-below-tolerance",
        _with_args(2, radius=1e-7),
        "PLAN_PRECONDITION_UNMET",
        "/steps/2/args/radius",
        "round",
        FILLET_CAP,
    ),
    Bad(
        "radius-below-tolerance-in-cm",
        _with_args(2, radius={"value": 1e-8, "unit": "cm"}),
        "PLAN_PRECONDITION_UNMET",
        "/steps/2/args/radius",
        "round",
        FILLET_CAP,
    ),
    # 4. read/write scope
    Bad(
        "branch-not-readable",
        STEPS,
        "PLAN_SCOPE_DENIED",
        "/baseRevision",
        None,
        grant=_grant(readable=ReadScope(branches=["task/other"])),
    ),
    # 5. Session Grant and approvals
    Bad(
        "write-class-denied",
        STEPS,
        "PLAN_CLASS_DENIED",
        "/steps/0/capability",
        "width",
        DEFINE_CAP,
        grant=_grant(write_classes=[TaxonomyPath.AUTHORING_MESH]),
    ),
    Bad(
        "query-class-denied",
        STEPS,
        "PLAN_CLASS_DENIED",
        "/steps/3/capability",
        "check",
        VOLUME_RANGE_CAP,
        grant=_grant(query_classes=[TaxonomyPath.QUERY]),
    ),
    Bad(
        "approval-required",
        STEPS,
        "PLAN_APPROVAL_REQUIRED",
        "/steps/2/capability",
        "round",
        FILLET_CAP,
        grant=_grant(auto_commit_max_risk=RiskLevel.LOW),
    ),
    Bad(
        "grant-expired",
        STEPS,
        "GRANT_EXPIRED",
        "/bindings/grantId",
        None,
        grant=_grant(expires_at=datetime.now(UTC) - timedelta(hours=1)),
    ),
    Bad(
        "grant-revoked",
        STEPS,
        "GRANT_REVOKED",
        "/bindings/grantId",
        None,
        grant=_grant(revoked=True),
    ),
    # 6. acyclic dependencies
    Bad(
        "duplicate-step-id",
        lambda: [*composite_steps(), step("plate", MASS_PROPERTIES_CAP, target="b:plate")],
        "PLAN_STEP_DUPLICATE",
        "/steps/5/id",
        "plate",
        ANY_SCHEMA,  # see test_duplicate_step_reports_the_duplicates_schema
    ),
    Bad(
        "unknown-dependency",
        _depends(round=["ghost"]),
        "PLAN_DEPENDENCY_UNKNOWN",
        "/steps/2/dependsOn",
        "round",
        FILLET_CAP,
    ),
    Bad("cycle", _depends(plate=["round"], round=["plate"]), "PLAN_CYCLE", "/steps", None),
    Bad("self-dependency", _depends(check=["check"]), "PLAN_CYCLE", "/steps", None),
    # 7. budget upper bound
    Bad(
        "budget-exceeded",
        STEPS,
        "PLAN_BUDGET_EXCEEDED",
        "/steps",
        None,
        grant=_grant(budgets=GrantBudgets(compute_seconds=1.0)),
    ),
    # 8. representation conversions explicit
    Bad(
        "conversion-implicit",
        _mesh_then_fillet,
        "PLAN_CONVERSION_IMPLICIT",
        "/steps/1/args/target",
        "round",
        FILLET_CAP,
    ),
    # 9. effects within the Intent Frame
    Bad(
        "effect-prohibited",
        STEPS,
        "PLAN_EFFECT_PROHIBITED",
        "/steps/2/capability",
        "round",
        FILLET_CAP,
        intent=IntentFrame(goal="a plate", prohibited_effects=[Effect.CHANGES_TOPOLOGY]),
    ),
    Bad(
        "out-of-scope",
        _fillet_on_seeded_plate,
        "PLAN_OUT_OF_SCOPE",
        "/steps/0/args/target",
        "round",
        FILLET_CAP,
        intent=IntentFrame(goal="round the post", scope=["b:post"]),
        seed=("plate", "post"),
    ),
    # 10. acceptance assertions supported
    Bad(
        "assertion-unsupported",
        STEPS,
        "PLAN_ASSERTION_UNSUPPORTED",
        "/acceptanceAssertions/0/validatorRef",
        None,
        plan_kw={
            "acceptance_assertions": [
                {"validatorRef": "validate.flatness@1.0.0", "target": "b:plate"}
            ]
        },
    ),
    Bad(
        "assertion-on-unknown-body",
        STEPS,
        "PLAN_REFERENCE_UNRESOLVED",
        "/acceptanceAssertions/0/target",
        None,
        plan_kw={"acceptance_assertions": [{"validatorRef": VOLUME_RANGE, "target": "b:nope"}]},
    ),
    Bad(
        "assertion-args-invalid",
        STEPS,
        "PLAN_ARGS_INVALID",
        "/acceptanceAssertions/0/args/min",
        None,
        plan_kw={
            "acceptance_assertions": [
                {"validatorRef": VOLUME_RANGE, "target": "b:plate", "args": {"min": "x"}}
            ]
        },
    ),
]

BAD_PARAMS = [pytest.param(case, id=case.id) for case in BAD]
BAD_PARAMS.append(
    pytest.param(
        Bad(
            "stale-base-revision",
            _fillet_on_seeded_plate,
            "STEP_STALE_REVISION",
            "/baseRevision",
            None,
            seed=("plate",),
            stale=True,
        ),
        id="stale-base-revision",
    )
)


@pytest.mark.parametrize("case", BAD_PARAMS)
def test_refused_before_any_kernel_call(tmp_path: Path, case: Bad) -> None:
    ctx, kernel, repository = make_runtime(tmp_path, grant=case.grant, intent=case.intent)
    init = repository.head()
    if case.seed:
        seed(repository, *case.seed)
    before = snapshot(repository)
    p = plan(init if case.stale else repository.head(), *case.steps(), **case.plan_kw)

    report, lowered = check_plan(p, ctx)

    assert not report.ok and lowered is None
    assert (case.code, case.pointer) in codes_at(report.diagnostics), report.diagnostics
    assert report.failed_step == case.failed_step
    if case.schema is not ANY_SCHEMA:
        expected = input_schema(case.schema) if isinstance(case.schema, str) else None
        assert report.step_schema == expected
    if case.id == "write-class-denied":
        # The parameter template (taxonomy "authoring") fails first; the box is denied too.
        assert ("PLAN_CLASS_DENIED", "/steps/1/capability") in codes_at(report.diagnostics)

    # The same plan through the write path: refused at check, nothing reaches the kernel.
    envelope = WritePath(ctx, kernel).apply(p, "req:bad")
    assert envelope.status == ("stale" if case.stale else "blocked")
    assert (case.code, case.pointer) in codes_at(envelope.diagnostics)
    assert envelope.observed_revision == repository.head()
    assert envelope.data["stage"] == "check"
    assert envelope.data.get("failedStep") == case.failed_step
    if case.stale:
        assert envelope.data["summary"]["rev"] == repository.head()
        assert "b:plate" in envelope.data["summary"]["aliases"]
    assert [a.operation for a in envelope.next_actions] == [
        "model.read" if case.stale else "model.proposePatch"
    ]

    assert kernel.total_calls == 0
    assert snapshot(repository) == before


# -- known bugs of the lowering and the checks -----------------------------------------------


@pytest.mark.parametrize("target", ["b:plate", {"step": "plate"}])
def test_query_step_args_reach_the_kernel_as_document_ids(tmp_path: Path, target: Any) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    steps[4] = step("mass", MASS_PROPERTIES_CAP, target=target)
    report, lowered = check_plan(plan(repository.head(), *steps), ctx)
    assert report.ok and lowered is not None
    body = lowered.body_of_step["plate"]
    (_, _, args) = lowered.queries[0]
    assert args["target"] in {body, lowered.node_of_step["round"]}


def test_validator_step_with_step_reference_targets_that_body(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    steps[3] = step("check", VOLUME_RANGE_CAP, target={"step": "plate"}, min=1, max=1e9)
    report, lowered = check_plan(plan(repository.head(), *steps), ctx)
    assert report.ok and lowered is not None
    assertion = next(op.assertion for op in lowered.ops if isinstance(op, AssertionAdd))
    assert assertion.target == lowered.body_of_step["plate"]


def test_stale_authoring_lock_hash_binding_is_refused(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    p = plan(
        repository.head(),
        *composite_steps(),
        bindings={"authoringLockHash": "lock:sha256:" + "0" * 64},
    )
    report, _ = check_plan(p, ctx)
    assert ("PLAN_CATALOG_STALE", "/bindings/authoringLockHash") in codes_at(report.diagnostics)


def test_duplicate_step_reports_the_duplicates_schema(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    steps = [*composite_steps(), step("plate", MASS_PROPERTIES_CAP, target="b:plate")]
    report, _ = check_plan(plan(repository.head(), *steps), ctx)
    assert ("PLAN_STEP_DUPLICATE", "/steps/5/id") in codes_at(report.diagnostics)
    assert report.step_schema == input_schema(MASS_PROPERTIES_CAP)


def test_acceptance_assertion_on_a_parameter_is_refused(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    p = plan(
        repository.head(),
        *composite_steps(),
        acceptance_assertions=[{"validatorRef": VOLUME_RANGE, "target": "p:width"}],
    )
    report, _ = check_plan(p, ctx)
    assert ("PLAN_REFERENCE_UNRESOLVED", "/acceptanceAssertions/0/target") in codes_at(
        report.diagnostics
    )
    assert kernel.total_calls == 0


@pytest.mark.parametrize(
    "named", [VOLUME_RANGE, VOLUME_RANGE_CAP, VOLUME_RANGE_CAP.removeprefix("cap:")]
)
def test_an_assertions_validator_is_named_as_the_catalog_shows_it_or_by_its_operation(
    tmp_path: Path, named: str
) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    p = plan(
        repository.head(),
        *composite_steps()[:2],
        acceptance_assertions=[
            {"validatorRef": named, "target": "b:plate", "args": {"min": 1, "max": 1e6}}
        ],
    )
    report, lowered = check_plan(p, ctx)
    assert report.ok, report.diagnostics
    assert lowered is not None
    assertion = next(op.assertion for op in lowered.ops if isinstance(op, AssertionAdd))
    assert assertion.validator_ref == VOLUME_RANGE  # what validators implement, however named


def test_an_unknown_validator_is_refused_with_the_ones_it_is_close_to(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    typo = VOLUME_RANGE_CAP.replace("volumeRange", "volumRange")
    p = plan(
        repository.head(),
        *composite_steps()[:2],
        acceptance_assertions=[{"validatorRef": typo, "target": "b:plate"}],
    )
    report, _ = check_plan(p, ctx)
    found = [d for d in report.diagnostics if d.code == "PLAN_ASSERTION_UNSUPPORTED"]
    assert found and f"did you mean {VOLUME_RANGE_CAP}" in found[0].message


def test_parameter_defined_with_a_wrong_unit_is_refused_at_check(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    steps = composite_steps()[:2]
    steps[0] = step("width", DEFINE_CAP, name="width", value=40, unit="deg", type="Length")
    report, _ = check_plan(plan(repository.head(), *steps), ctx)
    assert ("UNIT_MISMATCH", "/steps/0/args/unit") in codes_at(report.diagnostics) or (
        "UNIT_MISMATCH",
        "/steps/0/args",
    ) in codes_at(report.diagnostics)
    assert report.failed_step == "width"
    assert kernel.total_calls == 0


# -- plan-local names follow the alias table's rule ------------------------------------------


def test_plan_local_labels_never_shadow_existing_aliases(tmp_path: Path) -> None:
    """Spec 003 §4.1: a step's ``b:<label>`` / ``p:<name>`` that an existing entity already
    holds keeps naming the existing entity, inside the plan and after the commit; the new
    entity is reached by its step. Of two new bodies with one label, the first holds it."""
    ctx, kernel, repository = make_runtime(tmp_path)
    head = seed(repository, "plate")
    steps = [
        step("b2", BOX_CAP, label="plate", length=5, width=5, height=5),
        step("w2", DEFINE_CAP, name="width", value=3, unit="mm", type="Length"),
        step("t1", BOX_CAP, label="thing", length={"param": "p:width"}, width=6, height=6),
        step("t2", BOX_CAP, label="thing", length={"param": "w2"}, width=7, height=7),
        step("m1", MASS_PROPERTIES_CAP, target="b:plate"),
        step("m2", MASS_PROPERTIES_CAP, target={"step": "b2"}),
        step("m3", MASS_PROPERTIES_CAP, target="b:thing"),
    ]
    report, lowered = check_plan(plan(head, *steps), ctx)
    assert report.ok, report.diagnostics
    assert lowered is not None
    queried = {s: args["target"] for s, _, args in lowered.queries}
    assert queried == {
        "m1": "bplate",  # the seeded body, not the plan's new "plate"
        "m2": lowered.body_of_step["b2"],
        "m3": lowered.body_of_step["t1"],  # the first "thing" holds b:thing
    }
    nodes = {op.node.id: op.node for op in lowered.ops if isinstance(op, NodeAdd)}
    new_width = lowered.param_of_step["w2"]
    assert nodes[lowered.node_of_step["t1"]].inputs["length"] == ParamInput(param="pwidth")
    assert nodes[lowered.node_of_step["t2"]].inputs["length"] == ParamInput(param=new_width)
    assert report.uncertainty.reference_resolution["b:plate"] == "resolved:bplate"

    authoring = plan(head, *steps[:4])
    lowered = check_plan(authoring, ctx)[1]
    assert lowered is not None
    envelope = WritePath(ctx, kernel).apply(authoring, "req:dup")
    assert envelope.status == "success", envelope.diagnostics
    after = repository.aliases(repository.head())
    assert after.resolve("b:plate") == "bplate"
    assert after.resolve("p:width") == "pwidth"
    assert after.resolve("b:thing") == lowered.body_of_step["t1"]
    for new in (lowered.body_of_step["b2"], lowered.param_of_step["w2"]):
        assert after.alias_of(new) not in {"b:plate", "p:width"}
    assert after.alias_of(lowered.body_of_step["t2"]) != "b:thing"


def test_plan_local_labels_that_are_not_aliases_name_nothing(tmp_path: Path) -> None:
    """A label the alias table would not use (unsafe) is no plan-local alias either."""
    ctx, _, repository = make_runtime(tmp_path)
    steps = [
        step("box", BOX_CAP, label="has space", length=5, width=5, height=5),
        step("m", MASS_PROPERTIES_CAP, target="b:has space"),
    ]
    report, _ = check_plan(plan(repository.head(), *steps), ctx)
    assert ("PLAN_REFERENCE_UNRESOLVED", "/steps/1/args/target") in codes_at(report.diagnostics)
    steps[1] = step("m", MASS_PROPERTIES_CAP, target="box")
    assert check_plan(plan(repository.head(), *steps), ctx)[0].ok


# -- long plans and stale ones ---------------------------------------------------------------


def test_a_long_chain_of_dependencies_needs_no_deep_recursion(tmp_path: Path) -> None:
    """1,200 steps each depending on the next: no RecursionError (the cycle search is
    iterative); closing the chain into a loop is found as one cycle."""
    ctx, kernel, repository = make_runtime(tmp_path)
    n = 1200

    def steps(loop: bool) -> list[PlanStep]:
        return [
            step(
                f"s{i}",
                DEFINE_CAP,
                depends_on=[f"s{i + 1}"] if i < n - 1 else (["s0"] if loop else []),
                name=f"w{i}",
                value=1,
                unit="mm",
                type="Length",
            )
            for i in range(n)
        ]

    report, lowered = check_plan(plan(repository.head(), *steps(False)), ctx)
    assert report.ok, report.diagnostics[:3]
    assert lowered is not None and len(lowered.ops) == n
    report, _ = check_plan(plan(repository.head(), *steps(True)), ctx)
    cycles = [d for d in report.diagnostics if d.code == "PLAN_CYCLE"]
    assert len(cycles) == 1 and cycles[0].pointer == "/steps"
    path = cycles[0].message.split(": ", 1)[1].split(" -> ")
    assert path[0] == path[-1] and len(path) == n + 1
    assert kernel.total_calls == 0


def test_a_stale_check_carries_the_new_heads_summary(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    base = repository.head()
    head = seed(repository, "plate")
    report, lowered = check_plan(plan(base, *composite_steps()), ctx)
    assert lowered is None and not report.ok
    (stale,) = report.diagnostics
    assert (stale.code, stale.expected, stale.actual) == ("STEP_STALE_REVISION", base, head)
    assert report.summary == repository.summary(head).to_wire()
    assert report.to_wire()["summary"]["aliases"]["b:plate"] == "bplate"
    # A report that is not stale has no summary.
    assert check_plan(plan(head, *composite_steps()), ctx)[0].summary is None


def test_a_loose_set_schema_still_gets_a_code_for_a_non_scalar(tmp_path: Path) -> None:
    """The lowering does not rely on the package's schema to keep non-scalars out."""
    import dataclasses

    ctx, kernel, repository = make_runtime(tmp_path)
    seed(repository, "plate")
    loose = {"type": "object"}
    ctx.capabilities[SET_CAP] = dataclasses.replace(ctx.capabilities[SET_CAP], input_schema=loose)
    for value in ({"value": [1, 2]}, {"value": 5, "unit": ["mm"]}):
        p = plan(repository.head(), step("set", SET_CAP, parameter="p:width", value=value))
        report, lowered = check_plan(p, ctx)
        assert lowered is None
        assert ("PLAN_ARGS_INVALID", "/steps/0/args/value") in codes_at(report.diagnostics)
    assert kernel.total_calls == 0


# -- warnings: a plan that passes with a finding ----------------------------------------------


@pytest.mark.parametrize(
    ("selector", "op", "meant"),
    [
        ("|X and not >Y and not <Y", "and", "|X and (not >Y) and (not <Y)"),
        ("not >Z or <Z", "or", "(not >Z) or <Z"),
        ("not (>Z) and <Z", "and", "(not (>Z)) and <Z"),
        ("not >Z exc <Z", "exc", "(not >Z) exc <Z"),
        ("(|Z or not >X and <Y)", "and", "(|Z or (not >X) and <Y)"),
        (">(1, 0, 0) and not <(0,1,0) or |Z", "or", ">(1, 0, 0) and (not <(0,1,0)) or |Z"),
    ],
)
def test_a_not_before_and_or_is_a_precedence_warning(
    tmp_path: Path, selector: str, op: str, meant: str
) -> None:
    from aira_core.diagnostics import Severity
    from aira_core.runtime.plan import ambiguous_not

    assert ambiguous_not(selector) == op
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    steps[2] = steps[2].model_copy(
        update={"args": {**steps[2].args, "edges": {"body": "b:plate", "select": selector}}}
    )
    report, lowered = check_plan(plan(repository.head(), *steps), ctx)
    assert report.ok and lowered is not None and report.failed_step is None  # still passes
    (d,) = report.diagnostics
    assert (d.code, d.severity, d.pointer) == (
        "SELECTOR_PRECEDENCE_AMBIGUOUS",
        Severity.WARNING,
        "/steps/2/args/edges/select",
    )
    assert (d.actual, d.expected) == (selector, meant)
    assert "binds loosest" in d.message and repr(meant) in d.message


@pytest.mark.parametrize(
    ("selection", "says"),
    [
        ({"radius": -1}, "radius: Input should be greater than 0"),
        ({"radius": {"min": 3, "max": 1}}, "radius: min 3.0 is above max 1.0"),
        ({"nearest": [1, 2]}, "nearest.2: Field required"),
        ({"between": [">Z", ""]}, "between.1: String should have at least 1 character"),
        ({"entity": "Vertex", "radius": 2}, "radius does not measure a Vertex"),
        ({"entity": "Face", "between": [">Z", "<Z"]}, "between selects the edges or vertices"),
        ({"select": None}, "a selection needs select or another filter"),
    ],
)
def test_a_bad_selection_says_what_is_wrong_in_one_clause(
    tmp_path: Path, selection: dict[str, Any], says: str
) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    edges = {"body": "b:plate", "entity": "Edge", **selection}
    steps[2] = steps[2].model_copy(update={"args": {**steps[2].args, "edges": edges}})
    report, _ = check_plan(plan(repository.head(), *steps), ctx)
    (d,) = report.diagnostics
    assert (d.code, d.pointer) == ("PLAN_ARGS_INVALID", "/steps/2/args/edges")
    assert says in d.message and d.message.count(";") == 0, d.message


def test_selection_filters_are_lowered_and_a_plain_selector_keeps_its_wire_form(
    tmp_path: Path,
) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    edges = {"body": "b:plate", "select": "|Z", "entity": "Edge", "length": 10}
    edges |= {"radius": {"max": 2}, "nearest": [20, 15, 0], "between": ["#X", "#Y"]}
    steps[2] = steps[2].model_copy(update={"args": {**steps[2].args, "edges": edges}})
    report, lowered = check_plan(plan(repository.head(), *steps), ctx)
    assert report.ok and lowered is not None, report.diagnostics
    body = next(op.body for op in lowered.ops if isinstance(op, BodyAdd))
    fillet = [op.node for op in lowered.ops if isinstance(op, NodeAdd)][1]
    assert fillet.inputs["edges"].to_wire() == {
        "body": body.id,
        "select": "|Z",
        "entity": "Edge",
        "length": 10,
        "radius": {"max": 2},
        "between": ["#X", "#Y"],
        "nearest": [20, 15, 0],
    }
    # the selection as it always was: no field added on the wire, so no revision changes
    plain = SemanticInput(body=body.id, select="|Z", entity="Edge")
    assert plain.to_wire() == {"body": body.id, "select": "|Z", "entity": "Edge"}


def test_a_precedence_warning_covers_between_selectors(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    edges = {"body": "b:plate", "select": "|Z", "entity": "Edge"}
    edges["between"] = ["#X", "#Z and not >X and not <X"]
    steps[2] = steps[2].model_copy(update={"args": {**steps[2].args, "edges": edges}})
    report, lowered = check_plan(plan(repository.head(), *steps), ctx)
    assert report.ok and lowered is not None
    (d,) = report.diagnostics
    assert (d.code, d.pointer) == ("SELECTOR_PRECEDENCE_AMBIGUOUS", "/steps/2/args/edges/between/1")


@pytest.mark.parametrize(
    "selector",
    [
        "|Z",
        "|Z and not >Z",
        "not %LINE",
        "not (>Z and <Z)",
        "|X and (not >Y) and (not <Y)",
        "(|X and not >Y) or <Z",
        "|Z and >X or <X",
        ">Z[-2]",
        "notable and >Z",  # a word containing `not` is no `not`
    ],
)
def test_a_not_that_ends_its_level_is_no_warning(tmp_path: Path, selector: str) -> None:
    from aira_core.runtime.plan import ambiguous_not

    assert ambiguous_not(selector) is None
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    steps[2] = steps[2].model_copy(
        update={"args": {**steps[2].args, "edges": {"body": "b:plate", "select": selector}}}
    )
    report, _ = check_plan(plan(repository.head(), *steps), ctx)
    assert report.ok and report.diagnostics == []


def test_a_precedence_warning_goes_with_the_failure_it_may_explain(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    steps = composite_steps()
    selector = "|Z and not >Z and not <Z"
    steps[2] = steps[2].model_copy(
        update={"args": {**steps[2].args, "edges": {"body": "b:plate", "select": selector}}}
    )
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *steps), "w")
    # the FAKE kernel knows no such selector: the preview fails, the warning follows its error
    assert envelope.status == "failed" and envelope.data["failedStep"] == "round"
    assert [d.code for d in envelope.diagnostics] == [
        "SELECTION_EMPTY",
        "SELECTOR_PRECEDENCE_AMBIGUOUS",
    ]
    assert envelope.diagnostics[1].severity == "warning"
