"""The revision store: content-addressed revisions, an append-only history, compare-and-swap
heads, revert and publish; damaged files refused untouched; crashes and concurrent writers
leave a consistent store."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from store_crash_child import doc as loop_doc

from aira_core.canonical import MAX_DEPTH, Canonical, canonical_bytes, sha256_id
from aira_core.diagnostics import AiraError
from aira_core.model import store as store_module
from aira_core.model.store import (
    APPLICATION_ID,
    CRASH_ENV,
    CRASH_POINTS,
    SCHEMA_VERSION,
    CommitRecord,
    ModelStore,
    Revision,
    StaleRevision,
    default_store_path,
)

CHILD = Path(__file__).with_name("store_crash_child.py")

A = {"format": "test/1", "name": "a", "parameters": [{"id": "w", "value": 10}]}
B = {"format": "test/1", "name": "b", "parameters": [{"id": "w", "value": 20}]}
C = {"format": "test/1", "name": "c", "parameters": [{"id": "w", "value": 30}]}
D = {"format": "test/1", "name": "d", "parameters": [{"id": "w", "value": 40}]}
UNKNOWN = sha256_id("rev", {"never": "stored"})


def rev(document: dict[str, Any]) -> str:
    return sha256_id("rev", document)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite3"


@pytest.fixture
def store(path: Path) -> Iterator[ModelStore]:
    with ModelStore(path, create=True) as s:
        yield s


@pytest.fixture
def initialised(store: ModelStore) -> ModelStore:
    """main: A -> B."""
    store.init(A)
    store.commit("main", rev(A), B, "b")
    return store


def snapshot(store: ModelStore) -> tuple[dict[str, str], dict[str, list[CommitRecord]]]:
    """Everything a refused operation must leave as it was."""
    heads = store.branches()
    return heads, {name: store.log(name, limit=None) for name in heads}


def raises(code: str, fn: Callable[[], object]) -> AiraError:
    with pytest.raises(AiraError) as info:
        fn()
    assert info.value.code == code, str(info.value)
    return info.value


def _files(path: Path) -> dict[str, bytes]:
    """The store file and its WAL, byte for byte."""
    wal = path.with_name(path.name + "-wal")
    return {p.name: p.read_bytes() for p in (path, wal) if p.exists()}


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


# -- opening, schema, pragmas -------------------------------------------------------------


def test_default_path_is_under_aira_home(aira_home: Path) -> None:
    assert default_store_path() == aira_home / "models" / "store.sqlite3"
    with ModelStore() as store:
        store.init(A)
    assert (aira_home / "models" / "store.sqlite3").is_file()


def test_new_store_has_wal_schema_version_and_application_id(store: ModelStore, path: Path) -> None:
    store.init(A)
    db = raw(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    db.close()
    # synchronous is per connection: the store's own must be FULL (2).
    assert store._conn().execute("PRAGMA synchronous").fetchone()[0] == 2


def test_reopening_keeps_everything(path: Path) -> None:
    with ModelStore(path) as s:
        s.init(A)
        s.commit("main", rev(A), B)
        before = snapshot(s)
    with ModelStore(path) as s:
        assert snapshot(s) == before
        assert s.read(s.head()) == B


@pytest.mark.parametrize("create", [False, True], ids=["open", "create"])
def test_an_empty_file_is_damage_not_a_new_store(path: Path, create: bool) -> None:
    # Aira never leaves a 0-byte store behind (a new store is linked into place complete):
    # an empty file is a store that lost its content, and must not be taken for "no store".
    path.write_bytes(b"")
    error = raises("STORE_CORRUPT", lambda: ModelStore(path, create=create))
    assert "empty file" in str(error)
    with ModelStore(path.with_name("other.sqlite3")) as s:
        s.init(A)  # creating elsewhere still works
    error = raises("STORE_CORRUPT", lambda: ModelStore(path).init(A))
    assert path.read_bytes() == b""
    assert not any(p.name.startswith(".store") for p in path.parent.iterdir())


def test_a_new_store_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "store.sqlite3"
    with ModelStore(path) as s:
        s.init(A)
    assert {p.name for p in path.parent.iterdir()} <= {
        "store.sqlite3",
        "store.sqlite3-wal",
        "store.sqlite3-shm",
    }


@pytest.mark.parametrize(
    "read",
    [
        lambda s: s.head(),
        lambda s: s.read(rev(A)),
        lambda s: s.log(),
        lambda s: s.branches(),
        lambda s: s.derived(rev(A), "x"),
        lambda s: s.keep_derived(rev(A), {"x": 1}),
        lambda s: s.commit("main", rev(A), B),
        lambda s: s.branch("task/t", rev(A)),
        lambda s: s.revert("main", rev(B), rev(A)),
        lambda s: s.publish("task/t", rev(A)),
        lambda s: s.check(),
    ],
)
def test_opening_a_missing_store_creates_nothing(tmp_path: Path, read: Any) -> None:
    """Only init creates a store: every other call on a path with no store is
    STORE_UNAVAILABLE and leaves no file (nor directory) behind."""
    path = tmp_path / "typo" / "store.sqlite3"
    with ModelStore(path) as s:
        error = raises("STORE_UNAVAILABLE", lambda: read(s))
        assert "no store at store.sqlite3" in str(error) and "aira model init" in str(error)
        assert str(tmp_path) not in str(error)
    assert not path.parent.exists()


def test_init_creates_a_missing_store_and_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "new" / "store.sqlite3"
    with ModelStore(path) as s:
        raises("STORE_UNAVAILABLE", s.branches)
        s.init(A)
        assert s.head() == rev(A)
    with ModelStore(path) as s:  # and an existing store opens as before
        assert s.head() == rev(A)


def test_a_store_created_meanwhile_is_found(path: Path) -> None:
    with ModelStore(path) as reader:
        raises("STORE_UNAVAILABLE", reader.branches)
        with ModelStore(path) as writer:
            writer.init(A)
        assert reader.head() == rev(A)


def test_create_makes_an_empty_store_at_once(tmp_path: Path) -> None:
    path = tmp_path / "made" / "store.sqlite3"
    ModelStore(path, create=True).close()
    assert path.is_file()
    with ModelStore(path) as s:
        assert s.branches() == {}


def _make_store(path: Path, commits: int = 30) -> None:
    # Large enough documents to span many pages, so truncations hit real data.
    with ModelStore(path) as s:
        head = s.init({"n": 0, "pad": "x" * 3000}).rev
        for n in range(1, commits):
            head = s.commit("main", head, {"n": n, "pad": str(n) * 3000}).rev


def _truncate(size: int | float) -> Callable[[Path], None]:
    def damage(p: Path) -> None:
        total = p.stat().st_size
        os.truncate(p, int(size * total) if isinstance(size, float) else size)

    return damage


def _overwrite(offset: int, data: bytes) -> Callable[[Path], None]:
    def damage(p: Path) -> None:
        with p.open("r+b") as f:
            f.seek(offset)
            f.write(data)

    return damage


def _raw_sql(*statements: str) -> Callable[[Path], None]:
    def damage(p: Path) -> None:
        db = raw(p)
        for statement in statements:
            db.execute(statement)
        db.close()

    return damage


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated to 1 byte": (_truncate(1), "STORE_CORRUPT"),
    "truncated to 50 bytes": (_truncate(50), "STORE_CORRUPT"),
    "truncated to the header": (_truncate(100), "STORE_CORRUPT"),
    "truncated to one page": (_truncate(4096), "STORE_CORRUPT"),
    "truncated to half": (_truncate(0.5), "STORE_CORRUPT"),
    "truncated by a page": (lambda p: os.truncate(p, p.stat().st_size - 4096), "STORE_CORRUPT"),
    "header overwritten": (_overwrite(0, b"\x00" * 100), "STORE_CORRUPT"),
    "page headers overwritten": (_overwrite(4096, b"\xff" * 64), "STORE_CORRUPT"),
    "unknown schema version": (_raw_sql("PRAGMA user_version = 99"), "STORE_UNAVAILABLE"),
    "schema version zero": (_raw_sql("PRAGMA user_version = 0"), "STORE_CORRUPT"),
    "foreign application id": (_raw_sql("PRAGMA application_id = 7"), "STORE_CORRUPT"),
    "table missing": (_raw_sql("DROP TABLE branches"), "STORE_CORRUPT"),
    # one flipped bit of the schema text: a column that the queries name is gone
    "column name damaged": (
        _raw_sql(
            "PRAGMA writable_schema = ON",
            "UPDATE sqlite_master SET sql = replace(sql, 'created_at', 'created_a4') "
            "WHERE name = 'commits'",
        ),
        "STORE_CORRUPT",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_damaged_store_is_refused_and_left_untouched(path: Path, damage: str) -> None:
    _make_store(path)
    apply, code = DAMAGES[damage]
    apply(path)
    before = path.read_bytes()
    error = raises(code, lambda: ModelStore(path))
    assert path.read_bytes() == before
    assert path.name in str(error)
    assert str(path.parent) not in str(error)
    assert error.__suppress_context__ or error.__context__ is None  # no sqlite traceback
    # A second attempt fails the same way: nothing was "repaired" in between.
    raises(code, lambda: ModelStore(path))
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "content",
    [os.urandom(4096), os.urandom(10), b"SQLite format 3\x00" + os.urandom(200), b"{}\n"],
    ids=["random page", "random bytes", "fake header", "json"],
)
def test_not_a_database_is_refused_and_left_untouched(path: Path, content: bytes) -> None:
    path.write_bytes(content)
    error = raises("STORE_CORRUPT", lambda: ModelStore(path))
    assert path.read_bytes() == content
    assert path.name in str(error) and str(path.parent) not in str(error)


def test_foreign_sqlite_database_is_refused_and_left_untouched(path: Path) -> None:
    db = raw(path)
    db.execute("CREATE TABLE notes (x)")
    db.execute("INSERT INTO notes VALUES (1)")
    db.close()
    before = path.read_bytes()
    error = raises("STORE_CORRUPT", lambda: ModelStore(path))
    assert "not a model store" in str(error)
    assert path.read_bytes() == before
    db = raw(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not switched to WAL
    db.close()


def test_directory_is_unavailable(tmp_path: Path) -> None:
    target = tmp_path / "private" / "store.sqlite3"
    target.mkdir(parents=True)
    error = raises("STORE_UNAVAILABLE", lambda: ModelStore(target))
    assert "store.sqlite3" in str(error) and str(tmp_path) not in str(error)


def test_unknown_schema_version_says_upgrade(path: Path) -> None:
    _make_store(path, commits=2)
    _raw_sql("PRAGMA user_version = 99")(path)
    error = raises("STORE_UNAVAILABLE", lambda: ModelStore(path))
    assert "99" in str(error) and "upgrade" in str(error)


class _NeedsWriter:
    """A read-only connection whose reads need a writer (as when a crashed writer's WAL must
    be recovered and the shared-memory file is not writable)."""

    def execute(self, *args: object) -> None:
        exc = sqlite3.OperationalError("attempt to write a readonly database")
        exc.sqlite_errorname = "SQLITE_READONLY_RECOVERY"  # type: ignore[attr-defined]
        raise exc

    def close(self) -> None:
        pass


@pytest.fixture
def needs_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    real = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        # Only the read-only check is refused: the writer may open by URI too (mode=rw).
        if kwargs.get("uri") and str(database).endswith("mode=ro"):
            return _NeedsWriter()
        return real(database, *args, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)


@pytest.mark.usefixtures("needs_writer")
def test_open_checks_through_the_writer_when_read_only_cannot(path: Path) -> None:
    _make_store(path, commits=3)
    with ModelStore(path) as s:
        assert s.read(s.head())["n"] == 2


@pytest.mark.usefixtures("needs_writer")
@pytest.mark.parametrize("damage", ["truncated to half", "unknown schema version", "table missing"])
def test_writer_check_refuses_damage_untouched_too(path: Path, damage: str) -> None:
    _make_store(path)
    apply, code = DAMAGES[damage]
    apply(path)
    before = path.read_bytes()
    raises(code, lambda: ModelStore(path))
    assert path.read_bytes() == before


@pytest.mark.usefixtures("needs_writer")
def test_writer_check_refuses_a_foreign_database_untouched(path: Path) -> None:
    path.write_bytes(os.urandom(4096))
    before = path.read_bytes()
    raises("STORE_CORRUPT", lambda: ModelStore(path))
    assert path.read_bytes() == before


def test_damaged_document_is_corrupt_on_read(path: Path) -> None:
    with ModelStore(path) as s:
        s.init({"marker": "ABCDEFGHIJ" * 20})
    db = sqlite3.connect(path)
    (stored,) = db.execute("SELECT body FROM documents").fetchone()
    db.close()
    stored = bytes(stored)
    assert b"ABCDEFGHIJ" not in stored  # kept compressed
    data = path.read_bytes()
    assert data.count(stored) == 1
    damaged = stored[:12] + bytes([stored[12] ^ 0x01]) + stored[13:]
    path.write_bytes(data.replace(stored, damaged))
    with ModelStore(path) as s:  # structurally fine: only the content address can tell
        head = s.head()
        error = raises("STORE_CORRUPT", lambda: s.read(head))
        assert f"the stored document of {head} cannot be decompressed" in str(error)
        assert any(p.startswith(f"document {head}") for p in s.check())


def test_stored_bytes_that_are_no_json_are_corrupt_on_read(path: Path) -> None:
    # Bytes passed in as Canonical are trusted to be canonical JSON; if they were not, they
    # hash right but cannot be decoded: a clean STORE_CORRUPT, not a JSONDecodeError.
    with ModelStore(path) as s:
        head = s.init(A).rev
        rev = s.commit("main", head, Canonical(b"{not json")).rev
        error = raises("STORE_CORRUPT", lambda: s.read(rev))
        assert "not readable JSON" in str(error)


def test_a_damaged_history_record_is_corrupt_on_read(path: Path) -> None:
    with ModelStore(path) as s:
        head = s.init(A).rev
        s.commit("main", head, B, "b", {"planId": "p1"})
    db = raw(path)  # damage as a disk or a foreign writer would: past the append-only trigger
    (trigger,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'commits_no_update'")
    db.execute("DROP TRIGGER commits_no_update")
    db.execute("UPDATE commits SET meta = '{broken' WHERE meta IS NOT NULL")
    db.execute(trigger[0])
    db.close()
    with ModelStore(path) as s:
        error = raises("STORE_CORRUPT", lambda: s.log("main"))
        assert "history record 2 is damaged: it does not match its digest" in str(error)
        assert any("history record 2 is damaged" in p for p in s.check())


def test_a_document_nested_too_deep_is_refused_and_nothing_is_written(path: Path) -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(MAX_DEPTH + 1):
        inner["a"] = {}
        inner = inner["a"]
    with ModelStore(path) as s:
        head = s.init(A).rev
        raises("STORE_DOCUMENT_INVALID", lambda: s.commit("main", head, deep))
        assert s.head() == head
        assert [r.rev for r in s.log("main")] == [head]


def test_busy_store_is_unavailable_not_a_hang(path: Path) -> None:
    with ModelStore(path, busy_timeout=0.1) as s:
        s.init(A)
        other = raw(path)
        other.execute("BEGIN IMMEDIATE")
        try:
            error = raises("STORE_UNAVAILABLE", lambda: s.commit("main", rev(A), B))
            assert "locked" in str(error)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert s.head() == rev(A)
        s.commit("main", rev(A), B)  # the failed write left no transaction open


def test_closed_store_is_unavailable(path: Path) -> None:
    s = ModelStore(path)
    s.init(A)
    s.close()
    s.close()  # idempotent
    raises("STORE_UNAVAILABLE", s.head)
    raises("STORE_UNAVAILABLE", lambda: s.commit("main", rev(A), B))


# -- content addressing --------------------------------------------------------------------


def test_rev_is_the_content_address(store: ModelStore) -> None:
    result = store.init(A)
    assert result == Revision(rev=rev(A), branch="main", seq=result.seq, parent=None, kind="init")
    assert result.rev.startswith("rev:sha256:")
    reordered = dict(reversed(list(B.items())))
    assert list(reordered) != list(B) and rev(reordered) == rev(B)
    assert store.commit("main", rev(A), reordered).rev == rev(B)


def test_canonical_bytes_and_models_are_accepted_as_documents(store: ModelStore) -> None:
    store.init(canonical_bytes(A))
    assert store.head() == rev(A) and store.read(rev(A)) == A

    class Model(pydantic.BaseModel):
        format: str
        name: str
        parameters: list[dict[str, Any]]

    assert store.commit("main", rev(A), Model(**B)).rev == rev(B)


@pytest.mark.parametrize(
    "document",
    [[A], "text", 3, None, b"{}", canonical_bytes([1]), {"x": float("inf")}, {1: "a"}],
    ids=["list", "str", "int", "None", "raw bytes", "canonical list", "infinity", "int key"],
)
def test_documents_must_be_json_objects(store: ModelStore, document: Any) -> None:
    raises("STORE_DOCUMENT_INVALID", lambda: store.init(document))
    assert store.branches() == {}


def test_read_round_trips_and_returns_a_fresh_dict(initialised: ModelStore) -> None:
    document = initialised.read(rev(B))
    assert document == B
    assert sha256_id("rev", document) == rev(B)
    document["name"] = "changed"
    assert initialised.read(rev(B)) == B


def test_numbers_and_unicode_round_trip_to_the_same_rev(store: ModelStore) -> None:
    document = {"f": 1.5, "big": 2**53, "tiny": 1e-7, "neg": -0.0, "text": "é 中 \u2028", "n": None}
    result = store.init(document)
    assert result.rev == sha256_id("rev", store.read(result.rev))


def test_a_document_is_stored_once(initialised: ModelStore, path: Path) -> None:
    initialised.revert("main", rev(B), rev(A))
    initialised.commit("main", rev(A), B)
    db = raw(path)
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM commits").fetchone()[0] == 4
    db.close()


# -- init, head, read, log, branches -------------------------------------------------------


def test_empty_store(store: ModelStore) -> None:
    assert store.branches() == {}
    raises("STORE_BRANCH_UNKNOWN", store.head)
    raises("STORE_BRANCH_UNKNOWN", store.log)
    raises("STORE_REVISION_UNKNOWN", lambda: store.read(rev(A)))


def test_init_creates_main(store: ModelStore) -> None:
    store.init(A, message="first")
    assert store.head() == store.head("main") == rev(A)
    assert store.branches() == {"main": rev(A)}
    (record,) = store.log()
    assert (record.kind, record.branch, record.rev, record.parent) == ("init", "main", rev(A), None)
    assert (record.message, record.meta, record.base_seq) == ("first", None, None)
    assert record.created_at.endswith("Z")


def test_init_twice_is_refused(initialised: ModelStore) -> None:
    before = snapshot(initialised)
    raises("STORE_ALREADY_INITIALISED", lambda: initialised.init(C))
    assert snapshot(initialised) == before


def test_log_is_newest_first_with_limit(initialised: ModelStore) -> None:
    initialised.commit("main", rev(B), C, "c", meta={"plan": "p1", "steps": [1, 2]})
    log = initialised.log()
    assert [r.rev for r in log] == [rev(C), rev(B), rev(A)]
    assert [r.kind for r in log] == ["commit", "commit", "init"]
    assert [r.parent for r in log] == [rev(B), rev(A), None]
    assert log[0].meta == {"plan": "p1", "steps": [1, 2]}
    assert log[0].message == "c"
    assert [r.seq for r in log] == sorted((r.seq for r in log), reverse=True)
    assert initialised.log(limit=2) == log[:2]
    assert initialised.log(limit=None) == log
    assert initialised.log(limit=1) == log[:1]
    assert initialised.log(limit=2**62) == log


@pytest.mark.parametrize("limit", [0, -1, "5", 1.5, True, 2**62 + 1, 99999999999999999999])
def test_log_limit_must_be_positive(initialised: ModelStore, limit: Any) -> None:
    raises("STORE_ARGUMENT_INVALID", lambda: initialised.log(limit=limit))


# -- commit --------------------------------------------------------------------------------


def test_commit_moves_the_head(initialised: ModelStore) -> None:
    result = initialised.commit("main", rev(B), C, "c")
    assert (result.rev, result.parent, result.kind, result.branch) == (
        rev(C),
        rev(B),
        "commit",
        "main",
    )
    assert initialised.head() == rev(C)
    assert initialised.read(initialised.head()) == C
    assert initialised.log()[0].seq == result.seq


def test_commit_on_a_stale_head_names_the_current_head(initialised: ModelStore) -> None:
    before = snapshot(initialised)
    with pytest.raises(StaleRevision) as info:
        initialised.commit("main", rev(A), C)
    error = info.value
    assert error.code == "STEP_STALE_REVISION"
    assert error.head == error.head_rev == rev(B)
    assert error.expected == rev(A) and error.branch == "main"
    assert rev(B) in str(error)
    assert snapshot(initialised) == before


def test_committing_the_head_document_is_refused(initialised: ModelStore) -> None:
    # Chosen behaviour: a write that changes nothing is refused, so history records changes.
    before = snapshot(initialised)
    raises("STORE_NO_CHANGE", lambda: initialised.commit("main", rev(B), dict(B)))
    assert snapshot(initialised) == before


def test_commit_may_return_to_an_earlier_document(initialised: ModelStore) -> None:
    result = initialised.commit("main", rev(B), A)
    assert result.rev == rev(A) and result.parent == rev(B)
    assert [r.rev for r in initialised.log()] == [rev(A), rev(B), rev(A)]


# -- refused operations leave the store unchanged, each with its code --------------------

REFUSALS: dict[str, tuple[str, Callable[[ModelStore], object]]] = {
    "init again": ("STORE_ALREADY_INITIALISED", lambda s: s.init(C)),
    "commit stale": ("STEP_STALE_REVISION", lambda s: s.commit("main", rev(A), C)),
    "commit unknown head": ("STEP_STALE_REVISION", lambda s: s.commit("main", "rev:x", C)),
    "commit no change": ("STORE_NO_CHANGE", lambda s: s.commit("main", rev(B), B)),
    "commit unknown branch": ("STORE_BRANCH_UNKNOWN", lambda s: s.commit("task/x", rev(B), C)),
    "commit invalid branch": ("STORE_BRANCH_INVALID", lambda s: s.commit("dev", rev(B), C)),
    "commit list": ("STORE_DOCUMENT_INVALID", lambda s: s.commit("main", rev(B), [1])),  # type: ignore[arg-type]
    "commit NaN": (
        "STORE_DOCUMENT_INVALID",
        lambda s: s.commit("main", rev(B), {"x": float("nan")}),
    ),
    "commit set": ("STORE_DOCUMENT_INVALID", lambda s: s.commit("main", rev(B), {"x": {1}})),
    "commit bad meta": ("STORE_ARGUMENT_INVALID", lambda s: s.commit("main", rev(B), C, meta=[])),  # type: ignore[arg-type]
    "commit bad message": ("STORE_ARGUMENT_INVALID", lambda s: s.commit("main", rev(B), C, 3)),  # type: ignore[arg-type]
    "branch exists": ("STORE_BRANCH_EXISTS", lambda s: s.branch("task/t", rev(A))),
    "branch main": ("STORE_BRANCH_EXISTS", lambda s: s.branch("main", rev(A))),
    "branch invalid": ("STORE_BRANCH_INVALID", lambda s: s.branch("feature/x", rev(A))),
    "branch unknown rev": ("STORE_REVISION_UNKNOWN", lambda s: s.branch("task/u", UNKNOWN)),
    "revert stale": ("STEP_STALE_REVISION", lambda s: s.revert("main", rev(A), rev(A))),
    "revert unknown rev": ("STORE_REVISION_UNKNOWN", lambda s: s.revert("main", rev(B), UNKNOWN)),
    "revert not in branch": (
        "STORE_REVISION_NOT_IN_BRANCH",
        lambda s: s.revert("main", rev(B), rev(C)),
    ),
    "revert to head": ("STORE_NO_CHANGE", lambda s: s.revert("main", rev(B), rev(B))),
    "publish stale": ("STEP_STALE_REVISION", lambda s: s.publish("task/t", rev(A))),
    "publish main": ("STORE_BRANCH_INVALID", lambda s: s.publish("main", rev(B))),
    "publish unknown": ("STORE_BRANCH_UNKNOWN", lambda s: s.publish("task/nope", rev(B))),
    "publish not fast-forward": (
        "STORE_PUBLISH_NOT_FAST_FORWARD",
        lambda s: s.publish("task/old", rev(B)),
    ),
    "publish no change": ("STORE_NO_CHANGE", lambda s: s.publish("task/same", rev(B))),
    "read unknown": ("STORE_REVISION_UNKNOWN", lambda s: s.read(UNKNOWN)),
    "head unknown": ("STORE_BRANCH_UNKNOWN", lambda s: s.head("task/nope")),
    "head invalid": ("STORE_BRANCH_INVALID", lambda s: s.head("Main")),
    "log unknown": ("STORE_BRANCH_UNKNOWN", lambda s: s.log("task/nope")),
}


@pytest.fixture
def busy(initialised: ModelStore) -> ModelStore:
    """main: A -> B; task/t: B -> C; task/old branched from A with D; task/same at B."""
    initialised.branch("task/t", rev(B))
    initialised.commit("task/t", rev(B), C)
    initialised.branch("task/old", rev(A))
    initialised.commit("task/old", rev(A), D)
    initialised.branch("task/same", rev(B))
    return initialised


@pytest.mark.parametrize("refusal", list(REFUSALS), ids=list(REFUSALS))
def test_refused_operation_changes_nothing(busy: ModelStore, path: Path, refusal: str) -> None:
    code, operation = REFUSALS[refusal]
    before = snapshot(busy)
    files = _files(path)
    raises(code, lambda: operation(busy))
    assert snapshot(busy) == before
    assert _files(path) == files
    assert busy.check() == []


def test_every_error_code_is_covered() -> None:
    codes = {code for code, _ in REFUSALS.values()}
    assert codes >= {
        "STORE_ALREADY_INITIALISED",
        "STORE_BRANCH_INVALID",
        "STORE_BRANCH_UNKNOWN",
        "STORE_BRANCH_EXISTS",
        "STORE_REVISION_UNKNOWN",
        "STORE_REVISION_NOT_IN_BRANCH",
        "STORE_PUBLISH_NOT_FAST_FORWARD",
        "STORE_NO_CHANGE",
        "STORE_DOCUMENT_INVALID",
        "STORE_ARGUMENT_INVALID",
        "STEP_STALE_REVISION",
    }


# -- branches ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "dev",
        "Main",
        "main/x",
        "task/",
        "task/a b",
        "task/a/b",
        "task/" + "x" * 65,
        "task/é",
        "",
        None,
        3,
    ],
)
def test_invalid_branch_names(initialised: ModelStore, name: Any) -> None:
    raises("STORE_BRANCH_INVALID", lambda: initialised.branch(name, rev(A)))
    raises("STORE_BRANCH_INVALID", lambda: initialised.head(name))
    raises("STORE_BRANCH_INVALID", lambda: initialised.commit(name, rev(B), C))
    raises("STORE_BRANCH_INVALID", lambda: initialised.log(name))


@pytest.mark.parametrize("name", ["task/1", "task/fix-hole_2.b", "task/" + "x" * 64, "task/.."])
def test_valid_task_branch_names(initialised: ModelStore, name: str) -> None:
    assert initialised.branch(name, rev(B)) == rev(B)
    assert initialised.head(name) == rev(B)


def test_branch_starts_with_the_history_it_was_branched_from(initialised: ModelStore) -> None:
    main_log = initialised.log()
    initialised.branch("task/t", rev(B))
    assert initialised.branches() == {"main": rev(B), "task/t": rev(B)}
    assert initialised.log("task/t") == main_log
    result = initialised.commit("task/t", rev(B), C)
    assert (result.branch, result.parent) == ("task/t", rev(B))
    assert initialised.head("main") == rev(B)  # branches are independent
    assert [r.branch for r in initialised.log("task/t")] == ["task/t", "main", "main"]
    assert initialised.log() == main_log


def test_branch_from_an_older_revision(initialised: ModelStore) -> None:
    initialised.branch("task/old", rev(A))
    assert initialised.head("task/old") == rev(A)
    assert [r.rev for r in initialised.log("task/old")] == [rev(A)]


# -- revert --------------------------------------------------------------------------------


def test_revert_is_a_new_record_with_the_old_documents_rev(initialised: ModelStore) -> None:
    initialised.commit("main", rev(B), C)
    before = initialised.log(limit=None)
    result = initialised.revert("main", rev(C), rev(A), "back to a", meta={"why": "test"})
    assert (result.rev, result.parent, result.kind) == (rev(A), rev(C), "revert")
    assert initialised.head() == rev(A)
    assert initialised.read(initialised.head()) == A
    after = initialised.log(limit=None)
    assert after[1:] == before  # nothing removed
    assert (after[0].kind, after[0].message, after[0].meta) == (
        "revert",
        "back to a",
        {"why": "test"},
    )
    # The reverted revisions stay readable and revertable-to.
    assert initialised.read(rev(C)) == C
    initialised.revert("main", rev(A), rev(C))
    assert initialised.head() == rev(C)


def test_revert_on_a_task_branch_reaches_history_before_the_fork(initialised: ModelStore) -> None:
    initialised.branch("task/t", rev(B))
    initialised.commit("task/t", rev(B), C)
    initialised.revert("task/t", rev(C), rev(A))
    assert initialised.head("task/t") == rev(A)
    assert initialised.head("main") == rev(B)


def test_revert_to_a_revision_of_another_branch_is_refused(initialised: ModelStore) -> None:
    initialised.branch("task/t", rev(B))
    initialised.commit("task/t", rev(B), C)
    before = snapshot(initialised)
    raises("STORE_REVISION_NOT_IN_BRANCH", lambda: initialised.revert("main", rev(B), rev(C)))
    assert snapshot(initialised) == before


# -- publish -------------------------------------------------------------------------------


def test_publish_fast_forwards_main(initialised: ModelStore) -> None:
    main_before = initialised.log(limit=None)
    initialised.branch("task/t", rev(B))
    initialised.commit("task/t", rev(B), C, "c")
    initialised.commit("task/t", rev(C), D, "d")
    task_log = initialised.log("task/t", limit=None)
    result = initialised.publish("task/t", rev(B), "ship it")
    assert (result.rev, result.parent, result.kind, result.branch) == (
        rev(D),
        rev(B),
        "publish",
        "main",
    )
    assert initialised.branches() == {"main": rev(D), "task/t": rev(D)}
    main_after = initialised.log(limit=None)
    assert main_after[0].kind == "publish" and main_after[0].message == "ship it"
    assert main_after[0].base_seq == task_log[0].seq
    assert main_after[1:] == task_log  # main takes over the task's history...
    assert main_after[-len(main_before) :] == main_before  # ...which ends with main's
    assert initialised.log("task/t", limit=None) == task_log  # the task branch is untouched


def test_publish_after_main_moved_is_not_fast_forward(initialised: ModelStore) -> None:
    initialised.branch("task/t", rev(B))
    initialised.commit("task/t", rev(B), C)
    initialised.commit("main", rev(B), D)
    before = snapshot(initialised)
    raises("STORE_PUBLISH_NOT_FAST_FORWARD", lambda: initialised.publish("task/t", rev(D)))
    with pytest.raises(StaleRevision) as info:
        initialised.publish("task/t", rev(B))
    assert info.value.head == rev(D)
    assert snapshot(initialised) == before
    # Rebase: branch again from the new head and redo the change.
    initialised.branch("task/t2", rev(D))
    initialised.commit("task/t2", rev(D), C)
    assert initialised.publish("task/t2", rev(D)).rev == rev(C)


def test_publish_needs_main_head_record_not_only_an_equal_document(
    initialised: ModelStore,
) -> None:
    # main went B -> C -> back to B after the fork: the document is the same, but main's
    # history now holds C and its revert, which a fast-forward would drop from main's log.
    initialised.branch("task/t", rev(B))
    initialised.commit("task/t", rev(B), D)
    initialised.commit("main", rev(B), C)
    initialised.revert("main", rev(C), rev(B))
    raises("STORE_PUBLISH_NOT_FAST_FORWARD", lambda: initialised.publish("task/t", rev(B)))


def test_publish_of_a_task_branched_from_a_published_head(initialised: ModelStore) -> None:
    initialised.branch("task/1", rev(B))
    initialised.commit("task/1", rev(B), C)
    initialised.publish("task/1", rev(B))
    initialised.branch("task/2", rev(C))  # forks from main's publish record
    initialised.commit("task/2", rev(C), D)
    assert initialised.publish("task/2", rev(C)).rev == rev(D)
    assert [r.rev for r in initialised.log()] == [rev(D), rev(D), rev(C), rev(C), rev(B), rev(A)]
    assert initialised.check() == []


# -- history is never rewritten ------------------------------------------------------------


def test_history_only_grows(initialised: ModelStore) -> None:
    logs = [initialised.log(limit=None)]
    steps: list[Callable[[], object]] = [
        lambda: initialised.commit("main", rev(B), C),
        lambda: initialised.revert("main", rev(C), rev(A)),
        lambda: initialised.branch("task/t", rev(A)),
        lambda: initialised.commit("task/t", rev(A), D),
        lambda: initialised.publish("task/t", rev(A)),
        lambda: initialised.revert("main", rev(D), rev(B)),
    ]
    for step in steps:
        step()
        log = initialised.log(limit=None)
        assert log[-len(logs[-1]) :] == logs[-1]
        logs.append(log)
    assert len(logs[-1]) == 7
    assert initialised.check() == []


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE commits SET message = 'rewritten'",
        "DELETE FROM commits",
        "UPDATE documents SET body = x'00'",
        "DELETE FROM documents",
        "DELETE FROM branches",
        "UPDATE branches SET name = 'task/renamed'",
    ],
)
def test_the_database_refuses_to_rewrite_history(
    initialised: ModelStore, path: Path, statement: str
) -> None:
    before = snapshot(initialised)
    db = raw(path)
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(statement)
    db.close()
    assert snapshot(initialised) == before


# -- concurrency ---------------------------------------------------------------------------


def test_two_store_objects_on_one_file(initialised: ModelStore, path: Path) -> None:
    with ModelStore(path) as other:
        head = other.head()
        won = initialised.commit("main", head, C)
        with pytest.raises(StaleRevision) as info:
            other.commit("main", head, D)
        assert info.value.head == won.rev
        assert other.head() == rev(C)
        # The loser retries on the head it was told.
        assert other.commit("main", info.value.head, D).parent == rev(C)
    assert initialised.head() == rev(D)


def _child(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def test_writers_in_separate_processes_race_one_wins(path: Path, tmp_path: Path) -> None:
    with ModelStore(path) as s:
        head = s.init(A).rev
    go = tmp_path / "go"
    writers = [_child("race", str(path), head, str(go), str(i)) for i in range(4)]
    time.sleep(0.5)  # let them open the store and wait at the barrier
    go.touch()
    results = []
    for proc in writers:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    won = [r["won"] for r in results if "won" in r]
    stale = [r for r in results if "stale" in r]
    assert len(won) == 1 and len(stale) == 3, results
    assert all(r["code"] == "STEP_STALE_REVISION" and r["stale"] == won[0] for r in stale)
    with ModelStore(path) as s:
        assert s.head() == won[0]
        assert [r.kind for r in s.log()] == ["commit", "init"]
        assert s.check() == []


# -- crash safety --------------------------------------------------------------------------


def _prepare(path: Path) -> None:
    """main: A -> B; task/t: B -> C (ready to publish)."""
    with ModelStore(path) as s:
        s.init(A)
        s.commit("main", rev(A), B)
        s.branch("task/t", rev(B))
        s.commit("task/t", rev(B), C)


# operation -> (kwargs, branch it moves, head before, head after)
OPERATIONS: dict[str, tuple[dict[str, Any], str, str, str]] = {
    "commit": ({"branch": "main", "expected_head": rev(B), "document": D}, "main", rev(B), rev(D)),
    "revert": (
        {"branch": "main", "expected_head": rev(B), "to_rev": rev(A)},
        "main",
        rev(B),
        rev(A),
    ),
    "publish": ({"task_branch": "task/t", "expected_main_head": rev(B)}, "main", rev(B), rev(C)),
}


def _assert_consistent(path: Path) -> None:
    db = raw(path)
    assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    db.close()
    with ModelStore(path) as s:
        assert s.check() == []
        for name, head in s.branches().items():
            log = s.log(name, limit=None)
            assert log[0].rev == head
            assert sha256_id("rev", s.read(head)) == head
            for newer, older in itertools.pairwise(log):
                assert newer.seq > older.seq


@pytest.mark.parametrize("point", CRASH_POINTS)
@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_crash_during_a_write_keeps_the_previous_head(
    path: Path, operation: str, point: str
) -> None:
    _prepare(path)
    with ModelStore(path) as s:
        before = snapshot(s)
    kwargs, branch, old_head, new_head = OPERATIONS[operation]
    proc = _child("op", str(path), operation, json.dumps(kwargs), env={CRASH_ENV: point})
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 137, (out, err)
    assert out == ""
    _assert_consistent(path)
    with ModelStore(path) as s:
        if point == "after_commit_tx":
            assert s.head(branch) == new_head
            log = s.log(branch, limit=None)
            assert log[0].kind == operation and log[0].parent == old_head
            assert len(s.log("main", limit=None)) > len(before[1]["main"])
        else:
            assert snapshot(s) == before
            assert s.read(s.head(branch)) == s.read(old_head)
        # The store takes writes again after the crash.
        head = s.head()
        s.commit("main", head, {"after": "crash", "point": point})


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_crash_during_init_leaves_an_uninitialised_store(path: Path, point: str) -> None:
    ModelStore(path).close()
    proc = _child("op", str(path), "init", json.dumps({"document": A}), env={CRASH_ENV: point})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 137, err
    _assert_consistent(path)
    with ModelStore(path) as s:
        if point == "after_commit_tx":
            assert s.head() == rev(A)
        else:
            assert s.branches() == {}
            s.init(A)
        assert s.read(s.head()) == A


@pytest.mark.parametrize("point", ["before_commit_tx", "after_commit_tx"])
def test_crash_during_branch_creation(path: Path, point: str) -> None:
    _prepare(path)
    args = json.dumps({"name": "task/new", "from_rev": rev(A)})
    proc = _child("op", str(path), "branch", args, env={CRASH_ENV: point})
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 137, err
    _assert_consistent(path)
    with ModelStore(path) as s:
        assert ("task/new" in s.branches()) == (point == "after_commit_tx")


def test_child_without_crash_point_completes(path: Path) -> None:
    # The control for the crash tests: the same child and arguments, no crash point.
    _prepare(path)
    kwargs, _, _, new_head = OPERATIONS["commit"]
    env = {k: v for k, v in os.environ.items() if k != CRASH_ENV}
    proc = subprocess.run(
        [sys.executable, str(CHILD), "op", str(path), "commit", json.dumps(kwargs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"result": new_head}


def test_sigkill_during_a_loop_of_commits(path: Path) -> None:
    with ModelStore(path) as s:
        s.init(loop_doc(0))
    proc = _child("loop", str(path))
    assert proc.stdout is not None
    watchdog = threading.Timer(60, proc.kill)  # never hang the suite on a stuck child
    watchdog.start()
    last = 0
    try:
        while last < 25:
            line = proc.stdout.readline()
            if not line:
                break
            last = json.loads(line)["n"]
    finally:
        watchdog.cancel()
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert last >= 25, "the child did not commit"
    # The child may have run ahead of the reader: count what it reported before dying.
    for line in rest.splitlines():
        with contextlib.suppress(ValueError):  # a line cut short by the kill
            last = json.loads(line)["n"]
    _assert_consistent(path)
    with ModelStore(path) as s:
        head = s.read(s.head())
        n = head["n"]
        # Every reported commit is durable; at most the one in flight also landed.
        assert n in (last, last + 1)
        assert head == loop_doc(n)
        log = s.log(limit=None)
        assert [r.rev for r in log] == [rev(loop_doc(i)) for i in range(n, -1, -1)]
        s.commit("main", s.head(), loop_doc(n + 1))


def test_documents_are_stored_compressed_and_old_plain_bodies_still_read() -> None:
    from aira_core.model.store import _Damaged, _pack, _unpack

    body = b'{"text":"' + b"x" * 10_000 + b'"}'
    packed = _pack(body)
    assert len(packed) < len(body) / 20 and _unpack(packed) == body
    assert _unpack(body) == body  # a body written uncompressed, by an older Aira
    with pytest.raises(_Damaged, match="cannot be decompressed"):  # reported as STORE_CORRUPT
        _unpack(b"\x78garbage")


# -- large strings: stored once, content addressed (issue 13, item 9) --------------------------


def _big(n: int, seed: int = 1) -> str:
    # STEP-like text that compresses about as a real one does (a few times, not a thousand).
    import random

    rng = random.Random(seed)
    return "\n".join(
        f"#{i}=CARTESIAN_POINT('',({rng.uniform(-99, 99):.6f},{rng.uniform(-99, 99):.6f}));"
        for i in range(n)
    )


def _imported(step: str, value: int) -> dict[str, Any]:
    return {
        "parameters": [{"id": "w", "value": value}],
        "nodes": [{"id": "n1", "op": "io.importStep@1", "args": {"data": step, "small": "x"}}],
    }


def _file_size(s: ModelStore) -> int:
    s._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return s.path.stat().st_size


def test_an_imported_text_is_stored_once_and_later_commits_stay_small(path: Path) -> None:
    step = _big(30_000)  # ~1.8 MB
    with ModelStore(path) as s:
        head = s.init(_imported(step, 0)).rev
        after_import = _file_size(s)
        for value in range(1, 21):
            head = s.commit("main", head, _imported(step, value), f"w = {value}").rev
        growth = (_file_size(s) - after_import) / 20
        # Before: every one-parameter commit stored the compressed import again (~1/3 of it).
        assert growth < len(step) / 200, growth
        assert head == rev(_imported(step, 20))  # ids still hash the whole document
        assert s.read(head) == _imported(step, 20)
        assert s.read(rev(_imported(step, 0))) == _imported(step, 0)
        db = s._conn()
        assert db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 1
        assert s.check() == []


def test_documents_with_several_large_strings_read_back_exactly(path: Path) -> None:
    big_a, big_b = _big(2_000, 1), _big(2_500, 2)
    documents = [
        {"a": big_a, "b": [big_b, "small", big_a], "c": {'k\n"': big_b + '\\"x'}},
        {"only": big_b, "escaped": '\u2028"\\' * 40_000},
        {"small": "x" * 10, "edge": "y" * (64 * 1024 - 3)},  # just under the cut
    ]
    with ModelStore(path) as s:
        head = s.init(documents[0]).rev
        for document in documents[1:]:
            head = s.commit("main", head, document).rev
        for document in documents:
            assert s.read(rev(document)) == document
        db = s._conn()
        assert db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 4  # a, b, b+x, escaped


def _past_trigger(path: Path, table: str, statement: str, *args: object) -> None:
    db = raw(path)
    triggers = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (table,)
    ).fetchall()
    for name, _ in triggers:
        db.execute(f"DROP TRIGGER {name}")
    db.execute(statement, args)
    for _, sql in triggers:
        db.execute(sql)
    db.close()


def test_a_damaged_or_missing_blob_is_corrupt_and_named(path: Path) -> None:
    import zlib

    step = _big(3_000)
    document = _imported(step, 1)
    with ModelStore(path) as s:
        s.init(document)
        (digest,) = s._conn().execute("SELECT digest FROM blobs").fetchone()
    damaged = json.dumps(step.replace("CARTESIAN", "CARTESIAM", 1)).encode()
    _past_trigger(path, "blobs", "UPDATE blobs SET body = ?", zlib.compress(damaged))
    with ModelStore(path) as s:
        error = raises("STORE_CORRUPT", lambda: s.read(rev(document)))
        assert f"{digest} (part of {rev(document)}) does not match its id" in str(error)
        assert any(digest in p for p in s.check())
    _past_trigger(path, "blobs", "DELETE FROM blobs")
    with ModelStore(path) as s:
        error = raises("STORE_CORRUPT", lambda: s.read(rev(document)))
        assert f"references {digest}, which is missing" in str(error)


# -- row digests ----------------------------------------------------------------------------------


def test_a_missing_history_record_is_corrupt_not_a_shorter_log(path: Path) -> None:
    with ModelStore(path) as s:
        head = s.init(A).rev
        head = s.commit("main", head, B, "b").rev
        s.commit("main", head, C, "c")
    _past_trigger(path, "commits", "DELETE FROM commits WHERE seq = 2")
    with ModelStore(path) as s:
        error = raises("STORE_CORRUPT", lambda: s.log("main"))
        assert "the history of main is damaged" in str(error)
        assert [r.seq for r in s.log("main", limit=1)] == [3]  # what is there still reads


def test_a_document_named_by_history_but_missing_is_corrupt(path: Path) -> None:
    with ModelStore(path) as s:
        s.init(A)
    _past_trigger(path, "documents", "DELETE FROM documents")
    with ModelStore(path) as s:
        error = raises("STORE_CORRUPT", lambda: s.read(rev(A)))
        assert f"the document of {rev(A)}, named by history record 1, is missing" in str(error)
        raises("STORE_REVISION_UNKNOWN", lambda: s.read(UNKNOWN))


def test_a_damaged_branch_row_is_corrupt_not_unknown(path: Path) -> None:
    with ModelStore(path) as s:
        head = s.init(A).rev
        s.branch("task/t1", head)
    _past_trigger(path, "branches", "UPDATE branches SET name = 'task/t2' WHERE name = 'task/t1'")
    with ModelStore(path) as s:
        error = raises("STORE_CORRUPT", lambda: s.head("task/t1"))
        assert "the head pointer of branch 'task/t2' is damaged" in str(error)
        raises("STORE_CORRUPT", s.branches)
        assert s.head("main") == head  # an intact branch still reads


# -- schema 1 stores are migrated ---------------------------------------------------------------


def _schema_1_store(path: Path) -> None:
    """A store as Aira wrote it before schema 2: no digests, no blobs, whole bodies."""
    import zlib

    db = raw(path)
    for statement in store_module._SCHEMA:
        db.execute(statement)
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    for document in (A, B):
        db.execute(
            "INSERT INTO documents VALUES (?, ?)",
            (rev(document), zlib.compress(canonical_bytes(document))),
        )
    db.execute(
        "INSERT INTO commits (branch, rev, parent, base_seq, kind, message, created_at, meta) "
        "VALUES ('main', ?, NULL, NULL, 'init', 'init', '2026-01-01T00:00:00.000000Z', NULL)",
        (rev(A),),
    )
    db.execute(
        "INSERT INTO commits (branch, rev, parent, base_seq, kind, message, created_at, meta) "
        "VALUES ('main', ?, ?, 1, 'commit', 'b', '2026-01-02T00:00:00.000000Z', '{\"p\":1}')",
        (rev(B), rev(A)),
    )
    db.execute("INSERT INTO branches VALUES ('main', 2, '2026-01-01T00:00:00.000000Z')")
    db.execute(
        "INSERT INTO derived VALUES (?, 'summary/1', CAST('{\"stale\":1}' AS BLOB))", (rev(B),)
    )
    db.execute("PRAGMA journal_mode=WAL")
    db.close()


def test_a_schema_1_store_is_migrated_on_open(path: Path) -> None:
    _schema_1_store(path)
    with ModelStore(path) as s:
        assert [(r.seq, r.kind, r.message, r.meta) for r in s.log()] == [
            (2, "commit", "b", {"p": 1}),
            (1, "init", "init", None),
        ]
        assert s.read(s.head()) == B and s.branches() == {"main": rev(B)}
        assert s.derived(rev(B), "summary/1") is None  # dropped, not trusted: recomputed
        assert s.check() == []
        s.commit("main", rev(B), C, "c")
    db = raw(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    assert db.execute("SELECT count(*) FROM commits WHERE digest IS NULL").fetchone()[0] == 0
    db.close()
    with ModelStore(path) as s:  # and opens as a current store from then on
        assert [r.message for r in s.log()] == ["c", "b", "init"]


def test_a_damaged_schema_1_store_is_refused_untouched(path: Path) -> None:
    _schema_1_store(path)
    _raw_sql("DROP TABLE derived")(path)
    before = path.read_bytes()
    raises("STORE_CORRUPT", lambda: ModelStore(path))
    assert path.read_bytes() == before
