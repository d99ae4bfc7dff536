"""OpenAI chat-completions, both ways: a :class:`~aira_core.extensions.StepRequest` rendered as
``messages``, and a completion's body read back as (message, usage, finish reason).

The round log is rendered as spec 003 §6.6 has it: ``system`` (the host's contract, short),
``user`` (the capsule), then per entry: a decision as the ``assistant`` turn that made it
and a result as the answer to it. With the ``tool`` style a decision is an ``aira_step``
tool call (its call id, the decision as arguments) carrying the model's reasoning under the
provider's field name (DeepSeek's thinking mode refuses a request without the reasoning of
an assistant turn that called a tool), and a result the ``tool`` message with the same
``tool_call_id``. With the ``json`` style a decision is the assistant's text and a result a
``user`` message naming the call it answers.

Local and cheap: no I/O, no httpx2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

from aira_core.extensions import (
    Acceptance,
    DecisionEntry,
    ProviderError,
    ResultEntry,
    StepRequest,
    Usage,
)

PROVIDER_REPLY_INVALID = "PROVIDER_REPLY_INVALID"

TOOL_NAME = "aira_step"
"""The one tool the ``tool`` transport offers: its arguments are the step's decision."""
REASONING_FIELD = "reasoning_content"
"""The default name of an assistant message's reasoning (DeepSeek, llama.cpp, older vLLM)."""
REASONING_FIELDS = ("reasoning_content", "reasoning")
"""The names a reply's reasoning arrives under (vLLM ≥ 0.11, Ollama and OpenRouter use
``reasoning``): read in this order."""

Style = Literal["tool", "json"]

STOP_REASONS = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
"""finish_reason → StepReply.stop_reason; anything else (or none) is ``other``."""


@dataclass(frozen=True)
class Prices:
    """A model's prices in USD per 1M tokens: input served from the provider's cache
    (``hit``), other input (``miss``), output (reasoning included)."""

    hit: float
    miss: float
    output: float

    def cost(self, usage: Usage) -> float:
        if usage.cache_hit_tokens or usage.cache_miss_tokens:
            incoming = usage.cache_hit_tokens * self.hit + usage.cache_miss_tokens * self.miss
        else:  # no cache reported: all input at the full price (an upper bound)
            incoming = usage.input_tokens * self.miss
        return (incoming + usage.output_tokens * self.output) / 1_000_000


def render_messages(
    request: StepRequest,
    *,
    style: Style,
    system: str,
    reasoning_field: str | None = REASONING_FIELD,
) -> list[dict[str, Any]]:
    """The chat ``messages`` of ``request``: system, the capsule, then the round log.
    ``reasoning_field`` is where a tool-calling turn's reasoning goes back (``None``: never
    sent, for a provider that refuses unknown message fields)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": request.capsule},
    ]
    for entry in request.log:
        if isinstance(entry, DecisionEntry):
            messages.append(_decision(entry, style, reasoning_field))
        elif isinstance(entry, ResultEntry):
            messages.append(_result(entry, style))
        else:  # the log is typed: anything else is a host bug, not a provider failure
            raise TypeError(f"not a round log entry: {type(entry).__name__}")
    return messages


def _decision(entry: DecisionEntry, style: Style, reasoning_field: str | None) -> dict[str, Any]:
    if style == "json":
        return {"role": "assistant", "content": entry.text}
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "",  # "" rather than null: some servers refuse a null content
        "tool_calls": [
            {
                "id": entry.call_id,
                "type": "function",
                "function": {"name": TOOL_NAME, "arguments": entry.text},
            }
        ],
    }
    if reasoning_field and entry.reasoning:
        message[reasoning_field] = entry.reasoning
    return message


def _result(entry: ResultEntry, style: Style) -> dict[str, Any]:
    if style == "json":
        return {"role": "user", "content": f"result of {entry.call_id}:\n{entry.text}"}
    return {"role": "tool", "tool_call_id": entry.call_id, "content": entry.text}


class Completion(NamedTuple):
    """What a chat-completions body says: the first choice's message, the usage object as
    sent (``{}`` when none) and the finish reason (``None`` when none)."""

    message: Mapping[str, Any]
    usage: Mapping[str, Any]
    finish_reason: str | None


def reply_invalid(
    message: str, provider_code: str | None = None, *, retryable: bool = False
) -> ProviderError:
    """A reply that holds no decision. The provider answered 2xx: it processed the request
    (accepted), the reply is unusable."""
    return ProviderError(
        PROVIDER_REPLY_INVALID,
        message,
        stage="parse",
        category="reply",
        acceptance=Acceptance.ACCEPTED,
        provider_code=provider_code,
        retryable=retryable,
    )


def parse_completion(body: Mapping[str, Any]) -> Completion:
    """The first choice of a chat-completions ``body``; ``PROVIDER_REPLY_INVALID`` (stage
    ``parse``, accepted) when it has none, or an error object instead."""
    choices = body.get("choices") if isinstance(body, Mapping) else None
    if not isinstance(choices, Sequence) or isinstance(choices, str) or not choices:
        error = body.get("error") if isinstance(body, Mapping) else None
        code = None
        if isinstance(error, Mapping):
            raw = error.get("code") or error.get("type")
            code = str(raw) if isinstance(raw, str | int) and not isinstance(raw, bool) else None
        what = "an error object" if error is not None else "no choices"
        raise reply_invalid(f"the provider's reply holds {what}, no message", code)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, Mapping) else None
    if not isinstance(message, Mapping):
        raise reply_invalid("the provider's reply has a choice without a message")
    usage = body.get("usage")
    finish = choice.get("finish_reason")
    return Completion(
        message=message,
        usage=usage if isinstance(usage, Mapping) else {},
        finish_reason=finish if isinstance(finish, str) else None,
    )


def text_of(content: Any) -> str:
    """A message's ``content`` as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [
            p.get("text")
            for p in content
            if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        ]
        return "".join(parts)
    return ""


def reasoning_field_of(message: Mapping[str, Any]) -> str | None:
    """Which of :data:`REASONING_FIELDS` the message holds its reasoning under (``None``:
    no reasoning): the name a server uses, to send it back under."""
    for name in REASONING_FIELDS:
        value = message.get(name)
        if isinstance(value, str) and value:
            return name
    return None


def reasoning_of(message: Mapping[str, Any]) -> str:
    """The message's reasoning, under whichever of :data:`REASONING_FIELDS` it came."""
    name = reasoning_field_of(message)
    return message[name] if name is not None else ""


def stop_reason_of(finish_reason: str | None) -> str:
    return STOP_REASONS.get(finish_reason or "", "other")


def _count(value: Any) -> int:
    """A token count as sent: a non-negative integer, else 0 (a provider's bad number must
    not make a budget go backwards)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(int(value), 0)


def usage_of(raw: Mapping[str, Any] | None, prices: Prices | None = None) -> Usage:
    """The typed usage of a chat-completions ``usage`` object: DeepSeek's
    ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``, else OpenAI's (and
    llama.cpp's, vLLM's) ``prompt_tokens_details.cached_tokens`` (miss = prompt − cached);
    ``completion_tokens_details.reasoning_tokens``; the cost from ``prices`` (0 without)."""
    raw = raw if isinstance(raw, Mapping) else {}
    prompt = _count(raw.get("prompt_tokens"))
    output = _count(raw.get("completion_tokens"))
    hit = miss = 0
    if "prompt_cache_hit_tokens" in raw or "prompt_cache_miss_tokens" in raw:
        hit = _count(raw.get("prompt_cache_hit_tokens"))
        if "prompt_cache_miss_tokens" in raw:
            miss = _count(raw.get("prompt_cache_miss_tokens"))
        else:
            miss = max(prompt - hit, 0)
    else:
        details = raw.get("prompt_tokens_details")
        if isinstance(details, Mapping) and "cached_tokens" in details:
            hit = min(_count(details.get("cached_tokens")), prompt) if prompt else 0
            miss = max(prompt - hit, 0)
    if not prompt:
        prompt = hit + miss
    details = raw.get("completion_tokens_details")
    reasoning = _count(details.get("reasoning_tokens")) if isinstance(details, Mapping) else 0
    usage = Usage(
        input_tokens=prompt,
        output_tokens=output,
        cache_hit_tokens=hit,
        cache_miss_tokens=miss,
        reasoning_tokens=min(reasoning, output) if output else reasoning,
    )
    return usage if prices is None else replace(usage, cost_usd=prices.cost(usage))
