"""``aira eval``: text-to-CAD task suites (docs/eval.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from aira_core.cli._options import JsonFlag, KernelOption, _catalog, _kernel, command_group
from aira_core.cli._output import _print_json, _table

eval_app = command_group("Text-to-CAD task suites: verify a suite's references.")

SuiteArgument = Annotated[
    str,
    typer.Argument(help="A bundled suite's name (basic) or the path of an aira.eval-suite/1 file."),
]


@eval_app.command("verify")
def eval_verify(
    suite: SuiteArgument,
    task: Annotated[
        list[str] | None, typer.Option("--task", help="Only this task (repeat for more).")
    ] = None,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Build every task's reference plan on the kernel, in a throwaway store, and score the
    part by the task's own checks (and its volume against the closed form, where the task
    gives one): what a suite's author runs to show that every check can be met. Exit 1
    unless every reference passes."""
    from aira_core.diagnostics import AiraError
    from aira_core.eval.reference import verify
    from aira_core.eval.suite import EVAL_SUITE_INVALID, load_suite

    the_suite = load_suite(suite)
    only = set(task) if task else None
    if only is not None:
        unknown = sorted(only - {t.id for t in the_suite.tasks})
        if unknown:
            raise AiraError(
                EVAL_SUITE_INVALID, f"{the_suite.name} has no task {', '.join(map(repr, unknown))}"
            )
    chosen = _kernel(kernel, "a reference is built on a kernel")
    results = verify(the_suite, _catalog(quiet=as_json), chosen, only=only)
    ok = all(r.ok for r in results)
    if as_json:
        _print_json(
            {
                "format": "aira.eval-verify/1",
                "suite": the_suite.name,
                "ok": ok,
                "tasks": [r.to_wire() for r in results],
            }
        )
    else:
        rows = []
        for r in results:
            failing = [o for o in r.outcomes if not o.passed]
            cf = r.closed_form
            rows.append(
                [
                    r.task,
                    "ok" if r.ok else "FAILED",
                    r.problem or (f"{failing[0].check}: {failing[0].message}" if failing else ""),
                    ""
                    if cf is None or cf["relativeError"] is None
                    else f"{cf['relativeError']:.1e}",
                ]
            )
        _table(
            f"{the_suite.name}: {sum(r.ok for r in results)}/{len(results)} references pass",
            ["task", "reference", "first failing check", "closed form (rel. error)"],
            rows,
        )
    if not ok:
        raise typer.Exit(1)
