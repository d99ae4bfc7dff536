"""The task runtime: one task's meta-operations, admitted by the Meta-operation Contract.

A model (or an external agent over MCP) only requests operations; :class:`Task` decides.
Every call is checked before anything runs, in this order: a terminal task refuses
everything (``TASK_TERMINATED``); a request id is used once (``DUPLICATE_REQUEST_ID``); the
Session Grant is enforced at execution whatever the caller claims (``GRANT_REVOKED``,
``GRANT_EXPIRED``; denied classes and approvals inside ``plan.check``); the 9 × 9 matrix
admits the operation in the current state or returns its recoverable rejection with the
completed prefix and ``nextOperation``; the Task Protocol's ``requiredDiscoverySequence``
gates effects; a write must have the full L2 contract of every capability it uses in
the trace (described, capsule-provided, or inlined by a small-catalog manifest), not stale
since (``DISCOVERY_REQUIRED``); and a guard adapter, when the run has one, judges every
effect (``GUARD_BLOCKED``, ``GUARD_APPROVAL_REQUIRED``; :mod:`aira_core.integrations`). Only
then is a kernel or the store touched.

Repair is entered only from a real Diagnostic of preview or validate and is capped; the
five terminal states are decided here, from the trace, never from a model's text. Every
response is an observation envelope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import Field, ValidationError

from aira_core.canonical import sha256_hex, sha256_id
from aira_core.catalog.disclosure import LEVELS, Disclosure, catalog_disclosure, kernels_snapshot
from aira_core.catalog.policy import authorize
from aira_core.contracts.base import WireModel
from aira_core.contracts.capability import (
    Authorization,
    CapabilityKind,
    find_capability,
)
from aira_core.contracts.plan import NextAction, ObservationEnvelope, Plan
from aira_core.contracts.search import SearchRequest
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import Kernel
from aira_core.integrations import (
    GUARD_APPROVAL_REQUIRED,
    GUARD_BLOCKED,
    EffectEvent,
    Integrations,
)
from aira_core.model.store import MAIN
from aira_core.runtime import contract as mc
from aira_core.runtime.contract import (
    REPAIR_CAP,
    CompletionAuthority,
    MetaOperation,
    RejectionCode,
    RuntimeState,
    TerminalInputs,
    TerminalState,
)
from aira_core.runtime.plan import (
    PlanContext,
    capability_of,
    grant_problems,
    revision_types,
)
from aira_core.runtime.repairs import REPAIR_NO_REFUSED_PLAN, REPAIR_NOT_APPLICABLE, annotate
from aira_core.runtime.repairs import candidate as repair_candidate
from aira_core.runtime.write import Candidate, Rejected, WritePath, body_wire

O = MetaOperation  # noqa: E741 - as in the contract module: short names keep dispatch readable
S = RuntimeState
READS = frozenset(mc.READS)

UNKNOWN_OPERATION = "UNKNOWN_OPERATION"
ARGS_INVALID = "ARGS_INVALID"
INVALID_REQUEST_ID = "<invalid>"
"""What the envelope of a call whose request id is no string carries instead."""
DESCRIBE_NOT_VISIBLE = "DESCRIBE_NOT_VISIBLE"
QUERY_UNKNOWN = "QUERY_UNKNOWN"
PLAN_SCOPE_DENIED = "PLAN_SCOPE_DENIED"
BATCH_DEFERRED = "BATCH_DEFERRED"


class TaskProtocol(WireModel):
    """§9.4 machine-readable evidence a task must show (it only tightens the contract)."""

    required_discovery_sequence: list[MetaOperation] = Field(default_factory=list)
    required_completion_sequence: list[MetaOperation] = Field(
        default_factory=lambda: list(mc.DEFAULT_COMPLETION_SEQUENCE)
    )
    completion_authority: CompletionAuthority = CompletionAuthority.RUNTIME


class TraceRecord(WireModel):
    request_id: str
    operation: str
    state_before: RuntimeState
    state_after: RuntimeState
    status: str
    codes: list[str] = Field(default_factory=list)
    expansions: dict[str, list[str]] | None = None
    """The expanded step ids of each workflow step of a proposed plan (docs/workflows.md)."""


def _expanded_ids(expansions: Any) -> dict[str, list[str]] | None:
    """A report's ``expansions`` as the trace keeps them: the expanded step ids."""
    if not isinstance(expansions, dict) or not expansions:
        return None
    return {w: [str(s.get("id")) for s in steps] for w, steps in expansions.items()}


class Task:
    """One task on its own branch ``task/<id>``, with one kernel and one grant.

    ``branch`` names another branch to work on instead (e.g. ``main`` for a reader that only
    queries); it must exist, and no branch is created for it.
    """

    def __init__(
        self,
        ctx: PlanContext,
        kernel: Kernel,
        *,
        task_id: str,
        protocol: TaskProtocol | None = None,
        capsule_contracts: Iterable[str] = (),
        repair_cap: int = REPAIR_CAP,
        branch: str | None = None,
        integrations: Integrations | None = None,
    ) -> None:
        if not isinstance(task_id, str):
            raise AiraError(ARGS_INVALID, "a task id is a string")
        if branch is not None:
            ctx.repository.head(branch)  # STORE_BRANCH_UNKNOWN / _INVALID
        else:
            branch = f"task/{task_id}"
            if branch not in ctx.repository.store.branches():
                # checks the name too: a task id the store refuses creates nothing
                ctx.repository.store.branch(branch, ctx.repository.head(MAIN))
        self.ctx = ctx
        self.branch = branch
        self.task_id = task_id
        self.protocol = protocol or TaskProtocol()
        self.repair_cap = repair_cap
        self.state = S.READY
        self.terminal: TerminalState | None = None
        self._proposals = 0  # candidates proposed so far: which one is open (checkpoint)
        self.terminal_reason: str | None = None
        self.trace: list[TraceRecord] = []
        self._ran: list[MetaOperation] = []
        self._seen: set[str] = set()
        self._visible: set[str] = set()
        self._searched: set[str] = set()
        self._locked: dict[str, str] = {}  # capability → discovery hash when locked
        self._candidate: Candidate | None = None
        self._seconds = 0.0
        self.repair_rounds = 0
        self._write = WritePath(ctx, kernel)
        self._kernel = kernel
        self._disclosure: Disclosure | None = None
        # This task's commits on its branch, oldest first: (revision, the head it replaced).
        self._commits: list[tuple[str, str]] = []
        self._approved: set[str] = set()
        # The guard (if any) judges every admitted effect; an ``ask`` leaves its call pending
        # here, by request id, until the user approves that one call (:meth:`approve_call`).
        self.integrations = integrations
        self._asked: dict[str, tuple[str, str]] = {}  # request id → (operation, args hash)
        self._approved_calls: set[tuple[str, str, str]] = set()
        # The plan last refused (check, propose, preview, validate) and its diagnostics: what
        # a repair (model.read {"repair"}) makes a candidate of.
        self._refused: tuple[Plan, list[Diagnostic]] | None = None
        # A Task Protocol that names a discovery sequence tightens §7.1: only contracts
        # described after a search count, not manifest-inlined or capsule ones.
        self._strict = bool(self.protocol.required_discovery_sequence)
        capsule = [c for c in capsule_contracts if c in ctx.capabilities]
        if capsule and not self._strict:  # a capsule contract counts as discovery (§7.1)
            self._lock(capsule)
            self.state = mc.contract_locked(self.state)

    # -- helpers -----------------------------------------------------------------------------

    def _branch_exists(self) -> bool:
        return self.branch in self.ctx.repository.store.branches()

    @property
    def head(self) -> str:
        return self.ctx.repository.head(self.branch)

    @property
    def candidate_document(self) -> Any:
        """The open candidate's document (an ``AmirDocument``), or None: what a refusal after
        its preview speaks of, before any revision holds it."""
        return self._candidate.document if self._candidate is not None else None

    @property
    def checkpoint(self) -> tuple[Any, ...]:
        """What a write operation's answer depends on: the state, the candidate, the head and
        the terminal. Equal before and after a call: the call moved nothing (a host that
        answers a repeated preview or validate from its record compares these)."""
        return (self.state, self._proposals, self.head, self.terminal)

    def _lock(self, capabilities: Iterable[str]) -> None:
        current = self.ctx.catalog.discovery_catalog_hash()
        for cap in capabilities:
            self._visible.add(cap)
            self._locked[cap] = current

    def shown(self, capabilities: Iterable[str]) -> list[str]:
        """Count capabilities whose contract or signature the agent was shown outside this
        task, under the catalog snapshot in force now, as discovered here (§7.1: what the
        caller has seen, not what it searched for in this task, is what discovery is for).
        They become describable and usable in a plan; ids the catalog does not hold are
        skipped, and a Task Protocol that names a discovery sequence takes none. Returns
        the ids taken, in order."""
        if self._strict or self.terminal is not None:
            return []
        taken = [c for c in dict.fromkeys(capabilities) if c in self.ctx.capabilities]
        if taken:
            self._lock(taken)
            self.state = mc.contract_locked(self.state)
        return taken

    def _envelope(
        self,
        request_id: str,
        status: str,
        *,
        data: Mapping[str, Any] | None = None,
        diagnostics: Sequence[Diagnostic] = (),
        effects: Sequence[str] = (),
    ) -> ObservationEnvelope:
        budget = self.ctx.grant.budgets.compute_seconds
        actions = [NextAction(operation=op.value) for op in mc.legal_operations(self.state)]
        # registered repair capabilities for the codes seen, and their actions (§11.3)
        diagnostics, repairs = annotate(self.ctx.capabilities, diagnostics)
        actions += repairs
        # a repair a refusal names was shown to the caller: it may describe it (not use it
        # in a plan before it did: discovery still locks what a plan uses)
        self._visible.update(cap for d in diagnostics for cap in d.repairs or ())
        return ObservationEnvelope(
            request_id=request_id,
            observed_revision=self.head if self._branch_exists() else None,
            status=status,  # type: ignore[arg-type]
            data={"state": self.state.value, "terminal": self.terminal, **(data or {})},
            diagnostics=list(diagnostics),
            effects_observed=list(effects),
            budgets={  # type: ignore[arg-type]
                "consumed": {
                    "kernelSeconds": round(self._seconds, 6),
                    "calls": float(len(self._ran)),
                },
                "remaining": {"kernelSeconds": max(0.0, budget - self._seconds)}
                if budget is not None
                else {},
            },
            next_actions=actions,
        )

    def _refuse(
        self,
        request_id: str,
        op: str,
        code: str,
        message: str,
        next_operation: MetaOperation | None = None,
        status: str = "blocked",
        *,
        remember: bool = True,
    ) -> ObservationEnvelope:
        """A refusal, traced; ``remember``: the request id is used up (not for the
        placeholders a call without a usable id is refused under)."""
        if remember:
            self._seen.add(request_id)
        self.trace.append(
            TraceRecord(
                request_id=request_id,
                operation=op,
                state_before=self.state,
                state_after=self.state,
                status=status,
                codes=[code],
            )
        )
        return self._envelope(
            request_id,
            status,
            data={
                "rejection": code,
                "completedPrefix": [o.value for o in self._ran],
                "nextOperation": next_operation.value if next_operation else None,
            },
            diagnostics=[Diagnostic(code=code, message=message, subject=op)],
        )

    def refuse(
        self, request_id: str, operation: str, code: str, message: str
    ) -> ObservationEnvelope:
        """A call a transport refuses before the runtime runs it (arguments its own schema
        rejects), as the runtime refuses one: traced, the request id used up, no state
        change."""
        return self._refuse(request_id, operation, code, message)

    def readable(self, rev: str) -> bool:
        """Whether the grant lets this task read revision ``rev`` (see :meth:`_readable`)."""
        return self._readable(rev)

    def _readable(self, rev: str) -> bool:
        """Whether the grant lets this task read revision ``rev``: any, for a grant that
        names no branches (or ``*``); else one in the history of this task's branch or of a
        branch the grant names."""
        readable = self.ctx.grant.readable.branches
        if not readable or "*" in readable:
            return True
        store = self.ctx.repository.store
        branches = store.branches()
        return any(
            rev == record.rev
            for branch in {self.branch, *readable}
            if branch in branches
            for record in store.log(branch, limit=None)
        )

    def _grant_problem(self) -> tuple[str, str] | None:
        problems = grant_problems(self.ctx.grant, datetime.now(UTC))
        return problems[0] if problems else None

    def _missing_discovery(self, plan: Plan) -> list[str]:
        current = self.ctx.catalog.discovery_catalog_hash()
        used = [s.capability for s in plan.steps] + [
            capability_of(self.ctx, a.validator_ref) for a in plan.acceptance_assertions
        ]
        return [cap for cap in used if self._locked.get(cap) != current]

    def approve(self, action: str) -> None:
        """The user (through the host, never the model) approves an action for this task:
        ``"publish"``, or ``"risk"`` for capabilities above the grant's auto-commit risk."""
        self._approved.add(action)

    def withdraw(self, action: str) -> None:
        """The approval of ``action`` given with :meth:`approve` no longer holds (a host
        that asked the user for one call withdraws it after that call)."""
        self._approved.discard(action)

    def approve_call(self, request_id: str) -> bool:
        """The user (through the host, never the model) approves the one call the guard
        asked about: sent again with the same request id, operation and arguments, it runs
        without being judged again, once. A later similar call is judged anew (spec 004: an
        approval authorises the pending call, never the calls like it). False: no call with
        that request id is pending."""
        asked = self._asked.pop(request_id, None)
        if asked is None:
            return False
        self._approved_calls.add((request_id, *asked))
        return True

    @property
    def pending_approvals(self) -> list[tuple[str, str]]:
        """``(operation, request id)`` of every call the guard asked about and the user has
        not approved yet, in the order asked."""
        return [(op, rid) for rid, (op, _) in self._asked.items()]

    # -- the entry point ---------------------------------------------------------------------

    def call(
        self, operation: str, request_id: str, args: Mapping[str, Any] | None = None
    ) -> ObservationEnvelope:
        """Run one meta-operation if the runtime admits it; always an envelope back."""
        if not isinstance(request_id, str) or not request_id:
            # Nothing to refuse it under: the envelope and the trace carry a placeholder, and
            # no request id is used up.
            return self._refuse(
                INVALID_REQUEST_ID,
                operation if isinstance(operation, str) else "?",
                ARGS_INVALID,
                "a request id is a non-empty string",
                remember=False,
            )
        if not isinstance(operation, str):
            return self._refuse(
                request_id, "?", UNKNOWN_OPERATION, "the operation is the name of a meta-operation"
            )
        if args is not None and not isinstance(args, Mapping):
            return self._refuse(
                request_id, str(operation), ARGS_INVALID, "arguments must be a JSON object"
            )
        args = dict(args or {})
        if self.terminal is not None:
            return self._refuse(
                request_id,
                operation,
                RejectionCode.TASK_TERMINATED,
                f"the task ended as {self.terminal.value}",
            )
        if request_id in self._seen:
            return self._refuse(
                request_id,
                operation,
                RejectionCode.DUPLICATE_REQUEST_ID,
                f"request id {request_id} was used before",
            )
        try:
            op = MetaOperation(operation)
        except ValueError:
            return self._refuse(
                request_id,
                operation,
                UNKNOWN_OPERATION,
                f"{operation!r} is not one of the nine meta-operations",
            )
        problem = self._grant_problem()
        if problem is not None:
            envelope = self._refuse(request_id, op.value, *problem)
            self._decide(authority_failure=True)
            return envelope.model_copy(
                update={"data": {**envelope.data, "terminal": self.terminal}}
            )
        cell = mc.admit(self.state, op)
        if not cell.legal:
            return self._refuse(
                request_id,
                op.value,
                str(cell.rejection),
                f"{op.value} is not legal in state {self.state.value}",
                cell.next_operation,
            )
        if op not in READS:
            missing = [o for o in self.protocol.required_discovery_sequence if o not in self._ran]
            if missing:
                return self._refuse(
                    request_id,
                    op.value,
                    RejectionCode.DISCOVERY_REQUIRED,
                    "the Task Protocol requires " + ", ".join(o.value for o in missing) + " first",
                    missing[0],
                )
        if op not in READS and self.integrations is not None:
            refused = self._judged(op, request_id, args)
            if refused is not None:
                return refused
        self._seen.add(request_id)
        before = self.state
        try:
            envelope = self._run(op, request_id, args)
        except AiraError as exc:  # an authority (store, kernel) refused: reported, not raised
            envelope = self._envelope(request_id, "failed", diagnostics=[exc.diagnostic])
        self.trace.append(
            TraceRecord(
                request_id=request_id,
                operation=op.value,
                state_before=before,
                state_after=self.state,
                status=envelope.status,
                codes=[d.code for d in envelope.diagnostics],
                expansions=_expanded_ids(envelope.data.get("expansions")),
            )
        )
        self._decide()
        if self.terminal is not None:
            envelope = envelope.model_copy(
                update={
                    "data": {
                        **envelope.data,
                        "state": self.state.value,
                        "terminal": self.terminal.value,
                        "terminalReason": self.terminal_reason,
                    }
                }
            )
        return envelope

    def _judged(
        self, op: MetaOperation, request_id: str, args: dict[str, Any]
    ) -> ObservationEnvelope | None:
        """The guard's verdict on an effect the runtime has admitted, before any kernel or
        store work: None to run it (allow, no guard, a guard that failed: fail-open), else
        the refusal (``GUARD_BLOCKED``; ``GUARD_APPROVAL_REQUIRED`` for an ``ask``, whose
        request id stays unused so that the approved call can be sent again)."""
        assert self.integrations is not None
        try:
            fingerprint = sha256_hex(args)
        except (TypeError, ValueError):
            fingerprint = repr(sorted(args.items()))
        approved = (request_id, op.value, fingerprint)
        if approved in self._approved_calls:
            self._approved_calls.discard(approved)  # one approval, one call
            return None
        publish = op is O.MODEL_COMMIT and bool(args.get("publish", False))
        action = "publish" if publish else op.value
        event = EffectEvent(
            task_id=self.task_id,
            contract=self.integrations.contract,
            request_id=request_id,
            operation=op.value,
            effect_class=mc.effect_class(op, publish=publish).value,
            action=action,
            capabilities=self._capabilities_of(op, args),
            target=MAIN if publish else self.branch,
        )
        verdict = self.integrations.judge(event)
        if verdict is None or verdict.decision == "allow":
            return None
        name = self.integrations.active("guard").name  # type: ignore[union-attr]
        if verdict.decision == "block":
            return self._refuse(
                request_id,
                op.value,
                GUARD_BLOCKED,
                f"guard {name!r} blocked {action}: {verdict.reason}; nothing was run",
            )
        self._asked[request_id] = (op.value, fingerprint)
        refused = self._refuse(
            request_id,
            op.value,
            GUARD_APPROVAL_REQUIRED,
            f"guard {name!r} asks the user to approve this {action} ({verdict.reason}); "
            "nothing was run. Once approved, this one call may be sent again as it was",
            remember=False,
        )
        return refused.model_copy(
            update={
                "data": {
                    **refused.data,
                    "approvalRequired": {"requestId": request_id, "operation": op.value},
                },
                "diagnostics": [
                    d.model_copy(update={"approval": True}) for d in refused.diagnostics
                ],
            }
        )

    def _capabilities_of(self, op: MetaOperation, args: Mapping[str, Any]) -> tuple[str, ...]:
        """The capabilities of the plan an effect carries: the proposed plan's, else the
        candidate's (what a guard matches its rules against)."""
        if op is O.MODEL_PROPOSE_PATCH:
            plan = args.get("plan")
            steps = plan.get("steps") if isinstance(plan, Mapping) else None
            return tuple(
                str(s["capability"])
                for s in (steps if isinstance(steps, list) else [])
                if isinstance(s, Mapping) and "capability" in s
            )
        if self._candidate is not None and self._candidate.plan is not None:
            return tuple(s.capability for s in self._candidate.plan.steps)
        return ()

    def batch(self, calls: Sequence[Any]) -> list[ObservationEnvelope]:
        """A provider turn with several calls ``{"requestId", "operation", "args"?}``,
        reduced by §12.2: reads run, at most one effect runs, irreversible effects alone and
        last, duplicates refused, the rest deferred (their envelopes say so; their request
        ids stay unused, to be sent again after the real response). Envelopes come back in
        decision order: refused, scheduled, deferred."""
        parsed: list[mc.Call] = []
        out: list[ObservationEnvelope] = []
        kept: list[Mapping[str, Any]] = []
        if not isinstance(calls, list | tuple):
            return [
                self._refuse(
                    "batch",
                    "batch",
                    ARGS_INVALID,
                    "a batch is a JSON array of call objects",
                    remember=False,
                )
            ]
        for n, call in enumerate(calls):
            try:
                if not isinstance(call, Mapping):
                    raise ValueError("a call is a JSON object")
                args = call.get("args") or {}
                if not isinstance(args, Mapping):
                    raise ValueError("args must be a JSON object")
                parsed.append(
                    mc.Call(
                        request_id=call["requestId"],
                        operation=call["operation"],
                        publish=bool(args.get("publish", False))
                        and call["operation"] == O.MODEL_COMMIT.value,
                    )
                )
                kept.append(call)
            except (KeyError, TypeError, ValueError, ValidationError) as exc:
                out.append(
                    self._refuse(
                        f"batch:{n}",
                        "batch",
                        ARGS_INVALID,
                        f"call {n} of the batch is malformed: {exc}",
                        remember=False,
                    )
                )
        decision = mc.reduce_batch(parsed, self._seen)
        for entry in decision.refused:
            out.append(
                self._refuse(
                    entry.request_id,
                    entry.operation.value,
                    str(entry.code),
                    "refused by batch reduction",
                )
            )
        for entry in decision.scheduled:
            call = kept[entry.index]
            out.append(self.call(call["operation"], call["requestId"], call.get("args")))
        for entry in decision.deferred:
            out.append(
                self._envelope(
                    entry.request_id,
                    "blocked",
                    data={"deferred": True, "operation": entry.operation.value},
                    diagnostics=[
                        Diagnostic(
                            code=BATCH_DEFERRED,
                            subject=entry.operation.value,
                            message="at most one effect runs per turn; send this call again after "
                            "reading the response",
                        )
                    ],
                )
            )
        return out

    def finish(self, request_id: str = "finish") -> ObservationEnvelope:
        """The model says it is done: the runtime decides whether the evidence says so."""
        decision = self._decide(completion_claimed=True)
        status = "success" if self.terminal is TerminalState.COMPLETED else "blocked"
        return self._envelope(request_id, status, data={"decision": decision.reason})

    def cancel(self, request_id: str = "cancel") -> ObservationEnvelope:
        self._decide(cancelled=True)
        return self._envelope(request_id, "success")

    def own_commits(self) -> list[Any]:
        """The commits this task made on its branch, oldest first (what :meth:`adopt`
        accepts after an interruption)."""
        log = self.ctx.repository.store.log(self.branch, limit=None)
        return [
            r
            for r in reversed(log)
            if r.kind == "commit" and (r.meta or {}).get("task") == self.task_id
        ]

    def adopt(self, rev: str, request_id: str = "adopt") -> ObservationEnvelope:
        """Resume: a commit this task made before its process was interrupted, found on its
        branch, counts as committed work without being proposed, previewed or committed
        again. Only a commit of this task, on this branch, directly on its current
        progress is adopted."""
        if not isinstance(rev, str):
            return self._refuse(request_id, "adopt", ARGS_INVALID, "a revision id is a string")
        record = {r.rev: r for r in self.own_commits()}.get(rev)
        done = {c for c, _ in self._commits}
        if record is None or rev in done:
            return self._refuse(
                request_id, "adopt", ARGS_INVALID, f"{rev} is no commit of task {self.task_id}"
            )
        for op in (
            O.MODEL_PROPOSE_PATCH,
            O.MODEL_PREVIEW,
            O.MODEL_VALIDATE,
            O.MODEL_COMMIT,
        ):
            self._advance(op)
        self._commits.append((rev, record.parent or ""))
        return self._envelope(request_id, "success", data={"rev": rev, "adopted": True})

    def abstain(self, request_id: str = "abstain", reason: str = "") -> ObservationEnvelope:
        """The planner found no legal action toward the goal: an explicit abstention, which
        the runtime turns into ``cannotProceed``."""
        decision = self._decide(no_legal_action=True)
        return self._envelope(
            request_id, "success", data={"decision": decision.reason, "reason": reason}
        )

    def exhaust(self, request_id: str = "budget", reason: str = "") -> ObservationEnvelope:
        """A task budget the host meters (steps, tokens, money) ran out: ``budgetExhausted``
        (unless the evidence already says completed)."""
        decision = self._decide(budget_exhausted=True)
        return self._envelope(
            request_id, "success", data={"decision": decision.reason, "reason": reason}
        )

    def completion_check(self) -> str:
        """What :meth:`finish` would decide now, deciding nothing: ``COMPLETED``, or the
        reason the runtime would not complete the task (what a guard's completion check is
        told)."""
        if self.terminal is not None:
            return self.terminal_reason or "TERMINAL"
        decision = mc.decide_terminal(self._terminal_inputs(completion_claimed=True))
        if decision.terminal is TerminalState.COMPLETED:
            return "COMPLETED"
        return decision.reason

    def _terminal_inputs(self, **flags: bool) -> TerminalInputs:
        budget = self.ctx.grant.budgets.compute_seconds
        return TerminalInputs(
            state=self.state,
            trace=self._ran,
            required_completion_sequence=self.protocol.required_completion_sequence,
            completion_authority=self.protocol.completion_authority,
            repair_rounds=self.repair_rounds,
            repair_cap=self.repair_cap,
            budget_exhausted=flags.pop("budget_exhausted", False)
            or (budget is not None and self._seconds >= budget),
            **flags,
        )

    def _decide(self, **flags: bool) -> mc.TerminalDecision:
        if self.terminal is not None:
            return mc.TerminalDecision(
                terminal=self.terminal, reason=self.terminal_reason or "TERMINAL"
            )
        decision = mc.decide_terminal(self._terminal_inputs(**flags))
        if decision.terminal is not None:
            self.terminal = decision.terminal
            self.terminal_reason = decision.reason
            self.state = S.TERMINAL
        return decision

    # -- the nine operations -----------------------------------------------------------------

    def _run(self, op: MetaOperation, request_id: str, args: dict[str, Any]) -> ObservationEnvelope:
        handler = {
            O.INTERFACE_MANIFEST: self._manifest,
            O.CATALOG_SEARCH: self._search,
            O.CATALOG_DESCRIBE: self._describe,
            O.MODEL_READ: self._read,
            O.MODEL_PROPOSE_PATCH: self._propose,
            O.MODEL_PREVIEW: self._preview,
            O.MODEL_VALIDATE: self._validate,
            O.MODEL_COMMIT: self._commit,
            O.MODEL_REVERT: self._revert,
        }[op]
        return handler(op, request_id, args)

    def _advance(self, op: MetaOperation, diagnostic: Diagnostic | None = None) -> None:
        self.state = mc.next_state(self.state, op, diagnostic=diagnostic)
        self._ran.append(op)

    @property
    def disclosure(self) -> Disclosure:
        """The disclosure levels for this task's catalog, runtime and grant (built once, as
        the CLI builds its own: one query, one ranking)."""
        if self._disclosure is None:
            self._disclosure = catalog_disclosure(
                self.ctx.catalog,
                snapshot=kernels_snapshot([self._kernel], self._write.registered_validators()),
                grant=self.ctx.grant,
            )
        return self._disclosure

    def _revision_types(self) -> set[str]:
        return revision_types(self.ctx.repository.document(self.head), self.ctx)

    def _manifest(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        data = self.disclosure.manifest(
            meta_operations=[o.value for o in O], contract_version=mc.CONTRACT_VERSION
        )
        self._advance(op)
        if data["smallCatalog"]:
            for cap in data["contracts"]:
                self._visible.add(cap)
            if not self._strict:  # a tightened Task Protocol wants explicit discovery (§9.4)
                self._lock(data["contracts"])
                self.state = mc.contract_locked(self.state)
        return self._envelope(rid, "success", data=data)

    def _search(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        try:
            request = SearchRequest.model_validate(args, by_name=False)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = "/".join(str(p) for p in first["loc"]) or "(root)"
            return self._refuse(
                rid, op.value, ARGS_INVALID, f"catalog.search: {first['msg']} at /{where}"
            )
        response = self.disclosure.search(
            request,
            revision_types=self._revision_types(),
            selection_count=len(request.selection_refs),
        )
        for h in response.hits:
            self._visible.add(h.capability_id)
            self._searched.add(h.capability_id)
        self._advance(op)
        return self._envelope(rid, "success", data=response.to_wire())

    def _describe(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        cap = args.get("capabilityId")
        cap = cap if isinstance(cap, str) else None
        strict = O.CATALOG_SEARCH in self.protocol.required_discovery_sequence
        allowed = self._searched if strict else self._visible
        if cap not in allowed or cap not in self.ctx.capabilities:
            return self._refuse(
                rid,
                op.value,
                DESCRIBE_NOT_VISIBLE,
                f"{cap!r} was not shown by a search, the capsule, the manifest or a refusal "
                "of this task",
                O.CATALOG_SEARCH,
            )
        level = args.get("level", "L2")
        selection = args.get("selectionRefs", [])
        if level not in LEVELS or not isinstance(selection, list):
            return self._refuse(
                rid,
                op.value,
                ARGS_INVALID,
                f"catalog.describe takes level {', '.join(LEVELS)} and a list of selectionRefs",
            )
        data = self.disclosure.describe(
            cap,
            level,
            revision=self.head,
            revision_types=self._revision_types(),
            selection_refs=[str(s) for s in selection],
        )
        self._lock([cap])
        self._advance(op)
        return self._envelope(rid, "success", data=data)

    def _read(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        """The head's summary, a bounded page (``select``), or a query capability run on the
        kernel (``query`` + ``args``): the one read path every kernel query takes."""
        repo = self.ctx.repository
        head = self.head
        if "query" in args:
            return self._query(op, rid, head, args)
        if "repair" in args:
            return self._repair(op, rid, args)
        if "select" in args:
            limit, offset = args.get("limit", 50), args.get("offset", 0)
            if not isinstance(limit, int) or not isinstance(offset, int):
                return self._refuse(rid, op.value, ARGS_INVALID, "limit and offset are integers")
            page = repo.select(head, args["select"], limit, offset)
            data = {"page": page.to_wire()}
        else:
            data = {"summary": repo.summary(head).to_wire()}
        self._advance(op)
        return self._envelope(rid, "success", data=data)

    def _query(
        self, op: MetaOperation, rid: str, head: str, args: dict[str, Any]
    ) -> ObservationEnvelope:
        name, arguments = args.get("query"), args.get("args", {})
        rev = args.get("rev", head)
        if not isinstance(name, str) or not isinstance(arguments, Mapping):
            return self._refuse(
                rid, op.value, ARGS_INVALID, "model.read query takes a name and an args object"
            )
        if not isinstance(rev, str):
            return self._refuse(rid, op.value, ARGS_INVALID, "rev is a revision id")
        if rev != head and not self._readable(rev):
            return self._refuse(
                rid,
                op.value,
                PLAN_SCOPE_DENIED,
                f"grant {self.ctx.grant.grant_id} covers no branch whose history holds {rev[:80]}",
            )
        descriptors = {cap: e.descriptor for cap, e in self.ctx.capabilities.items()}
        cap, known = find_capability(descriptors, name, CapabilityKind.MODEL_QUERY)
        if cap is None:
            return self._refuse(
                rid,
                op.value,
                QUERY_UNKNOWN,
                f"no admitted query {name[:80]!r}; known: " + (", ".join(known) or "none"),
                O.CATALOG_SEARCH,
            )
        decision, reasons = authorize(self.ctx.grant, descriptors[cap])
        if decision is Authorization.DENIED:
            return self._refuse(rid, op.value, *reasons[0])
        result = self._write.query(rev, self.ctx.capabilities[cap].ref, arguments)
        self._advance(op)
        diagnostics = [d.model_copy(update={"phase": "query"}) for d in result.diagnostics]
        return self._envelope(
            rid,
            "failed" if diagnostics else "success",
            data={"query": cap, "rev": rev, "result": dict(result.data)},
            diagnostics=diagnostics,
        )

    def _repair(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        """The candidate a repair capability makes of the plan this task last had refused,
        for one of its diagnostics (``diagnostic``: ``{"code", "step"?}``). Read-only: the
        candidate is a plan to propose, nothing is written (§11.3)."""
        cap, on = args.get("repair"), args.get("diagnostic", {})
        if not isinstance(cap, str) or not isinstance(on, Mapping):
            return self._refuse(
                rid,
                op.value,
                ARGS_INVALID,
                "model.read repair takes a capability id and a diagnostic object {code, step}",
            )
        entry = self.ctx.capabilities.get(cap)
        if entry is not None:
            decision, reasons = authorize(self.ctx.grant, entry.descriptor)
            if decision is Authorization.DENIED:
                return self._refuse(rid, op.value, *reasons[0])
        plan, found = self._refused if self._refused is not None else (None, [])
        diagnostic = next(
            (
                d
                for d in found
                if d.code == on.get("code", d.code) and d.subject == on.get("step", d.subject)
            ),
            None,
        )
        try:
            if plan is None:
                raise AiraError(
                    REPAIR_NO_REFUSED_PLAN,
                    "this task has had no plan refused: a repair makes a candidate of one",
                )
            if diagnostic is None:
                raise AiraError(
                    REPAIR_NOT_APPLICABLE,
                    "the plan this task last had refused carries no diagnostic "
                    + (f"{on.get('code')!s:.80}" if on.get("code") is not None else "")
                    + (f" on step {on.get('step')!s:.80}" if on.get("step") is not None else "")
                    + "; its diagnostics: "
                    + (
                        ", ".join(
                            d.code + (f" on {d.subject}" if d.subject else "") for d in found[:8]
                        )
                        or "none"
                    ),
                )
            result = repair_candidate(self.ctx.capabilities, cap, plan, diagnostic)
        except AiraError as exc:
            return self._refuse(rid, op.value, exc.code, exc.diagnostic.message)
        self._advance(op)
        return self._envelope(
            rid,
            "success",
            data={"candidate": result},
        )

    def _propose(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        try:
            plan = Plan.model_validate(args.get("plan"), by_name=False)
        except ValidationError as exc:
            return self._refuse(
                rid,
                op.value,
                ARGS_INVALID,
                f"model.proposePatch needs a plan: {exc.error_count()} errors",
            )
        missing = self._missing_discovery(plan)
        if missing:
            return self._refuse(
                rid,
                op.value,
                RejectionCode.DISCOVERY_REQUIRED,
                "no full contract (or a stale one) in this task for "
                + ", ".join(sorted(set(missing))),
                O.CATALOG_DESCRIBE,
            )
        try:
            candidate = self._write.propose(
                plan, rid, branch=self.branch, approved="risk" in self._approved
            )
        except Rejected as exc:
            self._refused = (plan, list(exc.envelope.diagnostics))
            return exc.envelope.model_copy(
                update={"data": {**exc.envelope.data, "state": self.state.value}}
            )
        if self.state is S.REPAIRING:
            self.repair_rounds += 1
        self._candidate = candidate
        self._proposals += 1
        self._advance(op)
        return self._envelope(
            rid,
            "success",
            data={
                "planId": candidate.report.plan_id,
                "ops": len(candidate.lowered.ops),
                "uncertainty": candidate.report.uncertainty.to_wire(),
                **(
                    {"expansions": candidate.report.expansions}
                    if candidate.report.expansions
                    else {}
                ),
            },
            # a passing plan's findings are warnings (SELECTOR_PRECEDENCE_AMBIGUOUS …)
            diagnostics=candidate.report.diagnostics,
        )

    def _failed(self, op: MetaOperation, rejected: Rejected) -> ObservationEnvelope:
        first = next((d for d in rejected.envelope.diagnostics), None)
        self._advance(op, first)
        envelope = rejected.envelope
        if self._candidate is not None and self._candidate.plan is not None:
            self._refused = (self._candidate.plan, list(envelope.diagnostics))
        return envelope.model_copy(
            update={
                "data": {**envelope.data, "state": self.state.value},
                "next_actions": self._envelope(
                    "-", "failed", diagnostics=envelope.diagnostics
                ).next_actions,
            }
        )

    def _preview(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        assert self._candidate is not None  # the matrix admits preview only with a candidate
        try:
            evaluation, seconds = self._write.preview(self._candidate, rid)
        except Rejected as exc:
            self._seconds += exc.envelope.budgets.consumed.get("kernelSeconds", 0.0)
            return self._failed(op, exc)
        self._seconds += seconds
        self._advance(op)
        return self._envelope(
            rid,
            "success",
            data={
                "bodies": {b: body_wire(r) for b, r in evaluation.bodies.items()},
                "evaluatedNodes": list(evaluation.evaluated_nodes),
            },
        )

    def _validate(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        assert self._candidate is not None
        try:
            outcomes, seconds = self._write.validate(self._candidate, rid, 0.0)
        except Rejected as exc:
            self._seconds += exc.envelope.budgets.consumed.get("kernelSeconds", 0.0)
            return self._failed(op, exc)
        self._seconds += seconds
        self._advance(op)
        token = sha256_id(
            "validation",
            {"plan": self._candidate.report.plan_id, "document": self._candidate.document},
        )
        return self._envelope(
            rid,
            "success",
            data={
                "validationToken": token,
                "assertions": {o.assertion: o.passed for o in outcomes},
            },
            diagnostics=self._candidate.warnings,  # ASSERTION_FAILS_ON_RESULT
        )

    def _commit(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        candidate = self._candidate
        assert candidate is not None
        try:
            committed = self._write.commit(
                candidate,
                rid,
                branch=self.branch,
                message=f"plan {candidate.plan_id}",
                meta={"planId": candidate.plan_id, "task": self.task_id},
                publish=bool(args.get("publish", False)),
                approved="publish" in self._approved,  # the host's record, never the caller's
                publish_message=f"publish task {self.task_id}",
            )
        except Rejected as exc:  # nothing was written: the candidate stays open
            refused = exc.envelope
            return self._envelope(
                rid, refused.status, diagnostics=refused.diagnostics, data=refused.data
            )
        self._commits.append((committed.rev, candidate.base_revision or ""))
        self._candidate = None
        self._advance(op)
        data: dict[str, Any] = {"rev": committed.rev}
        if committed.published:
            data["published"] = committed.published
        return self._envelope(
            rid,
            "partial" if committed.diagnostics else "success",
            effects=committed.effects,
            data=data,
            diagnostics=committed.diagnostics,
        )

    def _revert(self, op: MetaOperation, rid: str, args: dict[str, Any]) -> ObservationEnvelope:
        head = self.head
        if not self._commits or head != self._commits[-1][0]:
            return self._refuse(
                rid,
                op.value,
                RejectionCode.NOTHING_TO_REVERT,
                "the head of the task branch is not a commit of this task",
            )
        committed, before = self._commits[-1]
        envelope = self._write.revert(
            before, rid, branch=self.branch, expected_head=head, message=f"revert {committed}"
        )
        if envelope.status != "success":
            return self._envelope(
                rid, envelope.status, diagnostics=envelope.diagnostics, data=envelope.data
            )
        self._commits.pop()
        self._advance(op)
        return self._envelope(
            rid, "success", effects=envelope.effects_observed, data={"rev": envelope.data["rev"]}
        )


def read_query(
    ctx: PlanContext,
    kernel: Kernel,
    name: str,
    args: Mapping[str, Any],
    *,
    rev: str | None = None,
    branch: str = MAIN,
    request_id: str = "query",
) -> ObservationEnvelope:
    """One query capability run on ``rev`` (default: the head of ``branch``) by a reader
    task on ``branch``: the same admission, grant check and trace as a task's own queries,
    and no branch is created."""
    reader = Task(ctx, kernel, task_id="reader", branch=branch)
    return reader.call(
        O.MODEL_READ.value,
        request_id,
        {"query": name, "args": dict(args), **({"rev": rev} if rev is not None else {})},
    )
