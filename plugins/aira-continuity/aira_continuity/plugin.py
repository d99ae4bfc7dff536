"""Entry point of the ``continuity`` plugin: the three adapters of the three-product contract
(spec 004), registered through ``aira_register_integrations``.

- ``aira-continuity-intent`` (intent): binds the task's Intent Frame to a provider document
  or a TaskContractLite (``aira run --contract FILE``), or derives one from the frame;
- ``aira-continuity-snapshots`` (continuity): a Continuity snapshot at each compaction and at
  the end, and the open commitments the next capsule carries;
- ``aira-continuity-guard`` (guard): judges each effect and each completion claim against the
  contract the intent adapter bound, and exports its receipts and events at the end.

They are used only by a run that asks for them (``aira run --integrations`` or
``--contract``). Plugin discovery registers light stand-ins: the adapters' modules (pydantic
models, the wire) load when a run first calls one, not for every ``aira`` command.
"""

from __future__ import annotations

from typing import Any, Literal

from aira_core import hookimpl

_ADAPTERS: tuple[Any, Any, Any] | None = None


def _adapters() -> tuple[Any, Any, Any]:
    """The three adapters, made once. One intent owner: the snapshots name its unknowns and
    refusals, and the guard judges by the contract it bound — nobody reads the contract file
    a second time."""
    global _ADAPTERS
    if _ADAPTERS is None:
        from aira_continuity.continuity import ContinuityProducer
        from aira_continuity.guard import FidelityGuard
        from aira_continuity.intent import IntentLoopAdapter

        intent = IntentLoopAdapter()
        _ADAPTERS = (intent, ContinuityProducer(intent=intent), FidelityGuard(intent=intent))
    return _ADAPTERS


class _StandIn:
    _index = 0

    def configure(self, options: Any) -> None:
        _adapters()[self._index].configure(options)

    @property
    def diagnostics(self) -> list[Any]:
        made = _adapters()[self._index] if _ADAPTERS is not None else None
        return list(getattr(made, "diagnostics", None) or ())


class IntentStandIn(_StandIn):
    name = "aira-continuity-intent"
    role: Literal["intent"] = "intent"
    _index = 0

    def bind(self, frame: Any) -> Any:
        return _adapters()[0].bind(frame)


class ContinuityStandIn(_StandIn):
    name = "aira-continuity-snapshots"
    role: Literal["continuity"] = "continuity"
    _index = 1

    def lossy_conversion(self, event: Any) -> Any:
        return _adapters()[1].lossy_conversion(event)


class GuardStandIn(_StandIn):
    name = "aira-continuity-guard"
    role: Literal["guard"] = "guard"
    _index = 2

    def judge(self, event: Any) -> Any:
        return _adapters()[2].judge(event)

    def completion(self, claim: Any) -> Any:
        return _adapters()[2].completion(claim)

    def finish(self, records: Any) -> Any:
        return _adapters()[2].finish(records)


@hookimpl
def aira_register_integrations(register):  # type: ignore[no-untyped-def]
    register(IntentStandIn())
    register(ContinuityStandIn())
    register(GuardStandIn())
