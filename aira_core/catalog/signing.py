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


def signed_bytes(manifest: Any) -> bytes:
    return SIGNATURE_CONTEXT.encode() + b"\x00" + canonical_bytes(manifest)


def raw_public_key(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_key: bytes | Ed25519PublicKey) -> str:
    """First 16 hex digits of sha256 over the raw 32-byte public key."""
    raw = public_key if isinstance(public_key, bytes) else raw_public_key(public_key)
    return sha256_bytes_hex(raw)[:16]


def public_key_b64(key: Ed25519PublicKey) -> str:
    return base64.b64encode(raw_public_key(key)).decode()


def decode_public_key(b64: str) -> Ed25519PublicKey:
    """A public key from base64 of its raw 32 bytes; ``KEY_INVALID`` otherwise."""
    try:
        raw = base64.b64decode(b64, validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError) as exc:
        raise AiraError(KEY_INVALID, "not a base64 raw 32-byte Ed25519 public key") from exc


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
    try:
        raw = base64.b64decode(signature.signature, validate=True)
        key.verify(raw, signed_bytes(manifest))
    except (binascii.Error, ValueError, InvalidSignature):
        return False
    return True
