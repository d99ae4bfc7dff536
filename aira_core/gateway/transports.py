"""The built-in decision transports: how a step's decision rides a chat-completions request
and how it comes back (spec 003 §4.4). The decision JSON is the one contract; the transport
is a parameter of the provider adapter.

- ``tool``: the decision is the arguments of one call of the ``aira_step`` tool, whose
  parameters are the step's decision schema. DeepSeek's thinking mode accepts only
  ``tool_choice`` ``auto`` or ``none``, so a model may answer in plain text: such a reply is
  the decision ``done{summary: text}`` (repair ``text-as-done``), as a final text ended a
  task before.
- ``json``: the decision is the reply's text, asked for with ``response_format
  json_object``; the schema rides in the system message (which must say "JSON" for
  DeepSeek's JSON mode).

A repair only undoes how the channel wrapped a decision (a fence, arguments encoded
twice); a malformed decision is passed on as it came, for the host's grammar to reject with
its own code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from aira_core.canonical import canonical_bytes
from aira_core.extensions import ProviderError, StepRequest, Transport
from aira_core.gateway.chat import (
    REASONING_FIELD,
    TOOL_NAME,
    render_messages,
    reply_invalid,
    text_of,
)

TEXT_AS_DONE_CHARS = 2000
"""The most of a plain-text reply kept as the summary of its ``done`` decision."""

TOOL_SYSTEM = (
    "You make the decisions of an Aira CAD task, one step at a time. The first user message "
    "is the task and the model's state; each tool message is the host's result of your "
    f"previous decision. Answer every step with exactly one call of the {TOOL_NAME} tool: "
    "its arguments are one decision, as the tool's schema describes."
)
TEXT_SYSTEM = (
    "You make the decisions of an Aira CAD task, one step at a time. The first user message "
    "is the task and the model's state; each later user message is the host's result of "
    "your previous decision. Answer every step with exactly one decision: one JSON object."
)
"""For a transport that renders no messages of its own (see OpenAICompatProvider)."""
JSON_SYSTEM = (
    "You make the decisions of an Aira CAD task, one step at a time. The first user message "
    "is the task and the model's state; each later user message is the host's result of "
    "your previous decision. Answer every step in json: exactly one JSON object and nothing "
    "else, one decision, valid against this JSON schema:\n"
)
"""DeepSeek's JSON mode requires the word "json" in the prompt."""

_FENCE = re.compile(r"\A```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)\r?\n?```\Z", re.DOTALL)


def plain(value: Any) -> Any:
    """``value`` as plain JSON data (dicts and lists): a schema may be a read-only mapping,
    which the JSON encoder refuses."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _no_decision(message: str) -> ProviderError:
    # a model that answered blank may answer the same request next time
    return reply_invalid(message, retryable=True)


class ToolTransport:
    """The decision as the arguments of one ``aira_step`` tool call. ``tool_choice``:
    ``auto`` (default; all DeepSeek's thinking mode takes) or ``required``."""

    name = "tool"
    style = "tool"

    def __init__(
        self,
        *,
        tool_choice: str = "auto",
        summary_chars: int = TEXT_AS_DONE_CHARS,
        description: str = "Make this step's decision: exactly one act of the grammar.",
    ) -> None:
        if tool_choice not in ("auto", "required"):
            raise ValueError(f"tool_choice must be 'auto' or 'required', not {tool_choice!r}")
        self.tool_choice = tool_choice
        self.summary_chars = summary_chars
        self.description = description

    def system(self, request: StepRequest) -> str:
        return TOOL_SYSTEM

    def messages(
        self, request: StepRequest, *, reasoning_field: str | None = REASONING_FIELD
    ) -> list[dict[str, Any]]:
        return render_messages(
            request, style="tool", system=self.system(request), reasoning_field=reasoning_field
        )

    def render(self, request: StepRequest) -> dict[str, Any]:
        tool = {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": self.description,
                # as it is: the request encoder writes a read-only mapping as an object
                "parameters": request.schema,
            },
        }
        return {"tools": [tool], "tool_choice": self.tool_choice}

    def parse(
        self, message: Mapping[str, Any], request: StepRequest
    ) -> tuple[str, str, tuple[str, ...]]:
        raw = message.get("tool_calls")
        calls = [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list | tuple) else []
        ours = [c for c in calls if _function(c).get("name") == TOOL_NAME]
        if not ours:
            if calls:
                names = sorted({str(_function(c).get("name"))[:40] for c in calls})
                raise _no_decision(
                    f"the reply calls {', '.join(names)}, not {TOOL_NAME}; it holds no decision"
                )
            text = text_of(message.get("content")).strip()
            if not text:
                raise _no_decision(
                    f"the reply has neither a {TOOL_NAME} call nor text; it holds no decision"
                )
            done = {"act": "done", "summary": text[: self.summary_chars]}
            return json.dumps(done, ensure_ascii=False), request.call_id, ("text-as-done",)
        repairs: list[str] = []
        if len(calls) > 1:
            repairs.append("extra-calls-dropped")
        call = ours[0]
        text, how = _arguments(_function(call).get("arguments"))
        if how:
            repairs.append(how)
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id.strip():
            call_id = request.call_id
            repairs.append("call-id-assigned")
        return text, call_id, tuple(repairs)


def _function(call: Mapping[str, Any]) -> Mapping[str, Any]:
    fn = call.get("function")
    return fn if isinstance(fn, Mapping) else {}


def _arguments(args: Any) -> tuple[str, str | None]:
    """The decision text of a tool call's ``arguments`` and the repair that got it, if any.
    Arguments that are not JSON pass through unchanged (the host rejects them)."""
    if isinstance(args, Mapping):  # some servers (Ollama) send an object, not its JSON
        return json.dumps(plain(args), ensure_ascii=False), "arguments-encoded"
    if not isinstance(args, str):
        return ("" if args is None else json.dumps(plain(args), ensure_ascii=False)), None
    try:
        outer = json.loads(args)
    except (ValueError, RecursionError):
        return args, None
    if isinstance(outer, str):  # the object's JSON, encoded once more as a JSON string
        try:
            inner = json.loads(outer)
        except (ValueError, RecursionError):
            return args, None
        if isinstance(inner, dict):
            return outer, "arguments-unwrapped"
    return args, None


class JsonTransport:
    """The decision as the reply's text, a JSON object (``response_format json_object``),
    the schema carried in the system message."""

    name = "json"
    style = "json"

    def system(self, request: StepRequest) -> str:
        return JSON_SYSTEM + canonical_bytes(plain(request.schema)).decode("utf-8")

    def messages(
        self, request: StepRequest, *, reasoning_field: str | None = REASONING_FIELD
    ) -> list[dict[str, Any]]:
        return render_messages(
            request, style="json", system=self.system(request), reasoning_field=reasoning_field
        )

    def render(self, request: StepRequest) -> dict[str, Any]:
        return {"response_format": {"type": "json_object"}}

    def parse(
        self, message: Mapping[str, Any], request: StepRequest
    ) -> tuple[str, str, tuple[str, ...]]:
        # DeepSeek's JSON mode may answer all spaces (what it could not make JSON): blank.
        text = text_of(message.get("content")).strip()
        if not text:
            raise _no_decision("the reply's content is blank; it holds no decision")
        fenced = _FENCE.match(text)
        if fenced:
            return fenced.group(1).strip(), request.call_id, ("fence-stripped",)
        return text, request.call_id, ()


BUILTIN_TRANSPORTS: dict[str, Transport] = {"tool": ToolTransport(), "json": JsonTransport()}
"""The transports the core ships, by name (a plugin may register more)."""
