"""The capability package manifest, generated from ``operations.py`` (one source: its
``OPERATIONS`` and its ``REPAIRS``).

Regenerate and re-sign after changing an operation (and bump ``VERSION``: the catalog
refuses a known version with other content)::

    python -m aira_kernel_occt.manifest
    aira catalog sign plugins/aira-kernel-occt/aira_kernel_occt/package \\
        --key ../shared/keys/aira-first-party.ed25519.pem
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aira_kernel_occt.operations import OPERATIONS, REPAIRS, Operation, Repair

NAME = "aira.kernel.occt"
VERSION = "0.11.0"
PUBLISHER = "aira-first-party"
PACKAGE_DIR = Path(__file__).parent / "package"

_ALTERNATIVES = {
    "cap:exact.fillet@1": ["cap:exact.chamfer@1"],
    "cap:exact.chamfer@1": ["cap:exact.fillet@1"],
    "cap:io.exportStep@1": ["cap:io.exportStl@1"],
    "cap:io.exportStl@1": ["cap:io.exportStep@1", "cap:io.export3mf@1"],
    "cap:io.export3mf@1": ["cap:io.exportStl@1"],
    "cap:exact.extrude@1": ["cap:exact.revolve@1"],
    "cap:exact.revolve@1": ["cap:exact.extrude@1"],
    "cap:sketch.polygon@1": ["cap:sketch.polyline@1"],
    "cap:sketch.polyline@1": ["cap:sketch.polygon@1"],
    "cap:query.selectEntities@1": ["cap:query.topology@1"],
    "cap:exact.cut@1": ["cap:exact.intersect@1"],
    "cap:exact.intersect@1": ["cap:exact.cut@1"],
    "cap:exact.rotate@1": ["cap:exact.mirror@1"],
    "cap:exact.mirror@1": ["cap:exact.rotate@1"],
    "cap:exact.hole@1": ["cap:exact.cut@1"],
    "cap:query.boundingBox@1": ["cap:validate.boundingBox@1"],
    "cap:validate.boundingBox@1": ["cap:query.boundingBox@1"],
    "cap:exact.linearPattern@1": ["cap:exact.polarPattern@1"],
    "cap:exact.polarPattern@1": ["cap:exact.linearPattern@1"],
    "cap:query.interference@1": ["cap:validate.noInterference@1", "cap:exact.intersect@1"],
    "cap:validate.noInterference@1": ["cap:query.interference@1"],
}
_COMPOSES = {
    "cap:exact.box@1": ["cap:exact.fillet@1", "cap:exact.cut@1"],
    "cap:exact.cylinder@1": ["cap:exact.cut@1", "cap:exact.union@1"],
    "cap:parameter.define@1": ["cap:parameter.set@1"],
    "cap:exact.wedge@1": ["cap:exact.union@1"],
    "cap:exact.cone@1": ["cap:exact.cut@1", "cap:exact.union@1"],
    "cap:exact.torus@1": ["cap:exact.cut@1", "cap:exact.union@1"],
    **{
        f"cap:sketch.{shape}@1": ["cap:exact.extrude@1", "cap:exact.revolve@1"]
        for shape in ("rectangle", "circle", "polygon", "slot", "polyline")
    },
    "cap:io.importStep@1": ["cap:query.massProperties@1"],
    # a body fused into or cut from another is first placed there
    "cap:exact.union@1": ["cap:exact.translate@1"],
    "cap:exact.cut@1": ["cap:exact.translate@1"],
}


def schema_ref(op: Operation, part: str) -> str:
    version = op.ref.split("@")[1]
    return f"amir://ops/{op.name}/{version}/{part}"


def descriptor(op: Operation) -> dict[str, Any]:
    relations: dict[str, list[str]] = {"produces": list(op.outputs)}
    accepts = sorted(
        {
            i.accepts if i.type == "Shape" else "EntitySet"
            for i in op.inputs
            if i.type in ("Shape", "Selection")
        }
    )
    if accepts:
        relations["accepts"] = accepts
    for relation, table in (("alternativeTo", _ALTERNATIVES), ("composesWith", _COMPOSES)):
        if op.capability in table:
            relations[relation] = table[op.capability]
    out: dict[str, Any] = {
        "capabilityId": op.capability,
        "kind": op.kind,
        op.target: op.ref,
        "profileVersion": "1.0.0",
        "title": op.title,
        "summary": op.summary,
        "aliases": list(op.aliases),
        "taxonomy": {"primary": op.taxonomy, "facets": list(op.facets)},
        "intentExamples": list(op.intents),
        "counterExamples": list(op.counter),
        "inputExamples": [{"input": dict(example)} for example in op.examples],
        "inputs": {
            "schemaRef": schema_ref(op, "input"),
            "semanticTypes": sorted({i.type for i in op.inputs}),
        },
        "outputs": {"schemaRef": schema_ref(op, "output"), "semanticTypes": list(op.outputs)},
        "applicability": {
            "requiresRepresentation": list(op.requires_representation),
            "predicates": [dict(p) for p in op.predicates],
        },
        "purity": "effectful" if "externalSideEffect" in op.effects else "pure",
        "effects": list(op.effects),
        "risk": {
            "level": op.risk,
            "destructive": op.destructive,
            "reversibleByRevision": True,
            "mayInvalidateRefs": op.may_invalidate_refs,
        },
        "execution": {
            "quality": list(op.quality),
            "requiredCapabilities": ["occt.brep"],
            "costClass": op.cost,
            "cancellable": op.cost != "instant",
        },
        "diagnostics": list(op.diagnostics),
        "relations": relations,
    }
    if op.selection:
        out["applicability"]["selection"] = dict(op.selection)
    if op.defaults:
        out["defaults"] = dict(op.defaults)
    if op.failure_modes:
        out["guidance"] = {"failureModes": [dict(f) for f in op.failure_modes]}
    return out


def repair_schema_ref(repair: Repair) -> str:
    version = repair.ref.split("@")[1]
    return f"amir://repairs/{repair.name}/{version}/input"


def repair_descriptor(repair: Repair) -> dict[str, Any]:
    """A repair's descriptor: no inputs of its own (the core gives its template the refused
    step's args and the diagnostic's expected and actual), read-only, instant."""
    return {
        "capabilityId": repair.capability,
        "kind": "repair",
        "patchTemplateRef": repair.ref,
        "profileVersion": "1.0.0",
        "title": repair.title,
        "summary": repair.summary,
        "aliases": list(repair.aliases),
        "taxonomy": {"primary": "authoring.exact.finishing", "facets": ["repair"]},
        "intentExamples": list(repair.intents),
        "counterExamples": list(repair.counter),
        "inputs": {"schemaRef": repair_schema_ref(repair)},
        "purity": "pure",
        "effects": ["readOnly"],
        "risk": {"level": "low", "destructive": False},
        "execution": {"quality": ["preview"], "costClass": "instant", "cancellable": False},
        "relations": {"repairsDiagnostic": [repair.code]},
        "patchTemplate": {
            "appliesTo": list(repair.applies_to),
            "when": repair.when,
            "set": dict(repair.set),
        },
        "guidance": {"compositionHints": list(repair.hints)},
    }


def build_manifest() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for op in OPERATIONS:
        schemas[schema_ref(op, "input")] = op.input_schema()
        schemas[schema_ref(op, "output")] = {"type": "object", "title": f"{op.ref} output"}
    for repair in REPAIRS:
        schemas[repair_schema_ref(repair)] = {"type": "object"}
    return {
        "format": "aira.capability-package/1",
        "name": NAME,
        "version": VERSION,
        "publisher": PUBLISHER,
        "descriptors": [descriptor(op) for op in OPERATIONS]
        + [repair_descriptor(r) for r in REPAIRS],
        "schemas": schemas,
    }


def render() -> str:
    return json.dumps(build_manifest(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def main() -> int:
    PACKAGE_DIR.mkdir(exist_ok=True)
    (PACKAGE_DIR / "manifest.json").write_text(render(), encoding="utf-8")
    count = len(OPERATIONS) + len(REPAIRS)
    print(f"wrote {NAME} {VERSION}: {count} capabilities; now re-sign it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
