"""The layer hashes: profile edits move only the discovery hash, semantic edits move the
authoring lock hash, and the runtime hash ignores volatile load."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from factory import manifest, mutate

from aira_core.catalog import hashes
from aira_core.contracts.capability import (
    CapabilityDescriptor,
    RuntimeCapabilitySnapshot,
    RuntimeComponent,
    RuntimeLoad,
)
from aira_core.contracts.package import PackageManifest


def both(m):  # type: ignore[no-untyped-def]
    pm = PackageManifest.model_validate(m)
    d = pm.descriptors[2]  # the sketch, which has a defaultBinding
    return hashes.authoring_lock_hash(d, pm.schemas), hashes.discovery_hash(d)


def catalog_both(m):  # type: ignore[no-untyped-def]
    pm = PackageManifest.model_validate(m)
    return (
        hashes.catalog_authoring_lock_hash((d, pm.schemas) for d in pm.descriptors),
        hashes.catalog_discovery_hash(pm.descriptors),
    )


PROFILE_EDITS = {
    "intent example": lambda d: d["intentExamples"].append("draw a rectangle"),
    "title": lambda d: d.update(title="Rectangle"),
    "summary": lambda d: d.update(summary="A rectangle."),
    "aliases": lambda d: d.update(aliases=["rect"]),
    "relations": lambda d: d.update(relations={"composesWith": ["cap:test.box@1"]}),
    "guidance": lambda d: d.update(guidance={"whenToUse": ["closed profiles"]}),
    "input example": lambda d: d["inputExamples"][0]["input"].update(width=31),
}

SEMANTIC_EDITS = {
    "defaultBinding": lambda d: d["defaultBinding"]["plane"].update(normal=[0, 1, 0]),
    "risk": lambda d: d["risk"].update(level="medium"),
    "diagnostics": lambda d: d.update(diagnostics=["SKETCH_DEGENERATE"]),
    "defaults": lambda d: d.update(defaults={"width": 10}),
    "operation version": lambda d: d.update(operationRef="test.sketch@1.0.1"),
}


@pytest.mark.parametrize("edit", PROFILE_EDITS.values(), ids=PROFILE_EDITS.keys())
def test_profile_edit_changes_only_the_discovery_hash(edit) -> None:  # type: ignore[no-untyped-def]
    base = manifest()
    edited = mutate(base, lambda m: edit(m["descriptors"][2]))
    (lock0, disc0), (lock1, disc1) = both(base), both(edited)
    assert lock0 == lock1
    assert disc0 != disc1
    assert catalog_both(base)[0] == catalog_both(edited)[0]
    assert catalog_both(base)[1] != catalog_both(edited)[1]


@pytest.mark.parametrize("edit", SEMANTIC_EDITS.values(), ids=SEMANTIC_EDITS.keys())
def test_semantic_edit_changes_the_authoring_lock_hash(edit) -> None:  # type: ignore[no-untyped-def]
    base = manifest()
    edited = mutate(base, lambda m: edit(m["descriptors"][2]))
    (lock0, disc0), (lock1, disc1) = both(base), both(edited)
    assert lock0 != lock1
    assert disc0 == disc1
    assert catalog_both(base)[0] != catalog_both(edited)[0]


def test_schema_edit_changes_the_authoring_lock_hash() -> None:
    base = manifest()
    edited = mutate(
        base,
        lambda m: m["schemas"]["amir://ops/test.sketch/1.0.0/input"]["properties"]["width"].update(
            maximum=1000
        ),
    )
    assert both(base)[0] != both(edited)[0]
    assert both(base)[1] == both(edited)[1]


def test_hash_formats_and_key_order_independence() -> None:
    lock, disc = both(manifest())
    assert lock.startswith("lock:sha256:") and len(lock) == len("lock:sha256:") + 64
    assert disc.startswith("disc:sha256:")
    d = manifest()["descriptors"][2]
    reordered = dict(reversed(list(d.items())))
    a = CapabilityDescriptor.model_validate(d)
    b = CapabilityDescriptor.model_validate(reordered)
    assert hashes.discovery_hash(a) == hashes.discovery_hash(b)


def test_semantic_and_profile_projections_cover_the_descriptor() -> None:
    """Every descriptor field belongs to one layer (or both, for the id), none is lost."""
    from aira_core.contracts.capability import CapabilityProfile, SemanticOperationDescriptor

    fields = set(CapabilityDescriptor.model_fields) - {"trust"}
    assert fields == set(SemanticOperationDescriptor.model_fields) | set(
        CapabilityProfile.model_fields
    )
    assert set(SemanticOperationDescriptor.model_fields) & set(CapabilityProfile.model_fields) == {
        "capability_id"
    }


def snapshot(**kw):  # type: ignore[no-untyped-def]
    base = dict(
        captured_at=datetime(2026, 1, 1, tzinfo=UTC),
        components=[
            RuntimeComponent(
                name="occt",
                role="kernel",
                build_hash="b1",
                supported_operations=["exact.box@1.0.0"],
            )
        ],
    )
    return RuntimeCapabilitySnapshot(**{**base, **kw})


def test_runtime_snapshot_hash() -> None:
    h = hashes.runtime_snapshot_hash(snapshot())
    assert h.startswith("runtime:sha256:")
    assert h == hashes.runtime_snapshot_hash(
        snapshot(captured_at=datetime(2026, 6, 1, tzinfo=UTC), load=RuntimeLoad(queue_depth=7))
    )
    other = snapshot(components=[RuntimeComponent(name="occt", role="kernel", build_hash="b2")])
    assert h != hashes.runtime_snapshot_hash(other)
