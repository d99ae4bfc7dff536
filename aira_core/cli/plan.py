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
    _context,
    _kernel,
    _repository,
    _write,
    command_group,
)
from aira_core.cli._output import (
    _console,
    _print_diagnostics,
    _print_json,
    _read_json_file,
    _report_envelope,
)

plan_app = command_group("Composite plans: check, apply and repair.")


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


def _plan_context(
    store: Path | None, grant: Path | None, intent: Path | None, *, quiet: bool = False
) -> Any:
    from aira_core.contracts.capability import SessionGrant
    from aira_core.contracts.plan import IntentFrame

    the_grant = _load_model(grant, SessionGrant, "grant") if grant else None
    the_intent = _load_model(intent, IntentFrame, "intent frame") if intent else None
    return _context(_repository(store), grant=the_grant, intent=the_intent, quiet=quiet)


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
    ctx = _plan_context(store, grant, intent, quiet=as_json)
    try:
        report, _ = check_plan(the_plan, ctx, branch=branch)
    finally:
        ctx.repository.close()
    if as_json:
        _print_json(report.to_wire())
    elif report.ok:
        typer.echo(f"{report.plan_id}: ok")
        _print_expansions(report.expansions)
        _print_diagnostics(report.diagnostics)  # warnings: they do not fail the plan
    else:
        from rich.markup import escape

        _console().print(
            f"[red]{len(report.diagnostics)} finding(s)[/red] "
            f"(first failing step: {escape(str(report.failed_step))})"
        )
        _print_diagnostics(report.diagnostics)
    if not report.ok:
        raise typer.Exit(1)


def _print_expansions(expansions: dict[str, list[dict[str, Any]]] | None) -> None:
    """What each workflow step expanded to (the steps that were checked), one line a step:
    a user sees what the signed definition made of the arguments without --json."""
    import json

    from aira_core.cli._output import printable

    for workflow_step, steps in (expansions or {}).items():
        typer.echo(printable(f"workflow step {workflow_step} expanded to:"))
        for step in steps:
            args = json.dumps(step.get("args", {}), separators=(",", ":"), ensure_ascii=False)
            shown = args if len(args) <= 160 else args[:157] + "..."
            typer.echo(printable(f"  {step['id']}  {step['capability']}  {shown}"))


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
    ctx = _plan_context(store, grant, intent, quiet=as_json)
    try:
        request_id = f"req:{the_plan.plan_id().split(':')[-1][:16]}"
        envelope = _write(ctx, chosen).apply(
            the_plan, request_id, branch=branch, publish=publish, approved=approve
        )
    finally:
        ctx.repository.close()
    _report_envelope(envelope, as_json=as_json)


@plan_app.command("repair")
def plan_repair(
    plan: Annotated[Path, typer.Argument(help="The refused plan JSON.")],
    envelope: Annotated[
        Path, typer.Argument(help="The envelope that refused it (`aira plan apply --json`).")
    ],
    repair: Annotated[str, typer.Option("--repair", help="The repair capability id.")],
    step: Annotated[
        str | None, typer.Option("--step", help="The failing step (default: the first fit).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the candidate plan here.")
    ] = None,
    store: StoreOption = None,
) -> None:
    """Make a repair's candidate plan from a refused plan and its diagnostics; writes
    nothing to the store. Apply the candidate with `aira plan apply`."""
    from aira_core.contracts.plan import ObservationEnvelope, Plan
    from aira_core.diagnostics import AiraError
    from aira_core.runtime.repairs import REPAIR_NOT_APPLICABLE, candidate

    the_plan = _load_model(plan, Plan, "plan")
    refused = _load_model(envelope, ObservationEnvelope, "envelope")
    ctx = _plan_context(store, None, None)
    try:
        capabilities = ctx.capabilities
    finally:
        ctx.repository.close()
    # the first diagnostic this repair fits (its code, and the step asked for)
    fits = [d for d in refused.diagnostics if step is None or d.subject == step]
    last: AiraError | None = None
    for d in fits:
        try:
            made = candidate(capabilities, repair, the_plan, d)
            break
        except AiraError as exc:
            last = exc
            if exc.code != REPAIR_NOT_APPLICABLE:
                raise
    else:
        raise last or AiraError(REPAIR_NOT_APPLICABLE, "the envelope has no diagnostic to repair")
    if output is not None:
        import json

        output.write_text(json.dumps(made["plan"], indent=2) + "\n", encoding="utf-8")
    _print_json(made)
