"""The built-in decision transports (aira_core.gateway.transports): what each adds to a request,
and how each gets the decision out of a reply — with the repairs it made, and without
repairing a malformed decision into something else."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest

from aira_core.extensions import Acceptance, BudgetsLeft, ProviderError, StepRequest, Transport
from aira_core.gateway.http import encode_json
from aira_core.gateway.transports import (
    BUILTIN_TRANSPORTS,
    TEXT_AS_DONE_CHARS,
    JsonTransport,
    ToolTransport,
)

SCHEMA = MappingProxyType(
    {
        "type": "object",
        "required": ["act"],
        "properties": MappingProxyType({"act": {"enum": ("read", "done")}}),
    }
)
DECISION = '{"act":"read","select":[["parameters"]]}'


def request() -> StepRequest:
    return StepRequest(
        task_id="task_1",
        step=3,
        call_id="aira_s3",
        tier="T8",
        capsule="capsule",
        log=(),
        schema=SCHEMA,
        budgets=BudgetsLeft(steps=5, input_tokens=1000, output_tokens=1000, usd=1.0),
    )


def call(arguments: Any, id: Any = "call_1", name: str = "aira_step") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_builtin_transports_are_transports_by_name() -> None:
    assert set(BUILTIN_TRANSPORTS) == {"tool", "json"}
    for name, transport in BUILTIN_TRANSPORTS.items():
        assert isinstance(transport, Transport) and transport.name == name


# -- tool -----------------------------------------------------------------------------------


def test_tool_render_offers_aira_step_with_the_schema() -> None:
    fields = ToolTransport().render(request())
    assert fields["tool_choice"] == "auto"
    (tool,) = fields["tools"]
    assert tool["type"] == "function"
    assert tool["function"]["name"] == "aira_step"
    # The schema rides as it is (no copy per step); the request encoder writes a read-only
    # mapping as the object it is.
    assert json.loads(encode_json(fields))["tools"][0]["function"]["parameters"] == {
        "type": "object",
        "required": ["act"],
        "properties": {"act": {"enum": ["read", "done"]}},
    }


def test_tool_choice_is_configurable_to_required_only() -> None:
    assert ToolTransport(tool_choice="required").render(request())["tool_choice"] == "required"
    with pytest.raises(ValueError):
        ToolTransport(tool_choice={"type": "function"})  # type: ignore[arg-type]


def test_tool_parse_takes_the_calls_arguments_and_id() -> None:
    message = {"content": "", "tool_calls": [call(DECISION)]}
    assert ToolTransport().parse(message, request()) == (DECISION, "call_1", ())


def test_a_text_reply_without_a_call_is_done_with_the_text_as_summary() -> None:
    message = {"content": "  The bracket is finished; all checks pass.  "}
    text, call_id, repairs = ToolTransport().parse(message, request())
    assert json.loads(text) == {
        "act": "done",
        "summary": "The bracket is finished; all checks pass.",
    }
    assert call_id == "aira_s3" and repairs == ("text-as-done",)


def test_text_as_done_cuts_the_summary() -> None:
    text, _, _ = ToolTransport().parse({"content": "x" * 10_000}, request())
    assert len(json.loads(text)["summary"]) == TEXT_AS_DONE_CHARS
    text, _, _ = ToolTransport(summary_chars=5).parse({"content": "abcdefgh"}, request())
    assert json.loads(text)["summary"] == "abcde"


@pytest.mark.parametrize("content", [None, "", "   \n", []])
def test_no_call_and_no_text_is_a_reply_without_a_decision(content: Any) -> None:
    with pytest.raises(ProviderError) as info:
        ToolTransport().parse({"content": content, "tool_calls": []}, request())
    err = info.value
    assert err.code == "PROVIDER_REPLY_INVALID"
    assert (err.stage, err.acceptance, err.retryable) == ("parse", Acceptance.ACCEPTED, True)


def test_arguments_encoded_twice_are_unwrapped() -> None:
    message = {"tool_calls": [call(json.dumps(DECISION))]}
    assert ToolTransport().parse(message, request()) == (
        DECISION,
        "call_1",
        ("arguments-unwrapped",),
    )


def test_arguments_as_an_object_are_encoded() -> None:
    message = {"tool_calls": [call({"act": "done", "summary": "ok"})]}
    text, _, repairs = ToolTransport().parse(message, request())
    assert json.loads(text) == {"act": "done", "summary": "ok"} and repairs == (
        "arguments-encoded",
    )


@pytest.mark.parametrize(
    "arguments",
    ['{"act": "read", ', "not json at all", '"just a string"', "[1, 2]", '""', ""],
)
def test_malformed_arguments_pass_through_unrepaired(arguments: str) -> None:
    text, call_id, repairs = ToolTransport().parse({"tool_calls": [call(arguments)]}, request())
    assert (text, call_id, repairs) == (arguments, "call_1", ())


def test_missing_arguments_are_empty_text_for_the_host_to_reject() -> None:
    text, _, repairs = ToolTransport().parse({"tool_calls": [call(None)]}, request())
    assert text == "" and repairs == ()


def test_more_than_one_call_takes_the_first_aira_step() -> None:
    message = {
        "tool_calls": [
            call('{"x":1}', id="other", name="search"),
            call(DECISION, id="first"),
            call('{"act":"done","summary":"no"}', id="second"),
        ]
    }
    text, call_id, repairs = ToolTransport().parse(message, request())
    assert (text, call_id) == (DECISION, "first")
    assert repairs == ("extra-calls-dropped",)


def test_only_calls_of_other_tools_hold_no_decision() -> None:
    message = {"content": "text too", "tool_calls": [call("{}", name="make_box")]}
    with pytest.raises(ProviderError) as info:
        ToolTransport().parse(message, request())
    assert info.value.code == "PROVIDER_REPLY_INVALID" and "make_box" in str(info.value)


def test_a_call_without_an_id_gets_the_hosts() -> None:
    for missing in (None, "", 7):
        _text, call_id, repairs = ToolTransport().parse(
            {"tool_calls": [call(DECISION, id=missing)]}, request()
        )
        assert (call_id, repairs) == ("aira_s3", ("call-id-assigned",))


def test_junk_in_tool_calls_is_ignored() -> None:
    message = {"content": "done here", "tool_calls": ["junk", None, {"function": "x"}]}
    with pytest.raises(ProviderError):  # mappings without an aira_step name: other tools
        ToolTransport().parse(message, request())
    _text, _, repairs = ToolTransport().parse({"content": "fine", "tool_calls": "junk"}, request())
    assert repairs == ("text-as-done",)


def test_tool_messages_use_the_tool_style_and_system() -> None:
    messages = ToolTransport().messages(request(), reasoning_field="reasoning")
    assert messages[0]["role"] == "system" and "aira_step" in messages[0]["content"]


# -- json ----------------------------------------------------------------------------------


def test_json_render_asks_for_a_json_object_and_carries_the_schema_in_the_system_message() -> None:
    transport = JsonTransport()
    assert transport.render(request()) == {"response_format": {"type": "json_object"}}
    system = transport.messages(request())[0]["content"]
    assert "json" in system  # DeepSeek's JSON mode requires the word
    schema_text = system[system.index("{") :]
    assert json.loads(schema_text)["properties"]["act"]["enum"] == ["read", "done"]


def test_json_parse_takes_the_content() -> None:
    assert JsonTransport().parse({"content": f"  {DECISION}\n"}, request()) == (
        DECISION,
        "aira_s3",
        (),
    )


@pytest.mark.parametrize(
    "content",
    [f"```json\n{DECISION}\n```", f"```\n{DECISION}\n```", f"```JSON\r\n{DECISION}```"],
)
def test_a_fenced_reply_is_unfenced(content: str) -> None:
    assert JsonTransport().parse({"content": content}, request()) == (
        DECISION,
        "aira_s3",
        ("fence-stripped",),
    )


@pytest.mark.parametrize("content", [None, "", " " * 40, "\n\t"])
def test_blank_content_is_a_reply_without_a_decision(content: Any) -> None:
    """DeepSeek's JSON mode replaces what it cannot make JSON with spaces."""
    with pytest.raises(ProviderError) as info:
        JsonTransport().parse({"content": content}, request())
    assert info.value.code == "PROVIDER_REPLY_INVALID" and info.value.stage == "parse"


def test_json_parse_passes_non_json_text_through() -> None:
    assert JsonTransport().parse({"content": "I think we are done."}, request())[0] == (
        "I think we are done."
    )
