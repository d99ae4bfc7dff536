"""What the catalog remembers between runs (``$AIRA_HOME/catalog.sqlite3``): the highest
admitted version of each package of each publisher and its content hash, so an older version
or other content under an admitted version is refused (rollback protection), the
conformance report recorded with each admitted package version, and the contexts (the other
capabilities and the lint code) in which its manifest was linted clean.

Keyed by publisher and name: one trusted publisher's package can never raise the floor of,
and so lock out, another publisher's package of the same name.

The state fails closed: once a trust store (``trust.json``) lies next to it, a missing or
empty state is damage (``CATALOG_STATE_MISSING``), never a fresh start that would forget every
admitted version; only ``aira trust reset-state`` (:func:`reset_state`) starts a new one. A
fresh home (neither file) starts empty without any step, and writing the trust store creates
the state first (``trust.save_user_store``), so the two are there together from then on. The
state also remembers that a trust store was written, so a trust store that goes missing later
(and its revocations with it) is damage too (``trust.TRUST_STORE_MISSING``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from aira_core.config import aira_home
from aira_core.contracts.base import semver_key
from aira_core.contracts.package import ConformanceReport
from aira_core.databases import hold
from aira_core.diagnostics import AiraError

STATE_FILE = "catalog.sqlite3"
TRUST_FILE = "trust.json"
"""The trust store beside the state in AIRA_HOME (:mod:`aira_core.catalog.trust` reads it):
named here, below the trust module, because the state checks that it is there."""
CATALOG_STATE_UNAVAILABLE = "CATALOG_STATE_UNAVAILABLE"
CATALOG_STATE_MISSING = "CATALOG_STATE_MISSING"
RESET_COMMAND = "aira trust reset-state"
# SQLite's companions of a WAL-mode database: a stale WAL must never be replayed onto a new one.
_COMPANIONS = ("-wal", "-shm", "-journal")
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS admitted_versions (
    publisher TEXT NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    manifest_hash TEXT NOT NULL,
    admitted_at TEXT NOT NULL,
    PRIMARY KEY (publisher, name)
);
CREATE TABLE IF NOT EXISTS versions_seen (
    publisher TEXT NOT NULL,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    manifest_hash TEXT NOT NULL,
    PRIMARY KEY (publisher, name, version)
);
CREATE TABLE IF NOT EXISTS conformance (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    manifest_hash TEXT NOT NULL,
    report TEXT NOT NULL,
    PRIMARY KEY (name, version, manifest_hash)
);
CREATE TABLE IF NOT EXISTS lint_passed (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    manifest_hash TEXT NOT NULL,
    context TEXT NOT NULL,
    PRIMARY KEY (name, version, manifest_hash, context)
);
CREATE TABLE IF NOT EXISTS trust_store_digest (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    current TEXT,
    pending TEXT
);
CREATE TABLE IF NOT EXISTS trust_store_written (
    written INTEGER PRIMARY KEY CHECK (written = 1)
);
"""


def _trust_store_beside(path: Path) -> bool:
    return (path.parent / TRUST_FILE).exists()


def _missing(path: Path) -> AiraError:
    return AiraError(
        CATALOG_STATE_MISSING,
        f"the catalog state {STATE_FILE} in AIRA_HOME is missing or empty, but the trust "
        "store is there: the state holds the rollback protection (the versions admitted "
        "before), so nothing is admitted without it. Restore it, or run "
        f"`{RESET_COMMAND}` to start a new one (older versions can then be admitted again)",
    )


class CatalogState:
    def __init__(self, path: Path | None = None, *, _reset: bool = False) -> None:
        self.path = path or aira_home() / STATE_FILE
        try:
            empty = not self.path.exists() or self.path.stat().st_size == 0
            if empty and not _reset and _trust_store_beside(self.path):
                raise _missing(self.path)  # before sqlite creates the file
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            hold(self)  # closed at the process end if still open (aira_core.databases)
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and not _reset and _trust_store_beside(self.path):
                # A database aira never set up (an emptied or replaced file) is no state.
                self._db.close()
                raise _missing(self.path)
            if version > SCHEMA_VERSION:
                self._db.close()
                raise AiraError(
                    CATALOG_STATE_UNAVAILABLE,
                    f"the catalog state {STATE_FILE} in AIRA_HOME was written by a newer aira "
                    f"(schema {version})",
                )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            if version != SCHEMA_VERSION:  # only then: opening a state to read it changes nothing
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (OSError, sqlite3.Error) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            hint = f"; `{RESET_COMMAND}` starts a new one" if isinstance(exc, sqlite3.Error) else ""
            raise AiraError(
                CATALOG_STATE_UNAVAILABLE,
                f"cannot open the catalog state {STATE_FILE} in AIRA_HOME: {reason}{hint}",
            ) from None

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def admitted_versions(self) -> dict[tuple[str, str], str]:
        """The highest admitted version by ``(publisher, package name)``."""
        rows = self._db.execute("SELECT publisher, name, version FROM admitted_versions")
        return {(pub, name): version for pub, name, version in rows}

    def seen_hash(self, publisher: str, name: str, version: str) -> str | None:
        """The manifest hash admitted before under exactly this version, if any."""
        row = self._db.execute(
            "SELECT manifest_hash FROM versions_seen WHERE publisher = ? AND name = ? "
            "AND version = ?",
            (publisher, name, version),
        ).fetchone()
        return row[0] if row else None

    def record_admission(
        self, publisher: str, report: ConformanceReport, lint_context: str | None = None
    ) -> None:
        """Remember the report and the version's content, and the version if it is the
        highest admitted so far; with ``lint_context``, that lint passed in that context."""
        key = (publisher, report.package)
        if self._known(publisher, report, lint_context):
            return  # a warm start writes nothing: the state file stays byte for byte as it was
        with self._tx() as db:
            row = db.execute(
                "SELECT version FROM admitted_versions WHERE publisher = ? AND name = ?", key
            ).fetchone()
            if row is None or semver_key(report.version) > semver_key(row[0]):
                db.execute(
                    "INSERT OR REPLACE INTO admitted_versions VALUES (?, ?, ?, ?, ?)",
                    (*key, report.version, report.manifest_hash, datetime.now(UTC).isoformat()),
                )
            db.execute(
                "INSERT OR IGNORE INTO versions_seen VALUES (?, ?, ?, ?)",
                (*key, report.version, report.manifest_hash),
            )
            db.execute(
                "INSERT OR REPLACE INTO conformance VALUES (?, ?, ?, ?)",
                (
                    report.package,
                    report.version,
                    report.manifest_hash,
                    report.model_dump_json(by_alias=True),
                ),
            )
            if lint_context is not None:
                db.execute(
                    "INSERT OR IGNORE INTO lint_passed VALUES (?, ?, ?, ?)",
                    (report.package, report.version, report.manifest_hash, lint_context),
                )

    def _known(self, publisher: str, report: ConformanceReport, lint_context: str | None) -> bool:
        """Whether :meth:`record_admission` of this would change nothing."""
        version, digest = report.version, report.manifest_hash
        admitted = self.admitted_versions().get((publisher, report.package))
        stored = self._db.execute(
            "SELECT report FROM conformance WHERE name = ? AND version = ? AND manifest_hash = ?",
            (report.package, version, digest),
        ).fetchone()
        return (
            admitted is not None
            and semver_key(version) <= semver_key(admitted)
            and self.seen_hash(publisher, report.package, version) == digest
            and stored is not None
            and _same_result(stored[0], report)
            and (
                lint_context is None
                or self.lint_passed(report.package, version, digest, lint_context)
            )
        )

    def lint_passed(self, name: str, version: str, manifest_hash: str, context: str) -> bool:
        """Whether this very manifest was linted clean in this context before."""
        row = self._db.execute(
            "SELECT 1 FROM lint_passed WHERE name = ? AND version = ? AND manifest_hash = ? "
            "AND context = ?",
            (name, version, manifest_hash, context),
        ).fetchone()
        return row is not None

    def trust_store_writing(self, digest: str) -> None:
        """The trust store with ``digest`` is about to be written (a crash before
        :meth:`trust_store_wrote` leaves it acceptable, and only it)."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO trust_store_digest VALUES (1, NULL, ?) "
                "ON CONFLICT (one) DO UPDATE SET pending = excluded.pending",
                (digest,),
            )

    def trust_store_wrote(self, digest: str) -> None:
        """The trust store with ``digest`` is the one beside this state now."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO trust_store_digest VALUES (1, ?, NULL) "
                "ON CONFLICT (one) DO UPDATE SET current = excluded.current, pending = NULL",
                (digest,),
            )
            db.execute("INSERT OR IGNORE INTO trust_store_written VALUES (1)")

    def trust_store_known(self, digest: str) -> bool:
        """Whether a trust store with ``digest`` may stand beside this state: the one last
        written with it (or being written when a process died). A state that never
        recorded one (older, or new beside a hand-made store) knows nothing against it."""
        row = self._db.execute("SELECT current, pending FROM trust_store_digest").fetchone()
        if row is None or digest == row[0]:
            return True
        if digest == row[1]:
            self.trust_store_wrote(digest)  # the write a crash cut short did land
            return True
        return False

    def trust_store_written(self) -> bool:
        """Whether a trust store was ever written next to this state."""
        return self._db.execute("SELECT 1 FROM trust_store_written").fetchone() is not None

    def report(self, name: str, version: str, manifest_hash: str) -> ConformanceReport | None:
        row = self._db.execute(
            "SELECT report FROM conformance WHERE name = ? AND version = ? AND manifest_hash = ?",
            (name, version, manifest_hash),
        ).fetchone()
        return ConformanceReport.model_validate_json(row[0]) if row else None


def _same_result(stored: str, report: ConformanceReport) -> bool:
    """Whether a stored report says what ``report`` says (when it was checked aside)."""
    try:
        old = ConformanceReport.model_validate_json(stored)
    except ValueError:
        return False  # a damaged row is replaced
    return old.model_copy(update={"checked_at": report.checked_at}) == report


def reset_state(path: Path | None = None) -> int | None:
    """Replace the catalog state with a new, empty one (``aira trust reset-state``): the
    explicit way past ``CATALOG_STATE_MISSING``, ``TRUST_STORE_MISSING`` or a damaged state.
    Returns how many admitted versions the old state remembered (None when it was missing or
    unreadable)."""
    path = path or aira_home() / STATE_FILE
    forgotten: int | None = None
    if path.exists() and path.stat().st_size > 0:
        try:
            db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            try:
                forgotten = db.execute("SELECT count(*) FROM admitted_versions").fetchone()[0]
            finally:
                db.close()
        except sqlite3.Error:
            forgotten = None
    try:
        # The database first: a crash after it leaves no state, which fails closed; its
        # companions next, so no stale WAL is ever replayed onto the new database.
        path.unlink(missing_ok=True)
        for suffix in _COMPANIONS:
            path.with_name(path.name + suffix).unlink(missing_ok=True)
    except OSError as exc:
        raise AiraError(
            CATALOG_STATE_UNAVAILABLE,
            f"cannot remove the catalog state {STATE_FILE} in AIRA_HOME: {exc.strerror}",
        ) from None
    state = CatalogState(path, _reset=True)
    try:
        if _trust_store_beside(path):  # the new state guards the trust store there too
            from aira_core.canonical import sha256_bytes_hex

            state.trust_store_wrote(sha256_bytes_hex((path.parent / "trust.json").read_bytes()))
    finally:
        state.close()
    return forgotten
