"""Compact step signatures (RFC-0002 §10.4): capabilities rendered from their canonical input
schemas as one-line TypeScript-like declarations, and the signature of the failed step in a
refused plan's ``CheckReport`` (a targeted repair).

The size bound is measured on the real first-party catalog, the OCCT kernel package's
manifest; the plan tests run against the signed test package of ``runtime_factory``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import (
    FILLET_CAP,
    VOLUME_RANGE_CAP,
    composite_steps,
    make_runtime,
    plan,
    step,
)

from aira_core.catalog.capabilities import CapabilityEntry
from aira_core.catalog.signatures import LEGEND, catalog_signatures, signature, signatures
from aira_core.contracts.capability import CapabilityDescriptor
from aira_core.model.operations import signature_from_schema
from aira_core.runtime.plan import check_plan

OCCT_MANIFEST = (
    Path(__file__).resolve().parents[1]
    / "plugins/aira-kernel-occt/aira_kernel_occt/package/manifest.json"
)
STEP_KINDS = ("authoring.operation", "model.query", "validator")
# Measured (package 0.11.0): 2785 bytes for the first 30 step capabilities of the OCCT
# manifest, 4117 for all 49 (0.10.0: 2770 and 4102, before the polyline's rotation; 0.9.0:
# 2535 and 3761 for 47; 0.6.0: 2501 and 3561 for 45; 0.5.2: 1995 and 2633 for 39). The growth
# is content: exact.thread and sketch.text (147 and 215 bytes, among the first 30) and the
# polyline's rotation here; sketch.subtract, sketch.faceOutline and the sweep's frame,
# outlines with arcs, sweep paths, loft sections, keepTool, selectEntities' filters before.
# The bounds leave a little headroom for a schema edit, not for a format regression.
MAX_BYTES_30 = 2830
MAX_BYTES_ALL_STEPS = 4200

LEN = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
SHAPE = {
    "anyOf": [
        {"type": "string", "minLength": 1},
        {"type": "object", "properties": {"step": {"type": "string"}}, "required": ["step"]},
    ],
    "x-amir-type": "Shape",
}


def obj(required: tuple[str, ...] = (), **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


def one(prop: Any, *, required: bool = True) -> str:
    """The rendered type of a single input ``x`` (required unless said otherwise)."""
    text = signature("cap:t.op@1", obj(("x",) if required else (), x=prop))
    prefix = "t.op@1(x:" if required else "t.op@1(x?:"
    assert text.startswith(prefix) and text.endswith(")"), text
    return text[len(prefix) : -1]


# -- each construct --------------------------------------------------------------------------------


def test_required_optional_and_the_id_without_its_prefix() -> None:
    schema = obj(("a",), a={"type": "number"}, b={"type": "string"}, c={"type": "boolean"})
    assert signature("cap:exact.box@1", schema) == "exact.box@1(a:num,b?:str,c?:bool)"


@pytest.mark.parametrize(
    ("amir", "json_type", "expected"),
    [
        ("Length", "number", "Len"),
        ("Angle", "number", "Ang"),
        ("Count", "integer", "Count"),
        ("Real", "number", "num"),
        ("Bool", "boolean", "bool"),
        ("String", "string", "str"),
        (None, "integer", "int"),
        (None, "null", "null"),
        ("NoSuchType", "number", "num"),
    ],
)
def test_amir_and_json_types(amir: str | None, json_type: str, expected: str) -> None:
    prop: dict[str, Any] = {"type": json_type}
    if amir:
        prop["x-amir-type"] = amir
    assert one(prop) == expected


def test_enum_and_const_are_json_literals() -> None:
    assert one({"type": "string", "x-amir-type": "String", "enum": ["X", "Y"]}) == '"X"|"Y"'
    assert one({"enum": ["a", 1, None, True]}) == '"a"|1|null|true'
    assert one({"const": "only"}) == '"only"'


@pytest.mark.parametrize(
    ("bounds", "expected"),
    [
        ({"x-amir-type": "Length", "exclusiveMinimum": 0}, "Len>0"),
        ({"x-amir-type": "Count", "type": "integer", "minimum": 3}, "Count>=3"),
        ({"maximum": 9}, "num<=9"),
        ({"exclusiveMaximum": 180}, "num<180"),
        ({"x-amir-type": "Angle", "exclusiveMinimum": 0, "maximum": 360}, "Ang(0,360]"),
        ({"x-amir-type": "Count", "minimum": 2, "maximum": 32}, "Count[2,32]"),
        ({"minimum": 0.5, "exclusiveMaximum": 1.0}, "num[0.5,1)"),
        ({"minimum": 0, "exclusiveMinimum": True}, "num>0"),  # draft-4 boolean form
        ({"minimum": "zero"}, "num"),  # not a number: no bound, no error
    ],
)
def test_numeric_bounds(bounds: dict[str, Any], expected: str) -> None:
    assert one({"type": "number", **bounds}) == expected


def test_defaults_from_the_schema_or_the_descriptor() -> None:
    schema = obj(
        ("a",),
        a={**LEN, "default": 5},  # required: a default does not make it optional
        b={"x-amir-type": "Angle", "type": "number", "default": 90.0},
        c={"type": "string", "enum": ["n", "r"]},
        d={"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        e={"type": "boolean"},
    )
    defaults = {"b": 45, "c": "n", "d": [0, 0], "a": 1}
    assert signature("cap:t.op@1", schema, defaults=defaults) == (
        't.op@1(a:Len>0,b:Ang=90,c:"n"|"r"="n",d:[num,num]=[0,0],e?:bool)'
    )
    # A default that is not JSON is left out rather than raising.
    assert signature("cap:t.op@1", obj(e={"type": "number"}), defaults={"e": object()}) == (
        "t.op@1(e?:num)"
    )


@pytest.mark.parametrize(
    ("prop", "expected"),
    [
        ({"type": "array", "items": {"type": "number"}}, "num[]"),
        ({"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}, "[num,num]"),
        (
            {
                "type": "array",
                "minItems": 4,
                "items": {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 2,
                    "maxItems": 2,
                },
            },
            "[num,num][4..]",
        ),
        ({"type": "array", "items": {"type": "string"}, "maxItems": 5}, "str[0..5]"),
        ({"type": "array", "items": {"type": "string"}, "minItems": 6, "maxItems": 6}, "str[6..6]"),
        ({"type": "array", "items": LEN}, "(Len>0)[]"),
        ({"type": "array", "items": {"type": ["string", "integer"]}}, "(str|int)[]"),
        ({"type": "array", "items": {"enum": ["a|b"]}}, '"a|b"[]'),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]}, "[str,num]"),
        (
            {"prefixItems": [{"type": "string"}], "items": {"type": "number", "minimum": 0}},
            "[str,...(num>=0)[]]",
        ),
        ({"type": "array"}, "any[]"),
    ],
)
def test_arrays_and_tuples(prop: dict[str, Any], expected: str) -> None:
    assert one(prop) == expected


def test_nested_objects_and_maps() -> None:
    counterbore = {
        "type": "object",
        "x-amir-type": "Json",
        "properties": {
            "diameter": {"type": "number", "exclusiveMinimum": 0},
            "depth": {"type": "number", "exclusiveMinimum": 0, "default": 1},
            "note": {"type": "string"},
        },
        "required": ["diameter"],
    }
    assert one(counterbore) == "{diameter:num>0,depth:num>0=1,note?:str}"
    assert one({"type": "object", "additionalProperties": {"type": "number"}}) == (
        "Record<str,num>"
    )
    assert one({"type": "object"}) == "{}"
    assert one({"properties": {"a": {"type": "string"}}}) == "{a?:str}"
    assert one(obj(("odd-name",), **{"odd-name": {"type": "string"}})) == '{"odd-name":str}'


def test_unions_from_any_of_one_of_and_type_lists() -> None:
    assert one({"anyOf": [{"type": "string"}, {"type": "number", "minimum": 0}]}) == "str|num>=0"
    assert one({"oneOf": [{"const": "auto"}, LEN]}) == '"auto"|Len>0'
    assert one({"type": ["number", "null"]}) == "num|null"
    assert one({"anyOf": [{"type": "string"}, {"type": "string"}]}) == "str"
    # An anyOf next to a type only constrains that type; the type is what is rendered.
    assert one({"type": "object", "properties": {}, "anyOf": [{"required": ["a"]}]}) == "{}"


def test_shape_and_selection() -> None:
    assert one(SHAPE) == "Shape"
    assert one({"type": "string", "x-amir-type": "Shape"}) == "Shape"
    entity = {"Face", "Edge", "Vertex"}

    def sel(entity_schema: Any) -> dict[str, Any]:
        props = {"body": {"type": "string"}, "select": {"type": "string"}}
        if entity_schema is not None:
            props["entity"] = entity_schema
        return {"type": "object", "x-amir-type": "Selection", "properties": props}

    assert one(sel(None)) == "Sel"
    assert one(sel({"enum": sorted(entity)})) == "Sel"
    assert one(sel({"enum": ["Edge", "Face"]})) == "Sel<Edge|Face>"
    assert one(sel({"const": "Face"})) == "Sel<Face>"
    assert one({"x-amir-type": "Selection"}) == "Sel"


@pytest.mark.parametrize(
    "prop",
    [
        {},
        {"description": "only words"},
        {"not": {"type": "string"}},
        {"type": "frobnicate"},
        {"$ref": "https://example.com/other.json"},
        {"$ref": "#/$defs/missing"},
        {"allOf": [{"type": "string"}, {"minLength": 1}]},
        {"enum": "not-a-list"},
        {"anyOf": [{"type": "string"}, {}]},
        5,
        None,
        ["a", "list"],
    ],
)
def test_unknown_constructs_degrade_to_any(prop: Any) -> None:
    assert one(prop) == "any"


def test_malformed_schemas_never_raise() -> None:
    assert signature("cap:t.op@1", {"properties": {"a": True}, "required": [["a"]]}) == (
        "t.op@1(a?:any)"
    )
    assert signature("cap:t.op@1", {"properties": {"a": False}}) == "t.op@1(a?:never)"
    assert signature("cap:t.op@1", {"properties": "nope"}) == "t.op@1()"
    assert signature("cap:t.op@1", "not a schema") == "t.op@1()"  # type: ignore[arg-type]
    assert signature(
        "cap:t.op@1", obj(a={"type": "array", "items": {"type": "number"}, "minItems": "2"})
    ) == ("t.op@1(a?:num[])")


def test_local_refs_resolve_and_recursion_stops() -> None:
    tree: dict[str, Any] = {
        "$defs": {
            "pt": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
        },
        "type": "object",
        "properties": {
            "at": {"$ref": "#/$defs/pt"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["at"],
    }
    assert signature("cap:t.tree@1", tree) == (
        "t.tree@1(at:[num,num],children?:{at:[num,num],children?:any[]}[])"
    )


def test_descriptions_and_titles_never_appear() -> None:
    schema = obj(("a",), a={**LEN, "description": "MARKER-DESC", "title": "MARKER-TITLE"})
    schema["description"] = "MARKER-ROOT"
    assert "MARKER" not in signature("cap:t.op@1", schema)


@pytest.mark.parametrize(
    ("kind", "suffix"),
    [
        (None, ""),
        ("authoring.operation", ""),
        ("model.query", ":query"),
        ("validator", ":validator"),
        ("importer", ":importer"),
    ],
)
def test_kind_marks_non_authoring_steps(kind: str | None, suffix: str) -> None:
    assert signature("cap:t.op@1", obj(), kind=kind) == "t.op@1()" + suffix


# -- blocks ----------------------------------------------------------------------------------------

PLANE = {"type": "string", "enum": ["XY", "YZ", "ZX", "XZ", "front", "back", "top"]}
AXIS = {"type": "string", "enum": ["X", "Y"]}


def test_block_keeps_the_given_order_and_is_deterministic() -> None:
    entries = [
        ("cap:b.second@1", obj(("r",), r=LEN)),
        ("cap:a.first@1", obj(("t",), t=SHAPE)),
    ]
    text = signatures(entries)
    assert text == "b.second@1(r:Len>0)\na.first@1(t:Shape)"
    assert signatures(entries) == text
    assert signatures(list(reversed(entries))) == "a.first@1(t:Shape)\nb.second@1(r:Len>0)"
    assert signatures([]) == ""


def test_a_repeated_long_enum_is_declared_once() -> None:
    entries = [(f"cap:s.op{i}@1", obj(("plane",), plane=PLANE, axis=AXIS)) for i in range(3)]
    text = signatures(entries)
    lines = text.splitlines()
    assert lines[0] == 'type Plane="XY"|"YZ"|"ZX"|"XZ"|"front"|"back"|"top"'
    assert lines[1] == 's.op0@1(plane:Plane,axis?:"X"|"Y")'  # too short to be worth a name
    assert len(lines) == 4 and text.count('"front"') == 1
    # Shorter than writing the enum out, and a single signature never uses the alias.
    assert len(text) < len("\n".join(signature(c, s) for c, s in entries))
    assert "Plane" not in signature(*entries[0])


def test_an_enum_alias_never_takes_a_grammar_name() -> None:
    entries = [(f"cap:s.op{i}@1", obj(("shape",), shape=PLANE)) for i in range(3)]
    assert signatures(entries).splitlines()[1] == "s.op0@1(shape:Shape2)"


# -- the first-party catalog -----------------------------------------------------------------------


def occt_entries() -> dict[str, CapabilityEntry]:
    manifest = json.loads(OCCT_MANIFEST.read_text(encoding="utf-8"))
    out = {}
    for raw in manifest["descriptors"]:
        d = CapabilityDescriptor.model_validate(raw)
        schema = manifest["schemas"][d.inputs.schema_ref]
        out[d.capability_id] = CapabilityEntry(
            d, schema, signature_from_schema(d.target[1], schema)
        )
    return out


def test_every_occt_capability_renders_with_its_required_inputs() -> None:
    entries = occt_entries()
    assert len(entries) == 57  # 55 operations, queries, validators, io; 2 repairs
    for cid, entry in entries.items():
        d = entry.descriptor
        text = signature(cid, entry.input_schema, kind=d.kind, defaults=d.defaults)
        assert text.startswith(cid.removeprefix("cap:") + "("), text
        assert "\n" not in text and "any" not in text, text
        for name in entry.input_schema.get("required", []):
            assert f"({name}:" in text or f",{name}:" in text, (name, text)
        for name, default in d.defaults.items():
            assert f"{name}:" in text and "=" in text, (name, default, text)


def test_thirty_first_party_step_signatures_fit_the_budget() -> None:
    entries = occt_entries()
    steps = [cid for cid, e in entries.items() if e.descriptor.kind in STEP_KINDS]
    assert len(steps) == 49
    thirty = catalog_signatures(entries, steps[:30])
    every = catalog_signatures(entries, steps)
    assert len(thirty.splitlines()) == 31  # one shared enum declaration + 30 signatures
    assert len(thirty.encode()) <= MAX_BYTES_30
    assert len(every.encode()) <= MAX_BYTES_ALL_STEPS
    schemas = json.loads(OCCT_MANIFEST.read_text(encoding="utf-8"))["schemas"]
    full = sum(len(json.dumps(schemas[e.descriptor.inputs.schema_ref])) for e in entries.values())
    assert len(every) * 10 < full
    assert len(LEGEND.encode()) <= 400


def test_catalog_signatures_takes_ids_in_order_and_skips_unknown_ones() -> None:
    entries = occt_entries()
    text = catalog_signatures(
        entries, ["cap:validate.minWallThickness@1", "cap:nope@1", "cap:exact.fillet@1"]
    )
    assert text == (
        "validate.minWallThickness@1(target:Shape,min:Len>0,samples:Count[2,32]=8):validator\n"
        "exact.fillet@1(target:Shape,edges:Sel,radius:Len>0)"
    )
    assert catalog_signatures(entries).count("\n") >= 44


# -- the failed step of a refused plan -------------------------------------------------------------


def test_refused_plan_reports_the_failed_steps_signature(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    bad = plan(repository.head(), *composite_steps(radius={"value": 2, "unit": "furlong"}))

    report, lowered = check_plan(bad, ctx)

    assert not report.ok and lowered is None
    assert report.failed_step == "round"
    expected = "exact.fillet@1(target:Shape,edges:Sel<Edge|Face>,radius:Len)"
    assert report.step_signature == expected
    wire = report.to_wire()
    assert wire["failedStep"] == "round" and wire["stepSignature"] == expected
    assert wire["stepSchema"] == ctx.capabilities[FILLET_CAP].input_schema
    assert kernel.total_calls == 0


def test_refused_validator_step_carries_its_kind(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    steps = composite_steps()
    steps[3] = step("check", VOLUME_RANGE_CAP, target="b:nowhere", min=1, max=2)

    report, _ = check_plan(plan(repository.head(), *steps), ctx)

    assert report.failed_step == "check"
    assert (
        report.step_signature == "validate.volumeRange@1(target:Shape,min?:num,max?:num):validator"
    )


def test_passing_plan_has_no_step_signature(tmp_path: Path) -> None:
    ctx, _, repository = make_runtime(tmp_path)
    report, _ = check_plan(plan(repository.head(), *composite_steps()), ctx)
    assert report.ok and report.step_signature is None
    assert "stepSignature" not in report.to_wire()
