"""The bounded-step host (spec 003 §4.5): every step, a decision source sees a capsule the
host built from its ledger plus the round's append-only log, never more than B tokens, and
answers with exactly one act; the host validates it, runs it through the task runtime and
records the step in the trajectory.

Rounds: a round is one capsule plus an append-only log of decisions and results. When less
than a margin of B would be left after a step, its result says ``host.windowFull`` (before
it is rendered into the log) so the model reads it and writes its note; the next round's
capsule is rebuilt from the ledger and that note. Nothing else carries over: that is the
price of a hard bound, paid once per round.

Folds (:mod:`aira_core.step.fold`): after a commit, when the entries the commit settled would
shrink the log by at least :data:`FOLD_MIN_TOKENS` and :data:`FOLD_SHARE` of it, a new round
starts whose log is this one with those entries in short form, every decision with its call
id and reasoning: the model re-derives nothing, and every later prompt is that much shorter.

Acts and what runs them:

- ``read`` → ``model.read`` (a page, or the summary); ``pin`` keeps pages in the capsule;
- ``lookup`` → ``catalog.search`` (hits) or ``catalog.describe`` (an L2 page, which the
  capsule then carries while the capability is in use);
- ``inspect`` → a query capability on the task's head (read-only; a kernel failure is the
  act's ``KERNEL_FAILED`` result);
- ``repair`` → ``model.read {repair, diagnostic}``: the candidate a repair capability makes
  of the plan the task last had refused (read-only; the model submits it as a ``plan``);
- ``stage`` → a file the host keeps for the task (``"staged:<name>"`` in plan arguments);
- ``plan`` → ``model.proposePatch`` → ``preview`` → ``validate`` → ``commit`` on the task
  branch, or a rejection with ``failedStep`` and the step's signature and schema;
- ``done`` → the runtime's read-back and completion check (the model's text never decides);
- ``abstain`` → ``cannotProceed``; budgets → ``budgetExhausted``.

Integrations (:mod:`aira_core.integrations`): the intent adapter binds the frame before the
first capsule; the continuity adapter is told of every compaction (its carry rides the next
round's intent segment) and of the task's end (:meth:`StepHost.conclude`); the guard judges
every effect the runtime admits, every export (:meth:`StepHost.judge_export`) and every
``done``. Any of them absent or failing: the host runs as without it.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aira_core.catalog.shown import (
    compact_contracts,
    compact_search,
    failed_step_shown,
    shared_grammars,
)
from aira_core.catalog.signatures import LEGEND, catalog_signatures
from aira_core.contracts.amir import BODIES, NODES, PARAMETERS
from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError, Diagnostic, redact
from aira_core.extensions import (
    BudgetsLeft,
    DecisionSource,
    Kernel,
    StepReply,
    StepRequest,
    Usage,
)
from aira_core.integrations import (
    GUARD_APPROVAL_REQUIRED,
    GUARD_BLOCKED,
    GUARD_CONTINUE_VERIFICATION,
    CompletionClaim,
    EffectEvent,
    Integrations,
    LossyConversion,
    artifact_ref,
    phase_of,
)
from aira_core.model.blocks import shown_summary
from aira_core.runtime.contract import CompletionAuthority, TerminalState
from aira_core.runtime.drafts import plan_draft_wire
from aira_core.runtime.plan import PlanContext, capability_of
from aira_core.runtime.session import Task, TaskProtocol
from aira_core.runtime.tiers import TaskBudgets, Tier, host_tokens, tokens_of_bytes
from aira_core.step import decision as grammar
from aira_core.step.capsule import (
    LAST_RESULT_MAX_TOKENS,
    Capsule,
    CapsuleOverBudget,
    build_capsule,
)
from aira_core.step.fold import Shown, fold, stated_grammars, without_summary
from aira_core.step.ledger import Ledger, to_text, utf8_size
from aira_core.step.log import RoundLog, call_id
from aira_core.step.trajectory import TrajectoryWriter

WINDOW_MARGIN = 2_000
"""Tokens kept free in a round for the next decision and result: below it, windowFull."""
FOLD_MIN_TOKENS = 2_000
FOLD_SHARE = 0.3
"""A fold starts a new round when stale results are at least this many tokens and this share
of the round's log: what it saves on every later prompt outweighs the prompt it sends cold."""
INTERFACE = "aira.step/1"
RUN_ALREADY_ENDED = "RUN_ALREADY_ENDED"
RUN_RESUME_MISMATCH = "RUN_RESUME_MISMATCH"
_ALIASED_BLOCKS = (BODIES.name, NODES.name, PARAMETERS.name)
"""The blocks whose aliases a decision is checked against."""


@dataclass
class Outcome:
    """How a task ended, as the runtime decided."""

    terminal: TerminalState | None
    reason: str
    head: str
    steps: int
    rounds: int
    max_prompt_tokens: int
    records: list[dict[str, Any]] = field(default_factory=list)


def _text(value: Any) -> str:
    return (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )


class StepHost:
    """Runs one task to a terminal state with one decision source."""

    def __init__(
        self,
        ctx: PlanContext,
        kernel: Kernel,
        source: DecisionSource,
        *,
        task_id: str,
        intent: IntentFrame,
        tier: Tier,
        budgets: TaskBudgets | None = None,
        trajectory: TrajectoryWriter | None = None,
        on_step: Callable[[dict[str, Any]], None] | None = None,
        integrations: Integrations | None = None,
    ) -> None:
        # None given: a seam with no adapter, which answers every moment as none would.
        self.integrations = integrations if integrations is not None else Integrations()
        binding = self.integrations.bind(intent)
        if binding is not None:
            # The bound frame is the task's intent: the capsule shows it, plan.check checks it.
            intent = binding.frame
            ctx = dataclasses.replace(ctx, intent=intent)
        self.ctx = ctx
        self.kernel = kernel
        self.source = source
        self.tier = tier
        self.budgets = budgets or TaskBudgets()
        self.trajectory = trajectory
        self.on_step = on_step
        # The model says when it is done (a `done` act) and the runtime checks the evidence;
        # a read-back after a commit alone must not end a task the model is still working on.
        self.task = Task(
            ctx,
            kernel,
            task_id=task_id,
            protocol=TaskProtocol(completion_authority=CompletionAuthority.MODEL),
            integrations=self.integrations if self.integrations.active("guard") else None,
        )
        self.ledger = Ledger(intent=intent)
        if binding is not None:
            self.ledger.contract = (
                f"contract {binding.contract_ref} v{binding.contract_version} "
                f"({binding.source}{', stale' if binding.stale else ''})"
            )
        self.exported: list[str] = []
        """Evidence refs of the files the run exported (:meth:`judge_export`)."""
        self.refusals: list[Diagnostic] = []
        """Exports the guard refused (``GUARD_BLOCKED``, ``GUARD_APPROVAL_REQUIRED``)."""
        self.log = RoundLog()
        self.shown: list[Shown] = []
        """The round log's results, for a fold (:mod:`aira_core.step.fold`)."""
        self.used: dict[str, int] = {}
        """The ordinal of the last commit that used each capability."""
        self.folds = 0
        self.folded_at = 0  # the commits when a fold was last weighed
        self.log_holds_last = False  # a folded log ends with the last result
        self.capsule: Capsule | None = None
        self.round_schema: dict[str, Any] | None = None
        """The decision schema the round's requests carry (see :meth:`_schema`)."""
        self.schema_pages: dict[str, str] = {}  # capability → its L2 contract, while in use
        self.grammars: dict[str, Any] | None = None  # the catalog's shared grammars, once
        self.grammars_stated: set[str] = set()
        """Shared grammars this round's log states in full (a describe references them)."""
        self.described: list[str] = []
        self.staged: dict[str, str] = {}
        self.pending: set[str] = set()
        """Capabilities of the last rejected plan (their contracts survive compaction)."""
        self.last_result: dict[str, Any] | None = None
        self.window_full_told = False
        self.largest_step = 0  # host tokens of the task's largest decision and result
        self.exhausted: str | None = None
        """Which budget the host found spent (kept in the end record)."""
        self.step = 0
        self.round = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.usd = 0.0
        self.usage = Usage()
        """What the source reported, summed over the steps (cache, reasoning, cost)."""
        self.channel_repairs = 0
        self.max_prompt = 0
        self._rid = 0
        self.seen_head = self.task.head
        """The revision the model last saw (capsule, read-back or commit): plans bind to it."""

    # -- helpers ------------------------------------------------------------------------------

    def _request(self, what: str) -> str:
        self._rid += 1
        return f"s{self.step}.{self._rid}.{what}"

    def _aliases(self) -> dict[str, list[str]]:
        table = self.ctx.repository.aliases(self.task.head)
        return {kind: [a for a, _ in table.entries(kind)] for kind in _ALIASED_BLOCKS}

    def _index(self) -> str:
        lines = [f"{INTERFACE}; acts: " + grammar.GRAMMAR_SUMMARY]
        if self.described:
            lines += [LEGEND, catalog_signatures(self.ctx.capabilities, self.described)]
        return "\n".join(lines)

    def _build_capsule(self) -> Capsule:
        self.seen_head = self.task.head
        summary = shown_summary(self.ctx.repository.summary(self.seen_head).to_wire())
        capsule = build_capsule(
            self.ledger,
            self.tier,
            index=self._index(),
            summary=summary,
            schema_pages=self.schema_pages,
            last_result=self._last_shown(),
            log_bytes=self.log.bytes,
            step=self.step,
        )
        # A schema page the capsule released for budget is gone until described again.
        self.schema_pages = {
            cap: page for cap, page in self.schema_pages.items() if cap in capsule.schema_kinds
        }
        return capsule

    def _last_shown(self) -> dict[str, Any] | None:
        """The capsule's last result: none when a folded log ends with it, except what the
        host added since (pages it released to fit the capsule)."""
        if not self.log_holds_last:
            return self.last_result
        released = ((self.last_result or {}).get("host") or {}).get("released")
        return {"host": {"released": released}} if released else None

    # -- resume ---------------------------------------------------------------------------------

    def resume(self, records: list[dict[str, Any]]) -> int:
        """Rebuild the host from an interrupted task's trajectory and its branch.

        Read-only acts run again (they rebuild the discovery locks, pages and note; no
        kernel writes). Committed plans are adopted from the task branch instead of being
        run again, and so is a commit of this task past the last record (the process died
        between the commit and its record): it is recorded as that step, ``recovered``, and
        no plan is committed twice. A recorded step that ended the task (an accepted
        ``done`` or ``abstain`` whose end record was lost) is put to the runtime again, which
        ends the task the same way.

        Returns the step the task continues from; one decision per step, so it is also where
        a scripted source resumes."""
        unadopted = deque(self.task.own_commits())
        last_round: int | None = None
        for record in records:
            if record.get("end"):
                raise AiraError(RUN_ALREADY_ENDED, "the trajectory's task already ended")
            if "step" not in record:
                continue
            if self.task.terminal is not None:
                raise AiraError(
                    RUN_RESUME_MISMATCH, f"step {record['step']} follows a step that ended the task"
                )
            self.step = record["step"] + 1
            self._count_recorded(record)
            if isinstance(record.get("round"), int):
                last_round = record["round"]
            wire = record.get("decision") or {}
            result = record.get("result") or {}
            d = self._recorded_decision(wire)
            if result.get("act") == "plan" and result.get("status") == "ok" and result.get("rev"):
                # A committed plan (a recovered record has no decision, only the commit).
                summary = d.summary if d is not None and d.act == "plan" else None
                self._adopt(unadopted, result["rev"], record["step"], summary)
                if d is not None:
                    self._note(d)
                self.pending = set()
                continue
            if d is None:
                continue
            if d.act == "plan":
                if result.get("code"):
                    self.ledger.reject(record["step"], result["code"], result.get("message", ""))
                    self.pending = _capabilities_of(d.plan)
                continue
            if d.act == "repair" or d.act == "batch":
                # A candidate rebuilds nothing (no lock, page or note), and the refused plan
                # it was made of is not run again: asking the runtime again would only
                # record a spurious rejection.
                if d.act == "repair":
                    self._note(d)
                    continue
                d = d.model_copy(update={"acts": [a for a in d.acts if a.act != "repair"]})
            if d.act in grammar.TERMINAL_ACTS:
                if record.get("terminal"):
                    self._execute(d)  # the runtime decides, as it did before the interruption
                    now = self.task.terminal.value if self.task.terminal else None
                    if now != record["terminal"]:
                        raise AiraError(
                            RUN_RESUME_MISMATCH,
                            f"step {record['step']} ended the task as {record['terminal']}; "
                            f"the rebuilt task says {now or 'not ended'}",
                        )
                continue  # a refused done or abstain changed nothing
            self._execute(d)
        if unadopted and self.task.terminal is None:
            # A commit past the last record: the step the process died in committed its plan
            # (records are written one by one, so at most that one step is missing).
            rev = unadopted[0].rev
            self._adopt(unadopted, rev, self.step, None)
            self.pending = set()
            self._write(self._recovered(rev, last_round or 0))
            self.step += 1
        if unadopted:
            raise AiraError(
                RUN_RESUME_MISMATCH,
                f"the task branch holds {unadopted[0].rev}, which no step of the trajectory "
                "can have committed",
            )
        if last_round is not None:
            self.round = last_round
            self._end_round()  # a resumed task starts a new round from the ledger
        return self.step

    def _count_recorded(self, record: Mapping[str, Any]) -> None:
        """What a recorded step spent counts against the budgets and totals again (a
        resumed task must not get its budgets back)."""
        raw = record.get("usage")
        usage = Usage.from_wire(raw if isinstance(raw, Mapping) else {})
        self.usage = self.usage + usage
        repairs = record.get("repairs")
        self.channel_repairs += len(repairs) if isinstance(repairs, list) else 0
        prompt = record.get("promptTokens")
        prompt = prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else 0
        self.input_tokens += usage.input_tokens or prompt
        self.output_tokens += usage.output_tokens
        self.usd += usage.cost_usd
        self.ledger.record_usage(usage.input_tokens or prompt, usage.output_tokens, usage.cost_usd)

    def _recorded_decision(self, wire: Mapping[str, Any]) -> Any:
        """A recorded decision as the grammar reads it; None when it was unreadable (then it
        changed nothing)."""
        if "act" not in wire:
            return None
        try:
            return grammar.parse_decision(json.dumps(wire), None, budgets=self.budgets)
        except grammar.DecisionRejected:
            return None

    def _adopt(self, unadopted: deque[Any], rev: str, step: int, summary: str | None) -> None:
        """Adopt ``rev``, which must be the task's next commit on its branch (commits are
        recorded in the order they were made); ``summary`` None: no decision was recorded."""
        if not unadopted or unadopted[0].rev != rev:
            raise AiraError(
                RUN_RESUME_MISMATCH,
                f"step {step} committed {rev}, which is not the task branch's next commit"
                + (f" ({unadopted[0].rev})" if unadopted else ""),
            )
        commit = unadopted.popleft()
        try:
            adopted = self.task.adopt(rev, self._request("adopt")).status == "success"
        except AiraError as exc:
            # The runtime refused the commit here, e.g. DISCOVERY_REQUIRED: the trajectory
            # lost the records that made it legal, so it is not the run that made the branch.
            raise AiraError(
                RUN_RESUME_MISMATCH,
                f"step {step} committed {rev}, but the trajectory before it does not allow "
                f"that commit ({exc.code}: {exc.diagnostic.message})",
            ) from None
        if not adopted:
            raise AiraError(RUN_RESUME_MISMATCH, f"the task cannot adopt {rev} from its branch")
        self.ledger.committed(
            rev, summary if summary is not None else f"{commit.message} (adopted)", step=step
        )
        self.seen_head = self.task.head

    def _recovered(self, rev: str, round_: int) -> dict[str, Any]:
        """The record of a step whose plan committed but whose record was lost: what the
        branch says of it. Nothing of its prompt or decision is known."""
        return {
            "step": self.step,
            "round": round_,
            "recovered": True,
            "capsuleHash": None,
            "capsuleBytes": 0,
            "logBytes": 0,
            "promptTokens": 0,
            "budgetTokens": self.tier.budget,
            "decision": {},
            "result": {
                "status": "ok",
                "act": "plan",
                "rev": rev,
                "message": "the run was interrupted after this step committed its plan and "
                "before its record was written; the commit was adopted from the task branch",
            },
            "usage": {},
            "model": None,
            # No host work was measured for it; zeros keep the record's shape for readers.
            "timings": dict.fromkeys(("capsuleMs", "decideMs", "validateMs", "executeMs"), 0.0),
            "state": self.task.state.value,
            "terminal": None,
            "head": self.task.head,
        }

    def _budgets_left(self) -> BudgetsLeft:
        b = self.budgets
        return BudgetsLeft(
            steps=max(0, b.steps - self.step),
            input_tokens=max(0, b.input_tokens - self.input_tokens),
            output_tokens=max(0, b.output_tokens - self.output_tokens),
            usd=max(0.0, b.usd - self.usd),
        )

    def _write(self, record: dict[str, Any]) -> None:
        if self.trajectory is not None:
            self.trajectory.write(record)
        if self.on_step is not None:
            self.on_step(record)

    # -- the loop -------------------------------------------------------------------------------

    def run(self) -> Outcome:
        """Run until the runtime decides a terminal state. Every way the host ends a task
        (a terminal act, a spent budget, a capsule that cannot fit B) writes the end record;
        only the decision source failing (the interruption :meth:`resume` is for) raises."""
        records: list[dict[str, Any]] = []
        while self.task.terminal is None:
            if self.step >= self.budgets.steps:
                self.exhausted = f"{self.budgets.steps} steps"
                self.task.exhaust(self._request("budget"), self.exhausted)
                break
            started = time.perf_counter()
            if self.capsule is not None and not self.log.would_fit(self.capsule, 0, self.tier):
                # Unreachable while _settle admits only entries that fit; should it ever be
                # reached, compact rather than send a prompt over B.
                self._end_round()
            capsule = self.capsule or self._fit_capsule()
            if capsule is None:
                break  # not even the capsule's fixed segments fit: the task is out of budget
            log_bytes, round_ = self.log.bytes, self.round
            prompt = capsule.text + self.log.text
            prompt_tokens = host_tokens(prompt)
            self.max_prompt = max(self.max_prompt, prompt_tokens)
            aliases = self._aliases()
            request = StepRequest(
                task_id=self.task.task_id,
                step=self.step,
                call_id=call_id(self.step),
                tier=self.tier.name,
                capsule=capsule.text,
                log=self.log.entries,
                schema=self._schema(aliases),
                budgets=self._budgets_left(),
            )
            built = time.perf_counter()
            called_at = datetime.now(UTC).isoformat(timespec="milliseconds")
            reply = self.source.decide(request)
            decided = time.perf_counter()
            self.usage = self.usage + reply.usage
            self.channel_repairs += len(reply.repairs)
            # A source that reports no usage (a script) is metered by the host's own count.
            used_in = reply.usage.input_tokens or prompt_tokens
            used_out = reply.usage.output_tokens or host_tokens(reply.text)
            used_usd = reply.usage.cost_usd
            self.input_tokens += used_in
            self.output_tokens += used_out
            self.usd += used_usd
            self.ledger.record_usage(used_in, used_out, used_usd)
            try:
                decision = grammar.parse_decision(reply.text, aliases, budgets=self.budgets)
            except grammar.DecisionRejected as exc:
                decision = None
                result = self._rejection(
                    exc.code,
                    exc.diagnostic.message,
                    exc.diagnostic.model_dump(mode="json", exclude_none=True),
                )
            validated = time.perf_counter()
            if decision is not None:
                result = self._execute(decision)
            executed = time.perf_counter()
            # Settled before the record is written: a windowFull the result gains is what the
            # model reads next and what the trajectory keeps.
            self._settle(capsule, reply, result, decision)
            record = self._record(
                reply,
                decision,
                result,
                prompt_tokens,
                (capsule, log_bytes, round_),
                (started, built, decided, validated, executed),
            )
            record["calledAt"] = called_at
            records.append(record)
            self._write(record)
            self.step += 1
            if self.task.terminal is None:
                over = [
                    name
                    for name, spent, cap in (
                        ("input tokens", self.input_tokens, self.budgets.input_tokens),
                        ("output tokens", self.output_tokens, self.budgets.output_tokens),
                        ("usd", self.usd, self.budgets.usd),
                    )
                    if spent > cap
                ]
                if over:
                    self.exhausted = ", ".join(over)
                    self.task.exhaust(self._request("budget"), self.exhausted)
        end = {
            "end": True,
            "terminal": self.task.terminal.value if self.task.terminal else None,
            "reason": self.task.terminal_reason,
            "head": self.task.head,
            "steps": self.step,
            "rounds": self.round + 1,
            "folds": self.folds,
            "maxPromptTokens": self.max_prompt,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "usage": self.usage.to_wire(),
            "channelRepairs": self.channel_repairs,
        }
        if self.exhausted is not None:
            end["exhausted"] = self.exhausted
        seam = self.integrations
        if seam.binding is not None or seam.diagnostics:
            bound = seam.binding
            end["integrations"] = {
                "contract": {
                    "contractRef": seam.contract.contract_ref,
                    "contractVersion": seam.contract.contract_version,
                }
                if seam.contract
                else None,
                # the frame the task ran under, for an audit of the binding (it may differ
                # from the script's: the intent owner's words win)
                **(
                    {"stale": bound.stale, "intent": bound.frame.to_wire()}
                    if bound is not None
                    else {}
                ),
                "warnings": [
                    d.model_dump(mode="json", exclude_none=True) for d in seam.diagnostics
                ],
            }
        if self.trajectory is not None:
            self.trajectory.write(end)
        return Outcome(
            terminal=self.task.terminal,
            reason=self.task.terminal_reason or "",
            head=self.task.head,
            steps=self.step,
            rounds=self.round + 1,
            max_prompt_tokens=self.max_prompt,
            records=records,
        )

    def _settle(
        self, capsule: Capsule, reply: StepReply, result: dict[str, Any], act: Any = None
    ) -> None:
        """Settle the round after a step (spec 003 §4.5): the decision and result go into the
        log only when capsule + log + both entries stay within B, metered as the log will
        hold them; otherwise, or when the model was told the window is full and has had its
        step to write its note, the round ends. When less than the margin would be left, the
        result says ``host.windowFull`` before it is rendered, so the model reads it next."""
        self.last_result = result
        if self.task.terminal is not None:
            return  # no prompt follows: nothing to settle
        if self.window_full_told:
            self._end_round()
            return
        # The decision keeps the model's reasoning: a provider sends it back within the round
        # (spec 003 §6.6), so it is metered against B like the rest of the log.
        decision = RoundLog.decision(reply.call_id, reply.text, reply.reasoning)
        decision_bytes = RoundLog.entry_bytes(decision)

        def fits(rendered: str, margin: int = 0) -> bool:
            extra = decision_bytes + RoundLog.entry_bytes(RoundLog.result(reply.call_id, rendered))
            return self.log.would_fit(capsule, extra, self.tier, margin)

        rendered = _text(result)
        # warned when less is left than the task's largest step so far and a quarter more:
        # the next may be as large (a plan and its result), and a step that does not fit
        # ends the round before the model was told
        step_tokens = tokens_of_bytes(
            decision_bytes + RoundLog.entry_bytes(RoundLog.result(reply.call_id, rendered))
        )
        self.largest_step = max(self.largest_step, step_tokens)
        margin = max(WINDOW_MARGIN, self.largest_step * 5 // 4)
        commits = len(self.ledger.commits)
        step = Shown(len(self.log) + 1, act, result, rendered, commits, decision_text=decision.text)
        if commits > self.folded_at and fits(rendered):
            # A commit settled earlier entries: fold before the window is judged full.
            self.folded_at = commits
            if self._fold(capsule, decision, step, margin):
                return
        if not fits(rendered, margin):
            told = {**result, "host": {**result.get("host", {}), "windowFull": True}}
            rendered = _text(told)
            if not fits(rendered):
                self._end_round()
                return
            result["host"] = told["host"]
            self.window_full_told = True
        self.log.append(decision)
        self.log.append(RoundLog.result(reply.call_id, rendered))
        self.shown.append(dataclasses.replace(step, text=rendered))  # windowFull said

    def _fold(self, capsule: Capsule, decision: Any, step: Shown, margin: int) -> bool:
        """Start a new round from this one's log and ``step`` (its decision and result) with
        the stale entries in short form, when that saves at least :data:`FOLD_MIN_TOKENS` and
        :data:`FOLD_SHARE` of the log, and leaves the margin beside a capsule the size of
        this one. False: nothing changed."""
        whole = self.log.folded({})
        whole.append(decision)
        whole.append(RoundLog.result(decision.call_id, step.text))
        every = [*self.shown, step]
        texts = fold(every, commits=len(self.ledger.commits), used=self.used, render=_text)
        entries = whole.entries
        saved = sum(utf8_size(entries[i].text) - utf8_size(t) for i, (_, t) in texts.items())
        if tokens_of_bytes(saved) < FOLD_MIN_TOKENS or saved < FOLD_SHARE * whole.bytes:
            return False
        if step.index not in texts and without_summary(step.result) is not step.result:
            # the new capsule shows this head's summary: the log need not repeat it
            short = without_summary(step.result)
            texts[step.index] = (short, _text(short))
        log = whole.folded({i: t for i, (_, t) in texts.items()})
        if not log.would_fit(capsule, 0, self.tier, margin):
            return False  # the window is full all the same: the round ends as it would
        shown = []
        for s in every:
            if s.index in texts:
                result, text = texts[s.index]
                s = dataclasses.replace(s, result=result, text=text)
            if s.index - 1 in texts:
                s = dataclasses.replace(
                    s, decision_text=texts[s.index - 1][1], decision_settled=True
                )
            shown.append(s)
        self._end_round()
        self.folds += 1
        self.log, self.shown, self.log_holds_last = log, shown, True
        # the grammars the folded log still states; a describe states the others again
        self.grammars_stated = set().union(*(stated_grammars(s.result) for s in shown))
        return True

    def _schema(self, aliases: dict[str, list[str]]) -> dict[str, Any]:
        """The decision schema of the round: made at its first step and the same bytes for
        every step of it. A provider reads the schema before the conversation (a tool's
        parameters, a JSON schema), so a schema that changed at every commit would make every
        prompt after it a new prefix: no cache hit for the whole round (spec 003 §6.6). An
        alias a commit of this round made is legal all the same: the host checks every
        decision against the current aliases, and a plan's arguments take an alias-shaped
        name by pattern; the next round's schema lists it."""
        if self.round_schema is None:
            self.round_schema = grammar.decision_schema(aliases, budgets=self.budgets)
        return self.round_schema

    def _end_round(self) -> None:
        """Compaction: an empty log, and a capsule rebuilt from the ledger and the note at
        the next step. Nothing else carries over."""
        self.round += 1
        self.round_schema = None
        self.log = RoundLog()
        self.shown, self.log_holds_last = [], False
        self.grammars_stated = set()  # the new round's log holds none of them
        self.window_full_told = False
        self.capsule = None
        # Only the contracts a pending repair needs ride into the new round; the rest stay
        # locked in the task and listed in the index's signatures.
        self.schema_pages = {
            cap: page for cap, page in self.schema_pages.items() if cap in self.pending
        }
        # Unpinned pages were shown once, in the round's log; only pinned ones carry over.
        for page_id in self.ledger.lru(pinned=False):
            self.ledger.evict(page_id, self.step, "round")
        # A lossy conversion: what the continuity adapter says is open rides the new round.
        carry = self._lossy("compaction")
        self.ledger.carry = carry.open_commitments if carry is not None else ()

    # -- integrations ------------------------------------------------------------------------

    def _lossy(self, trigger: Any, exported: tuple[str, ...] = ()) -> Any:
        event = LossyConversion(
            task_id=self.task.task_id,
            contract=self.integrations.contract,
            trigger=trigger,
            phase=phase_of(self.task.state),
            open_commitments=self._open_commitments(),
            evidence_refs=tuple(dict.fromkeys([*self._evidence(), *exported])),
            captured_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
        )
        return self.integrations.lossy_conversion(event)

    def _open_commitments(self) -> tuple[str, ...]:
        """What the host knows is still open (see :class:`LossyConversion`)."""
        task = self.task
        out = []
        if task.terminal is not TerminalState.COMPLETED:
            # The host cannot tell a requirement met from its text: open until completed.
            out += [f"requirement: {r}" for r in self.ledger.intent.hard_requirements]
        out += [f"approval: {op} {rid}" for op, rid in task.pending_approvals]
        if task.terminal is None and self.ledger.rejection is not None:
            out.append(f"repair: {self.ledger.rejection.code}")
        return tuple(dict.fromkeys(out))

    def _evidence(self) -> tuple[str, ...]:
        """``artifact:sha256:<hex>`` of every revision the task committed, oldest first."""
        return tuple(dict.fromkeys(artifact_ref(row.rev) for row in self.ledger.commits))

    def judge_export(self, fmt: str, target: str, data: bytes) -> bool:
        """Whether the run may write ``data`` (an export of the task's head as ``fmt``) to
        the file ``target``: the guard judges it as an ``external`` effect. A refusal is kept
        in :attr:`refusals`; an export allowed counts as evidence at the task's end."""
        digest = artifact_ref(data)
        event = EffectEvent(
            task_id=self.task.task_id,
            contract=self.integrations.contract,
            request_id=f"export.{fmt}",
            operation="export",
            effect_class="external",
            action=f"export:{fmt}",
            target=target,
            digest=digest,
        )
        verdict = self.integrations.judge(event)
        if verdict is None or verdict.decision == "allow":
            self.exported.append(digest)
            return True
        # No user is asked during a run's exports: an ``ask`` leaves the file unwritten.
        code = GUARD_BLOCKED if verdict.decision == "block" else GUARD_APPROVAL_REQUIRED
        self.refusals.append(
            Diagnostic(
                code=code,
                subject=target,
                approval=code == GUARD_APPROVAL_REQUIRED or None,
                message=f"the guard refused export:{fmt} ({verdict.decision}: "
                f"{verdict.reason}); the file was not written",
            )
        )
        return False

    def conclude(self) -> None:
        """The task's end for the adapters, after its terminal state and the run's exports:
        the last lossy conversion (evidence: the commits and the exported files), then the
        guard's records (``finish``). The runner calls it once; a host driven on its own,
        after :meth:`run`."""
        self._lossy("end", tuple(self.exported))
        self.integrations.finish()

    def _fit_capsule(self) -> Capsule | None:
        """The round's capsule; if the pinned pages alone do not fit, unpin the oldest and say
        so (the model asked to keep them, but B is a hard bound). None when nothing is left
        to release: B cannot hold the capsule, so the task ends as budgetExhausted."""
        while True:
            try:
                self.capsule = self._build_capsule()
                return self.capsule
            except CapsuleOverBudget as exc:
                if not self.ledger.release_oldest_pinned(self.step):
                    self.exhausted = f"{exc.code}: {exc.diagnostic.message}"
                    self.task.exhaust(self._request("budget"), self.exhausted)
                    return None
                last = self.last_result or {}
                self.last_result = {
                    **last,
                    "host": {**last.get("host", {}), "released": exc.diagnostic.message},
                }

    def _record(
        self,
        reply: StepReply,
        decision: Any,
        result: dict[str, Any],
        prompt_tokens: int,
        prompt: tuple[Capsule, int, int],
        times: tuple[float, float, float, float, float],
    ) -> dict[str, Any]:
        """The step's trajectory record; ``prompt`` is the capsule, log bytes and round the
        model was shown (settling may already have started the next round)."""
        capsule, log_bytes, round_ = prompt
        started, built, decided, validated, executed = times
        return {
            "step": self.step,
            "round": round_,
            "capsuleHash": capsule.hash,
            "capsuleBytes": capsule.bytes,
            "logBytes": log_bytes,
            "promptTokens": prompt_tokens,
            "budgetTokens": self.tier.budget,
            "decision": grammar.decision_to_wire(decision)
            if decision is not None
            else {"raw": redact(reply.text)[:2000]},  # redacted whole, then cut
            "result": _summary(result),
            "usage": reply.usage.to_wire(),
            "model": reply.model,
            "provider": reply.provider,
            "callId": reply.call_id,
            "stopReason": reply.stop_reason,
            "repairs": list(reply.repairs),
            "reasoningBytes": utf8_size(reply.reasoning),
            "timings": {
                "capsuleMs": round((built - started) * 1000, 3),
                "decideMs": round((decided - built) * 1000, 3),
                "validateMs": round((validated - decided) * 1000, 3),
                "executeMs": round((executed - validated) * 1000, 3),
            },
            "state": self.task.state.value,
            "terminal": self.task.terminal.value if self.task.terminal else None,
            "head": self.task.head,
        }

    # -- acts -----------------------------------------------------------------------------------

    def _rejection(
        self, code: str, message: str, detail: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        result = {"status": "rejected", "code": code, "message": message}
        if detail:
            result["detail"] = dict(detail)
        self.ledger.reject(self.step, code, message)
        return result

    def _note(self, decision: Any) -> None:
        note = getattr(decision, "note", None)
        if isinstance(note, str):
            self.ledger.set_note(note, self.tier)

    def _execute(self, decision: Any) -> dict[str, Any]:
        self._note(decision)
        act = decision.act
        if act == "batch":
            return {
                "status": "ok",
                "act": "batch",
                "results": [self._execute(d) for d in decision.acts],
            }
        handler = getattr(self, f"_act_{act}")
        try:
            result: dict[str, Any] = handler(decision)
        except AiraError as exc:  # an authority (store, aliases) refused: the act's result
            return self._rejection(exc.code, exc.diagnostic.message)
        return result

    def _envelope_result(self, act: str, envelope: Any, **extra: Any) -> dict[str, Any]:
        wire = envelope.to_wire()
        if envelope.status not in ("success", "partial"):
            first = envelope.diagnostics[0] if envelope.diagnostics else None
            data = wire.get("data")
            if isinstance(data, Mapping):
                wire = {**wire, "data": failed_step_shown(data)}
            return self._rejection(
                first.code if first else envelope.status.upper(),
                first.message if first else envelope.status,
                {"envelope": {k: wire[k] for k in ("status", "diagnostics", "data") if k in wire}},
            )
        data = dict(wire.get("data", {}))
        if isinstance(data.get("summary"), Mapping):  # as MCP shows a summary
            data["summary"] = shown_summary(data["summary"])
        return {"status": "ok", "act": act, **extra, "data": data}

    def _act_read(self, d: Any) -> dict[str, Any]:
        if not d.select:
            return self._envelope_result(
                "read", self.task.call("model.read", self._request("read"))
            )
        pages = []
        for path in d.select:
            args = {"select": list(path), "limit": d.limit or 50, "offset": d.offset or 0}
            envelope = self.task.call("model.read", self._request("read"), args)
            if envelope.status != "success":
                return self._envelope_result("read", envelope)
            page = envelope.data["page"]
            pages.append(page)
            page_id = self.ledger.add_page(
                list(path),
                self.task.head,
                json.dumps(page, ensure_ascii=False, sort_keys=True),
                step=self.step,
                pinned=bool(d.pin),
                hash=page["hash"],
                offset=args["offset"],
                limit=args["limit"],
            )
            page["pageId"] = page_id
        return {"status": "ok", "act": "read", "pages": pages}

    def _act_lookup(self, d: Any) -> dict[str, Any]:
        if d.capability:
            envelope = self.task.call(
                "catalog.describe",
                self._request("describe"),
                {"capabilityId": d.capability, "level": d.level or "L2"},
            )
            result = self._envelope_result("lookup", envelope)
            if envelope.status == "success":
                contract = envelope.data["contract"]
                # Re-inserted so the order is least recently described first (the capsule
                # releases schema pages in that order).
                self.schema_pages.pop(d.capability, None)
                self.schema_pages[d.capability] = json.dumps(
                    contract, ensure_ascii=False, sort_keys=True
                )
                if d.capability not in self.described:
                    self.described.append(d.capability)
                self.ledger.discovered("contract", d.capability, contract.get("contractHash", ""))
                # as MCP shows a contract: shared grammars stated once (per round here)
                if self.grammars is None:
                    self.grammars = shared_grammars(
                        e.input_schema for e in self.ctx.capabilities.values()
                    )
                result["data"] = compact_contracts(
                    result["data"], self.grammars, self.grammars_stated
                )
            return result
        envelope = self.task.call(
            "catalog.search", self._request("search"), {"intent": d.query, "topK": 8}
        )
        result = self._envelope_result("lookup", envelope)
        if envelope.status == "success":
            for hit in envelope.data.get("hits", []):
                self.ledger.discovered("hit", hit["capabilityId"], hit.get("handle", ""))
            result["data"] = compact_search(result["data"])  # as MCP shows a search
        return result

    def _act_inspect(self, d: Any) -> dict[str, Any]:
        # The one read path: the task admits the query, checks the grant and traces it.
        envelope = self.task.call(
            "model.read", self._request("inspect"), {"query": d.query, "args": d.args or {}}
        )
        if envelope.status != "success":
            first = envelope.diagnostics[0] if envelope.diagnostics else None
            return self._rejection(
                first.code if first else envelope.status.upper(),
                first.message if first else envelope.status,
            )
        # a query's contract is settled by the commit after its use
        self.used[envelope.data["query"]] = len(self.ledger.commits) + 1
        return {
            "status": "ok",
            "act": "inspect",
            "query": envelope.data["query"],
            "data": envelope.data["result"],
        }

    def _act_repair(self, d: Any) -> dict[str, Any]:
        # The runtime's own repair read (what MCP's model_read runs): the plan it repairs is
        # the one the task last had refused, the host's record, never one the model sends.
        on = {"code": d.diagnostic.code}
        if d.diagnostic.step is not None:
            on["step"] = d.diagnostic.step
        envelope = self.task.call(
            "model.read", self._request("repair"), {"repair": d.capability, "diagnostic": on}
        )
        if envelope.status != "success":
            first = envelope.diagnostics[0] if envelope.diagnostics else None
            return self._rejection(
                first.code if first else envelope.status.upper(),
                first.message if first else envelope.status,
            )
        made = dict(envelope.data["candidate"])
        result: dict[str, Any] = {
            "status": "ok",
            "act": "repair",
            **{
                k: made[k] for k in ("repair", "diagnostic", "step", "changes", "summary", "planId")
            },
            "plan": self._draft(made["plan"]),
            "message": 'to apply it, send {"act":"plan","summary":…,"plan":<this plan>}; '
            "it is checked and previewed like any plan",
        }
        if host_tokens(_text(result)) > LAST_RESULT_MAX_TOKENS:
            # Cut, it would be no plan to copy: the changes say what to edit in your own.
            del result["plan"]
            result["message"] = (
                f"the candidate plan is larger than a result holds; apply its changes to step "
                f"{made['step']!r} of the plan you sent, and send that as a plan act"
            )
        return result

    def _draft(self, plan: Mapping[str, Any]) -> dict[str, Any]:
        """A candidate plan in the ``plan`` act's shape: no ``baseRevision`` (the plan act
        binds the head) and staged files named ``staged:<name>`` again, as the model wrote
        them (the task holds their content)."""
        staged = {content: f"staged:{name}" for name, content in self.staged.items()}

        def restage(value: Any) -> Any:
            if isinstance(value, str):
                return staged.get(value, value)
            if isinstance(value, dict):
                return {k: restage(v) for k, v in value.items()}
            if isinstance(value, list):
                return [restage(v) for v in value]
            return value

        wire = {k: v for k, v in plan.items() if k in ("steps", "acceptanceAssertions")}
        draft = restage(wire)
        try:
            draft = plan_draft_wire(draft)
        except ValueError:
            return draft  # what the runtime made; the plan act will say what it refuses
        # Empty defaults left out (the plan act fills them in again): a shorter result.
        for key in ("steps", "acceptanceAssertions"):
            draft[key] = [
                {k: v for k, v in item.items() if v != [] and v != {}}
                for item in draft.get(key, [])
            ]
        if not draft["acceptanceAssertions"]:
            del draft["acceptanceAssertions"]
        return draft

    def _act_stage(self, d: Any) -> dict[str, Any]:
        self.staged[d.name] = d.content
        return {"status": "ok", "act": "stage", "name": d.name, "bytes": len(d.content.encode())}

    def _act_pin(self, d: Any) -> dict[str, Any]:
        try:
            changed = self.ledger.pin(list(d.pages), list(d.unpin), self.step)
        except AiraError as exc:
            return self._rejection(exc.code, exc.diagnostic.message)
        return {"status": "ok", "act": "pin", "changed": changed}

    def _act_note(self, d: Any) -> dict[str, Any]:
        return {"status": "ok", "act": "note"}

    def _unstage(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("staged:") and value[7:] in self.staged:
            return self.staged[value[7:]]
        if isinstance(value, dict):
            return {k: self._unstage(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._unstage(v) for v in value]
        return value

    def _act_plan(self, d: Any) -> dict[str, Any]:
        # Bound to the head the model saw: plan.check and the store's compare-and-swap refuse
        # it (STEP_STALE_REVISION, with the new head's summary) if the branch moved since.
        plan = {**self._unstage(dict(d.plan)), "baseRevision": self.seen_head}
        for op in ("model.proposePatch", "model.preview", "model.validate", "model.commit"):
            args = {"plan": plan} if op == "model.proposePatch" else {}
            envelope = self.task.call(op, self._request(op.split(".")[1]), args)
            if envelope.status != "success":
                self.pending = _capabilities_of(plan)
                result = self._envelope_result("plan", envelope)
                if envelope.status == "stale":
                    self.seen_head = self.task.head
                    summary = envelope.data.get("summary")
                    if isinstance(summary, Mapping):
                        result["summary"] = shown_summary(summary)
                failed = (envelope.data or {}).get("failedStep")
                if failed:
                    result["failedStep"] = failed
                    step = {k: envelope.data.get(k) for k in ("stepSignature", "stepSchema")}
                    result.update(failed_step_shown({k: v for k, v in step.items() if v}))
                offered = _repair_acts(envelope)
                if offered:
                    result["repairActs"] = offered
                return result
        head = self.seen_head = self.task.head
        self.pending = set()
        self.ledger.committed(head, d.summary, step=self.step)
        assertions = plan.get("acceptanceAssertions") or []
        validators = {
            capability_of(self.ctx, str(a.get("validatorRef")))
            for a in assertions
            if isinstance(a, Mapping)
        }
        for cap in _capabilities_of(plan) | validators:
            self.used[cap] = len(self.ledger.commits)
        refreshed = self.ledger.refresh(head, self._fetch, step=self.step)
        return {
            "status": "ok",
            "act": "plan",
            "rev": head,
            "changes": envelope.data,
            "pages": refreshed,
            "summary": shown_summary(self.ctx.repository.summary(head).to_wire()),
        }

    def _fetch(self, page: Any) -> tuple[str, str] | None:
        """A working page read again at the new head (None: its path is gone)."""
        try:
            fresh = self.ctx.repository.select(
                self.task.head, page.path, page.limit or 50, page.offset
            ).to_wire()
        except AiraError:
            return None
        return fresh["hash"], json.dumps(fresh, ensure_ascii=False, sort_keys=True)

    def _act_done(self, d: Any) -> dict[str, Any]:
        # The runtime's completion check needs a read-back of what was committed.
        self.task.call("model.read", self._request("readback"))
        verdict = self._completion(d)
        told = (
            {"guard": {"decision": verdict.decision, "reason": verdict.reason}} if verdict else {}
        )
        if verdict is not None and verdict.decision == "continue_verification":
            result = self._rejection(
                GUARD_CONTINUE_VERIFICATION,
                f"the guard asks for verification before done ({verdict.reason}); "
                f"continuation {self.integrations.continuations()} of this contract version",
            )
            return {**result, **told}
        # allow, remind (advisory) or no guard: the runtime decides.
        envelope = self.task.finish(self._request("finish"))
        if self.task.terminal is TerminalState.COMPLETED:
            return {"status": "ok", "act": "done", "terminal": "completed", **told}
        reason = (envelope.data or {}).get("decision", "COMPLETION_EVIDENCE_MISSING")
        result = self._rejection(reason, f"the runtime does not accept completion yet: {reason}")
        return {**result, **told}

    def _completion(self, d: Any) -> Any:
        if self.integrations.active("guard") is None:
            return None
        claim = CompletionClaim(
            task_id=self.task.task_id,
            contract=self.integrations.contract,
            summary=str(getattr(d, "summary", "")),
            runtime_decision=self.task.completion_check(),
            evidence_refs=self._evidence(),
            continuations=self.integrations.continuations(),
        )
        return self.integrations.completion(claim)

    def _act_abstain(self, d: Any) -> dict[str, Any]:
        self.task.abstain(self._request("abstain"), d.reason)
        return {
            "status": "ok",
            "act": "abstain",
            "terminal": self.task.terminal.value if self.task.terminal else None,
        }


def _capabilities_of(plan: Mapping[str, Any]) -> set[str]:
    """The capabilities a plan's steps use (a rejected plan's: their contracts are kept)."""
    steps = plan.get("steps", [])
    return {
        str(step.get("capability"))
        for step in (steps if isinstance(steps, list) else [])
        if isinstance(step, dict)
    }


def _repair_acts(envelope: Any) -> list[dict[str, Any]]:
    """The repair acts a refusal's next actions offer (``model.read {repair, diagnostic}``),
    ready to send: a refused plan's result shows them beside its diagnostics."""
    return [
        {"act": "repair", "capability": a.capability, "diagnostic": dict(a.args["diagnostic"])}
        for a in envelope.next_actions
        if a.operation == "model.read" and a.args and "repair" in a.args and a.capability
    ]


def _summary(result: dict[str, Any], limit: int = 600) -> dict[str, Any]:
    """What a trajectory keeps of a result: status, act, code, message, rev, failedStep,
    planId (a repair's candidate), what the host told the model (``host``: windowFull,
    released pages) — and its size."""
    keep = {
        k: result[k]
        for k in (
            "status",
            "act",
            "code",
            "rev",
            "failedStep",
            "planId",
            "terminal",
            "host",
            "guard",
        )
        if k in result
    }
    if "message" in result:
        keep["message"] = str(result["message"])[:limit]
    # to_text never fails: a record must be written whatever a result holds.
    keep["bytes"] = utf8_size(to_text(result))
    return keep
