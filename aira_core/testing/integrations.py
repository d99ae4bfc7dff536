"""FAKE Intent / Continuity / Guard adapters for tests of the integration seam
(:mod:`aira_core.integrations`). They read no upstream wire format, bind to no real
contract and judge by a table the test gives them: never for production.

- :class:`FakeIntentAdapter` binds every frame to one contract, adding the hard
  requirements, prohibited effects and scope it was given (what a real adapter maps from
  ``must``, ``must_not`` and ``scope``);
- :class:`FakeContinuityAdapter` records every lossy conversion and carries the host's
  open commitments forward as they are;
- :class:`FakeGuardAdapter` blocks or asks for the actions it is told to, and asks to
  continue verification while the runtime would not complete (or fewer than
  ``require_evidence`` commits back the claim);
- :class:`BrokenAdapter` fails every call of its role: it raises, hangs or answers with
  something that is not the typed value.

Each records what it was handed, so a test can check the host's side of the seam.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from aira_core.contracts.capability import Effect
from aira_core.contracts.plan import IntentFrame
from aira_core.integrations import (
    CompletionClaim,
    CompletionVerdict,
    ContinuityCarry,
    EffectEvent,
    GuardRecord,
    GuardVerdict,
    IntentBinding,
    LossyConversion,
)

__all__ = [
    "BrokenAdapter",
    "FakeContinuityAdapter",
    "FakeGuardAdapter",
    "FakeIntentAdapter",
]


@dataclass
class FakeIntentAdapter:
    """Binds to ``contract_ref`` v``contract_version``; ``bound=False`` answers unbound."""

    name: str = "fake-intent"
    contract_ref: str = "intent:fake-task"
    contract_version: int = 1
    hard_requirements: tuple[str, ...] = ()
    prohibited_effects: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()
    stale: bool = False
    bound: bool = True
    role: Literal["intent"] = "intent"
    frames: list[IntentFrame] = field(default_factory=list)

    def bind(self, frame: IntentFrame) -> IntentBinding | None:
        self.frames.append(frame)
        if not self.bound:
            return None
        wire = frame.to_wire()
        bound = IntentFrame.model_validate(
            {
                **wire,
                "hardRequirements": [*frame.hard_requirements, *self.hard_requirements],
                "prohibitedEffects": [
                    *(e.value for e in frame.prohibited_effects),
                    *(Effect(e).value for e in self.prohibited_effects),
                ],
                "scope": [*frame.scope, *self.scope],
            }
        )
        snapshot = bound.frame_hash().rsplit(":", 1)[-1]
        return IntentBinding(
            self.contract_ref, self.contract_version, snapshot, "fake", self.stale, bound
        )


@dataclass
class FakeContinuityAdapter:
    """Carries the host's open commitments (``prefix`` before each) into the next round."""

    name: str = "fake-continuity"
    prefix: str = ""
    role: Literal["continuity"] = "continuity"
    events: list[LossyConversion] = field(default_factory=list)

    def lossy_conversion(self, event: LossyConversion) -> ContinuityCarry | None:
        self.events.append(event)
        if not event.open_commitments:
            return None
        return ContinuityCarry(tuple(self.prefix + c for c in event.open_commitments))


@dataclass
class FakeGuardAdapter:
    """``block`` / ``ask``: the actions (``model.commit``, ``publish``, ``export:step`` …) it
    refuses or asks the user about; everything else is allowed. ``require_evidence``: the
    commits a completion claim must be backed by, besides the runtime's own check."""

    name: str = "fake-guard"
    block: frozenset[str] = frozenset()
    ask: frozenset[str] = frozenset()
    require_evidence: int = 0
    role: Literal["guard"] = "guard"
    events: list[EffectEvent] = field(default_factory=list)
    claims: list[CompletionClaim] = field(default_factory=list)
    finished: list[tuple[GuardRecord, ...]] = field(default_factory=list)

    def judge(self, event: EffectEvent) -> GuardVerdict:
        self.events.append(event)
        if event.action in self.block:
            decision, reason = "block", "explicit_contract_conflict"
        elif event.action in self.ask:
            decision, reason = "ask", "explicit_user_authorization_required"
        else:
            decision, reason = "allow", "no_material_conflict"
        return GuardVerdict(decision, reason, {"event": event.request_id, "n": len(self.events)})  # type: ignore[arg-type]

    def completion(self, claim: CompletionClaim) -> CompletionVerdict:
        self.claims.append(claim)
        missing = claim.runtime_decision != "COMPLETED" or (
            len(claim.evidence_refs) < self.require_evidence
        )
        if missing:
            return CompletionVerdict("continue_verification", "required_evidence_missing")
        return CompletionVerdict("allow", "event_observed")

    def finish(self, records: tuple[GuardRecord, ...]) -> None:
        self.finished.append(records)


Failure = Literal["raises", "hangs", "invalid"]


@dataclass
class BrokenAdapter:
    """An adapter of ``role`` whose every call fails as ``failure`` says: ``raises`` (a
    RuntimeError whose message must never reach a diagnostic), ``hangs`` (sleeps
    ``hang_seconds``, past the host's bound) or ``invalid`` (answers a plain dict)."""

    role: str
    failure: Failure
    hang_seconds: float = 2.0
    name: str = ""
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.name = self.name or f"broken-{self.role}-{self.failure}"

    def _fail(self, method: str) -> Any:
        self.calls.append(method)
        if self.failure == "raises":
            raise RuntimeError("secret-token-123 in a traceback")
        if self.failure == "hangs":
            time.sleep(self.hang_seconds)
        return {"decision": "block", "reason": "not a typed value"}

    def bind(self, frame: Any) -> Any:
        return self._fail("bind")

    def lossy_conversion(self, event: Any) -> Any:
        return self._fail("lossy_conversion")

    def judge(self, event: Any) -> Any:
        return self._fail("judge")

    def completion(self, claim: Any) -> Any:
        return self._fail("completion")

    def finish(self, records: Any) -> Any:
        return self._fail("finish")
