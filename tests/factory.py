"""Builders for test packages, signers and implementations.

Everything here is a test fake: throwaway keys, toy descriptors, and implementations whose
``check`` only looks at a few fields. Production code never imports this module.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aira_core.catalog.signing import key_id, private_key_pem, public_key_b64, sign_manifest
from aira_core.catalog.trust import TrustPolicy
from aira_core.contracts.package import TrustedKey, TrustedPublisher, TrustStore
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import CapabilityPackageSource, Implementation

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


def accept_all(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
    return []


def fake_implementations(
    m: Mapping[str, Any], check: Callable[[Mapping[str, Any]], Sequence[Diagnostic]] = accept_all
) -> list[Implementation]:
    """FAKE implementations for every target of a manifest, each declaring exactly the
    descriptor's diagnostics and accepting whatever ``check`` accepts."""
    targets = (
        "operationRef",
        "patchTemplateRef",
        "queryRef",
        "validatorRef",
        "workflowRef",
        "ioRef",
    )
    out = []
    for d in m["descriptors"]:
        for ref in (d[k] for k in targets if k in d):  # none for a target-less (broken) one
            out.append(
                Implementation(
                    ref=ref, check_inputs=check, diagnostics=frozenset(d.get("diagnostics", []))
                )
            )
    return out


@dataclass
class Signer:
    """A throwaway Ed25519 key for one publisher."""

    publisher: str = "test-vendor"

    def __post_init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()

    @property
    def public_b64(self) -> str:
        return public_key_b64(self.key.public_key())

    @property
    def key_id(self) -> str:
        return key_id(self.key.public_key())

    def sign(self, m: Mapping[str, Any]) -> bytes:
        return json.dumps(sign_manifest(m, self.key, self.publisher).to_wire()).encode()

    def write_pem(self, path: Path) -> Path:
        path.write_bytes(private_key_pem(self.key))
        return path

    def trusted_key(self, **kw: Any) -> TrustedKey:
        return TrustedKey(key_id=self.key_id, public_key=self.public_b64, **kw)


def trust_policy(*signers: Signer, **key_kw: Any) -> TrustPolicy:
    return TrustPolicy(
        TrustStore(
            publishers=[
                TrustedPublisher(publisher=s.publisher, keys=[s.trusted_key(**key_kw)])
                for s in signers
            ]
        )
    )


def package_source(
    m: Mapping[str, Any],
    signer: Signer | None,
    implementations: Sequence[Implementation] | None = None,
    *,
    raw: bytes | None = None,
) -> CapabilityPackageSource:
    """A registered package: ``raw`` overrides the manifest bytes (to tamper after signing)."""
    data = raw if raw is not None else json.dumps(m, indent=2).encode()
    return CapabilityPackageSource(
        name=str(m.get("name", "broken")),
        manifest=data,
        signature=signer.sign(m) if signer else None,
        implementations=implementations if implementations is not None else fake_implementations(m),
        origin="test",
    )


def write_package(directory: Path, m: Mapping[str, Any], signer: Signer | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "manifest.json").write_text(json.dumps(m, indent=2, ensure_ascii=False))
    if signer is not None:
        (directory / "manifest.sig").write_bytes(signer.sign(m))
    return directory


def mutate(m: Mapping[str, Any], fn: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(m))
    fn(out)
    return out
