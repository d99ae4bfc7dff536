"""What Aira's own SQLite files (the model store, the gateway's attempt ledger) do alike:
open, check, create and transact. One place, so a lesson learned by one file is learned by
both.

The conventions: WAL mode with ``synchronous=FULL`` and foreign keys on, so a write that
returned is on disk and a crash keeps the last one that returned; one ``BEGIN IMMEDIATE``
transaction per write. An existing file is checked read-only before anything writes to it
(``PRAGMA quick_check``, application id, schema version, schema objects and columns), so a
file that is not one of ours, or a damaged one, is left exactly as it is. A new file is built
complete in a temporary file and linked into place, so the path never holds a half-made or
empty one (an empty file at the path is therefore damage, never "not made yet").

A kind of file is a subclass: it names its application id, schema, codes and how messages
name it, and answers the hooks below where the kinds differ (their messages, the store's
migrations). Its schema and its rules stay in its own module.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar, Self

from aira_core.diagnostics import AiraError

__all__ = ["DAMAGE_ERRORS", "SqliteFile", "errorname", "sync_directory"]

DAMAGE_ERRORS = ("no such column", "no such table", "Could not decode to UTF-8")
"""The starts of SQLite messages that mean damage: the queries are fixed and the schema was
checked on open, so a column that is not there or text that is no UTF-8 is a flipped byte."""


def errorname(exc: sqlite3.Error) -> str:
    """SQLite's name of the error (``SQLITE_BUSY``…), ``""`` where it has none."""
    return getattr(exc, "sqlite_errorname", "") or ""


def sync_directory(directory: Path) -> None:
    """Make a new name in ``directory`` durable too, not only the file's content (best
    effort: a file system may refuse to sync a directory)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class SqliteFile(ABC):
    """One SQLite file of one kind; the kind's subclass sets the class variables and sets
    ``path``, ``_busy_timeout``, ``_db`` and ``_closed`` before it calls :meth:`_open`."""

    NOUN: ClassVar[str]
    """How messages name the file: ``"model store"`` → ``model store store.sqlite3: …``."""
    SHORT: ClassVar[str]
    """The short name in messages: ``"store"`` → ``the store is closed``."""
    APPLICATION_ID: ClassVar[int]
    SCHEMA_VERSION: ClassVar[int]
    SCHEMA: ClassVar[tuple[str, ...]]
    """The statements of schema version 1; :meth:`_migrate` brings it to the current one."""
    UNAVAILABLE: ClassVar[str]
    """The code of a file that cannot be used now (locked, newer, unwritable location)."""
    CORRUPT: ClassVar[str]
    """The code of a damaged file."""
    EMPTY_FILE: ClassVar[str]
    """What a 0-byte file at the path is told (after the file's name)."""
    CHECK_SAME_THREAD: ClassVar[bool] = True
    """False where the subclass serialises calls itself and threads share the connection."""
    IMMUTABLE_WHEN_IDLE: ClassVar[bool] = False
    """Read an idle file (no ``-wal``/``-shm`` beside it) as immutable for the read-only
    check: a reader would create them, and leave them if it is not the last to close."""

    path: Path
    _busy_timeout: float
    _db: sqlite3.Connection | None
    _closed: bool

    # -- what the kinds answer differently -------------------------------------------------

    @abstractmethod
    def _gone(self) -> AiraError:
        """The error for a path with no file where one is needed."""

    @abstractmethod
    def _not_intact(self, problem: object) -> AiraError:
        """The error for a file that fails ``PRAGMA quick_check`` (its first problem)."""

    @abstractmethod
    def _foreign(self, app_id: int, version: int, names: set[str]) -> AiraError:
        """The error for an SQLite database of another application id (an empty database:
        id 0, no ``names``)."""

    @abstractmethod
    def _required_objects(self, version: int) -> frozenset[str]:
        """The tables, indexes and triggers schema ``version`` has."""

    @abstractmethod
    def _columns(self, version: int) -> Mapping[str, tuple[str, ...]]:
        """The columns of each table of schema ``version``, in order."""

    @abstractmethod
    def _sqlite_error(self, exc: sqlite3.Error, doing: str) -> AiraError:
        """``exc``, raised while ``doing``, as this kind's :class:`AiraError`."""

    def _migrate(self, db: sqlite3.Connection, version: int) -> None:
        """Schema ``version`` → :attr:`SCHEMA_VERSION`, in the caller's transaction (also
        how a new file, made of schema 1, gets the current one). Without migrations: the
        version stamp only."""
        db.execute(f"PRAGMA user_version = {self.SCHEMA_VERSION}")

    # Optional hooks, nothing by default (the model store's crash test points).
    def _before_commit(self) -> None:  # noqa: B027
        """Called in every write just before its COMMIT."""

    def _after_commit(self) -> None:  # noqa: B027
        """Called after every write's COMMIT."""

    # -- opening ---------------------------------------------------------------------------

    def _error(self, code: str, what: str) -> AiraError:
        # The file name only: the directory may be private (home, AIRA_HOME).
        return AiraError(code, f"{self.NOUN} {self.path.name}: {what}", subject=self.path.name)

    def _damaged(self, what: object, why: str) -> AiraError:
        return self._error(self.CORRUPT, f"{what} is damaged: {why}")

    def _exists(self) -> bool:
        return self.path.exists() or self.path.is_symlink()

    def _open(self, create: bool) -> sqlite3.Connection:
        """The connection to a checked file; with ``create``, a missing file is made first."""
        if self.path.is_dir():
            raise self._error(self.UNAVAILABLE, f"is a directory, not a {self.SHORT} file")
        if not self._exists():
            if not create:
                raise self._gone()
            self._create_file()
        # True: a valid file of this schema; None: not checked yet (a crashed writer's WAL
        # to recover first, or an older schema to migrate): checked again under the lock.
        checked = self._check_read_only()
        uri = self.path.resolve().as_uri() + "?mode=rw"  # SQLite itself never creates it
        try:
            db = sqlite3.connect(
                uri,
                uri=True,
                isolation_level=None,
                timeout=self._busy_timeout,
                check_same_thread=self.CHECK_SAME_THREAD,
            )
        except sqlite3.OperationalError:
            if not self._exists():  # removed since the check above
                raise self._gone() from None
            raise
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            if not checked:
                self._prepare(db)
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise self._error(self.UNAVAILABLE, f"cannot switch to WAL mode (got {mode})")
        except BaseException:
            db.close()
            raise
        return db

    def _create_file(self) -> None:
        """Create a complete empty file at the path, atomically: built in a temporary file
        and linked into place, so the path never holds a half-made or empty file. If another
        process created one meanwhile, theirs is kept. An SQLite error escapes as it is."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(
                self.UNAVAILABLE, f"cannot create its directory: {exc.strerror}"
            ) from None
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{os.urandom(4).hex()}.new")
        try:
            db = sqlite3.connect(tmp, isolation_level=None)
            try:
                db.execute("PRAGMA synchronous=FULL")
                db.execute("BEGIN IMMEDIATE")
                for statement in self.SCHEMA:
                    db.execute(statement)
                db.execute(f"PRAGMA application_id = {self.APPLICATION_ID}")
                self._migrate(db, 1)
                db.execute("COMMIT")
            finally:
                db.close()
            with tmp.open("rb+") as f:
                os.fsync(f.fileno())
            try:
                os.link(tmp, self.path)  # fails if the path exists: never replaces a file
            except FileExistsError:
                pass
            except OSError:  # a file system without hard links
                if not self._exists():
                    os.replace(tmp, self.path)
        except OSError as exc:
            raise self._error(self.UNAVAILABLE, f"cannot be created: {exc.strerror}") from None
        finally:
            for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
                with contextlib.suppress(OSError):
                    leftover.unlink()

    def _check_read_only(self) -> bool | None:
        """Validate an existing file without writing to it: True if it is a file of this
        schema, None if the check needs a writer (a crashed writer's WAL to recover, an
        older schema to migrate); raise if it is not a valid file."""
        if self._is_empty_file():
            raise self._error(self.CORRUPT, self.EMPTY_FILE)
        mode = "?mode=ro"
        if self.IMMUTABLE_WHEN_IDLE and not any(
            self.path.with_name(self.path.name + x).exists() for x in ("-wal", "-shm")
        ):
            mode += "&immutable=1"
        try:
            ro = sqlite3.connect(
                self.path.resolve().as_uri() + mode, uri=True, timeout=self._busy_timeout
            )
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc, "open") from None
        try:
            return True if self._inspect(ro) == self.SCHEMA_VERSION else None
        except sqlite3.Error as exc:
            if errorname(exc).startswith("SQLITE_READONLY"):
                return None
            raise self._sqlite_error(exc, "open") from None
        finally:
            ro.close()

    def _inspect(self, db: sqlite3.Connection) -> int:
        """Raise unless ``db`` is a valid file of this kind; its schema version (at most
        this code's)."""
        problems = [row[0] for row in db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise self._not_intact(problems[0])
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if app_id != self.APPLICATION_ID:
            raise self._foreign(app_id, version, names)
        if version > self.SCHEMA_VERSION:
            raise self._error(
                self.UNAVAILABLE,
                f"has schema version {version}, newer than the {self.SCHEMA_VERSION} this "
                "version of Aira reads; upgrade Aira to open it",
            )
        if version < 1:
            raise self._error(self.CORRUPT, f"has an invalid schema version {version}")
        missing = self._required_objects(version) - names
        if missing:
            raise self._error(self.CORRUPT, f"lacks {', '.join(sorted(missing))}")
        for table, columns in self._columns(version).items():  # a damaged column name
            found = tuple(row[1] for row in db.execute(f"PRAGMA table_info({table})"))
            if found != columns:
                raise self._error(self.CORRUPT, f"has a damaged schema (table {table})")
        return int(version)

    def _is_empty_file(self) -> bool:
        # A 0-byte file with no WAL content. The path never holds one that Aira made (a new
        # file is linked into place complete), so it is damage.
        try:
            if self.path.stat().st_size != 0:
                return False
            wal = self.path.with_name(self.path.name + "-wal")
            return not wal.exists() or wal.stat().st_size == 0
        except FileNotFoundError:
            return False

    def _prepare(self, db: sqlite3.Connection) -> None:
        """Check the file under the write lock (another process may have migrated it
        meanwhile, and an unchecked file gets SQLite's own crash recovery here first) and
        migrate an older schema, in one transaction: a crash leaves the old schema."""
        db.execute("BEGIN IMMEDIATE")
        try:
            version = self._inspect(db)
            if version < self.SCHEMA_VERSION:
                self._migrate(db, version)
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise self._error(self.UNAVAILABLE, f"the {self.SHORT} is closed")
        return self._db

    def _rollback(self) -> None:
        db = self._db
        if db is not None and db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the original error is worth reporting
                db.execute("ROLLBACK")

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write: BEGIN IMMEDIATE … COMMIT (synced: synchronous=FULL), or nothing."""
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
            self._before_commit()
            db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise
        self._after_commit()

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: several queries see the same state of the file."""
        db = self._connection()
        db.execute("BEGIN")
        try:
            yield db
        finally:
            self._rollback()
