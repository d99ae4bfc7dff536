"""Benchmark: ``aira catalog search "…" --json`` as a fresh process, first call and warm.

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_catalog_search.py             # human-readable report
    .venv/bin/python benchmarks/bench_catalog_search.py --json      # one JSON object
    .venv/bin/python benchmarks/bench_catalog_search.py --runs 30 --embedder hashing

Every call runs in the current environment (every installed plugin, the OCCT kernel
included) with ``AIRA_HOME`` set to a fresh temporary folder: the **first call** pays what a
first start after installing pays (conformance on the real kernel, the model's cache, the
index), the **warm** calls after it reuse what the first one stored. For each call: wall
time (``time.perf_counter`` around the subprocess), CPU time and peak resident memory of
the process tree (``os.wait4``'s ``ru_maxrss``: the largest of the command and the children
it waited for). ``python -c pass`` and ``aira --help`` are timed the same way for scale (a
busy machine slows all three alike). The target: warm p50 ≤ 0.5 s wall and ≤ 200 MB peak.
The script reports and never fails a build: it exits 0 whether or not the target is met
(2 if a command fails).

``PYTHONDONTWRITEBYTECODE`` is removed from the commands' environment: an installed package
has its bytecode, and without it every start compiles the project's modules again.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _report import BenchmarkError, parse_args, report_run, script_parser, verdict
from bench_cli_help import aira_command  # the same `aira` a user runs (a sibling script)

from aira_core.stats import percentile

QUERY = "round the vertical edges by 2 mm"

TARGET_P50_S = 0.5
TARGET_PEAK_MB = 200.0
DEFAULT_RUNS = 10


def timed(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Wall time, CPU time and peak RSS of one run of ``cmd`` (its own ``wait4`` usage),
    and its stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    # read both pipes to the end first (a full pipe would block the child), then reap it
    # with wait4 to get its own resource usage
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout)),
        threading.Thread(target=drain, args=("err", proc.stderr)),
    ]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise BenchmarkError(
            f"{' '.join(cmd)} exited with {proc.returncode}: "
            f"{chunks.get('err', b'').decode(errors='replace').strip()[-500:]}"
        )
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "stdout": chunks.get("out", b""),
    }


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [s["wall_s"] for s in samples]
    return {
        "runs": len(samples),
        "wall_s": {"min": min(walls), "p50": percentile(walls, 50), "p90": percentile(walls, 90)},
        "cpu_s_p50": statistics.median(s["cpu_s"] for s in samples),
        "peak_mb_max": max(s["peak_mb"] for s in samples),
    }


def run(runs: int, query: str, embedder: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="aira-bench-search-") as home:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["AIRA_HOME"] = home
        env.pop("AIRA_CACHE", None)  # the cache under the fresh home: a first call is cold
        if embedder is not None:
            env["AIRA_EMBEDDER"] = embedder
        search = [*aira_command(), "catalog", "search", query, "--json"]
        first = timed(search, env)
        response = json.loads(first["stdout"])
        warm = [timed(search, env) for _ in range(runs)]
        help_runs = [timed([*aira_command(), "--help"], env) for _ in range(runs)]
        bare = [timed([sys.executable, "-c", "pass"], env) for _ in range(runs)]
        cached = sorted(str(p.relative_to(home)) for p in Path(home, "cache").glob("*/*"))
    warm_s = summary(warm)
    help_s = summary(help_runs)
    return {
        "benchmark": "catalog_search",
        "command": [*search[:-3], repr(query), "--json"],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "embedder": response.get("embedder"),
        "top_hit": response["hits"][0]["capabilityId"] if response.get("hits") else None,
        "first_call": {k: v for k, v in first.items() if k != "stdout"},
        "warm": warm_s,
        "aira_help": help_s,
        "python_pass": summary(bare),
        "warm_p50_over_help_p50": warm_s["wall_s"]["p50"] / help_s["wall_s"]["p50"],
        "cache_entries": cached,
        "target": {
            "p50_max_s": TARGET_P50_S,
            "peak_max_mb": TARGET_PEAK_MB,
            "met": warm_s["wall_s"]["p50"] <= TARGET_P50_S
            and warm_s["peak_mb_max"] <= TARGET_PEAK_MB,
        },
    }


def print_report(r: dict[str, Any]) -> None:
    w, f, h, p = r["warm"], r["first_call"], r["aira_help"], r["python_pass"]
    print(f"aira catalog search {r['command'][-2]} --json   (embedder: {r['embedder']})")
    print(f"  python {r['python']}; top hit {r['top_hit']}")
    print(
        f"  first call (fresh AIRA_HOME): {f['wall_s']:.2f} s wall, {f['cpu_s']:.2f} s CPU, "
        f"{f['peak_mb']:.0f} MB peak"
    )
    print(
        f"  warm, {w['runs']} runs: p50 {w['wall_s']['p50']:.3f} s, p90 {w['wall_s']['p90']:.3f} s"
        f", min {w['wall_s']['min']:.3f} s wall; CPU p50 {w['cpu_s_p50']:.3f} s; "
        f"peak {w['peak_mb_max']:.0f} MB"
    )
    print(
        f"  for scale: aira --help p50 {h['wall_s']['p50']:.3f} s ({h['peak_mb_max']:.0f} MB), "
        f"python -c pass p50 {p['wall_s']['p50']:.3f} s; "
        f"search / help = {r['warm_p50_over_help_p50']:.2f}"
    )
    t = r["target"]
    print(
        f"  target: warm p50 <= {t['p50_max_s']} s and peak <= {t['peak_max_mb']:.0f} MB: "
        + verdict(t["met"])
    )
    print(f"  cached under AIRA_HOME: {', '.join(r['cache_entries']) or 'nothing'}")


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="warm runs (default 10)")
    parser.add_argument("--query", default=QUERY, help=f"the intent (default {QUERY!r})")
    parser.add_argument(
        "--embedder", default=None, help="AIRA_EMBEDDER for the runs (default: as configured)"
    )
    args = parse_args(parser, argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return report_run(
        lambda: run(args.runs, args.query, args.embedder),
        print_report,
        as_json=args.json,
        errors=(OSError, ValueError),
    )


if __name__ == "__main__":
    sys.exit(main())
