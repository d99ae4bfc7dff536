"""The OpenAI-compatible provider (aira_core.gateway.openai_compat) end to end on
httpx2.MockTransport: prepare (local), send (the one HTTP call), reply (the decision through
the transport), a two-step round against a mock that enforces DeepSeek's rule that a
tool-calling turn's reasoning comes back, and the refusals of what it does not have."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx2
import pytest

from aira_core.diagnostics import AiraError, redact
from aira_core.extensions import (
    Acceptance,
    AcceptanceTable,
    BudgetsLeft,
    DecisionEntry,
    PreparedCall,
    Provider,
    ProviderError,
    ProviderResponse,
    ResultEntry,
    StepRequest,
    Usage,
)
from aira_core.gateway.chat import Prices
from aira_core.gateway.config import ProviderSettings
from aira_core.gateway.http import Timeouts
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import JsonTransport, ToolTransport

KEY = "sk-compat-test-0123456789abcdef"
SCHEMA = {"type": "object", "required": ["act"]}
READ = '{"act":"read","select":[["parameters"]]}'
DONE = '{"act":"done","summary":"finished"}'


def request(log: tuple[Any, ...] = (), step: int = 1) -> StepRequest:
    return StepRequest(
        task_id="task_1",
        step=step,
        call_id=f"aira_s{step}",
        tier="T8",
        capsule="THE CAPSULE",
        log=log,
        schema=SCHEMA,
        budgets=BudgetsLeft(steps=5, input_tokens=10_000, output_tokens=10_000, usd=1.0),
    )


def provider(client: Any = None, **kw: Any) -> OpenAICompatProvider:
    kw.setdefault("api_key", KEY)
    return OpenAICompatProvider(
        "compat", "http://provider.test/v1/", ["model-a", "model-b"], client=client, **kw
    )


def completion(message: dict[str, Any], finish: str = "tool_calls", **usage: Any) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "model": "model-a-0101",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        "usage": usage or {"prompt_tokens": 100, "completion_tokens": 20},
    }


def tool_call(arguments: str, id: str = "call_x") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": "aira_step", "arguments": arguments}}


def test_it_is_a_provider() -> None:
    p = provider()
    assert isinstance(p, Provider)
    assert (p.idempotency, p.jobs) == (False, False)
    assert p.models == ("model-a", "model-b")
    assert p.acceptance == AcceptanceTable(provider="compat")  # no documented refusals


def test_prepare_builds_the_request_locally() -> None:
    p = provider(extra_body={"thinking": {"type": "enabled"}, "max_tokens": 4096})
    call = p.prepare(request(), "model-a", ToolTransport(), idempotency_key="k1")
    assert call.url == "http://provider.test/v1/chat/completions"
    assert list(call.body)[:2] == ["model", "messages"]
    assert call.body["model"] == "model-a"
    assert call.body["messages"][1] == {"role": "user", "content": "THE CAPSULE"}
    assert call.body["tools"][0]["function"]["name"] == "aira_step"
    assert call.body["tools"][0]["function"]["parameters"] == SCHEMA
    assert call.body["tool_choice"] == "auto"
    assert call.body["thinking"] == {"type": "enabled"} and call.body["max_tokens"] == 4096
    assert call.headers["Authorization"] == f"Bearer {KEY}"
    assert call.idempotency_key == "k1"
    json.dumps(call.body)
    assert KEY not in json.dumps(call.body)  # the key rides in a header only


def test_extra_body_comes_last_and_may_override_the_transport() -> None:
    p = provider(extra_body={"tool_choice": "none"})
    assert p.prepare(request(), "model-a", ToolTransport()).body["tool_choice"] == "none"


def test_prepare_with_the_json_transport() -> None:
    call = provider().prepare(request(), "model-b", JsonTransport())
    assert call.body["response_format"] == {"type": "json_object"}
    assert "json" in call.body["messages"][0]["content"] and "tools" not in call.body


def test_a_plugin_transport_without_messages_gets_decisions_as_text() -> None:
    class Bare:
        name = "bare"

        def render(self, request: StepRequest) -> dict[str, Any]:
            return {"grammar": "root ::= object"}

        def parse(self, message: Any, request: StepRequest) -> tuple[str, str, tuple[str, ...]]:
            return str(message.get("content")), request.call_id, ()

    log = (DecisionEntry("aira_s1", READ, "why"), ResultEntry("aira_s1", "{}"))
    body = provider().prepare(request(log, 2), "model-a", Bare()).body
    assert body["grammar"] == "root ::= object"
    assert body["messages"][2] == {"role": "assistant", "content": READ}
    assert body["messages"][3]["content"].startswith("result of aira_s1:")


def test_no_key_no_authorization_header() -> None:
    call = provider(api_key=None).prepare(request(), "model-a", ToolTransport())
    assert "Authorization" not in call.headers


@pytest.mark.parametrize(
    ("kw", "model", "code"),
    [
        ({}, "model-z", "PROVIDER_REQUEST_INVALID"),
        ({"api_key": None, "api_key_required": True}, "model-a", "PROVIDER_KEY_MISSING"),
    ],
)
def test_a_prepare_failure_is_not_accepted(kw: dict[str, Any], model: str, code: str) -> None:
    with pytest.raises(ProviderError) as info:
        provider(**kw).prepare(request(), model, ToolTransport())
    err = info.value
    assert err.code == code
    assert (err.stage, err.acceptance, err.category) == (
        "prepare",
        Acceptance.NOT_ACCEPTED,
        "validation",
    )


def test_a_body_that_is_not_json_fails_at_prepare() -> None:
    with pytest.raises(ProviderError) as info:
        provider(extra_body={"temperature": float("nan")}).prepare(
            request(), "model-a", ToolTransport()
        )
    err = info.value
    assert err.code == "PROVIDER_REQUEST_INVALID"
    assert (err.stage, err.acceptance) == ("prepare", Acceptance.NOT_ACCEPTED)


def test_send_and_reply_give_the_decision() -> None:
    seen: list[httpx2.Request] = []

    def handler(r: httpx2.Request) -> httpx2.Response:
        seen.append(r)
        message = {
            "content": "",
            "reasoning_content": "Read first.",
            "tool_calls": [tool_call(READ)],
        }
        return httpx2.Response(
            200,
            json=completion(
                message,
                prompt_tokens=1000,
                completion_tokens=50,
                prompt_cache_hit_tokens=900,
                prompt_cache_miss_tokens=100,
                completion_tokens_details={"reasoning_tokens": 30},
            ),
        )

    prices = {"model-a": Prices(hit=0.1, miss=1.0, output=2.0)}
    with httpx2.Client(transport=httpx2.MockTransport(handler)) as client:
        p = provider(client, prices=prices)
        transport = ToolTransport()
        call = p.prepare(request(), "model-a", transport)
        response = p.send(call, deadline=time.monotonic() + 2)
        reply = p.reply(response, request(), "model-a", transport)
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(seen[0].content) == call.body
    assert (reply.text, reply.call_id, reply.reasoning) == (READ, "call_x", "Read first.")
    assert (reply.provider, reply.model, reply.stop_reason, reply.repairs) == (
        "compat",
        "model-a",
        "tool_calls",
        (),
    )
    cost = (900 * 0.1 + 100 * 1.0 + 50 * 2.0) / 1e6
    assert reply.usage == Usage(1000, 50, 900, 100, 30, pytest.approx(cost))


def test_reply_text_as_done_and_ollama_reasoning() -> None:
    body = completion({"content": "All done.", "reasoning": "It is complete."}, finish="stop")
    reply = provider().reply(ProviderResponse(200, body), request(), "model-b", ToolTransport())
    assert json.loads(reply.text) == {"act": "done", "summary": "All done."}
    assert (reply.call_id, reply.repairs, reply.reasoning) == (
        "aira_s1",
        ("text-as-done",),
        "It is complete.",
    )
    assert reply.stop_reason == "stop" and reply.usage.cost_usd == 0.0  # no price for model-b


def test_reply_without_choices_is_a_parse_failure() -> None:
    with pytest.raises(ProviderError) as info:
        provider().reply(
            ProviderResponse(200, {"object": "x"}), request(), "model-a", ToolTransport()
        )
    assert info.value.stage == "parse" and info.value.acceptance is Acceptance.ACCEPTED


def test_a_round_passes_each_tool_turns_reasoning_back() -> None:
    """The mock refuses like DeepSeek's thinking mode: an assistant turn that called a tool
    without its reasoning_content is HTTP 400."""
    table = AcceptanceTable("compat", {400: "Invalid Format (docs)"})
    answers = iter(
        [
            {
                "content": "",
                "reasoning_content": "Let me read.",
                "tool_calls": [tool_call(READ, "c1")],
            },
            {
                "content": "",
                "reasoning_content": "Now finish.",
                "tool_calls": [tool_call(DONE, "c2")],
            },
        ]
    )
    bodies: list[dict[str, Any]] = []

    def deepseek(r: httpx2.Request) -> httpx2.Response:
        body = json.loads(r.content)
        bodies.append(body)
        for i, m in enumerate(body["messages"]):
            if m["role"] == "assistant" and m.get("tool_calls") and not m.get("reasoning_content"):
                return httpx2.Response(
                    400,
                    json={
                        "error": {
                            "message": f"Missing reasoning_content at index {i}",
                            "code": "invalid_request_error",
                        }
                    },
                )
        return httpx2.Response(200, json=completion(next(answers)))

    transport = ToolTransport()
    log: tuple[Any, ...] = ()
    replies = []
    with httpx2.Client(transport=httpx2.MockTransport(deepseek)) as client:
        p = provider(client, acceptance=table)
        for step in (1, 2):
            req = request(log, step)
            response = p.send(p.prepare(req, "model-a", transport), deadline=time.monotonic() + 2)
            reply = p.reply(response, req, "model-a", transport)
            replies.append(reply)
            log = (
                *log,
                DecisionEntry(reply.call_id, reply.text, reply.reasoning),
                ResultEntry(reply.call_id, '{"ok":true}'),
            )
    assert [r.text for r in replies] == [READ, DONE]
    second = bodies[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[2]["reasoning_content"] == "Let me read."
    assert second[2]["tool_calls"][0]["id"] == second[3]["tool_call_id"] == "c1"
    # and a provider that dropped it would have been refused, before processing
    with httpx2.Client(transport=httpx2.MockTransport(deepseek)) as client:
        p = provider(client, acceptance=table, reasoning_field=None)
        with pytest.raises(ProviderError) as info:
            p.send(
                p.prepare(request(log[:2], 2), "model-a", transport), deadline=time.monotonic() + 2
            )
    assert info.value.acceptance is Acceptance.NOT_ACCEPTED and info.value.http_status == 400
    assert info.value.provider_code == "invalid_request_error"


def test_send_failures_carry_the_http_classification() -> None:
    def handler(r: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("slow", request=r)

    with httpx2.Client(transport=httpx2.MockTransport(handler)) as client:
        p = provider(client, timeouts=Timeouts(read=0.1))
        with pytest.raises(ProviderError) as info:
            p.send(p.prepare(request(), "model-a", ToolTransport()), deadline=time.monotonic() + 1)
    assert info.value.acceptance is Acceptance.UNKNOWN and info.value.stage == "submit"


@pytest.mark.parametrize("method", ["submit", "poll", "fetch", "cancel"])
def test_the_job_path_is_refused_without_sending(method: str) -> None:
    arg: Any = PreparedCall("u", {}) if method == "submit" else "remote_1"
    with pytest.raises(ProviderError) as info:
        getattr(provider(), method)(arg, deadline=time.monotonic() + 1)
    err = info.value
    assert err.code == "PROVIDER_UNSUPPORTED" and err.stage == method
    assert (err.category, err.acceptance) == ("unsupported", Acceptance.NOT_ACCEPTED)


@pytest.mark.parametrize(
    ("kw", "fragment"),
    [
        ({"base_url": "ftp://x"}, "http"),
        ({"base_url": "https://user:pass@x"}, "user information"),
        ({"base_url": "https://x/v1?key=1"}, "query"),
        ({"models": [""]}, "models"),
        ({"extra_body": {"messages": []}}, "messages"),
    ],
)
def test_bad_construction_is_a_config_error(kw: dict[str, Any], fragment: str) -> None:
    args: dict[str, Any] = {"base_url": "https://x", "models": ["m"], **kw}
    with pytest.raises(AiraError) as info:
        OpenAICompatProvider("p", args.pop("base_url"), args.pop("models"), **args)
    assert info.value.code == "PROVIDER_CONFIG_INVALID" and fragment in str(info.value)
    assert "pass" not in str(info.value)


def test_the_key_is_never_shown_and_is_registered_for_redaction() -> None:
    odd_key = "no-known-shape-key-4711"
    p = provider(api_key=odd_key)
    assert odd_key not in repr(p)
    assert redact(f"the key is {odd_key}.") == "the key is <redacted>."


def test_from_settings() -> None:
    settings = ProviderSettings(
        name="local",
        base_url="http://127.0.0.1:8080/v1",
        models=("tiny",),
        api_key=None,
        api_key_env="LOCAL_LLM_KEY",
        timeouts=Timeouts(connect=1.0),
        prices={"tiny": Prices(0, 0, 0)},
    )
    p = OpenAICompatProvider.from_settings(settings)
    assert (p.name, p.url, p.models, p.timeouts.connect) == (
        "local",
        "http://127.0.0.1:8080/v1/chat/completions",
        ("tiny",),
        1.0,
    )
    with pytest.raises(ProviderError) as info:  # the named variable gave no key
        p.prepare(request(), "tiny", ToolTransport())
    assert info.value.code == "PROVIDER_KEY_MISSING"
