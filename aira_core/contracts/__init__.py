"""Wire shapes as pydantic models. JSON Schemas are generated from these, never hand-written:
``aira schema NAME`` prints one, and :func:`json_schema` returns it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from aira_core.contracts.amir import AmirDocument, Patch
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
from aira_core.contracts.plan import CheckReport, IntentFrame, ObservationEnvelope, Plan
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
    "amir-document": AmirDocument,
    "amir-patch": Patch,
    "intent-frame": IntentFrame,
    "plan": Plan,
    "check-report": CheckReport,
    "observation-envelope": ObservationEnvelope,
}


def _meta_operation_contract() -> dict[str, Any]:
    # Imported lazily: the runtime builds on these contracts, so a top-level import would cycle.
    from aira_core.runtime.contract import contract_json

    return contract_json()


def _decision_script() -> dict[str, Any]:
    from aira_core.step.trajectory import DecisionScript

    return DecisionScript.model_json_schema(by_alias=True)


def _search_request() -> dict[str, Any]:
    from aira_core.contracts.search import SearchRequest

    return SearchRequest.model_json_schema(by_alias=True)


def _search_response() -> dict[str, Any]:
    from aira_core.contracts.search import SearchResponse

    return SearchResponse.model_json_schema(by_alias=True)


DOCUMENTS: dict[str, Callable[[], dict[str, Any]]] = {
    "meta-operation-contract": _meta_operation_contract,
    "decision-script": _decision_script,
    "search-request": _search_request,
    "search-response": _search_response,
}
"""Contracts published as data rather than as a schema (e.g. the 9 × 9 admission matrix)."""


def json_schema(name: str) -> dict[str, Any]:
    """The generated JSON Schema (Draft 2020-12) of a named contract, or the data of a
    contract that is a document (:data:`DOCUMENTS`)."""
    document = DOCUMENTS.get(name)
    if document is not None:
        return document()
    model = SCHEMAS.get(name)
    if model is None:
        known = ", ".join(sorted({*SCHEMAS, *DOCUMENTS}))
        raise AiraError(SCHEMA_NOT_FOUND, f"no contract named {name!r}; known: {known}")
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:aira:schema:{name}",
        **schema,
    }


__all__ = [
    "DOCUMENTS",
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
