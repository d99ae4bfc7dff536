"""Repairs (RFC-0002 §5.3 repairsDiagnostic, §11.3): a refused plan's diagnostics list the
registered repairs of their code, nextActions offers them with their preconditions, a repair
produces a candidate plan from its declarative template and never writes, and the candidate
goes through the one write path like any plan."""

from __future__ import annotations

import copy
import json
import types
from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira
from factory import Signer, write_package
from runtime_factory import (
    FILLET_CAP,
    FILLET_RADIUS_TOO_LARGE,
    PUBLISHER,
    admit,
    composite_steps,
    plan,
    runtime_manifest,
)

from aira_core.catalog import expressions as ex
from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.lint import lint_manifest
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.capability import CapabilityDescriptor
from aira_core.contracts.package import PackageManifest
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.model.repository import ModelRepository
from aira_core.runtime.plan import PlanContext
from aira_core.runtime.repairs import candidate
from aira_core.runtime.session import Task
from aira_core.testing.kernel import FakeGeometryKernel

REDUCE_CAP = "cap:fillet.reduceRadius@1"
REDUCE_REF = "repair.fillet.reduceRadius@1.0.0"
# half the radius asked for (in mm), or the largest one the diagnostic says fits
TOO_LARGE = FILLET_RADIUS_TOO_LARGE
HALF = "expected.max if expected is not None else value(args.radius) * 0.5"


def repair_descriptor(**template: Any) -> dict[str, Any]:
    return {
        "capabilityId": REDUCE_CAP,
        "kind": "repair",
        "patchTemplateRef": REDUCE_REF,
        "profileVersion": "1.0.0",
        "title": "Reduce a fillet's radius",
        "summary": "A candidate fillet step with a smaller radius, for a radius that is too large.",
        "inputs": {"schemaRef": "amir://repairs/repair.fillet.reduceRadius/1.0.0/input"},
        "taxonomy": {"primary": "authoring.exact.finishing"},
        "intentExamples": ["the fillet radius is too large: try a smaller one"],
        "effects": ["readOnly"],
        "risk": {"level": "low"},
        "execution": {"quality": ["preview"], "costClass": "instant"},
        "relations": {"repairsDiagnostic": [FILLET_RADIUS_TOO_LARGE]},
        "patchTemplate": {"appliesTo": [FILLET_CAP], "set": {"radius": HALF}, **template},
    }


def manifest_with_repair(**template: Any) -> dict[str, Any]:
    m = runtime_manifest()
    m["descriptors"].append(repair_descriptor(**template))
    m["schemas"]["amir://repairs/repair.fillet.reduceRadius/1.0.0/input"] = {"type": "object"}
    return m


def runtime(tmp_path: Path) -> tuple[PlanContext, FakeGeometryKernel, ModelRepository]:
    kernel = FakeGeometryKernel()
    rt = admit(tmp_path, manifest_with_repair(), kernel=kernel)
    index = capability_index(rt.catalog)
    repo = ModelRepository.open(tmp_path / "store.sqlite3", node_signatures(index))
    repo.init()
    ctx = PlanContext(catalog=rt.catalog, repository=repo, grant=LOCAL_GRANT, capabilities=index)
    return ctx, kernel, repo


def codes(envelope: Any) -> list[str]:
    return [d.code for d in envelope.diagnostics]


def refused_task(tmp_path: Path, radius: float = 16.0) -> tuple[Task, ModelRepository, Any]:
    """A task whose plan (plate 40 × 30, fillet ``radius``) the fake kernel refused at
    preview: r ≥ 15 mm does not fit."""
    ctx, kernel, repo = runtime(tmp_path)
    t = Task(ctx, kernel, task_id="t1")
    t.call("interface.manifest", "m")
    proposed = t.call(
        "model.proposePatch",
        "p1",
        {"plan": plan(t.head, *composite_steps(radius=radius)).to_wire()},
    )
    assert proposed.status == "success", proposed.diagnostics
    preview = t.call("model.preview", "v1", {})
    assert preview.status == "failed" and codes(preview)[0] == FILLET_RADIUS_TOO_LARGE
    return t, repo, preview


def test_a_refused_plan_lists_the_repair_and_next_actions_offer_it(tmp_path: Path) -> None:
    _t, _repo, preview = refused_task(tmp_path)
    fillet = preview.diagnostics[0]
    assert fillet.subject == "round" and fillet.repairs == [REDUCE_CAP]
    offered = [a for a in preview.next_actions if a.operation == "model.read" and a.capability]
    assert len(offered) == 1
    action = offered[0]
    assert action.capability == REDUCE_CAP
    assert action.args == {
        "repair": REDUCE_CAP,
        "diagnostic": {"code": FILLET_RADIUS_TOO_LARGE, "step": "round"},
    }
    assert [p.id for p in action.preconditions] == ["diagnostic.present"]
    assert action.preconditions[0].args == action.args["diagnostic"]
    # the capability it names is a registered one, also offered for describe
    assert any(
        a.operation == "catalog.describe" and a.capability == REDUCE_CAP
        for a in preview.next_actions
    )


def test_a_repair_makes_a_candidate_and_writes_nothing(tmp_path: Path) -> None:
    t, repo, preview = refused_task(tmp_path)
    (action,) = [a for a in preview.next_actions if a.operation == "model.read" and a.capability]
    heads = {b: repo.head(b) for b in repo.store.branches()}
    first = t.call("model.read", "r1", dict(action.args))
    second = t.call("model.read", "r2", dict(action.args))
    assert first.status == "success", first.diagnostics
    made = first.data["candidate"]
    assert made == second.data["candidate"], "the same refusal, the same candidate"
    assert made["repair"] == REDUCE_CAP and made["step"] == "round"
    assert made["changes"] == {"radius": {"from": 16.0, "to": 8.0}}
    steps = {s["id"]: s for s in made["plan"]["steps"]}
    assert steps["round"]["args"]["radius"] == 8.0
    assert steps["plate"] == plan(t.head, *composite_steps(radius=16.0)).to_wire()["steps"][1]
    assert {b: repo.head(b) for b in repo.store.branches()} == heads, "a repair never writes"


def test_the_candidate_commits_through_the_write_path(tmp_path: Path) -> None:
    t, repo, preview = refused_task(tmp_path)
    (action,) = [a for a in preview.next_actions if a.operation == "model.read" and a.capability]
    made = t.call("model.read", "r1", dict(action.args)).data["candidate"]
    for rid, op, args in [
        ("p2", "model.proposePatch", {"plan": made["plan"]}),
        ("v2", "model.preview", {}),
        ("x2", "model.validate", {}),
        ("c2", "model.commit", {}),
    ]:
        out = t.call(op, rid, args)
        assert out.status == "success", (op, out.diagnostics)
    summary = repo.summary(t.head).to_wire()
    assert "b:plate" in summary["aliases"]


def test_a_check_refusal_lists_the_repair_too(tmp_path: Path) -> None:
    ctx, kernel, _repo = runtime(tmp_path)
    t = Task(ctx, kernel, task_id="t1")
    t.call("interface.manifest", "m")
    bad = plan(t.head, *composite_steps(radius="big")).to_wire()  # not a length: plan.check
    out = t.call("model.proposePatch", "p", {"plan": bad})
    assert out.status == "blocked"
    assert all(d.repairs is None for d in out.diagnostics), "no repair for PLAN_ARGS_INVALID"
    read = t.call("model.read", "r", {"repair": REDUCE_CAP, "diagnostic": {"code": "X"}})
    assert codes(read) == ["REPAIR_NOT_APPLICABLE"]


@pytest.mark.parametrize(
    ("cap", "diagnostic", "code"),
    [
        ("cap:nowhere@1", {"code": FILLET_RADIUS_TOO_LARGE, "subject": "round"}, "REPAIR_UNKNOWN"),
        (FILLET_CAP, {"code": FILLET_RADIUS_TOO_LARGE, "subject": "round"}, "REPAIR_UNKNOWN"),
        (REDUCE_CAP, {"code": "SELECTION_EMPTY", "subject": "round"}, "REPAIR_NOT_APPLICABLE"),
        (REDUCE_CAP, {"code": FILLET_RADIUS_TOO_LARGE, "subject": "nope"}, "REPAIR_NOT_APPLICABLE"),
        (
            REDUCE_CAP,
            {"code": FILLET_RADIUS_TOO_LARGE, "subject": "plate"},
            "REPAIR_NOT_APPLICABLE",
        ),
    ],
)
def test_a_repair_that_does_not_fit_gets_a_stable_code(
    tmp_path: Path, cap: str, diagnostic: dict[str, Any], code: str
) -> None:
    ctx, _kernel, repo = runtime(tmp_path)
    p = plan(repo.head("main"), *composite_steps(radius=16.0))
    with pytest.raises(AiraError) as err:
        candidate(ctx.capabilities, cap, p, Diagnostic(message="m", **diagnostic))
    assert err.value.code == code


def test_the_template_uses_the_largest_radius_the_diagnostic_carries(tmp_path: Path) -> None:
    ctx, _kernel, repo = runtime(tmp_path)
    p = plan(repo.head("main"), *composite_steps(radius={"value": 2, "unit": "cm"}))
    without = Diagnostic(code=FILLET_RADIUS_TOO_LARGE, message="m", subject="round")
    assert candidate(ctx.capabilities, REDUCE_CAP, p, without)["changes"]["radius"]["to"] == 10.0
    with_max = without.model_copy(update={"expected": {"max": 14.5}})
    assert candidate(ctx.capabilities, REDUCE_CAP, p, with_max)["changes"]["radius"]["to"] == 14.5
    broken = without.model_copy(update={"expected": {"min": 1}})  # no key max
    with pytest.raises(AiraError) as err:
        candidate(ctx.capabilities, REDUCE_CAP, p, broken)
    assert err.value.code == "REPAIR_TEMPLATE_FAILED"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("__import__('os')", ex.EXPRESSION_UNSUPPORTED),
        ("args.__class__", ex.EXPRESSION_UNSUPPORTED),
        ("args.radius.real", ex.EXPRESSION_TYPE),
        ("open('x')", ex.EXPRESSION_UNSUPPORTED),
        ("'a' * 100000000", ex.EXPRESSION_TYPE),
        ("lambda: 1", ex.EXPRESSION_UNSUPPORTED),
        ("min", ex.EXPRESSION_NAME_UNKNOWN),
        ("x", ex.EXPRESSION_NAME_UNKNOWN),
        ("args.radius is 2", ex.EXPRESSION_UNSUPPORTED),
        ("args.radius ** 9999", ex.EXPRESSION_NOT_FINITE),
        ("1 / 0", ex.EXPRESSION_DIVISION_BY_ZERO),
        ("args.depth", ex.EXPRESSION_KEY_UNKNOWN),
        ("expected.max", ex.EXPRESSION_TYPE),  # expected is None: no key to read
        ("not expected", ex.EXPRESSION_TYPE),  # conditions are booleans, in every context
        ("value({'value': 1})", ex.EXPRESSION_UNSUPPORTED),
        ("value(args)", ex.EXPRESSION_TYPE),
    ],
)
def test_a_template_expression_is_refused_with_a_stable_code(text: str, code: str) -> None:
    with pytest.raises(ex.ExpressionError) as caught:
        ex.evaluate(text, {"args": {"radius": 2}, "expected": None, "actual": None})
    assert caught.value.code == code


def test_a_template_expression_reads_json_values_and_quantities() -> None:
    assert ex.evaluate(SOME, {}) == 1000
    names = {"args": {"r": {"value": 0.5, "unit": "cm"}, "n": [3, 4]}, "expected": None}
    assert ex.evaluate("max(1, value(args.r) * 2) if expected is None else 0", names) == 10.0
    assert ex.evaluate("args.n[1] - args['n'][0] >= 1 and expected is None", names) is True
    assert ex.evaluate("round(2 / 3, 2)", names) == 0.67
    # the example vendor package's template (examples/aira-pack-holes)
    names["expected"] = {"maxRadius": 4.25}
    assert ex.evaluate("expected is not None and expected.maxRadius > 0", names) is True
    assert ex.evaluate("round(expected.maxRadius * 0.9, 2)", names) == 3.83
    # what the workflow language has, a template has too
    assert ex.evaluate("[v * 2 for v in args.n if v > 3]", names) == [8]


LONG = "args.radius" + " + 1" * 500  # 2011 characters
DEEP = "-" * 40 + "args.radius"  # short, but 41 levels deep
COSTLY = "len([i for i in range(1000) if len([j for j in range(1000)]) > 0])"
SOME = "len([i for i in range(1000)])"  # about 1,000 steps: fits, but not 21 times


@pytest.mark.parametrize(
    ("template", "code"),
    [
        ({"set": {"radius": LONG}}, ex.EXPRESSION_TOO_LONG),
        ({"set": {"radius": DEEP}}, ex.EXPRESSION_TOO_DEEP),
        ({"when": "[" * 40 + "1" + "]" * 40 + " == 1"}, ex.EXPRESSION_TOO_DEEP),
        ({"set": {"radius": "size[0]"}}, ex.EXPRESSION_NAME_UNKNOWN),
        ({"set": {"radius": "args.radius.__class__"}}, ex.EXPRESSION_UNSUPPORTED),
    ],
)
def test_lint_refuses_a_template_expression_over_the_language_bounds(
    template: dict[str, Any], code: str
) -> None:
    m = manifest_with_repair(**template)
    (finding,) = lint_manifest(PackageManifest.model_validate(m))
    assert finding.code == "LINT_REPAIR_TEMPLATE_INVALID"
    where = "when" if "when" in template else "set/radius"
    assert f"/patchTemplate/{where}: {code}: " in finding.message, finding.message
    assert finding.pointer.endswith(f"/patchTemplate/{where}")


def _entry(**template: Any) -> dict[str, Any]:
    """A capability table holding the repair as written, without lint (which would refuse
    it at admission): what candidate() does with a template lint never saw."""
    descriptor = CapabilityDescriptor.model_validate(repair_descriptor(**template))
    return {REDUCE_CAP: types.SimpleNamespace(descriptor=descriptor)}


@pytest.mark.parametrize(
    ("template", "code"),
    [
        ({"set": {"radius": LONG}}, ex.EXPRESSION_TOO_LONG),
        ({"set": {"radius": DEEP}}, ex.EXPRESSION_TOO_DEEP),
        ({"set": {"radius": COSTLY}}, ex.EXPRESSION_TOO_COSTLY),
        # the steps are shared by one template's expressions: each alone fits
        ({"set": {f"k{i}": SOME for i in range(21)}}, ex.EXPRESSION_TOO_COSTLY),
        ({"when": "expected"}, ex.EXPRESSION_TYPE),  # a condition is a boolean
        ({"set": {"radius": "expected.max"}}, ex.EXPRESSION_TYPE),  # expected is None
    ],
)
def test_a_template_over_the_bounds_fails_with_a_code_at_runtime(
    tmp_path: Path, template: dict[str, Any], code: str
) -> None:
    _ctx, _kernel, repo = runtime(tmp_path)
    p = plan(repo.head("main"), *composite_steps(radius=16.0))
    d = Diagnostic(code=FILLET_RADIUS_TOO_LARGE, message="m", subject="round")
    with pytest.raises(AiraError) as err:
        candidate(_entry(**template), REDUCE_CAP, p, d)
    assert err.value.code == "REPAIR_TEMPLATE_FAILED"
    assert f": {code}: " in err.value.diagnostic.message, err.value.diagnostic.message


def _lint(descriptor: dict[str, Any]) -> list[str]:
    m = manifest_with_repair()
    m["descriptors"][-1] = descriptor
    return [d.code for d in lint_manifest(PackageManifest.model_validate(m))]


def test_lint_accepts_the_repair_and_checks_its_template() -> None:
    assert _lint(repair_descriptor()) == []
    broken = repair_descriptor(set={"radius": "__import__('os')"})
    assert _lint(broken) == ["LINT_REPAIR_TEMPLATE_INVALID"]
    no_codes = copy.deepcopy(repair_descriptor())
    no_codes["relations"] = {}
    assert _lint(no_codes) == ["LINT_REPAIR_DIAGNOSTIC_MISSING"]
    no_template = copy.deepcopy(repair_descriptor())
    del no_template["patchTemplate"]
    assert _lint(no_template) == ["LINT_REPAIR_TEMPLATE_INVALID"]
    undeclared = copy.deepcopy(repair_descriptor())
    undeclared["relations"]["repairsDiagnostic"] = ["VOLUME_OUT_OF_RANGE"]
    assert _lint(undeclared) == ["LINT_REPAIR_DIAGNOSTIC_UNDECLARED"]


def test_only_a_repair_carries_a_template() -> None:
    m = manifest_with_repair()
    fillet = next(d for d in m["descriptors"] if d["capabilityId"] == FILLET_CAP)
    fillet["patchTemplate"] = {"set": {"radius": "1"}}
    found = [d.code for d in lint_manifest(PackageManifest.model_validate(m))]
    assert found == ["LINT_REPAIR_TEMPLATE_INVALID"]


PLUGIN = """
from pathlib import Path
from aira_core import hookimpl
from aira_core.extensions import CapabilityPackageSource
from runtime_factory import FakeGeometryKernel, runtime_implementations, runtime_manifest

@hookimpl
def aira_register_capability_packages(register):
    impls = runtime_implementations(runtime_manifest())
    register(CapabilityPackageSource.from_directory(Path({package!r}), impls))

@hookimpl
def aira_register_kernels(register):
    register(FakeGeometryKernel(runtime_implementations(runtime_manifest())))
"""


def test_aira_plan_repair_prints_a_candidate_that_plan_apply_commits(
    register_plugin, aira: RunAira, tmp_path: Path
) -> None:
    signer = Signer(PUBLISHER)
    package = write_package(tmp_path / "package", manifest_with_repair(), signer)
    module = types.ModuleType("aira_fake_repairs_plugin")
    exec(PLUGIN.format(package=str(package)), module.__dict__)
    register_plugin(module, "fake-repairs", distribution="aira-fake-repairs", version="0.0.1")
    assert aira("trust", "add", PUBLISHER, signer.public_b64).returncode == 0
    base = json.loads(aira("model", "init", "--json").stdout)["rev"]
    steps = [s.to_wire() for s in composite_steps(radius=16.0)]
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    refused = aira("plan", "apply", str(plan_file), "--json")
    assert refused.returncode == 1
    envelope_file = tmp_path / "refused.json"
    envelope_file.write_text(refused.stdout)
    assert json.loads(refused.stdout)["diagnostics"][0]["repairs"] == [REDUCE_CAP]

    fixed = tmp_path / "fixed.json"
    out = aira(
        "plan",
        "repair",
        str(plan_file),
        str(envelope_file),
        "--repair",
        REDUCE_CAP,
        "-o",
        str(fixed),
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["changes"] == {"radius": {"from": 16.0, "to": 8.0}}
    assert json.loads(aira("model", "show", "--json").stdout)["rev"] == base, "nothing written"
    applied = aira("plan", "apply", str(fixed), "--json")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert json.loads(aira("model", "show", "--json").stdout)["rev"] != base

    wrong = aira("plan", "repair", str(plan_file), str(envelope_file), "--repair", "cap:no.such@1")
    assert wrong.returncode != 0 and "REPAIR_UNKNOWN" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    not_an_envelope = aira("plan", "repair", str(plan_file), str(plan_file), "--repair", REDUCE_CAP)
    assert not_an_envelope.returncode != 0 and "ENVELOPE_INVALID" in not_an_envelope.stderr
