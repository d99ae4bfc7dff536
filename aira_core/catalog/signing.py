"""Ed25519 signing and verification of capability package manifests.

The signed bytes are ``context || 0x00 || canonical_bytes(manifest)``: canonical so that a
signature survives re-formatting but not a change of meaning, with a context string so a
package signature can never be passed off as a signature over anything else.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from aira_core.canonical import canonical_bytes, sha256_bytes_hex
from aira_core.contracts.package import PackageSignature
from aira_core.diagnostics import AiraError
from aira_core.inputs import read_input

# The one place the context string is spelled is the signature contract itself.
SIGNATURE_CONTEXT: str = PackageSignature.model_fields["context"].default

KEY_INVALID = "KEY_INVALID"

# OpenSSL (behind `cryptography`) verifies cofactorless and accepts any 32 bytes as a public
# key: under the identity point, the signature 0x01 || 0^63 verifies for every message, and
# a real key's owner can sign with the identity as R. Nothing in `cryptography` rejects such
# points, so the encoding is checked here: a point must be canonical (y < p), on the curve and
# not one of the eight small-order points. Those have only five y values (x = 0 for orders 1
# and 2, y = 0 for order 4, and ±Y8 for order 8: libsodium's blocklist), so a lookup by y
# covers every encoding of them once y >= p is refused.
_P = 2**255 - 19
_D = -121665 * pow(121666, -1, _P) % _P
_Y8 = int.from_bytes(
    bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"), "little"
)
_SMALL_ORDER_Y = frozenset({0, 1, _P - 1, _Y8, _P - _Y8})


def point_problem(raw: bytes) -> str | None:
    """Why the 32-byte encoding ``raw`` is not a usable Ed25519 point, or None if it is."""
    if len(raw) != 32:
        return "not 32 bytes"
    y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    if y >= _P:
        return "a non-canonical encoding (y >= p)"
    if y in _SMALL_ORDER_Y:
        return "a small-order point, under which forged signatures verify"
    # x^2 = (y^2 - 1) / (d y^2 + 1) must have a root: Euler's criterion.
    u = (y * y - 1) * pow(_D * y * y + 1, -1, _P) % _P
    if pow(u, (_P - 1) // 2, _P) != 1:
        return "not a point on the curve"
    return None


def signed_bytes(manifest: Any) -> bytes:
    return SIGNATURE_CONTEXT.encode() + b"\x00" + canonical_bytes(manifest)


def raw_public_key(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_key: bytes | Ed25519PublicKey) -> str:
    """First 16 hex digits of sha256 over the raw 32-byte public key."""
    raw = public_key if isinstance(public_key, bytes) else raw_public_key(public_key)
    return sha256_bytes_hex(raw)[:16]


def public_key_b64(key: Ed25519PublicKey) -> str:
    """The key as base64 of its raw bytes (how it is shown and stored); ``KEY_INVALID`` for a
    degenerate key, so no such key is ever printed (keygen) or stored as trusted."""
    raw = raw_public_key(key)
    problem = point_problem(raw)
    if problem is not None:
        raise AiraError(KEY_INVALID, f"the public key is {problem}")
    return base64.b64encode(raw).decode()


def decode_public_key(b64: str) -> Ed25519PublicKey:
    """A public key from base64 of its raw 32 bytes; ``KEY_INVALID`` otherwise, and for a
    degenerate key (:func:`point_problem`)."""
    try:
        raw = base64.b64decode(b64, validate=True)
        key = Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError) as exc:
        raise AiraError(KEY_INVALID, "not a base64 raw 32-byte Ed25519 public key") from exc
    problem = point_problem(raw)
    if problem is not None:
        raise AiraError(KEY_INVALID, f"the Ed25519 public key is {problem}")
    return key


def public_key_path(private: Path) -> Path:
    """Where ``aira catalog keygen`` puts the public half of the private key at ``private``:
    ``NAME.pub`` beside ``NAME.pem``, as the first-party pair is laid out."""
    name = private.name if private.suffix == ".pub" else private.stem
    return private.with_name(f"{name}.pub")


def read_public_key(text_or_path: str) -> Ed25519PublicKey:
    """A public key given as base64 of its raw 32 bytes, or as a ``.pub`` file holding that
    text (what keygen writes): a user pastes the one or names the other. ``KEY_INVALID``
    otherwise."""
    text = text_or_path.strip()
    path = Path(text)
    if text and path.is_file():
        data = read_input(path, "key", what="public key file", unreadable=KEY_INVALID)
        text = data.decode("ascii", errors="replace").strip()
    return decode_public_key(text)


def load_private_key(path: str | Path) -> Ed25519PrivateKey:
    """An Ed25519 private key from an unencrypted PKCS#8 PEM file."""
    path = Path(path)
    try:
        data = read_input(path, "key", what="key file", unreadable=KEY_INVALID)
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise AiraError(
            KEY_INVALID, f"key file {path.name!r} is not an unencrypted PKCS#8 PEM key"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise AiraError(
            KEY_INVALID,
            f"key file {path.name!r} holds a {type(key).__name__}, not an Ed25519 private key",
        )
    return key


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def sign_manifest(manifest: Any, key: Ed25519PrivateKey, publisher: str) -> PackageSignature:
    return PackageSignature(
        publisher=publisher,
        key_id=key_id(key.public_key()),
        signature=base64.b64encode(key.sign(signed_bytes(manifest))).decode(),
    )


def signature_valid(manifest: Any, signature: PackageSignature, key: Ed25519PublicKey) -> bool:
    """Whether ``signature`` verifies under ``key``; never under a degenerate key, nor with a
    degenerate R (OpenSSL accepts a small-order R, which makes signatures malleable)."""
    if point_problem(raw_public_key(key)) is not None:
        return False
    try:
        raw = base64.b64decode(signature.signature, validate=True)
        if point_problem(raw[:32]) is not None:
            return False
        key.verify(raw, signed_bytes(manifest))
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True
