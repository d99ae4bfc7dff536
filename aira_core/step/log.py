"""The round log (spec 003 §4.2, §6.6): what follows the capsule within one round.

A round's prompt is the capsule plus this log of decisions (with the model's reasoning) and
results. The log only grows, so every step's prompt starts with the previous step's prompt
byte for byte and the provider's prefix cache hits. It is bounded by the loop: before an
entry goes in, the loop asks :meth:`RoundLog.would_fit`; when it would not, the round ends
(compaction: a new capsule from the ledger, an empty log). Asked with a margin, it also says
when to warn the model first (``host.windowFull``, added to the result before it is
rendered), so it can write its note; :meth:`RoundLog.window_full` asks the same of the log
as it stands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from aira_core.step.ledger import to_text, utf8_size
from aira_core.step.tiers import HOST_BYTES_PER_TOKEN, Tier

if TYPE_CHECKING:
    from aira_core.step.capsule import Capsule

__all__ = ["LOG_KINDS", "LogEntry", "RoundLog"]

LogKind = Literal["decision", "result"]
LOG_KINDS: tuple[str, ...] = ("decision", "result")


@dataclass(frozen=True)
class LogEntry:
    """One entry as the prompt carries it: a header line ``# <kind>`` and the payload text
    (a string as given, anything else as canonical JSON)."""

    kind: LogKind
    body: str

    @property
    def text(self) -> str:
        return f"# {self.kind}\n{self.body}\n"


class RoundLog:
    """The append-only log of one round."""

    def __init__(self) -> None:
        self._entries: list[LogEntry] = []
        self._parts: list[str] = []
        self._bytes = 0

    @staticmethod
    def entry_bytes(kind: LogKind, payload: str | Mapping[str, Any] | Sequence[Any]) -> int:
        """The bytes :meth:`append` would add for this entry (for :meth:`would_fit`)."""
        return utf8_size(_entry(kind, payload).text)

    def append(self, kind: LogKind, payload: str | Mapping[str, Any] | Sequence[Any]) -> LogEntry:
        """Add an entry. The payload is rendered now, so later changes to a dict the
        caller still holds cannot rewrite what the model has already been sent."""
        entry = _entry(kind, payload)
        text = entry.text
        self._entries.append(entry)
        self._parts.append(text)
        self._bytes += utf8_size(text)
        return entry

    @property
    def entries(self) -> tuple[LogEntry, ...]:
        return tuple(self._entries)

    @property
    def text(self) -> str:
        """The log as it follows the capsule in the prompt."""
        return "".join(self._parts)

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def tokens(self) -> int:
        return _tokens_of(self._bytes)

    def would_fit(
        self, capsule: Capsule, extra_bytes: int, tier: Tier, margin_tokens: int = 0
    ) -> bool:
        """Whether the capsule, this log and ``extra_bytes`` more (see :meth:`entry_bytes`)
        stay within B less ``margin_tokens``."""
        used = capsule.tokens + _tokens_of(self._bytes + extra_bytes)
        return used + margin_tokens <= tier.budget

    def window_full(self, capsule: Capsule, tier: Tier, margin_tokens: int) -> bool:
        """True when less than ``margin_tokens`` of B are left after capsule and log: the
        next step would likely not fit, so the result should say ``host.windowFull``."""
        return capsule.tokens + self.tokens > tier.budget - margin_tokens

    def __len__(self) -> int:
        return len(self._entries)


def _entry(kind: LogKind, payload: str | Mapping[str, Any] | Sequence[Any]) -> LogEntry:
    if kind not in LOG_KINDS:
        raise ValueError(f"a log entry is one of {', '.join(LOG_KINDS)}, not {kind!r}")
    return LogEntry(kind, to_text(payload))


def _tokens_of(n_bytes: int) -> int:
    return -(-n_bytes // HOST_BYTES_PER_TOKEN)
