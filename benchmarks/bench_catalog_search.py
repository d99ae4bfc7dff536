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

import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _report import BenchmarkError, parse_args, report_run, script_parser, verdict
from bench_cli_apply import STEPS  # the part the apply benchmark builds (a sibling script)
from bench_cli_help import aira_command  # the same `aira` a user runs (a sibling script)

from aira_core.cli.warm import SOCKET_DIR, hosts_under
from aira_core.stats import percentile

QUERY = "round the vertical edges by 2 mm"

TARGET_P50_S = 0.5
TARGET_HELP_RATIO = 3.0
TARGET_PEAK_MB = 200.0
PLATE = STEPS[:2]
"""The plate of bench_cli_apply (box and R2 vertical edges), committed once."""
NEXT_STEP = STEPS[2:3]
"""Its next step (the Ø6 hole), checked against the plate's revision."""
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


def prepare_model(aira: list[str], env: dict[str, str], folder: Path) -> dict[str, list[str]]:
    """A store whose head has a filleted plate, and the read-only commands over it: a plan
    check of the next plan and a mass-properties query."""
    store = folder / "store.sqlite3"
    init = json.loads(
        timed([*aira, "model", "init", "--store", str(store), "--json"], env)["stdout"]
    )
    plan = folder / "plate.json"
    plan.write_text(json.dumps({"baseRevision": init["rev"], "steps": PLATE}))
    applied = timed([*aira, "plan", "apply", str(plan), "--store", str(store), "--json"], env)
    head = json.loads(applied["stdout"])["data"]["rev"]
    check = folder / "next.json"
    check.write_text(json.dumps({"baseRevision": head, "steps": NEXT_STEP}))
    return {
        "plan check": [*aira, "plan", "check", str(check), "--store", str(store), "--json"],
        "query": [
            *aira,
            "query",
            "massProperties",
            "--args",
            json.dumps({"target": "b:plate"}),
            "--store",
            str(store),
            "--json",
        ],
    }


def wait_for_host(runtime: Path, seconds: float = 120.0) -> int:
    """The pid of the warm host under ``runtime`` once its socket is up."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pids = hosts_under(runtime)
        if pids and list((runtime / SOCKET_DIR).glob("*.sock")):
            return pids[0]
        time.sleep(0.1)
    raise BenchmarkError(f"the warm host did not come up within {seconds:g} s")


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children (the host's kernel worker), in MB."""
    total = 0
    for p in [pid, *children(pid)]:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def run(runs: int, query: str, embedder: str | None) -> dict[str, Any]:
    aira = aira_command()
    with tempfile.TemporaryDirectory(prefix="aira-bench-search-") as tmp:
        home, runtime = Path(tmp, "home"), Path(tmp, "run")
        runtime.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(AIRA_HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
        for name in ("AIRA_CACHE", "AIRA_WARM", "AIRA_OCCT_WARM"):
            env.pop(name, None)  # the cache under the fresh home: a first call is cold
        if embedder is not None:
            env["AIRA_EMBEDDER"] = embedder
        search = [*aira, "catalog", "search", query, "--json"]
        first = timed(search, env)
        response = json.loads(first["stdout"])
        commands = {
            "catalog search": search,
            "catalog list": [*aira, "catalog", "list", "--json"],
            **prepare_model(aira, env, Path(tmp)),
        }
        help_runs: list[dict[str, Any]] = []
        each: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
        for _ in range(runs):  # side by side: a busy moment slows all of them alike
            help_runs.append(timed([*aira, "--help"], env))
            for name, cmd in commands.items():
                each[name].append(timed(cmd, env))
        bare = [timed([sys.executable, "-c", "pass"], env) for _ in range(runs)]
        hosted_env = {**env, "AIRA_WARM": "1", "AIRA_OCCT_WARM": "0"}  # the CLI host alone
        try:
            host_start = time.perf_counter()
            timed(search, hosted_env)  # starts the host, answered here
            pid = wait_for_host(runtime)
            host_up_s = time.perf_counter() - host_start
            for cmd in commands.values():
                timed(cmd, hosted_env)  # what each loads once (the kernel worker for query)
            hosted: dict[str, list[dict[str, Any]]] = {name: [] for name in commands}
            for _ in range(runs):
                help_runs.append(timed([*aira, "--help"], env))
                for name, cmd in commands.items():
                    hosted[name].append(timed(cmd, hosted_env))
            host_mb = rss_mb(pid)
        finally:
            for host in hosts_under(runtime):
                with contextlib.suppress(OSError):
                    os.kill(host, signal.SIGKILL)
        cached = sorted(str(p.relative_to(home)) for p in Path(home, "cache").glob("*/*"))
    warm_s = summary(each["catalog search"])
    help_s = summary(help_runs)
    help_p50 = help_s["wall_s"]["p50"]

    def judged(samples: list[dict[str, Any]]) -> dict[str, Any]:
        s = summary(samples)
        p50 = s["wall_s"]["p50"]
        return {
            **s,
            "over_help_p50": p50 / help_p50,
            "met": p50 <= TARGET_P50_S and p50 <= TARGET_HELP_RATIO * help_p50,
        }

    table = {
        name: {"own_process": judged(each[name]), "warm_host": judged(hosted[name])}
        for name in commands
    }
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
        "warm_p50_over_help_p50": warm_s["wall_s"]["p50"] / help_p50,
        "commands": table,
        "warm_host": {"up_after_s": host_up_s, "rss_mb": host_mb},
        "cache_entries": cached,
        "target": {
            "p50_max_s": TARGET_P50_S,
            "p50_max_over_help": TARGET_HELP_RATIO,
            "peak_max_mb": TARGET_PEAK_MB,
            "met": warm_s["wall_s"]["p50"] <= TARGET_P50_S
            and warm_s["peak_mb_max"] <= TARGET_PEAK_MB,
            "own_process_met": all(c["own_process"]["met"] for c in table.values()),
            "warm_host_met": all(c["warm_host"]["met"] for c in table.values()),
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
    host = r["warm_host"]
    print(
        f"  read-only commands, warm, p50 (x aira --help); target <= {t['p50_max_s']} s and "
        f"<= {t['p50_max_over_help']:g}x --help:"
    )
    print(f"    {'':16} {'own process':>22} {'AIRA_WARM=1 (host)':>24}")
    for name, row in r["commands"].items():
        cells = [
            f"{c['wall_s']['p50']:.3f} s ({c['over_help_p50']:.1f}x) {'ok' if c['met'] else '--'}"
            for c in (row["own_process"], row["warm_host"])
        ]
        print(f"    {name:16} {cells[0]:>22} {cells[1]:>24}")
    print(
        f"  own process: {verdict(t['own_process_met'])}; warm host: "
        f"{verdict(t['warm_host_met'])} (up {host['up_after_s']:.1f} s after its first "
        f"command, {host['rss_mb']:.0f} MB resident with its kernel worker)"
    )


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
