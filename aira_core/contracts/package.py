"""Wire shapes of signed capability packages, signatures, trust stores and the reports the
catalog records on admission."""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from aira_core.canonical import sha256_bytes_hex
from aira_core.contracts.base import SemVer, WireModel
from aira_core.contracts.capability import CapabilityDescriptor
from aira_core.contracts.workflow import WorkflowDefinition
from aira_core.diagnostics import Diagnostic

MANIFEST_FORMAT = "aira.capability-package/1"
SIGNATURE_FORMAT = "aira.signature/1"
TRUST_STORE_FORMAT = "aira.trust-store/1"

PACKAGE_NAME_PATTERN = r"^[a-z][a-z0-9]*([.-][a-z0-9]+)*$"
KEY_ID_PATTERN = r"^[0-9a-f]{16}$"


class PackageManifest(WireModel):
    """What a publisher signs: the package identity, its descriptors and their schemas."""

    format: Literal["aira.capability-package/1"] = MANIFEST_FORMAT
    name: str = Field(pattern=PACKAGE_NAME_PATTERN, examples=["aira.kernel.occt"])
    version: SemVer
    publisher: str = Field(pattern=PACKAGE_NAME_PATTERN, examples=["aira-first-party"])
    descriptors: list[CapabilityDescriptor]
    schemas: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """JSON Schemas (Draft 2020-12) by the ``schemaRef`` that descriptors use."""
    workflows: dict[str, WorkflowDefinition] = Field(default_factory=dict)
    """Workflow definitions by the ``workflowRef`` of their descriptors (docs/workflows.md):
    in the manifest, so the signature covers them."""


class PackageSignature(WireModel):
    """A detached Ed25519 signature over ``context || 0x00 || canonical_bytes(manifest)``.

    The context string binds the signature to its purpose, so it cannot be replayed as a
    signature over anything else the same key signs."""

    format: Literal["aira.signature/1"] = SIGNATURE_FORMAT
    algorithm: Literal["ed25519"] = "ed25519"
    context: Literal["aira.capability-package.v1"] = "aira.capability-package.v1"
    publisher: str
    key_id: str = Field(pattern=KEY_ID_PATTERN)
    signature: str = Field(
        # base64 of exactly 64 bytes: anything else is a malformed file, not a bad signature
        pattern=r"^[A-Za-z0-9+/]{86}==$",
        description="base64 of the 64 signature bytes",
    )


class TrustedKey(WireModel):
    key_id: str = Field(pattern=KEY_ID_PATTERN)
    """First 16 hex digits of sha256 over the raw 32-byte public key."""
    public_key: str = Field(description="base64 of the raw 32-byte Ed25519 public key")
    expires_at: datetime | None = None
    revoked: bool = False

    @model_validator(mode="after")
    def _key_matches_its_id(self) -> TrustedKey:
        # A stored id that is not derived from the key would let one key pose as another.
        try:
            raw = base64.b64decode(self.public_key, validate=True)
        except binascii.Error:
            raw = b""
        if len(raw) != 32:
            raise PydanticCustomError(
                "TRUST_KEY_INVALID", "publicKey is not base64 of a raw 32-byte Ed25519 key"
            )
        if sha256_bytes_hex(raw)[:16] != self.key_id:
            raise PydanticCustomError(
                "TRUST_KEY_INVALID",
                "keyId {key_id} is not the first 16 hex digits of sha256(publicKey)",
                {"key_id": self.key_id},
            )
        return self

    @field_validator("expires_at")
    @classmethod
    def _utc_if_naive(cls, value: datetime | None) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


class TrustedPublisher(WireModel):
    publisher: str = Field(pattern=PACKAGE_NAME_PATTERN)
    keys: list[TrustedKey] = Field(default_factory=list)


class TrustStore(WireModel):
    """Publishers and their keys. The user's store adds to the built-in one; a revocation
    in the user's store applies to built-in keys too."""

    format: Literal["aira.trust-store/1"] = TRUST_STORE_FORMAT
    publishers: list[TrustedPublisher] = Field(default_factory=list)
    revoked_key_ids: list[str] = Field(default_factory=list)


class ConformanceCheck(WireModel):
    capability_id: str
    target: str
    implementation: str | None = None
    passed: bool
    diagnostics: list[Diagnostic] = Field(default_factory=list)


class ConformanceReport(WireModel):
    """The conformance result recorded with an admitted (or quarantined) package."""

    package: str
    version: str
    manifest_hash: str
    checked_at: datetime
    passed: bool
    checks: list[ConformanceCheck] = Field(default_factory=list)
    implementations: str | None = None
    """Fingerprint of the implementations checked (refs, diagnostics, their own
    fingerprints); a passed report is reused while the manifest and this stay the same."""
