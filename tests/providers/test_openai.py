"""The ``openai`` plugin against the loopback FAKE OpenAI-compatible server
(:mod:`aira_core.testing.provider`): registered with its defaults and configured by tables of
``kind = "openai"``; every transport through the gateway on the bundled bracket; reasoning
sent back under the field name the server itself uses (vLLM ≥ 0.11 and Ollama say
``reasoning``), or never; the options and their refusals; the key sent only where it was
given for; llama.cpp's ``timings`` read for the cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from gateway.conftest import FAST, step_request

from aira_core.diagnostics import AiraError
from aira_core.extensions import (
    Acceptance,
    DecisionEntry,
    ProviderResponse,
    ResultEntry,
    StepRequest,
    Usage,
)
from aira_core.gateway.chat import Prices
from aira_core.gateway.config import PROVIDERS_FILE, ProviderSettings, load_settings
from aira_core.gateway.facts import DeliveryState, Outcome
from aira_core.gateway.gateway import (
    ATTEMPT_UNKNOWN,
    Gateway,
    GatewayPaused,
    Route,
    resolve_routes,
    resolve_transport,
)
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import PROVIDER_CONFIG_INVALID, PROVIDER_KEY_MISSING
from aira_core.runtime.contract import TerminalState
from aira_core.step.runner import bundled_script, run_script
from aira_core.testing.provider import FakeProviderServer
from aira_provider_openai.provider import (
    API_KEY_ENV,
    BASE_URL,
    OpenAIProvider,
    usage_with_timings,
)

PLUGIN_DIR = Path(__file__).parents[2] / "plugins" / "aira-provider-openai"
REASONING = "The plate first, then the holes, then the checks."
SECRET = "plainwordsentinelopenaioption"
"""An option's value, never shown (never registered with the redactor, so that its absence
from a message is the plugin's doing)."""
KEY = "plainwordsentinelopenaikey"
"""An API key (registered with the redactor once read)."""


@pytest.fixture
def registry(register_plugin: Any) -> Any:
    import aira_provider_openai.plugin

    return register_plugin(aira_provider_openai.plugin, "openai")


def table(name: str = "local", **settings: Any) -> ProviderSettings:
    settings.setdefault("timeouts", FAST)
    return ProviderSettings(name=name, kind="openai", **settings)


def route_to(
    fake: FakeProviderServer, registry: Any, model: str = "m1", **settings: Any
) -> OpenAIProvider:
    """The provider of ``local::<model>``, a table of kind ``openai`` at the fake."""
    settings.setdefault("base_url", fake.base_url)
    (route,) = resolve_routes([f"local::{model}"], registry, {"local": table(**settings)})
    assert isinstance(route.provider, OpenAIProvider)
    return route.provider


def gateway(
    ledger: AttemptLedger, provider: OpenAIProvider, transport: Any, task: str | None = None
) -> Gateway:
    """A gateway on this very provider (what it learns of its server carries over)."""
    task = task or ledger.create_task({"intent": "openai plugin"}).id
    return Gateway([Route(provider, provider.models[0])], ledger, task, transport, deadline_s=3.0)


def with_log(step: int, reasoning: str = REASONING) -> StepRequest:
    """A request whose round log holds one tool-calling turn with its reasoning."""
    log = (
        DecisionEntry(call_id="call_1", text='{"act": "read"}', reasoning=reasoning),
        ResultEntry(call_id="call_1", text='{"status": "ok"}'),
    )
    return replace(step_request(step), log=log)


# -- registration -----------------------------------------------------------------------------


def test_the_plugin_registers_openai_with_its_defaults_and_no_io(registry: Any) -> None:
    provider = registry.named("providers")["openai"]
    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.base_url, provider.models) == ("openai", BASE_URL, ())
    assert provider.api_key_env == API_KEY_ENV and provider.reasoning_mode == "auto"
    # Any model the route names; OpenAI's API by default.
    (route,) = resolve_routes(["openai::gpt-5-mini"], registry)
    assert (route.provider.name, route.provider.models) == ("openai", ("gpt-5-mini",))
    assert route.provider.base_url == BASE_URL


def test_importing_and_registering_the_plugin_imports_no_http_client() -> None:
    code = (
        "import sys\n"
        "import aira_provider_openai.plugin as p\n"
        "got = []\n"
        "p.aira_register_providers(got.append)\n"
        "print(len(got), sorted(m for m in ('httpx2', 'httpx', 'gguf', 'xllamacpp') "
        "if m in sys.modules))\n"
    )
    path = os.pathsep.join([str(PLUGIN_DIR), *sys.path])
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1 []"


def test_a_table_of_kind_openai_names_another_server(registry: Any, tmp_path: Path) -> None:
    (tmp_path / PROVIDERS_FILE).write_text(
        '[providers.ollama]\nkind = "openai"\nbase_url = "http://127.0.0.1:11434/v1"\n'
        'options = { reasoning_field = "reasoning", max_tokens = 512 }\n'
    )
    settings = load_settings(tmp_path)
    (route,) = resolve_routes(["ollama::qwen3:0.6b"], registry, settings)
    provider = route.provider
    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.base_url) == ("ollama", "http://127.0.0.1:11434/v1")
    assert provider.models == ("qwen3:0.6b",) and route.model == "qwen3:0.6b"
    assert provider.reasoning_field == "reasoning" and provider.extra_body == {"max_tokens": 512}
    # the registered provider is unchanged
    default = registry.named("providers")["openai"]
    assert default.models == () and default.extra_body == {} and default.reasoning_mode == "auto"


# -- every transport through the gateway ------------------------------------------------------


@pytest.mark.parametrize(
    ("transport", "mode"), [("tool", "tool"), ("json", "json"), ("strict", "json")]
)
def test_each_transport_runs_the_bracket_through_the_gateway(
    registry: Any,
    occt: None,
    kernel: Any,
    servers: Callable[..., FakeProviderServer],
    ledger: AttemptLedger,
    tmp_path: Path,
    transport: str,
    mode: str,
) -> None:
    script = bundled_script("bracket")
    # reasoning under vLLM's / Ollama's name, refused unless sent back under it
    fake = servers(
        script.decisions,
        mode=mode,
        reasoning=REASONING,
        reasoning_field="reasoning",
        require_reasoning_replay=True,
    )
    provider = route_to(fake, registry, options={"max_tokens": 700})
    task = ledger.create_task({"intent": script.name})
    chosen = resolve_transport(transport, registry)
    run = run_script(
        script,
        kernel=kernel,
        store=tmp_path / "store.sqlite3",
        trajectory=tmp_path / "trajectory.jsonl",
        source=gateway(ledger, provider, chosen, task.id),
    )
    assert run.outcome.terminal is TerminalState.COMPLETED, run.outcome.reason
    assert run.outcome.steps == fake.submissions == len(script.decisions)
    for attempt in ledger.attempts(task.id):
        assert attempt.model == "local::m1" and attempt.acceptance is Acceptance.ACCEPTED
        assert attempt.outcome is Outcome.SUCCEEDED
        assert attempt.delivery_state is DeliveryState.READY
        assert attempt.reply is not None and attempt.reply["reasoning"] == REASONING
    bodies = [r.body for r in fake.requests]
    assert all(b["max_tokens"] == 700 for b in bodies)
    assert all("authorization" not in r.headers for r in fake.requests)  # no key given
    if transport == "strict":
        assert all(b["response_format"]["type"] == "json_schema" for b in bodies)
    assignments = [
        m for b in bodies for m in b["messages"] if m["role"] == "assistant" and "tool_calls" in m
    ]
    if transport == "tool":  # the round's tool turns carry the reasoning under its name
        assert assignments and all(m["reasoning"] == REASONING for m in assignments)
        assert not any("reasoning_content" in m for m in assignments)
    else:  # decisions as text: no tool turn, nothing to send back
        assert assignments == []


# -- reasoning --------------------------------------------------------------------------------


def test_reasoning_goes_back_under_the_name_the_server_last_used(
    registry: Any, servers: Callable[..., FakeProviderServer], ledger: AttemptLedger
) -> None:
    fake = servers(
        [{"act": "read"}] * 4,
        reasoning=REASONING,
        reasoning_field="reasoning",
        require_reasoning_replay=True,
    )
    provider = route_to(fake, registry)
    source = gateway(ledger, provider, resolve_transport("tool", registry))
    # Before any reply, DeepSeek's and llama.cpp's name: this server refuses it (400).
    assert provider.reasoning_field == "reasoning_content"
    with pytest.raises(GatewayPaused) as refused:
        source.decide(with_log(0))
    assert refused.value.code == ATTEMPT_UNKNOWN  # an undocumented 400 may have been processed
    turn = fake.requests[-1].body["messages"][2]
    assert turn["reasoning_content"] == REASONING and "reasoning" not in turn
    # A reply teaches the provider the server's name; from then on it is sent back under it.
    fresh = gateway(ledger, provider, resolve_transport("tool", registry))
    reply = fresh.decide(step_request(0))
    assert reply.reasoning == REASONING and provider.reasoning_field == "reasoning"
    fresh.decide(with_log(1))
    sent = fake.requests[-1].body["messages"][2]
    assert sent["reasoning"] == REASONING and "reasoning_content" not in sent
    # Per provider: another configured from the same plugin has learnt nothing.
    other = route_to(fake, registry)
    assert other.reasoning_field == "reasoning_content"
    assert registry.named("providers")["openai"].reasoning_field == "reasoning_content"


@pytest.mark.parametrize(
    ("mode", "field"),
    [("reasoning", "reasoning"), ("reasoning_content", "reasoning_content"), ("none", None)],
)
def test_a_fixed_reasoning_field_or_none(
    registry: Any,
    servers: Callable[..., FakeProviderServer],
    ledger: AttemptLedger,
    mode: str,
    field: str | None,
) -> None:
    # The server answers under the other name: a fixed setting does not follow it.
    other = "reasoning_content" if field == "reasoning" else "reasoning"
    fake = servers([{"act": "read"}] * 3, reasoning=REASONING, reasoning_field=other)
    provider = route_to(fake, registry, options={"reasoning_field": mode})
    source = gateway(ledger, provider, resolve_transport("tool", registry))
    source.decide(step_request(0))
    source.decide(with_log(1))
    sent = fake.requests[-1].body["messages"][2]
    assert sent["role"] == "assistant" and sent["tool_calls"]
    names = {"reasoning", "reasoning_content"} & set(sent)
    assert names == ({field} if field else set())
    if field:
        assert sent[field] == REASONING


# -- options ----------------------------------------------------------------------------------


def test_max_tokens_extra_body_and_a_forced_tool_choice_are_sent(
    registry: Any, servers: Callable[..., FakeProviderServer], ledger: AttemptLedger
) -> None:
    fake = servers([{"act": "read"}] * 4, mode="auto")
    options = {
        "max_tokens": 321,
        "tool_choice": "required",
        "extra_body": {"temperature": 0, "seed": 7, "chat_template_kwargs": {"x": True}},
    }
    provider = route_to(fake, registry, options=options)
    for name in ("tool", "json", "strict"):
        gateway(ledger, provider, resolve_transport(name, registry)).decide(step_request(0))
    tool, json_mode, strict = (r.body for r in fake.requests)
    for body in (tool, json_mode, strict):
        assert body["max_tokens"] == 321 and body["seed"] == 7 and body["temperature"] == 0
        assert body["chat_template_kwargs"] == {"x": True}
    assert tool["tool_choice"] == "required" and tool["tools"]
    # a request without tools gets no tool_choice (a server may refuse one alone)
    assert "tool_choice" not in json_mode and "tool_choice" not in strict
    # the registered default sends none of it
    plain = route_to(fake, registry)
    gateway(ledger, plain, resolve_transport("tool", registry)).decide(step_request(0))
    last = fake.requests[-1].body
    assert last["tool_choice"] == "auto" and "max_tokens" not in last and "seed" not in last


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"temprature": SECRET}, "options.temprature"),
        ({SECRET + "-é": 1}, "options.<a key>"),
        ({"reasoning_field": SECRET}, "options.reasoning_field"),
        ({"reasoning_field": ["reasoning"]}, "options.reasoning_field"),
        ({"max_tokens": 0}, "options.max_tokens"),
        ({"max_tokens": True}, "options.max_tokens"),
        ({"max_tokens": "512"}, "options.max_tokens"),
        ({"max_tokens": 10**7}, "options.max_tokens"),
        ({"tool_choice": "none"}, "options.tool_choice"),
        ({"tool_choice": {"type": "function"}}, "options.tool_choice"),
        ({"extra_body": SECRET}, "options.extra_body"),
        ({"extra_body": {"model": SECRET}}, "options.extra_body.model"),
        ({"extra_body": {"messages": []}}, "options.extra_body.messages"),
        ({"extra_body": {"stream": True}}, "options.extra_body.stream"),
        ({"extra_body": {"max_tokens": 5}}, "options.extra_body.max_tokens"),
        ({"extra_body": {"tool_choice": "auto"}}, "options.extra_body.tool_choice"),
        ({"extra_body": {"when": date(2026, 1, 1), "x": SECRET}}, "options.extra_body"),
    ],
)
def test_bad_options_are_refused_naming_the_key_never_the_value(
    registry: Any, options: dict[str, Any], path: str
) -> None:
    with pytest.raises(AiraError) as refused:
        resolve_routes(
            ["local::m1"],
            registry,
            {"local": table(base_url="http://127.0.0.1:9/v1", options=options)},
        )
    assert refused.value.code == PROVIDER_CONFIG_INVALID
    message = refused.value.diagnostic.message
    assert f"providers.local.{path}" in message
    assert SECRET not in message and SECRET not in repr(refused.value)


def test_a_bad_option_in_providers_toml_is_refused_when_the_route_is_resolved(
    registry: Any, tmp_path: Path
) -> None:
    (tmp_path / PROVIDERS_FILE).write_text(
        '[providers.vllm]\nkind = "openai"\nbase_url = "http://127.0.0.1:8000/v1"\n'
        f'options = {{ reasoning_field = "{SECRET}" }}\n'
    )
    with pytest.raises(AiraError) as refused:
        resolve_routes(["vllm::qwen"], registry, load_settings(tmp_path))
    assert refused.value.code == PROVIDER_CONFIG_INVALID
    assert "providers.vllm.options.reasoning_field" in refused.value.diagnostic.message
    assert SECRET not in refused.value.diagnostic.message


# -- the key ----------------------------------------------------------------------------------


def test_openai_api_key_is_read_for_openai_only(
    registry: Any,
    servers: Callable[..., FakeProviderServer],
    ledger: AttemptLedger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    # OpenAI's own base URL: the key from OPENAI_API_KEY, as a Bearer token (not sent here).
    (route,) = resolve_routes(["openai::gpt-5-mini"], registry)
    call = route.provider.prepare(step_request(0), "gpt-5-mini", resolve_transport("tool"))
    assert call.headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(route.provider)
    # Another server gets no key it was not given: nothing in the request the fake saw.
    fake = servers([{"act": "read"}])
    provider = route_to(fake, registry)
    assert provider.api_key_env is None
    gateway(ledger, provider, resolve_transport("tool", registry)).decide(step_request(0))
    assert fake.requests[-1].headers.get("authorization") is None


def test_openai_without_a_key_is_refused_before_anything_is_sent(
    registry: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    (route,) = resolve_routes(["openai::gpt-5-mini"], registry)
    with pytest.raises(AiraError) as refused:
        route.provider.prepare(step_request(0), "gpt-5-mini", resolve_transport("tool"))
    assert refused.value.code == PROVIDER_KEY_MISSING
    assert API_KEY_ENV in refused.value.diagnostic.message
    assert refused.value.acceptance is Acceptance.NOT_ACCEPTED


def test_a_key_named_by_api_key_env_is_sent_as_bearer(
    registry: Any,
    servers: Callable[..., FakeProviderServer],
    ledger: AttemptLedger,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("LOCAL_SERVER_TOKEN", KEY)
    monkeypatch.setenv(API_KEY_ENV, "not-for-this-server")
    fake = servers([{"act": "read"}], api_key=KEY)  # a wrong or missing key is a 401
    (tmp_path / PROVIDERS_FILE).write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.base_url}"\n'
        'api_key_env = "LOCAL_SERVER_TOKEN"\n'
    )
    (route,) = resolve_routes(["local::m1"], registry, load_settings(tmp_path))
    reply = gateway(ledger, route.provider, resolve_transport("tool", registry)).decide(
        step_request(0)
    )
    assert json.loads(reply.text) == {"act": "read"}
    assert fake.requests[-1].authorized is True
    # named but unset: refused before sending, naming the variable
    monkeypatch.delenv("LOCAL_SERVER_TOKEN")
    (route,) = resolve_routes(["local::m1"], registry, load_settings(tmp_path))
    with pytest.raises(AiraError) as refused:
        route.provider.prepare(step_request(0), "m1", resolve_transport("tool"))
    assert refused.value.code == PROVIDER_KEY_MISSING
    assert "LOCAL_SERVER_TOKEN" in refused.value.diagnostic.message
    assert fake.submissions == 1


# -- usage ------------------------------------------------------------------------------------


def completion(usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": '{"act": "read"}'}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return {"choices": [choice], "usage": usage, **extra}


TIMINGS = {"cache_n": 300, "prompt_n": 100, "prompt_ms": 1.0, "predicted_n": 7}


@pytest.mark.parametrize(
    ("usage", "timings", "expected"),
    [
        # an older llama.cpp: the cache only in timings
        (
            {"prompt_tokens": 400, "completion_tokens": 7},
            TIMINGS,
            Usage(input_tokens=400, output_tokens=7, cache_hit_tokens=300, cache_miss_tokens=100),
        ),
        # no prompt count at all: cache_n + prompt_n
        (
            {"completion_tokens": 7},
            TIMINGS,
            Usage(input_tokens=400, output_tokens=7, cache_hit_tokens=300, cache_miss_tokens=100),
        ),
        # the usage's own report wins (a newer llama.cpp says both)
        (
            {
                "prompt_tokens": 400,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 10},
            },
            TIMINGS,
            Usage(input_tokens=400, output_tokens=7, cache_hit_tokens=10, cache_miss_tokens=390),
        ),
        # no timings, no cache: nothing invented
        (
            {"prompt_tokens": 400, "completion_tokens": 7},
            None,
            Usage(input_tokens=400, output_tokens=7),
        ),
        # a nonsense cache_n is ignored
        (
            {"prompt_tokens": 400, "completion_tokens": 7},
            {"cache_n": -3, "prompt_n": 1},
            Usage(input_tokens=400, output_tokens=7),
        ),
    ],
)
def test_llamacpp_timings_give_the_cache_when_the_usage_does_not(
    usage: dict[str, Any], timings: dict[str, Any] | None, expected: Usage
) -> None:
    provider = OpenAIProvider().configure(table(base_url="http://127.0.0.1:9/v1", models=("m",)))
    extra = {"timings": timings} if timings is not None else {}
    response = ProviderResponse(200, completion(usage, **extra))
    transport = resolve_transport("json")
    assert provider.reply(response, step_request(0), "m", transport).usage == expected


def test_a_price_row_of_the_table_costs_the_call_and_is_named() -> None:
    prices = {"m": Prices(hit=0.1, miss=1.0, output=2.0)}
    provider = OpenAIProvider().configure(
        table(base_url="http://127.0.0.1:9/v1", models=("m",), prices=prices)
    )
    body = completion({"prompt_tokens": 400, "completion_tokens": 10}, timings=TIMINGS)
    reply = provider.reply(
        ProviderResponse(200, body), step_request(0), "m", resolve_transport("json")
    )
    assert reply.usage.cost_usd == pytest.approx((300 * 0.1 + 100 * 1.0 + 10 * 2.0) / 1e6)
    assert reply.usage.pricing == "m (prices of providers.local)"


def test_usage_with_timings_leaves_a_body_without_them_alone() -> None:
    assert usage_with_timings({"usage": {"prompt_tokens": 3}}) is None
    assert usage_with_timings({"timings": "x"}) is None
    assert usage_with_timings({"timings": {"cache_n": True}}) is None
    body = {"usage": {"prompt_cache_hit_tokens": 3}, "timings": TIMINGS}  # DeepSeek's own
    assert usage_with_timings(body) is None


def test_a_table_without_options_adds_nothing_to_the_body() -> None:
    provider = OpenAIProvider().configure(table(base_url="http://127.0.0.1:9/v1", models=("m",)))
    call = provider.prepare(step_request(0), "m", resolve_transport("json"))
    assert set(call.body) == {"model", "messages", "response_format"}
    assert "Authorization" not in call.headers
