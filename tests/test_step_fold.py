"""Folding a round (aira_core/step/fold.py): which results a commit settled, their short
forms, and the host starting a new round from the folded log, on the runtime test package
and its FAKE kernel."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from runtime_factory import VOLUME_RANGE, VOLUME_RANGE_CAP, make_runtime
from test_step_loop import GOOD, INTENT, Recording, script

from aira_core.extensions import DecisionEntry, ResultEntry
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.plan import capability_of
from aira_core.runtime.tiers import TIERS
from aira_core.step import loop
from aira_core.step.fold import (
    FOLDED,
    LEGEND,
    SUMMARY_IN_CAPSULE,
    Shown,
    fold,
)
from aira_core.step.log import RoundLog, call_id, step_of
from aira_core.step.loop import StepHost


def text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def act(**kw: Any) -> Any:
    return SimpleNamespace(**{"capability": None, "summary": None, **kw})


def shown(index: int, decision: Any, result: dict[str, Any], commits: int) -> Shown:
    said = text({k: v for k, v in vars(decision).items() if k != "acts"})
    return Shown(index, decision, result, text(result), commits, decision_text=said)


SEARCH = {
    "status": "ok",
    "act": "lookup",
    "data": {"hits": [{"capabilityId": "cap:exact.box@1", "summary": "x" * 400}]},
}


def contract(grammars: dict[str, Any] | None = None, ref: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {"contract": {"inputSchema": {"ref": ref}, "pad": "y" * 600}}
    if grammars:
        data["grammars"] = grammars
    return {"status": "ok", "act": "lookup", "data": data}


def test_nothing_is_stale_until_a_commit_follows() -> None:
    entries = [shown(1, act(act="lookup", query="a box"), SEARCH, commits=0)]
    assert fold(entries, commits=0, used={}, render=text) == {}
    short, rendered = fold(entries, commits=1, used={}, render=text)[1]
    # the hit ids stay: the model can still describe what it found; the act is the
    # decision's and an ok status goes without saying
    assert short == {"hits": ["cap:exact.box@1"], FOLDED: LEGEND["settled"]}
    assert rendered == text(short) and len(rendered) < len(text(SEARCH))


def test_a_fold_code_is_spelled_out_once_where_the_log_first_uses_it() -> None:
    searches = [shown(i, act(act="lookup", query=f"q{i}"), SEARCH, commits=0) for i in (1, 3, 5)]
    refused = {"status": "rejected", "code": "X", "failedStep": "s", "detail": "d" * 400}
    wrong = act(act="plan", summary="p", plan={"steps": [{"pad": "z" * 200}]})
    entries = [*searches, shown(7, wrong, refused, commits=0)]
    out = fold(entries, commits=1, used={}, render=text)
    saids = [out[i][0][FOLDED] for i in (1, 3, 5, 7)]
    assert saids == [LEGEND["settled"], "settled", "settled", "settled"]
    assert out[7][0] == {"code": "X", "failedStep": "s", "status": "rejected", FOLDED: "settled"}
    # the refused plan's decision: settled by the commit after it (nothing of it was built)
    assert json.loads(out[6][1])[FOLDED] == "settled"
    # a later fold of the same log spells out nothing again: the first entry still does
    later = [
        *(dataclasses.replace(e, result=out[e.index][0], text=out[e.index][1]) for e in searches),
        shown(9, act(act="lookup", query="q9"), SEARCH, commits=1),
    ]
    assert fold(later, commits=2, used={}, render=text)[9][0][FOLDED] == "settled"


def test_a_contract_is_stale_once_a_later_commit_used_its_capability() -> None:
    lookup = act(act="lookup", capability="cap:exact.box@1")
    entries = [shown(1, lookup, contract(), commits=0)]
    assert fold(entries, commits=2, used={"cap:validate.x@1": 1}, render=text) == {}
    assert fold(entries, commits=2, used={"cap:exact.box@1": 0}, render=text) == {}  # before
    short, _ = fold(entries, commits=2, used={"cap:exact.box@1": 2}, render=text)[1]
    assert short["capability"] == "cap:exact.box@1" and FOLDED in short


def test_a_grammar_stays_stated_while_a_text_that_stays_refers_to_it() -> None:
    stating = shown(1, act(act="lookup", capability="cap:a@1"), contract({"sel-1": {}}), 0)
    referring = shown(3, act(act="lookup", capability="cap:b@1"), contract(ref="grammar:sel-1"), 1)
    used = {"cap:a@1": 1}
    # b's contract is not settled (b unused) and refers to the grammar a's contract states
    assert 1 not in fold([stating, referring], commits=1, used=used, render=text)
    assert 1 in fold([stating], commits=1, used=used, render=text)


def test_a_settled_plan_keeps_its_summary_and_other_decisions_stay_verbatim() -> None:
    plan = act(act="plan", summary="the plate", plan={"steps": [{"pad": "z" * 500}]})
    result = {"status": "ok", "act": "plan", "rev": "rev:1", "summary": {"pad": "w" * 500}}
    read = act(act="read", select=[["bodies"]])
    out = fold(
        [shown(1, plan, result, commits=1), shown(3, read, {"status": "ok", "act": "read"}, 1)],
        commits=2,
        used={},
        render=text,
    )
    short_plan, plan_text = out[0]
    assert short_plan is None and json.loads(plan_text)["summary"] == "the plate"
    assert out[1][0] == {"rev": "rev:1", FOLDED: LEGEND["settled"]}
    assert 2 not in out  # the read decision: verbatim
    assert out[3][0] == {FOLDED: "settled"}  # its result: the code, spelled out above


def test_a_committed_plans_decision_folds_at_its_own_commit() -> None:
    # The plan the last commit built is in the revision (the capsule's summary, a read):
    # the fold that this very commit starts need not carry its steps into the next round.
    plan = act(act="plan", summary="the plate", plan={"steps": [{"pad": "z" * 500}]})
    committed = {"status": "ok", "act": "plan", "rev": "rev:1", "summary": {"pad": "w" * 500}}
    search = shown(1, act(act="lookup", query="a box"), SEARCH, commits=0)
    out = fold([search, shown(3, plan, committed, commits=1)], commits=1, used={}, render=text)
    said = json.loads(out[2][1])
    assert said == {"act": "plan", "summary": "the plate", FOLDED: LEGEND["built"]}
    assert 3 not in out  # its result is the commit the model has just been told of
    # a plan refused in this round is not settled until a commit follows it
    refused = {"status": "rejected", "code": "X", "failedStep": "s"}
    assert fold([shown(1, plan, refused, commits=1)], commits=1, used={}, render=text) == {}


def test_a_batch_folds_part_by_part() -> None:
    batch = act(
        act="batch",
        acts=[act(act="lookup", capability="cap:a@1"), act(act="lookup", capability="cap:b@1")],
    )
    result = {"status": "ok", "act": "batch", "results": [contract(), contract()]}
    short, _ = fold([shown(1, batch, result, 0)], commits=1, used={"cap:a@1": 1}, render=text)[1]
    first, second = short["results"]
    assert FOLDED in first and second == contract()


def test_a_validator_is_the_catalogs_capability_however_an_assertion_names_it(
    tmp_path: Path,
) -> None:
    ctx, _, _ = make_runtime(tmp_path)
    for ref in (VOLUME_RANGE_CAP, VOLUME_RANGE_CAP.removeprefix("cap:"), VOLUME_RANGE):
        assert capability_of(ctx, ref) == VOLUME_RANGE_CAP
    assert capability_of(ctx, "validate.nothing@9") == "validate.nothing@9"


def test_a_call_id_names_its_step() -> None:
    # what a folded log's entries are counted by (aira bench capsule's spend)
    assert step_of(call_id(7)) == 7
    assert step_of("call_7") is None and step_of("aira_sx") is None


def test_a_folded_log_keeps_every_call_id_and_the_models_reasoning() -> None:
    log = RoundLog()
    log.append(RoundLog.decision("c0", {"act": "plan"}, "because"))
    log.append(RoundLog.result("c0", {"status": "ok", "pad": "p" * 100}))
    folded = log.folded({0: '{"act":"plan","folded":"x"}', 1: '{"folded":"y"}'})
    d, r = folded.entries
    assert isinstance(d, DecisionEntry) and isinstance(r, ResultEntry)
    assert (d.call_id, d.reasoning, r.call_id) == ("c0", "because", "c0")
    assert folded.bytes < log.bytes and len(log.entries[1].text) > 100  # the old log unchanged


LONG = [*GOOD[:-1], {"act": "lookup", "query": "a second look after the commit"}, GOOD[-1]]


@pytest.fixture
def small_folds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folds at the test package's scale: its contracts and hits are a few hundred tokens."""
    monkeypatch.setattr(loop, "FOLD_MIN_TOKENS", 200)


def test_a_short_task_keeps_one_round(tmp_path: Path) -> None:
    ctx, kernel, _ = make_runtime(tmp_path)
    h = StepHost(
        ctx, kernel, Recording(script(LONG)), task_id="t1", intent=INTENT, tier=TIERS["T128"]
    )
    outcome = h.run()
    # what the commit settled is under FOLD_MIN_TOKENS: a fold would not pay for its cold prompt
    assert outcome.terminal is TerminalState.COMPLETED and outcome.rounds == 1 and h.folds == 0


def test_the_host_folds_after_a_commit_and_the_task_ends_the_same(
    tmp_path: Path, small_folds: None
) -> None:
    ctx, kernel, _ = make_runtime(tmp_path)
    source = Recording(script(LONG))
    h = StepHost(ctx, kernel, source, task_id="t1", intent=INTENT, tier=TIERS["T128"])
    outcome = h.run()
    assert outcome.terminal is TerminalState.COMPLETED
    end = outcome.records
    plan_step = next(r["step"] for r in end if r["decision"]["act"] == "plan")
    after = source.requests[plan_step + 1]
    before = source.requests[plan_step]
    assert h.folds >= 1 and end[plan_step + 1]["round"] == end[plan_step]["round"] + 1
    # the folded log holds every earlier step, in order, with the same call ids ...
    assert [e.call_id for e in after.log] == [
        *(e.call_id for e in before.log),
        *([f"aira_s{plan_step}"] * 2),
    ]
    # ... the searches in short form with their hit ids, and is smaller for it
    shorts = [json.loads(e.text) for e in after.log if isinstance(e, ResultEntry)]
    assert any(FOLDED in s and s.get("hits") for s in shorts)
    grown = sum(len(e.text) for e in before.log) + len(after.log[-1].text)
    assert sum(len(e.text) for e in after.log) < grown
    assert all(r["promptTokens"] <= r["budgetTokens"] for r in end)
    # the new round's capsule does not repeat the last result its log ends with, and that
    # commit's result does not repeat the head summary the capsule shows
    assert "# 8 lastResult\n" in after.capsule
    assert after.log[-1].text not in after.capsule
    last = json.loads(after.log[-1].text)
    assert last["act"] == "plan" and last["summary"] == SUMMARY_IN_CAPSULE
    assert last["rev"] == end[plan_step]["result"]["rev"]


def test_a_fold_replays_to_the_same_capsules_and_head(tmp_path: Path, small_folds: None) -> None:
    def once(where: Path) -> Any:
        ctx, kernel, _ = make_runtime(where)
        source = Recording(script(LONG))
        return StepHost(ctx, kernel, source, task_id="t1", intent=INTENT, tier=TIERS["T128"]).run()

    a, b = once(tmp_path / "a"), once(tmp_path / "b")
    assert a.head == b.head and a.rounds == b.rounds > 1
    assert [r["capsuleHash"] for r in a.records] == [r["capsuleHash"] for r in b.records]


def test_a_folded_round_still_shows_what_the_host_released(tmp_path: Path) -> None:
    ctx, kernel, _ = make_runtime(tmp_path)
    h = StepHost(
        ctx, kernel, Recording(script(LONG)), task_id="t1", intent=INTENT, tier=TIERS["T32"]
    )
    h.last_result = {"status": "ok", "act": "read", "host": {"released": "page pg1 released"}}
    assert h._last_shown() == h.last_result  # an ordinary round: the whole last result
    h.log_holds_last = True  # a folded log ends with it: only what the host added since
    assert h._last_shown() == {"host": {"released": "page pg1 released"}}
    h.last_result = {"status": "ok", "act": "read"}
    assert h._last_shown() is None
