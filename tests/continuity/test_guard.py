"""The Guard adapter (aira_continuity.guard): the Guard's own decision vectors reproduced, the
contract's forbidden / must_not / requires_user judged on Aira's effects, completion evidence,
a run on the fake kernel, and the receipt export written at the end read back as the wire's
bundle (and against the upstream schemas when AIRA_UPSTREAM_GUARD_SPECS is set)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import FakeGeometryKernel, make_runtime
from test_step_loop import GOOD, INTENT, codes, script

from aira_continuity.errors import CONTRACT_INVALID, WIRE_RECORD_INVALID, WireError
from aira_continuity.guard import Action, FidelityGuard, classify, decide, summarise
from aira_continuity.wire import (
    ReceiptBundle,
    ShadowPilotSummary,
    TaskContractLite,
    read,
)
from aira_core.integrations import (
    GUARD_BLOCKED,
    CompletionClaim,
    ContractBinding,
    EffectEvent,
    Integrations,
    artifact_ref,
)
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.tiers import TIERS
from aira_core.step.loop import StepHost
from aira_core.step.runner import _artefacts
from aira_core.step.trajectory import ScriptedSource
from tests.continuity.samples import NO_LOCAL_INSTALL

BLOCK_UNLOCK = "Change the contract or choose an action outside the matched action rule."
UNBOUND_UNLOCK = "Bind a valid task contract before relying on this guard."
SEMANTIC_UNLOCK = "Compare the pending action with the natural-language contract constraints."
ASK_UNLOCK = (
    "Ask the user one concise question to authorize or reject this external_side_effect, "
    "network, publish action. Approval is not consumed from chat automatically; before retrying, "
    "the canonical contract owner must publish a new contract version that moves this exact rule "
    "to allowed."
)


# (contract, mode, action) -> decision, authority, severity, reasons, rule ids, visibility,
# reversible, coverage, unlock: decision-vectors.json, from the Guard's own policy.mjs.
VECTORS = [
    (
        "no-local-install",
        "balanced",
        "install",
        "block",
        "deterministic_rule",
        "high",
        ("explicit_contract_conflict",),
        ("forbidden:4933d83689caff24",),
        "user",
        False,
        "observed",
        BLOCK_UNLOCK,
    ),
    (
        "no-local-install",
        "balanced",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        True,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "balanced",
        "publish",
        "ask",
        "deterministic_rule",
        "medium",
        ("explicit_user_authorization_required",),
        ("requires_user:a2b50321fe8b7c6c",),
        "user",
        False,
        "observed",
        ASK_UNLOCK,
    ),
    (
        "no-local-install",
        "balanced",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "balanced",
        "curlpost",
        "continue",
        "deterministic_rule",
        "low",
        ("no_material_conflict",),
        (),
        "silent",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "shadow",
        "install",
        "remind",
        "deterministic_rule",
        "high",
        ("shadow_would_block", "explicit_contract_conflict"),
        ("forbidden:4933d83689caff24",),
        "model",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "shadow",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        True,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "shadow",
        "publish",
        "remind",
        "deterministic_rule",
        "medium",
        ("shadow_would_ask", "explicit_user_authorization_required"),
        ("requires_user:a2b50321fe8b7c6c",),
        "model",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "shadow",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "shadow",
        "curlpost",
        "continue",
        "deterministic_rule",
        "low",
        ("no_material_conflict",),
        (),
        "silent",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install",
        "off",
        "install",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install",
        "off",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install",
        "off",
        "publish",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install",
        "off",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install",
        "off",
        "curlpost",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "balanced",
        "install",
        "block",
        "deterministic_rule",
        "high",
        ("explicit_contract_conflict",),
        ("forbidden:4933d83689caff24",),
        "user",
        False,
        "observed",
        BLOCK_UNLOCK,
    ),
    (
        "no-local-install+NL must_not",
        "balanced",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        True,
        "observed",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "balanced",
        "publish",
        "ask",
        "deterministic_rule",
        "medium",
        ("explicit_user_authorization_required",),
        ("requires_user:a2b50321fe8b7c6c",),
        "user",
        False,
        "observed",
        ASK_UNLOCK,
    ),
    (
        "no-local-install+NL must_not",
        "balanced",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "balanced",
        "curlpost",
        "remind",
        "semantic_candidate",
        "medium",
        ("semantic_constraint_candidate", "no_deterministic_match"),
        (),
        "model",
        False,
        "observed",
        SEMANTIC_UNLOCK,
    ),
    (
        "no-local-install+NL must_not",
        "shadow",
        "install",
        "remind",
        "deterministic_rule",
        "high",
        ("shadow_would_block", "explicit_contract_conflict"),
        ("forbidden:4933d83689caff24",),
        "model",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "shadow",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        True,
        "observed",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "shadow",
        "publish",
        "remind",
        "deterministic_rule",
        "medium",
        ("shadow_would_ask", "explicit_user_authorization_required"),
        ("requires_user:a2b50321fe8b7c6c",),
        "model",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "shadow",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("explicit_contract_allowance",),
        (),
        "silent",
        False,
        "observed",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "shadow",
        "curlpost",
        "remind",
        "semantic_candidate",
        "medium",
        ("semantic_constraint_candidate", "no_deterministic_match"),
        (),
        "model",
        False,
        "observed",
        SEMANTIC_UNLOCK,
    ),
    (
        "no-local-install+NL must_not",
        "off",
        "install",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "off",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "off",
        "publish",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "off",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "no-local-install+NL must_not",
        "off",
        "curlpost",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "unbound",
        "balanced",
        "install",
        "remind",
        "semantic_candidate",
        "medium",
        ("contract_unbound", "high_risk_action_uncovered"),
        (),
        "model",
        False,
        "partial",
        UNBOUND_UNLOCK,
    ),
    (
        "unbound",
        "balanced",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("contract_unbound",),
        (),
        "silent",
        True,
        "partial",
        None,
    ),
    (
        "unbound",
        "balanced",
        "publish",
        "remind",
        "semantic_candidate",
        "medium",
        ("contract_unbound", "high_risk_action_uncovered"),
        (),
        "model",
        False,
        "partial",
        UNBOUND_UNLOCK,
    ),
    (
        "unbound",
        "balanced",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("contract_unbound",),
        (),
        "silent",
        False,
        "partial",
        None,
    ),
    (
        "unbound",
        "balanced",
        "curlpost",
        "remind",
        "semantic_candidate",
        "medium",
        ("contract_unbound", "high_risk_action_uncovered"),
        (),
        "model",
        False,
        "partial",
        UNBOUND_UNLOCK,
    ),
    (
        "unbound",
        "shadow",
        "install",
        "remind",
        "semantic_candidate",
        "medium",
        ("contract_unbound", "high_risk_action_uncovered"),
        (),
        "model",
        False,
        "partial",
        UNBOUND_UNLOCK,
    ),
    (
        "unbound",
        "shadow",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("contract_unbound",),
        (),
        "silent",
        True,
        "partial",
        None,
    ),
    (
        "unbound",
        "shadow",
        "publish",
        "remind",
        "semantic_candidate",
        "medium",
        ("contract_unbound", "high_risk_action_uncovered"),
        (),
        "model",
        False,
        "partial",
        UNBOUND_UNLOCK,
    ),
    (
        "unbound",
        "shadow",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("contract_unbound",),
        (),
        "silent",
        False,
        "partial",
        None,
    ),
    (
        "unbound",
        "shadow",
        "curlpost",
        "remind",
        "semantic_candidate",
        "medium",
        ("contract_unbound", "high_risk_action_uncovered"),
        (),
        "model",
        False,
        "partial",
        UNBOUND_UNLOCK,
    ),
    (
        "unbound",
        "off",
        "install",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "unbound",
        "off",
        "read",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "unbound",
        "off",
        "publish",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "unbound",
        "off",
        "write",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
    (
        "unbound",
        "off",
        "curlpost",
        "continue",
        "deterministic_rule",
        "low",
        ("guard_disabled",),
        (),
        "silent",
        True,
        "unobserved",
        None,
    ),
]

# The actions the vector script built, in the shape the Guard's classifier returns.
ACTIONS = {
    "install": Action(
        "Bash", "npm install left-pad", ("install_local", "network", "write_workspace")
    ),
    "read": Action("Bash", "rg --files", ("read",)),
    "publish": Action(
        "Bash", "gh release create v0.1.0", ("external_side_effect", "network", "publish")
    ),
    "write": Action("apply_patch", "", ("write_workspace",)),
    "curlpost": Action("Bash", "curl -X POST https://x", ("external_side_effect", "network")),
}
NL_MUST_NOT = {
    **NO_LOCAL_INSTALL,
    "must_and_must_not": {"must": [], "must_not": ["do not touch production"]},
}
CONTRACTS = {
    "no-local-install": read(TaskContractLite, NO_LOCAL_INSTALL),
    "no-local-install+NL must_not": read(TaskContractLite, NL_MUST_NOT),
    "unbound": None,
}


@pytest.mark.parametrize("row", VECTORS, ids=[f"{r[0]}/{r[1]}/{r[2]}" for r in VECTORS])
def test_the_guards_decision_vectors_are_reproduced(row: tuple[Any, ...]) -> None:
    contract, mode, action, *expected = row
    got = decide(CONTRACTS[contract], ACTIONS[action], mode)
    assert [
        got.decision, got.authority, got.severity, got.reason_codes, got.rule_ids,
        got.visibility, got.reversible, got.coverage, got.unlock,
    ] == expected  # fmt: skip
    assert got.evidence_refs == ()


def test_the_guards_lite_identities_are_derived() -> None:
    from aira_continuity.projection import lite_ref

    assert lite_ref(NO_LOCAL_INSTALL) == "lite:25e99dcd88ed6125a480"
    assert lite_ref(NL_MUST_NOT) == "lite:fdb440057356851f75c2"
    assert FidelityGuard(CONTRACTS["no-local-install"]).binding == ContractBinding(
        "lite:25e99dcd88ed6125a480", 1
    )


# -- Aira's effects -------------------------------------------------------------------------------


def contract(**authorization: list[str]) -> TaskContractLite:
    value = copy.deepcopy(NO_LOCAL_INSTALL)
    must_not = authorization.pop("must_not", [])
    value["authorization"] = {"allowed": [], "requires_user": [], "forbidden": [], **authorization}
    value["must_and_must_not"]["must_not"] = must_not
    return read(TaskContractLite, value)


def effect(action: str, effect_class: str, operation: str | None = None, **kw: Any) -> EffectEvent:
    operation = operation or action.split(":")[0]
    return EffectEvent("t1", None, "r1", operation, effect_class, action, **kw)  # type: ignore[arg-type]


COMMIT = effect("model.commit", "reversible")
PUBLISH = effect("publish", "irreversible", "model.commit", target="main")
EXPORT = effect("export:step", "external", "export", target="plate.step")
PROPOSE = effect("model.proposePatch", "bufferable")


def test_aira_effects_carry_the_guards_action_tags() -> None:
    assert [classify(e).tags for e in (PROPOSE, COMMIT, PUBLISH, EXPORT)] == [
        ("read",),
        ("write_workspace",),
        ("publish", "write_workspace"),
        ("external_side_effect", "write_workspace"),
    ]
    assert classify(effect("x", "weird")).tags == ("unknown",)  # type: ignore[arg-type]
    assert classify(PUBLISH).high_risk and not classify(COMMIT).high_risk


@pytest.mark.parametrize(
    "rules",
    [
        {"must_not": ["action:external_side_effect"]},
        {"must_not": ["tool:export"]},
        {"forbidden": ["command-prefix:EXPORT:"]},
    ],
)
def test_a_must_not_on_export_blocks_the_export_and_allows_the_commit(rules: dict) -> None:
    guard = FidelityGuard(contract(**rules))
    blocked = guard.judge(EXPORT)
    assert (blocked.decision, blocked.reason) == ("block", "explicit_contract_conflict")
    bucket = next(iter(rules))
    assert blocked.receipt["rule_ids"][0].startswith(bucket + ":")
    assert blocked.receipt["decision"] == "block" and blocked.receipt["visibility"] == "user"
    for other in (COMMIT, PROPOSE):
        assert guard.judge(other).decision == "allow"


def test_requires_user_on_publish_asks_for_the_publish_only() -> None:
    guard = FidelityGuard(contract(requires_user=["action:publish"]))
    asked = guard.judge(PUBLISH)
    assert (asked.decision, asked.reason) == ("ask", "explicit_user_authorization_required")
    assert asked.receipt["unlock"].startswith("Ask the user one concise question")
    assert [guard.judge(e).decision for e in (COMMIT, EXPORT, PROPOSE)] == ["allow"] * 3


def test_allowed_is_no_allowlist_and_natural_language_never_blocks() -> None:
    guard = FidelityGuard(contract(allowed=["action:read"], must_not=["never export files"]))
    assert guard.judge(COMMIT).reason == "no_material_conflict"  # unlisted: continues
    semantic = guard.judge(EXPORT)  # high-risk under a natural-language must_not: advisory
    assert (semantic.decision, semantic.receipt["decision"]) == ("allow", "remind")
    assert semantic.reason == "no_deterministic_match"
    assert guard.judge(PROPOSE).reason == "explicit_contract_allowance"


def test_shadow_mode_reminds_where_balanced_blocks() -> None:
    guard = FidelityGuard(contract(forbidden=["tool:export"]), mode="shadow")
    verdict = guard.judge(EXPORT)
    assert (verdict.decision, verdict.reason) == ("allow", "shadow_would_block")
    assert verdict.receipt["reason_codes"] == ["shadow_would_block", "explicit_contract_conflict"]


def test_a_contract_the_host_did_not_bind_is_not_the_tasks() -> None:
    guard = FidelityGuard(contract(forbidden=["tool:export"]), "intent:a", 2)
    other = EffectEvent(
        "t1", ContractBinding("intent:a", 3), "r", "export", "external", "export:step"
    )
    verdict = guard.judge(other)  # the owner moved on to v3: unbound, advisory
    assert verdict.decision == "allow" and verdict.reason == "high_risk_action_uncovered"
    assert verdict.receipt["contract_ref"] == "unbound"
    same = EffectEvent(
        "t1", ContractBinding("intent:a", 2), "r", "export", "external", "export:step"
    )
    assert guard.judge(same).decision == "block"


# -- completion -----------------------------------------------------------------------------------


def claim(decision: str = "COMPLETED", refs: tuple[str, ...] = (), n: int = 0) -> CompletionClaim:
    return CompletionClaim("t1", None, "done", decision, refs, n)


def evidence_contract(*sources: str, requirement: str = "evidence:test") -> TaskContractLite:
    value = copy.deepcopy(NO_LOCAL_INSTALL)
    value["completion_evidence"] = [
        {"requirement": requirement, "acceptable_sources": list(sources)}
    ]
    return read(TaskContractLite, value)


def test_completion_with_missing_evidence_continues_verification_then_reminds() -> None:
    guard = FidelityGuard(evidence_contract("release", requirement="A release was cut"))
    first = guard.completion(claim())
    assert (first.decision, first.reason) == ("continue_verification", "required_evidence_missing")
    assert first.receipt["reason_codes"] == [
        "completion_claim_unverified",
        "required_evidence_missing",
    ]
    assert first.receipt["unlock"].startswith("Completion evidence is missing for requirement #1")
    capped = guard.completion(claim(n=2))
    assert (capped.decision, capped.reason) == ("remind", "continuation_cap_reached")


def test_completion_evidence_is_the_runtimes_check_and_the_commits() -> None:
    guard = FidelityGuard(evidence_contract("test"))
    assert (
        guard.completion(claim("COMPLETION_EVIDENCE_MISSING")).decision == "continue_verification"
    )
    done = guard.completion(claim())
    assert (done.decision, done.reason) == ("allow", "event_observed")
    rev = artifact_ref("rev:sha256:" + "ab" * 32)
    files = FidelityGuard(evidence_contract("file", requirement="evidence:file:action:write"))
    assert files.completion(claim()).decision == "continue_verification"
    files = FidelityGuard(evidence_contract("file", requirement="evidence:file"))
    assert files.completion(claim(refs=(rev,))).decision == "allow"
    records = files.bundles()["t1"]["evidence"]
    assert [(r["evidence"]["kind"], r["evidence"]["status"]) for r in records] == [
        ("test", "pass"),
        ("file", "pass"),
    ]
    assert records[1]["requirement_refs"] and records[1]["evidence"]["sha256"] == "ab" * 32


def test_a_later_failure_supersedes_an_earlier_pass() -> None:
    guard = FidelityGuard(evidence_contract("test"))
    assert guard.completion(claim()).decision == "allow"
    assert guard.completion(claim("COMPLETION_EVIDENCE_MISSING")).decision == (
        "continue_verification"
    )


def test_an_unbound_guard_allows_completion() -> None:
    verdict = FidelityGuard().completion(claim("COMPLETION_EVIDENCE_MISSING"))
    assert (verdict.decision, verdict.reason) == ("allow", "event_observed")


# -- configuration --------------------------------------------------------------------------------


@dataclass
class Options:
    contract: Path | None = None
    run_dir: Path | None = None


def test_configure_reads_a_bare_contract_or_a_provider_document(tmp_path: Path) -> None:
    from tests.continuity.samples import PROVIDER_DOCUMENT

    bare, provider = tmp_path / "bare.json", tmp_path / "provider.json"
    bare.write_text(json.dumps(NO_LOCAL_INSTALL))
    provider.write_text(json.dumps(PROVIDER_DOCUMENT))
    guard = FidelityGuard()
    guard.configure(Options(bare, tmp_path / "run"))
    assert guard.binding == ContractBinding("lite:25e99dcd88ed6125a480", 1)
    assert guard.out_dir == tmp_path / "run" / "guard"
    guard.configure(Options(provider))
    assert guard.binding == ContractBinding("intent:stable-task-id", 3)
    assert guard.provider == "user-intent-plugin"


@pytest.mark.parametrize("text", ["{", '{"objective": "x"}', None])
def test_an_unreadable_or_invalid_contract_is_a_stable_code(
    tmp_path: Path, text: str | None
) -> None:
    path = tmp_path / "c.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(WireError) as caught:
        FidelityGuard().configure(Options(path))
    assert caught.value.code == CONTRACT_INVALID and "Traceback" not in str(caught.value)


# -- a run on the fake kernel ---------------------------------------------------------------------


class ExportingKernel(FakeGeometryKernel):
    """The fake kernel, with STEP and SVG bytes of the document (the run's artefacts)."""

    def export(self, document: Any, format: str, body: Any = None, **kw: Any) -> bytes:
        if format in ("step", "svg"):
            return f"{format}:{len(document.bodies)}".encode()
        return super().export(document, format, body, **kw)


def test_a_run_with_the_guard_blocks_the_export_and_not_the_commit(tmp_path: Path) -> None:
    guard = FidelityGuard(contract(must_not=["command-prefix:export:step"]), out_dir=tmp_path / "g")
    ctx, kernel, repo = make_runtime(tmp_path)
    h = StepHost(
        ctx, kernel, ScriptedSource(script(GOOD, "T128")), task_id="t1", intent=INTENT,
        tier=TIERS["T128"], integrations=Integrations([guard], seconds=5.0),
    )  # fmt: skip
    outcome = h.run()
    assert outcome.terminal is TerminalState.COMPLETED and codes(outcome) == []
    files = _artefacts(ExportingKernel(), repo, h, tmp_path / "out" / "plate", tmp_path / "store")
    assert set(files) == {"svg"} and not (tmp_path / "out" / "plate.step").exists()
    assert [(d.code, d.subject) for d in h.refusals] == [(GUARD_BLOCKED, "plate.step")]
    h.conclude()
    written = sorted((tmp_path / "g").iterdir())
    assert [p.name.startswith("receipts-") for p in written] == [True]
    bundle = read(ReceiptBundle, json.loads(written[0].read_text()))
    decisions = [
        (e.tool_name, r.decision) for e, r in zip(bundle.events, bundle.receipts, strict=True)
    ]
    assert decisions == [
        ("model.proposePatch", "continue"),
        ("model.preview", "continue"),
        ("model.validate", "continue"),
        ("model.commit", "continue"),
        (None, "continue"),  # the done: the runtime's check is the test evidence
        ("export", "block"),
        ("export", "continue"),
    ]
    assert bundle.stop_state is not None and bundle.stop_state["attempts"] == 0
    assert [r.evidence.kind for r in bundle.evidence] == ["test", "file"]
    # read-only: the guard wrote its own directory and nothing else
    assert {p.parent for p in written} == {tmp_path / "g"}
    summary = summarise([written[0].read_bytes()], now=datetime(2026, 9, 1, tzinfo=UTC))
    assert summary.observations.decisions == {"continue": 6, "block": 1}
    assert summary.sessions.in_shadow_mode == 0 and summary.sessions.with_stop == 1


def test_nothing_judged_writes_nothing(tmp_path: Path) -> None:
    FidelityGuard(out_dir=tmp_path / "g").finish(())
    assert not (tmp_path / "g").exists()


# -- the shadow-pilot summary ---------------------------------------------------------------------


def shadow_bundle(latencies: list[int | float]) -> bytes:
    guard = FidelityGuard(
        contract(forbidden=["tool:export"], requires_user=["action:publish"]), mode="shadow"
    )
    for i, _ in enumerate(latencies):
        guard.judge(
            EffectEvent(f"t{len(latencies)}", None, f"r{i}", "export", "external", "export:step")
        )
    bundle = guard.bundles()[f"t{len(latencies)}"]
    for receipt, latency in zip(bundle["receipts"], latencies, strict=True):
        receipt["latency_ms"] = latency
    return json.dumps(bundle).encode()


def test_the_summary_counts_as_the_guards_summarizer() -> None:
    one, two = shadow_bundle([1, 2, 3, 4]), shadow_bundle([0.125, 10, 7])
    summary = summarise([one, two], target=2, now=datetime(2026, 9, 1, tzinfo=UTC))
    assert isinstance(summary, ShadowPilotSummary)
    wire = summary.to_wire()
    assert wire["generated_at"] == "2026-09-01T00:00:00.000Z"
    assert wire["sessions"] == {
        "unique": 2, "in_shadow_mode": 2, "with_pre_tool_use": 2, "with_stop": 0,
        "with_shadow_candidate": 2,
    }  # fmt: skip
    assert wire["sample_gate"] == {
        "target_sessions": 2, "eligible_shadow_sessions": 2, "reached": True, "remaining": 0,
    }  # fmt: skip
    assert wire["observations"]["shadow_candidates"] == {"would_block": 7, "would_ask": 0}
    assert wire["observations"]["reasons"] == {
        "shadow_would_block": 7,
        "explicit_contract_conflict": 7,
    }
    # nearest rank over [0.125, 1, 2, 3, 4, 7, 10]: p50 the 4th, p95 the 7th; 0.125 → 0.13 (JS)
    assert wire["observations"]["runtime_decision_latency_ms"] == {"p50": 3, "p95": 10, "max": 10}
    low = summarise([shadow_bundle([0.125])]).to_wire()["observations"]
    assert low["runtime_decision_latency_ms"]["p50"] == 0.13  # Python's round gives 0.12


def test_the_summary_refuses_a_bundle_twice_or_a_broken_one() -> None:
    one = shadow_bundle([1])
    with pytest.raises(WireError) as caught:
        summarise([one, one])
    assert caught.value.code == WIRE_RECORD_INVALID
    broken = json.loads(one)
    broken["receipts"][0]["reason_codes"] = ["made_up"]
    with pytest.raises(WireError):
        summarise([json.dumps(broken).encode()])


def test_the_bundle_validates_against_the_upstream_schemas(tmp_path: Path) -> None:
    import os

    if not os.environ.get("AIRA_UPSTREAM_GUARD_SPECS"):
        pytest.skip("AIRA_UPSTREAM_GUARD_SPECS names no directory of the upstream schema files")
    from tests.continuity.test_upstream_schemas import SCHEMA_OF, validator

    guard = FidelityGuard(contract(forbidden=["tool:export"]), out_dir=tmp_path / "g")
    guard.judge(EXPORT)
    guard.judge(COMMIT)
    guard.completion(claim(refs=(artifact_ref("rev:sha256:" + "cd" * 32),)))
    guard.finish(())
    bundle = json.loads(next((tmp_path / "g").iterdir()).read_text())
    for part, name in (
        ("events", "normalized-event"),
        ("receipts", "decision-receipt"),
        ("evidence", "evidence-record"),
    ):
        for item in bundle[part]:
            errors = [e.message for e in validator(SCHEMA_OF[name]).iter_errors(item)]
            assert errors == [], (part, item)
    summary = summarise([next((tmp_path / "g").iterdir()).read_bytes()]).to_wire()
    assert validator(SCHEMA_OF["shadow-pilot-summary"]).is_valid(summary)
