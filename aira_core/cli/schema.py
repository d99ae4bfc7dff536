"""``aira schema``: the generated JSON Schema of a contract."""

from __future__ import annotations

from typing import Annotated

import typer

from aira_core.cli._output import _print_json


def schema_cmd(
    name: Annotated[
        str | None, typer.Argument(help="Contract name; omit to list the names.")
    ] = None,
) -> None:
    """Print the generated JSON Schema of a contract (e.g. capability-descriptor)."""
    from aira_core.schemas import DOCUMENTS, SCHEMAS, json_schema

    if name is None:
        for n in sorted({*SCHEMAS, *DOCUMENTS}):
            typer.echo(n)
        return
    _print_json(json_schema(name))
