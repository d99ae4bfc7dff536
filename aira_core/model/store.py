"""The revision store of AMIR model documents (``$AIRA_HOME/models/store.sqlite3``).

A document is any JSON object; the store never looks inside it. Revisions are content
addressed: ``rev = sha256_id("rev", document)``, and the canonical bytes of a document are
stored once however many commit records name it.

History is an append-only log of commit records. Each record says which branch moved, to
which revision, from which revision (``parent``), why (``kind``, ``message``, ``meta``) and
when, and links to the record it continues (``base_seq``). A branch is a pointer to one
record; the branch's *history* is the chain of records reached from it through ``base_seq``.
Records are never updated or deleted (SQLite triggers refuse it), so a branch's history only
ever grows.

Every write is one ``BEGIN IMMEDIATE`` transaction in WAL mode with ``synchronous=FULL``: a
crash at any point of a commit leaves the previous head intact and readable, and a commit
that returned is on disk. Branch heads move by compare-and-swap on an expected head, so of
two writers starting from the same head exactly one wins and the other is told the new head
(:class:`StaleRevision`, code ``STEP_STALE_REVISION``).

A write that would leave the branch's document as it is (committing the head's own document,
reverting to the head, publishing a task branch whose head equals ``main``'s) is refused with
``STORE_NO_CHANGE``: history only records changes.

A ``ModelStore`` holds one SQLite connection and is not thread-safe; open one per thread or
process (any number may share a file).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sqlite3
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, cast

from aira_core.canonical import (
    Canonical,
    CanonicalJSONError,
    canonical_bytes,
    sha256_bytes_hex,
    sha256_id,
)
from aira_core.config import aira_home
from aira_core.diagnostics import AiraError, redact

__all__ = [
    "CRASH_ENV",
    "CRASH_POINTS",
    "SCHEMA_VERSION",
    "CommitKind",
    "CommitRecord",
    "Document",
    "ModelStore",
    "Revision",
    "StaleRevision",
    "default_store_path",
]

STORE_DIR = "models"
STORE_FILE = "store.sqlite3"

SCHEMA_VERSION = 1
"""``PRAGMA user_version`` of the schema below. A later schema bumps it and migrates older
stores on open; a store with a higher version than this code knows is refused."""

APPLICATION_ID = 0x4149524D  # "AIRM": marks the file as an Aira model store (PRAGMA application_id)

# Stable diagnostic codes.
STORE_CORRUPT = "STORE_CORRUPT"
STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
STORE_ALREADY_INITIALISED = "STORE_ALREADY_INITIALISED"
STORE_BRANCH_INVALID = "STORE_BRANCH_INVALID"
STORE_BRANCH_UNKNOWN = "STORE_BRANCH_UNKNOWN"
STORE_BRANCH_EXISTS = "STORE_BRANCH_EXISTS"
STORE_REVISION_UNKNOWN = "STORE_REVISION_UNKNOWN"
STORE_REVISION_NOT_IN_BRANCH = "STORE_REVISION_NOT_IN_BRANCH"
STORE_PUBLISH_NOT_FAST_FORWARD = "STORE_PUBLISH_NOT_FAST_FORWARD"
STORE_NO_CHANGE = "STORE_NO_CHANGE"
STORE_DOCUMENT_INVALID = "STORE_DOCUMENT_INVALID"
STORE_ARGUMENT_INVALID = "STORE_ARGUMENT_INVALID"
STEP_STALE_REVISION = "STEP_STALE_REVISION"

MAIN = "main"
_BRANCH_RE = re.compile(r"main|task/[A-Za-z0-9._-]{1,64}")

CommitKind = Literal["init", "commit", "revert", "publish"]

Document = dict[str, Any] | Canonical
"""What a write accepts: a JSON object, or its :func:`canonical_bytes` (pydantic models that
serialise to an object are accepted too)."""

CRASH_ENV = "AIRA_STORE_CRASH_AT"
CRASH_POINTS = (
    "after_insert_document",
    "after_insert_commit",
    "before_commit_tx",
    "after_commit_tx",
)
"""Test hook, not a feature: when ``$AIRA_STORE_CRASH_AT`` names one of these points, a write
kills its own process with ``os._exit(137)`` there, so tests can prove that a crash at any
point of a commit leaves the store consistent. The variable is read only on the write path."""

_SCHEMA = (
    """CREATE TABLE documents (
        rev TEXT PRIMARY KEY,
        body BLOB NOT NULL
    )""",
    """CREATE TABLE commits (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        branch TEXT NOT NULL,
        rev TEXT NOT NULL REFERENCES documents(rev),
        parent TEXT REFERENCES documents(rev),
        base_seq INTEGER REFERENCES commits(seq),
        kind TEXT NOT NULL CHECK (kind IN ('init', 'commit', 'revert', 'publish')),
        message TEXT NOT NULL,
        created_at TEXT NOT NULL,
        meta TEXT
    )""",
    "CREATE INDEX commits_by_rev ON commits(rev, seq)",
    # Values derived from a document alone (summaries, block hashes): computed once, kept,
    # and as immutable as the document they are derived from.
    """CREATE TABLE derived (
        rev TEXT NOT NULL REFERENCES documents(rev),
        name TEXT NOT NULL,
        body BLOB NOT NULL,
        PRIMARY KEY (rev, name)
    )""",
    """CREATE TABLE branches (
        name TEXT PRIMARY KEY,
        head_seq INTEGER NOT NULL REFERENCES commits(seq),
        created_at TEXT NOT NULL
    )""",
    # History is never rewritten: the database itself refuses, whatever code runs on it.
    """CREATE TRIGGER commits_no_update BEFORE UPDATE ON commits
        BEGIN SELECT RAISE(ABORT, 'commit records are append-only'); END""",
    """CREATE TRIGGER commits_no_delete BEFORE DELETE ON commits
        BEGIN SELECT RAISE(ABORT, 'commit records are append-only'); END""",
    """CREATE TRIGGER documents_no_update BEFORE UPDATE ON documents
        BEGIN SELECT RAISE(ABORT, 'documents are immutable'); END""",
    """CREATE TRIGGER documents_no_delete BEFORE DELETE ON documents
        BEGIN SELECT RAISE(ABORT, 'documents are immutable'); END""",
    """CREATE TRIGGER branches_no_delete BEFORE DELETE ON branches
        BEGIN SELECT RAISE(ABORT, 'branches are never deleted'); END""",
    """CREATE TRIGGER branches_no_rename BEFORE UPDATE OF name, created_at ON branches
        BEGIN SELECT RAISE(ABORT, 'branches are never renamed'); END""",
)
_REQUIRED_OBJECTS = frozenset(
    {
        "documents",
        "commits",
        "branches",
        "commits_by_rev",
        "derived",
        "commits_no_update",
        "commits_no_delete",
        "documents_no_update",
        "documents_no_delete",
        "branches_no_delete",
        "branches_no_rename",
    }
)

# The chain of records a branch's history consists of, newest first. ``base_seq < seq``
# holds for every record written here; requiring it keeps a damaged file from looping.
_CHAIN = """
WITH RECURSIVE chain(seq, depth) AS (
    SELECT head_seq, 1 FROM branches WHERE name = :branch
    UNION ALL
    SELECT c.base_seq, chain.depth + 1 FROM commits c JOIN chain ON c.seq = chain.seq
    WHERE c.base_seq IS NOT NULL AND c.base_seq < c.seq AND chain.depth < :limit
)
"""
_UNLIMITED = 2**62  # a depth bound that no history reaches
_RECORD_COLUMNS = (
    "c.seq, c.branch, c.rev, c.parent, c.kind, c.message, c.created_at, c.meta, c.base_seq"
)

P = ParamSpec("P")
T = TypeVar("T")


def default_store_path() -> Path:
    """``aira_home() / "models" / "store.sqlite3"``."""
    return aira_home() / STORE_DIR / STORE_FILE


@dataclass(frozen=True, slots=True)
class Revision:
    """The result of a write: ``branch`` now points at ``rev`` through record ``seq``."""

    rev: str
    branch: str
    seq: int
    parent: str | None
    """The branch's head before the write (``None`` for ``init``)."""
    kind: CommitKind


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One entry of the history log."""

    seq: int
    """Position in the store-wide log; increases with every write, never reused."""
    branch: str
    """The branch this record moved."""
    rev: str
    parent: str | None
    """The branch's head before this record (``None`` for ``init``)."""
    kind: CommitKind
    message: str
    created_at: str
    """UTC, ISO 8601."""
    meta: dict[str, Any] | None
    base_seq: int | None
    """The record this one continues: the branch's previous head record, or for ``publish``
    the task branch's head record (``main`` takes over the task's history)."""


class StaleRevision(AiraError):
    """Compare-and-swap refused: the branch head is not the expected one any more."""

    branch: str | None

    def __init__(self, branch: str, expected: str, head: str) -> None:
        super().__init__(
            STEP_STALE_REVISION,
            f"branch {branch} has moved: its head is {head}, not the expected {expected}; "
            "re-read the head and redo the change on it",
            subject=branch,
        )
        self.branch = branch
        self.expected = expected
        self.head = head

    @property
    def head_rev(self) -> str:
        """The new head (same as :attr:`head`)."""
        return self.head


def _crash_point(name: str) -> None:
    # See CRASH_POINTS: a test hook, read at the point itself so only writes pay for it.
    if os.environ.get(CRASH_ENV) == name:
        os._exit(137)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _check_branch(name: object) -> str:
    if not isinstance(name, str) or not _BRANCH_RE.fullmatch(name):
        raise AiraError(
            STORE_BRANCH_INVALID,
            f"invalid branch name {name!r}: use 'main' or 'task/<id>' where <id> is 1-64 of "
            "A-Z a-z 0-9 . _ -",
            subject=str(name),
        )
    if redact(name) != name:  # a branch name is stored and shown for good: no credential in it
        raise AiraError(STORE_BRANCH_INVALID, "the branch name holds a credential", subject=name)
    return name


def _check_message(message: object) -> str:
    if not isinstance(message, str):
        raise AiraError(STORE_ARGUMENT_INVALID, f"a message must be a string, got {message!r}")
    return redact(message)  # user or model text, kept for good: no credential in it


def _encode_document(document: object) -> tuple[str, bytes]:
    """Canonical bytes and content address of a document.

    Anything :func:`canonical_bytes` serialises to a JSON object: a dict, a pydantic model,
    or :class:`Canonical` bytes, which are used as they are (a caller that canonicalised the
    document already does not pay for it twice: it is most of a commit's cost)."""
    try:
        body = canonical_bytes(document)
    except CanonicalJSONError as exc:
        raise AiraError(
            STORE_DOCUMENT_INVALID, f"the document is not canonical JSON: {exc}"
        ) from None
    if not body.startswith(b"{"):
        raise AiraError(
            STORE_DOCUMENT_INVALID,
            f"a model document must be a JSON object, got {type(document).__name__}",
        )
    return sha256_id("rev", body), _pack(bytes(body))


# Documents are stored zlib-compressed: a revision is a whole document (an imported STEP
# text included) and JSON compresses several times over. A stored body that starts with "{"
# is a document written uncompressed (before compression, or by an older Aira) and is read
# as it is; the content address is always over the canonical, uncompressed bytes.
_COMPRESSION_LEVEL = 6


def _pack(body: bytes) -> bytes:
    return zlib.compress(body, _COMPRESSION_LEVEL)


def _unpack(stored: bytes) -> bytes:
    if stored.startswith(b"{"):
        return stored
    try:
        return zlib.decompress(stored)
    except zlib.error:
        return b""  # cannot match any content address: reported as corrupt by the callers


def _encode_meta(meta: object) -> str | None:
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise AiraError(STORE_ARGUMENT_INVALID, "meta must be a JSON object or None")
    try:
        return canonical_bytes(meta).decode("utf-8")
    except CanonicalJSONError as exc:
        raise AiraError(STORE_ARGUMENT_INVALID, f"meta is not canonical JSON: {exc}") from None


def _record(row: tuple[Any, ...]) -> CommitRecord:
    seq, branch, rev, parent, kind, message, created_at, meta, base_seq = row
    try:
        meta = json.loads(meta) if meta is not None else None
    except (ValueError, RecursionError):  # written canonical by commit: damaged since
        raise AiraError(
            STORE_CORRUPT, f"model store: the meta of history record {seq} is not JSON"
        ) from None
    return CommitRecord(
        seq=seq,
        branch=branch,
        rev=rev,
        parent=parent,
        kind=kind,
        message=message,
        created_at=created_at,
        meta=meta,
        base_seq=base_seq,
    )


def _guarded(method: Callable[P, T]) -> Callable[P, T]:
    """Turn any SQLite error escaping a public method into an :class:`AiraError`."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(*args, **kwargs)
        except sqlite3.Error as exc:
            store = cast("ModelStore", args[0])
            raise store._sqlite_error(exc, method.__name__) from None

    return wrapper


class ModelStore:
    """Revisions, history and branches of model documents in one SQLite file.

    ``ModelStore(path)`` opens the store at ``path`` (default :func:`default_store_path`).
    Opening never creates a store unless asked: with ``create=False`` (the default) a path
    with no store (no file, or an empty one) is opened *absent*, and every read or write on
    it is ``STORE_UNAVAILABLE`` ("no store at …, run `aira model init`") without creating a
    file or a directory; only :meth:`init` creates it. With ``create=True`` an empty store
    is created at once if there is none. An existing file is checked read-only first
    (``PRAGMA quick_check``, application id, schema version, schema objects); if it is not
    a valid store it is left exactly as it is and ``STORE_CORRUPT`` (not a store, damaged)
    or ``STORE_UNAVAILABLE`` (cannot be opened, locked, written by a newer schema) is
    raised.

    Use as a context manager or call :meth:`close`.
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        create: bool = False,
        busy_timeout: float = 10.0,
    ) -> None:
        """``create``: create an empty store if there is none (otherwise only :meth:`init`
        does). ``busy_timeout``: seconds a write waits for another writer's lock before it
        fails with ``STORE_UNAVAILABLE``."""
        self.path = Path(path) if path is not None else default_store_path()
        self._busy_timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        self._closed = False
        if create or self.path.is_dir() or not self._is_empty_file():
            try:
                self._db = self._open(create)
            except sqlite3.Error as exc:
                raise self._sqlite_error(exc, "open") from None

    # -- opening ---------------------------------------------------------------------------

    def _error(self, code: str, what: str) -> AiraError:
        # The file name only: the directory may be private (home, AIRA_HOME).
        return AiraError(code, f"model store {self.path.name}: {what}", subject=self.path.name)

    def _sqlite_error(self, exc: sqlite3.Error, doing: str) -> AiraError:
        if self._db is not None and doing != "open":
            self._rollback()
        name = getattr(exc, "sqlite_errorname", "") or ""
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            return self._error(STORE_CORRUPT, f"not a valid store ({doing}: {exc})")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return self._error(STORE_UNAVAILABLE, f"locked by another process ({doing}: {exc})")
        if isinstance(exc, sqlite3.ProgrammingError) and self._db is None:
            return self._error(STORE_UNAVAILABLE, "the store is closed")
        return self._error(STORE_UNAVAILABLE, f"cannot be used ({doing}: {exc})")

    def _no_store(self) -> AiraError:
        name = self.path.name
        return AiraError(
            STORE_UNAVAILABLE,
            f"no store at {name}; run `aira model init` to create one",
            subject=name,
        )

    def _open(self, create: bool) -> sqlite3.Connection:
        if self.path.is_dir():
            raise self._error(STORE_UNAVAILABLE, "is a directory, not a store file")
        if not create and self._is_empty_file():
            raise self._no_store()
        if create:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._error(
                    STORE_UNAVAILABLE, f"cannot create its directory: {exc.strerror}"
                ) from None
        # None: not checked yet (no file, or the read-only check needs a writer).
        is_store = self._check_read_only() if self.path.exists() else None
        if create:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy_timeout)
        else:  # mode=rw: SQLite itself refuses to create the file
            uri = self.path.resolve().as_uri() + "?mode=rw"
            try:
                db = sqlite3.connect(
                    uri, uri=True, isolation_level=None, timeout=self._busy_timeout
                )
            except sqlite3.OperationalError:
                if not self.path.exists():  # removed since the check above
                    raise self._no_store() from None
                raise
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            if not is_store:
                self._create_if_empty(db, create)
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise self._error(STORE_UNAVAILABLE, f"cannot switch to WAL mode (got {mode})")
        except BaseException:
            db.close()
            raise
        return db

    def _check_read_only(self) -> bool | None:
        """Validate an existing file without writing to it: True if it is a store, False if
        it is an empty file, None if the check needs a writer (a crashed writer's WAL to
        recover); raise if it is not a valid store."""
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            ro = sqlite3.connect(uri, uri=True, timeout=self._busy_timeout)
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "open") from None
        try:
            return self._inspect(ro)
        except sqlite3.Error as exc:
            if (getattr(exc, "sqlite_errorname", "") or "").startswith("SQLITE_READONLY"):
                return None
            raise self._sqlite_error(exc, "open") from None
        finally:
            ro.close()

    def _inspect(self, db: sqlite3.Connection) -> bool:
        """Raise unless ``db`` is a valid store or a creatable empty file; True if a store."""
        problems = [row[0] for row in db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise self._error(STORE_CORRUPT, f"failed its integrity check: {problems[0]}")
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if app_id == 0 and version == 0 and not names:
            if not self._is_empty_file():
                raise self._error(STORE_CORRUPT, "is not a model store (no store schema)")
            return False
        if app_id != APPLICATION_ID:
            raise self._error(STORE_CORRUPT, "is an SQLite database but not a model store")
        if version > SCHEMA_VERSION:
            raise self._error(
                STORE_UNAVAILABLE,
                f"has schema version {version}, newer than the {SCHEMA_VERSION} this version of "
                "Aira reads; upgrade Aira to open it",
            )
        # Versions 1..SCHEMA_VERSION-1 would be migrated here; there are none yet.
        if version < SCHEMA_VERSION:
            raise self._error(STORE_CORRUPT, f"has an invalid schema version {version}")
        missing = _REQUIRED_OBJECTS - names
        if missing:
            raise self._error(STORE_CORRUPT, f"lacks {', '.join(sorted(missing))}")
        return True

    def _is_empty_file(self) -> bool:
        # Only a 0-byte file (with no WAL content) is a new store: SQLite also reads a
        # damaged file of a few bytes as an empty database, and that must not be reused.
        try:
            if self.path.stat().st_size != 0:
                return False
            wal = self.path.with_name(self.path.name + "-wal")
            return not wal.exists() or wal.stat().st_size == 0
        except FileNotFoundError:
            return True

    def _create_if_empty(self, db: sqlite3.Connection, create: bool) -> None:
        # In the default rollback-journal mode, so an interrupted creation leaves either an
        # empty file or a complete schema; WAL is switched on afterwards.
        db.execute("BEGIN IMMEDIATE")
        try:
            # (Re-)checked under the write lock: another process may have created the store
            # meanwhile, and an unchecked file gets SQLite's own crash recovery here first.
            if not self._inspect(db):
                if not create:
                    raise self._no_store()
                for statement in _SCHEMA:
                    db.execute(statement)
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            raise

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._closed = True
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> ModelStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self, create: bool = False) -> sqlite3.Connection:
        """The connection; a store opened absent is opened now if it has come to exist
        meanwhile (or created, with ``create``), else ``STORE_UNAVAILABLE``."""
        if self._db is None:
            if self._closed:
                raise self._error(STORE_UNAVAILABLE, "the store is closed")
            self._db = self._open(create)
        return self._db

    def _conn(self) -> sqlite3.Connection:
        """The raw connection, for tests and benchmarks that inspect the file (pragmas);
        it creates a missing store like ``create=True``. Nothing public goes through it."""
        return self._connection(create=True)

    def _rollback(self) -> None:
        db = self._db
        if db is not None and db.in_transaction:
            # The original error is the one worth reporting.
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            _crash_point("before_commit_tx")
            db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        _crash_point("after_commit_tx")

    def _head(self, db: sqlite3.Connection, branch: str) -> tuple[str, int]:
        row = db.execute(
            "SELECT c.rev, c.seq FROM branches b JOIN commits c ON c.seq = b.head_seq "
            "WHERE b.name = ?",
            (branch,),
        ).fetchone()
        if row is None:
            raise AiraError(
                STORE_BRANCH_UNKNOWN, f"there is no branch {branch} in the store", subject=branch
            )
        return row[0], row[1]

    def _cas(self, db: sqlite3.Connection, branch: str, expected: str) -> tuple[str, int]:
        head, seq = self._head(db, branch)
        # Heads are content addresses: a head that moved away and back to the same document
        # compares equal, which is harmless because the expected document is the head's.
        if head != expected:
            raise StaleRevision(branch, expected, head)
        return head, seq

    def _append(
        self,
        db: sqlite3.Connection,
        *,
        branch: str,
        rev: str,
        body: bytes | None,
        parent: str | None,
        base_seq: int | None,
        kind: CommitKind,
        message: str,
        meta: str | None,
        new_branch: bool = False,
    ) -> Revision:
        """Store the document (if new), append the record and move the branch to it."""
        if body is not None:
            db.execute("INSERT OR IGNORE INTO documents (rev, body) VALUES (?, ?)", (rev, body))
        _crash_point("after_insert_document")
        now = _now()
        cursor = db.execute(
            "INSERT INTO commits (branch, rev, parent, base_seq, kind, message, created_at, meta)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (branch, rev, parent, base_seq, kind, message, now, meta),
        )
        seq = cast(int, cursor.lastrowid)
        _crash_point("after_insert_commit")
        if new_branch:
            db.execute(
                "INSERT INTO branches (name, head_seq, created_at) VALUES (?, ?, ?)",
                (branch, seq, now),
            )
        else:
            db.execute("UPDATE branches SET head_seq = ? WHERE name = ?", (seq, branch))
        return Revision(rev=rev, branch=branch, seq=seq, parent=parent, kind=kind)

    def _in_history(self, db: sqlite3.Connection, branch: str, rev: str) -> bool:
        row = db.execute(
            _CHAIN + "SELECT 1 FROM chain JOIN commits c ON c.seq = chain.seq "
            "WHERE c.rev = :rev LIMIT 1",
            {"branch": branch, "rev": rev, "limit": _UNLIMITED},
        ).fetchone()
        return row is not None

    def _rev_exists(self, db: sqlite3.Connection, rev: str) -> bool:
        return db.execute("SELECT 1 FROM documents WHERE rev = ?", (rev,)).fetchone() is not None

    def _unknown_rev(self, rev: object) -> AiraError:
        return AiraError(
            STORE_REVISION_UNKNOWN, f"there is no revision {rev} in the store", subject=str(rev)
        )

    # -- reading ---------------------------------------------------------------------------

    @_guarded
    def head(self, branch: str = MAIN) -> str:
        """The revision ``branch`` points at (``STORE_BRANCH_UNKNOWN`` if there is none)."""
        return self._head(self._connection(), _check_branch(branch))[0]

    @_guarded
    def read(self, rev: str) -> dict[str, Any]:
        """The document of ``rev`` (a fresh dict on every call).

        The stored bytes are checked against the content address, so a damaged document is
        ``STORE_CORRUPT``, never silently wrong.
        """
        row = (
            self._connection()
            .execute("SELECT body FROM documents WHERE rev = ?", (rev,))
            .fetchone()
        )
        if row is None:
            raise self._unknown_rev(rev)
        body = _unpack(bytes(row[0]))
        if sha256_id("rev", Canonical(body)) != rev:  # stored bytes are canonical
            raise self._error(STORE_CORRUPT, f"the stored document of {rev} does not match its id")
        return cast("dict[str, Any]", self._decode(body, f"the stored document of {rev}"))

    def _decode(self, body: bytes, what: str) -> Any:
        try:
            return json.loads(body)
        except (ValueError, RecursionError):  # bytes that hash right but were never JSON
            raise self._error(STORE_CORRUPT, f"{what} is not readable JSON") from None

    @_guarded
    def log(self, branch: str = MAIN, limit: int | None = 50) -> list[CommitRecord]:
        """The branch's history, newest first: at most ``limit`` records (``None``: all;
        a limit above 2**62, more than SQLite counts, is ``STORE_ARGUMENT_INVALID``).

        The history follows ``base_seq`` from the branch's head record, so a task branch's log
        continues into the history it was branched from, and after a publish ``main``'s log
        contains the task branch's records.
        """
        name = _check_branch(branch)
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= _UNLIMITED
        ):
            raise AiraError(
                STORE_ARGUMENT_INVALID,
                f"limit must be an integer from 1 to 2**62, or None for all, got {limit!r}",
            )
        db = self._connection()
        self._head(db, name)  # STORE_BRANCH_UNKNOWN
        rows = db.execute(
            _CHAIN + f"SELECT {_RECORD_COLUMNS} FROM chain JOIN commits c ON c.seq = chain.seq "
            "ORDER BY c.seq DESC",
            {"branch": name, "limit": _UNLIMITED if limit is None else limit},
        ).fetchall()
        return [_record(row) for row in rows]

    @_guarded
    def branches(self) -> dict[str, str]:
        """Every branch and its head revision, ``main`` first, then by name."""
        rows = (
            self._connection()
            .execute(
                "SELECT b.name, c.rev FROM branches b JOIN commits c ON c.seq = b.head_seq "
                "ORDER BY b.name != 'main', b.name"
            )
            .fetchall()
        )
        return dict(rows)

    @_guarded
    def derived(self, rev: str, name: str) -> Any | None:
        """A value derived from ``rev``'s document and kept under ``name``, if any."""
        row = (
            self._connection()
            .execute("SELECT body FROM derived WHERE rev = ? AND name = ?", (rev, name))
            .fetchone()
        )
        return None if row is None else self._decode(bytes(row[0]), f"{name} of {rev}")

    @_guarded
    def keep_derived(self, rev: str, values: Mapping[str, Any]) -> None:
        """Keep values derived from ``rev``'s document alone (e.g. its summary), by name,
        in one transaction.

        A value kept again replaces the one before: it is a function of an immutable
        document, so a second computation can only agree with it, unless the stored one was
        damaged, which this repairs (the repository recomputes a view it cannot read).
        Values are stored as
        JSON in their own key order (not canonical: they are never hashed, and a summary's
        order is part of what it says).
        """
        rows = []
        for name, value in values.items():
            if not isinstance(name, str) or not name:
                raise AiraError(STORE_ARGUMENT_INVALID, "a derived value needs a non-empty name")
            try:
                body = json.dumps(
                    value, ensure_ascii=False, separators=(",", ":"), allow_nan=False
                ).encode()
            except (TypeError, ValueError) as exc:
                raise AiraError(STORE_ARGUMENT_INVALID, f"derived value {name!r}: {exc}") from None
            rows.append((rev, name, body))
        with self._tx() as db:
            if not self._rev_exists(db, rev):
                raise self._unknown_rev(rev)
            db.executemany("INSERT OR REPLACE INTO derived VALUES (?, ?, ?)", rows)

    # -- writing ---------------------------------------------------------------------------

    @_guarded
    def init(self, document: Document, message: str = "init") -> Revision:
        """Create ``main`` at ``document`` (``STORE_ALREADY_INITIALISED`` if it exists),
        creating the store first if there is none: the one write that may."""
        rev, body = _encode_document(document)
        message = _check_message(message)
        self._connection(create=True)
        with self._tx() as db:
            if db.execute("SELECT 1 FROM branches WHERE name = ?", (MAIN,)).fetchone():
                raise self._error(STORE_ALREADY_INITIALISED, "is already initialised (main exists)")
            return self._append(
                db,
                branch=MAIN,
                rev=rev,
                body=body,
                parent=None,
                base_seq=None,
                kind="init",
                message=message,
                meta=None,
                new_branch=True,
            )

    @_guarded
    def commit(
        self,
        branch: str,
        expected_head: str,
        document: Document,
        message: str = "",
        meta: dict[str, Any] | None = None,
        *,
        create_branch: bool = False,
    ) -> Revision:
        """Move ``branch`` from ``expected_head`` to ``document``'s revision.

        Compare-and-swap: if the head is no longer ``expected_head``, nothing is written and
        :class:`StaleRevision` (``STEP_STALE_REVISION``) names the current head. A document
        equal to the head's is refused with ``STORE_NO_CHANGE``. With ``create_branch`` the
        task branch is first created at ``expected_head`` (as :meth:`branch` does), in the
        same transaction: a commit that is refused leaves no branch behind.
        """
        name = _check_branch(branch)
        rev, body = _encode_document(document)  # outside the write lock: pure CPU
        message = _check_message(message)
        meta_text = _encode_meta(meta)
        with self._tx() as db:
            if create_branch:
                self._create_branch(db, name, expected_head)
            head, head_seq = self._cas(db, name, expected_head)
            if rev == head:
                raise AiraError(
                    STORE_NO_CHANGE,
                    f"the document is the head of {name} already ({head}); nothing to commit",
                    subject=name,
                )
            return self._append(
                db,
                branch=name,
                rev=rev,
                body=body,
                parent=head,
                base_seq=head_seq,
                kind="commit",
                message=message,
                meta=meta_text,
            )

    @_guarded
    def branch(self, name: str, from_rev: str) -> str:
        """Create the task branch ``name`` (``task/<id>``) at ``from_rev``; returns its head.

        The branch continues the history of a record of ``from_rev``: the head record of a
        branch at ``from_rev`` if there is one (``main`` first), else the newest record of
        ``from_rev``. No record is written: the new branch's log starts with that history.
        """
        name = _check_branch(name)
        with self._tx() as db:
            self._create_branch(db, name, from_rev)
        return cast(str, from_rev)

    def _create_branch(self, db: sqlite3.Connection, name: str, from_rev: str) -> None:
        if db.execute("SELECT 1 FROM branches WHERE name = ?", (name,)).fetchone():
            raise AiraError(STORE_BRANCH_EXISTS, f"branch {name} exists already", subject=name)
        if name == MAIN:
            raise AiraError(
                STORE_BRANCH_INVALID, "main is created by init, not branched", subject=name
            )
        row = db.execute(
            "SELECT c.seq FROM commits c LEFT JOIN branches b ON b.head_seq = c.seq "
            "WHERE c.rev = ? ORDER BY b.name IS NULL, b.name != 'main', b.name, c.seq DESC "
            "LIMIT 1",
            (from_rev,),
        ).fetchone()
        if row is None:
            raise self._unknown_rev(from_rev)
        db.execute(
            "INSERT INTO branches (name, head_seq, created_at) VALUES (?, ?, ?)",
            (name, row[0], _now()),
        )

    @_guarded
    def revert(
        self,
        branch: str,
        expected_head: str,
        to_rev: str,
        message: str = "",
        meta: dict[str, Any] | None = None,
    ) -> Revision:
        """Append a ``revert`` record moving ``branch`` back to ``to_rev``'s document.

        Nothing is removed: the reverted records stay in the log. Because revisions are
        content addresses, the new head's id *equals* ``to_rev`` (same document, same id);
        the new record, not a new id, is what marks the revert. ``to_rev`` must be in the
        branch's history (``STORE_REVISION_NOT_IN_BRANCH``); the head moves by compare-and-swap
        as in :meth:`commit`; reverting to the head itself is ``STORE_NO_CHANGE``.
        """
        name = _check_branch(branch)
        message = _check_message(message)
        meta_text = _encode_meta(meta)
        with self._tx() as db:
            head, head_seq = self._cas(db, name, expected_head)
            if not self._rev_exists(db, to_rev):
                raise self._unknown_rev(to_rev)
            if not self._in_history(db, name, to_rev):
                raise AiraError(
                    STORE_REVISION_NOT_IN_BRANCH,
                    f"revision {to_rev} is not in the history of {name}",
                    subject=to_rev,
                )
            if to_rev == head:
                raise AiraError(
                    STORE_NO_CHANGE, f"{to_rev} is the head of {name} already", subject=name
                )
            return self._append(
                db,
                branch=name,
                rev=to_rev,
                body=None,
                parent=head,
                base_seq=head_seq,
                kind="revert",
                message=message,
                meta=meta_text,
            )

    @_guarded
    def publish(
        self,
        task_branch: str,
        expected_main_head: str,
        message: str = "",
        meta: dict[str, Any] | None = None,
    ) -> Revision:
        """Fast-forward ``main`` to the head of ``task_branch`` (compare-and-swap on ``main``).

        Allowed only if the task branch descends from ``main``'s current head record, i.e.
        ``main``'s head is in the task branch's history; otherwise
        ``STORE_PUBLISH_NOT_FAST_FORWARD`` (re-branch from the new head and redo the work).
        The ``publish`` record continues the task branch's history, so ``main``'s log then
        shows the task's records; the task branch itself is left as it is.
        """
        task = _check_branch(task_branch)
        if task == MAIN:
            raise AiraError(
                STORE_BRANCH_INVALID, "publish takes a task branch, not main", subject=task
            )
        message = _check_message(message)
        meta_text = _encode_meta(meta)
        with self._tx() as db:
            task_head, task_seq = self._head(db, task)
            main_head, main_seq = self._cas(db, MAIN, expected_main_head)
            descends = db.execute(
                # Seqs only decrease along a history, so stop below main's head record.
                """WITH RECURSIVE chain(seq) AS (
                       SELECT :task_seq
                       UNION ALL
                       SELECT c.base_seq FROM commits c JOIN chain ON c.seq = chain.seq
                       WHERE c.base_seq >= :main_seq AND c.base_seq < c.seq
                   )
                   SELECT 1 FROM chain WHERE seq = :main_seq""",
                {"task_seq": task_seq, "main_seq": main_seq},
            ).fetchone()
            if descends is None:
                raise AiraError(
                    STORE_PUBLISH_NOT_FAST_FORWARD,
                    f"{task} does not descend from main's head {main_head}; branch again from "
                    "main's head and redo the change",
                    subject=task,
                )
            if task_head == main_head:
                raise AiraError(
                    STORE_NO_CHANGE,
                    f"{task} has the same document as main ({main_head})",
                    subject=task,
                )
            return self._append(
                db,
                branch=MAIN,
                rev=task_head,
                body=None,
                parent=main_head,
                base_seq=task_seq,
                kind="publish",
                message=message,
                meta=meta_text,
            )

    # -- checking --------------------------------------------------------------------------

    @_guarded
    def check(self) -> list[str]:
        """A full consistency check; returns the problems found (empty: consistent).

        ``PRAGMA integrity_check``, foreign keys, every document against its content
        address, every record's link to the record it continues, every branch's head.
        Reads the whole file: for tests and repair tools, not for every open.
        """
        db = self._connection()
        problems = [row[0] for row in db.execute("PRAGMA integrity_check")]
        problems = [] if problems == ["ok"] else [f"integrity_check: {p}" for p in problems]
        problems += [f"foreign key: {row}" for row in db.execute("PRAGMA foreign_key_check")]
        for rev, body in db.execute("SELECT rev, body FROM documents"):
            if f"rev:sha256:{sha256_bytes_hex(_unpack(bytes(body)))}" != rev:
                problems.append(f"document {rev} does not match its id")
        for seq, base_seq, kind, parent, base_rev, base_exists in db.execute(
            "SELECT c.seq, c.base_seq, c.kind, c.parent, b.rev, b.seq IS NOT NULL "
            "FROM commits c LEFT JOIN commits b ON b.seq = c.base_seq"
        ):
            if kind == "init":
                if base_seq is not None or parent is not None:
                    problems.append(f"record {seq}: init with a parent")
            elif base_seq is None or not base_exists or base_seq >= seq:
                problems.append(f"record {seq}: bad base record {base_seq}")
            elif kind in ("commit", "revert") and parent != base_rev:
                problems.append(f"record {seq}: parent {parent} is not its base's {base_rev}")
        for name, head_seq, exists in db.execute(
            "SELECT b.name, b.head_seq, c.seq IS NOT NULL FROM branches b "
            "LEFT JOIN commits c ON c.seq = b.head_seq"
        ):
            if not exists or not _BRANCH_RE.fullmatch(name):
                problems.append(f"branch {name}: bad head record {head_seq}")
        return problems
