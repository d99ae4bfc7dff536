"""Lint: every field rule of RFC-0002 §4.1, §4.2 and §6.2 as a rule with a stable code.

Each finding names the descriptor and a JSON pointer into the manifest. Schemas, examples
and bindings are checked with jsonschema (Draft 2020-12); one validator is compiled per
schema and reused, so linting a thousand descriptors stays fast.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from jsonschema import Draft202012Validator
from pydantic import ValidationError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from aira_core.canonical import canonical_bytes
from aira_core.catalog.predicates import PREDICATES, referenced_inputs
from aira_core.codes import meanings
from aira_core.contracts.base import DIAGNOSTIC_CODE_PATTERN
from aira_core.contracts.capability import (
    CAPABILITY_ID_PATTERN,
    CAPABILITY_RELATIONS,
    REPAIR_TEMPLATE_NAMES,
    WRITING_KINDS,
    CapabilityDescriptor,
    CapabilityKind,
    Effect,
    Predicate,
    Purity,
    RelationType,
)
from aira_core.contracts.package import PackageManifest
from aira_core.diagnostics import Diagnostic, FindingCap, json_pointer

SUMMARY_MAX_CHARS = 280

# Which execution targets fit which kind (§5.1, §6.1).
TARGETS_BY_KIND: dict[CapabilityKind, frozenset[str]] = {
    CapabilityKind.AUTHORING_OPERATION: frozenset({"operationRef", "patchTemplateRef"}),
    CapabilityKind.MODEL_QUERY: frozenset({"queryRef"}),
    CapabilityKind.WORKFLOW: frozenset({"workflowRef"}),
    CapabilityKind.VALIDATOR: frozenset({"validatorRef"}),
    CapabilityKind.CONVERTER: frozenset({"operationRef", "ioRef"}),
    CapabilityKind.REPAIR: frozenset({"patchTemplateRef", "workflowRef"}),
    CapabilityKind.IMPORTER: frozenset({"ioRef"}),
    CapabilityKind.EXPORTER: frozenset({"ioRef"}),
}
READ_ONLY_KINDS = frozenset({CapabilityKind.MODEL_QUERY, CapabilityKind.VALIDATOR})
# A repair proposes candidate patches and never writes itself (§5.1), so it is in neither
# READ_ONLY_KINDS nor WRITING_KINDS.

_SCHEMA_REF_TARGET = re.compile(r"^amir://[a-z]+/(?P<name>[^/]+)/(?P<version>[^/]+)/[^/]+$")
_CAP_ID = re.compile(CAPABILITY_ID_PATTERN)
_DIAG_CODE = re.compile(DIAGNOSTIC_CODE_PATTERN)

# The rule codes (documented in docs/catalog.md and docs/codes.md): the lint phase of the
# code registry, which holds their meanings.
RULES: dict[str, str] = meanings("lint")


# -- pydantic errors of the descriptor contract, as lint findings ---------------------------


def _lint_code(err: Any) -> str:
    kind: str = err["type"]
    if kind.startswith("LINT_"):
        return kind
    loc = [str(p) for p in err["loc"]]
    names = [p for p in loc if not p.isdigit()]
    last = names[-1] if names else ""
    if kind == "missing":
        return "LINT_FIELD_MISSING"
    if kind == "extra_forbidden":
        return "LINT_FIELD_UNKNOWN"
    if last == "capabilityId":
        return "LINT_CAPABILITY_ID_INVALID"
    if last.endswith("Ref") and last != "schemaRef":
        return "LINT_TARGET_REF_INVALID"
    if "taxonomy" in names and last == "primary":
        return "LINT_TAXONOMY_UNKNOWN"
    if names == ["descriptors", "kind"]:
        return "LINT_KIND_UNKNOWN"
    if "relations" in names and "[key]" in names:
        return "LINT_RELATION_UNKNOWN"
    if last == "diagnostics" or "diagnostic" in names:
        return "LINT_DIAGNOSTIC_CODE_INVALID"
    if last in {"version", "profileVersion"}:
        return "LINT_VERSION_INVALID"
    return "LINT_FIELD_INVALID"


def _descriptor_id(raw: Any, loc: tuple[Any, ...]) -> str | None:
    if len(loc) >= 2 and loc[0] == "descriptors" and isinstance(loc[1], int):
        try:
            cap = raw["descriptors"][loc[1]].get("capabilityId")
        except (KeyError, IndexError, TypeError, AttributeError):
            return None
        return cap if isinstance(cap, str) else None
    return None


def validation_diagnostics(exc: ValidationError, raw: Any, package: str) -> list[Diagnostic]:
    """The manifest model's errors as lint findings, capped (:class:`FindingCap`): only the
    findings listed are built, so 200,000 unknown keys cost little more than one."""
    out = []
    cap = FindingCap(subject=package)
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        if not cap.keep(_lint_code(err)):
            continue
        loc = tuple(p for p in err["loc"] if p != "[key]")
        subject = _descriptor_id(raw, loc) or package
        pointer = json_pointer(list(loc))
        out.append(
            Diagnostic(
                code=_lint_code(err),
                subject=subject,
                pointer=pointer or None,
                message=f"{subject} {pointer or '/'}: {err['msg']}",
            )
        )
    return out + cap.summary()


@dataclass
class _Ctx:
    manifest: PackageManifest
    validators: dict[str, Draft202012Validator]
    known: set[str] | None


class _Finding(NamedTuple):
    """A finding not yet made a :class:`Diagnostic`: :func:`lint_manifest` builds only the
    ones its :class:`FindingCap` lists (building one redacts its message, which costs)."""

    code: str
    cap: str
    parts: tuple[str | int, ...]
    message: str

    def diagnostic(self) -> Diagnostic:
        pointer = json_pointer(list(self.parts))
        return Diagnostic(
            code=self.code,
            subject=self.cap,
            pointer=pointer,
            message=f"{self.cap} {pointer}: {self.message}",
        )


def _diag(code: str, cap: str, parts: Iterable[str | int], message: str) -> _Finding:
    return _Finding(code, cap, tuple(parts), message)


# Draft 2020-12 keywords whose values are subschemas (so "$ref" inside "examples", "const",
# "default" or "enum" is data, not a reference).
_SUBSCHEMA = frozenset(
    {
        "items",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "additionalProperties",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "dependentSchemas"})
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

Problem = tuple[tuple[str | int, ...], str]


@functools.cache
def _metaschema_validator() -> Any:
    # The Draft 2020-12 metaschema check is ~1.4 ms per schema in jsonschema (its dynamic
    # references are resolved in Python) and ~3 µs in jsonschema-rs; a package of a
    # thousand operations has two thousand schemas. Instances are still validated with
    # jsonschema, for its error paths.
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator({"$ref": _DRAFT_2020_12}, validate_formats=True)


def schema_problems(schema: dict[str, Any]) -> list[Problem]:
    """Why a package schema cannot be used, as ``(path in the schema, message)`` pairs:
    not Draft 2020-12, not valid against its metaschema, a ``$ref`` that does not resolve
    inside the schema, or a ``pattern`` that Python's ``re`` (which validates instances)
    cannot compile."""
    declared = schema.get("$schema")
    if declared is not None and (
        not isinstance(declared, str) or declared.rstrip("#") != _DRAFT_2020_12
    ):
        return [(("$schema",), f"package schemas are Draft 2020-12, not {declared!r}")]
    problems = [
        (tuple(e.instance_path), e.message) for e in _metaschema_validator().iter_errors(schema)
    ]
    if problems:
        return problems
    registry = Registry().with_resource("", DRAFT202012.create_resource(schema)).crawl()

    def walk(node: Any, path: tuple[str | int, ...], resolver: Any) -> None:
        if not isinstance(node, dict):
            return
        if isinstance(node.get("$id"), str):  # a nested $id moves the base of its $refs
            resolver = resolver.in_subresource(DRAFT202012.create_resource(node))
        for keyword in ("$ref", "$dynamicRef"):
            target = node.get(keyword)
            if not isinstance(target, str):
                continue
            try:
                resolver.lookup(target)
            except Unresolvable:
                problems.append(
                    (
                        (*path, keyword),
                        f"{keyword} {target!r} does not resolve inside the schema "
                        "(package schemas are self-contained)",
                    )
                )
        patterns = [((*path, "pattern"), node.get("pattern"))] + [
            ((*path, "patternProperties", p), p) for p in node.get("patternProperties") or {}
        ]
        for where, pattern in patterns:
            if isinstance(pattern, str):
                try:
                    re.compile(pattern)
                except re.error as exc:
                    problems.append((where, f"pattern {pattern!r} does not compile: {exc}"))
        for key, value in node.items():
            if key in _SUBSCHEMA:
                walk(value, (*path, key), resolver)
            elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
                for i, sub in enumerate(value):
                    walk(sub, (*path, key, i), resolver)
            elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
                for name, sub in value.items():
                    walk(sub, (*path, key, name), resolver)

    walk(schema, (), registry.resolver())
    return problems


def _compile_schemas(
    manifest: PackageManifest,
) -> tuple[dict[str, Draft202012Validator], list[_Finding]]:
    validators: dict[str, Draft202012Validator] = {}
    out: list[_Finding] = []
    for ref, schema in manifest.schemas.items():
        problems = schema_problems(schema)
        for path, message in problems:
            out.append(
                _diag(
                    "LINT_SCHEMA_INVALID",
                    manifest.name,
                    ["schemas", ref, *path],
                    f"schema {ref!r} is not a usable Draft 2020-12 schema: {message}",
                )
            )
        if not problems:
            validators[ref] = Draft202012Validator(schema)
    return validators, out


def lint_manifest(
    manifest: PackageManifest, *, known_capabilities: set[str] | None = None
) -> list[Diagnostic]:
    """Lint a parsed manifest. ``known_capabilities`` is the set of capability ids a relation
    may point at besides the package's own; ``None`` means other packages are not known, and
    relations to them are not checked."""
    cap = FindingCap(subject=manifest.name)  # 5,000 duplicate aliases: the first 20, a count
    listed = [f.diagnostic() for f in _findings(manifest, known_capabilities) if cap.keep(f.code)]
    return listed + cap.summary()


def _findings(manifest: PackageManifest, known_capabilities: set[str] | None) -> Iterator[_Finding]:
    validators, compiled = _compile_schemas(manifest)
    yield from compiled
    own = {d.capability_id for d in manifest.descriptors}
    known = None if known_capabilities is None else known_capabilities | own
    ctx = _Ctx(manifest, validators, known)
    seen: set[str] = set()
    for i, d in enumerate(manifest.descriptors):
        base = ("descriptors", i)
        if d.capability_id in seen:
            yield _diag(
                "LINT_CAPABILITY_DUPLICATE",
                d.capability_id,
                [*base, "capabilityId"],
                "this capability id is declared more than once in the package",
            )
        seen.add(d.capability_id)
        yield from _lint_descriptor(ctx, d, base)
    yield from _lint_workflows(ctx)


def _lint_descriptor(
    ctx: _Ctx, d: CapabilityDescriptor, base: tuple[str | int, ...]
) -> Iterator[_Finding]:
    cap = d.capability_id
    yield from _lint_target(d, base)
    yield from _lint_schemas(ctx, d, base)
    in_schema = ctx.manifest.schemas.get(d.inputs.schema_ref)
    validator = ctx.validators.get(d.inputs.schema_ref)
    inputs: set[str] | None = None
    if isinstance(in_schema, dict) and validator is not None:
        props = in_schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = set(in_schema.get("required", []) or [])
        inputs = set(props)
        try:
            # Materialised here so a broken schema becomes one finding, not an exception.
            findings = [
                *_lint_defaults(d, base, validator, props, required),
                *_lint_examples(d, base, validator, required),
            ]
        except _SchemaBroken as exc:
            findings = [
                _diag(
                    "LINT_SCHEMA_INVALID",
                    cap,
                    [*base, "inputs", "schemaRef"],
                    f"input schema {d.inputs.schema_ref!r} cannot validate values: {exc}",
                )
            ]
        yield from findings
    for path, preds in (
        ((*base, "applicability", "predicates"), d.applicability.predicates),
        ((*base, "preconditions"), d.preconditions),
        ((*base, "postconditions"), d.postconditions),
    ):
        yield from _lint_predicates(cap, path, preds, inputs)
    yield from _lint_profile(d, base)
    yield from _lint_effects(d, base)
    yield from _lint_diagnostics(d, base)
    yield from _lint_relations(ctx, d, base)
    yield from _lint_repair(ctx, d, base)
    if d.trust is not None:
        yield _diag(
            "LINT_TRUST_SELF_ASSERTED",
            cap,
            [*base, "trust"],
            "a manifest may not declare its own trust; the catalog fills it in",
        )


def _lint_repair(
    ctx: _Ctx, d: CapabilityDescriptor, base: tuple[str | int, ...]
) -> Iterator[_Finding]:
    """A repair names the codes it repairs and, with a patchTemplateRef, carries a
    well-formed template (aira_core.runtime.repairs); nothing else carries a template."""
    cap, template = d.capability_id, d.patch_template
    codes = d.relations.get(RelationType.REPAIRS_DIAGNOSTIC, [])
    if d.kind is not CapabilityKind.REPAIR:
        if template is not None:
            yield _diag(
                "LINT_REPAIR_TEMPLATE_INVALID",
                cap,
                [*base, "patchTemplate"],
                f"only a repair carries a patchTemplate, not a {d.kind.value}",
            )
        return
    if not codes:
        yield _diag(
            "LINT_REPAIR_DIAGNOSTIC_MISSING",
            cap,
            [*base, "relations"],
            "a repair names the diagnostic codes it repairs in relations.repairsDiagnostic",
        )
    if d.patch_template_ref is not None and template is None:
        yield _diag(
            "LINT_REPAIR_TEMPLATE_INVALID",
            cap,
            [*base, "patchTemplateRef"],
            "a repair with a patchTemplateRef declares its patchTemplate",
        )
    if template is None:
        return
    at = (*base, "patchTemplate")
    exprs = [((*at, "when"), template.when)] if template.when is not None else []
    exprs += [((*at, "set", k), v) for k, v in template.set.items()]
    yield from _lint_expressions("LINT_REPAIR_TEMPLATE_INVALID", cap, exprs, REPAIR_TEMPLATE_NAMES)
    # the codes a repaired capability of this package declares are known: a repair of one
    # of them for a code it never raises could never apply
    declared = {x.capability_id: set(x.diagnostics) for x in ctx.manifest.descriptors}
    for k, target in enumerate(template.applies_to):
        missing = sorted(set(codes) - declared[target]) if target in declared else []
        if missing:
            yield _diag(
                "LINT_REPAIR_DIAGNOSTIC_UNDECLARED",
                cap,
                [*base, "patchTemplate", "appliesTo", k],
                f"{target} declares no {', '.join(missing)}",
            )


def _lint_target(d: CapabilityDescriptor, base: tuple[str | int, ...]) -> Iterator[_Finding]:
    field, _ = d.target
    allowed = TARGETS_BY_KIND[d.kind]
    if field not in allowed:
        yield _diag(
            "LINT_TARGET_KIND_MISMATCH",
            d.capability_id,
            [*base, field],
            f"a {d.kind.value} capability uses {' or '.join(sorted(allowed))}, not {field}",
        )


def _lint_schemas(
    ctx: _Ctx, d: CapabilityDescriptor, base: tuple[str | int, ...]
) -> Iterator[_Finding]:
    _, target_ref = d.target
    for part, io in (("inputs", d.inputs), ("outputs", d.outputs)):
        if io is None:
            continue
        pointer = [*base, part, "schemaRef"]
        if io.schema_ref not in ctx.manifest.schemas:
            yield _diag(
                "LINT_SCHEMA_REF_UNRESOLVED",
                d.capability_id,
                pointer,
                f"schemaRef {io.schema_ref!r} is not among the package's schemas",
            )
            continue
        m = _SCHEMA_REF_TARGET.match(io.schema_ref)
        if m and f"{m['name']}@{m['version']}" != target_ref:
            yield _diag(
                "LINT_SCHEMA_REF_TARGET_MISMATCH",
                d.capability_id,
                pointer,
                f"schemaRef {io.schema_ref!r} belongs to {m['name']}@{m['version']}, "
                f"but the target is {target_ref}",
            )
    schema = ctx.manifest.schemas.get(d.inputs.schema_ref)
    if schema is not None and schema.get("type") != "object":
        yield _diag(
            "LINT_INPUT_SCHEMA_NOT_OBJECT",
            d.capability_id,
            [*base, "inputs", "schemaRef"],
            f'input schema {d.inputs.schema_ref!r} must have "type": "object"',
        )


class _SchemaBroken(Exception):
    """A schema that passed the static checks still broke validation (e.g. a ``$ref``
    cycle that never consumes input); reported as a finding, never raised to the caller."""


def _errors(validator: Draft202012Validator, value: Any) -> list[Any]:
    """Validation errors sorted by path."""
    try:
        return sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.path])
    except (Unresolvable, RecursionError, re.error) as exc:
        raise _SchemaBroken(f"{type(exc).__name__}: {exc}") from None


def _first_error(validator: Draft202012Validator, value: Any) -> Any:
    return next(iter(_errors(validator, value)), None)


def _shape(value: Any) -> Any:
    """The shape of a JSON value: its type, and for objects their keys, for arrays length."""
    if isinstance(value, dict):
        return ("object", frozenset(value))
    if isinstance(value, list):
        return ("array", len(value))
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _other_schema_default(prop: Any, value: Any) -> bool:
    """Whether the property's schema declares a ``default`` other than ``value``."""
    return (
        isinstance(prop, dict)
        and "default" in prop
        and canonical_bytes(prop["default"]) != canonical_bytes(value)
    )


def _lint_defaults(
    d: CapabilityDescriptor,
    base: tuple[str | int, ...],
    validator: Draft202012Validator,
    props: dict[str, Any],
    required: set[str],
) -> Iterator[_Finding]:
    cap = d.capability_id
    for key, value in d.defaults.items():
        pointer = [*base, "defaults", key]
        if key not in props:
            yield _diag(
                "LINT_DEFAULT_UNKNOWN_INPUT",
                cap,
                pointer,
                f"input {key!r} is not a property of the input schema",
            )
            continue
        if key in required:
            yield _diag(
                "LINT_DEFAULT_ON_REQUIRED",
                cap,
                pointer,
                f"input {key!r} is required; canonical defaults are for optional inputs "
                "(use defaultBinding for a copyable value of a required input)",
            )
        err = _first_error(validator.evolve(schema=props[key]), value)
        if err is not None:
            yield _diag(
                "LINT_DEFAULT_INVALID",
                cap,
                [*pointer, *err.path],
                f"default for {key!r} fails its schema: {err.message}",
            )
        if _other_schema_default(props[key], value):
            yield _diag(
                "LINT_DEFAULT_SCHEMA_MISMATCH",
                cap,
                pointer,
                f"the input schema declares default {props[key]['default']!r} for "
                f"{key!r}, the descriptor {value!r}; keep one canonical default",
            )
    for key, value in d.default_binding.items():
        pointer = [*base, "defaultBinding", key]
        if key not in props or key not in required:
            yield _diag(
                "LINT_DEFAULT_BINDING_NOT_REQUIRED",
                cap,
                pointer,
                f"input {key!r} is not a required property of the input schema",
            )
            continue
        err = _first_error(validator.evolve(schema=props[key]), value)
        if err is not None:
            yield _diag(
                "LINT_DEFAULT_BINDING_INVALID",
                cap,
                [*pointer, *err.path],
                f"defaultBinding for {key!r} fails its schema: {err.message}",
            )
        if key in d.defaults:
            yield _diag(
                "LINT_DEFAULT_BINDING_CONFLICT",
                cap,
                pointer,
                f"{key!r} has both a canonical default and a defaultBinding",
            )
        elif _other_schema_default(props[key], value):
            yield _diag(
                "LINT_DEFAULT_BINDING_CONFLICT",
                cap,
                pointer,
                f"the input schema hides a second default for {key!r}",
            )
        for j, example in enumerate(d.input_examples):
            if key in example.input and _shape(example.input[key]) != _shape(value):
                yield _diag(
                    "LINT_DEFAULT_BINDING_CONFLICT",
                    cap,
                    [*base, "inputExamples", j, "input", key],
                    f"the example gives {key!r} another shape than its defaultBinding; "
                    "examples must not invent an input shape",
                )


def _lint_examples(
    d: CapabilityDescriptor,
    base: tuple[str | int, ...],
    validator: Draft202012Validator,
    required: set[str],
) -> Iterator[_Finding]:
    if required and not d.input_examples:
        yield _diag(
            "LINT_INPUT_EXAMPLE_MISSING",
            d.capability_id,
            [*base, "inputExamples"],
            f"inputs {sorted(required)} are required but the profile has no complete, "
            "copyable input example",
        )
    for j, example in enumerate(d.input_examples):
        for err in _errors(validator, example.input):
            yield _diag(
                "LINT_EXAMPLE_SCHEMA_INVALID",
                d.capability_id,
                [*base, "inputExamples", j, "input", *err.path],
                f"input example {j} fails the input schema: {err.message}",
            )


_PREDICATE_VALIDATORS = {pid: Draft202012Validator(p.args_schema) for pid, p in PREDICATES.items()}


def _lint_predicates(
    cap: str, path: tuple[str | int, ...], predicates: list[Predicate], inputs: set[str] | None
) -> Iterator[_Finding]:
    for k, pred in enumerate(predicates):
        pointer = [*path, k]
        validator = _PREDICATE_VALIDATORS.get(pred.id)
        if validator is None:
            yield _diag(
                "LINT_PREDICATE_UNREGISTERED",
                cap,
                [*pointer, "id"],
                f"predicate {pred.id!r} is not registered; registered: "
                f"{', '.join(sorted(PREDICATES))}",
            )
            continue
        err = _first_error(validator, pred.args)
        if err is not None:
            yield _diag(
                "LINT_PREDICATE_ARGS_INVALID",
                cap,
                [*pointer, "args", *err.path],
                f"arguments of {pred.id!r}: {err.message}",
            )
            continue
        for name in referenced_inputs(pred.args):
            if inputs is not None and name not in inputs:
                yield _diag(
                    "LINT_PREDICATE_INPUT_UNKNOWN",
                    cap,
                    [*pointer, "args"],
                    f"predicate {pred.id!r} refers to input {name!r}, which the input "
                    "schema does not define",
                )


def _lint_profile(d: CapabilityDescriptor, base: tuple[str | int, ...]) -> Iterator[_Finding]:
    cap = d.capability_id
    if not d.intent_examples:
        yield _diag(
            "LINT_INTENT_EXAMPLES_MISSING",
            cap,
            [*base, "intentExamples"],
            "the profile has no intent example",
        )
    if len(d.summary) > SUMMARY_MAX_CHARS:
        yield _diag(
            "LINT_SUMMARY_TOO_LONG",
            cap,
            [*base, "summary"],
            f"summary has {len(d.summary)} characters; at most {SUMMARY_MAX_CHARS}",
        )
    seen: set[str] = set()
    for k, alias in enumerate(d.aliases):
        folded = alias.casefold()
        if folded in seen:
            yield _diag(
                "LINT_ALIAS_DUPLICATE", cap, [*base, "aliases", k], f"alias {alias!r} appears twice"
            )
        seen.add(folded)


def _lint_effects(d: CapabilityDescriptor, base: tuple[str | int, ...]) -> Iterator[_Finding]:
    cap = d.capability_id
    effects = set(d.effects)
    pointer = [*base, "effects"]
    if not effects:
        yield _diag(
            "LINT_EFFECTS_MISSING",
            cap,
            pointer,
            "declare what the capability does (readOnly, additive, changesTopology, "
            "changesAuthority, externalSideEffect, createsFeature)",
        )
        return
    if Effect.READ_ONLY in effects and len(effects) > 1:
        yield _diag(
            "LINT_EFFECTS_CONFLICT", cap, pointer, "readOnly cannot be combined with other effects"
        )
    if d.kind in READ_ONLY_KINDS and effects != {Effect.READ_ONLY}:
        yield _diag(
            "LINT_EFFECTS_KIND_MISMATCH",
            cap,
            pointer,
            f'a {d.kind.value} never writes; its effects are ["readOnly"]',
        )
    if d.kind in WRITING_KINDS and Effect.READ_ONLY in effects:
        yield _diag(
            "LINT_EFFECTS_KIND_MISMATCH",
            cap,
            pointer,
            f"a {d.kind.value} changes the model; it cannot be readOnly",
        )
    if d.kind is CapabilityKind.EXPORTER and Effect.EXTERNAL_SIDE_EFFECT not in effects:
        yield _diag(
            "LINT_EFFECTS_KIND_MISMATCH",
            cap,
            pointer,
            "an exporter writes outside the model: declare externalSideEffect",
        )
    if d.risk.destructive and effects == {Effect.READ_ONLY}:
        yield _diag(
            "LINT_RISK_INCONSISTENT",
            cap,
            [*base, "risk", "destructive"],
            "a readOnly capability cannot be destructive",
        )
    if d.purity is Purity.PURE and Effect.EXTERNAL_SIDE_EFFECT in effects:
        yield _diag(
            "LINT_PURITY_INCONSISTENT",
            cap,
            [*base, "purity"],
            "a capability with external side effects is not pure",
        )


def _lint_diagnostics(d: CapabilityDescriptor, base: tuple[str | int, ...]) -> Iterator[_Finding]:
    seen: set[str] = set()
    for k, code in enumerate(d.diagnostics):
        if code in seen:
            yield _diag(
                "LINT_DIAGNOSTIC_DUPLICATE",
                d.capability_id,
                [*base, "diagnostics", k],
                f"diagnostic {code} is declared twice",
            )
        seen.add(code)
    for k, mode in enumerate(d.guidance.failure_modes):
        if mode.diagnostic not in seen:
            yield _diag(
                "LINT_FAILURE_MODE_UNDECLARED",
                d.capability_id,
                [*base, "guidance", "failureModes", k, "diagnostic"],
                f"{mode.diagnostic} is explained but not declared in diagnostics",
            )


def _lint_relations(
    ctx: _Ctx, d: CapabilityDescriptor, base: tuple[str | int, ...]
) -> Iterator[_Finding]:
    cap = d.capability_id
    for relation, targets in d.relations.items():
        for k, target in enumerate(targets):
            pointer = [*base, "relations", relation.value, k]
            if relation is RelationType.REPAIRS_DIAGNOSTIC:
                if not _DIAG_CODE.match(target):
                    yield _diag(
                        "LINT_RELATION_TARGET_INVALID",
                        cap,
                        pointer,
                        f"repairsDiagnostic names diagnostic codes; {target!r} is not one",
                    )
                continue
            if relation not in CAPABILITY_RELATIONS or (
                relation is RelationType.REQUIRES and not target.startswith("cap:")
            ):
                continue
            if not _CAP_ID.match(target):
                yield _diag(
                    "LINT_RELATION_TARGET_INVALID",
                    cap,
                    pointer,
                    f"{relation.value} names capabilities; {target!r} is not a "
                    "capability id cap:<dotted.name>@<major>",
                )
            elif target == cap:
                yield _diag("LINT_RELATION_SELF", cap, pointer, f"{cap} {relation.value} itself")
            elif ctx.known is not None and target not in ctx.known:
                yield _diag(
                    "LINT_UNKNOWN_RELATION_TARGET",
                    cap,
                    pointer,
                    f"{relation.value} names {target}, which is not in the catalog",
                )


# -- workflow definitions (docs/workflows.md) -------------------------------------------------

# Kinds whose steps make a shape another step can take ({"step": id} on a Shape input).
_SHAPE_KINDS = frozenset({CapabilityKind.AUTHORING_OPERATION, CapabilityKind.IMPORTER})


def _template_values(
    value: Any, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every JSON value of a template, with its path (objects and lists walked)."""
    yield path, value
    if isinstance(value, dict) and not (len(value) == 1 and "$expr" in value):
        for k, v in value.items():
            yield from _template_values(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _template_values(v, (*path, i))


def _lint_expressions(
    rule: str,
    cap: str,
    exprs: Iterable[tuple[tuple[str | int, ...], Any]],
    known: Collection[str],
) -> Iterator[_Finding]:
    """A finding of ``rule`` for each expression the language refuses, or that reads a name
    but ``known`` (a workflow's parameters and tables, a repair's args, expected, actual)."""
    from aira_core.catalog import expressions

    for path, text in exprs:
        try:
            expressions.check(text, known)
        except expressions.ExpressionError as exc:
            yield _diag(rule, cap, path, f"{exc.code}: {exc.message}")


def _lint_workflows(ctx: _Ctx) -> Iterator[_Finding]:
    """Each workflow descriptor has its definition; each definition names existing
    capabilities (of the package, or of the catalog it is admitted to), refers only to
    earlier template steps, feeds Shape inputs from steps that make shapes, and its
    expressions parse and read only the declared parameters and tables."""
    m = ctx.manifest
    own = {d.capability_id: d for d in m.descriptors}
    users = {d.workflow_ref: d for d in m.descriptors if d.workflow_ref is not None}
    for i, d in enumerate(m.descriptors):
        if d.kind is CapabilityKind.WORKFLOW and d.workflow_ref not in m.workflows:
            yield _diag(
                "LINT_WORKFLOW_DEFINITION_MISSING",
                d.capability_id,
                ["descriptors", i, "workflowRef"],
                f"no definition {d.workflow_ref} in the package's workflows",
            )
    for ref, definition in m.workflows.items():
        base: tuple[str | int, ...] = ("workflows", ref)
        d = users.get(ref)
        if d is None:
            yield _diag(
                "LINT_WORKFLOW_TEMPLATE_INVALID",
                m.name,
                base,
                f"no descriptor of the package has workflowRef {ref}",
            )
            continue
        cap = d.capability_id
        schema = m.schemas.get(d.inputs.schema_ref)
        props = schema.get("properties") if isinstance(schema, dict) else None
        params = set(props) if isinstance(props, dict) else set()
        tables = set(definition.tables)
        for name in sorted(params & tables):
            yield _diag(
                "LINT_WORKFLOW_TEMPLATE_INVALID",
                cap,
                [*base, "tables", name],
                f"{name!r} is both a parameter and a table",
            )
        declared = params | tables
        made: dict[str, CapabilityDescriptor | None] = {}
        for k, t in enumerate(definition.steps):
            where = (*base, "steps", k)
            if t.id in made:
                yield _diag(
                    "LINT_WORKFLOW_STEP_REFERENCE",
                    cap,
                    [*where, "id"],
                    f"template step id {t.id!r} twice",
                )
            named = own.get(t.capability)
            if named is None and ctx.known is not None and t.capability not in ctx.known:
                yield _diag(
                    "LINT_WORKFLOW_CAPABILITY_UNKNOWN",
                    cap,
                    [*where, "capability"],
                    f"template step {t.id!r} names {t.capability}, which is neither in the "
                    "package nor in the catalog",
                )
            elif named is not None and named.kind is CapabilityKind.WORKFLOW:
                yield _diag(
                    "LINT_WORKFLOW_TEMPLATE_INVALID",
                    cap,
                    [*where, "capability"],
                    f"template step {t.id!r} names the workflow {t.capability}: "
                    "workflows do not nest",
                )
            for dep_k, dep in enumerate(t.depends_on):
                if dep not in made:
                    yield _diag(
                        "LINT_WORKFLOW_STEP_REFERENCE",
                        cap,
                        [*where, "dependsOn", dep_k],
                        f"{dep!r} is not an earlier template step",
                    )
            named_schema = m.schemas.get(named.inputs.schema_ref) if named is not None else None
            named_props = named_schema.get("properties") if isinstance(named_schema, dict) else {}
            exprs = [((*where, "when"), t.when)] if t.when is not None else []
            for path, value in _template_values(t.args, (*where, "args")):
                if isinstance(value, dict) and len(value) == 1 and "$expr" in value:
                    exprs.append((path, value["$expr"]))
                elif (
                    isinstance(value, dict)
                    and len(value) == 1
                    and ("$step" in value or "step" in value)
                ):
                    target = value.get("$step", value.get("step"))
                    if target not in made:
                        yield _diag(
                            "LINT_WORKFLOW_STEP_REFERENCE",
                            cap,
                            path,
                            f"{target!r} is not an earlier template step",
                        )
                        continue
                    prop = (
                        named_props.get(path[-1])
                        if isinstance(named_props, dict) and len(path) == len(where) + 2
                        else None
                    )
                    if (
                        "step" in value
                        and isinstance(prop, dict)
                        and prop.get("x-amir-type") == "Shape"
                    ):
                        source = made[target]
                        accepts = prop.get("x-amir-accepts")
                        outputs = (
                            set(source.outputs.semantic_types)
                            if source and source.outputs
                            else set()
                        )
                        if source is not None and (
                            source.kind not in _SHAPE_KINDS
                            or (isinstance(accepts, str) and outputs and accepts not in outputs)
                        ):
                            yield _diag(
                                "LINT_WORKFLOW_TYPE_MISMATCH",
                                cap,
                                path,
                                f"{path[-1]} takes {accepts or 'a shape'}; "
                                f"template step {target!r} "
                                f"({source.kind.value} {source.capability_id}) makes "
                                f"{', '.join(sorted(outputs)) or 'no shape'}",
                            )
            if isinstance(t.label, dict):
                for path, value in _template_values(t.label, (*where, "label")):
                    if isinstance(value, dict) and len(value) == 1 and "$expr" in value:
                        exprs.append((path, value["$expr"]))
            yield from _lint_expressions("LINT_WORKFLOW_EXPRESSION_INVALID", cap, exprs, declared)
            made[t.id] = named
        if definition.result is not None and definition.result not in made:
            yield _diag(
                "LINT_WORKFLOW_STEP_REFERENCE",
                cap,
                [*base, "result"],
                f"result {definition.result!r} is not a template step",
            )
