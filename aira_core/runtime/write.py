"""The one write path: check → propose (a plan or a patch) → preview → validate → commit.

Everything that writes a model store goes through :class:`WritePath`: the task runtime, the
``aira plan apply`` and ``aira model patch | init --from | import | revert`` commands, and
anything built later on the same runtime. Each stage refuses before the next runs: a plan
that fails ``plan.check`` never reaches the kernel, a candidate whose preview has
diagnostics is never validated, and a candidate that fails any assertion (its own or an
earlier one: every write re-checks all of the document's assertions on the kernel) is never
committed. A commit is one compare-and-swap of the whole document on the branch head (the
store's CAS is the one authority on staleness; ``plan.check`` refuses a plan bound to an old
head before any work), so a write lands all or nothing.

One publish policy: publishing a branch to ``main`` when the grant asks for confirmation
and the user has not approved it is refused *before* anything is committed (``blocked``,
``PLAN_APPROVAL_REQUIRED``): a refusal changes nothing. A publish that the store refuses
after the commit (``main`` moved) leaves the commit standing: ``partial``.

Branch and approval are arguments of each call, never state of a shared context. Every
outcome is an observation envelope (RFC-0002 §11.2); a failure names ``failedStep`` and,
for a targeted repair, that step's full input schema.

The same object owns the one read path's kernel work: :meth:`WritePath.query` runs a query
capability with one ``KERNEL_FAILED`` rule; the task runtime admits and traces it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aira_core import kernel_guard, validator_guard
from aira_core.catalog.capabilities import node_signatures
from aira_core.catalog.signatures import signature
from aira_core.contracts.amir import BLOCKS, AmirDocument, Patch
from aira_core.contracts.plan import (
    Budgets,
    CheckReport,
    NextAction,
    ObservationEnvelope,
    Plan,
)
from aira_core.diagnostics import AiraError, Diagnostic, Severity
from aira_core.extensions import (
    BodyResult,
    Evaluation,
    Kernel,
    QueryResult,
    ValidationOutcome,
    Validator,
)
from aira_core.kernel_guard import KernelFailure
from aira_core.model.patch import (
    PatchRejected,
    added_entity,
    apply_patch,
    changed_nodes,
    validate_document,
)
from aira_core.model.store import MAIN, StaleRevision
from aira_core.runtime.plan import Lowered, PlanContext, check_plan
from aira_core.runtime.repairs import annotate

PUBLISH_ACTION = "publish"
KERNEL_UNAVAILABLE = "KERNEL_UNAVAILABLE"
ASSERTION_FAILED = "ASSERTION_FAILED"
ASSERTION_FAILS_ON_RESULT = "ASSERTION_FAILS_ON_RESULT"
PLAN_APPROVAL_REQUIRED = "PLAN_APPROVAL_REQUIRED"
T = TypeVar("T")


@dataclass
class Candidate:
    """A proposed document, not yet committed: a checked plan lowered and applied to its
    base, or a raw patch (or whole document) applied to it (then ``plan`` is ``None``)."""

    base_revision: str | None
    """The revision the candidate was made on (``None``: a store's first document)."""
    base: AmirDocument
    document: AmirDocument
    lowered: Lowered
    plan: Plan | None = None
    report: CheckReport | None = None
    states: dict[int, AmirDocument] = field(default_factory=dict)
    """The documents the plan's steps see, by position (ops applied): see
    :meth:`WritePath._state_at`."""
    warnings: list[Diagnostic] = field(default_factory=list)
    """Warnings of the candidate's validation (``ASSERTION_FAILS_ON_RESULT``)."""

    @property
    def plan_id(self) -> str | None:
        return self.report.plan_id if self.report is not None else None


@dataclass(frozen=True)
class Committed:
    """A landed commit: its revision on ``branch``, the revision published to ``main`` (if
    asked and allowed) and why a publish that was asked for did not happen."""

    branch: str
    rev: str
    published: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def effects(self) -> list[str]:
        return [f"commit:{self.branch}"] + (["publish:main"] if self.published else [])


class Rejected(Exception):
    """A stage refused; ``envelope`` says why. The stages raise it, :meth:`WritePath.apply`
    and the task runtime turn it into their answer."""

    def __init__(self, envelope: ObservationEnvelope) -> None:
        super().__init__(envelope.status)
        self.envelope = envelope

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return list(self.envelope.diagnostics)


def _entity_order(base: AmirDocument, lowered: Lowered) -> dict[str, list[str]]:
    """Entity ids of the patched document by block, in order (patches only append)."""
    added: dict[str, list[str]] = {block: [] for block in BLOCKS}
    for op in lowered.ops:
        if (entry := added_entity(op)) is not None:
            added[entry[0].name].append(entry[1].id)
    return {block: [e.id for e in getattr(base, block)] + ids for block, ids in added.items()}


def _entity_of_pointer(pointer: str | None, order: Mapping[str, list[str]]) -> str | None:
    """The id of the entity a pointer into the patched document (``/nodes/3/…``) is in."""
    parts = (pointer or "").strip("/").split("/")
    if len(parts) >= 2 and parts[0] in order and parts[1].isdigit():
        ids = order[parts[0]]
        index = int(parts[1])
        if index < len(ids):
            return ids[index]
    return None


def on_step(diagnostic: Diagnostic, lowered: Lowered, *, step: str | None = None) -> Diagnostic:
    """``diagnostic`` named by the plan step it arose from: ``subject`` is the step's id and
    the entity the kernel or the patch named (a node, body or assertion id) leads
    ``affected``. The step is ``step`` or the one that made the subject (or an affected
    entity); a diagnostic of no step of the plan (an earlier commit's assertion, the store)
    is returned as it is."""
    entities = [e for e in (diagnostic.subject, *(diagnostic.affected or [])) if e]
    if step is None:
        step = next((s for e in entities if (s := lowered.step_of(e))), None)
    if step is None or diagnostic.subject == step:
        return diagnostic
    affected = list(dict.fromkeys(e for e in entities if e != step))
    return diagnostic.model_copy(update={"subject": step, "affected": affected or None})


def _with_warnings(diagnostics: Sequence[Diagnostic], candidate: Candidate) -> list[Diagnostic]:
    """``diagnostics`` and, after them, the warnings ``plan.check`` gave the candidate's plan
    (a passing plan's findings are all warnings) and those of its validation: a failure
    they may explain shows them."""
    found = candidate.report.diagnostics if candidate.report is not None else []
    return [*diagnostics, *(d for d in [*found, *candidate.warnings] if d not in diagnostics)]


def _fails_on_result(aid: str, final: ValidationOutcome, lowered: Lowered) -> Diagnostic:
    """The warning on a validator step's assertion that held at its position in the plan and
    fails on the plan's result."""
    step = lowered.step_of(aid)
    why = "; ".join(d.message for d in final.diagnostics) or f"measured {dict(final.measured)}"
    return Diagnostic(
        code=ASSERTION_FAILS_ON_RESULT,
        severity=Severity.WARNING,
        phase="validate",
        subject=step or aid,
        affected=[aid] if step else None,
        message=f"step {step!r} held at its position in the plan, but its assertion fails on "
        f"the plan's result ({why}); every later commit re-checks it on the body as it is "
        "then and is refused until it holds: move the step to the end, or widen it",
    )


class WritePath:
    """The write path for one repository (through ``ctx``) with one kernel.

    ``kernel`` may be ``None`` for writes that need none: a document without assertions
    written by a patch, an import-free init. A write whose document has assertions and no
    kernel to check them on is refused with ``KERNEL_UNAVAILABLE``.

    ``validators`` are the registered validators (``aira_register_validators``) by name;
    ``None``: the plugin registry's, read when an assertion is checked. An assertion whose
    ``validatorRef`` the kernel does not implement and a validator does is checked by that
    validator, on a read-only view of the document (:mod:`aira_core.validator_guard`).
    """

    def __init__(
        self,
        ctx: PlanContext,
        kernel: Kernel | None = None,
        validators: Mapping[str, Validator] | None = None,
    ) -> None:
        self.ctx = ctx
        self.kernel = kernel
        self.validators = validators
        self._signatures = node_signatures(ctx.capabilities)

    @property
    def repository(self) -> Any:
        return self.ctx.repository

    # -- envelopes ---------------------------------------------------------------------------

    def envelope(
        self,
        request_id: str,
        status: str,
        *,
        revision: str | None,
        data: dict[str, Any] | None = None,
        diagnostics: Sequence[Diagnostic] = (),
        effects: Sequence[str] = (),
        seconds: float = 0.0,
        next_actions: Sequence[NextAction] = (),
    ) -> ObservationEnvelope:
        budget = self.ctx.grant.budgets.compute_seconds
        remaining = {"kernelSeconds": max(0.0, budget - seconds)} if budget is not None else {}
        # every refusal names the registered repairs of its codes and offers them (§11.3)
        diagnostics, repairs = annotate(self.ctx.capabilities, diagnostics)
        next_actions = [*next_actions, *repairs]
        return ObservationEnvelope(
            request_id=request_id,
            observed_revision=revision,
            status=status,  # type: ignore[arg-type]
            data=data or {},
            diagnostics=list(diagnostics),
            effects_observed=list(effects),
            budgets=Budgets(consumed={"kernelSeconds": round(seconds, 6)}, remaining=remaining),
            next_actions=list(next_actions),
        )

    def _repair(
        self,
        request_id: str,
        candidate: Candidate,
        diagnostics: Sequence[Diagnostic],
        failed_step: str | None,
        stage: str,
        seconds: float = 0.0,
    ) -> Rejected:
        schema = signature_line = None
        plan = candidate.plan
        if failed_step is not None and plan is not None:
            step = next((s for s in plan.steps if s.id == failed_step), None)
            entry = self.ctx.capabilities.get(step.capability) if step else None
            if entry is not None:
                schema = entry.input_schema
                signature_line = signature(
                    entry.descriptor.capability_id,
                    entry.input_schema,
                    kind=entry.descriptor.kind.value,
                    defaults=entry.descriptor.defaults,
                )
        diagnostics = [d if d.phase else d.model_copy(update={"phase": stage}) for d in diagnostics]
        if plan is not None:  # a model repairs a plan's steps, never its lowered nodes
            diagnostics = [on_step(d, candidate.lowered) for d in diagnostics]
        diagnostics = _with_warnings(diagnostics, candidate)
        return Rejected(
            self.envelope(
                request_id,
                "failed",
                revision=candidate.base_revision,
                seconds=seconds,
                data={
                    "stage": stage,
                    "planId": candidate.plan_id,
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

    # -- propose -----------------------------------------------------------------------------

    def propose(
        self, plan: Plan, request_id: str, *, branch: str = MAIN, approved: bool = False
    ) -> Candidate:
        """``plan.check`` (on ``branch``, with the user's ``approved`` risk), then the lowered
        patch applied to the plan's base: a candidate, or :class:`Rejected`."""
        report, lowered = check_plan(plan, self.ctx, branch=branch, approved=approved)
        if not report.ok or lowered is None:
            # plan.check names the branch's head in a stale finding's `actual`
            stale = next((d for d in report.diagnostics if d.code == "STEP_STALE_REVISION"), None)
            raise Rejected(
                self.envelope(
                    request_id,
                    "stale" if stale else "blocked",
                    revision=stale.actual if stale else plan.base_revision,
                    data={"stage": "check", **report.to_wire()},
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
        base = self.repository.document(plan.base_revision)
        # the expanded plan: its step ids are the ones later stages name
        checked = lowered.plan or plan
        candidate = Candidate(plan.base_revision, base, base, lowered, checked, report)
        if not lowered.ops:  # a plan of queries only: nothing to apply or commit
            return candidate
        try:
            candidate.document = apply_patch(base, Patch(ops=lowered.ops), self._signatures)
        except PatchRejected as exc:
            order = _entity_order(base, lowered)
            named, failed = [], None
            for d in exc.diagnostics:
                # a patch problem names no entity, only a pointer into the patched document
                entity = _entity_of_pointer(d.pointer, order)
                step = lowered.step_of(entity) if entity else None
                if step is not None:
                    failed = failed or step
                    d = d.model_copy(update={"affected": [entity, *(d.affected or [])]})
                named.append(on_step(d, lowered, step=step))
            raise self._repair(request_id, candidate, named, failed, "propose") from None
        return candidate

    def propose_patch(
        self, patch: Patch | Mapping[str, Any], base_revision: str, request_id: str
    ) -> Candidate:
        """A raw AMIR patch applied to ``base_revision`` (node inputs checked against the
        catalog's operations): a candidate, or :class:`Rejected` with every problem."""
        base = self.repository.document(base_revision)
        candidate = Candidate(base_revision, base, base, Lowered())
        try:
            candidate.document = apply_patch(base, patch, self._signatures)
        except PatchRejected as exc:
            raise self._repair(request_id, candidate, exc.diagnostics, None, "propose") from None
        return candidate

    def propose_document(
        self, document: AmirDocument, base_revision: str | None, request_id: str
    ) -> Candidate:
        """A whole document (a store's first one, or one restored by a revert), checked as a
        patch result is: structure and node inputs against the catalog's operations."""
        base = AmirDocument() if base_revision is None else self.repository.document(base_revision)
        candidate = Candidate(base_revision, base, document, Lowered())
        problems = validate_document(document, self._signatures)
        if problems:
            raise self._repair(request_id, candidate, problems, None, "propose")
        return candidate

    # -- preview and validate ----------------------------------------------------------------

    def _kernel_for(self, candidate: Candidate, request_id: str, stage: str) -> Kernel:
        if self.kernel is None:
            raise self._repair(
                request_id,
                candidate,
                [
                    Diagnostic(
                        code=KERNEL_UNAVAILABLE,
                        message=f"the document has {len(candidate.document.assertions)} "
                        "assertion(s), re-checked on a kernel at every write, and no kernel "
                        "was given",
                    )
                ],
                None,
                stage,
            )
        return self.kernel

    def needs_kernel(self, candidate: Candidate) -> bool:
        """Whether writing ``candidate`` needs the kernel: a plan is always previewed; any
        other write when the document has assertions (they are re-checked at every write)."""
        return candidate.plan is not None or bool(candidate.document.assertions)

    def _kernel_call(
        self,
        request_id: str,
        candidate: Candidate,
        stage: str,
        started: float,
        call: Callable[[], T],
    ) -> T:
        """A guarded kernel call (:mod:`aira_core.kernel_guard`): a kernel that raises, answers
        with the wrong type or misses its deadline refuses the write at ``stage``."""
        try:
            return call()
        except KernelFailure as exc:
            where = [exc.diagnostic.subject, *(exc.diagnostic.affected or [])]
            failed = next((s for e in where if e and (s := candidate.lowered.step_of(e))), None)
            raise self._repair(
                request_id,
                candidate,
                [exc.diagnostic],
                failed,
                stage,
                time.perf_counter() - started,
            ) from None

    def preview(self, candidate: Candidate, request_id: str) -> tuple[Evaluation, float]:
        """Evaluate the candidate on the kernel (only the nodes the change touched)."""
        kernel = self._kernel_for(candidate, request_id, "preview")
        started = time.perf_counter()
        changed = changed_nodes(candidate.base, candidate.document)
        evaluation = self._kernel_call(
            request_id,
            candidate,
            "preview",
            started,
            lambda: kernel_guard.evaluate(kernel, candidate.document, changed),
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
                request_id, candidate, list(evaluation.diagnostics), failed, "preview", seconds
            )
        return evaluation, seconds

    def validate(
        self, candidate: Candidate, request_id: str, seconds: float = 0.0
    ) -> tuple[list[ValidationOutcome], float]:
        """Every assertion of the candidate (its own and earlier ones) on the kernel. An
        assertion a validator step of the candidate's plan made judges its body in the state
        at the step's position (the base with the steps before it applied), as a query step
        reads it; every other one the candidate document. One that passes at its position
        but fails on the candidate (a later step changed its body) is committed with the
        warning ``ASSERTION_FAILS_ON_RESULT`` in ``candidate.warnings``: every later commit
        re-checks it on the body as it is then."""
        if not candidate.document.assertions:
            return [], seconds
        kernel = self._kernel_for(candidate, request_id, "validate")
        started = time.perf_counter()
        lowered = candidate.lowered
        states: dict[str, AmirDocument] = {}
        for step, aid in lowered.assertion_of_step.items():
            at = self._position(lowered, lowered.assertion_at.get(step, len(lowered.ops)))
            try:
                states[aid] = self._state_at(candidate, at)
            except PatchRejected as exc:  # the state there is not a document of its own
                raise self._repair(
                    request_id, candidate, exc.diagnostics, step, "validate"
                ) from None

        by_ref = self._validators_for(
            kernel, {a.validator_ref for a in candidate.document.assertions}
        )

        def check(document: AmirDocument, a: Any) -> ValidationOutcome:
            validator = by_ref.get(a.validator_ref)
            if validator is not None:
                return validator_guard.validate(validator, kernel, document, a)
            return kernel_guard.validate(kernel, document, a)

        def run() -> list[ValidationOutcome]:
            out = []
            for a in candidate.document.assertions:
                state = states.get(a.id, candidate.document)
                outcome = check(state, a)
                out.append(outcome)
                if outcome.passed and state is not candidate.document:
                    final = check(candidate.document, a)
                    if not final.passed:
                        candidate.warnings.append(_fails_on_result(a.id, final, lowered))
            return out

        candidate.warnings.clear()  # a candidate validated again warns afresh
        outcomes = self._kernel_call(request_id, candidate, "validate", started, run)
        seconds += time.perf_counter() - started
        failing = [o for o in outcomes if not o.passed]
        if failing:
            diagnostics = [d for o in failing for d in o.diagnostics] or [
                Diagnostic(
                    code=ASSERTION_FAILED,
                    subject=o.assertion,
                    message=f"assertion {o.assertion} failed: {dict(o.measured)}",
                )
                for o in failing
            ]
            failed = next(
                (s for o in failing if (s := candidate.lowered.step_of(o.assertion))), None
            )
            raise self._repair(request_id, candidate, diagnostics, failed, "validate", seconds)
        return outcomes, seconds

    def registered_validators(self) -> list[Validator]:
        """The validators this write path runs: those it was given, else the registry's."""
        validators = self.validators
        if validators is None:
            from aira_core.plugins import get_registry

            validators = get_registry().named("validators")
        return list(validators.values())

    def _validators_for(self, kernel: Kernel, refs: set[str]) -> dict[str, Validator]:
        """The registered validators of ``refs`` by ref, but none of a ref the kernel
        implements itself: conformance resolves a target to a kernel before a validator, and
        the runtime runs what conformance tested."""
        by_ref: dict[str, Validator] = {}
        for validator in self.registered_validators():
            ref = getattr(validator, "ref", None)
            if isinstance(ref, str) and ref in refs:
                by_ref.setdefault(ref, validator)
        if by_ref:
            try:  # plugin code: one whose list fails implements nothing here
                own = {getattr(i, "ref", None) for i in kernel.implementations()}
            except Exception:
                own = set()
            by_ref = {r: v for r, v in by_ref.items() if r not in own}
        return by_ref

    @staticmethod
    def _position(lowered: Lowered, at: int) -> int:
        """``at``, or the end of the plan when only assertions follow it (they change no
        body: the state there is the candidate's)."""
        rest = lowered.ops[at:]
        return len(lowered.ops) if all(op.op == "assertion.add" for op in rest) else at

    def _state_at(self, candidate: Candidate, at: int) -> AmirDocument:
        """The document a step at position ``at`` of the candidate's plan sees: the base with
        the first ``at`` lowered ops applied (the candidate document after the last op)."""
        lowered = candidate.lowered
        if at >= len(lowered.ops):
            return candidate.document
        if at == 0:
            return candidate.base
        states = candidate.states
        if at not in states:
            states[at] = apply_patch(candidate.base, Patch(ops=lowered.ops[:at]), self._signatures)
        return states[at]

    def check_candidate(
        self, candidate: Candidate, request_id: str
    ) -> tuple[Evaluation | None, list[ValidationOutcome], float]:
        """Preview and validate, when the write needs the kernel (see :meth:`needs_kernel`)."""
        if not self.needs_kernel(candidate):
            return None, [], 0.0
        evaluation, seconds = self.preview(candidate, request_id)
        outcomes, seconds = self.validate(candidate, request_id, seconds)
        return evaluation, outcomes, seconds

    # -- commit ------------------------------------------------------------------------------

    def publish_refusal(self, branch: str, *, publish: bool, approved: bool) -> Diagnostic | None:
        """The one publish policy: why publishing ``branch`` may not even start."""
        if (
            publish
            and branch != MAIN
            and not approved
            and PUBLISH_ACTION in self.ctx.grant.confirmation_required
        ):
            return Diagnostic(
                code=PLAN_APPROVAL_REQUIRED,
                phase="commit",
                approval=True,
                message=f"grant {self.ctx.grant.grant_id} requires the user's approval to "
                "publish; nothing was committed",
            )
        return None

    def _stale(self, request_id: str, exc: StaleRevision, seconds: float) -> Rejected:
        """The store's compare-and-swap refused: the new head and its summary, to re-plan on."""
        return Rejected(
            self.envelope(
                request_id,
                "stale",
                revision=exc.head,
                seconds=seconds,
                diagnostics=[exc.diagnostic],
                data={"stage": "commit", "summary": self.repository.summary(exc.head).to_wire()},
                next_actions=[
                    NextAction(operation="model.read", reason="re-plan against the new head")
                ],
            )
        )

    def commit(
        self,
        candidate: Candidate,
        request_id: str,
        *,
        branch: str,
        message: str,
        meta: Mapping[str, Any] | None = None,
        publish: bool = False,
        approved: bool = False,
        seconds: float = 0.0,
        publish_message: str | None = None,
    ) -> Committed:
        """Commit a checked candidate on ``branch`` (compare-and-swap on its base) and publish
        it to ``main`` when asked.

        Refused before anything is written: an unapproved publish (``blocked``), a head that
        moved (``stale``, with the new head's summary): :class:`Rejected`."""
        refusal = self.publish_refusal(branch, publish=publish, approved=approved)
        if refusal is not None:
            raise Rejected(
                self.envelope(
                    request_id,
                    "blocked",
                    revision=candidate.base_revision,
                    seconds=seconds,
                    diagnostics=[refusal],
                    next_actions=[
                        NextAction(operation="model.commit", reason="approve the publish")
                    ],
                )
            )
        repo = self.repository
        try:
            if candidate.base_revision is None:
                revision = repo.init(candidate.document, message)
            else:
                revision = repo.commit(
                    branch,
                    candidate.base_revision,
                    candidate.document,
                    message=message,
                    meta=meta,
                    # a task branch starts with its first commit, or not at all
                    create_branch=branch not in repo.store.branches(),
                    checked=True,  # propose validated it against the catalog's operations
                )
        except StaleRevision as exc:
            raise self._stale(request_id, exc, seconds) from None
        published = None
        diagnostics: list[Diagnostic] = []
        if publish and branch != MAIN:
            try:
                published = repo.store.publish(
                    branch, repo.head(MAIN), publish_message or f"publish {message}".strip()
                ).rev
            except AiraError as exc:  # the branch moved; main did not
                diagnostics.append(exc.diagnostic.model_copy(update={"phase": "publish"}))
        return Committed(branch, revision.rev, published, tuple(diagnostics))

    # -- the whole path ----------------------------------------------------------------------

    def _written(
        self,
        request_id: str,
        candidate: Candidate,
        *,
        branch: str,
        message: str,
        meta: Mapping[str, Any] | None,
        publish: bool,
        approved: bool,
        data: Callable[[Committed, list[Diagnostic]], dict[str, Any]] | None = None,
    ) -> ObservationEnvelope:
        """Preview, validate and commit a candidate; its envelope (never raises a refusal)."""
        seconds = 0.0
        try:
            evaluation, outcomes, seconds = self.check_candidate(candidate, request_id)
            committed = self.commit(
                candidate,
                request_id,
                branch=branch,
                message=message,
                meta=meta,
                publish=publish,
                approved=approved,
                seconds=seconds,
            )
        except Rejected as exc:
            return exc.envelope
        except AiraError as exc:  # an authority refused (store, kernel): what we know so far
            return self.envelope(
                request_id,
                "failed",
                revision=candidate.base_revision,
                seconds=seconds,
                diagnostics=[exc.diagnostic],
            )
        rev, diagnostics = committed.rev, list(committed.diagnostics)
        body: dict[str, Any] = {
            "branch": branch,
            "from": candidate.base_revision,
            "rev": rev,
            "published": committed.published,
            "bodies": {b: body_wire(r) for b, r in evaluation.bodies.items()} if evaluation else {},
            "evaluatedNodes": list(evaluation.evaluated_nodes) if evaluation else [],
            "assertions": {o.assertion: o.passed for o in outcomes},
        }
        if data is not None:
            body.update(data(committed, diagnostics))
        body["summary"] = self.repository.summary(rev).to_wire()
        return self.envelope(
            request_id,
            "partial" if diagnostics else "success",
            revision=rev,
            effects=committed.effects,
            seconds=seconds,
            diagnostics=diagnostics,
            data=body,
            next_actions=[NextAction(operation="model.read")],
        )

    def apply(
        self,
        plan: Plan,
        request_id: str,
        *,
        branch: str = MAIN,
        publish: bool = False,
        approved: bool = False,
    ) -> ObservationEnvelope:
        """Check, propose, preview, validate and commit ``plan`` on ``branch``; publish to
        ``main`` too when asked and the grant allows. ``approved`` is the user's approval of
        the plan's risk and of publishing. Never raises for a refused plan."""
        try:
            candidate = self.propose(plan, request_id, branch=branch, approved=approved)
            if not candidate.lowered.ops:
                _, seconds = self.preview(candidate, request_id)
                _, seconds = self.validate(candidate, request_id, seconds)
                return self.envelope(
                    request_id,
                    "success",
                    revision=candidate.base_revision,
                    seconds=seconds,
                    data={
                        "planId": candidate.plan_id,
                        "queries": self._queries(candidate, []),
                    },
                    diagnostics=_with_warnings([], candidate),
                    next_actions=[NextAction(operation="model.read")],
                )
        except Rejected as exc:
            return exc.envelope
        except AiraError as exc:
            return self.envelope(
                request_id, "failed", revision=plan.base_revision, diagnostics=[exc.diagnostic]
            )

        def plan_data(committed: Committed, diagnostics: list[Diagnostic]) -> dict[str, Any]:
            # Query steps read the committed document; their problems are reported, not raised.
            removed = {b: s for s, bs in candidate.lowered.removed_by_step.items() for b in bs}
            return {
                "planId": candidate.plan_id,
                # a body a later step consumed is not in the committed revision
                "createdBodies": {
                    s: b for s, b in candidate.lowered.body_of_step.items() if b not in removed
                },
                "removedBodies": removed,
                "queries": self._queries(candidate, diagnostics),
                **expansions,
            }

        # a workflow step's expansion, as plan.check showed it (docs/workflows.md)
        report = candidate.report
        expansions = {"expansions": report.expansions} if report and report.expansions else {}

        envelope = self._written(
            request_id,
            candidate,
            branch=branch,
            message=f"plan {candidate.plan_id}",
            meta={"planId": candidate.plan_id, "steps": [s.id for s in plan.steps]},
            publish=publish,
            approved=approved,
            data=plan_data,
        )
        # plan.check's warnings after what decided the status (they never change it)
        return envelope.model_copy(
            update={"diagnostics": _with_warnings(envelope.diagnostics, candidate)}
        )

    def apply_patch(
        self,
        patch: Patch | Mapping[str, Any],
        request_id: str,
        *,
        branch: str = MAIN,
        expected_head: str | None = None,
        message: str = "",
        meta: Mapping[str, Any] | None = None,
    ) -> ObservationEnvelope:
        """A raw AMIR patch through the path: applied to ``expected_head`` (default: the
        branch's head), assertions re-checked on the kernel, committed by CAS."""
        try:
            base = expected_head or self.repository.head(branch)
            candidate = self.propose_patch(patch, base, request_id)
        except Rejected as exc:
            return exc.envelope
        except AiraError as exc:
            return self.envelope(
                request_id, "failed", revision=expected_head, diagnostics=[exc.diagnostic]
            )
        return self._written(
            request_id,
            candidate,
            branch=branch,
            message=message,
            meta=meta,
            publish=False,
            approved=False,
        )

    def init(
        self, document: AmirDocument | None, request_id: str, message: str = "init"
    ) -> ObservationEnvelope:
        """Create the store's ``main`` at ``document`` (default: an empty one), checked as
        every write is; a refused document creates nothing."""
        try:
            candidate = self.propose_document(document or AmirDocument(), None, request_id)
        except Rejected as exc:
            return exc.envelope
        return self._written(
            request_id,
            candidate,
            branch=MAIN,
            message=message,
            meta=None,
            publish=False,
            approved=False,
        )

    def revert(
        self,
        to_rev: str,
        request_id: str,
        *,
        branch: str = MAIN,
        expected_head: str | None = None,
        message: str = "",
    ) -> ObservationEnvelope:
        """Restore ``to_rev``'s document on ``branch`` as a new history record, its assertions
        re-checked on the kernel like any other write."""
        repo = self.repository
        seconds = 0.0
        try:
            head = expected_head or repo.head(branch)
            candidate = self.propose_document(repo.document(to_rev), head, request_id)
            _evaluation, outcomes, seconds = self.check_candidate(candidate, request_id)
            revision = repo.revert(branch, head, to_rev, message or f"revert to {to_rev}")
        except Rejected as exc:
            return exc.envelope
        except StaleRevision as exc:
            return self._stale(request_id, exc, seconds).envelope
        except AiraError as exc:
            return self.envelope(
                request_id, "failed", revision=expected_head, diagnostics=[exc.diagnostic]
            )
        return self.envelope(
            request_id,
            "success",
            revision=revision.rev,
            effects=[f"revert:{branch}"],
            seconds=seconds,
            data={
                "branch": branch,
                "from": head,
                "rev": revision.rev,
                "assertions": {o.assertion: o.passed for o in outcomes},
            },
            next_actions=[NextAction(operation="model.read")],
        )

    # -- the read path's kernel work ---------------------------------------------------------

    def query(self, rev: str, ref: str, args: Mapping[str, Any]) -> QueryResult:
        """Run the query ``ref`` on revision ``rev`` (aliases in ``args`` resolved to ids, as
        kernels take them). A kernel that raises or answers with something that is not a
        QueryResult of JSON data is ``KERNEL_FAILED`` in the result, never an exception."""
        document = self.repository.document(rev)
        resolved = self.repository.aliases(rev).resolve_values(args)
        if self.kernel is None:
            return QueryResult(
                data={},
                diagnostics=[
                    Diagnostic(code=KERNEL_UNAVAILABLE, message=f"a query ({ref}) runs on a kernel")
                ],
            )
        try:
            return kernel_guard.query(self.kernel, document, ref, resolved)
        except KernelFailure as exc:
            return QueryResult(data={}, diagnostics=[exc.diagnostic])

    def _queries(self, candidate: Candidate, diagnostics: list[Diagnostic]) -> dict[str, Any]:
        """Run the plan's query steps (read-only), each on the state at its position in the
        plan: the base with the steps before it applied (the candidate document for a query
        after the last write); their diagnostics, and a kernel that raises, are reported,
        never raised."""
        out: dict[str, Any] = {}
        lowered = candidate.lowered
        for step, ref, args in lowered.queries:
            try:
                state = self._state_at(candidate, lowered.query_at.get(step, len(lowered.ops)))
            except PatchRejected as exc:  # the state there is not a document of its own
                diagnostics += [
                    on_step(d.model_copy(update={"phase": "query"}), lowered, step=step)
                    for d in exc.diagnostics
                ]
                continue
            try:
                result = kernel_guard.query(self.kernel, state, ref, args)
            except KernelFailure as exc:
                diagnostic = exc.diagnostic.model_copy(update={"phase": "query"})
                diagnostics.append(on_step(diagnostic, candidate.lowered, step=step))
                continue
            out[step] = dict(result.data)
            diagnostics += [
                on_step(d.model_copy(update={"phase": "query"}), candidate.lowered, step=step)
                for d in result.diagnostics
            ]
        return out


def body_wire(result: BodyResult) -> dict[str, Any]:
    """A kernel's body result as the envelope shows it (camelCase, like the wire)."""
    return {
        "valid": result.valid,
        "volume": result.volume,
        "area": result.area,
        "boundingBox": list(result.bounding_box) if result.bounding_box else None,
    }
