"""Generators of AMIR documents for tests. TEST-ONLY: production code never imports this.

``make_document`` builds a realistic, valid document: Length parameters labelled like
``width_1``, bodies that each start with an ``exact.box@1.0.0`` node and grow by feature
nodes (``exact.fillet@1.0.0``, ``exact.chamfer@1.0.0``, …) appended to their current tip,
and assertions such as ``validate.volumeRange@1.0.0`` targeting bodies. Ids are random
digests from a seeded generator, as ids created during a task are; the same arguments give
the same document. ``benchmarks/bench_summary.py`` carries a copy of this generator (it may
not import test code); keep the two in step.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from aira_core.contracts.amir import AmirDocument

PARAMETER_NAMES = ("width", "depth", "height", "radius", "thickness")
BODY_NAMES = ("plate", "bracket", "housing", "lid", "shaft")
FEATURES = ("exact.fillet@1.0.0", "exact.chamfer@1.0.0", "exact.hole@1.0.0", "exact.shell@1.0.0")
VALIDATORS = (
    "validate.volumeRange@1.0.0",
    "validate.minWallThickness@1.0.0",
    "validate.boundingBox@1.0.0",
)
MATERIALS = ("steel", "aluminium", "ABS")


def _new_id(rng: random.Random, prefix: str) -> str:
    return f"{prefix}.{rng.getrandbits(48):012x}"


def make_document(
    bodies: int = 15,
    parameters: int = 30,
    assertions: int = 30,
    nodes: int | None = None,
    *,
    seed: int = 0,
) -> AmirDocument:
    """A valid document; ``nodes`` defaults to three per body (a box and two features)."""
    if nodes is None:
        nodes = 3 * bodies
    if nodes < bodies:
        raise ValueError("every body needs at least its box node")
    if assertions and not bodies:
        raise ValueError("assertions target bodies")
    rng = random.Random(seed)

    params: list[dict[str, Any]] = []
    for i in range(parameters):
        name = PARAMETER_NAMES[i % len(PARAMETER_NAMES)]
        params.append(
            {
                "id": _new_id(rng, "par"),
                "label": f"{name}_{i // len(PARAMETER_NAMES) + 1}",
                "type": "Length",
                "unit": "mm",
                "value": float(5 + (i * 7) % 95),
                "min": 1.0,
                "max": 500.0,
            }
        )

    def length(k: int, fallback: float) -> dict[str, Any]:
        # Reference a parameter when there are any, else a literal: both are realistic.
        if params:
            return {"param": params[k % len(params)]["id"]}
        return {"value": fallback, "unit": "mm"}

    node_list: list[dict[str, Any]] = []
    body_list: list[dict[str, Any]] = []
    for j in range(bodies):
        label = f"{BODY_NAMES[j % len(BODY_NAMES)]}_{j // len(BODY_NAMES) + 1}"
        box = {
            "id": _new_id(rng, "nod"),
            "label": f"{label}_box",
            "op": "exact.box@1.0.0",
            "inputs": {
                "width": length(3 * j, 40.0),
                "depth": length(3 * j + 1, 30.0),
                "height": length(3 * j + 2, 10.0),
            },
        }
        node_list.append(box)
        body = {"id": _new_id(rng, "bod"), "label": label, "tip": box["id"]}
        if j % 2 == 0:
            body["material"] = MATERIALS[j % len(MATERIALS)]
        body_list.append(body)

    for k in range(nodes - bodies):
        if body_list:
            body = body_list[k % len(body_list)]
            node = _feature(rng, k, body, length(k, 2.0))
            body["tip"] = node["id"]  # the feature moves the body's tip; history stays
        else:  # no bodies: free-standing boxes
            node = {
                "id": _new_id(rng, "nod"),
                "op": "exact.box@1.0.0",
                "inputs": {"width": length(k, 10.0)},
            }
        node_list.append(node)

    assertion_list = [
        _assertion(rng, i, body_list[i % len(body_list)]["id"]) for i in range(assertions)
    ]
    return AmirDocument.model_validate(
        {
            "parameters": params,
            "nodes": node_list,
            "bodies": body_list,
            "assertions": assertion_list,
        }
    )


def _feature(
    rng: random.Random, k: int, body: dict[str, Any], size: dict[str, Any]
) -> dict[str, Any]:
    op = FEATURES[k % len(FEATURES)]
    node: dict[str, Any] = {
        "id": _new_id(rng, "nod"),
        "op": op,
        "inputs": {
            "target": {"node": body["tip"]},
            "edges": {"body": body["id"], "select": "|Z", "entity": "Edge"},
            "size": size,
        },
    }
    if k % 2 == 0:  # half the features are labelled, the rest get short-form aliases
        node["label"] = f"{body['label']}_{op.split('@')[0].split('.')[1]}_{k + 1}"
    return node


def _assertion(rng: random.Random, i: int, target: str) -> dict[str, Any]:
    validator = VALIDATORS[i % len(VALIDATORS)]
    if validator.startswith("validate.volumeRange"):
        args = {"min": {"value": 1000.0}, "max": {"value": 500000.0}}
    elif validator.startswith("validate.minWallThickness"):
        args = {"min": {"value": 1.5, "unit": "mm"}}
    else:
        args = {"max": {"value": [200, 200, 100], "unit": "mm"}}
    assertion: dict[str, Any] = {
        "id": _new_id(rng, "asr"),
        "validatorRef": validator,
        "target": target,
        "args": args,
    }
    if i % 3 == 0:
        assertion["label"] = f"check_{i + 1}"
    return assertion


def extend(
    document: AmirDocument,
    *,
    parameters: Iterable[dict[str, Any]] = (),
    nodes: Iterable[dict[str, Any]] = (),
    bodies: Iterable[dict[str, Any]] = (),
    assertions: Iterable[dict[str, Any]] = (),
) -> AmirDocument:
    """``document`` with entities appended (as patches append them), validated."""
    wire = document.to_wire()
    wire["parameters"] = [*wire["parameters"], *parameters]
    wire["nodes"] = [*wire["nodes"], *nodes]
    wire["bodies"] = [*wire["bodies"], *bodies]
    wire["assertions"] = [*wire["assertions"], *assertions]
    return AmirDocument.model_validate(wire)


def grow(
    document: AmirDocument, count: int, *, seed: int = 1, labelled: bool = True
) -> AmirDocument:
    """Append ``count`` new bodies (each: a parameter, a box node, a fillet node, the body
    and an assertion) with fresh random ids and labels not used in ``document``."""
    rng = random.Random(seed)
    used = {
        e.label for block in (document.parameters, document.nodes, document.bodies) for e in block
    }
    parameters, nodes, bodies, assertions = [], [], [], []
    for i in range(count):
        n = i
        while f"new{seed}_{n}" in used:
            n += count
        stem = f"new{seed}_{n}"
        used.add(stem)
        param = {
            "id": _new_id(rng, "par"),
            "label": f"{stem}_width",
            "type": "Length",
            "value": 20.0,
        }
        box = {
            "id": _new_id(rng, "nod"),
            "op": "exact.box@1.0.0",
            "inputs": {"width": {"param": param["id"]}},
        }
        body = {"id": _new_id(rng, "bod"), "tip": box["id"]}
        fillet = _feature(rng, 0, {**body, "label": stem}, {"value": 1.0, "unit": "mm"})
        body["tip"] = fillet["id"]
        if labelled:
            box["label"] = f"{stem}_box"
        else:
            fillet.pop("label", None)
        body["label"] = stem
        parameters.append(param)
        nodes += [box, fillet]
        bodies.append(body)
        assertions.append(_assertion(rng, i, body["id"]))
    return extend(
        document, parameters=parameters, nodes=nodes, bodies=bodies, assertions=assertions
    )
