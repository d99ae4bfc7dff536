"""Contracts: the wire shapes validate what they promise and their JSON Schemas are
generated from the models."""

from __future__ import annotations

import json

import pytest
from cli_runner import RunAira
from factory import manifest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from aira_core.contracts.capability import (
    CapabilityDescriptor,
    CapabilityKind,
    RelationType,
    SessionGrant,
    TaxonomyPath,
)
from aira_core.schemas import DOCUMENTS, SCHEMAS, json_schema


def test_enums_match_the_spec() -> None:
    assert len(CapabilityKind) == 8  # seven kinds; importer/exporter is one kind, two values
    assert {r.value for r in RelationType} == {
        "requires",
        "produces",
        "accepts",
        "composesWith",
        "alternativeTo",
        "convertsTo",
        "validates",
        "repairsDiagnostic",
        "supersedes",
        "conflictsWith",
    }
    assert {t.value for t in TaxonomyPath} >= {
        "authoring.exact.finishing",
        "query.topology",
        "validation.manufacturing",
        "io.export",
    }
    for path in TaxonomyPath:  # every path's parent is in the taxonomy too
        parent = path.value.rpartition(".")[0]
        assert not parent or parent in {t.value for t in TaxonomyPath}


@pytest.mark.parametrize("targets", [{}, {"operationRef": "a.b@1.0.0", "queryRef": "a.c@1.0.0"}])
def test_exactly_one_execution_target(targets) -> None:  # type: ignore[no-untyped-def]
    d = manifest()["descriptors"][0]
    del d["operationRef"]
    with pytest.raises(ValidationError) as exc:
        CapabilityDescriptor.model_validate({**d, **targets})
    assert exc.value.errors()[0]["type"] == "LINT_TARGET_NOT_EXACTLY_ONE"


def test_descriptor_round_trips_through_the_wire_shape() -> None:
    d = manifest()["descriptors"][1]
    model = CapabilityDescriptor.model_validate(d)
    assert model.target == ("operationRef", "test.fillet@1.0.0")
    assert CapabilityDescriptor.model_validate(model.to_wire()) == model


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_generated_schemas_are_valid_draft_2020_12(name: str) -> None:
    Draft202012Validator.check_schema(json_schema(name))


def test_descriptor_schema_accepts_a_real_descriptor_and_rejects_two_targets() -> None:
    validator = Draft202012Validator(json_schema("capability-descriptor"))
    d = manifest()["descriptors"][0]
    assert list(validator.iter_errors(d)) == []
    assert list(validator.iter_errors({**d, "kind": "magic"}))


def test_session_grant_ids() -> None:
    SessionGrant(grant_id="grant:abc", actor="user:1")
    with pytest.raises(ValidationError):
        SessionGrant(grant_id="abc", actor="user:1")


def test_cli_schema_prints_generated_schema(aira: RunAira) -> None:
    out = aira("schema", "capability-descriptor")
    assert out.returncode == 0
    assert json.loads(out.stdout) == json_schema("capability-descriptor")
    names = aira("schema").stdout.split()
    assert names == sorted({*SCHEMAS, *DOCUMENTS})
