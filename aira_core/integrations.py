"""The integration seam (spec 004, the three-product contract): what an Intent Loop, a
Context Continuity and an Execution Fidelity Guard adapter implement, the values they and
the host exchange, and :class:`Integrations`, the one place the host calls them.

Who owns what: the intent adapter owns the intent (the contract's ref and version, the
frame after binding); the continuity adapter owns what survives a lossy conversion (the
open commitments the next round's capsule carries); the guard judges effects and
completion and writes nothing. The host executes, approves and decides terminal states.
Nobody keeps a second copy of the truth: adapters get immutable values (frozen
dataclasses, tuples, copies of frames), never the host's objects, and the host takes
nothing back but the typed answer.

Moments (the step host and the runtime call these; docs/plugins.md):

- ``bind`` once at the task's start, before the first capsule: the bound frame is what the
  capsule's intent segment shows and what ``plan.check`` checks (scope, prohibited effects);
- ``lossy_conversion`` at every round's compaction and once at the task's end;
- ``judge`` before every effect the runtime admits (every meta-operation that is not a read)
  and before each file a run exports;
- ``completion`` on every ``done`` act; ``finish`` once, with every (event, verdict) pair.

Fail-open: every call runs in a daemon thread and is waited for at most
:data:`CALL_SECONDS`. An adapter that raises, times out or answers with anything but its
typed value is absent for that call: the host does what it does with no adapter (unbound,
advisory), records one ``INTEGRATION_FAILED`` warning naming the adapter, the call and the
kind of failure (an exception's type, never its message or traceback), and goes on. A
timed-out call's thread cannot be stopped; its answer is dropped. An absent adapter is no
failure and records nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError, Diagnostic, Severity
from aira_core.extensions import INTEGRATION_ROLES, Integration, IntegrationRole
from aira_core.plugins import _PluginRaised, _run_plugin_code, _TimedOut
from aira_core.runtime.contract import RuntimeState

__all__ = [
    "CALL_SECONDS",
    "CONTINUATIONS_PER_VERSION",
    "GUARD_APPROVAL_REQUIRED",
    "GUARD_BLOCKED",
    "GUARD_CONTINUE_VERIFICATION",
    "INTEGRATION_FAILED",
    "INTEGRATION_ROLE_CONFLICT",
    "CompletionClaim",
    "CompletionVerdict",
    "ContinuityAdapter",
    "ContinuityCarry",
    "ContractBinding",
    "EffectEvent",
    "GuardAdapter",
    "GuardRecord",
    "GuardVerdict",
    "IntegrationOptions",
    "Integrations",
    "IntentAdapter",
    "IntentBinding",
    "LossyConversion",
    "artifact_ref",
    "configured_integrations",
    "phase_of",
    "registered_integrations",
]

INTEGRATION_FAILED = "INTEGRATION_FAILED"
INTEGRATION_ROLE_CONFLICT = "INTEGRATION_ROLE_CONFLICT"
GUARD_BLOCKED = "GUARD_BLOCKED"
GUARD_APPROVAL_REQUIRED = "GUARD_APPROVAL_REQUIRED"
GUARD_CONTINUE_VERIFICATION = "GUARD_CONTINUE_VERIFICATION"

CALL_SECONDS = 5.0
"""The longest the host waits for one adapter call. An adapter reads a local file or asks a
local process; five seconds is generous for that and still short beside a model's step."""
CONTINUATIONS_PER_VERSION = 2
"""``continue_verification`` verdicts the host follows per contract version (the Guard's own
``maxStopContinuations``); after them a ``done`` is the runtime's decision alone."""
CONTINUATION_CAP_REACHED = "continuation_cap_reached"
"""The reason of the ``remind`` the host turns a capped ``continue_verification`` into (the
Guard's own reason code for it)."""
COMMITMENT_MAX = 32
COMMITMENT_MAX_CHARS = 500
"""Bounds on what an adapter may hand the capsule: more is an invalid answer, not a cut."""

EffectKind = Literal["read", "bufferable", "reversible", "irreversible", "external"]
"""The runtime's effect classes (:class:`aira_core.runtime.contract.EffectClass`), and
``external`` for what leaves the store: an exported file."""
GuardDecision = Literal["allow", "block", "ask"]
CompletionDecision = Literal["allow", "continue_verification", "remind"]
Trigger = Literal["compaction", "end"]

_REASON = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _text(value: Any, what: str, limit: int = 1000) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ValueError(f"{what} is a non-empty string of at most {limit} characters")


def _strings(values: Any, what: str) -> None:
    if not isinstance(values, tuple) or len(values) > COMMITMENT_MAX:
        raise ValueError(f"{what} is a tuple of at most {COMMITMENT_MAX} strings")
    for value in values:
        _text(value, what, COMMITMENT_MAX_CHARS)
    if len(set(values)) != len(values):
        raise ValueError(f"{what} holds an item twice")


def _json_copy(value: Any) -> Any:
    """A detached JSON copy of ``value`` (``ValueError``/``TypeError`` for anything else): a
    receipt is the adapter's, kept as data, never as its object."""
    return json.loads(json.dumps(value, allow_nan=False, sort_keys=True))


# -- values ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContractBinding:
    """Which user-intent contract a task works under: the intent owner's stable ref and its
    version (raised only by the owner, for a change the user authorised)."""

    contract_ref: str
    contract_version: int

    def __post_init__(self) -> None:
        _text(self.contract_ref, "contract_ref", 256)
        version = self.contract_version
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError("contract_version is a positive integer")


@dataclass(frozen=True)
class IntentBinding:
    """What an intent adapter bound a task's Intent Frame to. ``frame`` is the frame after
    binding (objective → goal, must → hard requirements, must_not → prohibited effects,
    scope, completion evidence → acceptance where a validator exists): the adapter maps,
    the seam carries. ``stale``: the owner's last verified contract, not a current one."""

    contract_ref: str
    contract_version: int
    snapshot_sha256: str
    source: str
    stale: bool
    frame: IntentFrame

    def __post_init__(self) -> None:
        ContractBinding(self.contract_ref, self.contract_version)
        if not isinstance(self.snapshot_sha256, str) or not _HEX64.match(self.snapshot_sha256):
            raise ValueError("snapshot_sha256 is 64 lowercase hex digits")
        _text(self.source, "source", 256)
        if not isinstance(self.stale, bool) or not isinstance(self.frame, IntentFrame):
            raise ValueError("stale is a bool and frame an IntentFrame")

    @property
    def contract(self) -> ContractBinding:
        return ContractBinding(self.contract_ref, self.contract_version)


@dataclass(frozen=True)
class LossyConversion:
    """What the host knows when it drops context: at a round's compaction or at the task's
    end. ``phase`` is :func:`phase_of` the runtime's state. ``open_commitments`` are what the
    host knows is still open, each one line: ``requirement: <text>`` (a hard requirement of
    the frame, open until the runtime completes the task), ``approval: <operation>
    <request id>`` (a call the guard asked the user about) and ``repair: <code>`` (the
    rejection the model has yet to repair). ``evidence_refs`` are
    ``artifact:sha256:<hex>`` of the task's committed revisions (the revision id's hex) and,
    at the end of a run, of its exported files (the file's bytes)."""

    task_id: str
    contract: ContractBinding | None
    trigger: Trigger
    phase: str
    open_commitments: tuple[str, ...]
    evidence_refs: tuple[str, ...]
    captured_at: str


@dataclass(frozen=True)
class ContinuityCarry:
    """The open commitments the next round's capsule carries (its intent segment, in this
    order): the continuity adapter's answer to a lossy conversion."""

    open_commitments: tuple[str, ...]

    def __post_init__(self) -> None:
        _strings(self.open_commitments, "open_commitments")


@dataclass(frozen=True)
class EffectEvent:
    """One effect a task requests, before it runs. ``operation`` is the meta-operation (or
    ``export``); ``action`` says it short: ``model.commit``, ``publish``, ``export:step``.
    ``capabilities``: those of the plan it carries, when it carries one; ``target``: the
    branch or file it writes; ``digest``: ``artifact:sha256:<hex>`` of the bytes an export
    would write."""

    task_id: str
    contract: ContractBinding | None
    request_id: str
    operation: str
    effect_class: EffectKind
    action: str
    capabilities: tuple[str, ...] = ()
    target: str | None = None
    digest: str | None = None


@dataclass(frozen=True)
class GuardVerdict:
    """``allow``; ``block`` (the call is refused, ``GUARD_BLOCKED``); ``ask`` (this one call
    waits for the user's approval, ``GUARD_APPROVAL_REQUIRED``). ``reason`` is a short code
    (``explicit_contract_conflict``); ``receipt`` any JSON the adapter wants kept."""

    decision: GuardDecision
    reason: str
    receipt: Any = None

    def __post_init__(self) -> None:
        _verdict(self.decision, get_args(GuardDecision), self.reason)


@dataclass(frozen=True)
class CompletionClaim:
    """A ``done`` act, as the guard sees it: the model's summary, what the runtime's own
    completion check says (``COMPLETED`` or its reason, e.g. ``COMPLETION_EVIDENCE_MISSING``),
    the evidence refs of the task's commits and how many continuations were already asked
    under this contract version."""

    task_id: str
    contract: ContractBinding | None
    summary: str
    runtime_decision: str
    evidence_refs: tuple[str, ...]
    continuations: int


@dataclass(frozen=True)
class CompletionVerdict:
    """``allow`` (the runtime decides); ``continue_verification`` (the task goes on: the
    ``done`` is refused with ``GUARD_CONTINUE_VERIFICATION``, at most
    :data:`CONTINUATIONS_PER_VERSION` times per contract version); ``remind`` (advisory:
    the runtime decides, the model reads the reason)."""

    decision: CompletionDecision
    reason: str
    receipt: Any = None

    def __post_init__(self) -> None:
        _verdict(self.decision, get_args(CompletionDecision), self.reason)


def _verdict(decision: Any, allowed: tuple[str, ...], reason: Any) -> None:
    if decision not in allowed:
        raise ValueError(f"decision is one of {', '.join(allowed)}")
    if not isinstance(reason, str) or not _REASON.match(reason):
        raise ValueError("reason is a short code")


@dataclass(frozen=True)
class GuardRecord:
    """One judgement the host kept: the event or claim, the adapter's verdict (its receipt a
    detached copy) and what the host applied (a capped ``continue_verification`` is applied
    as ``remind``)."""

    event: EffectEvent | CompletionClaim
    verdict: GuardVerdict | CompletionVerdict
    applied: str


# -- the protocols ------------------------------------------------------------------------------


@runtime_checkable
class IntentAdapter(Protocol):
    """Binds a task's Intent Frame to the intent owner's contract; ``None``: unbound."""

    name: str
    role: Literal["intent"]

    def bind(self, frame: IntentFrame) -> IntentBinding | None: ...


@runtime_checkable
class ContinuityAdapter(Protocol):
    """Keeps what a lossy conversion must not lose; ``None``: nothing to carry."""

    name: str
    role: Literal["continuity"]

    def lossy_conversion(self, event: LossyConversion) -> ContinuityCarry | None: ...


@runtime_checkable
class GuardAdapter(Protocol):
    """Judges effects and completion, read-only; gets every judgement back at the end."""

    name: str
    role: Literal["guard"]

    def judge(self, event: EffectEvent) -> GuardVerdict: ...

    def completion(self, claim: CompletionClaim) -> CompletionVerdict: ...

    def finish(self, records: tuple[GuardRecord, ...]) -> None: ...


_PROTOCOLS: dict[str, type] = {
    "intent": IntentAdapter,
    "continuity": ContinuityAdapter,
    "guard": GuardAdapter,
}


# -- helpers the host uses ------------------------------------------------------------------------

_PHASES = {
    RuntimeState.READY: "discovery",
    RuntimeState.DISCOVERED: "discovery",
    RuntimeState.DESCRIBED: "discovery",
    RuntimeState.PROPOSED: "authoring",
    RuntimeState.PREVIEWED: "authoring",
    RuntimeState.VALIDATED: "authoring",
    RuntimeState.REPAIRING: "repair",
    RuntimeState.COMMITTED: "verification",
    RuntimeState.TERMINAL: "done",
}


def phase_of(state: RuntimeState) -> str:
    """The host phase a runtime state is in: ``discovery`` (nothing proposed yet),
    ``authoring`` (a plan on its way to a commit), ``repair``, ``verification`` (committed,
    not yet done) or ``done`` (terminal)."""
    return _PHASES[state]


def artifact_ref(rev_or_bytes: str | bytes) -> str:
    """``artifact:sha256:<hex>``: of a revision id (its own hex) or of a file's bytes."""
    if isinstance(rev_or_bytes, bytes):
        return "artifact:sha256:" + hashlib.sha256(rev_or_bytes).hexdigest()
    return "artifact:sha256:" + rev_or_bytes.rsplit(":", 1)[-1]


@dataclass(frozen=True)
class IntegrationOptions:
    """What a user gives a run's adapters (``aira run --integrations``, ``--contract FILE``):
    the contract file (a provider document or a TaskContractLite; ``None``: the intent adapter
    derives one from the Intent Frame) and the run's directory, below which an adapter writes
    what it exports (snapshots, receipts) — never anywhere else."""

    contract: Path | None = None
    run_dir: Path | None = None
    validators: tuple[str, ...] = ()
    """The admitted validators (capability ids and ``validatorRef`` targets): a completion
    requirement that names one can become an acceptance assertion of the bound frame."""


def configured_integrations(
    options: IntegrationOptions, registry: Any = None
) -> tuple[list[Any], list[Diagnostic]]:
    """The registered integrations, each given ``options`` through its ``configure`` method
    (an adapter without one takes none). Fail-open: an adapter whose ``configure`` raises or
    does not return in time is left out of the run with one ``INTEGRATION_FAILED`` warning
    (its exception's type only), and the run goes on without it."""
    adapters, warnings = [], []
    for adapter in registered_integrations(registry):
        configure = getattr(adapter, "configure", None)
        if configure is None:
            adapters.append(adapter)
            continue
        label = (
            f"{getattr(adapter, 'role', '?')}:{getattr(adapter, 'name', type(adapter).__name__)}"
        )
        try:
            _run_plugin_code(lambda c=configure: c(options), label, seconds=CALL_SECONDS)
        except _TimedOut:
            why = f"did not answer within {CALL_SECONDS:g} s"
        except _PluginRaised as exc:
            # an AiraError's stable code says why (a contract file it refused, say); any
            # other exception only by its type, never its message
            code = getattr(exc.raised, "code", None) if isinstance(exc.raised, AiraError) else None
            why = f"raised {type(exc.raised).__name__}" + (f" ({code})" if code else "")
        else:
            adapters.append(adapter)
            continue
        warnings.append(
            Diagnostic(
                code=INTEGRATION_FAILED,
                severity=Severity.WARNING,
                subject=label,
                message=f"adapter {label}: configure {why}; the run goes on without it",
            )
        )
    return adapters, warnings


def registered_integrations(registry: Any = None) -> list[Any]:
    """The integrations the loaded plugins registered (``aira_register_integrations``), by
    name; hand them to :class:`Integrations`, which sorts them by role."""
    from aira_core.plugins import get_registry

    registry = registry if registry is not None else get_registry()
    return [registry.named("integrations")[n] for n in sorted(registry.named("integrations"))]


# -- the host's side -------------------------------------------------------------------------------


class Integrations:
    """The active adapters of one run, at most one per role, and everything the host keeps
    of them: the binding, the guard's records, the continuations asked, the warnings.

    Two adapters of one role are refused here, at the run's start
    (``INTEGRATION_ROLE_CONFLICT``): which one owns the intent (or judges) must not depend
    on install order, and the contract allows exactly one intent owner. An object whose role
    is none of the three, or which lacks its role's methods, is not active (one
    ``INTEGRATION_FAILED`` warning): fail-open, as for a broken call."""

    def __init__(self, adapters: Iterable[Any] = (), *, seconds: float = CALL_SECONDS) -> None:
        self.seconds = seconds
        self.diagnostics: list[Diagnostic] = []
        self.records: list[GuardRecord] = []
        self.binding: IntentBinding | None = None
        self._active: dict[str, Any] = {}
        self._continuations: dict[ContractBinding | None, int] = {}
        for adapter in adapters:
            role = getattr(adapter, "role", None)
            name = getattr(adapter, "name", None)
            label = name if isinstance(name, str) and name else type(adapter).__name__
            if role not in INTEGRATION_ROLES:
                self._warn(f"?:{label}", f"adapter {label!r} has no role of {INTEGRATION_ROLES}")
                continue
            if not isinstance(adapter, _PROTOCOLS[role]) or not isinstance(name, str) or not name:
                self._warn(f"{role}:{label}", f"{role} adapter {label!r} lacks a method or a name")
                continue
            if role in self._active:
                raise AiraError(
                    INTEGRATION_ROLE_CONFLICT,
                    f"two {role} adapters: {self._active[role].name!r} and {name!r}; a run takes "
                    "at most one per role (disable one plugin)",
                    subject=role,
                )
            self._active[role] = adapter

    def reported(self) -> list[Diagnostic]:
        """The host's warnings, then what each active adapter recorded itself in a
        ``diagnostics`` list (a contract it refused to bind, say): read once, at the end."""
        own: list[Diagnostic] = []
        for adapter in self._active.values():
            try:  # an adapter's own record is read, never trusted to behave
                own.extend(
                    d
                    for d in list(getattr(adapter, "diagnostics", None) or ())
                    if isinstance(d, Diagnostic)
                )
            except Exception:
                continue
        return [*self.diagnostics, *own]

    def active(self, role: IntegrationRole) -> Integration | None:
        return self._active.get(role)

    @property
    def contract(self) -> ContractBinding | None:
        """The contract the task works under (None: unbound)."""
        return self.binding.contract if self.binding is not None else None

    # -- the fail-open call --------------------------------------------------------------------

    def _warn(self, subject: str, message: str) -> None:
        diagnostic = Diagnostic(
            code=INTEGRATION_FAILED,
            severity=Severity.WARNING,
            subject=subject,
            message=message + "; treated as absent, the run goes on",
        )
        if diagnostic not in self.diagnostics:  # the same failure again says nothing new
            self.diagnostics.append(diagnostic)

    def _call(self, role: str, method: str, value: Any, expected: type) -> Any:
        """``adapter.method(value)`` bounded by :attr:`seconds`: its answer if it is an
        ``expected`` (or None where the protocol allows it), else None with a warning."""
        adapter = self._active.get(role)
        if adapter is None:
            return None
        where = f"{role}:{adapter.name}"
        what = f"{role} adapter {adapter.name!r}: {method}"
        try:
            answer = _run_plugin_code(
                lambda: getattr(adapter, method)(value), f"{what}", seconds=self.seconds
            )
        except _TimedOut:
            self._warn(where, f"{what} did not answer within {self.seconds:g} s")
            return None
        except _PluginRaised as exc:
            self._warn(where, f"{what} raised {type(exc.raised).__name__}")
            return None
        if answer is None or isinstance(answer, expected):
            return answer
        self._warn(where, f"{what} answered a {type(answer).__name__}, not a {expected.__name__}")
        return None

    # -- the moments -----------------------------------------------------------------------------

    def bind(self, frame: IntentFrame) -> IntentBinding | None:
        """The binding of ``frame`` (kept as :attr:`binding`), or None: unbound."""
        binding = self._call("intent", "bind", frame.model_copy(deep=True), IntentBinding)
        if binding is not None:
            # The host's own copy: the adapter keeps no handle on the frame the task checks.
            binding = IntentBinding(
                binding.contract_ref,
                binding.contract_version,
                binding.snapshot_sha256,
                binding.source,
                binding.stale,
                IntentFrame.model_validate(binding.frame.to_wire()),
            )
        self.binding = binding
        return binding

    def lossy_conversion(self, event: LossyConversion) -> ContinuityCarry | None:
        return self._call("continuity", "lossy_conversion", event, ContinuityCarry)

    def judge(self, event: EffectEvent) -> GuardVerdict | None:
        """The guard's verdict on ``event`` (None: no guard, or it failed: allow)."""
        verdict = self._keep(self._call("guard", "judge", event, GuardVerdict))
        if verdict is not None:
            self.records.append(GuardRecord(event, verdict, verdict.decision))
        return verdict

    def continuations(self) -> int:
        return self._continuations.get(self.contract, 0)

    def completion(self, claim: CompletionClaim) -> CompletionVerdict | None:
        """The completion verdict the host applies (None: no guard, or it failed: allow). A
        ``continue_verification`` past :data:`CONTINUATIONS_PER_VERSION` under the task's
        contract version is applied as ``remind`` (:data:`CONTINUATION_CAP_REACHED`)."""
        verdict = self._keep(self._call("guard", "completion", claim, CompletionVerdict))
        if verdict is None:
            return None
        applied = verdict
        if verdict.decision == "continue_verification":
            key = self.contract
            if self._continuations.get(key, 0) >= CONTINUATIONS_PER_VERSION:
                applied = CompletionVerdict("remind", CONTINUATION_CAP_REACHED)
            else:
                self._continuations[key] = self._continuations.get(key, 0) + 1
        self.records.append(GuardRecord(claim, verdict, applied.decision))
        return applied

    def _keep(self, verdict: Any) -> Any:
        """``verdict`` with a detached copy of its receipt; None (a warning) when the receipt
        is no JSON."""
        if verdict is None:
            return None
        try:
            receipt = _json_copy(verdict.receipt)
        except (TypeError, ValueError, RecursionError):
            self._warn(
                f"guard:{self._active['guard'].name}",
                f"guard adapter {self._active['guard'].name!r}: its receipt is not JSON",
            )
            return None
        return type(verdict)(verdict.decision, verdict.reason, receipt)

    def finish(self) -> None:
        """Hand the guard every judgement of the run, once, at its very end."""
        if "guard" in self._active:
            self._call("guard", "finish", tuple(self.records), type(None))
