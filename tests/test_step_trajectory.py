"""Trajectories and decision scripts as untrusted files: every record is checked on the way
in (so `aira trace show` and `--resume` get well-shaped records or TRAJECTORY_INVALID), a
new run never writes into an existing file, a resumed one continues cleanly after a torn
line, and a script is refused (SCRIPT_INVALID) before anything is created."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira
from runtime_factory import make_runtime
from test_step_loop import Killed, resume_from, run_killed

from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError
from aira_core.runtime.contract import TerminalState
from aira_core.step.runner import resume_script
from aira_core.step.trajectory import (
    SCRIPT_INVALID,
    TRAJECTORY_EXISTS,
    TRAJECTORY_INVALID,
    DecisionScript,
    ScriptedSource,
    TrajectoryWriter,
    load_script,
    read_trajectory,
)

REV = "rev:sha256:" + "1" * 64
HEADER = {"format": "aira.trajectory/1", "script": "plate", "tier": "T128", "taskId": "plate-1"}
INTENT = IntentFrame(goal="a plate")


def step_record(n: int, **changes: Any) -> dict[str, Any]:
    record = {
        "step": n,
        "round": 0,
        "capsuleHash": "capsule:sha256:" + "2" * 64,
        "capsuleBytes": 900,
        "logBytes": 40 * n,
        "promptTokens": 240,
        "budgetTokens": 96000,
        "decision": {"act": "read"},
        "result": {"status": "ok", "act": "read", "bytes": 120},
        "usage": {"inputTokens": 0, "outputTokens": 0, "usd": 0.0},
        "model": "script:plate",
        "timings": {"capsuleMs": 0.5, "decideMs": 0.0, "validateMs": 0.1, "executeMs": 2.0},
        "state": "discovering",
        "terminal": None,
        "head": REV,
    }
    record.update(changes)
    return record


END = {"end": True, "terminal": "cannotProceed", "reason": "r", "head": REV, "steps": 2}


def jsonl(*values: Any) -> bytes:
    return b"".join((v if isinstance(v, bytes) else json.dumps(v).encode()) + b"\n" for v in values)


def without(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != key}


CORRUPT = {
    "header-array": jsonl([1, 2]),
    "header-string": jsonl("aira.trajectory/1"),
    "header-tier-number": jsonl({**HEADER, "tier": 5}, step_record(0)),
    "another-format": jsonl({**HEADER, "format": "aira.trajectory/2"}),
    "not-utf8": jsonl(HEADER, b'{"step": 0, "note": "\xff\xfe"}', step_record(1)),
    "deep-array": jsonl(HEADER, b"[" * 100_000 + b"]" * 100_000, step_record(0)),
    "missing-round": jsonl(HEADER, without(step_record(0), "round")),
    "decision-string": jsonl(HEADER, step_record(0, decision="read")),
    "status-number": jsonl(HEADER, step_record(0, result={"status": 5})),
    "step-string": jsonl(HEADER, step_record(0, step="0")),
    "result-list": jsonl(HEADER, step_record(0, result=[1])),
    "message-list": jsonl(
        HEADER, step_record(0, result={"status": "rejected", "code": "X", "message": ["x"]})
    ),
    "rev-number": jsonl(HEADER, step_record(0, result={"status": "ok", "rev": 5})),
    "record-list": jsonl(HEADER, step_record(0), [1, 2], step_record(1)),
    "neither-step-nor-end": jsonl(HEADER, {"round": 0}, step_record(0)),
    "end-without-terminal": jsonl(HEADER, step_record(0), without(END, "terminal")),
    "nan": jsonl(HEADER, b'{"step": 0, "x": NaN}', step_record(1)),
    "huge-integer": jsonl(HEADER, b'{"step": ' + b"9" * 5000 + b"}", step_record(1)),
    "step-skipped": jsonl(HEADER, step_record(0), step_record(2)),
    "step-negative": jsonl(HEADER, step_record(-1)),
    "record-after-end": jsonl(HEADER, step_record(0), END, step_record(1)),
    "empty": b"",
}


@pytest.mark.parametrize("name", CORRUPT)
def test_a_corrupt_trajectory_is_trajectory_invalid(tmp_path: Path, name: str) -> None:
    path = tmp_path / "trajectory.jsonl"
    path.write_bytes(CORRUPT[name])
    with pytest.raises(AiraError) as caught:
        read_trajectory(path)
    assert caught.value.code == TRAJECTORY_INVALID, caught.value
    assert str(tmp_path) not in str(caught.value)


def test_well_shaped_records_read_back_and_unknown_fields_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    first = step_record(0, decision={"raw": "not json"}, recovered=True)
    # U+2028 and U+0085 are line breaks to str.splitlines, not to JSONL.
    second = step_record(1, decision={"act": "note", "note": "a\u2028b\u0085c"})
    raw = jsonl(HEADER, first, second, END)
    raw = raw.replace(b"\\u2028", "\u2028".encode()).replace(b"\\u0085", "\u0085".encode())
    assert "\u2028".encode() in raw  # written raw, as the writer does (ensure_ascii=False)
    path.write_bytes(raw)
    header, records = read_trajectory(path)
    assert header == HEADER
    assert records == [first, second, END]


def test_a_torn_last_line_is_ignored_even_mid_character(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    torn = json.dumps(step_record(1, decision={"act": "note", "note": "中"}), ensure_ascii=False)
    cut = torn.encode()[: torn.encode().index("中".encode()) + 1]  # half a character
    path.write_bytes(jsonl(HEADER, step_record(0)) + cut)
    _, records = read_trajectory(path)
    assert [r["step"] for r in records] == [0]


# -- the writer --------------------------------------------------------------------------------


def test_a_new_trajectory_refuses_an_existing_file(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(AiraError) as caught:
        TrajectoryWriter(notes, {"script": "plate"})
    assert caught.value.code == TRAJECTORY_EXISTS
    assert notes.read_text() == "my notes\n"
    # Nor another run's trajectory: two runs never merge into one file.
    path = tmp_path / "trajectory.jsonl"
    writer = TrajectoryWriter(path, {"script": "plate"})
    writer.write(step_record(0))
    writer.close()
    before = path.read_bytes()
    with pytest.raises(AiraError) as caught:
        TrajectoryWriter(path, {"script": "plate"})
    assert caught.value.code == TRAJECTORY_EXISTS
    assert path.read_bytes() == before
    # Nor an empty file: a new trajectory is a new file (an empty one may be a hard link to
    # something else, or /dev/null).
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    with pytest.raises(AiraError) as caught:
        TrajectoryWriter(empty, {"script": "plate"})
    assert caught.value.code == TRAJECTORY_EXISTS and empty.read_bytes() == b""
    # force: a new file replaces the old name once the writer keeps (or closes) it
    TrajectoryWriter(empty, {"script": "plate"}, force=True).close()
    assert read_trajectory(empty)[0]["script"] == "plate"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # none left


def test_continuing_refuses_a_file_that_is_not_a_trajectory(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(AiraError) as caught:
        TrajectoryWriter(notes, {})
    assert caught.value.code == TRAJECTORY_INVALID
    assert notes.read_text() == "my notes\n"


def test_continuing_drops_a_torn_line_first(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    path.write_bytes(jsonl(HEADER, step_record(0)) + b'{"step": 1, "ro')
    writer = TrajectoryWriter(path, {})
    writer.write(step_record(1))
    writer.close()
    _, records = read_trajectory(path)
    assert [r["step"] for r in records] == [0, 1]


def test_a_cut_line_with_its_newline_is_damage_not_a_torn_write(tmp_path: Path) -> None:
    # A killed write loses the end of its line, newline included: a line that has its
    # newline was written whole, and one that does not parse was damaged since.
    path = tmp_path / "trajectory.jsonl"
    data = jsonl(HEADER, step_record(0)) + b'{"step": 1, "ro\n'
    path.write_bytes(data)
    with pytest.raises(AiraError) as caught:
        TrajectoryWriter(path, {})
    assert caught.value.code == TRAJECTORY_INVALID and "line 3" in caught.value.diagnostic.message
    assert path.read_bytes() == data


def test_continuing_ends_a_whole_last_record_before_the_next(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.jsonl"
    path.write_bytes(jsonl(HEADER, step_record(0)).rstrip(b"\n"))  # died before the newline
    writer = TrajectoryWriter(path, {})
    writer.write(step_record(1))
    writer.close()
    assert [r["step"] for r in read_trajectory(path)[1]] == [0, 1]


def test_a_task_killed_mid_record_resumes_into_a_readable_trajectory(tmp_path: Path) -> None:
    decisions: list[dict[str, Any]] = [
        {"act": "read"},
        {"act": "lookup", "query": "box"},
        {"act": "note", "note": "n"},
        {"act": "abstain", "reason": "r"},
    ]
    script = DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": "plate",
            "intent": INTENT.to_wire(),
            "decisions": decisions,
        }
    )

    class TornWriter(TrajectoryWriter):
        """Dies writing the third record: half of it reaches the file, no newline."""

        def write(self, record: dict[str, Any]) -> None:
            if record.get("step") == 2:
                self._file.write(json.dumps(record)[:50].encode())
                self._file.flush()
                raise Killed
            super().write(record)

    ctx, kernel, _ = make_runtime(tmp_path)
    path = tmp_path / "trajectory.jsonl"
    run_killed(
        ctx, kernel, ScriptedSource(script), TornWriter(path, {"script": "plate"}), intent=INTENT
    )
    outcome = resume_from(ctx, kernel, path, script, intent=INTENT)
    assert outcome.terminal is TerminalState.CANNOT_PROCEED
    _, records = read_trajectory(path)
    assert [r.get("step", "end") for r in records] == [0, 1, 2, 3, "end"]


@pytest.mark.parametrize(
    "name", ["step-string", "result-list", "record-list", "message-list", "rev-number"]
)
def test_resume_refuses_a_corrupt_trajectory_before_the_store(tmp_path: Path, name: str) -> None:
    store = tmp_path / "store.sqlite3"
    store.write_bytes(b"")  # never opened: the trajectory is read first
    path = tmp_path / "trajectory.jsonl"
    path.write_bytes(CORRUPT[name])
    script = DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": "plate",
            "intent": INTENT.to_wire(),
            "decisions": [{"act": "read"}],
        }
    )
    with pytest.raises(AiraError) as caught:
        resume_script(script, kernel=None, store=store, trajectory=path)
    assert caught.value.code == TRAJECTORY_INVALID
    assert store.read_bytes() == b"" and path.read_bytes() == CORRUPT[name]


# -- scripts -------------------------------------------------------------------------------------

SCRIPT = {
    "format": "aira.decision-script/1",
    "name": "plate",
    "intent": {"goal": "a plate"},
    "decisions": [{"act": "read"}],
}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"format": "aira.decision-script/1", "x": ' + b"[" * 100_000, "nested deeper"),
        (b'{"decisions": ' + b"[" * 500 + b"]" * 500 + b"}", "nested deeper"),
        (b"\xff\xfe{}", "not UTF-8"),
        (json.dumps({**SCRIPT, "document": {"foo": 1}}).encode(), "/document/foo"),
        (json.dumps({**SCRIPT, "document": {"parameters": "x"}}).encode(), "/document/parameters"),
        (json.dumps({**SCRIPT, "decisions": [{"act": "note", "note": "\ud800"}]}).encode(), "lone"),
        (b'{"format": "aira.decision-script/1", "n": NaN}', "NaN"),
    ],
)
def test_a_bad_script_is_script_invalid(tmp_path: Path, data: bytes, says: str) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(data)
    with pytest.raises(AiraError) as caught:
        load_script(path)
    assert caught.value.code == SCRIPT_INVALID
    message = caught.value.diagnostic.message
    assert says in message and "pydantic" not in message and len(message) < 400


def test_a_script_with_an_amir_document_loads(tmp_path: Path) -> None:
    document = {"parameters": [{"id": "p1", "label": "w", "type": "Length", "value": 1}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCRIPT, "document": document}))
    assert load_script(path).document == document  # kept as written (the task id hashes it)


# -- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "header-array",
        "header-string",
        "missing-round",
        "decision-string",
        "status-number",
        "not-utf8",
        "deep-array",
        "end-without-terminal",
    ],
)
def test_trace_show_refuses_a_corrupt_trajectory(aira: RunAira, tmp_path: Path, name: str):
    path = tmp_path / "t.jsonl"
    path.write_bytes(CORRUPT[name])
    for args in (["trace", "show", str(path)], ["trace", "show", str(path), "--json"]):
        out = aira(*args)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "TRAJECTORY_INVALID" in out.stderr and "INTERNAL_ERROR" not in out.stderr


def test_trace_show_prints_model_text_as_written(aira: RunAira, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    script = "[link=https://evil.example]click[/link] [bold red]FAKE OK"
    rejected = {"status": "rejected", "code": "STEP_DECISION_ACT_UNKNOWN", "message": "[/x]"}
    path.write_bytes(
        jsonl(
            {**HEADER, "script": script},
            step_record(0, decision={"act": "[/red]"}),
            step_record(1, decision={"act": None}, result=rejected),
            END,
        )
    )
    out = aira("trace", "show", str(path))
    assert out.returncode == 0, out.stderr
    assert script in out.stdout and "[/red]" in out.stdout
    assert "rejected STEP_DECISION_ACT_UNKNOWN" in out.stdout
    assert "end: cannotProceed (r)" in out.stdout


def test_run_refuses_bad_input_before_making_anything(
    aira: RunAira, tmp_path: Path, aira_home: Path
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(SCRIPT))
    deep = tmp_path / "deep.json"
    deep.write_bytes(b'{"format": "aira.decision-script/1", "x": ' + b"[" * 100_000)
    bad_document = tmp_path / "doc.json"
    bad_document.write_text(json.dumps({**SCRIPT, "document": {"foo": 1}}))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    cases = [
        (["--script", str(deep)], "SCRIPT_INVALID"),
        (["--script", str(bad_document)], "SCRIPT_INVALID"),
        (["--script", str(good), "--trajectory", str(notes)], "TRAJECTORY_EXISTS"),
    ]
    for args, code in cases:
        out = aira("run", *args)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert code in out.stderr and "INTERNAL_ERROR" not in out.stderr, out.stderr
        assert "errors.pydantic.dev" not in out.stderr
    assert notes.read_text() == "my notes\n"
    assert not (aira_home / "runs").exists()  # no run directory for a refused run
