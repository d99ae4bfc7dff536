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

Every write is one ``BEGIN IMMEDIATE`` transaction in WAL mode with ``synchronous=FULL``
(:mod:`aira_core.sqlite_file`, shared with the gateway's attempt ledger): a
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
import itertools
import json
import os
import re
import sqlite3
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, cast

from aira_core.canonical import (
    Canonical,
    CanonicalJSONError,
    canonical_bytes,
    sha256_bytes_hex,
    sha256_hex,
    sha256_id,
)
from aira_core.config import aira_home
from aira_core.databases import hold
from aira_core.diagnostics import AiraError, redact
from aira_core.sqlite_file import DAMAGE_ERRORS, SqliteFile, errorname

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

SCHEMA_VERSION = 2
"""``PRAGMA user_version`` of the schema below. A store of an older version is migrated on
open (under the write lock, in one transaction); a store with a higher version than this
code knows is refused (``STORE_UNAVAILABLE``: upgrade Aira)."""

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
# Schema 2: every history record, branch pointer and kept derived value carries a digest
# that each read checks, so damage to a row is STORE_CORRUPT instead of a wrong answer; and
# large strings of a document (an imported STEP text) are stored once, content addressed,
# in ``blobs``, and referenced from every document that holds them. A new store is made of
# schema 1 and this migration, so new and migrated stores are the same.
_MIGRATION_2 = (
    "ALTER TABLE commits ADD COLUMN digest TEXT",
    "ALTER TABLE branches ADD COLUMN digest TEXT",
    "ALTER TABLE derived ADD COLUMN digest TEXT",
    """CREATE TABLE blobs (
        digest TEXT PRIMARY KEY,
        body BLOB NOT NULL
    )""",
    """CREATE TRIGGER blobs_no_update BEFORE UPDATE ON blobs
        BEGIN SELECT RAISE(ABORT, 'blobs are immutable'); END""",
    """CREATE TRIGGER blobs_no_delete BEFORE DELETE ON blobs
        BEGIN SELECT RAISE(ABORT, 'blobs are immutable'); END""",
)
_REQUIRED_OBJECTS_1 = frozenset(
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
_REQUIRED_OBJECTS = _REQUIRED_OBJECTS_1 | {"blobs", "blobs_no_update", "blobs_no_delete"}
_COLUMNS = {
    "documents": ("rev", "body"),
    "commits": (
        "seq",
        "branch",
        "rev",
        "parent",
        "base_seq",
        "kind",
        "message",
        "created_at",
        "meta",
        "digest",
    ),
    "derived": ("rev", "name", "body", "digest"),
    "branches": ("name", "head_seq", "created_at", "digest"),
    "blobs": ("digest", "body"),
}
"""The columns of schema 2; schema 1 is the same without ``digest`` columns and ``blobs``."""

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
    "c.seq, c.branch, c.rev, c.parent, c.kind, c.message, c.created_at, c.meta, c.base_seq, "
    "c.digest"
)
_KINDS = frozenset({"init", "commit", "revert", "publish"})
# A branch pointer and the record it points at (LEFT JOIN: a missing record reads as NULLs).
_HEAD_COLUMNS = "b.name, b.head_seq, b.created_at, b.digest, " + _RECORD_COLUMNS

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
class _Head:
    rev: str
    seq: int
    digest: str
    """Of the head record."""
    created_at: str
    """Of the branch."""
    record: CommitRecord


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
    message = redact(message)  # user or model text, kept for good: no credential in it
    try:  # it is part of its record's digest
        canonical_bytes(message)
    except CanonicalJSONError as exc:
        raise AiraError(
            STORE_ARGUMENT_INVALID, f"the message is not canonical JSON: {exc}"
        ) from None
    return message


def _encode_meta(meta: object) -> str | None:
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise AiraError(STORE_ARGUMENT_INVALID, "meta must be a JSON object or None")
    try:
        return canonical_bytes(meta).decode("utf-8")
    except CanonicalJSONError as exc:
        raise AiraError(STORE_ARGUMENT_INVALID, f"meta is not canonical JSON: {exc}") from None


# -- digests of rows ---------------------------------------------------------------------------
# A digest is SHA-256 over the canonical JSON of a row's columns (one hasher:
# aira_core.canonical), checked on every read of the row. It detects damage (a disk, a bit
# flip, an edit past the triggers), not a deliberate forgery: whoever can write the file can
# recompute a digest. Revision ids do not change: they still hash the document alone.


def _record_digest(
    seq: int,
    branch: str,
    rev: str,
    parent: str | None,
    kind: str,
    message: str,
    created_at: str,
    meta: str | None,
    base_seq: int | None,
) -> str:
    return sha256_hex(
        ["aira.commit/1", seq, branch, rev, parent, kind, message, created_at, meta, base_seq]
    )


def _branch_digest(name: str, head_seq: int, created_at: str, head_digest: str) -> str:
    # Bound to the digest of the record it points at: a pointer moved to another record is
    # damage even if that record is intact.
    return sha256_hex(["aira.branch/1", name, head_seq, created_at, head_digest])


def _derived_digest(rev: str, name: str, body: str) -> str:
    return sha256_hex(["aira.derived/1", rev, name, body])


# -- document bodies ---------------------------------------------------------------------------
# Documents are stored zlib-compressed: a revision is a whole document and JSON compresses
# several times over. A string of at least _BLOB_MIN bytes (an imported STEP text) is cut
# out of the canonical bytes and stored once in ``blobs`` under its own content address; the
# document's row then holds a *frame*: the references (offset in the remaining bytes, blob
# digest) and the remaining bytes, compressed. So a one-parameter commit after an import
# adds a few kilobytes, not the import again. A stored body that starts with "{" is a
# document written uncompressed, one that starts with zlib's header a document written whole
# (schema 1, or small); both are read as they are. The content address is always over the
# canonical, uncompressed, reassembled bytes, and checked on every read.
_COMPRESSION_LEVEL = 6
_BLOB_MIN = 64 * 1024
_FRAME = b"\x00aira.frame/1\n"
# In canonical JSON a '"' outside a string never occurs, so scanning from the start finds
# exactly the string literals, in order.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


@dataclass(frozen=True, slots=True)
class _Encoded:
    rev: str
    frame: bytes
    """What the ``documents`` row holds."""
    blobs: tuple[tuple[str, bytes], ...]
    """(digest, string literal) of each large string, uncompressed: compressed only if new."""


def _encode_document(document: object) -> _Encoded:
    """Content address and stored form of a document.

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
    rev = sha256_id("rev", body)
    refs: list[list[int | str]] = []
    blobs: dict[str, bytes] = {}
    rest: list[bytes] = []
    pos = size = 0
    if len(body) >= _BLOB_MIN:
        for match in _STRING.finditer(body):
            if match.end() - match.start() < _BLOB_MIN:
                continue
            rest.append(body[pos : match.start()])
            size += match.start() - pos
            literal = bytes(match.group())
            digest = f"blob:sha256:{sha256_bytes_hex(literal)}"
            refs.append([size, digest])
            blobs[digest] = literal
            pos = match.end()
    if not refs:
        return _Encoded(rev, _pack(bytes(body)), ())
    rest.append(body[pos:])
    frame = _FRAME + canonical_bytes(refs) + b"\n" + _pack(b"".join(rest))
    return _Encoded(rev, frame, tuple(blobs.items()))


def _pack(body: bytes) -> bytes:
    return zlib.compress(body, _COMPRESSION_LEVEL)


class _Damaged(Exception):
    """A stored value that cannot be what was written; ``str()`` says what is wrong."""


def _unpack(stored: object) -> bytes:
    if not isinstance(stored, bytes):
        raise _Damaged(f"is stored as {type(stored).__name__}, not bytes")
    if stored.startswith(b"{"):
        return stored
    try:
        return zlib.decompress(stored)
    except zlib.error:
        raise _Damaged("cannot be decompressed") from None


def _frame_refs(stored: bytes) -> tuple[list[tuple[int, str]], bytes]:
    """The blob references of a frame and its remaining (compressed) bytes."""
    header, newline, rest = stored[len(_FRAME) :].partition(b"\n")
    try:
        refs = json.loads(header) if newline else None
    except ValueError:
        refs = None
    if not isinstance(refs, list) or not all(
        isinstance(r, list)
        and len(r) == 2
        and type(r[0]) is int
        and isinstance(r[1], str)
        and r[1].startswith("blob:sha256:")
        for r in refs
    ):
        raise _Damaged("has a damaged list of blob references")
    return [(r[0], r[1]) for r in refs], rest


_CHECKED_MAX = 4096  # rows remembered as checked, per store object


def _remember(checked: dict[tuple[Any, ...], T], row: tuple[Any, ...], value: T) -> T:
    if len(checked) >= _CHECKED_MAX:
        checked.clear()
    checked[row] = value
    return value


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


class ModelStore(SqliteFile):
    """Revisions, history and branches of model documents in one SQLite file.

    ``ModelStore(path)`` opens the store at ``path`` (default :func:`default_store_path`).
    Opening never creates a store unless asked: with ``create=False`` (the default) a path
    with no file is opened *absent*, and every read or write on
    it is ``STORE_UNAVAILABLE`` ("no store at …, run `aira model init`") without creating a
    file or a directory; only :meth:`init` creates it. With ``create=True`` an empty store
    is created at once if there is none. An existing file is checked read-only first
    (``PRAGMA quick_check``, application id, schema version, schema objects); if it is not
    a valid store (an empty, 0-byte file included) it is left exactly as it is and
    ``STORE_CORRUPT`` (not a store, damaged) or ``STORE_UNAVAILABLE`` (cannot be opened,
    locked, written by a newer schema) is raised. A store of an older schema is migrated.

    Every row a read uses is checked: documents against their content address, history
    records, branch pointers and kept derived values against their digests; a row that
    fails is ``STORE_CORRUPT`` naming it.

    Use as a context manager or call :meth:`close`.
    """

    NOUN = "model store"
    SHORT = "store"
    APPLICATION_ID = APPLICATION_ID
    SCHEMA_VERSION = SCHEMA_VERSION
    SCHEMA = _SCHEMA
    UNAVAILABLE = STORE_UNAVAILABLE
    CORRUPT = STORE_CORRUPT
    EMPTY_FILE = (
        "is an empty file (0 bytes), not a store: restore it from a backup, or remove it to "
        "start a new store with `aira model init`"
    )

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
        # Rows already checked against their digests, by their exact column values: history
        # rows never change, so a row read again as it was is not hashed again (a runtime
        # session reads whole histories and every branch, often).
        self._checked_records: dict[tuple[Any, ...], CommitRecord] = {}
        self._checked_heads: dict[tuple[Any, ...], _Head] = {}
        hold(self)  # closed at the process end if still open (aira_core.databases)
        if create or self.path.is_dir() or self._exists():
            try:
                self._db = self._open(create)
            except sqlite3.Error as exc:
                raise self._sqlite_error(exc, "open") from None

    # -- opening (the rest: aira_core.sqlite_file) ----------------------------------------

    def _sqlite_error(self, exc: sqlite3.Error, doing: str) -> AiraError:
        if self._db is not None and doing != "open":
            self._rollback()
        name = errorname(exc)
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            return self._error(STORE_CORRUPT, f"not a valid store ({doing}: {exc})")
        if isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(DAMAGE_ERRORS):
            said = "".join(c if c.isprintable() else "?" for c in str(exc)[:200])
            return self._error(STORE_CORRUPT, f"is damaged ({doing}: {said})")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return self._error(STORE_UNAVAILABLE, f"locked by another process ({doing}: {exc})")
        if isinstance(exc, sqlite3.ProgrammingError) and self._db is None:
            return self._error(STORE_UNAVAILABLE, "the store is closed")
        return self._error(STORE_UNAVAILABLE, f"cannot be used ({doing}: {exc})")

    def _gone(self) -> AiraError:
        name = self.path.name
        return AiraError(
            STORE_UNAVAILABLE,
            f"no store at {name}; run `aira model init` to create one",
            subject=name,
        )

    def _not_intact(self, problem: object) -> AiraError:
        return self._error(STORE_CORRUPT, f"failed its integrity check: {problem}")

    def _foreign(self, app_id: int, version: int, names: set[str]) -> AiraError:
        if app_id == 0 and version == 0 and not names:
            return self._error(STORE_CORRUPT, "is not a model store (no store schema)")
        return self._error(STORE_CORRUPT, "is an SQLite database but not a model store")

    def _required_objects(self, version: int) -> frozenset[str]:
        return _REQUIRED_OBJECTS if version == SCHEMA_VERSION else _REQUIRED_OBJECTS_1

    def _columns(self, version: int) -> Mapping[str, tuple[str, ...]]:
        if version >= 2:
            return _COLUMNS
        return {
            table: tuple(c for c in columns if c != "digest")
            for table, columns in _COLUMNS.items()
            if table != "blobs"
        }

    def _migrate(self, db: sqlite3.Connection, version: int) -> None:
        """Schema ``version`` → :data:`SCHEMA_VERSION`, in the caller's transaction.

        1 → 2: digest columns and ``blobs``. The digests of existing records and branch
        pointers are computed from the rows as they are (damage older than the migration
        cannot be told apart from data); kept derived values are dropped, not trusted:
        they are recomputed, with digests, on their next read. Documents stay as they are
        (schema 1 bodies are read as before); an Aira of schema 1 then refuses the store
        as newer (upgrade)."""
        if version < 2:
            for statement in _MIGRATION_2:
                db.execute(statement)
            (trigger,) = db.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'commits_no_update'"
            ).fetchone()
            db.execute("DROP TRIGGER commits_no_update")
            columns = _RECORD_COLUMNS.rsplit(",", 1)[0]
            digests: dict[int, str] = {}
            for row in db.execute(f"SELECT {columns} FROM commits c").fetchall():
                with contextlib.suppress(CanonicalJSONError, TypeError, ValueError):
                    digests[row[0]] = _record_digest(*row)
            db.executemany(
                "UPDATE commits SET digest = ? WHERE seq = ?",
                [(d, seq) for seq, d in digests.items()],
            )
            db.execute(trigger)
            for name, head_seq, created_at in db.execute(
                "SELECT name, head_seq, created_at FROM branches"
            ).fetchall():
                if head_seq in digests:
                    with contextlib.suppress(CanonicalJSONError, TypeError, ValueError):
                        db.execute(
                            "UPDATE branches SET digest = ? WHERE name = ?",
                            (_branch_digest(name, head_seq, created_at, digests[head_seq]), name),
                        )
            db.execute("DELETE FROM derived")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- plumbing --------------------------------------------------------------------------

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

    def _before_commit(self) -> None:
        _crash_point("before_commit_tx")

    def _after_commit(self) -> None:
        _crash_point("after_commit_tx")

    # -- checked rows ----------------------------------------------------------------------

    def _damaged(self, what: str, why: str) -> AiraError:
        return self._error(STORE_CORRUPT, f"{what} is damaged: {why}")

    def _checked_record(self, row: Sequence[Any]) -> CommitRecord:
        """A history record read from ``row`` (:data:`_RECORD_COLUMNS`), checked against
        its digest."""
        known = self._checked_records.get(tuple(row))
        if known is not None:
            return known
        seq, branch, rev, parent, kind, message, created_at, meta, base_seq, digest = row
        what = f"history record {seq!r}"
        typed = (
            type(seq) is int
            and isinstance(branch, str)
            and isinstance(rev, str)
            and (parent is None or isinstance(parent, str))
            and isinstance(kind, str)
            and isinstance(message, str)
            and isinstance(created_at, str)
            and (meta is None or isinstance(meta, str))
            and (base_seq is None or type(base_seq) is int)
        )
        if not typed:
            raise self._damaged(what, "a column of the wrong type")
        if not isinstance(digest, str):
            raise self._damaged(what, "it has no digest")
        try:
            intact = digest == _record_digest(*row[:9])
        except CanonicalJSONError:
            intact = False
        if not intact or kind not in _KINDS:
            raise self._damaged(what, "it does not match its digest")
        try:
            meta_value = json.loads(meta) if meta is not None else None
        except (ValueError, RecursionError):  # written canonical by commit: damaged since
            raise self._error(STORE_CORRUPT, f"the meta of {what} is not JSON") from None
        record = CommitRecord(
            seq=seq,
            branch=branch,
            rev=rev,
            parent=parent,
            kind=cast(CommitKind, kind),
            message=message,
            created_at=created_at,
            meta=meta_value,
            base_seq=base_seq,
        )
        return _remember(self._checked_records, tuple(row), record)

    def _checked_head(self, row: Sequence[Any]) -> _Head:
        """A branch pointer and the record it points at (:data:`_HEAD_COLUMNS`), checked."""
        known = self._checked_heads.get(tuple(row))
        if known is not None:
            return known
        name, head_seq, created_at, digest = row[:4]
        what = f"the head pointer of branch {str(name)[:80]!r}"
        if row[4] is None:
            raise self._damaged(what, f"its record {head_seq!r} is missing")
        record = self._checked_record(row[4:])
        try:
            intact = isinstance(digest, str) and digest == _branch_digest(
                name, head_seq, created_at, row[-1]
            )
        except CanonicalJSONError:
            intact = False
        if not intact or not isinstance(name, str) or not isinstance(created_at, str):
            raise self._damaged(what, "it does not match its digest")
        head = _Head(record.rev, record.seq, row[-1], created_at, record)
        return _remember(self._checked_heads, tuple(row), head)

    def _head(self, db: sqlite3.Connection, branch: str) -> _Head:
        row = db.execute(
            f"SELECT {_HEAD_COLUMNS} FROM branches b LEFT JOIN commits c ON c.seq = b.head_seq "
            "WHERE b.name = ?",
            (branch,),
        ).fetchone()
        if row is None:
            raise self._no_branch(db, branch)
        if row[0] != branch:  # found through the name's index, but another branch's row
            raise self._damaged("the index of branches", f"it finds {str(row[0])[:80]!r}")
        return self._checked_head(row)

    def _no_branch(self, db: sqlite3.Connection, branch: str) -> AiraError:
        # A branch not found may be one whose row is damaged (its name, say): the pointers
        # are few, so they are all checked before the branch is called unknown.
        for row in db.execute(
            f"SELECT {_HEAD_COLUMNS} FROM branches b NOT INDEXED "
            "LEFT JOIN commits c ON c.seq = b.head_seq"
        ).fetchall():
            self._checked_head(row)
            if row[0] == branch:
                raise self._damaged("the index of branches", f"it does not find {branch}")
        if branch == MAIN and db.execute("SELECT 1 FROM commits LIMIT 1").fetchone():
            return self._error(STORE_CORRUPT, "has history but no main branch: main is damaged")
        return AiraError(
            STORE_BRANCH_UNKNOWN, f"there is no branch {branch} in the store", subject=branch
        )

    def _cas(self, db: sqlite3.Connection, branch: str, expected: str) -> _Head:
        head = self._head(db, branch)
        # Heads are content addresses: a head that moved away and back to the same document
        # compares equal, which is harmless because the expected document is the head's.
        if head.rev != expected:
            raise StaleRevision(branch, expected, head.rev)
        return head

    def _append(
        self,
        db: sqlite3.Connection,
        *,
        branch: str,
        rev: str,
        document: _Encoded | None,
        parent: str | None,
        base_seq: int | None,
        kind: CommitKind,
        message: str,
        meta: str | None,
        branch_created_at: str | None = None,
    ) -> Revision:
        """Store the document (if new), append the record and move the branch to it
        (``branch_created_at``: the moving branch's; ``None``: a new branch)."""
        if document is not None:
            self._insert_document(db, document)
        _crash_point("after_insert_document")
        now = _now()
        # The record's digest covers its seq, so the seq is chosen here (under the write
        # lock) as AUTOINCREMENT would: above every seq ever used.
        seq = db.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'commits'), 0), "
            "coalesce((SELECT max(seq) FROM commits), 0)) + 1"
        ).fetchone()[0]
        digest = _record_digest(seq, branch, rev, parent, kind, message, now, meta, base_seq)
        db.execute(
            "INSERT INTO commits (seq, branch, rev, parent, base_seq, kind, message, created_at,"
            " meta, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (seq, branch, rev, parent, base_seq, kind, message, now, meta, digest),
        )
        _crash_point("after_insert_commit")
        if branch_created_at is None:
            db.execute(
                "INSERT INTO branches (name, head_seq, created_at, digest) VALUES (?, ?, ?, ?)",
                (branch, seq, now, _branch_digest(branch, seq, now, digest)),
            )
        else:
            db.execute(
                "UPDATE branches SET head_seq = ?, digest = ? WHERE name = ?",
                (seq, _branch_digest(branch, seq, branch_created_at, digest), branch),
            )
        return Revision(rev=rev, branch=branch, seq=seq, parent=parent, kind=kind)

    def _insert_document(self, db: sqlite3.Connection, document: _Encoded) -> None:
        if self._rev_exists(db, document.rev):
            return
        for digest, literal in document.blobs:
            # Compressed only when new: a commit after an import does not pay for it again.
            if db.execute("SELECT 1 FROM blobs WHERE digest = ?", (digest,)).fetchone() is None:
                db.execute(
                    "INSERT INTO blobs (digest, body) VALUES (?, ?)", (digest, _pack(literal))
                )
        db.execute(
            "INSERT INTO documents (rev, body) VALUES (?, ?)", (document.rev, document.frame)
        )

    def _in_history(self, db: sqlite3.Connection, branch: str, rev: str) -> bool:
        row = db.execute(
            _CHAIN + "SELECT 1 FROM chain JOIN commits c ON c.seq = chain.seq "
            "WHERE c.rev = :rev LIMIT 1",
            {"branch": branch, "rev": rev, "limit": _UNLIMITED},
        ).fetchone()
        return row is not None

    def _rev_exists(self, db: sqlite3.Connection, rev: str) -> bool:
        return db.execute("SELECT 1 FROM documents WHERE rev = ?", (rev,)).fetchone() is not None

    def _unknown_rev(self, db: sqlite3.Connection, rev: object) -> AiraError:
        # Not found by its index: before calling it unknown, make sure it is not a document
        # that is there (a damaged index) or one the history names (a damaged row). Only
        # this rare path scans.
        if isinstance(rev, str):
            if db.execute("SELECT 1 FROM documents NOT INDEXED WHERE rev = ?", (rev,)).fetchone():
                return self._damaged("the index of documents", f"revision {rev} is not found by it")
            named = db.execute(
                "SELECT seq FROM commits NOT INDEXED WHERE rev = ?1 OR parent = ?1 LIMIT 1", (rev,)
            ).fetchone()
            if named is not None:
                return self._error(
                    STORE_CORRUPT,
                    f"the document of {rev}, named by history record {named[0]}, is missing",
                )
        return AiraError(
            STORE_REVISION_UNKNOWN, f"there is no revision {rev} in the store", subject=str(rev)
        )

    def _document_bytes(self, db: sqlite3.Connection, rev: str, stored: object) -> bytes:
        """The canonical bytes of ``rev``'s document from its stored form, checked against
        the content address."""
        what = f"the stored document of {rev}"
        literals: dict[str, bytes] = {}
        try:
            if isinstance(stored, bytes) and stored.startswith(_FRAME):
                refs, rest = _frame_refs(stored)
                remaining = _unpack(rest)
                parts, pos = [], 0
                for offset, digest in refs:
                    if not pos <= offset <= len(remaining):
                        raise _Damaged("has a blob reference out of place")
                    found = db.execute(
                        "SELECT body FROM blobs WHERE digest = ?", (digest,)
                    ).fetchone()
                    if found is None:
                        raise _Damaged(f"references {digest}, which is missing")
                    try:
                        literal = literals.get(digest) or _unpack(found[0])
                    except _Damaged as exc:
                        raise _Damaged(f"references {digest}, which {exc}") from None
                    literals[digest] = literal
                    parts += [remaining[pos:offset], literal]
                    pos = offset
                parts.append(remaining[pos:])
                body = b"".join(parts)
            else:
                body = _unpack(stored)
        except _Damaged as exc:
            raise self._error(STORE_CORRUPT, f"{what} {exc}") from None
        if sha256_id("rev", Canonical(body)) != rev:  # stored bytes are canonical
            for digest, literal in literals.items():  # name the part that is damaged
                if f"blob:sha256:{sha256_bytes_hex(literal)}" != digest:
                    raise self._error(
                        STORE_CORRUPT, f"{digest} (part of {rev}) does not match its id"
                    )
            raise self._error(STORE_CORRUPT, f"{what} does not match its id")
        return body

    # -- reading ---------------------------------------------------------------------------

    @_guarded
    def head(self, branch: str = MAIN) -> str:
        """The revision ``branch`` points at (``STORE_BRANCH_UNKNOWN`` if there is none)."""
        return self._head(self._connection(), _check_branch(branch)).rev

    @_guarded
    def read(self, rev: str) -> dict[str, Any]:
        """The document of ``rev`` (a fresh dict on every call).

        The stored bytes are checked against the content address, so a damaged document is
        ``STORE_CORRUPT``, never silently wrong.
        """
        with self._snapshot() as db:
            row = db.execute("SELECT body FROM documents WHERE rev = ?", (rev,)).fetchone()
            if row is None:
                raise self._unknown_rev(db, rev)
            body = self._document_bytes(db, rev, row[0])
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
        contains the task branch's records. Every record is checked against its digest and
        its link to the next: a damaged or missing record is ``STORE_CORRUPT``, never a
        shorter or different history.
        """
        name = _check_branch(branch)
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= _UNLIMITED
        ):
            raise AiraError(
                STORE_ARGUMENT_INVALID,
                f"limit must be an integer from 1 to 2**62, or None for all, got {limit!r}",
            )
        bound = _UNLIMITED if limit is None else limit
        with self._snapshot() as db:
            head = self._head(db, name)  # STORE_BRANCH_UNKNOWN
            rows = db.execute(
                _CHAIN + f"SELECT {_RECORD_COLUMNS} FROM chain JOIN commits c "
                "ON c.seq = chain.seq ORDER BY c.seq DESC",
                {"branch": name, "limit": bound},
            ).fetchall()
        records = [self._checked_record(row) for row in rows]
        if not records or records[0].seq != head.seq:
            raise self._damaged(f"the history of {name}", "it does not start at its head")
        for newer, older in itertools.pairwise(records):
            if newer.base_seq != older.seq:
                raise self._damaged(f"the history of {name}", f"record {newer.seq}'s link")
            if newer.kind in ("commit", "revert") and newer.parent != older.rev:
                raise self._damaged(f"the history of {name}", f"record {newer.seq}'s parent")
        last = records[-1]
        if len(records) < bound and (last.base_seq is not None or last.kind != "init"):
            raise self._damaged(
                f"the history of {name}",
                f"record {last.seq} continues record {last.base_seq}, which is missing",
            )
        return records

    @_guarded
    def branches(self) -> dict[str, str]:
        """Every branch and its head revision, ``main`` first, then by name."""
        rows = (
            self._connection()
            .execute(
                f"SELECT {_HEAD_COLUMNS} FROM branches b LEFT JOIN commits c "
                "ON c.seq = b.head_seq ORDER BY b.name != 'main', b.name"
            )
            .fetchall()
        )
        return {row[0]: self._checked_head(row).rev for row in rows}

    @_guarded
    def derived(self, rev: str, name: str) -> Any | None:
        """A value derived from ``rev``'s document and kept under ``name``, if any; a kept
        value that does not match its digest is ``STORE_CORRUPT``."""
        db = self._connection()
        row = db.execute(
            "SELECT body, digest FROM derived WHERE rev = ? AND name = ?", (rev, name)
        ).fetchone()
        if row is None:
            # Not found by the index: a missing view is computed again, so make sure it is
            # not one that is there (a damaged index). Only this rarer path scans.
            there = db.execute(
                "SELECT 1 FROM derived NOT INDEXED WHERE rev = ? AND name = ?", (rev, name)
            ).fetchone()
            if there is not None:
                raise self._damaged("the index of derived", f"it does not find {name} of {rev}")
            return None
        body, digest = row
        what = f"the kept {name} of {rev}"
        if not isinstance(body, bytes):
            raise self._damaged(what, f"stored as {type(body).__name__}, not bytes")
        try:
            intact = isinstance(digest, str) and digest == _derived_digest(
                rev, name, body.decode("utf-8")
            )
        except (UnicodeDecodeError, CanonicalJSONError):
            intact = False
        if not intact:
            raise self._damaged(what, "it does not match its digest")
        return self._decode(body, what)

    @_guarded
    def keep_derived(self, rev: str, values: Mapping[str, Any]) -> None:
        """Keep values derived from ``rev``'s document alone (e.g. its summary), by name,
        in one transaction, each with its digest.

        A value kept again replaces the one before: it is a function of an immutable
        document, so a second computation can only agree with it (or repair a damaged one).
        Values are stored as JSON in their own key order (not canonical: a summary's order
        is part of what it says); the digest is over that text.
        """
        rows = []
        for name, value in values.items():
            if not isinstance(name, str) or not name:
                raise AiraError(STORE_ARGUMENT_INVALID, "a derived value needs a non-empty name")
            try:
                text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                digest = _derived_digest(rev, name, text)
            except (TypeError, ValueError) as exc:  # CanonicalJSONError is a ValueError
                raise AiraError(STORE_ARGUMENT_INVALID, f"derived value {name!r}: {exc}") from None
            rows.append((rev, name, text.encode(), digest))
        with self._tx() as db:
            if not self._rev_exists(db, rev):
                raise self._unknown_rev(db, rev)
            db.executemany("INSERT OR REPLACE INTO derived VALUES (?, ?, ?, ?)", rows)

    # -- writing ---------------------------------------------------------------------------

    @_guarded
    def init(self, document: Document, message: str = "init") -> Revision:
        """Create ``main`` at ``document`` (``STORE_ALREADY_INITIALISED`` if it exists),
        creating the store first if there is none: the one write that may."""
        encoded = _encode_document(document)
        message = _check_message(message)
        self._connection(create=True)
        with self._tx() as db:
            if db.execute("SELECT 1 FROM branches WHERE name = ?", (MAIN,)).fetchone():
                raise self._error(STORE_ALREADY_INITIALISED, "is already initialised (main exists)")
            return self._append(
                db,
                branch=MAIN,
                rev=encoded.rev,
                document=encoded,
                parent=None,
                base_seq=None,
                kind="init",
                message=message,
                meta=None,
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
        encoded = _encode_document(document)  # outside the write lock: pure CPU
        message = _check_message(message)
        meta_text = _encode_meta(meta)
        with self._tx() as db:
            if create_branch:
                self._create_branch(db, name, expected_head)
            head = self._cas(db, name, expected_head)
            if encoded.rev == head.rev:
                raise AiraError(
                    STORE_NO_CHANGE,
                    f"the document is the head of {name} already ({head.rev}); nothing to commit",
                    subject=name,
                )
            return self._append(
                db,
                branch=name,
                rev=encoded.rev,
                document=encoded,
                parent=head.rev,
                base_seq=head.seq,
                kind="commit",
                message=message,
                meta=meta_text,
                branch_created_at=head.created_at,
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
            "SELECT c.seq, c.digest FROM commits c LEFT JOIN branches b ON b.head_seq = c.seq "
            "WHERE c.rev = ? ORDER BY b.name IS NULL, b.name != 'main', b.name, c.seq DESC "
            "LIMIT 1",
            (from_rev,),
        ).fetchone()
        if row is None:
            raise self._unknown_rev(db, from_rev)
        seq, digest = row
        record = db.execute(f"SELECT {_RECORD_COLUMNS} FROM commits c WHERE c.seq = ?", (seq,))
        self._checked_record(record.fetchone())  # a branch starts at an intact record only
        now = _now()
        db.execute(
            "INSERT INTO branches (name, head_seq, created_at, digest) VALUES (?, ?, ?, ?)",
            (name, seq, now, _branch_digest(name, seq, now, digest)),
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
            head = self._cas(db, name, expected_head)
            if not self._rev_exists(db, to_rev):
                raise self._unknown_rev(db, to_rev)
            if not self._in_history(db, name, to_rev):
                raise AiraError(
                    STORE_REVISION_NOT_IN_BRANCH,
                    f"revision {to_rev} is not in the history of {name}",
                    subject=to_rev,
                )
            if to_rev == head.rev:
                raise AiraError(
                    STORE_NO_CHANGE, f"{to_rev} is the head of {name} already", subject=name
                )
            return self._append(
                db,
                branch=name,
                rev=to_rev,
                document=None,
                parent=head.rev,
                base_seq=head.seq,
                kind="revert",
                message=message,
                meta=meta_text,
                branch_created_at=head.created_at,
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
            task_at = self._head(db, task)
            main_at = self._cas(db, MAIN, expected_main_head)
            task_head, task_seq = task_at.rev, task_at.seq
            main_head, main_seq = main_at.rev, main_at.seq
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
                document=None,
                parent=main_head,
                base_seq=task_seq,
                kind="publish",
                message=message,
                meta=meta_text,
                branch_created_at=main_at.created_at,
            )

    # -- checking --------------------------------------------------------------------------

    @_guarded
    def check(self) -> list[str]:
        """A full consistency check; returns the problems found (empty: consistent).

        ``PRAGMA integrity_check``, foreign keys, every document and blob against its
        content address, every record, branch pointer and kept value against its digest,
        every record's link to the record it continues, every branch's head.
        Reads the whole file: for tests and repair tools, not for every open.
        """
        db = self._connection()
        problems = [row[0] for row in db.execute("PRAGMA integrity_check")]
        problems = [] if problems == ["ok"] else [f"integrity_check: {p}" for p in problems]
        problems += [f"foreign key: {row}" for row in db.execute("PRAGMA foreign_key_check")]
        for rev, body in db.execute("SELECT rev, body FROM documents").fetchall():
            try:
                self._document_bytes(db, rev, body)
            except AiraError as exc:
                problems.append(f"document {rev}: {exc.diagnostic.message}")
        for digest, body in db.execute("SELECT digest, body FROM blobs").fetchall():
            try:
                intact = f"blob:sha256:{sha256_bytes_hex(_unpack(body))}" == digest
            except _Damaged:
                intact = False
            if not intact:
                problems.append(f"{digest} does not match its id")
        for row in db.execute(f"SELECT {_RECORD_COLUMNS} FROM commits c").fetchall():
            try:
                self._checked_record(row)
            except AiraError as exc:
                problems.append(exc.diagnostic.message)
        for row in db.execute(
            f"SELECT {_HEAD_COLUMNS} FROM branches b LEFT JOIN commits c ON c.seq = b.head_seq"
        ).fetchall():
            try:
                self._checked_head(row)
            except AiraError as exc:
                problems.append(exc.diagnostic.message)
        for rev, name in db.execute("SELECT rev, name FROM derived").fetchall():
            try:
                self.derived(rev, name)
            except AiraError as exc:
                problems.append(exc.diagnostic.message)
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
