"""IntentLoopAdapter: a provider document and a bare TaskContractLite bound onto an Intent
Frame field by field; the ledger's refusals (rollback, same-version collision, hash mismatch,
a missing field or file, an unreadable ledger), each with its code, staying on the last
verified binding marked stale; the contract derived from a frame with no provider."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aira_continuity.intent import (
    FACET_KINDS,
    LEDGER_FILE,
    IntentLoopAdapter,
    commitment_id,
    facet_kind,
)
from aira_continuity.projection import lite_ref, projection_sha256
from aira_continuity.wire import TaskContractLite, read
from aira_core.contracts.capability import Effect
from aira_core.contracts.plan import IntentFrame
from aira_core.integrations import Integrations, IntentBinding
from tests.continuity.samples import ENVELOPE, NO_LOCAL_INSTALL, NO_LOCAL_INSTALL_SHA256

VALIDATOR = "volume.range@1.0.0"

FRAME = IntentFrame(
    goal="a plate",
    hard_requirements=["60 x 40 mm"],
    scope=["b:plate"],
    prohibited_effects=[Effect.CHANGES_AUTHORITY],
    unknowns=["hole diameter"],
    acceptance_assertions=["volume positive"],
)

CONTRACT: dict[str, Any] = {
    "objective": "A 60 x 40 x 5 mm plate with four M4 holes.",
    "primary_object": "b:plate",
    "delivery_surface": ["aira-model"],
    "scope": {"include": ["b:plate", "b:holes", "the drawing"], "exclude": ["b:base"]},
    "must_and_must_not": {
        "must": ["60 x 40 mm", "four M4 holes"],
        "must_not": [
            "action:publish",
            "prohibited effect: changesTopology",
            "tool:Bash",
            "round the corners",
        ],
    },
    "authorization": {"allowed": [], "requires_user": [], "forbidden": []},
    "completion_evidence": [
        {"requirement": f"volume within range ({VALIDATOR})", "acceptable_sources": ["test"]},
        {"requirement": "a human looked at it", "acceptable_sources": ["user"]},
    ],
}


def provider(version: int, projection: dict[str, Any] | None = None, **envelope: Any) -> Any:
    projection = projection if projection is not None else CONTRACT
    env = {
        **ENVELOPE,
        "contract_version": version,
        "snapshot_sha256": projection_sha256(projection),
        **envelope,
    }
    return {"envelope": env, "projection": projection}


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def adapter(tmp_path: Path, contract: Path | None) -> IntentLoopAdapter:
    return IntentLoopAdapter(contract, tmp_path / "state", validators=[VALIDATOR])


def codes(a: IntentLoopAdapter) -> list[str]:
    return [d.code for d in a.diagnostics]


# -- mapping ---------------------------------------------------------------------------------------


def test_a_provider_document_binds_onto_the_frame_field_by_field(tmp_path: Path) -> None:
    a = adapter(tmp_path, write(tmp_path / "c.json", provider(3)))
    binding = a.bind(FRAME)
    assert isinstance(binding, IntentBinding) and a.diagnostics == []
    assert (binding.contract_ref, binding.contract_version) == ("intent:stable-task-id", 3)
    assert binding.snapshot_sha256 == projection_sha256(CONTRACT)
    assert (binding.source, binding.stale) == ("user-intent-plugin", False)
    frame = binding.frame
    assert frame.goal == CONTRACT["objective"]
    # the frame's own first, then must, natural-language must_not, evidence with no validator
    assert frame.hard_requirements == [
        "60 x 40 mm",
        "four M4 holes",
        "must not: round the corners",
        "evidence: a human looked at it",
    ]
    assert frame.prohibited_effects == [
        Effect.CHANGES_AUTHORITY,
        Effect.EXTERNAL_SIDE_EFFECT,  # action:publish
        Effect.CHANGES_TOPOLOGY,  # prohibited effect: changesTopology
    ]
    assert frame.scope == ["b:plate", "b:holes"]
    assert frame.acceptance_assertions == [
        "volume positive",
        f"volume within range ({VALIDATOR})",
    ]
    assert frame.unknowns == ["hole diameter"] and frame.soft_preferences == []
    assert a.provider_refs == (
        "must_not: tool:Bash",
        "scope.include: the drawing",
        "scope.exclude: b:base",
    )
    text = (tmp_path / "state" / LEDGER_FILE).read_text()
    ledger = json.loads(text)
    assert ledger["contracts"]["intent:stable-task-id"]["version"] == 3
    assert str(tmp_path) not in text  # the contract file is keyed by a hash of its path


def test_a_bare_task_contract_lite_binds_with_its_content_identity(tmp_path: Path) -> None:
    a = adapter(tmp_path, write(tmp_path / "c.json", NO_LOCAL_INSTALL))
    binding = a.bind(IntentFrame(goal="g"))
    assert binding is not None and a.diagnostics == []
    assert binding.contract_ref == "lite:25e99dcd88ed6125a480" == lite_ref(NO_LOCAL_INSTALL)
    assert (binding.contract_version, binding.source) == (1, "task-contract-lite")
    assert binding.snapshot_sha256 == NO_LOCAL_INSTALL_SHA256
    frame = binding.frame
    assert frame.goal == NO_LOCAL_INSTALL["objective"]
    assert frame.hard_requirements == [
        "Preserve the user-requested delivery surface",
        "evidence: evidence:test",
    ]
    assert frame.scope == [] and frame.prohibited_effects == []
    assert a.provider_refs == (
        "scope.include: workspace source and documentation",
        "scope.exclude: global Codex configuration",
    )


def test_the_seam_carries_the_binding_to_the_host(tmp_path: Path) -> None:
    a = adapter(tmp_path, write(tmp_path / "c.json", provider(1)))
    seam = Integrations([a])
    binding = seam.bind(FRAME)
    assert binding is not None and seam.diagnostics == []
    assert seam.contract is not None and seam.contract.contract_ref == "intent:stable-task-id"


# -- the ledger's refusals -----------------------------------------------------------------------


def test_a_higher_version_binds_and_the_same_one_again_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    a = adapter(tmp_path, write(path, provider(3)))
    assert a.bind(FRAME).contract_version == 3
    assert a.bind(FRAME).stale is False and a.diagnostics == []
    changed = copy.deepcopy(CONTRACT)
    changed["must_and_must_not"]["must"].append("chamfer 1 mm")
    binding = adapter(tmp_path, write(path, provider(4, changed))).bind(FRAME)
    assert (binding.contract_version, binding.stale) == (4, False)
    assert "chamfer 1 mm" in binding.frame.hard_requirements


def refused_then_stale(tmp_path: Path, document: Any, code: str) -> IntentBinding:
    """Verify v3, then offer ``document``: refused with ``code``, stale on v3."""
    path = tmp_path / "c.json"
    assert adapter(tmp_path, write(path, provider(3))).bind(FRAME).stale is False
    if document is None:
        path.unlink()
    else:
        write(path, document)
    a = adapter(tmp_path, path)
    binding = a.bind(FRAME)
    assert codes(a) == [code], a.diagnostics
    assert all(d.severity == "warning" and "Traceback" not in d.message for d in a.diagnostics)
    assert binding is not None and binding.stale is True
    assert (binding.contract_ref, binding.contract_version) == ("intent:stable-task-id", 3)
    assert binding.snapshot_sha256 == projection_sha256(CONTRACT)
    # the frame bound from the last verified projection
    assert binding.frame.goal == CONTRACT["objective"]
    assert "four M4 holes" in binding.frame.hard_requirements
    # the ledger still holds v3
    ledger = json.loads((tmp_path / "state" / LEDGER_FILE).read_text())
    assert ledger["contracts"]["intent:stable-task-id"]["version"] == 3
    return binding


def test_a_rolled_back_version_is_refused(tmp_path: Path) -> None:
    refused_then_stale(tmp_path, provider(2), "CONTRACT_VERSION_ROLLBACK")


def test_the_same_version_with_another_hash_is_a_collision(tmp_path: Path) -> None:
    changed = copy.deepcopy(CONTRACT)
    changed["objective"] = "A 60 x 40 x 6 mm plate."
    refused_then_stale(tmp_path, provider(3, changed), "CONTRACT_VERSION_COLLISION")


def test_a_snapshot_that_is_not_the_projection_hash_is_a_mismatch(tmp_path: Path) -> None:
    refused_then_stale(tmp_path, provider(4, snapshot_sha256="0" * 64), "CONTRACT_HASH_MISMATCH")


def test_a_missing_field_is_refused_with_the_wire_code(tmp_path: Path) -> None:
    document = provider(4)
    document["projection"] = {k: v for k, v in CONTRACT.items() if k != "completion_evidence"}
    binding = refused_then_stale(tmp_path, document, "CONTRACT_INVALID")
    assert binding.contract_version == 3


def test_a_missing_file_stays_on_the_last_verified_binding_of_that_file(tmp_path: Path) -> None:
    refused_then_stale(tmp_path, None, "CONTRACT_INVALID")


def test_a_refusal_with_nothing_verified_before_is_unbound(tmp_path: Path) -> None:
    a = adapter(tmp_path, write(tmp_path / "c.json", provider(2, snapshot_sha256="1" * 64)))
    assert a.bind(FRAME) is None and codes(a) == ["CONTRACT_HASH_MISMATCH"]
    assert not (tmp_path / "state" / LEDGER_FILE).exists()
    a = adapter(tmp_path, write(tmp_path / "c.json", "not a contract"))
    assert a.bind(FRAME) is None and codes(a) == ["CONTRACT_INVALID"]


def test_an_unreadable_ledger_binds_nothing(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / LEDGER_FILE).write_text("{not json", encoding="utf-8")
    a = adapter(tmp_path, write(tmp_path / "c.json", provider(3)))
    assert a.bind(FRAME) is None and codes(a) == ["CONTRACT_LEDGER_INVALID"]
    assert (tmp_path / "state" / LEDGER_FILE).read_text() == "{not json"  # left as it was


def test_the_ledger_defaults_to_aira_home(aira_home: Path, tmp_path: Path) -> None:
    a = IntentLoopAdapter(write(tmp_path / "c.json", provider(3)))
    assert a.bind(FRAME) is not None
    assert (aira_home / "integrations" / LEDGER_FILE).is_file()


def test_configure_takes_the_contract_and_keeps_the_ledger(tmp_path: Path) -> None:
    a = IntentLoopAdapter(state_dir=tmp_path / "state")
    a.configure(SimpleNamespace(contract=write(tmp_path / "c.json", provider(3)), run_dir=tmp_path))
    assert a.bind(FRAME).contract_version == 3
    assert (tmp_path / "state" / LEDGER_FILE).is_file()


# -- no provider: the derived contract -------------------------------------------------------------


def test_without_a_contract_the_frame_derives_a_task_contract_lite(tmp_path: Path) -> None:
    a = adapter(tmp_path, None)
    contract = a.derived_contract(FRAME)
    assert read(TaskContractLite, contract.to_wire()) == contract
    wire = contract.to_wire()
    assert wire["objective"] == "a plate" and wire["primary_object"] == "b:plate"
    assert wire["delivery_surface"] == ["aira-model"]
    assert wire["scope"] == {"include": ["b:plate"], "exclude": []}
    assert wire["must_and_must_not"] == {
        "must": ["60 x 40 mm"],
        "must_not": ["prohibited effect: changesAuthority"],
    }
    assert wire["completion_evidence"] == [
        {"requirement": "volume positive", "acceptable_sources": ["test"]},
        {"requirement": "60 x 40 mm", "acceptable_sources": ["test"]},
    ]
    binding = a.bind(FRAME)
    assert binding.frame == FRAME and binding.contract_version == 1
    assert binding.contract_ref == lite_ref(wire) == a.bind(FRAME.model_copy()).contract_ref
    assert binding.source == "task-contract-lite" and not binding.stale
    # a bare frame still has one completion evidence (its goal) and a primary object
    bare = a.derived_contract(IntentFrame(goal="a cube"))
    assert bare.completion_evidence[0].requirement == "a cube"
    assert bare.primary_object == "the design model"
    # the derived contract, bound back as a file, gives the frame's effects back
    again = adapter(tmp_path, write(tmp_path / "d.json", wire)).bind(IntentFrame(goal="x"))
    assert again.contract_ref == binding.contract_ref
    assert again.frame.prohibited_effects == [Effect.CHANGES_AUTHORITY]


def test_an_external_effect_derives_the_guards_own_rule(tmp_path: Path) -> None:
    frame = IntentFrame(goal="g", prohibited_effects=[Effect.EXTERNAL_SIDE_EFFECT])
    wire = adapter(tmp_path, None).derived_contract(frame).to_wire()
    assert wire["must_and_must_not"]["must_not"] == ["action:external_side_effect"]


def test_the_facet_table_maps_four_facets_and_keeps_the_rest_provider_owned() -> None:
    assert FACET_KINDS == {
        "outcome": "objective",
        "hard_constraint": "hard_constraint",
        "unknown": "open_question",
        "disagreement": "dispute",
    }
    for facet in ("success_signal", "failure_signal", "soft_constraint", "tradeoff"):
        assert facet_kind(facet) is None
    assert commitment_id("open_question", "x") == commitment_id("open_question", "x")
    assert commitment_id("open_question", "x").startswith("open_question:")
    assert len(commitment_id("dispute", "x").split(":")[1]) == 16


@pytest.mark.parametrize("version", [1, 5])
def test_a_bare_contract_is_never_version_rolled(tmp_path: Path, version: int) -> None:
    # a provider ref and a lite ref are separate ledger entries
    adapter(tmp_path, write(tmp_path / "p.json", provider(version))).bind(FRAME)
    binding = adapter(tmp_path, write(tmp_path / "l.json", CONTRACT)).bind(FRAME)
    assert binding.contract_version == 1 and not binding.stale
