"""How every `aira` command fails: one strict reader for the JSON the user gives (files and
arguments), `error: CODE: message` on stderr, `{"error": Diagnostic}` on stdout with --json,
usage errors as USAGE_INVALID (exit 2), output that is always valid JSON, and nothing left
behind by a refused input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira

from aira_core.canonical import MAX_DEPTH
from aira_core.cli import _output
from aira_core.diagnostics import AiraError

DEEP = "[" * 5_000  # far beyond MAX_DEPTH, and beyond what json.loads recurses into
ERROR_LINE = r"^error: [A-Z][A-Z0-9_]*: "


def refused(out: subprocess.CompletedProcess[str], code: str, status: int = 1) -> str:
    """The stderr of a command refused with ``code``: the documented form, no traceback."""
    assert out.returncode == status, (out.stdout, out.stderr)
    first = out.stderr.splitlines()[0]
    assert first.startswith(f"error: {code}: "), out.stderr
    assert "Traceback" not in out.stderr and "INTERNAL_ERROR" not in out.stderr
    assert "╭" not in out.stderr  # no Rich box
    return out.stderr


def json_error(out: subprocess.CompletedProcess[str], code: str, status: int = 1) -> dict:  # type: ignore[type-arg]
    """With --json: the stderr line, and one JSON object ``{"error": Diagnostic}`` on stdout."""
    refused(out, code, status)
    body = json.loads(out.stdout)
    assert body["error"]["code"] == code and body["error"]["message"], body
    return body  # type: ignore[no-any-return]


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.fixture
def store(aira: RunAira, aira_home: Path) -> Path:
    out = aira("model", "init")
    assert out.returncode == 0, out.stderr
    return aira_home / "models" / "store.sqlite3"


# -- 4e, 7: one strict reader for every JSON input -------------------------------------------


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (DEEP, f"nested deeper than {MAX_DEPTH} levels"),
        ("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2), f"nested deeper than {MAX_DEPTH}"),
        ('{"target": NaN}', "NaN"),
        ('{"target": Infinity}', "Infinity"),
        ('{"target": 1e999}', "out of range"),
        ('{"target": "b:x", "target": "b:y"}', "duplicate key"),
    ],
)
def test_json_arguments_are_read_strictly(aira: RunAira, store: Path, value, says) -> None:
    before = store.read_bytes()
    for args, code in (
        (["query", "massProperties", "--args", value], "ARGS_INVALID"),
        (["model", "read", "--select", value], "SELECT_PATH_INVALID"),
    ):
        if args[0] == "model" and not value.startswith("["):
            args = ["model", "read", "--select", f"[{value}]"]
        err = refused(aira(*args), code)
        assert says in err and args[2] in err, err  # names the argument
        json_error(aira(*args, "--json"), code)
    assert store.read_bytes() == before


def test_an_argument_that_is_not_utf8_is_refused(store: Path, aira_process: RunAira) -> None:
    """A real process: how the interpreter hands undecodable argv bytes to the command."""
    out = aira_process("query", "massProperties", "--args", b'{"target": "\xff"}')
    assert "not UTF-8" in refused(out, "ARGS_INVALID")


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b'{"ops": ' + DEEP.encode(), f"nested deeper than {MAX_DEPTH} levels"),
        (b'{"ops": [], "x": NaN}', "NaN"),
        (b'{"ops": [], "x": -Infinity}', "Infinity"),
        (b'{"ops": [], "x": "\xff"}', "not UTF-8"),
        (b'{"ops": [], "ops": []}', "duplicate key"),
        (b"", "is not JSON"),
    ],
)
def test_json_files_are_read_strictly_and_named(
    aira: RunAira, store: Path, tmp_path: Path, aira_home: Path, data: bytes, says: str
) -> None:
    """Item 8 too: the message names the file given, never "manifest.json"."""
    path = write(tmp_path / "input.json", data)
    before = store.read_bytes()
    cases = [
        (["model", "patch", str(path)], "INPUT_NOT_JSON", "patch 'input.json'"),
        (["plan", "check", str(path)], "INPUT_NOT_JSON", "plan 'input.json'"),
        (["model", "init", "--from", str(path), "--store", str(tmp_path / "new.sqlite3")],
         "INPUT_NOT_JSON", "document 'input.json'"),
        (["run", "--script", str(path)], "SCRIPT_INVALID", "script 'input.json'"),
        (["bench", "discovery", "--queries", str(path)], "BENCH_QUERIES_INVALID", "'input.json'"),
    ]  # fmt: skip
    for args, code, names in cases:
        err = refused(aira(*args), code)
        assert says in err and names in err and "manifest.json" not in err, err
        json_error(aira(*args, "--json"), code)
    assert store.read_bytes() == before
    assert not (tmp_path / "new.sqlite3").exists()
    assert not (aira_home / "runs").exists()


def test_grant_and_intent_files_are_named_in_their_errors(
    aira: RunAira, store: Path, tmp_path: Path
) -> None:
    step = {"id": "s1", "capability": "cap:exact.box@1", "args": {}}
    plan = write(
        tmp_path / "plan.json",
        json.dumps({"baseRevision": "rev:sha256:" + "0" * 64, "steps": [step]}),
    )
    empty = write(tmp_path / "empty.json", b"")
    for option, what in (("--grant", "grant"), ("--intent", "intent frame")):
        err = refused(aira("plan", "check", str(plan), option, str(empty)), "INPUT_NOT_JSON")
        assert f"{what} 'empty.json' is not JSON" in err and "manifest.json" not in err, err


def test_output_that_json_cannot_hold_is_an_error_not_invalid_json(capsys) -> None:
    for value in (float("nan"), float("inf"), {"a": [float("-inf")]}, "\ud800"):
        with pytest.raises(AiraError) as caught:
            _output._print_json({"data": value})
        assert caught.value.code == "OUTPUT_NOT_JSON"
    assert capsys.readouterr().out == ""  # nothing half printed
    _output._print_json({"volume": 1.5})
    assert json.loads(capsys.readouterr().out) == {"volume": 1.5}


# -- 9: --json failures are JSON ---------------------------------------------------------------


def test_every_json_failure_prints_one_json_error_object(aira: RunAira, tmp_path: Path) -> None:
    cases = [
        (["catalog", "lint", str(tmp_path / "nowhere")], "PACKAGE_PATH_INVALID"),
        (["model", "show"], "STORE_UNAVAILABLE"),
        (["model", "patch", str(tmp_path / "missing.json")], "INPUT_UNREADABLE"),
        (["trace", "show", str(tmp_path / "missing.jsonl")], "TRAJECTORY_INVALID"),
    ]
    for args, code in cases:
        json_error(aira(*args, "--json"), code)
        # Without --json: the stderr line only.
        assert aira(*args).stdout == ""


def test_a_refused_patch_lists_every_problem_in_json(aira: RunAira, store: Path, tmp_path) -> None:
    def dangling(n: int) -> dict[str, Any]:
        return {"op": "body.add", "body": {"id": f"b{n}", "label": f"x{n}", "tip": f"n40{n}"}}

    patch = write(tmp_path / "two.json", json.dumps({"ops": [dangling(1), dangling(2)]}))
    out = aira("model", "patch", str(patch), "--json")
    body = json_error(out, "AMIR_DANGLING_REFERENCE")
    assert len(body["errors"]) == 2 and body["errors"][0] == body["error"]
    assert len(out.stderr.splitlines()) == 2  # one `error:` line per problem


# -- 10: usage errors have a code --------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["model", "log", "--limit", "abc"], "--limit"),
        (["trust", "add", "pub", "AAAA", "--expires", "notadate"], "--expires"),
        (["model", "frobnicate"], "frobnicate"),
        (["model", "patch"], "Missing argument 'patch'"),
        (["query", "massProperties", "--nope"], "--nope"),
    ],
)
def test_usage_errors_get_a_code_and_exit_2(aira: RunAira, args: list[str], says: str) -> None:
    err = refused(aira(*args), "USAGE_INVALID", status=2)
    assert says in err and "--help" in err
    assert len(err.splitlines()) == 1
    json_error(aira(*args, "--json"), "USAGE_INVALID", status=2)


def test_help_and_bare_groups_still_print_help(aira: RunAira) -> None:
    out = aira("--help")
    assert out.returncode == 0 and "Usage" in out.stdout and out.stderr == ""
    out = aira("model")  # no_args_is_help: the help, as typer prints it
    assert out.returncode == 2 and "Usage" in out.stdout + out.stderr
    assert "error:" not in out.stderr


def test_exit_codes_and_streams_of_a_real_process(aira_process: RunAira) -> None:
    """The other tests run the command line in process: here the process itself, as a shell
    sees it. Success, a refused input (with --json), a usage error and a bare group: the exit
    status, what goes to stdout and what to stderr."""
    out = aira_process("schema")
    assert (out.returncode, out.stderr) == (0, "") and "capability-descriptor" in out.stdout
    out = aira_process("model", "show", "--json")
    assert out.returncode == 1 and out.stderr.startswith("error: STORE_UNAVAILABLE: ")
    assert json.loads(out.stdout)["error"]["code"] == "STORE_UNAVAILABLE"
    out = aira_process("model", "log", "--limit", "abc")
    assert (out.returncode, out.stdout) == (2, "") and out.stderr.startswith("error: USAGE_INV")
    out = aira_process("model")
    assert out.returncode == 2 and "Usage" in out.stdout + out.stderr
    assert "error:" not in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["model"],
        ["model", "patch", "--help"],
        ["model", "show", "--json"],
        ["model", "log", "--limit", "abc"],
        ["schema"],
        ["catalog", "list"],
        ["trust", "list"],
    ],
)
def test_the_in_process_runner_prints_what_a_process_prints(
    aira: RunAira, aira_process: RunAira, args: list[str]
) -> None:
    """The command tests run in process (the ``aira`` fixture): it must show what a user's
    process shows, byte for byte: help, tables, errors, exit status. (Not ``aira plugins``:
    a process lists the installed plugins that AIRA_PLUGINS="" disabled, the hermetic test
    process has none.)"""
    ours, theirs = aira(*args), aira_process(*args)
    assert (ours.returncode, ours.stdout, ours.stderr) == (
        theirs.returncode,
        theirs.stdout,
        theirs.stderr,
    )


# -- the runner: a refused run leaves no directory ---------------------------------------------


def test_a_run_refused_by_the_catalog_leaves_no_run_directory(tmp_path: Path) -> None:
    from aira_core.model.patch import PatchRejected
    from aira_core.step.runner import run_script
    from aira_core.step.trajectory import DecisionScript

    script = DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": "refused",
            "intent": {"goal": "a plate"},
            "decisions": [{"act": "read"}],
            # An AMIR document, but no admitted capability provides its operation.
            "document": {"nodes": [{"id": "n1", "op": "foo.bar@1.0.0", "inputs": {}}]},
        },
        by_name=False,
    )
    run = tmp_path / "runs" / "refused-1"
    with pytest.raises(PatchRejected) as caught:
        run_script(script, kernel=None, store=run / "store.sqlite3", trajectory=run / "t.jsonl")
    assert caught.value.code == "AMIR_OPERATION_UNKNOWN"
    assert not (tmp_path / "runs").exists()
