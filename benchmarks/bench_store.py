"""Benchmark: commit throughput and head-summary read latency of the model revision store.

``aira_core.model.store.ModelStore`` keeps AMIR model documents in SQLite (WAL,
``synchronous=FULL``: every commit is fsynced before it returns);
``aira_core.model.repository.ModelRepository`` is the layer over it that the runtime and the
CLI use: it validates documents, applies patches and keeps each revision's block hashes and
summary in the store beside the document (``keep_derived``), so that reading a head summary
is a lookup, not a computation. This script generates a valid AMIR document with
``aira_core.model.samples.sample_document`` (as the tests do): 15 bodies, 30 Length
parameters, 200 nodes (a box per body, then features appended to the bodies' tips),
30 assertions; about 50 kB of canonical
JSON. It is checked with ``AmirDocument.model_validate`` and ``validate_document`` before
anything is timed. On fresh store files it measures:

* **head summary read** (the target): ``repo.summary(repo.head())`` repeated ``--reads``
  times (default 1,000) on a *fresh* ``ModelRepository`` opened on the store after the
  repository commits below, so no in-process cache holds anything: resolve ``main``'s head,
  load the summary kept at commit, validate it into a ``Summary``. p50 / p90 / max in
  milliseconds; the first read on the fresh object is reported on its own. The script checks
  that the summary was kept at commit (not computed on the first read) and that it equals
  the summary computed directly from the head document.
* **commit throughput through the repository**: ``--commits`` (default 200) calls of
  ``ModelRepository.commit`` (the write path's last stage) on ``main``, each a one-op
  ``parameter.setValue`` patch on the previous head (compare-and-swap). Each includes
  applying and validating the patch, canonical JSON and hashing of the document, the
  fsynced insert, and keeping the derived
  views (block hashes and summary, computed and written in their own transactions).
  Revisions per second and per-commit latency (p50 / p90 / max).
* **commit throughput on the raw store** (information): the same number of
  ``ModelStore.commit`` calls, each changing one parameter value of a plain dict
  (canonicalising and hashing included, no validation, no derived views); then the same
  with the document canonicalised before the clock starts (``commit`` accepts
  ``canonical_bytes``): what the store itself costs (insert + fsync).
* **raw head read** (information): ``store.read(store.head())``: resolve ``main``'s head,
  load the canonical bytes, check them against the content address, parse. The summary read
  above does not need the document.
* **open** (information): ``ModelStore(path)`` on the raw store after its commits, which
  runs ``PRAGMA quick_check`` and grows with the file.

The issue's target is "summary read <= 2 ms", applied to the median (p50) of the head
summary read. Commit throughput has no target; it depends on the disk's fsync latency, so
the report names the filesystem the stores lived on (``--dir`` chooses it; on tmpfs fsync
costs nothing and the numbers are optimistic).

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_store.py            # human-readable report
    .venv/bin/python benchmarks/bench_store.py --json     # one JSON object
    .venv/bin/python benchmarks/bench_store.py --commits 500 --reads 5000 --dir /var/tmp

The script reports and never fails a build: it exits 0 whether or not the target is met
(2 only if the benchmark itself is broken, e.g. the document is not valid AMIR or a read
returns the wrong document or summary).
"""

from __future__ import annotations

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

from _report import BenchmarkError, parse_args, report_run, script_parser, verdict

from aira_core.canonical import canonical_bytes, sha256_id
from aira_core.contracts.amir import AmirDocument, value_tokens
from aira_core.model import blocks
from aira_core.model.aliases import AliasTable
from aira_core.model.patch import apply_patch, validate_document
from aira_core.model.repository import SUMMARY_KEY, ModelRepository
from aira_core.model.samples import sample_document
from aira_core.model.store import ModelStore
from aira_core.stats import percentile

TARGET_SUMMARY_MEDIAN_MS = 2.0
DEFAULT_COMMITS = 200
DEFAULT_READS = 1000
WARMUP = 5

PARAMETERS = 30
NODES = 200
BODIES = 15
ASSERTIONS = 30


# -- the document --------------------------------------------------------------------------


def document(seed: int = 0) -> dict[str, Any]:
    """The AMIR document (wire form) of the benchmark: 15 bodies grown to 200 nodes, 30
    Length parameters the nodes reference, 30 assertions (``sample_document``)."""
    return sample_document(bodies=15, parameters=30, assertions=30, nodes=200, seed=seed).to_wire()


def amir_document(wire: dict[str, Any]) -> AmirDocument:
    """``wire`` as a validated ``AmirDocument``; a ``BenchmarkError`` if it is not valid."""
    try:
        doc = AmirDocument.model_validate(wire, by_name=False)
    except ValueError as exc:
        raise BenchmarkError(f"the generated document is not an AMIR document: {exc}") from None
    problems = validate_document(doc)
    if problems:
        raise BenchmarkError(f"the generated document is not valid: {problems[0]}")
    counts = {name: len(getattr(doc, name)) for name in blocks.BLOCKS}
    if counts != {
        "parameters": PARAMETERS,
        "nodes": NODES,
        "bodies": BODIES,
        "assertions": ASSERTIONS,
    }:
        raise BenchmarkError(f"the generated document has the wrong shape: {counts}")
    return doc


# -- measuring ----------------------------------------------------------------------------


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


def _latency(samples_ms: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(samples_ms),
        "p90": percentile(samples_ms, 90),
        "max": max(samples_ms),
    }


def measure_store(path: Path, base: dict[str, Any], commits: int, reads: int) -> dict[str, Any]:
    """Raw ``ModelStore`` commits (plain dicts, no validation, no derived views) and reads."""
    current = copy.deepcopy(base)
    with ModelStore(path) as store:
        synchronous = store._conn().execute("PRAGMA synchronous").fetchone()[0]
        head = store.init(current).rev
        latencies: list[float] = []
        start_all = 0.0
        for i in range(WARMUP + commits):
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

    store_only_ms = [s * 1000 for s in store_only]
    return {
        "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(synchronous, "?"),
        "commits": {
            "count": commits,
            "warmup": WARMUP,
            "seconds": elapsed,
            "per_second": commits / elapsed,
            "latency_ms": _latency([s * 1000 for s in latencies]),
        },
        "commits_precanonicalised": {
            "per_second": commits / sum(store_only),
            "latency_ms": {
                "p50": statistics.median(store_only_ms),
                "p90": percentile(store_only_ms, 90),
            },
            "canonical_bytes_ms_p50": statistics.median(canon_ms),
        },
        "head_read": {"count": reads, "latency_ms": _latency([s * 1000 for s in read_samples])},
        "open": {"seconds": open_s, "store_bytes": file_bytes},
    }


def measure_repository(path: Path, base: AmirDocument, commits: int, reads: int) -> dict[str, Any]:
    """Store commits (the write path's last stage: a patched document committed by
    compare-and-swap, its views kept), then head summary reads on a fresh repository."""
    values = {p.id: float(p.value) for p in base.parameters}
    ids = list(values)
    upper = min(p.max for p in base.parameters if p.max is not None)
    with ModelRepository.open(path) as repo:
        head = repo.init(base).rev
        latencies: list[float] = []
        start_all = 0.0
        for i in range(WARMUP + commits):
            if i == WARMUP:
                start_all = time.perf_counter()
            param = ids[i % len(ids)]
            # A new value every time (an unchanged document would be STORE_NO_CHANGE),
            # always within the parameter's [min, max].
            values[param] = values[param] + 0.5 if values[param] + 0.5 <= upper else 1.0
            patch = {"ops": [{"op": "parameter.setValue", "id": param, "value": values[param]}]}
            start = time.perf_counter()
            document = apply_patch(repo.document(head), patch)  # validates, as propose does
            head = repo.commit("main", head, document, message=f"set {param}", checked=True).rev
            if i >= WARMUP:
                latencies.append(time.perf_counter() - start)
        elapsed = time.perf_counter() - start_all
        if repo.head() != head:
            raise BenchmarkError("the head is not the last committed revision")
        # Kept by the commit itself: the reads below must not be the ones computing it.
        if repo.store.derived(head, SUMMARY_KEY) is None:
            raise BenchmarkError("the head summary was not kept in the store at commit")
        stored = AmirDocument.model_validate(repo.store.read(head), by_name=False)
    if {p.id: float(p.value) for p in stored.parameters} != values:
        raise BenchmarkError("the head document does not have the committed values")
    expected = blocks.summary(head, stored, AliasTable.build(head, stored))

    # A new repository object: nothing of the commits above is cached in-process.
    with ModelRepository.open(path) as fresh:
        start = time.perf_counter()
        first = fresh.summary(fresh.head())
        first_s = time.perf_counter() - start
        read_samples: list[float] = []
        for _ in range(reads):
            start = time.perf_counter()
            got = fresh.summary(fresh.head())
            read_samples.append(time.perf_counter() - start)
    for summary in (first, got):
        if summary.rev != head or summary != expected:
            raise BenchmarkError("the head summary read differs from the computed one")

    return {
        "repository_commits": {
            "count": commits,
            "warmup": WARMUP,
            "seconds": elapsed,
            "per_second": commits / elapsed,
            "latency_ms": _latency([s * 1000 for s in latencies]),
        },
        "summary_read": {
            "count": reads,
            "first_ms": first_s * 1000,
            "latency_ms": _latency([s * 1000 for s in read_samples]),
            "host_tokens": value_tokens(got),
            "aliases_listed": len(got.aliases),
            "aliases_omitted": got.aliases_omitted,
        },
    }


def run(commits: int, reads: int, directory: Path | None) -> dict[str, Any]:
    base = document()
    base_doc = amir_document(base)
    doc_bytes = len(canonical_bytes(base_doc))
    with tempfile.TemporaryDirectory(prefix="aira-bench-store-", dir=directory) as tmp:
        fs = filesystem(Path(tmp))
        raw = measure_store(Path(tmp) / "store.sqlite3", base, commits, reads)
        repository = measure_repository(Path(tmp) / "repository.sqlite3", base_doc, commits, reads)

    summary_median = repository["summary_read"]["latency_ms"]["p50"]
    return {
        "benchmark": "store",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "filesystem": fs,
        "synchronous": raw.pop("synchronous"),
        "document": {
            "parameters": PARAMETERS,
            "nodes": NODES,
            "bodies": BODIES,
            "assertions": ASSERTIONS,
            "canonical_bytes": doc_bytes,
        },
        **repository,
        **raw,
        "target": {
            "metric": "head summary read median (repo.summary(repo.head()), fresh repository)",
            "max_ms": TARGET_SUMMARY_MEDIAN_MS,
            "met": summary_median <= TARGET_SUMMARY_MEDIAN_MS,
        },
    }


def _line(lat: dict[str, float], digits: int = 2) -> str:
    return "   ".join(f"{k} {lat[k]:.{digits}f} ms" for k in ("p50", "p90", "max") if k in lat)


def print_report(result: dict[str, Any]) -> None:
    d, o = result["document"], result["open"]
    target = result["target"]
    print(
        f"model revision store (python {result['python']}, "
        f"sqlite synchronous={result['synchronous']})"
    )
    print(
        f"  document: {d['parameters']} parameters, {d['nodes']} nodes, {d['bodies']} bodies, "
        f"{d['assertions']} assertions; {d['canonical_bytes']:,} bytes of canonical JSON"
    )
    print(f"  stores on a {result['filesystem']} filesystem")
    if result["filesystem"] in ("tmpfs", "ramfs"):
        print("  (fsync is free in memory: the commit rates are optimistic; use --dir on a disk)")
    print()

    s = result["summary_read"]
    print(
        f"head summary read: repo.summary(repo.head()) x {s['count']} on a fresh "
        "ModelRepository (summary kept in the store at commit)"
    )
    print(
        f"  p50 {s['latency_ms']['p50']:.3f} ms   (target <= {target['max_ms']:.1f} ms: "
        f"{verdict(target['met'])})"
    )
    print(f"  p90 {s['latency_ms']['p90']:.3f} ms   max {s['latency_ms']['max']:.3f} ms")
    print(f"  first read on the fresh repository: {s['first_ms']:.3f} ms")
    print(
        f"  summary: {s['host_tokens']} host tokens, {s['aliases_listed']} aliases listed, "
        f"{s['aliases_omitted']} left to pages"
    )
    print()

    c = result["repository_commits"]
    print(
        f"commits through ModelRepository.commit: {c['count']} after {c['warmup']} warm-up, "
        "each a one-op parameter.setValue patch"
    )
    print("  (patch applied, validate, canonical JSON, fsynced insert, keep hashes and summary)")
    print(f"  {c['per_second']:8.1f} revisions/s   ({c['seconds']:.3f} s in all)")
    print(f"  latency {_line(c['latency_ms'])}")
    print()

    c = result["commits"]
    print(
        f"commits on the raw store (information): {c['count']} ModelStore.commit calls after "
        f"{c['warmup']} warm-up, each changing one parameter value of a plain dict"
    )
    print(f"  {c['per_second']:8.1f} revisions/s   ({c['seconds']:.3f} s in all)")
    print(f"  latency {_line(c['latency_ms'])}")
    pre = result["commits_precanonicalised"]
    print(f"  of which canonical JSON of the document: p50 {pre['canonical_bytes_ms_p50']:.2f} ms")
    print(
        f"  {pre['per_second']:8.1f} revisions/s   when the caller passes canonical bytes "
        f"(the store alone: {_line(pre['latency_ms'])})"
    )
    print()

    r = result["head_read"]
    print(
        f"raw head read (information): store.read(store.head()) x {r['count']} "
        "(resolve, load, verify the hash, parse)"
    )
    print(f"  {_line(r['latency_ms'], 3)}")
    print()
    print(
        f"open (information): {o['seconds'] * 1000:.1f} ms for the {o['store_bytes']:,}-byte "
        "raw store (includes PRAGMA quick_check)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
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
    args = parse_args(parser, argv)
    if args.commits < 1 or args.reads < 1:
        parser.error("--commits and --reads must be at least 1")
    if args.dir is not None and not args.dir.is_dir():
        parser.error(f"--dir {args.dir} is not a directory")
    return report_run(
        lambda: run(args.commits, args.reads, args.dir), print_report, as_json=args.json
    )


if __name__ == "__main__":
    os.environ.pop("AIRA_STORE_CRASH_AT", None)  # a leftover test hook must not kill the run
    sys.exit(main())
