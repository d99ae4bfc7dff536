"""Issue 13, items 1, 6 and the first case of 10: forged signatures under degenerate keys,
trust that failed open (an emptied catalog state, a revoked key added again, an ignored
expiry) and a publisher name that gave INTERNAL_ERROR. Each attack is refused with a stable
code, no traceback, and AIRA_HOME exactly as it was."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_runner import RunAira
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from factory import Signer, manifest, package_source
from unchanged import assert_unchanged, snapshot

from aira_core import hookimpl
from aira_core.catalog import signing
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.state import STATE_FILE, CatalogState
from aira_core.catalog.trust import (
    BUILTIN_PUBLIC_KEY,
    BUILTIN_PUBLISHER,
    TRUST_FILE,
    TrustPolicy,
)
from aira_core.contracts.package import PackageSignature, TrustedKey, TrustedPublisher, TrustStore
from aira_core.diagnostics import AiraError

VENDOR = Signer("test-vendor")

# -- Ed25519 arithmetic, in the test only: it proves the encodings below are what they claim,
# independently of the lookup the production check uses.
P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, -1, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)


def _decode(raw: bytes) -> tuple[int, int] | None:
    """The point an encoding names (y reduced mod p, as a lax decoder does), or None."""
    n = int.from_bytes(raw, "little")
    y, sign = (n & ((1 << 255) - 1)) % P, n >> 255
    u = (y * y - 1) * pow(D * y * y + 1, -1, P) % P
    x = pow(u, (P + 3) // 8, P)
    if x * x % P != u:
        x = x * SQRT_M1 % P
    if x * x % P != u:
        return None
    if x & 1 != sign:
        x = -x % P
    return x, y


def _add(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    (x1, y1), (x2, y2) = a, b
    t = D * x1 * x2 * y1 * y2 % P
    return (
        (x1 * y2 + y1 * x2) * pow(1 + t, -1, P) % P,
        (y1 * y2 + x1 * x2) * pow(1 - t, -1, P) % P,
    )


def _times(n: int, pt: tuple[int, int]) -> tuple[int, int]:
    acc = (0, 1)
    while n:
        if n & 1:
            acc = _add(acc, pt)
        pt, n = _add(pt, pt), n >> 1
    return acc


def _enc(y: int, sign: int = 0) -> bytes:
    return (y | sign << 255).to_bytes(32, "little")


IDENTITY = base64.b64encode(_enc(1)).decode()
assert IDENTITY == "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="  # the key
ZERO = base64.b64encode(bytes(32)).decode()
FORGED_SIGNATURE = base64.b64encode(b"\x01" + bytes(63)).decode()  # R = identity, S = 0

# Every y of a small-order point (found by brute force would take long; these are the
# orders 1, 2, 4 and 8, checked below by multiplying by 8), with both sign bits.
_Y8 = 2707385501144840649318225287225658788936804267575313519463743609750303402022
SMALL_ORDER = [_enc(y, s) for y in (1, P - 1, 0, _Y8, P - _Y8) for s in (0, 1)]
# y >= p: the 19 non-canonical values, with both sign bits (y = p, p + 1 name the small-order
# points y = 0 and the identity again).
NON_CANONICAL = [_enc(y, s) for y in range(P, 2**255) for s in (0, 1)]
DEGENERATE = SMALL_ORDER + NON_CANONICAL


def test_the_encodings_are_degenerate_and_the_real_keys_are_not() -> None:
    """Guards the test data: each small-order encoding names a point of order dividing 8
    (or no point: x = 0 with the sign bit set), covering all eight small-order points, and
    honest keys have the prime order L."""
    points = set()
    for raw in SMALL_ORDER:
        pt = _decode(raw)
        if pt is not None:
            assert _times(8, pt) == (0, 1), raw.hex()
            points.add(pt)
    assert len(points) == 8
    assert all(int.from_bytes(r, "little") & ((1 << 255) - 1) >= P for r in NON_CANONICAL)
    for b64 in (BUILTIN_PUBLIC_KEY, VENDOR.public_b64):
        pt = _decode(base64.b64decode(b64))
        assert pt is not None and _times(L, pt) == (0, 1) and _times(8, pt) != (0, 1)


@pytest.mark.parametrize("raw", DEGENERATE, ids=lambda r: r.hex()[:8] + ".." + r.hex()[-4:])
def test_trust_add_refuses_a_degenerate_key(aira: RunAira, aira_home: Path, raw: bytes) -> None:
    before = snapshot(aira_home)
    out = aira("trust", "add", "v", base64.b64encode(raw).decode())
    assert out.returncode == 1
    assert out.stderr.startswith("error: KEY_INVALID: "), out.stderr
    assert "Traceback" not in out.stderr
    assert_unchanged(before, aira_home)


def test_trust_add_refuses_a_key_off_the_curve(aira: RunAira, aira_home: Path) -> None:
    before = snapshot(aira_home)
    off = next(_enc(y) for y in range(2, 100) if _decode(_enc(y)) is None)
    out = aira("trust", "add", "v", base64.b64encode(off).decode())
    assert out.stderr.startswith("error: KEY_INVALID: ") and "curve" in out.stderr
    assert_unchanged(before, aira_home)


def _packages_plugin(*sources) -> SimpleNamespace:  # type: ignore[no-untyped-def]
    @hookimpl
    def aira_register_capability_packages(register):  # type: ignore[no-untyped-def]
        for s in sources:
            register(s)

    return SimpleNamespace(aira_register_capability_packages=aira_register_capability_packages)


class _Forger:
    """Signs any manifest for publisher ``v`` with the signature that verifies under the
    identity key: 0x01 then 63 zero bytes."""

    def sign(self, _manifest) -> bytes:  # type: ignore[no-untyped-def]
        identity = base64.b64decode(IDENTITY)
        sig = PackageSignature(
            publisher="v", key_id=signing.key_id(identity), signature=FORGED_SIGNATURE
        )
        return json.dumps(sig.to_wire()).encode()


def _write_trust(home: Path, publisher: str, public_key: str) -> None:
    raw = base64.b64decode(public_key)
    store = {
        "format": "aira.trust-store/1",
        "publishers": [
            {
                "publisher": publisher,
                "keys": [{"keyId": signing.key_id(raw), "publicKey": public_key}],
            }
        ],
    }
    (home / TRUST_FILE).write_text(json.dumps(store))


@pytest.mark.parametrize("key", [IDENTITY, ZERO], ids=["identity", "zero"])
def test_a_degenerate_key_in_trust_json_is_refused_when_read(
    aira: RunAira, aira_home: Path, register_plugin, key: str
) -> None:
    """The forged package of the issue (any manifest, signature 0x01 || 0^63) under a
    hand-written trust store: nothing is admitted, every reader says KEY_INVALID."""
    tampered = manifest(publisher="v")
    tampered["descriptors"][0]["title"] = "Tampered"
    register_plugin(_packages_plugin(package_source(tampered, _Forger())), "forged")
    CatalogState().close()  # a home that has been used: the state is there
    _write_trust(aira_home, "v", key)
    before = snapshot(aira_home)
    for args in (["catalog", "list", "--json"], ["trust", "list"], ["trust", "add", "w", key]):
        out = aira(*args)
        assert out.returncode == 1, (args, out.stdout)
        assert "KEY_INVALID" in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert_unchanged(before, aira_home)
    with pytest.raises(AiraError) as exc:
        TrustPolicy(TrustStore(publishers=[_publisher("v", key)]))
    assert exc.value.code == "KEY_INVALID"


def _publisher(name: str, key: str) -> TrustedPublisher:
    raw = base64.b64decode(key)
    return TrustedPublisher(
        publisher=name, keys=[TrustedKey(key_id=signing.key_id(raw), public_key=key)]
    )


def test_signature_check_refuses_degenerate_keys_itself() -> None:
    """Below the trust store too: the issue's forgery verifies in OpenSSL, not in aira."""
    identity = Ed25519PublicKey.from_public_bytes(base64.b64decode(IDENTITY))
    raw_sig = base64.b64decode(FORGED_SIGNATURE)
    m = manifest(publisher="v")
    identity.verify(raw_sig, signing.signed_bytes(m))  # the library alone accepts it
    sig = PackageSignature(publisher="v", key_id="0" * 16, signature=FORGED_SIGNATURE)
    assert signing.signature_valid(m, sig, identity) is False
    with pytest.raises(AiraError) as exc:
        signing.public_key_b64(identity)  # what keygen prints and trust stores
    assert exc.value.code == "KEY_INVALID"


def _signature_with_identity_r(signer: Signer, message: bytes) -> bytes:
    """A signature by ``signer``'s own key whose R is the identity (r = 0): S = k·a."""
    seed = signer.key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little") & ((1 << 254) - 8) | (1 << 254)
    r_enc, public = _enc(1), base64.b64decode(signer.public_b64)
    k = int.from_bytes(hashlib.sha512(r_enc + public + message).digest(), "little") % L
    return r_enc + (k * a % L).to_bytes(32, "little")


def test_a_small_order_r_is_refused(register_plugin, aira_home: Path) -> None:
    """OpenSSL accepts R = identity from the key's owner (a malleable second signature of
    the same manifest); aira does not."""
    m = manifest()
    raw_sig = _signature_with_identity_r(VENDOR, signing.signed_bytes(m))
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(VENDOR.public_b64))
    # cryptography 50 / OpenSSL 3.0 accept it (raises InvalidSignature if a later one does
    # not: then aira's own check is a second line, and this line can go).
    public.verify(raw_sig, signing.signed_bytes(m))
    sig = PackageSignature(
        publisher=VENDOR.publisher,
        key_id=VENDOR.key_id,
        signature=base64.b64encode(raw_sig).decode(),
    )
    assert signing.signature_valid(m, sig, public) is False
    source = package_source(m, None)
    source = type(source)(
        name=source.name,
        manifest=source.manifest,
        signature=json.dumps(sig.to_wire()).encode(),
        implementations=source.implementations,
    )
    registry = register_plugin(_packages_plugin(source), "malleable")
    trust = TrustPolicy(TrustStore(publishers=[_publisher(VENDOR.publisher, VENDOR.public_b64)]))
    catalog = build_catalog(registry, trust=trust)
    assert catalog.packages == {}
    assert [r.code for r in catalog.quarantine[0].reasons] == ["SIGNATURE_INVALID"]


# -- item 6: trust fails closed ------------------------------------------------------------


def _catalog(aira: RunAira) -> dict:  # type: ignore[type-arg]
    out = aira("catalog", "list", "--json", "--quarantine")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _empty(home: Path) -> None:
    (home / STATE_FILE).write_bytes(b"")


def _delete(home: Path) -> None:
    (home / STATE_FILE).unlink()


def _replace(home: Path) -> None:
    (home / STATE_FILE).unlink()
    sqlite3.connect(home / STATE_FILE).execute("CREATE TABLE t (x)").connection.close()


@pytest.mark.parametrize("damage", [_empty, _delete, _replace], ids=["emptied", "deleted", "new"])
def test_a_lost_catalog_state_does_not_reset_rollback_protection(
    aira: RunAira, aira_home: Path, register_plugin, aira_plugin_system, damage
) -> None:
    assert aira("trust", "add", VENDOR.publisher, VENDOR.public_b64).returncode == 0
    register_plugin(_packages_plugin(package_source(manifest(version="1.4.0"), VENDOR)), "p")
    assert [p["version"] for p in _catalog(aira)["packages"]] == ["1.4.0"]
    aira_plugin_system.unregister("p")
    register_plugin(_packages_plugin(package_source(manifest(version="1.3.9"), VENDOR)), "p")
    assert [q["reasons"][0]["code"] for q in _catalog(aira)["quarantine"]] == ["CATALOG_ROLLBACK"]

    damage(aira_home)
    before = snapshot(aira_home)
    for args in (["catalog", "list", "--json"], ["trust", "add", "other", Signer().public_b64]):
        out = aira(*args)
        assert out.returncode == 1, out.stdout
        assert out.stderr.startswith("error: CATALOG_STATE_MISSING: "), out.stderr
        assert "aira trust reset-state" in out.stderr and "Traceback" not in out.stderr
    assert_unchanged(before, aira_home)

    # Only the explicit reset starts over (and then the older version is admitted).
    out = aira("trust", "reset-state")
    assert out.returncode == 0, out.stderr
    assert [p["version"] for p in _catalog(aira)["packages"]] == ["1.3.9"]


def test_a_fresh_home_needs_no_reset(aira: RunAira, aira_home: Path, register_plugin) -> None:
    """Neither file: the first command starts a state; trust add makes both files."""
    register_plugin(_packages_plugin(package_source(manifest(), VENDOR)), "p")
    assert aira("trust", "list").returncode == 0
    assert list(aira_home.iterdir()) == []  # reading creates nothing
    assert aira("trust", "add", VENDOR.publisher, VENDOR.public_b64).returncode == 0
    assert {p.name for p in aira_home.iterdir()} >= {TRUST_FILE, STATE_FILE}
    assert [p["name"] for p in _catalog(aira)["packages"]] == ["test.pkg"]


def test_reading_the_catalog_again_writes_nothing(
    aira: RunAira, aira_home: Path, register_plugin
) -> None:
    """Admission is remembered once: a catalog built again (its conformance re-run, as for a
    kernel without a fingerprint) leaves AIRA_HOME byte for byte as it was, so a command
    refused after it has changed nothing on disk."""
    register_plugin(_packages_plugin(package_source(manifest(), VENDOR)), "p")
    assert aira("trust", "add", VENDOR.publisher, VENDOR.public_b64).returncode == 0
    assert [p["name"] for p in _catalog(aira)["packages"]] == ["test.pkg"]
    before = snapshot(aira_home)
    assert [p["name"] for p in _catalog(aira)["packages"]] == ["test.pkg"]
    assert_unchanged(before, aira_home)


def test_a_revoked_key_cannot_be_added_again(
    aira: RunAira, aira_home: Path, register_plugin
) -> None:
    register_plugin(_packages_plugin(package_source(manifest(), VENDOR)), "p")
    assert aira("trust", "add", VENDOR.publisher, VENDOR.public_b64).returncode == 0
    assert aira("trust", "revoke", VENDOR.key_id).returncode == 0
    builtin_id = signing.key_id(base64.b64decode(BUILTIN_PUBLIC_KEY))
    assert aira("trust", "revoke", builtin_id).returncode == 0
    before = snapshot(aira_home)
    for publisher, key in (
        (VENDOR.publisher, VENDOR.public_b64),
        (BUILTIN_PUBLISHER, BUILTIN_PUBLIC_KEY),
    ):
        out = aira("trust", "add", publisher, key)
        assert out.returncode == 1
        assert out.stderr.startswith("error: TRUST_KEY_REVOKED: "), out.stderr
        assert "Traceback" not in out.stderr
    assert_unchanged(before, aira_home)
    (q,) = _catalog(aira)["quarantine"]
    assert [r["code"] for r in q["reasons"]] == ["TRUST_KEY_REVOKED"]


def test_an_expiry_on_the_builtin_key_is_honoured(aira: RunAira, aira_home: Path) -> None:
    out = aira("trust", "add", BUILTIN_PUBLISHER, BUILTIN_PUBLIC_KEY, "--expires", "2020-01-01")
    assert out.returncode == 0, out.stderr
    listed = json.loads(aira("trust", "list", "--json").stdout)["keys"]
    (builtin,) = [k for k in listed if k["builtin"]]
    assert builtin["expired"] is True and builtin["expiresAt"].startswith("2020-01-01")
    builtin_id = builtin["keyId"]
    sig = PackageSignature(
        publisher=BUILTIN_PUBLISHER, key_id=builtin_id, signature="A" * 86 + "=="
    )
    m = manifest(publisher=BUILTIN_PUBLISHER)
    result = TrustPolicy.load().verify(m, BUILTIN_PUBLISHER, json.dumps(sig.to_wire()).encode())
    assert getattr(result, "code", None) == "TRUST_KEY_EXPIRED"
    # A later (or no) expiry given elsewhere never loosens an earlier one.
    store = TrustStore(
        publishers=[
            TrustedPublisher(
                publisher=VENDOR.publisher,
                keys=[
                    VENDOR.trusted_key(expires_at="2020-01-01T00:00:00Z"),
                    VENDOR.trusted_key(),
                ],
            )
        ]
    )
    (record,) = [r for r in TrustPolicy(store).records() if r.key.key_id == VENDOR.key_id]
    assert record.key.expires_at is not None and record.key.expires_at.year == 2020


# -- item 10, first case -------------------------------------------------------------------


@pytest.mark.parametrize(
    "publisher",
    ["vendor\n", "vendor\x1b[31m", "véndor", "a" * 65, "vendor\u2028", " vendor"],
    ids=["newline", "escape", "non-ascii", "too-long", "line-separator", "space"],
)
def test_a_publisher_name_that_is_not_a_name(
    aira: RunAira, aira_home: Path, publisher: str
) -> None:
    before = snapshot(aira_home)
    out = aira("trust", "add", publisher, VENDOR.public_b64)
    assert out.returncode == 1
    assert out.stderr.startswith("error: TRUST_PUBLISHER_INVALID: "), out.stderr
    assert "Traceback" not in out.stderr and "\x1b" not in out.stderr
    assert_unchanged(before, aira_home)


def test_the_longest_publisher_name_is_accepted(aira: RunAira) -> None:
    assert aira("trust", "add", "a" * 64, VENDOR.public_b64).returncode == 0


def test_a_deleted_trust_store_does_not_undo_its_revocations(
    aira: RunAira, aira_home: Path
) -> None:
    builtin_id = signing.key_id(base64.b64decode(BUILTIN_PUBLIC_KEY))
    assert aira("trust", "revoke", builtin_id).returncode == 0
    (aira_home / TRUST_FILE).unlink()
    before = snapshot(aira_home)
    for args in (["trust", "list"], ["catalog", "list", "--json"]):
        out = aira(*args)
        assert out.returncode == 1, out.stdout
        assert out.stderr.startswith("error: TRUST_STORE_MISSING: "), out.stderr
        assert "aira trust reset-state" in out.stderr and "Traceback" not in out.stderr
    assert_unchanged(before, aira_home)
    assert aira("trust", "reset-state").returncode == 0  # the user accepts the loss
    listed = json.loads(aira("trust", "list", "--json").stdout)["keys"]
    assert [k["revoked"] for k in listed] == [False]


def test_a_reset_state_next_to_a_trust_store_still_guards_it(
    aira: RunAira, aira_home: Path
) -> None:
    assert aira("trust", "add", VENDOR.publisher, VENDOR.public_b64).returncode == 0
    (aira_home / STATE_FILE).unlink()
    assert aira("trust", "reset-state").returncode == 0
    (aira_home / TRUST_FILE).unlink()
    out = aira("trust", "list")
    assert out.stderr.startswith("error: TRUST_STORE_MISSING: "), out.stderr


@pytest.mark.parametrize("key", [IDENTITY], ids=["identity"])
def test_sign_with_a_degenerate_trust_store_leaves_the_package_as_it_was(
    aira: RunAira, aira_home: Path, tmp_path: Path, key: str
) -> None:
    """``catalog sign`` reads the trust store before it writes: a damaged store refuses the
    command and the package keeps its old (here: no) signature."""
    from factory import write_package

    pkg = write_package(tmp_path / "pkg", manifest())
    pem = VENDOR.write_pem(tmp_path / "vendor.pem")
    CatalogState().close()
    _write_trust(aira_home, "v", key)
    before = snapshot(aira_home, pkg)
    out = aira("catalog", "sign", str(pkg), "--key", str(pem))
    assert out.returncode == 1 and "KEY_INVALID" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert_unchanged(before, aira_home, pkg)


def test_a_state_from_another_home_does_not_reset_rollback_protection(
    aira: RunAira, aira_home: Path, tmp_path: Path, register_plugin, aira_plugin_system
) -> None:
    """A catalog state copied in from another home (where nothing was admitted yet) is not
    this trust store's pair: TRUST_STORE_MISMATCH, not the older version admitted again."""
    other = tmp_path / "other-home"
    assert aira("trust", "add", "other", Signer().public_b64, home=other).returncode == 0
    assert aira("trust", "add", VENDOR.publisher, VENDOR.public_b64).returncode == 0
    register_plugin(_packages_plugin(package_source(manifest(version="1.4.0"), VENDOR)), "p")
    assert [p["version"] for p in _catalog(aira)["packages"]] == ["1.4.0"]
    aira_plugin_system.unregister("p")
    register_plugin(_packages_plugin(package_source(manifest(version="1.3.9"), VENDOR)), "p")

    (aira_home / STATE_FILE).write_bytes((other / STATE_FILE).read_bytes())
    before = snapshot(aira_home)
    for args in (["catalog", "list", "--json"], ["trust", "list"]):
        out = aira(*args)
        assert out.returncode == 1, out.stdout
        assert out.stderr.startswith("error: TRUST_STORE_MISMATCH: "), out.stderr
        assert "aira trust reset-state" in out.stderr and "Traceback" not in out.stderr
    assert_unchanged(before, aira_home)


def test_a_trust_store_restored_from_before_a_revocation_is_refused(
    aira: RunAira, aira_home: Path, register_plugin
) -> None:
    """Putting back the trust.json of before ``trust revoke`` would un-revoke the key."""
    register_plugin(_packages_plugin(package_source(manifest(), VENDOR)), "p")
    assert aira("trust", "add", VENDOR.publisher, VENDOR.public_b64).returncode == 0
    old = (aira_home / TRUST_FILE).read_bytes()
    assert aira("trust", "revoke", VENDOR.key_id).returncode == 0
    (aira_home / TRUST_FILE).write_bytes(old)
    before = snapshot(aira_home)
    out = aira("catalog", "list", "--json")
    assert out.returncode == 1 and "TRUST_STORE_MISMATCH" in out.stderr, out.stderr
    assert_unchanged(before, aira_home)
    # The user's explicit choice: a new state for the trust store as it stands.
    assert aira("trust", "reset-state").returncode == 0
    assert [p["name"] for p in _catalog(aira)["packages"]] == ["test.pkg"]


def test_a_trust_store_write_cut_short_by_a_crash_still_opens(aira_home: Path) -> None:
    """A process killed between recording the new trust store and writing it leaves either
    file acceptable: the write that landed, or the store as it was."""
    from aira_core.canonical import sha256_bytes_hex
    from aira_core.catalog.trust import add_key, load_user_store

    add_key(VENDOR.publisher, VENDOR.public_b64)
    data = (aira_home / TRUST_FILE).read_bytes()
    state = CatalogState()
    try:
        state.trust_store_writing(sha256_bytes_hex(data + b" "))  # then the process died
        assert state.trust_store_known(sha256_bytes_hex(data))  # the old file: it stands
    finally:
        state.close()
    (aira_home / TRUST_FILE).write_bytes(data + b" ")  # ...or the new file landed
    assert load_user_store().publishers
    (aira_home / TRUST_FILE).write_bytes(data)  # and now the old one is no longer the pair
    with pytest.raises(AiraError) as exc:
        load_user_store()
    assert exc.value.code == "TRUST_STORE_MISMATCH"


# -- issue 32, item 6: one parser rule for every signed or trusted JSON file ----------------


@pytest.mark.parametrize("valid_last", [True, False], ids=["garbage-first", "valid-first"])
def test_a_signature_file_with_a_duplicate_key_is_malformed_in_either_order(
    aira: RunAira, aira_home: Path, tmp_path: Path, valid_last: bool
) -> None:
    """``manifest.sig`` with two ``"signature"`` values was admitted when the valid one came
    last (pydantic's parser keeps the last); ``manifest.json`` refuses duplicate keys, and
    so does the signature now, whichever value is first."""
    from factory import write_package

    vendor = Signer("test-vendor")
    pkg = write_package(tmp_path / "pkg", manifest())
    key = vendor.write_pem(tmp_path / "vendor.pem")
    assert aira("catalog", "sign", str(pkg), "--key", str(key)).returncode == 0
    assert aira("trust", "add", "test-vendor", vendor.public_b64).returncode == 0
    assert aira("catalog", "verify", str(pkg)).returncode == 0
    text = (pkg / "manifest.sig").read_text(encoding="utf-8")
    good = json.loads(text)["signature"]
    garbage = base64.b64encode(b"\0" * 64).decode()
    first, last = (garbage, good) if valid_last else (good, garbage)
    doubled = text.replace(
        json.dumps(good), f'{json.dumps(first)}, "signature": {json.dumps(last)}', 1
    )
    assert doubled.count('"signature"') == 2
    (pkg / "manifest.sig").write_text(doubled, encoding="utf-8")
    before = snapshot(aira_home, pkg)
    out = aira("catalog", "verify", str(pkg), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "SIGNATURE_MALFORMED" and "duplicate key" in error["message"]
    assert_unchanged(before, aira_home, pkg)


def test_a_trust_store_with_a_duplicate_key_is_refused(aira: RunAira, aira_home: Path) -> None:
    assert aira("trust", "add", "test-vendor", Signer("test-vendor").public_b64).returncode == 0
    path = aira_home / "trust.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("{", '{"format": "x", ', 1), encoding="utf-8")
    before = snapshot(aira_home)
    out = aira("trust", "list", "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert json.loads(out.stdout)["error"]["code"] == "TRUST_STORE_INVALID"
    assert "duplicate key" in json.loads(out.stdout)["error"]["message"]
    assert_unchanged(before, aira_home)
