"""Valid instances of every wire object, as the upstream products write them (values from the
Guard's fixtures and the research vectors), for the wire and upstream-schema tests."""

from __future__ import annotations

import copy
from typing import Any

SESSION = "session:0a66466c292b4d132cb8baf7bd4447457020ff863f0ee6b2b18099c7ff2e0c0d"
TURN = "turn:bfdc6499470b2a27a006b1186751c12ca40580dc092c51c522fd210056882856"
TOOL_USE = "tool-use:dfb08c97e02fecde91c3ffa8668af4db8a9623ee80ae4a33d0b13cebdb498533"
HEX = "c1186dbb68175ef157cda19eaea1bdf71360ae47df124e1e8f6108820f00cef5"

# The Guard's examples/contracts/no-local-install.json and its projection hash.
NO_LOCAL_INSTALL: dict[str, Any] = {
    "objective": "Deliver a tested repository change without installing project "
    "dependencies locally.",
    "primary_object": "the requested repository",
    "delivery_surface": ["repository"],
    "scope": {
        "include": ["workspace source and documentation"],
        "exclude": ["global Codex configuration"],
    },
    "must_and_must_not": {
        "must": ["Preserve the user-requested delivery surface"],
        "must_not": [],
    },
    "authorization": {
        "allowed": ["action:read", "action:write"],
        "requires_user": ["action:publish", "action:delete"],
        "forbidden": ["action:install_local"],
    },
    "completion_evidence": [{"requirement": "evidence:test", "acceptable_sources": ["test"]}],
}
NO_LOCAL_INSTALL_SHA256 = "25e99dcd88ed6125a4807b7e15afd7bcf04e7c89448a23d8b3d90f6e7caca44a"

ENVELOPE: dict[str, Any] = {
    "schema_version": "1.0",
    "contract_ref": "intent:stable-task-id",
    "contract_version": 3,
    "source": "user-intent-plugin",
    "source_message_refs": ["msg:1"],
    "snapshot_sha256": NO_LOCAL_INSTALL_SHA256,
    "updated_at": "2026-09-01T00:00:00.000Z",
}

FALLBACK_ENVELOPE: dict[str, Any] = {
    "schema_version": "1.0",
    "contract_ref": "lite:25e99dcd88ed6125a480",
    "contract_version": 1,
    "source": "task-contract-lite",
    "source_message_refs": [],
    "snapshot_sha256": NO_LOCAL_INSTALL_SHA256,
    "updated_at": "1970-01-01T00:00:00.000Z",
    "task_contract_lite": NO_LOCAL_INSTALL,
}

PROVIDER_DOCUMENT: dict[str, Any] = {"envelope": ENVELOPE, "projection": NO_LOCAL_INSTALL}

SNAPSHOT: dict[str, Any] = {
    "schema_version": "1.0",
    "contract_ref": "intent:stable-task-id",
    "contract_version": 3,
    "phase": "implementation",
    "open_commitments": ["next:verify-release", "question:target-platform"],
    "evidence_refs": ["artifact:sha256:" + HEX],
    "captured_at": "2026-09-01T00:00:00.000Z",
}

EVENT: dict[str, Any] = {
    "schema_version": "2.0",
    "event_id": "evt_0123456789abcdef01234567",
    "session_id": SESSION,
    "turn_id": TURN,
    "tool_use_id": TOOL_USE,
    "event_type": "pre_tool_use",
    "observed_at": "2026-09-01T00:00:01.000Z",
    "tool_name": "Bash",
    "contract_ref": "intent:stable-task-id",
    "contract_version": 3,
    "coverage": "observed",
    "input_sha256": HEX,
    "result_sha256": None,
    "facts": {
        "contract_status": "bound",
        "guard_mode": "shadow",
        "contract_provider": "user-intent-plugin",
        "action_tags": ["install_local", "network", "write_workspace"],
        "reversible": False,
    },
}

RECEIPT: dict[str, Any] = {
    "schema_version": "1.0",
    "receipt_id": "rcpt_0123456789abcdef01234567",
    "event_ref": EVENT["event_id"],
    "contract_ref": "intent:stable-task-id",
    "contract_version": 3,
    "decision": "remind",
    "authority": "deterministic_rule",
    "severity": "high",
    "reason_codes": ["shadow_would_block", "explicit_contract_conflict"],
    "rule_ids": ["forbidden:4933d83689caff24"],
    "evidence_refs": [],
    "visibility": "model",
    "reversible": False,
    "coverage": "observed",
    "unlock": "Change the contract or choose an action outside the matched action rule.",
    "semantic_model": None,
    "decided_at": "2026-09-01T00:00:01.004Z",
    "latency_ms": 4,
}

EVIDENCE_REFERENCE: dict[str, Any] = {
    "evidence_ref": "ev_0123456789abcdef01234567",
    "kind": "test",
    "source": "Bash:0123456789abcdef",
    "redacted_locator": "report.xml",
    "sha256": HEX,
    "captured_at": "2026-09-01T00:00:02.000Z",
    "freshness": "current_event",
    "coverage": "full_requirement",
    "status": "pass",
    "attestation": "hook_observed",
}

EVIDENCE_RECORD: dict[str, Any] = {
    "schema_version": "2.0",
    "evidence_ref": EVIDENCE_REFERENCE["evidence_ref"],
    "contract_ref": "intent:stable-task-id",
    "contract_version": 3,
    "requirement_refs": ["requirement:0:c1186dbb68175ef1"],
    "evidence": EVIDENCE_REFERENCE,
}

BUNDLE: dict[str, Any] = {
    "schema_version": "1.0",
    "kind": "execution-fidelity-guard-session-receipts",
    "session_ref": SESSION,
    "session_present": True,
    "exported_at": "2026-09-01T00:10:00.000Z",
    "events": [EVENT],
    "receipts": [RECEIPT],
    "evidence": [EVIDENCE_RECORD],
    "stop_state": {
        "schema_version": "1.0",
        "contract_ref": "intent:stable-task-id",
        "contract_version": 3,
        "attempts": 0,
        "updated_at": "2026-09-01T00:05:00.000Z",
    },
}

CLAIM_BOUNDARY = [
    "The report proves only what is present in the supplied pseudonymous receipt exports.",
    "A unique session receipt does not by itself prove that the session was a real user task "
    "or that tasks were independently sampled.",
    "Only sessions whose exported normalized events consistently record guard_mode=shadow "
    "count toward the sample gate; older or mode-unbound exports remain diagnostic only.",
    "Without user, external-evidence, or domain-rule adjudication, this report does not "
    "establish precision, false-positive rate, intervention efficacy, rework reduction, or "
    "outcome improvement.",
    "Receipt latency starts inside the loaded Guard runtime; use the command-Hook benchmark "
    "for end-to-end process latency.",
]

SUMMARY: dict[str, Any] = {
    "schema_version": "1.1",
    "kind": "execution-fidelity-guard-shadow-pilot-summary",
    "generated_at": "2026-09-02T00:00:00.000Z",
    "input": {
        "bundle_count": 2,
        "bundle_sha256": ["a" * 64, "b" * 64],
        # sha256("a"*64 + "\n" + "b"*64), the research vector
        "cohort_sha256": "5e9ae866add9a85d69c3481d059bb9f158a39e5670ba11f95112fc409630894e",
    },
    "sessions": {
        "unique": 2,
        "in_shadow_mode": 1,
        "with_pre_tool_use": 2,
        "with_stop": 1,
        "with_shadow_candidate": 1,
    },
    "sample_gate": {
        "target_sessions": 100,
        "eligible_shadow_sessions": 1,
        "reached": False,
        "remaining": 99,
    },
    "observations": {
        "events": 5,
        "receipts": 5,
        "decisions": {"continue": 4, "remind": 1},
        "coverage": {"observed": 5},
        "reasons": {"event_observed": 4, "shadow_would_block": 1, "explicit_contract_conflict": 1},
        "shadow_candidates": {"would_block": 1, "would_ask": 0},
        "runtime_decision_latency_ms": {"p50": 1, "p95": 4.5, "max": 4.5},
    },
    "claim_boundary": CLAIM_BOUNDARY,
}

SAMPLES: dict[str, dict[str, Any]] = {
    "task-contract-lite": NO_LOCAL_INSTALL,
    "contract-envelope": ENVELOPE,
    "provider-contract": PROVIDER_DOCUMENT,
    "continuity-snapshot": SNAPSHOT,
    "decision-receipt": RECEIPT,
    "normalized-event": EVENT,
    "evidence-reference": EVIDENCE_REFERENCE,
    "evidence-record": EVIDENCE_RECORD,
    "receipt-bundle": BUNDLE,
    "shadow-pilot-summary": SUMMARY,
}
"""One valid instance per entry of aira_continuity.wire.WIRE_MODELS."""


def sample(name: str) -> dict[str, Any]:
    """A fresh deep copy, for a test to break."""
    return copy.deepcopy(SAMPLES[name])
