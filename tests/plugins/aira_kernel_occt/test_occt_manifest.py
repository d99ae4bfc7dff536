"""The OCCT capability package: generated from the code, lint-clean, signed with the
first-party key, and (with the real kernel) admitted to production. No CadQuery needed
except for the admission test."""

from __future__ import annotations

import json
from pathlib import Path

from aira_core.catalog.lint import lint_manifest
from aira_core.catalog.package import parse_package
from aira_core.catalog.trust import TrustPolicy
from aira_core.extensions import CapabilityPackageSource
from aira_kernel_occt import manifest as generated
from aira_kernel_occt.operations import OPERATIONS, REPAIRS


def source() -> CapabilityPackageSource:
    return CapabilityPackageSource.from_directory(generated.PACKAGE_DIR)


def test_the_committed_manifest_is_the_generated_one() -> None:
    """One source: the schemas and descriptors come from operations.py, never by hand."""
    committed = json.loads((generated.PACKAGE_DIR / "manifest.json").read_text("utf-8"))
    assert committed == generated.build_manifest(), (
        "regenerate with `python -m aira_kernel_occt.manifest`, bump the version and re-sign"
    )


def test_the_package_is_lint_clean_and_signed_by_the_first_party_key() -> None:
    parsed = parse_package(source())
    assert parsed.diagnostics == [] and parsed.manifest is not None
    assert lint_manifest(parsed.manifest, known_capabilities=set()) == []
    verified = TrustPolicy().verify(parsed.canonical, "aira-first-party", source().signature)
    assert getattr(verified, "publisher", None) == "aira-first-party", verified


def test_every_capability_has_bilingual_profiles_and_copyable_examples() -> None:
    for op in OPERATIONS:
        assert any(ch >= "\u4e00" for text in op.intents for ch in text), op.capability
        assert any(all(ch < "\u3400" for ch in text) for text in op.intents), op.capability
        assert op.examples, op.capability
    for repair in REPAIRS:  # a repair has no inputs of its own, so no input examples
        assert any(ch >= "\u4e00" for text in repair.intents for ch in text), repair.capability
        assert any(all(ch < "\u3400" for ch in text) for text in repair.intents), repair


def test_the_entry_point_module_is_cheap_to_import() -> None:
    import subprocess
    import sys

    code = (
        "import sys, aira_kernel_occt.plugin; "
        "print(any(m.split('.')[0] in ('cadquery', 'OCP') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_the_plugin_readme_lists_every_capability() -> None:
    readme = (Path(__file__).parents[3] / "plugins" / "aira-kernel-occt" / "README.md").read_text()
    missing = [
        op.capability for op in (*OPERATIONS, *REPAIRS) if f"`{op.capability}`" not in readme
    ]
    assert missing == []
