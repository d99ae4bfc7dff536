"""Workflow steps of a plan, expanded into ordinary steps before ``plan.check`` runs.

A plan step naming a ``workflow`` capability is replaced by the steps of its signed
definition (:class:`~aira_core.contracts.workflow.WorkflowDefinition`, in the package
manifest under the descriptor's ``workflowRef``): the step's arguments, with the
descriptor's defaults, are checked against its input schema and become the parameters of
the template's expressions (:mod:`aira_core.catalog.expressions`). Expanded step ids are
``<workflow step id>.<template step id>``; references between template steps are rewritten
to them, and a later plan step's ``{"step": "<workflow step id>"}`` (or ``dependsOn``) to
the definition's ``result`` step (all its steps). The expansion is a pure function of the
plan step and the definition: the same inputs give the same steps, so the same plan id.

Codes: ``WORKFLOW_EXPANSION_TOO_LARGE`` (more than :data:`MAX_WORKFLOW_STEPS` workflow
steps, or more than :data:`MAX_EXPANDED_STEPS` steps once expanded),
``WORKFLOW_DEFINITION_MISSING`` (no definition for the ref in the catalog),
``WORKFLOW_TEMPLATE_INVALID`` (a template that cannot expand: an unknown template step
reference, an expanded id that is not a valid step id, a computed label that is not a
string), the ``EXPRESSION_*`` codes of the expression language, and ``PLAN_ARGS_INVALID``
for workflow arguments that break the descriptor's input schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from aira_core.catalog.capabilities import CapabilityEntry
from aira_core.catalog.expressions import Budget, ExpressionError, evaluate
from aira_core.contracts.capability import CapabilityKind
from aira_core.contracts.plan import Plan, PlanStep
from aira_core.contracts.workflow import WorkflowDefinition
from aira_core.schema_errors import schema_errors

WORKFLOW_DEFINITION_MISSING = "WORKFLOW_DEFINITION_MISSING"
WORKFLOW_TEMPLATE_INVALID = "WORKFLOW_TEMPLATE_INVALID"
WORKFLOW_EXPANSION_TOO_LARGE = "WORKFLOW_EXPANSION_TOO_LARGE"

MAX_WORKFLOW_STEPS = 256
"""Workflow steps one plan may have (each costs up to ``MAX_STEPS`` evaluation steps)."""
MAX_EXPANDED_STEPS = 4096
"""Steps a plan may have once its workflow steps are expanded."""


@dataclass
class Finding:
    code: str
    message: str
    pointer: tuple[str | int, ...]
    step: str


@dataclass
class Expansion:
    """A plan with its workflow steps expanded."""

    plan: Plan
    expansions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Workflow step id → the expanded steps (wire form), as the report shows them."""
    origin: list[tuple[int, int | None]] = field(default_factory=list)
    """For each step of ``plan``: the index of the submitted step it came from and its
    position in that workflow's expansion (None: not from a workflow)."""
    findings: list[Finding] = field(default_factory=list)

    @property
    def expanded(self) -> bool:
        return bool(self.expansions)


class _TemplateError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _render(
    value: Any, env: Mapping[str, Any], ids: Mapping[str, str], where: str, budget: Budget
) -> Any:
    """``value`` with its templates filled in (``$expr``, ``$step``, ``{"step": <template
    id>}``); :class:`_TemplateError` or :class:`ExpressionError` otherwise."""
    if isinstance(value, dict):
        if len(value) == 1 and "$expr" in value:
            try:
                return evaluate(value["$expr"], env, budget)
            except ExpressionError as exc:
                raise _TemplateError(
                    exc.code, f"{where}: {{$expr: {str(value['$expr'])[:120]!r}}}: {exc.message}"
                ) from None
        if len(value) == 1 and "$step" in value:
            ref = value["$step"]
            if not isinstance(ref, str) or ref not in ids:
                raise _TemplateError(
                    WORKFLOW_TEMPLATE_INVALID,
                    f"{where}: $step {str(ref)[:80]!r} is not an earlier template step",
                )
            return ids[ref]
        if len(value) == 1 and isinstance(value.get("step"), str) and value["step"] in ids:
            return {"step": ids[value["step"]]}
        return {k: _render(v, env, ids, f"{where}/{k}", budget) for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, env, ids, f"{where}/{i}", budget) for i, v in enumerate(value)]
    return value


def _expand_one(
    step: PlanStep,
    entry: CapabilityEntry,
    definition: WorkflowDefinition,
    depends_on: list[str],
) -> tuple[list[PlanStep], str | None]:
    """The steps ``step`` expands to and the id of its result step."""
    d = entry.descriptor
    params = {**d.defaults, **step.args}
    env = {**definition.tables, **params}  # lint keeps parameter and table names apart
    ids: dict[str, str] = {}
    out: list[PlanStep] = []
    budget = Budget()
    for t in definition.steps:
        where = f"template step {t.id!r}"
        if t.when is not None:
            try:
                keep = evaluate(t.when, env, budget)
            except ExpressionError as exc:
                raise _TemplateError(
                    exc.code, f"{where} when {t.when[:120]!r}: {exc.message}"
                ) from None
            if not isinstance(keep, bool):
                raise _TemplateError(WORKFLOW_TEMPLATE_INVALID, f"{where}: when gives no boolean")
            if not keep:
                continue
        args = _render(t.args, env, ids, f"{where} args", budget)
        # "$label": the workflow step's own label (so the body it makes is b:<that label>)
        label = (
            step.label
            if t.label == "$label"
            else _render(t.label, env, ids, f"{where} label", budget)
        )
        if label is not None and not isinstance(label, str):
            raise _TemplateError(WORKFLOW_TEMPLATE_INVALID, f"{where}: the label is no string")
        deps = [ids[x] for x in t.depends_on if x in ids] + depends_on
        sid = f"{step.id}.{t.id}"
        try:
            out.append(
                PlanStep(id=sid, capability=t.capability, args=args, label=label, depends_on=deps)
            )
        except ValidationError as exc:
            raise _TemplateError(
                WORKFLOW_TEMPLATE_INVALID,
                f"{where}: expanded step {sid[:80]!r} is not a valid plan step "
                f"({exc.errors(include_url=False)[0]['msg']})",
            ) from None
        ids[t.id] = sid
    if not out:
        return out, None
    result = ids.get(definition.result or "", out[-1].id)
    return out, result


def _rewrite_refs(value: Any, results: Mapping[str, str | None]) -> Any:
    """A later step's ``{"step": <workflow step id>}`` as the workflow's result step."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("step"), str) and value["step"] in results:
            return {"step": results[value["step"]] or value["step"]}
        return {k: _rewrite_refs(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite_refs(v, results) for v in value]
    return value


def expand_plan(
    plan: Plan,
    capabilities: Mapping[str, CapabilityEntry],
    workflows: Mapping[str, WorkflowDefinition],
) -> Expansion:
    """``plan`` with every workflow step expanded; never raises for bad input (findings)."""
    out = Expansion(plan)
    workflow_steps = [
        i
        for i, s in enumerate(plan.steps)
        if (e := capabilities.get(s.capability)) is not None
        and e.descriptor.kind is CapabilityKind.WORKFLOW
    ]
    if len(workflow_steps) > MAX_WORKFLOW_STEPS:
        out.findings.append(
            Finding(
                WORKFLOW_EXPANSION_TOO_LARGE,
                f"the plan has {len(workflow_steps)} workflow steps; at most {MAX_WORKFLOW_STEPS}",
                ("steps", workflow_steps[MAX_WORKFLOW_STEPS]),
                plan.steps[workflow_steps[MAX_WORKFLOW_STEPS]].id,
            )
        )
        return out
    steps: list[PlanStep] = []
    results: dict[str, str | None] = {}
    members: dict[str, list[str]] = {}
    for i, step in enumerate(plan.steps):
        entry = capabilities.get(step.capability)
        deps = [x for d in step.depends_on for x in members.get(d, [d])]
        if entry is None or entry.descriptor.kind is not CapabilityKind.WORKFLOW:
            rewritten = step
            if results or deps != step.depends_on:
                rewritten = step.model_copy(
                    update={"args": _rewrite_refs(step.args, results), "depends_on": deps}
                )
            steps.append(rewritten)
            out.origin.append((i, None))
            continue
        ref = entry.descriptor.workflow_ref or ""
        definition = workflows.get(ref)
        if definition is None:
            out.findings.append(
                Finding(
                    WORKFLOW_DEFINITION_MISSING,
                    f"{step.capability}: no workflow definition {ref} in the catalog",
                    ("steps", i, "capability"),
                    step.id,
                )
            )
            continue
        errors = schema_errors(entry.input_schema, {**entry.descriptor.defaults, **step.args})
        if errors:
            for err in errors[:20]:
                out.findings.append(
                    Finding(
                        "PLAN_ARGS_INVALID",
                        f"{step.capability}: {err.message[:360]}",
                        ("steps", i, "args", *err.path),
                        step.id,
                    )
                )
            continue
        try:
            expanded, result = _expand_one(step, entry, definition, deps)
        except _TemplateError as exc:
            out.findings.append(
                Finding(
                    exc.code,
                    f"workflow step {step.id!r} ({step.capability}): {exc.message}",
                    ("steps", i, "args"),
                    step.id,
                )
            )
            continue
        results[step.id] = result
        members[step.id] = [s.id for s in expanded]
        out.expansions[step.id] = [s.to_wire() for s in expanded]
        for k, s in enumerate(expanded):
            steps.append(s)
            out.origin.append((i, k))
    # only a plan that grew by expansion: a long plan of ordinary steps is plan.check's
    if out.expansions and len(steps) > MAX_EXPANDED_STEPS and not out.findings:
        out.findings.append(
            Finding(
                WORKFLOW_EXPANSION_TOO_LARGE,
                f"the expanded plan has {len(steps)} steps; at most {MAX_EXPANDED_STEPS}",
                ("steps",),
                "",
            )
        )
    if out.expansions and not out.findings:
        out.plan = plan.model_copy(update={"steps": steps})
    return out


def workflow_index(manifests: Any) -> dict[str, WorkflowDefinition]:
    """Every workflow definition of ``manifests`` (package manifests) by its ref."""
    return {ref: w for m in manifests for ref, w in m.workflows.items()}
