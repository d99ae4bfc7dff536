"""``aira gateway``: the tasks and attempts of the provider gateway's ledger, in the states a
person acts on (docs/gateway.md), and the informed retry that is the only way a step whose
submission may have been charged is submitted again."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aira_core.cli._options import JsonFlag, command_group
from aira_core.cli._output import _print_json, _table, printable

gateway_app = command_group("The provider gateway's ledger: tasks, attempts, informed retries.")

TaskArgument = Annotated[str, typer.Argument(help="A task id (task_…).")]


def _ledger(*, must_exist: bool) -> Any:
    """The ledger in AIRA_HOME; None when there is none yet and reading is all we do (a
    listing must not create a database)."""
    from aira_core.gateway.ledger import AttemptLedger, default_ledger_path

    path = default_ledger_path()
    if not must_exist and not path.exists():
        return None
    return AttemptLedger.open(path)


@gateway_app.command("tasks")
def gateway_tasks(as_json: JsonFlag = False) -> None:
    """Every task, newest last: its human state, the legacy status, the model of its latest
    attempt, and whether a retry handled it."""
    ledger = _ledger(must_exist=False)
    tasks = [] if ledger is None else ledger.tasks()
    if as_json:
        _print_json({"format": "aira.gateway-tasks/1", "tasks": [t.to_wire() for t in tasks]})
        return
    if not tasks:
        typer.echo("no gateway tasks")
        return
    _table(
        "Gateway tasks",
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


@gateway_app.command("show")
def gateway_show(task: TaskArgument, as_json: JsonFlag = False) -> None:
    """One task and every attempt of it: the six facts, stage, error."""
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
    _table(
        "Attempts",
        ["step", "#", "model", "stage", "acceptance", "outcome", "delivery", "error"],
        [
            [
                str(a.step),
                str(a.ordinal),
                printable(a.model),
                a.stage,
                str(a.acceptance),
                str(a.outcome),
                str(a.delivery_state),
                printable(_error_line(a.error)),
            ]
            for a in attempts
        ],
    )


@gateway_app.command("retry")
def gateway_retry(
    task: TaskArgument,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Confirm: the provider may have processed (and charged) the step already; "
            "submitting it again may be charged again.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """An informed retry: a new task linked to TASK, on which a resumed run submits the step
    again. TASK keeps its facts. Asks for --yes: it may be charged twice."""
    from aira_core.diagnostics import AiraError

    if not yes:
        raise AiraError(
            "GATEWAY_RETRY_UNCONFIRMED",
            f"retrying {task} may charge the step again (the provider may have processed it); "
            "check with the provider, then confirm with --yes",
        )
    ledger = _ledger(must_exist=False)
    if ledger is None:
        raise AiraError("LEDGER_TASK_UNKNOWN", f"no gateway task {task}: there is no ledger yet")
    new = ledger.informed_retry(task)
    if as_json:
        _print_json({"task": new.to_wire(), "retryOf": task})
        return
    typer.echo(f"{new.id} retries {task}; resume the run to continue on it")


def _error_line(error: Any) -> str:
    if not error:
        return ""
    return f"{error.get('code') or error.get('category') or ''}: {error.get('message') or ''}"[:120]
