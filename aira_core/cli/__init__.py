"""The ``aira`` command line.

Only typer is imported at the top: each command imports what it needs, so ``aira --help``
stays fast and never loads a plugin. Expected failures print ``error: CODE: message`` and
exit 1; there is never a traceback unless ``AIRA_DEBUG=1``.

One module per command group; this one holds the command table, in the order
``aira --help`` lists it, and the entry point.
"""

from __future__ import annotations

import sys

import typer

from aira_core.cli import bench, catalog, model, plan, plugins, query, run, schema, trust
from aira_core.cli._output import _error_json, _failure, _json_requested

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
app.command("query")(query.query_cmd)
app.command("schema")(schema.schema_cmd)
app.add_typer(catalog.catalog_app, name="catalog")
app.add_typer(trust.trust_app, name="trust")
app.add_typer(model.model_app, name="model")
app.add_typer(plan.plan_app, name="plan")
app.add_typer(bench.bench_app, name="bench")
app.add_typer(run.trace_app, name="trace")


def main() -> None:
    """Console-script entry point: expected errors get a code and a message, no traceback.

    Every failure prints ``error: CODE: message`` on stderr (one line per problem) and, when
    --json was asked for, ``{"error": Diagnostic}`` on stdout (``"errors"`` too, when there
    are several). Exit 1 for a refused input, 2 for a usage error (or a bug).
    """
    args = sys.argv[1:]
    try:
        # Not standalone: typer's usage errors reach us instead of a Rich box without a code.
        status = app(args=args, prog_name="aira", standalone_mode=False)
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as typer does
            if exc.format_message():  # typer's Rich help printed itself already
                exc.show()
            sys.exit(exc.exit_code)
        diagnostics, status = _failure(exc)
        from aira_core.diagnostics import redact

        for d in diagnostics:
            typer.echo(f"error: {redact(str(d))}", err=True)
        if _json_requested(args):
            typer.echo(_error_json(diagnostics))
    sys.exit(status if isinstance(status, int) else 0)
