"""The capability table of a catalog: every admitted capability with its canonical input
schema and operation signature, and the signatures a document's nodes are checked against.

Lint admits no descriptor whose input schema is missing from its package, so in an admitted
catalog every entry has its schema; a descriptor given without one is left out of the table
(it cannot be checked, so it is not offered) rather than given an empty schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aira_core.contracts.capability import CapabilityDescriptor
from aira_core.model.operations import OperationSignature, node_ref, signature_from_schema

if TYPE_CHECKING:
    from aira_core.catalog.catalog import Catalog

__all__ = ["CapabilityEntry", "capability_entries", "capability_index", "node_signatures"]


@dataclass(frozen=True)
class CapabilityEntry:
    descriptor: CapabilityDescriptor
    input_schema: dict[str, Any]
    signature: OperationSignature

    @property
    def ref(self) -> str:
        return self.descriptor.target[1]


def capability_entries(
    items: Iterable[tuple[CapabilityDescriptor, Mapping[str, Mapping[str, Any]]]],
) -> dict[str, CapabilityEntry]:
    """The table of descriptors, each given with its package's schemas, by capability id."""
    out = {}
    for d, schemas in items:
        found = schemas.get(d.inputs.schema_ref)
        if found is None:
            continue
        schema = dict(found)
        out[d.capability_id] = CapabilityEntry(
            d, schema, signature_from_schema(d.target[1], schema)
        )
    return out


def capability_index(catalog: Catalog) -> dict[str, CapabilityEntry]:
    """Every admitted capability of ``catalog`` with its canonical input schema and signature."""
    return capability_entries(
        (d, package.manifest.schemas)
        for package in catalog.packages.values()
        for d in package.manifest.descriptors
    )


def node_signatures(capabilities: Mapping[str, CapabilityEntry]) -> dict[str, OperationSignature]:
    """The signatures of every target a document node may use (an authoring operation's
    ``operationRef``, an importer's ``ioRef``): what a store checks node inputs against."""
    return {e.ref: e.signature for e in capabilities.values() if node_ref(e.descriptor)}
