"""Trajectories, decision scripts and the scripted decision source.

A **trajectory** is JSONL, one record per step (``aira.trajectory/1``): ``step``, ``round``,
``capsuleHash``, ``capsuleBytes``, ``logBytes``, ``decision``, ``result`` (a summary),
``usage``, ``model``, ``timings``, the runtime ``state`` and the task branch ``head``; a last
record ``{"end": …}`` carries the terminal state. Records are flushed and fsynced one by one,
so a killed process loses at most the step it was in. :func:`read_trajectory` checks every
record's shape (:class:`StepRecord`, :class:`EndRecord`), so what it returns can be used
without further checks; anything else is ``TRAJECTORY_INVALID``.

A **decision script** (``aira.decision-script/1``, schema: ``aira schema decision-script``)
is an intent, a tier, an optional starting document and a list of decisions. The
:class:`ScriptedSource` replays it through the same loop a model would drive; replaying the
same script twice gives the same terminal state and the same head revision.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal

from pydantic import ConfigDict, Field, ValidationError

from aira_core.canonical import (
    StrictJSONError,
    loads_strict,
)
from aira_core.contracts.base import WireModel
from aira_core.contracts.script import DecisionScript  # defined there; replayed here
from aira_core.diagnostics import AiraError, redact_value
from aira_core.extensions import StepReply, StepRequest
from aira_core.inputs import read_input, read_open

TRAJECTORY_FORMAT = "aira.trajectory/1"
SCRIPT_INVALID = "SCRIPT_INVALID"
TRAJECTORY_INVALID = "TRAJECTORY_INVALID"
TRAJECTORY_EXISTS = "TRAJECTORY_EXISTS"
NEW_RUN = (
    "a new run writes a new trajectory: choose another path, --resume the run it belongs "
    "to, or --force to replace it"
)


def _first_error(exc: ValidationError, prefix: tuple[str | int, ...] = ()) -> str:
    first = exc.errors(include_url=False)[0]
    where = "/".join(str(p) for p in (*prefix, *first["loc"]))
    return f"{first['msg']} at /{where} ({exc.error_count()} errors)"


def load_script(path: Path) -> DecisionScript:
    """The script at ``path``, its starting document checked as an AMIR document, or
    ``SCRIPT_INVALID`` (nothing is created for a script that is refused)."""
    from aira_core.contracts.amir import AmirDocument

    try:
        # strict: the task id hashes the script, so it needs canonical bytes (no NaN,
        # inexact integer, lone surrogate, duplicate key or nesting beyond the bound)
        data = read_input(path, "json", what="script", unreadable=SCRIPT_INVALID)
        raw = loads_strict(data, f"script {path.name!r}")[0]
    except StrictJSONError as exc:
        raise AiraError(SCRIPT_INVALID, str(exc)) from None
    # User-authored text (the intent, decisions, the document's labels) reaches outputs,
    # prompts, the trajectory and the store from here: redacted once, as it is read. A
    # script without credentials is unchanged, and with it its task id and revisions.
    raw = redact_value(raw)
    try:
        script = DecisionScript.model_validate(raw, by_name=False)
        if script.document is not None:
            # The runner builds the document after it has made the run's directory: one
            # that is not an AMIR document is refused here, before anything exists.
            AmirDocument.model_validate(script.document, by_name=False)
    except ValidationError as exc:
        within = ("document",) if exc.title == AmirDocument.__name__ else ()
        raise AiraError(SCRIPT_INVALID, f"{path.name}: {_first_error(exc, within)}") from None
    return script


class ScriptedSource:
    """A :class:`~aira_core.extensions.DecisionSource` that replays a script's decisions in
    order; after the last one it abstains (a script that never says ``done`` must not loop
    forever). Costs nothing."""

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

    def decide(self, request: StepRequest) -> StepReply:
        if self._next >= len(self.script.decisions):
            decision: dict[str, Any] = {
                "act": "abstain",
                "reason": "the script has no more decisions",
            }
        else:
            decision = self.script.decisions[self._next]
        self._next += 1
        return StepReply(
            text=json.dumps(decision, ensure_ascii=False),
            call_id=request.call_id,
            provider="script",
            model=self.name,
        )


# -- trajectories ----------------------------------------------------------------------------


class _Record(WireModel):
    # Strict, so a record reads back exactly as written ("3" is no step number); unknown
    # fields are kept, so a reader of /1 still reads records a newer host annotates.
    model_config = ConfigDict(strict=True, extra="allow")


Count = Annotated[int, Field(ge=0)]


class TrajectoryHeader(_Record):
    """The first line of a trajectory."""

    format: Literal["aira.trajectory/1"]
    script: str | None = None
    title: str | None = None
    """The script's title (the run report's heading)."""
    tier: str | None = None
    task_id: str | None = None


class DecisionRecord(_Record):
    """The decision of a step: its wire form, or ``raw`` text the host refused."""

    act: str | None = None
    raw: str | None = None


class ResultSummary(_Record):
    """What a trajectory keeps of a step's result."""

    status: str
    act: str | None = None
    code: str | None = None
    message: str | None = None
    rev: str | None = None
    failed_step: str | None = None
    terminal: str | None = None
    bytes: Count | None = None


class StepRecord(_Record):
    """One step of a trajectory."""

    step: Count
    round: Count
    capsule_hash: str | None = None
    capsule_bytes: Count
    log_bytes: Count
    prompt_tokens: Count
    budget_tokens: Count
    decision: DecisionRecord
    result: ResultSummary
    usage: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    timings: dict[str, Any] = Field(default_factory=dict)
    state: str | None = None
    terminal: str | None = None
    head: str | None = None


class EndRecord(_Record):
    """The last record: how the task ended."""

    end: Literal[True]
    terminal: str | None
    reason: str | None
    head: str
    steps: Count | None = None
    rounds: Count | None = None
    max_prompt_tokens: Count | None = None
    input_tokens: Count | None = None
    output_tokens: Count | None = None


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, line) of every line of ``data``. Split on ``\\n`` only: a record's text may
    hold U+2028 or U+0085, which ``str.splitlines`` would also break at."""
    out, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        out.append((start, data[start:end]))
        start = end + 1
    return out


def _parse(line: bytes) -> Any:
    """A line's JSON value (strict: canonical bytes exist, so no NaN, inexact integer, lone
    surrogate or over-deep nesting); :class:`StrictJSONError` (a ValueError) otherwise."""
    return loads_strict(line, "it")[0]


def _torn(data: bytes, lines: list[tuple[int, bytes]]) -> bool:
    """Whether the last line is the record a killed process was writing: a final line with
    no newline that is not yet whole JSON (records are objects, so no cut of one is). A
    complete line the strict reader refuses (NaN, a duplicate key, bad UTF-8 …) is damage,
    never dropped as torn."""
    if not lines or data.endswith(b"\n"):
        return False
    try:
        # lenient on purpose: the question is only whether the record was cut short
        json.loads(lines[-1][1].decode("utf-8", "replace"))
    except RecursionError:
        return False  # nothing this host writes nests so deep: damage
    except ValueError:
        return True
    return False


def read_trajectory(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the step records of a trajectory, each checked against its model
    (a torn last line, from a killed process, is ignored); ``TRAJECTORY_INVALID`` for a
    file that is not one, naming the line."""
    data = read_input(path, "trajectory", what="trajectory", unreadable=TRAJECTORY_INVALID)
    return _records(data, path)


def _records(data: bytes, path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:func:`read_trajectory` of the bytes ``data`` read from ``path``."""
    entries = _lines(data)
    if _torn(data, entries):
        entries.pop()  # the step a killed process was writing
    lines = [line for _, line in entries]
    try:
        header = _parse(lines[0]) if lines else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != TRAJECTORY_FORMAT:
        raise AiraError(TRAJECTORY_INVALID, f"{path.name} is not an {TRAJECTORY_FORMAT} file")
    _check(TrajectoryHeader, header, path, 1)
    records: list[dict[str, Any]] = []
    steps = 0
    for n, line in enumerate(lines[1:], start=2):
        if records and "end" in records[-1]:
            raise AiraError(TRAJECTORY_INVALID, f"{path.name}: line {n} follows the end record")
        try:
            value = _parse(line)
        except StrictJSONError as exc:
            raise AiraError(TRAJECTORY_INVALID, f"{path.name}: line {n}: {exc}") from None
        if not isinstance(value, dict) or not ("end" in value or "step" in value):
            raise AiraError(
                TRAJECTORY_INVALID,
                f"{path.name}: line {n} is neither a step record nor the end record",
            )
        if "end" in value:
            _check(EndRecord, value, path, n)
        else:
            _check(StepRecord, value, path, n)
            if value["step"] != steps:  # resume numbers on from the last step it read
                raise AiraError(
                    TRAJECTORY_INVALID,
                    f"{path.name}: line {n} is step {value['step']}; step {steps} comes next",
                )
            steps += 1
        records.append(value)
    return header, records


def _check(model: type[_Record], value: dict[str, Any], path: Path, n: int) -> None:
    """``value`` (read by :func:`_parse`, so plain JSON already) against its record model."""
    try:
        model.model_validate(value, by_name=False)
    except ValidationError as exc:
        raise AiraError(TRAJECTORY_INVALID, f"{path.name}: line {n}: {_first_error(exc)}") from None


class TrajectoryWriter:
    """Appends records to a JSONL file, durably (one fsync per record).

    With a ``header``, a new trajectory starts in a new file, created exclusively on the
    resolved path (:class:`aira_core.files.NewFile`): a path that exists, a symlink
    included, is ``TRAJECTORY_EXISTS`` unless ``force`` (then a new file replaces it when
    the run is :meth:`keep`-ed or closed; it is never written into).

    Without one (``None`` or ``{}``, as a resumed run opens it), the records continue the
    trajectory at ``path``: it must be one, a regular file and no symlink
    (``TRAJECTORY_INVALID``), read through the descriptor the records are appended to
    (:attr:`header`, :attr:`records`). A torn last line a killed process left is dropped
    (or a whole last record's missing newline added) when the first record is written, so
    a resume refused before that changes nothing.
    """

    def __init__(
        self,
        path: Path,
        header: dict[str, Any] | None = None,
        *,
        force: bool = False,
        protect: Iterable[Path | None] = (),
    ) -> None:
        from aira_core.files import NewFile, open_existing

        self.path = path
        self._new: NewFile | None = None
        self._tail: int | None = None
        """Where a continued file must end before the next record (None: it ends well)."""
        if header:
            self._new = NewFile(
                path, force=force, exists_code=TRAJECTORY_EXISTS, hint=NEW_RUN, protect=protect
            )
            self._file: BinaryIO = self._new.file
            self.header, self.records = {"format": TRAJECTORY_FORMAT, **header}, []
            try:
                self.write(self.header)
            except BaseException:
                self._new.discard()
                raise
            return
        self._file = open_existing(path, TRAJECTORY_INVALID)
        try:
            # the cap of read_trajectory: a continued file is read whole, once
            data = read_open(
                self._file.fileno(),
                path,
                "trajectory",
                what="trajectory",
                unreadable=TRAJECTORY_INVALID,
            )
            self.header, self.records = _records(data, path)  # refuses what is no trajectory
        except BaseException:
            self._file.close()
            raise
        lines = _lines(data)
        if _torn(data, lines):
            self._tail = lines[-1][0]
        elif not data.endswith(b"\n"):
            self._tail = -1  # a whole record whose newline was not written

    def write(self, record: dict[str, Any]) -> None:
        if self._tail is not None:
            if self._tail >= 0:
                self._file.truncate(self._tail)
            else:
                self._file.write(b"\n")
            self._tail = None
        # A record carries what the model wrote (notes, queries, summaries, staged content,
        # plan arguments, the raw text of a refused decision) and what the host said of it:
        # every string, keys included, is redacted before it is written down.
        record = redact_value(record)
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        self._file.write(line.encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())

    def keep(self) -> None:
        """The run started: a new trajectory is in place under its name from now on."""
        if self._new is not None:
            self._new.keep()

    def discard(self) -> None:
        """The run was refused before it started: a new trajectory is taken back (with the
        directories made for it), so nothing is left behind."""
        if self._new is not None:
            self._new.discard()
            self._new = None
        self._file.close()

    def close(self) -> None:
        if self._new is not None:
            self._new.keep()
            self._new.close()
            self._new = None
        self._file.close()
