"""Repairs (RFC-0002 §5.3 ``repairsDiagnostic``, §11.3): a refused plan's diagnostics name the
registered capabilities that repair their code, ``nextActions`` offers each with its
preconditions, and invoking one produces a **candidate**: the refused plan with the failing
step's arguments rewritten by the repair's declarative template (``patchTemplate``, whose
expressions :mod:`aira_core.catalog.expressions` evaluates over ``args``, ``expected`` and
``actual``). A repair never edits the model; its candidate is applied, if at all, as any plan
is, through the one write path (check → propose → preview → validate → commit).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aira_core.canonical import canonical_bytes
from aira_core.catalog.expressions import EXPRESSION_TYPE, Budget, ExpressionError, evaluate
from aira_core.contracts.capability import (
    REPAIR_TEMPLATE_NAMES,
    CapabilityKind,
    Predicate,
    RelationType,
    RepairTemplate,
)
from aira_core.contracts.plan import NextAction, Plan, PlanStep
from aira_core.diagnostics import AiraError, Diagnostic

REPAIR_UNKNOWN = "REPAIR_UNKNOWN"
REPAIR_NOT_APPLICABLE = "REPAIR_NOT_APPLICABLE"
REPAIR_TEMPLATE_FAILED = "REPAIR_TEMPLATE_FAILED"
REPAIR_NO_REFUSED_PLAN = "REPAIR_NO_REFUSED_PLAN"
"""Asked for a candidate before the task had any plan refused (nothing to repair yet)."""


# -- which repairs a diagnostic has, and the actions that offer them ---------------------------


def repairs_for(capabilities: Mapping[str, Any], code: str) -> list[str]:
    """The admitted capabilities whose ``repairsDiagnostic`` names ``code``, sorted."""
    return sorted(
        cap
        for cap, entry in capabilities.items()
        if code in entry.descriptor.relations.get(RelationType.REPAIRS_DIAGNOSTIC, [])
    )


def _template(entry: Any) -> RepairTemplate | None:
    d = entry.descriptor
    return d.patch_template if d.kind is CapabilityKind.REPAIR else None


def annotate(
    capabilities: Mapping[str, Any], diagnostics: Sequence[Diagnostic]
) -> tuple[list[Diagnostic], list[NextAction]]:
    """``diagnostics`` each with the registered repairs of its code (``repairs``), and the
    next actions that offer them: ``catalog.describe`` of each, and for a repair with a
    template the ``model.read`` call that produces its candidate, with its preconditions."""
    out: list[Diagnostic] = []
    actions: list[NextAction] = []
    for d in diagnostics:
        repairs = repairs_for(capabilities, d.code)
        out.append(d.model_copy(update={"repairs": repairs}) if repairs else d)
        for cap in repairs:
            actions.append(
                NextAction(operation="catalog.describe", capability=cap, reason=f"repairs {d.code}")
            )
            entry = capabilities[cap]
            if _template(entry) is None:
                continue
            on = {"code": d.code, **({"step": d.subject} if d.subject else {})}
            actions.append(
                NextAction(
                    operation="model.read",
                    capability=cap,
                    reason=f"candidate repair of {d.code}"
                    + (f" on step {d.subject!r}" if d.subject else ""),
                    args={"repair": cap, "diagnostic": on},
                    preconditions=[
                        *entry.descriptor.preconditions,
                        Predicate(id="diagnostic.present", args=on),
                    ],
                )
            )
    unique = {canonical_bytes(a.to_wire()): a for a in actions}  # one per repair and diagnostic
    return out, list(unique.values())


# -- producing a candidate ----------------------------------------------------------------------


def candidate(
    capabilities: Mapping[str, Any], cap: str, plan: Plan, diagnostic: Diagnostic
) -> dict[str, Any]:
    """The candidate repair ``cap`` makes of ``plan`` refused with ``diagnostic``: the same
    plan (same base revision) with the failing step's arguments set by the template. Pure:
    reads nothing, writes nothing. Raises :class:`AiraError` with ``REPAIR_UNKNOWN`` or
    ``REPAIR_NOT_APPLICABLE`` or ``REPAIR_TEMPLATE_FAILED``."""
    entry = capabilities.get(cap)
    template = _template(entry) if entry is not None else None
    if template is None:
        raise AiraError(REPAIR_UNKNOWN, f"{cap[:80]!r} is no admitted repair with a patch template")
    if diagnostic.code not in entry.descriptor.relations.get(RelationType.REPAIRS_DIAGNOSTIC, []):
        raise AiraError(
            REPAIR_NOT_APPLICABLE, f"{cap} does not repair {diagnostic.code}", subject=cap
        )
    index = next((i for i, s in enumerate(plan.steps) if s.id == diagnostic.subject), None)
    if index is None:
        raise AiraError(
            REPAIR_NOT_APPLICABLE,
            f"the diagnostic names no step of the plan (subject {diagnostic.subject!r})",
            subject=cap,
        )
    step = plan.steps[index]
    if template.applies_to and step.capability not in template.applies_to:
        raise AiraError(
            REPAIR_NOT_APPLICABLE,
            f"{cap} repairs steps of {', '.join(template.applies_to)}, "
            f"not step {step.id!r} of {step.capability}",
            subject=cap,
        )
    values = (dict(step.args), diagnostic.expected, diagnostic.actual)
    names = dict(zip(REPAIR_TEMPLATE_NAMES, values, strict=True))
    budget = Budget()  # one template's expressions share it, as one workflow step's do
    where = "when"
    try:
        if template.when is not None:
            holds = evaluate(template.when, names, budget)
            if not isinstance(holds, bool):
                raise ExpressionError(EXPRESSION_TYPE, "a condition is a boolean")
            if not holds:
                raise AiraError(
                    REPAIR_NOT_APPLICABLE,
                    f"{cap}: its condition {template.when[:120]!r} does not hold",
                )
        new: dict[str, Any] = {}
        for key, text in template.set.items():
            where = f"set {key}"
            new[key] = evaluate(text, names, budget)
    except ExpressionError as exc:
        raise AiraError(
            REPAIR_TEMPLATE_FAILED, f"{cap}: {where}: {exc.code}: {exc.message}", subject=cap
        ) from None
    changes = {k: {"from": step.args.get(k), "to": v} for k, v in new.items()}
    repaired = PlanStep.model_validate(
        {**step.to_wire(), "args": {**step.to_wire().get("args", {}), **new}}
    )
    steps = [*plan.steps[:index], repaired, *plan.steps[index + 1 :]]
    candidate_plan = plan.model_copy(update={"steps": steps})
    return {
        "repair": cap,
        "diagnostic": diagnostic.code,
        "step": step.id,
        "changes": changes,
        "summary": _summary(step.id, changes, template, names, entry.descriptor.summary),
        "planId": candidate_plan.plan_id(),
        "plan": candidate_plan.to_wire(),
    }


_USED = re.compile(r"\b(expected|actual)\.([A-Za-z_][A-Za-z0-9_]*)")


def _summary(
    step: str,
    changes: Mapping[str, Mapping[str, Any]],
    template: RepairTemplate,
    names: Mapping[str, Any],
    why: str,
) -> str:
    """What the candidate changes, from what, and why, in a sentence: each argument's old
    and new value with the template's expression, the diagnostic's values it used (the
    kernel's limit), then the repair's own summary (its margin and its reason)."""
    made = "; ".join(
        f"{key} {_shown(change['from'])} -> {_shown(change['to'])} = {template.set[key]}"
        for key, change in changes.items()
    )
    used = dict.fromkeys(m.group(0) for m in _USED.finditer(" ".join(template.set.values())))
    facts = []
    for name in used:
        scope, _, key = name.partition(".")
        value = names.get(scope)
        if isinstance(value, Mapping) and key in value:
            facts.append(f"{name} = {_shown(value[key])}")
    given = f", where {', '.join(facts)} (from the refusal)" if facts else ""
    return f"step {step!r}: {made}{given}. {why}"


def _shown(value: Any) -> str:
    if isinstance(value, Mapping) and set(value) <= {"value", "unit"} and "value" in value:
        return " ".join(str(value[k]) for k in ("value", "unit") if k in value)
    if isinstance(value, float):
        return f"{value:g}"
    return canonical_bytes(value).decode() if isinstance(value, Mapping | list) else str(value)
