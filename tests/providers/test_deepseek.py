"""The DeepSeek plugin against the loopback fake provider, which answers as DeepSeek's API does
(peers.md §3): thinking mode said in every request; a forced ``tool_choice`` refused while
thinking (the fake's 400) and so never sent then; the reasoning of a tool turn sent back
within the round (the fake's 400 without it, shown to exist, never triggered); the key read
from the environment when a call is prepared, and a call without one refused before anything
is sent; a 402 from DeepSeek moving the step to the next route; cost arithmetic at a peak and
an off-peak instant from the shipped price table; configure() refusing what DeepSeek has
not, naming the key, never the value."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from gateway.conftest import FAST, REFUSALS, step_request
from gateway.test_gateway_demo import DECISIONS, loop_through, reasoning

from aira_core.diagnostics import AiraError
from aira_core.extensions import Acceptance, ProviderError, Usage
from aira_core.gateway.chat import Prices
from aira_core.gateway.config import PROVIDERS_FILE, ProviderSettings, load_settings
from aira_core.gateway.gateway import (
    GATEWAY_ALL_REFUSED,
    Gateway,
    GatewayPaused,
    Route,
    resolve_routes,
)
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import JsonTransport, ToolTransport
from aira_core.runtime.contract import TerminalState
from aira_core.testing.provider import FakeProviderServer, Fault
from aira_provider_deepseek import plugin, prices
from aira_provider_deepseek.provider import (
    ACCEPTANCE,
    API_KEY_ENV,
    MODELS,
    SERVED_BY,
    DeepSeekProvider,
)

KEY = "sk-fake-deepseek-test-key-0123456789"
PEAK_INSTANT = datetime(2026, 12, 2, 2, 30, tzinfo=UTC)  # Wednesday 10:30 in Beijing
OFF_PEAK_INSTANT = datetime(2026, 12, 2, 5, 0, tzinfo=UTC)  # Wednesday 13:00 in Beijing
SATURDAY = datetime(2026, 12, 5, 2, 30, tzinfo=UTC)  # Saturday 10:30 in Beijing


@pytest.fixture
def servers() -> Iterator[Callable[..., FakeProviderServer]]:
    started: list[FakeProviderServer] = []

    def start(decisions: Any = DECISIONS, **options: Any) -> FakeProviderServer:
        server = FakeProviderServer(decisions, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[AttemptLedger]:
    opened = AttemptLedger.open(tmp_path / "gateway.sqlite3")
    yield opened
    opened.close()


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(API_KEY_ENV, KEY)
    return KEY


def deepseek(
    fake: FakeProviderServer, *, clock: Callable[[], datetime] | None = None, **options: Any
) -> DeepSeekProvider:
    """The registered provider configured as a providers.toml table would: pointed at the
    fake, the key from DEEPSEEK_API_KEY, ``options`` as the table's options."""
    registered = DeepSeekProvider(timeouts=FAST, **({"clock": clock} if clock else {}))
    settings = ProviderSettings(
        name="deepseek", base_url=fake.base_url, api_key_env=API_KEY_ENV, options=options
    )
    return registered.configure(settings)


def gateway(ledger: AttemptLedger, *routes: Route, transport: Any = None) -> Gateway:
    task = ledger.create_task({"intent": "deepseek"}).id
    return Gateway(routes, ledger, task, transport or ToolTransport(), deadline_s=3.0)


def post(fake: FakeProviderServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A request sent to the fake directly, as no provider of Aira would send it."""
    request = urllib.request.Request(
        f"{fake.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def shipped_rows() -> dict[str, Any]:
    """The price file as data, read here by hand: the test's arithmetic uses its rows."""
    return json.loads(prices.PRICES_FILE.read_text(encoding="utf-8"))["models"]


# -- registration -----------------------------------------------------------------------------


def test_the_plugin_registers_deepseek_with_its_defaults(register_plugin) -> None:
    registry = register_plugin(plugin, "deepseek")
    provider = registry.named("providers")["deepseek"]
    assert isinstance(provider, DeepSeekProvider)
    assert provider.base_url == "https://api.deepseek.com"
    assert provider.strict_base_url == "https://api.deepseek.com/beta"
    assert provider.models == MODELS
    assert provider.thinking is True and provider.reasoning_effort is None
    assert provider.api_key_env == API_KEY_ENV and provider.api_key_required
    assert provider.acceptance == ACCEPTANCE
    [route] = resolve_routes(["deepseek::deepseek-v4-pro"], registry)
    assert route.provider is provider  # no table: the registered provider as it is
    with pytest.raises(AiraError) as err:
        resolve_routes(["deepseek::gpt-4o"], registry)
    assert err.value.code == "GATEWAY_MODEL_UNKNOWN"


def test_importing_and_registering_loads_no_http_client_and_reads_nothing() -> None:
    code = (
        "import sys\n"
        "from aira_provider_deepseek import plugin, prices\n"
        "got = []\n"
        "plugin.aira_register_providers(got.append)\n"
        "assert got[0].name == 'deepseek'\n"
        "assert got[0].price_table is None, 'the provider holds prices already'\n"
        "assert prices.shipped.cache_info().misses == 0, 'the price file was read'\n"
        "assert 'httpx2' not in sys.modules, 'httpx2 imported'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_acceptance_table_is_deepseeks_documented_one() -> None:
    # tests/gateway keeps its own copy (its tests run without this plugin installed): the
    # two must not drift apart.
    assert ACCEPTANCE.refusals == REFUSALS.refusals
    assert ACCEPTANCE.source == REFUSALS.source
    assert {500, 503}.isdisjoint(ACCEPTANCE.refusals)  # undocumented billing: unknown


# -- thinking mode ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({}, {"thinking": {"type": "enabled"}}),
        ({"reasoning_effort": "max"}, {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}),
        ({"thinking": False}, {"thinking": {"type": "disabled"}}),
    ],
)
def test_every_request_says_thinking_mode(
    servers, ledger, key, options: dict[str, Any], said: dict[str, Any]
) -> None:
    fake = servers(mode="auto")
    provider = deepseek(fake, **options)
    for transport in (ToolTransport(), JsonTransport()):
        gateway(ledger, Route(provider, "deepseek-flash"), transport=transport).decide(
            step_request()
        )
    for request in fake.requests:
        body = request.body
        assert {k: body[k] for k in ("thinking", "reasoning_effort") if k in body} == said


def test_the_fake_refuses_a_forced_tool_choice_in_thinking_mode(servers) -> None:
    """The rule is real in the fake: what the provider must never trigger."""
    fake = servers(refuse_forced_tool_choice=True)
    body = {
        "model": "deepseek-flash",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "aira_step", "parameters": {}}}],
        "tool_choice": "required",
    }
    status, answer = post(fake, body)
    assert status == 400
    assert answer["error"]["message"] == "Thinking mode does not support this tool_choice"
    status, _ = post(fake, {**body, "thinking": {"type": "disabled"}})
    assert status == 200


@pytest.mark.parametrize(("thinking", "sent"), [(True, "auto"), (False, "required")])
def test_a_forced_tool_choice_is_sent_only_with_thinking_off(
    servers, ledger, key, thinking: bool, sent: str
) -> None:
    fake = servers(refuse_forced_tool_choice=True)
    provider = deepseek(fake, thinking=thinking)
    forced = ToolTransport(tool_choice="required")
    reply = gateway(ledger, Route(provider, "deepseek-flash"), transport=forced).decide(
        step_request()
    )
    assert json.loads(reply.text) == DECISIONS[0]
    [request] = fake.requests
    assert request.body["tool_choice"] == sent
    assert request.body["thinking"] == {"type": "enabled" if thinking else "disabled"}


class NamesTheFunction(ToolTransport):
    """A transport forcing the call by naming the function (for this test)."""

    def render(self, request: Any) -> dict[str, Any]:
        forced = {"type": "function", "function": {"name": "aira_step"}}
        return {**super().render(request), "tool_choice": forced}


@pytest.mark.parametrize("thinking", [True, False])
def test_a_named_function_choice_is_unforced_while_thinking(
    servers, ledger, key, thinking: bool
) -> None:
    fake = servers(refuse_forced_tool_choice=True)
    route = Route(deepseek(fake, thinking=thinking), "deepseek-flash")
    gateway(ledger, route, transport=NamesTheFunction()).decide(step_request())
    sent = fake.requests[0].body["tool_choice"]
    assert sent == ("auto" if thinking else {"type": "function", "function": {"name": "aira_step"}})


def test_from_settings_is_the_plugins_defaults_configured(servers) -> None:
    fake = servers()
    settings = ProviderSettings(name="ds", base_url=fake.base_url, options={"thinking": False})
    provider = DeepSeekProvider.from_settings(settings, timeouts=FAST)
    assert isinstance(provider, DeepSeekProvider) and provider.thinking is False
    assert provider.acceptance.refusals == ACCEPTANCE.refusals
    assert provider.acceptance.provider == "ds" and provider.timeouts is FAST


# -- reasoning within the round ---------------------------------------------------------------


def test_the_fake_refuses_a_tool_turn_without_its_reasoning(servers) -> None:
    """DeepSeek's 400 for a tool-calling assistant turn sent back without its
    ``reasoning_content``, reproduced by the fake."""
    fake = servers(require_reasoning_replay=True)
    turn = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "aira_step", "arguments": "{}"},
            }
        ],
    }
    messages = [
        {"role": "user", "content": "hi"},
        turn,
        {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
    ]
    status, answer = post(fake, {"model": "deepseek-flash", "messages": messages})
    assert status == 400
    assert answer["error"]["message"] == (
        "Missing `reasoning_content` field in the assistant message at message index 1"
    )
    turn["reasoning_content"] = "why"
    status, _ = post(fake, {"model": "deepseek-flash", "messages": messages})
    assert status == 200


@pytest.mark.parametrize("thinks", [True, False], ids=["model-reasons", "no-reasoning-given"])
def test_a_multi_step_round_never_triggers_the_reasoning_400(
    servers, ledger, key, tmp_path: Path, thinks: bool
) -> None:
    # Without reasoning from the model (another provider's turn, a blank one), a tool turn
    # still carries the field: DeepSeek refuses one without it.
    fake = servers(
        DECISIONS,
        reasoning=reasoning if thinks else None,
        require_reasoning_replay=True,
        refuse_forced_tool_choice=True,
    )
    host, writer = loop_through(gateway(ledger, Route(deepseek(fake), "deepseek-flash")), tmp_path)
    try:
        outcome = host.run()
    finally:
        writer.close()
    assert outcome.terminal is TerminalState.COMPLETED, outcome.reason
    assert fake.submissions == len(DECISIONS)  # not one request refused
    last = fake.requests[-1].body["messages"]
    turns = [m for m in last if m["role"] == "assistant"]
    assert len(turns) == len(DECISIONS) - 1
    expected = [reasoning(k) if thinks else "" for k in range(len(turns))]
    assert [m["reasoning_content"] for m in turns] == expected


def test_the_core_provider_alone_would_trigger_it(servers, ledger, tmp_path: Path) -> None:
    """The control of the case above: the core's provider sends no field for a turn without
    reasoning, and the fake refuses the second step, so the plugin's rule is what passes."""
    fake = servers(DECISIONS, reasoning=None, require_reasoning_replay=True)
    core = OpenAICompatProvider(
        "plain", fake.base_url, ["deepseek-flash"], timeouts=FAST, acceptance=REFUSALS
    )
    host, writer = loop_through(gateway(ledger, Route(core, "deepseek-flash")), tmp_path)
    try:
        with pytest.raises(GatewayPaused) as paused:
            host.run()
    finally:
        writer.close()
    assert paused.value.code == GATEWAY_ALL_REFUSED
    assert fake.submissions == 2


# -- the key ----------------------------------------------------------------------------------


def test_the_key_is_read_from_the_environment_when_a_call_is_prepared(
    servers, ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    fake = servers(api_key=KEY)
    provider = deepseek(fake)  # configured before the key exists
    monkeypatch.setenv(API_KEY_ENV, KEY)
    reply = gateway(ledger, Route(provider, "deepseek-flash")).decide(step_request())
    assert json.loads(reply.text) == DECISIONS[0]
    assert [r.authorized for r in fake.requests] == [True]


def test_a_missing_key_fails_at_prepare_with_nothing_sent(
    servers, ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    fake = servers()
    with pytest.raises(ProviderError) as err:  # the registered defaults: no network needed
        DeepSeekProvider().prepare(step_request(), "deepseek-flash", ToolTransport())
    assert err.value.code == "PROVIDER_KEY_MISSING"
    assert err.value.acceptance is Acceptance.NOT_ACCEPTED
    assert API_KEY_ENV in err.value.diagnostic.message

    gw = gateway(ledger, Route(deepseek(fake), "deepseek-flash"))
    with pytest.raises(GatewayPaused) as paused:
        gw.decide(step_request())
    assert paused.value.code == GATEWAY_ALL_REFUSED
    [attempt] = ledger.attempts(gw.task_id)
    assert attempt.error is not None and attempt.error["code"] == "PROVIDER_KEY_MISSING"
    assert attempt.acceptance is Acceptance.NOT_ACCEPTED
    assert fake.submissions == 0 and fake.requests == []


def test_the_key_is_not_sent_to_a_server_the_table_gave_no_key_for(
    servers, ledger, key: str
) -> None:
    fake = servers()
    elsewhere = DeepSeekProvider(timeouts=FAST).configure(
        ProviderSettings(name="proxy", kind="deepseek", base_url=fake.base_url)
    )
    assert elsewhere.api_key_env is None and not elsewhere.api_key_required
    gateway(ledger, Route(elsewhere, "deepseek-flash")).decide(step_request())
    assert "authorization" not in fake.requests[0].headers


# -- failover ---------------------------------------------------------------------------------


def test_a_402_moves_the_step_to_the_next_route_with_one_billable_attempt(
    servers, ledger, key
) -> None:
    first = servers()
    first.inject(Fault.status(402, code="insufficient_balance", message="Insufficient Balance"))
    second = servers()
    backup = OpenAICompatProvider(
        "backup", second.base_url, ["m1"], timeouts=FAST, acceptance=REFUSALS
    )
    gw = gateway(ledger, Route(deepseek(first), "deepseek-flash"), Route(backup, "m1"))
    reply = gw.decide(step_request())
    assert (reply.provider, reply.model) == ("backup", "m1")
    refused, accepted = ledger.attempts(gw.task_id)
    assert refused.model == "deepseek::deepseek-flash"
    assert refused.acceptance is Acceptance.NOT_ACCEPTED
    assert refused.error is not None and refused.error["httpStatus"] == 402
    assert accepted.model == "backup::m1" and accepted.acceptance is Acceptance.ACCEPTED
    accepted_attempts = [a for a in ledger.attempts(gw.task_id) if a.acceptance == "accepted"]
    assert len(accepted_attempts) == 1
    assert (first.submissions, second.submissions) == (1, 1)


# -- usage and cost ---------------------------------------------------------------------------


def cost(usage: Usage, row: dict[str, float]) -> float:
    return (
        usage.cache_hit_tokens * row["hit"]
        + usage.cache_miss_tokens * row["miss"]
        + usage.output_tokens * row["output"]
    ) / 1_000_000


@pytest.mark.parametrize(
    ("instant", "period"),
    [(PEAK_INSTANT, "peak"), (OFF_PEAK_INSTANT, "off-peak"), (SATURDAY, "off-peak")],
)
@pytest.mark.parametrize("model", ["deepseek-flash", "deepseek-v4-pro", "deepseek-v4-flash"])
def test_the_cost_of_each_call_is_priced_at_the_period_it_was_sent(
    servers, ledger, key, instant: datetime, period: str, model: str
) -> None:
    fake = servers(reasoning="a short thought")
    provider = deepseek(fake, clock=lambda: instant)
    gw = gateway(ledger, Route(provider, model))
    first = gw.decide(step_request(0))
    second = gw.decide(step_request(1))  # the same capsule: a prefix the fake's cache hits
    served = SERVED_BY.get(model, model)
    row = shipped_rows()[served][period]
    for reply, raw in zip((first, second), fake.requests, strict=True):
        usage = reply.usage
        assert usage.input_tokens == usage.cache_hit_tokens + usage.cache_miss_tokens > 0
        assert usage.reasoning_tokens > 0 and usage.output_tokens > usage.reasoning_tokens
        assert usage.cost_usd == pytest.approx(cost(usage, row), rel=1e-12)
        stamp = instant.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert usage.pricing == f"{served} {period} (prices of 2026-08-16), sent {stamp}"
        assert raw.body["model"] == model
    assert second.usage.cache_hit_tokens > 0 and first.usage.cache_hit_tokens == 0
    # By hand, for the first call of the flash model at peak: the shipped row's numbers.
    if (model, period) == ("deepseek-flash", "peak"):
        u = first.usage
        assert row == {"hit": 0.006, "miss": 0.30, "output": 1.20}
        assert u.cost_usd == pytest.approx(
            (u.cache_miss_tokens * 0.30 + u.output_tokens * 1.20) / 1e6
        )


def test_the_period_is_the_sending_instant_not_the_replys(servers, ledger, key) -> None:
    # Sent at 11:59:59 in Beijing (peak), read after noon (off-peak): priced at peak.
    instants = iter([datetime(2026, 12, 2, 3, 59, 59, tzinfo=UTC)])
    later = datetime(2026, 12, 2, 4, 0, 1, tzinfo=UTC)
    provider = deepseek(servers(), clock=lambda: next(instants, later))
    reply = gateway(ledger, Route(provider, "deepseek-flash")).decide(step_request())
    assert reply.usage.pricing.startswith("deepseek-flash peak ")
    assert reply.usage.pricing.endswith("sent 2026-12-02T03:59:59Z")
    row = shipped_rows()["deepseek-flash"]["peak"]
    assert reply.usage.cost_usd == pytest.approx(cost(reply.usage, row), rel=1e-12)


@pytest.mark.parametrize(
    ("instant", "period"),
    [
        (datetime(2026, 11, 30, 0, 59, 59, tzinfo=UTC), "off-peak"),  # Mon 08:59:59
        (datetime(2026, 11, 30, 1, 0, tzinfo=UTC), "peak"),  # Mon 09:00
        (datetime(2026, 11, 30, 3, 59, 59, tzinfo=UTC), "peak"),  # Mon 11:59:59
        (datetime(2026, 11, 30, 4, 0, tzinfo=UTC), "off-peak"),  # Mon 12:00
        (datetime(2026, 11, 30, 6, 0, tzinfo=UTC), "peak"),  # Mon 14:00
        (datetime(2026, 11, 30, 9, 59, 59, tzinfo=UTC), "peak"),  # Mon 17:59:59
        (datetime(2026, 11, 30, 10, 0, tzinfo=UTC), "off-peak"),  # Mon 18:00
        (datetime(2026, 12, 4, 9, 30, tzinfo=UTC), "peak"),  # Fri 17:30
        (datetime(2026, 12, 4, 17, 0, tzinfo=UTC), "off-peak"),  # Sat 01:00 (Fri in UTC)
        (datetime(2026, 12, 6, 17, 30, tzinfo=UTC), "off-peak"),  # Mon 01:30 (Sun in UTC)
        (datetime(2026, 12, 7, 1, 30), "peak"),  # naive: taken as UTC, Mon 09:30
    ],
)
def test_the_peak_windows_are_beijing_weekday_hours(instant: datetime, period: str) -> None:
    assert prices.shipped().peak.period_at(instant) == period


def test_every_model_has_its_prices_and_the_table_says_where_they_come_from() -> None:
    table = prices.shipped()
    assert table.effective == "2026-08-16"
    assert table.source == "https://api-docs.deepseek.com/quick_start/pricing"
    for model in MODELS:
        served = SERVED_BY.get(model, model)
        assert set(table.rows[served]) == {"peak", "off-peak"}
        peak, off = table.rows[served]["peak"], table.rows[served]["off-peak"]
        # off-peak is half of peak (peers.md §3)
        assert (off.hit * 2, off.miss * 2, off.output * 2) == pytest.approx(
            (peak.hit, peak.miss, peak.output)
        )
    assert set(table.rows) == set(MODELS) - set(SERVED_BY)


def test_a_price_row_of_the_settings_overrides_the_table_at_any_hour(servers, ledger, key) -> None:
    fake = servers()
    row = Prices(hit=1.0, miss=2.0, output=3.0)
    provider = DeepSeekProvider(timeouts=FAST, clock=lambda: PEAK_INSTANT).configure(
        ProviderSettings(
            name="deepseek",
            base_url=fake.base_url,
            api_key_env=API_KEY_ENV,
            prices={"deepseek-flash": row},
        )
    )
    for model in ("deepseek-flash", "deepseek-v4-flash"):  # an older name: its server's row
        reply = gateway(ledger, Route(provider, model)).decide(step_request())
        assert reply.usage.cost_usd == pytest.approx(row.cost(reply.usage), rel=1e-12)
        assert reply.usage.pricing.startswith("deepseek-flash (prices of providers.deepseek)")
    reply = gateway(ledger, Route(provider, "deepseek-v4-pro")).decide(step_request())
    assert reply.usage.pricing.startswith("deepseek-v4-pro peak (prices of 2026-08-16)")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "is not JSON"),
        ('{"format": "other"}', "is not a aira.deepseek-prices/1 document"),
        (None, "models.deepseek-flash.peak.miss must not be negative"),
    ],
)
def test_a_broken_price_table_is_a_stable_code(tmp_path: Path, text: str | None, problem: str):
    path = tmp_path / "prices.json"
    if text is None:
        document = json.loads(prices.PRICES_FILE.read_text(encoding="utf-8"))
        document["models"]["deepseek-flash"]["peak"]["miss"] = -1
        text = json.dumps(document)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AiraError) as err:
        prices.load(path)
    assert err.value.code == "PROVIDER_CONFIG_INVALID"
    assert err.value.diagnostic.message == f"the DeepSeek price table prices.json {problem}"


# -- configuration ----------------------------------------------------------------------------


SECRETISH = "zz-value-that-must-not-be-shown-42"


@pytest.mark.parametrize(
    ("settings", "path"),
    [
        ({"models": ("deepseek-flash", SECRETISH)}, "providers.deepseek.models[1]"),
        ({"prices": {SECRETISH: Prices(1, 1, 1)}}, "providers.deepseek.prices"),
        ({"options": {"thinking": SECRETISH}}, "providers.deepseek.options.thinking"),
        ({"options": {"thinking": 1}}, "providers.deepseek.options.thinking"),
        (
            {"options": {"reasoning_effort": SECRETISH}},
            "providers.deepseek.options.reasoning_effort",
        ),
        (
            {"options": {"thinking": False, "reasoning_effort": "high"}},
            "providers.deepseek.options.reasoning_effort",
        ),
        (
            {"options": {"strict_base_url": f"ftp://{SECRETISH}"}},
            "providers.deepseek.options.strict_base_url",
        ),
        ({"options": {"strict_base_url": 7}}, "providers.deepseek.options.strict_base_url"),
        ({"options": {"temperature": SECRETISH}}, "providers.deepseek.options.temperature"),
    ],
)
def test_configure_refuses_what_deepseek_has_not_naming_the_key(
    settings: dict[str, Any], path: str
) -> None:
    registered = DeepSeekProvider()
    with pytest.raises(AiraError) as err:
        registered.configure(ProviderSettings(name="deepseek", **settings))
    assert err.value.code == "PROVIDER_CONFIG_INVALID"
    message = err.value.diagnostic.message
    assert message.startswith(path + " ") or message.startswith(path + ".")
    assert SECRETISH not in message and SECRETISH not in err.value.diagnostic.model_dump_json()
    assert registered.thinking is True and registered.models == MODELS  # unchanged


def test_a_providers_toml_table_configures_the_plugin(
    register_plugin, aira_home: Path, servers, ledger, key
) -> None:
    fake = servers()
    (aira_home / PROVIDERS_FILE).write_text(
        "[providers.deepseek]\n"
        f'base_url = "{fake.base_url}"\n'
        'models = ["deepseek-v4-pro"]\n'
        f'api_key_env = "{API_KEY_ENV}"\n'
        "options = { thinking = false }\n"
        "\n[providers.ds-fast]\n"
        'kind = "deepseek"\n'
        f'base_url = "{fake.base_url}"\n'
        f'api_key_env = "{API_KEY_ENV}"\n'
        'options = { reasoning_effort = "low", strict_base_url = "http://127.0.0.1:9/b" }\n',
        encoding="utf-8",
    )
    registry = register_plugin(plugin, "deepseek")
    settings = load_settings(aira_home)
    pro, fast = resolve_routes(
        ["deepseek::deepseek-v4-pro", "ds-fast::deepseek-flash"], registry, settings
    )
    assert isinstance(pro.provider, DeepSeekProvider) and pro.provider.thinking is False
    assert pro.provider.models == ("deepseek-v4-pro",)
    assert fast.provider.name == "ds-fast" and fast.provider.reasoning_effort == "low"
    assert fast.provider.strict_base_url == "http://127.0.0.1:9/b"
    assert fast.provider.models == MODELS
    registered = registry.named("providers")["deepseek"]
    assert registered.thinking is True and registered.base_url == "https://api.deepseek.com"
    gateway(ledger, pro).decide(step_request())
    assert fake.requests[0].body["thinking"] == {"type": "disabled"}
    assert fake.requests[0].headers["authorization"] == "<withheld>"  # the key was sent
    with pytest.raises(AiraError) as err:
        (aira_home / PROVIDERS_FILE).write_text(
            '[providers.deepseek]\nmodels = ["deepseek-chat-9000"]\n', encoding="utf-8"
        )
        resolve_routes(["deepseek::deepseek-flash"], registry, load_settings(aira_home))
    assert err.value.code == "PROVIDER_CONFIG_INVALID"
    assert "deepseek-chat-9000" not in err.value.diagnostic.message


# -- strict mode ------------------------------------------------------------------------------


class StrictStandIn(ToolTransport):
    """A stand-in for the core's ``strict`` transport, for this test only: named ``strict``,
    its strict-function variant a tool transport that forces the call."""

    name = "strict"

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def render(self, request: Any) -> dict[str, Any]:
        raise AssertionError("DeepSeek has no json_schema format: the default is never used")

    def using(self, how: str) -> ToolTransport:
        self.asked.append(how)
        return ToolTransport(tool_choice="required")


@pytest.mark.parametrize(("thinking", "choice"), [(True, "auto"), (False, "required")])
def test_strict_rides_strict_functions_on_the_beta_base_url(
    servers, ledger, key, thinking: bool, choice: str
) -> None:
    fake = servers(refuse_forced_tool_choice=True)
    strict = StrictStandIn()
    provider = deepseek(fake, thinking=thinking)
    assert provider.strict_base_url == f"{fake.base_url}/beta"
    reply = gateway(ledger, Route(provider, "deepseek-flash"), transport=strict).decide(
        step_request()
    )
    assert json.loads(reply.text) == DECISIONS[0] and reply.call_id == "call_1"
    assert strict.asked == ["tools", "tools"]  # prepared and read with the same variant
    [request] = fake.requests
    assert request.path == "/v1/beta/chat/completions"
    [tool] = request.body["tools"]
    assert tool["function"]["strict"] is True
    assert request.body["tool_choice"] == choice
    # the other transports keep the base URL
    gateway(ledger, Route(provider, "deepseek-flash")).decide(step_request())
    assert fake.requests[-1].path == "/v1/chat/completions"


def test_strict_base_url_follows_the_base_url_unless_set(servers) -> None:
    fake = servers()
    moved = DeepSeekProvider().configure(ProviderSettings(name="deepseek", base_url=fake.base_url))
    assert moved.strict_base_url == f"{fake.base_url}/beta"
    pinned = DeepSeekProvider().configure(
        ProviderSettings(name="deepseek", options={"strict_base_url": "https://x.test/beta/"})
    )
    assert pinned.strict_base_url == "https://x.test/beta"
    assert pinned.base_url == "https://api.deepseek.com"
    repointed = pinned.configure(ProviderSettings(name="deepseek", base_url=fake.base_url))
    assert repointed.strict_base_url == f"{fake.base_url}/beta"
