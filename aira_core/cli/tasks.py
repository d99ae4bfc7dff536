"""``aira tasks``: the tasks and attempts of the provider gateway's ledger, in the states a
person acts on (queued, running, watch paused, needs confirmation, result pending, done,
failed, canceled; docs/gateway.md), and the informed retry that is the only way a step whose
submission may have been charged is submitted again."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aira_core.cli._options import JsonFlag
from aira_core.cli._output import _print_json, _table, printable

tasks_app = typer.Typer(
    rich_markup_mode=None,  # plain help (see _options.command_group)
    help="The provider gateway's tasks (what `aira run` sent to a model): their attempts, "
    "and informed retries.",
    invoke_without_command=True,
)

TaskArgument = Annotated[str, typer.Argument(help="A task id (task_…).")]


def _ledger(*, must_exist: bool) -> Any:
    """The ledger in AIRA_HOME; None when there is none yet and reading is all we do (a
    listing must not create a database)."""
    from aira_core.gateway.ledger import AttemptLedger, default_ledger_path

    path = default_ledger_path()
    if not must_exist and not path.exists():
        return None
    return AttemptLedger.open(path)


@tasks_app.callback()
def tasks_list(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Every task, newest last: its human state, the legacy status, the model of its latest
    attempt, and whether a retry handled it."""
    if ctx.invoked_subcommand is not None:
        return
    ledger = _ledger(must_exist=False)
    tasks = [] if ledger is None else ledger.tasks()
    if as_json:
        _print_json({"format": "aira.gateway-tasks/1", "tasks": [t.to_wire() for t in tasks]})
        return
    if not tasks:
        typer.echo("no tasks: `aira run` with a provider makes one")
        return
    _table(
        "Tasks",
        ["task", "state", "status", "model", "revision", "retried as"],
        [
            [
                t.id,
                str(t.human_state),
                str(t.status),
                printable(t.model_ref or "-"),
                str(t.revision),
                t.handled_by_retry or "",
            ]
            for t in tasks
        ],
    )


@tasks_app.command("show")
def tasks_show(task: TaskArgument, as_json: JsonFlag = False) -> None:
    """One task and every attempt of it: the six facts, stage, error."""
    from aira_core.gateway.ledger import checked_task_id

    task = checked_task_id(task)  # before anything else: it is echoed in every answer
    ledger = _ledger(must_exist=False)
    if ledger is None:
        from aira_core.diagnostics import AiraError

        raise AiraError("LEDGER_TASK_UNKNOWN", f"no gateway task {task}: there is no ledger yet")
    facts = ledger.task(task)
    attempts = ledger.attempts(task)
    if as_json:
        _print_json({"task": facts.to_wire(), "attempts": [a.to_wire() for a in attempts]})
        return
    typer.echo(
        f"{facts.id}: {facts.human_state} (status {facts.status}, revision {facts.revision})"
    )
    if facts.retry_of:
        typer.echo(f"retries {facts.retry_of}")
    if facts.handled_by_retry:
        typer.echo(f"handled by the retry {facts.handled_by_retry}")
    usages = [_usage(a) for a in attempts]
    _table(
        "Attempts",
        [
            "step", "#", "model", "stage", "acceptance", "outcome", "delivery", "in", "out",
            "USD", "error",
        ],
        [
            [
                str(a.step),
                str(a.ordinal),
                printable(a.model),
                a.stage,
                str(a.acceptance),
                str(a.outcome),
                str(a.delivery_state),
                str(u.input_tokens),
                str(u.output_tokens),
                f"{u.cost_usd:.4f}",
                printable(_error_line(a.error)),
            ]
            for a, u in zip(attempts, usages, strict=True)
        ],
    )  # fmt: skip
    from aira_core.extensions import Usage

    total = sum(usages, Usage())
    cached = total.cache_hit_tokens + total.cache_miss_tokens
    share = f" ({total.cache_hit_tokens / cached:.0%} cache hits)" if cached else ""
    typer.echo(
        f"delivered usage: in {total.input_tokens} tok{share}, out {total.output_tokens} "
        f"(reasoning {total.reasoning_tokens}), ${total.cost_usd:.4f}"
    )


@tasks_app.command("retry")
def tasks_retry(
    task: TaskArgument,
    informed: Annotated[
        bool,
        typer.Option(
            "--informed",
            help="Say you know: the provider may have processed (and charged) the step "
            "already; submitting it again may be charged again.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """An informed retry: a new task linked to TASK, on which a resumed run (`aira run
    --resume RUN_DIR`) submits the step again. TASK keeps its facts. Asks for --informed: it
    may be charged twice."""
    from aira_core.diagnostics import AiraError
    from aira_core.gateway.ledger import checked_task_id

    task = checked_task_id(task)  # before anything else: it is echoed in every answer
    if not informed:
        raise AiraError(
            "GATEWAY_RETRY_UNCONFIRMED",
            f"retrying {task} may charge the step again (the provider may have processed it); "
            "check with the provider, then confirm with --informed",
        )
    ledger = _ledger(must_exist=False)
    if ledger is None:
        raise AiraError("LEDGER_TASK_UNKNOWN", f"no gateway task {task}: there is no ledger yet")
    new = ledger.informed_retry(task)
    if as_json:
        _print_json({"task": new.to_wire(), "retryOf": task})
        return
    typer.echo(f"{new.id} retries {task}; `aira run --resume RUN_DIR` continues the run on it")


def _usage(attempt: Any) -> Any:
    """The usage of an attempt's delivered reply (none delivered: nothing reported)."""
    from aira_core.extensions import Usage

    reply = attempt.reply if isinstance(attempt.reply, dict) else {}
    usage = reply.get("usage")
    return Usage.from_wire(usage if isinstance(usage, dict) else {})


def _error_line(error: Any) -> str:
    if not error:
        return ""
    return f"{error.get('code') or error.get('category') or ''}: {error.get('message') or ''}"[:120]
