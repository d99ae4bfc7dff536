"""The tool list does not grow with the catalog (RFC-0002 §13.1): at 10,000 synthetic
capabilities the server lists the same eleven tools, byte for byte, as over the test package's
handful; capabilities stay data that search finds."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.mcp.engine import Engine
from aira_core.model.repository import ModelRepository
from aira_core.runtime.plan import PlanContext
from aira_core.testing.kernel import FakeGeometryKernel

DISCOVERY = Path(__file__).parents[2] / "benchmarks" / "discovery"


def _synthetic() -> Any:
    if "synthetic" not in sys.modules:
        spec = importlib.util.spec_from_file_location("synthetic", DISCOVERY / "synthetic.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["synthetic"] = module
        spec.loader.exec_module(module)
    return sys.modules["synthetic"]


def test_ten_thousand_capabilities_list_the_same_eleven_tools(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRA_EMBEDDER", "hashing")
    engine.start()
    small = engine.list_tools()
    catalog = _synthetic().synthetic_catalog(10_000, seed=0)
    index = capability_index(catalog)
    assert len(index) == 10_000
    repository = ModelRepository.open(tmp_path / "big.sqlite3", node_signatures(index), create=True)
    try:
        repository.init()
        big = Engine(
            None,
            kernel=FakeGeometryKernel(),
            context=PlanContext(catalog=catalog, repository=repository, capabilities=index),
        )
        big.start()
        listed = big.list_tools()
        assert [t["name"] for t in listed] == [t["name"] for t in small]
        assert json.dumps(listed, sort_keys=True) == json.dumps(small, sort_keys=True)
        # the catalog is reachable as data: a search of the big catalog finds its hits
        task = big.call("task_open", {}).envelope["data"]["task"]
        found = big.call("catalog_search", {"task": task, "intent": "fillet edges", "topK": 5})
        assert not found.is_error and len(found.envelope["data"]["hits"]) == 5
        assert len(big.list_tools()) == 11
    finally:
        repository.close()
