"""Sample AMIR documents: realistic and valid, for tests, benchmarks and demonstrations.

``sample_document`` builds Length parameters labelled like ``width_1``, bodies that each
start with an ``exact.box@1.0.0`` node and grow by feature nodes (``exact.fillet@1.0.0``,
``exact.chamfer@1.0.0`` …) appended to their current tip, and assertions such as
``validate.volumeRange@1.0.0`` targeting bodies. Ids are random digests from a seeded
generator, as ids created during a task are; the same arguments give the same document.
The operations are named, not evaluated: no kernel is needed to build one.
"""

from __future__ import annotations

import random
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


def new_id(rng: random.Random, prefix: str) -> str:
    return f"{prefix}.{rng.getrandbits(48):012x}"


def sample_document(
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
                "id": new_id(rng, "par"),
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
            "id": new_id(rng, "nod"),
            "label": f"{label}_box",
            "op": "exact.box@1.0.0",
            "inputs": {
                "width": length(3 * j, 40.0),
                "depth": length(3 * j + 1, 30.0),
                "height": length(3 * j + 2, 10.0),
            },
        }
        node_list.append(box)
        body = {"id": new_id(rng, "bod"), "label": label, "tip": box["id"]}
        if j % 2 == 0:
            body["material"] = MATERIALS[j % len(MATERIALS)]
        body_list.append(body)

    for k in range(nodes - bodies):
        if body_list:
            body = body_list[k % len(body_list)]
            node = feature_node(rng, k, body, length(k, 2.0))
            body["tip"] = node["id"]  # the feature moves the body's tip; history stays
        else:  # no bodies: free-standing boxes
            node = {
                "id": new_id(rng, "nod"),
                "op": "exact.box@1.0.0",
                "inputs": {"width": length(k, 10.0)},
            }
        node_list.append(node)

    assertion_list = [
        sample_assertion(rng, i, body_list[i % len(body_list)]["id"]) for i in range(assertions)
    ]
    return AmirDocument.model_validate(
        {
            "parameters": params,
            "nodes": node_list,
            "bodies": body_list,
            "assertions": assertion_list,
        }
    )


def feature_node(
    rng: random.Random, k: int, body: dict[str, Any], size: dict[str, Any]
) -> dict[str, Any]:
    op = FEATURES[k % len(FEATURES)]
    node: dict[str, Any] = {
        "id": new_id(rng, "nod"),
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


def sample_assertion(rng: random.Random, i: int, target: str) -> dict[str, Any]:
    validator = VALIDATORS[i % len(VALIDATORS)]
    if validator.startswith("validate.volumeRange"):
        args = {"min": {"value": 1000.0}, "max": {"value": 500000.0}}
    elif validator.startswith("validate.minWallThickness"):
        args = {"min": {"value": 1.5, "unit": "mm"}}
    else:
        args = {"max": {"value": [200, 200, 100], "unit": "mm"}}
    assertion: dict[str, Any] = {
        "id": new_id(rng, "asr"),
        "validatorRef": validator,
        "target": target,
        "args": args,
    }
    if i % 3 == 0:
        assertion["label"] = f"check_{i + 1}"
    return assertion
