"""``aira bench``: benchmarks anyone can repeat (catalog discovery, the bounded host's
capsules)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aira_core.cli._options import JsonFlag, KernelOption, _kernel, command_group
from aira_core.cli._output import _print_json, _table
from aira_core.cli.run import TierOption, _run_one

bench_app = command_group("Benchmarks anyone can repeat.")


@bench_app.command("discovery")
def bench_discovery(
    queries: Annotated[
        Path, typer.Option("--queries", help="The query set (aira.discovery-benchmark/1).")
    ] = Path("benchmarks/discovery/queries.json"),
    as_json: JsonFlag = False,
) -> None:
    """Recall@1/@5, MRR, no-match accuracy and latency of catalog search over the benchmark
    queries: BM25 alone, the default hybrid, and the hybrid with embeddings if installed."""
    from aira_core.catalog import embeddings, evaluation
    from aira_core.catalog.catalog import build_catalog
    from aira_core.diagnostics import AiraError

    name, items = evaluation.load_queries(queries)
    catalog = build_catalog()
    package = catalog.packages.get(name)
    if package is None:
        raise AiraError(
            "BENCH_CATALOG_MISSING",
            f"the benchmark searches package {name!r}, which is not in the production catalog",
        )
    results = evaluation.run(
        package.descriptors(), package.manifest.schemas, items, embedder=embeddings.load()
    )
    report = {"format": "aira.bench.discovery/1", "catalog": name, "configurations": results}
    if as_json:
        _print_json(report)
        return
    columns = ["recallAt1", "recallAt5", "mrr", "noMatchAccuracy", "falseNoMatch", "p50Ms", "p95Ms"]
    rows = []
    for config, result in results.items():
        if "skipped" in result:
            rows.append([config, result["skipped"], *[""] * (len(columns) - 1)])
            continue
        for half in ("all", "dev", "test"):
            if half in result:
                rows.append([f"{config} ({half})", *[str(result[half][c]) for c in columns]])
    _table(
        f"Discovery benchmark: {len(items)} queries over {name}", ["configuration", *columns], rows
    )


@bench_app.command("capsule")
def bench_capsule(
    tier: TierOption = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Per bundled task: the largest capsule + log against B, the input sent against a
    transcript baseline from the same trajectory, and the host's overhead per step."""
    from aira_core.step.bench import OVERHEAD_TARGET_MS, capsule_report
    from aira_core.step.runner import BUNDLED, bundled_script

    chosen = _kernel(kernel, "the bundled tasks build real geometry")
    reports = {}
    for name in BUNDLED:
        run = _run_one(bundled_script(name), chosen, tier, None, True)
        reports[name] = {
            "terminal": run.outcome.terminal.value if run.outcome.terminal else None,
            **capsule_report(run.outcome.records),
        }
    if as_json:
        _print_json(
            {
                "format": "aira.bench.capsule/1",
                "targetOverheadP50Ms": OVERHEAD_TARGET_MS,
                "tasks": reports,
            }
        )
        return
    _table(
        "Bounded host per bundled task",
        [
            "task",
            "steps",
            "max prompt / B (tok)",
            "input vs transcript (tok)",
            "ratio",
            "overhead p50/p95 ms",
        ],
        [
            [
                name,
                str(r["steps"]),
                f"{r['maxPromptTokens']} / {r['budgetTokens']}",
                f"{r['inputTokens']} vs {r['transcriptTokens']}",
                str(r["ratio"]),
                f"{r['overheadP50Ms']} / {r['overheadP95Ms']}",
            ]
            for name, r in reports.items()
        ],
    )
    typer.echo(f"target: host overhead p50 <= {OVERHEAD_TARGET_MS} ms per step")
