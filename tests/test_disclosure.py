"""Progressive disclosure (RFC-0002 §7) over the runtime test package: L0 does not grow with
the catalog, small catalogs are inlined, L2/L3/L4 and the describe cap."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import BOX_CAP, FILLET_CAP, admit, runtime_manifest

from aira_core.canonical import canonical_bytes
from aira_core.catalog import disclosure
from aira_core.catalog.disclosure import Disclosure
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.capability import Applicability, Authorization
from aira_core.diagnostics import AiraError

META = ["interface.manifest", "catalog.search", "catalog.describe"]


def with_copies(n: int) -> dict[str, Any]:
    """The runtime test package plus ``n`` renamed copies of its box (a bigger catalog)."""
    m = copy.deepcopy(runtime_manifest())
    box = next(d for d in m["descriptors"] if d["capabilityId"] == BOX_CAP)
    for i in range(n):
        extra = copy.deepcopy(box)
        extra["capabilityId"] = f"cap:exact.box{i}@1"
        m["descriptors"].append(extra)
    return m


def test_l0_bytes_do_not_grow_with_the_catalog(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(disclosure, "SMALL_CATALOG_BYTES", 0)  # no inlining
    small = Disclosure(admit(tmp_path / "a").catalog).manifest(meta_operations=META)
    large = Disclosure(admit(tmp_path / "b", with_copies(40)).catalog).manifest(
        meta_operations=META
    )
    assert small["smallCatalog"] is False and "contracts" not in small
    assert len(canonical_bytes(small)) == len(canonical_bytes(large))
    assert small["snapshots"] != large["snapshots"]  # same size, different catalogs
    assert small["limits"]["maxTopK"] == 32


def test_a_small_catalog_is_inlined_with_what_the_grant_allows(tmp_path: Path) -> None:
    catalog = admit(tmp_path).catalog
    everything = Disclosure(catalog, grant=LOCAL_GRANT).manifest(meta_operations=META)
    assert everything["smallCatalog"] is True
    assert set(everything["contracts"]) == set(catalog.capabilities())
    reader = LOCAL_GRANT.model_copy(update={"write_classes": [], "grant_id": "grant:reader"})
    readable = Disclosure(catalog, grant=reader).manifest(meta_operations=META)
    assert BOX_CAP not in readable["contracts"]
    assert len(canonical_bytes(readable)) < len(canonical_bytes(everything))


def test_l2_contract_l3_guidance_and_l4_applicability(tmp_path: Path) -> None:
    d = Disclosure(admit(tmp_path).catalog, grant=LOCAL_GRANT)
    contract = d.contract(FILLET_CAP)
    assert contract["operationRef"] == "exact.fillet@1.0.0"
    assert contract["inputSchema"]["required"] == ["target", "edges", "radius"]
    assert contract["contractHash"].startswith("contract:sha256:")
    assert contract == d.contract(FILLET_CAP)  # stable
    l3 = d.describe(FILLET_CAP, "L3")
    assert l3["contract"] == contract and "inputExamples" in l3["guidance"]
    l4 = d.describe(FILLET_CAP, "L4", revision="rev:x", revision_types=[], selection_refs=[])
    view = l4["applicability"]
    assert view["applicability"] == Applicability.NOT_APPLICABLE.value  # no solid to fillet
    assert view["authorization"] == Authorization.ALLOWED.value
    assert view["basis"]["grantId"] == LOCAL_GRANT.grant_id


def test_describe_refuses_unknown_capabilities_and_levels(tmp_path: Path) -> None:
    d = Disclosure(admit(tmp_path).catalog)
    with pytest.raises(AiraError) as unknown:
        d.describe("cap:nowhere.at.all@1")
    assert unknown.value.code == "DESCRIBE_CAPABILITY_UNKNOWN"
    with pytest.raises(AiraError) as level:
        d.describe(FILLET_CAP, "L1")
    assert level.value.code == "DESCRIBE_LEVEL_INVALID"


def test_describe_answers_are_capped(tmp_path: Path, monkeypatch) -> None:
    d = Disclosure(admit(tmp_path).catalog)
    full = d.describe(FILLET_CAP, "L3")
    contract_only = len(canonical_bytes({**full, "guidance": {}, "truncated": True}))
    monkeypatch.setattr(disclosure, "MAX_DESCRIBE_BYTES", contract_only + 40)
    trimmed = d.describe(FILLET_CAP, "L3")
    assert trimmed["truncated"] is True
    assert len(canonical_bytes(trimmed)) <= contract_only + 40
    monkeypatch.setattr(disclosure, "MAX_DESCRIBE_BYTES", 100)
    with pytest.raises(AiraError) as too_big:
        d.describe(FILLET_CAP, "L2")
    assert too_big.value.code == "DESCRIBE_TOO_LARGE"
