"""The synthetic catalogs of the search scaling benchmark (benchmarks/discovery/synthetic.py)
and the benchmark itself (bench_scale.py), at small sizes. No timing is asserted: the
numbers are reported by running the script on its own."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aira_core.canonical import canonical_bytes
from aira_core.catalog.disclosure import Disclosure
from aira_core.catalog.lint import lint_manifest
from aira_core.catalog.search import MAX_RESPONSE_BYTES, SearchIndex
from aira_core.contracts.capability import CapabilityDescriptor, CapabilityKind
from aira_core.contracts.search import MAX_TOP_K, SearchRequest

DISCOVERY = Path(__file__).parents[1] / "benchmarks" / "discovery"


def _load(name: str) -> ModuleType:
    """Import a module of benchmarks/discovery by file (the directory is not a package);
    registered under its own name, as bench_scale imports ``synthetic``."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, DISCOVERY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


synthetic = _load("synthetic")
bench_scale = _load("bench_scale")


@pytest.fixture(scope="module")
def catalog_2000() -> Any:
    return synthetic.synthetic_catalog(2000, seed=0)


@pytest.fixture(scope="module")
def index_2000(catalog_2000: Any) -> SearchIndex:
    descriptors = list(catalog_2000.capabilities().values())
    schemas = {
        ref: s for p in catalog_2000.packages.values() for ref, s in p.manifest.schemas.items()
    }
    return SearchIndex(descriptors, schemas)


def test_generator_is_deterministic_and_makes_valid_descriptors() -> None:
    first, schemas = synthetic.synthetic_descriptors(300, seed=7)
    again, schemas_again = synthetic.synthetic_descriptors(300, seed=7)
    other, _ = synthetic.synthetic_descriptors(300, seed=8)
    assert len(first) == 300
    assert all(isinstance(d, CapabilityDescriptor) for d in first)
    assert [d.to_wire() for d in first] == [d.to_wire() for d in again]
    assert canonical_bytes(schemas) == canonical_bytes(schemas_again)
    assert [d.to_wire() for d in first] != [d.to_wire() for d in other]
    assert len({d.capability_id for d in first}) == 300
    for d in first:  # every schema a descriptor names is there
        assert set(d.schema_refs()) <= set(schemas)


def test_generator_is_varied() -> None:
    descriptors, _ = synthetic.synthetic_descriptors(1000)
    kinds = Counter(d.kind for d in descriptors)
    assert set(kinds) == set(CapabilityKind)  # all eight kind values
    assert len({d.taxonomy.primary for d in descriptors}) >= 15
    titles = {d.title for d in descriptors}
    assert len(titles) > 500
    text = " ".join(t for d in descriptors for t in [d.summary, *d.intent_examples])
    assert any("\u4e00" <= ch <= "\u9fff" for ch in text)  # Chinese as well as English
    assert len(set(text.lower().split())) > 300


def test_synthetic_packages_pass_lint() -> None:
    catalog = synthetic.synthetic_catalog(400, seed=3)
    known = set(catalog.capabilities())
    findings = [
        f
        for p in catalog.packages.values()
        for f in lint_manifest(p.manifest, known_capabilities=known)
    ]
    assert findings == []
    assert len(catalog.packages) == 2  # 250 per package


def test_prefix_stability() -> None:
    small, _ = synthetic.synthetic_descriptors(50)
    large, _ = synthetic.synthetic_descriptors(500)
    assert [d.capability_id for d in small] == [d.capability_id for d in large[:50]]


def test_search_over_2000_stays_within_topk_and_the_byte_cap(index_2000: SearchIndex) -> None:
    intents = [q for q, _ in bench_scale.MIX]
    for intent in intents:
        response = index_2000.search(intent)
        assert len(response.hits) <= SearchRequest(intent="x").top_k
        assert len(canonical_bytes(response.to_wire())) <= MAX_RESPONSE_BYTES
    for intent in intents[:10]:
        response = index_2000.search(SearchRequest(intent=intent, top_k=MAX_TOP_K))
        assert len(response.hits) <= MAX_TOP_K
        assert len(canonical_bytes(response.to_wire())) <= MAX_RESPONSE_BYTES
        response = index_2000.search(SearchRequest(intent=intent, top_k=3))
        assert len(response.hits) <= 3


def test_l0_bytes_do_not_depend_on_the_catalog_size(catalog_2000: Any) -> None:
    small = synthetic.synthetic_catalog(300, seed=0)
    manifests = [
        Disclosure(c).manifest(
            meta_operations=bench_scale.META_OPERATIONS,
            contract_version=bench_scale.CONTRACT_VERSION,
        )
        for c in (small, catalog_2000)
    ]
    assert [m["smallCatalog"] for m in manifests] == [False, False]
    assert manifests[0]["snapshots"] != manifests[1]["snapshots"]
    sizes = {len(canonical_bytes(m)) for m in manifests}
    assert len(sizes) == 1


def test_small_synthetic_catalog_inlines_its_contracts() -> None:
    manifest = Disclosure(synthetic.synthetic_catalog(5)).manifest()
    assert manifest["smallCatalog"] is True
    assert len(manifest["contracts"]) == 5


def test_bench_scale_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_scale.main(["--sizes", "50,200", "--queries", "10", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"benchmark", "sizes", "target", "l0", "bounded", "query_mix"} <= set(result)
    assert [r["descriptors"] for r in result["sizes"]] == [50, 200]
    for r in result["sizes"]:
        assert {"build_s", "memory", "search_ms", "response", "l0", "no_match"} <= set(r)
        assert {"hashes_kept_ms", "hashes_recomputed_ms"} <= set(r["disclosure_search"])
        assert {"p50", "p95"} <= set(r["search_ms"])
        assert {"tracemalloc_peak_mib", "max_rss_after_mib"} <= set(r["memory"])
        assert r["response"]["max_bytes_topk_32"] <= MAX_RESPONSE_BYTES
        assert sum(g["of"] for g in r["no_match"].values()) == 10
    assert result["target"]["met"] is None  # 10,000 descriptors were not measured
    assert result["bounded"] is True
    assert result["l0"]["identical_not_inlined"] is True


def test_bench_scale_report_and_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_scale.main(["--sizes", "30", "--queries", "3", "--profile", "3"]) == 0
    out = capsys.readouterr().out
    assert "search p50" in out and "hotspots" in out
    with pytest.raises(SystemExit):
        bench_scale.main(["--sizes", "0"])
