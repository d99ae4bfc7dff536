"""``aira bench``: benchmarks anyone can repeat (catalog discovery, the bounded host's
capsules, the bundled tasks through the gateway per transport)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aira_core.cli._options import JsonFlag, KernelOption, _catalog, _kernel, command_group
from aira_core.cli._output import _print_json, _table, progress
from aira_core.cli.run import TierOption, _run_one

bench_app = command_group("Benchmarks anyone can repeat.")


@bench_app.command("discovery")
def bench_discovery(
    queries: Annotated[
        Path, typer.Option("--queries", help="The query set (aira.discovery-benchmark/1).")
    ] = Path("benchmarks/discovery/queries.json"),
    parts: Annotated[
        Path | None,
        typer.Option(
            "--parts",
            help="The part-level query set (aira.discovery-parts/1; default: parts.json "
            "beside --queries, when it is there).",
        ),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Recall@1/@5, MRR, no-match accuracy and latency of catalog search over the benchmark
    queries: BM25 alone, the default hybrid, and the hybrid with embeddings if installed; and
    the part-level recall@10 over whole-part descriptions."""
    from aira_core.catalog import embeddings, evaluation
    from aira_core.diagnostics import AiraError

    name, items = evaluation.load_queries(queries)
    if parts is None and (queries.parent / "parts.json").is_file():
        parts = queries.parent / "parts.json"
    part_items: list[evaluation.Query] = []
    if parts is not None:
        part_name, part_items = evaluation.load_queries(parts, evaluation.PARTS_FORMAT)
        if part_name != name:
            raise AiraError(
                "BENCH_QUERIES_INVALID",
                f"{parts.name} searches {part_name!r}, {queries.name} searches {name!r}",
            )
    catalog = _catalog(quiet=as_json)
    package = catalog.packages.get(name)
    if package is None:
        raise AiraError(
            "BENCH_CATALOG_MISSING",
            f"the benchmark searches package {name!r}, which is not in the production catalog",
        )
    with progress(f"Searching {len(items) + len(part_items)} queries", quiet=as_json):
        results = evaluation.run(
            package.descriptors(),
            package.manifest.schemas,
            items,
            embedder=embeddings.load(),
            parts=part_items,
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
    if part_items:
        part_columns = ["recallAt10", "completeAt10", "noMatch", "p50Ms"]
        part_rows = [
            [f"{config} ({half})", *[str(result["parts"][half][c]) for c in part_columns]]
            for config, result in results.items()
            if "parts" in result
            for half in ("all", "dev", "test")
            if half in result["parts"]
        ]
        _table(
            f"Whole parts: {len(part_items)} descriptions over {name} (topK 10)",
            ["configuration", *part_columns],
            part_rows,
        )
        typer.echo(
            f"target: part-level recall@10 >= {evaluation.PART_RECALL_TARGET} (hybrid"
            + (" and hybrid+embeddings" if "parts" in results.get("hybrid+embeddings", {}) else "")
            + "): "
            + (
                "target met"
                if all(
                    r["parts"]["all"]["recallAt10"] >= evaluation.PART_RECALL_TARGET
                    for r in results.values()
                    if "parts" in r and r is not results.get("bm25")
                )
                else "TARGET MISSED"
            )
        )


@bench_app.command("capsule")
def bench_capsule(
    task: Annotated[
        list[str] | None,
        typer.Option(
            "--task",
            help="A bundled task (repeatable; default: all of them, the demo's and the long ones).",
        ),
    ] = None,
    tier: TierOption = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Per bundled task (the demo's and the long ones): the largest capsule + log against B,
    the input sent against two baselines from the same trajectory (a transcript of decisions
    and results; a flat tool client re-sending every capability's full L2 contract, the document
    and every result), the prefix stability of the prompts within rounds, where the input goes (per
    capsule segment and kind of log entry), and the host's overhead per step."""
    from aira_core.step.bench import OVERHEAD_TARGET_MS, PromptRecorder, task_report
    from aira_core.step.runner import SCRIPTS, bundled_script
    from aira_core.step.trajectory import ScriptedSource

    unknown = sorted(set(task or ()) - set(SCRIPTS))
    if unknown:
        raise typer.BadParameter(
            f"no bundled task {', '.join(unknown)} (bundled: {', '.join(SCRIPTS)})",
            param_hint="--task",
        )
    names = tuple(dict.fromkeys(task)) if task else SCRIPTS
    chosen = _kernel(kernel, "the bundled tasks build real geometry")
    catalog = _catalog(quiet=as_json)  # once: every task plans against it, the flat client lists it
    reports = {}
    with progress("Running the bundled tasks", len(names), quiet=as_json) as update:
        for name in names:
            update(description=f"Running task {name}")
            script = bundled_script(name)
            recorder = PromptRecorder(ScriptedSource(script))
            run = _run_one(script, chosen, tier, None, True, source=recorder, catalog=catalog)
            reports[name] = {
                "terminal": run.outcome.terminal.value if run.outcome.terminal else None,
                "head": run.outcome.head,
                "rounds": run.outcome.rounds,
                **task_report(
                    run.outcome.records,
                    run.store,
                    recorder.prompts,
                    recorder.requests,
                    catalog=catalog,
                ),
            }
            update(1)
    if as_json:
        _print_json(
            {
                "format": "aira.bench.capsule/2",
                "targetOverheadP50Ms": OVERHEAD_TARGET_MS,
                "tasks": reports,
            }
        )
        return
    _table(
        "Bounded host per bundled task (input in host tokens, bytes / 4, cumulative)",
        [
            "task",
            "steps (rounds)",
            "max prompt / B",
            "Aira input",
            "transcript (ratio)",
            "flat client (ratio)",
            "prefix / cache-hit share (mean)",
            "cache-hit share (weighted; task)",
            "overhead p50/p95 ms",
        ],
        [
            [
                name,
                f"{r['steps']} ({r['rounds']})",
                f"{r['maxPromptTokens']} / {r['budgetTokens']}",
                str(r["inputTokens"]),
                f"{r['transcriptTokens']} ({r['ratio']})",
                f"{r['flatTokens']} ({r['flatRatio']})",
                f"{r['prefix']['prefixShare']} / {r['prefix']['cacheHitShare']}",
                f"{r['prefix']['weightedCacheHitShare']}; {r['prefix']['taskCacheHitShare']}",
                f"{r['overheadP50Ms']} / {r['overheadP95Ms']}",
            ]
            for name, r in reports.items()
        ],
    )
    for name, r in reports.items():
        _table(
            f"{name}: per step (tokens; cumulative in brackets)",
            ["step", "round", "Aira", "transcript", "flat"],
            [
                [
                    str(s["step"]),
                    str(s["round"]),
                    f"{s['promptTokens']} ({s['cumulativePromptTokens']})",
                    f"{s['transcriptTokens']} ({s['cumulativeTranscriptTokens']})",
                    f"{s['flatTokens']} ({s['cumulativeFlatTokens']})",
                ]
                for s in r["perStep"]
            ],
        )
        _table(
            f"{name}: prefix stability per round (pairs within the round)",
            ["round", "pairs", "prefix share", "cache-hit share (64-token blocks)"],
            [
                [str(x["round"]), str(x["pairs"]), str(x["prefixShare"]), str(x["cacheHitShare"])]
                for x in r["prefix"]["rounds"]
            ],
        )
        spend = r["spend"]
        total = r["inputTokens"] or 1
        _table(
            f"{name}: where the input goes (tokens summed over every prompt)",
            ["part", "tokens", "share"],
            [
                [f"{where}: {part}", str(tokens), f"{tokens / total:.3f}"]
                for where, parts in (("capsule", spend["capsule"]), ("log", spend["log"]))
                for part, tokens in parts.items()
            ],
        )
    typer.echo(f"target: host overhead p50 <= {OVERHEAD_TARGET_MS} ms per step")


@bench_app.command("providers")
def bench_providers(
    task: Annotated[
        list[str] | None,
        typer.Option("--task", help="A bundled task (repeatable; default: all of them)."),
    ] = None,
    transport: Annotated[
        list[str] | None,
        typer.Option(
            "--transport", help="A decision transport (repeatable; default: every built-in one)."
        ),
    ] = None,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Timed runs per task.")] = 1,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Per decision transport, the bundled tasks through the gateway against the loopback
    fake provider: decisions per second, host overhead per step with the network excluded,
    and the prefix stability of each round's prompts (target >= 0.85 within rounds)."""
    from aira_core.gateway.bench import COLUMNS, TARGET_SHARE, providers_report, table_rows
    from aira_core.gateway.gateway import resolve_transport
    from aira_core.step.runner import BUNDLED

    unknown = sorted(set(task or ()) - set(BUNDLED))
    if unknown:
        raise typer.BadParameter(
            f"no bundled task {', '.join(unknown)} (bundled: {', '.join(BUNDLED)})",
            param_hint="--task",
        )
    transports = {name: resolve_transport(name) for name in transport} if transport else None
    chosen = _kernel(kernel, "the bundled tasks build real geometry")
    with progress("Running the bundled tasks through the gateway", quiet=as_json) as update:
        report = providers_report(
            chosen,
            tasks=tuple(task) if task else BUNDLED,
            transports=transports,
            runs=runs,
            on_run=lambda name, task, n: update(
                description=f"{name}: {task} " + ("(warm-up)" if n < 0 else f"(run {n + 1})")
            ),
        )
    if as_json:
        _print_json(report)
    else:
        _table(
            "Bundled tasks through the gateway, per transport (fake provider)",
            COLUMNS,
            table_rows(report),
        )
        typer.echo(
            f"target: prefix share and cache-hit share >= {TARGET_SHARE} within rounds (mean); "
            + ("met" if report["prefixMet"] else "MISSED")
        )
    if not report["completed"]:
        raise typer.Exit(1)
