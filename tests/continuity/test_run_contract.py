"""``aira run --script … --contract FILE`` with the three adapters of plugins/aira-continuity
on the real OCCT kernel, as a user runs it (an ``aira`` process, a throwaway AIRA_HOME):
the bundled bracket task under a contract that forbids external effects (the exports are
blocked, the commit is not), a contract whose completion evidence the task cannot give (two
continuations, then the runtime decides), a derived contract (no file), and a contract file
that is not one (fail-open: the run is the run without adapters). What the adapters wrote —
the Continuity snapshot, the Guard's receipt export — is read back through the wire models,
summarised as the Guard's shadow-pilot summariser does, and, when AIRA_UPSTREAM_GUARD_SPECS
names the upstream schema files, validated against them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

from aira_continuity.guard import summarise
from aira_continuity.wire import ContinuitySnapshot, ReceiptBundle, read

ROOT = Path(__file__).resolve().parents[2]
BRACKET = ROOT / "aira_core" / "step" / "scripts" / "bracket.json"
UPSTREAM = os.environ.get("AIRA_UPSTREAM_GUARD_SPECS")
GUARD_SPEC = "execution-fidelity-guard/plugins/execution-fidelity-guard/spec/"

CONTRACT: dict[str, Any] = {
    "objective": "Make a flat mounting bracket with four M6 clearance holes and R5 corners",
    "primary_object": "the bracket plate",
    "delivery_surface": ["aira-model"],
    "scope": {"include": [], "exclude": []},
    "must_and_must_not": {"must": ["plate 80 x 50 x 6 mm"], "must_not": []},
    "authorization": {"allowed": [], "requires_user": [], "forbidden": []},
    "completion_evidence": [
        {"requirement": "the runtime's checks pass", "acceptable_sources": ["test"]}
    ],
}


def _aira(home: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AIRA_HOME": str(home), "AIRA_PLUGINS": "occt,continuity"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(Path(sys.executable).with_name("aira")), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def _run(tmp_path: Path, *extra: str | Path, script: Path = BRACKET) -> tuple[dict[str, Any], Path]:
    home = tmp_path / "home"
    out = _aira(home, "run", "--script", script, "--json", *extra)
    assert "Traceback" not in out.stderr, out.stderr
    report = json.loads(out.stdout)
    (run_dir,) = (home / "runs").iterdir()
    return report, run_dir


def _contract(tmp_path: Path, **changes: Any) -> Path:
    path = tmp_path / "contract.json"
    path.write_text(json.dumps({**CONTRACT, **changes}))
    return path


def snapshot_ref(run_dir: Path) -> str:
    return json.loads((run_dir / "continuity" / "snapshot-final.json").read_text())["contract_ref"]


def _codes(report: dict[str, Any]) -> list[str]:
    return [d["code"] for d in report.get("diagnostics", [])]


def _upstream(relative: str, instance: Any) -> None:
    if not UPSTREAM:
        return
    from tests.continuity.test_upstream_schemas import validator

    validator(relative).validate(instance)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bracket without adapters: what a fail-open run must equal."""
    report, _ = _run(tmp_path_factory.mktemp("plain"))
    assert report["terminal"] == "completed"
    return report


def test_a_contract_that_forbids_external_effects_blocks_the_exports_not_the_commit(
    tmp_path: Path, plain: dict[str, Any]
) -> None:
    must = {"must": ["plate 80 x 50 x 6 mm"], "must_not": ["action:external_side_effect"]}
    report, run_dir = _run(tmp_path, "--contract", _contract(tmp_path, must_and_must_not=must))
    assert report["terminal"] == "completed" and report["head"] == plain["head"]
    # the STEP, SVG and display mesh exports were refused; the run report (of the
    # trajectory and the store, written in any case) is written without the part's views
    assert set(report["files"]) == {"report"}
    assert _codes(report) == ["GUARD_BLOCKED"] * 3
    assert not [*run_dir.glob("*.step"), *run_dir.glob("*.svg"), *run_dir.glob("*.mesh.json")]
    assert '<svg class="view"' not in (run_dir / "report.html").read_text()

    (bundle_file,) = (run_dir / "guard").iterdir()
    bundle = read(ReceiptBundle, json.loads(bundle_file.read_text())).to_wire()
    decisions = {
        (e["tool_name"], r["decision"])
        for e, r in zip(bundle["events"], bundle["receipts"], strict=True)
    }
    assert ("model.commit", "continue") in decisions and ("export", "block") in decisions
    envelope = json.loads((run_dir / "intent" / "envelope.json").read_text())
    assert envelope["source"] == "task-contract-lite"
    assert envelope["contract_ref"] == snapshot_ref(run_dir)
    _upstream(GUARD_SPEC + "contract-envelope.schema.json", envelope)
    summary = summarise([bundle_file.read_bytes()]).to_wire()
    assert summary["schema_version"] == "1.1"

    snapshot = json.loads((run_dir / "continuity" / "snapshot-final.json").read_text())
    read(ContinuitySnapshot, snapshot)
    assert snapshot["contract_ref"].startswith("lite:") and snapshot["contract_version"] == 1
    assert snapshot["evidence_refs"] == ["artifact:sha256:" + report["head"].split(":")[-1]]
    _upstream(GUARD_SPEC + "continuity-snapshot.schema.json", snapshot)
    _upstream("context-continuity/spec/execution-guard-view.schema.json", snapshot)
    _upstream("execution-fidelity-guard/evals/shadow-pilot-summary.schema.json", summary)
    for event in bundle["events"]:
        _upstream(GUARD_SPEC + "normalized-event.schema.json", event)
    for receipt in bundle["receipts"]:
        _upstream(GUARD_SPEC + "decision-receipt.schema.json", receipt)
    for evidence in bundle["evidence"]:
        _upstream(GUARD_SPEC + "evidence-record.schema.json", evidence)


def test_missing_completion_evidence_continues_twice_then_the_runtime_decides(
    tmp_path: Path,
) -> None:
    script = json.loads(BRACKET.read_text())
    done = script["decisions"][-1]
    assert done["act"] == "done"
    script["decisions"] += [done, done]  # the model claims completion three times
    path = tmp_path / "bracket3.json"
    path.write_text(json.dumps(script))
    evidence = [{"requirement": "the release is published", "acceptable_sources": ["release"]}]
    report, run_dir = _run(
        tmp_path, "--contract", _contract(tmp_path, completion_evidence=evidence), script=path
    )
    records = [json.loads(line) for line in (run_dir / "trajectory.jsonl").read_text().splitlines()]
    dones = [r["result"] for r in records if r.get("decision", {}).get("act") == "done"]
    assert [d.get("code") for d in dones[:2]] == ["GUARD_CONTINUE_VERIFICATION"] * 2
    assert dones[2]["guard"]["reason"] == "continuation_cap_reached"
    assert report["terminal"] == "completed"  # the runtime's own decision stands


def test_without_a_contract_file_the_contract_is_derived_from_the_intent_frame(
    tmp_path: Path, plain: dict[str, Any]
) -> None:
    report, run_dir = _run(tmp_path, "--integrations")
    assert report["terminal"] == "completed" and report["head"] == plain["head"]
    assert set(report["files"]) == {"step", "svg", "mesh", "report"} and _codes(report) == []
    snapshot = json.loads((run_dir / "continuity" / "snapshot-final.json").read_text())
    assert snapshot["contract_ref"].startswith("lite:")
    (bundle_file,) = (run_dir / "guard").iterdir()
    read(ReceiptBundle, json.loads(bundle_file.read_text()))


@pytest.mark.parametrize(
    "content", ["{not json", json.dumps({**CONTRACT, "extra": 1}), json.dumps([1, 2])]
)
def test_a_contract_file_that_is_none_leaves_the_run_as_without_adapters(
    tmp_path: Path, plain: dict[str, Any], content: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    report, run_dir = _run(tmp_path, "--contract", bad)
    assert report["terminal"] == "completed" and report["head"] == plain["head"]
    assert set(report["files"]) == {"step", "svg", "mesh", "report"}  # nothing judged away
    assert "CONTRACT_INVALID" in _codes(report)
    assert str(tmp_path) not in json.dumps(report)
    assert not (run_dir / "continuity").exists()  # no contract bound, no snapshot


def test_a_provider_document_binds_its_envelope_and_a_lower_version_stays_stale(
    tmp_path: Path,
) -> None:
    from aira_continuity.projection import projection_sha256

    def document(version: int, objective: str) -> Path:
        projection = {**CONTRACT, "objective": objective}
        envelope = {
            "schema_version": "1.0",
            "contract_ref": "intent:bracket-task",
            "contract_version": version,
            "source": "user-intent-plugin",
            "source_message_refs": ["msg:1"],
            "snapshot_sha256": projection_sha256(projection),
            "updated_at": "2026-12-01T00:00:00.000Z",
        }
        path = tmp_path / f"provider-v{version}.json"
        path.write_text(json.dumps({"envelope": envelope, "projection": projection}))
        return path

    report, run_dir = _run(tmp_path / "a", "--contract", document(2, CONTRACT["objective"]))
    assert report["terminal"] == "completed" and _codes(report) == []
    envelope = json.loads((run_dir / "intent" / "envelope.json").read_text())
    assert (envelope["contract_ref"], envelope["contract_version"]) == ("intent:bracket-task", 2)
    _upstream(GUARD_SPEC + "contract-envelope.schema.json", envelope)
    assert snapshot_ref(run_dir) == "intent:bracket-task"

    # the same AIRA_HOME keeps the ledger: version 1 after version 2 is a rollback
    home = tmp_path / "a" / "home"
    out = _aira(home, "run", "--script", BRACKET, "--json", "--contract", document(1, "older"))
    report = json.loads(out.stdout)
    assert report["terminal"] == "completed"
    assert "CONTRACT_VERSION_ROLLBACK" in _codes(report)
    (stale,) = [d for d in sorted((home / "runs").iterdir()) if d != run_dir]
    assert not (stale / "intent").exists()  # a stale binding writes no new envelope
    final = json.loads((stale / "continuity" / "snapshot-final.json").read_text())
    assert (final["contract_ref"], final["contract_version"]) == ("intent:bracket-task", 2)


def test_completion_evidence_naming_a_validator_becomes_an_acceptance_assertion(
    tmp_path: Path,
) -> None:
    evidence = [
        {"requirement": "cap:validate.solidValidity@1 holds", "acceptable_sources": ["test"]},
        {"requirement": "the drawing is reviewed", "acceptable_sources": ["user"]},
    ]
    report, run_dir = _run(
        tmp_path, "--contract", _contract(tmp_path, completion_evidence=evidence)
    )
    end = json.loads((run_dir / "trajectory.jsonl").read_text().splitlines()[-1])
    frame = end["integrations"]["intent"]
    assert frame["goal"] == CONTRACT["objective"]  # the intent owner's words win
    assert "cap:validate.solidValidity@1 holds" in frame["acceptanceAssertions"]
    assert "evidence: the drawing is reviewed" in frame["hardRequirements"]
    assert end["integrations"]["stale"] is False
    # a user's review is evidence the host cannot observe: the guard keeps asking for it,
    # and a script with one `done` ends without completing
    assert report["terminal"] == "cannotProceed"
