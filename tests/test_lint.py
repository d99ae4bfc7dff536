"""Tests for package lint: every rule code, its JSON pointer, and ``aira catalog lint``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from cli_runner import RunAira
from factory import (
    PLANE_BINDING,
    box_descriptor,
    box_schemas,
    manifest,
    mutate,
    package_source,
    write_package,
)

from aira_core.catalog.lint import RULES, lint_manifest
from aira_core.catalog.package import parse_package
from aira_core.diagnostics import Diagnostic

PKG = "test.pkg"
BOX = "cap:test.box@1"
FILLET = "cap:test.fillet@1"
SKETCH = "cap:test.sketch@1"
BOX_IN = "amir://ops/test.box/1.0.0/input"
SKETCH_IN = "amir://ops/test.sketch/1.0.0/input"
BOX_IN_POINTER = "/schemas/amir:~1~1ops~1test.box~11.0.0~1input"

Mutation = Callable[[dict[str, Any]], Any]


def lint_codes(
    m: dict[str, Any],
    known: set[str] | frozenset[str] | None = frozenset(),
    *,
    raw: bytes | None = None,
) -> list[Diagnostic]:
    """Parse diagnostics plus, if the manifest parsed, lint findings (``known`` as given)."""
    parsed = parse_package(package_source(m, None, [], raw=raw))
    found = list(parsed.diagnostics)
    if parsed.manifest is not None:
        known_set = None if known is None else set(known)
        found += lint_manifest(parsed.manifest, known_capabilities=known_set)
    return found


# -- mutation helpers ----------------------------------------------------------------------


def _walk(m: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        m = m[key]
    return m


def put(*path_and_value: Any) -> Mutation:
    """Set the value at a path (creating nothing but the last key)."""
    *path, value = path_and_value

    def fn(m: dict[str, Any]) -> None:
        _walk(m, tuple(path[:-1]))[path[-1]] = value

    return fn


def drop(*path: Any) -> Mutation:
    def fn(m: dict[str, Any]) -> None:
        del _walk(m, path[:-1])[path[-1]]

    return fn


def append(*path_and_value: Any) -> Mutation:
    *path, value = path_and_value

    def fn(m: dict[str, Any]) -> None:
        _walk(m, tuple(path)).append(value)

    return fn


def both(*fns: Mutation) -> Mutation:
    def fn(m: dict[str, Any]) -> None:
        for f in fns:
            f(m)

    return fn


def _duplicate_box(m: dict[str, Any]) -> None:
    m["descriptors"].append(box_descriptor())


REPAIR = "cap:test.reduceRadius@1"
REPAIR_IN = "amir://repairs/test.reduceRadius/1.0.0/input"
D3 = ("descriptors", 3)  # the repair, where a case adds it


def _with_repair(m: dict[str, Any]) -> None:
    """A lint-clean repair of the fillet's FILLET_RADIUS_TOO_LARGE (descriptor 3)."""
    m["descriptors"].append(
        {
            "capabilityId": REPAIR,
            "kind": "repair",
            "patchTemplateRef": "test.reduceRadius@1.0.0",
            "profileVersion": "1.0.0",
            "title": "Reduce a fillet radius",
            "summary": "Halve a fillet radius that does not fit.",
            "intentExamples": ["the fillet is too large"],
            "inputs": {"schemaRef": REPAIR_IN},
            "taxonomy": {"primary": "authoring.exact.finishing"},
            "effects": ["readOnly"],
            "risk": {"level": "low"},
            "execution": {"quality": ["preview"], "costClass": "instant"},
            "relations": {"repairsDiagnostic": ["FILLET_RADIUS_TOO_LARGE"]},
            "patchTemplate": {"appliesTo": [FILLET], "set": {"radius": "args.radius * 0.5"}},
        }
    )
    m["schemas"][REPAIR_IN] = {"type": "object"}


def test_a_repair_is_lint_clean() -> None:
    assert lint_codes(mutate(manifest(), _with_repair)) == []


WORKFLOW = "cap:test.plate@1"
WF_REF = "test.plate@1.0.0"
WF = ("workflows", WF_REF)


def workflow(*mutations: Mutation) -> Mutation:
    """Add a workflow (a box, its edges rounded) to the manifest, then apply ``mutations``."""

    def fn(m: dict[str, Any]) -> None:
        m["descriptors"].append(
            {
                **{k: v for k, v in box_descriptor().items() if k != "operationRef"},
                "capabilityId": WORKFLOW,
                "kind": "workflow",
                "workflowRef": WF_REF,
                "relations": {},
                "inputs": {"schemaRef": "amir://workflows/test.plate/1.0.0/input"},
                "outputs": {"schemaRef": "amir://workflows/test.plate/1.0.0/output"},
            }
        )
        for part in ("input", "output"):
            m["schemas"][f"amir://workflows/test.plate/1.0.0/{part}"] = m["schemas"][
                f"amir://ops/test.box/1.0.0/{part}"
            ]
        m["workflows"] = {
            WF_REF: {
                "tables": {"inset": {"small": 1}},
                "steps": [
                    {
                        "id": "box",
                        "capability": BOX,
                        "args": {"length": {"$expr": "length"}, "width": 1, "height": 1},
                    },
                    {
                        "id": "round",
                        "capability": FILLET,
                        "args": {"target": {"step": "box"}, "edges": ">Z", "radius": 1},
                    },
                ],
            }
        }
        for mutation in mutations:
            mutation(m)

    return fn


# -- the rule table ------------------------------------------------------------------------


class Case(NamedTuple):
    id: str
    mutation: Mutation
    code: str
    pointer: str
    subject: str


D0 = ("descriptors", 0)  # the box
D1 = ("descriptors", 1)  # the fillet
D2 = ("descriptors", 2)  # the sketch

CASES: list[Case] = [
    # parse-time (pydantic) findings
    Case("risk-missing", drop(*D0, "risk"), "LINT_FIELD_MISSING", "/descriptors/0/risk", BOX),
    Case("publisher-missing", drop("publisher"), "LINT_FIELD_MISSING", "/publisher", PKG),
    Case(
        "summary-typo",
        both(drop(*D0, "summary"), put(*D0, "sumary", "A box.")),
        "LINT_FIELD_UNKNOWN",
        "/descriptors/0/sumary",
        BOX,
    ),
    Case(
        "risk-level-invalid",
        put(*D0, "risk", "level", "severe"),
        "LINT_FIELD_INVALID",
        "/descriptors/0/risk/level",
        BOX,
    ),
    Case(
        "capability-id-without-major",
        put(*D0, "capabilityId", "cap:test.box"),
        "LINT_CAPABILITY_ID_INVALID",
        "/descriptors/0/capabilityId",
        "cap:test.box",
    ),
    Case(
        "kind-unknown", put(*D0, "kind", "macro"), "LINT_KIND_UNKNOWN", "/descriptors/0/kind", BOX
    ),
    Case(
        "two-targets",
        put(*D0, "queryRef", "test.box@1.0.0"),
        "LINT_TARGET_NOT_EXACTLY_ONE",
        "/descriptors/0",
        BOX,
    ),
    Case(
        "no-target", drop(*D0, "operationRef"), "LINT_TARGET_NOT_EXACTLY_ONE", "/descriptors/0", BOX
    ),
    Case(
        "target-ref-major-only",
        put(*D0, "operationRef", "test.box@1"),
        "LINT_TARGET_REF_INVALID",
        "/descriptors/0/operationRef",
        BOX,
    ),
    Case(
        "taxonomy-unknown",
        put(*D0, "taxonomy", "primary", "authoring.magic"),
        "LINT_TAXONOMY_UNKNOWN",
        "/descriptors/0/taxonomy/primary",
        BOX,
    ),
    Case(
        "package-version-not-semver", put("version", "1.0"), "LINT_VERSION_INVALID", "/version", PKG
    ),
    Case(
        "profile-version-not-semver",
        put(*D0, "profileVersion", "1"),
        "LINT_VERSION_INVALID",
        "/descriptors/0/profileVersion",
        BOX,
    ),
    Case(
        "diagnostic-code-kebab",
        append(*D0, "diagnostics", "box-too-big"),
        "LINT_DIAGNOSTIC_CODE_INVALID",
        "/descriptors/0/diagnostics/1",
        BOX,
    ),
    Case(
        "failure-mode-diagnostic-lowercase",
        put(*D1, "guidance", "failureModes", 0, "diagnostic", "radius_too_large"),
        "LINT_DIAGNOSTIC_CODE_INVALID",
        "/descriptors/1/guidance/failureModes/0/diagnostic",
        FILLET,
    ),
    Case(
        "relation-unknown",
        put(*D0, "relations", "dependsOn", [FILLET]),
        "LINT_RELATION_UNKNOWN",
        "/descriptors/0/relations/dependsOn",
        BOX,
    ),
    # lint findings
    Case(
        "capability-duplicate",
        _duplicate_box,
        "LINT_CAPABILITY_DUPLICATE",
        "/descriptors/3/capabilityId",
        BOX,
    ),
    Case(
        "query-ref-on-operation",
        both(drop(*D0, "operationRef"), put(*D0, "queryRef", "test.box@1.0.0")),
        "LINT_TARGET_KIND_MISMATCH",
        "/descriptors/0/queryRef",
        BOX,
    ),
    Case(
        "schema-type-not-a-type",
        put("schemas", BOX_IN, "properties", "length", {"type": 12}),
        "LINT_SCHEMA_INVALID",
        f"{BOX_IN_POINTER}/properties/length/type",
        PKG,
    ),
    Case(
        "output-schema-ref-unresolved",
        put(*D0, "outputs", "schemaRef", "amir://ops/test.box/1.0.0/result"),
        "LINT_SCHEMA_REF_UNRESOLVED",
        "/descriptors/0/outputs/schemaRef",
        BOX,
    ),
    Case(
        "output-schema-of-other-target",
        both(
            put("schemas", "amir://ops/test.other/1.0.0/output", {"type": "object"}),
            put(*D0, "outputs", "schemaRef", "amir://ops/test.other/1.0.0/output"),
        ),
        "LINT_SCHEMA_REF_TARGET_MISMATCH",
        "/descriptors/0/outputs/schemaRef",
        BOX,
    ),
    Case(
        "input-schema-array",
        put("schemas", BOX_IN, "type", "array"),
        "LINT_INPUT_SCHEMA_NOT_OBJECT",
        "/descriptors/0/inputs/schemaRef",
        BOX,
    ),
    Case(
        "default-for-unknown-input",
        put(*D0, "defaults", "depth", 10),
        "LINT_DEFAULT_UNKNOWN_INPUT",
        "/descriptors/0/defaults/depth",
        BOX,
    ),
    Case(
        "default-on-required",
        put(*D0, "defaults", "length", 10),
        "LINT_DEFAULT_ON_REQUIRED",
        "/descriptors/0/defaults/length",
        BOX,
    ),
    Case(
        "default-wrong-type",
        put(*D0, "defaults", "centered", "yes"),
        "LINT_DEFAULT_INVALID",
        "/descriptors/0/defaults/centered",
        BOX,
    ),
    Case(
        "schema-default-differs",
        put("schemas", BOX_IN, "properties", "centered", {"type": "boolean", "default": False}),
        "LINT_DEFAULT_SCHEMA_MISMATCH",
        "/descriptors/0/defaults/centered",
        BOX,
    ),
    Case(
        "binding-for-optional-input",
        put(*D0, "defaultBinding", {"centered": True}),
        "LINT_DEFAULT_BINDING_NOT_REQUIRED",
        "/descriptors/0/defaultBinding/centered",
        BOX,
    ),
    Case(
        "binding-normal-too-short",
        put(*D2, "defaultBinding", "plane", "normal", [0, 1]),
        "LINT_DEFAULT_BINDING_INVALID",
        "/descriptors/2/defaultBinding/plane/normal",
        SKETCH,
    ),
    Case(
        "binding-also-in-defaults",
        put(*D2, "defaults", {"plane": PLANE_BINDING}),
        "LINT_DEFAULT_BINDING_CONFLICT",
        "/descriptors/2/defaultBinding/plane",
        SKETCH,
    ),
    Case(
        "binding-and-schema-default",
        put(
            "schemas",
            SKETCH_IN,
            "properties",
            "plane",
            "default",
            {"origin": [0, 0, 0], "normal": [1, 0, 0]},
        ),
        "LINT_DEFAULT_BINDING_CONFLICT",
        "/descriptors/2/defaultBinding/plane",
        SKETCH,
    ),
    Case(
        "example-invents-plane-shape",
        put(
            *D2,
            "inputExamples",
            0,
            "input",
            "plane",
            {"origin": [0, 0, 0], "normal": [0, 0, 1], "xAxis": [1, 0, 0]},
        ),
        "LINT_DEFAULT_BINDING_CONFLICT",
        "/descriptors/2/inputExamples/0/input/plane",
        SKETCH,
    ),
    Case(
        "example-negative-length",
        put(*D0, "inputExamples", 0, "input", "length", -5),
        "LINT_EXAMPLE_SCHEMA_INVALID",
        "/descriptors/0/inputExamples/0/input/length",
        BOX,
    ),
    Case(
        "no-input-example",
        drop(*D0, "inputExamples"),
        "LINT_INPUT_EXAMPLE_MISSING",
        "/descriptors/0/inputExamples",
        BOX,
    ),
    Case(
        "no-intent-example",
        drop(*D0, "intentExamples"),
        "LINT_INTENT_EXAMPLES_MISSING",
        "/descriptors/0/intentExamples",
        BOX,
    ),
    Case(
        "summary-281-chars",
        put(*D0, "summary", "x" * 281),
        "LINT_SUMMARY_TOO_LONG",
        "/descriptors/0/summary",
        BOX,
    ),
    Case(
        "alias-twice-case-folded",
        append(*D0, "aliases", "Cuboid"),
        "LINT_ALIAS_DUPLICATE",
        "/descriptors/0/aliases/2",
        BOX,
    ),
    Case(
        "free-text-predicate",
        put(*D1, "applicability", "predicates", 0, {"id": "radius > tolerance"}),
        "LINT_PREDICATE_UNREGISTERED",
        "/descriptors/1/applicability/predicates/0/id",
        FILLET,
    ),
    Case(
        "predicate-input-not-a-string",
        put(*D0, "applicability", "predicates", 0, "args", {"input": 5}),
        "LINT_PREDICATE_ARGS_INVALID",
        "/descriptors/0/applicability/predicates/0/args/input",
        BOX,
    ),
    Case(
        "predicate-names-missing-input",
        put(*D0, "preconditions", [{"id": "input.present", "args": {"input": "depth"}}]),
        "LINT_PREDICATE_INPUT_UNKNOWN",
        "/descriptors/0/preconditions/0/args",
        BOX,
    ),
    Case(
        "no-effects", put(*D0, "effects", []), "LINT_EFFECTS_MISSING", "/descriptors/0/effects", BOX
    ),
    Case(
        "read-only-and-additive",
        put(*D2, "effects", ["additive", "readOnly"]),
        "LINT_EFFECTS_CONFLICT",
        "/descriptors/2/effects",
        SKETCH,
    ),
    Case(
        "read-only-operation",
        put(*D2, "effects", ["readOnly"]),
        "LINT_EFFECTS_KIND_MISMATCH",
        "/descriptors/2/effects",
        SKETCH,
    ),
    Case(
        "destructive-read-only-query",
        both(
            put(*D2, "kind", "model.query"),
            drop(*D2, "operationRef"),
            put(*D2, "queryRef", "test.sketch@1.0.0"),
            put(*D2, "effects", ["readOnly"]),
            put(*D2, "risk", "destructive", True),
        ),
        "LINT_RISK_INCONSISTENT",
        "/descriptors/2/risk/destructive",
        SKETCH,
    ),
    Case(
        "pure-with-side-effect",
        append(*D0, "effects", "externalSideEffect"),
        "LINT_PURITY_INCONSISTENT",
        "/descriptors/0/purity",
        BOX,
    ),
    Case(
        "diagnostic-twice",
        append(*D0, "diagnostics", "BOX_DIMENSION_NONPOSITIVE"),
        "LINT_DIAGNOSTIC_DUPLICATE",
        "/descriptors/0/diagnostics/1",
        BOX,
    ),
    Case(
        "failure-mode-undeclared",
        put(*D1, "guidance", "failureModes", 0, "diagnostic", "FILLET_RADIUS_TOO_SMALL"),
        "LINT_FAILURE_MODE_UNDECLARED",
        "/descriptors/1/guidance/failureModes/0/diagnostic",
        FILLET,
    ),
    Case(
        "alternative-to-nowhere",
        put(*D1, "relations", "alternativeTo", ["cap:nowhere.thing@1"]),
        "LINT_UNKNOWN_RELATION_TARGET",
        "/descriptors/1/relations/alternativeTo/0",
        FILLET,
    ),
    Case(
        "alternative-to-bare-name",
        put(*D1, "relations", "alternativeTo", ["test.box"]),
        "LINT_RELATION_TARGET_INVALID",
        "/descriptors/1/relations/alternativeTo/0",
        FILLET,
    ),
    Case(
        "repairs-kebab-diagnostic",
        put(*D1, "relations", "repairsDiagnostic", ["too-big"]),
        "LINT_RELATION_TARGET_INVALID",
        "/descriptors/1/relations/repairsDiagnostic/0",
        FILLET,
    ),
    Case(
        "repair-names-no-code",
        both(_with_repair, put(*D3, "relations", {})),
        "LINT_REPAIR_DIAGNOSTIC_MISSING",
        "/descriptors/3/relations",
        REPAIR,
    ),
    Case(
        "repair-code-the-fillet-never-raises",
        both(_with_repair, put(*D3, "relations", "repairsDiagnostic", ["SOLID_INVALID"])),
        "LINT_REPAIR_DIAGNOSTIC_UNDECLARED",
        "/descriptors/3/patchTemplate/appliesTo/0",
        REPAIR,
    ),
    Case(
        "repair-template-calls-import",
        both(_with_repair, put(*D3, "patchTemplate", "set", {"radius": "__import__('os')"})),
        "LINT_REPAIR_TEMPLATE_INVALID",
        "/descriptors/3/patchTemplate/set/radius",
        REPAIR,
    ),
    Case(
        "alternative-to-itself",
        put(*D1, "relations", "alternativeTo", [FILLET]),
        "LINT_RELATION_SELF",
        "/descriptors/1/relations/alternativeTo/0",
        FILLET,
    ),
    Case(
        "self-asserted-trust",
        put(
            *D0,
            "trust",
            {
                "package": PKG,
                "publisher": "test-vendor",
                "keyId": "0123456789abcdef",
                "signature": "AAAA",
            },
        ),
        "LINT_TRUST_SELF_ASSERTED",
        "/descriptors/0/trust",
        BOX,
    ),
    Case(
        "workflow-without-definition",
        workflow(put("workflows", {})),
        "LINT_WORKFLOW_DEFINITION_MISSING",
        "/descriptors/3/workflowRef",
        WORKFLOW,
    ),
    Case(
        "workflow-unknown-capability",
        workflow(put(*WF, "steps", 1, "capability", "cap:test.nothing@1")),
        "LINT_WORKFLOW_CAPABILITY_UNKNOWN",
        "/workflows/test.plate@1.0.0/steps/1/capability",
        WORKFLOW,
    ),
    Case(
        "workflow-later-step",
        workflow(put(*WF, "steps", 0, "args", "width", {"$step": "round"})),
        "LINT_WORKFLOW_STEP_REFERENCE",
        "/workflows/test.plate@1.0.0/steps/0/args/width",
        WORKFLOW,
    ),
    Case(
        "workflow-shape-from-a-sketch",
        workflow(
            put(*WF, "steps", 0, "capability", SKETCH),
            put(*D2, "outputs", {"schemaRef": SKETCH_IN, "semanticTypes": ["Profile"]}),
            put(
                "schemas",
                "amir://ops/test.fillet/1.0.0/input",
                "properties",
                "target",
                {"type": "string", "x-amir-type": "Shape", "x-amir-accepts": "ExactSolid"},
            ),
        ),
        "LINT_WORKFLOW_TYPE_MISMATCH",
        "/workflows/test.plate@1.0.0/steps/1/args/target",
        WORKFLOW,
    ),
    Case(
        "workflow-expression-reads-an-undeclared-name",
        workflow(put(*WF, "steps", 0, "args", "width", {"$expr": "inset[size]"})),
        "LINT_WORKFLOW_EXPRESSION_INVALID",
        "/workflows/test.plate@1.0.0/steps/0/args/width",
        WORKFLOW,
    ),
    Case(
        "workflow-table-shadows-a-parameter",
        workflow(put(*WF, "tables", "length", {"a": 1})),
        "LINT_WORKFLOW_TEMPLATE_INVALID",
        "/workflows/test.plate@1.0.0/tables/length",
        WORKFLOW,
    ),
]


def test_baseline_manifest_is_lint_clean() -> None:
    """The factory manifest is clean, so every finding below comes from its one mutation."""
    assert lint_codes(manifest()) == []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_rule(case: Case) -> None:
    """Each mistake gets its stable code, a pointer to the field and names its subject."""
    found = lint_codes(mutate(manifest(), case.mutation))
    hits = [d for d in found if d.code == case.code]
    assert hits, f"{case.code} not in {[str(d) for d in found]}"
    assert [d.pointer for d in hits] == [case.pointer]
    (hit,) = hits
    assert hit.subject == case.subject
    assert case.subject in hit.message


def test_every_rule_has_a_case() -> None:
    """A new lint rule cannot ship without a test case in the table above."""
    assert {c.code for c in CASES} == set(RULES)


def test_summary_of_exactly_the_limit_is_fine() -> None:
    """280 characters is still a short summary."""
    assert lint_codes(mutate(manifest(), put(*D0, "summary", "x" * 280))) == []


# -- relation targets in other packages ------------------------------------------------------


def test_relation_to_other_package_unchecked_without_catalog() -> None:
    """Linting a package alone (no catalog known) does not flag relations to other packages."""
    m = mutate(manifest(), put(*D1, "relations", "alternativeTo", ["cap:nowhere.thing@1"]))
    assert lint_codes(m, known=None) == []


def test_relation_to_other_package_checked_against_catalog() -> None:
    """With a catalog, a relation to a capability it lacks is flagged, one it has is not."""
    m = mutate(manifest(), put(*D1, "relations", "alternativeTo", ["cap:nowhere.thing@1"]))
    assert lint_codes(m, known={"cap:nowhere.thing@1"}) == []
    assert [d.code for d in lint_codes(m, known={"cap:other.thing@1"})] == [
        "LINT_UNKNOWN_RELATION_TARGET"
    ]


def test_relation_checks_still_apply_without_catalog() -> None:
    """Even with no catalog, malformed and self relations are still findings."""
    m = mutate(manifest(), put(*D1, "relations", "alternativeTo", [FILLET, "test.box"]))
    assert [d.code for d in lint_codes(m, known=None)] == [
        "LINT_RELATION_SELF",
        "LINT_RELATION_TARGET_INVALID",
    ]


# -- schemas, strict JSON ----------------------------------------------------------------------


def test_schema_not_draft_2020_12() -> None:
    """A schema that is not valid Draft 2020-12 is reported under /schemas, not a crash."""
    m = mutate(manifest(), put("schemas", BOX_IN, {"type": 12}))
    found = lint_codes(m)
    hits = [d for d in found if d.code == "LINT_SCHEMA_INVALID"]
    assert [d.pointer for d in hits] == [f"{BOX_IN_POINTER}/type"]
    assert hits[0].pointer.startswith("/schemas/")
    assert hits[0].subject == PKG


def test_unresolvable_schema_ref_is_a_finding() -> None:
    """A schema $ref pointing nowhere is a lint finding under /schemas, never an exception."""
    m = mutate(
        manifest(), put("schemas", BOX_IN, "properties", "length", {"$ref": "#/$defs/length"})
    )
    found = lint_codes(m)
    hits = [d for d in found if d.code == "LINT_SCHEMA_INVALID"]
    assert [d.pointer for d in hits] == [f"{BOX_IN_POINTER}/properties/length/$ref"]
    assert hits[0].subject == PKG
    assert "#/$defs/length" in hits[0].message


def test_resolvable_schema_ref_is_fine() -> None:
    """A $ref to the schema's own $defs is ordinary JSON Schema and lints clean."""

    def edit(m: dict[str, Any]) -> None:
        schema = m["schemas"][BOX_IN]
        schema["$defs"] = {"length": {"type": "number", "exclusiveMinimum": 0}}
        schema["properties"]["length"] = {"$ref": "#/$defs/length"}

    assert lint_codes(mutate(manifest(), edit)) == []
    broken = mutate(manifest(), both(edit, put(*D0, "inputExamples", 0, "input", "length", -1)))
    assert [(d.code, d.pointer) for d in lint_codes(broken)] == [
        ("LINT_EXAMPLE_SCHEMA_INVALID", "/descriptors/0/inputExamples/0/input/length")
    ]


def test_ref_inside_nested_id_resolves_against_that_id() -> None:
    """A $ref inside a subschema with its own $id resolves there, as jsonschema does."""
    length = {
        "$id": "https://example.com/length",
        "$defs": {"positive": {"type": "number", "exclusiveMinimum": 0}},
        "$ref": "#/$defs/positive",
    }
    m = mutate(manifest(), put("schemas", BOX_IN, "properties", "length", length))
    assert lint_codes(m) == []


def test_ref_key_in_example_data_is_not_a_reference() -> None:
    """A "$ref" key inside a schema's `examples` is data, not a reference to resolve."""
    centered = {"type": "boolean", "examples": [{"$ref": "nowhere"}]}
    m = mutate(manifest(), put("schemas", BOX_IN, "properties", "centered", centered))
    assert lint_codes(m) == []


def _raw_with_duplicate_key() -> bytes:
    return ('{"name": "evil.pkg", ' + json.dumps(manifest())[1:]).encode()


def _raw_with_overflow() -> bytes:
    """A schema default and canonical default of 1e999 (lint compares them canonically)."""
    m = mutate(
        manifest(),
        both(
            put("schemas", BOX_IN, "properties", "scale", {"type": "number", "default": 12345}),
            put(*D0, "defaults", "scale", 12345),
        ),
    )
    return json.dumps(m).replace("12345", "1e999").encode()


def _raw_with_nan() -> bytes:
    m = mutate(manifest(), put(*D0, "inputExamples", 0, "input", "length", float("nan")))
    return json.dumps(m).encode()


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        pytest.param(b'{"name": "test.pkg",', "MANIFEST_NOT_JSON", id="truncated"),
        pytest.param(b'{"name": "\xff"}', "MANIFEST_NOT_JSON", id="not-utf8"),
        pytest.param(_raw_with_nan(), "MANIFEST_NOT_JSON", id="nan"),
        pytest.param(_raw_with_duplicate_key(), "MANIFEST_DUPLICATE_KEY", id="duplicate-key"),
        pytest.param(
            b'{"name": "test.pkg", "n": 9007199254740993}',
            "MANIFEST_NOT_CANONICAL",
            id="integer-beyond-double",
        ),
        pytest.param(
            b'{"name": "test.pkg", "n": ' + b"9" * 5000 + b"}",
            "MANIFEST_NOT_CANONICAL",
            id="integer-beyond-python-digit-limit",
        ),
    ],
)
def test_manifest_bytes_refused(raw: bytes, code: str) -> None:
    """Bytes that are not strict JSON are refused with one code before any model check."""
    found = lint_codes(manifest(), raw=raw)
    assert [d.code for d in found] == [code]
    assert found[0].subject == PKG


def test_overflowing_number_is_refused_like_infinity() -> None:
    """1e999 is Infinity to Python, so it is refused like Infinity, before lint or hashing."""
    assert [d.code for d in lint_codes(manifest(), raw=_raw_with_overflow())] == [
        "MANIFEST_NOT_JSON"
    ]


# -- many descriptors --------------------------------------------------------------------------


def test_300_descriptors_lint_clean() -> None:
    """A large package of correct descriptors produces no findings."""
    n = 300
    descriptors, schemas = [], {}
    for i in range(n):
        d = box_descriptor(f"cap:gen.box{i}@1", f"gen.box{i}@1.0.0")
        d["relations"] = {"composesWith": [f"cap:gen.box{(i + 1) % n}@1"]}
        descriptors.append(d)
        schemas.update(box_schemas(f"gen.box{i}@1.0.0"))
    m = {**manifest(), "descriptors": descriptors, "schemas": schemas}
    assert lint_codes(m) == []
    broken = mutate(m, put("descriptors", 299, "inputExamples", 0, "input", "width", 0))
    assert [(d.code, d.pointer) for d in lint_codes(broken)] == [
        ("LINT_EXAMPLE_SCHEMA_INVALID", "/descriptors/299/inputExamples/0/input/width")
    ]


# -- aira catalog lint ---------------------------------------------------------------------------


def test_cli_lint_clean_package(aira: RunAira, tmp_path: Path) -> None:
    """`aira catalog lint` exits 0 on a clean package."""
    pkg = write_package(tmp_path / "pkg", manifest())
    result = aira("catalog", "lint", str(pkg))
    assert result.returncode == 0, result.stderr
    assert "lint clean" in result.stdout
    as_json = aira("catalog", "lint", "--json", str(pkg))
    assert as_json.returncode == 0
    report = json.loads(as_json.stdout)
    assert report["format"] == "aira.lint/1"
    assert report["ok"] is True
    assert report["findings"] == []


def test_cli_lint_broken_package(aira: RunAira, tmp_path: Path) -> None:
    """A broken package exits 1, prints the code, and --json lists structured findings."""
    m = mutate(manifest(), put(*D0, "inputExamples", 0, "input", "length", -5))
    pkg = write_package(tmp_path / "pkg", m)
    result = aira("catalog", "lint", str(pkg))
    assert result.returncode == 1
    assert "LINT_EXAMPLE_SCHEMA_INVALID" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr

    as_json = aira("catalog", "lint", "--json", str(pkg.joinpath("manifest.json")))
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["format"] == "aira.lint/1"
    assert report["ok"] is False
    assert report["findings"]
    for finding in report["findings"]:
        assert {"code", "message", "pointer", "subject"} <= set(finding)
    assert {
        "code": "LINT_EXAMPLE_SCHEMA_INVALID",
        "subject": BOX,
        "pointer": "/descriptors/0/inputExamples/0/input/length",
    }.items() <= report["findings"][0].items()


def test_cli_lint_prints_a_file_name_as_written(aira: RunAira, tmp_path: Path) -> None:
    """A package's name comes from its file: "[bold]" in it is text, not rich markup."""
    for m in (manifest(), mutate(manifest(), put(*D0, "inputExamples", 0, "input", "length", -5))):
        path = tmp_path / "[bold]pkg.json"
        path.write_text(json.dumps(m))
        result = aira("catalog", "lint", str(path))
        assert "[bold]pkg" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        pytest.param(b'{"name": "test.pkg", "version": ', "MANIFEST_NOT_JSON", id="malformed"),
        pytest.param(_raw_with_duplicate_key(), "MANIFEST_DUPLICATE_KEY", id="duplicate-key"),
        pytest.param(_raw_with_nan(), "MANIFEST_NOT_JSON", id="nan"),
        pytest.param(_raw_with_overflow(), "MANIFEST_NOT_JSON", id="overflow"),
        pytest.param(
            b'{"name": "test.pkg", "n": -' + b"1" * 5000 + b"}",
            "MANIFEST_NOT_CANONICAL",
            id="5000-digit-integer",
        ),
    ],
)
def test_cli_lint_refuses_bad_json(aira: RunAira, tmp_path: Path, raw: bytes, code: str) -> None:
    """Bad manifest bytes give a code and exit 1, never a traceback."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "manifest.json").write_bytes(raw)
    result = aira("catalog", "lint", str(pkg))
    assert result.returncode == 1
    assert code in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    as_json = aira("catalog", "lint", "--json", str(pkg))
    assert as_json.returncode == 1
    assert [f["code"] for f in json.loads(as_json.stdout)["findings"]] == [code]


# -- schemas that would break validation are findings, never exceptions ------------------------


@pytest.mark.parametrize(
    ("length", "extra", "where"),
    [
        pytest.param({"type": "number"}, {"$schema": 5}, "/$schema", id="schema-not-a-string"),
        pytest.param(
            {"type": "number"},
            {"$schema": "http://json-schema.org/draft-07/schema#"},
            "/$schema",
            id="other-draft",
        ),
        pytest.param(
            {"$dynamicRef": "#nope"}, {}, "/properties/length/$dynamicRef", id="dynamic-ref-nowhere"
        ),
        pytest.param(
            {"type": "string", "pattern": "(?<=a+)b"},
            {},
            "/properties/length/pattern",
            id="pattern-python-cannot-compile",
        ),
    ],
)
def test_unusable_schemas_are_findings(length: Any, extra: Any, where: str) -> None:
    def edit(m: dict[str, Any]) -> None:
        m["schemas"][BOX_IN]["properties"]["length"] = length
        m["schemas"][BOX_IN].update(extra)

    found = lint_codes(mutate(manifest(), edit))
    assert [(d.code, d.pointer) for d in found] == [("LINT_SCHEMA_INVALID", BOX_IN_POINTER + where)]


def test_ref_cycle_is_a_finding_not_a_recursion_error() -> None:
    def edit(m: dict[str, Any]) -> None:
        schema = m["schemas"][BOX_IN]
        schema["$defs"] = {"x": {"$ref": "#/$defs/x"}}
        schema["properties"]["length"] = {"$ref": "#/$defs/x"}

    found = lint_codes(mutate(manifest(), edit))
    assert [(d.code, d.pointer) for d in found] == [
        ("LINT_SCHEMA_INVALID", "/descriptors/0/inputs/schemaRef")
    ]


def test_deeply_nested_manifest_is_refused_cleanly() -> None:
    raw = b"[" * 100_000 + b"]" * 100_000
    assert [d.code for d in lint_codes(manifest(), raw=raw)] == ["MANIFEST_NOT_JSON"]
