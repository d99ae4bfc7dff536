"""The ``aira`` command line.

Only typer is imported at the top: each command imports what it needs, so ``aira --help``
stays fast and never loads a plugin. Expected failures print ``error: CODE: message`` and
exit 1; there is never a traceback unless ``AIRA_DEBUG=1``. :func:`execute` runs the command
line and returns its status; :func:`main`, the console script, then ends the process.

One module per command group; this one holds the command table, in the order
``aira --help`` lists it, and the entry point.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, NoReturn

import typer

from aira_core.cli import (
    bench,
    catalog,
    mcp,
    model,
    plan,
    plugins,
    query,
    report,
    run,
    schema,
    tasks,
    trust,
)
from aira_core.cli._output import _error_json, _failure, _json_requested, printable

INTERRUPTED = 130
"""The exit status of a command the user stopped with Ctrl-C (128 + SIGINT)."""

app = typer.Typer(
    rich_markup_mode=None,  # plain help, as every group (_options.command_group)
    name="aira",
    help="Aira: the host between AI models and CAD kernels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("plugins")(plugins.plugins_cmd)
app.command("run")(run.run_cmd)
app.command("demo")(run.demo_cmd)
app.command("report")(report.report_cmd)
app.command("query")(query.query_cmd)
app.command("schema")(schema.schema_cmd)
app.add_typer(catalog.catalog_app, name="catalog")
app.add_typer(trust.trust_app, name="trust")
app.add_typer(model.model_app, name="model")
app.add_typer(plan.plan_app, name="plan")
app.add_typer(bench.bench_app, name="bench")
app.add_typer(run.trace_app, name="trace")
app.add_typer(tasks.tasks_app, name="tasks")
app.add_typer(mcp.mcp_app, name="mcp")


def execute(args: list[str] | None = None) -> int:
    """Run the command line on ``args`` (default: ``sys.argv[1:]``); its exit status.

    Expected errors get a code and a message, no traceback: every failure prints ``error:
    CODE: message`` on stderr (one line per problem) and, when --json was asked for,
    ``{"error": Diagnostic}`` on stdout (``"errors"`` too, when there are several). Exit 1
    for a refused input, 2 for a usage error (or a bug), 130 for Ctrl-C.
    """
    args = sys.argv[1:] if args is None else args
    try:
        # Not standalone: typer's usage errors reach us instead of a Rich box without a code.
        status = app(args=args, prog_name="aira", standalone_mode=False)
    except SystemExit as exc:  # typer's own exits (e.g. --help): their status
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except KeyboardInterrupt:
        status = INTERRUPTED
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as typer does
            if exc.format_message():  # typer's Rich help printed itself already
                exc.show()
            return exc.exit_code
        diagnostics, status = _failure(exc)
        _report(diagnostics, args)
        return status
    if status == INTERRUPTED:
        # the user's Ctrl-C (typer answers a KeyboardInterrupt in a command with 130; a
        # plugin's or a kernel's own KeyboardInterrupt is caught where it runs)
        from aira_core.diagnostics import Diagnostic

        _report([Diagnostic(code="ABORTED", message="interrupted")], args)
    return status if isinstance(status, int) else 0


def _report(diagnostics: list[Any], args: list[str]) -> None:
    from aira_core.diagnostics import redact

    for d in diagnostics:  # a subject or message may hold what a user or model wrote
        typer.echo(f"error: {printable(redact(str(d)))}", err=True)
    if _json_requested(args):
        typer.echo(_error_json(diagnostics))


def main() -> None:
    """Console-script entry point (``aira``, ``python -m aira_core.cli``): :func:`execute`,
    then the process ends with its status at once.

    At once: the interpreter's shutdown would wait for every non-daemon thread (a plugin's
    thread would hang ``aira``) and run every ``atexit`` handler (a plugin's ``os._exit(0)``
    would turn a failure into success). The host's own output is flushed and child
    processes it started (the OCCT kernel's worker) are stopped and its SQLite databases
    closed first (a WAL database's last close folds the log back into the file and removes
    its ``-wal``/``-shm``, so a refused command leaves none behind); nothing else of the
    host needs the interpreter's shutdown.
    """
    _exit(execute())


def _exit(status: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe (`aira … | head`): nothing left to flush to
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if "aira_core.databases" in sys.modules:  # imported only by whoever opened one
        from aira_core.databases import close_all

        close_all()
    if "multiprocessing" in sys.modules:  # imported only by whoever started a child
        import multiprocessing

        for child in multiprocessing.active_children():
            child.kill()
    os._exit(status)
