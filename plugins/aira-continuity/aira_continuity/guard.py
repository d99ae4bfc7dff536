"""Aira's Execution Fidelity Guard adapter (spec 004): judges every effect and every completion
claim against the user's TaskContractLite the way Execution Fidelity Guard 0.2.2 does, keeps
the Guard's own records (normalized events 2.0, decision receipts 1.0, evidence records 2.0)
and writes them, once, as receipt export bundles 1.0 into its own directory. It is read-only
towards everyone else: it never writes to the intent owner or to continuity, and the host
alone executes and approves.

How an Aira effect looks to the Guard (its action tags, from the Guard's own list; the Guard
has no ``export`` or ``release`` tag):

==================  =============================  ======================================
effect_class        Aira actions                   Guard tags
==================  =============================  ======================================
read                reads                          read
bufferable          model.proposePatch / preview   read — a task-local candidate that is
                    / validate                     discarded unless committed: nothing
                                                   durable is written (a dry run)
reversible          model.commit, model.revert     write_workspace (the task's branch)
irreversible        publish (commit to main)       publish, write_workspace
external            export:<fmt>                   external_side_effect, write_workspace
                                                   (a file leaves the store)
anything else       —                              unknown
==================  =============================  ======================================

``tool:`` rules match the Aira operation (``model.commit``, ``export``) as the Guard matches
its tool name. The Guard reads a command line only from its Bash tool; Aira has no shell, so
its "command" is the action (``publish``, ``export:step``), which ``command-prefix:`` rules
match by prefix — without it those rules could never match anything here.

Judgement (the Guard's ``decidePreTool``, first match wins): guard off → continue; no
contract → continue, or remind for a high-risk action; a structured ``forbidden`` then
``must_not`` match → block; a ``requires_user`` match → ask; a high-risk action under any
natural-language forbidden / must_not / requires_user entry → remind (the Guard never blocks
on natural language: it cannot match it deterministically); an ``allowed`` match → continue
(allowed is no allowlist); else continue. In ``shadow`` mode block and ask become reminds.
continue and remind are ``allow`` to the host.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from aira_continuity.errors import CONTRACT_INVALID, WIRE_RECORD_INVALID, WireError, problem
from aira_continuity.projection import lite_ref, requirement_ref
from aira_core.canonical import sha256_bytes_hex, sha256_hex
from aira_core.integrations import (
    CONTINUATIONS_PER_VERSION,
    CompletionClaim,
    CompletionVerdict,
    ContractBinding,
    EffectEvent,
    GuardRecord,
    GuardVerdict,
)

__all__ = [
    "GUARD_NAME",
    "Action",
    "Decision",
    "FidelityGuard",
    "classify",
    "decide",
    "rule_id",
    "summarise",
]

GUARD_NAME = "aira-continuity-guard"
Mode = Literal["off", "shadow", "balanced"]

CONTRACT_MAX_BYTES = 256 * 1024
"""The Guard refuses a contract file larger than this."""

# -- classification ------------------------------------------------------------------------------

_HIGH_RISK = frozenset(
    {"delete", "destructive", "install_local", "publish", "external_side_effect"}
)
_IRREVERSIBLE = _HIGH_RISK | {"write_workspace"}

_TAGS_BY_CLASS: dict[str, tuple[str, ...]] = {
    "read": ("read",),
    "bufferable": ("read",),
    "reversible": ("write_workspace",),
    "irreversible": ("publish", "write_workspace"),
    "external": ("external_side_effect", "write_workspace"),
}


@dataclass(frozen=True)
class Action:
    """An action as the Guard's classifier describes it: tool name, command, sorted tags."""

    tool_name: str
    command: str
    tags: tuple[str, ...]

    @property
    def high_risk(self) -> bool:
        return any(t in _HIGH_RISK for t in self.tags)

    @property
    def reversible(self) -> bool:
        return not any(t in _IRREVERSIBLE for t in self.tags)


def classify(event: EffectEvent) -> Action:
    """The Guard's view of an Aira effect (the table in the module docstring)."""
    tags = _TAGS_BY_CLASS.get(event.effect_class, ("unknown",))
    return Action(event.operation, event.action, tuple(sorted(tags)))


# -- the rule grammar and the decision -----------------------------------------------------------

# The Guard's policy regex: /i folds ASCII only, `.` stops at line terminators.
_STRUCTURED = re.compile(r"(action|tool|command-prefix):([^\n\r\u2028\u2029]+)", re.I | re.A)
_ALIASES = {
    "write": ("write_workspace",),
    "external": ("external_side_effect", "publish", "network"),
    "destructive": ("destructive", "delete"),
}


@dataclass(frozen=True)
class _Rule:
    raw: str
    kind: str | None  # None: natural language
    value: str


def _parse(entry: str) -> _Rule:
    from aira_continuity.wire import js_trim

    raw = js_trim(entry)
    match = _STRUCTURED.fullmatch(raw)
    if match is None:
        return _Rule(raw, None, "")
    return _Rule(raw, match[1].lower(), js_trim(match[2]).lower())


def _matches(rule: _Rule, action: Action) -> bool:
    if rule.kind == "action":
        return any(t in action.tags for t in _ALIASES.get(rule.value, (rule.value,)))
    if rule.kind == "tool":
        return action.tool_name.lower() == rule.value
    if rule.kind == "command-prefix":
        from aira_continuity.wire import js_trim

        return js_trim(action.command).lower().startswith(rule.value)
    return False


def rule_id(bucket: str, entry: str) -> str:
    """The Guard's id of a rule: bucket + 16 hex of SHA-256 over the trimmed raw text."""
    return f"{bucket}:{sha256_bytes_hex(_parse(entry).raw.encode('utf-8'))[:16]}"


@dataclass(frozen=True)
class Decision:
    """The decision tuple a Guard receipt records."""

    decision: Literal["continue", "remind", "ask", "block", "continue_verification"]
    authority: str
    severity: str
    reason_codes: tuple[str, ...]
    rule_ids: tuple[str, ...]
    visibility: str
    reversible: bool
    coverage: str
    unlock: str | None = None
    evidence_refs: tuple[str, ...] = ()


def _continue(reason: str, action: Action, coverage: str = "observed") -> Decision:
    return Decision(
        "continue", "deterministic_rule", "low", (reason,), (), "silent", action.reversible,
        coverage,
    )  # fmt: skip


def decide(contract: Any, action: Action, mode: Mode = "balanced") -> Decision:
    """The Guard's pre-tool decision on ``action`` under ``contract`` (a TaskContractLite, or
    None: unbound), as ``policy.mjs#decidePreTool`` takes it (module docstring)."""
    if mode == "off":
        return Decision(
            "continue", "deterministic_rule", "low", ("guard_disabled",), (), "silent", True,
            "unobserved",
        )  # fmt: skip
    if contract is None:
        if not action.high_risk:
            return _continue("contract_unbound", action, "partial")
        return Decision(
            "remind", "semantic_candidate", "medium",
            ("contract_unbound", "high_risk_action_uncovered"), (), "model", action.reversible,
            "partial", "Bind a valid task contract before relying on this guard.",
        )  # fmt: skip
    auth, musts = contract.authorization, contract.must_and_must_not
    buckets = (("forbidden", auth.forbidden), ("must_not", musts.must_not))
    for bucket, entries in buckets:
        for rule in map(_parse, entries):
            if rule.kind is not None and _matches(rule, action):
                ids = (rule_id(bucket, rule.raw),)
                if mode == "shadow":
                    return Decision(
                        "remind", "deterministic_rule", "high",
                        ("shadow_would_block", "explicit_contract_conflict"), ids, "model",
                        action.reversible, "observed",
                    )  # fmt: skip
                return Decision(
                    "block", "deterministic_rule", "high", ("explicit_contract_conflict",), ids,
                    "user", action.reversible, "observed",
                    f"Change the contract or choose an action outside the matched {rule.kind} "
                    "rule.",
                )  # fmt: skip
    for rule in map(_parse, auth.requires_user):
        if rule.kind is not None and _matches(rule, action):
            ids = (rule_id("requires_user", rule.raw),)
            if mode == "shadow":
                return Decision(
                    "remind", "deterministic_rule", "medium",
                    ("shadow_would_ask", "explicit_user_authorization_required"), ids, "model",
                    action.reversible, "observed",
                )  # fmt: skip
            return Decision(
                "ask", "deterministic_rule", "medium", ("explicit_user_authorization_required",),
                ids, "user", action.reversible, "observed",
                "Ask the user one concise question to authorize or reject this "
                f"{', '.join(action.tags)} action. Approval is not consumed from chat "
                "automatically; before retrying, the canonical contract owner must publish a "
                "new contract version that moves this exact rule to allowed.",
            )  # fmt: skip
    constraints = [*auth.forbidden, *auth.requires_user, *musts.must_not]
    if action.high_risk and any(_parse(e).kind is None for e in constraints):
        return Decision(
            "remind", "semantic_candidate", "medium",
            ("semantic_constraint_candidate", "no_deterministic_match"), (), "model",
            action.reversible, "observed",
            "Compare the pending action with the natural-language contract constraints.",
        )  # fmt: skip
    if any(_matches(r, action) for r in map(_parse, auth.allowed) if r.kind is not None):
        return _continue("explicit_contract_allowance", action)
    return _continue("no_material_conflict", action)


def _principal(codes: Sequence[str]) -> str:
    """The one reason the host shows: the shadow code when there is one (the verdict is an
    allow that only a shadow code explains), else the most specific, last, code."""
    shadow = [c for c in codes if c.startswith("shadow_")]
    return shadow[0] if shadow else codes[-1]


# -- completion evidence -------------------------------------------------------------------------

# The Guard's machine-matchable requirement: evidence:<kind>[:action:<tag>].
_MACHINE = re.compile(r"evidence:([a-z_]+)(?::action:([a-z_]+))?")


@dataclass(frozen=True)
class _Evidence:
    kind: str
    source: str
    status: str
    sha256: str | None
    tags: tuple[str, ...]


def _covers(requirement: Any, evidence: _Evidence) -> bool:
    """Whether ``evidence`` speaks to requirement ``index``. A machine-matchable requirement as
    the Guard matches it (kind equal, acceptable, the action tag among the evidence's tags).
    Aira's evidence is the host's own observation, never the model's words, so a
    natural-language requirement is covered by evidence of a kind it accepts (the Guard would
    wait for manual evidence)."""
    from aira_continuity.wire import js_trim

    sources = requirement.acceptable_sources
    match = _MACHINE.fullmatch(js_trim(requirement.requirement).lower())
    if match is None:
        return evidence.kind in sources
    kind, tag = match[1], match[2]
    return kind == evidence.kind and kind in sources and (tag is None or tag in evidence.tags)


def _claim_evidence(claim: CompletionClaim) -> list[_Evidence]:
    """What the host observed behind a ``done``: the runtime's completion check (its
    validator assertions: ``test``) and every committed revision (``file``)."""
    passed = claim.runtime_decision == "COMPLETED"
    out = [
        _Evidence(
            "test",
            f"runtime:{claim.runtime_decision}"[:160],
            "pass" if passed else "fail",
            None,
            (),
        )
    ]
    for ref in claim.evidence_refs:
        digest = ref.rsplit(":", 1)[-1]
        hexed = digest if re.fullmatch(r"[a-f0-9]{64}", digest) else None
        out.append(
            _Evidence("file", f"model.commit:{digest[:16]}", "pass", hexed, ("write_workspace",))
        )
    return out


# -- the adapter ---------------------------------------------------------------------------------


def _now() -> str:
    """An instant as JavaScript's ``toISOString`` writes it (milliseconds, ``Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z"


def _make_id(prefix: str) -> str:
    # The Guard's ids are random too (makeId hashes the time and a UUID): 24 hex digits.
    return prefix + secrets.token_hex(12)


def _ref(kind: str, value: str) -> str:
    """The Guard's pseudonymous reference: ``kind:`` + SHA-256 of the raw value."""
    return f"{kind}:{sha256_bytes_hex(value.encode('utf-8', 'replace'))}"


@dataclass
class _Session:
    events: list[dict[str, Any]] = field(default_factory=list)
    receipts: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)


class FidelityGuard:
    """The Guard adapter of the integration seam (:class:`aira_core.integrations.GuardAdapter`).

    ``contract``: the TaskContractLite it judges against, with its identity (``contract_ref``
    and ``contract_version``; without them the Guard's own ``lite:`` identity, version 1).
    ``out_dir``: where :meth:`finish` writes the receipt export bundles (None: nowhere; they
    stay readable through :meth:`bundles`). ``mode``: the Guard's (``balanced`` blocks and
    asks; ``shadow`` only reminds; ``off`` records).
    """

    name = GUARD_NAME
    role: Literal["guard"] = "guard"

    def __init__(
        self,
        contract: Any = None,
        contract_ref: str | None = None,
        contract_version: int | None = None,
        *,
        provider: str = "user-intent-plugin",
        out_dir: Path | None = None,
        mode: Mode = "balanced",
        intent: Any = None,
    ) -> None:
        self.out_dir = out_dir
        # With the intent adapter beside it, the guard judges by the contract the owner
        # bound (a stale one included), never a second reading of the file.
        self._intent = intent
        self.mode: Mode = mode
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self.contract: Any = None
        self.binding: ContractBinding | None = None
        self.provider: str | None = None
        if contract is not None:
            self.use_contract(contract, contract_ref, contract_version, provider=provider)

    # -- configuration ---------------------------------------------------------------------------

    def use_contract(
        self,
        tcl: Any,
        contract_ref: str | None = None,
        contract_version: int | None = None,
        *,
        provider: str = "user-intent-plugin",
    ) -> None:
        """Judge against ``tcl`` (a TaskContractLite) under this identity; without one, the
        Guard's content-derived ``lite:`` identity at version 1 (a bare contract's)."""
        if contract_ref is None:
            contract_ref, contract_version, provider = lite_ref(tcl), 1, "task-contract-lite"
        self.binding = ContractBinding(contract_ref, contract_version or 1)
        self.contract, self.provider = tcl, provider

    def configure(self, options: Any) -> None:
        """Read ``options.contract`` (a provider document or a bare TaskContractLite, as the
        Guard dispatches it) and write into ``options.run_dir / "guard"``. An unreadable or
        invalid contract is ``CONTRACT_INVALID`` (or the wire's own code): the user named it."""
        from aira_continuity.wire import read_contract_document
        from aira_core.canonical import StrictJSONError, loads_strict

        path = getattr(options, "contract", None)
        if path is not None and self._intent is None:
            path = Path(path)
            try:
                if path.stat().st_size > CONTRACT_MAX_BYTES:
                    raise WireError([problem(CONTRACT_INVALID, f"{path}: larger than 256 KiB")])
                data = path.read_bytes()
                stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            except OSError as exc:
                why = exc.strerror or type(exc).__name__
                raise WireError([problem(CONTRACT_INVALID, f"{path}: {why}")]) from None
            try:
                value, _ = loads_strict(data, str(path))
            except StrictJSONError as exc:
                raise WireError([problem(CONTRACT_INVALID, str(exc))]) from None
            updated = stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z"
            bound = read_contract_document(value, updated_at=updated)
            self.use_contract(
                bound.contract,
                bound.envelope.contract_ref,
                bound.envelope.contract_version,
                provider=bound.provider,
            )
        run_dir = getattr(options, "run_dir", None)
        if run_dir is not None:
            self.out_dir = Path(run_dir) / "guard"

    # -- judging ---------------------------------------------------------------------------------

    def _follow_owner(self) -> None:
        """Take the intent owner's bound contract when it has one this guard is not on."""
        owner = self._intent
        binding = getattr(owner, "binding", None) if owner is not None else None
        tcl = getattr(owner, "bound_contract", None) if owner is not None else None
        if binding is None or tcl is None:
            return
        if ContractBinding(binding.contract_ref, binding.contract_version) != self.binding:
            self.use_contract(
                tcl, binding.contract_ref, binding.contract_version, provider=binding.source
            )

    def _bound(self, host: ContractBinding | None) -> bool:
        """Whether this Guard's contract is the task's: the host's binding, when it has one,
        names it. Another contract than the owner's binds nothing (the Guard stays unbound
        and advisory rather than judge by a contract the task does not work under)."""
        return self.contract is not None and (host is None or host == self.binding)

    def _event(
        self, task_id: str, event_type: str, bound: bool, digest_of: Any, action: Action | None
    ) -> dict[str, Any]:
        binding = self.binding if bound and self.binding else ContractBinding("unbound", 1)
        facts: dict[str, Any] = {
            "contract_status": "bound" if bound else "unbound",
            "guard_mode": self.mode,
        }
        if bound:
            facts["contract_provider"] = self.provider
        if action is not None:
            facts["action_tags"] = list(action.tags)
            facts["reversible"] = action.reversible
        return {
            "schema_version": "2.0",
            "event_id": _make_id("evt_"),
            "session_id": _ref("session", task_id),
            "turn_id": None,
            "tool_use_id": None,
            "event_type": event_type,
            "observed_at": _now(),
            "tool_name": action.tool_name if action else None,
            "contract_ref": binding.contract_ref,
            "contract_version": binding.contract_version,
            "coverage": "observed" if bound else "partial",
            "input_sha256": sha256_hex(digest_of),
            "result_sha256": None,
            "facts": facts,
        }

    def _receipt(self, event: dict[str, Any], decision: Decision, started: float) -> dict[str, Any]:
        import time

        return {
            "schema_version": "1.0",
            "receipt_id": _make_id("rcpt_"),
            "event_ref": event["event_id"],
            "contract_ref": event["contract_ref"],
            "contract_version": event["contract_version"],
            "decision": decision.decision,
            "authority": decision.authority,
            "severity": decision.severity,
            "reason_codes": list(decision.reason_codes),
            "rule_ids": list(decision.rule_ids),
            "evidence_refs": list(decision.evidence_refs),
            "visibility": decision.visibility,
            "reversible": decision.reversible,
            "coverage": decision.coverage,
            "unlock": decision.unlock,
            "semantic_model": None,
            "decided_at": _now(),
            "latency_ms": max(0, round((time.monotonic() - started) * 1000)),
        }

    def _keep(
        self,
        task_id: str,
        event: dict[str, Any],
        receipt: dict[str, Any],
        evidence: Iterable[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        from aira_continuity.wire import DecisionReceipt, EvidenceRecord, NormalizedEvent, read

        # Through the wire models: the Guard never keeps a record its own reader would refuse.
        event = read(NormalizedEvent, event).to_wire()
        receipt = read(DecisionReceipt, receipt).to_wire()
        kept = [read(EvidenceRecord, e).to_wire() for e in evidence]
        with self._lock:
            session = self._sessions.setdefault(task_id, _Session())
            session.events.append(event)
            session.receipts.append(receipt)
            session.evidence.extend(kept)
        return receipt

    def judge(self, event: EffectEvent) -> GuardVerdict:
        self._follow_owner()
        import time

        started = time.monotonic()
        action = classify(event)
        bound = self._bound(event.contract)
        decision = decide(self.contract if bound else None, action, self.mode)
        digest_of = {
            "operation": event.operation,
            "action": event.action,
            "effect_class": event.effect_class,
            "request_id": event.request_id,
            "capabilities": list(event.capabilities),
            "target": event.target,
            "digest": event.digest,
        }
        record = self._event(event.task_id, "pre_tool_use", bound, digest_of, action)
        record["tool_use_id"] = _ref("tool-use", event.request_id)
        receipt = self._keep(event.task_id, record, self._receipt(record, decision, started))
        verdict = {"block": "block", "ask": "ask"}.get(decision.decision, "allow")
        return GuardVerdict(verdict, _principal(decision.reason_codes), receipt)  # type: ignore[arg-type]

    def completion(self, claim: CompletionClaim) -> CompletionVerdict:
        self._follow_owner()
        import time

        started = time.monotonic()
        bound = self._bound(claim.contract)
        digest_of = {
            "summary": claim.summary,
            "runtime_decision": claim.runtime_decision,
            "evidence_refs": list(claim.evidence_refs),
        }
        record = self._event(claim.task_id, "stop", bound, digest_of, None)
        if self.mode == "off" or not bound:
            reason = "guard_disabled" if self.mode == "off" else "event_observed"
            coverage = "unobserved" if self.mode == "off" else "partial"
            decision = Decision(
                "continue", "deterministic_rule", "low", (reason,), (), "silent", True, coverage
            )
            receipt = self._keep(claim.task_id, record, self._receipt(record, decision, started))
            return CompletionVerdict("allow", reason, receipt)
        records = self._evidence_records(claim)
        missing = self._missing(claim.task_id, records)
        refs = tuple(r["evidence_ref"] for r in records)
        decision = self._stop_decision(missing, claim.continuations, refs)
        receipt = self._keep(
            claim.task_id, record, self._receipt(record, decision, started), records
        )
        applied = {"continue": "allow"}.get(decision.decision, decision.decision)
        return CompletionVerdict(applied, _principal(decision.reason_codes), receipt)  # type: ignore[arg-type]

    def _evidence_records(self, claim: CompletionClaim) -> list[dict[str, Any]]:
        assert self.binding is not None and self.contract is not None
        requirements = self.contract.completion_evidence
        out = []
        for evidence in _claim_evidence(claim):
            covered = [
                requirement_ref(i, r.requirement)
                for i, r in enumerate(requirements)
                if _covers(r, evidence)
            ]
            full = bool(covered) and evidence.status != "unknown"
            reference: dict[str, Any] = {
                "evidence_ref": _make_id("ev_"),
                "kind": evidence.kind,
                "source": evidence.source,
                "captured_at": _now(),
                "freshness": "current_event",
                "coverage": "full_requirement" if full else "partial_requirement",
                "status": evidence.status,
                "attestation": "hook_observed",
            }
            if evidence.sha256 is not None:
                reference["sha256"] = evidence.sha256
            out.append(
                {
                    "schema_version": "2.0",
                    "evidence_ref": reference["evidence_ref"],
                    "contract_ref": self.binding.contract_ref,
                    "contract_version": self.binding.contract_version,
                    "requirement_refs": list(dict.fromkeys(covered)),
                    "evidence": reference,
                }
            )
        return out

    def _missing(self, task_id: str, fresh: list[dict[str, Any]]) -> list[int]:
        """The 0-based indices of requirements not satisfied: the latest record naming one
        (under this contract version; a later one wins) is not a full-coverage pass."""
        assert self.binding is not None
        with self._lock:
            earlier = list(self._sessions.get(task_id, _Session()).evidence)
        latest: dict[str, dict[str, Any]] = {}
        for record in [*earlier, *fresh]:
            same = (record["contract_ref"], record["contract_version"]) == (
                self.binding.contract_ref,
                self.binding.contract_version,
            )
            if same:
                for ref in record["requirement_refs"]:
                    latest[ref] = record["evidence"]
        out = []
        for i, requirement in enumerate(self.contract.completion_evidence):
            last = latest.get(requirement_ref(i, requirement.requirement))
            ok = last is not None and last["status"] == "pass"
            if not ok or last["coverage"] != "full_requirement":
                out.append(i)
        return out

    def _stop_decision(
        self, missing: list[int], continuations: int, refs: tuple[str, ...]
    ) -> Decision:
        if not missing:
            return Decision(
                "continue", "deterministic_rule", "low", ("event_observed",), (), "silent", True,
                "observed", None, refs,
            )  # fmt: skip
        listed = ", ".join(f"#{i + 1}" for i in missing[:8])
        unlock = f"Completion evidence is missing for requirement {listed}; verify before done."
        if self.mode == "shadow":
            return Decision(
                "remind", "external_evidence", "medium",
                ("shadow_would_continue_verification", "completion_claim_unverified"), (),
                "silent", True, "observed", unlock, refs,
            )  # fmt: skip
        if continuations >= CONTINUATIONS_PER_VERSION:  # the Guard's own Stop counter's cap
            return Decision(
                "remind", "external_evidence", "high",
                ("completion_claim_unverified", "continuation_cap_reached"), (), "user", True,
                "observed", unlock, refs,
            )  # fmt: skip
        return Decision(
            "continue_verification", "external_evidence", "high",
            ("completion_claim_unverified", "required_evidence_missing"), (), "model", True,
            "observed", unlock, refs,
        )  # fmt: skip

    # -- the end ---------------------------------------------------------------------------------

    def bundles(self, records: Sequence[GuardRecord] = ()) -> dict[str, dict[str, Any]]:
        """``{task_id: receipt export bundle}`` of everything judged, validated through the
        wire model. ``records`` (the host's) give the Stop state: the continuations the host
        applied under the current contract version."""
        from aira_continuity.wire import ReceiptBundle, read

        with self._lock:
            sessions = {k: _Session(list(v.events), list(v.receipts), list(v.evidence))
                        for k, v in self._sessions.items()}  # fmt: skip
        out = {}
        for task_id, session in sessions.items():
            stop_state = None
            applied = [
                r for r in records
                if isinstance(r.event, CompletionClaim) and r.event.task_id == task_id
            ]  # fmt: skip
            if applied and self.binding is not None:
                stop_state = {
                    "schema_version": "1.0",
                    "contract_ref": self.binding.contract_ref,
                    "contract_version": self.binding.contract_version,
                    "attempts": sum(r.applied == "continue_verification" for r in applied),
                    "updated_at": _now(),
                }
            bundle = {
                "schema_version": "1.0",
                "kind": "execution-fidelity-guard-session-receipts",
                "session_ref": _ref("session", task_id),
                "session_present": True,
                "exported_at": _now(),
                "events": session.events,
                "receipts": session.receipts,
                "evidence": session.evidence,
                "stop_state": stop_state,
            }
            out[task_id] = read(ReceiptBundle, bundle).to_wire()
        return out

    def finish(self, records: tuple[GuardRecord, ...]) -> None:
        """Write one receipt export bundle per task into :attr:`out_dir` (``receipts-<16 hex
        of the session ref>.json``), atomically; the Guard's own directory and nothing else."""
        from aira_core.files import write_file

        if self.out_dir is None:
            return
        bundles = self.bundles(records)
        if not bundles:
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for bundle in bundles.values():
            name = "receipts-" + bundle["session_ref"].split(":", 1)[1][:16] + ".json"
            text = json.dumps(bundle, indent=2, ensure_ascii=False) + "\n"
            write_file(self.out_dir / name, text.encode("utf-8"))


# -- the shadow-pilot summary --------------------------------------------------------------------

BUNDLES_MAX = 1000
BUNDLE_MAX_BYTES = 16 * 1024 * 1024
BUNDLES_MAX_BYTES = 128 * 1024 * 1024
CLAIM_BOUNDARY = (
    "The report proves only what is present in the supplied pseudonymous receipt exports.",
    "A unique session receipt does not by itself prove that the session was a real user task or "
    "that tasks were independently sampled.",
    "Only sessions whose exported normalized events consistently record guard_mode=shadow count "
    "toward the sample gate; older or mode-unbound exports remain diagnostic only.",
    "Without user, external-evidence, or domain-rule adjudication, this report does not establish "
    "precision, false-positive rate, intervention efficacy, rework reduction, or outcome "
    "improvement.",
    "Receipt latency starts inside the loaded Guard runtime; use the command-Hook benchmark for "
    "end-to-end process latency.",
)


def _js_round2(value: float) -> int | float:
    """``Math.round(value * 100) / 100``: halves round toward +infinity (Python's round goes
    to even). A whole result is an int, as JavaScript writes it."""
    scaled = value * 100
    floor = math.floor(scaled)
    rounded = floor + 1 if scaled - floor >= 0.5 else floor
    result = rounded / 100
    return int(result) if result.is_integer() else result


def _nearest_rank(ordered: list[float], fraction: float) -> float:
    return ordered[max(0, math.ceil(len(ordered) * fraction) - 1)]


def _count_by(values: Iterable[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:  # first-seen order, as a JavaScript object keeps it
        key = "unknown" if value is None else str(value)
        out[key] = out.get(key, 0) + 1
    return out


def summarise(bundles: Sequence[bytes], *, target: int = 100, now: datetime | None = None) -> Any:
    """The shadow-pilot summary (wire 1.1) of receipt export bundles, each given as its file's
    raw bytes (their SHA-256 is the input's identity), as the Guard's summarizer computes it.
    A bundle it would refuse, or too many or too large, is a WireError."""
    from aira_continuity.wire import ReceiptBundle, ShadowPilotSummary, read, read_json

    def refuse(message: str) -> WireError:
        return WireError([problem(WIRE_RECORD_INVALID, message)])

    if not 1 <= len(bundles) <= BUNDLES_MAX:
        raise refuse(f"the summary reads 1 to {BUNDLES_MAX} bundles, not {len(bundles)}")
    if (
        any(len(b) > BUNDLE_MAX_BYTES for b in bundles)
        or sum(map(len, bundles)) > BUNDLES_MAX_BYTES
    ):
        raise refuse("a bundle is larger than 16 MiB, or all are larger than 128 MiB")
    if isinstance(target, bool) or not isinstance(target, int) or target < 1:
        raise refuse("the target is a positive integer")
    read_bundles = [read_json(ReceiptBundle, data) for data in bundles]
    seen: dict[str, set[str]] = {"session_ref": set(), "event_id": set(), "receipt_id": set()}
    for bundle in read_bundles:
        keys = [("session_ref", bundle.session_ref)]
        keys += [("event_id", e.event_id) for e in bundle.events]
        keys += [("receipt_id", r.receipt_id) for r in bundle.receipts]
        for kind, key in keys:
            if key in seen[kind]:
                raise refuse(f"{kind} {key!r} is in two bundles")
            seen[kind].add(key)
    receipts = [r for b in read_bundles for r in b.receipts]
    shadow = ("shadow_would_block", "shadow_would_ask")

    def mode(bundle: Any) -> str:
        return bundle.events[0].facts.get("guard_mode") or "unknown"  # uniform: the model checks

    in_shadow = sum(mode(b) == "shadow" for b in read_bundles)
    latencies = sorted(float(r.latency_ms) for r in receipts)
    hashes = sorted({sha256_bytes_hex(b) for b in bundles})
    stamp = now or datetime.now(UTC)
    summary = {
        "schema_version": "1.1",
        "kind": "execution-fidelity-guard-shadow-pilot-summary",
        "generated_at": stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z",
        "input": {
            "bundle_count": len(bundles),
            "bundle_sha256": hashes,
            "cohort_sha256": sha256_bytes_hex("\n".join(hashes).encode("ascii")),
        },
        "sessions": {
            "unique": len(read_bundles),
            "in_shadow_mode": in_shadow,
            "with_pre_tool_use": sum(
                any(e.event_type == "pre_tool_use" for e in b.events) for b in read_bundles
            ),
            "with_stop": sum(any(e.event_type == "stop" for e in b.events) for b in read_bundles),
            "with_shadow_candidate": sum(
                any(c in r.reason_codes for r in b.receipts for c in shadow) for b in read_bundles
            ),
        },
        "sample_gate": {
            "target_sessions": target,
            "eligible_shadow_sessions": in_shadow,
            "reached": in_shadow >= target,
            "remaining": max(0, target - in_shadow),
        },
        "observations": {
            "events": sum(len(b.events) for b in read_bundles),
            "receipts": len(receipts),
            "decisions": _count_by(r.decision for r in receipts),
            "coverage": _count_by(r.coverage for r in receipts),
            "reasons": _count_by(c for r in receipts for c in r.reason_codes),
            "shadow_candidates": {
                "would_block": sum("shadow_would_block" in r.reason_codes for r in receipts),
                "would_ask": sum("shadow_would_ask" in r.reason_codes for r in receipts),
            },
            "runtime_decision_latency_ms": {
                "p50": _js_round2(_nearest_rank(latencies, 0.5)) if latencies else None,
                "p95": _js_round2(_nearest_rank(latencies, 0.95)) if latencies else None,
                "max": _js_round2(latencies[-1]) if latencies else None,
            },
        },
        "claim_boundary": list(CLAIM_BOUNDARY),
    }
    return read(ShadowPilotSummary, summary)
