"""The bounded-step host end to end on the runtime test package and its FAKE kernel
(tests/runtime_factory.py): the bound at every step, compaction, abstain, budgets, batches,
stale plans, completion only by the runtime, trajectories and replay determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import (
    BOX_CAP,
    DEFINE_CAP,
    FILLET_CAP,
    MASS_PROPERTIES_CAP,
    VOLUME_RANGE_CAP,
    composite_steps,
    make_runtime,
    seed,
)

from aira_core.contracts.plan import IntentFrame
from aira_core.runtime.contract import TerminalState
from aira_core.step.loop import StepHost
from aira_core.step.tiers import TIERS, TaskBudgets
from aira_core.step.trajectory import (
    DecisionScript,
    ScriptedSource,
    TrajectoryWriter,
    read_trajectory,
)

CAPS = [DEFINE_CAP, BOX_CAP, FILLET_CAP, VOLUME_RANGE_CAP, MASS_PROPERTIES_CAP]
INTENT = IntentFrame(goal="a 40 x 30 x 10 plate with its vertical edges rounded 2 mm")


def plan_decision(**kw: Any) -> dict[str, Any]:
    steps = [s.to_wire() for s in composite_steps(**kw)]
    return {"act": "plan", "summary": "the rounded plate", "plan": {"steps": steps}}


def discovery() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"act": "lookup", "query": "box plate block"},
        {"act": "lookup", "query": "fillet round edges"},
        {"act": "lookup", "query": "define a parameter"},
        {"act": "lookup", "query": "volume range mass properties"},
    ]
    return out + [{"act": "lookup", "capability": cap} for cap in CAPS]


def script(decisions: list[dict[str, Any]], tier: str = "T128") -> DecisionScript:
    return DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": "plate",
            "intent": INTENT.to_wire(),
            "tier": tier,
            "decisions": decisions,
        }
    )


def host(tmp_path: Path, decisions: list[dict[str, Any]], *, tier: str = "T128", **kw: Any):
    ctx, kernel, repo = make_runtime(tmp_path)
    writer = TrajectoryWriter(tmp_path / "trajectory.jsonl", {"script": "plate"})
    h = StepHost(
        ctx,
        kernel,
        ScriptedSource(script(decisions, tier)),
        task_id="t1",
        intent=INTENT,
        tier=TIERS[tier],
        trajectory=writer,
        **kw,
    )
    return h, repo, writer


def codes(outcome: Any) -> list[str]:
    return [r["result"].get("code") for r in outcome.records if r["result"].get("code")]


GOOD = [*discovery(), plan_decision(), {"act": "read"}, {"act": "done", "summary": "done"}]


def test_a_scripted_task_completes_and_the_bound_holds_at_every_step(tmp_path: Path) -> None:
    h, repo, writer = host(tmp_path, GOOD)
    outcome = h.run()
    writer.close()
    assert outcome.terminal is TerminalState.COMPLETED, codes(outcome)
    assert outcome.head != repo.head("main")  # the task wrote its own branch
    assert all(r["promptTokens"] <= r["budgetTokens"] for r in outcome.records)
    header, records = read_trajectory(tmp_path / "trajectory.jsonl")
    assert header["format"] == "aira.trajectory/1" and header["script"] == "plate"
    steps = [r for r in records if "step" in r]
    assert len(steps) == outcome.steps and records[-1]["terminal"] == "completed"
    for key in (
        "capsuleHash",
        "capsuleBytes",
        "logBytes",
        "decision",
        "result",
        "usage",
        "model",
        "timings",
    ):
        assert key in steps[0]


def test_replaying_a_script_gives_the_same_end_and_head(tmp_path: Path) -> None:
    a, _, wa = host(tmp_path / "a", GOOD)
    b, _, wb = host(tmp_path / "b", GOOD)
    first, second = a.run(), b.run()
    wa.close()
    wb.close()
    assert (first.terminal, first.head) == (second.terminal, second.head)
    assert [r["capsuleHash"] for r in first.records] == [r["capsuleHash"] for r in second.records]


def test_done_is_decided_by_the_runtime_not_the_model(tmp_path: Path) -> None:
    early = [{"act": "done", "summary": "all finished, trust me"}]
    h, _, w = host(tmp_path, early)
    outcome = h.run()
    w.close()
    assert codes(outcome)[0] == "COMPLETION_EVIDENCE_MISSING"
    assert outcome.terminal is TerminalState.CANNOT_PROCEED  # the script then ran out


def test_abstain_ends_as_cannot_proceed(tmp_path: Path) -> None:
    h, _, w = host(
        tmp_path, [{"act": "abstain", "reason": "no FEA capability", "missing": ["FEA"]}]
    )
    outcome = h.run()
    w.close()
    assert outcome.terminal is TerminalState.CANNOT_PROCEED and outcome.steps == 1


def test_the_step_budget_ends_as_budget_exhausted(tmp_path: Path) -> None:
    reads = [{"act": "read"}] * 10
    h, _, w = host(tmp_path, reads, budgets=TaskBudgets(steps=3))
    outcome = h.run()
    w.close()
    assert outcome.terminal is TerminalState.BUDGET_EXHAUSTED and outcome.steps == 3


def test_a_write_inside_a_batch_refuses_the_batch(tmp_path: Path) -> None:
    batch = {"act": "batch", "acts": [{"act": "read"}, plan_decision()]}
    h, _, w = host(tmp_path, [batch, {"act": "abstain", "reason": "stop"}])
    outcome = h.run()
    w.close()
    assert codes(outcome)[0] == "STEP_DECISION_FIELD_INVALID"
    assert outcome.head == outcome.records[0]["head"]  # nothing ran


def test_text_that_is_not_json_is_a_rejection_that_says_where(tmp_path: Path) -> None:
    class Chatty(ScriptedSource):
        def decide(self, step: int, prompt: str, schema: dict[str, Any]) -> Any:
            reply = super().decide(step, prompt, schema)
            if step == 0:
                return type(reply)(text='{"act": "read",', model="chatty")
            return reply

    ctx, kernel, _ = make_runtime(tmp_path)
    h = StepHost(
        ctx,
        kernel,
        Chatty(script([{"act": "read"}, {"act": "abstain", "reason": "x"}])),
        task_id="t1",
        intent=INTENT,
        tier=TIERS["T128"],
    )
    outcome = h.run()
    first = outcome.records[0]["result"]
    assert first["code"] == "STEP_DECISION_NOT_JSON" and "line 1" in first["message"]


def test_a_plan_on_a_head_that_moved_is_stale(tmp_path: Path) -> None:
    h, repo, w = host(tmp_path, [*discovery(), plan_decision(), {"act": "abstain", "reason": "x"}])

    class Meddler(ScriptedSource):
        def decide(self, step: int, prompt: str, schema: dict[str, Any]) -> Any:
            if step == len(discovery()):  # just before the plan: another writer commits
                seed(repo_for_task, "intruder")
            return super().decide(step, prompt, schema)

    repo_for_task = _BranchWriter(repo, h.task.ctx.branch)
    h.source = Meddler(h.source.script)
    outcome = h.run()
    w.close()
    assert "STEP_STALE_REVISION" in codes(outcome)


class _BranchWriter:
    """Commits to the task's branch like another process would (for the stale test)."""

    def __init__(self, repo: Any, branch: str) -> None:
        self.repo, self.branch = repo, branch

    def __getattr__(self, name: str) -> Any:
        return getattr(self.repo, name)

    def head(self, branch: str = "main") -> str:
        return self.repo.head(self.branch)

    def apply(self, branch: str, *args: Any, **kw: Any) -> Any:
        return self.repo.apply(self.branch, *args, **kw)


@pytest.mark.parametrize("tier", ["T32", "T128", "T200"])
def test_a_long_task_compacts_and_stays_within_b(tmp_path: Path, tier: str) -> None:
    # many reads with long notes: at T32 the rounds must compact
    filler = "x" * 4000
    reads = [
        {"act": "read", "select": [["nodes"]], "pin": False, "note": f"{i} {filler}"}
        for i in range(30)
    ]
    h, _, w = host(
        tmp_path,
        [*discovery(), plan_decision(), *reads, {"act": "done", "summary": "d"}],
        tier=tier,
    )
    outcome = h.run()
    w.close()
    assert all(r["promptTokens"] <= r["budgetTokens"] for r in outcome.records)
    if tier == "T32":
        assert outcome.rounds > 1  # 30 reads with 4 KB notes do not fit one T32 round
        # unpinned pages left with their round, and the capsule says so
        assert any("left with the last round" in row for row in h.ledger.eviction_rows())
    assert outcome.terminal is TerminalState.COMPLETED, codes(outcome)
    notes = [r for r in outcome.records if r["decision"].get("note")]
    assert notes


def test_trajectory_records_are_json_lines(tmp_path: Path) -> None:
    h, _, w = host(tmp_path, GOOD)
    h.run()
    w.close()
    for line in (tmp_path / "trajectory.jsonl").read_text().splitlines():
        json.loads(line)


class Killed(Exception):
    """Stands for the process being killed (raised from inside the decision source)."""


def test_an_interrupted_task_resumes_without_repeating_committed_work(tmp_path: Path) -> None:
    decisions = [*discovery(), plan_decision(), {"act": "read"}, {"act": "done", "summary": "d"}]
    plan_at = len(discovery())

    class DiesAfterThePlan(ScriptedSource):
        def decide(self, step: int, prompt: str, schema: dict[str, Any]) -> Any:
            if step == plan_at + 1:
                raise Killed
            return super().decide(step, prompt, schema)

    ctx, kernel, _repo = make_runtime(tmp_path)
    path = tmp_path / "trajectory.jsonl"
    writer = TrajectoryWriter(path, {"script": "plate"})
    first = StepHost(
        ctx,
        kernel,
        DiesAfterThePlan(script(decisions)),
        task_id="t1",
        intent=INTENT,
        tier=TIERS["T128"],
        trajectory=writer,
    )
    with pytest.raises(Killed):
        first.run()
    writer.close()
    committed = first.task.head
    evaluations = kernel.calls.get("evaluate", 0) if isinstance(kernel.calls, dict) else None

    _, records = read_trajectory(path)
    source = ScriptedSource(script(decisions))
    writer = TrajectoryWriter(path, {})
    second = StepHost(
        ctx, kernel, source, task_id="t1", intent=INTENT, tier=TIERS["T128"], trajectory=writer
    )
    source.seek(second.resume(records))
    outcome = second.run()
    writer.close()
    assert outcome.terminal is TerminalState.COMPLETED, codes(outcome)
    assert outcome.head == committed  # the plan was adopted, not committed again
    if evaluations is not None:
        assert kernel.calls.get("evaluate", 0) == evaluations  # no kernel work repeated
    _, records = read_trajectory(path)
    assert [r["step"] for r in records if "step" in r] == list(range(len(decisions)))
