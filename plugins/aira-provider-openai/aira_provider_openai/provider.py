"""Any server speaking the OpenAI chat-completions API as an Aira provider: the core's
OpenAI-compatible provider (:mod:`aira_core.gateway.openai_compat`) with what differs from one
such server to the next (peers.md §4):

- it serves whatever model a route names (``models`` empty: the route's model is its own);
- OpenAI's hosted API is the default, with the key in ``OPENAI_API_KEY``; a key goes only to
  the server it was given for: another base URL gets a key only from its own table
  (``api_key_env``);
- reasoning arrives as ``reasoning_content`` (llama.cpp, DeepSeek, vLLM ≤ 0.10) or
  ``reasoning`` (vLLM ≥ 0.11, Ollama): it is read from either, and sent back within the
  round under the name this server used last (``reasoning_field = "auto"``), or a fixed
  one, or never (``"none"``);
- llama.cpp reports its prompt cache in a top-level ``timings.cache_n`` as well; it is used
  when the usage itself says nothing of a cache;
- ``max_tokens``, a forced ``tool_choice`` and extra body fields are options of the table.
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
from collections.abc import Mapping
from typing import Any, cast

from aira_core.diagnostics import AiraError
from aira_core.extensions import (
    PreparedCall,
    ProviderResponse,
    StepReply,
    StepRequest,
    Transport,
)
from aira_core.gateway.chat import (
    REASONING_FIELD,
    REASONING_FIELDS,
    parse_completion,
    reasoning_field_of,
    usage_of,
)
from aira_core.gateway.config import PROVIDER_CONFIG_INVALID, ProviderSettings
from aira_core.gateway.openai_compat import (
    RESERVED_BODY_FIELDS,
    OpenAICompatProvider,
)

NAME = "openai"
BASE_URL = "https://api.openai.com/v1"
API_KEY_ENV = "OPENAI_API_KEY"
"""Read for the default base URL only (when the table names no ``api_key_env``)."""

AUTO = "auto"
NONE = "none"
REASONING_MODES = (AUTO, *REASONING_FIELDS, NONE)
TOOL_CHOICES = ("auto", "required")
MAX_TOKENS = 1_000_000
OPTIONS = ("reasoning_field", "max_tokens", "tool_choice", "extra_body")
OPTION_FIELDS = frozenset({"max_tokens", "tool_choice"})
"""Body fields an option sets: ``extra_body`` may not set them too."""
REFUSED_BODY_FIELDS = RESERVED_BODY_FIELDS | {"stream"} | OPTION_FIELDS
"""What ``extra_body`` may not set: the request itself, streaming (the gateway reads one
JSON answer: a streamed one would be paid for and unreadable), and the options' fields."""

_SHOWN_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")


class ReasoningName:
    """The field this server last sent reasoning in (``reasoning_content`` before any
    reply). One per configured provider; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._name = REASONING_FIELD

    @property
    def name(self) -> str:
        with self._lock:
            return self._name

    def saw(self, message: Mapping[str, Any]) -> None:
        """Remember the field ``message`` (a reply's) holds its reasoning in, if any."""
        name = reasoning_field_of(message)
        if name is not None:
            with self._lock:
                self._name = name


class OpenAIProvider(OpenAICompatProvider):
    """An OpenAI-compatible server (default: OpenAI's API at :data:`BASE_URL`).
    ``reasoning_mode``: ``auto`` (send reasoning back under the name the server used),
    ``reasoning_content``, ``reasoning`` or ``none``; ``tool_choice``: what a tool request
    forces (``None``: as the transport asks); ``api_key_env``: the variable the key is read
    from when none was given, when a call is prepared. Other arguments are the core's."""

    def __init__(
        self,
        name: str = NAME,
        base_url: str = BASE_URL,
        models: tuple[str, ...] = (),
        *,
        reasoning_mode: str = AUTO,
        tool_choice: str | None = None,
        api_key_env: str | None = API_KEY_ENV,
        **options: Any,
    ) -> None:
        options.setdefault("api_key_required", True)
        self._seen = ReasoningName()
        super().__init__(name, base_url, models, api_key_env=api_key_env, **options)
        self.reasoning_mode = reasoning_mode  # over the fixed name the base class set
        self.tool_choice = tool_choice

    def __repr__(self) -> str:  # never the key
        return f"OpenAIProvider(name={self.name!r}, base_url={self.base_url!r})"

    @property
    def reasoning_field(self) -> str | None:
        """The field a tool-calling turn's reasoning is sent back in (``None``: never)."""
        if self.reasoning_mode == NONE:
            return None
        if self.reasoning_mode == AUTO:
            return self._seen.name
        return self.reasoning_mode

    @reasoning_field.setter
    def reasoning_field(self, value: str | None) -> None:
        self.reasoning_mode = NONE if value is None else value

    # -- settings ---------------------------------------------------------------------------

    def configure(self, settings: ProviderSettings) -> OpenAIProvider:
        """The core's overlay (:meth:`OpenAICompatProvider.configure`), then the key's
        variable: the one the table names; none once the table points at another server
        without naming one (``OPENAI_API_KEY`` is for OpenAI only). The copy remembers
        reasoning names of its own server only."""
        new = cast(OpenAIProvider, super().configure(settings))
        new._seen = ReasoningName()
        return new

    def apply_options(self, options: dict[str, Any]) -> None:
        """``reasoning_field``, ``max_tokens``, ``tool_choice``, ``extra_body`` (see the
        README); anything else, or a wrong value, is ``PROVIDER_CONFIG_INVALID`` naming the
        key, never the value."""
        where = f"providers.{self.name}.options"
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"{where}.{_shown(unknown[0])} is not an option ({', '.join(OPTIONS)})",
            )
        if "reasoning_field" in options:
            mode = options["reasoning_field"]
            if not isinstance(mode, str) or mode not in REASONING_MODES:
                raise AiraError(
                    PROVIDER_CONFIG_INVALID,
                    f"{where}.reasoning_field must be one of {', '.join(REASONING_MODES)}",
                )
            self.reasoning_mode = mode
        if "tool_choice" in options:
            choice = options["tool_choice"]
            if not isinstance(choice, str) or choice not in TOOL_CHOICES:
                raise AiraError(
                    PROVIDER_CONFIG_INVALID,
                    f"{where}.tool_choice must be one of {', '.join(TOOL_CHOICES)}",
                )
            self.tool_choice = choice
        body: dict[str, Any] = {}
        if "max_tokens" in options:
            limit = options["max_tokens"]
            if type(limit) is not int or not 0 < limit <= MAX_TOKENS:
                raise AiraError(
                    PROVIDER_CONFIG_INVALID,
                    f"{where}.max_tokens must be a whole number from 1 to {MAX_TOKENS}",
                )
            body["max_tokens"] = limit
        if "extra_body" in options:
            body.update(_extra_body(options["extra_body"], f"{where}.extra_body"))
        self.extra_body.update(body)

    # -- the request ------------------------------------------------------------------------

    def prepare(
        self,
        request: StepRequest,
        model: str,
        transport: Transport,
        *,
        idempotency_key: str | None = None,
    ) -> PreparedCall:
        # the core's prepare checks the model and the key first (preflight): not again here
        if self.tool_choice is not None:
            transport = _ToolChoice(transport, self.tool_choice)
        return super().prepare(request, model, transport, idempotency_key=idempotency_key)

    def reply(
        self, response: ProviderResponse, request: StepRequest, model: str, transport: Transport
    ) -> StepReply:
        """The core's reply; the server's reasoning field remembered; llama.cpp's
        ``timings.cache_n`` as the cache when the usage reports none; the price row named."""
        reply = super().reply(response, request, model, transport)
        # parsed again (the core's parse succeeded, so this one does): cheap and local
        self._seen.saw(parse_completion(response.body).message)
        prices = self.prices.get(model)
        raw = usage_with_timings(response.body)
        usage = usage_of(raw, prices) if raw is not None else reply.usage
        if prices is not None:
            usage = dataclasses.replace(usage, pricing=f"{model} (prices of providers.{self.name})")
        return dataclasses.replace(reply, usage=usage)


def usage_with_timings(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The body's ``usage`` with llama.cpp's ``timings.cache_n`` as OpenAI's
    ``prompt_tokens_details.cached_tokens`` (and ``prompt_n + cache_n`` as the prompt when
    it has none); ``None`` when there is nothing to add: no timings, or a usage that reports
    a cache itself."""
    timings = body.get("timings")
    if not isinstance(timings, Mapping):
        return None
    cache_n, prompt_n = timings.get("cache_n"), timings.get("prompt_n")
    if type(cache_n) is not int or cache_n < 0:
        return None
    raw = body.get("usage")
    raw = dict(raw) if isinstance(raw, Mapping) else {}
    details = raw.get("prompt_tokens_details")
    details = dict(details) if isinstance(details, Mapping) else {}
    if "prompt_cache_hit_tokens" in raw or "cached_tokens" in details:
        return None
    raw["prompt_tokens_details"] = {**details, "cached_tokens": cache_n}
    if "prompt_tokens" not in raw and type(prompt_n) is int and prompt_n >= 0:
        raw["prompt_tokens"] = cache_n + prompt_n
    return raw


def _extra_body(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise AiraError(PROVIDER_CONFIG_INVALID, f"{where} must be a table of body fields")
    for key in value:
        if not isinstance(key, str) or key in REFUSED_BODY_FIELDS:
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"{where}.{_shown(key)} may not be set there "
                f"({', '.join(sorted(REFUSED_BODY_FIELDS))} are the request's or an option's)",
            )
    if not _is_json(value):  # here, not at the first request: a TOML date is no JSON
        raise AiraError(
            PROVIDER_CONFIG_INVALID, f"{where} holds a value JSON cannot carry (a date?)"
        )
    return dict(value)


def _is_json(value: Any) -> bool:
    """``value`` is JSON data as TOML gives it: no dates or times, no NaN or infinity."""
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int | bool)


def _shown(key: Any) -> str:
    return key if isinstance(key, str) and _SHOWN_KEY.fullmatch(key) else "<a key>"


class _ToolChoice:
    """A transport whose tool requests force ``tool_choice`` as configured (a request
    without tools is left as it is). Everything else (messages, parsing, name) is the
    transport's own."""

    def __init__(self, inner: Transport, choice: str) -> None:
        self._inner = inner
        self._choice = choice

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def render(self, request: StepRequest) -> dict[str, Any]:
        fields = dict(self._inner.render(request))
        if fields.get("tools"):
            fields["tool_choice"] = self._choice
        return fields
