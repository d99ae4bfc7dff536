"""Progress on long commands goes to stderr, only when asked for (a terminal, or
AIRA_PROGRESS=1), and never changes stdout: piped and --json output stay byte-identical."""

from __future__ import annotations

from pathlib import Path

from cli_runner import RunAira

from aira_core.cli import _output


def test_forced_progress_goes_to_stderr_and_leaves_stdout_alone(
    aira: RunAira, tmp_path: Path
) -> None:
    shown = aira("catalog", "list", home=tmp_path / "a", AIRA_PROGRESS="1")
    plain = aira("catalog", "list", home=tmp_path / "b")
    assert shown.returncode == plain.returncode == 0, shown.stderr
    assert "Building the catalog" in shown.stderr
    assert shown.stdout == plain.stdout
    assert plain.stderr == ""


def test_no_progress_when_stderr_is_not_a_terminal(aira: RunAira, tmp_path: Path) -> None:
    out = aira("catalog", "list", home=tmp_path, AIRA_PROGRESS="")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""


def test_json_output_shows_no_progress_and_is_unchanged(aira: RunAira, tmp_path: Path) -> None:
    shown = aira("catalog", "list", "--json", home=tmp_path / "a", AIRA_PROGRESS="1")
    plain = aira("catalog", "list", "--json", home=tmp_path / "b")
    assert shown.returncode == plain.returncode == 0, shown.stderr
    assert shown.stdout == plain.stdout
    assert shown.stderr == ""


def test_progress_off_and_quiet_yield_a_no_op(monkeypatch) -> None:
    monkeypatch.setenv("AIRA_PROGRESS", "0")
    with _output.progress("x", 3) as update:
        update(1, description="y")
    monkeypatch.setenv("AIRA_PROGRESS", "1")
    assert _output._progress_wanted(quiet=False)
    assert not _output._progress_wanted(quiet=True)


def test_forced_progress_renders_descriptions_as_plain_text(monkeypatch, capsys) -> None:
    monkeypatch.setenv("AIRA_PROGRESS", "1")
    with _output.progress("start", 2) as update:
        update(1, description="task [bold]x[/bold]")  # a name, not markup
        update(1)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "task [bold]x[/bold]" in captured.err


def test_a_run_shows_its_catalog_build_before_its_steps(register_plugin, tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("cadquery")
    import cli_runner

    import aira_kernel_occt.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")
    script = Path(__file__).resolve().parents[1] / "aira_core/step/scripts/parametric_edit.json"
    shown = cli_runner.in_process(
        "run", "--script", str(script), home=tmp_path / "a", AIRA_PROGRESS="1"
    )
    assert shown.returncode == 0, shown.stderr
    assert "Building the catalog" in shown.stderr and "Building" not in shown.stdout
    quiet = cli_runner.in_process(
        "run", "--script", str(script), "--json", home=tmp_path / "b", AIRA_PROGRESS="1"
    )
    assert quiet.returncode == 0 and quiet.stderr == ""  # --json: no progress at all
