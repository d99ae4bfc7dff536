"""A :class:`~aira_core.extensions.Provider` for any server with an OpenAI-compatible
``/chat/completions`` (DeepSeek, vLLM, llama.cpp's server, Ollama's ``/v1`` …).

The synchronous path only: ``prepare`` renders the request (local), ``send`` is the one HTTP
call (:mod:`aira_core.gateway.http`), ``reply`` reads the decision out of the answer through
the transport. No idempotency key is honoured and no job API exists, so ``idempotency`` and
``jobs`` are False and the job methods refuse (nothing is sent).

A provider plugin configures it rather than copying it: its documented acceptance table,
its prices, the name its server gives the reasoning field, extra body fields (DeepSeek's
``thinking``), its timeouts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from aira_core.diagnostics import AiraError, register_secret
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
from aira_core.gateway import chat, http
from aira_core.gateway.chat import Prices
from aira_core.gateway.config import PROVIDER_CONFIG_INVALID, ProviderSettings, key_from_env
from aira_core.gateway.http import DEFAULT_TIMEOUTS, Timeouts
from aira_core.gateway.transports import TEXT_SYSTEM

PROVIDER_REQUEST_INVALID = http.PROVIDER_REQUEST_INVALID
PROVIDER_KEY_MISSING = "PROVIDER_KEY_MISSING"
PROVIDER_UNSUPPORTED = "PROVIDER_UNSUPPORTED"

RESERVED_BODY_FIELDS = frozenset({"model", "messages"})
"""Body fields ``extra_body`` may not set: they are the request itself."""


def check_base_url(base_url: str, provider: str) -> str:
    """``base_url`` without a trailing slash; ``PROVIDER_CONFIG_INVALID`` unless it is an
    http(s) URL with a host and no user information, query or fragment."""
    problem = http.url_problem(base_url)
    if problem:
        raise AiraError(PROVIDER_CONFIG_INVALID, f"provider {provider!r}: base_url {problem}")
    return base_url.rstrip("/")


class OpenAICompatProvider:
    """An OpenAI-compatible chat-completions server as a provider.

    ``acceptance`` is the server's documented classification (default: no documented
    refusals, so only the transport rules apply and every error status is ``unknown``);
    ``prices`` the USD per 1M tokens of each model (cost 0 for a model without);
    ``reasoning_field`` the message field a tool-calling turn's reasoning is sent back in
    (``None``: never sent); ``extra_body`` fields added to every request body, last;
    ``api_key_required``: refuse to prepare without a key (``PROVIDER_KEY_MISSING``);
    ``api_key_env``: the environment variable the key is read from when none was given,
    when a call is checked or prepared (never at import or registration);
    ``client`` an ``httpx2.Client`` to send with (tests)."""

    idempotency = False
    jobs = False
    key_label = "an API key"
    """What the missing key is called in ``PROVIDER_KEY_MISSING`` (a plugin names its own)."""

    def __init__(
        self,
        name: str,
        base_url: str,
        models: Sequence[str],
        api_key: str | None = None,
        acceptance: AcceptanceTable | None = None,
        prices: Mapping[str, Prices] | None = None,
        reasoning_field: str | None = chat.REASONING_FIELD,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        extra_body: Mapping[str, Any] | None = None,
        client: Any = None,
        *,
        api_key_required: bool = False,
        api_key_env: str | None = None,
    ) -> None:
        self.name = name
        self.base_url = check_base_url(base_url, name)
        self.models = tuple(models)
        # No models: a server that serves whatever model a route names (configure() adds it).
        if not all(isinstance(m, str) and m for m in self.models):
            raise AiraError(PROVIDER_CONFIG_INVALID, f"provider {name!r}: models must be names")
        reserved = RESERVED_BODY_FIELDS & set(extra_body or {})
        if reserved:
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"provider {name!r}: extra_body may not set {', '.join(sorted(reserved))}",
            )
        if api_key:
            register_secret(api_key)  # scrubbed everywhere, whatever it looks like
        self._api_key = api_key or None
        self.api_key_required = api_key_required
        self.api_key_env = api_key_env
        self.acceptance = acceptance or AcceptanceTable(provider=name)
        self.prices = dict(prices or {})
        self.reasoning_field = reasoning_field
        self.timeouts = timeouts
        self.extra_body = dict(extra_body or {})
        self.client = client

    @classmethod
    def from_settings(
        cls,
        settings: ProviderSettings,
        *,
        acceptance: AcceptanceTable | None = None,
        reasoning_field: str | None = chat.REASONING_FIELD,
        extra_body: Mapping[str, Any] | None = None,
        client: Any = None,
    ) -> OpenAICompatProvider:
        """The provider ``providers.toml`` describes (:mod:`aira_core.gateway.config`); a
        key named by ``api_key_env`` is required (its absence fails at ``prepare``)."""
        if settings.base_url is None or not settings.models:
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"provider {settings.name!r}: a base_url and at least one model are needed",
            )
        if settings.options:
            raise AiraError(PROVIDER_CONFIG_INVALID, f"provider {settings.name!r} takes no options")
        return cls(
            settings.name,
            settings.base_url,
            settings.models,
            api_key=settings.api_key,
            acceptance=acceptance,
            prices=settings.prices,
            reasoning_field=reasoning_field,
            timeouts=settings.timeouts,
            extra_body=extra_body,
            client=client,
            api_key_required=settings.api_key_env is not None,
            api_key_env=settings.api_key_env,
        )

    def configure(self, settings: ProviderSettings) -> OpenAICompatProvider:
        """A copy of this provider under ``settings`` (a ``providers.toml`` table of its kind,
        or the flags of ``aira run``): its name, and each setting given over this one's.
        A key this provider had, and the variable it is read from, are kept only for its
        own base URL: a key is never sent to a server it was not given for. ``options`` go
        to :meth:`apply_options`."""
        import copy

        new = copy.copy(self)
        new.name = settings.name
        if settings.base_url is not None:
            new.base_url = check_base_url(settings.base_url, settings.name)
        if settings.models:
            new.models = tuple(settings.models)
        if settings.api_key_env is not None or settings.api_key is not None:
            if settings.api_key:
                register_secret(settings.api_key)
            new._api_key = settings.api_key or None
            new.api_key_required = settings.api_key_env is not None or new.api_key_required
            new.api_key_env = settings.api_key_env
        elif new.base_url != self.base_url:
            new._api_key = None
            new.api_key_required = False
            new.api_key_env = None
        new.prices = {**self.prices, **settings.prices}
        if settings.timeouts is not DEFAULT_TIMEOUTS:
            new.timeouts = settings.timeouts
        new.acceptance = dataclasses.replace(self.acceptance, provider=settings.name)
        new.extra_body = dict(self.extra_body)
        new.apply_options(dict(settings.options))
        return new

    def apply_options(self, options: dict[str, Any]) -> None:
        """Take a table's ``options`` (a plugin's own settings; called on the copy
        :meth:`configure` made). This class takes none: ``PROVIDER_CONFIG_INVALID``."""
        if options:
            raise AiraError(
                PROVIDER_CONFIG_INVALID,
                f"provider {self.name!r} takes no options",
            )

    def __repr__(self) -> str:  # never the key
        return f"OpenAICompatProvider(name={self.name!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def messages(self, request: StepRequest, transport: Transport) -> list[dict[str, Any]]:
        """The chat messages of ``request`` as ``transport`` has them rendered; a transport
        without its own rendering (a plugin's) gets the ``json`` style: decisions as text."""
        render = getattr(transport, "messages", None)
        if callable(render):
            return render(request, reasoning_field=self.reasoning_field)
        return chat.render_messages(request, style="json", system=TEXT_SYSTEM, reasoning_field=None)

    def preflight(self, model: str) -> None:
        """What :meth:`prepare` would refuse whatever the request: a model this provider
        does not serve, a key it needs and has not (``PROVIDER_KEY_MISSING``, naming the
        variable to set). Local; ``aira run`` asks it of every route before a run directory
        or a ledger task exists."""
        if model not in self.models:
            raise ProviderError(
                PROVIDER_REQUEST_INVALID,
                f"provider {self.name!r} serves no model {model[:80]!r} "
                f"(it serves {', '.join(self.models)}); nothing was sent",
                stage="prepare",
                category="validation",
                acceptance=Acceptance.NOT_ACCEPTED,
            )
        self._load_key()
        if self.api_key_required and not self._api_key:
            where = f" (set {self.api_key_env})" if self.api_key_env else ""
            raise ProviderError(
                PROVIDER_KEY_MISSING,
                f"provider {self.name!r} needs {self.key_label} and none is set{where}; "
                "nothing was sent",
                stage="prepare",
                category="validation",
                acceptance=Acceptance.NOT_ACCEPTED,
            )

    def _load_key(self) -> None:
        """The key from ``api_key_env`` when none was given, registered with the redactor
        before anything could show it."""
        if not self._api_key and self.api_key_env:
            self._api_key = key_from_env(self.api_key_env)

    def prepare(
        self,
        request: StepRequest,
        model: str,
        transport: Transport,
        *,
        idempotency_key: str | None = None,
    ) -> PreparedCall:
        self.preflight(model)
        body: dict[str, Any] = {
            "model": model,
            "messages": self.messages(request, transport),
            **transport.render(request),
            **self.extra_body,
        }
        try:  # here, so a body that cannot be sent fails before the gateway records a send
            content = http.encode_json(body)
        except (TypeError, ValueError) as exc:
            raise ProviderError(
                PROVIDER_REQUEST_INVALID,
                f"the request body for provider {self.name!r} is not JSON "
                f"({type(exc).__name__}); nothing was sent",
                stage="prepare",
                category="validation",
                acceptance=Acceptance.NOT_ACCEPTED,
            ) from None
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return PreparedCall(
            url=self.url,
            body=body,
            headers=headers,
            idempotency_key=idempotency_key,
            content=content,
        )

    def send(self, call: PreparedCall, *, deadline: float) -> ProviderResponse:
        try:
            return http.post_json(
                call.url,
                call.body,
                call.headers,
                deadline=deadline,
                timeouts=self.timeouts,
                table=self.acceptance,
                stage="submit",
                client=self.client,
                content=call.content,
            )
        except ProviderError as exc:
            if exc.code != http.PROVIDER_AUTH_FAILED:
                raise
            raise self._key_hint(exc, sent="Authorization" in call.headers) from None

    def _key_hint(self, exc: ProviderError, *, sent: bool) -> ProviderError:
        """A 401 with where this provider's key comes from: what the user has to fix."""
        table = f"providers.{self.name}"
        if not sent:
            hint = f"no key was sent: name its variable in {table}.api_key_env"
        elif self.api_key_env:
            hint = f"the key sent came from {self.api_key_env}"
        else:
            hint = f"the key sent came from {table}"
        return ProviderError(
            exc.code,
            f"{exc.diagnostic.message} ({hint})",
            stage=exc.stage,
            category=exc.category,
            acceptance=exc.acceptance,
            http_status=exc.http_status,
            provider_code=exc.provider_code,
            retryable=exc.retryable,
        )

    def reply(
        self, response: ProviderResponse, request: StepRequest, model: str, transport: Transport
    ) -> StepReply:
        completion = chat.parse_completion(response.body)
        text, call_id, repairs = transport.parse(completion.message, request)
        return StepReply(
            text=text,
            call_id=call_id,
            provider=self.name,
            model=model,
            reasoning=chat.reasoning_of(completion.message),
            usage=chat.usage_of(completion.usage, self.prices.get(model)),
            stop_reason=chat.stop_reason_of(completion.finish_reason),
            repairs=tuple(repairs),
        )

    def _unsupported(self, stage: str) -> ProviderError:
        return ProviderError(
            PROVIDER_UNSUPPORTED,
            f"provider {self.name!r} has no job API ({stage}); nothing was sent",
            stage=stage,
            category="unsupported",
            acceptance=Acceptance.NOT_ACCEPTED,
        )

    def submit(self, call: PreparedCall, *, deadline: float) -> str:
        raise self._unsupported("submit")

    def poll(self, remote_id: str, *, deadline: float) -> str:
        raise self._unsupported("poll")

    def fetch(self, remote_id: str, *, deadline: float) -> ProviderResponse:
        raise self._unsupported("fetch")

    def cancel(self, remote_id: str, *, deadline: float) -> bool:
        raise self._unsupported("cancel")
