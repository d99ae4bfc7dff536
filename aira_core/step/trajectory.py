"""Trajectories, decision scripts and the scripted decision source.

A **trajectory** is JSONL, one record per step (``aira.trajectory/1``): ``step``, ``round``,
``capsuleHash``, ``capsuleBytes``, ``logBytes``, ``decision``, ``result`` (a summary),
``usage``, ``model``, ``timings``, the runtime ``state`` and the task branch ``head``; a last
record ``{"end": …}`` carries the terminal state. Records are flushed and fsynced one by one,
so a killed process loses at most the step it was in.

A **decision script** (``aira.decision-script/1``, schema: ``aira schema decision-script``)
is an intent, a tier, an optional starting document and a list of decisions. The
:class:`ScriptedSource` replays it through the same loop a model would drive; replaying the
same script twice gives the same terminal state and the same head revision.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import Field, ValidationError

from aira_core.contracts.base import WireModel
from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError

SCRIPT_FORMAT = "aira.decision-script/1"
TRAJECTORY_FORMAT = "aira.trajectory/1"
SCRIPT_INVALID = "SCRIPT_INVALID"
TRAJECTORY_INVALID = "TRAJECTORY_INVALID"


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


def load_script(path: Path) -> DecisionScript:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AiraError(SCRIPT_INVALID, f"cannot read {path.name}: {exc.strerror}") from None
    except ValueError as exc:
        raise AiraError(SCRIPT_INVALID, f"{path.name} is not JSON: {exc}") from None
    try:
        return DecisionScript.model_validate(raw, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise AiraError(
            SCRIPT_INVALID, f"{path.name}: {first['msg']} at /{where} ({exc.error_count()} errors)"
        ) from None


@dataclass(frozen=True)
class SourceReply:
    """What a decision source answers for one step."""

    text: str
    """The decision as text (JSON when the source is well behaved)."""
    model: str
    usage: dict[str, float] = field(default_factory=dict)
    """``inputTokens``, ``outputTokens``, ``usd`` as the provider reports them."""
    reasoning: str = ""


class DecisionSource(Protocol):
    """Where decisions come from: a script now, a model provider through the gateway later.
    The loop only ever calls :meth:`decide`."""

    name: str

    def decide(self, step: int, prompt: str, schema: dict[str, Any]) -> SourceReply: ...


class ScriptedSource:
    """Replays a script's decisions in order; after the last one it abstains (a script that
    never says ``done`` must not loop forever). Costs nothing."""

    def __init__(self, script: DecisionScript, *, start: int = 0) -> None:
        self.script = script
        self.name = f"script:{script.name}"
        self._next = start

    @property
    def position(self) -> int:
        return self._next

    def seek(self, position: int) -> None:
        """Continue from decision ``position`` (a resumed run)."""
        self._next = max(0, position)

    def decide(self, step: int, prompt: str, schema: dict[str, Any]) -> SourceReply:
        if self._next >= len(self.script.decisions):
            decision: dict[str, Any] = {
                "act": "abstain",
                "reason": "the script has no more decisions",
            }
        else:
            decision = self.script.decisions[self._next]
        self._next += 1
        text = json.dumps(decision, ensure_ascii=False)
        return SourceReply(
            text=text,
            model=self.name,
            usage={"inputTokens": 0, "outputTokens": 0, "usd": 0.0},
        )


class TrajectoryWriter:
    """Appends records to a JSONL file, durably (one fsync per record)."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists() or path.stat().st_size == 0
        self._file = path.open("a", encoding="utf-8")
        if fresh:
            self.write({"format": TRAJECTORY_FORMAT, **header})

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def read_trajectory(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the step records of a trajectory (a torn last line, from a killed
    process, is ignored)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise AiraError(TRAJECTORY_INVALID, f"cannot read {path.name}: {exc.strerror}") from None
    records: list[dict[str, Any]] = []
    for n, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except ValueError:
            if n == len(lines) - 1:
                break  # the step a killed process was writing
            raise AiraError(TRAJECTORY_INVALID, f"{path.name}: line {n + 1} is not JSON") from None
    if not records or records[0].get("format") != TRAJECTORY_FORMAT:
        raise AiraError(TRAJECTORY_INVALID, f"{path.name} is not an {TRAJECTORY_FORMAT} file")
    return records[0], records[1:]
