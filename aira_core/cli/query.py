"""``aira query``: an admitted query capability, run on a revision."""

from __future__ import annotations

from typing import Annotated

import typer

from aira_core.cli._options import JsonFlag, KernelOption, StoreOption, _kernel, _repository, _rev
from aira_core.cli._output import _json_text, _loads, _print_diagnostics, _print_json


def query_cmd(
    name: Annotated[str, typer.Argument(help="cap:query.massProperties@1 or massProperties.")],
    args: Annotated[str, typer.Option("--args", help="Arguments as JSON.")] = "{}",
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run an admitted query capability on a revision (the head of main by default)."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.contracts.capability import CapabilityKind, find_capability
    from aira_core.diagnostics import AiraError

    arguments = _loads(args, "--args", "ARGS_INVALID")
    if not isinstance(arguments, dict):
        raise AiraError("ARGS_INVALID", "--args must be a JSON object")
    descriptors = build_catalog().capabilities()
    cap, known = find_capability(descriptors, name, CapabilityKind.MODEL_QUERY)
    if cap is None:
        raise AiraError(
            "QUERY_UNKNOWN", f"no admitted query {name!r}; known: " + (", ".join(known) or "none")
        )
    ref = descriptors[cap].target[1]
    chosen = _kernel(kernel, f"running {cap}")
    with _repository(store) as repo:
        at = _rev(repo, rev)
        aliases = repo.aliases(at)
        # Body references are aliases to the model; the kernel takes ids.
        result = chosen.query(repo.document(at), ref, aliases.resolve_values(arguments))
    body = {
        "format": "aira.query/1",
        "capability": cap,
        "rev": at,
        "data": dict(result.data),
        "diagnostics": [d.model_dump(mode="json", exclude_none=True) for d in result.diagnostics],
    }
    if as_json:
        _print_json(body)
    else:
        typer.echo(_json_text(body["data"]))
        _print_diagnostics(list(result.diagnostics))
    if result.diagnostics:
        raise typer.Exit(1)
