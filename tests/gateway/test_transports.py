"""The built-in decision transports (aira_core.gateway.transports): what each adds to a request,
and how each gets the decision out of a reply — with the repairs it made, and without
repairing a malformed decision into something else; and the schema the strict transport
sends, which a constrained decoder accepts and which refuses no decision the host takes."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import jsonschema
import pytest

import aira_core.step
from aira_core.extensions import (
    Acceptance,
    BudgetsLeft,
    DecisionEntry,
    ProviderError,
    ResultEntry,
    StepRequest,
    Transport,
)
from aira_core.gateway.http import encode_json
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import (
    BUILTIN_TRANSPORTS,
    JSON_SYSTEM,
    TEXT_AS_DONE_CHARS,
    JsonTransport,
    StrictTransport,
    ToolTransport,
    strict_pattern,
    strict_schema,
)
from aira_core.step.decision import (
    STEP_DECISION_NOT_JSON,
    DecisionRejected,
    decision_schema,
    parse_decision,
)
from aira_core.testing.provider import Fault

from .conftest import DECISIONS, FAST, step_request

SCHEMA = MappingProxyType(
    {
        "type": "object",
        "required": ["act"],
        "properties": MappingProxyType({"act": {"enum": ("read", "done")}}),
    }
)
DECISION = '{"act":"read","select":[["parameters"]]}'


def request(log: tuple[Any, ...] = (), schema: Any = SCHEMA, step: int = 3) -> StepRequest:
    return StepRequest(
        task_id="task_1",
        step=step,
        call_id=f"aira_s{step}",
        tier="T8",
        capsule="capsule",
        log=log,
        schema=schema,
        budgets=BudgetsLeft(steps=5, input_tokens=1000, output_tokens=1000, usd=1.0),
    )


def call(arguments: Any, id: Any = "call_1", name: str = "aira_step") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_builtin_transports_are_transports_by_name() -> None:
    assert set(BUILTIN_TRANSPORTS) == {"tool", "json", "strict"}
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


def test_json_render_asks_for_a_json_object_and_carries_the_schema_in_the_system() -> None:
    transport = JsonTransport()
    assert transport.render(request()) == {"response_format": {"type": "json_object"}}
    messages = transport.messages(request())
    system = messages[0]
    assert system["role"] == "system" and system["content"].startswith(JSON_SYSTEM)
    assert "json" in JSON_SYSTEM  # DeepSeek's JSON mode requires the word
    schema = json.loads(system["content"][len(JSON_SYSTEM) :])
    assert schema["properties"]["act"]["enum"] == ["read", "done"]
    assert [m["content"] for m in messages[1:]] == ["capsule"]


def test_json_prompts_of_one_round_keep_a_byte_identical_prefix() -> None:
    """Spec 003 §6.6: within a round, each prompt is the previous one plus appended
    messages (the host keeps the round's schema: aira_core.step.loop)."""
    schema = decision_schema({"bodies": ["b:plate"], "nodes": [], "parameters": ["p:w"]})
    decision = '{"act":"plan","summary":"a hole","plan":{"steps":[]}}'
    log = (DecisionEntry("aira_s1", '{"act":"read"}', ""), ResultEntry("aira_s1", "{}"))
    first = request(log, schema, step=2)
    second = request(
        (*log, DecisionEntry("aira_s2", decision, ""), ResultEntry("aira_s2", '{"ok":1}')),
        schema,
        step=3,
    )
    transport = JsonTransport()
    one = encode_json(transport.messages(first))
    two = encode_json(transport.messages(second))
    assert two.startswith(one[:-1])  # all of the first prompt but its closing bracket


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


def test_json_parse_takes_text_without_a_brace_as_done() -> None:
    for transport in (JsonTransport(), StrictTransport(), ToolTransport()):
        text, call_id, repairs = transport.parse({"content": "I think we are done."}, request())
        assert json.loads(text) == {"act": "done", "summary": "I think we are done."}
        assert (call_id, repairs) == ("aira_s3", ("text-as-done",))


@pytest.mark.parametrize("transport", [JsonTransport(), StrictTransport(), ToolTransport()])
def test_one_object_in_prose_is_extracted(transport: Transport) -> None:
    content = f"Here is my decision: {DECISION}\nI hope it helps."
    assert transport.parse({"content": content}, request()) == (
        DECISION,
        "aira_s3",
        ("json-extracted",),
    )
    broken = f"Here is my decision: {DECISION[:-1]}"
    assert transport.parse({"content": broken}, request()) == (
        DECISION,
        "aira_s3",
        ("json-extracted", "brackets-restored"),
    )


@pytest.mark.parametrize(
    "content",
    [
        "I used {braces} in my answer",
        '{"act": "read"} and {"act": "done", "summary": "x"}',  # two objects: which one?
        '{"act": "note", "note": "cut in a str',
    ],
)
def test_text_with_a_brace_and_no_one_object_passes_through(content: str) -> None:
    for transport in (JsonTransport(), StrictTransport()):
        assert transport.parse({"content": content}, request()) == (content, "aira_s3", ())


def test_json_transport_reads_no_tool_calls() -> None:
    message = {"content": DECISION, "tool_calls": [call('{"act":"done","summary":"x"}')]}
    assert JsonTransport().parse(message, request()) == (DECISION, "aira_s3", ())


def test_a_fenced_block_with_a_dropped_brace_is_unfenced_and_repaired() -> None:
    content = f"```json\n{DECISION[:-1]}\n```"
    assert JsonTransport().parse({"content": content}, request()) == (
        DECISION,
        "aira_s3",
        ("fence-stripped", "brackets-restored"),
    )


# -- the bracket repair in every transport -------------------------------------------------

STEP = {"id": "hole", "capability": "cap:exact.hole@1", "args": {"at": {"x": [0, {"y": 5}]}}}
PLAN = {"act": "plan", "summary": "s", "plan": {"steps": [STEP]}, "note": "deep"}
PLAN_TEXT = json.dumps(PLAN)
NO_SQUARE = PLAN_TEXT.replace('5}]}}}]}, "note"', '5}]}}}}, "note"')  # the steps' ] dropped


def test_the_plan_is_eight_levels_deep_and_the_broken_one_is_not_json() -> None:
    assert PLAN_TEXT.endswith('{"y": 5}]}}}]}, "note": "deep"}') and NO_SQUARE != PLAN_TEXT
    with pytest.raises(ValueError):
        json.loads(NO_SQUARE)


@pytest.mark.parametrize(
    ("arguments", "repairs"),
    [
        (NO_SQUARE, ("brackets-restored",)),
        (PLAN_TEXT[:-1], ("brackets-restored",)),  # the final } missing
        (PLAN_TEXT[: PLAN_TEXT.index(', "note"')], ("brackets-restored",)),  # cut off
        (json.dumps(NO_SQUARE), ("arguments-unwrapped", "brackets-restored")),
    ],
)
@pytest.mark.parametrize("transport", [ToolTransport(), StrictTransport().using("tools")])
def test_malformed_tool_arguments_are_repaired(
    transport: Transport, arguments: str, repairs: tuple[str, ...]
) -> None:
    text, call_id, got = transport.parse({"tool_calls": [call(arguments)]}, request())
    expected = dict(PLAN) if "note" in arguments else {k: PLAN[k] for k in PLAN if k != "note"}
    assert (json.loads(text), call_id, got) == (expected, "call_1", repairs)
    assert parse_decision(text).act == "plan"


@pytest.mark.parametrize("transport", [JsonTransport(), StrictTransport()])
def test_a_text_decision_with_a_dropped_bracket_is_repaired(transport: Transport) -> None:
    text, _, repairs = transport.parse({"content": NO_SQUARE}, request())
    assert json.loads(text) == PLAN and repairs == ("brackets-restored",)


def test_what_the_repair_cannot_fix_is_the_hosts_rejection_with_the_bracket_account() -> None:
    broken = PLAN_TEXT.replace('{"y": 5}]', '{"y": 5}, "z": 1')  # a ] dropped before a key
    for transport in (ToolTransport(), JsonTransport(), StrictTransport()):
        message = (
            {"tool_calls": [call(broken)]} if transport.name == "tool" else {"content": broken}
        )
        text, _, repairs = transport.parse(message, request())
        assert (text, repairs) == (broken, ())
        with pytest.raises(DecisionRejected) as info:
            parse_decision(text)
        assert info.value.code == STEP_DECISION_NOT_JSON
        assert 'open at the error: { { [ { { { [ — 7 unclosed; expected "]"' in str(info.value)


# -- strict ----------------------------------------------------------------------------------

DEMO_SCHEMA = decision_schema({"bodies": ["b:plate"], "nodes": ["n:top"], "parameters": ["p:w"]})


def test_strict_renders_a_strict_json_schema_response_format() -> None:
    strict = BUILTIN_TRANSPORTS["strict"]
    assert isinstance(strict, StrictTransport) and strict.via == "json_schema"
    fields = strict.render(request(schema=DEMO_SCHEMA))
    assert fields == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "aira_step",
                "schema": strict_schema(DEMO_SCHEMA),
                "strict": True,
            },
        }
    }
    json.loads(encode_json(fields))  # sendable


def test_strict_json_schema_renders_the_log_as_text_with_a_stable_system_message() -> None:
    log = (DecisionEntry("aira_s1", '{"act":"read"}', "why"), ResultEntry("aira_s1", "{}"))
    messages = StrictTransport().messages(request(log, DEMO_SCHEMA))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2] == {"role": "assistant", "content": '{"act":"read"}'}
    assert "json" in messages[0]["content"]
    assert messages[0] == StrictTransport().messages(request(schema=SCHEMA))[0]
    assert all("$defs" not in m["content"] for m in messages)  # the schema rides the body


def test_strict_using_tools_renders_one_strict_function_and_the_tool_log() -> None:
    strict = StrictTransport()
    tools = strict.using("tools")
    assert isinstance(tools, StrictTransport) and tools is not strict
    assert (tools.name, tools.via, strict.via) == ("strict", "tools", "json_schema")
    assert tools.using("json_schema").via == "json_schema"
    fields = tools.render(request(schema=DEMO_SCHEMA))
    (tool,) = fields["tools"]
    assert tool["function"]["name"] == "aira_step" and tool["function"]["strict"] is True
    assert tool["function"]["parameters"] == strict_schema(DEMO_SCHEMA)
    assert "response_format" not in fields and "tool_choice" not in fields  # auto
    log = (DecisionEntry("aira_s1", '{"act":"read"}', "why"), ResultEntry("aira_s1", "{}"))
    messages = tools.messages(request(log), reasoning_field="reasoning_content")
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == '{"act":"read"}'
    assert messages[2]["reasoning_content"] == "why" and messages[3]["role"] == "tool"
    with pytest.raises(ValueError):
        StrictTransport("grammar")


@pytest.mark.parametrize("transport", [StrictTransport(), StrictTransport("tools")])
def test_strict_parse_takes_either_shape(transport: StrictTransport) -> None:
    assert transport.parse({"tool_calls": [call(DECISION)]}, request()) == (
        DECISION,
        "call_1",
        (),
    )
    assert transport.parse({"content": f" {DECISION} "}, request()) == (DECISION, "aira_s3", ())
    with pytest.raises(ProviderError):
        transport.parse({"content": "  "}, request())


def test_strict_pattern_anchors_and_translates() -> None:
    char = strict_pattern("^.$")
    assert strict_pattern("^b:") == f"^b:{char[1:-1]}*$"
    assert strict_pattern(r"^cap:[a-z]+@(0|[1-9]\d*)$") == r"^cap:[a-z]+@(0|[1-9][0-9]*)$"
    assert strict_pattern("^[A-Za-z][A-Za-z0-9_-]{0,47}$") == "^[A-Za-z][A-Za-z0-9_-]{0,47}$"
    for untranslatable in (r"^\w+$", "^(?=a)b$", "^a$|^b$", r"^\s$"):
        assert strict_pattern(untranslatable) is None  # dropped: looser, the host checks


def patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            elif key not in ("enum", "const", "default", "examples"):
                yield from patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from patterns(item)


def test_strict_schema_holds_only_patterns_a_constrained_decoder_translates() -> None:
    """llama.cpp's converter takes a pattern anchored at both ends, without \\d-style
    classes, anchors inside or look-arounds (else: "accepting any string")."""
    original = list(patterns(DEMO_SCHEMA))
    assert any(not p.endswith("$") for p in original)  # the host's alias prefixes: ^b:
    assert any("\\d" in p for p in original)
    rewritten = strict_schema(DEMO_SCHEMA)
    for pattern in patterns(rewritten):
        assert pattern.startswith("^") and pattern.endswith("$"), pattern
        inner = pattern[1:-1].replace("\\\\", "")
        assert not re.search(r"\\[dDwWsSbB]|\(\?[^:]|(?<!\\)[$^](?![^\[]*\])", inner), pattern
        re.compile(pattern)
    assert "discriminator" not in json.dumps(rewritten)
    assert len(list(patterns(rewritten))) == len(original)  # none of the host's dropped


def test_strict_schema_drops_the_empty_enum_of_a_kind_a_new_document_has_none_of() -> None:
    """llama.cpp refuses the request: "JSON schema error at #/$defs/ParameterAlias: enum must
    be a non-empty array"; any string is looser, and the host checks the alias."""
    empty = decision_schema({"bodies": [], "nodes": [], "parameters": []})
    assert empty["$defs"]["ParameterAlias"]["enum"] == []
    rewritten = strict_schema(empty)
    assert "enum" not in rewritten["$defs"]["ParameterAlias"]
    assert rewritten["$defs"]["ParameterAlias"]["type"] == "string"
    assert '"enum": []' not in json.dumps(rewritten) and '"enum":[]' not in json.dumps(rewritten)


def test_strict_schema_is_pure_and_deterministic() -> None:
    one, two = strict_schema(DEMO_SCHEMA), strict_schema(MappingProxyType(dict(DEMO_SCHEMA)))
    assert one == two and one is not two
    one["$defs"].clear()  # a caller's copy: the cache is not changed
    assert strict_schema(DEMO_SCHEMA) == two
    assert strict_schema(SCHEMA) == {
        "type": "object",
        "required": ["act"],
        "properties": {"act": {"enum": ["read", "done"]}},
    }


def _raw_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """``pattern`` as a constrained decoder applies it: to the string's JSON text."""
    if isinstance(instance, str):
        text = json.dumps(instance, ensure_ascii=False)[1:-1]
        if not re.search(pattern, text):
            yield jsonschema.ValidationError(f"{text!r} does not match {pattern!r}")


DecoderValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, {"pattern": _raw_pattern}
)
SCRIPTS = sorted((Path(aira_core.step.__file__).parent / "scripts").glob("*.json"))


def demo_decisions() -> list[dict[str, Any]]:
    found = [d for path in SCRIPTS for d in json.loads(path.read_text())["decisions"]]
    assert len(found) > 20
    return found


def aliases_in(value: Any) -> dict[str, set[str]]:
    kinds = {"b": "bodies", "n": "nodes", "p": "parameters"}
    out: dict[str, set[str]] = {kind: set() for kind in kinds.values()}
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and re.match(r"^[bnp]:", item):
            out[kinds[item[0]]].add(item)
    return out


EXTRA = [
    {"act": "inspect", "query": "text", "args": {"label": 'He said "hi"\n\tand \\ left'}},
    {"act": "inspect", "query": "q", "args": {"target": 'a:any thing\n"quoted"'}},
    {"act": "done", "summary": "ünïcödé ✓ and \u0001 control"},
    {"act": "lookup", "capability": "cap:exact.box@10"},
    {"act": "repair", "capability": "cap:fillet.reduceRadius@1", "diagnostic": {"code": "X_Y"}},
    {
        "act": "batch",
        "acts": [
            {
                "act": "repair",
                "capability": "cap:fillet.reduceRadius@1",
                "diagnostic": {"code": "FILLET_RADIUS_TOO_LARGE", "step": "round"},
            }
        ],
    },
]


@pytest.mark.parametrize("enums", [False, True])
def test_every_decision_the_host_takes_is_valid_under_the_strict_schema(enums: bool) -> None:
    decisions = demo_decisions() + EXTRA
    aliases: dict[str, Any] = {}
    if enums:
        found: dict[str, set[str]] = aliases_in(decisions)
        aliases = {kind: sorted(values) for kind, values in found.items()}
    schema = decision_schema(aliases)
    original = jsonschema.Draft202012Validator(schema)
    decoder = DecoderValidator(strict_schema(schema))
    standard = jsonschema.Draft202012Validator(strict_schema(schema))
    checked = 0
    for decision in decisions:
        try:
            parse_decision(json.dumps(decision), aliases or None)
        except DecisionRejected:
            continue
        original.validate(decision)  # the schema the tool transport sends takes it …
        decoder.validate(decision)  # … and so does the strict one, as the decoder reads it
        if not re.search(r'["\\\x00-\x1f]', json.dumps(decision)[1:-1].replace('\\"', "")):
            standard.validate(decision)  # (without quotes and escapes, read either way)
        checked += 1
    assert checked == len(decisions)


# -- end to end, against the loopback fake provider ------------------------------------------


@pytest.mark.parametrize(
    ("transport", "mode"),
    [
        (ToolTransport(), "tool"),
        (JsonTransport(), "json"),
        (StrictTransport(), "json"),
        (StrictTransport("tools"), "tool"),
    ],
)
def test_each_transport_end_to_end_against_the_fake(
    servers: Any, transport: Transport, mode: str
) -> None:
    fake = servers(mode=mode)
    fake.inject(Fault.malformed_arguments(), Fault.text_instead_of_tool("All done."))
    provider = OpenAICompatProvider("fake", fake.base_url, ["m"], timeouts=FAST)
    replies = []
    for step in range(3):
        req = step_request(step)
        call = provider.prepare(req, "m", transport)
        answer = provider.send(call, deadline=time.monotonic() + 5)
        replies.append(provider.reply(answer, req, "m", transport))
    broken, text, plain_reply = replies
    assert (json.loads(broken.text), broken.repairs) == (DECISIONS[0], ("brackets-restored",))
    assert json.loads(text.text) == {"act": "done", "summary": "All done."}
    assert text.repairs == ("text-as-done",)
    assert (json.loads(plain_reply.text), plain_reply.repairs) == (DECISIONS[2], ())
    assert fake.submissions == 3
