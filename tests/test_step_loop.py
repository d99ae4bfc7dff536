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

from aira_core.canonical import canonical_bytes
from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError
from aira_core.extensions import QueryResult, StepReply, StepRequest
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.tiers import TIERS, TaskBudgets, host_tokens
from aira_core.step.log import RoundLog, prompt_text
from aira_core.step.loop import StepHost
from aira_core.step.runner import resume_script, task_id
from aira_core.step.trajectory import (
    DecisionScript,
    ScriptedSource,
    TrajectoryWriter,
    read_trajectory,
)

CAPS = [DEFINE_CAP, BOX_CAP, FILLET_CAP, VOLUME_RANGE_CAP, MASS_PROPERTIES_CAP]
INTENT = IntentFrame(goal="a 40 x 30 x 10 plate with its vertical edges rounded 2 mm")


def prompt_of(request: StepRequest) -> str:
    return prompt_text(request)


def reply_of(request: StepRequest, text: str, model: str = "test") -> StepReply:
    return StepReply(text=text, call_id=request.call_id, provider="test", model=model)


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


class Recording(ScriptedSource):
    """The scripted source, keeping every request it was asked."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.requests: list[StepRequest] = []

    def decide(self, request: StepRequest) -> StepReply:
        self.requests.append(request)
        return super().decide(request)


def test_a_round_keeps_one_decision_schema_and_a_new_round_lists_the_new_aliases(
    tmp_path: Path,
) -> None:
    """A commit adds aliases; the round's requests keep the schema they started with (a
    provider reads it first: a new one would make every later prompt a new prefix), and
    the host still takes the new alias; the next round's schema lists it."""
    decisions = [*GOOD[:-1], {"act": "read", "select": [["bodies", "b:plate"]]}, GOOD[-1]]
    ctx, kernel, _ = make_runtime(tmp_path)
    source = Recording(script(decisions))
    h = StepHost(ctx, kernel, source, task_id="t1", intent=INTENT, tier=TIERS["T128"])
    outcome = h.run()
    assert outcome.terminal is TerminalState.COMPLETED, codes(outcome)
    # per round (a fold after the commit may start a second): one schema for all its steps
    rounds = [r["round"] for r in outcome.records]
    first = canonical_bytes(dict(source.requests[0].schema))
    assert all(
        canonical_bytes(dict(r.schema)) == first
        for r, n in zip(source.requests, rounds, strict=True)
        if n == rounds[0]
    )
    assert rounds.count(rounds[0]) > 1
    read_new = next(r for r in outcome.records if r["decision"].get("select"))
    assert read_new["result"]["status"] == "ok"  # the new alias, past the round's enum
    h._end_round()
    fresh = h._schema(h._aliases())
    assert "b:plate" in json.dumps(fresh) and canonical_bytes(fresh) != first


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
        def decide(self, request: StepRequest) -> Any:
            step = request.step
            reply = super().decide(request)
            if step == 0:
                return reply_of(request, text='{"act": "read",', model="chatty")
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
        def decide(self, request: StepRequest) -> Any:
            step = request.step
            if step == len(discovery()):  # just before the plan: another writer commits
                seed(repo_for_task, "intruder")
            return super().decide(request)

    repo_for_task = _BranchWriter(repo, h.task.branch)
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

    def commit(self, branch: str, *args: Any, **kw: Any) -> Any:
        return self.repo.commit(self.branch, *args, **kw)


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


def run_killed(ctx: Any, kernel: Any, source: Any, writer: TrajectoryWriter, **kw: Any) -> Any:
    """Task ``t1`` run until its source or trajectory writer raises :class:`Killed`."""
    first = StepHost(
        ctx,
        kernel,
        source,
        task_id="t1",
        tier=TIERS["T128"],
        trajectory=writer,
        **{"intent": INTENT, **kw},
    )
    with pytest.raises(Killed):
        first.run()
    writer.close()
    return first


def resume_from(ctx: Any, kernel: Any, path: Path, ran: DecisionScript, **kw: Any) -> Any:
    """Task ``t1`` resumed from its trajectory at ``path`` with the script ``ran``, as
    ``aira run --resume`` does; the outcome."""
    _, records = read_trajectory(path)
    source = ScriptedSource(ran)
    writer = TrajectoryWriter(path, {})
    second = StepHost(
        ctx,
        kernel,
        source,
        task_id="t1",
        tier=TIERS["T128"],
        trajectory=writer,
        **{"intent": INTENT, **kw},
    )
    source.seek(second.resume(records))
    try:
        return second.run()
    finally:
        writer.close()


def killed_run(tmp_path: Path) -> tuple[Any, Any, Path, list[dict[str, Any]], Any]:
    """A task killed right after its plan committed: (ctx, kernel, trajectory, decisions,
    the killed run's outcome)."""
    decisions = [*discovery(), plan_decision(), {"act": "read"}, {"act": "done", "summary": "d"}]
    plan_at = len(discovery())

    class DiesAfterThePlan(ScriptedSource):
        def decide(self, request: StepRequest) -> Any:
            step = request.step
            if step == plan_at + 1:
                raise Killed
            return super().decide(request)

    ctx, kernel, _repo = make_runtime(tmp_path)
    path = tmp_path / "trajectory.jsonl"
    writer = TrajectoryWriter(path, {"script": "plate"})
    first = run_killed(ctx, kernel, DiesAfterThePlan(script(decisions)), writer)
    return ctx, kernel, path, decisions, first


def test_an_interrupted_task_resumes_without_repeating_committed_work(tmp_path: Path) -> None:
    ctx, kernel, path, decisions, first = killed_run(tmp_path)
    committed = first.task.head
    evaluations = kernel.calls.get("evaluate", 0) if isinstance(kernel.calls, dict) else None

    outcome = resume_from(ctx, kernel, path, script(decisions))
    assert outcome.terminal is TerminalState.COMPLETED, codes(outcome)
    assert outcome.head == committed  # the plan was adopted, not committed again
    if evaluations is not None:
        assert kernel.calls.get("evaluate", 0) == evaluations  # no kernel work repeated
    _, records = read_trajectory(path)
    assert [r["step"] for r in records if "step" in r] == list(range(len(decisions)))


def test_a_commit_whose_record_was_lost_is_adopted_not_committed_again(tmp_path: Path) -> None:
    # The process dies after the plan's commit and before its trajectory record.
    decisions = [*discovery(), plan_decision(), {"act": "read"}, {"act": "done", "summary": "d"}]
    plan_at = len(discovery())

    class DiesWritingTheCommit(TrajectoryWriter):
        def write(self, record: dict[str, Any]) -> None:
            if record.get("result", {}).get("rev"):
                raise Killed
            super().write(record)

    ctx, kernel, repo = make_runtime(tmp_path)
    path = tmp_path / "trajectory.jsonl"
    writer = DiesWritingTheCommit(path, {"script": "plate"})
    first = run_killed(ctx, kernel, ScriptedSource(script(decisions)), writer)
    committed = first.task.head
    evaluations = kernel.calls["evaluate"]

    _, records = read_trajectory(path)
    assert [r["step"] for r in records] == list(range(plan_at))  # the commit is unrecorded
    outcome = resume_from(ctx, kernel, path, script(decisions))
    assert outcome.terminal is TerminalState.COMPLETED, codes(outcome)
    assert outcome.head == committed
    commits = [r for r in repo.store.log(first.task.branch, limit=None) if r.kind == "commit"]
    assert [c.rev for c in commits] == [committed]  # the plan was not committed twice
    assert kernel.calls["evaluate"] == evaluations
    _, records = read_trajectory(path)
    steps = [r for r in records if "step" in r]
    assert [r["step"] for r in steps] == list(range(len(decisions)))
    lost = steps[plan_at]
    assert lost["recovered"] is True and lost["result"]["rev"] == committed
    assert records[-1]["end"] and records[-1]["terminal"] == "completed"


def test_a_lost_end_record_after_an_accepted_done_ends_the_resumed_task(tmp_path: Path) -> None:
    h, _, w = host(tmp_path, GOOD)
    assert h.run().terminal is TerminalState.COMPLETED
    w.close()
    path = tmp_path / "trajectory.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["end"]
    path.write_text("".join(lines[:-1]))  # the process died before the end record
    evaluations = h.kernel.calls["evaluate"]

    outcome = resume_from(h.ctx, h.kernel, path, script(GOOD))
    assert outcome.terminal is TerminalState.COMPLETED and outcome.records == []
    assert outcome.steps == len(GOOD)
    assert h.kernel.calls["evaluate"] == evaluations
    _, records = read_trajectory(path)
    assert records[-1]["end"] and records[-1]["terminal"] == "completed"
    assert len([r for r in records if "step" in r]) == len(GOOD)


def test_resuming_with_another_script_is_refused_before_the_store_changes(tmp_path: Path) -> None:
    _, _, repo = make_runtime(tmp_path)
    ran = script(GOOD)
    path = tmp_path / "trajectory.jsonl"
    TrajectoryWriter(path, {"script": ran.name, "taskId": task_id(ran)}).close()
    other = DecisionScript.model_validate({**ran.to_wire(), "name": "shaft"})
    edited = DecisionScript.model_validate({**ran.to_wire(), "decisions": GOOD[:-1]})
    for wrong in (other, edited):  # another script, or the same one edited since
        with pytest.raises(AiraError) as caught:
            resume_script(wrong, kernel=None, store=tmp_path / "store.sqlite3", trajectory=path)
        assert caught.value.code == "RUN_SCRIPT_MISMATCH"
        assert repr(ran.name) in caught.value.diagnostic.message
    assert list(repo.store.branches()) == ["main"]  # no stray task branch


def _note_of(gap_tokens: int, result: dict[str, Any], framing: int = 0) -> str:
    """A note decision whose text is ``gap_tokens`` × 4 bytes less the result's size (as
    JSON, the way the log renders it) and ``framing`` bytes."""
    rendered = json.dumps(result, ensure_ascii=False, sort_keys=True)
    room = gap_tokens * 4 - framing - (0 if framing else host_tokens(rendered) * 4)
    base = json.dumps({"act": "note", "note": ""})
    return json.dumps({"act": "note", "note": "x" * (room - len(base))})


def test_the_log_is_metered_with_its_framing_so_no_prompt_exceeds_b(tmp_path: Path) -> None:
    # A step whose decision and result fill B exactly without the log's "# decision" and
    # "# result" lines: with them it does not fit, so the round must end, not the prompt
    # grow past B.
    prompts: list[int] = []

    class Filler(ScriptedSource):
        def decide(self, request: StepRequest) -> Any:
            step, prompt = request.step, prompt_of(request)
            prompts.append(host_tokens(prompt))
            if step == 0:
                gap = h.tier.budget - h.capsule.tokens
                text = _note_of(gap, {"status": "ok", "act": "note"})
                return reply_of(request, text=text, model="filler")
            return super().decide(request)

    h, _, w = host(tmp_path, [{"act": "abstain", "reason": "stop"}], tier="T32")
    h.source = Filler(h.source.script)
    outcome = h.run()
    w.close()
    assert len(prompts) == 2 and max(prompts) <= h.tier.budget
    assert outcome.rounds == 2 and outcome.terminal is TerminalState.CANNOT_PROCEED
    _, records = read_trajectory(tmp_path / "trajectory.jsonl")
    assert records[1]["round"] == 1 and records[-1]["end"]


def test_window_full_reaches_the_model_in_the_next_prompt_and_the_trajectory(
    tmp_path: Path,
) -> None:
    # A step that leaves exactly nothing of B: the entry fits (metered with its framing and
    # the windowFull flag), so it joins the log, and the model reads windowFull next.
    told = {"act": "note", "host": {"windowFull": True}, "status": "ok"}
    prompts: list[str] = []

    class Filler(ScriptedSource):
        def decide(self, request: StepRequest) -> Any:
            step, prompt = request.step, prompt_of(request)
            prompts.append(prompt)
            if step == 0:
                framing = RoundLog.entry_bytes(RoundLog.decision("c", "")) + RoundLog.entry_bytes(
                    RoundLog.result("c", json.dumps(told, sort_keys=True))
                )
                text = _note_of(h.tier.budget - h.capsule.tokens, told, framing)
                return reply_of(request, text=text, model="filler")
            if step == 1:
                assert h.capsule.tokens + h.log.tokens == h.tier.budget
            return super().decide(request)

    h, _, w = host(tmp_path, [{"act": "abstain", "reason": "stop"}], tier="T32")
    h.source = Filler(h.source.script)
    outcome = h.run()
    w.close()
    assert outcome.terminal is TerminalState.CANNOT_PROCEED, codes(outcome)
    told_text = '"windowFull": true'  # as the log renders the result
    assert told_text not in prompts[0] and told_text in prompts[1]
    assert host_tokens(prompts[1]) <= h.tier.budget
    assert outcome.records[0]["result"]["host"] == {"windowFull": True}
    assert outcome.records[1]["round"] == 0  # the model had its step in the same round


def test_a_model_told_the_window_is_full_writes_the_note_the_next_round_starts_from(
    tmp_path: Path,
) -> None:
    filler = "f" * 3000
    lookups = [
        {"act": "lookup", "query": "box plate block", "note": f"{i} {filler}"} for i in range(40)
    ]
    told_at: list[int] = []

    class NoteTaker(ScriptedSource):
        def decide(self, request: StepRequest) -> Any:
            step, prompt = request.step, prompt_of(request)
            if '"windowFull": true' in prompt and not told_at:
                told_at.append(step)
                return reply_of(
                    request, text='{"act":"note","note":"carry: plate 40 mm"}', model="m"
                )
            if told_at and step == told_at[0] + 1:
                assert "carry: plate 40 mm" in h.capsule.text  # rebuilt from the note
                return reply_of(request, text='{"act":"abstain","reason":"seen"}', model="m")
            return super().decide(request)

    h, _, w = host(tmp_path, lookups, tier="T32")
    h.source = NoteTaker(h.source.script)
    outcome = h.run()
    w.close()
    assert told_at, "no prompt said windowFull before the round ended"
    step = told_at[0]
    records = outcome.records
    assert records[step - 1]["result"]["host"] == {"windowFull": True}
    assert records[step]["round"] == records[step - 1]["round"]  # the note, in the same round
    assert records[step + 1]["round"] == records[step]["round"] + 1
    assert outcome.terminal is TerminalState.CANNOT_PROCEED
    assert all(r["promptTokens"] <= r["budgetTokens"] for r in records)


def test_schema_pages_a_repair_keeps_cannot_take_the_capsule_over_b(tmp_path: Path) -> None:
    # A rejected plan keeps the contracts of every capability it used into the next round;
    # when they exceed B they are released (and the capsule says so), not the run aborted.
    def big_pages(h: StepHost) -> None:
        h.schema_pages = {cap: "s" * 30_000 for cap in CAPS}
        h.pending = set(CAPS)

    class Oversize(ScriptedSource):
        def decide(self, request: StepRequest) -> Any:
            step = request.step
            if step == 0:  # a decision that does not fit the round: it ends
                big_pages(h)
                return reply_of(
                    request, text=json.dumps({"act": "note", "note": "n" * 100_000}), model="m"
                )
            return super().decide(request)

    h, _, w = host(tmp_path, [{"act": "abstain", "reason": "stop"}], tier="T32")
    h.source = Oversize(h.source.script)
    outcome = h.run()
    w.close()
    assert outcome.terminal is TerminalState.CANNOT_PROCEED, codes(outcome)
    assert outcome.rounds == 2 and outcome.records[1]["promptTokens"] <= h.tier.budget
    released = [row for row in h.ledger.eviction_rows() if row.startswith("schema page")]
    assert released and "describe it again" in released[0]
    assert 0 < len(h.schema_pages) < len(CAPS)


def test_a_capsule_that_cannot_fit_b_ends_the_task_with_an_end_record(tmp_path: Path) -> None:
    h, _, w = host(tmp_path, [{"act": "read"}] * 3, tier="T32")
    h._index = lambda: "i" * h.tier.bytes(h.tier.budget)  # type: ignore[method-assign]
    outcome = h.run()
    w.close()
    assert outcome.terminal is TerminalState.BUDGET_EXHAUSTED and outcome.steps == 0
    _, records = read_trajectory(tmp_path / "trajectory.jsonl")
    assert records[-1]["end"] and records[-1]["terminal"] == "budgetExhausted"
    assert records[-1]["exhausted"].startswith("STEP_CAPSULE_OVER_BUDGET")


def test_a_log_over_b_is_compacted_before_the_prompt_is_sent(tmp_path: Path) -> None:
    # Unreachable through the loop (it admits only entries that fit); were the bound ever
    # broken, the host must compact rather than send more than B (and not only assert).
    h, _, w = host(tmp_path, [{"act": "read"}, {"act": "abstain", "reason": "x"}], tier="T32")
    h.capsule = h._build_capsule()
    h.log.append(RoundLog.result("c", "r" * h.tier.bytes(h.tier.budget)))
    outcome = h.run()
    w.close()
    assert [r["round"] for r in outcome.records] == [1, 1]
    assert all(r["promptTokens"] <= r["budgetTokens"] for r in outcome.records)


@pytest.mark.parametrize("failure", ["raises", "none", "nan"])
def test_a_kernel_failing_an_inspect_is_the_acts_result_not_the_runs_end(
    tmp_path: Path, failure: str
) -> None:
    inspect = {"act": "inspect", "query": "massProperties", "args": {"target": "b:plate"}}
    decisions = [*discovery(), plan_decision(), inspect, {"act": "read"}, {"act": "done"}]

    def broken(*args: Any) -> Any:
        if failure == "raises":
            raise RuntimeError("query bug")
        return None if failure == "none" else QueryResult({"volume": float("nan")})

    class Breaks(ScriptedSource):
        def decide(self, request: StepRequest) -> Any:
            step = request.step
            if step == len(discovery()) + 1:  # after the plan (whose query step must work)
                h.kernel.query = broken  # type: ignore[method-assign]
            return super().decide(request)

    h, _, w = host(tmp_path, [*decisions[:-1], {"act": "done", "summary": "d"}])
    h.source = Breaks(h.source.script)
    outcome = h.run()
    w.close()
    result = outcome.records[len(discovery()) + 1]["result"]
    assert result["status"] == "rejected" and result["code"] == "KERNEL_FAILED"
    assert {"raises": "RuntimeError: query bug", "none": "NoneType", "nan": "NaN"}[failure] in (
        result["message"]
    )
    assert outcome.terminal is TerminalState.COMPLETED, codes(outcome)
    _, records = read_trajectory(tmp_path / "trajectory.jsonl")
    assert records[-1]["end"]
