"""The integration seam (aira_core/integrations.py) driven by the FAKE adapters of
aira_core.testing.integrations on the runtime test package and its FAKE kernel: binding,
lossy conversions at compaction and at the end, the guard's block / ask / completion
verdicts, and fail-open for every combination of adapters present, absent and broken."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import FakeGeometryKernel, composite_steps, make_runtime, plan
from test_step_loop import GOOD, INTENT, codes, discovery, plan_decision, script

from aira_core import hookimpl
from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError
from aira_core.extensions import StepReply, StepRequest
from aira_core.integrations import (
    CONTINUATIONS_PER_VERSION,
    GUARD_APPROVAL_REQUIRED,
    GUARD_BLOCKED,
    GUARD_CONTINUE_VERIFICATION,
    INTEGRATION_FAILED,
    INTEGRATION_ROLE_CONFLICT,
    ContinuityCarry,
    EffectEvent,
    GuardVerdict,
    Integrations,
    IntentBinding,
    artifact_ref,
    registered_integrations,
)
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.session import Task
from aira_core.runtime.tiers import TIERS
from aira_core.step.loop import StepHost
from aira_core.step.runner import _artefacts, run_script
from aira_core.step.trajectory import ScriptedSource
from aira_core.testing.integrations import (
    BrokenAdapter,
    FakeContinuityAdapter,
    FakeGuardAdapter,
    FakeIntentAdapter,
)

BOUND = 0.05
"""The adapters' call bound in these tests (seconds): a hanging fake costs little."""


class Recording(ScriptedSource):
    """The scripted decisions, keeping every capsule the model was shown."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.capsules: list[str] = []

    def decide(self, request: StepRequest) -> StepReply:
        self.capsules.append(request.capsule)
        return super().decide(request)


def run(
    tmp_path: Path, decisions: list[dict[str, Any]], adapters: list[Any], *, tier: str = "T128"
) -> tuple[StepHost, Any, Recording]:
    ctx, kernel, repo = make_runtime(tmp_path)
    source = Recording(script(decisions, tier))
    h = StepHost(
        ctx,
        kernel,
        source,
        task_id="t1",
        intent=INTENT,
        tier=TIERS[tier],
        integrations=Integrations(adapters, seconds=BOUND),
    )
    return h, repo, source


# -- values and registration ----------------------------------------------------------------------


def test_the_values_refuse_what_is_not_their_shape() -> None:
    frame = IntentFrame(goal="g")
    with pytest.raises(ValueError, match="snapshot_sha256"):
        IntentBinding("intent:x", 1, "ABC", "fake", False, frame)
    with pytest.raises(ValueError, match="contract_version"):
        IntentBinding("intent:x", 0, "0" * 64, "fake", False, frame)
    with pytest.raises(ValueError, match="decision"):
        GuardVerdict("deny", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="twice"):
        ContinuityCarry(("next:a", "next:a"))
    event = EffectEvent("t", None, "r", "model.commit", "reversible", "model.commit")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.action = "publish"  # type: ignore[misc]


def test_two_adapters_of_one_role_are_refused_before_the_run_starts(tmp_path: Path) -> None:
    with pytest.raises(AiraError) as exc:
        Integrations([FakeGuardAdapter(), FakeGuardAdapter(name="other-guard")])
    assert exc.value.code == INTEGRATION_ROLE_CONFLICT
    with pytest.raises(AiraError) as exc:
        run_script(
            script(GOOD),
            kernel=None,
            store=tmp_path / "run" / "store.sqlite3",
            trajectory=tmp_path / "run" / "t.jsonl",
            integrations=[FakeIntentAdapter(), FakeIntentAdapter(name="second")],
        )
    assert exc.value.code == INTEGRATION_ROLE_CONFLICT
    assert not (tmp_path / "run").exists()  # refused before the trajectory or the store


def test_an_adapter_without_a_role_or_its_methods_is_not_active() -> None:
    @dataclasses.dataclass
    class NoMethods:
        name: str = "mute-guard"
        role: str = "guard"

    seam = Integrations([BrokenAdapter("oracle", "raises"), NoMethods()])
    assert seam.active("guard") is None
    assert [d.code for d in seam.diagnostics] == [INTEGRATION_FAILED] * 2
    assert [d.subject for d in seam.diagnostics] == ["?:broken-oracle-raises", "guard:mute-guard"]


def test_the_plugins_registered_integrations_are_found_by_role(register_plugin: Any) -> None:
    guard, intent = FakeGuardAdapter(), FakeIntentAdapter()

    class Plugin:
        @hookimpl
        def aira_register_integrations(self, register: Any) -> None:
            register(guard)
            register(intent)

    registry = register_plugin(Plugin(), "integrations-plugin")
    found = registered_integrations(registry)
    assert found == [guard, intent]  # by name
    seam = Integrations(found)
    assert seam.active("guard") is guard and seam.active("intent") is intent


# -- intent -------------------------------------------------------------------------------------


def test_the_bound_frame_is_what_the_capsule_shows_and_the_runtime_checks(tmp_path: Path) -> None:
    intent = FakeIntentAdapter(
        hard_requirements=("edges rounded 2 mm",), prohibited_effects=("changesTopology",)
    )
    h, repo, source = run(tmp_path, [*discovery(), plan_decision(), *GOOD[-2:]], [intent])
    start = h.task.head
    outcome = h.run()
    assert intent.frames == [INTENT] and intent.frames[0] is not INTENT  # a copy
    assert h.ctx.intent is not None and h.ctx.intent.hard_requirements == ["edges rounded 2 mm"]
    first = source.capsules[0]
    assert "contract intent:fake-task v1 (fake)" in first and "- edges rounded 2 mm" in first
    # The fillet changes topology, which the bound frame prohibits: plan.check refuses it.
    assert "PLAN_EFFECT_PROHIBITED" in codes(outcome)
    assert outcome.head == start == repo.head("task/t1")


def test_an_unbound_intent_leaves_the_task_as_without_an_adapter(tmp_path: Path) -> None:
    h, _, source = run(tmp_path, GOOD, [FakeIntentAdapter(bound=False)])
    assert h.run().terminal is TerminalState.COMPLETED
    assert h.ctx.intent is None and "contract " not in source.capsules[0]


# -- the guard: effects ---------------------------------------------------------------------------


def test_a_blocked_commit_is_refused_and_the_store_is_unchanged(tmp_path: Path) -> None:
    guard = FakeGuardAdapter(block=frozenset({"model.commit"}))
    h, repo, _ = run(
        tmp_path, [*discovery(), plan_decision(), {"act": "abstain", "reason": "x"}], [guard]
    )
    start = h.task.head
    outcome = h.run()
    assert codes(outcome) == [GUARD_BLOCKED]
    planned = next(r for r in outcome.records if r["decision"].get("act") == "plan")
    assert planned["result"]["status"] == "rejected" and planned["state"] == "validated"
    assert outcome.head == start == repo.head("task/t1")
    # every effect was judged, each once, in order; reads never
    assert [e.action for e in guard.events] == [
        "model.proposePatch",
        "model.preview",
        "model.validate",
        "model.commit",
    ]
    assert guard.events[-1].effect_class == "reversible" and guard.events[-1].capabilities


def test_a_blocked_publish_leaves_main_and_the_commit_without_it_runs(tmp_path: Path) -> None:
    ctx, kernel, repo = make_runtime(tmp_path)
    guard = FakeGuardAdapter(block=frozenset({"publish"}))
    t = Task(ctx, kernel, task_id="t1", integrations=Integrations([guard]))
    main = repo.head("main")
    validated(t)
    out = t.call("model.commit", "c", {"publish": True})
    assert out.status == "blocked" and [d.code for d in out.diagnostics] == [GUARD_BLOCKED]
    assert "explicit_contract_conflict" in out.diagnostics[0].message
    assert guard.events[-1].effect_class == "irreversible" and guard.events[-1].target == "main"
    assert repo.head("main") == main and t.state.value == "validated"
    assert t.call("model.commit", "c2").status == "success" and repo.head("main") == main


def validated(t: Task) -> None:
    t.call("interface.manifest", "m")
    args = {"plan": plan(t.head, *composite_steps()).to_wire()}
    for rid, op in [("p", "model.proposePatch"), ("v", "model.preview"), ("w", "model.validate")]:
        out = t.call(op, rid, args if op == "model.proposePatch" else {})
        assert out.status == "success", out.diagnostics


def test_ask_holds_that_one_call_until_approved_and_never_a_later_one(tmp_path: Path) -> None:
    ctx, kernel, _ = make_runtime(tmp_path)
    guard = FakeGuardAdapter(ask=frozenset({"model.commit"}))
    t = Task(ctx, kernel, task_id="t1", integrations=Integrations([guard]))
    start = t.head
    validated(t)
    asked = t.call("model.commit", "c1")
    assert asked.status == "blocked" and [d.code for d in asked.diagnostics] == [
        GUARD_APPROVAL_REQUIRED
    ]
    assert asked.diagnostics[0].approval is True
    assert asked.data["approvalRequired"] == {"requestId": "c1", "operation": "model.commit"}
    assert t.head == start and t.pending_approvals == [("model.commit", "c1")]
    # Sent again unapproved: asked again, still nothing runs.
    assert t.call("model.commit", "c1").status == "blocked" and t.head == start
    assert t.approve_call("nope") is False
    assert t.approve_call("c1") is True and t.pending_approvals == []
    judged = len(guard.events)
    # The approved call, as it was: it runs once, without being judged again.
    assert t.call("model.commit", "c1").status == "success" and t.head != start
    assert len(guard.events) == judged
    # A later, similar call is judged anew: the approval was for c1 only.
    first = t.head
    t.call("model.revert", "r")  # reverting is an effect too; this guard allows it
    validated_again(t)
    again = t.call("model.commit", "c2")
    assert [d.code for d in again.diagnostics] == [GUARD_APPROVAL_REQUIRED]
    assert t.head != first and t.pending_approvals == [("model.commit", "c2")]


def validated_again(t: Task) -> None:
    args = {"plan": plan(t.head, *composite_steps(radius=1.5)).to_wire()}
    for rid, op in [
        ("p2", "model.proposePatch"),
        ("v2", "model.preview"),
        ("w2", "model.validate"),
    ]:
        out = t.call(op, rid, args if op == "model.proposePatch" else {})
        assert out.status == "success", out.diagnostics


class ExportingKernel(FakeGeometryKernel):
    """The fake kernel, with STEP and SVG bytes of the document (the run's artefacts)."""

    def export(self, document: Any, format: str, body: Any = None, **kw: Any) -> bytes:
        if format in ("step", "svg"):
            return f"{format}:{len(document.bodies)}".encode()
        return super().export(document, format, body, **kw)


@pytest.mark.parametrize(
    ("verdict", "code"), [("block", GUARD_BLOCKED), ("ask", GUARD_APPROVAL_REQUIRED)]
)
def test_a_refused_export_writes_no_file_and_is_no_evidence(
    tmp_path: Path, verdict: str, code: str
) -> None:
    guard = FakeGuardAdapter(**{verdict: frozenset({"export:step"})})
    continuity = FakeContinuityAdapter()
    h, repo, _ = run(tmp_path, GOOD, [guard, continuity])
    outcome = h.run()
    assert outcome.terminal is TerminalState.COMPLETED
    files = _artefacts(ExportingKernel(), repo, h, tmp_path / "out" / "plate", tmp_path / "store")
    assert set(files) == {"svg"} and not (tmp_path / "out" / "plate.step").exists()
    assert [(d.code, d.subject) for d in h.refusals] == [(code, "plate.step")]
    step, _svg = (e for e in guard.events if e.operation == "export")
    assert (step.effect_class, step.action, step.digest) == (
        "external",
        "export:step",
        artifact_ref(b"step:1"),
    )
    h.conclude()
    end = continuity.events[-1]
    assert end.trigger == "end" and end.phase == "done"
    assert artifact_ref(files["svg"].read_bytes()) in end.evidence_refs
    assert step.digest not in end.evidence_refs
    assert artifact_ref(outcome.head) in end.evidence_refs
    # the guard got every judgement back, once, at the very end
    assert len(guard.finished) == 1 and len(guard.finished[0]) == len(guard.events) + len(
        guard.claims
    )


def test_the_guard_gets_copies_and_its_receipts_are_kept_detached(tmp_path: Path) -> None:
    sent: list[dict[str, Any]] = []

    class Mutating(FakeGuardAdapter):
        def judge(self, event: EffectEvent) -> GuardVerdict:
            for receipt in sent:  # receipts it answered before, changed afterwards
                receipt["n"] = -1
            verdict = super().judge(event)
            sent.append(verdict.receipt)
            return verdict

    guard = Mutating()
    h, _, _ = run(tmp_path, GOOD, [guard])
    h.run()
    h.conclude()
    kept = guard.finished[0]
    assert len(sent) > 1 and all(r["n"] == -1 for r in sent[:-1])
    assert all(r.verdict.receipt["n"] > 0 for r in kept if isinstance(r.event, EffectEvent))


# -- the guard: completion ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "end", "last"),
    [
        # one commit, the guard wants two: continuations, then the runtime's completion
        ([*discovery(), plan_decision()], TerminalState.COMPLETED, None),
        # nothing committed: continuations, then the runtime's own refusal
        ([], TerminalState.CANNOT_PROCEED, "COMPLETION_EVIDENCE_MISSING"),
    ],
)
def test_done_with_missing_evidence_continues_twice_then_reminds(
    tmp_path: Path, before: list[dict[str, Any]], end: TerminalState, last: str | None
) -> None:
    guard = FakeGuardAdapter(require_evidence=2)
    done = {"act": "done", "summary": "done"}
    h, _, _ = run(tmp_path, [*before, done, done, done], [guard])
    outcome = h.run()
    results = [r["result"] for r in outcome.records if r["decision"].get("act") == "done"]
    assert [r.get("code") for r in results] == [
        GUARD_CONTINUE_VERIFICATION,
        GUARD_CONTINUE_VERIFICATION,
        last,
    ]
    assert [r["guard"]["decision"] for r in results] == [
        "continue_verification",
        "continue_verification",
        "remind",
    ]
    assert results[-1]["guard"]["reason"] == "continuation_cap_reached"
    assert [c.continuations for c in guard.claims] == [0, 1, CONTINUATIONS_PER_VERSION]
    assert outcome.terminal is end


# -- continuity ---------------------------------------------------------------------------------


def compacting() -> list[dict[str, Any]]:
    filler = "x" * 4000
    reads = [
        {"act": "read", "select": [["nodes"]], "pin": False, "note": f"{i} {filler}"}
        for i in range(30)
    ]
    return [*discovery(), plan_decision(), *reads, {"act": "done", "summary": "d"}]


def test_lossy_conversions_carry_the_open_commitments_into_the_next_round(tmp_path: Path) -> None:
    def once(where: Path) -> tuple[Any, FakeContinuityAdapter, Recording, StepHost]:
        continuity = FakeContinuityAdapter()
        intent = FakeIntentAdapter(hard_requirements=("edges rounded 2 mm",))
        h, _, source = run(where, compacting(), [intent, continuity], tier="T32")
        outcome = h.run()
        h.conclude()
        return outcome, continuity, source, h

    outcome, continuity, source, h = once(tmp_path / "a")
    assert outcome.terminal is TerminalState.COMPLETED and outcome.rounds > 1
    assert all(r["promptTokens"] <= r["budgetTokens"] for r in outcome.records)
    compactions = [e for e in continuity.events if e.trigger == "compaction"]
    assert len(compactions) == outcome.rounds - 1 and continuity.events[-1].trigger == "end"
    first = compactions[0]
    assert first.task_id == "t1" and first.phase == "verification"
    assert first.contract is not None and first.contract.contract_ref == "intent:fake-task"
    assert first.open_commitments == ("requirement: edges rounded 2 mm",)
    assert first.evidence_refs == (artifact_ref(h.ledger.commits[0].rev),)
    # The round after the compaction shows the carry in its intent segment; the first did not.
    assert "open commitments (carried over)" not in source.capsules[0]
    carried = [c for c in source.capsules if "- requirement: edges rounded 2 mm\n" in c]
    assert carried and "open commitments (carried over):" in carried[0]
    # Completed: nothing is open at the end.
    assert continuity.events[-1].open_commitments == () and continuity.events[-1].phase == "done"
    # Replay: the same capsules, carry and all.
    again, _, _, _ = once(tmp_path / "b")
    assert [r["capsuleHash"] for r in again.records] == [r["capsuleHash"] for r in outcome.records]


# -- fail-open ------------------------------------------------------------------------------------

ROLES = ("intent", "continuity", "guard")
STATES = ("absent", "present", "broken")


def _fakes(role: str) -> Any:
    return {
        "intent": FakeIntentAdapter,
        "continuity": FakeContinuityAdapter,
        "guard": FakeGuardAdapter,
    }[role]()


def _combinations() -> list[Any]:
    out = []
    for states in itertools.product(STATES, repeat=3):
        failures = ("raises", "hangs", "invalid") if "broken" in states else (None,)
        for failure in failures:
            ident = "-".join(f"{r[0]}:{s}" for r, s in zip(ROLES, states, strict=True))
            out.append(pytest.param(states, failure, id=f"{ident}-{failure or 'ok'}"))
    return out


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    h, _, _ = run(tmp_path_factory.mktemp("baseline"), GOOD, [])
    outcome = h.run()
    return outcome.terminal, outcome.head


@pytest.mark.parametrize(("states", "failure"), _combinations())
def test_absent_or_broken_adapters_leave_the_run_as_without_them(
    tmp_path: Path, baseline: tuple[Any, str], states: tuple[str, ...], failure: str | None
) -> None:
    adapters = []
    for role, state in zip(ROLES, states, strict=True):
        if state == "present":
            adapters.append(_fakes(role))
        elif state == "broken":
            adapters.append(BrokenAdapter(role, failure, hang_seconds=0.3))  # type: ignore[arg-type]
    h, _, source = run(tmp_path, GOOD, adapters)
    outcome = h.run()
    h.conclude()
    assert (outcome.terminal, outcome.head) == baseline
    broken = {r for r, s in zip(ROLES, states, strict=True) if s == "broken"}
    warned = {d.subject.split(":")[0] for d in h.integrations.diagnostics}
    assert warned == broken
    assert {d.code for d in h.integrations.diagnostics} <= {INTEGRATION_FAILED}
    text = json.dumps([d.model_dump(mode="json") for d in h.integrations.diagnostics])
    assert "secret-token" not in text and "Traceback" not in text
    for adapter in adapters:
        if isinstance(adapter, BrokenAdapter):
            assert adapter.calls  # it was asked, and failed, and the run went on
    if "intent" in broken or states[0] == "absent":
        assert h.ctx.intent is None and "contract " not in source.capsules[0]


def test_run_script_hands_the_adapters_the_task_and_its_end(tmp_path: Path) -> None:
    from aira_core.step.runner import intent_script

    guard, continuity = FakeGuardAdapter(), FakeContinuityAdapter()
    intent = FakeIntentAdapter(hard_requirements=("four M4 holes",))
    ran = run_script(
        intent_script("a 60 x 40 x 5 mm plate"),
        kernel=FakeGeometryKernel(),
        store=tmp_path / "store.sqlite3",
        trajectory=tmp_path / "t.jsonl",
        outputs=tmp_path / "out",
        integrations=[guard, continuity, intent, BrokenAdapter("oracle", "invalid")],
    )
    assert ran.outcome.terminal is TerminalState.CANNOT_PROCEED  # the script abstains
    assert len(intent.frames) == 1 and len(guard.finished) == 1
    assert [e.trigger for e in continuity.events] == ["end"]
    assert continuity.events[0].open_commitments == ("requirement: four M4 holes",)
    assert [d.code for d in ran.diagnostics] == [INTEGRATION_FAILED]
    end = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()][-1]
    assert end["integrations"]["contract"] == {
        "contractRef": "intent:fake-task",
        "contractVersion": 1,
    }
