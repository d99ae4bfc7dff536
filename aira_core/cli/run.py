"""The step host: ``aira run`` and ``aira demo`` (decision scripts through the bounded-step
host) and ``aira trace`` (their trajectories)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from aira_core.cli._options import (
    ForceFlag,
    JsonFlag,
    KernelOption,
    _kernel,
    command_group,
    positive_amount,
)
from aira_core.cli._output import _print_json, _table, printable

TierOption = Annotated[
    str | None, typer.Option("--tier", help="T32, T128 or T200 (default: the script's).")
]


def _run_dir(name: str) -> Path:
    from aira_core.config import aira_home

    stamp = datetime.now().strftime("%Y%m%dT%H%M%S%f")
    return aira_home() / "runs" / f"{name}-{stamp}"


def _shown(path: Path) -> str:
    """A path as the user may see it: relative to AIRA_HOME (no private absolute paths)."""
    from aira_core.config import aira_home

    try:
        return "$AIRA_HOME/" + path.relative_to(aira_home()).as_posix()
    except ValueError:
        return path.name


def _progress(record: dict[str, Any], totals: dict[str, float] | None = None) -> None:
    decision = record["decision"]
    act = decision.get("act", "?")
    result = record["result"]
    status = result.get("status", "?")
    extra = result.get("code") or result.get("rev", "")[:24] or result.get("terminal") or ""
    line = (
        f"  step {record['step']:>2}  round {record['round']}  {act:<8} "
        f"prompt {record['promptTokens']:>6}/{record['budgetTokens']} tok  {status} {extra}"
    )
    if totals is not None:  # a model's run: what it has cost so far
        usage = record.get("usage") or {}
        for key in ("inputTokens", "outputTokens", "costUsd"):
            totals[key] = totals.get(key, 0) + (usage.get(key) or 0)
        line += (
            f"  [in {_k(totals['inputTokens'])} out {_k(totals['outputTokens'])} tok"
            f" ${totals['costUsd']:.4f}]"
        )
    typer.echo(line)


def _k(tokens: float) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 1000 else f"{int(tokens)}"


def _on_step(quiet: bool, metered: bool) -> Any:
    if quiet:
        return None
    if not metered:
        return _progress
    totals: dict[str, float] = {}
    return lambda record: _progress(record, totals)


def _run_one(
    script: Any,
    kernel: Any,
    tier: str | None,
    trajectory: Path | None,
    quiet: bool,
    force: bool = False,
    **source: Any,
) -> Any:
    from aira_core.cli._options import _catalog
    from aira_core.step.runner import run_script

    where = _run_dir(script.name)
    store = source.pop("store", None)
    # built here (unless the caller has it), with progress on stderr, before the run prints
    # its steps: a first build lints and runs conformance on every package, taking seconds
    catalog = source.pop("catalog", None)
    if catalog is None:
        catalog = _catalog(quiet=quiet)
    if "integrate" in source:  # its value is the contract file, or None: derive one
        source["integrations"] = _integrations(source.pop("integrate"), where, catalog)
    return run_script(
        script,
        catalog=catalog,
        kernel=kernel,
        store=store or where / "store.sqlite3",
        trajectory=trajectory or where / "trajectory.jsonl",
        tier_name=tier,
        outputs=where,
        on_step=_on_step(quiet, "source" in source),
        force=force,
        **source,
    )


def _integrations(contract: Path | None, where: Path, catalog: Any) -> Any:
    """The installed Intent / Continuity / Guard adapters for this run, configured with the
    user's contract (``None``: derived from the Intent Frame) and the run's directory; an
    adapter that fails to configure is left out with a warning (fail-open)."""
    from aira_core.integrations import IntegrationOptions, Integrations, configured_integrations

    validators = sorted(
        name
        for d in catalog.capabilities().values()
        if d.kind == "validator"
        for name in (d.capability_id, d.validator_ref)
        if name
    )
    adapters, warnings = configured_integrations(
        IntegrationOptions(contract=contract, run_dir=where, validators=tuple(validators))
    )
    seam = Integrations(adapters)
    seam.diagnostics.extend(warnings)
    return seam


def _run_report(run: Any) -> dict[str, Any]:
    o = run.outcome
    end = next((r for r in reversed(o.records) if "end" in r), None) or {}
    report = {
        "script": run.script.name,
        "terminal": o.terminal.value if o.terminal else None,
        "reason": o.reason,
        "head": o.head,
        "steps": o.steps,
        "rounds": o.rounds,
        "maxPromptTokens": o.max_prompt_tokens,
        "budgetTokens": o.records[0]["budgetTokens"] if o.records else None,
        "trajectory": _shown(run.trajectory),
        "files": {k: _shown(v) for k, v in run.files.items()},
    }
    usage = end.get("usage")
    if usage is None:
        from aira_core.step.trajectory import read_trajectory

        _, records = read_trajectory(run.trajectory)
        usage = next((r.get("usage") for r in reversed(records) if "end" in r), None)
        end = next((r for r in reversed(records) if "end" in r), {})
    from aira_core.extensions import Usage

    report["usage"] = Usage.from_wire(usage or {}).summary()
    report["channelRepairs"] = end.get("channelRepairs", 0)
    said = _integration_diagnostics(run)
    if said:
        report["diagnostics"] = said
    return report


def _integration_diagnostics(run: Any) -> list[dict[str, Any]]:
    """What the run's integrations said (refused exports, failed adapters, what an adapter
    recorded itself: a refused contract binding, say), as wire diagnostics."""
    return [d.model_dump(mode="json", exclude_none=True) for d in run.diagnostics]


def _summary_lines(report: dict[str, Any]) -> list[str]:
    u = report["usage"]
    share = u["cacheHitShare"]
    hit = f", {share:.0%} from the provider's cache" if share is not None else ""
    lines = [
        f"  tokens: in {u['inputTokens']}{hit}, out {u['outputTokens']}"
        f" (reasoning {u['reasoningTokens']}); cost ${u['costUsd']:.4f}"
        + (f"; {report['channelRepairs']} channel repairs" if report["channelRepairs"] else ""),
    ]
    lines.append("  files: " + " ".join([*report["files"].values(), report["trajectory"]]))
    if "report" in report["files"]:
        lines.append(f"  report: {report['files']['report']} (opens offline in any browser)")
    for d in report.get("diagnostics", ()):
        lines.append(printable(f"  {d['severity']}: {d['code']}: {d['message']}"))
    return lines


ProviderOption = Annotated[
    str | None,
    typer.Option(
        "--provider",
        help="Who decides the steps: an installed provider (deepseek, openai) or a "
        "providers.toml table in AIRA_HOME. Its API key comes from the environment variable "
        "the configuration names, never from a flag.",
    ),
]


def run_cmd(
    intent: Annotated[
        str | None,
        typer.Argument(
            help="What to design, in words (with --provider and --model): a model designs it."
        ),
    ] = None,
    provider: ProviderOption = None,
    model: Annotated[str | None, typer.Option("--model", help="The provider's model.")] = None,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="The provider's OpenAI-compatible base URL (…/v1)."),
    ] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            "--transport",
            help="How a decision rides the request: tool (default), json, or strict "
            "(schema-constrained output).",
        ),
    ] = None,
    fallback: Annotated[
        list[str] | None,
        typer.Option(
            "--fallback",
            help="Another PROVIDER::MODEL, tried when a provider refuses a step before "
            "processing it (repeat for more).",
        ),
    ] = None,
    budget_usd: Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            help="Stop the task once it has cost more (USD; a finite number above 0).",
            callback=positive_amount,
        ),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Stop the task after this many steps.", min=1)
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option(
            "--script",
            help="An aira.decision-script/1 file (replayed, or its task decided by --provider), "
            "or the name of a bundled one (bracket, storage_rack, …: `aira_core/step/scripts`).",
        ),
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="The model store to work in: a new one is made there; an existing one is "
            "continued from its main head (default: a new store in the run's directory).",
        ),
    ] = None,
    tier: TierOption = None,
    trajectory: Annotated[
        Path | None, typer.Option("--trajectory", help="Where to write the trajectory (JSONL).")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option("--resume", help="A run directory (store + trajectory) to continue."),
    ] = None,
    integrations: Annotated[
        bool,
        typer.Option(
            "--integrations",
            help="Run with the installed Intent / Continuity / Guard adapters "
            "(plugins/aira-continuity); without --contract the contract is derived from the "
            "task's Intent Frame. Any adapter that fails is left out (fail-open).",
        ),
    ] = False,
    contract: Annotated[
        Path | None,
        typer.Option(
            "--contract",
            help="A provider contract document or a TaskContractLite JSON file the adapters "
            "bind the task to (implies --integrations; docs/integration.md).",
        ),
    ] = None,
    force: ForceFlag = False,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a task through the bounded-step host: a task in words decided by a model
    (`aira run "a 60 x 40 x 5 mm plate with four M4 clearance holes" --provider deepseek
    --model deepseek-flash`), or a decision script (--script). Each step is shown as it
    runs; at the end, the STEP and SVG files, the trajectory, the run report (report.html,
    one offline HTML page: `aira report`) and what the run cost. Exit 0
    only when the runtime says completed. --resume continues an interrupted run.

    A new run's trajectory is a new file: a --trajectory path that exists is refused
    (TRAJECTORY_EXISTS) unless --force, which replaces it with a new file once the run
    starts. A run refused before it starts leaves nothing behind."""
    from aira_core.diagnostics import AiraError
    from aira_core.runtime.intents import RUN_TASK_INVALID

    named = [n for n, v in (("INTENT", intent), ("--script", script)) if v is not None]
    if resume is not None and intent is not None:
        raise AiraError(RUN_TASK_INVALID, "--resume continues a run and its task: drop INTENT")
    if len(named) > 1:
        raise AiraError(RUN_TASK_INVALID, "give the task once: INTENT or --script, not both")
    if resume is None and not named:
        raise AiraError(
            RUN_TASK_INVALID,
            'give the task: aira run "INTENT" --provider P --model M, or --script FILE',
        )
    flags = [
        n for n, v in (("--model", model), ("--base-url", base_url), ("--fallback", fallback)) if v
    ]
    if provider is None and flags:
        raise AiraError(RUN_TASK_INVALID, f"{flags[0]} goes with --provider")
    if intent is not None and provider is None:
        raise AiraError(
            RUN_TASK_INVALID,
            "a task in words needs a model to decide it: --provider P --model M "
            "(`aira plugins` lists the installed providers)",
        )
    if resume is not None:
        source = (provider, model, base_url, transport, fallback)
        budgets = _budgets(budget_usd, max_steps)
        _resume(resume, script, source, tier, trajectory, kernel, as_json, budgets)
        return
    if trajectory is not None:
        from aira_core.files import check_target
        from aira_core.step.trajectory import NEW_RUN, TRAJECTORY_EXISTS

        # Early, before the kernel is chosen; the runner creates it exclusively, first.
        check_target(
            trajectory, force=force, exists_code=TRAJECTORY_EXISTS, hint=NEW_RUN, new_dirs=True
        )
    if intent is not None:
        from aira_core.step.runner import intent_script

        loaded = intent_script(intent, tier)
    else:
        loaded = _load(script)
    extra: dict[str, Any] = {"budgets": _budgets(budget_usd, max_steps)}
    if integrations or contract is not None:
        extra["integrate"] = contract
    if store is not None:
        extra["store"] = store
        extra["existing_store"] = True
    # Everything that can refuse the run is checked before a ledger task is made.
    from aira_core.runtime.tiers import tier as check_tier

    check_tier(tier or loaded.tier)
    chosen = _kernel(kernel, "running a task")
    if provider is not None:
        gateway, header = _open_gateway(provider, model, base_url, transport, fallback, loaded)
        if intent is not None:  # a resume rebuilds the task from it
            header["intent"] = loaded.intent.to_wire()
        extra.update(source=gateway, header=header)
        if store is not None and store.exists():
            extra["task"] = header["gatewayTask"]  # its own branch on a store of earlier runs
    if not as_json:
        typer.echo(_title(loaded))
    run = _run_one(loaded, chosen, tier, trajectory, as_json, force, **extra)
    _finish(run, as_json)


def _load(script: Path) -> Any:
    """The script in the file ``script``; a name that is no file but a bundled script's
    (``aira run --script storage_rack``) is that bundled script."""
    from aira_core.step.runner import SCRIPTS, bundled_script
    from aira_core.step.trajectory import load_script

    if str(script) in SCRIPTS and not script.exists():
        return bundled_script(str(script))
    return load_script(script)


def _title(script: Any) -> str:
    """The task's first line as a terminal may show it: what a user or script wrote may hold
    a key (redacted) or control characters (escaped)."""
    from aira_core.diagnostics import redact

    return printable(redact(f"{script.name}: {script.title or script.intent.goal}"))


def _budgets(usd: float | None, steps: int | None) -> Any:
    from dataclasses import replace

    from aira_core.runtime.tiers import TaskBudgets

    budgets = TaskBudgets()
    if usd is not None:
        budgets = replace(budgets, usd=usd)
    if steps is not None:
        budgets = replace(budgets, steps=steps)
    return budgets


def _open_gateway(
    provider: str,
    model: str | None,
    base_url: str | None,
    transport: str | None,
    fallback: list[str] | None,
    script: Any,
    task: str | None = None,
) -> tuple[Any, dict[str, Any]]:
    from aira_core.config import aira_home
    from aira_core.gateway.source import SourceSpec, default_model, open_source

    home = aira_home()
    spec = SourceSpec(
        provider=provider,
        model=model or default_model(provider, home),
        fallbacks=tuple(fallback or ()),
        base_url=base_url,
        transport=transport,
    )
    intent = {"intent": script.intent.to_wire(), "script": script.name}
    return open_source(spec, home=home, intent=intent, task=task)


def _resume(
    where: Path,
    script: Path | None,
    source: tuple[Any, ...],
    tier: str | None,
    trajectory: Path | None,
    kernel: str | None,
    as_json: bool,
    budgets: Any,
) -> None:
    """Continue the run in ``where``: a task in words from its trajectory's header, a
    script's from --script; a gateway run continues on its ledger task (or on the informed
    retry of it) with the source its header names, unless flags name another."""
    from aira_core.diagnostics import AiraError
    from aira_core.runtime.intents import RUN_TASK_INVALID
    from aira_core.step.runner import intent_of_header, resume_script
    from aira_core.step.trajectory import read_trajectory

    provider, model, base_url, transport, fallback = source
    store = where / "store.sqlite3"
    if not store.exists():
        raise AiraError("RUN_STORE_MISSING", f"{store.name} does not exist; nothing to resume")
    path = trajectory or where / "trajectory.jsonl"
    header, _ = read_trajectory(path)
    task = None
    if script is not None:
        loaded = _load(script)
    elif header.get("intent") is not None:
        loaded = intent_of_header(header)
        task = header.get("taskId")  # rebuilt from a redacted copy: the id the run had
    else:
        raise AiraError(RUN_TASK_INVALID, "this run replayed a script: resume it with --script")
    extra: dict[str, Any] = {"budgets": budgets}
    if header.get("gatewayTask"):
        from aira_core.gateway.source import SourceSpec

        recorded = SourceSpec.from_wire(header.get("source"))
        gateway, _ = _open_gateway(
            provider or recorded.provider,
            model or recorded.model,
            base_url or recorded.base_url,
            transport or recorded.transport,
            fallback or list(recorded.fallbacks),
            loaded,
            task=header["gatewayTask"],
        )
        extra["source"] = gateway
    elif provider is not None:
        raise AiraError(
            RUN_TASK_INVALID, "this run's steps came from its script: resume it without --provider"
        )
    chosen = _kernel(kernel, "running a task")
    if not as_json:
        typer.echo(_title(loaded))
    run = resume_script(
        loaded,
        kernel=chosen,
        store=store,
        trajectory=path,
        tier_name=tier,
        outputs=where,
        on_step=_on_step(as_json, "source" in extra),
        task=task,
        **extra,
    )
    _finish(run, as_json)


def _finish(run: Any, as_json: bool) -> None:
    report = _run_report(run)
    if as_json:
        _print_json({"format": "aira.run/1", **report})
    else:
        typer.echo(f"  -> {report['terminal']} ({report['reason']}), head {report['head']}")
        for line in _summary_lines(report):
            typer.echo(line)
    if report["terminal"] != "completed":
        raise typer.Exit(1)


def demo_cmd(
    tier: TierOption = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The main job, on embedded defaults: replay the bundled design tasks (a mounting
    bracket, a flanged shaft, a parametric edit) step by step on the OCCT kernel, then write
    each task's STEP file, SVG preview, trajectory and run report (report.html: open it in
    any browser). No API key needed."""
    from aira_core.step.runner import BUNDLED, bundled_script

    chosen = _kernel(kernel, "the demo builds real geometry")
    reports = []
    for name in BUNDLED:
        script = bundled_script(name)
        if not as_json:
            typer.echo(f"\n{script.title}")
        reports.append(_run_report(_run_one(script, chosen, tier, None, as_json)))
    if as_json:
        _print_json({"format": "aira.demo/1", "tasks": reports})
    else:
        typer.echo("")
        _table(
            "Demo",
            ["task", "end", "steps", "rounds", "max prompt / B (tok)"],
            [
                [
                    r["script"],
                    str(r["terminal"]),
                    str(r["steps"]),
                    str(r["rounds"]),
                    f"{r['maxPromptTokens']} / {r['budgetTokens']}",
                ]
                for r in reports
            ],
        )
        for r in reports:
            where = r["trajectory"].rsplit("/", 1)[0]
            names = [p.rsplit("/", 1)[1] for p in r["files"].values()]
            typer.echo(f"{r['script']}: {where}/ {' '.join([*names, 'trajectory.jsonl'])}")
        if any("report" in r["files"] for r in reports):
            typer.echo("Open a run's report.html in any browser (it works offline).")
    if any(r["terminal"] != "completed" for r in reports):
        raise typer.Exit(1)


trace_app = command_group("Trajectories of step-host runs.")


@trace_app.command("show")
def trace_show(
    file: Annotated[Path, typer.Argument(help="A trajectory (JSONL).")],
    as_json: JsonFlag = False,
) -> None:
    """One line per step: act, prompt size against B, result, and what the provider reported
    (input tokens, those from its cache, output tokens, USD); then how the task ended and
    the totals (with reasoning tokens and the cache-hit share). --json: every record."""
    from aira_core.extensions import Usage
    from aira_core.step.trajectory import read_trajectory

    # read_trajectory checked every record's shape: the fields used here are there and typed.
    header, records = read_trajectory(file)
    if as_json:
        _print_json({"header": header, "records": records})
        return
    steps = [r for r in records if "step" in r]
    usages = [Usage.from_wire(r.get("usage") or {}) for r in steps]
    rows = [
        [
            str(r["step"]),
            str(r["round"]),
            r["decision"].get("act") or "?",
            f"{r['promptTokens']}/{r['budgetTokens']}",
            f"{r['result']['status']} {r['result'].get('code') or ''}".rstrip(),
            str(u.input_tokens),
            str(u.cache_hit_tokens),
            str(u.output_tokens),
            f"{u.cost_usd:.4f}",
        ]
        for r, u in zip(steps, usages, strict=True)
    ]
    models = sorted({f"{r.get('provider')}::{r.get('model')}" for r in steps if r.get("model")})
    _table(
        f"{header.get('script') or file.name} ({header.get('tier')})"
        + (f" — {printable(', '.join(models))[:120]}" if models else ""),
        ["step", "round", "act", "prompt tok", "result", "in", "hit", "out", "USD"],
        rows,
    )
    end = next((r for r in records if "end" in r), None)
    if end:
        typer.echo(f"end: {end['terminal']} ({end['reason']}), head {end['head']}")
    total = sum(usages, Usage())
    share = total.summary()["cacheHitShare"]
    typer.echo(
        f"usage: in {total.input_tokens} tok"
        + (f" ({share:.0%} cache hits)" if share is not None else "")
        + f", out {total.output_tokens} (reasoning {total.reasoning_tokens}),"
        f" ${total.cost_usd:.4f} over {len(steps)} steps"
    )
