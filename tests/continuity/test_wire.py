"""The wire models: every object round-trips and validates against its generated schema, an
unknown field anywhere fails, and each rule the upstream code adds is refused with its code
and the pointer of the offending value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from aira_continuity.errors import (
    CONTRACT_HASH_MISMATCH,
    CONTRACT_INVALID,
    CONTRACT_PLACEHOLDER,
    CONTRACT_RULE_UNSUPPORTED,
    WIRE_RECORD_INVALID,
    WireError,
)
from aira_continuity.wire import (
    WIRE_MODELS,
    ContinuitySnapshot,
    ContractEnvelope,
    DecisionReceipt,
    NormalizedEvent,
    ProviderDocument,
    ReceiptBundle,
    ShadowPilotSummary,
    TaskContractLite,
    js_trim,
    json_schema,
    read,
    read_contract_document,
    read_json,
    schemas,
)
from tests.continuity.samples import (
    FALLBACK_ENVELOPE,
    NO_LOCAL_INSTALL,
    NO_LOCAL_INSTALL_SHA256,
    SAMPLES,
    sample,
)

NAMES = list(WIRE_MODELS)


def refused(name: str, value: Any) -> list[tuple[str, str | None]]:
    """``[(code, pointer)]`` of reading ``value`` as the named object; fails if it is read."""
    with pytest.raises(WireError) as exc:
        read(WIRE_MODELS[name], value)
    return [(d.code, d.pointer) for d in exc.value.diagnostics]


def test_every_wire_model_has_a_sample() -> None:
    assert set(SAMPLES) == set(WIRE_MODELS)


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_and_generated_schema(name: str) -> None:
    model = WIRE_MODELS[name]
    first = read(model, SAMPLES[name])
    text = first.model_dump_json()
    again = read_json(model, text)
    assert again == first
    assert again.to_wire() == json.loads(text)
    schema = json_schema(model)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    errors = list(Draft202012Validator(schema).iter_errors(json.loads(text)))
    assert errors == []


@pytest.mark.parametrize("name", NAMES)
def test_the_generated_schema_refuses_an_unknown_top_level_field(name: str) -> None:
    value = sample(name)
    value["unexpected"] = "x"
    assert not Draft202012Validator(json_schema(name and WIRE_MODELS[name])).is_valid(value)


def test_schemas_maps_every_model() -> None:
    assert set(schemas()) == set(WIRE_MODELS)


def test_generated_schemas_state_upstream_constraints() -> None:
    lite = json_schema(TaskContractLite)
    assert lite["additionalProperties"] is False
    assert sorted(lite["required"]) == sorted(NO_LOCAL_INSTALL)
    surface = lite["properties"]["delivery_surface"]
    assert (surface["minItems"], surface["uniqueItems"]) == (1, True)
    assert lite["properties"]["completion_evidence"]["minItems"] == 1
    envelope = json_schema(ContractEnvelope)
    assert envelope["properties"]["schema_version"]["const"] == "1.0"
    assert envelope["properties"]["contract_version"]["minimum"] == 1
    rule = envelope["allOf"][0]
    assert rule["then"] == {"required": ["task_contract_lite", "snapshot_sha256"]}
    assert rule["else"] == {"not": {"required": ["task_contract_lite"]}}
    # absent, never null: the schema has no null branch for an optional non-null field
    assert envelope["properties"]["snapshot_sha256"]["type"] == "string"
    snapshot = json_schema(ContinuitySnapshot)["properties"]
    assert snapshot["open_commitments"]["uniqueItems"] is True
    assert snapshot["evidence_refs"]["uniqueItems"] is True
    assert snapshot["phase"]["minLength"] == 1
    event = json_schema(NormalizedEvent)["properties"]
    assert event["schema_version"]["const"] == "2.0"
    assert len(event["event_type"]["enum"]) == 11
    assert json_schema(ShadowPilotSummary)["properties"]["schema_version"]["const"] == "1.1"
    provider = json_schema(ProviderDocument)["properties"]["envelope"]
    assert provider["properties"]["source"] == {"const": "user-intent-plugin"}
    assert provider["required"] == ["source", "snapshot_sha256"]
    validator = Draft202012Validator(json_schema(ContractEnvelope))
    assert validator.is_valid(FALLBACK_ENVELOPE)
    no_contract = {k: v for k, v in FALLBACK_ENVELOPE.items() if k != "task_contract_lite"}
    assert not validator.is_valid(no_contract)
    assert not validator.is_valid({**sample("contract-envelope"), "snapshot_sha256": None})


# -- an unknown field anywhere ----------------------------------------------------------------

OPEN = {"facts", "stop_state", "decisions", "coverage", "reasons"}
"""Objects the wire leaves open (the event's facts, the untyped stop state, count tables)."""


def objects(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """The path of every closed object inside ``value``."""
    if isinstance(value, dict):
        if not path or path[-1] not in OPEN:
            yield path
        for key, member in value.items():
            yield from objects(member, (*path, key))
    elif isinstance(value, list):
        for i, member in enumerate(value):
            yield from objects(member, (*path, i))


CLOSED = [(name, path) for name in NAMES for path in objects(SAMPLES[name])]


def test_the_closed_objects_were_found() -> None:
    assert len(CLOSED) > 25
    assert ("receipt-bundle", ("evidence", 0, "evidence")) in CLOSED


@pytest.mark.parametrize(("name", "path"), CLOSED, ids=lambda x: "/".join(map(str, x)) or "-")
def test_an_extra_field_anywhere_fails(name: str, path: tuple[str | int, ...]) -> None:
    value = sample(name)
    target = value
    for step in path:
        target = target[step]
    target["extra_field"] = "x"
    pointer = "".join(f"/{p}" for p in (*path, "extra_field"))
    model = WIRE_MODELS[name]
    found = refused(name, value)
    # an extra field in a hashed projection also changes its hash; the field is named either way
    assert (model.INVALID, pointer) in found, found


def test_open_facts_take_any_plain_json_but_nothing_else() -> None:
    event = sample("normalized-event")
    event["facts"]["anything"] = {"nested": [1, 2.5, None, True]}
    assert read(NormalizedEvent, event).facts["anything"]["nested"][1] == 2.5
    event["facts"]["bad"] = float("nan")
    assert refused("normalized-event", event) == [(WIRE_RECORD_INVALID, "/facts")]


# -- TaskContractLite rules ------------------------------------------------------------------


def contract_with(path: str, value: Any) -> dict[str, Any]:
    out = sample("task-contract-lite")
    *parents, last = [int(p) if p.isdigit() else p for p in path.strip("/").split("/")]
    target = out
    for p in parents:
        target = target[p]
    target[last] = value
    return out


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("/objective", " \t\u3000"),  # blank after a JS trim (ideographic space)
        ("/objective", "\ufeff"),  # JS trims U+FEFF, Python's strip does not
        ("/primary_object", ""),
        ("/delivery_surface/0", "\u00a0"),
        ("/scope/include/0", "\n"),
        ("/must_and_must_not/must/0", " "),
        ("/completion_evidence/0/requirement", "  "),
    ],
)
def test_a_blank_string_is_refused(path: str, value: str) -> None:
    assert refused("task-contract-lite", contract_with(path, value)) == [(CONTRACT_INVALID, path)]


def test_js_trim_is_ecmascripts() -> None:
    assert js_trim("\ufeff x \u2028") == "x"
    assert js_trim("\x1c") == "\x1c"  # Python's strip() removes it; JavaScript keeps it
    assert js_trim("\x85") == "\x85"
    # so a contract whose objective is U+001C is valid for the Guard
    assert read(TaskContractLite, contract_with("/objective", "\x1c")).objective == "\x1c"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("/delivery_surface", []),
        ("/delivery_surface", ["repository", "repository"]),
        ("/completion_evidence", []),
        ("/completion_evidence/0/acceptable_sources", []),
        ("/completion_evidence/0/acceptable_sources/0", "contract"),  # a kind, not a source
        ("/scope/include", "workspace"),
        ("/objective", 7),
    ],
)
def test_shape_rules(path: str, value: Any) -> None:
    found = refused("task-contract-lite", contract_with(path, value))
    assert found and all(code == CONTRACT_INVALID for code, _ in found)
    assert all(p is not None and p.startswith(path) for _, p in found), found


def test_acceptable_sources_and_scope_need_not_be_unique() -> None:
    value = contract_with("/completion_evidence/0/acceptable_sources", ["test", "test"])
    value["scope"]["include"] = ["a", "a"]
    assert read(TaskContractLite, value).scope.include == ["a", "a"]


@pytest.mark.parametrize(
    "rule",
    [
        "actions:publish",
        "tools:Bash",
        "command_prefix:npm",
        "commandprefix:npm",
        "command prefix:npm",
        "action :publish",
        "Tool\u3000:bash",
        "action:",
        "tool:   ",
        "command-prefix:",
        "action:install-local",
        "ACTION:Deploy",
        "action:read\nmore",  # `.` stops at a line break: no rule, but a near miss
        "action:read\u2028x",
    ],
)
@pytest.mark.parametrize(
    "bucket",
    [
        "/must_and_must_not/must_not",
        "/authorization/allowed",
        "/authorization/requires_user",
        "/authorization/forbidden",
    ],
)
def test_unsupported_structured_rules(bucket: str, rule: str) -> None:
    value = contract_with(bucket, ["do not deploy on Fridays", rule])
    assert refused("task-contract-lite", value) == [(CONTRACT_RULE_UNSUPPORTED, f"{bucket}/1")]


@pytest.mark.parametrize(
    "rule",
    [
        "action:install_local",
        "  Action:PUBLISH  ",
        "action: external_side_effect ",
        "tool:Bash",
        "command-prefix:npm install",
        "TOOL:anything at all",
        "do not install locally",
        "actions are fine",  # no colon after the word: natural language
        "\u017ftool:x",  # long s: not an ASCII fold, so free text
    ],
)
def test_supported_rules_and_natural_language(rule: str) -> None:
    value = contract_with("/authorization/forbidden", [rule])
    assert read(TaskContractLite, value).authorization.forbidden == [rule]


def test_must_is_not_a_rule_list() -> None:
    value = contract_with("/must_and_must_not/must", ["actions:publish"])
    assert read(TaskContractLite, value).must_and_must_not.must == ["actions:publish"]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/objective", "Replace with the exact user-requested outcome."),
        ("/primary_object", "  Replace with the primary object being changed or delivered. "),
        ("/must_and_must_not/must/0", "Replace with non-negotiable requirements."),
    ],
)
def test_init_placeholders(path: str, text: str) -> None:
    assert refused("task-contract-lite", contract_with(path, text)) == [
        (CONTRACT_PLACEHOLDER, path)
    ]


# -- envelopes and provider documents ---------------------------------------------------------


@pytest.mark.parametrize(
    "when",
    [
        "2026-09-01T00:00:00.000+24:00",
        "2026-09-01T00:00Z",  # seconds are required
        "2026-06-30T23:59:60Z",  # no leap second
        "2026-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-09-01 00:00:00Z",
        "2026-09-01T00:00:00",
        "2026-09-01T00:00:00+05:60",
        "2026-09-01T24:00:00Z",
        "\u0662026-09-01T00:00:00Z",  # an Arabic-Indic digit: JS \d is ASCII
        "2026-09-01T00:00:00Z\n",
    ],
)
def test_updated_at_is_rfc_3339_in_the_guards_profile(when: str) -> None:
    value = {**sample("contract-envelope"), "updated_at": when}
    assert refused("contract-envelope", value) == [(CONTRACT_INVALID, "/updated_at")]


@pytest.mark.parametrize(
    "when",
    ["2024-02-29T23:59:59Z", "2026-09-01t00:00:00z", "2026-09-01T00:00:00.123456789-23:59"],
)
def test_rfc_3339_date_times_accepted(when: str) -> None:
    assert read(ContractEnvelope, {**sample("contract-envelope"), "updated_at": when})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("schema_version", "1.1"),
        ("schema_version", 1),
        ("contract_version", 0),
        ("contract_version", "3"),
        ("contract_version", True),
        ("contract_version", 3.5),
        ("contract_ref", " "),
        ("source", "intent-loop"),
        ("source_message_refs", ["msg", "\t"]),
        ("snapshot_sha256", "A" * 64),
        ("snapshot_sha256", None),
    ],
)
def test_envelope_fields(field: str, value: Any) -> None:
    found = refused("contract-envelope", {**sample("contract-envelope"), field: value})
    assert found and all(code == CONTRACT_INVALID for code, _ in found)
    assert all(p is not None and p.startswith(f"/{field}") for _, p in found), found


def test_an_integral_float_version_is_an_integer() -> None:
    value = {**sample("contract-envelope"), "contract_version": 3.0}
    assert read(ContractEnvelope, value).to_wire()["contract_version"] == 3


def test_envelope_source_rules() -> None:
    assert read(ContractEnvelope, FALLBACK_ENVELOPE).task_contract_lite is not None
    missing = {k: v for k, v in FALLBACK_ENVELOPE.items() if k != "task_contract_lite"}
    assert refused("contract-envelope", missing) == [(CONTRACT_INVALID, None)]
    wrong = {**FALLBACK_ENVELOPE, "snapshot_sha256": "0" * 64}
    assert refused("contract-envelope", wrong) == [(CONTRACT_HASH_MISMATCH, "/snapshot_sha256")]
    carrying = {**sample("contract-envelope"), "task_contract_lite": NO_LOCAL_INSTALL}
    assert refused("contract-envelope", carrying) == [(CONTRACT_INVALID, "/task_contract_lite")]
    assert "task_contract_lite" not in read(ContractEnvelope, sample("contract-envelope")).to_wire()


def test_provider_document_binding() -> None:
    doc = sample("provider-contract")
    assert read(ProviderDocument, doc).envelope.snapshot_sha256 == NO_LOCAL_INSTALL_SHA256
    doc["projection"]["objective"] += " "  # the hash does not trim
    assert refused("provider-contract", doc) == [
        (CONTRACT_HASH_MISMATCH, "/envelope/snapshot_sha256")
    ]
    doc = sample("provider-contract")
    del doc["envelope"]["snapshot_sha256"]
    assert refused("provider-contract", doc) == [(CONTRACT_INVALID, "/envelope/snapshot_sha256")]
    doc = sample("provider-contract")
    doc["extra"] = {}
    assert refused("provider-contract", doc) == [(CONTRACT_INVALID, "/extra")]


def test_contract_document_dispatch() -> None:
    bound = read_contract_document(sample("provider-contract"))
    assert bound.provider == "user-intent-plugin"
    assert bound.envelope.contract_ref == "intent:stable-task-id"
    bare = read_contract_document(sample("task-contract-lite"))
    assert bare.provider == "task-contract-lite"
    assert bare.envelope.to_wire() == FALLBACK_ENVELOPE
    for standalone in (FALLBACK_ENVELOPE, sample("contract-envelope")):
        with pytest.raises(WireError) as exc:
            read_contract_document(standalone)
        assert exc.value.code == CONTRACT_INVALID


@pytest.mark.parametrize(
    "value", [None, [], "text", 3, {"objective": "x"}, {"envelope": 1, "projection": []}]
)
def test_garbage_is_a_diagnostic_not_a_traceback(value: Any) -> None:
    with pytest.raises(WireError) as exc:
        read_contract_document(value)
    assert exc.value.code == CONTRACT_INVALID
    assert exc.value.diagnostics[0].message


def test_read_json_refuses_what_json_parse_would_quietly_pick() -> None:
    text = json.dumps(sample("task-contract-lite"))[:-1] + ', "objective": "second"}'
    with pytest.raises(WireError, match="duplicate key") as exc:
        read_json(TaskContractLite, text)
    assert exc.value.code == CONTRACT_INVALID
    with pytest.raises(WireError) as exc:
        read_json(ContinuitySnapshot, b"\xff")
    assert exc.value.code == WIRE_RECORD_INVALID
    deep = "[" * 5000 + "]" * 5000
    with pytest.raises(WireError):
        read_json(TaskContractLite, deep)


def test_a_lone_surrogate_is_refused_in_a_wire_string() -> None:
    found = refused("task-contract-lite", contract_with("/objective", "a\ud800b"))
    assert found == [(CONTRACT_INVALID, "/objective")]


# -- snapshot, event, receipt ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("phase", ""),
        ("open_commitments", ["next:a", "next:a"]),
        ("evidence_refs", ["x", "x"]),
        ("open_commitments", [""]),
        ("captured_at", "yesterday"),
        ("schema_version", "2.0"),
    ],
)
def test_snapshot_producer_shape(field: str, value: Any) -> None:
    found = refused("continuity-snapshot", {**sample("continuity-snapshot"), field: value})
    assert found and {c for c, _ in found} == {WIRE_RECORD_INVALID}
    assert all(p is not None and p.startswith(f"/{field}") for _, p in found), found


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("session_id", "session-test"),
        ("turn_id", "turn:" + "A" * 64),
        ("event_type", "pre_tool"),
        ("coverage", "full"),
        ("schema_version", "1.0"),
        ("facts", []),
    ],
)
def test_event_fields(field: str, value: Any) -> None:
    found = refused("normalized-event", {**sample("normalized-event"), field: value})
    assert found and all(p is not None and p.startswith(f"/{field}") for _, p in found)


def test_event_nullable_fields_are_written_as_null() -> None:
    event = sample("normalized-event")
    for key in ("turn_id", "tool_use_id", "tool_name", "input_sha256", "result_sha256"):
        del event[key]
    wire = read(NormalizedEvent, event).to_wire()
    assert wire["turn_id"] is None and wire["result_sha256"] is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reason_codes", []),
        ("decision", "deny"),
        ("latency_ms", -1),
        ("latency_ms", "4"),
        ("reversible", "false"),
        ("severity", "urgent"),
    ],
)
def test_receipt_fields(field: str, value: Any) -> None:
    found = refused("decision-receipt", {**sample("decision-receipt"), field: value})
    assert found and all(p is not None and p.startswith(f"/{field}") for _, p in found)


def test_receipt_latency_keeps_its_number_type() -> None:
    assert read(DecisionReceipt, sample("decision-receipt")).to_wire()["latency_ms"] == 4
    value = {**sample("decision-receipt"), "latency_ms": 0.25}
    assert read(DecisionReceipt, value).to_wire()["latency_ms"] == 0.25


def test_evidence_record_requirement_refs() -> None:
    record = sample("evidence-record")
    record["requirement_refs"] = ["requirement:0:c1186dbb68175ef1"] * 2
    assert refused("evidence-record", record) == [(WIRE_RECORD_INVALID, "/requirement_refs")]
    record["requirement_refs"] = ["requirement:x:c1186dbb68175ef1"]
    assert refused("evidence-record", record) == [(WIRE_RECORD_INVALID, "/requirement_refs/0")]


# -- the receipt export and the summary ----------------------------------------------------------


def bundle_with(change: Any) -> dict[str, Any]:
    value = sample("receipt-bundle")
    change(value)
    return value


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        (lambda b: b.update(session_present=False), "/session_present"),
        (lambda b: b.update(events=[]), "/events"),
        (lambda b: b.update(receipts=[]), "/receipts"),
        (lambda b: b["events"].append(dict(b["events"][0])), "/events/1/event_id"),
        (lambda b: b["events"][0].update(session_id="session:" + "0" * 64), "/events/0/session_id"),
        (lambda b: b["events"][0]["facts"].update(guard_mode="loud"), "/events/0/facts/guard_mode"),
        (
            lambda b: b["events"].append(
                {**b["events"][0], "event_id": "evt_2", "facts": {"contract_status": "bound"}}
            ),
            "/events",
        ),
        (lambda b: b["receipts"][0].update(event_ref="evt_none"), "/receipts/0/event_ref"),
        (
            lambda b: b["receipts"].append({**b["receipts"][0], "receipt_id": "rcpt_2"}),
            "/receipts/1/event_ref",
        ),
        (lambda b: b["receipts"][0].update(contract_version=4), "/receipts/0/contract_ref"),
        (
            lambda b: b["receipts"][0].update(reason_codes=["made_up"]),
            "/receipts/0/reason_codes/0",
        ),
        (
            lambda b: b["receipts"][0].update(
                reason_codes=["explicit_contract_conflict", "shadow_would_block"]
            ),
            "/receipts/0/reason_codes",
        ),
        (lambda b: b["receipts"][0].update(severity="medium"), "/receipts/0/reason_codes"),
        (lambda b: b["receipts"][0].update(decision="block"), "/receipts/0"),
        (lambda b: b["receipts"][0].update(rule_ids=[]), "/receipts/0"),
        (lambda b: b["events"][0]["facts"].update(contract_status="unbound"), "/receipts/0"),
    ],
)
def test_receipt_bundle_consistency(change: Any, pointer: str) -> None:
    assert refused("receipt-bundle", bundle_with(change)) == [(WIRE_RECORD_INVALID, pointer)]


def test_a_shadow_ask_tuple_is_accepted() -> None:
    def ask(b: dict[str, Any]) -> None:
        b["receipts"][0].update(
            reason_codes=["shadow_would_ask", "explicit_user_authorization_required"],
            severity="medium",
            rule_ids=["requires_user:a2b50321fe8b7c6c"],
        )

    assert read(ReceiptBundle, bundle_with(ask)).receipts[0].severity == "medium"


@pytest.mark.parametrize(
    ("section", "field", "value", "pointer"),
    [
        ("input", "bundle_count", 3, "/input/bundle_count"),
        ("input", "bundle_sha256", ["b" * 64, "a" * 64], "/input/bundle_sha256"),
        ("input", "bundle_sha256", ["a" * 64, "a" * 64], "/input/bundle_sha256"),
        ("input", "cohort_sha256", "0" * 64, "/input/cohort_sha256"),
        ("sample_gate", "eligible_shadow_sessions", 2, "/sample_gate/eligible_shadow_sessions"),
        ("sample_gate", "reached", True, "/sample_gate/reached"),
        ("sample_gate", "remaining", 100, "/sample_gate/remaining"),
        ("sessions", "unique", 0, "/sessions/unique"),
    ],
)
def test_summary_arithmetic(section: str, field: str, value: Any, pointer: str) -> None:
    summary = sample("shadow-pilot-summary")
    summary[section][field] = value
    found = refused("shadow-pilot-summary", summary)
    assert found and found[0] == (WIRE_RECORD_INVALID, pointer), found


def test_summary_counts_and_claims() -> None:
    summary = sample("shadow-pilot-summary")
    summary["observations"]["decisions"]["ask"] = 0
    assert refused("shadow-pilot-summary", summary) == [
        (WIRE_RECORD_INVALID, "/observations/decisions/ask")
    ]
    summary = sample("shadow-pilot-summary")
    summary["claim_boundary"] = summary["claim_boundary"][:3]
    assert refused("shadow-pilot-summary", summary) == [(WIRE_RECORD_INVALID, "/claim_boundary")]
    summary = sample("shadow-pilot-summary")
    summary["observations"]["runtime_decision_latency_ms"] = {"p50": None, "p95": None, "max": None}
    assert read(ShadowPilotSummary, summary)
