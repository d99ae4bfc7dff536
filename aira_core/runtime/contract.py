"""Meta-operation Contract v1 (RFC §11–12) as data, with the pure rules of §12.2.

The nine Core meta-operations carry their effect class, idempotency and reversibility
(§12.1); the nine runtime states and the full 9 × 9 admission matrix say which operation is
legal where, what state it leads to and, when it is not, which stable rejection to return and
which operation makes progress instead. Around that data sit small pure functions: admission
(:func:`admit`, :func:`replay`), batch reduction (:func:`reduce_batch`) and the terminal
decision (:func:`decide_terminal`). Nothing here calls a kernel or keeps task state; the task
session asks these functions and records their answers in the trace. The shared corpus under
``corpus/`` (:func:`load_corpus`) replays the same rules for every transport.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from importlib import resources
from typing import Any, Literal, NamedTuple

from pydantic import Field, model_validator

from aira_core.codes import CODES
from aira_core.contracts.base import DiagnosticCode, WireModel
from aira_core.diagnostics import AiraError, Diagnostic, Severity

CONTRACT_VERSION = "1.0.0"
REPAIR_CAP = 3
"""Default number of repair rounds a task may spend (§12.2, MVP default)."""

UNKNOWN_OPERATION = "UNKNOWN_OPERATION"
UNKNOWN_STATE = "UNKNOWN_STATE"
REPAIR_REQUIRES_DIAGNOSTIC = "REPAIR_REQUIRES_DIAGNOSTIC"
CORPUS_NOT_FOUND = "CORPUS_NOT_FOUND"


# -- enums ---------------------------------------------------------------------------------


class MetaOperation(StrEnum):
    """The nine Core v1 meta-operations (§12); ``model.query`` and ``plan.check`` stay
    protocol semantics inside ``model.read`` and ``model.proposePatch``."""

    INTERFACE_MANIFEST = "interface.manifest"
    CATALOG_SEARCH = "catalog.search"
    CATALOG_DESCRIBE = "catalog.describe"
    MODEL_READ = "model.read"
    MODEL_PROPOSE_PATCH = "model.proposePatch"
    MODEL_PREVIEW = "model.preview"
    MODEL_VALIDATE = "model.validate"
    MODEL_COMMIT = "model.commit"
    MODEL_REVERT = "model.revert"


class EffectClass(StrEnum):
    """How far an operation's effect reaches (§12.1); batch reduction schedules by it."""

    READ = "read"
    BUFFERABLE = "bufferable"
    REVERSIBLE = "reversible"
    IRREVERSIBLE = "irreversible"


class Idempotency(StrEnum):
    """What makes a repeated call the same call (§12.1)."""

    ALWAYS = "always"
    IDEMPOTENCY_KEY = "idempotencyKey"
    FULL_BINDING = "fullBinding"
    CAS = "cas"
    REQUEST = "request"


class Reversibility(StrEnum):
    """How an operation's effect is undone."""

    NO_EFFECT = "noEffect"
    """Nothing to undo: no model or task-branch state is produced."""
    DISCARDABLE = "discardable"
    """Task-local candidate/preview/validation artifacts; abandoning the task writes nothing."""
    REVERT_REVISION = "revertRevision"
    """Undone by a new revert revision; history is never rewritten."""
    IRREVERSIBLE = "irreversible"
    """Crosses task isolation or the system boundary."""


class RuntimeState(StrEnum):
    """The nine states of the task runtime (§11.1 loop as enforced by §12.2)."""

    READY = "ready"
    DISCOVERED = "discovered"
    DESCRIBED = "described"
    PROPOSED = "proposed"
    PREVIEWED = "previewed"
    VALIDATED = "validated"
    COMMITTED = "committed"
    REPAIRING = "repairing"
    TERMINAL = "terminal"


class TerminalState(StrEnum):
    """The five explicit ends of a task (§11.1); only the runtime decides them."""

    COMPLETED = "completed"
    CANNOT_PROCEED = "cannotProceed"
    BUDGET_EXHAUSTED = "budgetExhausted"
    CANCELLED = "cancelled"
    FAILED = "failed"


class RejectionCode(StrEnum):
    """Stable codes of a refused call. The transaction codes name the first missing stage."""

    DISCOVERY_REQUIRED = "DISCOVERY_REQUIRED"
    CANDIDATE_REQUIRED = "CANDIDATE_REQUIRED"
    PREVIEW_REQUIRED = "PREVIEW_REQUIRED"
    VALIDATION_REQUIRED = "VALIDATION_REQUIRED"
    NOTHING_TO_REVERT = "NOTHING_TO_REVERT"
    TASK_TERMINATED = "TASK_TERMINATED"
    DUPLICATE_REQUEST_ID = "DUPLICATE_REQUEST_ID"


class CompletionAuthority(StrEnum):
    """Who ends a task (§9.4). Either way ``completed`` needs the runtime's evidence."""

    RUNTIME = "runtime"
    MODEL = "model"


O = MetaOperation  # noqa: E741 - short aliases keep the matrix below readable as a table
S = RuntimeState
T = TerminalState
R = RejectionCode

READS = (O.INTERFACE_MANIFEST, O.CATALOG_SEARCH, O.CATALOG_DESCRIBE, O.MODEL_READ)

STATE_SUMMARIES: dict[RuntimeState, str] = {
    S.READY: "Task opened; nothing but reads yet, no capability contract locked.",
    S.DISCOVERED: "catalog.search returned hits; no full L2 contract locked yet.",
    S.DESCRIBED: (
        "At least one full L2 contract is locked in the trace: by catalog.describe, by the "
        "Task Capsule, or inlined by a small-catalog interface.manifest (§7.1); writes may start."
    ),
    S.PROPOSED: "A task-local candidate patch exists (lowered and statically checked).",
    S.PREVIEWED: "The current candidate has a preview (diff, diagnostics, artifacts).",
    S.VALIDATED: "The current candidate holds a validation token from authoritative evaluation.",
    S.COMMITTED: (
        "The last effect committed (or reverted) a revision of this task; no candidate is open."
    ),
    S.REPAIRING: (
        "A preview or validation returned a real error Diagnostic; the next effect is a "
        "repair candidate (entered only that way, at most the repair cap rounds)."
    ),
    S.TERMINAL: "The runtime decided one of the five terminal states; every call is refused.",
}

TERMINAL_SUMMARIES: dict[TerminalState, str] = {
    T.COMPLETED: "requiredCompletionSequence and a final read-back after the last effect.",
    T.CANNOT_PROCEED: "Explicit abstention: no legal action toward the goal, or repair cap hit.",
    T.BUDGET_EXHAUSTED: "A budget of the Session Grant or task ran out.",
    T.CANCELLED: "The user cancelled the task.",
    T.FAILED: "An authority (kernel, store, grant) failed unrecoverably.",
}

# Their meanings in the code registry, one text for the contract and docs/codes.md.
REJECTION_SUMMARIES: dict[RejectionCode, str] = {r: CODES[r.value].meaning for r in RejectionCode}


# -- wire models ---------------------------------------------------------------------------


class EffectProfile(WireModel):
    """Effect class, idempotency and reversibility of one operation variant."""

    effect_class: EffectClass
    idempotency: Idempotency
    reversibility: Reversibility


class OperationContract(WireModel):
    """One meta-operation's machine-readable contract (§12.1). ``legalIn``,
    ``legalSuccessors`` and ``reachableTerminals`` are derived from the matrix."""

    operation: MetaOperation
    summary: str
    effect_class: EffectClass
    idempotency: Idempotency
    reversibility: Reversibility
    publish: EffectProfile | None = None
    """The variant when publishing to the user's head (``model.commit`` only)."""
    legal_in: list[RuntimeState]
    legal_successors: list[MetaOperation]
    """Operations legal right after a successful call or one that returned a Diagnostic."""
    reachable_terminals: list[TerminalState]
    """Terminal states the runtime may declare right after this operation; ``completed`` only
    follows a read, since it needs a read-back after the last effect."""


class StateContract(WireModel):
    """One runtime state: what it means, what is legal in it, which terminals it can declare."""

    state: RuntimeState
    summary: str
    legal_operations: list[MetaOperation]
    reachable_terminals: list[TerminalState]
    """Terminal states the runtime may declare while in this state (``completed`` only in
    ``committed``); none once terminal."""


class TerminalContract(WireModel):
    terminal: TerminalState
    summary: str


class RejectionContract(WireModel):
    code: RejectionCode
    summary: str
    recoverable: bool


class Cell(WireModel):
    """One (state, operation) entry of the admission matrix."""

    state: RuntimeState
    operation: MetaOperation
    legal: bool
    next_state: RuntimeState | None = None
    """State after a successful call (legal cells)."""
    on_diagnostic: RuntimeState | None = None
    """State after the call returned a real error Diagnostic; absent: the state is kept."""
    rejection: RejectionCode | None = None
    next_operation: MetaOperation | None = None
    """Legal in ``state`` and one step toward making ``operation`` legal (illegal cells)."""

    @model_validator(mode="after")
    def _legal_xor_rejected(self) -> Cell:
        if self.legal != (self.next_state is not None) or self.legal == (
            self.rejection is not None
        ):
            raise ValueError("a legal cell has a nextState, an illegal one a rejection")
        return self


class MetaOperationContract(WireModel):
    """The whole contract: the document ``aira schema meta-operation-contract`` prints."""

    version: Literal["1.0.0"]
    initial_state: RuntimeState
    repair_cap: int = Field(ge=1)
    operations: list[OperationContract]
    states: list[StateContract]
    terminals: list[TerminalContract]
    rejections: list[RejectionContract]
    matrix: list[Cell]
    """All 81 cells, state-major, both axes in enum order."""


# -- the matrix ----------------------------------------------------------------------------


class _Go(NamedTuple):
    next_state: RuntimeState
    on_diagnostic: RuntimeState | None = None


class _No(NamedTuple):
    code: RejectionCode
    next_operation: MetaOperation


def _read_next(state: RuntimeState, op: MetaOperation) -> RuntimeState:
    # Reads never move the state backwards; search and describe only move it forward.
    if op is O.CATALOG_SEARCH and state is S.READY:
        return S.DISCOVERED
    if op is O.CATALOG_DESCRIBE and state in (S.READY, S.DISCOVERED):
        return S.DESCRIBED
    return state


def _discovery_first(next_op: MetaOperation) -> dict[MetaOperation, _Go | _No]:
    no = _No(R.DISCOVERY_REQUIRED, next_op)
    return {
        O.MODEL_PROPOSE_PATCH: no,
        O.MODEL_PREVIEW: no,
        O.MODEL_VALIDATE: no,
        O.MODEL_COMMIT: no,
        O.MODEL_REVERT: _No(R.NOTHING_TO_REVERT, next_op),
    }


def _candidate_first(revert: _Go | _No) -> dict[MetaOperation, _Go | _No]:
    no = _No(R.CANDIDATE_REQUIRED, O.MODEL_PROPOSE_PATCH)
    return {
        O.MODEL_PROPOSE_PATCH: _Go(S.PROPOSED),
        O.MODEL_PREVIEW: no,
        O.MODEL_VALIDATE: no,
        O.MODEL_COMMIT: no,
        O.MODEL_REVERT: revert,
    }


# The non-read half of the matrix, written out as a table. A new proposePatch always starts a
# new candidate; preview/validate of the same candidate again are idempotent replays and keep
# the state unless they now return a Diagnostic (a replay is evidence too: it opens repair and
# drops the validation); only preview and validate can open a repair round.
_EFFECTS: dict[RuntimeState, dict[MetaOperation, _Go | _No]] = {
    S.READY: _discovery_first(O.CATALOG_SEARCH),
    S.DISCOVERED: _discovery_first(O.CATALOG_DESCRIBE),
    S.DESCRIBED: _candidate_first(_No(R.NOTHING_TO_REVERT, O.MODEL_PROPOSE_PATCH)),
    S.PROPOSED: {
        O.MODEL_PROPOSE_PATCH: _Go(S.PROPOSED),
        O.MODEL_PREVIEW: _Go(S.PREVIEWED, S.REPAIRING),
        O.MODEL_VALIDATE: _No(R.PREVIEW_REQUIRED, O.MODEL_PREVIEW),
        O.MODEL_COMMIT: _No(R.PREVIEW_REQUIRED, O.MODEL_PREVIEW),
        O.MODEL_REVERT: _No(R.NOTHING_TO_REVERT, O.MODEL_PREVIEW),
    },
    S.PREVIEWED: {
        O.MODEL_PROPOSE_PATCH: _Go(S.PROPOSED),
        O.MODEL_PREVIEW: _Go(S.PREVIEWED, S.REPAIRING),
        O.MODEL_VALIDATE: _Go(S.VALIDATED, S.REPAIRING),
        O.MODEL_COMMIT: _No(R.VALIDATION_REQUIRED, O.MODEL_VALIDATE),
        O.MODEL_REVERT: _No(R.NOTHING_TO_REVERT, O.MODEL_VALIDATE),
    },
    S.VALIDATED: {
        O.MODEL_PROPOSE_PATCH: _Go(S.PROPOSED),
        O.MODEL_PREVIEW: _Go(S.VALIDATED, S.REPAIRING),
        O.MODEL_VALIDATE: _Go(S.VALIDATED, S.REPAIRING),
        O.MODEL_COMMIT: _Go(S.COMMITTED),
        # Reverting under a validated candidate would leave its binding on a vanished head.
        O.MODEL_REVERT: _No(R.NOTHING_TO_REVERT, O.MODEL_COMMIT),
    },
    S.COMMITTED: _candidate_first(_Go(S.COMMITTED)),
    S.REPAIRING: _candidate_first(_No(R.NOTHING_TO_REVERT, O.MODEL_PROPOSE_PATCH)),
}

_ABANDON = [T.CANNOT_PROCEED, T.BUDGET_EXHAUSTED, T.CANCELLED, T.FAILED]


def _state_terminals(state: RuntimeState) -> list[TerminalState]:
    # completed needs a commit followed by a read-back, and reads keep `committed`.
    if state is S.TERMINAL:
        return []
    return [T.COMPLETED, *_ABANDON] if state is S.COMMITTED else list(_ABANDON)


def _build_cell(state: RuntimeState, op: MetaOperation) -> Cell:
    if state is S.TERMINAL:
        return Cell(state=state, operation=op, legal=False, rejection=R.TASK_TERMINATED)
    if op in READS:
        return Cell(state=state, operation=op, legal=True, next_state=_read_next(state, op))
    entry = _EFFECTS[state][op]
    if isinstance(entry, _Go):
        return Cell(
            state=state,
            operation=op,
            legal=True,
            next_state=entry.next_state,
            on_diagnostic=entry.on_diagnostic,
        )
    return Cell(
        state=state,
        operation=op,
        legal=False,
        rejection=entry.code,
        next_operation=entry.next_operation,
    )


def _profile(effect: EffectClass, idem: Idempotency, rev: Reversibility) -> EffectProfile:
    return EffectProfile(effect_class=effect, idempotency=idem, reversibility=rev)


_READ = _profile(EffectClass.READ, Idempotency.ALWAYS, Reversibility.NO_EFFECT)
_PUBLISH = _profile(EffectClass.IRREVERSIBLE, Idempotency.CAS, Reversibility.IRREVERSIBLE)

# The §12.1 table. model.commit defaults to a task-branch commit; publishing to the user's
# head is its irreversible variant (see effect_class).
_OPERATIONS: dict[MetaOperation, tuple[str, EffectProfile]] = {
    O.INTERFACE_MANIFEST: ("Protocol version, taxonomy root, snapshot and limits.", _READ),
    O.CATALOG_SEARCH: ("Discover capabilities by intent, type, state, quality, risk.", _READ),
    O.CATALOG_DESCRIBE: ("Full contract and guidance of a selected capability.", _READ),
    O.MODEL_READ: ("Revision, parameters, feature/constraint/certificate summaries.", _READ),
    O.MODEL_PROPOSE_PATCH: (
        "Lower and statically check an AMIR patch into a task-local candidate; no commit.",
        _profile(EffectClass.BUFFERABLE, Idempotency.IDEMPOTENCY_KEY, Reversibility.DISCARDABLE),
    ),
    O.MODEL_PREVIEW: (
        "Preview the candidate: diff, diagnostics, artifacts.",
        _profile(EffectClass.BUFFERABLE, Idempotency.IDEMPOTENCY_KEY, Reversibility.DISCARDABLE),
    ),
    O.MODEL_VALIDATE: (
        "Authoritative evaluation and assertions: a validation token, no model write.",
        _profile(EffectClass.BUFFERABLE, Idempotency.FULL_BINDING, Reversibility.DISCARDABLE),
    ),
    O.MODEL_COMMIT: (
        "Compare-and-swap commit of the fully bound, validated candidate.",
        _profile(EffectClass.REVERSIBLE, Idempotency.CAS, Reversibility.REVERT_REVISION),
    ),
    O.MODEL_REVERT: (
        "A new transaction creating a restoring revision; history is kept.",
        _profile(EffectClass.REVERSIBLE, Idempotency.REQUEST, Reversibility.REVERT_REVISION),
    ),
}

# Only an error Diagnostic opens a repair round; a warning is a success with remarks.
_REPAIRABLE = Severity.ERROR


def _in_order(items: Iterable[StrEnum], order: Iterable[StrEnum]) -> list[Any]:
    wanted = set(items)
    return [x for x in order if x in wanted]


def _build_contract() -> MetaOperationContract:
    matrix = [_build_cell(s, o) for s in RuntimeState for o in MetaOperation]
    legal = {s: [c.operation for c in matrix if c.state is s and c.legal] for s in RuntimeState}
    operations = []
    for op, (summary, profile) in _OPERATIONS.items():
        cells = [c for c in matrix if c.operation is op and c.legal]
        after = {c.next_state for c in cells if c.next_state} | {
            c.on_diagnostic for c in cells if c.on_diagnostic
        }
        terminals = {t for s in after for t in _state_terminals(s)}
        if op not in READS:
            # completed needs a read-back after the last effect: no effect leads there directly.
            terminals.discard(T.COMPLETED)
        operations.append(
            OperationContract(
                operation=op,
                summary=summary,
                effect_class=profile.effect_class,
                idempotency=profile.idempotency,
                reversibility=profile.reversibility,
                publish=_PUBLISH if op is O.MODEL_COMMIT else None,
                legal_in=[c.state for c in cells],
                legal_successors=_in_order((o for s in after for o in legal[s]), MetaOperation),
                reachable_terminals=_in_order(terminals, TerminalState),
            )
        )
    return MetaOperationContract(
        version=CONTRACT_VERSION,
        initial_state=S.READY,
        repair_cap=REPAIR_CAP,
        operations=operations,
        states=[
            StateContract(
                state=s,
                summary=STATE_SUMMARIES[s],
                legal_operations=legal[s],
                reachable_terminals=_state_terminals(s),
            )
            for s in RuntimeState
        ],
        terminals=[TerminalContract(terminal=t, summary=TERMINAL_SUMMARIES[t]) for t in T],
        rejections=[
            RejectionContract(
                code=r, summary=REJECTION_SUMMARIES[r], recoverable=r is not R.TASK_TERMINATED
            )
            for r in R
        ],
        matrix=matrix,
    )


CONTRACT = _build_contract()
"""The Meta-operation Contract v1, built once from the tables above."""

_CELLS: dict[tuple[RuntimeState, MetaOperation], Cell] = {
    (c.state, c.operation): c for c in CONTRACT.matrix
}
_OPERATION_CONTRACTS = {o.operation: o for o in CONTRACT.operations}


def contract_json() -> dict[str, Any]:
    """The contract as a JSON value (what ``aira schema meta-operation-contract`` prints)."""
    return CONTRACT.to_wire()


def operation_contract(op: MetaOperation | str) -> OperationContract:
    return _OPERATION_CONTRACTS[MetaOperation(op)]


# -- admission -----------------------------------------------------------------------------


def cell(state: RuntimeState, op: MetaOperation) -> Cell:
    """The matrix entry for ``op`` in ``state``."""
    return _CELLS[(RuntimeState(state), MetaOperation(op))]


def admit(state: RuntimeState | str, op: MetaOperation | str) -> Cell:
    """Admission check for a call as it arrives from a transport: wire names are parsed (an
    unknown one is an :class:`AiraError`), and the cell says legal or why not."""
    try:
        state = RuntimeState(state)
    except ValueError:
        raise AiraError(UNKNOWN_STATE, f"no runtime state named {state!r}") from None
    try:
        op = MetaOperation(op)
    except ValueError:
        known = ", ".join(MetaOperation)
        raise AiraError(UNKNOWN_OPERATION, f"no meta-operation {op!r}; known: {known}") from None
    return cell(state, op)


def legal_operations(state: RuntimeState) -> list[MetaOperation]:
    return [o for o in MetaOperation if cell(state, o).legal]


def next_state(
    state: RuntimeState, op: MetaOperation, *, diagnostic: Diagnostic | None = None
) -> RuntimeState:
    """The state after ``op`` ran in ``state``. ``diagnostic`` is the error Diagnostic object
    the operation returned, if any: only a real one opens a repair round (§12.2), so a
    model-written critique (any other type) is refused. Illegal cells raise their rejection."""
    c = cell(state, op)
    if not c.legal:
        raise AiraError(str(c.rejection), f"{op} is not legal in state {state}")
    if diagnostic is None:
        return c.next_state  # type: ignore[return-value]  # legal cells always have one
    if not isinstance(diagnostic, Diagnostic):
        raise AiraError(REPAIR_REQUIRES_DIAGNOSTIC, "a repair round needs a Diagnostic object")
    if diagnostic.severity is not _REPAIRABLE:
        return c.next_state  # type: ignore[return-value]
    return c.on_diagnostic or RuntimeState(state)


def contract_locked(state: RuntimeState) -> RuntimeState:
    """The state once a full L2 contract enters the trace without ``catalog.describe``: from
    the Task Capsule or inlined by a small-catalog ``interface.manifest`` (§7.1 adaptive
    discovery). Both count as discovery done, i.e. ``described``; later states are kept."""
    return S.DESCRIBED if state in (S.READY, S.DISCOVERED) else RuntimeState(state)


def effect_class(op: MetaOperation | str, *, publish: bool = False) -> EffectClass:
    """The effect class of one call. ``publish`` only matters for ``model.commit``: a commit
    to the task branch is ``reversible`` (a revert revision undoes it), publishing to the
    user's head (``main``) crosses task isolation and is ``irreversible``."""
    contract = operation_contract(op)
    if publish and contract.publish is not None:
        return contract.publish.effect_class
    return contract.effect_class


class Step(WireModel):
    """One call of a sequence: the operation and, if it returned an error Diagnostic, its code."""

    operation: MetaOperation
    diagnostic: DiagnosticCode | None = None


class Rejection(WireModel):
    """A recoverable refusal (§12.2): returned before any authority is called."""

    code: RejectionCode
    operation: MetaOperation
    state: RuntimeState
    completed_prefix: list[MetaOperation]
    next_operation: MetaOperation | None = None
    recoverable: bool


class Replay(WireModel):
    """A sequence run through the matrix from ``start`` up to its first refusal."""

    start: RuntimeState
    states: list[RuntimeState]
    """The state after each admitted step."""
    completed_prefix: list[MetaOperation]
    rejection: Rejection | None = None

    @property
    def state(self) -> RuntimeState:
        return self.states[-1] if self.states else self.start


def rejection(state: RuntimeState, op: MetaOperation, prefix: Sequence[MetaOperation]) -> Rejection:
    """The structured refusal of an illegal cell, carrying the completed prefix."""
    c = cell(state, op)
    if c.legal:
        raise ValueError(f"{op} is legal in {state}")
    return Rejection(
        code=c.rejection,  # type: ignore[arg-type]  # illegal cells always have one
        operation=c.operation,
        state=c.state,
        completed_prefix=list(prefix),
        next_operation=c.next_operation,
        recoverable=c.rejection is not R.TASK_TERMINATED,
    )


def replay(steps: Sequence[Step | MetaOperation], start: RuntimeState = S.READY) -> Replay:
    """Admit ``steps`` one by one from ``start``; stop at the first refusal."""
    state, states, prefix = RuntimeState(start), [], []
    for raw in steps:
        step = raw if isinstance(raw, Step) else Step(operation=raw)
        if not cell(state, step.operation).legal:
            refused = rejection(state, step.operation, prefix)
            return Replay(start=start, states=states, completed_prefix=prefix, rejection=refused)
        diagnostic = (
            Diagnostic(code=step.diagnostic, message="recorded diagnostic")
            if step.diagnostic
            else None
        )
        state = next_state(state, step.operation, diagnostic=diagnostic)
        states.append(state)
        prefix.append(step.operation)
    return Replay(start=start, states=states, completed_prefix=prefix)


# -- batch reduction -----------------------------------------------------------------------


class Call(WireModel):
    """One call of a provider turn, as far as scheduling needs it."""

    request_id: str = Field(min_length=1)
    operation: MetaOperation
    publish: bool = False
    """``model.commit`` only: publish to the user's head (irreversible)."""

    @model_validator(mode="after")
    def _publish_is_a_commit(self) -> Call:
        if self.publish and self.operation is not O.MODEL_COMMIT:
            raise ValueError("only model.commit can publish")
        return self

    @property
    def effect_class(self) -> EffectClass:
        return effect_class(self.operation, publish=self.publish)


class BatchEntry(WireModel):
    """A call of the batch by its position, with the refusal code when refused."""

    index: int = Field(ge=0)
    request_id: str
    operation: MetaOperation
    effect_class: EffectClass
    code: RejectionCode | None = None


class BatchDecision(WireModel):
    """What one provider turn runs now (in order), defers for replanning, and refuses."""

    scheduled: list[BatchEntry]
    deferred: list[BatchEntry]
    refused: list[BatchEntry]


def reduce_batch(calls: Sequence[Call], seen_request_ids: Iterable[str]) -> BatchDecision:
    """Batch reduction of §12.2. A request id already seen in the task, or earlier in the
    batch, is refused (``DUPLICATE_REQUEST_ID``). All reads are scheduled, to run in parallel
    against one observed revision, so they come first. Then at most one non-read effect: the
    first of the batch, except that an irreversible effect only runs alone, so it gives way to
    the first other effect; it is scheduled (last) only when every effect of the batch is
    irreversible. Every other effect is deferred, to be replanned after the real response.
    ``seen_request_ids`` is not modified."""
    seen = set(seen_request_ids)
    kept: list[BatchEntry] = []
    refused: list[BatchEntry] = []
    for i, call in enumerate(calls):
        entry = BatchEntry(
            index=i,
            request_id=call.request_id,
            operation=call.operation,
            effect_class=call.effect_class,
        )
        if call.request_id in seen:
            refused.append(entry.model_copy(update={"code": R.DUPLICATE_REQUEST_ID}))
            continue
        seen.add(call.request_id)
        kept.append(entry)
    reads = [e for e in kept if e.effect_class is EffectClass.READ]
    effects = [e for e in kept if e.effect_class is not EffectClass.READ]
    chosen = next((e for e in effects if e.effect_class is not EffectClass.IRREVERSIBLE), None)
    if chosen is None and effects:
        chosen = effects[0]
    return BatchDecision(
        scheduled=reads + ([chosen] if chosen else []),
        deferred=[e for e in effects if e is not chosen],
        refused=refused,
    )


# -- terminal decision ---------------------------------------------------------------------

DEFAULT_COMPLETION_SEQUENCE = [
    O.MODEL_PROPOSE_PATCH,
    O.MODEL_PREVIEW,
    O.MODEL_VALIDATE,
    O.MODEL_COMMIT,
    O.MODEL_READ,
]


class TerminalInputs(WireModel):
    """What the runtime knows after a response, for :func:`decide_terminal`."""

    state: RuntimeState
    trace: list[MetaOperation] = Field(default_factory=list)
    """Operations admitted and run in this task, in order."""
    required_completion_sequence: list[MetaOperation] = Field(
        default_factory=lambda: list(DEFAULT_COMPLETION_SEQUENCE)
    )
    """Task Protocol (§9.4): must appear in ``trace`` in this order (gaps allowed)."""
    completion_authority: CompletionAuthority = CompletionAuthority.RUNTIME
    completion_claimed: bool = False
    """The model says it is done. Never enough: under ``model`` authority it is required too."""
    repair_rounds: int = Field(default=0, ge=0)
    """Repair rounds already spent (repair candidates proposed out of ``repairing``)."""
    repair_cap: int = Field(default=REPAIR_CAP, ge=1)
    no_legal_action: bool = False
    """The planner found no legal action toward the goal (explicit abstention)."""
    budget_exhausted: bool = False
    cancelled: bool = False
    """The user cancelled."""
    authority_failure: bool = False
    """An authority (kernel, store, grant check) failed unrecoverably."""


class TerminalDecision(WireModel):
    """The runtime's decision: a terminal state, or none (the task goes on), with a reason."""

    terminal: TerminalState | None = None
    reason: DiagnosticCode


def _is_subsequence(needle: Sequence[MetaOperation], haystack: Sequence[MetaOperation]) -> bool:
    it = iter(haystack)
    return all(op in it for op in needle)  # `in` consumes the iterator: order is kept


def _completion_evidence(i: TerminalInputs) -> bool:
    # A final read-back: a model.read after the last effect, with no candidate left open.
    if i.state is not S.COMMITTED or not _is_subsequence(i.required_completion_sequence, i.trace):
        return False
    effects = [n for n, op in enumerate(i.trace) if op not in READS]
    return bool(effects) and O.MODEL_READ in i.trace[effects[-1] + 1 :]


def _completed(i: TerminalInputs) -> bool:
    claimed = i.completion_claimed or i.completion_authority is CompletionAuthority.RUNTIME
    return claimed and _completion_evidence(i)


# First match wins. The user's cancel and an authority failure end the task whatever else
# holds; finished and read-back work is `completed` even if that read-back used the last
# budget; the repair cap and abstention are `cannotProceed`, never a softened `failed`.
_TERMINAL_RULES: tuple[tuple[str, TerminalState, Callable[[TerminalInputs], bool]], ...] = (
    ("USER_CANCELLED", T.CANCELLED, lambda i: i.cancelled),
    ("AUTHORITY_FAILED", T.FAILED, lambda i: i.authority_failure),
    ("COMPLETION_EVIDENCE_COMPLETE", T.COMPLETED, _completed),
    ("BUDGET_EXHAUSTED", T.BUDGET_EXHAUSTED, lambda i: i.budget_exhausted),
    (
        "REPAIR_CAP_REACHED",
        T.CANNOT_PROCEED,
        lambda i: i.state is S.REPAIRING and i.repair_rounds >= i.repair_cap,
    ),
    ("NO_LEGAL_ACTION", T.CANNOT_PROCEED, lambda i: i.no_legal_action),
)


def decide_terminal(inputs: TerminalInputs) -> TerminalDecision:
    """The terminal state the runtime declares now, or none with ``CONTINUE`` (or
    ``COMPLETION_EVIDENCE_MISSING`` when the model claimed completion without the evidence)."""
    if inputs.state is S.TERMINAL:
        raise AiraError(R.TASK_TERMINATED.value, "the task already reached a terminal state")
    for reason, terminal, applies in _TERMINAL_RULES:
        if applies(inputs):
            return TerminalDecision(terminal=terminal, reason=reason)
    reason = "COMPLETION_EVIDENCE_MISSING" if inputs.completion_claimed else "CONTINUE"
    return TerminalDecision(reason=reason)


# -- corpus --------------------------------------------------------------------------------

CORPUS_FILES = ("legal_sequences", "illegal_sequences", "batch_reductions", "terminal_cases")


def load_corpus(name: str) -> list[dict[str, Any]]:
    """The cases of one shared corpus file (``legal_sequences`` …, ``.json`` optional)."""
    stem = name.removesuffix(".json")
    if stem not in CORPUS_FILES:
        raise AiraError(CORPUS_NOT_FOUND, f"no corpus {name!r}; known: {', '.join(CORPUS_FILES)}")
    path = resources.files("aira_core.runtime").joinpath("corpus").joinpath(f"{stem}.json")
    cases: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return cases


__all__ = [
    "CONTRACT",
    "CONTRACT_VERSION",
    "CORPUS_FILES",
    "DEFAULT_COMPLETION_SEQUENCE",
    "READS",
    "REPAIR_CAP",
    "BatchDecision",
    "BatchEntry",
    "Call",
    "Cell",
    "CompletionAuthority",
    "EffectClass",
    "Idempotency",
    "MetaOperation",
    "MetaOperationContract",
    "OperationContract",
    "Rejection",
    "RejectionCode",
    "Replay",
    "Reversibility",
    "RuntimeState",
    "StateContract",
    "Step",
    "TerminalDecision",
    "TerminalInputs",
    "TerminalState",
    "admit",
    "cell",
    "contract_json",
    "contract_locked",
    "decide_terminal",
    "effect_class",
    "legal_operations",
    "load_corpus",
    "next_state",
    "operation_contract",
    "reduce_batch",
    "rejection",
    "replay",
]
