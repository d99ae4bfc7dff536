"""A suite's references built and measured on a kernel: each task's reference plan applied
to an empty model in a throwaway store, the part measured and scored by the task's own
checks, and its volume compared with the closed form where the task gives one. What a
suite's author (Aira's, or a vendor's) runs to show that every check can be met and was
measured rather than guessed (``aira eval verify``)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aira_core.eval.checks import Measures, Outcome, passed, score
from aira_core.eval.suite import EvalTask, Suite

CLOSED_FORM_REL_TOL = 1e-4
"""How close the kernel's volume of a reference must come to its closed form."""


@dataclass
class ReferenceResult:
    task: str
    built: bool
    outcomes: list[Outcome] = field(default_factory=list)
    measures: Measures | None = None
    closed_form: dict[str, Any] | None = None
    """``{"volume", "measured", "relativeError", "passed"}`` when the task gives one."""
    problem: str | None = None
    """Why the reference was not built (its plan's first diagnostic), or none given."""

    @property
    def ok(self) -> bool:
        cf_ok = self.closed_form is None or bool(self.closed_form["passed"])
        return self.built and passed(self.outcomes) and cf_ok

    def to_wire(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "ok": self.ok,
            "built": self.built,
            "problem": self.problem,
            "checks": [o.to_wire() for o in self.outcomes],
            "closedForm": self.closed_form,
            "measures": self.measures.to_wire() if self.measures else None,
        }


def verify(
    suite: Suite, catalog: Any, kernel: Any, *, only: set[str] | None = None
) -> list[ReferenceResult]:
    """Every task's reference (those in ``only``, when given) built on ``kernel`` with the
    admitted ``catalog``, each in a store of its own that is gone afterwards."""
    results = []
    with tempfile.TemporaryDirectory(prefix="aira-eval-") as scratch:
        for i, task in enumerate(suite.tasks):
            if only is not None and task.id not in only:
                continue
            results.append(_one(task, catalog, kernel, Path(scratch) / f"{i}.sqlite3"))
    return results


def _one(task: EvalTask, catalog: Any, kernel: Any, store: Path) -> ReferenceResult:
    from aira_core.catalog.policy import LOCAL_GRANT
    from aira_core.contracts.plan import Plan
    from aira_core.eval.measure import measure
    from aira_core.model.repository import ModelRepository
    from aira_core.runtime.plan import PlanContext
    from aira_core.runtime.write import WritePath

    if task.reference is None:
        return ReferenceResult(task.id, built=False, problem="the task gives no reference")
    with ModelRepository.open(store) as repo:
        base = repo.init().rev
        plan = Plan(base_revision=base, steps=task.reference.steps)
        ctx = PlanContext(catalog=catalog, repository=repo, grant=LOCAL_GRANT)
        envelope = WritePath(ctx, kernel).apply(plan, f"req:eval-{task.id}"[:64])
        if envelope.status != "success":
            first = envelope.diagnostics[0] if envelope.diagnostics else None
            said = f"{first.code}: {first.message}" if first else envelope.status
            return ReferenceResult(task.id, built=False, problem=said)
        document = repo.document(repo.head())
    measures = measure(kernel, document, task.checks)
    result = ReferenceResult(
        task.id, built=True, outcomes=score(task.checks, measures), measures=measures
    )
    form = task.reference.closed_form
    if form is not None:
        got = measures.volume
        error = None if got is None else abs(got - form.volume) / form.volume
        result.closed_form = {
            "volume": form.volume,
            "formula": form.formula,
            "measured": got,
            "relativeError": error,
            "passed": error is not None and error <= CLOSED_FORM_REL_TOL,
        }
    return result
