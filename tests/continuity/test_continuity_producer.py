"""ContinuityProducer: a run on the FAKE kernel at T32 (it compacts) writes a snapshot at each
compaction and at the end, each a valid ContinuitySnapshot naming the bound contract and the
committed revisions; the next round's capsule carries the open commitments. Without a
contract no snapshot is written; a failed write is a warning, never a lost carry."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_integrations import compacting, run

from aira_continuity.continuity import SNAPSHOT_FINAL, ContinuityProducer, snapshot_of
from aira_continuity.intent import IntentLoopAdapter, commitment_id
from aira_continuity.projection import projection_sha256
from aira_continuity.wire import ContinuitySnapshot, read_json
from aira_core.contracts.plan import IntentFrame
from aira_core.integrations import ContractBinding, LossyConversion, artifact_ref
from aira_core.runtime.contract import TerminalState
from tests.continuity.samples import ENVELOPE

REQUIREMENT = "edges rounded 2 mm"
CONTRACT: dict[str, Any] = {
    "objective": "a 40 x 30 x 10 plate with its vertical edges rounded 2 mm",
    "primary_object": "the plate",
    "delivery_surface": ["aira-model"],
    "scope": {"include": [], "exclude": []},
    "must_and_must_not": {"must": [REQUIREMENT], "must_not": []},
    "authorization": {"allowed": [], "requires_user": [], "forbidden": []},
    "completion_evidence": [{"requirement": "evidence:test", "acceptable_sources": ["test"]}],
}
MILLIS_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


def upstream_valid(snapshot: dict[str, Any]) -> None:
    """Against the upstream Guard snapshot and Continuity view schemas, when they are given."""
    if not os.environ.get("AIRA_UPSTREAM_GUARD_SPECS"):
        return
    from tests.continuity.test_upstream_schemas import CONTINUITY_VIEW, SCHEMA_OF, validator

    for schema in (SCHEMA_OF["continuity-snapshot"], CONTINUITY_VIEW):
        errors = [e.message for e in validator(schema).iter_errors(snapshot)]
        assert errors == [], (schema, errors)


def test_a_run_writes_a_snapshot_per_compaction_and_at_the_end(tmp_path: Path) -> None:
    document = {
        "envelope": {**ENVELOPE, "snapshot_sha256": projection_sha256(CONTRACT)},
        "projection": CONTRACT,
    }
    contract = tmp_path / "contract.json"
    contract.write_text(json.dumps(document), encoding="utf-8")
    intent = IntentLoopAdapter(contract, tmp_path / "state")
    producer = ContinuityProducer(intent=intent)
    producer.configure(SimpleNamespace(run_dir=tmp_path / "run", contract=None))
    h, _, source = run(tmp_path / "w", compacting(), [intent, producer], tier="T32")
    outcome = h.run()
    h.conclude()
    assert outcome.terminal is TerminalState.COMPLETED and outcome.rounds > 1
    assert h.integrations.diagnostics == [] and producer.diagnostics == []

    out = tmp_path / "run" / "continuity"
    names = [f"snapshot-{n}.json" for n in range(1, outcome.rounds)]
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, SNAPSHOT_FINAL])
    snapshots = [read_json(ContinuitySnapshot, (out / n).read_bytes()) for n in names]
    final = read_json(ContinuitySnapshot, (out / SNAPSHOT_FINAL).read_bytes())
    revisions = [artifact_ref(c.rev) for c in h.ledger.commits]
    for snapshot in [*snapshots, final]:
        assert snapshot.schema_version == "1.0"
        assert (snapshot.contract_ref, snapshot.contract_version) == ("intent:stable-task-id", 3)
        assert MILLIS_Z.fullmatch(snapshot.captured_at)
        assert snapshot.evidence_refs == revisions
        upstream_valid(snapshot.to_wire())
    # still open at each compaction: the contract's must and its evidence requirement (no
    # validator names it, so it is a hard requirement), as ids: no body copied
    assert snapshots[0].phase == "verification"
    assert snapshots[0].open_commitments == [
        commitment_id("requirement", REQUIREMENT),
        commitment_id("requirement", "evidence: evidence:test"),
    ]
    assert REQUIREMENT not in (out / names[0]).read_text()
    # completed: nothing open at the end
    assert (final.phase, final.open_commitments) == ("done", [])
    # the next capsule carries the commitment as a line
    assert "open commitments (carried over)" not in source.capsules[0]
    assert any(f"- requirement: {REQUIREMENT}\n" in c for c in source.capsules[1:])
    # the producer never raised the version: the ledger still holds the provider's 3
    ledger = json.loads((tmp_path / "state" / "intent-bindings.json").read_text())
    assert ledger["contracts"]["intent:stable-task-id"]["version"] == 3


def event(contract: ContractBinding | None, **kw: Any) -> LossyConversion:
    values: dict[str, Any] = {
        "task_id": "t1",
        "contract": contract,
        "trigger": "compaction",
        "phase": "authoring",
        "open_commitments": (
            "requirement: four M4 holes",
            "approval: model.publish r7",
            "repair: PLAN_EFFECT_PROHIBITED",
        ),
        "evidence_refs": ("artifact:sha256:" + "a" * 64, "artifact:sha256:" + "a" * 64, "bad"),
        "captured_at": "2026-09-01T02:00:00.123456+02:00",
        **kw,
    }
    return LossyConversion(**values)


def test_the_snapshot_names_commitments_by_id_and_converts_the_time(tmp_path: Path) -> None:
    frame = IntentFrame(goal="a plate", unknowns=["hole diameter"])
    intent = IntentLoopAdapter(None, tmp_path / "state")
    binding = intent.bind(frame)
    snapshot = snapshot_of(event(binding.contract), intent)
    assert snapshot.open_commitments == [
        commitment_id("requirement", "four M4 holes"),
        commitment_id("approval", "model.publish r7"),
        commitment_id("repair", "PLAN_EFFECT_PROHIBITED"),
        commitment_id("open_question", "hole diameter"),
    ]
    assert snapshot.evidence_refs == ["artifact:sha256:" + "a" * 64]
    assert snapshot.captured_at == "2026-09-01T00:00:00.123Z"
    assert snapshot.contract_ref == binding.contract_ref
    blank = snapshot_of(event(binding.contract, phase="", open_commitments=()), None)
    assert blank.phase == "unknown" and blank.open_commitments == []


def test_a_refused_contract_is_a_dispute_in_the_snapshot(tmp_path: Path) -> None:
    projection = {**CONTRACT}
    state = tmp_path / "state"
    good = {"envelope": {**ENVELOPE, "snapshot_sha256": projection_sha256(CONTRACT)}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**good, "projection": projection}), encoding="utf-8")
    assert IntentLoopAdapter(path, state).bind(IntentFrame(goal="g")) is not None
    rolled = {**good["envelope"], "contract_version": 2}
    path.write_text(json.dumps({"envelope": rolled, "projection": projection}), encoding="utf-8")
    intent = IntentLoopAdapter(path, state)
    binding = intent.bind(IntentFrame(goal="g"))
    assert binding.stale
    snapshot = snapshot_of(event(binding.contract, open_commitments=()), intent)
    assert [c.split(":")[0] for c in snapshot.open_commitments] == ["dispute"]


def test_without_a_contract_no_snapshot_is_written_but_the_carry_is(tmp_path: Path) -> None:
    producer = ContinuityProducer(tmp_path / "out")
    carry = producer.lossy_conversion(event(None))
    assert carry.open_commitments == event(None).open_commitments
    assert not (tmp_path / "out").exists() and producer.diagnostics == []


def test_a_failed_write_is_a_warning_and_the_carry_still_comes(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    producer = ContinuityProducer(blocker / "continuity")
    carry = producer.lossy_conversion(event(ContractBinding("intent:x", 1), trigger="end"))
    assert carry is not None and len(carry.open_commitments) == 3
    assert [d.code for d in producer.diagnostics] == ["OUTPUT_UNWRITABLE"]
    assert str(tmp_path) not in producer.diagnostics[0].message


def test_the_end_writes_the_final_snapshot_and_compactions_count_up(tmp_path: Path) -> None:
    producer = ContinuityProducer(tmp_path / "out")
    contract = ContractBinding("intent:x", 2)
    producer.lossy_conversion(event(contract))
    producer.lossy_conversion(event(contract))
    producer.lossy_conversion(event(contract, trigger="end", phase="done"))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "snapshot-1.json",
        "snapshot-2.json",
        SNAPSHOT_FINAL,
    ]
    final = read_json(ContinuitySnapshot, (tmp_path / "out" / SNAPSHOT_FINAL).read_bytes())
    assert (final.contract_version, final.phase) == (2, "done")
    upstream_valid(final.to_wire())


@pytest.mark.parametrize("run_dir", [None, "run"])
def test_configure_puts_snapshots_under_the_run_directory(tmp_path: Path, run_dir: Any) -> None:
    producer = ContinuityProducer(tmp_path / "elsewhere")
    producer.configure(SimpleNamespace(run_dir=tmp_path / run_dir if run_dir else None))
    expected = tmp_path / "run" / "continuity" if run_dir else None
    assert producer.out_dir == expected
