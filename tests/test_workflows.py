"""Workflows (docs/workflows.md): a signed, declarative definition in the package manifest,
expanded deterministically into ordinary plan steps that plan.check checks like any other;
the expression language's refusals; lint and conformance of definitions. A FAKE package
(the fake kernel's vocabulary plus one workflow) signed with a throwaway key."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from aira_core.catalog import expressions as ex
from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.conformance import ImplementationIndex, check_conformance
from aira_core.catalog.lint import lint_manifest
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.catalog.state import CatalogState
from aira_core.contracts.amir import BodyAdd, NodeAdd
from aira_core.contracts.package import PackageManifest
from aira_core.model.repository import ModelRepository
from aira_core.plugins import Registered, Registry
from aira_core.runtime.plan import PlanContext, check_plan
from aira_core.testing.package import fake_implementations, package_source
from aira_core.testing.signing import ThrowawaySigner, trust_policy_for
from tests.runtime_factory import (
    BOX,
    BOX_CAP,
    FILLET,
    FILLET_CAP,
    PUBLISHER,
    VOLUME_RANGE_CAP,
    _io,
    admit,
    plan,
    runtime_manifest,
    step,
)

WF = "test.roundedPlate@1.0.0"
WF_CAP = "cap:test.roundedPlate@1"


def workflow_manifest(**changes: Any) -> dict[str, Any]:
    """The fake kernel's package plus a workflow: a plate, its vertical edges rounded by a
    radius from a table (by size class), and a volume check computed from the inputs."""
    m = copy.deepcopy(runtime_manifest())
    m["descriptors"].append(
        {
            "capabilityId": WF_CAP,
            "kind": "workflow",
            "workflowRef": WF,
            "profileVersion": "1.0.0",
            "title": "Rounded plate",
            "summary": "A plate with rounded vertical edges, the radius by size class.",
            "taxonomy": {"primary": "authoring.exact.primitive"},
            "intentExamples": ["a 40 by 30 plate with small rounded corners"],
            "inputExamples": [
                {"input": {"length": 40, "width": 30, "height": 10, "size": "small"}}
            ],
            "inputs": {"schemaRef": _io("workflows", WF, "input"), "semanticTypes": ["Length"]},
            "outputs": {
                "schemaRef": _io("workflows", WF, "output"),
                "semanticTypes": ["ExactSolid"],
            },
            "defaults": {"size": "small"},
            "effects": ["createsFeature", "additive", "changesTopology"],
            "risk": {"level": "medium"},
            "execution": {"quality": ["authoritative"], "costClass": "interactive"},
        }
    )
    length = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
    m["schemas"][_io("workflows", WF, "input")] = {
        "type": "object",
        "properties": {
            "length": length,
            "width": length,
            "height": length,
            "size": {"enum": ["small", "medium", "large"], "x-amir-type": "String"},
        },
        "required": ["length", "width", "height"],
        "additionalProperties": False,
    }
    m["schemas"][_io("workflows", WF, "output")] = {"type": "object"}
    m["workflows"] = {
        WF: {
            "tables": {"radius": {"small": 1, "large": 3}},
            "steps": [
                {
                    "id": "plate",
                    "capability": BOX_CAP,
                    "label": "$label",
                    "args": {
                        "length": {"$expr": "length"},
                        "width": {"$expr": "width"},
                        "height": {"$expr": "height"},
                    },
                },
                {
                    "id": "round",
                    "capability": FILLET_CAP,
                    "args": {
                        "target": {"step": "plate"},
                        "edges": {"body": {"$step": "plate"}, "select": "|Z", "entity": "Edge"},
                        "radius": {"$expr": "min(radius[size], width / 4)"},
                    },
                },
                {
                    "id": "check",
                    "capability": VOLUME_RANGE_CAP,
                    "when": "length * width > 100",
                    "args": {
                        "target": {"$step": "plate"},
                        "min": {"$expr": "0.5 * length * width * height"},
                        "max": {"$expr": "length * width * height"},
                    },
                },
            ],
            "result": "round",
        }
    }
    for key, value in changes.items():
        m[key] = value
    return m


@pytest.fixture
def ctx(tmp_path: Path):
    runtime = admit(tmp_path, workflow_manifest())
    index = capability_index(runtime.catalog)
    repository = ModelRepository.open(tmp_path / "store.sqlite3", node_signatures(index))
    repository.init()
    yield PlanContext(
        catalog=runtime.catalog, repository=repository, grant=LOCAL_GRANT, capabilities=index
    )
    repository.close()


def wf_step(sid: str = "mount", **args: Any) -> Any:
    return step(sid, WF_CAP, label="base", **{"length": 40, "width": 30, "height": 10, **args})


def test_a_workflow_step_expands_into_checked_steps_with_the_same_plan_id_twice(ctx) -> None:
    head = ctx.repository.head("main")
    the_plan = plan(head, wf_step(size="large"))
    report, lowered = check_plan(the_plan, ctx)
    assert report.ok, report.diagnostics
    again, _ = check_plan(plan(head, wf_step(size="large")), ctx)
    assert again.plan_id == report.plan_id and again.expansions == report.expansions
    steps = report.expansions["mount"]
    assert [s["id"] for s in steps] == ["mount.plate", "mount.round", "mount.check"]
    assert steps[1]["args"]["target"] == {"step": "mount.plate"}
    assert steps[1]["args"]["edges"]["body"] == "mount.plate"
    assert steps[1]["args"]["radius"] == 3  # min(radius["large"], 30 / 4)
    assert steps[2]["args"]["min"] == 6000.0 and steps[2]["args"]["max"] == 12000
    assert steps[0]["label"] == "base"  # "$label": the workflow step's label
    nodes = [op.node for op in lowered.ops if isinstance(op, NodeAdd)]
    assert [n.op for n in nodes] == [BOX, FILLET]
    assert [op.body.label for op in lowered.ops if isinstance(op, BodyAdd)] == ["base"]
    assert set(lowered.node_of_step) == {"mount.plate", "mount.round"}
    # other inputs, another expansion and another plan id; the default size applies
    small, _ = check_plan(plan(head, wf_step()), ctx)
    assert small.ok and small.plan_id != report.plan_id
    assert small.expansions["mount"][1]["args"]["radius"] == 1


def test_a_later_step_refers_to_the_workflow_result(ctx) -> None:
    head = ctx.repository.head("main")
    report, _ = check_plan(
        plan(
            head,
            wf_step(),
            step("mass", "cap:query.massProperties@1", target={"step": "mount"}),
            step(
                "after",
                FILLET_CAP,
                depends_on=["mount"],
                target={"step": "mount"},
                edges={"body": "b:base", "select": ">Z", "entity": "Edge"},
                radius=0.5,
            ),
        ),
        ctx,
    )
    assert report.ok, report.diagnostics


def test_a_bad_computed_argument_names_the_expanded_and_the_workflow_step(ctx) -> None:
    head = ctx.repository.head("main")
    report, lowered = check_plan(plan(head, wf_step(width=2e-6)), ctx)  # radius = 5e-7
    assert not report.ok and lowered is None
    (d,) = [d for d in report.diagnostics if d.code == "PLAN_PRECONDITION_UNMET"]
    assert d.affected == ["mount.round", "mount"]
    assert "expanded step 'mount.round' of workflow step 'mount'" in d.message
    assert d.pointer == "/steps/0/expansion/1/args/radius"
    assert report.failed_step == "mount"
    assert report.expansions["mount"][1]["args"]["radius"] == 5e-7


def test_workflow_arguments_are_checked_against_its_input_schema(ctx) -> None:
    head = ctx.repository.head("main")
    report, _ = check_plan(plan(head, wf_step(size="huge")), ctx)
    assert [d.code for d in report.diagnostics] == ["PLAN_ARGS_INVALID"]
    assert report.diagnostics[0].pointer == "/steps/0/args/size"
    assert report.failed_step == "mount" and report.step_schema["properties"]["size"]


def _with_template(**template_changes: Any) -> dict[str, Any]:
    m = workflow_manifest()
    m["workflows"][WF]["steps"][1]["args"].update(template_changes)
    return m


@pytest.mark.parametrize(
    ("expression", "args", "code"),
    [
        ("radius[size] / (width - 20) * 10", {"width": 20}, ex.EXPRESSION_DIVISION_BY_ZERO),
        ("radius[size] * 10.0 ** height", {"height": 400}, ex.EXPRESSION_NOT_FINITE),
        ("radius[size]", {"size": "medium"}, ex.EXPRESSION_KEY_UNKNOWN),
    ],
)
def test_an_expression_refused_at_expansion_has_a_stable_code(
    tmp_path: Path, expression: str, args: dict[str, Any], code: str
) -> None:
    # the package's own examples expand (conformance admits it); these inputs do not
    runtime = admit(tmp_path, _with_template(radius={"$expr": expression}))
    index = capability_index(runtime.catalog)
    repository = ModelRepository.open(tmp_path / "s.sqlite3", node_signatures(index))
    repository.init()
    try:
        ctx = PlanContext(catalog=runtime.catalog, repository=repository, capabilities=index)
        report, _ = check_plan(plan(repository.head("main"), wf_step(**args)), ctx)
    finally:
        repository.close()
    assert [d.code for d in report.diagnostics] == [code]
    assert "template step 'round'" in report.diagnostics[0].message
    assert report.failed_step == "mount"


@pytest.mark.parametrize(
    ("expression", "code"),
    [
        ("1 / 0", ex.EXPRESSION_DIVISION_BY_ZERO),
        ("nope + 1", ex.EXPRESSION_NAME_UNKNOWN),
        ("-" * 40 + "1", ex.EXPRESSION_TOO_DEEP),
        ("1" + " + 1" * 600, ex.EXPRESSION_TOO_LONG),
        ("10.0 ** 400", ex.EXPRESSION_NOT_FINITE),
        ("10 ** 10 ** 10", ex.EXPRESSION_NOT_FINITE),
        ("size.upper()", ex.EXPRESSION_UNSUPPORTED),
        ("().__class__", ex.EXPRESSION_UNSUPPORTED),
        ("open('/etc/passwd')", ex.EXPRESSION_UNSUPPORTED),
        ("__import__('os')", ex.EXPRESSION_UNSUPPORTED),
        ("(lambda: 1)()", ex.EXPRESSION_UNSUPPORTED),
        ("[x for x in range(10) for y in range(10)]", ex.EXPRESSION_UNSUPPORTED),
        ("sum([1])", ex.EXPRESSION_UNSUPPORTED),
        ("1 +", ex.EXPRESSION_SYNTAX),
        ("'a' * 3", ex.EXPRESSION_TYPE),
        ("1 if size else 2", ex.EXPRESSION_TYPE),
        (
            "[i for i in range(1000) if len([j for j in range(1000)]) > 0]",
            ex.EXPRESSION_TOO_COSTLY,
        ),
    ],
)
def test_the_expression_language_refuses_with_stable_codes(expression: str, code: str) -> None:
    with pytest.raises(ex.ExpressionError) as caught:
        ex.evaluate(expression, {"size": "M3", "t": {"M3": 3.4}})
    assert caught.value.code == code, caught.value.message


def test_the_expression_language_computes() -> None:
    env = {"size": "M4", "iso": {"M4": {"clearance": 4.5, "tap": 3.3}}, "n": 3, "pitch": 10}
    assert ex.evaluate("max(2 * iso[size]['clearance'], 6)", env) == 9.0
    assert ex.evaluate("[[i * pitch - (n - 1) * pitch / 2, 0] for i in range(n)]", env) == [
        [-10.0, 0],
        [0.0, 0],
        [10.0, 0],
    ]
    assert ex.evaluate("round(sqrt(2), 3) if n >= 3 and not n > 4 else 0", env) == 1.414
    assert ex.evaluate("floor(7 / 2) + ceil(0.2) + abs(-1) + 7 // 2 + 7 % 2", env) == 9
    assert ex.evaluate("1 < n <= 3", env) is True
    assert ex.names(ex.parse("[i * pitch for i in range(n)] + [iso[size]]")) == {
        "pitch",
        "n",
        "range",
        "iso",
        "size",
    } - {"range"}


def test_a_workflow_expression_has_what_the_repair_templates_brought_in() -> None:
    env = {"size": "M4", "iso": {"M4": {"clearance": 4.5}}, "hole": {"value": 0.5, "unit": "cm"}}
    assert ex.evaluate("iso[size].clearance * 2", env) == 9.0
    assert ex.evaluate("iso.M4['clearance']", env) == 4.5
    assert ex.evaluate("value(hole) + value(3)", env) == 8.0
    assert ex.evaluate("None if size is None else size", env) == "M4"
    assert ex.evaluate("size is not None and iso.M4.clearance > 4", env) is True
    with pytest.raises(ex.ExpressionError) as caught:
        ex.evaluate("iso.M5", env)
    assert caught.value.code == ex.EXPRESSION_KEY_UNKNOWN
    with pytest.raises(ex.ExpressionError) as caught:
        ex.evaluate("size.upper", env)  # a string has no keys
    assert caught.value.code == ex.EXPRESSION_TYPE


def test_attribute_access_expands_and_lints_in_a_workflow(tmp_path: Path) -> None:
    expression = "min(radius.large, width / 4) if size is not None else 0"
    template = _with_template(radius={"$expr": expression})
    assert _lint(template) == []
    runtime = admit(tmp_path, template)
    index = capability_index(runtime.catalog)
    repository = ModelRepository.open(tmp_path / "s.sqlite3", node_signatures(index))
    repository.init()
    try:
        ctx = PlanContext(catalog=runtime.catalog, repository=repository, capabilities=index)
        report, _ = check_plan(plan(repository.head("main"), wf_step()), ctx)
    finally:
        repository.close()
    assert report.ok, report.diagnostics
    assert report.expansions["mount"][1]["args"]["radius"] == 3
    # a name outside the workflow's parameters and tables is refused at lint, with the code
    (finding,) = lint_manifest(
        PackageManifest.model_validate(_with_template(radius={"$expr": "expected.max"}))
    )
    assert finding.code == "LINT_WORKFLOW_EXPRESSION_INVALID"
    assert "EXPRESSION_NAME_UNKNOWN: expected is not known here" in finding.message


def test_a_tampered_definition_is_refused_like_any_tampered_package(tmp_path: Path) -> None:
    m = workflow_manifest()
    signer = ThrowawaySigner(PUBLISHER)
    tampered = copy.deepcopy(m)
    tampered["workflows"][WF]["tables"]["radius"]["small"] = 9
    registry = Registry()
    registry.by_type["capability_packages"][m["name"]] = Registered(
        package_source(m, signer, fake_implementations(m), raw=json.dumps(tampered).encode()),
        "t",
        "t",
    )
    state = CatalogState(tmp_path / "c.sqlite3")
    try:
        catalog = build_catalog(registry, trust=trust_policy_for(signer), state=state)
    finally:
        state.close()
    assert not catalog.packages
    assert [r.code for q in catalog.quarantine for r in q.reasons] == ["SIGNATURE_INVALID"]


def test_the_definition_is_in_the_authoring_lock(tmp_path: Path) -> None:
    one = admit(tmp_path / "a", workflow_manifest()).catalog
    changed = workflow_manifest()
    changed["workflows"][WF]["tables"]["radius"]["small"] = 2
    two = admit(tmp_path / "b", changed).catalog
    assert one.authoring_lock_hash() != two.authoring_lock_hash()
    assert one.discovery_catalog_hash() == two.discovery_catalog_hash()


def _lint(m: dict[str, Any], known: set[str] | None = None) -> list[str]:
    manifest = PackageManifest.model_validate(m, by_name=False)
    return [d.code for d in lint_manifest(manifest, known_capabilities=known)]


def test_lint_passes_the_workflow_and_catches_broken_templates() -> None:
    assert _lint(workflow_manifest()) == []
    unknown = workflow_manifest()
    unknown["workflows"][WF]["steps"][0]["capability"] = "cap:exact.nothing@1"
    assert _lint(unknown, set()) == ["LINT_WORKFLOW_CAPABILITY_UNKNOWN"]
    missing = workflow_manifest(workflows={})
    assert _lint(missing) == ["LINT_WORKFLOW_DEFINITION_MISSING"]
    assert _lint(_with_template(radius={"$expr": "radius[colour]"})) == [
        "LINT_WORKFLOW_EXPRESSION_INVALID"
    ]
    assert _lint(_with_template(radius={"$expr": "radius.get('x')"})) == [
        "LINT_WORKFLOW_EXPRESSION_INVALID"
    ]
    assert _lint(_with_template(target={"step": "later"})) == ["LINT_WORKFLOW_STEP_REFERENCE"]
    # a Shape input fed from a validator step, which makes no shape
    shapeless = workflow_manifest()
    steps = shapeless["workflows"][WF]["steps"]
    steps[1], steps[2] = steps[2], steps[1]
    steps[2]["args"]["target"] = {"step": "check"}
    steps[2]["args"]["edges"]["body"] = {"$step": "plate"}
    assert _lint(shapeless) == ["LINT_WORKFLOW_TYPE_MISMATCH"]


def test_conformance_expands_every_input_example() -> None:
    m = workflow_manifest()
    m["descriptors"][-1]["inputExamples"].append({"input": {"length": 40, "width": 0, "height": 1}})
    manifest = PackageManifest.model_validate(m, by_name=False)
    index = ImplementationIndex(fake_implementations(runtime_manifest()))
    report = check_conformance(manifest, index, "pkg:x")
    (wf,) = [c for c in report.checks if c.capability_id == WF_CAP]
    assert not wf.passed
    assert [d.code for d in wf.diagnostics] == ["CONFORMANCE_EXAMPLE_REJECTED"]
    assert "input example 1" in wf.diagnostics[0].message
    good = PackageManifest.model_validate(workflow_manifest(), by_name=False)
    report = check_conformance(good, index, "pkg:x")
    assert report.passed, [d for c in report.checks for d in c.diagnostics]


def test_a_task_shows_the_expansion_to_the_model_and_traces_it(ctx) -> None:
    from aira_core.runtime.session import Task
    from aira_core.testing.kernel import FakeGeometryKernel

    kernel = FakeGeometryKernel()
    # the workflow's contract is the one the model needs: the steps it expands to come from
    # its signed definition, which the authoring lock covers
    t = Task(ctx, kernel, task_id="t1", capsule_contracts=[WF_CAP])
    out = t.call("model.proposePatch", "p", {"plan": plan(t.head, wf_step()).to_wire()})
    assert out.status == "success", out.diagnostics
    assert [s["id"] for s in out.data["expansions"]["mount"]] == [
        "mount.plate",
        "mount.round",
        "mount.check",
    ]
    assert t.trace[-1].expansions == {"mount": ["mount.plate", "mount.round", "mount.check"]}
    preview = t.call("model.preview", "v")
    assert preview.status == "success", preview.diagnostics
    assert kernel.total_calls > 0


def test_describe_shows_the_definition_a_workflow_expands_by(ctx) -> None:
    from aira_core.catalog.disclosure import catalog_disclosure

    contract = catalog_disclosure(ctx.catalog).contract(WF_CAP)
    definition = contract["workflow"]
    assert [s["id"] for s in definition["steps"]] == ["plate", "round", "check"]
    assert definition["tables"] == {"radius": {"small": 1, "large": 3}}
    assert "workflow" not in catalog_disclosure(ctx.catalog).contract(BOX_CAP)


def test_a_plan_of_too_many_workflow_steps_is_refused_before_expanding(ctx) -> None:
    from aira_core.catalog.workflows import MAX_WORKFLOW_STEPS

    head = ctx.repository.head("main")
    many = [wf_step(f"w{i}") for i in range(MAX_WORKFLOW_STEPS + 1)]
    report, lowered = check_plan(plan(head, *many), ctx)
    assert [d.code for d in report.diagnostics] == ["WORKFLOW_EXPANSION_TOO_LARGE"]
    assert lowered is None and report.failed_step == f"w{MAX_WORKFLOW_STEPS}"


def test_the_evaluation_budget_is_shared_by_one_expansion() -> None:
    budget = ex.Budget()
    ex.evaluate("[i for i in range(1000)]", {}, budget)  # about 2,000 steps
    with pytest.raises(ex.ExpressionError) as caught:
        for _ in range(20):
            ex.evaluate("[i for i in range(1000)]", {}, budget)
    assert caught.value.code == ex.EXPRESSION_TOO_COSTLY
    assert ex.evaluate("[i for i in range(1000)]", {}) == list(range(1000))  # a fresh budget


def test_only_a_plan_grown_by_expansion_is_capped(ctx, monkeypatch) -> None:
    from aira_core.catalog import workflows

    monkeypatch.setattr(workflows, "MAX_EXPANDED_STEPS", 2)
    head = ctx.repository.head("main")
    report, _ = check_plan(plan(head, wf_step()), ctx)  # three steps once expanded
    assert [d.code for d in report.diagnostics] == ["WORKFLOW_EXPANSION_TOO_LARGE"]
    boxes = [step(f"b{i}", BOX_CAP, length=1, width=1, height=1) for i in range(3)]
    report, _ = check_plan(plan(head, *boxes), ctx)
    assert report.ok, report.diagnostics
