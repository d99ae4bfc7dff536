"""Benchmark: wall time of ``aira --help`` as a fresh process, and what it imports.

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_cli_help.py            # human-readable report
    .venv/bin/python benchmarks/bench_cli_help.py --json     # one JSON object
    .venv/bin/python benchmarks/bench_cli_help.py --runs 50

The command runs in the current environment, so every installed ``aira`` plugin is present.
The target is a median of at most 0.3 s. The script reports and never fails a build: it exits
0 whether or not the target is met (it exits non-zero only if ``aira --help`` itself fails).
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from _report import BenchmarkError, parse_args, report_run, script_parser, verdict

from aira_core.stats import percentile

TARGET_MEDIAN_S = 0.3
WARMUP_RUNS = 2
DEFAULT_RUNS = 20
TOP_IMPORTERS = 5
HEAVY_MODULES = ("cadquery", "httpx", "mcp", "OCP")
PLUGIN_GROUP = "aira"


def aira_command() -> list[str]:
    """The ``aira`` console script next to this interpreter, else ``python -m aira_core.cli``."""
    bindir = Path(sys.executable).parent
    for name in ("aira", "aira.exe"):
        script = bindir / name
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    return [sys.executable, "-m", "aira_core.cli"]


def run_once(cmd: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise BenchmarkError(
            f"{' '.join(cmd)} exited with {proc.returncode}: "
            f"{proc.stderr.decode(errors='replace').strip()[-500:]}"
        )
    return elapsed


@dataclass(frozen=True)
class ImportRecord:
    module: str
    self_us: int
    cumulative_us: int
    depth: int


def parse_importtime(stderr: str) -> list[ImportRecord]:
    """Records of ``-X importtime`` lines: ``import time: self | cumulative | name``."""
    records = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3:
            continue
        self_text, cumulative_text, name = parts
        try:
            self_us, cumulative_us = int(self_text), int(cumulative_text)
        except ValueError:  # the header line
            continue
        name = name.rstrip()
        stripped = name.lstrip()
        # One leading space separates the column; each nesting level adds two more.
        depth = max(0, (len(name) - len(stripped) - 1) // 2)
        records.append(ImportRecord(stripped, self_us, cumulative_us, depth))
    return records


def is_heavy(module: str) -> str | None:
    for heavy in HEAVY_MODULES:
        if module == heavy or module.startswith(heavy + "."):
            return heavy
    return None


def measure_imports() -> dict[str, Any]:
    cmd = [sys.executable, "-X", "importtime", "-m", "aira_core.cli", "--help"]
    proc = subprocess.run(cmd, capture_output=True, check=False)
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise BenchmarkError(f"{' '.join(cmd)} exited with {proc.returncode}: {stderr[-500:]}")
    records = parse_importtime(stderr)
    if not records:
        raise BenchmarkError("-X importtime produced no import records")
    # Only top-level imports: a nested import's time is already inside its importer's.
    top = sorted((r for r in records if r.depth == 0), key=lambda r: -r.cumulative_us)
    heavy_found = sorted({h for r in records if (h := is_heavy(r.module))})
    return {
        "command": cmd,
        "module_count": len(records),
        "total_top_level_import_s": sum(r.cumulative_us for r in records if r.depth == 0) / 1e6,
        "top_cumulative": [
            {"module": r.module, "cumulative_s": r.cumulative_us / 1e6, "self_s": r.self_us / 1e6}
            for r in top[:TOP_IMPORTERS]
        ],
        "aira_modules": sorted(r.module for r in records if r.module.startswith("aira_core")),
        "heavy_modules_checked": list(HEAVY_MODULES),
        "heavy_modules_found": heavy_found,
        "heavy_modules_imported": [r.module for r in records if is_heavy(r.module)],
    }


def installed_plugins() -> list[str]:
    return sorted(
        f"{ep.name} ({ep.dist.name if ep.dist else '?'})"
        for ep in metadata.entry_points(group=PLUGIN_GROUP)
    )


def run(runs: int) -> dict[str, Any]:
    cmd = [*aira_command(), "--help"]
    bare = [sys.executable, "-c", "pass"]
    for _ in range(WARMUP_RUNS):
        run_once(cmd)
        run_once(bare)
    # Interleaved, so that load on the machine falls on both alike: the ratio to a bare
    # interpreter start is the number that compares across machines.
    samples, baseline = [], []
    for _ in range(runs):
        samples.append(run_once(cmd))
        baseline.append(run_once(bare))
    median = statistics.median(samples)
    bare_median = statistics.median(baseline)
    return {
        "benchmark": "cli_help",
        "command": cmd,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "installed_plugins": installed_plugins(),
        "runs": runs,
        "warmup_runs": WARMUP_RUNS,
        "seconds": {
            "min": min(samples),
            "median": median,
            "p90": percentile(samples, 90),
            "max": max(samples),
        },
        "samples_s": samples,
        "bare_python": {"command": bare, "median": bare_median, "min": min(baseline)},
        "ratio_to_bare_python": median / bare_median,
        "target": {
            "metric": "median",
            "max_seconds": TARGET_MEDIAN_S,
            "met": median <= TARGET_MEDIAN_S,
        },
        "imports": measure_imports(),
    }


def print_report(result: dict[str, Any]) -> None:
    s = result["seconds"]
    target = result["target"]
    imports = result["imports"]
    plugins = result["installed_plugins"]
    print(f"aira --help wall time ({' '.join(result['command'])})")
    print(
        f"  python {result['python']}, {len(plugins)} installed plugin(s)"
        + (f": {', '.join(plugins)}" if plugins else "")
    )
    print(f"  {result['runs']} runs after {result['warmup_runs']} discarded warm-up runs")
    print(f"  min     {s['min']:.3f} s")
    print(
        f"  median  {s['median']:.3f} s   (target <= {target['max_seconds']:.1f} s: "
        f"{verdict(target['met'])})"
    )
    print(f"  p90     {s['p90']:.3f} s")
    print(f"  max     {s['max']:.3f} s")
    bare = result["bare_python"]
    print(
        f"  `python -c pass` median {bare['median']:.3f} s: aira --help is "
        f"{result['ratio_to_bare_python']:.1f}x a bare interpreter start"
    )
    print()
    print(
        f"imports of `python -X importtime -m aira_core.cli --help` (information): "
        f"{imports['module_count']} modules"
    )
    print(f"  top {TOP_IMPORTERS} top-level imports by cumulative time:")
    for r in imports["top_cumulative"]:
        print(f"    {r['cumulative_s'] * 1000:7.1f} ms  {r['module']}")
    print(f"  aira_core modules: {', '.join(imports['aira_modules']) or 'none'}")
    found = imports["heavy_modules_found"]
    checked = ", ".join(imports["heavy_modules_checked"])
    if found:
        print(f"  HEAVY MODULES IMPORTED: {', '.join(found)} (checked: {checked})")
    else:
        print(f"  no heavy module imported (checked: {checked})")


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_RUNS,
        help=f"timed runs after {WARMUP_RUNS} warm-up runs (default: {DEFAULT_RUNS})",
    )
    args = parse_args(parser, argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return report_run(lambda: run(args.runs), print_report, as_json=args.json, errors=(OSError,))


if __name__ == "__main__":
    sys.exit(main())
