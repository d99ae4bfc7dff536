"""The fact axes of a task and of its attempts (Task/Attempt v2, spec 002 §3), what the old
four-state ``status`` is derived from them (§3.1) and the human state a UI shows (§10).

Six orthogonal facts, each a snake_case enum whose values are exactly the spec's:

=================  ===============================================================
``phase``          queued · submitting · accepted · running · terminal
``acceptance``     none · not_accepted · accepted · unknown
``watchState``     idle · active · suspended · exhausted
``outcome``        none · succeeded · failed · canceled · unknown
``deliveryState``  none · pending · downloading · ready · failed
``cancelState``    none · requested · remote_confirmed · local_confirmed · unknown
=================  ===============================================================

``status`` is kept for old consumers only and is never a source of truth: new code reads the
axes. Plain data (no pydantic, no SQLite): cheap to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from aira_core.diagnostics import AiraError
from aira_core.extensions import Acceptance  # the seam's: one enum for providers and ledger

__all__ = [
    "LEDGER_ARGUMENT_INVALID",
    "Acceptance",
    "CancelState",
    "DeliveryState",
    "Facts",
    "HumanState",
    "LegacyStatus",
    "Outcome",
    "Phase",
    "WatchState",
    "human_state",
    "legacy_status",
]

LEDGER_ARGUMENT_INVALID = "LEDGER_ARGUMENT_INVALID"


class Phase(StrEnum):
    """Whether Aira will still advance the task on its own."""

    QUEUED = "queued"
    SUBMITTING = "submitting"
    ACCEPTED = "accepted"
    RUNNING = "running"
    TERMINAL = "terminal"


class WatchState(StrEnum):
    """Whether Aira is still observing the remote job."""

    IDLE = "idle"
    ACTIVE = "active"
    SUSPENDED = "suspended"
    EXHAUSTED = "exhausted"


class Outcome(StrEnum):
    """The result of the remote generation (or of a deterministic local action)."""

    NONE = "none"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"
    UNKNOWN = "unknown"


class DeliveryState(StrEnum):
    """Whether a successful result has been made a reliable local product."""

    NONE = "none"
    PENDING = "pending"
    DOWNLOADING = "downloading"
    READY = "ready"
    FAILED = "failed"


class CancelState(StrEnum):
    """A cancel request and how far its confirmation reaches."""

    NONE = "none"
    REQUESTED = "requested"
    REMOTE_CONFIRMED = "remote_confirmed"
    LOCAL_CONFIRMED = "local_confirmed"
    UNKNOWN = "unknown"


class LegacyStatus(StrEnum):
    """The old four-state status (spec 002 §3.1), derived, never stored as truth."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"


class HumanState(StrEnum):
    """What a person is shown (spec 002 §10): queued, running, watch paused, needs
    confirmation, result awaiting retrieval, completed, failed, canceled."""

    QUEUED = "queued"
    RUNNING = "running"
    WATCH_PAUSED = "watch_paused"
    NEEDS_CONFIRMATION = "needs_confirmation"
    AWAITING_DELIVERY = "awaiting_delivery"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"


CONFIRMED_CANCEL = frozenset({CancelState.REMOTE_CONFIRMED, CancelState.LOCAL_CONFIRMED})
"""The cancel states that confirm a cancel (remotely, or by a deterministic local stop)."""

_AXES: tuple[tuple[str, str, type[StrEnum]], ...] = (
    ("phase", "phase", Phase),
    ("acceptance", "acceptance", Acceptance),
    ("watch_state", "watchState", WatchState),
    ("outcome", "outcome", Outcome),
    ("delivery_state", "deliveryState", DeliveryState),
    ("cancel_state", "cancelState", CancelState),
)
"""(attribute, wire name, enum) of each axis, in the spec's order."""


def axis_value(enum: type[StrEnum], value: object, name: str) -> Any:
    """``value`` as a member of ``enum`` (a member or its string), else
    ``LEDGER_ARGUMENT_INVALID`` naming the axis and the values it takes."""
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum)
        shown = value if isinstance(value, str) and len(value) <= 40 else type(value).__name__
        raise AiraError(
            LEDGER_ARGUMENT_INVALID, f"{name} must be one of {allowed}; got {shown!r}"
        ) from None


@dataclass(frozen=True, slots=True)
class Facts:
    """The six fact axes of a task or an attempt. The defaults are a task or attempt that
    nothing has happened to yet. Strings are accepted for each axis and made enum members;
    a value outside the spec's enum is ``LEDGER_ARGUMENT_INVALID``."""

    phase: Phase = Phase.QUEUED
    acceptance: Acceptance = Acceptance.NONE
    watch_state: WatchState = WatchState.IDLE
    outcome: Outcome = Outcome.NONE
    delivery_state: DeliveryState = DeliveryState.NONE
    cancel_state: CancelState = CancelState.NONE

    def __post_init__(self) -> None:
        for attr, wire, enum in _AXES:
            value = getattr(self, attr)
            if type(value) is not enum:
                object.__setattr__(self, attr, axis_value(enum, value, wire))

    def to_wire(self) -> dict[str, str]:
        """``{"phase", "acceptance", "watchState", "outcome", "deliveryState",
        "cancelState"}``, each the enum's string."""
        return {wire: str(getattr(self, attr)) for attr, wire, _ in _AXES}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Facts:
        """The facts of a :meth:`to_wire` object (all six keys, no others), else
        ``LEDGER_ARGUMENT_INVALID``."""
        if not isinstance(data, Mapping):
            raise AiraError(LEDGER_ARGUMENT_INVALID, "facts must be a JSON object")
        wires = [wire for _, wire, _ in _AXES]
        missing = [w for w in wires if w not in data]
        extra = sorted(str(k) for k in data if k not in wires)
        if missing or extra:
            said = [f"missing {', '.join(missing)}"] if missing else []
            said += [f"unknown {', '.join(extra[:5])}"] if extra else []
            raise AiraError(LEDGER_ARGUMENT_INVALID, f"facts: {'; '.join(said)}")
        return cls(**{attr: axis_value(enum, data[wire], wire) for attr, wire, enum in _AXES})


def legacy_status(facts: Facts) -> LegacyStatus:
    """The old ``status``, derived conservatively (spec 002 §3.1):

    ====================================================================  ===========
    facts (phase=terminal)                                                status
    ====================================================================  ===========
    outcome=succeeded and deliveryState=ready                             succeeded
    outcome=failed                                                        failed
    outcome=canceled and cancelState in (remote_confirmed,                canceled
    local_confirmed)
    anything else (acceptance unknown, watch exhausted, delivery failed,  running
    a cancel not confirmed, …)
    ====================================================================  ===========

    and ``running`` whatever the rest while ``phase`` is not ``terminal``: an Aira task runs
    many steps and its facts mirror its latest attempt, so one step's delivered reply is not
    the task's success while the run goes on (spec §3.1: rather keep a task non-terminal than
    invent a success, a failure or a cancel). An attempt is made terminal by the ledger when
    its outcome is final. Four states cannot say "a person must decide": such facts derive
    ``running`` too.
    """
    if facts.phase is not Phase.TERMINAL:
        return LegacyStatus.RUNNING
    if facts.outcome is Outcome.SUCCEEDED and facts.delivery_state is DeliveryState.READY:
        return LegacyStatus.SUCCEEDED
    if facts.outcome is Outcome.FAILED:
        return LegacyStatus.FAILED
    if facts.outcome is Outcome.CANCELED and facts.cancel_state in CONFIRMED_CANCEL:
        return LegacyStatus.CANCELED
    return LegacyStatus.RUNNING


def human_state(facts: Facts) -> HumanState:
    """The state a person is shown (spec 002 §10). The first row that matches wins:

    ==  ===================================================================  ==================
    #   facts                                                                human state
    ==  ===================================================================  ==================
    1   phase=terminal, outcome=canceled, cancelState in (remote_confirmed,  canceled
        local_confirmed)
    2   phase=terminal, outcome=failed                                       failed
    3   phase=terminal, outcome=succeeded, deliveryState=ready               completed
    4   acceptance=unknown, or cancelState=unknown                           needs_confirmation
    5   outcome=succeeded and (deliveryState=failed, or phase=terminal)      awaiting_delivery
    6   watchState in (suspended, exhausted)                                 watch_paused
    7   phase=terminal (stopped without a final result: an accepted         needs_confirmation
        attempt without a reply, a cancel requested and never confirmed),
        or outcome=unknown
    8   phase=queued                                                         queued
    9   anything else (still being advanced: submitting, accepted,           running
        running, a delivery in progress, the next step of a run)
    ==  ===================================================================  ==================

    Rows 1-3 are exactly the rows where :func:`legacy_status` is not ``running``: a person is
    never told "completed", "failed" or "canceled" while the old status says running, nor
    the reverse. Each ``needs_confirmation``, ``awaiting_delivery`` and ``watch_paused`` is a
    manual entry point; any action there that could bill again needs its own confirmation.
    """
    terminal = facts.phase is Phase.TERMINAL
    if terminal and facts.outcome is Outcome.CANCELED and facts.cancel_state in CONFIRMED_CANCEL:
        return HumanState.CANCELED
    if terminal and facts.outcome is Outcome.FAILED:
        return HumanState.FAILED
    if (
        terminal
        and facts.outcome is Outcome.SUCCEEDED
        and facts.delivery_state is DeliveryState.READY
    ):
        return HumanState.COMPLETED
    if facts.acceptance is Acceptance.UNKNOWN or facts.cancel_state is CancelState.UNKNOWN:
        return HumanState.NEEDS_CONFIRMATION
    if facts.outcome is Outcome.SUCCEEDED and (
        facts.delivery_state is DeliveryState.FAILED or terminal
    ):
        return HumanState.AWAITING_DELIVERY
    if facts.watch_state in (WatchState.SUSPENDED, WatchState.EXHAUSTED):
        return HumanState.WATCH_PAUSED
    if terminal or facts.outcome is Outcome.UNKNOWN:
        return HumanState.NEEDS_CONFIRMATION
    if facts.phase is Phase.QUEUED:
        return HumanState.QUEUED
    return HumanState.RUNNING
