"""The step host's repair act: a plan the FAKE kernel refuses with FILLET_RADIUS_TOO_LARGE
lists the repair acts its diagnostics offer; ``repair`` returns the candidate the runtime's
``model.read {repair, diagnostic}`` makes of it without writing; the candidate, submitted
as a ``plan`` act, commits through the one write path. Errors are the act's result with a
stable code, the store unchanged; scripts with a repair replay and resume deterministically.
The repair package is tests/test_repairs.py's (a fillet template: half the radius)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import FILLET_CAP, FILLET_RADIUS_TOO_LARGE
from test_repairs import REDUCE_CAP, runtime
from test_step_loop import (
    INTENT,
    Killed,
    discovery,
    plan_decision,
    run_killed,
    script,
)

from aira_core.extensions import ResultEntry, StepReply, StepRequest
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.session import Task
from aira_core.runtime.tiers import TIERS
from aira_core.step import decision as grammar
from aira_core.step import loop
from aira_core.step.capsule import build_capsule
from aira_core.step.loop import StepHost
from aira_core.step.trajectory import ScriptedSource, TrajectoryWriter, read_trajectory

REFUSED = plan_decision(radius=16.0)  # r ≥ 15 mm does not fit the 40 × 30 plate
ON_ROUND = {"code": FILLET_RADIUS_TOO_LARGE, "step": "round"}
REPAIR = {"act": "repair", "capability": REDUCE_CAP, "diagnostic": ON_ROUND}
END = [{"act": "read"}, {"act": "done", "summary": "rounded"}]


class Adaptive(ScriptedSource):
    """The script, except that a ``{"act": "plan", "candidate": true}`` placeholder becomes
    a plan act of the candidate the last repair result held, as a model would send it."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.requests: list[StepRequest] = []

    def decide(self, request: StepRequest) -> StepReply:
        self.requests.append(request)
        reply = super().decide(request)
        if json.loads(reply.text).get("candidate") is True:
            results = [e for e in request.log if isinstance(e, ResultEntry)]
            made = json.loads(results[-1].text)
            assert made["act"] == "repair", made
            text = json.dumps({"act": "plan", "summary": "radius halved", "plan": made["plan"]})
            return StepReply(text=text, call_id=reply.call_id, provider="t", model="adaptive")
        return reply


class Keeping(StepHost):
    """The host, keeping every step's full result (the trajectory keeps a summary)."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.full: list[dict[str, Any]] = []

    def _settle(self, capsule: Any, reply: Any, result: dict[str, Any], act: Any = None) -> None:
        self.full.append(result)
        super()._settle(capsule, reply, result, act)


def run(tmp_path: Path, decisions: list[dict[str, Any]], source: type = ScriptedSource) -> Any:
    """Task t1 on the repair package: (host, outcome, per step the heads of every branch);
    ``host.full`` holds every step's result."""
    ctx, kernel, repo = runtime(tmp_path)
    heads: list[dict[str, str]] = []

    def snapshot(_record: dict[str, Any]) -> None:
        heads.append({b: repo.head(b) for b in repo.store.branches()})

    writer = TrajectoryWriter(tmp_path / "trajectory.jsonl", {"script": "plate"})
    h = Keeping(
        ctx,
        kernel,
        source(script(decisions)),
        task_id="t1",
        intent=INTENT,
        tier=TIERS["T128"],
        trajectory=writer,
        on_step=snapshot,
    )
    outcome = h.run()
    writer.close()
    return h, outcome, heads


def results(outcome: Any) -> list[dict[str, Any]]:
    return [r["result"] for r in outcome.records]


def test_a_refused_plan_is_repaired_and_the_candidate_commits(tmp_path: Path) -> None:
    n = len(discovery())
    decisions = [*discovery(), REFUSED, REPAIR, {"act": "plan", "candidate": True}, *END]
    h, outcome, heads = run(tmp_path, decisions, Adaptive)
    assert outcome.terminal is TerminalState.COMPLETED, results(outcome)
    refused, made, applied = outcome.records[n : n + 3]
    assert refused["result"]["code"] == FILLET_RADIUS_TOO_LARGE
    assert made["result"]["status"] == "ok" and made["result"]["act"] == "repair"
    assert heads[n + 1] == heads[n], "the repair act wrote nothing"
    assert applied["result"]["status"] == "ok" and applied["result"]["rev"] == outcome.head
    # The model saw the candidate in the log and sent it unchanged as a plan act.
    log = h.source.requests[n + 2].log
    shown = json.loads([e for e in log if isinstance(e, ResultEntry)][-1].text)
    assert shown == h.full[n + 1]
    assert shown["changes"] == {"radius": {"from": 16.0, "to": 8.0}}
    assert shown["diagnostic"] == FILLET_RADIUS_TOO_LARGE and shown["step"] == "round"
    assert "baseRevision" not in shown["plan"], "the plan act's shape: the host binds the head"
    # What committed is the candidate: the commit names its plan id.
    (commit,) = h.task.own_commits()
    assert commit.meta["planId"] == shown["planId"]


def test_the_candidate_is_the_plan_with_the_template_applied(tmp_path: Path) -> None:
    """The candidate equals the refused plan with radius halved, written by hand: a script
    with that plan ends on the same head as the run that copied the candidate."""
    decisions = [*discovery(), REFUSED, REPAIR]
    copied = [*decisions, {"act": "plan", "candidate": True}, *END]
    written = [*decisions, plan_decision(radius=8.0), *END]
    _, a, _ = run(tmp_path / "a", copied, Adaptive)
    _, b, _ = run(tmp_path / "b", written)
    assert a.terminal is b.terminal is TerminalState.COMPLETED
    assert a.head == b.head


def test_a_script_with_a_repair_replays_to_the_same_end(tmp_path: Path) -> None:
    decisions = [*discovery(), REFUSED, REPAIR, plan_decision(radius=8.0), *END]
    _, first, _ = run(tmp_path / "a", decisions)
    _, second, _ = run(tmp_path / "b", decisions)
    assert first.terminal is TerminalState.COMPLETED, results(first)
    assert (first.terminal, first.head) == (second.terminal, second.head)
    assert [r["capsuleHash"] for r in first.records] == [r["capsuleHash"] for r in second.records]
    assert results(first) == results(second)
    _, records = read_trajectory(tmp_path / "a" / "trajectory.jsonl")
    repaired = next(r for r in records if r.get("decision", {}).get("act") == "repair")
    assert repaired["decision"] == REPAIR
    assert repaired["result"]["planId"].startswith("plan:sha256:")


def test_the_refused_plans_result_offers_the_repair_act(tmp_path: Path) -> None:
    n = len(discovery())
    h, outcome, _ = run(tmp_path, [*discovery(), REFUSED, REPAIR], Adaptive)
    refused = h.full[n]
    shown = [e for e in h.source.requests[n + 1].log if isinstance(e, ResultEntry)][-1]
    assert json.loads(shown.text) == refused, "the model reads it in the next prompt"
    assert refused["repairActs"] == [REPAIR]
    assert refused["detail"]["envelope"]["diagnostics"][0]["repairs"] == [REDUCE_CAP]
    assert grammar.parse_decision(json.dumps(refused["repairActs"][0])).act == "repair"
    # A capsule built on that result (a new round) shows it too.
    capsule = build_capsule(
        h.ledger, h.tier, index="i", summary={}, schema_pages={}, last_result=refused, step=n + 1
    )
    last = capsule.text[capsule.text.index("lastResult") :]
    assert '"repairActs"' in last and REDUCE_CAP in last
    assert outcome.records[n + 1]["result"]["status"] == "ok"


@pytest.mark.parametrize(
    ("before", "act", "code"),
    [
        ([], REPAIR, "REPAIR_NO_REFUSED_PLAN"),
        ([REFUSED], {**REPAIR, "diagnostic": {"code": "SELECTION_EMPTY"}}, "REPAIR_NOT_APPLICABLE"),
        (
            [REFUSED],
            {**REPAIR, "diagnostic": {**ON_ROUND, "step": "plate"}},
            "REPAIR_NOT_APPLICABLE",
        ),
        ([REFUSED], {**REPAIR, "capability": "cap:nowhere@1"}, "REPAIR_UNKNOWN"),
        ([REFUSED], {**REPAIR, "capability": FILLET_CAP}, "REPAIR_UNKNOWN"),
    ],
)
def test_a_repair_that_cannot_be_made_is_a_coded_result_and_writes_nothing(
    tmp_path: Path, before: list[dict[str, Any]], act: dict[str, Any], code: str
) -> None:
    n = len(discovery()) + len(before)
    _, outcome, heads = run(tmp_path, [*discovery(), *before, act, {"act": "read"}])
    result = outcome.records[n]["result"]
    assert (result["status"], result["code"]) == ("rejected", code), result
    assert heads[n] == heads[n - 1], "the store is unchanged"
    assert outcome.records[n + 1]["result"]["status"] == "ok", "the task goes on"
    assert outcome.terminal is TerminalState.CANNOT_PROCEED  # the script ran out, not a crash


def test_without_a_step_the_first_diagnostic_with_the_code_is_repaired(tmp_path: Path) -> None:
    bare = {**REPAIR, "diagnostic": {"code": FILLET_RADIUS_TOO_LARGE}}
    h, _, _ = run(tmp_path, [*discovery(), REFUSED, bare])
    g, _, _ = run(tmp_path / "with-step", [*discovery(), REFUSED, REPAIR])
    made = h.full[len(discovery()) + 1]
    assert made["status"] == "ok" and made["act"] == "repair", made
    assert made == g.full[len(discovery()) + 1]


def test_a_repair_in_a_batch(tmp_path: Path) -> None:
    batch = {"act": "batch", "acts": [REPAIR, {"act": "read"}]}
    n = len(discovery()) + 1
    h, _, heads = run(tmp_path, [*discovery(), REFUSED, batch])
    out = h.full[n]
    assert out["status"] == "ok" and out["act"] == "batch"
    assert [r["act"] for r in out["results"]] == ["repair", "read"]
    assert heads[n] == heads[n - 1], "the batch wrote nothing"
    alone, _, _ = run(tmp_path / "alone", [*discovery(), REFUSED, REPAIR])
    assert out["results"][0] == alone.full[n], "the same candidate as the act alone"


def test_a_candidate_too_large_for_a_result_keeps_its_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loop, "LAST_RESULT_MAX_TOKENS", 150)
    h, _, _ = run(tmp_path, [*discovery(), REFUSED, REPAIR])
    made = h.full[len(discovery()) + 1]
    assert made["act"] == "repair" and made["status"] == "ok"
    assert "plan" not in made and made["changes"] == {"radius": {"from": 16.0, "to": 8.0}}
    assert "'round'" in made["message"]


def test_the_runtime_says_no_refused_plan_before_one(tmp_path: Path) -> None:
    """The task runtime itself (MCP's model_read takes this path): a distinct code."""
    ctx, kernel, _repo = runtime(tmp_path)
    t = Task(ctx, kernel, task_id="t1")
    out = t.call("model.read", "r1", {"repair": REDUCE_CAP, "diagnostic": ON_ROUND})
    assert [d.code for d in out.diagnostics] == ["REPAIR_NO_REFUSED_PLAN"]


def test_a_resumed_run_does_not_ask_for_the_repair_again(tmp_path: Path) -> None:
    """Killed after the repair step: resuming runs the reads again but not the repair (the
    refused plan is not run again, so the runtime would only refuse it, and the ledger would
    carry a rejection the run never had)."""
    n = len(discovery())
    decisions = [*discovery(), REFUSED, REPAIR, plan_decision(radius=8.0), *END]

    class DiesAfterTheRepair(ScriptedSource):
        def decide(self, request: StepRequest) -> Any:
            if request.step == n + 2:
                raise Killed
            return super().decide(request)

    ctx, kernel, _repo = runtime(tmp_path)
    path = tmp_path / "trajectory.jsonl"
    writer = TrajectoryWriter(path, {"script": "plate"})
    run_killed(ctx, kernel, DiesAfterTheRepair(script(decisions)), writer)
    _, records = read_trajectory(path)
    assert records[-1]["decision"] == REPAIR and records[-1]["result"]["status"] == "ok"
    source = ScriptedSource(script(decisions))
    resumed = StepHost(ctx, kernel, source, task_id="t1", intent=INTENT, tier=TIERS["T128"])
    source.seek(resumed.resume(records))
    assert resumed.ledger.rejection is not None
    assert resumed.ledger.rejection.code == FILLET_RADIUS_TOO_LARGE
    assert not [r for r in resumed.ledger.rejections if "REPAIR_" in r]
    assert not [r for r in resumed.task.trace if r.codes and r.codes[0].startswith("REPAIR_")]
    outcome = resumed.run()
    assert outcome.terminal is TerminalState.COMPLETED, results(outcome)
