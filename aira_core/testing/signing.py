"""A FAKE publisher for tests: a throwaway Ed25519 key that signs packages, and a trust
store that trusts it.

The key is generated in memory for one test and never written anywhere unless a test asks
(:meth:`ThrowawaySigner.write_pem`). Signing and trust go through
:mod:`aira_core.catalog.signing` and :mod:`aira_core.catalog.trust`, so a package signed
here verifies exactly as one signed with ``aira catalog sign``. Not for production keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aira_core.catalog.package import loads_strict, signature_path, source_from_path
from aira_core.catalog.signing import key_id, private_key_pem, public_key_b64, sign_manifest
from aira_core.catalog.trust import TrustPolicy, save_user_store
from aira_core.contracts.package import PackageSignature, TrustedKey, TrustedPublisher, TrustStore
from aira_core.testing.package import PUBLISHER


class ThrowawaySigner:
    """A FAKE publisher key for one test: a fresh Ed25519 key for ``publisher``.

    :meth:`sign` gives the bytes of a ``manifest.sig`` for a manifest;
    :meth:`sign_package` signs a package directory (or manifest file) on disk and writes
    the signature where ``aira catalog sign`` would. Neither lints: a test may sign a
    broken package to see the catalog quarantine it.
    """

    def __init__(self, publisher: str = PUBLISHER) -> None:
        self.publisher = publisher
        self.key = Ed25519PrivateKey.generate()

    def __repr__(self) -> str:
        return f"ThrowawaySigner({self.publisher!r}, key_id={self.key_id!r})"

    @property
    def public_b64(self) -> str:
        """The public key as ``aira trust add PUBLISHER PUBLIC_KEY`` takes it."""
        return public_key_b64(self.key.public_key())

    @property
    def key_id(self) -> str:
        return key_id(self.key.public_key())

    def signature(self, manifest: Mapping[str, Any] | bytes) -> PackageSignature:
        """The signature over ``manifest`` (a parsed manifest, or its JSON bytes)."""
        raw = loads_strict(manifest)[0] if isinstance(manifest, bytes) else manifest
        return sign_manifest(raw, self.key, self.publisher)

    def sign(self, manifest: Mapping[str, Any] | bytes) -> bytes:
        """The ``manifest.sig`` bytes for ``manifest``, formatted as ``aira catalog sign``
        writes them."""
        return (json.dumps(self.signature(manifest).to_wire(), indent=2) + "\n").encode()

    def sign_package(self, path: str | Path) -> Path:
        """Sign the package at ``path`` (a directory or a manifest file) and write the
        signature beside the manifest; returns the signature's path."""
        out = signature_path(path)
        out.write_bytes(self.sign(source_from_path(path).manifest))
        return out

    def write_pem(self, path: Path) -> Path:
        """Write the private key as ``aira catalog sign --key`` reads it (PKCS#8 PEM)."""
        path.write_bytes(private_key_pem(self.key))
        return path

    def trusted_key(self, **kw: Any) -> TrustedKey:
        """This key as a trust-store entry; ``kw`` are further fields (``expires_at`` …)."""
        return TrustedKey(key_id=self.key_id, public_key=self.public_b64, **kw)


def trust_store_for(*signers: ThrowawaySigner, **key_kw: Any) -> TrustStore:
    """A FAKE user trust store trusting each signer's key for its publisher; ``key_kw`` are
    further fields of every key (``expires_at``, ``revoked``)."""
    return TrustStore(
        publishers=[
            TrustedPublisher(publisher=s.publisher, keys=[s.trusted_key(**key_kw)]) for s in signers
        ]
    )


def trust_policy_for(
    *signers: ThrowawaySigner, path: Path | None = None, **key_kw: Any
) -> TrustPolicy:
    """The effective trust (the built-in store plus :func:`trust_store_for`) to pass
    to ``build_catalog(trust=...)``. With ``path`` the store is also written there as a
    ``trust.json`` (``$AIRA_HOME/trust.json`` is what ``TrustPolicy.load()`` reads, e.g. in an
    ``aira`` subprocess)."""
    store = trust_store_for(*signers, **key_kw)
    if path is not None:
        save_user_store(store, path)
    return TrustPolicy(store)
