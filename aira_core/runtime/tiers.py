"""Tiers and task budgets (spec 003 §3; DESIGN.md "Numbers the host holds"): what a task
may spend and how large what a model reads may be, the same for the bounded-step host
(:mod:`aira_core.step`) and the MCP server (:mod:`aira_core.mcp`), which both stand on the
runtime.

A tier fixes, for a target model window, the budget B that the capsule and the round log
together may never exceed, the size b of the model's note, the page limit and how many ledger
rows are kept before older ones fold into one line. Sizes are host-metered tokens: UTF-8 bytes
divided by 4, rounded up (:func:`~aira_core.contracts.amir.host_tokens`, imported here for
the modules that meter); no provider tokenizer is consulted.
"""

from __future__ import annotations

from dataclasses import dataclass

from aira_core.contracts.amir import HOST_BYTES_PER_TOKEN, host_tokens, tokens_of_bytes
from aira_core.diagnostics import AiraError

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_TIER",
    "HOST_BYTES_PER_TOKEN",
    "STEP_TIER_UNKNOWN",
    "TIERS",
    "TaskBudgets",
    "Tier",
    "host_tokens",
    "tier",
    "tokens_of_bytes",
]

STEP_TIER_UNKNOWN = "STEP_TIER_UNKNOWN"


@dataclass(frozen=True)
class Tier:
    """One tier of spec 003 §3: every size in host tokens."""

    name: str
    """``T32``, ``T128`` or ``T200``."""
    window: int
    """The target model's context window."""
    budget: int
    """B: the capsule plus the round log never exceed it (checked before every prompt is sent)."""
    note: int
    """b: the most the model's note may hold."""
    page: int
    """The most one page (a read, a lookup answer) may hold."""
    ledger_rows: int
    """Ledger rows kept in full before older ones fold into one line."""

    def bytes(self, tokens: int) -> int:
        """The byte size of ``tokens`` host tokens."""
        return tokens * HOST_BYTES_PER_TOKEN


TIERS: dict[str, Tier] = {
    t.name: t
    for t in (
        Tier("T32", window=32_000, budget=24_000, note=1_000, page=2_000, ledger_rows=6),
        Tier("T128", window=128_000, budget=96_000, note=2_000, page=4_000, ledger_rows=12),
        Tier("T200", window=200_000, budget=160_000, note=4_000, page=8_000, ledger_rows=16),
    )
}
DEFAULT_TIER = "T128"


@dataclass(frozen=True)
class TaskBudgets:
    """The limits of one task (DESIGN.md defaults). Past any of them the task ends as
    ``budget``; there is no whole-task clock, only the per-step liveness bound."""

    steps: int = 48
    input_tokens: int = 3_384_000
    output_tokens: int = 384_000
    usd: float = 5.0
    repair_rounds: int = 3
    batch_acts: int = 8
    """The most read-only acts one ``batch`` decision may hold."""
    enum_limit: int = 64
    """Legal handles of one kind are materialised as an enum in the decision schema up to
    this many; beyond it they are plain strings the host checks."""
    step_liveness_s: float = 16 * 60
    """How long one step may take; there is no whole-task clock."""

    def __post_init__(self) -> None:
        for name in ("steps", "input_tokens", "output_tokens", "batch_acts", "enum_limit"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"TaskBudgets.{name} must be a positive integer, got {value!r}")
        if type(self.repair_rounds) is not int or self.repair_rounds < 0:
            raise ValueError(f"TaskBudgets.repair_rounds must be >= 0, got {self.repair_rounds!r}")
        for name in ("usd", "step_liveness_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"TaskBudgets.{name} must be a positive number, got {value!r}")


DEFAULT_BUDGETS = TaskBudgets()


def tier(name: str) -> Tier:
    """The tier called ``name``; ``STEP_TIER_UNKNOWN`` for any other value."""
    found = TIERS.get(name) if isinstance(name, str) else None
    if found is None:
        raise AiraError(
            STEP_TIER_UNKNOWN,
            f"no tier {name!r}; tiers are {', '.join(TIERS)} (default {DEFAULT_TIER})",
            subject=str(name)[:64],
        )
    return found
