"""The bundled bracket through a Gateway on the DeepSeek plugin and the real step host on the
OCCT kernel, every transport with thinking on and off, against a fake that refuses what
DeepSeek refuses (a tool turn without its reasoning, a forced ``tool_choice`` while
thinking): the run reaches the plain run's head with one accepted request per step, each
step's usage priced from the shipped table at the instant it was sent."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from gateway.test_gateway_demo import DEMO_HEADS

from aira_core.extensions import Acceptance, Transport
from aira_core.gateway.config import ProviderSettings
from aira_core.gateway.gateway import Gateway, Route
from aira_core.gateway.http import Timeouts
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.transports import JsonTransport, ToolTransport
from aira_core.runtime.contract import TerminalState
from aira_core.step.runner import bundled_script, run_script
from aira_core.step.trajectory import read_trajectory
from aira_core.testing.provider import FakeProviderServer
from aira_provider_deepseek.provider import API_KEY_ENV, DeepSeekProvider

SENT_AT = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)  # 19:00 in Beijing: off-peak
LIMITS = Timeouts(connect=2.0, read=5.0, write=2.0, pool=2.0)


def strict_transport() -> Transport:
    transports = pytest.importorskip("aira_core.gateway.transports")
    if not hasattr(transports, "StrictTransport"):
        pytest.skip("the strict transport (transports.StrictTransport) is not in this tree")
    return transports.StrictTransport()


TRANSPORTS = {"tool": ToolTransport, "json": JsonTransport, "strict": strict_transport}


@pytest.mark.parametrize("thinking", [True, False], ids=["thinking", "no-thinking"])
@pytest.mark.parametrize("name", list(TRANSPORTS))
def test_the_bracket_through_deepseek(
    occt: None,
    kernel: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    thinking: bool,
) -> None:
    transport = TRANSPORTS[name]()
    monkeypatch.setenv(API_KEY_ENV, "sk-fake-for-the-demo-0000000000")
    script = bundled_script("bracket")
    fake = FakeProviderServer(
        script.decisions,
        mode="auto",  # a tool call when tools are offered, else the decision as text
        reasoning=(lambda i: f"thinking about step {i}") if thinking else None,
        require_reasoning_replay=thinking,  # thinking mode's rule
        refuse_forced_tool_choice=True,
    ).start()
    ledger = AttemptLedger.open(tmp_path / "gateway.sqlite3")
    try:
        provider = DeepSeekProvider(timeouts=LIMITS, clock=lambda: SENT_AT).configure(
            ProviderSettings(
                name="deepseek",
                base_url=fake.base_url,
                api_key_env=API_KEY_ENV,
                options={"thinking": thinking},
            )
        )
        task = ledger.create_task({"intent": script.name})
        gateway = Gateway(
            [Route(provider, "deepseek-flash")], ledger, task.id, transport, deadline_s=10.0
        )
        run = run_script(
            script,
            kernel=kernel,
            store=tmp_path / "store.sqlite3",
            trajectory=tmp_path / "trajectory.jsonl",
            source=gateway,
            header={"gatewayTask": task.id},
        )
        attempts = ledger.attempts(task.id)
    finally:
        ledger.close()
        fake.stop()

    assert run.outcome.terminal is TerminalState.COMPLETED, run.outcome.reason
    assert run.outcome.head == DEMO_HEADS["bracket"]
    assert fake.submissions == run.outcome.steps == len(script.decisions)  # none refused
    assert [a.acceptance for a in attempts] == [Acceptance.ACCEPTED] * len(script.decisions)
    for request in fake.requests:
        body = request.body
        assert body["thinking"] == {"type": "enabled" if thinking else "disabled"}
        assert body["model"] == "deepseek-flash"
        if name == "strict":
            assert request.path == "/v1/beta/chat/completions"
            assert all(t["function"]["strict"] is True for t in body["tools"])
            assert "response_format" not in body  # DeepSeek has no json_schema format
        else:
            assert request.path == "/v1/chat/completions"
        if name == "json":
            assert body["response_format"] == {"type": "json_object"}
            assert "tools" not in body
    _, records = read_trajectory(tmp_path / "trajectory.jsonl")
    steps = [r for r in records if "step" in r]
    for record in steps:
        usage = record["usage"]
        assert usage["costUsd"] > 0
        assert usage["pricing"] == (
            "deepseek-flash off-peak (prices of 2026-08-16), sent 2026-12-02T11:00:00Z"
        )
        assert usage["inputTokens"] == usage["cacheHitTokens"] + usage["cacheMissTokens"]
    assert all(r["usage"]["cacheHitTokens"] > 0 for r in steps[1:])
