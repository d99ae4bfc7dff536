"""Reading a capability package: strict JSON, then the manifest model.

Manifest JSON is untrusted. Duplicate keys and NaN/Infinity are refused before anything is
hashed or verified (a duplicate key would let two readers see two different manifests behind
one signature). Model errors become lint diagnostics with stable codes and JSON pointers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aira_core.canonical import MAX_DEPTH, Canonical, CanonicalJSONError, canonical_bytes
from aira_core.catalog.lint import validation_diagnostics
from aira_core.contracts.package import PackageManifest
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import MANIFEST_FILE, SIGNATURE_FILE, CapabilityPackageSource

MANIFEST_MISSING = "MANIFEST_MISSING"
MANIFEST_NOT_JSON = "MANIFEST_NOT_JSON"
MANIFEST_DUPLICATE_KEY = "MANIFEST_DUPLICATE_KEY"
MANIFEST_NOT_CANONICAL = "MANIFEST_NOT_CANONICAL"
PACKAGE_PATH_INVALID = "PACKAGE_PATH_INVALID"


class _StrictJSONError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _StrictJSONError(MANIFEST_DUPLICATE_KEY, f"duplicate key {key!r}")
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise _StrictJSONError(MANIFEST_NOT_JSON, f"{name} is not valid JSON")


def _exact_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # beyond Python's digit limit, far beyond what a double holds exactly
        digits = len(text.lstrip("-"))
        raise _StrictJSONError(
            MANIFEST_NOT_CANONICAL, f"an integer of {digits} digits has no exact JSON value"
        ) from None


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 overflows to Infinity, which JSON does not have
        raise _StrictJSONError(MANIFEST_NOT_JSON, f"number {text} is out of range")
    return value


def loads_strict(data: bytes, name: str = MANIFEST_FILE) -> tuple[Any, Canonical]:
    """``json.loads`` that refuses duplicate keys, NaN/Infinity, nesting deeper than
    :data:`~aira_core.canonical.MAX_DEPTH`, text that is not UTF-8 and values without an
    RFC 8785 form (e.g. integers a double cannot hold). Returns the value and its canonical
    bytes, which signature checks and hashes reuse. Messages name the input as ``name``."""
    try:
        value = json.loads(
            data,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
            parse_int=_exact_int,
        )
        return value, canonical_bytes(value)
    except CanonicalJSONError as exc:
        raise AiraError(MANIFEST_NOT_CANONICAL, f"{name}: {exc}") from None
    except _StrictJSONError as exc:
        raise AiraError(exc.code, f"{name}: {exc}") from None
    except RecursionError:
        raise AiraError(
            MANIFEST_NOT_JSON, f"{name} is nested deeper than {MAX_DEPTH} levels"
        ) from None
    except UnicodeDecodeError as exc:
        raise AiraError(MANIFEST_NOT_JSON, f"{name} is not UTF-8: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise AiraError(
            MANIFEST_NOT_JSON,
            f"{name} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
        ) from None


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
        parsed.diagnostics.extend(validation_diagnostics(exc, parsed.raw, source.name))
    return parsed


def source_from_path(path: str | Path) -> CapabilityPackageSource:
    """A package directory, or a manifest file with ``manifest.sig`` beside it."""
    path = Path(path)
    if path.is_file():
        if path.name != MANIFEST_FILE:
            data = path.read_bytes()
            sig = path.with_name(path.name + ".sig")
            return CapabilityPackageSource(
                name=path.stem,
                manifest=data,
                signature=sig.read_bytes() if sig.is_file() else None,
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
