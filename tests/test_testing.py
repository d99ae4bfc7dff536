"""The fakes of ``aira_core.testing``, used the way a plugin author uses them: a plugin that
registers the fake kernel and a package signed with a throwaway key, admitted through the
real catalog under a throwaway trust store, and a document evaluated on the fake kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from aira_core import hookimpl
from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.state import CatalogState
from aira_core.catalog.trust import TRUST_FILE, TrustPolicy, VerifiedSignature
from aira_core.contracts.amir import AmirDocument
from aira_core.extensions import CapabilityPackageSource
from aira_core.model.patch import validate_document
from aira_core.testing import (
    FakeGeometryKernel,
    ThrowawaySigner,
    box_volume,
    fake_kernel_manifest,
    trust_policy_for,
)
from aira_core.testing.package import (
    FILLET_RADIUS_TOO_LARGE,
    MASS_PROPERTIES,
    VOLUME_OUT_OF_RANGE,
)


def plate(radius: float = 2.0, vmax: float = 20000.0) -> AmirDocument:
    """A 40 × 30 × 10 mm plate whose length is parameter ``width``, vertical edges rounded."""
    return AmirDocument.model_validate(
        {
            "parameters": [
                {"id": "width", "label": "width", "type": "Length", "unit": "mm", "value": 40}
            ],
            "nodes": [
                {
                    "id": "box",
                    "op": "exact.box@1.0.0",
                    "inputs": {
                        "length": {"param": "width"},
                        "width": {"value": 30},
                        "height": {"value": 1, "unit": "cm"},
                    },
                },
                {
                    "id": "round",
                    "op": "exact.fillet@1.0.0",
                    "inputs": {
                        "target": {"node": "box"},
                        "edges": {"body": "plate", "select": "|Z", "entity": "Edge"},
                        "radius": {"value": radius},
                    },
                },
            ],
            "bodies": [{"id": "plate", "label": "plate", "tip": "round"}],
            "assertions": [
                {
                    "id": "light",
                    "validatorRef": "validate.volumeRange@1.0.0",
                    "target": "plate",
                    "args": {"min": {"value": 1000}, "max": {"value": vmax}},
                }
            ],
        }
    )


def kernel_plugin(kernel: FakeGeometryKernel, package: Path) -> SimpleNamespace:
    """An in-process plugin, as a kernel author writes one: the kernel and its package."""

    @hookimpl
    def aira_register_kernels(register):  # type: ignore[no-untyped-def]
        register(kernel)

    @hookimpl
    def aira_register_capability_packages(register):  # type: ignore[no-untyped-def]
        register(CapabilityPackageSource.from_directory(package))

    return SimpleNamespace(
        aira_register_kernels=aira_register_kernels,
        aira_register_capability_packages=aira_register_capability_packages,
    )


def test_a_plugin_on_the_fakes_is_admitted_and_evaluates(
    tmp_path: Path,
    register_plugin,  # type: ignore[no-untyped-def]
    fake_kernel: FakeGeometryKernel,
    signed_package,  # type: ignore[no-untyped-def]
    throwaway_signer: ThrowawaySigner,
    throwaway_trust: TrustPolicy,
) -> None:
    registry = register_plugin(kernel_plugin(fake_kernel, signed_package()), "my-plugin")
    assert registry.errors == []
    assert registry.named("kernels") == {"fake-analytic": fake_kernel}

    # The package carries no implementations: its targets resolve against the kernel's.
    state = CatalogState(tmp_path / "catalog.sqlite3")
    try:
        catalog = build_catalog(registry, trust=throwaway_trust, state=state)
    finally:
        state.close()
    assert catalog.quarantine == []
    admitted = catalog.packages["test.runtime"]
    assert (admitted.signature.publisher, admitted.signature.key_id) == (
        "test-vendor",
        throwaway_signer.key_id,
    )

    document = plate()
    assert validate_document(document, node_signatures(capability_index(catalog))) == []
    kernel = registry.named("kernels")["fake-analytic"]
    evaluation = kernel.evaluate(document)
    assert evaluation.ok and evaluation.evaluated_nodes == ["box", "round"]
    volume = box_volume(40, 30, 10, radius=2)
    assert evaluation.bodies["plate"].volume == pytest.approx(volume)
    assert volume == pytest.approx(40 * 30 * 10 - (4 - 3.14159265) * 4 * 10)

    outcome = kernel.validate(document, document.assertions[0])
    assert outcome.passed and outcome.measured == {"volume": pytest.approx(volume)}
    box = kernel.query(document, MASS_PROPERTIES, {"target": "plate"}).data["boundingBox"]
    assert box == [-20, -15, -5, 20, 15, 5]
    # The fake reports failures as diagnostics with the codes its package declares.
    assert [d.code for d in kernel.evaluate(plate(radius=15)).diagnostics] == [
        FILLET_RADIUS_TOO_LARGE
    ]
    failed = kernel.validate(plate(vmax=2000), plate(vmax=2000).assertions[0])
    assert not failed.passed and [d.code for d in failed.diagnostics] == [VOLUME_OUT_OF_RANGE]
    assert fake_kernel.calls["evaluate"] == 2 and fake_kernel.calls["validate"] == 2


def test_a_package_signed_by_an_untrusted_throwaway_key_is_quarantined(
    tmp_path: Path,
    register_plugin,  # type: ignore[no-untyped-def]
    fake_kernel: FakeGeometryKernel,
    signed_package,  # type: ignore[no-untyped-def]
    throwaway_trust: TrustPolicy,
) -> None:
    stranger = ThrowawaySigner("test-vendor")  # same publisher, a key nobody trusts
    registry = register_plugin(kernel_plugin(fake_kernel, signed_package(signer=stranger)))
    state = CatalogState(tmp_path / "catalog.sqlite3")
    try:
        catalog = build_catalog(registry, trust=throwaway_trust, state=state)
    finally:
        state.close()
    assert catalog.packages == {}
    assert [r.code for q in catalog.quarantine for r in q.reasons] == ["SIGNATURE_UNKNOWN_KEY"]


def test_the_trust_fixture_is_the_user_store_in_aira_home(
    aira_home: Path, throwaway_signer: ThrowawaySigner, throwaway_trust: TrustPolicy
) -> None:
    """Code that loads the user's store itself (the CLI, a subprocess) trusts the key too."""
    stored = json.loads((aira_home / TRUST_FILE).read_text())
    assert [k["keyId"] for p in stored["publishers"] for k in p["keys"]] == [
        throwaway_signer.key_id
    ]
    m = fake_kernel_manifest()
    loaded = TrustPolicy.load().verify(m, "test-vendor", throwaway_signer.sign(m))
    assert isinstance(loaded, VerifiedSignature)
    assert loaded.key_id == throwaway_signer.key_id
    other = ThrowawaySigner()
    assert TrustPolicy.load().verify(m, "test-vendor", other.sign(m)).code == (  # type: ignore[union-attr]
        "SIGNATURE_UNKNOWN_KEY"
    )


def test_the_throwaway_signer_signs_byte_for_byte_as_aira_catalog_sign(
    tmp_path: Path,
    aira_home: Path,
    throwaway_signer: ThrowawaySigner,
    signed_package,  # type: ignore[no-untyped-def]
) -> None:
    """Ed25519 is deterministic, so the same key over the same manifest must give the CLI's
    exact signature file."""
    ours = signed_package()
    theirs = tmp_path / "by-cli"
    theirs.mkdir()
    (theirs / "manifest.json").write_bytes((ours / "manifest.json").read_bytes())
    key = throwaway_signer.write_pem(tmp_path / "key.pem")
    out = subprocess.run(
        [sys.executable, "-m", "aira_core.cli", "catalog", "sign", str(theirs), "--key", str(key)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AIRA_HOME": str(aira_home)},
    )
    assert out.returncode == 0, out.stderr
    assert (theirs / "manifest.sig").read_bytes() == (ours / "manifest.sig").read_bytes()


def test_signed_package_copies_a_package_directory_before_signing(
    tmp_path: Path,
    signed_package,  # type: ignore[no-untyped-def]
    throwaway_signer: ThrowawaySigner,
) -> None:
    source = tmp_path / "my_plugin" / "package"
    source.mkdir(parents=True)
    (source / "manifest.json").write_text(json.dumps(fake_kernel_manifest(name="my.pkg")))
    signed = signed_package(source)
    assert not (source / "manifest.sig").exists()  # the author's tree is left alone
    again = signed_package(source, signer=ThrowawaySigner())
    assert (
        again != signed
        and (again / "manifest.sig").read_bytes() != (signed / "manifest.sig").read_bytes()
    )
    sig = json.loads((signed / "manifest.sig").read_text())
    assert (sig["publisher"], sig["keyId"]) == ("test-vendor", throwaway_signer.key_id)
    trust = trust_policy_for(throwaway_signer)
    m = json.loads((signed / "manifest.json").read_text())
    assert isinstance(
        trust.verify(m, "test-vendor", (signed / "manifest.sig").read_bytes()), VerifiedSignature
    )
    m["descriptors"][0]["title"] = "changed after signing"
    assert trust.verify(m, "test-vendor", (signed / "manifest.sig").read_bytes()).code == (  # type: ignore[union-attr]
        "SIGNATURE_INVALID"
    )


def test_the_fixtures_work_in_a_project_without_aira_conftest(pytester: pytest.Pytester) -> None:
    """A plugin author's project has none of Aira's conftest: the pytest11 plugin alone
    provides the fixtures (the docs/plugins.md example, with a document)."""
    pytester.makepyfile("""
        from types import SimpleNamespace

        from aira_core import hookimpl
        from aira_core.catalog.catalog import build_catalog
        from aira_core.catalog.state import CatalogState
        from aira_core.contracts.amir import AmirDocument
        from aira_core.extensions import CapabilityPackageSource
        from aira_core.testing import box_volume

        CUBE = AmirDocument.model_validate({
            "nodes": [{"id": "n", "op": "exact.box@1.0.0", "inputs": {
                "length": {"value": 20}, "width": {"value": 20}, "height": {"value": 20}}}],
            "bodies": [{"id": "cube", "label": "cube", "tip": "n"}],
        })

        def test_my_plugin_is_admitted(tmp_path, register_plugin, fake_kernel, signed_package,
                                       throwaway_trust):
            package = signed_package()

            @hookimpl
            def aira_register_kernels(register):
                register(fake_kernel)

            @hookimpl
            def aira_register_capability_packages(register):
                register(CapabilityPackageSource.from_directory(package))

            registry = register_plugin(SimpleNamespace(
                aira_register_kernels=aira_register_kernels,
                aira_register_capability_packages=aira_register_capability_packages,
            ), "my-plugin")
            state = CatalogState(tmp_path / "catalog.sqlite3")
            try:
                catalog = build_catalog(registry, trust=throwaway_trust, state=state)
            finally:
                state.close()
            assert catalog.quarantine == [] and "test.runtime" in catalog.packages
            evaluation = fake_kernel.evaluate(CUBE)
            assert evaluation.ok
            assert evaluation.bodies["cube"].volume == box_volume(20, 20, 20) == 8000
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_pytest_plugin_loads_no_fake_until_one_is_used() -> None:
    """pytest imports aira_core.testing in every session: it must not pull in the fakes,
    cryptography or the contracts; the fakes themselves never need cadquery."""
    code = (
        "import sys, aira_core.testing as t\n"
        "heavy = ('aira_core.testing.', 'cryptography', 'aira_core.contracts', 'cadquery')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
        "[getattr(t, name) for name in t.__all__]\n"
        "print('cadquery' in sys.modules, 'aira_core.testing.signing' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.splitlines() == ["[]", "False True"]


def test_a_fake_that_does_not_exist_is_an_attribute_error() -> None:
    import aira_core.testing

    with pytest.raises(AttributeError, match="FakeProvider"):
        aira_core.testing.FakeProvider  # noqa: B018
