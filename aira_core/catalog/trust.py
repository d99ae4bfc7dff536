"""Trust: which publishers' keys may admit packages, until when, and which are revoked.

The built-in store trusts publisher ``aira-first-party``. The user's store
(``$AIRA_HOME/trust.json``) adds publishers and keys and can revoke any key, built-in ones
included. Verification refuses unknown, revoked and expired keys (an expired key freezes
its packages out rather than letting stale metadata in).

Trust fails closed: a degenerate key is refused wherever it enters (``KEY_INVALID``: trust add,
the stored file, :mod:`signing`); a revocation is permanent (re-adding the key is
``TRUST_KEY_REVOKED``); an expiry set on any key, the built-in one included, is honoured (the
earliest expiry a key is given wins).
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aira_core.canonical import sha256_bytes_hex
from aira_core.catalog import signing
from aira_core.catalog.state import RESET_COMMAND, STATE_FILE, TRUST_FILE, CatalogState
from aira_core.config import aira_home
from aira_core.contracts.package import (
    PACKAGE_NAME_PATTERN,
    PackageSignature,
    TrustedKey,
    TrustedPublisher,
    TrustStore,
)
from aira_core.diagnostics import AiraError, Diagnostic

BUILTIN_PUBLISHER = "aira-first-party"
BUILTIN_PUBLIC_KEY = "V2lnYRZxGV2+riCrNuX/QrJd+riLuxGFfQ4s5pOgvHg="

# Stable codes (docs/catalog.md).
SIGNATURE_MISSING = "SIGNATURE_MISSING"
SIGNATURE_MALFORMED = "SIGNATURE_MALFORMED"
SIGNATURE_UNKNOWN_KEY = "SIGNATURE_UNKNOWN_KEY"
SIGNATURE_PUBLISHER_MISMATCH = "SIGNATURE_PUBLISHER_MISMATCH"
SIGNATURE_INVALID = "SIGNATURE_INVALID"
TRUST_KEY_EXPIRED = "TRUST_KEY_EXPIRED"
TRUST_KEY_REVOKED = "TRUST_KEY_REVOKED"
TRUST_STORE_INVALID = "TRUST_STORE_INVALID"
TRUST_KEY_NOT_FOUND = "TRUST_KEY_NOT_FOUND"
TRUST_KEY_CONFLICT = "TRUST_KEY_CONFLICT"
TRUST_STORE_UNAVAILABLE = "TRUST_STORE_UNAVAILABLE"
TRUST_PUBLISHER_INVALID = "TRUST_PUBLISHER_INVALID"
TRUST_STORE_MISSING = "TRUST_STORE_MISSING"
TRUST_STORE_MISMATCH = "TRUST_STORE_MISMATCH"

MAX_PUBLISHER_LENGTH = 64
"""A publisher name is shown in every listing and message: short enough to read."""


def builtin_store() -> TrustStore:
    return TrustStore(
        publishers=[
            TrustedPublisher(
                publisher=BUILTIN_PUBLISHER,
                keys=[
                    TrustedKey(
                        key_id=signing.key_id(signing.decode_public_key(BUILTIN_PUBLIC_KEY)),
                        public_key=BUILTIN_PUBLIC_KEY,
                    )
                ],
            )
        ]
    )


def user_store_path() -> Path:
    return aira_home() / TRUST_FILE


def check_publisher(publisher: str) -> None:
    """``TRUST_PUBLISHER_INVALID`` unless ``publisher`` is lowercase words joined by . or -
    (the whole name: a trailing newline is no part of a name), at most
    :data:`MAX_PUBLISHER_LENGTH` characters."""
    if len(publisher) > MAX_PUBLISHER_LENGTH or not re.fullmatch(PACKAGE_NAME_PATTERN, publisher):
        shown = publisher if len(publisher) <= MAX_PUBLISHER_LENGTH else publisher[:40] + "…"
        raise AiraError(
            TRUST_PUBLISHER_INVALID,
            f"publisher {shown!r} must be lowercase words joined by . or -, "
            f"at most {MAX_PUBLISHER_LENGTH} characters",
        )


def _ask_state(path: Path, question: Callable[[CatalogState], bool]) -> bool | None:
    """``question`` of the catalog state beside the trust store at ``path``; None when there
    is no state there (a fresh home, or one CatalogState refuses itself when it opens)."""
    state_path = path.parent / STATE_FILE
    if not state_path.exists() or state_path.stat().st_size == 0:
        return None
    state = CatalogState(state_path)
    try:
        return question(state)
    finally:
        state.close()


def _check_not_lost(path: Path) -> None:
    if _ask_state(path, lambda state: state.trust_store_written()):
        raise AiraError(
            TRUST_STORE_MISSING,
            f"the trust store {TRUST_FILE} in AIRA_HOME is missing, but one was written "
            "before: its keys and revocations would be forgotten. Restore it, or run "
            f"`{RESET_COMMAND}` to start over without it (the catalog state starts new too)",
        )


def _check_keys(store: TrustStore) -> None:
    """``KEY_INVALID`` for a stored key that is degenerate (small-order, non-canonical, off
    the curve): a hand-edited or old trust store must not let a forgeable key in."""
    for pub in store.publishers:
        for key in pub.keys:
            problem = signing.point_problem(base64.b64decode(key.public_key))
            if problem is not None:
                raise AiraError(
                    signing.KEY_INVALID,
                    f"the trust store {TRUST_FILE} in AIRA_HOME holds key {key.key_id} of "
                    f"{pub.publisher!r}, which is {problem}; remove it",
                )


def load_user_store(path: Path | None = None) -> TrustStore:
    """The user's store; an absent file is an empty store, a malformed one an error, and so is
    an absent one the catalog state beside it says was written (``TRUST_STORE_MISSING``:
    deleting the file must not quietly undo its revocations)."""
    path = path or user_store_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        _check_not_lost(path)
        return TrustStore()
    except OSError as exc:
        raise AiraError(
            TRUST_STORE_UNAVAILABLE,
            f"cannot read the trust store {TRUST_FILE} in AIRA_HOME: {exc.strerror}",
        ) from None
    from aira_core.canonical import StrictJSONError, loads_strict

    try:
        store = TrustStore.model_validate(loads_strict(data, TRUST_FILE)[0], by_name=False)
    except StrictJSONError as exc:
        raise AiraError(
            TRUST_STORE_INVALID,
            f"the trust store {TRUST_FILE} in AIRA_HOME is not valid: {exc}; fix or remove it",
        ) from None
    except ValidationError as exc:
        raise AiraError(
            TRUST_STORE_INVALID,
            f"the trust store {TRUST_FILE} in AIRA_HOME is not a valid "
            f"{TrustStore.model_fields['format'].default} document "
            f"({exc.error_count()} errors); fix or remove it",
        ) from exc
    _check_keys(store)
    _check_belongs(path, data)
    return store


def _check_belongs(path: Path, data: bytes) -> None:
    """``TRUST_STORE_MISMATCH`` unless the trust store is the one the catalog state beside it
    last wrote: a trust store restored from before a revocation, or a state copied in from
    another home, must not pass for the pair that guards this one."""
    digest = sha256_bytes_hex(data)
    if _ask_state(path, lambda state: state.trust_store_known(digest)) is False:
        raise AiraError(
            TRUST_STORE_MISMATCH,
            f"the trust store {TRUST_FILE} in AIRA_HOME is not the one the catalog state beside "
            "it last wrote (restored from a backup, edited by hand, or the state copied from "
            "another home): its revocations or the rollback protection could be lost. Put the "
            f"pair back, or run `{RESET_COMMAND}` to start a new state for this trust store",
        )


def save_user_store(store: TrustStore, path: Path | None = None) -> None:
    """Write atomically: a crash leaves the old store or the new one, never half of one.

    The catalog state beside it is opened first (created, or found damaged:
    ``CATALOG_STATE_MISSING``), so a trust store never stands without the rollback protection
    it guards; once the file is written the state remembers it (``TRUST_STORE_MISSING``)."""
    path = path or user_store_path()
    _check_keys(store)
    data = json.dumps(store.to_wire(), indent=2, sort_keys=True).encode() + b"\n"
    state = CatalogState(path.parent / STATE_FILE)
    digest = sha256_bytes_hex(data)
    try:
        state.trust_store_writing(digest)
        _write_atomically(path, data)
        state.trust_store_wrote(digest)
    finally:
        state.close()


def _write_atomically(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trust-", suffix=".json")
    except OSError as exc:
        raise AiraError(
            TRUST_STORE_UNAVAILABLE,
            f"cannot write the trust store {TRUST_FILE} in AIRA_HOME: {exc.strerror}",
        ) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise AiraError(
            TRUST_STORE_UNAVAILABLE,
            f"cannot write the trust store {TRUST_FILE} in AIRA_HOME: {exc.strerror}",
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class KeyRecord:
    publisher: str
    key: TrustedKey
    builtin: bool
    revoked: bool

    def expired(self, now: datetime) -> bool:
        return self.key.expires_at is not None and _aware(self.key.expires_at) <= now

    def to_json(self, now: datetime) -> dict[str, Any]:
        return {
            "publisher": self.publisher,
            "keyId": self.key.key_id,
            "publicKey": self.key.public_key,
            "expiresAt": self.key.expires_at.isoformat() if self.key.expires_at else None,
            "revoked": self.revoked,
            "expired": self.expired(now),
            "builtin": self.builtin,
        }


@dataclass(frozen=True)
class VerifiedSignature:
    publisher: str
    key_id: str
    signature: str


def _aware(dt: datetime) -> datetime:
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


class TrustPolicy:
    """The effective trust: the built-in store plus the user's store."""

    def __init__(self, user: TrustStore | None = None, *, include_builtin: bool = True) -> None:
        self.user = user if user is not None else TrustStore()
        _check_keys(self.user)
        revoked = set(self.user.revoked_key_ids)
        self._keys: dict[str, KeyRecord] = {}
        stores = ([(builtin_store(), True)] if include_builtin else []) + [(self.user, False)]
        for store, builtin in stores:
            for pub in store.publishers:
                for key in pub.keys:
                    record = self._keys.get(key.key_id)
                    if record is None:
                        self._keys[key.key_id] = KeyRecord(
                            pub.publisher, key, builtin, key.revoked or key.key_id in revoked
                        )
                        continue
                    # The key again (the built-in key with a user's expiry, a duplicate): the
                    # first publisher keeps it, and the earliest expiry and any revocation win,
                    # so a restriction is never shadowed by an earlier, looser entry.
                    expiry = min(
                        (e for e in (record.key.expires_at, key.expires_at) if e is not None),
                        key=_aware,
                        default=None,
                    )
                    self._keys[key.key_id] = KeyRecord(
                        record.publisher,
                        record.key.model_copy(update={"expires_at": expiry}),
                        record.builtin,
                        record.revoked or key.revoked,
                    )

    @classmethod
    def load(cls) -> TrustPolicy:
        return cls(load_user_store())

    def records(self) -> list[KeyRecord]:
        return sorted(self._keys.values(), key=lambda r: (r.publisher, r.key.key_id))

    def verify(
        self,
        manifest: Any,
        manifest_publisher: str,
        signature_bytes: bytes | None,
        now: datetime | None = None,
    ) -> VerifiedSignature | Diagnostic:
        """Check a detached signature over ``manifest`` (the parsed manifest JSON)."""
        now = _aware(now) if now is not None else datetime.now(UTC)
        if not signature_bytes:
            return Diagnostic(
                code=SIGNATURE_MISSING, message="the package has no signature file (manifest.sig)"
            )
        from aira_core.canonical import StrictJSONError, loads_strict

        try:
            # the manifest's parser rule: a duplicate key is no document (pydantic's own
            # parser would take the last of two "signature" values)
            raw = loads_strict(signature_bytes, "manifest.sig")[0]
            sig = PackageSignature.model_validate(raw, by_name=False)
        except StrictJSONError as exc:
            return Diagnostic(
                code=SIGNATURE_MALFORMED,
                message=f"manifest.sig is not a valid aira.signature/1 document ({exc})",
            )
        except ValidationError as exc:
            return Diagnostic(
                code=SIGNATURE_MALFORMED,
                message=f"manifest.sig is not a valid aira.signature/1 document "
                f"({exc.error_count()} errors)",
            )
        if sig.publisher != manifest_publisher:
            return Diagnostic(
                code=SIGNATURE_PUBLISHER_MISMATCH,
                message=f"signature names publisher {sig.publisher!r} but the "
                f"manifest names {manifest_publisher!r}",
            )
        record = self._keys.get(sig.key_id)
        if record is None:
            return Diagnostic(
                code=SIGNATURE_UNKNOWN_KEY,
                message=f"key {sig.key_id} is not in the trust store; add it with "
                f"`aira trust add {sig.publisher} PUBLIC_KEY`",
            )
        if record.publisher != sig.publisher:
            return Diagnostic(
                code=SIGNATURE_PUBLISHER_MISMATCH,
                message=f"key {sig.key_id} belongs to publisher "
                f"{record.publisher!r}, not {sig.publisher!r}",
            )
        if record.revoked:
            return Diagnostic(
                code=TRUST_KEY_REVOKED,
                message=f"key {sig.key_id} of {record.publisher!r} is revoked",
            )
        if record.expired(now):
            return Diagnostic(
                code=TRUST_KEY_EXPIRED,
                message=f"key {sig.key_id} of "
                f"{record.publisher!r} expired at {record.key.expires_at}",
            )
        public = signing.decode_public_key(record.key.public_key)
        if not signing.signature_valid(manifest, sig, public):
            return Diagnostic(
                code=SIGNATURE_INVALID,
                message=f"the signature does not verify under key {sig.key_id}: "
                f"the manifest was changed after signing or signed by "
                f"another key",
            )
        return VerifiedSignature(sig.publisher, sig.key_id, sig.signature)


def add_key(publisher: str, public_key_b64: str, expires_at: datetime | None = None) -> TrustedKey:
    """Trust ``public_key_b64`` for ``publisher`` in the user's store; returns the key.

    A revoked key stays revoked (``TRUST_KEY_REVOKED``): a revocation says the key is
    compromised, and adding it again must not quietly undo that."""
    check_publisher(publisher)
    key_obj = signing.decode_public_key(public_key_b64.strip())
    store = load_user_store()
    bound = next(
        (r for r in TrustPolicy(store).records() if r.key.key_id == signing.key_id(key_obj)), None
    )
    if bound is not None and bound.revoked:
        raise AiraError(
            TRUST_KEY_REVOKED,
            f"key {bound.key.key_id} of {bound.publisher!r} is revoked, and a revocation is "
            "permanent; the publisher must sign with a new key",
        )
    if bound is not None and bound.publisher != publisher:
        raise AiraError(
            TRUST_KEY_CONFLICT,
            f"key {bound.key.key_id} is already trusted for "
            f"publisher {bound.publisher!r}; a key signs for one publisher",
        )
    key = TrustedKey(
        key_id=signing.key_id(key_obj),
        public_key=signing.public_key_b64(key_obj),
        expires_at=expires_at,
    )
    publishers = [p for p in store.publishers if p.publisher != publisher]
    existing = next((p for p in store.publishers if p.publisher == publisher), None)
    keys = [k for k in (existing.keys if existing else []) if k.key_id != key.key_id] + [key]
    publishers.append(TrustedPublisher(publisher=publisher, keys=keys))
    save_user_store(store.model_copy(update={"publishers": publishers}))
    return key


def revoke_key(key_id: str) -> KeyRecord:
    """Revoke a key (built-in or user-added) in the user's store."""
    store = load_user_store()
    policy = TrustPolicy(store)
    record = next((r for r in policy.records() if r.key.key_id == key_id), None)
    if record is None:
        raise AiraError(
            TRUST_KEY_NOT_FOUND,
            f"no trusted key has id {key_id!r}; `aira trust list` shows the key ids",
        )
    if key_id not in store.revoked_key_ids:
        save_user_store(
            store.model_copy(update={"revoked_key_ids": [*store.revoked_key_ids, key_id]})
        )
    return KeyRecord(record.publisher, record.key, record.builtin, True)
