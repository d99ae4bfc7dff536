"""The decision script (``aira.decision-script/1``): a task and the decisions that carry it
out, replayable without a model (:mod:`aira_core.step.trajectory` replays it)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from aira_core.contracts.base import WireModel
from aira_core.contracts.plan import IntentFrame

SCRIPT_FORMAT = "aira.decision-script/1"


class DecisionScript(WireModel):
    """A task and the decisions that carry it out, replayable without a model."""

    format: Literal["aira.decision-script/1"]
    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,47}$")
    title: str = ""
    intent: IntentFrame
    tier: str = "T128"
    document: dict[str, Any] | None = None
    """The AMIR document the task starts from (None: an empty model)."""
    decisions: list[dict[str, Any]] = Field(min_length=1)
    """Decisions as a model would emit them (checked one by one when replayed, so a script
    may hold a deliberately wrong one)."""
