"""The demo through the gateway: every bundled decision script, answered by the loopback fake
provider through a Gateway on an OpenAI-compatible provider, reaches the same head revision,
terminal state and steps as the plain scripted run, with one delivered ledger attempt per
step and provider, model, call id and usage in the trajectory (issue 14, "Tests"); a run
interrupted after a step's reply was delivered resumes from the ledger without sending it
again.

And the reasoning round trip of spec 003 §6.6 through the real loop: a fake that refuses a
tool turn without its ``reasoning_content`` (DeepSeek's thinking-mode rule) is driven through
a multi-step round; the requests it received carry user(capsule) → assistant(reasoning +
one ``aira_step`` call) → tool(the result, same call id), and the round log keeps and meters
the reasoning.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
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
)

from aira_core.contracts.plan import IntentFrame
from aira_core.extensions import (
    Acceptance,
    DecisionEntry,
    ResultEntry,
    StepReply,
    StepRequest,
    Transport,
)
from aira_core.gateway.chat import TOOL_NAME
from aira_core.gateway.facts import DeliveryState, HumanState, Outcome, Phase
from aira_core.gateway.gateway import GATEWAY_ALL_REFUSED, Gateway, GatewayPaused, Route
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import JsonTransport, ToolTransport
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.tiers import TIERS
from aira_core.step.ledger import utf8_size
from aira_core.step.log import RoundLog
from aira_core.step.loop import StepHost
from aira_core.step.runner import BUNDLED, bundled_script, resume_script, run_script
from aira_core.step.trajectory import DecisionScript, TrajectoryWriter, read_trajectory
from aira_core.testing.provider import FakeProviderServer

from .conftest import FAST, REFUSALS, provider

DEMO_HEADS = {
    name: f"rev:sha256:{digest}"
    for name, digest in (
        ("bracket", "1442b44f7cf76e73f19895994f95ee4c370520b0afdbdd2a4c8a5db582e0c5e2"),
        ("flanged_shaft", "363925c088f5b018c90539d58a9683b87cf6dd0ed99af7cc6a7087d83f2261d3"),
        ("parametric_edit", "057c2991337d521385838fdc39508562237929377bc38149cf491ce10cee14bc"),
    )
}
"""The heads `aira demo` reaches on the OCCT kernel: a revision id is a content address of the
document, so a change here is a change of what the demo builds, not noise."""

REASONING = "The bracket needs its plate first; then the holes, then the check."

CASES = [*((name, "tool") for name in BUNDLED), ("bracket", "json")]
"""Every script through the tool transport; the bracket (a rejected plan, then its repair)
also through the json one, whose results ride back as user messages."""


def gateway_on(
    fake: FakeProviderServer, ledger: AttemptLedger, task: str, transport: Transport, **kw: Any
) -> Gateway:
    return Gateway([Route(provider(fake, **kw), "m1")], ledger, task, transport, deadline_s=3.0)


# -- the demo on the OCCT kernel --------------------------------------------------------------


def steps_of(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, records = read_trajectory(path)
    return header, [r for r in records if "step" in r]


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_the_demo_through_the_gateway_reaches_the_plain_runs_heads(
    occt: None,
    kernel: Any,
    servers: Any,
    ledger: AttemptLedger,
    tmp_path: Path,
    name: str,
    mode: str,
) -> None:
    script = bundled_script(name)
    plain = run_script(
        script,
        kernel=kernel,
        store=tmp_path / "plain" / "store.sqlite3",
        trajectory=tmp_path / "plain" / "trajectory.jsonl",
    )
    fake = servers(script.decisions, mode=mode, reasoning=REASONING)
    transport = ToolTransport() if mode == "tool" else JsonTransport()
    task = ledger.create_task({"intent": script.name, "script": name})
    gateway = gateway_on(fake, ledger, task.id, transport)
    via = run_script(
        script,
        kernel=kernel,
        store=tmp_path / "gateway" / "store.sqlite3",
        trajectory=tmp_path / "gateway" / "trajectory.jsonl",
        source=gateway,
        header={"gatewayTask": task.id},
    )

    assert plain.outcome.terminal is via.outcome.terminal is TerminalState.COMPLETED
    assert plain.outcome.head == via.outcome.head == DEMO_HEADS[name]
    assert plain.outcome.steps == via.outcome.steps
    # The same steps, not only the same end: every decision and its result's status.
    _, plain_steps = steps_of(plain.trajectory)
    header, steps = steps_of(via.trajectory)
    assert [(r["decision"], r["result"]["status"], r["head"]) for r in steps] == [
        (r["decision"], r["result"]["status"], r["head"]) for r in plain_steps
    ]

    # One billable submission per step, each one delivered: nothing was sent twice.
    assert fake.submissions == via.outcome.steps == len(script.decisions)
    attempts = ledger.attempts(task.id)
    assert [(a.step, a.ordinal) for a in attempts] == [(s, 1) for s in range(len(steps))]
    for attempt, decision in zip(attempts, script.decisions, strict=True):
        assert attempt.model == "fake::m1"
        assert attempt.acceptance is Acceptance.ACCEPTED
        assert attempt.outcome is Outcome.SUCCEEDED
        assert attempt.delivery_state is DeliveryState.READY
        assert attempt.request_digest and attempt.reply is not None
        assert json.loads(attempt.reply["text"]) == decision
        assert attempt.reply["reasoning"] == REASONING
    # The run ended: the runner told the gateway, so the task no longer advances.
    facts = ledger.task(task.id)
    assert facts.phase is Phase.TERMINAL
    assert facts.human_state is HumanState.COMPLETED

    assert header["gatewayTask"] == task.id
    for i, record in enumerate(steps):
        assert (record["provider"], record["model"]) == ("fake", "m1")
        assert record["callId"] == (f"call_{i + 1}" if mode == "tool" else f"aira_s{i}")
        assert record["usage"]["inputTokens"] > 0 and record["usage"]["outputTokens"] > 0
        assert record["reasoningBytes"] == utf8_size(REASONING)
        assert record["stopReason"] == ("tool_calls" if mode == "tool" else "stop")
    # The fake's prefix cache: within the one round every request repeats the last one's.
    assert all(r["usage"]["cacheHitTokens"] > 0 for r in steps[1:])


class Interrupted(Exception):
    """The process "dies" after the provider's answer was delivered, before the host
    recorded the step."""


class DiesAfterDelivery:
    """A gateway that is interrupted once step ``at`` has been answered and delivered."""

    name = "gateway"

    def __init__(self, gateway: Gateway, at: int) -> None:
        self.gateway, self.at = gateway, at

    def decide(self, request: StepRequest) -> StepReply:
        reply = self.gateway.decide(request)
        if request.step == self.at:
            raise Interrupted(f"killed after step {request.step} was delivered")
        return reply


def test_an_interrupted_gateway_run_resumes_from_the_ledger_without_sending_again(
    occt: None, kernel: Any, servers: Any, ledger: AttemptLedger, tmp_path: Path
) -> None:
    name = "parametric_edit"
    script = bundled_script(name)
    at = next(i for i, d in enumerate(script.decisions) if d["act"] == "plan")
    fake = servers(script.decisions, mode="tool", reasoning=REASONING)
    task = ledger.create_task({"intent": script.name})
    store, trajectory = tmp_path / "store.sqlite3", tmp_path / "trajectory.jsonl"
    first = gateway_on(fake, ledger, task.id, ToolTransport())
    with pytest.raises(Interrupted):
        run_script(
            script,
            kernel=kernel,
            store=store,
            trajectory=trajectory,
            source=DiesAfterDelivery(first, at),
            header={"gatewayTask": task.id},
        )
    assert fake.submissions == at + 1
    assert ledger.task(task.id).human_state is HumanState.RUNNING  # not ended: resumable

    header, _ = steps_of(trajectory)
    again = gateway_on(fake, ledger, header["gatewayTask"], ToolTransport())
    run = resume_script(script, kernel=kernel, store=store, trajectory=trajectory, source=again)
    assert run.outcome.terminal is TerminalState.COMPLETED
    assert run.outcome.head == DEMO_HEADS[name]
    # The delivered step was answered from the ledger: every decision was sent exactly once.
    assert fake.submissions == len(script.decisions)
    assert [a.step for a in ledger.attempts(task.id)] == list(range(len(script.decisions)))
    assert ledger.task(task.id).human_state is HumanState.COMPLETED
    _, steps = steps_of(trajectory)
    assert [r["step"] for r in steps] == list(range(len(script.decisions)))


# -- the reasoning round trip through the loop (spec 003 §6.6), on the fake kernel --------------

INTENT = IntentFrame(goal="a 40 x 30 x 10 plate with its vertical edges rounded 2 mm")
DECISIONS: list[dict[str, Any]] = [
    {"act": "lookup", "query": "box plate block"},
    {"act": "lookup", "query": "fillet round edges"},
    *(
        {"act": "lookup", "capability": cap}
        for cap in (DEFINE_CAP, BOX_CAP, FILLET_CAP, VOLUME_RANGE_CAP, MASS_PROPERTIES_CAP)
    ),
    {
        "act": "plan",
        "summary": "the rounded plate",
        "plan": {"steps": [s.to_wire() for s in composite_steps()]},
    },
    {"act": "read"},
    {"act": "done", "summary": "the plate is built and rounded"},
]


def reasoning(index: int) -> str:
    """Each decision's own reasoning, so a misplaced one is seen."""
    return f"thinking before decision {index}: " + "why this act and not another. " * 8


def script() -> DecisionScript:
    return DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": "plate",
            "intent": INTENT.to_wire(),
            "tier": "T128",
            "decisions": DECISIONS,
        }
    )


def loop_through(gateway: Gateway, tmp_path: Path) -> tuple[StepHost, TrajectoryWriter]:
    ctx, kernel, _ = make_runtime(tmp_path)
    writer = TrajectoryWriter(tmp_path / "trajectory.jsonl", {"script": "plate"})
    host = StepHost(
        ctx,
        kernel,
        gateway,
        task_id="t-reasoning",
        intent=INTENT,
        tier=TIERS["T128"],
        trajectory=writer,
    )
    return host, writer


def test_reasoning_rides_back_within_the_round_and_is_metered(
    servers: Any, ledger: AttemptLedger, tmp_path: Path
) -> None:
    fake = servers(DECISIONS, mode="tool", reasoning=reasoning, require_reasoning_replay=True)
    task = ledger.create_task({"intent": "reasoning"})
    host, writer = loop_through(gateway_on(fake, ledger, task.id, ToolTransport()), tmp_path)
    try:
        outcome = host.run()
    finally:
        writer.close()
    assert outcome.terminal is TerminalState.COMPLETED, outcome.reason
    assert outcome.rounds == 1 and outcome.steps == len(DECISIONS)
    assert fake.submissions == len(DECISIONS)  # no tool turn was refused and sent again

    first, second = (fake.requests[i].body["messages"] for i in (0, 1))
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    capsule = second[1]["content"]
    assert capsule == first[1]["content"]  # one capsule per round
    assistant, tool = second[2], second[3]
    assert assistant["reasoning_content"] == reasoning(0)
    [call] = assistant["tool_calls"]
    assert call["id"] == "call_1" and call["function"]["name"] == TOOL_NAME
    assert json.loads(call["function"]["arguments"]) == DECISIONS[0]
    assert tool["tool_call_id"] == call["id"]
    entries = host.log.entries
    assert tool["content"] == entries[1].text and json.loads(tool["content"])["act"] == "lookup"

    # The last request carries the whole round: every decision with its own reasoning.
    last = fake.requests[-1].body["messages"]
    assert len(last) == 2 + 2 * (len(DECISIONS) - 1)
    for k, message in enumerate(last[2::2]):
        assert message["reasoning_content"] == reasoning(k)
        assert message["tool_calls"][0]["id"] == last[3 + 2 * k]["tool_call_id"] == f"call_{k + 1}"

    # The round log kept each decision's reasoning (the final done settles nothing) …
    decisions = [e for e in entries if isinstance(e, DecisionEntry)]
    results = [e for e in entries if isinstance(e, ResultEntry)]
    assert [e.reasoning for e in decisions] == [reasoning(k) for k in range(len(DECISIONS) - 1)]
    assert [e.call_id for e in decisions] == [e.call_id for e in results]
    # … and meters it against B like the rest of the log.
    without = sum(RoundLog.entry_bytes(replace(e, reasoning="")) for e in decisions)
    without += sum(RoundLog.entry_bytes(e) for e in results)
    assert host.log.bytes == sum(RoundLog.entry_bytes(e) for e in entries)
    assert host.log.bytes - without == sum(
        utf8_size(f"# reasoning\n{reasoning(k)}\n") for k in range(len(decisions))
    )
    _, records = read_trajectory(tmp_path / "trajectory.jsonl")
    steps = [r for r in records if "step" in r]
    digest = "capsule:sha256:" + hashlib.sha256(capsule.encode()).hexdigest()
    assert {r["capsuleHash"] for r in steps} == {digest}  # what the provider was sent
    assert steps[-1]["logBytes"] == host.log.bytes  # the last prompt held all of it
    assert [r["reasoningBytes"] for r in steps] == [
        utf8_size(reasoning(k)) for k in range(len(DECISIONS))
    ]


def test_without_the_reasoning_sent_back_the_fake_refuses_the_second_step(
    servers: Any, ledger: AttemptLedger, tmp_path: Path
) -> None:
    """The control: the same round through a provider that never sends reasoning back is
    refused at its first tool turn, so the round trip above is what made it pass."""
    fake = servers(DECISIONS, mode="tool", reasoning=reasoning, require_reasoning_replay=True)
    task = ledger.create_task({"intent": "reasoning dropped"})
    mute = OpenAICompatProvider(
        "fake", fake.base_url, ["m1"], acceptance=REFUSALS, timeouts=FAST, reasoning_field=None
    )
    gateway = Gateway([Route(mute, "m1")], ledger, task.id, ToolTransport(), deadline_s=3.0)
    host, writer = loop_through(gateway, tmp_path)
    try:
        with pytest.raises(GatewayPaused) as paused:
            host.run()
    finally:
        writer.close()
    assert paused.value.code == GATEWAY_ALL_REFUSED
    assert fake.submissions == 2
    refused = ledger.attempts(task.id, 1)
    assert [a.acceptance for a in refused] == [Acceptance.NOT_ACCEPTED]
    assert refused[0].error is not None and refused[0].error["httpStatus"] == 400
