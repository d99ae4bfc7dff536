"""What the catalog remembers between runs (``$AIRA_HOME/catalog.sqlite3``): the highest
admitted version of each package, so an older one is refused (rollback protection), and the
conformance report recorded with each admitted package version."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from aira_core.config import aira_home
from aira_core.contracts.base import semver_key
from aira_core.contracts.package import ConformanceReport
from aira_core.diagnostics import AiraError

STATE_FILE = "catalog.sqlite3"
CATALOG_STATE_UNAVAILABLE = "CATALOG_STATE_UNAVAILABLE"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS admitted (
    name TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    manifest_hash TEXT NOT NULL,
    admitted_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conformance (
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    manifest_hash TEXT NOT NULL,
    report TEXT NOT NULL,
    PRIMARY KEY (name, version, manifest_hash)
);
"""


class CatalogState:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or aira_home() / STATE_FILE
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise AiraError(
                CATALOG_STATE_UNAVAILABLE,
                f"cannot open the catalog state {STATE_FILE} in AIRA_HOME: {exc}",
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

    def admitted_versions(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT name, version FROM admitted").fetchall())

    def record_admission(self, report: ConformanceReport) -> None:
        """Remember the report, and the version if it is the highest admitted so far."""
        with self._tx() as db:
            row = db.execute(
                "SELECT version FROM admitted WHERE name = ?", (report.package,)
            ).fetchone()
            if row is None or semver_key(report.version) > semver_key(row[0]):
                db.execute(
                    "INSERT OR REPLACE INTO admitted VALUES (?, ?, ?, ?)",
                    (
                        report.package,
                        report.version,
                        report.manifest_hash,
                        datetime.now(UTC).isoformat(),
                    ),
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

    def report(self, name: str, version: str, manifest_hash: str) -> ConformanceReport | None:
        row = self._db.execute(
            "SELECT report FROM conformance WHERE name = ? AND version = ? AND manifest_hash = ?",
            (name, version, manifest_hash),
        ).fetchone()
        return ConformanceReport.model_validate_json(row[0]) if row else None
