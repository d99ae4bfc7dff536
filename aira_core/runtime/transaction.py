"""One plan through the write path: check → propose → preview → validate → commit.

Each stage refuses before the next runs: a plan that fails ``plan.check`` never reaches the
kernel, a candidate whose preview has diagnostics is never validated, and a candidate that
fails any assertion (its own or an earlier one: assertions are re-checked on every commit)
is never committed. The commit is one compare-and-swap of the whole lowered patch on the
branch head, so a plan lands all or nothing. Every outcome is an observation envelope
(RFC-0002 §11.2); a failure names ``failedStep`` and, for a targeted repair, that step's
full input schema.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aira_core.catalog.signatures import signature
from aira_core.contracts.amir import BLOCKS, AmirDocument, Patch
from aira_core.contracts.plan import (
    Budgets,
    CheckReport,
    NextAction,
    ObservationEnvelope,
    Plan,
)
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import BodyResult, Evaluation, Kernel, ValidationOutcome
from aira_core.model.patch import PatchRejected, added_entity, apply_patch, changed_nodes
from aira_core.model.store import MAIN, StaleRevision
from aira_core.runtime.plan import (
    Lowered,
    PlanContext,
    branch_head,
    check_plan,
    node_signatures,
)

PUBLISH_ACTION = "publish"
KERNEL_FAILED = "KERNEL_FAILED"
T = TypeVar("T")


@dataclass
class Candidate:
    """A checked plan lowered and applied to its base document, not yet committed."""

    plan: Plan
    report: CheckReport
    lowered: Lowered
    document: AmirDocument


class Rejected(Exception):
    """A stage refused the plan; ``envelope`` says why (raised only inside this module)."""

    def __init__(self, envelope: ObservationEnvelope) -> None:
        super().__init__(envelope.status)
        self.envelope = envelope


def _entity_order(base: AmirDocument, lowered: Lowered) -> dict[str, list[str]]:
    """Entity ids of the patched document by block, in order (patches only append)."""
    added: dict[str, list[str]] = {block: [] for block in BLOCKS}
    for op in lowered.ops:
        if (entry := added_entity(op)) is not None:
            added[entry[0].name].append(entry[1].id)
    return {block: [e.id for e in getattr(base, block)] + ids for block, ids in added.items()}


def _step_of_pointer(
    pointer: str | None, order: Mapping[str, list[str]], lowered: Lowered
) -> str | None:
    parts = (pointer or "").strip("/").split("/")
    if len(parts) >= 2 and parts[0] in order and parts[1].isdigit():
        ids = order[parts[0]]
        index = int(parts[1])
        if index < len(ids):
            return lowered.step_of(ids[index])
    return None


class Transaction:
    """The write path for plans on one branch of one repository, with one kernel."""

    def __init__(self, ctx: PlanContext, kernel: Kernel) -> None:
        self.ctx = ctx
        self.kernel = kernel
        self._signatures = node_signatures(ctx.capabilities)

    # -- envelopes ---------------------------------------------------------------------------

    def _envelope(
        self,
        request_id: str,
        status: str,
        *,
        revision: str | None,
        data: dict[str, Any] | None = None,
        diagnostics: list[Diagnostic] | None = None,
        effects: list[str] | None = None,
        seconds: float = 0.0,
        next_actions: list[NextAction] | None = None,
    ) -> ObservationEnvelope:
        budget = self.ctx.grant.budgets.compute_seconds
        remaining = {"kernelSeconds": max(0.0, budget - seconds)} if budget is not None else {}
        return ObservationEnvelope(
            request_id=request_id,
            observed_revision=revision,
            status=status,  # type: ignore[arg-type]
            data=data or {},
            diagnostics=diagnostics or [],
            effects_observed=effects or [],
            budgets=Budgets(consumed={"kernelSeconds": round(seconds, 6)}, remaining=remaining),
            next_actions=next_actions or [],
        )

    def _repair(
        self,
        request_id: str,
        revision: str,
        plan: Plan,
        diagnostics: list[Diagnostic],
        failed_step: str | None,
        stage: str,
        seconds: float = 0.0,
    ) -> Rejected:
        schema = signature_line = None
        if failed_step is not None:
            step = next((s for s in plan.steps if s.id == failed_step), None)
            entry = self.ctx.capabilities.get(step.capability) if step else None
            schema = entry.input_schema if entry else None
            if entry is not None:
                signature_line = signature(
                    entry.descriptor.capability_id,
                    entry.input_schema,
                    kind=entry.descriptor.kind.value,
                )
        diagnostics = [d if d.phase else d.model_copy(update={"phase": stage}) for d in diagnostics]
        return Rejected(
            self._envelope(
                request_id,
                "failed",
                revision=revision,
                seconds=seconds,
                data={
                    "stage": stage,
                    "planId": plan.plan_id(),
                    "failedStep": failed_step,
                    "stepSignature": signature_line,
                    "stepSchema": schema,
                },
                diagnostics=diagnostics,
                next_actions=[
                    NextAction(
                        operation="model.proposePatch",
                        reason=(
                            f"repair step {failed_step!r} and propose again"
                            if failed_step
                            else "repair the plan and propose again"
                        ),
                    )
                ],
            )
        )

    # -- stages ------------------------------------------------------------------------------

    def propose(self, plan: Plan, request_id: str) -> Candidate:
        report, lowered = check_plan(plan, self.ctx)
        head = branch_head(self.ctx, plan)
        if not report.ok or lowered is None:
            stale = any(d.code == "STEP_STALE_REVISION" for d in report.diagnostics)
            data: dict[str, Any] = {"stage": "check", **report.to_wire()}
            if stale:
                data["summary"] = self.ctx.repository.summary(head).to_wire()
            raise Rejected(
                self._envelope(
                    request_id,
                    "stale" if stale else "blocked",
                    revision=head,
                    data=data,
                    diagnostics=report.diagnostics,
                    next_actions=[
                        NextAction(
                            operation="model.read" if stale else "model.proposePatch",
                            reason="re-plan against the new head"
                            if stale
                            else f"repair step {report.failed_step!r}",
                        )
                    ],
                )
            )
        base = self.ctx.repository.document(plan.base_revision)
        if not lowered.ops:  # a plan of queries only: nothing to apply or commit
            return Candidate(plan, report, lowered, base)
        try:
            document = apply_patch(base, Patch(ops=lowered.ops), self._signatures)
        except PatchRejected as exc:
            order = _entity_order(base, lowered)
            failed = next(
                (s for d in exc.diagnostics if (s := _step_of_pointer(d.pointer, order, lowered))),
                None,
            )
            raise self._repair(request_id, head, plan, exc.diagnostics, failed, "propose") from None
        return Candidate(plan, report, lowered, document)

    def preview(self, candidate: Candidate, request_id: str) -> tuple[Evaluation, float]:
        started = time.perf_counter()
        base = self.ctx.repository.document(candidate.plan.base_revision)
        changed = changed_nodes(base, candidate.document)
        evaluation = self._kernel_call(
            request_id,
            candidate,
            "preview",
            started,
            lambda: self.kernel.evaluate(candidate.document, changed),
        )
        seconds = time.perf_counter() - started
        if not evaluation.ok:
            failed = next(
                (
                    s
                    for d in evaluation.diagnostics
                    if d.subject and (s := candidate.lowered.step_of(d.subject))
                ),
                None,
            )
            raise self._repair(
                request_id,
                candidate.plan.base_revision,
                candidate.plan,
                list(evaluation.diagnostics),
                failed,
                "preview",
                seconds,
            )
        return evaluation, seconds

    def _kernel_call(
        self,
        request_id: str,
        candidate: Candidate,
        stage: str,
        started: float,
        call: Callable[[], T],
    ) -> T:
        """A kernel call whose exception (a kernel bug) becomes ``KERNEL_FAILED``."""
        try:
            return call()
        except Exception as exc:
            raise self._repair(
                request_id,
                candidate.plan.base_revision,
                candidate.plan,
                [
                    Diagnostic(
                        code=KERNEL_FAILED,
                        cause="kernel",
                        message=(
                            f"the kernel {self.kernel.name!r} raised {type(exc).__name__}: {exc}"
                        ),
                    )
                ],
                None,
                stage,
                time.perf_counter() - started,
            ) from None

    def validate(
        self, candidate: Candidate, request_id: str, seconds: float
    ) -> tuple[list[ValidationOutcome], float]:
        """Every assertion of the candidate (its own and earlier ones) on the kernel."""
        started = time.perf_counter()
        outcomes = self._kernel_call(
            request_id,
            candidate,
            "validate",
            started,
            lambda: [
                self.kernel.validate(candidate.document, a) for a in candidate.document.assertions
            ],
        )
        seconds += time.perf_counter() - started
        failing = [o for o in outcomes if not o.passed]
        if failing:
            diagnostics = [d for o in failing for d in o.diagnostics] or [
                Diagnostic(
                    code="ASSERTION_FAILED",
                    subject=o.assertion,
                    message=f"assertion {o.assertion} failed: {dict(o.measured)}",
                )
                for o in failing
            ]
            failed = next(
                (s for o in failing if (s := candidate.lowered.step_of(o.assertion))), None
            )
            raise self._repair(
                request_id,
                candidate.plan.base_revision,
                candidate.plan,
                diagnostics,
                failed,
                "validate",
                seconds,
            )
        return outcomes, seconds

    def _queries(self, candidate: Candidate, diagnostics: list[Diagnostic]) -> dict[str, Any]:
        """Run the plan's query steps (read-only) on the candidate document; their
        diagnostics, and a kernel that raises, are reported, never raised."""
        out: dict[str, Any] = {}
        for step, ref, args in candidate.lowered.queries:
            try:
                result = self.kernel.query(candidate.document, ref, args)
            except Exception as exc:
                diagnostics.append(
                    Diagnostic(
                        code=KERNEL_FAILED,
                        phase="query",
                        subject=step,
                        cause="kernel",
                        message=f"the kernel raised {type(exc).__name__}: {exc}",
                    )
                )
                continue
            out[step] = dict(result.data)
            diagnostics += [
                d.model_copy(update={"phase": "query", "subject": d.subject or step})
                for d in result.diagnostics
            ]
        return out

    def apply(
        self, plan: Plan, request_id: str, *, publish: bool = False, approved: bool = False
    ) -> ObservationEnvelope:
        """Check, propose, preview, validate and commit ``plan``; publish to ``main`` too
        when asked and the grant allows. ``approved`` is the user's approval of the plan's
        risk and of publishing. Never raises for a refused plan."""
        self.ctx.approved = approved
        revision: str | None = None
        seconds = 0.0
        effects: list[str] = []
        try:
            revision = branch_head(self.ctx, plan)
            candidate = self.propose(plan, request_id)
            evaluation, seconds = self.preview(candidate, request_id)
            outcomes, seconds = self.validate(candidate, request_id, seconds)
            if (
                publish
                and self.ctx.branch != MAIN
                and not approved
                and PUBLISH_ACTION in self.ctx.grant.confirmation_required
            ):
                return self._envelope(
                    request_id,
                    "blocked",
                    revision=revision,
                    seconds=seconds,
                    diagnostics=[
                        Diagnostic(
                            code="PLAN_APPROVAL_REQUIRED",
                            phase="commit",
                            approval=True,
                            message=f"grant {self.ctx.grant.grant_id} requires approval to publish",
                        )
                    ],
                    next_actions=[
                        NextAction(operation="model.commit", reason="approve the publish")
                    ],
                )
            if not candidate.lowered.ops:
                return self._envelope(
                    request_id,
                    "success",
                    revision=revision,
                    seconds=seconds,
                    data={
                        "planId": candidate.report.plan_id,
                        "queries": self._queries(candidate, []),
                    },
                    next_actions=[NextAction(operation="model.read")],
                )
            try:
                committed = self.ctx.repository.commit(
                    self.ctx.branch,
                    plan.base_revision,
                    candidate.document,
                    message=f"plan {candidate.report.plan_id}",
                    meta={"planId": candidate.report.plan_id, "steps": [s.id for s in plan.steps]},
                    # the task branch starts with its first commit, or not at all
                    create_branch=self.ctx.branch not in self.ctx.repository.store.branches(),
                )
            except StaleRevision as exc:
                summary = self.ctx.repository.summary(exc.head)
                return self._envelope(
                    request_id,
                    "stale",
                    revision=exc.head,
                    seconds=seconds,
                    diagnostics=[exc.diagnostic],
                    data={"stage": "commit", "summary": summary.to_wire()},
                    next_actions=[
                        NextAction(operation="model.read", reason="re-plan against the new head")
                    ],
                )
            revision = committed.rev
            effects.append(f"commit:{self.ctx.branch}")
            diagnostics: list[Diagnostic] = []
            queries = self._queries(candidate, diagnostics)
            published = None
            if publish and self.ctx.branch != MAIN:
                try:
                    published = self.ctx.repository.store.publish(
                        self.ctx.branch,
                        self.ctx.repository.head(MAIN),
                        f"publish plan {candidate.report.plan_id}",
                    ).rev
                    effects.append("publish:main")
                except AiraError as exc:  # the task branch moved; main did not
                    diagnostics.append(exc.diagnostic.model_copy(update={"phase": "publish"}))
            return self._envelope(
                request_id,
                "partial" if diagnostics else "success",
                revision=revision,
                effects=effects,
                seconds=seconds,
                diagnostics=diagnostics,
                data={
                    "planId": candidate.report.plan_id,
                    "branch": self.ctx.branch,
                    "rev": revision,
                    "published": published,
                    "createdBodies": dict(candidate.lowered.body_of_step),
                    "bodies": {b: body_wire(r) for b, r in evaluation.bodies.items()},
                    "evaluatedNodes": list(evaluation.evaluated_nodes),
                    "assertions": {o.assertion: o.passed for o in outcomes},
                    "queries": queries,
                    "summary": self.ctx.repository.summary(revision).to_wire(),
                },
                next_actions=[NextAction(operation="model.read")],
            )
        except Rejected as exc:
            return exc.envelope
        except AiraError as exc:  # an authority refused (store, kernel): what we know so far
            return self._envelope(
                request_id,
                "failed",
                revision=revision,
                seconds=seconds,
                effects=effects,
                diagnostics=[exc.diagnostic],
            )


def body_wire(result: BodyResult) -> dict[str, Any]:
    """A kernel's body result as the envelope shows it (camelCase, like the wire)."""
    return {
        "valid": result.valid,
        "volume": result.volume,
        "area": result.area,
        "boundingBox": list(result.bounding_box) if result.bounding_box else None,
    }
