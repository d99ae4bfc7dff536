"""The step host: ``aira run`` and ``aira demo`` (decision scripts through the bounded-step
host) and ``aira trace`` (their trajectories)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from aira_core.cli._options import ForceFlag, JsonFlag, KernelOption, _kernel, command_group
from aira_core.cli._output import _print_json, _table

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


def _progress(record: dict[str, Any]) -> None:
    decision = record["decision"]
    act = decision.get("act", "?")
    result = record["result"]
    status = result.get("status", "?")
    extra = result.get("code") or result.get("rev", "")[:24] or result.get("terminal") or ""
    typer.echo(
        f"  step {record['step']:>2}  round {record['round']}  {act:<8} "
        f"prompt {record['promptTokens']:>6}/{record['budgetTokens']} tok  {status} {extra}"
    )


def _run_one(
    script: Any,
    kernel: Any,
    tier: str | None,
    trajectory: Path | None,
    quiet: bool,
    force: bool = False,
) -> Any:
    from aira_core.step.runner import run_script

    where = _run_dir(script.name)
    return run_script(
        script,
        kernel=kernel,
        store=where / "store.sqlite3",
        trajectory=trajectory or where / "trajectory.jsonl",
        tier_name=tier,
        outputs=where,
        on_step=None if quiet else _progress,
        force=force,
    )


def _run_report(run: Any) -> dict[str, Any]:
    o = run.outcome
    return {
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


def run_cmd(
    script: Annotated[Path, typer.Option("--script", help="An aira.decision-script/1 file.")],
    tier: TierOption = None,
    trajectory: Annotated[
        Path | None, typer.Option("--trajectory", help="Where to write the trajectory (JSONL).")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option("--resume", help="A run directory (store + trajectory) to continue."),
    ] = None,
    force: ForceFlag = False,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run a decision script through the bounded-step host on a new store (or continue an
    interrupted run with --resume). Exit 0 only when the runtime says completed.

    A new run's trajectory is a new file: a --trajectory path that exists is refused
    (TRAJECTORY_EXISTS) unless --force, which replaces it with a new file once the run
    starts. A run refused before it starts leaves nothing behind."""
    from aira_core.step.runner import resume_script
    from aira_core.step.trajectory import load_script

    loaded = load_script(script)
    if resume is None and trajectory is not None:
        from aira_core.files import check_target
        from aira_core.step.trajectory import NEW_RUN, TRAJECTORY_EXISTS

        # Early, before the kernel is chosen; the runner creates it exclusively, first.
        check_target(
            trajectory, force=force, exists_code=TRAJECTORY_EXISTS, hint=NEW_RUN, new_dirs=True
        )
    chosen = _kernel(kernel, "running a task")
    if not as_json:
        typer.echo(f"{loaded.name}: {loaded.title or loaded.intent.goal}")
    if resume is not None:
        run = resume_script(
            loaded,
            kernel=chosen,
            store=resume / "store.sqlite3",
            trajectory=trajectory or resume / "trajectory.jsonl",
            tier_name=tier,
            outputs=resume,
            on_step=None if as_json else _progress,
        )
    else:
        run = _run_one(loaded, chosen, tier, trajectory, as_json, force)
    report = _run_report(run)
    if as_json:
        _print_json({"format": "aira.run/1", **report})
    else:
        typer.echo(f"  -> {report['terminal']} ({report['reason']}), head {report['head']}")
    if report["terminal"] != "completed":
        raise typer.Exit(1)


def demo_cmd(
    tier: TierOption = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The main job, on embedded defaults: replay the bundled design tasks (a mounting
    bracket, a flanged shaft, a parametric edit) step by step on the OCCT kernel, then write
    each task's STEP file, SVG preview and trajectory. No API key needed."""
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
    if any(r["terminal"] != "completed" for r in reports):
        raise typer.Exit(1)


trace_app = command_group("Trajectories of step-host runs.")


@trace_app.command("show")
def trace_show(
    file: Annotated[Path, typer.Argument(help="A trajectory (JSONL).")],
    as_json: JsonFlag = False,
) -> None:
    """One line per step: act, capsule and log size, result; then how the task ended."""
    from aira_core.step.trajectory import read_trajectory

    # read_trajectory checked every record's shape: the fields used here are there and typed.
    header, records = read_trajectory(file)
    if as_json:
        _print_json({"header": header, "records": records})
        return
    rows = [
        [
            str(r["step"]),
            str(r["round"]),
            r["decision"].get("act") or "?",
            f"{r['capsuleBytes']}",
            f"{r['logBytes']}",
            f"{r['promptTokens']}/{r['budgetTokens']}",
            f"{r['result']['status']} {r['result'].get('code') or ''}".rstrip(),
        ]
        for r in records
        if "step" in r
    ]
    _table(
        f"{header.get('script') or file.name} ({header.get('tier')})",
        ["step", "round", "act", "capsule B", "log B", "prompt tok", "result"],
        rows,
    )
    end = next((r for r in records if "end" in r), None)
    if end:
        typer.echo(f"end: {end['terminal']} ({end['reason']}), head {end['head']}")
