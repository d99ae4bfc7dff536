"""Generators of AMIR documents for tests. TEST-ONLY: production code never imports this.

``make_document`` builds a realistic, valid document: Length parameters labelled like
``width_1``, bodies that each start with an ``exact.box@1.0.0`` node and grow by feature
nodes (``exact.fillet@1.0.0``, ``exact.chamfer@1.0.0``, …) appended to their current tip,
and assertions such as ``validate.volumeRange@1.0.0`` targeting bodies. Ids are random
digests from a seeded generator, as ids created during a task are; the same arguments give
the same document. The generator itself is :func:`aira_core.model.samples.sample_document`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from aira_core.contracts.amir import AmirDocument
from aira_core.model.samples import feature_node, new_id, sample_assertion, sample_document

# The generator lives in aira_core.model.samples (benchmarks use it too); tests add
# ``extend`` and ``grow`` on top of it.
make_document = sample_document


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
            "id": new_id(rng, "par"),
            "label": f"{stem}_width",
            "type": "Length",
            "value": 20.0,
        }
        box = {
            "id": new_id(rng, "nod"),
            "op": "exact.box@1.0.0",
            "inputs": {"width": {"param": param["id"]}},
        }
        body = {"id": new_id(rng, "bod"), "tip": box["id"]}
        fillet = feature_node(rng, 0, {**body, "label": stem}, {"value": 1.0, "unit": "mm"})
        body["tip"] = fillet["id"]
        if labelled:
            box["label"] = f"{stem}_box"
        else:
            fillet.pop("label", None)
        body["label"] = stem
        parameters.append(param)
        nodes += [box, fillet]
        bodies.append(body)
        assertions.append(sample_assertion(rng, i, body["id"]))
    return extend(
        document, parameters=parameters, nodes=nodes, bodies=bodies, assertions=assertions
    )


def commit_patch(
    repository: Any,
    branch: str,
    head: str,
    patch: Any,
    message: str = "",
    meta: Any = None,
) -> Any:
    """Apply ``patch`` to ``head`` and commit it with the store's compare-and-swap, below
    the write path (no kernel: for tests of the store and its views, and for seeding)."""
    from aira_core.model.patch import apply_patch

    document = apply_patch(repository.document(head), patch, repository.signatures)
    return repository.commit(branch, head, document, message, meta)
