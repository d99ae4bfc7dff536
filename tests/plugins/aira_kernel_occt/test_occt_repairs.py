"""A third-party repair for the OCCT kernel's FILLET_RADIUS_TOO_LARGE: its throwaway package
(own publisher) admitted beside the first-party one; the refused fillet plan lists it, its
candidate halves the radius without writing, and the candidate commits on the real kernel."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.plan import Plan
from aira_core.model.repository import ModelRepository
from aira_core.model.store import MAIN
from aira_core.runtime.plan import PlanContext
from aira_core.runtime.repairs import candidate
from aira_core.runtime.write import WritePath
from aira_core.testing.package import package_source
from aira_core.testing.signing import ThrowawaySigner, trust_policy_for

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CAP = "cap:vendor.fillet.reduceRadius@1"
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
    import aira_kernel_occt.plugin
    from aira_core.catalog.state import CatalogState
    from aira_core.extensions import CapabilityPackageSource
    from aira_core.plugins import Registered, Registry
    from aira_kernel_occt.kernel import OcctKernel
    from aira_kernel_occt.manifest import NAME

    kernel = OcctKernel()
    signer = ThrowawaySigner(PUBLISHER)
    registry = Registry()
    source = CapabilityPackageSource.from_directory(aira_kernel_occt.plugin.PACKAGE_DIR)
    registry.by_type["capability_packages"][NAME] = Registered(source, "occt", "occt")
    m = repair_manifest()
    # no implementations: a declarative template is the core's to evaluate
    registry.by_type["capability_packages"][m["name"]] = Registered(
        package_source(m, signer, []), "vendor", "vendor"
    )
    registry.by_type["kernels"][kernel.name] = Registered(kernel, "occt", "occt")
    tmp = tmp_path_factory.mktemp("repairs")
    state = CatalogState(tmp / "catalog.sqlite3")
    repository = None
    try:
        catalog = build_catalog(registry, trust=trust_policy_for(signer), state=state)
        assert catalog.quarantine == [], catalog.quarantine
        index = capability_index(catalog)
        repository = ModelRepository.open(tmp / "store.sqlite3", node_signatures(index))
        repository.init()
        ctx = PlanContext(
            catalog=catalog, repository=repository, grant=LOCAL_GRANT, capabilities=index
        )
        yield WritePath(ctx, kernel)
    finally:
        if repository is not None:
            repository.close()
        state.close()
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
    assert fillet.subject == "round" and fillet.repairs == [CAP]
    offered = [a for a in refused.next_actions if a.operation == "model.read" and a.capability]
    assert [a.args for a in offered] == [
        {"repair": CAP, "diagnostic": {"code": "FILLET_RADIUS_TOO_LARGE", "step": "round"}}
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
