"""``aira query``: an admitted query capability, run on a revision."""

from __future__ import annotations

from typing import Annotated

import typer

from aira_core.cli._options import (
    JsonFlag,
    KernelOption,
    StoreOption,
    _context,
    _kernel,
    _repository,
    _rev,
)
from aira_core.cli._output import _json_text, _loads, _print_diagnostics, _print_json


def query_cmd(
    name: Annotated[str, typer.Argument(help="cap:query.massProperties@1 or massProperties.")],
    args: Annotated[str, typer.Option("--args", help="Arguments as JSON.")] = "{}",
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run an admitted query capability on a revision (the head of main by default).

    It runs as every query does: admitted by the task runtime, checked against the grant
    and traced, on the installed kernel (the only one, or --kernel NAME)."""
    from aira_core.diagnostics import AiraError
    from aira_core.runtime.session import read_query

    arguments = _loads(args, "--args", "ARGS_INVALID")
    if not isinstance(arguments, dict):
        raise AiraError("ARGS_INVALID", "--args must be a JSON object")
    chosen = _kernel(kernel, f"running {name}")
    with _repository(store) as repo:
        envelope = read_query(
            _context(repo, quiet=as_json), chosen, name, arguments, rev=_rev(repo, rev)
        )
    if envelope.status == "blocked" or any(
        d.code in {"KERNEL_FAILED", "KERNEL_TIMEOUT"} for d in envelope.diagnostics
    ):
        # refused before the kernel, or a kernel that failed: the command's error, not a result
        first = envelope.diagnostics[0]
        raise AiraError(first.code, first.message)
    data = envelope.data
    body = {
        "format": "aira.query/1",
        "capability": data["query"],
        "rev": data["rev"],
        "data": data["result"],
        "diagnostics": [d.model_dump(mode="json", exclude_none=True) for d in envelope.diagnostics],
    }
    if as_json:
        _print_json(body)
    else:
        typer.echo(_json_text(body["data"]))
        _print_diagnostics(list(envelope.diagnostics))
    if envelope.diagnostics:
        raise typer.Exit(1)
