"""The gateway: a :class:`~aira_core.extensions.DecisionSource` that sends each step to the
configured providers, one ``providerId::modelId`` route after another, and records every
billable submission in the :class:`~aira_core.gateway.ledger.AttemptLedger` before a byte of
it can leave the machine (spec 002; docs/gateway.md).

The rules it keeps, whatever fails:

- an Attempt is written and synced with stage ``submitting`` once the request is built
  (locally) and before a byte of it is sent, in one write: a process that dies while
  sending leaves an attempt that the next run classifies ``unknown``;
- the next route is tried only after ``not_accepted`` (nothing was processed); an ``accepted``
  or ``unknown`` attempt is never submitted again by the gateway. The task pauses
  (:class:`GatewayPaused`, a code a person can act on) until an informed retry
  (:meth:`AttemptLedger.informed_retry`: a new linked task) allows a new submission;
- a step whose reply was delivered (persisted) is answered from the ledger, never re-sent;
- an accepted job is only ever watched again and its result fetched again (delivery is
  retried without regeneration); polling failures change watch facts, never the outcome.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aira_core.canonical import sha256_bytes_hex
from aira_core.diagnostics import AiraError, redact
from aira_core.extensions import (
    Acceptance,
    DecisionSource,
    PreparedCall,
    Provider,
    ProviderError,
    ProviderResponse,
    StepReply,
    StepRequest,
    Transport,
)
from aira_core.gateway.config import ProviderSettings
from aira_core.gateway.facts import CancelState, DeliveryState, Outcome, Phase, WatchState
from aira_core.gateway.ledger import (
    AttemptFacts,
    AttemptLedger,
    TaskFacts,
    checked_model,
    request_digest,
)

GATEWAY_NO_ROUTE = "GATEWAY_NO_ROUTE"
GATEWAY_ROUTE_INVALID = "GATEWAY_ROUTE_INVALID"
GATEWAY_PROVIDER_UNKNOWN = "GATEWAY_PROVIDER_UNKNOWN"
GATEWAY_MODEL_UNKNOWN = "GATEWAY_MODEL_UNKNOWN"
GATEWAY_TRANSPORT_UNKNOWN = "GATEWAY_TRANSPORT_UNKNOWN"
GATEWAY_ALL_REFUSED = "GATEWAY_ALL_REFUSED"
ATTEMPT_UNKNOWN = "ATTEMPT_UNKNOWN"
ATTEMPT_UNDELIVERED = "ATTEMPT_UNDELIVERED"
ATTEMPT_WATCH_EXHAUSTED = "ATTEMPT_WATCH_EXHAUSTED"
ATTEMPT_FAILED = "ATTEMPT_FAILED"
ATTEMPT_CANCELED = "ATTEMPT_CANCELED"
ATTEMPT_ENDED = "ATTEMPT_ENDED"
PROVIDER_PLUGIN_FAILED = "PROVIDER_PLUGIN_FAILED"

DEFAULT_CALL_DEADLINE_S = 15 * 60.0
"""One provider call's whole time (the step liveness bound less a minute, spec 003 §7 item 15)."""


class GatewayPaused(AiraError):
    """The gateway stopped for a person: an attempt's facts forbid going on automatically
    (``ATTEMPT_UNKNOWN``, ``ATTEMPT_UNDELIVERED``, ``ATTEMPT_WATCH_EXHAUSTED``,
    ``ATTEMPT_FAILED``, ``GATEWAY_ALL_REFUSED``). ``task`` and ``attempt`` name what to look
    at (``aira tasks show``)."""

    def __init__(self, code: str, message: str, *, task: str, attempt: str | None) -> None:
        super().__init__(code, message, subject=attempt or task)
        self.task = task
        self.attempt = attempt


@dataclass(frozen=True)
class Route:
    """One ``providerId::modelId`` the gateway may submit to."""

    provider: Provider
    model: str

    @property
    def ref(self) -> str:
        return f"{self.provider.name}::{self.model}"


@dataclass(frozen=True)
class WatchPolicy:
    """How an accepted job is watched: the pause between polls and how many failed polls in
    a row exhaust the watch (``watchState=exhausted``; the outcome stays ``unknown``)."""

    interval_s: float = 1.0
    max_failures: int = 5


class Gateway(DecisionSource):
    """Sends a run's steps through ``routes`` for the ledger task ``task_id``."""

    name = "gateway"

    def __init__(
        self,
        routes: Sequence[Route],
        ledger: AttemptLedger,
        task_id: str,
        transport: Transport,
        *,
        deadline_s: float = DEFAULT_CALL_DEADLINE_S,
        watch: WatchPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not routes:
            raise AiraError(GATEWAY_NO_ROUTE, "the gateway needs at least one provider::model")
        self.routes = tuple(routes)
        self.ledger = ledger
        self.transport = transport
        self.deadline_s = deadline_s
        self.watch = watch or WatchPolicy()
        self._sleep = sleep
        chain = ledger.chain(task_id)
        self.task_id = chain[-1].id  # an informed retry continues the run
        self._root = chain[0].id
        self._earlier = tuple(task.id for task in reversed(chain[:-1]))
        """The tasks this run's task retries, newest first: their delivered steps count."""
        self._providers = {route.provider.name: route.provider for route in self.routes}

    # -- the seam ---------------------------------------------------------------------------

    def decide(self, request: StepRequest) -> StepReply:
        attempts = self.ledger.attempts(self.task_id, request.step)
        delivered = self._delivered(attempts, request.step)
        if delivered is not None:
            return delivered  # answered before (the process died before the step's record)
        if any(a.acceptance == Acceptance.NONE for a in attempts):
            for attempt in attempts:
                self._settle_leftover(attempt)
            attempts = self.ledger.attempts(self.task_id, request.step)
        for attempt in attempts:
            if attempt.acceptance == Acceptance.NOT_ACCEPTED:
                continue
            ended = attempt.outcome in (Outcome.FAILED, Outcome.CANCELED)
            if attempt.remote_id and attempt.acceptance == Acceptance.ACCEPTED and not ended:
                # An accepted job of an earlier process: watch it again, never resubmit.
                return self._watch(self._provider_of(attempt), attempt, request)
            self._pause_for(attempt)
        refused: list[str] = []
        for route in self.routes:
            try:
                return self._attempt(route, request)
            except ProviderError as exc:
                if exc.acceptance != Acceptance.NOT_ACCEPTED:
                    raise self._paused_by(exc) from None
                # its message kept: it says what to fix ("set DEEPSEEK_API_KEY")
                refused.append(f"{route.ref}: {exc.code}: {_cut(exc.diagnostic.message)}")
        self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)
        raise GatewayPaused(
            GATEWAY_ALL_REFUSED,
            "no provider accepted step "
            f"{request.step} (every refusal happened before processing): " + "; ".join(refused),
            task=self.task_id,
            attempt=None,
        )

    def finish(self) -> TaskFacts:
        """The run ended (the host decided a terminal state): the task no longer advances."""
        return self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)

    # -- one attempt ------------------------------------------------------------------------

    def _attempt(self, route: Route, request: StepRequest) -> StepReply:
        provider = route.provider
        key = self._idempotency_key(request.step) if provider.idempotency else None
        try:
            call = provider.prepare(request, route.model, self.transport, idempotency_key=key)
            digest = _digest(call)  # a body that cannot be encoded: refused, nothing sent
        except Exception as exc:  # nothing was sent: refused, whatever was raised or claimed
            error = _refusal(exc)
            attempt = self.ledger.begin_attempt(
                self.task_id, request.step, provider.name, route.model, idempotency_key=key
            )
            self._refused(attempt, error, stage="prepare")
            raise error from None
        # Persisted and synced before the first byte moves (one write: the request is built
        # already): dying from here on leaves an attempt the next run sees as unknown.
        attempt = self.ledger.begin_attempt(
            self.task_id,
            request.step,
            provider.name,
            route.model,
            idempotency_key=key,
            request_digest=digest,
            task_phase=Phase.SUBMITTING,
            submitting=True,
        )
        deadline = time.monotonic() + self.deadline_s
        if provider.jobs:
            return self._submit_job(provider, attempt, call, request, deadline)
        try:
            response = provider.send(call, deadline=deadline)
        except ProviderError as exc:
            self._failed(attempt, exc)
            raise
        except Exception as exc:
            error = _plugin_error(exc, "submit", Acceptance.UNKNOWN)
            self._failed(attempt, error)
            raise error from None
        return self._deliver(provider, attempt, response, request)

    def _submit_job(
        self,
        provider: Provider,
        attempt: AttemptFacts,
        call: PreparedCall,
        request: StepRequest,
        deadline: float,
    ) -> StepReply:
        try:
            remote_id = provider.submit(call, deadline=deadline)
        except ProviderError as exc:
            self._failed(attempt, exc, job=True)
            raise
        except Exception as exc:
            error = _plugin_error(exc, "submit", Acceptance.UNKNOWN)
            self._failed(attempt, error, job=True)
            raise error from None
        attempt = self.ledger.update_attempt(
            attempt.id,
            stage="watching",
            phase=Phase.ACCEPTED,
            acceptance=Acceptance.ACCEPTED,
            remote_id=redact(str(remote_id))[:200],
            watch_state=WatchState.ACTIVE,
        )
        return self._watch(provider, attempt, request)

    def _watch(self, provider: Provider, attempt: AttemptFacts, request: StepRequest) -> StepReply:
        """Poll an accepted job until it ends; fetch its result. A failed poll changes only
        the watch facts; enough of them in a row exhaust the watch and pause the task."""
        remote_id = attempt.remote_id or ""
        if attempt.outcome == Outcome.SUCCEEDED:
            return self._fetch(provider, attempt, request)  # delivery again, no regeneration
        attempt = self.ledger.update_attempt(
            attempt.id, stage="watching", watch_state=WatchState.ACTIVE
        )
        failures = 0
        while True:
            try:
                state = provider.poll(remote_id, deadline=time.monotonic() + self.deadline_s)
            except Exception as exc:
                failures += 1
                error = _plugin_error(exc, "poll", None)
                if failures >= self.watch.max_failures:
                    self.ledger.update_attempt(
                        attempt.id,
                        watch_state=WatchState.EXHAUSTED,
                        outcome=Outcome.UNKNOWN,
                        error=_error_wire(error, Acceptance.ACCEPTED),
                    )
                    self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)
                    raise GatewayPaused(
                        ATTEMPT_WATCH_EXHAUSTED,
                        f"{attempt.model}: the job was accepted but {failures} polls in a row "
                        f"failed (last: {error.code}); it is not failed and not resubmitted. "
                        "Resume the run to watch it again",
                        task=self.task_id,
                        attempt=attempt.id,
                    ) from None
                self._sleep(self.watch.interval_s)
                continue
            failures = 0
            if state in ("queued", "running"):
                if attempt.phase != Phase.RUNNING and state == "running":
                    attempt = self.ledger.update_attempt(attempt.id, phase=Phase.RUNNING)
                self._sleep(self.watch.interval_s)
                continue
            if state == "succeeded":
                attempt = self.ledger.update_attempt(
                    attempt.id,
                    outcome=Outcome.SUCCEEDED,
                    watch_state=WatchState.IDLE,
                    delivery_state=DeliveryState.PENDING,
                )
                return self._fetch(provider, attempt, request)
            if state == "canceled":
                self.ledger.update_attempt(
                    attempt.id, outcome=Outcome.CANCELED, watch_state=WatchState.IDLE
                )
                self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)
                raise GatewayPaused(
                    ATTEMPT_CANCELED,
                    f"{attempt.model}: the provider says the job was canceled",
                    task=self.task_id,
                    attempt=attempt.id,
                )
            # "failed", or a state the provider should not have answered: only an explicit
            # failure is a failed outcome; anything else stays unknown.
            failed = state == "failed"
            self.ledger.update_attempt(
                attempt.id,
                outcome=Outcome.FAILED if failed else Outcome.UNKNOWN,
                watch_state=WatchState.IDLE,
            )
            self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)
            raise GatewayPaused(
                ATTEMPT_FAILED if failed else ATTEMPT_UNKNOWN,
                f"{attempt.model}: the job "
                + ("failed at the provider" if failed else f"reported {redact(str(state))[:40]!r}")
                + "; it was accepted, so it is not resubmitted automatically",
                task=self.task_id,
                attempt=attempt.id,
            )

    def _fetch(self, provider: Provider, attempt: AttemptFacts, request: StepRequest) -> StepReply:
        attempt = self.ledger.update_attempt(
            attempt.id, stage="fetching", delivery_state=DeliveryState.DOWNLOADING
        )
        try:
            response = provider.fetch(
                attempt.remote_id or "", deadline=time.monotonic() + self.deadline_s
            )
        except Exception as exc:
            error = _plugin_error(exc, "fetch", None)
            self._undelivered(attempt, error)
        return self._deliver(provider, attempt, response, request)

    def _deliver(
        self,
        provider: Provider,
        attempt: AttemptFacts,
        response: ProviderResponse,
        request: StepRequest,
    ) -> StepReply:
        """The reply out of an accepted response, persisted before it is used: from here on
        the step is answered from the ledger, whatever happens to this process."""
        try:
            reply = provider.reply(response, request, attempt.model_id, self.transport)
        except Exception as exc:
            error = _plugin_error(exc, "parse", None)
            self._undelivered(attempt, error)
        reply = _storable(reply)
        # One write: the reply, and with it the acceptance it proves.
        self.ledger.deliver(attempt.id, reply.to_wire(), task_phase=Phase.RUNNING)
        return reply

    # -- facts --------------------------------------------------------------------------------

    def _refused(self, attempt: AttemptFacts, error: ProviderError, *, stage: str) -> None:
        self.ledger.update_attempt(
            attempt.id,
            stage=stage,
            acceptance=Acceptance.NOT_ACCEPTED,
            phase=Phase.TERMINAL,
            error=_error_wire(error, Acceptance.NOT_ACCEPTED),
        )

    def _failed(self, attempt: AttemptFacts, error: ProviderError, *, job: bool = False) -> None:
        """A submission that gave no response: its acceptance is what the error proves. The
        attempt will not be advanced automatically (phase terminal) unless it was refused,
        and then a next route may be tried."""
        changes: dict[str, Any] = {
            "acceptance": error.acceptance,
            "error": _error_wire(error, error.acceptance),
            "phase": Phase.TERMINAL,
        }
        if error.acceptance == Acceptance.ACCEPTED and not job:
            # processed (a 2xx) but its body could not be read: succeeded, not delivered
            changes.update(outcome=Outcome.SUCCEEDED, delivery_state=DeliveryState.FAILED)
        elif error.acceptance != Acceptance.NOT_ACCEPTED:
            # unknown, or a job submit answered without a readable id: whether anything is
            # being generated is not known (never a made-up success)
            changes["outcome"] = Outcome.UNKNOWN
        self.ledger.update_attempt(attempt.id, **changes)
        if error.acceptance != Acceptance.NOT_ACCEPTED:
            self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)

    def _undelivered(self, attempt: AttemptFacts, error: ProviderError) -> Any:
        # An answer came (a 2xx, or a job the provider says succeeded): accepted, succeeded,
        # and only its delivery failed.
        self.ledger.update_attempt(
            attempt.id,
            acceptance=Acceptance.ACCEPTED,
            outcome=Outcome.SUCCEEDED,
            delivery_state=DeliveryState.FAILED,
            phase=Phase.TERMINAL,
            error=_error_wire(error, Acceptance.ACCEPTED),
        )
        self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)
        again = (
            "resume the run to fetch it again (it is not regenerated)"
            if attempt.remote_id
            else "the provider keeps no copy to fetch again; only an informed retry "
            "(aira tasks retry) submits the step again"
        )
        raise GatewayPaused(
            ATTEMPT_UNDELIVERED,
            f"{attempt.model}: the provider answered step {attempt.step} but its reply could not "
            f"be delivered ({error.code}: {error.diagnostic.message}); {again}",
            task=self.task_id,
            attempt=attempt.id,
        ) from None

    def _settle_leftover(self, attempt: AttemptFacts) -> None:
        """An attempt an earlier process left unfinished: still ``preparing`` (nothing was
        sent: not accepted), or ``submitting`` with no answer recorded (it may have been
        sent: unknown)."""
        if attempt.acceptance != Acceptance.NONE:
            return
        if attempt.stage == "preparing":
            self.ledger.update_attempt(
                attempt.id,
                acceptance=Acceptance.NOT_ACCEPTED,
                phase=Phase.TERMINAL,
                error={
                    "stage": "prepare",
                    "category": "interrupted",
                    "acceptance": "not_accepted",
                    "message": "the process ended before the request was sent",
                },
            )
            return
        self.ledger.update_attempt(
            attempt.id,
            acceptance=Acceptance.UNKNOWN,
            outcome=Outcome.UNKNOWN,
            error={
                "stage": "submit",
                "category": "interrupted",
                "acceptance": "unknown",
                "message": "the process ended while the request was being submitted; the "
                "provider may have processed it",
            },
        )

    def _pause_for(self, attempt: AttemptFacts) -> None:
        self.ledger.set_task(self.task_id, phase=Phase.TERMINAL)
        if attempt.outcome in (Outcome.FAILED, Outcome.CANCELED):
            raise GatewayPaused(
                ATTEMPT_FAILED if attempt.outcome == Outcome.FAILED else ATTEMPT_CANCELED,
                f"{attempt.model}: step {attempt.step} was accepted and then "
                f"{attempt.outcome.value} at the provider; it is not resubmitted "
                "automatically: `aira tasks retry` to submit it again",
                task=self.task_id,
                attempt=attempt.id,
            )
        if attempt.acceptance == Acceptance.ACCEPTED:
            raise GatewayPaused(
                ATTEMPT_UNDELIVERED,
                f"{attempt.model} accepted step {attempt.step} but no reply was kept; it is not "
                "resubmitted automatically: `aira tasks retry` after checking with the "
                "provider",
                task=self.task_id,
                attempt=attempt.id,
            )
        raise GatewayPaused(
            ATTEMPT_UNKNOWN,
            f"{attempt.model} may have processed step {attempt.step} (its answer was lost); it is "
            "not resubmitted automatically: `aira tasks retry` after checking with the "
            "provider",
            task=self.task_id,
            attempt=attempt.id,
        )

    def _paused_by(self, exc: ProviderError) -> GatewayPaused:
        latest = self.ledger.attempts(self.task_id)[-1]
        undelivered = latest.delivery_state == DeliveryState.FAILED
        code = ATTEMPT_UNDELIVERED if undelivered else ATTEMPT_UNKNOWN
        what = (
            "answered, but its reply could not be read"
            if undelivered
            else "may have processed the request"
        )
        return GatewayPaused(
            code,
            f"{latest.model} {what} ({exc.code}: {exc.diagnostic.message}); the step is not "
            "resubmitted automatically: `aira tasks retry` after checking with the provider",
            task=self.task_id,
            attempt=latest.id,
        )

    def _delivered(self, attempts: Sequence[AttemptFacts], step: int) -> StepReply | None:
        """The reply delivered for ``step``: by this task (``attempts``) or by a task it
        retries (a step delivered before the informed retry is not sent again)."""
        for attempt in attempts:
            if attempt.delivery_state == DeliveryState.READY and attempt.reply:
                return StepReply.from_wire(attempt.reply)
        for task in self._earlier:
            for attempt in self.ledger.attempts(task, step):
                if attempt.delivery_state == DeliveryState.READY and attempt.reply:
                    return StepReply.from_wire(attempt.reply)
        return None

    def _idempotency_key(self, step: int) -> str:
        """One key per step of the run's root task: an informed retry of the step sends the
        same key, so a provider that honours it answers the first processing again."""
        return f"aira-{self._root}-s{step}"

    def _provider_of(self, attempt: AttemptFacts) -> Provider:
        try:
            return self._providers[attempt.provider_id]
        except KeyError:
            raise GatewayPaused(
                ATTEMPT_UNDELIVERED,
                f"step {attempt.step} was accepted by {attempt.provider_id}, which this run "
                "was not given; resume with that provider to watch and fetch it",
                task=self.task_id,
                attempt=attempt.id,
            ) from None


def resolve_routes(
    refs: Sequence[str],
    registry: Any = None,
    settings: Mapping[str, ProviderSettings] | None = None,
) -> list[Route]:
    """The routes ``providerId::modelId`` name, in order, from the providers the plugins
    registered (``aira_register_providers``).

    With ``settings`` (``providers.toml``'s tables, by name, and what the flags of ``aira
    run`` put over them): a provider id that names a table is the registered provider of
    the table's ``kind``, configured with it (:class:`~aira_core.extensions.ConfigurableProvider`).
    A provider that lists no models (a generic OpenAI-compatible server) serves the model
    its route names."""
    if registry is None:
        from aira_core.plugins import get_registry

        registry = get_registry()
    providers = registry.named("providers")
    settings = settings or {}
    routes = []
    for ref in refs:
        provider_id, sep, model = ref.partition("::")
        if not sep or not provider_id or not model:
            raise AiraError(
                GATEWAY_ROUTE_INVALID,
                f"{redact(ref)[:120]!r} is no route: write providerId::modelId",
            )
        table = settings.get(provider_id)
        kind = table.kind if table is not None else provider_id
        provider = providers.get(kind)
        if provider is None:
            via = f" (the kind of providers.{provider_id})" if kind != provider_id else ""
            raise AiraError(
                GATEWAY_PROVIDER_UNKNOWN,
                f"no provider {kind!r}{via} is installed "
                f"(installed: {', '.join(sorted(providers)) or 'none'})",
            )
        configure = getattr(provider, "configure", None)
        if table is not None and not callable(configure):
            raise AiraError(
                GATEWAY_PROVIDER_UNKNOWN,
                f"provider {kind!r} cannot be configured; remove providers.{provider_id}",
            )
        if callable(configure) and (table is not None or not provider.models):
            table = table or ProviderSettings(name=provider_id, kind=kind)
            provider = _configured(configure, table, provider_id)
            if not provider.models:  # serves whatever model a route names
                provider = _configured(
                    configure, dataclasses.replace(table, models=(model,)), provider_id
                )
        if model not in provider.models:
            raise AiraError(
                GATEWAY_MODEL_UNKNOWN,
                f"provider {provider_id!r} serves no model {model!r} "
                f"(it serves {', '.join(provider.models) or 'none'})",
            )
        try:  # what every attempt of the route records: refused now, not at the first step
            checked_model(provider.name, model)
        except AiraError as exc:
            raise AiraError(GATEWAY_ROUTE_INVALID, exc.diagnostic.message) from None
        routes.append(Route(provider, model))
    return routes


def _cut(message: str, limit: int = 240) -> str:
    return message if len(message) <= limit else message[: limit - 1] + "…"


def preflight(routes: Sequence[Route]) -> None:
    """Ask each route's provider what it would refuse whatever the request (a key it needs
    and has not, with the variable to set): its optional ``preflight(model)``. Local; a
    run does it before it creates anything. A plugin's own refusal passes as it is;
    anything else it raises is ``PROVIDER_PLUGIN_FAILED``."""
    for route in routes:
        check = getattr(route.provider, "preflight", None)
        if not callable(check):
            continue
        try:
            check(route.model)
        except AiraError:
            raise
        except Exception as exc:
            raise AiraError(
                PROVIDER_PLUGIN_FAILED,
                f"provider {route.provider.name!r}: preflight raised {type(exc).__name__}",
            ) from None


def _configured(configure: Callable[[Any], Any], table: ProviderSettings, name: str) -> Provider:
    """A plugin's ``configure``, guarded: its own refusal (an AiraError) as it is; anything
    else raised, or anything but a provider returned, ``PROVIDER_PLUGIN_FAILED``."""
    try:
        provider = configure(table)
    except AiraError:
        raise
    except Exception as exc:
        raise AiraError(
            PROVIDER_PLUGIN_FAILED,
            f"provider {name!r}: configure raised {type(exc).__name__}",
        ) from None
    if not isinstance(provider, Provider):
        raise AiraError(
            PROVIDER_PLUGIN_FAILED, f"provider {name!r}: configure returned no provider"
        )
    return provider


def resolve_transport(name: str, registry: Any = None) -> Transport:
    """The decision transport ``name``: a plugin's (``aira_register_transports``), else a
    built-in one (``tool``, ``json``, ``strict``)."""
    if registry is None:
        from aira_core.plugins import get_registry

        registry = get_registry()
    from aira_core.gateway.transports import BUILTIN_TRANSPORTS

    registered = registry.named("transports")
    transport = registered.get(name)
    if transport is not None:
        return transport
    builtin = BUILTIN_TRANSPORTS.get(name)
    if builtin is None:
        known = sorted({*registered, *BUILTIN_TRANSPORTS})
        raise AiraError(
            GATEWAY_TRANSPORT_UNKNOWN,
            f"no decision transport {redact(name)[:60]!r} (known: {', '.join(known)})",
        )
    return builtin


def cancel(
    ledger: AttemptLedger, attempt_id: str, provider: Provider | None, *, deadline_s: float = 30.0
) -> AttemptFacts:
    """Ask for an attempt to stop (spec 002 §8): ``requested`` first; the provider's
    confirmation makes it ``remote_confirmed`` (outcome canceled); an attempt that never left
    the machine is ``local_confirmed``; no answer, a refusal or no cancel support leaves
    ``unknown`` and the outcome as it was. An attempt whose outcome is already final
    (succeeded, failed, canceled) has nothing left to stop: ``ATTEMPT_ENDED``, nothing
    written."""
    before = ledger.attempt(attempt_id)
    if before.outcome in (Outcome.SUCCEEDED, Outcome.FAILED, Outcome.CANCELED):
        raise AiraError(
            ATTEMPT_ENDED,
            f"attempt {attempt_id} already {before.outcome.value}: there is nothing to cancel",
            subject=attempt_id,
        )
    attempt = ledger.update_attempt(attempt_id, cancel_state=CancelState.REQUESTED)
    if attempt.stage == "preparing" or attempt.acceptance == Acceptance.NOT_ACCEPTED:
        return ledger.update_attempt(
            attempt_id,
            cancel_state=CancelState.LOCAL_CONFIRMED,
            outcome=Outcome.CANCELED,
            phase=Phase.TERMINAL,
        )
    confirmed = False
    if provider is not None and provider.jobs and attempt.remote_id:
        try:
            confirmed = bool(
                provider.cancel(attempt.remote_id, deadline=time.monotonic() + deadline_s)
            )
        except Exception:  # lost, refused or broken: the cancel is not confirmed
            confirmed = False
    if confirmed:
        return ledger.update_attempt(
            attempt_id,
            cancel_state=CancelState.REMOTE_CONFIRMED,
            outcome=Outcome.CANCELED,
            watch_state=WatchState.IDLE,
            phase=Phase.TERMINAL,
        )
    return ledger.update_attempt(attempt_id, cancel_state=CancelState.UNKNOWN)


def _refusal(exc: BaseException) -> ProviderError:
    """What a failure while preparing proves: nothing was sent, so not_accepted, whatever
    the plugin raised or claimed."""
    if isinstance(exc, ProviderError) and exc.acceptance == Acceptance.NOT_ACCEPTED:
        return exc
    if isinstance(exc, ProviderError):
        return ProviderError(
            exc.code,
            exc.diagnostic.message,
            stage="prepare",
            category=exc.category,
            acceptance=Acceptance.NOT_ACCEPTED,
            http_status=exc.http_status,
            provider_code=exc.provider_code,
            retryable=exc.retryable,
        )
    return _plugin_error(exc, "prepare", Acceptance.NOT_ACCEPTED)


def _storable(reply: StepReply) -> StepReply:
    """The reply with texts UTF-8 can carry (a lone surrogate, valid in a JSON string,
    becomes ``?``), as the prompt and the ledger hold it."""
    from aira_core.step.ledger import clean_text

    return dataclasses.replace(
        reply,
        text=clean_text(reply.text),
        call_id=clean_text(reply.call_id),
        reasoning=clean_text(reply.reasoning),
        provider=clean_text(reply.provider),
        model=clean_text(reply.model),
        stop_reason=clean_text(reply.stop_reason),
        repairs=tuple(clean_text(r) for r in reply.repairs),
    )


def _digest(call: PreparedCall) -> str:
    """What the ledger keeps of a request: the digest of the bytes sent when the provider
    encoded them (one encoding, one hash pass), else of the body's canonical JSON."""
    if call.content is not None:
        return "sha256:" + sha256_bytes_hex(call.content)
    return request_digest(dict(call.body))


def _error_wire(error: ProviderError, acceptance: Acceptance | None) -> dict[str, Any]:
    wire = error.to_wire()
    if acceptance is not None:
        wire["acceptance"] = Acceptance(acceptance).value
    return wire


def _plugin_error(exc: BaseException, stage: str, acceptance: Acceptance | None) -> ProviderError:
    """A provider plugin raised something that is not a ProviderError: what it proves is
    what the stage allows (nothing is sent while preparing; anything later may have been)."""
    return ProviderError(
        PROVIDER_PLUGIN_FAILED,
        f"the provider plugin failed while {stage}: {type(exc).__name__}",
        stage=stage,
        category="plugin",
        acceptance=acceptance or Acceptance.UNKNOWN,
    )
