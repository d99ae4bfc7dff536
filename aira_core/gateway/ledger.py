"""The attempt ledger of the provider gateway (``$AIRA_HOME/gateway.sqlite3``): tasks, their
attempts and the facts of both (Task/Attempt v2, spec 002).

A *task* is one user intent; an *attempt* is one submission of one step of it to one
``providerId::modelId``. An attempt is written, and synced to disk, before any byte of its
request may leave the machine (:meth:`AttemptLedger.begin_attempt`); every later fact about
it (accepted or not, the remote id, the outcome, the delivered reply) is written the same way
before the gateway acts on it. So a process that dies at any point leaves a ledger that says
what may have been sent, and a restart never resubmits what was accepted or may have been.

The conventions of :mod:`aira_core.sqlite_file`, shared with the model store: one
``BEGIN IMMEDIATE`` transaction per write, in WAL mode with ``synchronous=FULL`` (a write that
returned is on disk; a crash keeps the last one that returned); an existing file is checked
read-only on open (``PRAGMA quick_check``, application id, schema version, schema objects) and
a file that is not a ledger, or a damaged one, is left exactly as it is
(``LEDGER_NOT_A_LEDGER`` / ``LEDGER_CORRUPT``); a new ledger is built in a temporary file and
linked into place, so the path never holds a half-made one.

Every persisted change of a task or of one of its attempts bumps the task's ``revision`` by
exactly 1 (the database itself refuses anything else) and stamps it with this ledger's
``epoch``, a random id made on each open: a client keeps the newest snapshot by (epoch,
revision). The task's facts mirror those of its latest attempt, in the same transaction,
except ``phase``, which is the task's own.

Facts that must never regress are checked on every write, and again by triggers in the file:
an accepted or refused attempt stays so, a final outcome is never replaced (a failed delivery
never makes a success a failure), ``deliveryState=ready`` is written only by
:meth:`AttemptLedger.deliver`, a confirmed cancel stays confirmed, a remote id and a request
digest are written once.
A forbidden change is a programming error: ``LEDGER_TRANSITION_INVALID``, nothing written.

Nothing stored is a credential, a request body, a private path or a signed URL: a request is
stored as its digest (:func:`request_digest`), and every stored string (intent, error, reply,
remote id) has been through :func:`aira_core.diagnostics.redact`.

An ``AttemptLedger`` holds one SQLite connection behind a lock (threads may share it); any
number of them, in any processes, may share a file.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, ParamSpec, TypeVar, cast

from aira_core.canonical import CanonicalJSONError, canonical_bytes, loads_strict, sha256_hex
from aira_core.config import aira_home
from aira_core.databases import hold
from aira_core.diagnostics import AiraError, redact, redact_value
from aira_core.gateway.facts import (
    CONFIRMED_CANCEL,
    LEDGER_ARGUMENT_INVALID,
    Acceptance,
    CancelState,
    DeliveryState,
    Facts,
    HumanState,
    LegacyStatus,
    Outcome,
    Phase,
    WatchState,
    axis_value,
    human_state,
    legacy_status,
)
from aira_core.sqlite_file import DAMAGE_ERRORS, SqliteFile, errorname, sync_directory

__all__ = [
    "ATTEMPT_STAGES",
    "ERROR_KEYS",
    "LEDGER_FILE",
    "SCHEMA_VERSION",
    "AttemptFacts",
    "AttemptLedger",
    "TaskFacts",
    "checked_model",
    "checked_task_id",
    "default_ledger_path",
    "request_digest",
]

LEDGER_FILE = "gateway.sqlite3"
SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the schema below; a ledger of a higher version is refused
(``LEDGER_UNAVAILABLE``: upgrade Aira)."""
APPLICATION_ID = 0x41495247  # "AIRG": marks the file as an Aira gateway ledger

# Stable diagnostic codes (LEDGER_ARGUMENT_INVALID: aira_core.gateway.facts).
LEDGER_UNAVAILABLE = "LEDGER_UNAVAILABLE"
LEDGER_CORRUPT = "LEDGER_CORRUPT"
LEDGER_NOT_A_LEDGER = "LEDGER_NOT_A_LEDGER"
LEDGER_TRANSITION_INVALID = "LEDGER_TRANSITION_INVALID"
LEDGER_TASK_UNKNOWN = "LEDGER_TASK_UNKNOWN"
LEDGER_ATTEMPT_UNKNOWN = "LEDGER_ATTEMPT_UNKNOWN"

ATTEMPT_STAGES: Final = (
    "preparing",
    "uploading",
    "submitting",
    "watching",
    "fetching",
    "parsing",
    "delivering",
    "done",
)
"""The stages the gateway uses (any lowercase identifier is stored: a stage is what an
attempt is doing, not a fact). ``preparing``, the stage of a new attempt: nothing has been
sent (a process that died here sent nothing); ``uploading`` (temporary inputs) and
``submitting`` (the billable request) are distinct stages, as spec 002 §5 requires: a process
that died while ``submitting`` may have been accepted (``unknown``)."""

ERROR_KEYS: Final = (
    "stage",
    "category",
    "httpStatus",
    "providerCode",
    "acceptance",
    "retryable",
    "code",
    "message",
)
"""The keys of a stored error (a ProviderError's wire form; spec 002 §9)."""

_MESSAGE_MAX = 1000
"""A stored error message is cut to this many characters: some providers echo the request in
their error text, and a request body is never stored."""

_FACT_VALUES = {
    "phase": Phase,
    "acceptance": Acceptance,
    "watch_state": WatchState,
    "outcome": Outcome,
    "delivery_state": DeliveryState,
    "cancel_state": CancelState,
}
_AXES = tuple(_FACT_VALUES)


def _fact_columns() -> str:
    return ",\n    ".join(
        f"{name} TEXT NOT NULL CHECK ({name} IN ({', '.join(repr(m.value) for m in enum)}))"
        for name, enum in _FACT_VALUES.items()
    )


_FINAL_ACCEPTANCE = "('accepted', 'not_accepted')"
_FINAL_OUTCOME = "('succeeded', 'failed', 'canceled')"
_FINAL_CANCEL = "('remote_confirmed', 'local_confirmed')"

_SCHEMA = (
    f"""CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    intent TEXT NOT NULL,
    retry_of TEXT REFERENCES tasks(id),
    handled_by_retry TEXT REFERENCES tasks(id),
    revision INTEGER NOT NULL CHECK (revision >= 1),
    state_epoch TEXT NOT NULL,
    model_ref TEXT,
    {_fact_columns()},
    error TEXT
)""",
    f"""CREATE TABLE attempts (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES tasks(id),
    step INTEGER NOT NULL CHECK (step >= 0),
    ordinal INTEGER NOT NULL CHECK (ordinal >= 1),
    provider_id TEXT NOT NULL,
    model TEXT NOT NULL,
    stage TEXT NOT NULL,
    idempotency_key TEXT,
    request_digest TEXT,
    remote_id TEXT,
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    {_fact_columns()},
    error TEXT,
    reply TEXT,
    UNIQUE (task_id, step, ordinal)
)""",
    # The file itself refuses what no write of this module does, whatever code runs on it.
    """CREATE TRIGGER tasks_revision BEFORE UPDATE ON tasks
    WHEN NEW.revision IS NOT OLD.revision + 1
    BEGIN SELECT RAISE(ABORT, 'a task change bumps its revision by exactly 1'); END""",
    """CREATE TRIGGER tasks_identity BEFORE UPDATE OF id, created_at, intent, retry_of ON tasks
    BEGIN SELECT RAISE(ABORT, 'a task''s identity never changes'); END""",
    """CREATE TRIGGER tasks_no_delete BEFORE DELETE ON tasks
    BEGIN SELECT RAISE(ABORT, 'tasks are never deleted'); END""",
    """CREATE TRIGGER attempts_identity BEFORE UPDATE OF id, task_id, step, ordinal,
    provider_id, model, idempotency_key, started_at ON attempts
    BEGIN SELECT RAISE(ABORT, 'an attempt''s identity never changes'); END""",
    f"""CREATE TRIGGER attempts_final_facts BEFORE UPDATE ON attempts
    WHEN (OLD.acceptance IN {_FINAL_ACCEPTANCE} AND NEW.acceptance IS NOT OLD.acceptance)
      OR (OLD.outcome IN {_FINAL_OUTCOME} AND NEW.outcome IS NOT OLD.outcome)
      OR (OLD.delivery_state = 'ready' AND NEW.delivery_state IS NOT 'ready')
      OR (OLD.cancel_state IN {_FINAL_CANCEL} AND NEW.cancel_state IS NOT OLD.cancel_state)
      OR (OLD.remote_id IS NOT NULL AND NEW.remote_id IS NOT OLD.remote_id)
      OR (OLD.request_digest IS NOT NULL AND NEW.request_digest IS NOT OLD.request_digest)
      OR (OLD.reply IS NOT NULL AND NEW.reply IS NOT OLD.reply)
    BEGIN SELECT RAISE(ABORT, 'a final fact of an attempt never changes'); END""",
    """CREATE TRIGGER attempts_no_delete BEFORE DELETE ON attempts
    BEGIN SELECT RAISE(ABORT, 'attempts are never deleted'); END""",
)
_TASK_COLUMNS = (
    "id",
    "created_at",
    "updated_at",
    "intent",
    "retry_of",
    "handled_by_retry",
    "revision",
    "state_epoch",
    "model_ref",
    *_AXES,
    "error",
)
_ATTEMPT_COLUMNS = (
    "id",
    "task_id",
    "step",
    "ordinal",
    "provider_id",
    "model",
    "stage",
    "idempotency_key",
    "request_digest",
    "remote_id",
    "started_at",
    "updated_at",
    *_AXES,
    "error",
    "reply",
)
_COLUMNS = {"tasks": _TASK_COLUMNS, "attempts": _ATTEMPT_COLUMNS}
_REQUIRED_OBJECTS = frozenset(
    {
        "tasks",
        "attempts",
        "tasks_revision",
        "tasks_identity",
        "tasks_no_delete",
        "attempts_identity",
        "attempts_final_facts",
        "attempts_no_delete",
    }
)

_TASK_SELECT = f"SELECT {', '.join(_TASK_COLUMNS)} FROM tasks"
_ATTEMPT_SELECT = f"SELECT {', '.join(_ATTEMPT_COLUMNS)} FROM attempts"
_LATEST = _ATTEMPT_SELECT + " WHERE task_id = ? ORDER BY step DESC, ordinal DESC LIMIT 1"
_LATEST_ID = "SELECT id FROM attempts WHERE task_id = ? ORDER BY step DESC, ordinal DESC LIMIT 1"

_TASK_ID_RE = re.compile(r"task_[0-9a-f]{32}")
_ATTEMPT_ID_RE = re.compile(r"attempt_[0-9a-f]{32}")
_PROVIDER_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/@+:-]{0,199}")
_KEY_RE = re.compile(r"[\x21-\x7e]{1,255}")
_DIGEST_RE = re.compile(r"(?:[a-z][a-z0-9_-]*:)?sha256:[0-9a-f]{64}")
_STAGE_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_CODE_RE = re.compile(r"[A-Z][A-Z0-9_]*")
_REMOTE_ID_MAX = 512
_CHAIN_MAX = 10_000  # retry links followed at most: a damaged file cannot loop a read

_PHASE_ORDER = {p: i for i, p in enumerate(Phase)}

P = ParamSpec("P")
T = TypeVar("T")


class _Keep:
    """The type of :data:`KEEP`, the default of a change argument: leave it as it is."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = _Keep()


def default_ledger_path() -> Path:
    """``aira_home() / "gateway.sqlite3"``."""
    return aira_home() / LEDGER_FILE


def request_digest(body: Any) -> str:
    """``sha256:<hex>`` of a request body's canonical JSON: what the ledger stores instead of
    the body (aira_core.canonical's one hasher)."""
    return "sha256:" + sha256_hex(body)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _new_id(kind: str) -> str:
    return f"{kind}_{os.urandom(16).hex()}"


def _invalid(message: str) -> AiraError:
    return AiraError(LEDGER_ARGUMENT_INVALID, redact(message))


def _transition(message: str, subject: str) -> AiraError:
    return AiraError(LEDGER_TRANSITION_INVALID, message, subject=subject)


@dataclass(frozen=True)
class _Row:
    """A row named in a message, redacted only when a message needs it (every read names
    its rows, and redacting each name costs more than reading the row)."""

    kind: str
    id: object

    def __str__(self) -> str:
        return f"{self.kind} {_shown(self.id)}"


def checked_task_id(task_id: object) -> str:
    """``task_id`` if it is a task id (``task_<32 hex>``), else ``LEDGER_TASK_UNKNOWN`` with
    what was given short, redacted and escaped (it is user input)."""
    if not isinstance(task_id, str) or not _TASK_ID_RE.fullmatch(task_id):
        raise AiraError(
            LEDGER_TASK_UNKNOWN, f"{_shown(task_id)!r} is not a task id (task_<32 hex>)"
        )
    return task_id


def _shown(value: object) -> str:
    """``value`` fit for a message: short, and redacted."""
    text = value if isinstance(value, str) else type(value).__name__
    return redact(text[:80] + ("…" if len(text) > 80 else ""))


# -- what is stored ------------------------------------------------------------------------------


def _json_text(value: Any, what: str) -> str:
    try:
        return canonical_bytes(value).decode("utf-8")
    except CanonicalJSONError as exc:
        raise _invalid(f"{what} is not JSON data: {exc}") from None


def _error_wire(error: object) -> dict[str, Any] | None:
    """The stored form of an error: the :data:`ERROR_KEYS` of a mapping, of an object with
    ``to_wire()`` (a ProviderError) or of an AiraError; checked, cut and redacted."""
    if error is None:
        return None
    to_wire = getattr(error, "to_wire", None)
    if callable(to_wire):
        data = to_wire()
    elif isinstance(error, AiraError):
        data = {"code": error.code, "message": error.diagnostic.message}
    else:
        data = error
    if not isinstance(data, Mapping):
        raise _invalid(f"an error must be a mapping of {', '.join(ERROR_KEYS)}")
    unknown = sorted(str(k) for k in data if k not in ERROR_KEYS)
    if unknown:
        raise _invalid(f"an error has unknown keys: {', '.join(unknown[:5])}")
    code, message = data.get("code"), data.get("message")
    if code is not None and (not isinstance(code, str) or not _CODE_RE.fullmatch(code)):
        raise _invalid(f"an error's code must be a diagnostic code, got {_shown(code)!r}")
    if message is not None and not isinstance(message, str):
        raise _invalid("an error's message must be a string")
    status = data.get("httpStatus")
    if status is not None and (type(status) is not int or not 100 <= status <= 599):
        raise _invalid(f"an error's httpStatus must be an HTTP status, got {_shown(status)!r}")
    retryable = data.get("retryable", False)
    if type(retryable) is not bool:
        raise _invalid("an error's retryable must be true or false")
    acceptance = data.get("acceptance")
    if acceptance is not None:
        acceptance = str(axis_value(Acceptance, acceptance, "an error's acceptance"))
    texts = {}
    for key in ("stage", "category", "providerCode"):
        value = data.get(key)
        if value is not None and (type(value) is int and key == "providerCode"):
            value = str(value)
        if value is not None and not isinstance(value, str):
            raise _invalid(f"an error's {key} must be a string")
        texts[key] = value[:200] if isinstance(value, str) else None
    if message is not None and len(message) > _MESSAGE_MAX:
        message = message[:_MESSAGE_MAX] + "…"
    out = {
        **texts,
        "httpStatus": status,
        "acceptance": acceptance,
        "retryable": retryable,
        "code": code,
        "message": message,
    }
    return cast("dict[str, Any]", redact_value({k: out[k] for k in ERROR_KEYS}))


def _reply_wire(reply: object) -> dict[str, Any]:
    to_wire = getattr(reply, "to_wire", None)
    data = to_wire() if callable(to_wire) else reply
    if not isinstance(data, Mapping):
        raise _invalid("a reply must be a StepReply or its wire form (a JSON object)")
    return cast("dict[str, Any]", redact_value(dict(data)))


# -- what is read ---------------------------------------------------------------------------------


class _Derived:
    """What a task and an attempt derive from their six axes: the facts, the legacy status
    (spec 002 §3.1) and the state a person is shown (§10)."""

    __slots__ = ()

    @property
    def facts(self) -> Facts:
        return Facts(*(getattr(self, a) for a in _AXES))

    @property
    def status(self) -> LegacyStatus:
        return legacy_status(self.facts)

    @property
    def human_state(self) -> HumanState:
        return human_state(self.facts)


@dataclass(frozen=True, slots=True)
class AttemptFacts(_Derived):
    """One attempt as stored: one submission of step ``step`` of a task to one
    ``providerId::modelId``. Read-only; the ledger makes a new one on every change."""

    id: str
    task_id: str
    step: int
    ordinal: int
    """1, 2, … for the attempts of one (task, step), in the order they were begun."""
    provider_id: str
    model: str
    """``providerId::modelId``."""
    stage: str
    idempotency_key: str | None
    request_digest: str | None
    """The digest of the request body (:func:`request_digest`), once the body is built."""
    remote_id: str | None
    started_at: str
    updated_at: str
    phase: Phase
    acceptance: Acceptance
    watch_state: WatchState
    outcome: Outcome
    delivery_state: DeliveryState
    cancel_state: CancelState
    error: Mapping[str, Any] | None = None
    reply: Mapping[str, Any] | None = None
    """The delivered reply (a StepReply's wire form, redacted), once delivered."""

    @property
    def model_id(self) -> str:
        return self.model.split("::", 1)[1]

    def to_wire(self) -> dict[str, Any]:
        """The attempt in spec 002 §5's names (camelCase), with its derived ``status``
        (legacy) and ``humanState``."""
        return {
            "id": self.id,
            "taskId": self.task_id,
            "step": self.step,
            "ordinal": self.ordinal,
            "providerId": self.provider_id,
            "model": self.model,
            "acceptance": str(self.acceptance),
            "stage": self.stage,
            "idempotencyKey": self.idempotency_key,
            "requestDigest": self.request_digest,
            "remoteId": self.remote_id,
            "startedAt": self.started_at,
            "updatedAt": self.updated_at,
            **self.facts.to_wire(),
            "status": str(self.status),
            "humanState": str(self.human_state),
            "error": _copy(self.error),
            "reply": _copy(self.reply),
        }


@dataclass(frozen=True, slots=True)
class TaskFacts(_Derived):
    """One task as stored: one user intent, whatever number of attempts it took. Its facts
    are its latest attempt's, except ``phase``, its own."""

    id: str
    created_at: str
    updated_at: str
    intent: Any
    retry_of: str | None
    """The task this one retries (an informed retry)."""
    handled_by_retry: str | None
    """The task that retried this one: its reminder is handled, its facts stay as they were."""
    revision: int
    """1 when created, +1 on each persisted change of the task or its attempts."""
    state_epoch: str
    """The epoch of the ledger that made the last change."""
    model_ref: str | None
    """``providerId::modelId`` of the latest attempt."""
    phase: Phase
    acceptance: Acceptance
    watch_state: WatchState
    outcome: Outcome
    delivery_state: DeliveryState
    cancel_state: CancelState
    error: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "intent": _copy(self.intent),
            "retryOf": self.retry_of,
            "handledByRetry": self.handled_by_retry,
            "revision": self.revision,
            "stateEpoch": self.state_epoch,
            "modelRef": self.model_ref,
            **self.facts.to_wire(),
            "status": str(self.status),
            "humanState": str(self.human_state),
            "error": _copy(self.error),
        }


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value


# -- the ledger -----------------------------------------------------------------------------------


def _guarded(method: Callable[P, T]) -> Callable[P, T]:
    """One call at a time on the connection, and any SQLite error escaping it an
    :class:`AiraError`."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        ledger = cast("AttemptLedger", args[0])
        with ledger._lock:
            try:
                return method(*args, **kwargs)
            except sqlite3.Error as exc:
                raise ledger._sqlite_error(exc, method.__name__) from None

    return wrapper


class AttemptLedger(SqliteFile):
    """Tasks, attempts and their facts in one SQLite file (see the module docstring).

    ``AttemptLedger(path)`` (or :meth:`open`) opens the ledger at ``path`` (default
    :func:`default_ledger_path`), creating an empty one if there is no file. An existing file
    that is not a valid ledger is left exactly as it is: ``LEDGER_NOT_A_LEDGER`` (not an
    SQLite database, or another application's), ``LEDGER_CORRUPT`` (a damaged ledger, an
    empty file), ``LEDGER_UNAVAILABLE`` (a location that cannot be written, a lock held too
    long, a newer schema). Use as a context manager or call :meth:`close`.
    """

    NOUN = "attempt ledger"
    SHORT = "ledger"
    APPLICATION_ID = APPLICATION_ID
    SCHEMA_VERSION = SCHEMA_VERSION
    SCHEMA = _SCHEMA
    UNAVAILABLE = LEDGER_UNAVAILABLE
    CORRUPT = LEDGER_CORRUPT
    EMPTY_FILE = (
        "is an empty file (0 bytes), not a ledger; it was left as it is: restore it from a "
        "backup, or move it away to start a new ledger"
    )
    CHECK_SAME_THREAD = False  # calls are serialised by self._lock
    IMMUTABLE_WHEN_IDLE = True  # a refused file is left exactly as it was, no -wal/-shm made

    def __init__(self, path: Path | str | None = None, *, busy_timeout: float = 10.0) -> None:
        """``busy_timeout``: seconds a write waits for another writer's lock before it fails
        with ``LEDGER_UNAVAILABLE``."""
        self.path = Path(path) if path is not None else default_ledger_path()
        self.epoch = _new_id("epoch")
        """This open's state epoch: stamped on every task it changes."""
        self._busy_timeout = busy_timeout
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._closed = False
        hold(self)  # closed at the process end if still open (aira_core.databases)
        try:
            self._db = self._open(create=True)
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "open") from None

    @classmethod
    def open(cls, path: Path | str | None = None, *, busy_timeout: float = 10.0) -> AttemptLedger:
        """The ledger at ``path`` (see the class)."""
        return cls(path, busy_timeout=busy_timeout)

    # -- opening (the rest: aira_core.sqlite_file) --------------------------------------------

    def _gone(self) -> AiraError:
        return self._error(LEDGER_UNAVAILABLE, "was removed while being opened")

    def _not_intact(self, problem: object) -> AiraError:
        return self._error(
            LEDGER_CORRUPT,
            f"failed its integrity check ({redact(str(problem))[:200]}); it was left as it is",
        )

    def _foreign(self, app_id: int, version: int, names: set[str]) -> AiraError:
        what = "an empty SQLite database" if not names else "another application's database"
        return self._error(
            LEDGER_NOT_A_LEDGER,
            f"is {what}, not an attempt ledger; it was left as it is: move it away to "
            "start a new ledger",
        )

    def _required_objects(self, version: int) -> frozenset[str]:
        return _REQUIRED_OBJECTS

    def _columns(self, version: int) -> Mapping[str, tuple[str, ...]]:
        return _COLUMNS

    def _sqlite_error(self, exc: sqlite3.Error, doing: str) -> AiraError:
        if self._db is not None and doing != "open":
            self._rollback()
        name = errorname(exc)
        said = redact("".join(c if c.isprintable() else "?" for c in str(exc)[:200]))
        if name.startswith("SQLITE_NOTADB"):
            return self._error(
                LEDGER_NOT_A_LEDGER,
                f"is not an SQLite database, or its header is damaged ({doing}); it was left "
                "as it is: move it away to start a new ledger",
            )
        if name.startswith("SQLITE_CORRUPT"):
            return self._error(LEDGER_CORRUPT, f"is damaged ({doing}: {said})")
        if isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(DAMAGE_ERRORS):
            return self._error(LEDGER_CORRUPT, f"is damaged ({doing}: {said})")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return self._error(
                LEDGER_UNAVAILABLE, f"locked by another process too long ({doing}: {said})"
            )
        if name.startswith("SQLITE_READONLY"):
            return self._error(
                LEDGER_UNAVAILABLE, f"cannot be written: its location is read-only ({doing})"
            )
        if isinstance(exc, sqlite3.ProgrammingError) and self._db is None:
            return self._error(LEDGER_UNAVAILABLE, "the ledger is closed")
        return self._error(LEDGER_UNAVAILABLE, f"cannot be used ({doing}: {said})")

    def _create_file(self) -> None:
        # A ledger that cannot be built is "cannot be created", whatever failed; and its new
        # name is made durable too: the ledger is what says what may have been sent.
        try:
            super()._create_file()
        except sqlite3.Error as exc:
            raise self._error(LEDGER_UNAVAILABLE, f"cannot be created: {exc}") from None
        sync_directory(self.path.parent)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            super().close()

    # -- rows --------------------------------------------------------------------------------

    def _load(self, text: object, row: _Row, column: str) -> Any:
        if text is None:
            return None
        if not isinstance(text, str):
            raise self._damaged(f"{row} {column}", "not JSON text")
        try:
            return loads_strict(text, column)[0]
        except CanonicalJSONError:
            raise self._damaged(f"{row} {column}", "not readable JSON") from None

    def _axes(self, row: Mapping[str, Any], what: _Row) -> dict[str, Any]:
        try:
            return {a: enum(row[a]) for a, enum in _FACT_VALUES.items()}
        except ValueError:
            raise self._damaged(what, "a fact outside its enum") from None

    def _task(self, values: Sequence[Any]) -> TaskFacts:
        row = dict(zip(_TASK_COLUMNS, values, strict=True))
        what = _Row("task", row["id"])
        if not all(isinstance(row[c], str) for c in ("id", "created_at", "state_epoch")):
            raise self._damaged(what, "a text column holds another type")
        if type(row["revision"]) is not int:
            raise self._damaged(what, "its revision is not an integer")
        return TaskFacts(
            id=row["id"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            intent=self._load(row["intent"], what, "intent"),
            retry_of=row["retry_of"],
            handled_by_retry=row["handled_by_retry"],
            revision=row["revision"],
            state_epoch=row["state_epoch"],
            model_ref=row["model_ref"],
            error=self._load(row["error"], what, "error"),
            **self._axes(row, what),
        )

    def _attempt(self, values: Sequence[Any]) -> AttemptFacts:
        row = dict(zip(_ATTEMPT_COLUMNS, values, strict=True))
        what = _Row("attempt", row["id"])
        if type(row["step"]) is not int or type(row["ordinal"]) is not int:
            raise self._damaged(what, "its step or ordinal is not an integer")
        if not isinstance(row["model"], str) or "::" not in row["model"]:
            raise self._damaged(what, "its model is not providerId::modelId")
        return AttemptFacts(
            id=row["id"],
            task_id=row["task_id"],
            step=row["step"],
            ordinal=row["ordinal"],
            provider_id=row["provider_id"],
            model=row["model"],
            stage=row["stage"],
            idempotency_key=row["idempotency_key"],
            request_digest=row["request_digest"],
            remote_id=row["remote_id"],
            started_at=row["started_at"],
            updated_at=row["updated_at"],
            error=self._load(row["error"], what, "error"),
            reply=self._load(row["reply"], what, "reply"),
            **self._axes(row, what),
        )

    def _task_of(self, db: sqlite3.Connection, task_id: object) -> TaskFacts:
        task_id = checked_task_id(task_id)
        row = db.execute(_TASK_SELECT + " WHERE id = ?", (task_id,)).fetchone()
        if row is None:
            raise AiraError(LEDGER_TASK_UNKNOWN, f"no task {task_id}", subject=task_id)
        return self._task(row)

    def _attempt_of(self, db: sqlite3.Connection, attempt_id: object) -> AttemptFacts:
        if not isinstance(attempt_id, str) or not _ATTEMPT_ID_RE.fullmatch(attempt_id):
            raise AiraError(
                LEDGER_ATTEMPT_UNKNOWN,
                f"{_shown(attempt_id)!r} is not an attempt id (attempt_<32 hex>)",
            )
        row = db.execute(_ATTEMPT_SELECT + " WHERE id = ?", (attempt_id,)).fetchone()
        if row is None:
            raise AiraError(LEDGER_ATTEMPT_UNKNOWN, f"no attempt {attempt_id}", subject=attempt_id)
        return self._attempt(row)

    def _latest(self, db: sqlite3.Connection, task_id: str) -> AttemptFacts | None:
        row = db.execute(_LATEST, (task_id,)).fetchone()
        return None if row is None else self._attempt(row)

    def _write_task(
        self,
        db: sqlite3.Connection,
        task: TaskFacts,
        *,
        phase: Phase | None = None,
        facts: Facts | None = None,
        error: object = KEEP,
        handled_by_retry: str | None = None,
        mirror: bool | AttemptFacts = False,
    ) -> None:
        """Persist a change of ``task``: revision + 1, this ledger's epoch, and (``mirror``)
        the facts, model and error of its latest attempt; ``mirror`` may be the attempt
        just written, used as it is when it is the latest (no read and decode of it)."""
        axes = {a: getattr(task, a) for a in _AXES}
        model_ref = task.model_ref
        stored_error = None if task.error is None else _json_text(task.error, "the error")
        if facts is not None:
            axes.update({a: getattr(facts, a) for a in _AXES})
        if mirror:
            latest: AttemptFacts | None = None
            if isinstance(mirror, AttemptFacts):
                row = db.execute(_LATEST_ID, (task.id,)).fetchone()
                if row is not None and row[0] == mirror.id:
                    latest = mirror
            if latest is None:
                latest = self._latest(db, task.id)
            if latest is not None:
                axes.update({a: getattr(latest, a) for a in _AXES if a != "phase"})
                model_ref = latest.model
                stored_error = None if latest.error is None else _json_text(latest.error, "")
        if phase is not None:
            axes["phase"] = phase
        if error is not KEEP:  # already made a stored error (_error_wire)
            stored_error = None if error is None else _json_text(error, "the error")
        db.execute(
            "UPDATE tasks SET updated_at = ?, handled_by_retry = ?, revision = ?, "
            "state_epoch = ?, model_ref = ?, "
            + ", ".join(f"{a} = ?" for a in _AXES)
            + ", error = ? WHERE id = ?",
            (
                _now(),
                handled_by_retry if handled_by_retry is not None else task.handled_by_retry,
                task.revision + 1,
                self.epoch,
                model_ref,
                *(str(axes[a]) for a in _AXES),
                stored_error,
                task.id,
            ),
        )

    def _insert_task(self, db: sqlite3.Connection, intent: Any, retry_of: str | None) -> str:
        task_id, now = _new_id("task"), _now()
        facts = Facts()
        db.execute(
            f"INSERT INTO tasks ({', '.join(_TASK_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(_TASK_COLUMNS))})",
            (
                task_id,
                now,
                now,
                _json_text(redact_value(intent), "the intent"),
                retry_of,
                None,
                1,
                self.epoch,
                None,
                *(str(getattr(facts, a)) for a in _AXES),
                None,
            ),
        )
        return task_id

    # -- reads -------------------------------------------------------------------------------

    @_guarded
    def task(self, task_id: str) -> TaskFacts:
        """The task ``task_id`` (``LEDGER_TASK_UNKNOWN`` if there is none)."""
        with self._snapshot() as db:
            return self._task_of(db, task_id)

    @_guarded
    def tasks(self) -> list[TaskFacts]:
        """Every task, oldest first."""
        with self._snapshot() as db:
            return [self._task(r) for r in db.execute(_TASK_SELECT + " ORDER BY rowid")]

    @_guarded
    def attempt(self, attempt_id: str) -> AttemptFacts:
        """The attempt ``attempt_id`` (``LEDGER_ATTEMPT_UNKNOWN`` if there is none)."""
        with self._snapshot() as db:
            return self._attempt_of(db, attempt_id)

    @_guarded
    def attempts(self, task_id: str, step: int | None = None) -> list[AttemptFacts]:
        """The attempts of a task (of one step of it), by step then ordinal."""
        with self._snapshot() as db:
            self._task_of(db, task_id)
            where, args = "WHERE task_id = ?", [task_id]
            if step is not None:
                where, args = where + " AND step = ?", [*args, _step(step)]
            return [
                self._attempt(r)
                for r in db.execute(f"{_ATTEMPT_SELECT} {where} ORDER BY step, ordinal", args)
            ]

    @_guarded
    def chain(self, task_id: str) -> list[TaskFacts]:
        """The informed-retry chain ``task_id`` is part of: the original task first, then each
        retry of it in turn, up to the newest."""
        with self._snapshot() as db:
            first = self._task_of(db, task_id)
            seen = {first.id}
            while first.retry_of is not None:
                first = self._task_of(db, first.retry_of)
                if first.id in seen or len(seen) > _CHAIN_MAX:
                    raise self._damaged(f"the retry chain of {task_id}", "it loops")
                seen.add(first.id)
            out = [first]
            while out[-1].handled_by_retry is not None:
                nxt = self._task_of(db, out[-1].handled_by_retry)
                if nxt.retry_of != out[-1].id or len(out) > len(seen) + _CHAIN_MAX:
                    raise self._damaged(f"the retry chain of {task_id}", "its links disagree")
                out.append(nxt)
            return out

    # -- writes ------------------------------------------------------------------------------

    @_guarded
    def create_task(self, intent: Any, *, retry_of: str | None = None) -> TaskFacts:
        """A new task for ``intent`` (JSON data, stored redacted), revision 1, nothing
        happened yet. ``retry_of``: the task it retries knowingly (see
        :meth:`informed_retry`, which is this with the old task's intent)."""
        with self._tx() as db:
            if retry_of is None:
                return self._task_of(db, self._insert_task(db, intent, None))
            return self._retry(db, self._task_of(db, retry_of), intent)

    @_guarded
    def informed_retry(self, task_id: str) -> TaskFacts:
        """A new task with the intent of ``task_id``, linked to it (``retry_of``), made when a
        person decided to retry a task the gateway stopped (an unknown acceptance, a failed
        delivery …). The old task keeps all its facts; it records ``handled_by_retry`` (its
        reminder is handled) and its revision moves by one. A task still being advanced
        (phase not terminal), or already retried, is ``LEDGER_TRANSITION_INVALID``."""
        with self._tx() as db:
            old = self._task_of(db, task_id)
            return self._retry(db, old, old.intent)

    def _retry(self, db: sqlite3.Connection, old: TaskFacts, intent: Any) -> TaskFacts:
        if old.phase is not Phase.TERMINAL:
            raise _transition(
                f"task {old.id} is still {old.phase} (phase not terminal): stop it before a "
                "retry, or it could run twice",
                old.id,
            )
        if old.handled_by_retry is not None:
            raise _transition(
                f"task {old.id} was already retried as {old.handled_by_retry}: retry that one",
                old.id,
            )
        new_id = self._insert_task(db, intent, old.id)
        self._write_task(db, old, handled_by_retry=new_id)
        return self._task_of(db, new_id)

    @_guarded
    def begin_attempt(
        self,
        task_id: str,
        step: int,
        provider_id: str,
        model_id: str,
        *,
        request_digest: str | None = None,
        idempotency_key: str | None = None,
        task_phase: Phase | str | _Keep = KEEP,
        submitting: bool = False,
    ) -> AttemptFacts:
        """A new attempt of step ``step`` of a task, at ``providerId::modelId``: stage
        ``preparing`` (or, with ``submitting``, stage ``submitting`` and phase
        ``submitting``: the request is built and goes out next, one sync instead of two),
        nothing accepted, ordinal 1 for the step's first attempt and one more
        for each next. Committed and synced when this returns, so call it before anything of
        the request leaves the machine. ``request_digest``: :func:`request_digest` of the
        request body (the body is never stored), here or, once the body is built, with
        :meth:`update_attempt`.

        Another attempt of a step is allowed only after the previous one was ``not_accepted``
        (spec 002 §4: any other acceptance may have been billed), and only for the task's
        latest step; a task already retried takes no attempt. Otherwise
        ``LEDGER_TRANSITION_INVALID``."""
        step = _step(step)
        provider_id, model = checked_model(provider_id, model_id)
        request_digest = None if request_digest is None else _digest(request_digest)
        if idempotency_key is not None and (
            not isinstance(idempotency_key, str)
            or not _KEY_RE.fullmatch(idempotency_key)
            or redact(idempotency_key) != idempotency_key
        ):
            raise _invalid(
                "idempotency_key must be 1-255 printable ASCII characters without spaces, and "
                "no credential"
            )
        phase = None if task_phase is KEEP else axis_value(Phase, task_phase, "task_phase")
        with self._tx() as db:
            task = self._task_of(db, task_id)
            if task.handled_by_retry is not None:
                raise _transition(
                    f"task {task.id} was retried as {task.handled_by_retry}: its facts stay "
                    "as they were",
                    task.id,
                )
            latest = self._latest(db, task.id)
            ordinal = 1
            if latest is not None and step < latest.step:
                raise _transition(
                    f"task {task.id} is at step {latest.step}: no attempt of step {step}",
                    task.id,
                )
            if latest is not None and step == latest.step:
                if latest.acceptance is not Acceptance.NOT_ACCEPTED:
                    raise _transition(
                        f"attempt {latest.id} of step {step} is {latest.acceptance}: another "
                        "attempt could be billed twice; only not_accepted allows one (a person "
                        "may make an informed retry: a new task)",
                        latest.id,
                    )
                ordinal = latest.ordinal + 1
            attempt_id, now = _new_id("attempt"), _now()
            facts = Facts(phase=Phase.SUBMITTING) if submitting else Facts()
            db.execute(
                f"INSERT INTO attempts ({', '.join(_ATTEMPT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_ATTEMPT_COLUMNS))})",
                (
                    attempt_id,
                    task.id,
                    step,
                    ordinal,
                    provider_id,
                    model,
                    "submitting" if submitting else "preparing",
                    idempotency_key,
                    request_digest,
                    None,
                    now,
                    now,
                    *(str(getattr(facts, a)) for a in _AXES),
                    None,
                    None,
                ),
            )
            made = AttemptFacts(
                id=attempt_id,
                task_id=task.id,
                step=step,
                ordinal=ordinal,
                provider_id=provider_id,
                model=model,
                stage="submitting" if submitting else "preparing",
                idempotency_key=idempotency_key,
                request_digest=request_digest,
                remote_id=None,
                started_at=now,
                updated_at=now,
                **{a: getattr(facts, a) for a in _AXES},
            )
            self._write_task(db, task, phase=phase, mirror=made)
            return made

    @_guarded
    def update_attempt(
        self,
        attempt_id: str,
        *,
        stage: str | _Keep = KEEP,
        remote_id: str | _Keep = KEEP,
        request_digest: str | _Keep = KEEP,
        phase: Phase | str | _Keep = KEEP,
        acceptance: Acceptance | str | _Keep = KEEP,
        watch_state: WatchState | str | _Keep = KEEP,
        outcome: Outcome | str | _Keep = KEEP,
        delivery_state: DeliveryState | str | _Keep = KEEP,
        cancel_state: CancelState | str | _Keep = KEEP,
        error: object = KEEP,
        task_phase: Phase | str | _Keep = KEEP,
    ) -> AttemptFacts:
        """Change an attempt (and, ``task_phase``, its task's phase) in one transaction that
        also mirrors its facts to the task; committed and synced when this returns. Only the
        arguments given change. A change that changes nothing writes nothing.

        ``error``: a ProviderError, an AiraError, a mapping of :data:`ERROR_KEYS`, or None.
        The attempt's ``phase`` becomes ``terminal`` when the change makes it
        ``not_accepted``, ``failed`` or ``canceled`` and no phase is given. A change the
        facts forbid is ``LEDGER_TRANSITION_INVALID`` (see :func:`_check_facts`); bad values
        ``LEDGER_ARGUMENT_INVALID``. ``deliveryState=ready`` is :meth:`deliver`'s alone.
        """
        changes: dict[str, Any] = {}
        for name, value in (
            ("phase", phase),
            ("acceptance", acceptance),
            ("watch_state", watch_state),
            ("outcome", outcome),
            ("delivery_state", delivery_state),
            ("cancel_state", cancel_state),
        ):
            if value is not KEEP:
                changes[name] = axis_value(_FACT_VALUES[name], value, name)
        new_stage = None if stage is KEEP else _stage(stage)
        new_remote = None if remote_id is KEEP else _remote_id(remote_id)
        new_digest = None if request_digest is KEEP else _digest(request_digest)
        new_error = KEEP if error is KEEP else _error_wire(error)
        t_phase = None if task_phase is KEEP else axis_value(Phase, task_phase, "task_phase")
        with self._tx() as db:
            old = self._attempt_of(db, attempt_id)
            return self._change(
                db,
                old,
                changes,
                stage=new_stage,
                remote_id=new_remote,
                request_digest=new_digest,
                error=new_error,
                task_phase=t_phase,
            )

    @_guarded
    def deliver(
        self,
        attempt_id: str,
        reply: object,
        *,
        stage: str = "done",
        task_phase: Phase | str | _Keep = KEEP,
    ) -> AttemptFacts:
        """The attempt's reply is the local product: store ``reply`` (a StepReply or its wire
        form, redacted), ``outcome=succeeded``, ``deliveryState=ready``, phase terminal, watch
        idle; a reply is acceptance evidence, so an attempt of acceptance ``none`` or
        ``unknown`` becomes ``accepted``. An attempt refused (``not_accepted``), failed,
        canceled or already delivered is ``LEDGER_TRANSITION_INVALID``."""
        wire = _reply_wire(reply)
        text = _json_text(wire, "the reply")
        new_stage = _stage(stage)
        t_phase = None if task_phase is KEEP else axis_value(Phase, task_phase, "task_phase")
        with self._tx() as db:
            old = self._attempt_of(db, attempt_id)
            if old.delivery_state is DeliveryState.READY:
                raise _transition(f"attempt {old.id} was delivered already", old.id)
            changes = {
                "acceptance": Acceptance.ACCEPTED,
                "outcome": Outcome.SUCCEEDED,
                "delivery_state": DeliveryState.READY,
                "phase": Phase.TERMINAL,
                "watch_state": WatchState.IDLE,
            }
            return self._change(
                db, old, changes, stage=new_stage, reply=text, task_phase=t_phase, delivering=True
            )

    def _change(
        self,
        db: sqlite3.Connection,
        old: AttemptFacts,
        changes: dict[str, Any],
        *,
        stage: str | None = None,
        remote_id: str | None = None,
        request_digest: str | None = None,
        error: object = KEEP,
        reply: str | None = None,
        task_phase: Phase | None = None,
        delivering: bool = False,
    ) -> AttemptFacts:
        before = old.facts
        axes = {a: getattr(before, a) for a in _AXES} | changes
        refused = axes["acceptance"] is Acceptance.NOT_ACCEPTED
        ended = axes["outcome"] in (Outcome.FAILED, Outcome.CANCELED)
        if "phase" not in changes and (
            (refused and before.acceptance is not Acceptance.NOT_ACCEPTED)
            or (ended and before.outcome is not axes["outcome"])
        ):
            axes["phase"] = Phase.TERMINAL  # nothing more will happen to this attempt
        after = Facts(**axes)
        new_remote = old.remote_id if remote_id is None else remote_id
        _check_facts(before, after, old.remote_id, new_remote, old.id, delivering=delivering)
        new_digest = old.request_digest if request_digest is None else request_digest
        if old.request_digest is not None and new_digest != old.request_digest:
            raise _transition(f"{old.id}: its request digest is written once", old.id)
        new_stage = old.stage if stage is None else stage
        stored_error = old.error if error is KEEP else error
        task = self._task_of(db, old.task_id)
        unchanged = (
            after == before
            and new_stage == old.stage
            and new_remote == old.remote_id
            and new_digest == old.request_digest
            and stored_error == old.error
            and reply is None
            and (task_phase is None or task_phase is task.phase)
        )
        if unchanged:
            return old
        now = _now()
        error_text = None if stored_error is None else _json_text(stored_error, "the error")
        db.execute(
            "UPDATE attempts SET stage = ?, remote_id = ?, request_digest = ?, updated_at = ?, "
            + ", ".join(f"{a} = ?" for a in _AXES)
            + ", error = ?"
            + (", reply = ?" if reply is not None else "")  # else as it is: not rewritten
            + " WHERE id = ?",
            (
                new_stage,
                new_remote,
                new_digest,
                now,
                *(str(getattr(after, a)) for a in _AXES),
                error_text,
                *((reply,) if reply is not None else ()),
                old.id,
            ),
        )
        # What a read would give, without reading it back: the stored texts decode to these.
        changed = dataclasses.replace(
            old,
            stage=new_stage,
            remote_id=new_remote,
            request_digest=new_digest,
            updated_at=now,
            error=None if error_text is None else loads_strict(error_text, "the error")[0],
            reply=old.reply if reply is None else loads_strict(reply, "the reply")[0],
            **{a: getattr(after, a) for a in _AXES},
        )
        self._write_task(db, task, phase=task_phase, mirror=changed)
        return changed

    @_guarded
    def set_task(
        self,
        task_id: str,
        *,
        phase: Phase | str | _Keep = KEEP,
        error: object = KEEP,
        acceptance: Acceptance | str | _Keep = KEEP,
        watch_state: WatchState | str | _Keep = KEEP,
        outcome: Outcome | str | _Keep = KEEP,
        delivery_state: DeliveryState | str | _Keep = KEEP,
        cancel_state: CancelState | str | _Keep = KEEP,
    ) -> TaskFacts:
        """Change a task's own facts: its ``phase`` (terminal when the run ended or stopped for
        a person; any phase when it resumes) and its ``error`` (a failure of the run rather
        than of an attempt; the next change of an attempt mirrors the attempt's again). The
        other axes are its latest attempt's: they can be set here only on a task with no
        attempt (a task canceled before anything was sent), with the checks of an attempt.
        A change that changes nothing writes nothing."""
        changes: dict[str, Any] = {}
        for name, value in (
            ("acceptance", acceptance),
            ("watch_state", watch_state),
            ("outcome", outcome),
            ("delivery_state", delivery_state),
            ("cancel_state", cancel_state),
        ):
            if value is not KEEP:
                changes[name] = axis_value(_FACT_VALUES[name], value, name)
        new_phase = None if phase is KEEP else axis_value(Phase, phase, "phase")
        new_error = KEEP if error is KEEP else _error_wire(error)
        with self._tx() as db:
            task = self._task_of(db, task_id)
            axes = {a: getattr(task, a) for a in _AXES} | changes
            if new_phase is not None:
                axes["phase"] = new_phase
            after = Facts(**axes)
            if changes:
                if self._latest(db, task.id) is not None:
                    raise _transition(
                        f"the facts of task {task.id} are its latest attempt's: change the attempt",
                        task.id,
                    )
                _check_facts(task.facts, after, None, None, task.id, phase_free=True)
            if after == task.facts and (new_error is KEEP or new_error == task.error):
                return task
            self._write_task(db, task, facts=after, error=new_error)
            return self._task_of(db, task.id)

    # -- checks ------------------------------------------------------------------------------

    @_guarded
    def check(self) -> list[str]:
        """A full consistency check; the problems found (empty: consistent). ``PRAGMA
        integrity_check``, foreign keys, every row readable, ordinals 1..n per (task, step),
        each task's facts its latest attempt's, retry links both ways. Reads the whole
        file: for tests and repair tools, not for every open."""
        with self._snapshot() as db:
            problems = [row[0] for row in db.execute("PRAGMA integrity_check")]
            problems = [] if problems == ["ok"] else [f"integrity_check: {p}" for p in problems]
            problems += [f"foreign key: {row}" for row in db.execute("PRAGMA foreign_key_check")]
            tasks: dict[str, TaskFacts] = {}
            for row in db.execute(_TASK_SELECT).fetchall():
                try:
                    tasks[row[0]] = self._task(row)
                except AiraError as exc:
                    problems.append(exc.diagnostic.message)
            by_task: dict[str, list[AttemptFacts]] = {}
            for row in db.execute(_ATTEMPT_SELECT + " ORDER BY task_id, step, ordinal"):
                try:
                    a = self._attempt(row)
                except AiraError as exc:
                    problems.append(exc.diagnostic.message)
                    continue
                by_task.setdefault(a.task_id, []).append(a)
            for task_id, attempts in by_task.items():
                steps: dict[int, list[int]] = {}
                for a in attempts:
                    steps.setdefault(a.step, []).append(a.ordinal)
                for step, ordinals in steps.items():
                    if ordinals != list(range(1, len(ordinals) + 1)):
                        problems.append(f"task {task_id} step {step}: ordinals {ordinals}")
                task = tasks.get(task_id)
                latest = attempts[-1]
                if task is not None:
                    mirrored = [a for a in _AXES if a != "phase"]
                    if any(getattr(task, a) != getattr(latest, a) for a in mirrored) or (
                        task.model_ref != latest.model or task.error != latest.error
                    ):
                        problems.append(f"task {task_id}: facts are not its latest attempt's")
            for task in tasks.values():
                if task.handled_by_retry is not None:
                    new = tasks.get(task.handled_by_retry)
                    if new is None or new.retry_of != task.id:
                        problems.append(f"task {task.id}: retry link disagrees")
            return problems


def _step(step: object) -> int:
    if type(step) is not int or step < 0:
        raise _invalid(f"a step must be a non-negative integer, got {_shown(step)!r}")
    return step


def _stage(stage: object) -> str:
    if not isinstance(stage, str) or not _STAGE_RE.fullmatch(stage):
        raise _invalid(
            f"an attempt's stage is a lowercase identifier (1-32 of a-z 0-9 _ -, such as "
            f"{', '.join(ATTEMPT_STAGES[:3])}); got {_shown(stage)!r}"
        )
    return stage


def _digest(digest: object) -> str:
    if not isinstance(digest, str) or not _DIGEST_RE.fullmatch(digest):
        raise _invalid(
            "request_digest must be request_digest(body) (sha256:<hex>), never the body itself"
        )
    return digest


def checked_model(provider_id: object, model_id: object) -> tuple[str, str]:
    """``(provider_id, "provider_id::model_id")`` when both follow the ledger's id rules,
    else ``LEDGER_ARGUMENT_INVALID``: what every attempt records, so a run checks its routes
    with it before it starts."""
    if not isinstance(provider_id, str) or not _PROVIDER_RE.fullmatch(provider_id):
        raise _invalid(
            f"provider id {_shown(provider_id)!r}: use 1-64 of A-Z a-z 0-9 . _ - (no ':')"
        )
    if (
        not isinstance(model_id, str)
        or not _MODEL_RE.fullmatch(model_id)
        or "::" in model_id
        or redact(model_id) != model_id
    ):
        raise _invalid(
            f"model id {_shown(model_id)!r}: use 1-200 of A-Z a-z 0-9 . _ / @ + : - (no '::')"
        )
    if redact(provider_id) != provider_id:
        raise _invalid("the provider id holds a credential")
    return provider_id, f"{provider_id}::{model_id}"


def _remote_id(remote_id: object) -> str:
    if (
        not isinstance(remote_id, str)
        or not remote_id
        or len(remote_id) > _REMOTE_ID_MAX
        or not remote_id.isprintable()
    ):
        raise _invalid(f"a remote id must be 1-{_REMOTE_ID_MAX} printable characters")
    # Stored redacted like every string; the gateway polls with the id it holds in memory.
    return redact(remote_id)


def _check_facts(
    before: Facts,
    after: Facts,
    old_remote: str | None,
    remote_id: str | None,
    subject: str,
    *,
    delivering: bool = False,
    phase_free: bool = False,
) -> None:
    """Refuse a change of facts (of ``subject``) that spec 002 forbids (§4, §6, §8): the
    facts that must never regress, and combinations that would claim what is not known.
    ``phase_free``: a task's own phase, which any change may set."""

    def no(why: str) -> AiraError:
        return _transition(f"{subject}: {why}", subject)

    # acceptance: none -> anything; unknown -> accepted / not_accepted (new evidence);
    # accepted and not_accepted are final.
    if after.acceptance is not before.acceptance:
        if before.acceptance in (Acceptance.ACCEPTED, Acceptance.NOT_ACCEPTED):
            raise no(f"acceptance {before.acceptance} is final, never {after.acceptance}")
        if after.acceptance is Acceptance.NONE:
            raise no(f"acceptance {before.acceptance} never goes back to none")
    # outcome: a final outcome is never replaced (a failed delivery or a failed poll never
    # turns a success into a failure); nothing goes back to none.
    if after.outcome is not before.outcome:
        if before.outcome in (Outcome.SUCCEEDED, Outcome.FAILED, Outcome.CANCELED):
            raise no(f"outcome {before.outcome} is final, never {after.outcome}")
        if after.outcome is Outcome.NONE:
            raise no(f"outcome {before.outcome} never goes back to none")
    if after.outcome is Outcome.SUCCEEDED and after.acceptance is not Acceptance.ACCEPTED:
        raise no(f"outcome succeeded needs acceptance accepted, not {after.acceptance}")
    # delivery: only of a success; ready only by deliver(), and final.
    if after.delivery_state is not before.delivery_state:
        if before.delivery_state is DeliveryState.READY:
            raise no(f"deliveryState ready is final, never {after.delivery_state}")
        if after.delivery_state is DeliveryState.READY and not delivering:
            raise no("deliveryState ready is written by deliver(), with the reply")
        if after.delivery_state is DeliveryState.NONE:
            raise no(f"deliveryState {before.delivery_state} never goes back to none")
    if after.delivery_state is not DeliveryState.NONE and after.outcome is not Outcome.SUCCEEDED:
        raise no(f"deliveryState {after.delivery_state} needs outcome succeeded")
    # cancel: a confirmation is final; a local stop confirms a cancel only where nothing
    # remote may exist. (An outcome canceled the provider reports without a confirmed cancel
    # of ours is a fact too; only a confirmed one derives "canceled", spec §3.1.)
    if after.cancel_state is not before.cancel_state:
        if before.cancel_state in CONFIRMED_CANCEL:
            raise no(f"cancelState {before.cancel_state} is final, never {after.cancel_state}")
        if after.cancel_state is CancelState.NONE:
            raise no(f"cancelState {before.cancel_state} never goes back to none")
    if after.cancel_state is CancelState.LOCAL_CONFIRMED and after.acceptance not in (
        Acceptance.NONE,
        Acceptance.NOT_ACCEPTED,
    ):
        raise no(
            f"a local stop does not cancel an attempt that is {after.acceptance}: only the "
            "provider can confirm that (remote_confirmed), else cancelState unknown"
        )
    # remote id: acceptance evidence, written once.
    if old_remote is not None and remote_id != old_remote:
        raise no("its remote id is written once")
    if remote_id is not None and after.acceptance is not Acceptance.ACCEPTED:
        raise no(
            f"a remote id is acceptance evidence: acceptance must be accepted, not "
            f"{after.acceptance}"
        )
    if phase_free:
        return
    # phase: forward only, except that an accepted attempt may be observed or delivered
    # again (terminal -> running); accepted and running need acceptance evidence.
    if _PHASE_ORDER[after.phase] < _PHASE_ORDER[before.phase] and not (
        before.phase is Phase.TERMINAL
        and after.phase is Phase.RUNNING
        and after.acceptance is Acceptance.ACCEPTED
    ):
        raise no(f"phase {before.phase} never goes back to {after.phase}")
    if after.phase in (Phase.ACCEPTED, Phase.RUNNING) and after.acceptance is not (
        Acceptance.ACCEPTED
    ):
        raise no(f"phase {after.phase} needs acceptance accepted, not {after.acceptance}")
