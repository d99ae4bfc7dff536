"""The production catalog and its quarantine.

A package enters production only if its signature verifies under a trusted, unexpired,
unrevoked key, it is not older than the version admitted before, lint is clean and
conformance passes. Everything else is kept in quarantine with its reasons: nothing a
plugin offers is ever silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aira_core.canonical import sha256_bytes_hex, sha256_hex, sha256_id
from aira_core.catalog import hashes
from aira_core.catalog.conformance import (
    ImplementationIndex,
    check_conformance,
    implementations_fingerprint,
)
from aira_core.catalog.package import ParsedPackage, parse_package
from aira_core.catalog.state import CatalogState
from aira_core.catalog.trust import TrustPolicy, VerifiedSignature
from aira_core.contracts.base import semver_key
from aira_core.contracts.capability import CapabilityDescriptor, TrustInfo
from aira_core.contracts.package import ConformanceReport, PackageManifest
from aira_core.diagnostics import Diagnostic
from aira_core.plugins import Registry, get_registry

CATALOG_ROLLBACK = "CATALOG_ROLLBACK"
CATALOG_DUPLICATE_CAPABILITY = "CATALOG_DUPLICATE_CAPABILITY"
CATALOG_PACKAGE_NAME_MISMATCH = "CATALOG_PACKAGE_NAME_MISMATCH"
CATALOG_LINT_FAILED = "CATALOG_LINT_FAILED"
CATALOG_CONFORMANCE_FAILED = "CATALOG_CONFORMANCE_FAILED"
CATALOG_IMPLEMENTATIONS_FAILED = "CATALOG_IMPLEMENTATIONS_FAILED"
CATALOG_CHECK_CRASHED = "CATALOG_CHECK_CRASHED"
CATALOG_VERSION_CONTENT_CHANGED = "CATALOG_VERSION_CONTENT_CHANGED"

CATALOG_FORMAT = "aira.catalog/1"


@dataclass(frozen=True)
class PackageOrigin:
    plugin: str
    distribution: str
    origin: str

    def to_json(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "distribution": self.distribution, "origin": self.origin}


@dataclass(frozen=True)
class AdmittedPackage:
    manifest: PackageManifest
    manifest_hash: str
    signature: VerifiedSignature
    report: ConformanceReport
    source: PackageOrigin

    def descriptors(self) -> list[CapabilityDescriptor]:
        trust = TrustInfo(
            package=self.manifest.name,
            publisher=self.signature.publisher,
            key_id=self.signature.key_id,
            signature=self.signature.signature,
        )
        return [d.model_copy(update={"trust": trust}) for d in self.manifest.descriptors]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.manifest.name,
            "version": self.manifest.version,
            "publisher": self.manifest.publisher,
            "keyId": self.signature.key_id,
            "manifestHash": self.manifest_hash,
            **self.source.to_json(),
            "capabilities": [d.capability_id for d in self.manifest.descriptors],
            "conformance": {
                "passed": self.report.passed,
                "checkedAt": self.report.checked_at.isoformat(),
            },
        }


@dataclass(frozen=True)
class QuarantinedPackage:
    name: str
    version: str | None
    publisher: str | None
    source: PackageOrigin
    reasons: tuple[Diagnostic, ...]
    report: ConformanceReport | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "publisher": self.publisher,
            **self.source.to_json(),
            "reasons": [r.model_dump(mode="json", exclude_none=True) for r in self.reasons],
        }


@dataclass
class Catalog:
    packages: dict[str, AdmittedPackage] = field(default_factory=dict)
    quarantine: list[QuarantinedPackage] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._capabilities: dict[str, CapabilityDescriptor] | None = None
        self._hashes: dict[str, str] = {}

    def capabilities(self) -> dict[str, CapabilityDescriptor]:
        """Every capability of the production catalog, with its trust filled in."""
        if self._capabilities is None:
            self._capabilities = {
                d.capability_id: d for p in self.packages.values() for d in p.descriptors()
            }
        return self._capabilities

    # A catalog does not change once built, so its hashes are computed once (they cost a
    # second at 10,000 descriptors and every search and task step asks for them).
    def authoring_lock_hash(self) -> str:
        if "lock" not in self._hashes:
            self._hashes["lock"] = hashes.catalog_authoring_lock_hash(
                (d, p.manifest.schemas, p.manifest.workflows)
                for p in self.packages.values()
                for d in p.manifest.descriptors
            )
        return self._hashes["lock"]

    def discovery_catalog_hash(self) -> str:
        if "disc" not in self._hashes:
            self._hashes["disc"] = hashes.catalog_discovery_hash(
                d for p in self.packages.values() for d in p.manifest.descriptors
            )
        return self._hashes["disc"]

    def to_json(self, *, quarantine: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": CATALOG_FORMAT,
            "authoringLockHash": self.authoring_lock_hash(),
            "discoveryCatalogHash": self.discovery_catalog_hash(),
            "packages": [
                p.to_json() for p in sorted(self.packages.values(), key=lambda p: p.manifest.name)
            ],
            "quarantineCount": len(self.quarantine),
        }
        if quarantine:
            out["quarantine"] = [q.to_json() for q in self.quarantine]
        return out


@dataclass
class _Candidate:
    parsed: ParsedPackage
    source: PackageOrigin
    raw_hash: str | None = None
    signature: VerifiedSignature | None = None
    reasons: list[Diagnostic] = field(default_factory=list)
    report: ConformanceReport | None = None

    @property
    def manifest(self) -> PackageManifest:
        assert self.parsed.manifest is not None
        return self.parsed.manifest


def _implementation_index(registry: Registry) -> tuple[ImplementationIndex, list[Diagnostic]]:
    index = ImplementationIndex()
    problems: list[Diagnostic] = []
    for entry in registry.entries("kernels"):
        try:
            index.add(entry.obj.implementations())
        except Exception as exc:  # a kernel's bug leaves its operations unresolved, no crash
            problems.append(
                Diagnostic(
                    code=CATALOG_IMPLEMENTATIONS_FAILED,
                    subject=entry.plugin,
                    message=(
                        f"kernel {entry.obj.name!r} ({entry.distribution}) failed to "
                        f"list its implementations: {type(exc).__name__}: {exc}"
                    ),
                )
            )
    index.add(e.obj for e in registry.entries("validators"))
    return index, problems


def build_catalog(
    registry: Registry | None = None,
    *,
    trust: TrustPolicy | None = None,
    state: CatalogState | None = None,
    now: datetime | None = None,
    on_package: Callable[[str, int, int], None] | None = None,
) -> Catalog:
    """Admit every registered capability package that passes, quarantine the rest.
    ``on_package(name, done, total)`` is called before each package's lint and conformance
    (the slow part of a first build), so a caller can show progress."""
    registry = registry if registry is not None else get_registry()
    trust = trust if trust is not None else TrustPolicy.load()
    own_state = state is None
    state = state if state is not None else CatalogState()
    now = (now if now.tzinfo else now.replace(tzinfo=UTC)) if now else datetime.now(UTC)
    try:
        return _build(registry, trust, state, now, on_package)
    finally:
        if own_state:
            state.close()


def _crash(cand: _Candidate, stage: str, exc: Exception) -> None:
    # A check that crashes on one package's data is a bug to fix, but it must cost only that
    # package its admission, never the catalog.
    cand.reasons.append(
        Diagnostic(
            code=CATALOG_CHECK_CRASHED,
            subject=cand.parsed.source.name,
            message=(
                f"{stage} crashed on this package: {type(exc).__name__}: {exc} "
                "(a bug in aira; the package stays in quarantine)"
            ),
        )
    )


def _admissible(
    cand: _Candidate,
    trust: TrustPolicy,
    state: CatalogState,
    now: datetime,
    admitted_before: dict[tuple[str, str], str],
) -> None:
    """Parse, name, signature and version checks of one candidate (reasons on failure)."""
    src = cand.parsed.source
    if cand.parsed.diagnostics or cand.parsed.manifest is None:
        cand.reasons.extend(cand.parsed.diagnostics)
        return
    m = cand.manifest
    if m.name != src.name:
        cand.reasons.append(
            Diagnostic(
                code=CATALOG_PACKAGE_NAME_MISMATCH,
                subject=src.name,
                message=f"registered as {src.name!r} but the manifest names {m.name!r}",
            )
        )
        return
    verified = trust.verify(cand.parsed.canonical, m.publisher, src.signature, now)
    if isinstance(verified, Diagnostic):
        cand.reasons.append(verified.model_copy(update={"subject": m.name}))
        return
    cand.signature = verified
    cand.raw_hash = sha256_id("pkg", cand.parsed.canonical)
    before = admitted_before.get((m.publisher, m.name))
    if before is not None and semver_key(m.version) < semver_key(before):
        cand.reasons.append(
            Diagnostic(
                code=CATALOG_ROLLBACK,
                subject=m.name,
                message=f"{m.name} {m.version} of {m.publisher} is older than the admitted "
                f"{before}; a rollback is refused",
            )
        )
        return
    seen = state.seen_hash(m.publisher, m.name, m.version)
    if seen is not None and seen != cand.raw_hash:
        cand.reasons.append(
            Diagnostic(
                code=CATALOG_VERSION_CONTENT_CHANGED,
                subject=m.name,
                message=f"{m.name} {m.version} was admitted before with other content; a "
                "changed manifest needs a new version",
            )
        )


def _reused_report(
    state: CatalogState, cand: _Candidate, index: ImplementationIndex
) -> ConformanceReport | None:
    """A passed report of this very manifest against the same implementations, if any."""
    fingerprint = implementations_fingerprint(cand.manifest, index)
    if fingerprint is None:
        return None
    m = cand.manifest
    report = state.report(m.name, m.version, cand.raw_hash or "")
    if report is not None and report.passed and report.implementations == fingerprint:
        return report
    return None


def lint_manifest(
    manifest: PackageManifest, *, known_capabilities: set[str] | None = None
) -> list[Diagnostic]:
    """:func:`aira_core.catalog.lint.lint_manifest`, imported when a manifest is linted
    (it needs jsonschema, which a start that reuses lint results never imports)."""
    from aira_core.catalog.lint import lint_manifest as lint

    return lint(manifest, known_capabilities=known_capabilities)


def _lint_context(known: set[str]) -> str:
    """What a clean lint of a manifest depends on besides the manifest: the other capability
    ids its relations may name, and the lint code (read, not imported: a reused lint never
    imports jsonschema)."""
    from pathlib import Path

    here = Path(__file__).parent
    try:
        code = [sha256_bytes_hex((here / name).read_bytes()) for name in _LINT_CODE]
    except OSError:  # no source to compare: lint every time
        code = [sha256_hex([str(datetime.now(UTC))])]
    return sha256_hex({"known": sorted(known), "code": code})


_LINT_CODE = (
    "lint.py",
    "predicates.py",
    "expressions.py",
    "../contracts/capability.py",
    "../contracts/base.py",
    "../contracts/workflow.py",
)


def _build(
    registry: Registry,
    trust: TrustPolicy,
    state: CatalogState,
    now: datetime,
    on_package: Callable[[str, int, int], None] | None = None,
) -> Catalog:
    shared_index, index_problems = _implementation_index(registry)
    admitted_before = state.admitted_versions()
    candidates: list[_Candidate] = []
    for entry in registry.entries("capability_packages"):
        src = entry.obj
        origin = PackageOrigin(entry.plugin, entry.distribution, src.origin)
        cand = _Candidate(ParsedPackage(src), origin)
        candidates.append(cand)
        try:
            cand.parsed = parse_package(src)
            _admissible(cand, trust, state, now, admitted_before)
        except Exception as exc:
            _crash(cand, "reading and verifying", exc)

    live = [c for c in candidates if not c.reasons]
    known = {d.capability_id for c in live for d in c.manifest.descriptors}
    lint_context = _lint_context(known)
    for done, cand in enumerate(live):
        if on_package is not None:
            on_package(cand.manifest.name, done, len(live))
        try:
            m = cand.manifest
            if not state.lint_passed(m.name, m.version, cand.raw_hash or "", lint_context):
                findings = lint_manifest(cand.manifest, known_capabilities=known)
                if findings:
                    cand.reasons.extend(findings)
                    continue
            index = shared_index.overlay(cand.parsed.source.implementations)
            cand.report = _reused_report(state, cand, index) or check_conformance(
                cand.manifest, index, cand.raw_hash or "", now
            )
        except Exception as exc:
            _crash(cand, "lint and conformance", exc)
            continue
        if not cand.report.passed:
            cand.reasons.extend(d for c in cand.report.checks for d in c.diagnostics)
            cand.reasons.extend(index_problems)

    _quarantine_duplicate_capabilities([c for c in candidates if not c.reasons])

    catalog = Catalog()
    for cand in candidates:
        if cand.reasons:
            m = cand.parsed.manifest
            catalog.quarantine.append(
                QuarantinedPackage(
                    name=m.name if m else cand.parsed.source.name,
                    version=m.version if m else None,
                    publisher=m.publisher if m else None,
                    source=cand.source,
                    reasons=tuple(cand.reasons),
                    report=cand.report,
                )
            )
            continue
        assert cand.signature is not None and cand.report is not None
        state.record_admission(cand.manifest.publisher, cand.report, lint_context)
        catalog.packages[cand.manifest.name] = AdmittedPackage(
            cand.manifest, cand.raw_hash or "", cand.signature, cand.report, cand.source
        )
    catalog.quarantine.sort(key=lambda q: q.name)
    return catalog


def _quarantine_duplicate_capabilities(candidates: Iterable[_Candidate]) -> None:
    """A capability id offered by two packages quarantines both: which one should win is not
    ours to guess, and letting either through is how one package shadows another."""
    owners: dict[str, list[_Candidate]] = {}
    for cand in candidates:
        for d in cand.manifest.descriptors:
            owners.setdefault(d.capability_id, []).append(cand)
    for cap, cands in owners.items():
        if len(cands) < 2:
            continue
        names = [c.manifest.name for c in cands]
        for cand in cands:
            cand.reasons.append(
                Diagnostic(
                    code=CATALOG_DUPLICATE_CAPABILITY,
                    subject=cap,
                    message=f"{cap} is declared by packages {', '.join(sorted(names))} "
                    f"({', '.join(sorted({c.source.distribution for c in cands}))})",
                )
            )
