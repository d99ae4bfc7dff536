"""DeepSeek's chat-completions API as an Aira provider: the OpenAI-compatible provider of the
core (:mod:`aira_core.gateway.openai_compat`) with what DeepSeek does differently
(peers.md §3):

- thinking mode, on by default at DeepSeek, is always said explicitly (``thinking:
  {"type": "enabled"|"disabled"}``, plus ``reasoning_effort`` when set);
- in thinking mode only ``tool_choice`` ``auto`` or ``none`` are accepted (any other is a
  400), so a forced choice a transport asks for is sent as ``auto`` there; with thinking
  off it is sent as asked;
- every assistant turn of the round that called a tool carries its ``reasoning_content``
  (a 400 otherwise): the core renderer sends the model's reasoning back, and a turn that has
  none (another provider's, say) gets an empty one;
- the ``strict`` transport rides DeepSeek's strict tool mode: its strict-function variant,
  ``"strict": true`` in the function, sent to the beta base URL;
- the cost of a call is priced from the data file (:mod:`aira_provider_deepseek.prices`) at
  the period (peak, off-peak) of the instant the request was sent, which the usage names.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from aira_core.diagnostics import AiraError
from aira_core.extensions import (
    Acceptance,
    AcceptanceTable,
    PreparedCall,
    ProviderError,
    ProviderResponse,
    StepReply,
    StepRequest,
    Transport,
)
from aira_core.gateway.config import PROVIDER_CONFIG_INVALID, ProviderSettings
from aira_core.gateway.openai_compat import (
    OpenAICompatProvider,
    check_base_url,
)
from aira_provider_deepseek import prices as price_data

NAME = "deepseek"
BASE_URL = "https://api.deepseek.com"
API_KEY_ENV = "DEEPSEEK_API_KEY"
MODELS = ("deepseek-flash", "deepseek-v4-pro", "deepseek-v4-flash", "deepseek-v4-flash-vision-exp")
"""DeepSeek's current models, then the older names it still accepts."""
SERVED_BY = {
    "deepseek-v4-flash": "deepseek-flash",
    "deepseek-v4-flash-vision-exp": "deepseek-flash",
}
"""An older name → the model that serves it now, at whose price it is billed."""
REASONING_EFFORTS = ("low", "high", "max")
UNFORCED = frozenset({"auto", "none"})
"""The only ``tool_choice`` values DeepSeek's thinking mode accepts."""
STRICT = "strict"
OPTIONS = ("thinking", "reasoning_effort", "strict_base_url")

ACCEPTANCE = AcceptanceTable(
    provider=NAME,
    refusals={
        400: "Invalid Format",
        401: "Authentication Fails",
        402: "Insufficient Balance",
        422: "Invalid Parameters",
        429: "Rate Limit Reached",
    },
    source="https://api-docs.deepseek.com/quick_start/error_codes",
)
"""DeepSeek's documented refusals before any processing: not_accepted, so the next route
may be tried; 500, 503 and anything undocumented are unknown (peers.md §3)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SentResponse(ProviderResponse):
    """A response and the instant its request was sent: the period it is priced at."""

    sent_at: datetime | None = None


class DeepSeekProvider(OpenAICompatProvider):
    """DeepSeek (``https://api.deepseek.com``). ``thinking``: thinking mode on (DeepSeek's
    default) or off; ``reasoning_effort``: ``low``, ``high`` or ``max`` (DeepSeek's default
    when ``None``); ``strict_base_url``: where the ``strict`` transport's requests go
    (default ``<base_url>/beta``); ``api_key_env``: the variable the key is read from when no
    key is given, at ``prepare`` (never at import); ``price_table``: the prices (default the
    shipped file, read on first use); ``clock``: the current instant as an aware UTC
    datetime (tests choose peak or off-peak with it). ``prices`` (as the core's) are
    overriding rows, one price at any time."""

    key_label = "a DeepSeek API key"

    def __init__(
        self,
        name: str = NAME,
        base_url: str = BASE_URL,
        models: tuple[str, ...] = MODELS,
        *,
        thinking: bool = True,
        reasoning_effort: str | None = None,
        strict_base_url: str | None = None,
        api_key_env: str | None = API_KEY_ENV,
        price_table: price_data.PriceTable | None = None,
        clock: Callable[[], datetime] = utc_now,
        **options: Any,
    ) -> None:
        if options.get("acceptance") is None:
            options["acceptance"] = dataclasses.replace(ACCEPTANCE, provider=name)
        options.setdefault("api_key_required", True)
        super().__init__(name, base_url, models, api_key_env=api_key_env, **options)
        self.thinking = thinking
        self.reasoning_effort = reasoning_effort
        self._strict_base_url = (
            check_base_url(strict_base_url, name) if strict_base_url is not None else None
        )
        self.price_table = price_table
        self.clock = clock
        self._check_options()

    @classmethod
    def from_settings(cls, settings: ProviderSettings, **options: Any) -> DeepSeekProvider:
        """This plugin's defaults (``options`` over them: a test's ``client``, say)
        configured with ``settings``: :meth:`configure`."""
        return cls(**options).configure(settings)

    def __repr__(self) -> str:  # never the key
        return f"DeepSeekProvider(name={self.name!r}, base_url={self.base_url!r})"

    @property
    def strict_base_url(self) -> str:
        return self._strict_base_url or f"{self.base_url}/beta"

    # -- settings ---------------------------------------------------------------------------

    def configure(self, settings: ProviderSettings) -> DeepSeekProvider:
        """The core's overlay (:meth:`OpenAICompatProvider.configure`), with DeepSeek's models
        only and the key's variable: the one the table names, else none once the table points
        the provider at another server (a key never goes where it was not given for); the
        strict base URL beside the new base URL unless the table sets it."""
        where = f"providers.{settings.name}"
        for i, model in enumerate(settings.models):
            if model not in MODELS:
                raise AiraError(
                    PROVIDER_CONFIG_INVALID,
                    f"{where}.models[{i}] is not a DeepSeek model "
                    f"(DeepSeek's: {', '.join(MODELS)})",
                )
        for model in settings.prices:
            if model not in MODELS:
                raise AiraError(
                    PROVIDER_CONFIG_INVALID,
                    f"{where}.prices has a row for a model DeepSeek has not "
                    f"(DeepSeek's: {', '.join(MODELS)})",
                )
        new = cast(DeepSeekProvider, super().configure(settings))
        moved = new.base_url != self.base_url
        if moved and "strict_base_url" not in settings.options:
            new._strict_base_url = None  # beside the new base URL, not the old one
        return new

    def apply_options(self, options: dict[str, Any]) -> None:
        """``thinking`` (true/false), ``reasoning_effort`` (low, high, max),
        ``strict_base_url``; anything else, or a wrong value, is ``PROVIDER_CONFIG_INVALID``
        naming the key, never the value."""
        where = f"providers.{self.name}.options"
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            key = unknown[0]
            shown = key if re.fullmatch(r"[A-Za-z0-9_-]{1,40}", key) else "<a key>"
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"{where}.{shown} is not an option of DeepSeek ({', '.join(OPTIONS)})",
            )
        if "thinking" in options:
            self.thinking = options["thinking"]
        if "reasoning_effort" in options:
            self.reasoning_effort = options["reasoning_effort"]
        if "strict_base_url" in options:
            url = options["strict_base_url"]
            if not isinstance(url, str):
                raise AiraError(PROVIDER_CONFIG_INVALID, f"{where}.strict_base_url must be a URL")
            try:
                self._strict_base_url = check_base_url(url, self.name)
            except AiraError:
                raise AiraError(
                    PROVIDER_CONFIG_INVALID,
                    f"{where}.strict_base_url must be an http(s) URL with a host and no "
                    "user information, query or fragment",
                ) from None
        self._check_options(where)

    def _check_options(self, where: str | None = None) -> None:
        where = where or f"providers.{self.name}.options"
        if not isinstance(self.thinking, bool):
            raise AiraError(PROVIDER_CONFIG_INVALID, f"{where}.thinking must be true or false")
        effort = self.reasoning_effort
        if effort is not None and effort not in REASONING_EFFORTS:
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"{where}.reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}",
            )
        if effort is not None and not self.thinking:
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"{where}.reasoning_effort is set but thinking is off; set one of them",
            )

    # -- the request ------------------------------------------------------------------------

    def prepare(
        self,
        request: StepRequest,
        model: str,
        transport: Transport,
        *,
        idempotency_key: str | None = None,
    ) -> PreparedCall:
        self.preflight(model)
        self._prices()  # a broken price table fails here, before anything is sent
        inner, strict = self._wire(transport)
        call = super().prepare(
            request,
            model,
            _AsDeepSeekTakesIt(
                inner, fields=self.thinking_fields, thinking=self.thinking, strict=strict
            ),
            idempotency_key=idempotency_key,
        )
        if strict:
            call = dataclasses.replace(call, url=f"{self.strict_base_url}/chat/completions")
        return call

    def messages(self, request: StepRequest, transport: Transport) -> list[dict[str, Any]]:
        """The core's rendering; in thinking mode every assistant turn that called a tool
        carries a ``reasoning_content``, empty when the log has none for it."""
        messages = super().messages(request, transport)
        if self.thinking and self.reasoning_field:
            for message in messages:
                if message.get("role") == "assistant" and message.get("tool_calls"):
                    message.setdefault(self.reasoning_field, "")
        return messages

    @property
    def thinking_fields(self) -> dict[str, Any]:
        """What every request body says of thinking mode."""
        fields: dict[str, Any] = {
            "thinking": {"type": "enabled" if self.thinking else "disabled"},
        }
        if self.thinking and self.reasoning_effort is not None:
            fields["reasoning_effort"] = self.reasoning_effort
        return fields

    def send(self, call: PreparedCall, *, deadline: float) -> SentResponse:
        sent_at = self.clock()
        response = super().send(call, deadline=deadline)
        return SentResponse(response.status, response.body, sent_at=sent_at)

    def reply(
        self, response: ProviderResponse, request: StepRequest, model: str, transport: Transport
    ) -> StepReply:
        inner, _strict = self._wire(transport)
        reply = super().reply(response, request, model, inner)
        sent_at = getattr(response, "sent_at", None) or self.clock()
        served_by = SERVED_BY.get(model, model)
        stamp = sent_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        override = self.prices.get(model) or self.prices.get(served_by)
        if override is not None:  # a row of providers.toml: one price at any time
            prices, row = override, f"{served_by} (prices of providers.{self.name})"
        else:
            priced = self._prices().at(served_by, sent_at)
            if priced is None:
                return reply
            prices, row = priced
        usage = dataclasses.replace(
            reply.usage, cost_usd=prices.cost(reply.usage), pricing=f"{row}, sent {stamp}"
        )
        return dataclasses.replace(reply, usage=usage)

    # -- helpers ----------------------------------------------------------------------------

    def _prices(self) -> price_data.PriceTable:
        if self.price_table is None:
            try:
                self.price_table = price_data.shipped()
            except AiraError as exc:
                raise ProviderError(
                    exc.code,
                    exc.diagnostic.message + "; nothing was sent",
                    stage="prepare",
                    category="validation",
                    acceptance=Acceptance.NOT_ACCEPTED,
                ) from None
        return self.price_table

    @staticmethod
    def _wire(transport: Transport) -> tuple[Transport, bool]:
        """The transport a request is rendered and read with, and whether it is DeepSeek's
        strict mode: ``strict`` rides strict functions (DeepSeek has no ``json_schema``
        response format)."""
        if getattr(transport, "name", None) != STRICT:
            return transport, False
        using = getattr(transport, "using", None)
        if not callable(using):
            raise ProviderError(
                PROVIDER_CONFIG_INVALID,
                "the strict transport has no strict-tools variant DeepSeek could use; "
                "nothing was sent",
                stage="prepare",
                category="validation",
                acceptance=Acceptance.NOT_ACCEPTED,
            )
        return using("tools"), True


class _AsDeepSeekTakesIt:
    """A transport whose request fields are as DeepSeek takes them: thinking mode said,
    ``tool_choice`` unforced while thinking, functions strict in strict mode. Everything
    else (its messages, its parsing, its name) is the transport's own."""

    def __init__(
        self, inner: Transport, *, fields: Mapping[str, Any], thinking: bool, strict: bool
    ) -> None:
        self._inner = inner
        self._fields = dict(fields)
        self._thinking = thinking
        self._strict = strict

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def render(self, request: StepRequest) -> dict[str, Any]:
        fields = dict(self._inner.render(request))
        choice = fields.get("tool_choice", "auto")
        if self._thinking and not (isinstance(choice, str) and choice in UNFORCED):
            fields["tool_choice"] = "auto"
        if self._strict and isinstance(fields.get("tools"), list):
            fields["tools"] = [_strict(tool) for tool in fields["tools"]]
        return {**fields, **self._fields}


def _strict(tool: Any) -> Any:
    if not isinstance(tool, Mapping) or not isinstance(tool.get("function"), Mapping):
        return tool
    return {**tool, "function": {**tool["function"], "strict": True}}
