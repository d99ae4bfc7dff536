"""Benchmark: capability search and the L0 manifest as the catalog grows to 10,000 descriptors.

For each catalog size (default 100, 1,000 and 10,000 descriptors) a synthetic catalog is
generated (``synthetic.py`` next to this file: all kinds, taxonomy leaves, English and
Chinese discovery text from a CAD vocabulary; the descriptors pass lint) and measured:

- **index build**: wall time of ``build_index(catalog)`` (the production
  ``SearchIndex``: BM25, alias tables, the hashing n-gram matrices of examples,
  counterexamples and descriptions), after a throwaway build of a tiny catalog has paid for
  the imports (bm25s, numpy, scipy, PyStemmer);
- **memory of the build**: the growth of the process's resident set (current RSS from
  ``/proc/self/statm``, and the high-water mark ``getrusage().ru_maxrss``; sizes run in
  increasing order, so each build can raise the mark) during the timed build, then a second
  build under ``tracemalloc`` for the peak and the retained bytes Python allocated
  (numpy and scipy buffers included, they report to tracemalloc);
- **search latency**: ``--queries`` searches (default 200) after 5 warm-up searches, intents
  drawn round-robin from a fixed mix of English and Chinese requests in the synthetic
  vocabulary and nonsense that should find nothing; p50 and p95 in ms. Requests are plain
  intents (``topK`` 8, no context), as ``catalog.search`` gets them most often;
- **response bound**: the largest response (canonical JSON bytes) over the timed searches,
  and over every intent of the mix once more with ``topK`` = ``MAX_TOP_K`` (32); both must
  stay under the server's ``MAX_RESPONSE_BYTES`` with at most ``topK`` hits;
- **Disclosure.search** (information): the median of a few ``Disclosure(catalog).search``
  calls, which stamp each response with the catalog's discovery hash; once with the hashes
  kept, once recomputed on every call as the production ``Catalog`` does;
- **L0 manifest**: ``canonical_bytes`` of ``Disclosure(catalog).manifest(...)`` with the
  runtime's meta-operations and contract version. Outside small-catalog mode its size does
  not depend on the catalog; in small-catalog mode (every contract inlined) the size without
  the inlined contracts is reported as well, and only those sizes are compared.

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/discovery/bench_scale.py
    .venv/bin/python benchmarks/discovery/bench_scale.py --sizes 100,1000,10000 --queries 200
    .venv/bin/python benchmarks/discovery/bench_scale.py --json
    .venv/bin/python benchmarks/discovery/bench_scale.py --sizes 10000 --profile 15

The target is a p50 search latency of at most 15 ms at 10,000 descriptors. The script
reports and never fails a build: it exits 0 whether or not the target is met (2 only when the
benchmark itself cannot measure, e.g. the generated catalog has the wrong size).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import platform
import pstats
import random
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent, HERE):  # _report.py sits in benchmarks/, synthetic.py next to this
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from _report import BenchmarkError, parse_args, report_run, script_parser, verdict  # noqa: E402
from synthetic import SyntheticCatalog, synthetic_catalog  # noqa: E402

from aira_core.canonical import canonical_bytes, sha256_bytes_hex  # noqa: E402
from aira_core.catalog import search as search_module  # noqa: E402
from aira_core.catalog.disclosure import Disclosure  # noqa: E402
from aira_core.catalog.search import MAX_RESPONSE_BYTES, SearchIndex, build_index  # noqa: E402
from aira_core.contracts.search import MAX_TOP_K, SearchRequest, SearchResponse  # noqa: E402
from aira_core.runtime.contract import CONTRACT_VERSION, MetaOperation  # noqa: E402
from aira_core.stats import percentile  # noqa: E402

DEFAULT_SIZES = (100, 1000, 10000)
DEFAULT_QUERIES = 200
WARMUP_SEARCHES = 5
DISCLOSURE_SEARCHES = 5
TARGET_SIZE = 10000
TARGET_P50_MS = 15.0
META_OPERATIONS = [o.value for o in MetaOperation]
MiB = 2**20

# The query mix: requests in the synthetic catalog's vocabulary (English, Chinese) and
# nonsense that no capability should match.
QUERIES_EN = (
    "fillet the outer edges of the bracket by 2 mm",
    "chamfer the top edges 1 mm",
    "drill through holes in the plate",
    "extrude a rib on the housing, about 5 mm",
    "what is the volume of the housing",
    "measure the minimum distance between the gear and the hub",
    "count the planar faces of the lid",
    "check the wall thickness of the enclosure is at least 1.5 mm",
    "export the bracket as STEP",
    "import the flange from a STL file",
    "tessellate the part into a display mesh for a web preview",
    "heal the gaps in the imported shell",
    "mirror the bracket across the YZ plane",
    "design a bolt circle with 6 holes for the flange",
    "a hole in the plate, not countersunk",
    "make a 40 x 30 x 10 mm box",
)
QUERIES_ZH = (
    "把支架的外侧边倒2毫米圆角",
    "给底板钻孔",
    "外壳的体积是多少",
    "检查机壳的壁厚是否不小于1.5毫米",
    "把法兰导出为STEP",
    "从STL文件导入齿轮",
    "把盖子三角化成显示网格",
    "修复导入的外壳里的缝隙",
    "镜像支架",
    "创建一个长方体",
    "不要倒角，给边倒圆角",
    "把 bracket export 成 STEP",
)
QUERIES_NONSENSE = (
    "flibber jabber quux",
    "order a large pizza with extra cheese",
    "what's the weather in Lisbon tomorrow",
    "recommend a good novel about sailing",
    "zxqv wobble snark plonk",
    "今天天气怎么样",
    "帮我订一张去上海的机票",
    "asdf qwer zxcv",
)
MIX = (
    [(q, "en") for q in QUERIES_EN]
    + [(q, "zh") for q in QUERIES_ZH]
    + [(q, "nonsense") for q in QUERIES_NONSENSE]
)


# -- memory -------------------------------------------------------------------------------------


def current_rss() -> int | None:
    """The process's resident set now, in bytes (Linux; ``None`` elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def max_rss() -> int:
    """The process's resident-set high-water mark, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS bytes, Linux KiB


def _mib(value: int | None) -> float | None:
    return None if value is None else value / MiB


# -- measuring ----------------------------------------------------------------------------------


def response_bytes(response: SearchResponse) -> int:
    return len(canonical_bytes(response.to_wire()))


def timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def warm_up_imports(seed: int) -> float:
    """One throwaway build and search: imports bm25s, numpy, scipy and the stemmer."""
    seconds, index = timed(lambda: build_index(synthetic_catalog(10, seed)))
    index.search("fillet the edges")
    return seconds


def intents(queries: int, seed: int) -> list[tuple[str, str]]:
    """``queries`` intents, round-robin over the mix in a fixed shuffled order."""
    order = list(MIX)
    random.Random(seed).shuffle(order)
    return [order[i % len(order)] for i in range(queries)]


def measure_build(catalog: SyntheticCatalog) -> tuple[SearchIndex, dict[str, Any]]:
    """The timed build (RSS around it), then a traced one (tracemalloc peak, retained)."""
    gc.collect()
    rss0, peak0 = current_rss(), max_rss()
    build_s, index = timed(lambda: build_index(catalog))
    rss1, peak1 = current_rss(), max_rss()
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        traced_s, traced = timed(lambda: build_index(catalog))
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del traced
    gc.collect()
    memory = {
        "rss_before_mib": _mib(rss0),
        "rss_after_mib": _mib(rss1),
        "rss_growth_mib": _mib(rss1 - rss0) if rss0 is not None and rss1 is not None else None,
        "max_rss_before_mib": _mib(peak0),
        "max_rss_after_mib": _mib(peak1),
        "max_rss_growth_mib": _mib(peak1 - peak0),
        "tracemalloc_peak_mib": _mib(peak - before),
        "tracemalloc_retained_mib": _mib(after - before),
        "traced_build_s": traced_s,
    }
    return index, {"build_s": build_s, "memory": memory}


def measure_search(index: SearchIndex, queries: list[tuple[str, str]]) -> dict[str, Any]:
    for intent, _ in MIX[:WARMUP_SEARCHES]:
        index.search(intent)
    latencies: list[float] = []
    largest = 0
    most_hits = 0
    no_match: dict[str, list[int]] = {group: [0, 0] for _, group in MIX}
    for intent, group in queries:
        start = time.perf_counter()
        response = index.search(intent)
        elapsed = time.perf_counter() - start
        latencies.append(elapsed * 1000)
        largest = max(largest, response_bytes(response))
        most_hits = max(most_hits, len(response.hits))
        no_match[group][0] += int(response.no_match)
        no_match[group][1] += 1
    # the bound: every intent of the mix once more, with the largest topK a client may ask
    largest_k = 0
    most_hits_k = 0
    for intent, _ in MIX:
        response = index.search(SearchRequest(intent=intent, top_k=MAX_TOP_K))
        largest_k = max(largest_k, response_bytes(response))
        most_hits_k = max(most_hits_k, len(response.hits))
    # sufficiency may add producers beyond topK (expandedWith), but plain intents have no
    # desired outputs, so the hits are bounded by topK itself
    bounded = (
        max(largest, largest_k) <= MAX_RESPONSE_BYTES
        and most_hits <= SearchRequest(intent="x").top_k
        and most_hits_k <= MAX_TOP_K
    )
    return {
        "search_ms": {
            "min": min(latencies),
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
            "max": max(latencies),
            "mean": statistics.fmean(latencies),
        },
        "no_match": {group: {"count": c, "of": total} for group, (c, total) in no_match.items()},
        "response": {
            "max_bytes_default_topk": largest,
            "max_hits_default_topk": most_hits,
            "max_bytes_topk_32": largest_k,
            "max_hits_topk_32": most_hits_k,
            "cap_bytes": MAX_RESPONSE_BYTES,
            "bounded": bounded,
        },
    }


def measure_l0(catalog: SyntheticCatalog) -> dict[str, Any]:
    hashes_s, _ = timed(lambda: (catalog.discovery_catalog_hash(), catalog.authoring_lock_hash()))
    manifest_s, manifest = timed(
        lambda: Disclosure(catalog).manifest(
            meta_operations=META_OPERATIONS, contract_version=CONTRACT_VERSION
        )
    )
    small = bool(manifest["smallCatalog"])
    size = len(canonical_bytes(manifest))
    without = {k: v for k, v in manifest.items() if k != "contracts"}
    without["smallCatalog"] = False
    return {
        "bytes": size,
        "small_catalog": small,
        "inlined_contracts": len(manifest.get("contracts") or {}),
        "bytes_not_inlined": len(canonical_bytes(without)),
        "manifest_s": manifest_s,
        "catalog_hashes_s": hashes_s,
    }


def measure_disclosure(catalog: SyntheticCatalog, queries: list[tuple[str, str]]) -> dict[str, Any]:
    """``Disclosure.search`` (what ``catalog.search`` serves), which also stamps the
    response with the catalog's discovery hash: median of a few calls with the hashes kept,
    and with them recomputed on every call, as the production ``Catalog`` does."""
    disclosure = Disclosure(catalog)
    _ = disclosure.index  # built here, untimed (the same build as above)
    out: dict[str, Any] = {"searches": DISCLOSURE_SEARCHES}
    for label, keep in (("hashes_kept_ms", True), ("hashes_recomputed_ms", False)):
        catalog.keep_hashes = keep
        samples = []
        for intent, _ in queries[:DISCLOSURE_SEARCHES]:
            seconds, _ = timed(lambda intent=intent: disclosure.search(intent))
            samples.append(seconds * 1000)
        out[label] = statistics.median(samples)
    catalog.keep_hashes = True
    return out


def run_size(
    n: int, seed: int, queries: list[tuple[str, str]], profile: cProfile.Profile | None
) -> dict[str, Any]:
    generate_s, catalog = timed(lambda: synthetic_catalog(n, seed))
    count = len(catalog.capabilities())
    if count != n:
        raise BenchmarkError(f"the synthetic catalog has {count} capabilities, expected {n}")
    index, build = measure_build(catalog)
    if len(index) != n:
        raise BenchmarkError(f"the index holds {len(index)} capabilities, expected {n}")
    result: dict[str, Any] = {
        "descriptors": n,
        "packages": len(catalog.packages),
        "schemas": sum(len(p.manifest.schemas) for p in catalog.packages.values()),
        "generate_s": generate_s,
        **build,
        **measure_search(index, queries),
        "l0": measure_l0(catalog),
        "disclosure_search": measure_disclosure(catalog, queries),
    }
    if profile is not None:  # an extra, untimed pass: the profiler slows every call
        profile.enable()
        for intent, _ in queries:
            index.search(intent)
        profile.disable()
    del index, catalog
    gc.collect()
    return result


def hotspots(profile: cProfile.Profile, top: int) -> list[dict[str, Any]]:
    stats = pstats.Stats(profile)
    rows = []
    for (filename, line, func), (_, calls, tottime, cumtime, _) in stats.stats.items():
        short = filename
        for marker in ("site-packages/", "aira_core/"):
            idx = filename.find(marker)
            if idx >= 0:
                keep = idx + len(marker) if marker == "site-packages/" else idx
                short = filename[keep:]
                break
        rows.append(
            {
                "function": f"{short}:{line}:{func}",
                "calls": calls,
                "tottime_s": tottime,
                "cumtime_s": cumtime,
            }
        )
    rows.sort(key=lambda r: -r["tottime_s"])
    return rows[:top]


def run(sizes: list[int], queries: int, seed: int, profile_top: int) -> dict[str, Any]:
    first_build_s = warm_up_imports(seed)
    mix = intents(queries, seed)
    results = []
    profile = None
    for n in sizes:
        profiling = profile_top > 0 and n == sizes[-1]
        profile = cProfile.Profile() if profiling else None
        results.append(run_size(n, seed, mix, profile))
    at_target = next((r for r in results if r["descriptors"] == TARGET_SIZE), None)
    p50 = at_target["search_ms"]["p50"] if at_target else None
    not_inlined = [r["l0"]["bytes"] for r in results if not r["l0"]["small_catalog"]]
    out: dict[str, Any] = {
        "benchmark": "search-scale",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "seed": seed,
        "queries": queries,
        "warmup_searches": WARMUP_SEARCHES,
        "query_mix": {
            "en": len(QUERIES_EN),
            "zh": len(QUERIES_ZH),
            "nonsense": len(QUERIES_NONSENSE),
        },
        "search_py_sha256": sha256_bytes_hex(Path(search_module.__file__).read_bytes())[:16],
        "import_and_first_build_s": first_build_s,
        "sizes": results,
        "target": {
            "descriptors": TARGET_SIZE,
            "metric": "search p50 ms",
            "max_ms": TARGET_P50_MS,
            "measured_ms": p50,
            "met": None if p50 is None else p50 <= TARGET_P50_MS,
        },
        "l0": {
            "bytes_by_size": {str(r["descriptors"]): r["l0"]["bytes"] for r in results},
            "small_catalog_sizes": [r["descriptors"] for r in results if r["l0"]["small_catalog"]],
            "bytes_not_inlined_by_size": {
                str(r["descriptors"]): r["l0"]["bytes_not_inlined"] for r in results
            },
            "identical_outside_small_catalog": len(set(not_inlined)) <= 1,
            "identical_not_inlined": len({r["l0"]["bytes_not_inlined"] for r in results}) == 1,
        },
        "bounded": all(r["response"]["bounded"] for r in results),
    }
    if profile is not None:
        out["hotspots"] = {"descriptors": sizes[-1], "functions": hotspots(profile, profile_top)}
    return out


# -- report -------------------------------------------------------------------------------------


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def report_rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    """The human-readable table's rows for one catalog size: (label, value)."""
    mem, resp, l0, ms = r["memory"], r["response"], r["l0"], r["search_ms"]
    ds = r["disclosure_search"]

    def no_match(group: str) -> str:
        return f"{r['no_match'][group]['count']}/{r['no_match'][group]['of']}"

    return [
        ("descriptors", f"{r['descriptors']:,}"),
        ("packages / schemas", f"{r['packages']} / {r['schemas']:,}"),
        ("generate catalog (s)", f"{r['generate_s']:.2f}"),
        ("index build (s)", f"{r['build_s']:.2f}"),
        ("build peak, tracemalloc (MiB)", _fmt(mem["tracemalloc_peak_mib"], ".1f")),
        ("index retained, tracemalloc (MiB)", _fmt(mem["tracemalloc_retained_mib"], ".1f")),
        ("RSS growth during build (MiB)", _fmt(mem["rss_growth_mib"], ".1f")),
        ("max RSS growth during build (MiB)", _fmt(mem["max_rss_growth_mib"], ".1f")),
        ("process max RSS after build (MiB)", _fmt(mem["max_rss_after_mib"], ".0f")),
        ("search p50 (ms)", f"{ms['p50']:.2f}"),
        ("search p95 (ms)", f"{ms['p95']:.2f}"),
        ("search max (ms)", f"{ms['max']:.2f}"),
        ("no match: nonsense", no_match("nonsense")),
        ("no match: English in vocabulary", no_match("en")),
        ("no match: Chinese in vocabulary", no_match("zh")),
        ("max response bytes, topK 8", f"{resp['max_bytes_default_topk']:,}"),
        ("max response bytes, topK 32", f"{resp['max_bytes_topk_32']:,}"),
        ("max hits, topK 8 / 32", f"{resp['max_hits_default_topk']} / {resp['max_hits_topk_32']}"),
        ("L0 manifest bytes", f"{l0['bytes']:,}"),
        ("L0 smallCatalog (inlined)", f"{l0['small_catalog']} ({l0['inlined_contracts']})"),
        ("L0 bytes without inlined contracts", f"{l0['bytes_not_inlined']:,}"),
        ("catalog hashes, computed once (s)", f"{l0['catalog_hashes_s']:.2f}"),
        ("Disclosure.search, hashes kept (ms)", f"{ds['hashes_kept_ms']:.2f}"),
        ("Disclosure.search, hashes recomputed (ms)", f"{ds['hashes_recomputed_ms']:.2f}"),
    ]


def print_report(result: dict[str, Any]) -> None:
    rows = result["sizes"]
    print(
        f"capability search at scale (python {result['python']}, {result['cpus']} cpus, "
        f"seed {result['seed']}, search.py {result['search_py_sha256']})"
    )
    print(
        f"  {result['queries']} searches per size after {result['warmup_searches']} warm-up "
        f"searches; mix of {result['query_mix']['en']} English, {result['query_mix']['zh']} "
        f"Chinese and {result['query_mix']['nonsense']} nonsense intents; imports and a first "
        f"tiny build took {result['import_and_first_build_s']:.2f} s (not counted)"
    )
    print()

    table = [report_rows(r) for r in rows]
    width = max(len(label) for label, _ in table[0])
    col = max(12, *(len(f"{r['descriptors']:,}") + 2 for r in rows))
    for k, (label, _) in enumerate(table[0]):
        print(f"  {label:<{width}}" + "".join(f"{t[k][1]:>{col}}" for t in table))
    print()
    target = result["target"]
    measured = target["measured_ms"]
    print(
        f"target: search p50 <= {target['max_ms']:.0f} ms at {target['descriptors']:,} "
        f"descriptors: {_fmt(measured, '.2f')} ms, {verdict(target['met'])}"
    )
    l0 = result["l0"]
    small = l0["small_catalog_sizes"]
    print(
        "L0 manifest size independent of the catalog size: "
        + ("yes" if l0["identical_outside_small_catalog"] else "NO")
        + (
            f" (small-catalog mode inlines every contract at {', '.join(map(str, small))}; "
            "without them the L0 bytes are "
            + ("identical" if l0["identical_not_inlined"] else "NOT identical")
            + ")"
            if small
            else ""
        )
    )
    print(
        f"responses bounded (<= {MAX_RESPONSE_BYTES:,} bytes, <= topK hits): "
        + ("yes" if result["bounded"] else "BOUND VIOLATED")
    )
    if result.get("hotspots"):
        hs = result["hotspots"]
        print()
        print(
            f"hotspots of the timed searches at {hs['descriptors']:,} descriptors "
            "(cProfile, by own time):"
        )
        for r in hs["functions"]:
            print(
                f"  {r['tottime_s']:7.3f} s own  {r['cumtime_s']:7.3f} s cum  "
                f"{r['calls']:>8} calls  {r['function']}"
            )


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes are comma-separated integers, not {text!r}"
        ) from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError("every size must be at least 1")
    return sorted(set(sizes))


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=list(DEFAULT_SIZES),
        help="catalog sizes, comma-separated (default: 100,1000,10000)",
    )
    parser.add_argument(
        "--queries",
        type=int,
        default=DEFAULT_QUERIES,
        help=f"timed searches per size (default: {DEFAULT_QUERIES})",
    )
    parser.add_argument("--seed", type=int, default=0, help="synthetic catalog seed (default: 0)")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="profile the searches at the largest size and show the top N functions",
    )
    args = parse_args(parser, argv)
    if args.queries < 1:
        parser.error("--queries must be at least 1")
    return report_run(
        lambda: run(args.sizes, args.queries, args.seed, args.profile),
        print_report,
        as_json=args.json,
    )


if __name__ == "__main__":
    sys.exit(main())
