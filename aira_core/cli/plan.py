"""``aira plan``: composite plans, checked (no kernel) and applied (check, propose,
preview, validate, commit)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from aira_core.cli._options import (
    BranchOption,
    JsonFlag,
    KernelOption,
    StoreOption,
    _kernel,
    _repository,
)
from aira_core.cli._output import _console, _print_diagnostics, _print_json, _read_json_file

plan_app = typer.Typer(help="Composite plans: check and apply.", no_args_is_help=True)


def _load_model(path: Path, model: Any, what: str) -> Any:
    from pydantic import ValidationError

    from aira_core.diagnostics import AiraError

    try:
        return model.model_validate(_read_json_file(path, what), by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise AiraError(
            f"{what.upper().replace(' ', '_')}_INVALID",
            f"{path.name}: {first['msg']} at /{where} ({exc.error_count()} errors)",
        ) from None


def _plan_context(store: Path | None, branch: str, grant: Path | None, intent: Path | None) -> Any:
    from aira_core.catalog.catalog import build_catalog
    from aira_core.contracts.capability import SessionGrant
    from aira_core.contracts.plan import IntentFrame
    from aira_core.runtime.plan import LOCAL_GRANT, PlanContext

    catalog = build_catalog()
    repo = _repository(store)
    return PlanContext(
        catalog=catalog,
        repository=repo,
        branch=branch,
        grant=_load_model(grant, SessionGrant, "grant") if grant else LOCAL_GRANT,
        intent=_load_model(intent, IntentFrame, "intent frame") if intent else None,
    )


GrantOption = Annotated[
    Path | None, typer.Option("--grant", help="Session Grant JSON (default: the local user's).")
]
IntentOption = Annotated[Path | None, typer.Option("--intent", help="Intent Frame JSON.")]


@plan_app.command("check")
def plan_check(
    plan: Annotated[Path, typer.Argument(help="Plan JSON.")],
    branch: BranchOption = "main",
    grant: GrantOption = None,
    intent: IntentOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Run plan.check: every static check, no kernel call. Exit 1 if the plan fails."""
    from aira_core.contracts.plan import Plan
    from aira_core.runtime.plan import check_plan

    the_plan = _load_model(plan, Plan, "plan")
    ctx = _plan_context(store, branch, grant, intent)
    try:
        report, _ = check_plan(the_plan, ctx)
    finally:
        ctx.repository.close()
    if as_json:
        _print_json(report.to_wire())
    elif report.ok:
        typer.echo(f"{report.plan_id}: ok")
    else:
        from rich.markup import escape

        _console().print(
            f"[red]{len(report.diagnostics)} finding(s)[/red] "
            f"(first failing step: {escape(str(report.failed_step))})"
        )
        _print_diagnostics(report.diagnostics)
    if not report.ok:
        raise typer.Exit(1)


@plan_app.command("apply")
def plan_apply(
    plan: Annotated[Path, typer.Argument(help="Plan JSON.")],
    branch: BranchOption = "main",
    grant: GrantOption = None,
    intent: IntentOption = None,
    kernel: KernelOption = None,
    publish: Annotated[
        bool, typer.Option("--publish", help="Publish the task branch to main afterwards.")
    ] = False,
    approve: Annotated[
        bool,
        typer.Option(
            "--approve",
            help="Approve the plan's risk and the publish, if the grant asks for approval.",
        ),
    ] = False,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """check → propose → preview → validate → commit; prints the observation envelope.

    A task branch that does not exist yet is created at the plan's base revision. Exit 1
    unless the envelope's status is success.
    """
    from aira_core.contracts.plan import Plan

    the_plan = _load_model(plan, Plan, "plan")
    chosen = _kernel(kernel, "a plan is previewed and validated on a kernel")
    ctx = _plan_context(store, branch, grant, intent)
    _apply_and_report(ctx, chosen, the_plan, publish=publish, approve=approve, as_json=as_json)


def _apply_and_report(
    ctx: Any, kernel: Any, the_plan: Any, *, publish: bool, approve: bool, as_json: bool
) -> None:
    """Run a plan through the transaction and print its envelope (the repository is closed
    afterwards); exit 1 unless it succeeded."""
    from aira_core.runtime.transaction import Transaction

    try:
        request_id = f"req:{the_plan.plan_id().split(':')[-1][:16]}"
        envelope = Transaction(ctx, kernel).apply(
            the_plan, request_id, publish=publish, approved=approve
        )
    finally:
        ctx.repository.close()
    if as_json:
        _print_json(envelope.to_wire())
    else:
        from rich.markup import escape

        console = _console()
        console.print(escape(f"{envelope.status}: {envelope.observed_revision}"), soft_wrap=True)
        for key in ("stage", "failedStep", "rev", "published"):
            if envelope.data.get(key):
                console.print(escape(f"  {key}: {envelope.data[key]}"), soft_wrap=True)
        _print_diagnostics(envelope.diagnostics)
    if envelope.status != "success":
        raise typer.Exit(1)
