"""The discovery commands on the installed first-party catalog: catalog search, describe,
manifest and signatures, and `aira bench discovery` (its report's shape, not its numbers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("cadquery")

from cli_runner import new_process
from test_occt_cli import aira

ROOT = Path(__file__).parents[3]


def run_json(home: Path, *args: str) -> dict:
    out = aira(home, *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_search_describe_manifest_and_signatures(aira_home: Path) -> None:
    found = run_json(aira_home, "catalog", "search", "倒圆角 2毫米", "--top-k", "3")
    assert found["hits"][0]["capabilityId"] == "cap:exact.fillet@1"
    assert len(found["hits"]) <= 3 and found["noMatch"] is False
    assert found["hits"][0]["authorization"] == "allowed"  # the local user's grant
    assert found["hits"][0]["runtimeApplicability"] == "applicable"  # the kernel runs it
    none = run_json(aira_home, "catalog", "search", "send an email to the supplier")
    assert none["noMatch"] is True and none["hits"] == []
    queries = run_json(aira_home, "catalog", "search", "volume", "--kind", "model.query")
    assert {h["kind"] for h in queries["hits"]} == {"model.query"}

    contract = run_json(aira_home, "catalog", "describe", "cap:exact.hole@1")["contract"]
    assert contract["operationRef"] == "exact.hole@1.0.0" and "inputSchema" in contract
    guided = run_json(aira_home, "catalog", "describe", "cap:exact.hole@1", "--level", "L3")
    assert guided["guidance"]["intentExamples"]

    manifest = run_json(aira_home, "catalog", "manifest")
    assert manifest["interfaceVersion"] and "catalog.search" in manifest["metaOperations"]
    assert manifest["snapshots"]["discoveryCatalogHash"].startswith("disc:sha256:")

    out = aira(aira_home, "catalog", "signatures", "cap:exact.box@1", "cap:exact.fillet@1")
    assert out.returncode == 0, out.stderr
    assert "exact.box@1(length:Len>0" in out.stdout and "exact.fillet@1(" in out.stdout

    for args, code in [
        (["catalog", "describe", "cap:nope@1"], "DESCRIBE_CAPABILITY_UNKNOWN"),
        (["catalog", "describe", "cap:exact.box@1", "--level", "L9"], "DESCRIBE_LEVEL_INVALID"),
        (["catalog", "search", "x", "--top-k", "500"], "SEARCH_REQUEST_INVALID"),
        (["catalog", "search", "x", "--max-risk", "extreme"], "SEARCH_REQUEST_INVALID"),
        (["catalog", "signatures", "cap:nope@1"], "CAPABILITY_UNKNOWN"),
        (["bench", "discovery", "--queries", "missing.json"], "BENCH_QUERIES_INVALID"),
    ]:
        bad = aira(aira_home, *args)
        assert bad.returncode == 1 and code in bad.stderr, (args, bad.stdout, bad.stderr)
        assert "Traceback" not in bad.stderr


def test_bench_discovery_reports_three_configurations(aira_home: Path) -> None:
    queries = ROOT / "benchmarks" / "discovery" / "queries.json"
    report = run_json(aira_home, "bench", "discovery", "--queries", str(queries))
    assert report["catalog"] == "aira.kernel.occt"
    configs = report["configurations"]
    assert set(configs) == {"bm25", "hybrid", "hybrid+embeddings"}
    for name in ("bm25", "hybrid"):
        for half in ("all", "dev", "test"):
            scores = configs[name][half]
            assert {"recallAt1", "recallAt5", "mrr", "noMatchAccuracy", "p50Ms", "p95Ms"} <= set(
                scores
            )
            assert 0 <= scores["recallAt5"] <= 1
        assert configs[name]["all"]["queries"] >= 80


def _hits(home: Path, intent: str) -> tuple[list[str], dict]:
    found = run_json(home, "catalog", "search", intent, "--top-k", "10")
    assert found["noMatch"] is False, (intent, found)
    return [h["capabilityId"] for h in found["hits"]], found


def test_a_whole_part_finds_what_building_it_needs_builders_first(aira_home: Path) -> None:
    # the agent's whole-part description: its features, the shape first
    ids, _ = _hits(aira_home, "a 3mm thick rectangular plate 18 x 32 mm with two holes")
    assert {"cap:exact.box@1", "cap:exact.hole@1"} <= set(ids[:3])
    # the operations that build the part come before queries about it
    ids, found = _hits(aira_home, "a plate with four counterbored holes")
    kinds = [h["kind"] for h in found["hits"]]
    assert ids[0] == "cap:exact.hole@1" and "cap:exact.box@1" in ids[:3]
    assert "model.query" not in kinds[:5]
    # a part to save: built before it is exported
    ids, _ = _hits(aira_home, "a 60 mm cylinder with a 2 mm fillet, and export it as STL")
    assert ids.index("cap:io.exportStl@1") > max(
        ids.index("cap:exact.cylinder@1"), ids.index("cap:exact.fillet@1")
    )
    # two bodies make one part when one is placed on the other and fused
    ids, found = _hits(
        aira_home, "spherical handle: a 25 mm ball on top of an 8 mm stem 20 mm long"
    )
    assert {"cap:exact.sphere@1", "cap:exact.cylinder@1", "cap:exact.union@1"} <= set(ids)
    assert "cap:exact.translate@1" in ids
    # a single capability asked for is still that capability, and nothing is still nothing
    ids, _ = _hits(aira_home, "fillet the top edges 2 mm")
    assert ids[0] == "cap:exact.fillet@1"
    none = run_json(aira_home, "catalog", "search", "book a meeting room and send the invites")
    assert none["noMatch"] is True


def test_a_search_answers_the_same_in_every_process(aira_home: Path) -> None:
    # the partner a feature composesWith comes in the order the relation lists it, not in a
    # set's order (which is the process's hash seed): the hexagonal standoff's profile was
    # given an extrude in one process and a revolve in another
    intent = "hexagonal standoff 8 mm across flats, 20 mm high, with a 3.2 mm hole through its axis"
    answers = []
    for seed in ("0", "1", "2"):
        out = new_process(
            "catalog", "search", intent, "--top-k", "10", "--json",
            home=aira_home, AIRA_PLUGINS="occt", PYTHONHASHSEED=seed, timeout=600,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        answers.append([h["capabilityId"] for h in json.loads(out.stdout)["hits"]])
    assert answers[0] == answers[1] == answers[2]
    assert "cap:exact.extrude@1" in answers[0]  # a polygon profile is extruded first


def test_a_capability_is_found_by_its_own_name(aira_home: Path) -> None:
    """As a user types it, with the search the CLI runs (the sentence model when the extra
    is installed): one word that names a capability is that capability, first."""
    for word, first in (
        ("translate", "cap:exact.translate@1"),
        ("torus", "cap:exact.torus@1"),
        ("cap:exact.union@1", "cap:exact.union@1"),
        ("donut", "cap:exact.torus@1"),
    ):
        found = run_json(aira_home, "catalog", "search", word, "--top-k", "5")
        assert found["noMatch"] is False and found["hits"][0]["capabilityId"] == first, word
