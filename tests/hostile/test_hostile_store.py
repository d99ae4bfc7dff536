"""Issue 13, items 5, 9 (storage), 10 (derived rows as TEXT) and `model log` escapes: a
damaged model store is STORE_CORRUPT naming what is damaged, never a wrong answer with exit
0 and never a traceback; a refusal leaves the store as it was; commit messages cannot drive
the terminal."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_runner import RunAira
from unchanged import assert_unchanged, snapshot

Damage = Callable[[Path, dict[str, str]], None]


def store_of(home: Path) -> Path:
    return home / "models" / "store.sqlite3"


def ok(aira: RunAira, *args: str) -> dict:  # type: ignore[type-arg]
    out = aira(*args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def refused(out: object, code: str = "STORE_CORRUPT") -> str:
    stderr, stdout = out.stderr, out.stdout  # type: ignore[attr-defined]
    assert out.returncode != 0, stdout  # type: ignore[attr-defined]
    assert f"{code}:" in stderr, stderr
    assert "Traceback" not in stderr + stdout and "INTERNAL_ERROR" not in stderr, stderr
    return str(stderr)


def patch(tmp_path: Path, name: str, *ops: dict) -> str:  # type: ignore[type-arg]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"ops": list(ops)}))
    return str(path)


def param(pid: str, label: str, value: float) -> dict:  # type: ignore[type-arg]
    parameter = {"id": pid, "label": label, "type": "Length", "value": value, "min": 1}
    return {"op": "parameter.add", "parameter": parameter | {"max": 100}}


@pytest.fixture
def built(aira: RunAira, tmp_path: Path, aira_home: Path) -> dict[str, str]:
    """A store of four revisions made through the CLI: init, add p:width, set it to 30,
    add p:depth; every view kept. Returns the revisions by name."""
    revs = {"r0": ok(aira, "model", "init")["rev"]}
    steps = [
        ("r1", "add width", [param("p1", "width", 20)]),
        ("r2", "set width to 30", [{"op": "parameter.setValue", "id": "p1", "value": 30}]),
        ("r3", "add depth", [param("p2", "depth", 10)]),
    ]
    for name, message, ops in steps:
        revs[name] = ok(aira, "model", "patch", patch(tmp_path, name, *ops), "-m", message)["rev"]
    for rev in revs.values():  # keep every revision's views (summary, block hashes)
        ok(aira, "model", "show", rev)
    ok(aira, "model", "diff", revs["r0"], "main")
    store = store_of(aira_home)
    assert not store.with_name(store.name + "-wal").exists()  # all of it in the file
    return revs


def past_triggers(statements: Callable[[dict[str, str]], list[str]]) -> Damage:
    """Damage as a disk or a foreign writer would, past the append-only triggers."""

    def damage(store: Path, revs: dict[str, str]) -> None:
        db = sqlite3.connect(store, isolation_level=None)
        triggers = db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'commits'"
        ).fetchall()
        for name, _ in triggers:
            db.execute(f"DROP TRIGGER {name}")
        for statement in statements(revs):
            cursor = db.execute(statement)
            assert cursor.rowcount == 1, statement
        for _, sql in triggers:
            db.execute(sql)
        db.close()

    return damage


def same_length_edit(old: str, new: str) -> Damage:
    """Replace bytes in the file itself: no SQL, no digest recomputed."""

    def damage(store: Path, revs: dict[str, str]) -> None:
        before, after = old.format(**revs).encode(), new.format(**revs).encode()
        assert len(before) == len(after)
        data = store.read_bytes()
        assert data.count(before) == 1, before
        store.write_bytes(data.replace(before, after))

    return damage


def flip_digit(text: str) -> str:
    return text[:-1] + ("0" if text[-1] != "0" else "1")


SHOW, LOG = ["model", "show"], ["model", "log"]
DIFF = ["model", "diff", "{r0}", "main"]
CASES: dict[str, tuple[Damage, list[list[str]], str]] = {
    # item 5: each was served as fact with exit 0
    "kept summary count": (
        same_length_edit('"parameters":2,', '"parameters":7,'),
        [SHOW],
        "the kept summary/1 of {r3} is damaged",
    ),
    "kept alias": (
        same_length_edit('"p:depth":"p2"', '"p:depth":"p9"'),
        [SHOW],
        "the kept summary/1 of {r3} is damaged",
    ),
    "block-hash row": (
        lambda store, revs: _update_derived(
            store, "blocks/1", revs["r3"], "replace(CAST(body AS TEXT), 'sha256:', 'sha256:0')"
        ),
        [DIFF],
        "the kept blocks/1 of {r3} is damaged",
    ),
    "commit kind": (
        past_triggers(lambda r: [f"UPDATE commits SET kind = 'revert' WHERE rev = '{r['r2']}'"]),
        [LOG],
        "history record 3 is damaged",
    ),
    "commit parent": (
        past_triggers(
            lambda r: [
                f"UPDATE commits SET parent = '{flip_digit(r['r1'])}' WHERE rev = '{r['r2']}'"
            ]
        ),
        [LOG],
        "history record 3 is damaged",
    ),
    "commit message": (
        same_length_edit("set width to 30", "set width to 99"),
        [LOG],
        "history record 3 is damaged",
    ),
    # a damaged head record: STORE_CORRUPT, not STORE_REVISION_UNKNOWN
    "head record's revision": (
        past_triggers(
            lambda r: [f"UPDATE commits SET rev = '{flip_digit(r['r3'])}' WHERE rev = '{r['r3']}'"]
        ),
        [SHOW, LOG, ["model", "read", "--select", "parameters"]],
        "history record 4 is damaged",
    ),
    "head pointer": (
        past_triggers(
            lambda r: ["UPDATE branches SET head_seq = head_seq - 1 WHERE name = 'main'"]
        ),
        [SHOW, LOG],
        "the head pointer of branch 'main' is damaged",
    ),
    # item 10: a derived row stored as TEXT was INTERNAL_ERROR
    "derived rows as TEXT": (
        lambda store, revs: _update_derived(store, None, None, "CAST(body AS TEXT)"),
        [SHOW, DIFF],
        "is damaged: stored as str, not bytes",
    ),
    "empty store file": (
        lambda store, revs: store.write_bytes(b""),
        [SHOW, LOG, ["model", "init"]],
        "is an empty file (0 bytes), not a store",
    ),
}


def _update_derived(store: Path, name: str | None, rev: str | None, body: str) -> None:
    db = sqlite3.connect(store, isolation_level=None)
    where = "WHERE name = ? AND rev = ?" if name is not None else ""
    cursor = db.execute(f"UPDATE derived SET body = {body} {where}", (name, rev) if name else ())
    assert cursor.rowcount >= 1
    db.close()


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_a_damaged_row_is_corrupt_and_named(
    aira: RunAira, aira_home: Path, built: dict[str, str], case: str
) -> None:
    damage, commands, named = CASES[case]
    store = store_of(aira_home)
    damage(store, built)
    before = snapshot(aira_home)
    for command in commands:
        args = [a.format(**built) for a in command]
        for as_json in ([], ["--json"]):
            message = refused(aira(*args, *as_json))
            assert named.format(**built) in message, message
    assert_unchanged(before, aira_home)


def test_an_intact_store_answers(aira: RunAira, built: dict[str, str]) -> None:
    # The cases above fail for the damage, not for the store: undamaged, all of it answers.
    assert ok(aira, *SHOW)["counts"]["parameters"] == 2
    assert [r["message"] for r in ok(aira, *LOG)["records"]][:2] == ["add depth", "set width to 30"]
    assert ok(aira, "model", "diff", built["r0"], "main")["changedBlocks"] == ["parameters"]


# -- 50 random bit flips --------------------------------------------------------------------

FUZZ_COMMANDS = [
    ["model", "log", "--json", "--limit", "100"],
    ["model", "show", "--json"],
    ["model", "show", "{r1}", "--json"],
    ["model", "diff", "{r0}", "main", "--json"],
    ["model", "read", "--select", "parameters", "--json"],
]


def test_random_bit_flips_give_the_right_answer_or_store_corrupt(
    aira: RunAira, aira_home: Path, tmp_path: Path, built: dict[str, str]
) -> None:
    """Each of 50 seeded single-bit flips anywhere in a copy of the store: every command
    either answers exactly as on the intact store or is refused STORE_CORRUPT; never a
    different answer with exit 0, never a traceback."""
    store = store_of(aira_home)
    commands = [[a.format(**built) for a in c] for c in FUZZ_COMMANDS]
    expected = []
    for command in commands:
        out = aira(*command)
        assert out.returncode == 0, out.stderr
        expected.append(out.stdout)
    pristine = tmp_path / "pristine.sqlite3"
    shutil.copyfile(store, pristine)
    size = pristine.stat().st_size
    rng = random.Random(13)
    outcomes = {"right": 0, "corrupt": 0}
    for trial in range(50):
        data = bytearray(pristine.read_bytes())
        offset, bit = rng.randrange(size), rng.randrange(8)
        data[offset] ^= 1 << bit
        for extra in store.parent.glob(store.name + "-*"):
            extra.unlink()
        store.write_bytes(bytes(data))
        for command, answer in zip(commands, expected, strict=True):
            out = aira(*command)
            where = f"trial {trial}: bit {bit} of byte {offset}: {' '.join(command)}"
            assert "Traceback" not in out.stderr and "INTERNAL_ERROR" not in out.stderr, where
            if out.returncode == 0:
                assert out.stdout == answer, f"{where}: a wrong answer with exit 0"
                outcomes["right"] += 1
            elif "STORE_UNAVAILABLE:" in out.stderr and "newer than" in out.stderr:
                # The flip raised the schema version in the header: told apart from a newer
                # Aira's store by nothing, so refused as one (upgrade), not read.
                outcomes["corrupt"] += 1
            else:
                assert "STORE_CORRUPT:" in out.stderr, f"{where}: {out.stderr}"
                outcomes["corrupt"] += 1
    assert outcomes["corrupt"] > 0 and outcomes["right"] > 0, outcomes


# -- `model log` and terminal escapes ---------------------------------------------------------


def test_log_shows_control_characters_escaped(
    aira: RunAira, tmp_path: Path, built: dict[str, str]
) -> None:
    hostile = "x\x1b]0;owned\x07\x1b[2J\x1b[31mred\rback\u202etxt\x9b1m"
    ops = [{"op": "parameter.setValue", "id": "p1", "value": 40}]
    ok(aira, "model", "patch", patch(tmp_path, "hostile", *ops), "-m", hostile)
    out = aira("model", "log")
    assert out.returncode == 0, out.stderr
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
        assert raw not in out.stdout
    text = "".join(out.stdout.split())  # the table may fold the cell across lines
    assert "x\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\rback\\u202etxt\\x9b1m" in text
    # JSON keeps the data, escaped as JSON escapes it
    assert ok(aira, "model", "log")["records"][0]["message"] == hostile


def test_an_error_line_shows_control_characters_escaped(
    aira: RunAira, aira_home: Path, built: dict[str, str]
) -> None:
    """The human error line quotes what the user wrote (a subject): an OSC sequence or a bidi
    override in it is shown escaped, never sent to the terminal raw."""
    before = snapshot(aira_home)
    out = aira("model", "show", "--", "x\x1b]0;owned\x07y\u202ez")
    assert out.returncode == 1 and out.stderr.startswith("error: ")
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in out.stderr
    assert "x\\x1b]0;owned\\x07y\\u202ez" in out.stderr
    assert_unchanged(before, aira_home)


def test_the_process_end_closes_what_an_error_path_left_open(tmp_path: Path) -> None:
    """``aira`` ends with os._exit (no plugin thread or atexit handler can hold it): the
    stores an error path left open are closed first, so a refused command leaves no
    -wal/-shm beside a store."""
    from aira_core.databases import close_all
    from aira_core.model.store import ModelStore

    store = ModelStore(tmp_path / "s.sqlite3", create=True)  # left open, as by an error path
    store._conn().execute("SELECT count(*) FROM sqlite_master").fetchone()
    assert (tmp_path / "s.sqlite3-wal").exists()
    close_all()
    assert sorted(p.name for p in tmp_path.glob("s.*")) == ["s.sqlite3"]
    assert store._db is None  # closed, not merely collected
