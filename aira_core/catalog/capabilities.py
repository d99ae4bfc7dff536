"""The capability table of a catalog: every admitted capability with its canonical input
schema and operation signature, and the signatures a document's nodes are checked against.

Lint admits no descriptor whose input schema is missing from its package, so in an admitted
catalog every entry has its schema; a descriptor given without one is left out of the table
(it cannot be checked, so it is not offered) rather than given an empty schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aira_core.contracts.capability import CapabilityDescriptor
from aira_core.contracts.package import PackageManifest
from aira_core.model.operations import OperationSignature, node_ref, signature_from_schema

__all__ = [
    "CapabilityEntry",
    "capability_entries",
    "capability_index",
    "flat_tool_name",
    "flat_tools",
    "node_signatures",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")
NAME_MAX = 64  # the longest tool name the major model APIs accept


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


class _Package(Protocol):
    @property
    def manifest(self) -> PackageManifest: ...


class _Admitted(Protocol):
    """What the index reads of a :class:`~aira_core.catalog.catalog.Catalog` (which checks
    workflows, and so the table, while it admits: the table is below it)."""

    @property
    def packages(self) -> Mapping[str, _Package]: ...


def capability_index(catalog: _Admitted) -> dict[str, CapabilityEntry]:
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


def flat_tool_name(capability_id: str) -> str:
    """``cap:exact.box@1`` → ``exact_box_1`` (letters, digits and ``_``, at most 64)."""
    return _UNSAFE.sub("_", capability_id.removeprefix("cap:")).strip("_")[:NAME_MAX]


def flat_tools(
    capabilities: Mapping[str, CapabilityEntry],
    contracts: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One tool definition per capability (``name``, ``description``, the full
    ``inputSchema``), as a flat MCP server lists them: the projection Aira's bounded
    disclosure is measured against (benchmarks/bench_mcp.py).

    With ``contracts`` (each capability's L2 contract,
    :meth:`~aira_core.catalog.disclosure.Disclosure.contract`), each tool carries its whole
    contract, as a flat client that must write legal steps without a describe has to list
    them (``aira bench capsule``, issue 20): ``outputSchema`` in its MCP field and the rest
    (preconditions, effects, diagnostics, risk, ...) in ``_meta``."""
    tools, names = [], set()
    for capability_id, entry in capabilities.items():
        name = flat_tool_name(capability_id)
        n = 1
        while name in names:  # two ids that sanitise alike still get two tools
            n += 1
            suffix = f"_{n}"
            name = flat_tool_name(capability_id)[: NAME_MAX - len(suffix)] + suffix
        names.add(name)
        summary = entry.descriptor.summary
        tool: dict[str, Any] = {
            "name": name,
            "description": summary,
            "inputSchema": entry.input_schema,
        }
        contract = (contracts or {}).get(capability_id)
        if contract is not None:
            rest = {
                k: v
                for k, v in contract.items()
                if k not in {"summary", "inputSchema", "outputSchema"}
            }
            if "outputSchema" in contract:
                tool["outputSchema"] = contract["outputSchema"]
            tool["_meta"] = {"aira.dev/contract": rest}
        tools.append(tool)
    return tools
