"""Conformance: does each descriptor's execution target have a real implementation that
agrees with it?

For every capability: the target resolves to a registered implementation declaring the
same exact version; every input example (and the defaultBinding, copied into each example)
passes the implementation's own check; every diagnostic code the implementation can raise
is declared in the descriptor. The result is a report recorded with the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from aira_core.canonical import sha256_hex
from aira_core.contracts.capability import (
    TARGET_REF_PATTERN,
    CapabilityDescriptor,
    CapabilityKind,
)
from aira_core.contracts.package import ConformanceCheck, ConformanceReport, PackageManifest
from aira_core.diagnostics import Diagnostic, FindingCap, redact
from aira_core.extensions import TargetImplementation

CONFORMANCE_TARGET_UNRESOLVED = "CONFORMANCE_TARGET_UNRESOLVED"
CONFORMANCE_VERSION_MISMATCH = "CONFORMANCE_VERSION_MISMATCH"
CONFORMANCE_EXAMPLE_REJECTED = "CONFORMANCE_EXAMPLE_REJECTED"
CONFORMANCE_DEFAULT_BINDING_REJECTED = "CONFORMANCE_DEFAULT_BINDING_REJECTED"
CONFORMANCE_UNDECLARED_DIAGNOSTIC = "CONFORMANCE_UNDECLARED_DIAGNOSTIC"
CONFORMANCE_CHECK_CRASHED = "CONFORMANCE_CHECK_CRASHED"

_TARGET_REF = re.compile(TARGET_REF_PATTERN)
_REASONS_SHOWN = 5
"""How many of an implementation's reasons for rejecting an example one finding quotes."""


class ImplementationIndex:
    """Implementations by exact ref; the first one added for a ref wins (the package's own
    implementations are added before the kernels' and validators')."""

    def __init__(self, implementations: Iterable[TargetImplementation] = ()) -> None:
        self._by_ref: dict[str, TargetImplementation] = {}
        self._versions: dict[str, set[str]] = {}
        self.add(implementations)

    def add(self, implementations: Iterable[TargetImplementation]) -> None:
        for impl in implementations:
            ref = getattr(impl, "ref", None)
            if not isinstance(ref, str) or not _TARGET_REF.match(ref):
                continue
            self._by_ref.setdefault(ref, impl)
            name, version = ref.split("@")
            self._versions.setdefault(name, set()).add(version)

    def get(self, ref: str) -> TargetImplementation | None:
        return self._by_ref.get(ref)

    def versions(self, name: str) -> set[str]:
        return self._versions.get(name, set())

    def overlay(self, implementations: Iterable[TargetImplementation]) -> ImplementationIndex:
        """A new index where ``implementations`` come first, then everything in this one."""
        index = ImplementationIndex(implementations)
        index.add(self._by_ref.values())
        return index


def _run_check(
    impl: TargetImplementation, inputs: Mapping[str, Any]
) -> tuple[list[Diagnostic], str | None]:
    try:
        result = list(impl.check(inputs))
    except Exception as exc:  # the implementation's bug is a finding, not our crash
        return [], redact(f"{type(exc).__name__}: {exc}")
    wrong = [type(x).__name__ for x in result if not isinstance(x, Diagnostic)]
    if wrong:
        return [], f"check returned {', '.join(sorted(set(wrong)))} instead of Diagnostic items"
    return result, None


class _Findings:
    """The findings of one capability's check. A descriptor with thousands of examples, or an
    implementation that raises thousands of codes, must not make a report of thousands of
    findings: the first of each code, then a summary."""

    def __init__(self, d: CapabilityDescriptor, field: str, ref: str) -> None:
        self.cap, self.where, self.ref = d.capability_id, f"{field} {ref}", ref
        self.found: list[Diagnostic] = []
        self._bound = FindingCap(subject=self.cap)

    def fail(self, code: str, message: str) -> None:
        if self._bound.keep(code):
            self.found.append(
                Diagnostic(
                    code=code, subject=self.cap, message=f"{self.cap} ({self.where}): {message}"
                )
            )

    def check(self, implementation: str | None) -> ConformanceCheck:
        """The check: passed when nothing was found (``implementation``: what was checked)."""
        found = self.found + self._bound.summary()
        return ConformanceCheck(
            capability_id=self.cap,
            target=self.ref,
            implementation=implementation,
            passed=not found,
            diagnostics=found,
        )


def check_descriptor(d: CapabilityDescriptor, index: ImplementationIndex) -> ConformanceCheck:
    field, ref = d.target
    findings = _Findings(d, field, ref)
    fail = findings.fail
    impl = index.get(ref)
    if impl is None and d.kind is CapabilityKind.REPAIR and d.patch_template is not None:
        # a declarative repair template is data the core evaluates with the expression
        # language (aira_core.runtime.repairs; lint checks its expressions): no plugin code
        return findings.check("aira_core.runtime.repairs")
    if impl is None:
        name = ref.split("@")[0]
        others = sorted(index.versions(name))
        if others:
            fail(
                CONFORMANCE_VERSION_MISMATCH,
                f"no implementation declares exactly {ref}; registered versions: "
                + ", ".join(f"{name}@{v}" for v in others),
            )
        else:
            fail(CONFORMANCE_TARGET_UNRESOLVED, f"no registered implementation provides {ref}")
        return findings.check(None)

    declared = set(d.diagnostics)
    can_raise = set(getattr(impl, "diagnostics", ()) or ())
    for code in sorted(can_raise - declared):
        fail(
            CONFORMANCE_UNDECLARED_DIAGNOSTIC,
            f"the implementation can raise {code}, which the descriptor does not declare",
        )

    cases: list[tuple[str, str, dict[str, Any]]] = [
        (CONFORMANCE_EXAMPLE_REJECTED, f"input example {j}", dict(ex.input))
        for j, ex in enumerate(d.input_examples)
    ]
    if d.default_binding:
        bases = [dict(ex.input) for ex in d.input_examples] or [{}]
        cases += [
            (
                CONFORMANCE_DEFAULT_BINDING_REJECTED,
                f"defaultBinding copied into input example {j}"
                if d.input_examples
                else "defaultBinding",
                {**b, **d.default_binding},
            )
            for j, b in enumerate(bases)
        ]
    for code, what, inputs in cases:
        diags, crash = _run_check(impl, inputs)
        if crash is not None:
            fail(CONFORMANCE_CHECK_CRASHED, f"the implementation's check raised on {what}: {crash}")
            continue
        if diags:
            more = len(diags) - _REASONS_SHOWN
            fail(
                code,
                f"the implementation rejects {what}: "
                + "; ".join(f"{x.code}: {x.message[:400]}" for x in diags[:_REASONS_SHOWN])
                + (f"; and {more} more" if more > 0 else ""),
            )
        for x in diags:
            if x.code not in declared:
                fail(
                    CONFORMANCE_UNDECLARED_DIAGNOSTIC,
                    f"the implementation raised {x.code} on {what}, which the descriptor "
                    "does not declare",
                )
    return findings.check(ref)


def implementations_fingerprint(
    manifest: PackageManifest, index: ImplementationIndex
) -> str | None:
    """What a package's conformance depends on besides its manifest, or ``None`` when some
    implementation declares no ``fingerprint`` (then it is always checked again)."""
    parts = []
    for d in manifest.descriptors:
        ref = d.target[1]
        if d.kind is CapabilityKind.WORKFLOW:
            continue  # its definition is in the manifest, whose hash the report is keyed by
        impl = index.get(ref)
        fingerprint = getattr(impl, "fingerprint", None) if impl is not None else "missing"
        if not isinstance(fingerprint, str):
            return None
        diagnostics = sorted(getattr(impl, "diagnostics", ()) or ())
        parts.append([ref, fingerprint, diagnostics])
    return sha256_hex(parts)


def check_conformance(
    manifest: PackageManifest,
    index: ImplementationIndex,
    manifest_hash: str,
    now: datetime | None = None,
) -> ConformanceReport:
    checks = [
        check_workflow(d, manifest)
        if d.kind is CapabilityKind.WORKFLOW and d.workflow_ref is not None
        else check_descriptor(d, index)
        for d in manifest.descriptors
    ]
    return ConformanceReport(
        implementations=implementations_fingerprint(manifest, index),
        package=manifest.name,
        version=manifest.version,
        manifest_hash=manifest_hash,
        checked_at=now or datetime.now(UTC),
        passed=all(c.passed for c in checks),
        checks=checks,
    )


def check_workflow(d: CapabilityDescriptor, manifest: PackageManifest) -> ConformanceCheck:
    """A workflow's target is its definition in the manifest: every input example (with the
    defaultBinding) must expand (:func:`aira_core.catalog.workflows.expand_plan`)."""
    from aira_core.catalog.capabilities import capability_entries
    from aira_core.catalog.workflows import expand_plan
    from aira_core.contracts.plan import Plan, PlanStep

    ref = d.workflow_ref or ""
    cap = d.capability_id
    findings = _Findings(d, "workflowRef", ref)
    fail = findings.fail
    entries = capability_entries([(d, manifest.schemas)])
    if ref not in manifest.workflows or cap not in entries:
        fail(CONFORMANCE_TARGET_UNRESOLVED, f"the package has no workflow definition {ref}")
        return findings.check(None)
    inputs = [dict(ex.input) for ex in d.input_examples]
    if d.default_binding:
        inputs = [{**i, **d.default_binding} for i in inputs or [{}]]
    for j, given in enumerate(inputs):
        plan = Plan(
            base_revision="rev:sha256:" + "0" * 64,
            steps=[PlanStep(id="example", capability=cap, args=given)],
        )
        expansion = expand_plan(plan, entries, manifest.workflows)
        for f in expansion.findings:
            fail(
                CONFORMANCE_EXAMPLE_REJECTED,
                f"input example {j} does not expand: {f.code}: {f.message[:400]}",
            )
    return findings.check(ref)
