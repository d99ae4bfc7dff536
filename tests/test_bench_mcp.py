"""benchmarks/bench_mcp.py at small sizes: what its report is relied on for. Aira lists the
same eleven tools, in the same bytes, whatever the catalog holds, while a flat projection (a
tool per capability) grows with it; the latencies are real timings. No timing threshold is
asserted: the numbers are reported by running the script on its own."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from aira_core import plugins
from aira_core.catalog.capabilities import capability_index
from aira_core.mcp.tools import MODEL_APPLY, OPERATIONS, TASK_OPEN

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "bench_mcp.py"
CALLS = 5
SYNTHETIC = 300


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_mcp", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load()


@pytest.fixture(scope="module")
def report() -> Iterator[dict[str, Any]]:
    """One small run on the first-party kernel, installed entry points opted in (here, and
    in the server the benchmark starts, which inherits AIRA_PLUGINS)."""
    if importlib.util.find_spec("aira_kernel_occt") is None:
        pytest.skip("aira-kernel-occt is not installed: aira mcp serve has no kernel")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRA_PLUGINS", "occt")
        patch.setattr(plugins, "_system", plugins.PluginSystem(load_entrypoints=True))
        yield bench.run(CALLS, SYNTHETIC)


def test_the_same_eleven_tools_at_both_catalog_sizes(report: dict[str, Any]) -> None:
    production, synthetic = report["production"], report["synthetic"]
    assert synthetic["capabilities"] == SYNTHETIC
    assert production["capabilities"] > 10  # the first-party kernel's catalog
    expected = [TASK_OPEN, *OPERATIONS, MODEL_APPLY]
    assert production["tools"] == synthetic["tools"] == 11
    assert production["tool_names"] == synthetic["tool_names"] == expected


def test_airas_list_does_not_grow_with_the_catalog_and_the_flat_one_does(
    report: dict[str, Any],
) -> None:
    production, synthetic = report["production"], report["synthetic"]
    assert production["tools_list_bytes"] == synthetic["tools_list_bytes"] > 0
    assert report["aira_bytes_equal"] is True
    # the flat projection: one tool per capability, its bytes grow with their number
    assert production["flat"]["tools"] == production["capabilities"]
    assert synthetic["flat"]["tools"] == SYNTHETIC
    assert synthetic["flat"]["bytes"] > production["flat"]["bytes"] > 0
    split = production["tools_list_split"]
    assert all(v > 0 for v in split.values())
    assert sum(split.values()) == production["tools_list_bytes"]


def test_latencies_are_timings_of_every_call(report: dict[str, Any]) -> None:
    latency = report["production"]["latency"]
    assert set(latency) == {"catalog_search", "model_read"}
    for timed in latency.values():
        q = timed["seconds"]
        assert timed["calls"] == CALLS
        assert 0 < q["min"] <= q["p50"] <= q["p95"] <= q["max"]
        assert timed["first_call_seconds"] > 0
        assert timed["result_bytes_p50"] > 0
    floor = report["production"]["floor_seconds"]
    assert 0 < floor["min"] <= floor["p50"] <= floor["p95"] <= floor["max"]
    assert report["production"]["connect_seconds"] > 0


def test_flat_tool_names_are_api_safe_and_unique() -> None:
    capabilities = capability_index(bench._synthetic_module().synthetic_catalog(50))
    names = [t.name for t in bench.flat_tools(capabilities)]
    assert len(set(names)) == 50
    assert all(re.fullmatch(r"[A-Za-z0-9_]{1,64}", n) for n in names)
    # two ids that sanitise alike still make two tools
    entry = SimpleNamespace(
        descriptor=SimpleNamespace(summary="a box"), input_schema={"type": "object"}
    )
    alike = {"cap:exact.box@1": entry, "cap:exact-box@1": entry}
    assert [t.name for t in bench.flat_tools(alike)] == ["exact_box_1", "exact_box_1_2"]


def test_a_server_that_does_not_start_is_an_error_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        bench, "server_command", lambda store: [sys.executable, "-c", "raise SystemExit(3)"]
    )
    assert bench.main(["--calls", "1", "--synthetic", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the stdio server failed:")
    assert "Traceback" not in err
