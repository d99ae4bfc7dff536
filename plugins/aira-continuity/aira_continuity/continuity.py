"""The continuity adapter: at every lossy conversion (a round's compaction, the task's end) it
writes a ContinuitySnapshot 1.0, the read-only view the Guard reads (spec 004), and hands
the host the open commitments the next round's capsule carries.

It only references the intent: ``contract_ref``/``contract_version`` are the bound
contract's, never raised here, and nothing is written to the intent owner. With no bound
contract there is no snapshot (a snapshot names the contract it continues), only the carry.

The snapshot, as Context Continuity's producer builds its execution-guard view:

- ``phase``: the host's phase (:func:`aira_core.integrations.phase_of`), ``unknown`` if none;
- ``open_commitments``: ids, never bodies, unique. The host's open lines (each verified by
  the host: it knows they are still open) become ``<kind>:`` + 16 hex of the text, the kind
  their prefix (``requirement``, ``approval``, ``repair``), ``next`` for any other; with an
  intent adapter, the bound frame's unknowns become ``open_question`` ids and the contracts
  it refused ``dispute`` ids (:data:`aira_continuity.intent.FACET_KINDS`);
- ``evidence_refs``: the host's ``artifact:sha256:<64 hex>`` refs (committed revisions,
  exported files), unique;
- ``captured_at``: the conversion's time, RFC 3339 UTC with milliseconds (``…000Z``).

Files: ``snapshot-<n>.json`` for the n-th compaction (from 1) and ``snapshot-final.json`` at
the end, written atomically into ``out_dir`` (``<run dir>/continuity``). A write that fails
is a warning in :attr:`ContinuityProducer.diagnostics`; the carry is still answered.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from aira_continuity.intent import commitment_id, facet_kind
from aira_core.diagnostics import AiraError, Diagnostic, Severity

__all__ = ["SNAPSHOT_FINAL", "ContinuityProducer", "snapshot_of"]

SNAPSHOT_FINAL = "snapshot-final.json"
_HOST_KINDS = ("requirement", "approval", "repair")
_EVIDENCE = re.compile(r"artifact:sha256:[0-9a-f]{64}")


def _commitment(line: str) -> str:
    kind, sep, text = line.partition(":")
    if sep and kind in _HOST_KINDS:
        return commitment_id(kind, text.strip())
    return commitment_id("next", line)


def _unique(items: Any) -> list[str]:
    return list(dict.fromkeys(items))


def _rfc3339(captured_at: str) -> str:
    """``captured_at`` as RFC 3339 UTC with milliseconds; now if it is no ISO date-time."""
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(captured_at)
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (TypeError, ValueError):
        when = datetime.now(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def snapshot_of(event: Any, intent: Any = None) -> Any:
    """The ContinuitySnapshot of a lossy conversion (None with no bound contract);
    ``intent``: the IntentLoopAdapter whose binding names the unknowns and refusals."""
    from aira_continuity.wire import ContinuitySnapshot, read

    if event.contract is None:
        return None
    commitments = [_commitment(c) for c in event.open_commitments]
    binding = getattr(intent, "binding", None)
    if binding is not None and binding.contract == event.contract:
        question, dispute = facet_kind("unknown"), facet_kind("disagreement")
        commitments += [commitment_id(str(question), u) for u in binding.frame.unknowns]
        refused = [d for d in getattr(intent, "diagnostics", ()) if d.code.startswith("CONTRACT_")]
        commitments += [commitment_id(str(dispute), f"{d.code} {d.message}") for d in refused]
    return read(
        ContinuitySnapshot,
        {
            "schema_version": "1.0",
            "contract_ref": event.contract.contract_ref,
            "contract_version": event.contract.contract_version,
            "phase": event.phase or "unknown",
            "open_commitments": _unique(commitments),
            "evidence_refs": _unique(r for r in event.evidence_refs if _EVIDENCE.fullmatch(r)),
            "captured_at": _rfc3339(event.captured_at),
        },
    )


class ContinuityProducer:
    """The ``continuity`` role: writes a snapshot per lossy conversion into ``out_dir`` (None:
    no files) and carries the host's open commitments. ``intent``: the run's intent adapter,
    read (never written) for the frame's unknowns and refused contracts."""

    name = "aira-continuity-snapshots"
    role: Literal["continuity"] = "continuity"

    def __init__(self, out_dir: Path | None = None, *, intent: Any = None) -> None:
        self.out_dir = out_dir
        self.intent = intent
        self.compactions = 0
        self.written: list[Path] = []
        self.diagnostics: list[Diagnostic] = []

    def configure(self, options: Any) -> None:
        """Snapshots go to ``<options.run_dir>/continuity`` (none without a run directory);
        the numbering starts again."""
        run_dir = options.run_dir
        self.out_dir = Path(run_dir) / "continuity" if run_dir is not None else None
        self.compactions = 0
        self.written = []

    def lossy_conversion(self, event: Any) -> Any:
        from aira_core.integrations import COMMITMENT_MAX, COMMITMENT_MAX_CHARS, ContinuityCarry

        if event.trigger == "compaction":
            self.compactions += 1
        snapshot = snapshot_of(event, self.intent)
        if snapshot is not None and self.out_dir is not None:
            name = (
                f"snapshot-{self.compactions}.json"
                if event.trigger == "compaction"
                else SNAPSHOT_FINAL
            )
            self._write(Path(self.out_dir) / name, snapshot.to_wire())
        # The capsule shows lines, not ids: the host's own, within the seam's bounds.
        lines = [
            c if len(c) <= COMMITMENT_MAX_CHARS else c[: COMMITMENT_MAX_CHARS - 1] + "…"
            for c in event.open_commitments
            if c.strip()
        ]
        return ContinuityCarry(tuple(_unique(lines)[:COMMITMENT_MAX]))

    def _write(self, path: Path, wire: dict[str, Any]) -> None:
        from aira_core.canonical import canonical_bytes
        from aira_core.files import write_file

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.written.append(write_file(path, canonical_bytes(wire) + b"\n", force=True))
        except (AiraError, OSError) as exc:
            # an OSError's own text may name a private directory: only its reason is kept
            code, why = (
                (exc.code, exc.diagnostic.message)
                if isinstance(exc, AiraError)
                else ("OUTPUT_UNWRITABLE", exc.strerror or type(exc).__name__)
            )
            self.diagnostics.append(
                Diagnostic(
                    code=code,
                    severity=Severity.WARNING,
                    subject=f"continuity:{self.name}",
                    message=f"{path.name} was not written: {why}",
                )
            )
