"""The built-in decision transports: how a step's decision rides a chat-completions request
and how it comes back (spec 003 §4.4). The decision JSON is the one contract; the transport
is a parameter of the provider adapter.

- ``tool``: the decision is the arguments of one call of the ``aira_step`` tool, whose
  parameters are the step's decision schema. DeepSeek's thinking mode accepts only
  ``tool_choice`` ``auto`` or ``none``, so a model may answer in text instead (below).
- ``json``: the decision is the reply's text, asked for with ``response_format
  json_object``. The system message is the same at every step (it says "json", as
  DeepSeek's JSON mode requires); the step's schema is the request's last message, after
  the round log, so that a round's prompts keep a byte-identical prefix when the schema
  changes (after a commit the aliases do): spec 003 §6.6.
- ``strict``: schema-constrained output. ``json_schema`` (default): ``response_format
  json_schema`` with ``strict``, which a server such as llama.cpp's turns into a grammar;
  ``tools``: the ``aira_step`` function with ``"strict": true`` (DeepSeek's strict mode on
  its ``/beta`` base URL; a provider plugin chooses it with ``strict.using("tools")``). The
  schema sent is :func:`strict_schema` of the step's: one a constrained decoder accepts.

Every transport reads a reply the same way: an ``aira_step`` call's arguments, else the
reply's text. Text without a ``{`` is the decision ``done{summary: text}`` (repair
``text-as-done``), as a final text ended a task before; one JSON object in prose is that
object (``json-extracted``); a fenced block is its content (``fence-stripped``). A repair
only undoes how the channel carried a decision (a fence, arguments encoded twice) or puts
back closing brackets the model dropped (``brackets-restored``, :mod:`.brackets`, accepted
only when the result parses to an object); anything else is passed on as it came, for the
host's grammar to reject with its own code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from aira_core.canonical import canonical_bytes
from aira_core.extensions import ProviderError, StepRequest, Transport
from aira_core.gateway import brackets
from aira_core.gateway.chat import (
    REASONING_FIELD,
    TOOL_NAME,
    Style,
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
"""Followed by the step's schema, which the host keeps the same for a whole round (a stable
prompt prefix, spec 003 §6.6); DeepSeek's JSON mode requires the word "json" in the
prompt."""
STRICT_SYSTEM = (
    "You make the decisions of an Aira CAD task, one step at a time. The first user message "
    "is the task and the model's state; each later user message is the host's result of "
    "your previous decision. Answer every step in json: exactly one JSON object, one "
    "decision, as the response format's schema describes."
)
STRICT_VIAS = ("json_schema", "tools")
"""How the ``strict`` transport constrains the decision: a ``response_format`` schema, or a
strict function."""

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


# -- reading a reply --------------------------------------------------------------------------


def _loads(text: str) -> Any:
    """The JSON value of ``text``; ``ValueError`` when it is none (too deep included)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("too deep") from None


def _is_object(text: str) -> bool:
    try:
        return isinstance(_loads(text), dict)
    except ValueError:
        return False


def _restored(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with dropped closers put back when that makes it an object
    (``brackets-restored``); else as it is."""
    fixed = brackets.repair(text)
    return (fixed[0], (brackets.REPAIR,)) if fixed else (text, ())


def text_decision(
    text: str, summary_chars: int = TEXT_AS_DONE_CHARS
) -> tuple[str, tuple[str, ...]]:
    """The decision text in a reply's (stripped, non-blank) text and the repairs that got it:
    a fenced block's content; text without a ``{``: ``done{summary: text}``; JSON as it is;
    missing closers put back; one object in prose, extracted. Anything else passes through
    unchanged, for the host to reject."""
    fenced = _FENCE.match(text)
    if fenced:
        inner, repairs = _restored(fenced.group(1).strip())
        return inner, ("fence-stripped", *repairs)
    if "{" not in text:
        done = {"act": "done", "summary": text[:summary_chars]}
        return json.dumps(done, ensure_ascii=False), ("text-as-done",)
    try:
        _loads(text)
        return text, ()
    except ValueError:
        pass
    fixed, repairs = _restored(text)
    if repairs:
        return fixed, repairs
    start, end = text.find("{"), text.rfind("}")
    for candidate in dict.fromkeys((text[start : end + 1] if end > start else "", text[start:])):
        if not candidate or candidate == text:
            continue
        if _is_object(candidate):
            return candidate, ("json-extracted",)
        fixed, repairs = _restored(candidate)
        if repairs:
            return fixed, ("json-extracted", *repairs)
    return text, ()


def _function(call: Mapping[str, Any]) -> Mapping[str, Any]:
    fn = call.get("function")
    return fn if isinstance(fn, Mapping) else {}


def _arguments(args: Any) -> tuple[str, tuple[str, ...]]:
    """The decision text of a tool call's ``arguments`` and the repairs that got it.
    Arguments that are not JSON and cannot be repaired pass through unchanged (the host
    rejects them)."""
    if isinstance(args, Mapping):  # some servers (Ollama) send an object, not its JSON
        return json.dumps(plain(args), ensure_ascii=False), ("arguments-encoded",)
    if not isinstance(args, str):
        return ("" if args is None else json.dumps(plain(args), ensure_ascii=False)), ()
    try:
        outer = _loads(args)
    except ValueError:
        return _restored(args)
    if isinstance(outer, str):  # the object's JSON, encoded once more as a JSON string
        if _is_object(outer):
            return outer, ("arguments-unwrapped",)
        fixed, repairs = _restored(outer)
        if repairs:
            return fixed, ("arguments-unwrapped", *repairs)
    return args, ()


def parse_reply(
    message: Mapping[str, Any],
    request: StepRequest,
    *,
    summary_chars: int = TEXT_AS_DONE_CHARS,
    calls: bool = True,
) -> tuple[str, str, tuple[str, ...]]:
    """A reply's decision text, call id and repairs: the first ``aira_step`` call (with
    ``calls``), else the reply's text (:func:`text_decision`). ``PROVIDER_REPLY_INVALID``
    (retryable) when it holds neither, or only calls of other tools."""
    raw = message.get("tool_calls") if calls else None
    found = [c for c in raw if isinstance(c, Mapping)] if isinstance(raw, list | tuple) else []
    ours = [c for c in found if _function(c).get("name") == TOOL_NAME]
    if ours:
        call = ours[0]
        text, how = _arguments(_function(call).get("arguments"))
        repairs = ["extra-calls-dropped"] if len(found) > 1 else []
        repairs += how
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id.strip():
            call_id = request.call_id
            repairs.append("call-id-assigned")
        return text, call_id, tuple(repairs)
    if found:
        names = sorted({str(_function(c).get("name"))[:40] for c in found})
        raise _no_decision(
            f"the reply calls {', '.join(names)}, not {TOOL_NAME}; it holds no decision"
        )
    # DeepSeek's JSON mode may answer all spaces (what it could not make JSON): blank.
    text = text_of(message.get("content")).strip()
    if not text:
        what = f"neither a {TOOL_NAME} call nor text" if calls else "blank content"
        raise _no_decision(f"the reply has {what}; it holds no decision")
    decision, repairs = text_decision(text, summary_chars)
    return decision, request.call_id, repairs


# -- the transports ---------------------------------------------------------------------------


def _tool(description: str, schema: Any, *, strict: bool) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": TOOL_NAME,
        "description": description,
        # as it is: the request encoder writes a read-only mapping as an object
        "parameters": schema,
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


class ToolTransport:
    """The decision as the arguments of one ``aira_step`` tool call. ``tool_choice``:
    ``auto`` (default; all DeepSeek's thinking mode takes) or ``required``."""

    name = "tool"
    style: Style = "tool"

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
        tool = _tool(self.description, request.schema, strict=False)
        return {"tools": [tool], "tool_choice": self.tool_choice}

    def parse(
        self, message: Mapping[str, Any], request: StepRequest
    ) -> tuple[str, str, tuple[str, ...]]:
        return parse_reply(message, request, summary_chars=self.summary_chars)


class JsonTransport:
    """The decision as the reply's text, a JSON object (``response_format json_object``);
    the step's schema rides in the system message: the host keeps it the same for a round,
    so every prompt of a round starts with the previous one."""

    name = "json"
    style: Style = "json"

    def __init__(self, *, summary_chars: int = TEXT_AS_DONE_CHARS) -> None:
        self.summary_chars = summary_chars

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
        return parse_reply(message, request, summary_chars=self.summary_chars, calls=False)


class StrictTransport:
    """Schema-constrained output: ``via="json_schema"`` (default) asks for ``response_format
    json_schema`` with ``strict`` and renders the log as text (the ``json`` style);
    ``via="tools"`` offers the ``aira_step`` function with ``"strict": true`` and renders the
    log as tool calls. Either way the schema is :func:`strict_schema` of the step's, and a
    reply may come in either shape."""

    name = "strict"

    def __init__(
        self,
        via: str = "json_schema",
        *,
        summary_chars: int = TEXT_AS_DONE_CHARS,
        description: str = "Make this step's decision: exactly one act of the grammar.",
    ) -> None:
        if via not in STRICT_VIAS:
            raise ValueError(f"via must be one of {', '.join(STRICT_VIAS)}, not {via!r}")
        self.via = via
        self.summary_chars = summary_chars
        self.description = description

    @property
    def style(self) -> Style:
        return "json" if self.via == "json_schema" else "tool"

    def using(self, via: str) -> StrictTransport:
        """This transport constraining the decision ``via`` the other channel."""
        return StrictTransport(via, summary_chars=self.summary_chars, description=self.description)

    def system(self, request: StepRequest) -> str:
        return STRICT_SYSTEM if self.via == "json_schema" else TOOL_SYSTEM

    def messages(
        self, request: StepRequest, *, reasoning_field: str | None = REASONING_FIELD
    ) -> list[dict[str, Any]]:
        return render_messages(
            request, style=self.style, system=self.system(request), reasoning_field=reasoning_field
        )

    def render(self, request: StepRequest) -> dict[str, Any]:
        schema = strict_schema(request.schema)
        if self.via == "tools":
            return {"tools": [_tool(self.description, schema, strict=True)]}
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": TOOL_NAME, "schema": schema, "strict": True},
            }
        }

    def parse(
        self, message: Mapping[str, Any], request: StepRequest
    ) -> tuple[str, str, tuple[str, ...]]:
        return parse_reply(message, request, summary_chars=self.summary_chars)


# -- the schema a constrained decoder accepts -------------------------------------------------
#
# A constrained decoder (llama.cpp's JSON-schema-to-grammar converter, behind
# ``response_format json_schema`` in its server and the xllamacpp wheel) reads a ``pattern``
# as a grammar over the string's JSON text, between its quotes: it takes only patterns
# anchored with ``^`` and ``$``, no ``\d``-style classes, no anchors or look-arounds inside;
# a pattern it cannot translate it drops with a warning ("accepting any string"). And what
# it generates for ``.`` or ``[^…]`` may be a bare ``"`` or control character: invalid JSON.
# strict_schema rewrites each pattern into one it translates, over JSON string characters,
# that admits at least what the original admits; what it cannot rewrite it drops. The
# result is equal or looser, never stricter: the host re-validates every decision with its
# own grammar.

_ESCAPE = r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
JSON_CHAR = rf'(?:[^"\\\x00-\x1F]|{_ESCAPE})'
"""One character of a JSON string's text: an unescaped one, or an escape."""
_DROPPED_KEYWORDS = frozenset({"discriminator"})
"""Not JSON Schema (OpenAPI's): an annotation that asserts nothing; strict validators refuse
unknown keywords."""
_NOT_PREFIXED = re.compile(r"\^\(\?:\[\^([a-z]+)\]\|\[\1\]\(\?:\[\^:\]\|\$\)\|\$\)")
"""The host's "a string that does not start with b:, n:, p: or a:" (``PlainString``)."""
_CLASS_ESCAPES = frozenset("tnr]-^[")
_LITERAL_ESCAPES = frozenset(".[](){}*+?|^$/-")


def _char_except(chars: str) -> str:
    """One JSON string character that is not one of ``chars`` (an escape always is not)."""
    return rf'(?:[^{chars}"\\\x00-\x1F]|{_ESCAPE})'


def _not_prefixed(letters: str) -> str:
    """A string not starting with one of ``letters`` and a colon, over JSON text."""
    rest = f"{JSON_CHAR}*"
    return f"^(?:{_char_except(letters)}{rest}|[{letters}](?:{_char_except(':')}{rest})?)?$"


def _translate(body: str) -> str | None:
    r"""``body`` (a regex without its anchors) as a decoder translates it, equal or looser
    over JSON text: ``\d`` → ``[0-9]``, ``.`` and ``[^…]`` → JSON string characters.
    ``None``: it holds something with no translation (look-arounds, ``\w`` …)."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            nxt = body[i + 1]
            if nxt == "d":
                out.append("[0-9]")
            elif nxt in _LITERAL_ESCAPES:
                out.append(body[i : i + 2])
            else:
                return None
            i += 2
        elif c == "[":
            j = i + 1
            negated = j < n and body[j] == "^"
            j += negated
            members: list[str] = []
            while j < n and body[j] != "]":
                if body[j] == "\\":
                    if j + 1 >= n:
                        return None
                    esc = body[j + 1]
                    if esc == "d":
                        members.append("0-9")
                    elif esc in _CLASS_ESCAPES:
                        members.append(body[j : j + 2])
                    else:
                        return None
                    j += 2
                elif body[j] in '"\x00\x1f':
                    return None
                else:
                    members.append(body[j])
                    j += 1
            if j >= n or not members:
                return None
            inner = "".join(members)
            out.append(_char_except(inner) if negated else f"[{inner}]")
            i = j + 1
        elif c == ".":
            out.append(JSON_CHAR)
            i += 1
        elif c in "^$" or c == '"' or ord(c) < 0x20:
            return None  # an anchor inside; a character JSON text escapes
        elif c == "(" and body.startswith("(?", i) and not body.startswith("(?:", i):
            return None  # a look-around, a named group, inline flags
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strict_pattern(pattern: str) -> str | None:
    """``pattern`` as a constrained decoder takes it (anchored at both ends, over JSON string
    text), admitting at least what ``pattern`` admits; ``None``: drop it."""
    prefixed = _NOT_PREFIXED.fullmatch(pattern)
    if prefixed:
        return _not_prefixed(prefixed.group(1))
    start = pattern.startswith("^")
    end = pattern.endswith("$") and not pattern.endswith("\\$")
    body = _translate(pattern[1 if start else 0 : len(pattern) - 1 if end else None])
    if body is None:
        return None
    if not (start and end) and "|" in body:
        body = f"(?:{body})"
    return f"^{'' if start else JSON_CHAR + '*'}{body}{'' if end else JSON_CHAR + '*'}$"


def _rewrite(node: Any) -> Any:
    if isinstance(node, list):
        return [_rewrite(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYWORDS:
            continue
        if key == "enum" and value == []:
            # No legal value (a kind the document has none of yet): decoders refuse an
            # empty enum ("enum must be a non-empty array", llama.cpp); any string is looser
            # and the host still checks every alias.
            continue
        if key in ("enum", "const", "default", "examples"):  # values, not schemas
            out[key] = value
        elif key == "pattern" and isinstance(value, str):
            rewritten = strict_pattern(value)
            if rewritten is not None:
                out[key] = rewritten
        elif key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _rewrite(sub) for name, sub in value.items()}
        else:
            out[key] = _rewrite(value)
    return out


@lru_cache(maxsize=64)
def _strict_text(canonical: bytes) -> str:
    return json.dumps(_rewrite(json.loads(canonical)), ensure_ascii=False, sort_keys=True)


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The step's decision ``schema`` rewritten for a constrained decoder: every ``pattern``
    as :func:`strict_pattern` has it (or dropped), OpenAPI's ``discriminator`` and every
    empty ``enum`` dropped, everything else as it is. Equal or looser, never stricter; pure
    and deterministic (a fresh copy per call, the rewrite cached by the schema's canonical
    bytes)."""
    return json.loads(_strict_text(bytes(canonical_bytes(plain(schema)))))


BUILTIN_TRANSPORTS: dict[str, Transport] = {
    "tool": ToolTransport(),
    "json": JsonTransport(),
    "strict": StrictTransport(),
}
"""The transports the core ships, by name (a plugin may register more)."""
