"""`aira model …`: init, patch, log, show, read, diff, revert, each with --json and codes."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import RunAira


def ok_json(aira: RunAira, *args: str) -> dict:  # type: ignore[type-arg]
    out = aira(*args, "--json")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return json.loads(out.stdout)


def write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value))
    return path


def test_model_lifecycle_through_the_cli(aira: RunAira, tmp_path: Path, aira_home: Path) -> None:
    init = ok_json(aira, "model", "init")
    assert init["rev"].startswith("rev:sha256:")
    assert (aira_home / "models" / "store.sqlite3").is_file()

    add = write(
        tmp_path / "add.json",
        {
            "ops": [
                {
                    "op": "parameter.add",
                    "parameter": {
                        "id": "p1",
                        "label": "width",
                        "type": "Length",
                        "value": 20,
                        "min": 1,
                        "max": 100,
                    },
                }
            ]
        },
    )
    patched = ok_json(aira, "model", "patch", str(add))
    assert patched["from"] == init["rev"]

    summary = ok_json(aira, "model", "show")
    assert summary["rev"] == patched["rev"]
    assert summary["counts"]["parameters"] == 1
    assert summary["aliases"] == {"p:width": "p1"}

    page = ok_json(aira, "model", "read", "--select", '["parameters"]')
    assert page["rev"] == patched["rev"] and page["items"][0]["id"] == "p1"
    one = ok_json(aira, "model", "read", "--select", "parameters/p:width")
    assert one["items"][0]["value"] == 20

    diff = ok_json(aira, "model", "diff", init["rev"], "main")
    assert diff["changedBlocks"] == ["parameters"]

    log = ok_json(aira, "model", "log")
    assert [r["kind"] for r in log["records"]] == ["commit", "init"]

    reverted = ok_json(aira, "model", "revert", init["rev"])
    assert reverted["rev"] == init["rev"] and reverted["from"] == patched["rev"]
    log = ok_json(aira, "model", "log")
    assert [r["kind"] for r in log["records"]] == ["revert", "commit", "init"]


RANGE = "SELECT_RANGE_INVALID"


def test_model_cli_bad_input_gets_codes_and_changes_nothing(aira: RunAira, tmp_path) -> None:
    ok_json(aira, "model", "init")
    head = ok_json(aira, "model", "show")["rev"]
    cases = [
        (["model", "init"], "STORE_ALREADY_INITIALISED"),
        (["model", "show", "rev:sha256:0000"], "STORE_REVISION_UNKNOWN"),
        (["model", "read", "--select", "nodes/n:nope"], "ALIAS_UNKNOWN"),
        (["model", "read", "--select", "[broken"], "SELECT_PATH_INVALID"),
        (["model", "read", "--select", "widgets"], "SELECT_PATH_INVALID"),
        (["model", "log", "--branch", "feature/x"], "STORE_BRANCH_INVALID"),
        (["model", "log", "--limit", "99999999999999999999"], "STORE_ARGUMENT_INVALID"),
        (["model", "read", "--select", "nodes", "--limit", "99999999999999999999"], RANGE),
        (["model", "read", "--select", "nodes", "--offset", "99999999999999999999"], RANGE),
        (["model", "patch", str(tmp_path / "missing.json")], "INPUT_UNREADABLE"),
        (["model", "patch", str(write(tmp_path / "bad.json", {"ops": []}))], "PATCH_INVALID"),
        (
            [
                "model",
                "patch",
                str(
                    write(
                        tmp_path / "dangling.json",
                        {
                            "ops": [
                                {
                                    "op": "body.add",
                                    "body": {"id": "b1", "label": "x", "tip": "n404"},
                                }
                            ]
                        },
                    )
                ),
            ],
            "AMIR_DANGLING_REFERENCE",
        ),
        (
            [
                "model",
                "patch",
                str(
                    write(
                        tmp_path / "unknown-op.json",
                        {
                            "ops": [
                                {"op": "node.add", "node": {"id": "n1", "op": "exact.box@1.0.0"}}
                            ]
                        },
                    )
                ),
            ],
            "AMIR_OPERATION_UNKNOWN",
        ),
        (["model", "revert", head], "STORE_NO_CHANGE"),
    ]
    for args, code in cases:
        out = aira(*args)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert code in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert ok_json(aira, "model", "show")["rev"] == head
    assert len(ok_json(aira, "model", "log")["records"]) == 1


def test_model_cli_refuses_a_corrupt_store_without_touching_it(aira: RunAira, tmp_path) -> None:
    store = tmp_path / "broken.sqlite3"
    store.write_bytes(b"SQLite format 3\x00" + b"\x13" * 500)
    before = store.read_bytes()
    out = aira("model", "show", "--store", str(store))
    assert out.returncode == 1 and "STORE_CORRUPT" in out.stderr
    assert str(tmp_path) not in out.stderr
    assert store.read_bytes() == before


def test_read_commands_on_a_missing_store_create_nothing(
    aira: RunAira, tmp_path: Path, aira_home: Path
) -> None:
    typo = tmp_path / "typo" / "store.sqlite3"
    rev = "rev:sha256:" + "0" * 64
    for args in (
        ["model", "log"],
        ["model", "show"],
        ["model", "read", "--select", "nodes"],
        ["model", "diff", rev, "main"],
        ["model", "revert", rev],
    ):
        out = aira(*args, "--store", str(typo))
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert "STORE_UNAVAILABLE" in out.stderr and "aira model init" in out.stderr, args
        assert "Traceback" not in out.stderr
    assert not typo.parent.exists()
    # The default store too: nothing under AIRA_HOME until `aira model init`.
    out = aira("model", "show")
    assert out.returncode == 1 and "STORE_UNAVAILABLE" in out.stderr
    assert not (aira_home / "models").exists()
    assert ok_json(aira, "model", "init", "--store", str(typo))["rev"]
    assert typo.is_file()


def test_init_from_a_document_checks_operations_and_creates_nothing_when_refused(
    aira: RunAira, tmp_path: Path, aira_home: Path
) -> None:
    document = write(
        tmp_path / "doc.json",
        {
            "nodes": [{"id": "n1", "op": "foo.bar@1.0.0", "inputs": {"x": {"value": 1}}}],
            "bodies": [{"id": "b1", "label": "thing", "tip": "n1"}],
        },
    )
    out = aira("model", "init", "--from", str(document))
    assert out.returncode == 1 and "AMIR_OPERATION_UNKNOWN" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert not (aira_home / "models").exists()
    # A document without nodes needs no operation: it is accepted.
    params = write(
        tmp_path / "params.json",
        {"parameters": [{"id": "p1", "label": "w", "type": "Length", "value": 1}]},
    )
    assert ok_json(aira, "model", "init", "--from", str(params))["rev"]
    assert ok_json(aira, "model", "show")["aliases"] == {"p:w": "p1"}


def test_text_that_looks_like_markup_is_printed_as_written(aira: RunAira, tmp_path) -> None:
    """Commit messages are the user's text, not rich markup: "[/x]" must not fail the table."""
    ok_json(aira, "model", "init")
    add = write(
        tmp_path / "add.json",
        {
            "ops": [
                {
                    "op": "parameter.add",
                    "parameter": {"id": "p1", "label": "w", "type": "Length", "value": 2},
                }
            ]
        },
    )
    message = "[/x] widen [bold red]now"
    out = aira("model", "patch", str(add), "--message", message)
    assert out.returncode == 0, out.stderr
    log = aira("model", "log")  # wide (cli_runner.WIDTH): no cell wraps
    assert log.returncode == 0, log.stderr
    assert message in log.stdout
