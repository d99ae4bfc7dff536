"""The three identities of the capability layers (RFC-0002 §4):

- ``authoringLockHash`` (``lock:sha256:…``): the semantic descriptor fields, canonical
  defaults, defaultBinding and every schema they reference; changes when meaning changes.
- ``discoveryCatalogHash`` (``disc:sha256:…``): the profile (titles, summaries, aliases,
  examples, relations, guidance); changes when only what a model is shown changes.
- runtime snapshot hash (``runtime:sha256:…``): the runtime's identity, without its volatile load.

Per capability and for a whole catalog: a catalog hash is over the map of capability id to
the per-capability hash, so one capability's hash is reusable on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aira_core.canonical import sha256_id
from aira_core.contracts.capability import CapabilityDescriptor, RuntimeCapabilitySnapshot

Schemas = Mapping[str, Mapping[str, Any]]


def _locked(
    descriptor: CapabilityDescriptor, schemas: Schemas, workflows: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """What the authoring lock covers for one capability: for a workflow also its definition
    (its template is what the capability means)."""
    locked = {
        "semantic": descriptor.semantic().to_wire(),
        "schemas": {ref: schemas.get(ref) for ref in descriptor.schema_refs()},
    }
    ref = descriptor.workflow_ref
    if ref is not None and workflows and ref in workflows:
        definition = workflows[ref]
        locked["workflow"] = definition.to_wire() if hasattr(definition, "to_wire") else definition
    return locked


def authoring_lock_hash(
    descriptor: CapabilityDescriptor, schemas: Schemas, workflows: Mapping[str, Any] | None = None
) -> str:
    return sha256_id("lock", _locked(descriptor, schemas, workflows))


def discovery_hash(descriptor: CapabilityDescriptor) -> str:
    return sha256_id("disc", descriptor.profile().to_wire())


def catalog_authoring_lock_hash(items: Iterable[tuple[Any, ...]]) -> str:
    """Lock hash of a set of capabilities, each with the schemas of its package (and its
    workflow definitions: ``(descriptor, schemas, workflows)``)."""
    return sha256_id("lock", {item[0].capability_id: authoring_lock_hash(*item) for item in items})


def catalog_discovery_hash(descriptors: Iterable[CapabilityDescriptor]) -> str:
    return sha256_id("disc", {d.capability_id: discovery_hash(d) for d in descriptors})


def runtime_snapshot_hash(snapshot: RuntimeCapabilitySnapshot) -> str:
    return sha256_id("runtime", snapshot.identity())
