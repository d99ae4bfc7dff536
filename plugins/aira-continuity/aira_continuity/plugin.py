"""Entry point of the ``continuity`` plugin: the three adapters of the three-product contract
(spec 004), registered through ``aira_register_integrations``.

- ``aira-continuity-intent`` (intent): binds the task's Intent Frame to a provider document
  or a TaskContractLite (``aira run --contract FILE``), or derives one from the frame;
- ``aira-continuity-snapshots`` (continuity): a Continuity snapshot at each compaction and at
  the end, and the open commitments the next capsule carries;
- ``aira-continuity-guard`` (guard): judges each effect and each completion claim against the
  contract the intent adapter bound, and exports its receipts and events at the end.

They are used only by a run that asks for them (``aira run --integrations`` or
``--contract``). Cheap to import: the adapters' modules load inside the hook.
"""

from __future__ import annotations

from aira_core import hookimpl


@hookimpl
def aira_register_integrations(register):  # type: ignore[no-untyped-def]
    from aira_continuity.continuity import ContinuityProducer
    from aira_continuity.guard import FidelityGuard
    from aira_continuity.intent import IntentLoopAdapter

    # One intent owner: the snapshots name its unknowns and refusals, and the guard judges
    # by the contract it bound — nobody reads the contract file a second time.
    intent = IntentLoopAdapter()
    register(intent)
    register(ContinuityProducer(intent=intent))
    register(FidelityGuard(intent=intent))
