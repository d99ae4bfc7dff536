"""The objects a plugin registers through the hooks in :mod:`aira_core.hookspecs`.

Every registered object has a ``name``; two objects of one type with the same name are a
load error naming both distributions. These types are deliberately small: the runtime,
gateway and step host grow the protocols they call when they are built, and a plugin only
ever imports from here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from aira_core.diagnostics import Diagnostic

MANIFEST_FILE = "manifest.json"
SIGNATURE_FILE = "manifest.sig"


@runtime_checkable
class TargetImplementation(Protocol):
    """The implementation behind one execution target of a capability descriptor.

    ``ref`` is the exact target it implements, e.g. ``exact.box@1.0.0``; ``diagnostics`` are
    every code it can raise; ``check`` validates a complete input binding and returns the
    diagnostics it would raise for it (empty when the input is acceptable). Conformance
    calls ``check`` with every input example and the defaultBinding of the descriptor.
    """

    ref: str
    diagnostics: frozenset[str]

    def check(self, inputs: Mapping[str, Any]) -> Sequence[Diagnostic]: ...


@dataclass(frozen=True)
class Implementation:
    """A ready-made :class:`TargetImplementation` from a check function."""

    ref: str
    check_inputs: Callable[[Mapping[str, Any]], Sequence[Diagnostic]]
    diagnostics: frozenset[str] = frozenset()

    def check(self, inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        return self.check_inputs(inputs)


@dataclass(frozen=True)
class CapabilityPackageSource:
    """A signed capability package as a plugin ships it: the manifest and signature bytes
    exactly as on disk, plus the implementations behind its execution targets.

    The bytes are untrusted until the catalog has verified, linted and conformance-tested
    them; nothing here is parsed at registration time, so a broken manifest ends in
    quarantine rather than in a failed plugin load.
    """

    name: str
    manifest: bytes
    signature: bytes | None
    implementations: Sequence[TargetImplementation] = ()
    origin: str = ""
    """Where the bytes came from, for messages (a path relative to the plugin, never absolute)."""

    @classmethod
    def from_directory(
        cls,
        path: str | Path,
        implementations: Sequence[TargetImplementation] = (),
        *,
        name: str | None = None,
        origin: str | None = None,
    ) -> CapabilityPackageSource:
        """Read ``manifest.json`` and ``manifest.sig`` (if present) from a package directory.

        ``name`` defaults to the manifest's own name (or the directory name if the manifest
        cannot be read), so that a malformed package still shows up, quarantined, by name.
        """
        path = Path(path)
        manifest_path = path / MANIFEST_FILE
        manifest = manifest_path.read_bytes() if manifest_path.is_file() else b""
        sig_path = path / SIGNATURE_FILE
        signature = sig_path.read_bytes() if sig_path.is_file() else None
        if name is None:
            try:
                name = str(json.loads(manifest)["name"])
            except (ValueError, KeyError, TypeError):
                name = path.name
        return cls(
            name=name,
            manifest=manifest,
            signature=signature,
            implementations=tuple(implementations),
            origin=origin if origin is not None else path.name,
        )


@runtime_checkable
class Kernel(Protocol):
    """A geometry kernel: its name, a build hash for runtime snapshots, and the operation
    implementations it provides (each with an exact version)."""

    name: str
    build_hash: str

    def implementations(self) -> Sequence[TargetImplementation]: ...


@runtime_checkable
class Validator(TargetImplementation, Protocol):
    """A validator implementation for a ``validatorRef`` contract, registered by name."""

    name: str


@runtime_checkable
class Provider(Protocol):
    """A model provider adapter: ``name`` is its providerId, ``models`` the models it serves."""

    name: str
    models: Sequence[str]


@runtime_checkable
class Transport(Protocol):
    """A decision transport (``tool``, ``json``, strict structured output)."""

    name: str


@runtime_checkable
class Integration(Protocol):
    """An Intent Loop / Continuity / Guard adapter; ``role`` says which of the three."""

    name: str
    role: str


@dataclass(frozen=True)
class ExtensionType:
    """One kind of registrable object: the hook that registers it and the type it must have."""

    key: str
    hook: str
    protocol: type
    description: str = field(default="")


EXTENSION_TYPES: tuple[ExtensionType, ...] = (
    ExtensionType(
        "capability_packages",
        "aira_register_capability_packages",
        CapabilityPackageSource,
        "signed capability packages",
    ),
    ExtensionType("kernels", "aira_register_kernels", Kernel, "geometry kernels"),
    ExtensionType("validators", "aira_register_validators", Validator, "validator implementations"),
    ExtensionType("providers", "aira_register_providers", Provider, "model provider adapters"),
    ExtensionType("transports", "aira_register_transports", Transport, "decision transports"),
    ExtensionType(
        "integrations",
        "aira_register_integrations",
        Integration,
        "Intent Loop / Continuity / Guard adapters",
    ),
)
