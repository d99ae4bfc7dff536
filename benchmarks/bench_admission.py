"""Benchmark: admission of one signed capability package of 1,000 descriptors.

Admission is what ``build_catalog`` does for a registered package: strict JSON parse and
model validation, Ed25519 signature verification over the canonical manifest, lint, and
conformance against the package's implementations. The package is generated here with the
production APIs only (no test code): 1,000 box-like descriptors ``cap:bench.op{i}@1``, each
with its own input and output schema, a ``composesWith`` relation to its neighbour and intent
examples in English and Chinese, signed with a throwaway key that a trust policy trusts.

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_admission.py              # human-readable report
    .venv/bin/python benchmarks/bench_admission.py --json       # one JSON object
    .venv/bin/python benchmarks/bench_admission.py --runs 10 --descriptors 2000
    .venv/bin/python benchmarks/bench_admission.py --profile 15  # plus cProfile hotspots

The target is a median admission time of at most 2 s. The script reports and never fails a
build: it exits 0 whether or not the target is met (non-zero only if the package is not
admitted, which means the benchmark itself is broken).
"""

from __future__ import annotations

import cProfile
import json
import platform
import pstats
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _report import BenchmarkError, parse_args, report_run, script_parser, verdict
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aira_core.canonical import sha256_id
from aira_core.catalog import lint as lint_module
from aira_core.catalog.catalog import Catalog, build_catalog
from aira_core.catalog.conformance import ImplementationIndex, check_conformance
from aira_core.catalog.lint import lint_manifest
from aira_core.catalog.package import parse_package
from aira_core.catalog.signing import key_id, public_key_b64, sign_manifest
from aira_core.catalog.state import CatalogState
from aira_core.catalog.trust import TrustPolicy, VerifiedSignature
from aira_core.contracts.package import TrustedKey, TrustedPublisher, TrustStore
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import CapabilityPackageSource, Implementation
from aira_core.plugins import Registered, Registry

TARGET_MEDIAN_S = 2.0
WARMUP_RUNS = 1
DEFAULT_RUNS = 5
DEFAULT_DESCRIPTORS = 1000

PACKAGE = "bench.pkg"
PUBLISHER = "bench-vendor"
PLUGIN = "bench"

REQUIRED_INPUTS = ("length", "width", "height")
MISSING_CODE = "BENCH_INPUT_MISSING"
NONPOSITIVE_CODE = "BENCH_DIMENSION_NONPOSITIVE"


# -- the generated package ---------------------------------------------------------------


def descriptor(i: int, count: int) -> dict[str, Any]:
    """Descriptor ``i`` of ``count``, modelled on ``tests/factory.py::box_descriptor``."""
    cap, ref = f"cap:bench.op{i}@1", f"bench.op{i}@1.0.0"
    name, version = ref.split("@")
    relations: dict[str, list[str]] = {"produces": ["ExactSolid"]}
    if count > 1:  # a package of one would relate the capability to itself
        relations["composesWith"] = [f"cap:bench.op{(i + 1) % count}@1"]
    return {
        "capabilityId": cap,
        "kind": "authoring.operation",
        "operationRef": ref,
        "profileVersion": "1.0.0",
        "title": f"Bench box {i}",
        "summary": f"An exact box from length, width and height (benchmark operation {i}).",
        "aliases": ["cuboid", "block"],
        "taxonomy": {"primary": "authoring.exact.primitive", "facets": ["primitive"]},
        "intentExamples": [f"make a {i + 1} mm cube", f"做一个边长{i + 1}毫米的立方体"],
        "counterExamples": ["a triangle mesh cube"],
        "inputExamples": [
            {"title": "cube", "input": {"length": i + 1, "width": i + 1, "height": i + 1}}
        ],
        "inputs": {"schemaRef": f"amir://ops/{name}/{version}/input", "semanticTypes": ["Length"]},
        "outputs": {
            "schemaRef": f"amir://ops/{name}/{version}/output",
            "semanticTypes": ["ExactSolid"],
        },
        "defaults": {"centered": True},
        "applicability": {"predicates": [{"id": "input.positive", "args": {"input": "length"}}]},
        "effects": ["createsFeature", "additive"],
        "risk": {"level": "low"},
        "execution": {"quality": ["authoritative"], "costClass": "interactive"},
        "diagnostics": [NONPOSITIVE_CODE, MISSING_CODE],
        "relations": relations,
    }


def schemas(i: int) -> dict[str, Any]:
    """The input and output schema of descriptor ``i`` (``tests/factory.py::box_schemas``).

    Every schema differs in content (title, maximum), as in a real package, so no cache
    keyed by schema content can make the benchmark faster than a real admission."""
    name, version = f"bench.op{i}", "1.0.0"
    length = {"type": "number", "exclusiveMinimum": 0, "maximum": 1000 + i}
    return {
        f"amir://ops/{name}/{version}/input": {
            "title": f"{name} input",
            "type": "object",
            "properties": {
                "length": length,
                "width": length,
                "height": length,
                "centered": {"type": "boolean"},
            },
            "required": list(REQUIRED_INPUTS),
            "additionalProperties": False,
        },
        f"amir://ops/{name}/{version}/output": {"type": "object", "title": f"{name} output"},
    }


def manifest(count: int) -> dict[str, Any]:
    all_schemas: dict[str, Any] = {}
    for i in range(count):
        all_schemas.update(schemas(i))
    return {
        "format": "aira.capability-package/1",
        "name": PACKAGE,
        "version": "1.0.0",
        "publisher": PUBLISHER,
        "descriptors": [descriptor(i, count) for i in range(count)],
        "schemas": all_schemas,
    }


def make_check(required: Sequence[str]) -> Callable[[Mapping[str, Any]], Sequence[Diagnostic]]:
    """An input check: every required key present and a positive number."""

    def check(inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        out = []
        for key in required:
            if key not in inputs:
                out.append(Diagnostic(code=MISSING_CODE, message=f"input {key!r} is missing"))
                continue
            value = inputs[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                out.append(
                    Diagnostic(code=NONPOSITIVE_CODE, message=f"{key} must be a positive number")
                )
        return out

    return check


def implementations(m: Mapping[str, Any]) -> list[Implementation]:
    # In-process benchmark implementations: they stand in for a kernel's operations, check
    # only that the required inputs are present and positive, and declare exactly the
    # descriptor's diagnostic codes. Nothing is executed against a CAD kernel.
    check = make_check(REQUIRED_INPUTS)
    return [
        Implementation(
            ref=d["operationRef"], check_inputs=check, diagnostics=frozenset(d["diagnostics"])
        )
        for d in m["descriptors"]
    ]


class Fixture:
    """The signed package, the trust policy that trusts its key, and a registry holding it."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.manifest = manifest(count)
        self.manifest_bytes = json.dumps(self.manifest, indent=2, ensure_ascii=False).encode()
        key = Ed25519PrivateKey.generate()
        self.signature_bytes = json.dumps(
            sign_manifest(self.manifest, key, PUBLISHER).to_wire()
        ).encode()
        self.policy = TrustPolicy(
            TrustStore(
                publishers=[
                    TrustedPublisher(
                        publisher=PUBLISHER,
                        keys=[
                            TrustedKey(
                                key_id=key_id(key.public_key()),
                                public_key=public_key_b64(key.public_key()),
                            )
                        ],
                    )
                ]
            )
        )
        self.implementations = implementations(self.manifest)
        self.source = CapabilityPackageSource(
            name=PACKAGE,
            manifest=self.manifest_bytes,
            signature=self.signature_bytes,
            implementations=self.implementations,
            origin=PLUGIN,
        )
        self.registry = Registry()
        self.registry.by_type["capability_packages"][PACKAGE] = Registered(
            self.source, PLUGIN, PLUGIN
        )


# -- measuring ----------------------------------------------------------------------------


def check_admitted(catalog: Catalog, count: int) -> None:
    if catalog.quarantine or PACKAGE not in catalog.packages:
        reasons = [f"{r.code}: {r.message}" for q in catalog.quarantine for r in q.reasons]
        shown = "; ".join(reasons[:5]) + (
            f" (+{len(reasons) - 5} more)" if len(reasons) > 5 else ""
        )
        raise BenchmarkError(
            f"package {PACKAGE!r} was not admitted ({len(catalog.quarantine)} quarantined): "
            f"{shown or 'no reasons recorded'}"
        )
    admitted = len(catalog.packages[PACKAGE].manifest.descriptors)
    if admitted != count:
        raise BenchmarkError(f"admitted {admitted} descriptors, expected {count}")


def cold() -> None:
    """Forget what lint built in this process (its compiled metaschema validator), so a
    run costs what the first admission in a fresh process costs: every ``aira`` command
    is such a process."""
    lint_module._metaschema_validator.cache_clear()


def admit_once(
    fx: Fixture, workdir: Path, run_id: str, *, warm: bool = False
) -> tuple[float, Catalog]:
    """One timed ``build_catalog`` with a fresh state file (no rollback state carries over),
    cold unless ``warm``."""
    if not warm:
        cold()
    state = CatalogState(workdir / f"catalog-{run_id}.sqlite3")
    try:
        start = time.perf_counter()
        catalog = build_catalog(fx.registry, trust=fx.policy, state=state)
        elapsed = time.perf_counter() - start
    finally:
        state.close()
    check_admitted(catalog, fx.count)
    return elapsed, catalog


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def breakdown(fx: Fixture, workdir: Path) -> dict[str, float]:
    """The stages of one admission, each timed on its own with the production functions."""
    now = datetime.now(UTC)
    t_parse, parsed = timed(lambda: parse_package(fx.source))
    if parsed.diagnostics or parsed.manifest is None:
        raise BenchmarkError(f"parse_package failed: {parsed.diagnostics[:3]}")
    m = parsed.manifest
    t_verify, verified = timed(
        lambda: fx.policy.verify(parsed.canonical, m.publisher, fx.signature_bytes, now)
    )
    if not isinstance(verified, VerifiedSignature):
        raise BenchmarkError(f"signature verification failed: {verified}")
    t_hash, raw_hash = timed(lambda: sha256_id("pkg", parsed.canonical))
    known = {d.capability_id for d in m.descriptors}
    cold()
    t_lint, findings = timed(lambda: lint_manifest(m, known_capabilities=known))
    if findings:
        raise BenchmarkError(f"lint found {len(findings)} problems, e.g. {findings[0]}")
    t_conf, report = timed(
        lambda: check_conformance(m, ImplementationIndex(fx.implementations), raw_hash, now)
    )
    if not report.passed:
        raise BenchmarkError("conformance failed")
    state = CatalogState(workdir / "catalog-breakdown.sqlite3")
    try:
        t_record, _ = timed(lambda: state.record_admission(m.publisher, report))
    finally:
        state.close()
    return {
        "parse_and_validate": t_parse,
        "signature_verify": t_verify,
        "manifest_hash": t_hash,
        "lint": t_lint,
        "conformance": t_conf,
        "record_admission": t_record,
    }


def peak_memory(fx: Fixture, workdir: Path) -> int:
    """Peak bytes allocated by Python during one admission (tracemalloc; slows that run)."""
    cold()
    state = CatalogState(workdir / "catalog-memory.sqlite3")
    try:
        tracemalloc.start()
        try:
            catalog = build_catalog(fx.registry, trust=fx.policy, state=state)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        state.close()
    check_admitted(catalog, fx.count)
    return peak


def hotspots(fx: Fixture, workdir: Path, top: int) -> list[dict[str, Any]]:
    """The ``top`` functions by own time in one profiled admission."""
    cold()
    state = CatalogState(workdir / "catalog-profile.sqlite3")
    profiler = cProfile.Profile()
    try:
        profiler.enable()
        catalog = build_catalog(fx.registry, trust=fx.policy, state=state)
        profiler.disable()
    finally:
        state.close()
    check_admitted(catalog, fx.count)
    stats = pstats.Stats(profiler)
    rows = []
    for (filename, line, func), (_, calls, tottime, cumtime, _) in stats.stats.items():
        rows.append(
            {
                "function": f"{_short_path(filename)}:{line}:{func}",
                "calls": calls,
                "tottime_s": tottime,
                "cumtime_s": cumtime,
            }
        )
    rows.sort(key=lambda r: -r["tottime_s"])
    return rows[:top]


def _short_path(filename: str) -> str:
    for marker in ("site-packages/", "aira_core/"):
        idx = filename.find(marker)
        if idx >= 0:
            return filename[idx + len(marker) :] if marker == "site-packages/" else filename[idx:]
    return filename


def run(count: int, runs: int, profile_top: int) -> dict[str, Any]:
    t_build, fx = timed(lambda: Fixture(count))
    with tempfile.TemporaryDirectory(prefix="aira-bench-") as tmp:
        workdir = Path(tmp)
        for w in range(WARMUP_RUNS):
            admit_once(fx, workdir, f"warmup{w}")
        samples = [admit_once(fx, workdir, str(r))[0] for r in range(runs)]
        warm_samples = [admit_once(fx, workdir, f"w{r}", warm=True)[0] for r in range(runs)]
        cold()
        stages = breakdown(fx, workdir)
        peak = peak_memory(fx, workdir)
        top = hotspots(fx, workdir, profile_top) if profile_top > 0 else []
    median = statistics.median(samples)
    result: dict[str, Any] = {
        "benchmark": "admission",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "descriptors": count,
        "schemas": len(fx.manifest["schemas"]),
        "manifest_bytes": len(fx.manifest_bytes),
        "fixture_build_s": t_build,
        "runs": runs,
        "warmup_runs": WARMUP_RUNS,
        "seconds": {"min": min(samples), "median": median, "max": max(samples)},
        "samples_s": samples,
        "warm_seconds": {"median": statistics.median(warm_samples)},
        "target": {
            "metric": "median",
            "max_seconds": TARGET_MEDIAN_S,
            "met": median <= TARGET_MEDIAN_S,
        },
        "breakdown_s": stages,
        "breakdown_unaccounted_s": max(0.0, median - sum(stages.values())),
        "peak_memory_bytes": peak,
    }
    if top:
        result["hotspots"] = top
    return result


STAGE_LABELS = {
    "parse_and_validate": "JSON parse + model validation (parse_package)",
    "signature_verify": "signature verification (TrustPolicy.verify)",
    "manifest_hash": "manifest hash (sha256_id over canonical JSON)",
    "lint": "lint (lint_manifest)",
    "conformance": "conformance (check_conformance)",
    "record_admission": "record admission (CatalogState, sqlite)",
}


def print_report(result: dict[str, Any]) -> None:
    s = result["seconds"]
    target = result["target"]
    print(f"admission of one signed package (python {result['python']})")
    print(
        f"  {result['descriptors']} descriptors, {result['schemas']} schemas, "
        f"manifest {result['manifest_bytes']:,} bytes"
    )
    print(
        f"  {result['runs']} runs of build_catalog after {result['warmup_runs']} discarded "
        "warm-up run(s), fresh catalog state per run, cold caches (as in a new process)"
    )
    print(f"  min     {s['min']:.3f} s")
    print(
        f"  median  {s['median']:.3f} s   (target <= {target['max_seconds']:.1f} s: "
        f"{verdict(target['met'])})"
    )
    print(f"  max     {s['max']:.3f} s")
    print(
        f"  warm    {result['warm_seconds']['median']:.3f} s median with lint's metaschema "
        "validator already built (a long-running host re-admitting the same package)"
    )
    print()
    print("breakdown of one admission (each stage timed on its own):")
    total = sum(result["breakdown_s"].values())
    for key, seconds in result["breakdown_s"].items():
        share = seconds / total * 100 if total else 0.0
        print(f"  {seconds:7.3f} s  {share:5.1f}%  {STAGE_LABELS[key]}")
    print(f"  {total:7.3f} s  sum of the stages")
    print(
        f"  {result['breakdown_unaccounted_s']:7.3f} s  median build_catalog minus the sum "
        "(catalog bookkeeping; 0 when noise exceeds it)"
    )
    peak = result["peak_memory_bytes"]
    print(
        f"peak Python memory of one admission (tracemalloc): {peak / 2**20:.1f} MiB "
        f"({peak:,} bytes)"
    )
    if result.get("hotspots"):
        print()
        print("hotspots of one profiled admission (cProfile, by own time):")
        for r in result["hotspots"]:
            print(
                f"  {r['tottime_s']:7.3f} s own  {r['cumtime_s']:7.3f} s cum  "
                f"{r['calls']:>8} calls  {r['function']}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--runs",
        type=int,
        default=DEFAULT_RUNS,
        help=f"timed runs after {WARMUP_RUNS} warm-up run (default: {DEFAULT_RUNS})",
    )
    parser.add_argument(
        "--descriptors",
        type=int,
        default=DEFAULT_DESCRIPTORS,
        help=f"descriptors in the package (default: {DEFAULT_DESCRIPTORS})",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also profile one admission and show the top N functions",
    )
    args = parse_args(parser, argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.descriptors < 1:
        parser.error("--descriptors must be at least 1")
    return report_run(
        lambda: run(args.descriptors, args.runs, args.profile), print_report, as_json=args.json
    )


if __name__ == "__main__":
    sys.exit(main())
