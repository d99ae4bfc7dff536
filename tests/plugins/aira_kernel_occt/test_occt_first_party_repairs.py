"""The first-party package's own repairs of the kernel's size refusals, on the real kernel:
``cap:exact.reduceFilletRadius@1`` (``FILLET_RADIUS_TOO_LARGE``) and
``cap:exact.reduceChamferLength@1`` (``CHAMFER_TOO_LARGE``). A refused plan lists the repair
of its code and offers it; the candidate is the plan with the failing step's size at 90 % of
the kernel's ``expected`` largest fit (rounded to 0.01 mm), made without writing, and it
commits; through the bounded-step host, the ``repair`` act returns it and a ``plan`` act
applies it. A refusal with no ``expected`` (no size fits) stays a refusal: no candidate,
``REPAIR_NOT_APPLICABLE`` naming the condition that does not hold."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

from occt_write import occt_write_path

from aira_core.catalog.catalog import build_catalog
from aira_core.contracts.plan import Plan
from aira_core.contracts.script import DecisionScript
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import ResultEntry, StepReply, StepRequest
from aira_core.model.store import MAIN, ModelStore
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.repairs import REPAIR_NOT_APPLICABLE, candidate
from aira_core.runtime.write import WritePath
from aira_core.step.runner import run_script
from aira_core.step.trajectory import ScriptedSource
from aira_kernel_occt.operations import REPAIR_MARGIN

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FILLET = "cap:exact.reduceFilletRadius@1"
CHAMFER = "cap:exact.reduceChamferLength@1"
CASES = [
    ("cap:exact.fillet@1", "FILLET_RADIUS_TOO_LARGE", "radius", "maxRadius", FILLET),
    ("cap:exact.chamfer@1", "CHAMFER_TOO_LARGE", "length", "maxLength", CHAMFER),
]
IDS = ["fillet", "chamfer"]


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    from aira_kernel_occt.kernel import OcctKernel

    k = OcctKernel()
    yield k
    k.close()


@pytest.fixture(scope="module")
def write(tmp_path_factory: pytest.TempPathFactory, kernel: Any) -> Iterator[WritePath]:
    """The first-party package alone (signed with the first-party key, default trust)."""
    with occt_write_path(tmp_path_factory.mktemp("first-party-repairs"), kernel) as write:
        assert {FILLET, CHAMFER} <= set(write.ctx.capabilities)
        yield write


def sized_steps(capability: str, name: str, size: float, label: str) -> list[dict[str, Any]]:
    """A 20 x 10 x 5 block with its vertical edges filleted or chamfered: both fit below
    5 mm (half the smaller side)."""
    return [
        {
            "id": "block",
            "capability": "cap:exact.box@1",
            "label": label,
            "args": {"length": 20, "width": 10, "height": 5},
        },
        {
            "id": "edges",
            "capability": capability,
            "args": {
                "target": "block",
                "edges": {"body": "block", "select": "|Z", "entity": "Edge"},
                name: size,
            },
        },
    ]


@pytest.mark.parametrize(("capability", "code", "name", "limit", "repair"), CASES, ids=IDS)
def test_the_kernels_refusal_offers_the_repair_and_its_candidate_commits(
    write: WritePath, capability: str, code: str, name: str, limit: str, repair: str
) -> None:
    store = write.repository.store
    base = write.repository.head(MAIN)
    refused_plan = Plan.model_validate(
        {"baseRevision": base, "steps": sized_steps(capability, name, 8.0, f"{name}Block")}
    )
    refused = write.apply(refused_plan, f"too-big-{name}")
    assert refused.status == "failed" and refused.data["stage"] == "preview"
    (found,) = [d for d in refused.diagnostics if d.code == code]
    assert found.subject == "edges" and found.repairs == [repair]
    offered = [a for a in refused.next_actions if a.operation == "model.read" and a.capability]
    assert [a.args for a in offered] == [
        {"repair": repair, "diagnostic": {"code": code, "step": "edges"}}
    ]
    largest = found.expected[limit]
    assert 4.95 <= largest < 5.0 and found.actual == {name: 8.0}

    made = candidate(write.ctx.capabilities, repair, refused_plan, found)
    assert made["repair"] == repair and made["step"] == "edges"
    assert made["changes"] == {name: {"from": 8.0, "to": round(largest * 0.9, 2)}}
    # it says what it picks, the kernel's limit and why (the margin, a parameter)
    summary = made["summary"]
    assert f"{name} 8 -> {round(largest * 0.9, 2):g}" in summary
    assert f"expected.{limit} = {largest:g} (from the refusal)" in summary
    assert f"round(expected.{limit} * {REPAIR_MARGIN}, 2)" in summary
    assert "keeps a margin" in summary and f"{round(REPAIR_MARGIN * 100)}%" in summary
    assert store.branches() == {MAIN: base}, "a refusal and a candidate write nothing"
    # only the failing step's size changed; the candidate is on the same base
    assert made["plan"]["baseRevision"] == base
    assert made["plan"]["steps"][0] == refused_plan.to_wire()["steps"][0]

    applied = write.apply(Plan.model_validate(made["plan"]), f"repaired-{name}")
    assert applied.status == "success", [d.to_wire() for d in applied.diagnostics]
    assert write.repository.head(MAIN) != base


@pytest.mark.parametrize(("capability", "code", "name", "limit", "repair"), CASES, ids=IDS)
def test_a_refusal_without_expected_gets_no_candidate(
    write: WritePath, capability: str, code: str, name: str, limit: str, repair: str
) -> None:
    """When no size fits, the kernel's diagnostic has no ``expected``: the repair's condition
    does not hold, so there is no candidate and the refusal stays one."""
    base = write.repository.head(MAIN)
    plan = Plan.model_validate(
        {"baseRevision": base, "steps": sized_steps(capability, name, 8.0, f"{name}None")}
    )
    nothing_fits = Diagnostic(code=code, message="no size fits", subject="edges", actual={name: 8})
    with pytest.raises(AiraError) as caught:
        candidate(write.ctx.capabilities, repair, plan, nothing_fits)
    assert caught.value.code == REPAIR_NOT_APPLICABLE
    assert "expected is not None" in caught.value.diagnostic.message
    # nor does a fillet repair apply to a chamfer's refusal, or the other way round
    other = FILLET if repair == CHAMFER else CHAMFER
    fits = nothing_fits.model_copy(update={"expected": {limit: 4.96}})
    with pytest.raises(AiraError) as wrong:
        candidate(write.ctx.capabilities, other, plan, fits)
    assert wrong.value.code == REPAIR_NOT_APPLICABLE
    assert write.repository.head(MAIN) == base


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The production catalog with the first-party plugin registered (as test_occt_long's)."""
    from aira_core.plugins import get_plugin_system
    from aira_kernel_occt import plugin

    home = tmp_path_factory.mktemp("home")
    system = get_plugin_system()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRA_HOME", str(home))
        system.register(plugin, "occt")
        try:
            yield build_catalog()
        finally:
            system.unregister("occt")


def test_a_kernel_refusal_where_no_radius_fits_gets_no_candidate(write: WritePath) -> None:
    """The vertical edges of a box rounded once are seams between round and flat faces: no
    second fillet fits there, so the kernel's refusal has no ``expected``; the repair is
    still listed for the code, but makes no candidate, and nothing is written."""
    store = write.repository.store
    base = write.repository.head(MAIN)
    edges = {"body": "cube", "select": "|Z", "entity": "Edge"}
    plan = Plan.model_validate(
        {
            "baseRevision": base,
            "steps": [
                {
                    "id": "cube",
                    "capability": "cap:exact.box@1",
                    "label": "seamCube",
                    "args": {"length": 20, "width": 20, "height": 20},
                },
                {
                    "id": "round",
                    "capability": "cap:exact.fillet@1",
                    "args": {"target": "cube", "edges": edges, "radius": 7.5},
                },
                {
                    "id": "again",
                    "capability": "cap:exact.fillet@1",
                    "args": {"target": "cube", "edges": edges, "radius": 8},
                },
            ],
        }
    )
    refused = write.apply(plan, "nothing-fits")
    assert refused.status == "failed" and refused.data["stage"] == "preview"
    (found,) = [d for d in refused.diagnostics if d.code == "FILLET_RADIUS_TOO_LARGE"]
    assert found.subject == "again" and found.expected is None
    assert found.actual == {"radius": 8.0} and found.repairs == [FILLET]
    with pytest.raises(AiraError) as caught:
        candidate(write.ctx.capabilities, FILLET, plan, found)
    assert caught.value.code == REPAIR_NOT_APPLICABLE
    assert "does not hold" in caught.value.diagnostic.message
    assert store.branches() == {MAIN: base}


class _Candidate(ScriptedSource):
    """The script, except that ``{"act": "plan", "candidate": true}`` becomes a plan act of
    the candidate the last ``repair`` result held, as a model would send it."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.shown: list[dict[str, Any]] = []

    def decide(self, request: StepRequest) -> StepReply:
        reply = super().decide(request)
        if json.loads(reply.text).get("candidate") is True:
            results = [e for e in request.log if isinstance(e, ResultEntry)]
            made = json.loads(results[-1].text)
            assert made.get("act") == "repair", [r.text[:600] for r in results]
            self.shown.append(made)
            text = json.dumps({"act": "plan", "summary": "the candidate", "plan": made["plan"]})
            return StepReply(text=text, call_id=reply.call_id, provider="t", model="candidate")
        return reply


def _script(capability: str, code: str, name: str, repair: str) -> DecisionScript:
    word = "fillet" if "fillet" in capability else "chamfer"
    return DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": f"oversized-{word}",
            "intent": {
                "goal": f"a 20 x 10 x 5 mm block with its vertical edges {word}ed as far as fits",
                "hardRequirements": ["block 20 x 10 x 5", f"vertical edges {word}ed"],
                "scope": [],
                "prohibitedEffects": [],
            },
            "tier": "T32",
            "decisions": [
                {"act": "read"},
                {"act": "lookup", "query": "a rectangular box solid"},
                {"act": "lookup", "query": f"{word} the vertical edges of a body"},
                {
                    "act": "batch",
                    "acts": [
                        {"act": "lookup", "capability": "cap:exact.box@1", "level": "L2"},
                        {"act": "lookup", "capability": capability, "level": "L2"},
                    ],
                },
                {
                    "act": "plan",
                    "summary": f"block, {word} 8",
                    "plan": {"steps": sized_steps(capability, name, 8.0, "block")},
                },
                {"act": "repair", "capability": repair, "diagnostic": {"code": code}},
                {"act": "plan", "candidate": True},
                {"act": "done", "summary": f"block with its vertical edges {word}ed"},
            ],
        }
    )


@pytest.mark.parametrize(("capability", "code", "name", "limit", "repair"), CASES, ids=IDS)
def test_the_step_host_repairs_a_refused_plan_with_the_first_party_repair(
    kernel: Any,
    catalog: Any,
    tmp_path: Path,
    capability: str,
    code: str,
    name: str,
    limit: str,
    repair: str,
) -> None:
    script = _script(capability, code, name, repair)
    source = _Candidate(script)
    run = run_script(
        script,
        kernel=kernel,
        store=tmp_path / "store.sqlite3",
        trajectory=tmp_path / "trajectory.jsonl",
        tier_name="T32",
        source=source,
        catalog=catalog,
    )
    assert run.outcome.terminal is TerminalState.COMPLETED, run.outcome.reason
    steps = [r for r in run.outcome.records if "step" in r]
    acts = [r["decision"]["act"] for r in steps]
    assert acts == ["read", "lookup", "lookup", "batch", "plan", "repair", "plan", "done"]
    refused, made, applied = steps[4:7]
    assert refused["result"]["code"] == code and refused["result"]["failedStep"] == "edges"
    assert made["result"]["status"] == "ok" and made["decision"]["capability"] == repair
    assert made["head"] == refused["head"], "the repair act wrote nothing"
    (shown,) = source.shown
    assert shown["repair"] == repair and shown["diagnostic"] == code and shown["step"] == "edges"
    (change,) = shown["changes"].values()
    assert change["from"] == 8.0 and 4.45 <= change["to"] < 4.5  # 90 % of a fit below 5 mm
    assert applied["result"]["status"] == "ok" and applied["result"]["rev"] == run.outcome.head
    # what committed is the repair's candidate: the commit names its plan id
    store = ModelStore(run.store)
    try:
        records = [r for b in store.branches() for r in store.log(b, limit=None)]
    finally:
        store.close()
    (commit,) = {r.rev: r for r in records if r.rev == run.outcome.head}.values()
    assert commit.meta["planId"] == made["result"]["planId"] == shown["planId"]
