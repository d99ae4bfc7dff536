"""Wire shapes as pydantic models. JSON Schemas are generated from these, never hand-written:
``aira schema NAME`` prints one, and :func:`json_schema` returns it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from aira_core.contracts.capability import (
    ApplicableCapabilityView,
    CapabilityDescriptor,
    CapabilityProfile,
    RuntimeCapabilitySnapshot,
    SemanticOperationDescriptor,
    SessionGrant,
)
from aira_core.contracts.package import (
    ConformanceReport,
    PackageManifest,
    PackageSignature,
    TrustStore,
)
from aira_core.diagnostics import AiraError, Diagnostic

SCHEMA_NOT_FOUND = "SCHEMA_NOT_FOUND"

SCHEMAS: dict[str, type[BaseModel]] = {
    "capability-descriptor": CapabilityDescriptor,
    "semantic-operation-descriptor": SemanticOperationDescriptor,
    "capability-profile": CapabilityProfile,
    "runtime-capability-snapshot": RuntimeCapabilitySnapshot,
    "session-grant": SessionGrant,
    "applicable-capability-view": ApplicableCapabilityView,
    "package-manifest": PackageManifest,
    "package-signature": PackageSignature,
    "trust-store": TrustStore,
    "conformance-report": ConformanceReport,
    "diagnostic": Diagnostic,
}


def json_schema(name: str) -> dict[str, Any]:
    """The generated JSON Schema (Draft 2020-12) of a named contract."""
    model = SCHEMAS.get(name)
    if model is None:
        raise AiraError(
            SCHEMA_NOT_FOUND, f"no contract named {name!r}; known: {', '.join(sorted(SCHEMAS))}"
        )
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:aira:schema:{name}",
        **schema,
    }


__all__ = [
    "SCHEMAS",
    "ApplicableCapabilityView",
    "CapabilityDescriptor",
    "CapabilityProfile",
    "ConformanceReport",
    "PackageManifest",
    "PackageSignature",
    "RuntimeCapabilitySnapshot",
    "SemanticOperationDescriptor",
    "SessionGrant",
    "TrustStore",
    "json_schema",
]
