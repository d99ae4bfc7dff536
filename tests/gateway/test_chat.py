"""Chat rendering and reading (aira_core.gateway.chat): the round log as spec 003 §6.6 renders
it, a completion's body read robustly, usage mapped from DeepSeek's and OpenAI's fields."""

from __future__ import annotations

import json
from typing import Any

import pytest

from aira_core.extensions import (
    Acceptance,
    BudgetsLeft,
    DecisionEntry,
    ProviderError,
    ResultEntry,
    StepRequest,
    Usage,
)
from aira_core.gateway.chat import (
    Prices,
    parse_completion,
    reasoning_of,
    render_messages,
    stop_reason_of,
    text_of,
    usage_of,
)

DECISION_1 = '{"act":"read","select":[["parameters"]]}'
DECISION_2 = '{"act":"lookup","query":"fillet"}'


def request(log: tuple[Any, ...] = ()) -> StepRequest:
    return StepRequest(
        task_id="task_1",
        step=len(log) // 2 + 1,
        call_id=f"aira_s{len(log) // 2 + 1}",
        tier="T8",
        capsule="CAPSULE TEXT",
        log=log,
        schema={"type": "object"},
        budgets=BudgetsLeft(steps=5, input_tokens=1000, output_tokens=1000, usd=1.0),
    )


ROUND = (
    DecisionEntry("call_a", DECISION_1, reasoning="I should read the parameters."),
    ResultEntry("call_a", '{"ok":true,"pages":[]}'),
    DecisionEntry("aira_s2", DECISION_2),  # no reasoning: none sent
    ResultEntry("aira_s2", '{"ok":true}'),
)


def test_the_tool_style_renders_the_round_as_user_assistant_tool() -> None:
    messages = render_messages(request(ROUND), style="tool", system="SYS")
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert messages[0] == {"role": "system", "content": "SYS"}
    assert messages[1] == {"role": "user", "content": "CAPSULE TEXT"}
    assert messages[2] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "aira_step", "arguments": DECISION_1},
            }
        ],
        "reasoning_content": "I should read the parameters.",
    }
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": '{"ok":true,"pages":[]}',
    }
    assert "reasoning_content" not in messages[4]  # empty reasoning is not sent
    assert messages[4]["tool_calls"][0]["id"] == messages[5]["tool_call_id"] == "aira_s2"
    json.dumps(messages)  # plain JSON


def test_the_reasoning_goes_back_under_the_providers_field_or_not_at_all() -> None:
    ollama = render_messages(request(ROUND), style="tool", system="S", reasoning_field="reasoning")
    assert ollama[2]["reasoning"] == "I should read the parameters."
    assert "reasoning_content" not in ollama[2]
    none = render_messages(request(ROUND), style="tool", system="S", reasoning_field=None)
    assert not {"reasoning", "reasoning_content"} & set(none[2])


def test_the_json_style_renders_decisions_as_text_and_results_as_user_messages() -> None:
    messages = render_messages(request(ROUND), style="json", system="SYS json")
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert messages[2] == {"role": "assistant", "content": DECISION_1}
    assert messages[3] == {"role": "user", "content": 'result of call_a:\n{"ok":true,"pages":[]}'}


def test_a_first_step_is_system_and_capsule_only() -> None:
    assert render_messages(request(), style="tool", system="S") == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "CAPSULE TEXT"},
    ]


def test_a_log_entry_of_another_type_is_a_bug() -> None:
    bad = request(("not an entry",))
    with pytest.raises(TypeError):
        render_messages(bad, style="tool", system="S")


# -- reading a completion ----------------------------------------------------------------------


def completion(message: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "message": message, **extra}]}


def test_parse_completion_takes_the_first_choice() -> None:
    body = completion({"role": "assistant", "content": "hi"}, finish_reason="stop")
    body["choices"].append({"message": {"content": "second"}})
    body["usage"] = {"prompt_tokens": 3}
    got = parse_completion(body)
    assert got.message["content"] == "hi"
    assert got.usage == {"prompt_tokens": 3}
    assert got.finish_reason == "stop"


def test_parse_completion_without_usage_or_finish_reason() -> None:
    got = parse_completion(completion({"content": "x"}, finish_reason=None))
    assert got.usage == {} and got.finish_reason is None


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"choices": []},
        {"choices": None},
        {"choices": "text"},
        {"choices": [None]},
        {"choices": [{"message": "text"}]},
        {"choices": [{"finish_reason": "stop"}]},
        {"error": {"code": "context_length_exceeded", "message": "too long"}},
    ],
    ids=[
        "empty",
        "no-choices",
        "null",
        "string",
        "null-choice",
        "message-text",
        "no-message",
        "error",
    ],
)
def test_a_body_without_a_message_is_a_parse_failure_of_an_accepted_call(body: Any) -> None:
    with pytest.raises(ProviderError) as info:
        parse_completion(body)
    err = info.value
    assert err.code == "PROVIDER_REPLY_INVALID"
    assert (err.stage, err.acceptance) == ("parse", Acceptance.ACCEPTED)
    if "error" in body:
        assert err.provider_code == "context_length_exceeded"
        assert "too long" not in err.diagnostic.message


def test_reasoning_is_read_under_either_name() -> None:
    assert reasoning_of({"reasoning_content": "a"}) == "a"
    assert reasoning_of({"reasoning": "b"}) == "b"
    assert reasoning_of({"reasoning_content": "", "reasoning": "c"}) == "c"
    assert reasoning_of({"reasoning_content": None}) == ""
    assert reasoning_of({}) == ""


def test_text_of_content_parts() -> None:
    assert text_of("x") == "x"
    assert text_of([{"type": "text", "text": "a"}, {"type": "image"}, {"text": "b"}]) == "ab"
    assert text_of(None) == "" and text_of(12) == ""


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", "stop"),
        ("tool_calls", "tool_calls"),
        ("function_call", "tool_calls"),
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("insufficient_system_resource", "other"),
        (None, "other"),
    ],
)
def test_stop_reasons(finish: str | None, stop: str) -> None:
    assert stop_reason_of(finish) == stop


# -- usage --------------------------------------------------------------------------------------


def test_deepseek_usage_with_its_cache_fields() -> None:
    raw = {
        "prompt_tokens": 1000,
        "completion_tokens": 300,
        "prompt_cache_hit_tokens": 800,
        "prompt_cache_miss_tokens": 200,
        "completion_tokens_details": {"reasoning_tokens": 250},
    }
    assert usage_of(raw) == Usage(1000, 300, 800, 200, 250, 0.0)


def test_openai_and_llama_cpp_usage_with_cached_tokens() -> None:
    raw = {
        "prompt_tokens": 1000,
        "completion_tokens": 40,
        "total_tokens": 1040,
        "prompt_tokens_details": {"cached_tokens": 600},
    }
    assert usage_of(raw) == Usage(1000, 40, 600, 400, 0, 0.0)


def test_usage_without_cache_fields_reports_no_split() -> None:
    assert usage_of({"prompt_tokens": 10, "completion_tokens": 2}) == Usage(10, 2)
    assert usage_of(None) == Usage() and usage_of({}) == Usage()


def test_bad_numbers_count_as_zero() -> None:
    raw = {
        "prompt_tokens": -5,
        "completion_tokens": "12",
        "prompt_cache_hit_tokens": True,
        "completion_tokens_details": {"reasoning_tokens": None},
    }
    assert usage_of(raw) == Usage()


def test_a_cache_split_without_prompt_tokens_gives_the_input() -> None:
    raw = {"prompt_cache_hit_tokens": 7, "prompt_cache_miss_tokens": 3}
    assert usage_of(raw).input_tokens == 10


def test_cost_from_prices_per_million() -> None:
    prices = Prices(hit=0.006, miss=0.30, output=1.20)
    raw = {
        "prompt_tokens": 1_000_000,
        "completion_tokens": 100_000,
        "prompt_cache_hit_tokens": 900_000,
        "prompt_cache_miss_tokens": 100_000,
    }
    assert usage_of(raw, prices).cost_usd == pytest.approx(0.0054 + 0.03 + 0.12)
    # no cache reported: all input at the miss price
    plain = usage_of({"prompt_tokens": 1_000_000, "completion_tokens": 0}, prices)
    assert plain.cost_usd == pytest.approx(0.30)
    assert usage_of(raw).cost_usd == 0.0
