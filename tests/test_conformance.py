"""Tests for conformance: descriptors against the implementations behind their targets."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from factory import PLANE_BINDING, accept_all, fake_implementations, manifest, mutate

from aira_core.catalog.conformance import ImplementationIndex, check_conformance, check_descriptor
from aira_core.contracts.package import ConformanceReport, PackageManifest
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import Implementation

BOX = "cap:test.box@1"
SKETCH = "cap:test.sketch@1"
HASH = "pkg:0123456789abcdef"
NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def _model(m: Mapping[str, Any]) -> PackageManifest:
    return PackageManifest.model_validate(m)


def _descriptor(m: Mapping[str, Any], cap: str) -> Any:
    return next(d for d in _model(m).descriptors if d.capability_id == cap)


def _codes(check: Any) -> list[str]:
    return [d.code for d in check.diagnostics]


def _reject_nonpositive_length(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
    if inputs.get("length", 1) > 0:
        return []
    return [Diagnostic(code="BOX_DIMENSION_NONPOSITIVE", message="length must be > 0")]


def test_all_targets_implemented_and_accepting() -> None:
    """A package whose implementations accept every example passes, one check each."""
    m = manifest()
    report = check_conformance(_model(m), ImplementationIndex(fake_implementations(m)), HASH, NOW)
    assert report.passed
    assert [c.capability_id for c in report.checks] == [
        "cap:test.box@1",
        "cap:test.fillet@1",
        "cap:test.sketch@1",
    ]
    for check in report.checks:
        assert check.passed
        assert check.diagnostics == []
        assert check.implementation == check.target
    assert [c.target for c in report.checks] == [
        "test.box@1.0.0",
        "test.fillet@1.0.0",
        "test.sketch@1.0.0",
    ]


def test_missing_implementation() -> None:
    """A target nobody implements is unresolved, and the package does not pass."""
    m = manifest()
    impls = [i for i in fake_implementations(m) if i.ref != "test.box@1.0.0"]
    report = check_conformance(_model(m), ImplementationIndex(impls), HASH, NOW)
    assert not report.passed
    box, fillet, sketch = report.checks
    assert _codes(box) == ["CONFORMANCE_TARGET_UNRESOLVED"]
    assert box.implementation is None
    assert not box.passed
    assert BOX in box.diagnostics[0].message
    assert box.diagnostics[0].subject == BOX
    assert fillet.passed and sketch.passed


def test_other_version_registered() -> None:
    """A registered implementation of another exact version is a version mismatch naming it."""
    m = manifest()
    other = Implementation(
        ref="test.box@1.1.0",
        check_inputs=accept_all,
        diagnostics=frozenset({"BOX_DIMENSION_NONPOSITIVE"}),
    )
    check = check_descriptor(_descriptor(m, BOX), ImplementationIndex([other]))
    assert _codes(check) == ["CONFORMANCE_VERSION_MISMATCH"]
    assert "test.box@1.1.0" in check.diagnostics[0].message
    assert "test.box@1.0.0" in check.diagnostics[0].message
    assert not check.passed
    assert check.implementation is None


def test_example_rejected() -> None:
    """An implementation that rejects a documented input example fails conformance."""
    m = mutate(
        manifest(),
        lambda m: m["descriptors"][0]["inputExamples"].append(
            {"title": "flat", "input": {"length": 0, "width": 20, "height": 20}}
        ),
    )
    index = ImplementationIndex(fake_implementations(m, _reject_nonpositive_length))
    check = check_descriptor(_descriptor(m, BOX), index)
    assert _codes(check) == ["CONFORMANCE_EXAMPLE_REJECTED"]
    message = check.diagnostics[0].message
    assert "input example 1" in message
    assert "BOX_DIMENSION_NONPOSITIVE" in message
    assert not check.passed


def test_default_binding_rejected() -> None:
    """The defaultBinding, copied into an example, must be accepted too."""
    other_plane = {"origin": [0, 0, 5], "normal": [0, 0, 1]}

    def edit(m: dict[str, Any]) -> None:
        sketch = m["descriptors"][2]
        sketch["inputExamples"][0]["input"]["plane"] = other_plane
        sketch["diagnostics"] = ["SKETCH_PLANE_REJECTED"]

    def reject_binding_plane(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        if inputs.get("plane") == PLANE_BINDING:
            return [Diagnostic(code="SKETCH_PLANE_REJECTED", message="not on this plane")]
        return []

    m = mutate(manifest(), edit)
    index = ImplementationIndex(fake_implementations(m, reject_binding_plane))
    check = check_descriptor(_descriptor(m, SKETCH), index)
    assert _codes(check) == ["CONFORMANCE_DEFAULT_BINDING_REJECTED"]
    assert "defaultBinding" in check.diagnostics[0].message
    assert not check.passed


def test_implementation_declares_undeclared_diagnostic() -> None:
    """An implementation that can raise a code the descriptor does not declare fails."""
    m = manifest()
    loud = Implementation(
        ref="test.box@1.0.0",
        check_inputs=accept_all,
        diagnostics=frozenset({"BOX_DIMENSION_NONPOSITIVE", "BOX_TOO_LARGE"}),
    )
    check = check_descriptor(_descriptor(m, BOX), ImplementationIndex([loud]))
    assert _codes(check) == ["CONFORMANCE_UNDECLARED_DIAGNOSTIC"]
    assert "BOX_TOO_LARGE" in check.diagnostics[0].message
    assert check.implementation == "test.box@1.0.0"
    assert not check.passed


def test_check_returns_undeclared_diagnostic() -> None:
    """A check returning a code the descriptor never declared is flagged as undeclared."""

    def surprise(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        return [Diagnostic(code="BOX_SURPRISE", message="surprise")]

    m = manifest()
    check = check_descriptor(
        _descriptor(m, BOX), ImplementationIndex(fake_implementations(m, surprise))
    )
    assert "CONFORMANCE_UNDECLARED_DIAGNOSTIC" in _codes(check)
    undeclared = [d for d in check.diagnostics if d.code == "CONFORMANCE_UNDECLARED_DIAGNOSTIC"]
    assert all("BOX_SURPRISE" in d.message for d in undeclared)
    assert not check.passed


def test_check_crash_is_a_redacted_finding() -> None:
    """A check that raises is a finding (no exception escapes) and hides the home path."""
    secret = f"{Path.home()}/secret/file"

    def crash(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        raise ValueError(secret)

    m = manifest()
    report = check_conformance(
        _model(m), ImplementationIndex(fake_implementations(m, crash)), HASH, NOW
    )
    assert not report.passed
    for check in report.checks:
        assert check.diagnostics
        assert set(_codes(check)) == {"CONFORMANCE_CHECK_CRASHED"}
        for d in check.diagnostics:
            assert "ValueError" in d.message
            assert "secret/file" in d.message
            assert str(Path.home()) not in d.message


def test_check_returning_garbage_is_a_finding() -> None:
    """A check that breaks its protocol is the implementation's bug, reported, not a crash."""

    def garbage(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        return ["BOX_DIMENSION_NONPOSITIVE"]  # type: ignore[list-item]

    m = manifest()
    check = check_descriptor(
        _descriptor(m, BOX), ImplementationIndex(fake_implementations(m, garbage))
    )
    assert not check.passed
    assert _codes(check) == ["CONFORMANCE_CHECK_CRASHED"]
    assert "str" in check.diagnostics[0].message


def test_overlay_prefers_package_implementations() -> None:
    """A package's own implementation wins over a shared one for the same exact ref."""

    def reject_all(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        return [Diagnostic(code="BOX_DIMENSION_NONPOSITIVE", message="shared kernel says no")]

    m = manifest()
    shared_box = Implementation(
        ref="test.box@1.0.0",
        check_inputs=reject_all,
        diagnostics=frozenset({"BOX_DIMENSION_NONPOSITIVE"}),
    )
    shared_extra = Implementation(ref="test.extra@2.0.0", check_inputs=accept_all)
    shared = ImplementationIndex([shared_box, shared_extra])
    own = [i for i in fake_implementations(m) if i.ref == "test.box@1.0.0"]
    index = shared.overlay(own)
    assert index.get("test.box@1.0.0") is own[0]
    assert index.get("test.extra@2.0.0") is shared_extra
    assert shared.get("test.box@1.0.0") is shared_box
    assert check_descriptor(_descriptor(m, BOX), index).passed
    assert not check_descriptor(_descriptor(m, BOX), shared).passed


def test_first_added_wins_and_bad_refs_are_ignored() -> None:
    """Within one index the first implementation of a ref wins; malformed refs are skipped."""
    first = Implementation(ref="test.box@1.0.0", check_inputs=accept_all)
    second = Implementation(ref="test.box@1.0.0", check_inputs=accept_all)
    bad = Implementation(ref="test.box@1", check_inputs=accept_all)
    index = ImplementationIndex([first, second, bad])
    assert index.get("test.box@1.0.0") is first
    assert index.get("test.box@1") is None
    assert index.versions("test.box") == {"1.0.0"}


def test_report_fields_and_wire_round_trip() -> None:
    """The report carries the package identity and hash, and survives the wire."""
    m = manifest(name="acme.shapes", version="2.3.4")
    impls = [i for i in fake_implementations(m) if i.ref != "test.fillet@1.0.0"]
    report = check_conformance(_model(m), ImplementationIndex(impls), HASH, NOW)
    assert (report.package, report.version, report.manifest_hash) == ("acme.shapes", "2.3.4", HASH)
    assert report.checked_at == NOW
    wire = report.to_wire()
    text = json.dumps(wire)
    assert wire["manifestHash"] == HASH
    assert ConformanceReport.model_validate(json.loads(text)) == report
    assert ConformanceReport.model_validate(wire).to_wire() == wire
