"""The bounded-step host's tiers and budgets, and the decision grammar: parsing with stable
refusal codes, batches, aliases, the per-step JSON Schema and its agreement with the parser."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from aira_core.canonical import canonical_bytes
from aira_core.contracts.base import MAX_VALUE_DEPTH
from aira_core.contracts.plan import Plan
from aira_core.diagnostics import AiraError
from aira_core.model.aliases import AliasTable
from aira_core.runtime.drafts import legal_aliases
from aira_core.runtime.tiers import (
    DEFAULT_BUDGETS,
    DEFAULT_TIER,
    TIERS,
    TaskBudgets,
    host_tokens,
    tier,
)
from aira_core.step import decision as grammar
from aira_core.step.decision import (
    ACTS,
    DECISION_ADAPTER,
    READ_ONLY_ACTS,
    STEP_DECISION_ACT_UNKNOWN,
    STEP_DECISION_ALIAS_UNKNOWN,
    STEP_DECISION_FIELD_INVALID,
    STEP_DECISION_NOT_JSON,
    STEP_DECISION_NOT_OBJECT,
    TERMINAL_ACTS,
    WRITE_ACTS,
    BatchAct,
    DecisionRejected,
    PlanAct,
    decision_schema,
    decision_to_wire,
    is_read_only,
    is_terminal,
    is_write,
    parse_decision,
)

REV = "rev:sha256:" + "1" * 64
ALIASES: dict[str, list[str]] = {
    "bodies": ["b:plate", "b:lid"],
    "nodes": ["n:box", "n:3f2a"],
    "parameters": ["p:width", "p:height"],
}
STEP = {"id": "s1", "capability": "cap:exact.box@1"}

EXAMPLES: dict[str, dict[str, Any]] = {
    "read": {
        "act": "read",
        "select": [["nodes"], ["bodies", "b:plate"], ["parameters", "width1"]],
        "limit": 20,
        "offset": 0,
        "pin": True,
    },
    "lookup": {"act": "lookup", "query": "round the top edges"},
    "inspect": {"act": "inspect", "query": "massProperties", "args": {"target": "b:plate"}},
    "repair": {
        "act": "repair",
        "capability": "cap:fillet.reduceRadius@1",
        "diagnostic": {"code": "FILLET_RADIUS_TOO_LARGE", "step": "round"},
    },
    "stage": {
        "act": "stage",
        "name": "arm-p2.step",
        "mediaType": "model/step",
        "content": "ISO-10303-21;\nEND-ISO-10303-21;",
    },
    "plan": {
        "act": "plan",
        "summary": "a 4 mm fillet on the plate",
        "plan": {
            "steps": [
                {
                    "id": "s1",
                    "capability": "cap:exact.fillet@1",
                    "args": {
                        "target": "b:plate",
                        "radius": {"param": "p:width"},
                        "edges": {"body": "b:plate", "select": ">Z"},
                        "depth": {"value": 4, "unit": "mm"},
                        "flags": [True, None, 1.5, "top"],
                    },
                    "label": "rounded",
                },
                {
                    "id": "s2",
                    "capability": "cap:exact.translate@1",
                    "args": {"target": {"step": "s1"}, "dx": 10},
                    "dependsOn": ["s1"],
                },
            ],
            "acceptanceAssertions": [
                {"validatorRef": "exact.volumePositive@1.0.0", "target": "b:plate"}
            ],
        },
    },
    "pin": {"act": "pin", "pages": ["pg:3"], "unpin": ["pg:1"]},
    "note": {"act": "note", "note": "plate is 100x60; fillet next"},
    "done": {"act": "done", "summary": "filleted"},
    "abstain": {"act": "abstain", "reason": "no material given", "missing": ["material"]},
    "batch": {
        "act": "batch",
        "acts": [
            {"act": "read", "select": [["parameters"]], "pin": True},
            {"act": "lookup", "capability": "cap:exact.fillet@1", "level": "L3"},
            {"act": "inspect", "query": "massProperties"},
            {"act": "pin", "unpin": ["pg:1"]},
        ],
        "note": "reading",
    },
}


def parse(value: Any, aliases: Any = ALIASES, **kw: Any) -> Any:
    text = value if isinstance(value, str | bytes) else json.dumps(value)
    return parse_decision(text, aliases, **kw)


def rejected(value: Any, code: str, aliases: Any = ALIASES, **kw: Any) -> DecisionRejected:
    with pytest.raises(DecisionRejected) as info:
        parse(value, aliases, **kw)
    assert info.value.code == code, info.value
    assert info.value.diagnostic.phase == "decision"
    return info.value


def validator(aliases: Any = ALIASES, **kw: Any) -> Draft202012Validator:
    schema = decision_schema(aliases, **kw)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


# -- tiers and budgets ---------------------------------------------------------------------------


def test_tiers_are_the_design_table() -> None:
    rows = {name: (t.window, t.budget, t.note, t.page, t.ledger_rows) for name, t in TIERS.items()}
    assert rows == {
        "T32": (32_000, 24_000, 1_000, 2_000, 6),
        "T128": (128_000, 96_000, 2_000, 4_000, 12),
        "T200": (200_000, 160_000, 4_000, 8_000, 16),
    }
    assert DEFAULT_TIER == "T128"
    assert tier("T200") is TIERS["T200"]
    assert TIERS["T128"].bytes(2_000) == 8_000


def test_default_budgets() -> None:
    b = TaskBudgets()
    assert (b.steps, b.input_tokens, b.output_tokens, b.usd) == (48, 3_384_000, 384_000, 5.0)
    assert (b.repair_rounds, b.batch_acts, b.enum_limit) == (3, 8, 64)
    assert b.step_liveness_s == 16 * 60
    assert b == DEFAULT_BUDGETS
    with pytest.raises(ValueError):
        TaskBudgets(batch_acts=0)


@pytest.mark.parametrize(
    ("data", "tokens"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), (b"12345678", 2), ("é", 1), ("中文字", 3)],
)
def test_host_tokens_round_up(data: str | bytes, tokens: int) -> None:
    assert host_tokens(data) == tokens


def test_host_tokens_never_raise_on_a_lone_surrogate() -> None:
    assert host_tokens("\ud800") == 1


@pytest.mark.parametrize("name", ["T64", "t128", "", None, 128])
def test_unknown_tier(name: Any) -> None:
    with pytest.raises(AiraError) as info:
        tier(name)
    assert info.value.code == "STEP_TIER_UNKNOWN"
    assert "T32, T128, T200" in str(info.value)


# -- every act -----------------------------------------------------------------------------------


def test_the_examples_cover_every_act() -> None:
    assert set(EXAMPLES) == set(ACTS)
    assert READ_ONLY_ACTS | WRITE_ACTS | TERMINAL_ACTS | {"note", "batch"} == set(ACTS)


@pytest.mark.parametrize("act", ACTS)
def test_every_act_parses_and_round_trips(act: str) -> None:
    decision = parse(EXAMPLES[act])
    assert decision.act == act
    assert isinstance(decision, grammar.ACT_MODELS[act])
    wire = decision_to_wire(decision)
    assert parse(wire) == decision
    assert DECISION_ADAPTER.validate_python(wire) == decision


@pytest.mark.parametrize("act", ACTS)
def test_a_note_on_any_act(act: str) -> None:
    decision = parse({**EXAMPLES[act], "note": "the plate is 100 wide"})
    assert decision.note == "the plate is 100 wide"


def test_act_classes() -> None:
    kinds = {
        act: (is_write(parse(EXAMPLES[act])), is_terminal(parse(EXAMPLES[act]))) for act in ACTS
    }
    assert {a for a, (w, _) in kinds.items() if w} == {"plan", "stage"}
    assert {a for a, (_, t) in kinds.items() if t} == {"done", "abstain"}
    assert not any(kinds["note"]) and not any(kinds["batch"])
    assert is_read_only(parse(EXAMPLES["batch"])) and not is_read_only(parse(EXAMPLES["note"]))


def test_read_without_select_reads_the_summary() -> None:
    assert parse({"act": "read"}).select == []


def test_plan_is_the_wire_dict_and_binds_to_a_revision() -> None:
    decision = parse(EXAMPLES["plan"])
    assert isinstance(decision, PlanAct)
    assert decision.plan["steps"][1]["dependsOn"] == ["s1"]
    assert dict(decision.plan)["steps"][0]["args"]["radius"] == {"param": "p:width"}
    plan = decision.to_plan(REV)
    assert isinstance(plan, Plan) and plan.base_revision == REV
    assert [s.id for s in plan.steps] == ["s1", "s2"]


def test_lookup_takes_query_or_capability() -> None:
    assert parse({"act": "lookup", "capability": "cap:exact.fillet@1"}).level is None
    both = rejected(
        {"act": "lookup", "query": "x", "capability": "cap:exact.fillet@1"},
        STEP_DECISION_FIELD_INVALID,
    )
    assert "exactly one of query" in both.diagnostic.message
    rejected({"act": "lookup"}, STEP_DECISION_FIELD_INVALID)
    level = rejected({"act": "lookup", "query": "x", "level": "L3"}, STEP_DECISION_FIELD_INVALID)
    assert level.diagnostic.pointer == "/level"


@pytest.mark.parametrize(
    ("decision", "pointer"),
    [
        ({"act": "read", "limit": "5"}, "/limit"),
        ({"act": "read", "limit": 0}, "/limit"),
        ({"act": "read", "pin": "yes"}, "/pin"),
        ({"act": "read", "select": [["parts"]]}, "/select/0/0"),
        ({"act": "read", "select": [["nodes", "b:plate"]]}, "/select/0/1"),
        ({"act": "read", "select": [["nodes", "n:box", "source"]]}, "/select/0"),
        ({"act": "read", "select": [["nodes", "not an id"]]}, "/select/0/1"),
        ({"act": "stage", "name": "../x", "mediaType": "model/step", "content": ""}, "/name"),
        (
            {"act": "stage", "name": "a.step", "media_type": "model/step", "content": ""},
            "/mediaType",
        ),
        ({"act": "done", "summary": "ok", "extra": 1}, "/extra"),
        ({"act": "done"}, "/summary"),
        ({"act": "plan", "summary": "s", "plan": {"steps": []}}, "/plan/steps"),
        (
            {"act": "plan", "summary": "s", "plan": {"steps": [STEP], "baseRevision": REV}},
            "/plan/baseRevision",
        ),
        (
            {"act": "plan", "summary": "s", "plan": {"steps": [{**STEP, "id": "1x"}]}},
            "/plan/steps/0/id",
        ),
        (
            {"act": "plan", "summary": "s", "plan": {"steps": [{**STEP, "depends_on": []}]}},
            "/plan/steps/0/depends_on",
        ),
        (
            {
                "act": "plan",
                "summary": "s",
                "plan": {"steps": [{**STEP, "args": {"r": {"param": "b:plate"}}}]},
            },
            "/plan/steps/0/args/r/param",
        ),
        (
            {
                "act": "plan",
                "summary": "s",
                "plan": {"steps": [{**STEP, "args": {"e": [{"body": 3}]}}]},
            },
            "/plan/steps/0/args/e/0/body",
        ),
        (
            {
                "act": "note",
                "note": "x",
                "deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
            },
            "/deep",
        ),
    ],
)
def test_field_invalid_points_at_the_field(decision: dict[str, Any], pointer: str) -> None:
    exc = rejected(decision, STEP_DECISION_FIELD_INVALID)
    assert exc.diagnostic.pointer == pointer, exc


def test_nesting_beyond_the_limit_is_refused_with_a_pointer() -> None:
    deep: Any = 1
    for _ in range(grammar.MAX_DEPTH + 5):
        deep = [deep]
    exc = rejected({"act": "note", "note": "x", "deep": deep}, STEP_DECISION_FIELD_INVALID)
    assert exc.diagnostic.pointer.startswith("/deep/0/0")
    assert "deeper than" in exc.diagnostic.message


def test_duplicate_keys_and_unrepresentable_numbers_are_refused() -> None:
    dup = rejected('{"act": "read", "act": "plan"}', STEP_DECISION_FIELD_INVALID)
    assert dup.diagnostic.pointer == "/act"
    assert (
        rejected('{"act":"read","limit":1e999}', STEP_DECISION_FIELD_INVALID).diagnostic.pointer
        == "/limit"
    )
    assert rejected('{"act":"note","note":"x","n":' + "9" * 30 + "}", STEP_DECISION_FIELD_INVALID)
    rejected('{"act":"read","offset":NaN}', STEP_DECISION_NOT_JSON)
    lone = rejected('{"act":"note","note":"\\udc00"}', STEP_DECISION_FIELD_INVALID)
    assert lone.diagnostic.pointer == "/note"


def test_note_bounded_by_the_tier() -> None:
    t32 = tier("T32")
    assert parse({"act": "note", "note": "x" * t32.bytes(t32.note)}, tier=t32)
    exc = rejected(
        {"act": "done", "summary": "ok", "note": "x" * 4001}, STEP_DECISION_FIELD_INVALID, tier=t32
    )
    assert exc.diagnostic.pointer == "/note"
    assert "T32" in exc.diagnostic.message


# -- batches -------------------------------------------------------------------------------------


def test_batch_of_read_only_acts() -> None:
    decision = parse(EXAMPLES["batch"])
    assert isinstance(decision, BatchAct)
    assert [a.act for a in decision.acts] == ["read", "lookup", "inspect", "pin"]
    assert all(is_read_only(a) for a in decision.acts)


@pytest.mark.parametrize(
    "inner",
    [
        EXAMPLES["plan"],
        EXAMPLES["stage"],
        EXAMPLES["done"],
        EXAMPLES["abstain"],
        EXAMPLES["note"],
        {"act": "batch", "acts": [{"act": "read"}]},
    ],
)
def test_batch_with_a_non_read_only_act_is_refused_whole(inner: dict[str, Any]) -> None:
    value = {"act": "batch", "acts": [{"act": "read"}, inner]}
    exc = rejected(value, STEP_DECISION_FIELD_INVALID)
    assert exc.diagnostic.pointer == "/acts/1/act"
    assert "whole batch" in exc.diagnostic.message


def test_batch_size() -> None:
    acts = [{"act": "read", "select": [["nodes"]]}] * 8
    assert len(parse({"act": "batch", "acts": acts}).acts) == 8
    exc = rejected({"act": "batch", "acts": [*acts, {"act": "read"}]}, STEP_DECISION_FIELD_INVALID)
    assert exc.diagnostic.pointer == "/acts/8"
    assert "at most 8" in exc.diagnostic.message
    rejected({"act": "batch", "acts": []}, STEP_DECISION_FIELD_INVALID)
    small = TaskBudgets(batch_acts=2)
    rejected({"act": "batch", "acts": acts[:3]}, STEP_DECISION_FIELD_INVALID, budgets=small)


def test_batch_inner_errors_point_inside_the_act() -> None:
    exc = rejected(
        {"act": "batch", "acts": [{"act": "read"}, {"act": "read", "limit": -1}]},
        STEP_DECISION_FIELD_INVALID,
    )
    assert exc.diagnostic.pointer == "/acts/1/limit"
    note = rejected(
        {"act": "batch", "acts": [{"act": "read", "note": "x"}]}, STEP_DECISION_FIELD_INVALID
    )
    assert note.diagnostic.pointer == "/acts/0/note"
    assert "put it on the batch" in note.diagnostic.message
    unknown = rejected({"act": "batch", "acts": [{"act": "fly"}]}, STEP_DECISION_ACT_UNKNOWN)
    assert unknown.diagnostic.pointer == "/acts/0/act"


# -- repair --------------------------------------------------------------------------------------


def test_repair_names_a_capability_and_a_diagnostic() -> None:
    decision = parse(EXAMPLES["repair"])
    assert isinstance(decision, grammar.RepairAct) and is_read_only(decision)
    assert (decision.capability, decision.diagnostic.code, decision.diagnostic.step) == (
        "cap:fillet.reduceRadius@1",
        "FILLET_RADIUS_TOO_LARGE",
        "round",
    )
    bare = parse({**EXAMPLES["repair"], "diagnostic": {"code": "FILLET_RADIUS_TOO_LARGE"}})
    assert bare.diagnostic.step is None, "the step is optional"
    assert "step" not in decision_to_wire(bare)["diagnostic"]
    batch = parse({"act": "batch", "acts": [EXAMPLES["repair"], {"act": "read"}]})
    assert [a.act for a in batch.acts] == ["repair", "read"]


REPAIR = EXAMPLES["repair"]


@pytest.mark.parametrize(
    ("decision", "pointer"),
    [
        ({"act": "repair", "diagnostic": REPAIR["diagnostic"]}, "/capability"),
        ({"act": "repair", "capability": REPAIR["capability"]}, "/diagnostic"),
        ({**REPAIR, "capability": "fillet.reduceRadius"}, "/capability"),
        ({**REPAIR, "capability": ""}, "/capability"),
        ({**REPAIR, "diagnostic": "FILLET_RADIUS_TOO_LARGE"}, "/diagnostic"),
        ({**REPAIR, "diagnostic": {"step": "round"}}, "/diagnostic/code"),
        ({**REPAIR, "diagnostic": {"code": "fillet too large"}}, "/diagnostic/code"),
        ({**REPAIR, "diagnostic": {"code": "X", "step": "1round"}}, "/diagnostic/step"),
        ({**REPAIR, "diagnostic": {"code": "X", "subject": "round"}}, "/diagnostic/subject"),
        ({**REPAIR, "plan": {"steps": [STEP]}}, "/plan"),
        ({"act": "batch", "acts": [{**REPAIR, "capability": 3}]}, "/acts/0/capability"),
        ({"act": "batch", "acts": [{**REPAIR, "note": "x"}]}, "/acts/0/note"),
    ],
)
def test_a_repair_of_a_bad_shape_is_refused(decision: dict[str, Any], pointer: str) -> None:
    exc = rejected(decision, STEP_DECISION_FIELD_INVALID)
    assert exc.diagnostic.pointer == pointer, exc
    assert not validator().is_valid(decision), "the schema refuses it too"


def test_the_schema_and_the_index_explain_the_repair_act() -> None:
    defs = decision_schema(ALIASES)["$defs"]
    assert "candidate" in defs["RepairAct"]["description"]
    assert "plan act" in defs["RepairAct"]["description"]
    target = defs["RepairTarget"]["properties"]
    assert set(target) == {"code", "step"} and defs["RepairTarget"]["required"] == ["code"]
    assert "repair" in defs["BatchAct"]["properties"]["acts"]["description"]
    assert "repair{capability,diagnostic:{code,step?}}" in grammar.GRAMMAR_SUMMARY


# -- not JSON, not an object, unknown act --------------------------------------------------------


def test_not_json_says_where() -> None:
    exc = rejected('{"act": "read",\n "select": [["nodes"]] oops}', STEP_DECISION_NOT_JSON)
    message = exc.diagnostic.message
    assert "line 2" in message and "column 24" in message
    assert "oops" in message  # the excerpt around the failure


def test_not_json_hints() -> None:
    fenced = rejected('```json\n{"act": "read"}\n```', STEP_DECISION_NOT_JSON)
    assert "code fence" in fenced.diagnostic.message
    two = rejected('{"act": "read"} {"act": "done", "summary": "x"}', STEP_DECISION_NOT_JSON)
    assert "exactly one JSON object" in two.diagnostic.message
    rejected("", STEP_DECISION_NOT_JSON)
    rejected("   \n", STEP_DECISION_NOT_JSON)
    rejected(b"\xff\xfe{}", STEP_DECISION_NOT_JSON)


def test_bytes_are_decoded() -> None:
    assert parse_decision(b'{"act": "note", "note": "\xe4\xb8\xad"}').note == "中"  # type: ignore[union-attr]


@pytest.mark.parametrize("text", ["null", "42", '"read"', "[]", '[{"act": "read"}]', "true"])
def test_not_an_object(text: str) -> None:
    rejected(text, STEP_DECISION_NOT_OBJECT)


@pytest.mark.parametrize(
    "value",
    [{"act": "fly"}, {"select": [["nodes"]]}, {"act": None}, {"act": 3}, {"act": "READ"}],
)
def test_unknown_act_names_the_legal_acts(value: dict[str, Any]) -> None:
    exc = rejected(value, STEP_DECISION_ACT_UNKNOWN)
    assert exc.diagnostic.pointer == "/act"
    assert all(act in exc.diagnostic.message for act in ACTS)


@pytest.mark.parametrize("value", [None, 42, 1.5, ["x"], {"act": "read"}, object()])
def test_python_values_that_are_not_text(value: Any) -> None:
    with pytest.raises(DecisionRejected) as info:
        parse_decision(value)
    assert info.value.code == STEP_DECISION_NOT_JSON


# -- aliases -------------------------------------------------------------------------------------


def test_unknown_alias_in_a_plan() -> None:
    bad = {
        "act": "plan",
        "summary": "s",
        "plan": {"steps": [{**STEP, "args": {"target": "b:plat"}}]},
    }
    exc = rejected(bad, STEP_DECISION_ALIAS_UNKNOWN)
    assert exc.diagnostic.pointer == "/plan/steps/0/args/target"
    assert "b:lid, b:plate" in exc.diagnostic.message
    assert parse(bad, None).act == "plan"  # no aliases given: nothing to check against


@pytest.mark.parametrize(
    ("plan", "pointer"),
    [
        ({"steps": [{**STEP, "args": {"r": {"param": "p:depth"}}}]}, "/plan/steps/0/args/r/param"),
        ({"steps": [{**STEP, "args": {"l": [1, ["n:gone"]]}}]}, "/plan/steps/0/args/l/1/0"),
        (
            {
                "steps": [STEP],
                "acceptanceAssertions": [{"validatorRef": "v@1.0.0", "target": "b:x"}],
            },
            "/plan/acceptanceAssertions/0/target",
        ),
    ],
)
def test_unknown_alias_pointers(plan: dict[str, Any], pointer: str) -> None:
    exc = rejected({"act": "plan", "summary": "s", "plan": plan}, STEP_DECISION_ALIAS_UNKNOWN)
    assert exc.diagnostic.pointer == pointer


def test_unknown_alias_in_reads_and_inspects() -> None:
    read = rejected({"act": "read", "select": [["bodies", "b:gone"]]}, STEP_DECISION_ALIAS_UNKNOWN)
    assert read.diagnostic.pointer == "/select/0/1"
    batch = rejected(
        {
            "act": "batch",
            "acts": [{"act": "inspect", "query": "massProperties", "args": {"t": "b:x"}}],
        },
        STEP_DECISION_ALIAS_UNKNOWN,
    )
    assert batch.diagnostic.pointer == "/acts/0/args/t"


def test_an_alias_an_earlier_step_of_the_plan_creates_is_accepted() -> None:
    plan = {
        "steps": [
            {**STEP, "label": "bracket"},
            {"id": "s2", "capability": "cap:exact.fillet@1", "args": {"target": "b:bracket"}},
        ]
    }
    assert parse({"act": "plan", "summary": "s", "plan": plan}).act == "plan"
    plan["steps"][1]["args"] = {"target": "b:elsewhere"}  # made by no step
    rejected({"act": "plan", "summary": "s", "plan": plan}, STEP_DECISION_ALIAS_UNKNOWN)


# A plan that defines a parameter and a labelled body, then names both by alias: what a
# strict structured-output model must be able to write.
PLAN_WITH_OWN_ALIASES = {
    "act": "plan",
    "summary": "a filleted block",
    "plan": {
        "steps": [
            {
                "id": "len",
                "capability": "cap:parameter.define@1",
                "args": {"name": "len", "value": 80, "unit": "mm"},
            },
            {
                "id": "box",
                "capability": "cap:exact.box@1",
                "label": "blk",
                "args": {"length": {"param": "p:len"}, "width": "p:len"},
            },
            {
                "id": "f",
                "capability": "cap:exact.fillet@1",
                "args": {"target": "b:blk", "edges": {"body": "b:blk", "select": "|Z"}},
            },
        ],
        "acceptanceAssertions": [{"validatorRef": "v@1.0.0", "target": "b:blk"}],
    },
}


def test_aliases_a_plan_creates_validate_against_the_schema() -> None:
    aliases = {"bodies": ["b:plate"], "nodes": [], "parameters": []}
    decision = parse(PLAN_WITH_OWN_ALIASES, aliases)
    schema = validator(aliases)
    schema.validate(PLAN_WITH_OWN_ALIASES)
    schema.validate(decision_to_wire(decision))
    # Only by shape and only in a plan: elsewhere the revision's enums still decide.
    assert not schema.is_valid({"act": "inspect", "query": "q", "args": {"t": "b:blk"}})
    assert not schema.is_valid({"act": "read", "select": [["bodies", "b:blk"]]})


@pytest.mark.parametrize("label", ["my part", "1st", "x" * 49])
def test_a_label_that_cannot_be_an_alias_names_nothing(label: str) -> None:
    plan = {
        "steps": [
            {**STEP, "label": label},
            {"id": "s2", "capability": "cap:exact.fillet@1", "args": {"target": f"b:{label}"}},
        ]
    }
    value = {"act": "plan", "summary": "s", "plan": plan}
    exc = rejected(value, STEP_DECISION_ALIAS_UNKNOWN)  # plan.check would not resolve it
    assert exc.diagnostic.pointer == "/plan/steps/1/args/target"
    assert not validator().is_valid(value)


def test_kinds_not_given_are_not_checked() -> None:
    value = {"act": "inspect", "query": "q", "args": {"a": "a:beef", "p": "p:anything"}}
    rejected(value, STEP_DECISION_ALIAS_UNKNOWN)
    assert parse(value, {"bodies": ["b:plate"]}).act == "inspect"


def test_plain_strings_and_ids_are_not_aliases() -> None:
    value = {
        "act": "plan",
        "summary": "s",
        "plan": {
            "steps": [{**STEP, "args": {"text": "bolt: M3", "src": "staged:a.step", "b": "body7"}}]
        },
    }
    assert parse(value).act == "plan"


def test_an_alias_table_is_accepted() -> None:
    table = AliasTable(
        REV,
        {"bodies": [("b:plate", "body1")], "parameters": [("p:w", "param1")], "nodes": []},
    )
    assert legal_aliases(table) == {
        "bodies": ["b:plate"],
        "nodes": [],
        "parameters": ["p:w"],
        "assertions": [],
    }
    assert parse({"act": "read", "select": [["bodies", "b:plate"]]}, table).act == "read"
    rejected({"act": "read", "select": [["bodies", "b:lid"]]}, STEP_DECISION_ALIAS_UNKNOWN, table)
    assert decision_schema(table)["$defs"]["BodyAlias"]["enum"] == ["b:plate"]


# -- the per-step schema -------------------------------------------------------------------------


def test_schema_is_draft_2020_12_and_deterministic() -> None:
    first = decision_schema(ALIASES)
    assert first["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(first)
    assert canonical_bytes(first) == canonical_bytes(decision_schema(ALIASES))
    assert json.dumps(first) == json.dumps(
        decision_schema({k: list(v) for k, v in ALIASES.items()})
    )
    first["$defs"]["BodyAlias"]["enum"].append("b:mutated")  # a copy: the next is untouched
    assert "b:mutated" not in decision_schema(ALIASES)["$defs"]["BodyAlias"]["enum"]


def test_alias_enums_up_to_the_limit() -> None:
    bodies = [f"b:part{i}" for i in range(64)]
    defs = decision_schema({**ALIASES, "bodies": bodies})["$defs"]
    assert defs["BodyAlias"]["enum"] == bodies
    assert defs["NodeAlias"]["enum"] == ALIASES["nodes"]
    assert defs["ParameterAlias"]["enum"] == ALIASES["parameters"]
    assert "enum" not in defs["AssertionAlias"]  # not given: a plain string
    more = decision_schema({**ALIASES, "bodies": [*bodies, "b:part64"]})["$defs"]["BodyAlias"]
    assert more["type"] == "string" and "enum" not in more and more["pattern"] == "^b:"
    small = decision_schema(ALIASES, budgets=TaskBudgets(enum_limit=1))["$defs"]
    assert "enum" not in small["BodyAlias"]
    # Beyond the enum limit the host still checks the alias.
    value = {"act": "read", "select": [["bodies", "b:part65"]]}
    rejected(value, STEP_DECISION_ALIAS_UNKNOWN, {"bodies": [*bodies, "b:part64"]})


def test_empty_kind_is_an_empty_enum() -> None:
    schema = decision_schema({"bodies": [], "nodes": [], "parameters": []})
    assert schema["$defs"]["BodyAlias"]["enum"] == []
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("act", ACTS)
def test_schema_validates_every_example(act: str) -> None:
    validator().validate(EXAMPLES[act])
    validator(tier=tier("T32")).validate({**EXAMPLES[act], "note": "short"})


@pytest.mark.parametrize(
    "value",
    [
        {"act": "batch", "acts": [{"act": "read"}, EXAMPLES["plan"]]},
        {"act": "batch", "acts": [{"act": "read"}] * 9},
        {"act": "batch", "acts": [{"act": "read", "note": "x"}]},
        {"act": "plan", "summary": "s", "plan": {"steps": [{**STEP, "args": {"t": "b:a b"}}]}},
        {"act": "inspect", "query": "q", "args": {"t": "b:plat"}},
        {
            "act": "plan",
            "summary": "s",
            "plan": {"steps": [{**STEP, "args": {"t": {"param": "b:plate"}}}]},
        },
        {
            "act": "plan",
            "summary": "s",
            "plan": {
                "steps": [
                    {**STEP, "label": "blk"},
                    {"id": "s2", "capability": "cap:x@1", "args": {"t": {"param": "b:blk"}}},
                ]
            },
        },
        {"act": "read", "select": [["bodies", "b:gone"]]},
        {"act": "read", "select": [["nodes", "b:plate"]]},
        {"act": "read", "select": [["parts"]]},
        {"act": "read", "limit": "5"},
        {"act": "fly"},
        {"act": "done", "summary": "ok", "extra": 1},
        {"act": "stage", "name": "a.step", "media_type": "model/step", "content": ""},
        {"act": "note", "note": "x" * 4001},
    ],
)
def test_schema_rejects_what_the_parser_rejects(value: dict[str, Any]) -> None:
    assert not validator(tier=tier("T32")).is_valid(value)
    with pytest.raises(DecisionRejected):
        parse(value, tier=tier("T32"))


# -- fuzz: nothing but DecisionRejected, and the schema accepts whatever the parser accepts ------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=24,
)
LEGAL = [*ALIASES["bodies"], *ALIASES["nodes"], *ALIASES["parameters"], "a:beef", "body1", "s1"]
# "gone", "x" and "my part" also occur as labels and parameter names: names a plan creates.
alias_like = st.sampled_from([*LEGAL * 3, "b:gone", "p:x", "n:", "b:my part", "x", "gone"])
PLAN_LOCAL_SHAPE = re.compile(r"^[bnp]:[A-Za-z][A-Za-z0-9_-]{0,47}$")
arg_values = st.recursive(
    st.none() | st.integers(-10, 10) | st.floats(-5, 5) | alias_like | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["param", "body", "step", "value", "unit", "select"]),
            children,
            max_size=3,
        )
    ),
    max_leaves=12,
)
args = st.dictionaries(
    st.sampled_from(["target", "radius", "edges", "name"]), arg_values, max_size=3
)
paths = st.lists(
    st.sampled_from(["bodies", "nodes", "parameters", "assertions", "parts"]).flatmap(
        lambda block: st.one_of(st.just([block]), alias_like.map(lambda a: [block, a]))
    ),
    max_size=3,
)
steps = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["s1", "s2", "s3", "s4", "1bad"]),
            "capability": st.sampled_from(["cap:exact.box@1", "cap:exact.fillet@2", "box"]),
        },
        optional={
            "args": args,
            "label": st.text(max_size=5) | st.sampled_from(["gone", "x", "my part"]),
            "dependsOn": st.lists(st.just("s1"), max_size=1),
        },
    ),
    min_size=1,
    max_size=3,
)
notes = st.text(max_size=20)
read_only = st.one_of(
    st.fixed_dictionaries(
        {"act": st.just("read")},
        optional={
            "select": paths,
            "limit": st.integers(-1, 30),
            "offset": st.integers(-1, 5),
            "pin": st.booleans(),
        },
    ),
    st.fixed_dictionaries({"act": st.just("lookup"), "query": st.text(max_size=8)}),
    st.fixed_dictionaries(
        {"act": st.just("lookup"), "capability": st.just("cap:x@1")},
        optional={"level": st.sampled_from(["L2", "L3", "L4"])},
    ),
    st.fixed_dictionaries(
        {"act": st.just("lookup")},
        optional={
            "query": st.text(max_size=8),
            "capability": st.just("cap:x@1"),
            "level": st.sampled_from(["L2", "L3", "L4"]),
        },
    ),
    st.fixed_dictionaries(
        {"act": st.just("inspect"), "query": st.text(max_size=8)}, optional={"args": args}
    ),
    st.fixed_dictionaries(
        {"act": st.just("pin")}, optional={"pages": st.lists(st.text(max_size=4), max_size=2)}
    ),
    st.fixed_dictionaries(
        {"act": st.just("repair")},
        optional={
            "capability": st.sampled_from(["cap:fillet.reduceRadius@1", "cap:x", "", "x"]),
            "diagnostic": st.fixed_dictionaries(
                {},
                optional={
                    "code": st.sampled_from(["FILLET_RADIUS_TOO_LARGE", "X", "x", ""]),
                    "step": st.sampled_from(["round", "s1", "1bad", ""]),
                },
            )
            | json_values,
        },
    ),
)
decisions = st.one_of(
    read_only,
    st.fixed_dictionaries(
        {
            "act": st.just("plan"),
            "summary": st.text(min_size=1, max_size=5),
            "plan": st.fixed_dictionaries(
                {"steps": steps},
                optional={
                    "acceptanceAssertions": st.lists(
                        st.fixed_dictionaries(
                            {"validatorRef": st.just("v@1.0.0"), "target": alias_like},
                            optional={"args": args},
                        ),
                        max_size=2,
                    )
                },
            ),
        },
        optional={"note": notes},
    ),
    st.fixed_dictionaries(
        {
            "act": st.just("stage"),
            "name": st.sampled_from(["a.step", "../x"]),
            "mediaType": st.just("model/step"),
            "content": st.text(max_size=8),
        }
    ),
    st.fixed_dictionaries({"act": st.just("note")}, optional={"note": notes}),
    st.fixed_dictionaries({"act": st.just("done"), "summary": st.text(max_size=5)}),
    st.fixed_dictionaries(
        {"act": st.just("abstain"), "reason": st.text(max_size=5)},
        optional={"missing": st.lists(st.text(max_size=3), max_size=2)},
    ),
    st.fixed_dictionaries(
        {
            "act": st.just("batch"),
            "acts": st.lists(read_only, min_size=1, max_size=9),
        },
        optional={"note": notes},
    ),
    st.fixed_dictionaries(
        {
            "act": st.just("batch"),
            "acts": st.lists(read_only | st.just(EXAMPLES["plan"]), max_size=10),
        }
    ),
    st.dictionaries(
        st.sampled_from(["act", "note", "select", "plan", "acts", "x"]), json_values, max_size=4
    ),
)
SCHEMA = validator()


def _only_rejected(text: Any) -> Any:
    try:
        return parse_decision(text, ALIASES)
    except DecisionRejected as exc:
        assert exc.code.startswith("STEP_DECISION_")
        str(exc).encode("utf-8")  # the message is printable text
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_fuzz_any_text(text: str) -> None:
    _only_rejected(text)


@settings(max_examples=200, deadline=None)
@given(st.binary())
def test_fuzz_any_bytes(data: bytes) -> None:
    _only_rejected(data)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_fuzz_any_json(value: Any) -> None:
    _only_rejected(json.dumps(value))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(decisions)
def test_fuzz_decisions_agree_with_the_schema(value: dict[str, Any]) -> None:
    decision = _only_rejected(json.dumps(value))
    if decision is not None:
        SCHEMA.validate(value)  # everything the parser accepts, the schema accepts
        assert parse_decision(json.dumps(decision_to_wire(decision)), ALIASES) == decision
    else:
        try:
            parse_decision(json.dumps(value), ALIASES)
        except DecisionRejected as exc:
            plan_local = (exc.diagnostic.pointer or "").startswith("/plan/") and bool(
                PLAN_LOCAL_SHAPE.match(exc.diagnostic.subject or "")
            )
            if plan_local:
                return  # a name a plan step could create: the schema allows its shape
            if exc.code in (STEP_DECISION_ALIAS_UNKNOWN, STEP_DECISION_ACT_UNKNOWN):
                assert not SCHEMA.is_valid(value)


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000,
        "[" * 100_000 + "]" * 100_000,
        '{"act": "note", "note": "' + "x" * 2_000_000 + '"}',
        "\x00\x01\ud800\udfff",
        '{"act": "read", "limit": 1' + "0" * 5000 + "}",
        '{"act": "plan", "summary": "s", "plan": {"steps": [' + ",".join(["{}"] * 2000) + "]}}",
        '{"act": "batch", "acts": [' + ",".join(['{"act": "read"}'] * 5000) + "]}",
        '{"act": "\ud800"}',
        '{"\ud800": 1}',
        '{"act": "read", "select": [[' + '"nodes",' * 1000 + '"x"]]}',
    ],
)
def test_garbage_is_refused_not_raised(text: str) -> None:
    with pytest.raises(DecisionRejected):
        parse_decision(text, ALIASES, tier=tier("T200"))


def test_odd_but_legal_text_is_accepted() -> None:
    content = "\\u0000" * 1000 + "中\\ud83d\\ude00"
    text = '{"act":"stage","name":"a.step","mediaType":"model/step","content":"' + content + '"}'
    staged = parse_decision(text, ALIASES)
    assert staged.content == "\x00" * 1000 + "中😀"  # type: ignore[union-attr]


def test_plan_arguments_obey_the_rules_of_free_json_values() -> None:
    # PlanStep refuses arguments nested deeper than MAX_VALUE_DEPTH: the parser says so
    # first, pointing at the arguments, instead of the runtime at proposePatch.
    deep: Any = 1
    for _ in range(MAX_VALUE_DEPTH + 1):
        deep = [deep]
    plan = {"steps": [{"id": "s1", "capability": "cap:exact.box@1", "args": {"length": deep}}]}
    error = rejected({"act": "plan", "summary": "s", "plan": plan}, "STEP_DECISION_FIELD_INVALID")
    assert "nested deeper than" in str(error)
    assert error.diagnostic.pointer == "/plan/steps/0/args"
