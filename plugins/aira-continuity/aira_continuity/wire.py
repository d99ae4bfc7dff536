"""The wire objects of the three-product contract (spec 004), as pydantic models.

Field names are the upstream snake_case wire names. Every object whose upstream schema says
``additionalProperties: false`` refuses unknown fields; types are strict (no ``"4"`` for 4).
Beyond the upstream JSON Schemas the models enforce what the upstream code enforces
(Execution Fidelity Guard 0.2.2 ``contract.mjs``, its shadow-pilot summarizer, Context
Continuity 0.2.0-beta.2's producer), because a schema-valid document can still be refused
there:

- strings the Guard checks are non-empty after ECMAScript ``trim()``, not merely minLength 1;
- the structured rule grammar of ``must_not`` and ``authorization`` (``action:`` / ``tool:``
  / ``command-prefix:``, near misses refused, ``action:`` tags from the Guard's list):
  ``CONTRACT_RULE_UNSUPPORTED``;
- the Guard's generated init placeholders: ``CONTRACT_PLACEHOLDER``;
- RFC 3339 date-times in the Guard's profile (seconds required, no leap second);
- a provider document's ``snapshot_sha256`` is the projection hash: ``CONTRACT_HASH_MISMATCH``;
- a receipt export is consistent the way the summarizer checks it, a summary's arithmetic
  holds.

:func:`read` turns a parsed JSON value into a model or raises one
:class:`~aira_continuity.errors.WireError` listing every problem with its code and pointer.
:func:`schemas` gives the JSON Schemas (draft 2020-12) generated from the models.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from aira_continuity.errors import (
    CODES,
    CONTRACT_HASH_MISMATCH,
    CONTRACT_INVALID,
    CONTRACT_PLACEHOLDER,
    CONTRACT_RULE_UNSUPPORTED,
    WIRE_RECORD_INVALID,
    WireError,
    problem,
)
from aira_continuity.projection import projection_sha256
from aira_core.canonical import (
    CanonicalJSONError,
    StrictJSONError,
    canonical_bytes,
    loads_strict,
    sha256_bytes_hex,
)
from aira_core.diagnostics import Diagnostic, json_pointer

__all__ = [
    "ACCEPTABLE_SOURCES",
    "ACTION_RULES",
    "INIT_PLACEHOLDERS",
    "REASON_CODES",
    "WIRE_MODELS",
    "Binding",
    "ContinuitySnapshot",
    "ContractEnvelope",
    "DecisionReceipt",
    "EvidenceRecord",
    "EvidenceReference",
    "NormalizedEvent",
    "ProviderDocument",
    "ReceiptBundle",
    "ShadowPilotSummary",
    "TaskContractLite",
    "json_schema",
    "read",
    "read_contract_document",
    "read_json",
    "schemas",
]

# -- scalar rules --------------------------------------------------------------------------------

# ECMAScript WhiteSpace and LineTerminator: what String.prototype.trim strips. Python's
# str.strip differs (it strips U+001C-U+001F and U+0085, keeps U+FEFF).
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_TRIM = re.compile(f"^[{_JS_SPACE}]+|[{_JS_SPACE}]+$")
_SURROGATE = re.compile("[\ud800-\udfff]")


def js_trim(text: str) -> str:
    """``text.trim()`` as ECMAScript defines it."""
    return _JS_TRIM.sub("", text)


def _utf8(text: str) -> str:
    if _SURROGATE.search(text):
        raise PydanticCustomError("lone_surrogate", "a lone surrogate has no UTF-8 form")
    return text


def _filled(text: str) -> str:
    if not js_trim(text):
        raise PydanticCustomError("blank", "must not be empty or only whitespace")
    return text


ACTION_RULES = frozenset(
    {
        "read",
        "write",
        "write_workspace",
        "delete",
        "destructive",
        "install_local",
        "network",
        "publish",
        "external",
        "external_side_effect",
        "unknown",
    }
)
"""The ``action:`` tags the Guard 0.2.2 accepts (compared after trim and lowercase)."""

# The Guard's regexes, made to behave as JavaScript's: /i folds ASCII only (re.ASCII), `.`
# stops at every JS line terminator, `$` is the end of the text (fullmatch), `\s` is JS's set.
_RULE = re.compile(r"(action|tool|command-prefix):([^\n\r\u2028\u2029]*)", re.I | re.A)
_NEAR_MISS = re.compile(rf"(?:actions?|tools?|command(?:-|_| )?prefix)[{_JS_SPACE}]*:", re.I | re.A)


def _rule(text: str) -> str:
    raw = js_trim(text)
    match = _RULE.fullmatch(raw)
    if match is None:
        if _NEAR_MISS.match(raw):
            raise PydanticCustomError(
                CONTRACT_RULE_UNSUPPORTED,
                "unsupported structured rule syntax: {raw} (action:, tool: or command-prefix:)",
                {"raw": raw},
            )
        return text  # natural language: a semantic reminder only
    kind, value = match[1].lower(), js_trim(match[2]).lower()
    if not value:
        raise PydanticCustomError(
            CONTRACT_RULE_UNSUPPORTED, "{kind} rule must have a value", {"kind": kind}
        )
    if kind == "action" and value not in ACTION_RULES:
        raise PydanticCustomError(
            CONTRACT_RULE_UNSUPPORTED,
            "unsupported action rule tag: {value} (one of {known})",
            {"value": value, "known": ", ".join(sorted(ACTION_RULES))},
        )
    return text


# RFC 3339 in the Guard's profile (contract.mjs isRfc3339DateTime): ASCII digits only (JS \d).
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _date_time(text: str) -> str:
    match = _DATE_TIME.fullmatch(text)
    ok = match is not None
    if match is not None:
        year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
        oh, om = int(match[7] or 0), int(match[8] or 0)
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        last = 29 if month == 2 and leap else _DAYS[month - 1] if 1 <= month <= 12 else 0
        ok = 1 <= day <= last and hour <= 23 and minute <= 59 and second <= 59
        ok = ok and oh <= 23 and om <= 59
    if not ok:
        raise PydanticCustomError(
            "date_time", "must be an RFC 3339 date-time with seconds, e.g. 2026-09-01T00:00:00Z"
        )
    return text


def _integral(value: Any) -> Any:
    # JSON 4.0 is the integer 4 to the Guard (Number.isInteger) and to JSON Schema.
    if type(value) is float and value.is_integer():
        return int(value)
    return value


def _json(value: Any) -> Any:
    try:
        canonical_bytes(value, max_depth=32)
    except CanonicalJSONError as exc:
        raise PydanticCustomError(
            "json_value", "not plain JSON: {why}", {"why": str(exc)}
        ) from None
    return value


def _unique(items: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    for i, item in enumerate(items):
        if item in seen:
            raise PydanticCustomError(
                "unique_items",
                "item {i} repeats {item!r}; items must be unique",
                {"i": i, "item": item},
            )
        seen.add(item)
    return items


Str = Annotated[str, AfterValidator(_utf8)]
NonEmpty = Annotated[str, Field(min_length=1), AfterValidator(_utf8)]
"""minLength 1, as the schema says."""
Filled = Annotated[str, Field(min_length=1), AfterValidator(_utf8), AfterValidator(_filled)]
"""minLength 1 and non-empty after trim, as the Guard's code checks."""
Rule = Annotated[
    str, Field(min_length=1), AfterValidator(_utf8), AfterValidator(_filled), AfterValidator(_rule)
]
"""A must_not or authorization entry: natural language, or a structured rule the Guard reads."""
DateTime = Annotated[
    str, Field(json_schema_extra={"format": "date-time"}), AfterValidator(_date_time)
]
# Constraints before the validator: after it, pydantic writes "ge" into the schema verbatim.
Version = Annotated[int, Field(ge=1), BeforeValidator(_integral)]
Count = Annotated[int, Field(ge=0), BeforeValidator(_integral)]
Hex64 = Annotated[str, Field(pattern=r"^[a-f0-9]{64}$")]
# An int stays an int (the Guard writes whole milliseconds); each branch carries its bound.
Number = Annotated[int, Field(ge=0)] | Annotated[float, Field(ge=0)]


def _unique_list(item: Any, **field: Any) -> Any:
    return Annotated[
        list[item], Field(json_schema_extra={"uniqueItems": True}, **field), AfterValidator(_unique)
    ]


# -- the models ----------------------------------------------------------------------------------


class _Wire(BaseModel):
    """Strict, closed, immutable. ``_OMIT_NONE`` lists the optional fields the schema does not
    let be null: absent on the wire when None, and an explicit null is refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)
    _OMIT_NONE: ClassVar[frozenset[str]] = frozenset()
    INVALID: ClassVar[str] = WIRE_RECORD_INVALID
    """The code of a problem that is no specific rule's, when this is the model read."""

    @model_validator(mode="before")
    @classmethod
    def _no_null(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for name in cls._OMIT_NONE:
                if name in data and data[name] is None:
                    raise PydanticCustomError(
                        "null_optional",
                        "{name} may be absent but not null",
                        {"name": name, "at": f"/{name}"},
                    )
        return data

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        data = handler(self)
        for name in self._OMIT_NONE:
            if data.get(name, 0) is None:
                del data[name]
        return data

    def to_wire(self) -> dict[str, Any]:
        """The JSON value of this object as it goes over the wire."""
        return self.model_dump(mode="json")


def _at(pointer: str) -> dict[str, str]:
    return {"at": pointer}


AcceptableSource = Literal[
    "file", "command", "test", "api", "database", "real_page", "release", "user"
]
ACCEPTABLE_SOURCES: tuple[str, ...] = AcceptableSource.__args__  # type: ignore[attr-defined]

INIT_PLACEHOLDERS = frozenset(
    {
        "Replace with the exact user-requested outcome.",
        "Replace with the primary object being changed or delivered.",
        "Replace with non-negotiable requirements.",
    }
)
"""What ``efg init`` writes for the user to replace; the Guard refuses a contract holding one."""


class Scope(_Wire):
    include: list[Filled]
    exclude: list[Filled]


class MustAndMustNot(_Wire):
    must: list[Filled]
    must_not: list[Rule]


class Authorization(_Wire):
    """Explicit matches. ``allowed`` is not a closed allowlist: an unlisted action continues
    unless forbidden, must_not or requires_user matches."""

    allowed: list[Rule]
    requires_user: list[Rule]
    forbidden: list[Rule]


class CompletionEvidence(_Wire):
    requirement: Filled
    acceptable_sources: Annotated[list[AcceptableSource], Field(min_length=1)]


class TaskContractLite(_Wire):
    """The seven-field projection of the user's intent contract, exactly these fields."""

    INVALID: ClassVar[str] = CONTRACT_INVALID

    objective: Filled
    primary_object: Filled
    delivery_surface: _unique_list(Filled, min_length=1)  # type: ignore[valid-type]
    scope: Scope
    must_and_must_not: MustAndMustNot
    authorization: Authorization
    completion_evidence: Annotated[list[CompletionEvidence], Field(min_length=1)]

    @model_validator(mode="after")
    def _ready(self) -> TaskContractLite:
        found = _placeholder(self.to_wire(), [])
        if found is not None:
            raise PydanticCustomError(
                CONTRACT_PLACEHOLDER,
                "contract contains a generated init placeholder; replace it with the user's words",
                _at(json_pointer(found)),
            )
        return self

    def sha256(self) -> str:
        """The Guard's projection hash of this contract."""
        return projection_sha256(self.to_wire())


def _placeholder(value: Any, path: list[str | int]) -> list[str | int] | None:
    """The path of the first string (not key) that is an init placeholder after trim."""
    if isinstance(value, str):
        return path if js_trim(value) in INIT_PLACEHOLDERS else None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, member in items:
        found = _placeholder(member, [*path, key])
        if found is not None:
            return found
    return None


_FALLBACK = "task-contract-lite"
_PROVIDER = "user-intent-plugin"


class ContractEnvelope(_Wire):
    """Identity and provenance of a contract (wire 1.0). A ``task-contract-lite`` envelope
    carries its contract and hash; a provider envelope carries neither contract (the
    projection travels beside it) — the schema's if/then/else."""

    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "if": {
                        "properties": {"source": {"const": _FALLBACK}},
                        "required": ["source"],
                    },
                    "then": {"required": ["task_contract_lite", "snapshot_sha256"]},
                    "else": {"not": {"required": ["task_contract_lite"]}},
                }
            ]
        }
    )
    _OMIT_NONE = frozenset({"snapshot_sha256", "task_contract_lite"})
    INVALID: ClassVar[str] = CONTRACT_INVALID

    schema_version: Literal["1.0"]
    contract_ref: Filled
    contract_version: Version
    source: Literal["user-intent-plugin", "task-contract-lite"]
    source_message_refs: list[Filled]
    snapshot_sha256: Hex64 | SkipJsonSchema[None] = None
    task_contract_lite: TaskContractLite | SkipJsonSchema[None] = None
    updated_at: DateTime

    @model_validator(mode="after")
    def _by_source(self) -> ContractEnvelope:
        if self.source == _FALLBACK:
            if self.task_contract_lite is None or self.snapshot_sha256 is None:
                raise PydanticCustomError(
                    CONTRACT_INVALID,
                    "a task-contract-lite envelope carries task_contract_lite and snapshot_sha256",
                )
            actual = self.task_contract_lite.sha256()
            if actual != self.snapshot_sha256:
                raise PydanticCustomError(
                    CONTRACT_HASH_MISMATCH,
                    "snapshot_sha256 is not the hash of task_contract_lite ({actual})",
                    {"actual": actual, **_at("/snapshot_sha256")},
                )
        elif self.task_contract_lite is not None:
            raise PydanticCustomError(
                CONTRACT_INVALID,
                "only a task-contract-lite envelope carries task_contract_lite; a provider's "
                "projection travels beside its envelope",
                _at("/task_contract_lite"),
            )
        return self


class ProviderDocument(_Wire):
    """What the intent owner publishes for the Guard: its envelope and the projection, bound
    by ``snapshot_sha256``."""

    INVALID: ClassVar[str] = CONTRACT_INVALID

    envelope: Annotated[
        ContractEnvelope,
        Field(
            json_schema_extra={
                "properties": {"source": {"const": _PROVIDER}},
                "required": ["source", "snapshot_sha256"],
            }
        ),
    ]
    projection: TaskContractLite

    @model_validator(mode="after")
    def _bound(self) -> ProviderDocument:
        if self.envelope.source != _PROVIDER:
            raise PydanticCustomError(
                CONTRACT_INVALID,
                "a provider document's envelope has source user-intent-plugin",
                _at("/envelope/source"),
            )
        actual = self.projection.sha256()
        if self.envelope.snapshot_sha256 is None:
            raise PydanticCustomError(
                CONTRACT_INVALID,
                "a provider envelope carries snapshot_sha256 (the projection hashes to {actual})",
                {"actual": actual, **_at("/envelope/snapshot_sha256")},
            )
        if self.envelope.snapshot_sha256 != actual:
            raise PydanticCustomError(
                CONTRACT_HASH_MISMATCH,
                "snapshot_sha256 is not the projection's hash ({actual})",
                {"actual": actual, **_at("/envelope/snapshot_sha256")},
            )
        return self


class ContinuitySnapshot(_Wire):
    """The read-only view Context Continuity keeps for the Guard (wire 1.0), in the
    Continuity producer's stricter shape: both arrays unique, phase non-empty."""

    schema_version: Literal["1.0"]
    contract_ref: NonEmpty
    contract_version: Version
    phase: NonEmpty
    open_commitments: _unique_list(NonEmpty)  # type: ignore[valid-type]
    evidence_refs: _unique_list(NonEmpty)  # type: ignore[valid-type]
    captured_at: DateTime


Coverage = Literal["observed", "partial", "unobserved"]
EventType = Literal[
    "session_start",
    "subagent_start",
    "user_prompt_submit",
    "pre_tool_use",
    "permission_request",
    "post_tool_use",
    "pre_compact",
    "post_compact",
    "subagent_stop",
    "stop",
    "session_end",
]
SessionRef = Annotated[str, Field(pattern=r"^session:[a-f0-9]{64}$")]


class NormalizedEvent(_Wire):
    """One hook event as the Guard records it (wire 2.0). ``facts`` is the declared open
    extension point (plain JSON); the nullable fields are always written, as the Guard does."""

    schema_version: Literal["2.0"]
    event_id: NonEmpty
    session_id: SessionRef
    turn_id: Annotated[str, Field(pattern=r"^turn:[a-f0-9]{64}$")] | None = None
    tool_use_id: Annotated[str, Field(pattern=r"^tool-use:[a-f0-9]{64}$")] | None = None
    event_type: EventType
    observed_at: DateTime
    tool_name: Str | None = None
    contract_ref: NonEmpty
    contract_version: Version
    coverage: Coverage
    input_sha256: Hex64 | None = None
    result_sha256: Hex64 | None = None
    facts: Annotated[dict[str, Any], AfterValidator(_json)]


class EvidenceReference(_Wire):
    evidence_ref: NonEmpty
    kind: Literal[
        "file", "command", "test", "api", "database", "real_page", "release", "user", "contract"
    ]
    source: NonEmpty
    redacted_locator: Str | SkipJsonSchema[None] = None
    sha256: Hex64 | SkipJsonSchema[None] = None
    captured_at: DateTime
    freshness: Literal["current_event", "current_turn", "current_task", "stale", "unknown"]
    coverage: Literal["full_requirement", "partial_requirement", "unscoped"]
    status: Literal["pass", "fail", "contradictory", "unknown"]
    attestation: Literal["hook_observed", "artifact_observed", "caller_attested"]

    _OMIT_NONE = frozenset({"redacted_locator", "sha256"})


class EvidenceRecord(_Wire):
    """Evidence tied to a contract version and the requirements it covers (wire 2.0)."""

    schema_version: Literal["2.0"]
    evidence_ref: NonEmpty
    contract_ref: NonEmpty
    contract_version: Version
    requirement_refs: _unique_list(  # type: ignore[valid-type]
        Annotated[str, Field(pattern=r"^requirement:[0-9]+:[a-f0-9]{16}$")]
    )
    evidence: EvidenceReference


REASON_CODES = (
    "no_material_conflict",
    "guard_disabled",
    "contract_unbound",
    "high_risk_action_uncovered",
    "shadow_would_block",
    "explicit_contract_conflict",
    "shadow_would_ask",
    "shadow_would_continue_verification",
    "explicit_user_authorization_required",
    "semantic_constraint_candidate",
    "no_deterministic_match",
    "explicit_contract_allowance",
    "event_observed",
    "completion_claim_unverified",
    "stop_state_unavailable",
    "required_evidence_missing",
    "continuation_cap_reached",
    "tool_result_failed",
    "completion_evidence_not_satisfied",
    "tool_result_recorded",
)
"""Every reason code the Guard 0.2.2 runtime emits (its summarizer's allowlist). The receipt
schema leaves reason_codes open; a receipt export is checked against this list."""


class DecisionReceipt(_Wire):
    """One Guard decision on one event (wire 1.0). ``rule_ids``, ``unlock`` and
    ``semantic_model`` are optional in the schema and always written, as the Guard does."""

    schema_version: Literal["1.0"]
    receipt_id: NonEmpty
    event_ref: NonEmpty
    contract_ref: NonEmpty
    contract_version: Version
    decision: Literal["continue", "remind", "ask", "block", "continue_verification"]
    authority: Literal[
        "deterministic_rule", "semantic_candidate", "external_evidence", "user", "native_codex"
    ]
    severity: Literal["low", "medium", "high", "critical"]
    reason_codes: Annotated[list[NonEmpty], Field(min_length=1)]
    rule_ids: list[NonEmpty] = Field(default_factory=list)
    evidence_refs: list[NonEmpty]
    visibility: Literal["silent", "model", "user"]
    reversible: bool
    coverage: Coverage
    unlock: Str | None = None
    semantic_model: Str | None = None
    decided_at: DateTime
    latency_ms: Number


# The two shadow tuples the summarizer accepts, with their severity (scripts/summarize…).
_SHADOW_TUPLES = {
    ("shadow_would_block", "explicit_contract_conflict"): "high",
    ("shadow_would_ask", "explicit_user_authorization_required"): "medium",
}


class ReceiptBundle(_Wire):
    """A session's receipts as ``efg receipts export`` writes them (wire 1.0, no upstream
    schema), held to what the shadow-pilot summarizer accepts: a present session, events and
    receipts that name each other consistently, one guard mode, the reason-code allowlist."""

    schema_version: Literal["1.0"]
    kind: Literal["execution-fidelity-guard-session-receipts"]
    session_ref: SessionRef
    session_present: bool
    exported_at: DateTime
    events: Annotated[list[NormalizedEvent], Field(min_length=1)]
    receipts: Annotated[list[DecisionReceipt], Field(min_length=1)]
    evidence: list[EvidenceRecord]
    stop_state: Annotated[dict[str, Any], AfterValidator(_json)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ReceiptBundle:
        if not self.session_present:
            raise _record("the summarizer reads only a present session", "/session_present")
        events: dict[str, NormalizedEvent] = {}
        modes: set[str] = set()
        for i, event in enumerate(self.events):
            if event.event_id in events:
                raise _record(f"event_id {event.event_id!r} repeats", f"/events/{i}/event_id")
            events[event.event_id] = event
            if event.session_id != self.session_ref:
                raise _record("the event names another session", f"/events/{i}/session_id")
            mode = event.facts.get("guard_mode")
            if mode is not None and mode not in ("shadow", "balanced", "off"):
                raise _record(
                    "guard_mode is shadow, balanced or off", f"/events/{i}/facts/guard_mode"
                )
            modes.add(mode or "unknown")
        if len(modes) > 1:
            raise _record(f"the events mix guard modes: {sorted(modes)}", "/events")
        seen: set[str] = set()
        for i, receipt in enumerate(self.receipts):
            at = f"/receipts/{i}"
            event = events.get(receipt.event_ref)
            if event is None:
                raise _record("event_ref names no event of the bundle", f"{at}/event_ref")
            if receipt.event_ref in seen:
                raise _record("a second receipt for one event", f"{at}/event_ref")
            seen.add(receipt.event_ref)
            if (receipt.contract_ref, receipt.contract_version) != (
                event.contract_ref,
                event.contract_version,
            ):
                raise _record("the receipt's contract is not its event's", f"{at}/contract_ref")
            _check_reasons(receipt, event, at)
        return self


def _record(message: str, pointer: str) -> PydanticCustomError:
    return PydanticCustomError(WIRE_RECORD_INVALID, message, _at(pointer))


def _check_reasons(receipt: DecisionReceipt, event: NormalizedEvent, at: str) -> None:
    codes = receipt.reason_codes
    if len(set(codes)) != len(codes):
        raise _record("reason_codes repeat a code", f"{at}/reason_codes")
    for j, code in enumerate(codes):
        if code not in REASON_CODES:
            raise _record(f"{code!r} is no reason code of Guard 0.2.2", f"{at}/reason_codes/{j}")
    if "shadow_would_block" not in codes and "shadow_would_ask" not in codes:
        return
    severity = _SHADOW_TUPLES.get(tuple(codes))  # type: ignore[arg-type]
    if severity is None or receipt.severity != severity:
        raise _record(
            "a shadow candidate's reason_codes are exactly [shadow_would_block, "
            "explicit_contract_conflict] (severity high) or [shadow_would_ask, "
            "explicit_user_authorization_required] (severity medium)",
            f"{at}/reason_codes",
        )
    shaped = (
        event.event_type in ("pre_tool_use", "permission_request")
        and event.coverage == "observed"
        and event.facts.get("contract_status") == "bound"
        and receipt.decision == "remind"
        and receipt.authority == "deterministic_rule"
        and receipt.visibility == "model"
        and receipt.coverage == "observed"
        and len(receipt.rule_ids) == 1
    )
    if not shaped:
        raise _record(
            "a shadow candidate is a remind by deterministic_rule, visible to the model, "
            "observed, with one rule id, on a pre-tool or permission event of a bound contract",
            at,
        )


class SummaryInput(_Wire):
    bundle_count: Annotated[int, Field(ge=1, le=1000), BeforeValidator(_integral)]
    bundle_sha256: Annotated[
        list[Hex64], Field(min_length=1, max_length=1000, json_schema_extra={"uniqueItems": True})
    ]
    cohort_sha256: Hex64


class SummarySessions(_Wire):
    unique: Version
    in_shadow_mode: Count
    with_pre_tool_use: Count
    with_stop: Count
    with_shadow_candidate: Count


class SampleGate(_Wire):
    target_sessions: Version
    eligible_shadow_sessions: Count
    reached: bool
    remaining: Count


Counts = dict[str, Version]


class ShadowCandidates(_Wire):
    would_block: Count
    would_ask: Count


class Latency(_Wire):
    p50: Number | None
    p95: Number | None
    max: Number | None


class Observations(_Wire):
    events: Count
    receipts: Count
    decisions: Counts
    coverage: Counts
    reasons: Counts
    shadow_candidates: ShadowCandidates
    runtime_decision_latency_ms: Latency


class ShadowPilotSummary(_Wire):
    """The shadow-pilot summary (wire 1.1), with the arithmetic its producer guarantees and
    its schema does not state: the input hashes sorted and unique, counted and hashed into
    the cohort, the gate computed from the shadow sessions."""

    schema_version: Literal["1.1"]
    kind: Literal["execution-fidelity-guard-shadow-pilot-summary"]
    generated_at: DateTime
    input: SummaryInput
    sessions: SummarySessions
    sample_gate: SampleGate
    observations: Observations
    claim_boundary: Annotated[list[NonEmpty], Field(min_length=4)]

    @model_validator(mode="after")
    def _arithmetic(self) -> ShadowPilotSummary:
        hashes = self.input.bundle_sha256
        if hashes != sorted(set(hashes)):
            raise _record("bundle_sha256 is sorted ascending, each once", "/input/bundle_sha256")
        if self.input.bundle_count != len(hashes):
            raise _record("bundle_count is the number of bundle hashes", "/input/bundle_count")
        cohort = sha256_bytes_hex("\n".join(hashes).encode("ascii"))
        if self.input.cohort_sha256 != cohort:
            raise _record(f"cohort_sha256 is {cohort} for these bundles", "/input/cohort_sha256")
        gate, shadow = self.sample_gate, self.sessions.in_shadow_mode
        expected = {
            "eligible_shadow_sessions": shadow,
            "reached": shadow >= gate.target_sessions,
            "remaining": max(0, gate.target_sessions - shadow),
        }
        for name, value in expected.items():
            if getattr(gate, name) != value:
                raise _record(f"{name} is {value!r} for these sessions", f"/sample_gate/{name}")
        return self


# -- reading -------------------------------------------------------------------------------------

M = TypeVar("M", bound=_Wire)


def _diagnostics(exc: ValidationError, default: str) -> list[Diagnostic]:
    out = []
    for error in exc.errors(include_url=False, include_input=False):
        loc = [p for p in error["loc"] if not str(p).startswith("function")]
        ctx = error.get("ctx") or {}
        pointer = json_pointer(loc) + str(ctx.get("at", ""))
        code = error["type"] if error["type"] in CODES else default
        where = pointer or "the document"
        out.append(problem(code, f"{where}: {error['msg']}", pointer))
    return out


def read(model: type[M], value: Any) -> M:
    """``value`` (parsed JSON) as ``model``, or a WireError listing every problem."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise WireError(_diagnostics(exc, model.INVALID)) from None
    except RecursionError:  # pydantic on a hostile value nested thousands deep
        raise WireError([problem(model.INVALID, "the document is nested too deeply")]) from None


def read_json(model: type[M], data: bytes | str) -> M:
    """JSON text as ``model``. Read strictly (aira_core.canonical.loads_strict): a duplicate
    key is refused, where the Guard's JSON.parse would keep the last one."""
    try:
        value, _ = loads_strict(data, "the document")
    except StrictJSONError as exc:
        raise WireError([problem(model.INVALID, str(exc))]) from None
    return read(model, value)


@dataclass(frozen=True)
class Binding:
    """A contract the Guard would bind: its envelope (the provider's, or the fallback one
    derived from a bare TaskContractLite) and the contract."""

    envelope: ContractEnvelope
    contract: TaskContractLite

    @property
    def provider(self) -> str:
        return self.envelope.source


EPOCH = "1970-01-01T00:00:00.000Z"
"""The Guard's ``updated_at`` of a fallback envelope with no file time."""


def read_contract_document(value: Any, *, updated_at: str = EPOCH) -> Binding:
    """A contract document as the Guard dispatches it (``parseContractDocument``): a provider
    document ``{envelope, projection}``, or a bare TaskContractLite whose identity is derived
    (``lite:`` + hash, version 1, ``updated_at`` given). A standalone envelope is refused:
    the fallback envelope is the Guard's internal output, never input."""
    if isinstance(value, Mapping) and "envelope" in value and "projection" in value:
        document = read(ProviderDocument, value)
        return Binding(document.envelope, document.projection)
    if isinstance(value, Mapping) and "schema_version" in value and "contract_ref" in value:
        why = (
            "standalone fallback envelopes are not accepted; give the bare seven-field "
            "TaskContractLite so its identity is derived"
            if value.get("source") == _FALLBACK
            else "a user-intent-plugin envelope comes with its projection: {envelope, projection}"
        )
        raise WireError([problem(CONTRACT_INVALID, why)])
    contract = read(TaskContractLite, value)
    digest = contract.sha256()
    envelope = read(
        ContractEnvelope,
        {
            "schema_version": "1.0",
            "contract_ref": "lite:" + digest[:20],
            "contract_version": 1,
            "source": _FALLBACK,
            "source_message_refs": [],
            "snapshot_sha256": digest,
            "updated_at": updated_at,
            "task_contract_lite": contract.to_wire(),
        },
    )
    return Binding(envelope, contract)


# -- schemas -------------------------------------------------------------------------------------

WIRE_MODELS: dict[str, type[_Wire]] = {
    "task-contract-lite": TaskContractLite,
    "contract-envelope": ContractEnvelope,
    "provider-contract": ProviderDocument,
    "continuity-snapshot": ContinuitySnapshot,
    "decision-receipt": DecisionReceipt,
    "normalized-event": NormalizedEvent,
    "evidence-reference": EvidenceReference,
    "evidence-record": EvidenceRecord,
    "receipt-bundle": ReceiptBundle,
    "shadow-pilot-summary": ShadowPilotSummary,
}
"""Every wire object by name (the upstream schema file's stem where there is one)."""


def json_schema(model: type[_Wire]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a wire model, generated from it: const versions,
    enums, uniqueItems, minItems and closed objects as the upstream schemas state them."""
    schema = model.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def schemas() -> dict[str, dict[str, Any]]:
    """``{name: JSON Schema}`` of every wire object."""
    return {name: json_schema(model) for name, model in WIRE_MODELS.items()}
