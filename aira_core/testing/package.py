"""A FAKE capability package for tests: the vocabulary of the fake kernel, and builders for
packages and their implementations.

:func:`fake_kernel_manifest` is a lint-clean ``aira.capability-package/1`` manifest that
declares what :class:`aira_core.testing.kernel.FakeGeometryKernel` computes: an exact box,
a mesh box, a vertical-edge fillet, a volume-range validator, a mass-properties query and
the two parameter patch templates, with input schemas that carry ``x-amir-type``.
:func:`fake_implementations` gives accept-all stand-ins for the targets of any manifest;
:func:`package_findings` says what admission would find wrong with a package (a vendor's own
tests use it).
None of this is a product: it exists so tests can admit packages through the real catalog.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from aira_core.contracts.amir import ParamType
from aira_core.contracts.capability import TARGET_FIELDS, SemanticOperationDescriptor
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import CapabilityPackageSource, Implementation, TargetImplementation


class Signs(Protocol):
    """What signs a package here: :class:`~aira_core.testing.signing.ThrowawaySigner`."""

    def sign(self, manifest: Mapping[str, Any]) -> bytes: ...


PACKAGE = "test.runtime"
PUBLISHER = "test-vendor"

# Operation refs: what the fake kernel computes.
BOX = "exact.box@1.0.0"
MESH_BOX = "mesh.box@1.0.0"
FILLET = "exact.fillet@1.0.0"
VOLUME_RANGE = "validate.volumeRange@1.0.0"
MASS_PROPERTIES = "query.massProperties@1.0.0"
PARAMETER_DEFINE = "parameter.define@1.0.0"
PARAMETER_SET = "parameter.set@1.0.0"

# Capability ids: what a plan step names.
BOX_CAP = "cap:exact.box@1"
MESH_BOX_CAP = "cap:mesh.box@1"
FILLET_CAP = "cap:exact.fillet@1"
VOLUME_RANGE_CAP = "cap:validate.volumeRange@1"
MASS_PROPERTIES_CAP = "cap:query.massProperties@1"
DEFINE_CAP = "cap:parameter.define@1"
SET_CAP = "cap:parameter.set@1"

# Diagnostic codes the descriptors declare and the fake kernel reports.
BOX_DIMENSION_NONPOSITIVE = "BOX_DIMENSION_NONPOSITIVE"
FILLET_RADIUS_TOO_LARGE = "FILLET_RADIUS_TOO_LARGE"
SELECTION_EMPTY = "SELECTION_EMPTY"
VOLUME_OUT_OF_RANGE = "VOLUME_OUT_OF_RANGE"
QUERY_TARGET_UNKNOWN = "QUERY_TARGET_UNKNOWN"

LENGTH = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
SHAPE = {"type": "string", "x-amir-type": "Shape"}
REAL = {"type": "number", "x-amir-type": "Real"}
SELECTION = {
    "type": "object",
    "x-amir-type": "Selection",
    "properties": {
        "body": {"type": "string"},
        "select": {"type": "string"},
        "entity": {"enum": ["Edge", "Face"]},
    },
    "required": ["body", "select"],
}
PARAM_TYPES = [t.value for t in ParamType]


# -- the package ---------------------------------------------------------------------------------


def _io(kind: str, ref: str, part: str) -> str:
    name, version = ref.split("@")
    return f"amir://{kind}/{name}/{version}/{part}"


def _box_schema(length: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "length": dict(length),
            "width": dict(length),
            "height": dict(length),
            "centered": {"type": "boolean", "x-amir-type": "Bool"},
        },
        "required": ["length", "width", "height"],
        "additionalProperties": False,
    }


def _box_descriptor(cap: str, ref: str, taxonomy: str, produces: str) -> dict[str, Any]:
    mesh = produces != "ExactSolid"
    return {
        "capabilityId": cap,
        "kind": "authoring.operation",
        "operationRef": ref,
        "profileVersion": "1.0.0",
        "title": "Mesh box" if mesh else "Box",
        "summary": "A triangulated box." if mesh else "An exact box from length, width, height.",
        "aliases": ["cuboid", "block"],
        "taxonomy": {"primary": taxonomy, "facets": ["primitive"]},
        "intentExamples": ["a 20 mm mesh cube"] if mesh else ["make a 40 by 30 by 10 mm plate"],
        "inputExamples": [{"title": "plate", "input": {"length": 40, "width": 30, "height": 10}}],
        "inputs": {"schemaRef": _io("ops", ref, "input"), "semanticTypes": ["Length"]},
        "outputs": {"schemaRef": _io("ops", ref, "output"), "semanticTypes": [produces]},
        "defaults": {"centered": True},
        "applicability": {"predicates": [{"id": "input.positive", "args": {"input": "length"}}]},
        "effects": ["createsFeature", "additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "interactive"},
        "diagnostics": [BOX_DIMENSION_NONPOSITIVE],
        "relations": {"produces": [produces]},
    }


def _fillet_descriptor() -> dict[str, Any]:
    return {
        "capabilityId": FILLET_CAP,
        "kind": "authoring.operation",
        "operationRef": FILLET,
        "profileVersion": "1.0.0",
        "title": "Fillet edges",
        "summary": "Round selected edges of an exact solid.",
        "taxonomy": {"primary": "authoring.exact.finishing"},
        "intentExamples": ["round the vertical edges of the plate by 2 mm"],
        "inputExamples": [
            {
                "input": {
                    "target": "b:plate",
                    "edges": {"body": "b:plate", "select": "|Z", "entity": "Edge"},
                    "radius": 2,
                }
            }
        ],
        "inputs": {
            "schemaRef": _io("ops", FILLET, "input"),
            "semanticTypes": ["ExactSolid", "EntitySet<Edge>", "Length"],
        },
        "outputs": {"schemaRef": _io("ops", FILLET, "output"), "semanticTypes": ["ExactSolid"]},
        "applicability": {
            "requiresRepresentation": ["ExactSolid"],
            "selection": {"entityKind": "Edge", "cardinality": "oneOrMore"},
            "predicates": [{"id": "input.greaterThanTolerance", "args": {"input": "radius"}}],
        },
        "effects": ["createsFeature", "changesTopology"],
        "risk": {"level": "medium", "mayInvalidateRefs": True},
        "execution": {
            "quality": ["preview", "authoritative"],
            "costClass": "interactive-to-heavy",
            "cancellable": True,
        },
        "diagnostics": [FILLET_RADIUS_TOO_LARGE, SELECTION_EMPTY],
        "guidance": {
            "failureModes": [
                {
                    "diagnostic": FILLET_RADIUS_TOO_LARGE,
                    "explanation": "the radius reaches half the smaller side of the face",
                    "repair": "reduce the radius",
                }
            ]
        },
        "relations": {"composesWith": [BOX_CAP], "accepts": ["ExactSolid"]},
    }


def _read_only(
    cap: str, kind: str, target_field: str, ref: str, taxonomy: str, extra: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "capabilityId": cap,
        "kind": kind,
        target_field: ref,
        "profileVersion": "1.0.0",
        "inputs": {"schemaRef": _io("ops", ref, "input"), "semanticTypes": ["ExactSolid"]},
        "taxonomy": {"primary": taxonomy},
        "effects": ["readOnly"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "instant"},
        **extra,
    }


def _validator_descriptor() -> dict[str, Any]:
    return _read_only(
        VOLUME_RANGE_CAP,
        "validator",
        "validatorRef",
        VOLUME_RANGE,
        "validation.geometric",
        {
            "title": "Volume range",
            "summary": "The body's volume lies within [min, max] mm³.",
            "intentExamples": ["the plate must weigh in between 10 and 20 cm³"],
            "inputExamples": [{"input": {"target": "b:plate", "min": 1000, "max": 20000}}],
            "diagnostics": [VOLUME_OUT_OF_RANGE],
        },
    )


def _query_descriptor() -> dict[str, Any]:
    return _read_only(
        MASS_PROPERTIES_CAP,
        "model.query",
        "queryRef",
        MASS_PROPERTIES,
        "query.geometric",
        {
            "title": "Mass properties",
            "summary": "Volume, area and bounding box of a body.",
            "intentExamples": ["how big is the plate"],
            "inputExamples": [{"input": {"target": "b:plate"}}],
            "diagnostics": [QUERY_TARGET_UNKNOWN],
        },
    )


def _template_descriptor(cap: str, ref: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "capabilityId": cap,
        "kind": "authoring.operation",
        "patchTemplateRef": ref,
        "profileVersion": "1.0.0",
        "inputs": {"schemaRef": _io("templates", ref, "input")},
        "taxonomy": {"primary": "authoring"},
        "effects": ["additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "instant"},
        **extra,
    }


def fake_kernel_manifest(
    name: str = PACKAGE, version: str = "1.0.0", publisher: str = PUBLISHER
) -> dict[str, Any]:
    """The lint-clean manifest declaring the fake kernel's operations (a fresh dict each
    call). Sign it with :class:`~aira_core.testing.signing.ThrowawaySigner`."""
    descriptors = [
        _box_descriptor(BOX_CAP, BOX, "authoring.exact.primitive", "ExactSolid"),
        _fillet_descriptor(),
        _validator_descriptor(),
        _query_descriptor(),
        _template_descriptor(
            DEFINE_CAP,
            PARAMETER_DEFINE,
            {
                "title": "Define a parameter",
                "summary": "Add a named, typed parameter with a value, a unit and bounds.",
                "intentExamples": ["let the width be a parameter of 40 mm"],
                "inputExamples": [
                    {"input": {"name": "width", "value": 40, "unit": "mm", "type": "Length"}}
                ],
                "defaults": {"type": "Length"},
            },
        ),
        _template_descriptor(
            SET_CAP,
            PARAMETER_SET,
            {
                "title": "Set a parameter",
                "summary": "Change the value of an existing parameter.",
                "intentExamples": ["make the width 50 mm"],
                "inputExamples": [{"input": {"parameter": "p:width", "value": 50}}],
            },
        ),
        _box_descriptor(MESH_BOX_CAP, MESH_BOX, "authoring.mesh", "MeshSolid"),
    ]
    value = {"type": ["number", "boolean", "string"]}
    schemas = {
        _io("ops", BOX, "input"): _box_schema(LENGTH),
        _io("ops", BOX, "output"): {"type": "object"},
        _io("ops", MESH_BOX, "input"): _box_schema(LENGTH),
        _io("ops", MESH_BOX, "output"): {"type": "object"},
        _io("ops", FILLET, "input"): {
            "type": "object",
            "properties": {
                "target": SHAPE,
                "edges": SELECTION,
                "radius": {"type": "number", "x-amir-type": "Length"},
            },
            "required": ["target", "edges", "radius"],
            "additionalProperties": False,
        },
        _io("ops", FILLET, "output"): {"type": "object"},
        _io("ops", VOLUME_RANGE, "input"): {
            "type": "object",
            "properties": {"target": SHAPE, "min": REAL, "max": REAL},
            "required": ["target"],
            "additionalProperties": False,
        },
        _io("ops", MASS_PROPERTIES, "input"): {
            "type": "object",
            "properties": {"target": SHAPE},
            "required": ["target"],
            "additionalProperties": False,
        },
        _io("templates", PARAMETER_DEFINE, "input"): {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_-]{0,47}$"},
                "value": value,
                "unit": {"type": "string"},
                "min": {"type": "number"},
                "max": {"type": "number"},
                "type": {"enum": PARAM_TYPES},
            },
            "required": ["name", "value"],
            "additionalProperties": False,
        },
        _io("templates", PARAMETER_SET, "input"): {
            "type": "object",
            "properties": {
                "parameter": {"type": "string"},
                "value": {
                    "oneOf": [
                        value,
                        {
                            "type": "object",
                            "properties": {"value": {"type": "number"}, "unit": {"type": "string"}},
                            "required": ["value"],
                            "additionalProperties": False,
                        },
                    ]
                },
            },
            "required": ["parameter", "value"],
            "additionalProperties": False,
        },
    }
    return {
        "format": "aira.capability-package/1",
        "name": name,
        "version": version,
        "publisher": publisher,
        "descriptors": descriptors,
        "schemas": schemas,
    }


def accept_all(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
    """A FAKE input check: every input is accepted."""
    return []


# The wire names of the execution-target fields, from the descriptor model itself.
_TARGETS = tuple(SemanticOperationDescriptor.model_fields[f].alias or f for f in TARGET_FIELDS)


def fake_implementations(
    manifest: Mapping[str, Any],
    check: Callable[[Mapping[str, Any]], Sequence[Diagnostic]] = accept_all,
) -> list[Implementation]:
    """FAKE implementations of every execution target of ``manifest`` (a raw manifest dict,
    possibly broken): each declares exactly its descriptor's diagnostics and accepts whatever
    ``check`` accepts (everything by default)."""
    return [
        Implementation(
            ref=d[k], check_inputs=check, diagnostics=frozenset(d.get("diagnostics", []))
        )
        for d in manifest["descriptors"]
        for k in _TARGETS
        if k in d  # none for a target-less (broken) descriptor
    ]


def write_package(
    directory: Path, manifest: Mapping[str, Any], signer: Signs | None = None
) -> Path:
    """Write ``manifest.json`` (and, given a signer, ``manifest.sig``) into ``directory``:
    a package directory as ``CapabilityPackageSource.from_directory`` reads it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
    if signer is not None:
        (directory / "manifest.sig").write_bytes(signer.sign(manifest))
    return directory


def package_source(
    manifest: Mapping[str, Any],
    signer: Signs | None,
    implementations: Sequence[Implementation] | None = None,
    *,
    raw: bytes | None = None,
) -> CapabilityPackageSource:
    """An in-memory package source as a plugin registers it, signed by ``signer`` (``None``:
    unsigned). ``implementations`` default to :func:`fake_implementations`; ``raw``
    replaces the manifest bytes after signing (to test tampering)."""
    data = raw if raw is not None else json.dumps(manifest, indent=2).encode()
    return CapabilityPackageSource(
        name=str(manifest.get("name", "broken")),
        manifest=data,
        signature=signer.sign(manifest) if signer else None,
        implementations=(
            implementations if implementations is not None else fake_implementations(manifest)
        ),
        origin="test",
    )


def package_findings(
    package: str | Path | Mapping[str, Any],
    implementations: Sequence[TargetImplementation] = (),
) -> list[Diagnostic]:
    """What admission to the catalog would find wrong with a package, short of its
    signature: the manifest's read errors, else its lint findings, else its failed
    conformance checks (each workflow's input examples expand; each other target resolves to
    one of ``implementations``, which takes the descriptor's examples and raises only codes
    it declares; a repair template needs none). Empty: once signed by a trusted key, the
    catalog admits it.

    ``package`` is a package directory, a manifest file or a manifest dict. Linted alone, a
    package knows only its own capabilities: a workflow step or relation naming another
    package's is not checked here (``aira catalog lint`` checks it against the installed
    catalog)."""
    from aira_core.catalog.conformance import ImplementationIndex, check_conformance
    from aira_core.catalog.lint import lint_manifest
    from aira_core.catalog.package import parse_package, source_from_path

    if isinstance(package, Mapping):
        source = CapabilityPackageSource(
            name=str(package.get("name", "package")),
            manifest=json.dumps(package).encode(),
            signature=None,
        )
    else:
        source = source_from_path(package)
    parsed = parse_package(source)
    if parsed.manifest is None:
        return list(parsed.diagnostics)
    findings = lint_manifest(parsed.manifest)
    if findings:
        return findings
    report = check_conformance(parsed.manifest, ImplementationIndex(implementations), "")
    return [d for check in report.checks for d in check.diagnostics]
