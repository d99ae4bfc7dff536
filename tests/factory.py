"""Builders for the catalog tests' toy packages (box, fillet, sketch).

Everything here is a test fake. The throwaway signer, the trust store that trusts it and
the accept-all implementations are the library's (:mod:`aira_core.testing`), re-exported
under the names these tests use. Production code never imports this module.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from aira_core.testing.package import (  # noqa: F401 (re-exported for the tests)
    accept_all,
    fake_implementations,
    package_source,
    write_package,
)
from aira_core.testing.signing import ThrowawaySigner as Signer  # noqa: F401
from aira_core.testing.signing import trust_policy_for as trust_policy  # noqa: F401

PLANE_BINDING = {"origin": [0, 0, 0], "normal": [0, 0, 1]}


def box_descriptor(cap: str = "cap:test.box@1", ref: str = "test.box@1.0.0") -> dict[str, Any]:
    name, version = ref.split("@")
    return {
        "capabilityId": cap,
        "kind": "authoring.operation",
        "operationRef": ref,
        "profileVersion": "1.0.0",
        "title": "Box",
        "summary": "An exact box from length, width and height.",
        "aliases": ["cuboid", "block"],
        "taxonomy": {"primary": "authoring.exact.primitive", "facets": ["primitive"]},
        "intentExamples": ["make a 20 mm cube", "做一个边长20毫米的立方体"],
        "counterExamples": ["a triangle mesh cube"],
        "inputExamples": [{"title": "cube", "input": {"length": 20, "width": 20, "height": 20}}],
        "inputs": {"schemaRef": f"amir://ops/{name}/{version}/input", "semanticTypes": ["Length"]},
        "outputs": {
            "schemaRef": f"amir://ops/{name}/{version}/output",
            "semanticTypes": ["ExactSolid"],
        },
        "defaults": {"centered": True},
        "applicability": {"predicates": [{"id": "input.positive", "args": {"input": "length"}}]},
        "effects": ["createsFeature", "additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "interactive"},
        "diagnostics": ["BOX_DIMENSION_NONPOSITIVE"],
        "relations": {"composesWith": ["cap:test.fillet@1"], "produces": ["ExactSolid"]},
    }


def box_schemas(ref: str = "test.box@1.0.0") -> dict[str, Any]:
    name, version = ref.split("@")
    length = {"type": "number", "exclusiveMinimum": 0}
    return {
        f"amir://ops/{name}/{version}/input": {
            "type": "object",
            "properties": {
                "length": length,
                "width": length,
                "height": length,
                "centered": {"type": "boolean"},
            },
            "required": ["length", "width", "height"],
            "additionalProperties": False,
        },
        f"amir://ops/{name}/{version}/output": {"type": "object"},
    }


def fillet_descriptor() -> dict[str, Any]:
    return {
        "capabilityId": "cap:test.fillet@1",
        "kind": "authoring.operation",
        "operationRef": "test.fillet@1.0.0",
        "profileVersion": "1.0.0",
        "title": "Fillet edges",
        "summary": "Round selected edges of an exact solid.",
        "taxonomy": {"primary": "authoring.exact.finishing"},
        "intentExamples": ["round the top edges by 2 mm"],
        "inputExamples": [{"input": {"target": "b:base", "edges": ">Z", "radius": 2}}],
        "inputs": {
            "schemaRef": "amir://ops/test.fillet/1.0.0/input",
            "semanticTypes": ["ExactSolid", "EntitySet<Edge>", "Length"],
        },
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
        "diagnostics": ["FILLET_RADIUS_TOO_LARGE", "SELECTION_EMPTY"],
        "guidance": {
            "failureModes": [
                {
                    "diagnostic": "FILLET_RADIUS_TOO_LARGE",
                    "explanation": "the radius exceeds an adjacent face",
                    "repair": "reduce the radius",
                }
            ]
        },
        "relations": {"alternativeTo": ["cap:test.box@1"]},
    }


def sketch_descriptor() -> dict[str, Any]:
    return {
        "capabilityId": "cap:test.sketch@1",
        "kind": "authoring.operation",
        "operationRef": "test.sketch@1.0.0",
        "profileVersion": "1.0.0",
        "title": "Rectangle sketch",
        "summary": "A rectangle profile on a plane.",
        "taxonomy": {"primary": "authoring.sketch.profile"},
        "intentExamples": ["sketch a 30 by 20 rectangle on the XY plane"],
        "inputExamples": [
            {"input": {"plane": copy.deepcopy(PLANE_BINDING), "width": 30, "height": 20}}
        ],
        "inputs": {"schemaRef": "amir://ops/test.sketch/1.0.0/input", "semanticTypes": ["Plane"]},
        "defaultBinding": {"plane": copy.deepcopy(PLANE_BINDING)},
        "effects": ["additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "instant"},
    }


def sketch_schemas() -> dict[str, Any]:
    vec = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
    return {
        "amir://ops/test.sketch/1.0.0/input": {
            "type": "object",
            "properties": {
                "plane": {
                    "type": "object",
                    "properties": {"origin": vec, "normal": vec},
                    "required": ["origin", "normal"],
                    "additionalProperties": False,
                },
                "width": {"type": "number", "exclusiveMinimum": 0},
                "height": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["plane", "width", "height"],
            "additionalProperties": False,
        }
    }


def manifest(
    name: str = "test.pkg", version: str = "1.0.0", publisher: str = "test-vendor"
) -> dict[str, Any]:
    """A lint-clean manifest with three capabilities."""
    return {
        "format": "aira.capability-package/1",
        "name": name,
        "version": version,
        "publisher": publisher,
        "descriptors": [box_descriptor(), fillet_descriptor(), sketch_descriptor()],
        "schemas": {
            **box_schemas(),
            **sketch_schemas(),
            "amir://ops/test.fillet/1.0.0/input": {
                "type": "object",
                "properties": {
                    "target": {"type": "string"},
                    "edges": {"type": "string"},
                    "radius": {"type": "number", "exclusiveMinimum": 0},
                },
                "required": ["target", "edges", "radius"],
            },
        },
    }


def mutate(m: Mapping[str, Any], fn: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(m))
    fn(out)
    return out
