"""Reading a capability package: strict JSON, then the manifest model.

Manifest JSON is untrusted. Duplicate keys and NaN/Infinity are refused before anything is
hashed or verified (a duplicate key would let two readers see two different manifests behind
one signature). Model errors become lint diagnostics with stable codes and JSON pointers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aira_core import canonical
from aira_core.canonical import Canonical
from aira_core.contracts.package import PackageManifest
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import (
    MANIFEST_FILE,
    SIGNATURE_FILE,
    CapabilityPackageSource,
    read_signature,
)
from aira_core.inputs import read_input

MANIFEST_MISSING = "MANIFEST_MISSING"
MANIFEST_NOT_JSON = "MANIFEST_NOT_JSON"
MANIFEST_DUPLICATE_KEY = "MANIFEST_DUPLICATE_KEY"
MANIFEST_NOT_CANONICAL = "MANIFEST_NOT_CANONICAL"
PACKAGE_PATH_INVALID = "PACKAGE_PATH_INVALID"


_CODES = {
    "syntax": MANIFEST_NOT_JSON,
    "duplicate-key": MANIFEST_DUPLICATE_KEY,
    "not-canonical": MANIFEST_NOT_CANONICAL,
}


def loads_strict(data: bytes, name: str = MANIFEST_FILE) -> tuple[Any, Canonical]:
    """:func:`aira_core.canonical.loads_strict` with the manifest's codes
    (``MANIFEST_NOT_JSON``, ``MANIFEST_DUPLICATE_KEY``, ``MANIFEST_NOT_CANONICAL``)."""
    try:
        return canonical.loads_strict(data, name)
    except canonical.StrictJSONError as exc:
        raise AiraError(_CODES[exc.kind], str(exc)) from None


@dataclass
class ParsedPackage:
    """A package read as far as it could be: raw JSON, the model, and what went wrong."""

    source: CapabilityPackageSource
    raw: Any = None
    canonical: Canonical | None = None
    """The manifest's RFC 8785 bytes: what the signature covers and the package hash hashes."""
    manifest: PackageManifest | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def parse_package(source: CapabilityPackageSource) -> ParsedPackage:
    """Parse a package's manifest; never raises for bad input."""
    parsed = ParsedPackage(source)
    if source.read_error is not None:  # a FIFO, a device, a manifest over the size cap
        parsed.diagnostics.append(source.read_error.model_copy(update={"subject": source.name}))
        return parsed
    if not source.manifest:
        parsed.diagnostics.append(
            Diagnostic(
                code=MANIFEST_MISSING,
                subject=source.name,
                message=f"package {source.name!r} has no manifest.json",
            )
        )
        return parsed
    try:
        parsed.raw, parsed.canonical = loads_strict(source.manifest)
    except AiraError as exc:
        parsed.diagnostics.append(exc.diagnostic.model_copy(update={"subject": source.name}))
        return parsed
    try:
        # Wire names only: a manifest has one spelling, so one hash (no snake_case aliases).
        parsed.manifest = PackageManifest.model_validate(parsed.raw, by_name=False)
    except ValidationError as exc:
        from aira_core.catalog.lint import validation_diagnostics  # imports jsonschema

        parsed.diagnostics.extend(validation_diagnostics(exc, parsed.raw, source.name))
    return parsed


def source_from_path(path: str | Path) -> CapabilityPackageSource:
    """A package directory, or a manifest file with ``manifest.sig`` beside it."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        # A file of any kind: the one input reader refuses all but a regular file within
        # the JSON cap (a FIFO, /dev/zero), here or in from_directory.
        if path.name != MANIFEST_FILE:
            sig = path.with_name(path.name + ".sig")
            return CapabilityPackageSource(
                name=path.stem,
                manifest=read_input(path, "json", what="manifest"),
                signature=read_signature(sig),
                origin=path.name,
            )
        path = path.parent
    if not path.is_dir():
        raise AiraError(
            PACKAGE_PATH_INVALID,
            f"{path.name or str(path)!r} is neither a package directory nor a manifest file",
        )
    return CapabilityPackageSource.from_directory(path)


def signature_path(path: str | Path) -> Path:
    """Where ``aira catalog sign`` writes the signature for a package path."""
    path = Path(path)
    if path.is_dir():
        return path / SIGNATURE_FILE
    if path.name == MANIFEST_FILE:
        return path.with_name(SIGNATURE_FILE)
    return path.with_name(path.name + ".sig")
