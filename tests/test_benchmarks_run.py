"""The benchmarks still run against the current APIs (tiny sizes; no timing is asserted:
the numbers themselves are reported by running the scripts on their own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[1] / "benchmarks"

SMALL = {
    "bench_cli_help.py": ["--runs", "1"],
    "bench_cli_apply.py": ["--runs", "1"],
    "bench_admission.py": ["--runs", "1", "--descriptors", "20"],
    "bench_store.py": ["--commits", "3", "--reads", "3"],
    "bench_providers.py": [
        "--runs",
        "1",
        "--warmup",
        "0",
        "--task",
        "bracket",
        "--transport",
        "tool",
    ],
    "bench_summary.py": ["--runs", "3", "--nodes", "20", "--profile", "0"],
    "bench_occt.py": ["--runs", "1", "--queries", "5"],
    "discovery/bench_scale.py": ["--sizes", "50,200", "--queries", "10"],
    "bench_catalog_search.py": ["--runs", "1", "--embedder", "hashing"],
    "bench_gateway_overhead.py": ["--steps", "5", "--capsule-kb", "2"],
    "bench_mcp.py": ["--calls", "2", "--synthetic", "50"],
    "bench_agent.py": ["--only", "washer"],
}


# aira mcp serve needs the installed kernel; bench_occt runs the bundled scripts, whose
# catalog needs it too (the test session's AIRA_PLUGINS is empty)
OCCT = {"AIRA_PLUGINS": "occt"}
ENV = {
    "bench_mcp.py": OCCT,
    "bench_occt.py": OCCT,
    "bench_agent.py": OCCT,
    "bench_cli_apply.py": OCCT,
    "bench_catalog_search.py": OCCT,  # it applies a plate for its plan check and query
}


def test_every_benchmark_is_covered() -> None:
    found = {p.relative_to(BENCHMARKS).as_posix() for p in BENCHMARKS.rglob("bench_*.py")}
    assert found == set(SMALL)


@pytest.mark.parametrize("script", sorted(SMALL))
def test_benchmark_runs_and_reports_json(script: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *SMALL[script], "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, **ENV.get(script, {})},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert isinstance(json.loads(out.stdout), dict)


def test_the_gateway_benchmark_splits_the_overhead_it_reports(tmp_path: Path) -> None:
    """Its parts are timed inside the same steps: they add up to the overhead, and the
    in-process send it leaves out is reported beside it."""
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_gateway_overhead.py"), "--steps", "5", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["steps"] == 5 and report["ledger_writes_per_step"] == 2
    mean = report["split_mean_seconds"]
    assert set(mean) == {"ledger_write", "ledger_read", "build", "digest", "parse", "gateway"}
    assert all(mean[k] > 0 for k in ("ledger_write", "ledger_read", "build", "digest", "parse"))
    overhead = report["overhead_seconds"]
    assert overhead["min"] <= overhead["p50"] <= overhead["p95"] <= overhead["max"]
    assert report["send_in_process_seconds"]["p50"] > 0
    assert report["target"] == {
        "metric": "overhead p50",
        "max_seconds": 0.003,
        "met": overhead["p50"] <= 0.003,
    }
