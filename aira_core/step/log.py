"""The round log (spec 003 §4.2, §6.6): what follows the capsule within one round.

A round's prompt is the capsule plus this log of decisions (each with the model's reasoning
and its call id) and results (answering that call id). The log only grows, so every step's
prompt starts with the previous step's prompt byte for byte and the provider's prefix cache
hits. It is bounded by the loop: before an
entry goes in, the loop asks :meth:`RoundLog.would_fit`; when it would not, the round ends
(compaction: a new capsule from the ledger, an empty log). A round also ends when a fold
pays (:mod:`aira_core.step.fold`): the new round's log is this one with its stale results in
short form (:meth:`RoundLog.folded`). Asked with a margin, it also says
when to warn the model first (``host.windowFull``, added to the result before it is
rendered), so it can write its note; :meth:`RoundLog.window_full` asks the same of the log
as it stands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aira_core.extensions import DecisionEntry, ResultEntry, RoundEntry, StepRequest
from aira_core.runtime.tiers import Tier, tokens_of_bytes
from aira_core.step.ledger import to_text, utf8_size

if TYPE_CHECKING:
    from aira_core.step.capsule import Capsule

__all__ = ["RoundLog", "call_id", "prompt_text", "render", "step_of"]

_CALL_ID = "aira_s"


def call_id(step: int) -> str:
    """The call id of a step's decision and result (a provider's tool-call id)."""
    return f"{_CALL_ID}{step}"


def step_of(call: str) -> int | None:
    """The step a call id names (:func:`call_id`), None for one the host did not make."""
    named = call.removeprefix(_CALL_ID)
    return int(named) if named != call and named.isdigit() else None


def render(entry: RoundEntry) -> str:
    """An entry as the host meters it: a header line ``# <kind>``, the model's reasoning (when
    it sent any) under ``# reasoning``, then the text. A provider renders the same entries as
    its own messages (the decision with its reasoning and call id, the result answering that
    call id); this rendering is what B is checked against."""
    if isinstance(entry, DecisionEntry) and entry.reasoning:
        return f"# {entry.kind}\n# reasoning\n{entry.reasoning}\n{entry.text}\n"
    return f"# {entry.kind}\n{entry.text}\n"


def prompt_text(request: StepRequest) -> str:
    """The prompt of a step as one text, as the host meters it: the capsule, then every log
    entry rendered. For a source that takes text; a chat provider renders the entries as
    messages instead."""
    return request.capsule + "".join(render(entry) for entry in request.log)


class RoundLog:
    """The append-only log of one round: typed entries (:class:`DecisionEntry`,
    :class:`ResultEntry`), never a flat string."""

    def __init__(self) -> None:
        self._entries: list[RoundEntry] = []
        self._parts: list[str] = []
        self._bytes = 0

    @staticmethod
    def decision(call_id: str, text: str | Mapping[str, Any], reasoning: str = "") -> DecisionEntry:
        """A decision entry: the text as the model sent it (a decision given as a value is
        rendered as canonical JSON) and its reasoning."""
        return DecisionEntry(call_id=call_id, text=to_text(text), reasoning=to_text(reasoning))

    @staticmethod
    def result(call_id: str, payload: str | Mapping[str, Any] | Sequence[Any]) -> ResultEntry:
        """A result entry. The payload is rendered now, so later changes to a dict the caller
        still holds cannot rewrite what the model has already been sent."""
        return ResultEntry(call_id=call_id, text=to_text(payload))

    @staticmethod
    def entry_bytes(entry: RoundEntry) -> int:
        """The bytes :meth:`append` would add for this entry (for :meth:`would_fit`)."""
        return utf8_size(render(entry))

    def append(self, entry: RoundEntry) -> RoundEntry:
        if not isinstance(entry, DecisionEntry | ResultEntry):
            raise TypeError(f"a log entry is a DecisionEntry or a ResultEntry, not {entry!r}")
        text = render(entry)
        self._entries.append(entry)
        self._parts.append(text)
        self._bytes += utf8_size(text)
        return entry

    @property
    def entries(self) -> tuple[RoundEntry, ...]:
        return tuple(self._entries)

    @property
    def text(self) -> str:
        """The log as the host meters it after the capsule."""
        return "".join(self._parts)

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def tokens(self) -> int:
        return tokens_of_bytes(self._bytes)

    def would_fit(
        self, capsule: Capsule, extra_bytes: int, tier: Tier, margin_tokens: int = 0
    ) -> bool:
        """Whether the capsule, this log and ``extra_bytes`` more (see :meth:`entry_bytes`)
        stay within B less ``margin_tokens``."""
        used = capsule.tokens + tokens_of_bytes(self._bytes + extra_bytes)
        return used + margin_tokens <= tier.budget

    def window_full(self, capsule: Capsule, tier: Tier, margin_tokens: int) -> bool:
        """True when less than ``margin_tokens`` of B are left after capsule and log: the
        next step would likely not fit, so the result should say ``host.windowFull``."""
        return capsule.tokens + self.tokens > tier.budget - margin_tokens

    def folded(self, texts: Mapping[int, str]) -> RoundLog:
        """A new log of the same entries, those at the indices of ``texts`` holding those
        texts instead (a fold: :mod:`aira_core.step.fold`)."""
        log = RoundLog()
        for i, entry in enumerate(self._entries):
            if i in texts and isinstance(entry, ResultEntry):
                entry = ResultEntry(call_id=entry.call_id, text=texts[i])
            elif i in texts:  # a decision keeps its call id and the model's reasoning
                entry = dataclasses.replace(entry, text=texts[i])
            log.append(entry)
        return log

    def __len__(self) -> int:
        return len(self._entries)
