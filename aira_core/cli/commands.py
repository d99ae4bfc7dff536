"""The ``aira`` command table, in the order ``aira --help`` lists it, and :func:`execute`.

Only typer is imported at the top: each command imports what it needs, so ``aira --help``
stays fast and never loads a plugin. Expected failures print ``error: CODE: message`` and
exit 1; there is never a traceback unless ``AIRA_DEBUG=1``. :func:`execute` runs the command
line and returns its status; :func:`aira_core.cli.main`, the console script, then ends the
process. One module per command group.
"""

from __future__ import annotations

import sys
from typing import Any

import typer

from aira_core.cli import (
    bench,
    catalog,
    evals,
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
app.add_typer(evals.eval_app, name="eval")
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
        return aborted(args)
    return status if isinstance(status, int) else 0


def aborted(args: list[str]) -> int:
    """Say that the user's Ctrl-C stopped ``aira *args`` (``ABORTED``); its exit status."""
    from aira_core.diagnostics import Diagnostic

    _report([Diagnostic(code="ABORTED", message="interrupted")], args)
    return INTERRUPTED


def _report(diagnostics: list[Any], args: list[str]) -> None:
    from aira_core.diagnostics import redact

    for d in diagnostics:  # a subject or message may hold what a user or model wrote
        typer.echo(f"error: {printable(redact(str(d)))}", err=True)
    if _json_requested(args):
        typer.echo(_error_json(diagnostics))
