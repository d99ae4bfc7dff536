"""Opt-in: what Aira writes validates against the upstream products' own schema files.

Set ``AIRA_UPSTREAM_GUARD_SPECS`` to a directory laid out as the upstream repositories are::

    execution-fidelity-guard/plugins/execution-fidelity-guard/spec/*.schema.json
    execution-fidelity-guard/evals/shadow-pilot-summary.schema.json
    context-continuity/spec/execution-guard-view.schema.json

The files are not in this repository (they are the upstream projects'), so the test is
skipped without it. The Guard's schemas have no ``$id`` and refer to each other by relative
file name, so each is registered under a base URI by its file name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aira_continuity.wire import WIRE_MODELS, read, read_contract_document
from tests.continuity.samples import NO_LOCAL_INSTALL, SAMPLES

ENV = "AIRA_UPSTREAM_GUARD_SPECS"
ROOT = os.environ.get(ENV)
pytestmark = pytest.mark.skipif(
    not ROOT, reason=f"{ENV} names no directory of the upstream schema files"
)

GUARD_SPEC = "execution-fidelity-guard/plugins/execution-fidelity-guard/spec"
SCHEMA_OF = {
    "task-contract-lite": f"{GUARD_SPEC}/task-contract-lite.schema.json",
    "contract-envelope": f"{GUARD_SPEC}/contract-envelope.schema.json",
    "provider-contract": f"{GUARD_SPEC}/provider-contract.schema.json",
    "continuity-snapshot": f"{GUARD_SPEC}/continuity-snapshot.schema.json",
    "decision-receipt": f"{GUARD_SPEC}/decision-receipt.schema.json",
    "normalized-event": f"{GUARD_SPEC}/normalized-event.schema.json",
    "evidence-reference": f"{GUARD_SPEC}/evidence-reference.schema.json",
    "evidence-record": f"{GUARD_SPEC}/evidence-record.schema.json",
    "shadow-pilot-summary": "execution-fidelity-guard/evals/shadow-pilot-summary.schema.json",
}
CONTINUITY_VIEW = "context-continuity/spec/execution-guard-view.schema.json"
BASE = "https://upstream.invalid/"


def validator(relative: str) -> Any:
    from jsonschema import Draft202012Validator, FormatChecker
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    assert ROOT is not None
    root = Path(ROOT)
    resources = [
        (BASE + path.relative_to(root).as_posix(), json.loads(path.read_text(encoding="utf-8")))
        for path in root.rglob("*.schema.json")
    ]
    registry = Registry().with_resources(
        (uri, Resource.from_contents(schema, default_specification=DRAFT202012))
        for uri, schema in resources
    )
    entry = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": BASE + relative}
    return Draft202012Validator(entry, registry=registry, format_checker=FormatChecker())


def produced() -> list[tuple[str, str, dict[str, Any]]]:
    """``(case, schema file, instance)``: every wire object as Aira writes it (through its
    model), the receipt export's parts against their schemas (the export has none)."""
    out = []
    for name, relative in SCHEMA_OF.items():
        wire = read(WIRE_MODELS[name], SAMPLES[name]).to_wire()
        out.append((name, relative, wire))
    out.append(("continuity-snapshot (CC view)", CONTINUITY_VIEW, out[3][2]))
    fallback = read_contract_document(NO_LOCAL_INSTALL).envelope.to_wire()
    out.append(("fallback envelope", SCHEMA_OF["contract-envelope"], fallback))
    bundle = read(WIRE_MODELS["receipt-bundle"], SAMPLES["receipt-bundle"]).to_wire()
    for part, name in (("events", "normalized-event"), ("receipts", "decision-receipt")):
        for i, item in enumerate(bundle[part]):
            out.append((f"receipt-bundle/{part}/{i}", SCHEMA_OF[name], item))
    for i, item in enumerate(bundle["evidence"]):
        out.append((f"receipt-bundle/evidence/{i}", SCHEMA_OF["evidence-record"], item))
    return out


CASES = produced()


def test_every_schema_file_is_there() -> None:
    assert ROOT is not None
    for relative in [*SCHEMA_OF.values(), CONTINUITY_VIEW]:
        assert (Path(ROOT) / relative).is_file(), relative


@pytest.mark.parametrize(("case", "relative", "instance"), CASES, ids=[c[0] for c in CASES])
def test_aira_output_validates_against_the_upstream_schema(
    case: str, relative: str, instance: dict[str, Any]
) -> None:
    errors = [f"{e.json_path}: {e.message}" for e in validator(relative).iter_errors(instance)]
    assert errors == [], case


def test_the_upstream_schemas_refuse_what_they_should() -> None:
    # the check can fail: an extra projection field and a null snapshot hash are refused
    projection = {**NO_LOCAL_INSTALL, "extra": "x"}
    assert not validator(SCHEMA_OF["task-contract-lite"]).is_valid(projection)
    document = read(WIRE_MODELS["provider-contract"], SAMPLES["provider-contract"]).to_wire()
    document["envelope"]["source"] = "task-contract-lite"
    assert not validator(SCHEMA_OF["provider-contract"]).is_valid(document)
