"""Issue 13, items 2, 4 and 8 and two of its "also" points: the files a command writes.

- ``aira model export --out`` onto Aira's own stores, a user's file, a symlink; ``catalog
  keygen`` and ``catalog sign`` onto a symlink (one writer: ``aira_core/files.py``).
- ``aira run --trajectory`` onto a path that does not resolve (``nodir/../existing.json``),
  ``/dev/null``, a symlink; a refused run leaves nothing behind.
- ``aira run`` of a starting document whose own assertions fail: refused as ``model init
  --from`` refuses it, before anything is made.
- A resumed run whose last line is a complete NaN line, or whose trajectory lost its
  discovery records: refused with a stable code, nothing changed.

Each test snapshots the files before the attack and asserts they are unchanged after.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira
from runtime_factory import VOLUME_OUT_OF_RANGE
from test_hostile_kernels import plate_document
from test_plan_cli import PLUGIN, _install, plate_ops
from test_step_loop import killed_run, resume_from, script
from unchanged import assert_unchanged, snapshot

from aira_core.diagnostics import AiraError
from aira_core.step.trajectory import TrajectoryWriter, read_trajectory

SCRIPT = {
    "format": "aira.decision-script/1",
    "name": "plate",
    "intent": {"goal": "a plate"},
    "decisions": [{"act": "read"}],
}


@pytest.fixture
def installed(register_plugin, aira: RunAira, tmp_path: Path) -> RunAira:  # type: ignore[no-untyped-def]
    """``aira`` with the FAKE kernel plugin registered in process (it exports ``json``)."""
    return _install(register_plugin, aira, tmp_path, "aira-fake-kernel", PLUGIN)


@pytest.fixture
def plate(installed: RunAira, tmp_path: Path) -> RunAira:
    """A model store holding a plate, on the FAKE kernel."""
    assert installed("model", "init").returncode == 0
    ops = tmp_path / "plate.json"
    ops.write_text(json.dumps({"ops": plate_ops()}))
    out = installed("model", "patch", str(ops))
    assert out.returncode == 0, out.stderr
    return installed


def refused(out: Any, code: str) -> None:
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"error: {code}:" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "INTERNAL_ERROR" not in out.stderr


def export(aira: RunAira, out: Path | str, *more: str) -> Any:
    return aira("model", "export", "--format", "json", "--out", str(out), *more)


def no_temporary_files(directory: Path) -> None:
    assert not [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


# -- item 2: model export --out ------------------------------------------------------------------


def test_export_never_overwrites_the_model_store_nor_the_trust_store(
    plate: RunAira, aira_home: Path, tmp_path: Path
) -> None:
    store = aira_home / "models" / "store.sqlite3"
    trust = aira_home / "trust.json"
    catalog = aira_home / "catalog.sqlite3"
    assert store.is_file() and trust.is_file() and catalog.is_file()
    hard = tmp_path / "hard-link.db"
    os.link(store, hard)  # the same file under another name
    link = tmp_path / "store-link"
    link.symlink_to(store)
    before = snapshot(aira_home, tmp_path)
    for target in (store, trust, catalog, Path(f"{store}-wal"), hard):
        for force in ([], ["--force"]):
            refused(export(plate, target, *force), "OUTPUT_PROTECTED")
    for force in ([], ["--force"]):
        refused(export(plate, link, *force), "OUTPUT_PROTECTED")  # compared resolved
    assert_unchanged(before, aira_home, tmp_path)
    # The store still works: its history is all there.
    log = json.loads(plate("model", "log", "--json").stdout)["records"]
    assert [r["kind"] for r in log] == ["commit", "init"]


def test_export_never_overwrites_a_store_named_with_store(plate: RunAira, tmp_path: Path) -> None:
    other = tmp_path / "project.sqlite3"
    assert plate("model", "init", "--store", str(other)).returncode == 0
    before = snapshot(tmp_path)
    refused(export(plate, other, "--store", str(other), "--force"), "OUTPUT_PROTECTED")
    assert_unchanged(before, tmp_path)


def test_export_refuses_an_existing_file_unless_force_and_replaces_it_atomically(
    plate: RunAira, tmp_path: Path
) -> None:
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    twin = tmp_path / "twin.txt"
    os.link(mine, twin)  # written into, the twin would change too
    before = snapshot(tmp_path)
    refused(export(plate, mine), "OUTPUT_EXISTS")
    assert_unchanged(before, tmp_path)

    out = export(plate, mine, "--force")
    assert out.returncode == 0, out.stderr
    assert json.loads(mine.read_text())  # the export, whole
    assert twin.read_text() == "my notes\n"  # a new file took the name; none was written into
    no_temporary_files(tmp_path)

    fresh = tmp_path / "fresh.json"
    assert export(plate, fresh).returncode == 0
    assert json.loads(fresh.read_text()) and oct(fresh.stat().st_mode & 0o777) != "0o600"
    no_temporary_files(tmp_path)


def test_export_never_writes_through_a_symlink(plate: RunAira, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "would-be-created")
    before = snapshot(tmp_path)
    refused(export(plate, link), "OUTPUT_EXISTS")
    refused(export(plate, dangling), "OUTPUT_EXISTS")
    assert_unchanged(before, tmp_path)

    assert export(plate, link, "--force").returncode == 0
    assert victim.read_text() == "keep me\n"  # the link was replaced, not its target
    assert not link.is_symlink() and json.loads(link.read_text())
    assert export(plate, dangling, "--force").returncode == 0
    assert not (tmp_path / "would-be-created").exists()


def test_export_resolves_the_path_before_it_checks(plate: RunAira, tmp_path: Path) -> None:
    existing = tmp_path / "existing.json"
    existing.write_text("{}")
    before = snapshot(tmp_path)
    refused(export(plate, tmp_path / "nodir" / ".." / "existing.json"), "OUTPUT_EXISTS")
    refused(export(plate, tmp_path / "nodir" / "x.json"), "OUTPUT_UNWRITABLE")
    refused(export(plate, tmp_path, "--force"), "OUTPUT_UNWRITABLE")  # a directory
    assert_unchanged(before, tmp_path)


def test_a_refused_export_writes_nothing_before_the_kernel_runs(
    plate: RunAira, tmp_path: Path
) -> None:
    existing = tmp_path / "existing.json"
    existing.write_text("{}")
    before = snapshot(tmp_path)
    # an unknown format: the kernel writes nothing, and nothing is written
    refused(
        plate("model", "export", "--format", "xyz", "--out", str(tmp_path / "x")), "EXPORT_FAILED"
    )
    assert_unchanged(before, tmp_path)


# -- item 2: keygen and sign ----------------------------------------------------------------------


def test_keygen_never_writes_through_a_symlink(aira: RunAira, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "key.pem"
    link.symlink_to(victim)
    dangling = tmp_path / "dangling.pem"
    dangling.symlink_to(tmp_path / "would-be-created")
    before = snapshot(tmp_path)
    refused(aira("catalog", "keygen", str(link)), "KEY_EXISTS")
    refused(aira("catalog", "keygen", str(dangling)), "KEY_EXISTS")
    assert_unchanged(before, tmp_path)
    key = tmp_path / "new.pem"
    assert aira("catalog", "keygen", str(key)).returncode == 0
    assert key.stat().st_mode & 0o777 == 0o600
    no_temporary_files(tmp_path)


def test_sign_replaces_a_symlinked_signature_without_writing_through_it(
    aira: RunAira, tmp_path: Path, aira_home: Path
) -> None:
    from factory import manifest, write_package

    key = tmp_path / "key.pem"
    assert aira("catalog", "keygen", str(key)).returncode == 0
    assert aira("trust", "add", "other-vendor", _public(aira, tmp_path)).returncode == 0
    trust = aira_home / "trust.json"
    pkg = write_package(tmp_path / "pkg", manifest())
    sig = pkg / "manifest.sig"
    sig.symlink_to(trust)
    before = snapshot(aira_home, tmp_path)
    refused(aira("catalog", "sign", str(pkg), "--key", str(key)), "OUTPUT_PROTECTED")
    assert_unchanged(before, aira_home, tmp_path)

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    sig.unlink()
    sig.symlink_to(victim)
    out = aira("catalog", "sign", str(pkg), "--key", str(key))
    assert out.returncode == 0, out.stderr
    assert victim.read_text() == "keep me\n"  # replaced the link, not written through it
    assert not sig.is_symlink() and json.loads(sig.read_text())["keyId"]


def _public(aira: RunAira, tmp_path: Path) -> str:
    out = aira("catalog", "keygen", str(tmp_path / "other.pem"))
    return out.stdout.split()[2]


# -- item 4: run --trajectory ---------------------------------------------------------------------


@pytest.fixture
def good_script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def run(aira: RunAira, script_path: Path, *more: str) -> Any:
    return aira("run", "--script", str(script_path), *more)


def test_a_trajectory_path_through_a_missing_directory_is_resolved_first(
    installed: RunAira, good_script: Path, tmp_path: Path, aira_home: Path
) -> None:
    existing = tmp_path / "existing.json"
    existing.write_text("{}\n")
    before = snapshot(aira_home, tmp_path)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        refused(
            run(installed, good_script, "--trajectory", "nodir/../existing.json"),
            "TRAJECTORY_EXISTS",
        )
    finally:
        os.chdir(cwd)
    assert_unchanged(before, aira_home, tmp_path)  # no nodir/, no run directory, no store


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_run_refused_for_dev_null_leaves_nothing(
    installed: RunAira, good_script: Path, tmp_path: Path, aira_home: Path, force: list[str]
) -> None:
    before = snapshot(aira_home, tmp_path)
    out = run(installed, good_script, "--trajectory", "/dev/null", *force)
    refused(out, "OUTPUT_UNWRITABLE" if force else "TRAJECTORY_EXISTS")
    assert_unchanged(before, aira_home, tmp_path)
    assert not (aira_home / "runs").exists()
    assert Path("/dev/null").is_char_device()


def test_a_trajectory_is_never_written_through_a_symlink_or_into_a_file(
    installed: RunAira, good_script: Path, tmp_path: Path, aira_home: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    twin = tmp_path / "twin.txt"
    os.link(victim, twin)
    link = tmp_path / "t.jsonl"
    link.symlink_to(victim)
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    before = snapshot(aira_home, tmp_path)
    for target in (link, victim, empty):
        refused(run(installed, good_script, "--trajectory", str(target)), "TRAJECTORY_EXISTS")
    for target in (aira_home / "trust.json", aira_home / "models" / "store.sqlite3"):
        out = run(installed, good_script, "--trajectory", str(target), "--force")
        refused(out, "OUTPUT_PROTECTED")
    assert_unchanged(before, aira_home, tmp_path)

    # --force: a new file takes the name; the old one is not written into
    out = run(installed, good_script, "--trajectory", str(victim), "--force")
    assert out.returncode == 1 and "cannotProceed" in out.stdout, out.stderr  # the script abstains
    assert twin.read_text() == "keep me\n"
    assert read_trajectory(victim)[0]["script"] == "plate"
    out = run(installed, good_script, "--trajectory", str(link), "--force")
    assert twin.read_text() == "keep me\n" and not link.is_symlink()
    no_temporary_files(tmp_path)


def test_a_trajectory_in_a_new_directory_is_made_with_it(
    installed: RunAira, good_script: Path, tmp_path: Path
) -> None:
    target = tmp_path / "new" / "sub" / "t.jsonl"
    run(installed, good_script, "--trajectory", str(target))
    assert read_trajectory(target)[0]["script"] == "plate"


# -- item 8: a starting document whose own assertions fail -----------------------------------


def failing_document() -> dict[str, Any]:
    """The 12,000 mm³ plate of test_hostile_kernels, asserting a volume of at most 100 mm³."""
    document = plate_document()
    document["assertions"][0]["args"] = {"min": {"value": 1}, "max": {"value": 100}}
    return document


def test_run_refuses_a_document_whose_assertions_fail_as_model_init_does(
    installed: RunAira, tmp_path: Path, aira_home: Path
) -> None:
    document = tmp_path / "doc.json"
    document.write_text(json.dumps(failing_document()))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**SCRIPT, "document": failing_document()}))
    trajectory = tmp_path / "out" / "t.jsonl"
    # Every command that builds the catalog keeps its state (catalog.sqlite3) up to date:
    # what must not change is everything else.
    home = [aira_home / "models", aira_home / "runs", aira_home / "trust.json"]
    ours = [*home, *(p for p in tmp_path.iterdir() if p != aira_home), tmp_path / "out"]
    before = snapshot(*ours)
    init = installed("model", "init", "--from", str(document))
    refused(init, VOLUME_OUT_OF_RANGE)
    for more in ([], ["--trajectory", str(trajectory)]):
        out = run(installed, bad, *more)
        refused(out, VOLUME_OUT_OF_RANGE)
        assert out.stderr == init.stderr  # the same refusal, from the same write path
    assert_unchanged(before, *ours)  # no run directory, store or trajectory


# -- also: resuming damaged trajectories -------------------------------------------------------


@pytest.mark.parametrize("newline", [b"\n", b""])
def test_a_complete_nan_last_line_is_damage_not_a_torn_write(
    tmp_path: Path, newline: bytes
) -> None:
    ctx, kernel, path, decisions, _ = killed_run(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])
    last["usage"]["usd"] = float("nan")
    damaged = b"".join(lines[:-1]) + json.dumps(last).encode() + newline
    assert b"NaN" in damaged
    path.write_bytes(damaged)
    before = snapshot(tmp_path)
    with pytest.raises(AiraError) as caught:
        resume_from(ctx, kernel, path, script(decisions))
    assert caught.value.code == "TRAJECTORY_INVALID"
    assert f"line {len(lines)}" in caught.value.diagnostic.message
    assert_unchanged(before, tmp_path)


def test_a_resumed_trajectory_over_its_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A continued trajectory is read whole once, by the writer that continues it (the
    library entry point, below ``aira run --resume``): within the cap of every trajectory."""

    _ctx, _kernel, path, _decisions, _first = killed_run(tmp_path)
    monkeypatch.setenv("AIRA_MAX_TRAJECTORY_BYTES", str(path.stat().st_size - 1))
    before = snapshot(tmp_path)
    with pytest.raises(AiraError) as caught:
        TrajectoryWriter(path, {})
    assert caught.value.code == "INPUT_TOO_LARGE", caught.value.diagnostic.message
    assert_unchanged(before, tmp_path)


def test_a_trajectory_without_its_discovery_records_is_a_resume_mismatch(tmp_path: Path) -> None:
    ctx, kernel, path, decisions, _ = killed_run(tmp_path)
    header, *records = [json.loads(line) for line in path.read_bytes().splitlines()]
    # Drop the lookups that described the plan's capabilities; number the rest on.
    kept = [r for r in records if r["decision"].get("act") != "lookup"]
    assert len(kept) < len(records) and kept[0]["decision"]["act"] == "plan"
    for n, record in enumerate(kept):
        record["step"] = n
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, *kept]))
    before = snapshot(tmp_path)
    with pytest.raises(AiraError) as caught:
        resume_from(ctx, kernel, path, script(decisions))
    assert caught.value.code == "RUN_RESUME_MISMATCH", caught.value.diagnostic.message
    assert_unchanged(before, tmp_path)


def test_aira_run_resume_refuses_a_nan_last_line(
    installed: RunAira, good_script: Path, aira_home: Path
) -> None:
    run(installed, good_script)  # reads, then abstains: two steps and the end record
    (where,) = (aira_home / "runs").iterdir()
    path = where / "trajectory.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["end"]
    last = json.loads(lines[-2])
    last["timings"]["decideMs"] = float("inf")
    path.write_bytes(b"".join(lines[:-2]) + json.dumps(last).encode() + b"\n")  # end lost
    before = snapshot(aira_home / "runs")
    out = run(installed, good_script, "--resume", str(where))
    refused(out, "TRAJECTORY_INVALID")
    assert "Infinity" in out.stderr
    assert_unchanged(before, aira_home / "runs")
    # A symlinked trajectory is not continued either.
    path.rename(where / "elsewhere.jsonl")
    path.symlink_to(where / "elsewhere.jsonl")
    before = snapshot(aira_home / "runs")
    refused(run(installed, good_script, "--resume", str(where)), "TRAJECTORY_INVALID")
    assert_unchanged(before, aira_home / "runs")


# -- the writer itself ---------------------------------------------------------------------------


def test_a_new_file_holds_its_name_and_a_discard_takes_back_only_what_it_made(
    tmp_path: Path,
) -> None:
    from aira_core.files import NewFile

    target = tmp_path / "a" / "b" / "t.jsonl"
    first = NewFile(target)
    with pytest.raises(AiraError) as caught:
        NewFile(target)  # two runs never share a trajectory
    assert caught.value.code == "OUTPUT_EXISTS"
    first.discard()
    assert not (tmp_path / "a").exists()  # the directories made for it went with it

    kept = NewFile(target)
    (target.parent / "other").write_text("someone else's")
    kept.discard()  # the directory is not empty: it stays, with what another put there
    assert not target.exists() and (target.parent / "other").read_text() == "someone else's"

    taken = NewFile(target)
    target.unlink()
    target.write_text("took the name since")
    taken.discard()
    assert target.read_text() == "took the name since"  # not the file it made: kept


def test_write_file_leaves_no_temporary_file_when_refused(tmp_path: Path) -> None:
    from aira_core.files import write_file

    (tmp_path / "dir").mkdir()
    for target, force in ((tmp_path / "dir", True), (tmp_path / "dir", False)):
        with pytest.raises(AiraError) as caught:
            write_file(target, b"x", force=force)
        assert caught.value.code == ("OUTPUT_UNWRITABLE" if force else "OUTPUT_EXISTS")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "aira-home") == ["dir"]
