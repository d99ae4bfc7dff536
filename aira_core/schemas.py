"""The schema registry behind ``aira schema``: every published contract by name.

JSON Schemas are generated from the pydantic models of :mod:`aira_core.contracts`, never
hand-written; a few contracts are published as data instead (:data:`DOCUMENTS`, e.g. the
9 × 9 admission matrix of the runtime). This module sits above the runtime and the step host
because it publishes their contracts; ``contracts`` itself imports neither.
"""

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
from aira_core.contracts.script import DecisionScript
from aira_core.contracts.search import SearchRequest, SearchResponse
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.runtime.contract import contract_json

__all__ = ["DOCUMENTS", "SCHEMAS", "SCHEMA_NOT_FOUND", "json_schema"]

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


def _model_schema(model: type[BaseModel]) -> Callable[[], dict[str, Any]]:
    return lambda: model.model_json_schema(by_alias=True)


DOCUMENTS: dict[str, Callable[[], dict[str, Any]]] = {
    "meta-operation-contract": contract_json,
    "decision-script": _model_schema(DecisionScript),
    "search-request": _model_schema(SearchRequest),
    "search-response": _model_schema(SearchResponse),
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
