"""Benchmark: commit throughput and head-read latency of the model revision store.

``aira_core.model.store.ModelStore`` keeps AMIR model documents in SQLite (WAL,
``synchronous=FULL``: every commit is fsynced before it returns). This script generates a
realistic document of its own, shaped like an AMIR document (30 parameters, 200 nodes whose
inputs reference parameters and earlier nodes, 15 bodies, 30 assertions; about 50 kB of
canonical JSON) and measures, on a fresh store file:

* **commit throughput**: ``--commits`` commits on ``main`` (default 200), each changing one
  parameter value, each a compare-and-swap on the previous head; reported as revisions per
  second over the whole run and as per-commit latency (p50 / p90 / max). Canonicalising and
  hashing the document is part of each commit, as it is for a real caller. The same number
  of commits is then repeated with the document canonicalised before the clock starts
  (``commit`` accepts ``canonical_bytes``): what the store itself costs (insert + fsync),
  next to the time canonical JSON takes for the document.
* **head read**: ``store.read(store.head())`` repeated ``--reads`` times (default 1,000):
  resolve ``main``'s head, load the canonical bytes, check them against the content address,
  parse. p50 / p90 / max in milliseconds.
* **open** (information): ``ModelStore(path)`` on the store after the commits, which runs
  ``PRAGMA quick_check`` and grows with the file.

The issue's target is "summary read <= 2 ms". The summary is built by another module
(``aira_core.model.blocks``) from the head document; until it is measured here, the target
is applied to the **raw head read median** as a stand-in, and the report says so. Commit
throughput has no target; it depends on the disk's fsync latency, so the report names the
filesystem the store lived on (``--dir`` chooses it; on tmpfs fsync costs nothing and the
number is optimistic).

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_store.py            # human-readable report
    .venv/bin/python benchmarks/bench_store.py --json     # one JSON object
    .venv/bin/python benchmarks/bench_store.py --commits 500 --reads 5000 --dir /var/tmp

The script reports and never fails a build: it exits 0 whether or not the target is met
(2 only if the benchmark itself is broken, e.g. a read returns the wrong document).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aira_core.canonical import canonical_bytes, sha256_id
from aira_core.model.store import ModelStore

TARGET_READ_MEDIAN_MS = 2.0
DEFAULT_COMMITS = 200
DEFAULT_READS = 1000
WARMUP = 5

PARAMETERS = 30
NODES = 200
BODIES = 15
ASSERTIONS = 30


class BenchmarkError(RuntimeError):
    """The benchmark could not measure what it should (not a missed target)."""


# -- the generated document ---------------------------------------------------------------


def document() -> dict[str, Any]:
    """A 200-node AMIR-shaped document: each body is a chain of features on its tip."""
    parameters = [
        {
            "id": f"p{i}",
            "label": f"dimension_{i}",
            "type": "Length",
            "unit": "mm",
            "value": 10.0 + i,
            "min": 0.5,
            "max": 500.0,
        }
        for i in range(PARAMETERS)
    ]
    nodes: list[dict[str, Any]] = []
    tips: dict[int, str] = {}
    for i in range(NODES):
        body = i % BODIES
        inputs: dict[str, Any] = {
            "length": {"param": f"p{i % PARAMETERS}"},
            "width": {"param": f"p{(i * 7) % PARAMETERS}"},
            "depth": {"value": 2.5 + i % 5, "unit": "mm"},
        }
        if body in tips:  # a feature applied to the body's current tip
            inputs["target"] = {"node": tips[body]}
            inputs["face"] = {"body": f"b{body}", "select": ">Z", "entity": "Face"}
            op = "exact.extrude@1.2.0" if i % 3 else "exact.fillet@1.0.0"
        else:
            op = "exact.box@1.0.0"
        node_id = f"n{i}"
        nodes.append({"id": node_id, "label": f"feature_{i}", "op": op, "inputs": inputs})
        tips[body] = node_id
    bodies = [
        {"id": f"b{b}", "label": f"part_{b}", "tip": tips[b], "material": "steel"}
        for b in range(BODIES)
    ]
    assertions = [
        {
            "id": f"a{i}",
            "label": f"check_{i}",
            "validatorRef": "check.min_wall@1.0.0",
            "target": f"b{i % BODIES}",
            "args": {"minimum": {"value": 1.0 + i / 10, "unit": "mm"}},
        }
        for i in range(ASSERTIONS)
    ]
    return {
        "format": "aira.amir/1",
        "parameters": parameters,
        "nodes": nodes,
        "bodies": bodies,
        "assertions": assertions,
    }


# -- measuring ----------------------------------------------------------------------------


def quantile(samples: list[float], q: float) -> float:
    """Inclusive quantile (``q`` in 0..1) of ``samples``."""
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[round(q * 100) - 1]


def filesystem(path: Path) -> str:
    """The type of the filesystem ``path`` is on (Linux ``/proc/self/mounts``), or unknown."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return "unknown"
    target, best, kind = str(path.resolve()), "", "unknown"
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best):
            best, kind = mount, fields[2]
    return kind


def run(commits: int, reads: int, directory: Path | None) -> dict[str, Any]:
    base = document()
    doc_bytes = len(canonical_bytes(base))
    with tempfile.TemporaryDirectory(prefix="aira-bench-store-", dir=directory) as tmp:
        path = Path(tmp) / "store.sqlite3"
        fs = filesystem(Path(tmp))
        current = copy.deepcopy(base)
        with ModelStore(path) as store:
            synchronous = store._conn().execute("PRAGMA synchronous").fetchone()[0]
            head = store.init(current).rev
            latencies: list[float] = []
            total = WARMUP + commits
            start_all = 0.0
            for i in range(total):
                if i == WARMUP:
                    start_all = time.perf_counter()
                # Each commit changes one value, as a parameter.setValue patch would.
                current["parameters"][i % PARAMETERS]["value"] += 1.0
                start = time.perf_counter()
                head = store.commit("main", head, current, message=f"set p{i % PARAMETERS}").rev
                if i >= WARMUP:
                    latencies.append(time.perf_counter() - start)
            elapsed = time.perf_counter() - start_all
            if store.head() != sha256_id("rev", current):
                raise BenchmarkError("the head is not the last committed document")

            # The same commits with the document canonicalised before the clock starts: what
            # the store itself costs (insert + fsync), and what a caller that already holds
            # the canonical bytes pays.
            canon_ms: list[float] = []
            store_only: list[float] = []
            for i in range(commits):
                current["parameters"][i % PARAMETERS]["value"] += 1.0
                start = time.perf_counter()
                body = canonical_bytes(current)
                canon_ms.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                head = store.commit("main", head, body, message=f"set p{i % PARAMETERS}").rev
                store_only.append(time.perf_counter() - start)

            for _ in range(WARMUP):
                store.read(store.head())
            read_samples: list[float] = []
            for _ in range(reads):
                start = time.perf_counter()
                got = store.read(store.head())
                read_samples.append(time.perf_counter() - start)
            if got != json.loads(canonical_bytes(current)):
                raise BenchmarkError("read(head) returned a different document")
        file_bytes = path.stat().st_size
        start = time.perf_counter()
        ModelStore(path).close()
        open_s = time.perf_counter() - start

    read_ms = [s * 1000 for s in read_samples]
    commit_ms = [s * 1000 for s in latencies]
    read_median = statistics.median(read_ms)
    return {
        "benchmark": "store",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "filesystem": fs,
        "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(synchronous, "?"),
        "document": {
            "parameters": PARAMETERS,
            "nodes": NODES,
            "bodies": BODIES,
            "assertions": ASSERTIONS,
            "canonical_bytes": doc_bytes,
        },
        "commits": {
            "count": commits,
            "warmup": WARMUP,
            "seconds": elapsed,
            "per_second": commits / elapsed,
            "latency_ms": {
                "p50": statistics.median(commit_ms),
                "p90": quantile(commit_ms, 0.9),
                "max": max(commit_ms),
            },
        },
        "commits_precanonicalised": {
            "per_second": commits / sum(store_only),
            "latency_ms": {
                "p50": statistics.median(s * 1000 for s in store_only),
                "p90": quantile([s * 1000 for s in store_only], 0.9),
            },
            "canonical_bytes_ms_p50": statistics.median(canon_ms),
        },
        "head_read": {
            "count": reads,
            "latency_ms": {"p50": read_median, "p90": quantile(read_ms, 0.9), "max": max(read_ms)},
        },
        "open": {"seconds": open_s, "store_bytes": file_bytes},
        "target": {
            "metric": "raw head read median (stand-in for the summary read)",
            "max_ms": TARGET_READ_MEDIAN_MS,
            "met": read_median <= TARGET_READ_MEDIAN_MS,
        },
    }


def verdict(met: bool) -> str:
    return "target met" if met else "TARGET MISSED"


def print_report(result: dict[str, Any]) -> None:
    d, c, r, o = result["document"], result["commits"], result["head_read"], result["open"]
    target = result["target"]
    print(
        f"model revision store (python {result['python']}, "
        f"sqlite synchronous={result['synchronous']})"
    )
    print(
        f"  document: {d['parameters']} parameters, {d['nodes']} nodes, {d['bodies']} bodies, "
        f"{d['assertions']} assertions; {d['canonical_bytes']:,} bytes of canonical JSON"
    )
    print(f"  store on a {result['filesystem']} filesystem")
    if result["filesystem"] in ("tmpfs", "ramfs"):
        print("  (fsync is free in memory: the commit rate is optimistic; use --dir on a disk)")
    print()
    print(f"commits: {c['count']} after {c['warmup']} warm-up, each changing one parameter value")
    print(f"  {c['per_second']:8.1f} revisions/s   ({c['seconds']:.3f} s in all)")
    lat = c["latency_ms"]
    print(f"  latency p50 {lat['p50']:.2f} ms   p90 {lat['p90']:.2f} ms   max {lat['max']:.2f} ms")
    pre = result["commits_precanonicalised"]
    pre_lat = pre["latency_ms"]
    print(f"  of which canonical JSON of the document: p50 {pre['canonical_bytes_ms_p50']:.2f} ms")
    print(
        f"  {pre['per_second']:8.1f} revisions/s   when the caller passes canonical bytes "
        f"(the store alone: p50 {pre_lat['p50']:.2f} ms, p90 {pre_lat['p90']:.2f} ms)"
    )
    print()
    lat = r["latency_ms"]
    print(f"head read: read(head()) x {r['count']} (resolve, load, verify the hash, parse)")
    print(
        f"  p50 {lat['p50']:.3f} ms   (target <= {target['max_ms']:.1f} ms: "
        f"{verdict(target['met'])})"
    )
    print(f"  p90 {lat['p90']:.3f} ms   max {lat['max']:.3f} ms")
    print(
        "  The issue's target is for a head *summary* read; the summary module does not exist\n"
        "  yet, so the target is applied to the raw head read as a stand-in."
    )
    print()
    print(
        f"open (information): {o['seconds'] * 1000:.1f} ms for a {o['store_bytes']:,}-byte store "
        "(includes PRAGMA quick_check)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--commits",
        type=int,
        default=DEFAULT_COMMITS,
        help=f"timed commits (default: {DEFAULT_COMMITS})",
    )
    parser.add_argument(
        "--reads", type=int, default=DEFAULT_READS, help=f"timed reads (default: {DEFAULT_READS})"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="directory for the temporary store (default: the system temp directory)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.commits < 1 or args.reads < 1:
        parser.error("--commits and --reads must be at least 1")
    if args.dir is not None and not args.dir.is_dir():
        parser.error(f"--dir {args.dir} is not a directory")
    try:
        result = run(args.commits, args.reads, args.dir)
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_report(result)
    return 0


if __name__ == "__main__":
    os.environ.pop("AIRA_STORE_CRASH_AT", None)  # a leftover test hook must not kill the run
    sys.exit(main())
