"""Issue 32, items 3 and 4: an option out of range and a settings file nested without end.
``aira run "…" --budget-usd 0`` (or -0) was ``INTERNAL_ERROR: ValueError`` and ``inf`` or
``1e309`` were no limit; a ``providers.toml`` nested 2,000 deep was ``INTERNAL_ERROR:
RecursionError``. Each is its code now, where the option or file is read, and AIRA_HOME is
as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runner import RunAira
from unchanged import assert_unchanged, snapshot


@pytest.mark.parametrize("amount", ["0", "-0", "inf", "1e309", "nan", "-1"])
def test_a_budget_that_is_no_positive_amount_is_a_usage_error(
    aira: RunAira, aira_home: Path, amount: str
) -> None:
    before = snapshot(aira_home)
    out = aira("run", "a 20 mm cube", "--budget-usd", amount, "--provider", "deepseek")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "USAGE_INVALID" in out.stderr and "--budget-usd" in out.stderr
    assert "Traceback" not in out.stderr and "INTERNAL_ERROR" not in out.stderr
    assert_unchanged(before, aira_home)


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 2000 + "]" * 2000,  # deep enough for the parser's own recursion
        "[providers.p]\nx = " + "[" * 40 + "]" * 40,  # within it, past the bound
        "[providers.p]\nx = " + "{a = " * 40 + "1" + "}" * 40,
    ],
    ids=["arrays-2000", "arrays-40", "tables-40"],
)
def test_a_settings_file_nested_without_end_is_refused(
    aira_process: RunAira, aira_home: Path, text: str
) -> None:
    (aira_home / "providers.toml").write_text(text, encoding="utf-8")
    before = snapshot(aira_home)
    # a process with the kernel: a run reads the settings after it has one
    out = aira_process("run", "a 20 mm cube", "--provider", "deepseek", AIRA_PLUGINS="occt")
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "PROVIDER_CONFIG_INVALID" in out.stderr and "deeper than 32" in out.stderr
    assert "Traceback" not in out.stderr
    assert_unchanged(before, aira_home)


@pytest.mark.parametrize("command", ["show", "retry"])
@pytest.mark.parametrize("given", ["x" * 5000, "a\x1b[31mred", "task_0123", "task_" + "g" * 32])
def test_a_task_id_that_is_none_is_refused_short_and_escaped(
    aira: RunAira, aira_home: Path, command: str, given: str
) -> None:
    """`aira tasks show ID` echoed an unchecked id, whole: 5,000 characters, or a terminal
    escape. It is checked first, and shown short and escaped."""
    before = snapshot(aira_home)
    out = aira("tasks", command, given, "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "LEDGER_TASK_UNKNOWN" in out.stderr and "is not a task id" in out.stderr
    assert len(out.stderr) < 400 and "\x1b" not in out.stderr + out.stdout
    assert_unchanged(before, aira_home)
