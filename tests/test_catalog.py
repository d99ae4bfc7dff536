"""Admission into the production catalog: only signed, trusted, lint-clean, conformant
packages enter; everything else is quarantined with a stable code, and the good packages
keep working."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_runner import RunAira
from factory import (
    Signer,
    box_descriptor,
    box_schemas,
    fake_implementations,
    manifest,
    mutate,
    package_source,
    trust_policy,
    write_package,
)
from fakeplugins import FakeKernel, impl

from aira_core import hookimpl
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.state import CatalogState
from aira_core.catalog.trust import TrustPolicy
from aira_core.contracts.package import TrustStore
from aira_core.diagnostics import AiraError
from aira_core.extensions import CapabilityPackageSource

VENDOR = Signer("test-vendor")
OTHER = Signer("other-vendor")


def packages_plugin(sources) -> SimpleNamespace:  # type: ignore[no-untyped-def]
    """An in-process plugin registering the given package sources."""

    @hookimpl
    def aira_register_capability_packages(register):  # type: ignore[no-untyped-def]
        for s in sources:
            register(s)

    return SimpleNamespace(aira_register_capability_packages=aira_register_capability_packages)


def good_source(name: str = "good.pkg", version: str = "1.0.0") -> CapabilityPackageSource:
    """A second, independent, valid package (its own capability ids)."""
    m = manifest(name=name, version=version, publisher="other-vendor")
    m["descriptors"] = [box_descriptor("cap:other.box@1", "other.box@1.0.0")]
    m["descriptors"][0]["relations"] = {}
    m["schemas"] = box_schemas("other.box@1.0.0")
    return package_source(m, OTHER)


def admit(
    register_plugin,
    *sources: CapabilityPackageSource,
    trust: TrustPolicy | None = None,
    now: datetime | None = None,
):  # type: ignore[no-untyped-def]
    registry = register_plugin(packages_plugin(sources), "pkgs")
    return build_catalog(registry, trust=trust or trust_policy(VENDOR, OTHER), now=now)


def quarantined(catalog, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    (q,) = [q for q in catalog.quarantine if q.name == name]
    return [r.code for r in q.reasons]


def test_valid_package_is_admitted_with_trust_and_report(register_plugin) -> None:
    catalog = admit(register_plugin, package_source(manifest(), VENDOR), good_source())
    assert set(catalog.packages) == {"test.pkg", "good.pkg"}
    assert catalog.quarantine == []
    box = catalog.capabilities()["cap:test.box@1"]
    assert box.trust is not None
    assert (box.trust.publisher, box.trust.key_id) == ("test-vendor", VENDOR.key_id)
    report = catalog.packages["test.pkg"].report
    assert report.passed and len(report.checks) == 3
    stored = CatalogState().report("test.pkg", "1.0.0", catalog.packages["test.pkg"].manifest_hash)
    assert stored == report
    body = catalog.to_json(quarantine=True)
    assert body["format"] == "aira.catalog/1"
    assert body["authoringLockHash"].startswith("lock:sha256:")
    assert body["discoveryCatalogHash"].startswith("disc:sha256:")


# -- the bad-input list of the issue, one test each; the good package always stays ----------


def assert_only_good_admitted(catalog) -> None:  # type: ignore[no-untyped-def]
    assert set(catalog.packages) == {"good.pkg"}


def test_malformed_manifest_json(register_plugin) -> None:
    bad = package_source(manifest(), VENDOR, raw=b'{"name": "test.pkg", "version": ')
    catalog = admit(register_plugin, bad, good_source())
    assert quarantined(catalog, "test.pkg") == ["MANIFEST_NOT_JSON"]
    assert_only_good_admitted(catalog)


def test_missing_signature(register_plugin) -> None:
    catalog = admit(register_plugin, package_source(manifest(), None), good_source())
    assert quarantined(catalog, "test.pkg") == ["SIGNATURE_MISSING"]
    assert_only_good_admitted(catalog)


def test_signature_by_unknown_key(register_plugin) -> None:
    stranger = Signer("test-vendor")
    catalog = admit(register_plugin, package_source(manifest(), stranger), good_source())
    assert quarantined(catalog, "test.pkg") == ["SIGNATURE_UNKNOWN_KEY"]
    assert_only_good_admitted(catalog)


@pytest.mark.parametrize("value", ["AAEC", "not base64 at all!", "A" * 86 + "=="[:1]])
def test_a_signature_that_is_not_64_bytes_of_base64_is_malformed(register_plugin, value) -> None:
    # A mangled file is a different problem from a signature that does not verify.
    m = manifest()
    signed = json.loads(VENDOR.sign(m))
    source = package_source(m, VENDOR)
    broken = dataclasses.replace(
        source, signature=json.dumps({**signed, "signature": value}).encode()
    )
    catalog = admit(register_plugin, broken, good_source())
    assert quarantined(catalog, "test.pkg") == ["SIGNATURE_MALFORMED"]
    assert_only_good_admitted(catalog)


def test_one_byte_changed_after_signing(register_plugin) -> None:
    m = manifest()
    raw = json.dumps(m, indent=2).encode()
    tampered = raw.replace(b'"exclusiveMinimum": 0', b'"exclusiveMinimum": 5', 1)
    assert len(tampered) == len(raw) and tampered != raw
    catalog = admit(register_plugin, package_source(m, VENDOR, raw=tampered), good_source())
    assert quarantined(catalog, "test.pkg") == ["SIGNATURE_INVALID"]
    assert_only_good_admitted(catalog)


def test_reformatting_after_signing_keeps_the_signature(register_plugin) -> None:
    """Signatures are over canonical bytes: whitespace and key order are not meaning."""
    m = manifest()
    compact = json.dumps(m, separators=(",", ":"), sort_keys=True).encode()
    catalog = admit(register_plugin, package_source(m, VENDOR, raw=compact))
    assert set(catalog.packages) == {"test.pkg"}


def test_expired_key(register_plugin) -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    trust = TrustPolicy(
        TrustStore(
            publishers=[
                *trust_policy(VENDOR, expires_at=now - timedelta(days=1)).user.publishers,
                *trust_policy(OTHER).user.publishers,
            ]
        )
    )
    catalog = admit(
        register_plugin, package_source(manifest(), VENDOR), good_source(), trust=trust, now=now
    )
    assert quarantined(catalog, "test.pkg") == ["TRUST_KEY_EXPIRED"]
    assert_only_good_admitted(catalog)


def test_revoked_key(register_plugin) -> None:
    store = trust_policy(VENDOR, OTHER).user
    trust = TrustPolicy(store.model_copy(update={"revoked_key_ids": [VENDOR.key_id]}))
    catalog = admit(register_plugin, package_source(manifest(), VENDOR), good_source(), trust=trust)
    assert quarantined(catalog, "test.pkg") == ["TRUST_KEY_REVOKED"]
    assert_only_good_admitted(catalog)


def test_revoking_the_builtin_key_in_the_user_store() -> None:
    from aira_core.catalog.trust import builtin_store

    (key,) = builtin_store().publishers[0].keys
    policy = TrustPolicy(TrustStore(revoked_key_ids=[key.key_id]))
    assert [r.revoked for r in policy.records()] == [True]


def test_key_of_another_publisher_is_refused(register_plugin) -> None:
    """A trusted key signs only for its own publisher."""
    m = manifest(publisher="other-vendor")
    sig = json.loads(VENDOR.sign(m))
    sig["publisher"] = "other-vendor"  # VENDOR's key claims to sign for OTHER
    forged = CapabilityPackageSource(
        name="test.pkg", manifest=json.dumps(m).encode(), signature=json.dumps(sig).encode()
    )
    catalog = admit(register_plugin, forged, good_source())
    assert quarantined(catalog, "test.pkg") == ["SIGNATURE_PUBLISHER_MISMATCH"]
    assert_only_good_admitted(catalog)


def test_older_version_than_admitted_is_a_rollback(register_plugin, aira_plugin_system) -> None:
    catalog = admit(register_plugin, package_source(manifest(version="1.4.0"), VENDOR))
    assert set(catalog.packages) == {"test.pkg"}
    aira_plugin_system.unregister("pkgs")
    catalog = admit(
        register_plugin, package_source(manifest(version="1.3.9"), VENDOR), good_source()
    )
    assert quarantined(catalog, "test.pkg") == ["CATALOG_ROLLBACK"]
    assert_only_good_admitted(catalog)
    assert CatalogState().admitted_versions()[("test-vendor", "test.pkg")] == "1.4.0"


def test_newer_version_moves_the_floor_up(register_plugin, aira_plugin_system) -> None:
    admit(register_plugin, package_source(manifest(version="1.0.0"), VENDOR))
    aira_plugin_system.unregister("pkgs")
    admit(register_plugin, package_source(manifest(version="1.10.0"), VENDOR))
    assert CatalogState().admitted_versions()[("test-vendor", "test.pkg")] == "1.10.0"


def test_example_that_violates_its_schema(register_plugin) -> None:
    def bad(m):  # type: ignore[no-untyped-def]
        m["descriptors"][0]["inputExamples"][0]["input"]["length"] = -20

    catalog = admit(register_plugin, package_source(mutate(manifest(), bad), VENDOR), good_source())
    (q,) = catalog.quarantine
    (reason,) = q.reasons
    assert reason.code == "LINT_EXAMPLE_SCHEMA_INVALID"
    assert reason.pointer == "/descriptors/0/inputExamples/0/input/length"
    assert "cap:test.box@1" in reason.message
    assert_only_good_admitted(catalog)


def test_same_capability_id_in_two_packages(register_plugin) -> None:
    twin = manifest(name="twin.pkg", publisher="other-vendor")
    twin["descriptors"] = [box_descriptor()]
    twin["descriptors"][0]["relations"] = {}
    twin["schemas"] = box_schemas()
    catalog = admit(
        register_plugin,
        package_source(manifest(), VENDOR),
        package_source(twin, OTHER),
        good_source(),
    )
    assert quarantined(catalog, "test.pkg") == ["CATALOG_DUPLICATE_CAPABILITY"]
    assert quarantined(catalog, "twin.pkg") == ["CATALOG_DUPLICATE_CAPABILITY"]
    (reason,) = next(q for q in catalog.quarantine if q.name == "twin.pkg").reasons
    assert "test.pkg" in reason.message and "twin.pkg" in reason.message
    assert_only_good_admitted(catalog)


def test_conformance_failure_is_quarantined_with_report(register_plugin) -> None:
    catalog = admit(
        register_plugin, package_source(manifest(), VENDOR, implementations=[]), good_source()
    )
    codes = quarantined(catalog, "test.pkg")
    assert codes == ["CONFORMANCE_TARGET_UNRESOLVED"] * 3
    (q,) = [q for q in catalog.quarantine if q.name == "test.pkg"]
    assert q.report is not None and not q.report.passed
    assert_only_good_admitted(catalog)


def test_kernel_implementations_satisfy_conformance(register_plugin) -> None:
    """Targets resolve against registered kernels, not only the package's own code."""
    m = manifest()
    kernel = FakeKernel(
        "k", impls=[impl(r) for r in ("test.box@1.0.0", "test.fillet@1.0.0", "test.sketch@1.0.0")]
    )

    @hookimpl
    def aira_register_kernels(register):  # type: ignore[no-untyped-def]
        register(kernel)

    register_plugin(SimpleNamespace(aira_register_kernels=aira_register_kernels), "kern")
    catalog = admit(register_plugin, package_source(m, VENDOR, implementations=[]))
    assert set(catalog.packages) == {"test.pkg"}


def test_failures_leave_the_state_as_it_was(register_plugin) -> None:
    catalog = admit(
        register_plugin,
        package_source(manifest(), None),
        package_source(manifest(name="x.pkg"), Signer("test-vendor")),
    )
    assert catalog.packages == {}
    assert CatalogState().admitted_versions() == {}


def test_registered_name_must_match_manifest(register_plugin) -> None:
    src = package_source(manifest(), VENDOR)
    src = CapabilityPackageSource(
        name="impostor",
        manifest=src.manifest,
        signature=src.signature,
        implementations=src.implementations,
    )
    catalog = admit(register_plugin, src)
    assert quarantined(catalog, "test.pkg") == ["CATALOG_PACKAGE_NAME_MISMATCH"]


# -- the CLI, end to end ----------------------------------------------------------------------


def test_cli_sign_verify_and_trust(aira: RunAira, tmp_path: Path) -> None:
    pkg = write_package(tmp_path / "pkg", manifest())
    key = VENDOR.write_pem(tmp_path / "vendor.pem")

    out = aira("catalog", "verify", str(pkg))
    assert out.returncode == 1 and "SIGNATURE_MISSING" in out.stderr

    out = aira("catalog", "sign", str(pkg), "--key", str(key))
    assert out.returncode == 0, out.stderr
    assert VENDOR.key_id in out.stdout and "not in your trust store" in out.stdout
    assert (pkg / "manifest.sig").is_file()

    out = aira("catalog", "verify", str(pkg), "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "SIGNATURE_UNKNOWN_KEY"

    out = aira("trust", "add", "test-vendor", VENDOR.public_b64)
    assert out.returncode == 0, out.stderr
    out = aira("catalog", "verify", str(pkg), "--json")
    assert out.returncode == 0, out.stdout
    assert json.loads(out.stdout) == {
        "format": "aira.verify/1",
        "package": "test.pkg",
        "ok": True,
        "publisher": "test-vendor",
        "keyId": VENDOR.key_id,
    }

    listed = json.loads(aira("trust", "list", "--json").stdout)
    assert {k["keyId"]: k["publisher"] for k in listed["keys"]}[VENDOR.key_id] == "test-vendor"

    out = aira("trust", "revoke", VENDOR.key_id)
    assert out.returncode == 0
    out = aira("catalog", "verify", str(pkg), "--json")
    assert json.loads(out.stdout)["error"]["code"] == "TRUST_KEY_REVOKED"

    out = aira("trust", "revoke", "0123456789abcdef")
    assert out.returncode == 1 and "TRUST_KEY_NOT_FOUND" in out.stderr


def test_cli_tampered_package_fails_verify_without_traceback(aira: RunAira, tmp_path) -> None:
    pkg = write_package(tmp_path / "pkg", manifest(), VENDOR)
    aira("trust", "add", "test-vendor", VENDOR.public_b64)
    text = (pkg / "manifest.json").read_text().replace('"Box"', '"Bax"')
    (pkg / "manifest.json").write_text(text)
    out = aira("catalog", "verify", str(pkg))
    assert out.returncode == 1
    assert "SIGNATURE_INVALID" in out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_cli_bad_inputs_get_codes_not_tracebacks(aira: RunAira, tmp_path, aira_home) -> None:
    cases = [
        (["catalog", "verify", str(tmp_path / "nowhere")], "PACKAGE_PATH_INVALID"),
        (
            [
                "catalog",
                "sign",
                str(write_package(tmp_path / "p", manifest())),
                "--key",
                str(tmp_path / "missing.pem"),
            ],
            "KEY_INVALID",
        ),
        (["trust", "add", "test-vendor", "not-base64!"], "KEY_INVALID"),
        (["trust", "add", "Bad Name", VENDOR.public_b64], "TRUST_PUBLISHER_INVALID"),
        (["schema", "no-such-contract"], "SCHEMA_NOT_FOUND"),
    ]
    for args, code in cases:
        out = aira(*args)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert code in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stdout + out.stderr
    (aira_home / "trust.json").write_text("{not json")
    out = aira("trust", "list")
    assert out.returncode == 1 and "TRUST_STORE_INVALID" in out.stderr
    assert str(aira_home) not in out.stderr


def test_cli_json_failures_of_verify_and_lint_are_json(aira: RunAira, tmp_path) -> None:
    """A path that is no package: verify prints its documented failure form, lint the
    common ``{"error": Diagnostic}``; both say the code on stderr too."""
    nowhere = str(tmp_path / "nowhere")
    out = aira("catalog", "verify", nowhere, "--json")
    assert out.returncode == 1
    body = json.loads(out.stdout)
    assert {k: body[k] for k in ("format", "package", "ok")} == {
        "format": "aira.verify/1",
        "package": "nowhere",
        "ok": False,
    }
    assert body["error"]["code"] == "PACKAGE_PATH_INVALID"
    out = aira("catalog", "lint", nowhere, "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "PACKAGE_PATH_INVALID"
    assert out.stderr.startswith("error: PACKAGE_PATH_INVALID: ")
    assert str(tmp_path) not in out.stdout + out.stderr


def test_cli_verify_refuses_an_integer_beyond_the_digit_limit(aira: RunAira, tmp_path) -> None:
    """Python will not convert a 5000-digit integer: a parse code, not INTERNAL_ERROR."""
    pkg = write_package(tmp_path / "pkg", manifest(), VENDOR)
    text = (pkg / "manifest.json").read_text()
    (pkg / "manifest.json").write_text(text.rstrip()[:-1] + ', "n": ' + "7" * 5000 + "}")
    before = (pkg / "manifest.json").read_bytes()
    for command in ("verify", "lint"):
        out = aira("catalog", command, str(pkg))
        assert out.returncode == 1, out.stdout + out.stderr
        assert "MANIFEST_NOT_CANONICAL" in out.stdout + out.stderr
        assert "INTERNAL_ERROR" not in out.stderr and "Traceback" not in out.stderr
    assert (pkg / "manifest.json").read_bytes() == before


def test_cli_sign_refuses_a_package_with_lint_findings(aira: RunAira, tmp_path) -> None:
    pkg = write_package(
        tmp_path / "pkg",
        mutate(manifest(), lambda m: m["descriptors"][0].update(queryRef="test.q@1.0.0")),
    )
    out = aira(
        "catalog",
        "sign",
        str(pkg),
        "--key",
        str(VENDOR.write_pem(tmp_path / "k.pem")),
    )
    assert out.returncode == 1
    assert "LINT_TARGET_NOT_EXACTLY_ONE" in out.stdout
    assert not (pkg / "manifest.sig").exists()


def test_cli_keygen_makes_a_usable_key(aira: RunAira, tmp_path) -> None:
    out = aira("catalog", "keygen", str(tmp_path / "new.pem"))
    assert out.returncode == 0
    assert (tmp_path / "new.pem").stat().st_mode & 0o777 == 0o600
    public = out.stdout.split()[2]
    pkg = write_package(tmp_path / "pkg", manifest())
    assert aira("catalog", "sign", str(pkg), "--key", str(tmp_path / "new.pem")).returncode == 0
    aira("trust", "add", "test-vendor", public)
    assert aira("catalog", "verify", str(pkg)).returncode == 0
    again = aira("catalog", "keygen", str(tmp_path / "new.pem"))
    assert again.returncode == 1 and "KEY_EXISTS" in again.stderr


def test_cli_keygen_writes_the_public_half_that_trust_add_takes(
    aira: RunAira, tmp_path: Path
) -> None:
    out = aira("catalog", "keygen", str(tmp_path / "vendor.pem"))
    assert out.returncode == 0, out.stderr
    pub = tmp_path / "vendor.pub"
    assert pub.read_text() == out.stdout.split()[2] + "\n"
    pkg = write_package(tmp_path / "pkg", manifest())
    assert aira("catalog", "sign", str(pkg), "--key", str(tmp_path / "vendor.pem")).returncode == 0
    assert aira("catalog", "verify", str(pkg)).returncode == 1  # not trusted yet
    added = aira("trust", "add", "test-vendor", str(pub))
    assert added.returncode == 0, added.stderr
    assert aira("catalog", "verify", str(pkg)).returncode == 0


def test_cli_keygen_makes_both_halves_or_neither(aira: RunAira, tmp_path: Path) -> None:
    (tmp_path / "taken.pub").write_text("someone else's\n")
    out = aira("catalog", "keygen", str(tmp_path / "taken.pem"))
    assert out.returncode == 1 and "KEY_EXISTS" in out.stderr
    assert not (tmp_path / "taken.pem").exists()  # no private key without its public half
    assert (tmp_path / "taken.pub").read_text() == "someone else's\n"


def test_cli_trust_add_refuses_a_file_that_holds_no_key(aira: RunAira, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pub"
    junk.write_text("not a key\n")
    out = aira("trust", "add", "test-vendor", str(junk))
    assert out.returncode == 1 and "KEY_INVALID" in out.stderr
    assert "Traceback" not in out.stderr and str(tmp_path) not in out.stderr


def test_cli_catalog_list_json_is_stable(aira: RunAira) -> None:
    out = aira("catalog", "list", "--json", "--quarantine")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert set(body) == {
        "format",
        "authoringLockHash",
        "discoveryCatalogHash",
        "packages",
        "quarantineCount",
        "quarantine",
    }


# -- review hardening: nothing one package does can cost another its admission ---------------


def test_a_crashing_check_quarantines_only_that_package(register_plugin, monkeypatch) -> None:
    """A bug in a check that one package's data triggers costs only that package."""
    from aira_core.catalog import catalog as catalog_module

    real = catalog_module.lint_manifest

    def lint_that_breaks_on_test_pkg(manifest, **kw):  # type: ignore[no-untyped-def]
        if manifest.name == "test.pkg":
            raise RecursionError(f"deep in {Path.home()}/private")
        return real(manifest, **kw)

    monkeypatch.setattr(catalog_module, "lint_manifest", lint_that_breaks_on_test_pkg)
    catalog = admit(register_plugin, package_source(manifest(), VENDOR), good_source())
    assert quarantined(catalog, "test.pkg") == ["CATALOG_CHECK_CRASHED"]
    (reason,) = catalog.quarantine[0].reasons
    assert str(Path.home()) not in reason.message
    assert_only_good_admitted(catalog)


def test_another_publisher_cannot_raise_the_version_floor(register_plugin, aira_plugin_system):
    """A trusted publisher's 99.0.0 of someone else's package name never locks that
    publisher's own package out."""
    squat = manifest(version="99.0.0", publisher="other-vendor")
    catalog = admit(register_plugin, package_source(squat, OTHER))
    assert set(catalog.packages) == {"test.pkg"}
    aira_plugin_system.unregister("pkgs")
    catalog = admit(register_plugin, package_source(manifest(version="1.0.0"), VENDOR))
    assert set(catalog.packages) == {"test.pkg"}
    assert catalog.packages["test.pkg"].manifest.publisher == "test-vendor"


def test_same_version_with_other_content_is_refused(register_plugin, aira_plugin_system):
    admit(register_plugin, package_source(manifest(), VENDOR))
    aira_plugin_system.unregister("pkgs")
    changed = mutate(manifest(), lambda m: m["descriptors"][0].update(title="Cuboid"))
    catalog = admit(register_plugin, package_source(changed, VENDOR), good_source())
    assert quarantined(catalog, "test.pkg") == ["CATALOG_VERSION_CONTENT_CHANGED"]
    assert_only_good_admitted(catalog)
    aira_plugin_system.unregister("pkgs")
    bumped = mutate(changed, lambda m: m.update(version="1.0.1"))
    catalog = admit(register_plugin, package_source(bumped, VENDOR))
    assert set(catalog.packages) == {"test.pkg"}


def test_snake_case_spellings_are_not_the_wire_format(register_plugin) -> None:
    """A manifest has one spelling (so one hash): the generated schema's camelCase."""
    m = mutate(
        manifest(),
        lambda m: m["descriptors"][0].update(operation_ref=m["descriptors"][0].pop("operationRef")),
    )
    catalog = admit(register_plugin, package_source(m, VENDOR), good_source())
    assert "LINT_TARGET_NOT_EXACTLY_ONE" in quarantined(
        catalog, "test.pkg"
    ) or "LINT_FIELD_UNKNOWN" in quarantined(catalog, "test.pkg")


def test_naive_now_is_taken_as_utc(register_plugin) -> None:
    trust = trust_policy(VENDOR, OTHER, expires_at=datetime(2030, 1, 1))
    catalog = admit(
        register_plugin, package_source(manifest(), VENDOR), trust=trust, now=datetime(2026, 1, 1)
    )
    assert set(catalog.packages) == {"test.pkg"}


def test_trust_store_keys_must_match_their_ids(aira_home) -> None:
    from aira_core.catalog.trust import load_user_store

    store = {
        "format": "aira.trust-store/1",
        "publishers": [
            {
                "publisher": "test-vendor",
                "keys": [{"keyId": "cd78cd78cd78cd78", "publicKey": VENDOR.public_b64}],
            }
        ],
    }
    (aira_home / "trust.json").write_text(json.dumps(store))
    with pytest.raises(AiraError) as exc:
        load_user_store()
    assert exc.value.code == "TRUST_STORE_INVALID"


def test_one_key_signs_for_one_publisher(aira_home) -> None:
    from aira_core.catalog.trust import add_key, builtin_store

    add_key("alice", VENDOR.public_b64)
    with pytest.raises(AiraError) as exc:
        add_key("test-vendor", VENDOR.public_b64)
    assert exc.value.code == "TRUST_KEY_CONFLICT"
    with pytest.raises(AiraError) as exc:
        add_key("mallory", builtin_store().publishers[0].keys[0].public_key)
    assert exc.value.code == "TRUST_KEY_CONFLICT"


def test_cli_io_errors_get_codes_and_no_private_paths(aira: RunAira, tmp_path) -> None:
    pkg = write_package(tmp_path / "pkg", manifest())
    (pkg / "manifest.sig").mkdir()
    key = VENDOR.write_pem(tmp_path / "k.pem")
    file_home = tmp_path / "a-file"
    file_home.write_text("")
    cases = [
        (aira("catalog", "keygen", str(tmp_path / "no" / "k.pem")), "OUTPUT_UNWRITABLE"),
        (aira("catalog", "sign", str(pkg), "--key", str(tmp_path)), "INPUT_NOT_FILE"),
        (aira("catalog", "sign", str(pkg), "--key", str(key)), "OUTPUT_UNWRITABLE"),
        (aira("trust", "list", home=file_home), "TRUST_STORE_UNAVAILABLE"),
        (aira("catalog", "list", home=file_home), "TRUST_STORE_UNAVAILABLE"),
    ]
    for out, code in cases:
        assert out.returncode == 1, (code, out.stderr)
        assert code in out.stderr, out.stderr
        assert str(tmp_path) not in out.stderr + out.stdout
        assert "Traceback" not in out.stderr


def install_vendor(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """An installed plugin "vendor" that ships two packages, test.pkg (signed by VENDOR) and
    unsigned.pkg; returns test.pkg's directory and the environment that loads the plugin
    (in a new process: ``aira_process``)."""
    from fakeplugins import install_fake_distribution

    good = write_package(tmp_path / "packages" / "good", manifest(), VENDOR)
    write_package(
        tmp_path / "packages" / "unsigned", manifest(name="unsigned.pkg", publisher="test-vendor")
    )
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(
        site,
        "aira-vendor",
        "3.1.0",
        "vendor",
        f"""
        from pathlib import Path
        from aira_core import hookimpl
        from aira_core.extensions import CapabilityPackageSource, Implementation

        ROOT = Path({str(good.parent)!r})
        REFS = ["test.box@1.0.0", "test.fillet@1.0.0", "test.sketch@1.0.0"]
        DIAGS = {{"test.box@1.0.0": {{"BOX_DIMENSION_NONPOSITIVE"}},
                  "test.fillet@1.0.0": {{"FILLET_RADIUS_TOO_LARGE", "SELECTION_EMPTY"}}}}

        def accept(inputs):  # FAKE implementation for the test
            return []

        @hookimpl
        def aira_register_capability_packages(register):
            impls = [Implementation(r, accept, frozenset(DIAGS.get(r, ()))) for r in REFS]
            register(CapabilityPackageSource.from_directory(ROOT / "good", impls))
            register(CapabilityPackageSource.from_directory(ROOT / "unsigned", impls))
    """,
    )
    return good, {"PYTHONPATH": str(site), "AIRA_PLUGINS": "vendor"}


def test_cli_lists_admitted_and_quarantined_packages_in_the_documented_shape(
    aira_process: RunAira, aira: RunAira, tmp_path: Path
) -> None:
    """End to end: an installed plugin ships two packages; one is admitted, one is not."""
    good, env = install_vendor(tmp_path)
    aira("trust", "add", "test-vendor", VENDOR.public_b64)
    out = aira_process("catalog", "list", "--json", "--quarantine", **env)
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    # Other installed plugins (a real kernel, say) may add packages: look at ours.
    (pkg,) = [p for p in body["packages"] if p["name"] == "test.pkg"]
    assert set(pkg) == {
        "name",
        "version",
        "publisher",
        "keyId",
        "manifestHash",
        "plugin",
        "distribution",
        "origin",
        "capabilities",
        "conformance",
    }
    assert (pkg["name"], pkg["plugin"], pkg["distribution"], pkg["keyId"]) == (
        "test.pkg",
        "vendor",
        "aira-vendor",
        VENDOR.key_id,
    )
    assert pkg["manifestHash"].startswith("pkg:sha256:")
    assert pkg["capabilities"] == ["cap:test.box@1", "cap:test.fillet@1", "cap:test.sketch@1"]
    assert set(pkg["conformance"]) == {"passed", "checkedAt"}
    (q,) = [q for q in body["quarantine"] if q["name"] == "unsigned.pkg"]
    assert set(q) == {"name", "version", "publisher", "plugin", "distribution", "origin", "reasons"}
    assert q["name"] == "unsigned.pkg"
    assert q["reasons"] == [
        {
            "code": "SIGNATURE_MISSING",
            "severity": "error",
            "subject": "unsigned.pkg",
            "message": "the package has no signature file (manifest.sig)",
        }
    ]
    human = aira_process("catalog", "list", "--quarantine", **env)
    assert "test.pkg" in human.stdout and "SIGNATURE_MISSING" in human.stdout
    lint = aira_process("catalog", "lint", str(good), "--json", **env)
    assert json.loads(lint.stdout) == {
        "format": "aira.lint/1",
        "package": "test.pkg",
        "ok": True,
        "findings": [],
    }


def test_cli_search_prints_text_that_looks_like_markup_as_written(
    aira_process: RunAira, aira: RunAira, tmp_path: Path
) -> None:
    """The user's words are not rich markup: "[/x]" would otherwise fail the table."""
    _, env = install_vendor(tmp_path)
    aira("trust", "add", "test-vendor", VENDOR.public_b64)
    query = "[/x] make a 20 mm cube [bold]"
    out = aira_process("catalog", "search", query, **env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cap:test.box@1" in out.stdout  # the hits table was printed
    assert query in out.stdout
    assert "INTERNAL_ERROR" not in out.stderr


def test_a_passed_conformance_report_is_reused_for_the_same_implementations(
    register_plugin, aira_plugin_system
) -> None:
    """Expensive checks (a real kernel) run once per manifest and implementation build."""
    from dataclasses import dataclass

    from aira_core.extensions import Implementation

    calls: list[str] = []

    @dataclass(frozen=True)
    class Fingerprinted(Implementation):
        fingerprint: str = "build:1"

    def counting(inputs):  # type: ignore[no-untyped-def]
        calls.append("check")
        return []

    def impls(build: str) -> list[Implementation]:
        return [
            Fingerprinted(
                ref=i.ref, check_inputs=counting, diagnostics=i.diagnostics, fingerprint=build
            )
            for i in fake_implementations(manifest())
        ]

    admit(register_plugin, package_source(manifest(), VENDOR, implementations=impls("build:1")))
    first = len(calls)
    assert first > 0
    aira_plugin_system.unregister("pkgs")
    catalog = admit(
        register_plugin, package_source(manifest(), VENDOR, implementations=impls("build:1"))
    )
    assert len(calls) == first, "same manifest, same implementations: report reused"
    assert set(catalog.packages) == {"test.pkg"}
    aira_plugin_system.unregister("pkgs")
    admit(register_plugin, package_source(manifest(), VENDOR, implementations=impls("build:2")))
    assert len(calls) == 2 * first, "another implementation build is checked again"


def test_build_catalog_tells_on_package_before_each_package_check(register_plugin) -> None:  # type: ignore[no-untyped-def]
    """The per-package callback the CLI's progress uses: every live package, in order."""
    registry = register_plugin(packages_plugin([good_source("a.pkg"), good_source("b.pkg")]), "p")
    seen: list[tuple[str, int, int]] = []
    build_catalog(registry, trust=trust_policy(VENDOR, OTHER), on_package=lambda *a: seen.append(a))
    assert seen == [("a.pkg", 0, 2), ("b.pkg", 1, 2)]
