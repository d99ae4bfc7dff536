"""The real wire: llama.cpp's own server (``xllamacpp``, CPU, in-process) serving a tiny
random-weight model the session writes (``llamacpp_server``, conftest.py), reached through
the ``openai`` plugin's provider, configured as a ``providers.toml`` table would configure
it, with the ``strict`` transport (``response_format json_schema``).

Random weights know nothing. The server's grammar makes their tokens valid against the
schema sent, which is all these tests need: a smoke test of the real HTTP server, its
request and response shapes, its usage and its errors, not of a model's quality. A
decision the host's grammar refuses (an alias that is not there) is a rejected step, as it
would be from any model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from aira_core.extensions import (
    Acceptance,
    BudgetsLeft,
    PreparedCall,
    ProviderError,
    ProviderResponse,
    StepRequest,
)
from aira_core.gateway.config import ProviderSettings
from aira_core.gateway.facts import DeliveryState, Outcome
from aira_core.gateway.gateway import Gateway, Route, resolve_routes
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.transports import StrictTransport
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.tiers import TaskBudgets
from aira_core.step import decision as grammar
from aira_core.step.runner import bundled_script, run_script
from aira_core.step.trajectory import read_trajectory
from aira_provider_openai.provider import OpenAIProvider

from .conftest import LlamaCppServer

MAX_TOKENS = 256
"""Enough for any decision the biased random model writes (they end within ~120 tokens)."""
STEPS = 3
TERMINAL = {TerminalState.COMPLETED, TerminalState.CANNOT_PROCEED, TerminalState.BUDGET_EXHAUSTED}


@pytest.fixture
def openai_plugin(register_plugin: Any) -> Any:
    import aira_provider_openai.plugin

    return register_plugin(aira_provider_openai.plugin, "openai")


def llamacpp_route(server: LlamaCppServer, registry: Any, **options: Any) -> Route:
    """The route ``llamacpp::<model>`` with the table ``[providers.llamacpp] kind =
    "openai"`` (a base URL, no models, no key), as ``aira run`` resolves it."""
    table = ProviderSettings(
        name="llamacpp",
        kind="openai",
        base_url=server.base_url,
        transport="strict",
        options={"max_tokens": MAX_TOKENS, **options},
    )
    (route,) = resolve_routes([f"llamacpp::{server.model}"], registry, {"llamacpp": table})
    assert isinstance(route.provider, OpenAIProvider)
    return route


def request_for(schema: dict[str, Any], step: int = 0) -> StepRequest:
    return StepRequest(
        task_id="llamacpp",
        step=step,
        call_id=f"aira_s{step}",
        tier="T32",
        capsule="aira.step/1; task: a 60 x 40 x 5 mm plate with four M4 clearance holes",
        log=(),
        schema=schema,
        budgets=BudgetsLeft(steps=3, input_tokens=100_000, output_tokens=10_000, usd=1.0),
    )


def send_or_explain(provider: OpenAIProvider, call: PreparedCall) -> ProviderResponse:
    """The provider's send; when the server refuses, the test fails with what it said (a
    schema llama.cpp cannot make a grammar of is a 400, which the gateway takes as
    ``unknown``: the task would pause). The provider's own error never quotes a body."""
    try:
        return provider.send(call, deadline=time.monotonic() + 60)
    except ProviderError as exc:
        import httpx2

        again = httpx2.post(call.url, content=call.content, headers=call.headers, timeout=60)
        pytest.fail(f"{exc.code}: llama.cpp answered {again.status_code}: {again.text[:600]}")


ALIASES = {
    "none listed": {},
    "a new document's (none of any kind)": {"bodies": [], "nodes": [], "parameters": []},
    "some of each": {
        "bodies": ["b:plate"],
        "nodes": ["n:plate", "n:holes"],
        "parameters": ["p:length", "p:width"],
        "assertions": ["a:volume"],
    },
}
"""The legal aliases a step's schema lists (as enums), as the step host builds it."""


@pytest.mark.parametrize("aliases", list(ALIASES.values()), ids=list(ALIASES))
def test_a_strict_completion_from_the_real_server_is_valid_against_the_schema_sent(
    llamacpp_server: LlamaCppServer, openai_plugin: Any, aliases: dict[str, list[str]]
) -> None:
    provider = llamacpp_route(llamacpp_server, openai_plugin).provider
    transport = StrictTransport()
    request = request_for(grammar.decision_schema(aliases))
    model = llamacpp_server.model

    replies = []
    for _ in range(2):  # the same prompt twice: the second is served from the prompt cache
        call = provider.prepare(request, model, transport)
        assert call.body["max_tokens"] == MAX_TOKENS
        assert "authorization" not in {k.lower() for k in call.headers}  # no key was given
        response = send_or_explain(provider, call)
        assert response.status == 200
        replies.append((call, response, provider.reply(response, request, model, transport)))

    for call, response, reply in replies:
        sent = call.body["response_format"]["json_schema"]["schema"]
        decision = json.loads(reply.text)
        jsonschema.Draft202012Validator(sent).validate(decision)
        assert (reply.provider, reply.model, reply.stop_reason) == ("llamacpp", model, "stop")
        assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
        assert reply.repairs == ()
        # llama.cpp's own account of the call, which the usage agrees with
        timings = response.body["timings"]
        assert reply.usage.cache_hit_tokens == timings["cache_n"]
    first, second = (reply.usage for _, _, reply in replies)
    assert first.input_tokens == second.input_tokens
    assert second.cache_hit_tokens > 0
    assert second.cache_hit_tokens + second.cache_miss_tokens == second.input_tokens

    # An older llama.cpp reports its cache only in `timings`: the plugin reads it there.
    _, response, reply = replies[1]
    usage = {k: v for k, v in response.body["usage"].items() if k != "prompt_tokens_details"}
    older = ProviderResponse(response.status, {**response.body, "usage": usage})
    assert provider.reply(older, request, model, transport).usage == reply.usage


def test_the_step_host_runs_to_a_terminal_state_through_the_real_server(
    llamacpp_server: LlamaCppServer,
    openai_plugin: Any,
    occt: None,
    kernel: Any,
    tmp_path: Path,
) -> None:
    route = llamacpp_route(llamacpp_server, openai_plugin)
    script = bundled_script("bracket")  # its intent and no starting document; the model decides
    ledger = AttemptLedger.open(tmp_path / "gateway.sqlite3")
    try:
        task = ledger.create_task({"intent": script.intent.goal})
        gateway = Gateway([route], ledger, task.id, StrictTransport(), deadline_s=120.0)
        run = run_script(
            script,
            kernel=kernel,
            store=tmp_path / "store.sqlite3",
            trajectory=tmp_path / "trajectory.jsonl",
            tier_name="T32",
            budgets=TaskBudgets(steps=STEPS),
            source=gateway,
            header={"gatewayTask": task.id},
        )
        attempts = ledger.attempts(task.id)
    finally:
        ledger.close()

    # The runtime decided how it ended (random weights: whichever way), within the budget.
    assert run.outcome.terminal in TERMINAL, run.outcome.reason
    assert 1 <= run.outcome.steps <= STEPS
    header, records = read_trajectory(run.trajectory)
    steps = [r for r in records if "step" in r]
    assert records[-1]["end"] is True and records[-1]["terminal"] == run.outcome.terminal.value
    assert len(steps) == run.outcome.steps
    text = run.trajectory.read_text()
    assert "Traceback" not in text

    # Every step one attempt, accepted by the server and delivered.
    assert [(a.step, a.ordinal) for a in attempts] == [(s, 1) for s in range(len(steps))]
    for attempt in attempts:
        assert attempt.model == f"llamacpp::{llamacpp_server.model}"
        assert attempt.acceptance is Acceptance.ACCEPTED
        assert attempt.outcome is Outcome.SUCCEEDED
        assert attempt.delivery_state is DeliveryState.READY
    # What the server used, in every record; every prompt within B.
    for record in steps:
        assert (record["provider"], record["model"]) == ("llamacpp", llamacpp_server.model)
        assert record["usage"]["inputTokens"] > 0 and record["usage"]["outputTokens"] > 0
        assert record["promptTokens"] <= record["budgetTokens"]
    # A round's prompts repeat the last one's prefix: llama.cpp serves it from its cache.
    assert all(r["usage"]["cacheHitTokens"] > 0 for r in steps[1:])
    assert header["gatewayTask"] == task.id
