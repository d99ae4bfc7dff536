"""A third-party repair for the OCCT kernel's FILLET_RADIUS_TOO_LARGE: its throwaway package
(own publisher) admitted beside the first-party one; the refused fillet plan lists it beside
the first-party package's own repair of the code (every admitted repair of a code is offered,
sorted), its candidate halves the radius without writing, and the candidate commits on the
real kernel."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from occt_write import occt_write_path

from aira_core.contracts.plan import Plan
from aira_core.model.store import MAIN
from aira_core.runtime.repairs import candidate
from aira_core.runtime.write import WritePath
from aira_core.testing.package import package_source
from aira_core.testing.signing import ThrowawaySigner, trust_policy_for

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CAP = "cap:vendor.fillet.reduceRadius@1"
FIRST_PARTY = "cap:exact.reduceFilletRadius@1"
REF = "vendor.fillet.reduceRadius@1.0.0"
SCHEMA = "amir://repairs/vendor.fillet.reduceRadius/1.0.0/input"
PUBLISHER = "vendor-repairs"


def repair_manifest() -> dict[str, Any]:
    return {
        "format": "aira.capability-package/1",
        "name": "vendor.repairs",
        "version": "1.0.0",
        "publisher": PUBLISHER,
        "descriptors": [
            {
                "capabilityId": CAP,
                "kind": "repair",
                "patchTemplateRef": REF,
                "profileVersion": "1.0.0",
                "title": "Reduce a fillet's radius",
                "summary": "A candidate fillet step with half the radius that did not fit.",
                "intentExamples": ["the fillet radius is too large"],
                "inputs": {"schemaRef": SCHEMA},
                "taxonomy": {"primary": "authoring.exact.finishing"},
                "effects": ["readOnly"],
                "risk": {"level": "low"},
                "execution": {"quality": ["preview"], "costClass": "instant"},
                "relations": {"repairsDiagnostic": ["FILLET_RADIUS_TOO_LARGE"]},
                "patchTemplate": {
                    "appliesTo": ["cap:exact.fillet@1"],
                    "set": {"radius": "round(value(args.radius) * 0.5, 3)"},
                },
            }
        ],
        "schemas": {SCHEMA: {"type": "object"}},
    }


@pytest.fixture(scope="module")
def write(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WritePath]:
    from aira_kernel_occt.kernel import OcctKernel

    kernel = OcctKernel()
    signer = ThrowawaySigner(PUBLISHER)
    m = repair_manifest()
    # no implementations: a declarative template is the core's to evaluate
    vendor = {m["name"]: package_source(m, signer, [])}
    try:
        with occt_write_path(
            tmp_path_factory.mktemp("repairs"), kernel, vendor, trust_policy_for(signer)
        ) as write:
            yield write
    finally:
        kernel.close()


def fillet_plan(base: str, radius: float) -> Plan:
    return Plan.model_validate(
        {
            "baseRevision": base,
            "steps": [
                {
                    "id": "cube",
                    "capability": "cap:exact.box@1",
                    "label": "cube",
                    "args": {"length": 20, "width": 20, "height": 20},
                },
                {
                    "id": "round",
                    "capability": "cap:exact.fillet@1",
                    "args": {
                        "target": "b:cube",
                        "edges": {"body": "b:cube", "select": "|Z", "entity": "Edge"},
                        "radius": radius,
                    },
                },
            ],
        }
    )


def test_the_repair_turns_a_refused_fillet_plan_into_a_committed_one(write: WritePath) -> None:
    store = write.repository.store
    base = write.repository.head(MAIN)
    refused = write.apply(fillet_plan(base, 15.0), "too-big")
    assert refused.status == "failed" and refused.data["stage"] == "preview"
    (fillet,) = [d for d in refused.diagnostics if d.code == "FILLET_RADIUS_TOO_LARGE"]
    # both repairs of the code are offered, the first-party one first (sorted by id): the
    # caller chooses; neither is applied
    assert fillet.subject == "round" and fillet.repairs == [FIRST_PARTY, CAP]
    offered = [a for a in refused.next_actions if a.operation == "model.read" and a.capability]
    on = {"code": "FILLET_RADIUS_TOO_LARGE", "step": "round"}
    assert [a.args for a in offered] == [
        {"repair": FIRST_PARTY, "diagnostic": on},
        {"repair": CAP, "diagnostic": on},
    ]
    assert store.branches() == {MAIN: base} and write.repository.head(MAIN) == base

    made = candidate(write.ctx.capabilities, CAP, fillet_plan(base, 15.0), fillet)
    assert made["changes"] == {"radius": {"from": 15.0, "to": 7.5}}
    assert store.branches() == {MAIN: base}, "producing a candidate writes nothing"

    applied = write.apply(Plan.model_validate(made["plan"]), "repaired")
    assert applied.status == "success", [d.to_wire() for d in applied.diagnostics]
    head = write.repository.head(MAIN)
    assert head != base
    volume = 20**3 - 4 * (1 - 3.141592653589793 / 4) * 7.5**2 * 20
    doc = write.repository.document(head)
    assert any(n.op.startswith("exact.fillet@") for n in doc.nodes)
    assert abs(_volume(write, head) - volume) < 1e-3 * volume


def _volume(write: WritePath, rev: str) -> float:
    envelope = write.query(rev, "query.massProperties@1.0.0", {"target": "b:cube"})
    return float(envelope.data["volume"])


def sized_plan(base: str, capability: str, name: str, size: float) -> Plan:
    """Box 20 × 10 × 5 with its vertical edges filleted or chamfered: both fit below 5 mm.
    A body of its own per size input (a label already in the model would name that body)."""
    label = f"{name}Block"
    return Plan.model_validate(
        {
            "baseRevision": base,
            "steps": [
                {
                    "id": "block",
                    "capability": "cap:exact.box@1",
                    "label": label,
                    "args": {"length": 20, "width": 10, "height": 5},
                },
                {
                    "id": "round",
                    "capability": capability,
                    "args": {
                        "target": f"b:{label}",
                        "edges": {"body": f"b:{label}", "select": "|Z", "entity": "Edge"},
                        name: size,
                    },
                },
            ],
        }
    )


@pytest.mark.parametrize(
    ("capability", "code", "name", "limit"),
    [
        ("cap:exact.fillet@1", "FILLET_RADIUS_TOO_LARGE", "radius", "maxRadius"),
        ("cap:exact.chamfer@1", "CHAMFER_TOO_LARGE", "length", "maxLength"),
    ],
    ids=["fillet", "chamfer"],
)
def test_a_refusal_for_size_names_the_step_and_carries_the_size_that_fits(
    write: WritePath, capability: str, code: str, name: str, limit: str
) -> None:
    store = write.repository.store
    base = write.repository.head(MAIN)
    refused = write.apply(sized_plan(base, capability, name, 8.0), f"too-big-{name}")
    assert refused.status == "failed" and refused.data["stage"] == "preview"
    (found,) = [d for d in refused.diagnostics if d.code == code]
    assert found.subject == "round" and found.phase == "preview"
    assert found.actual == {name: 8.0}
    assert found.expected is not None, found.message
    largest = found.expected[limit]
    assert 5.0 - max(0.01, 0.05) <= largest < 5.0  # half the smaller side, 0.01 mm or 1 %
    (wire,) = [d for d in refused.to_wire()["diagnostics"] if d["code"] == code]
    assert wire["expected"] == {limit: largest} and wire["actual"] == {name: 8.0}
    assert store.branches() == {MAIN: base}, "a refusal writes nothing"

    fitted = sized_plan(base, capability, name, round(largest * 0.9, 2))
    applied = write.apply(fitted, f"fits-{name}")
    assert applied.status == "success", [d.to_wire() for d in applied.diagnostics]
    assert write.repository.head(MAIN) != base
