"""`aira --help` stays fast because it imports nothing heavy: no pydantic, no plugin, no
cadquery, httpx or mcp, nor rich's progress display. (Its wall time is measured by
benchmarks/bench_cli_help.py.)"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pydantic", "jsonschema", "cryptography", "cadquery", "OCP", "httpx", "mcp")
HELP = "try:\n    cli.app(['--help'])\nexcept SystemExit:\n    pass\n"
ENTRY_POINT = "sys.argv = ['aira', '--help']\nassert cli.execute() == 0\n"


def modules_after(run: str) -> set[str]:
    """Every module a fresh interpreter has loaded after importing the CLI and ``run``."""
    code = (
        "import sys\nfrom aira_core import cli\n" + run + "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split("\n")[-2].split())


def packages(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_nothing_heavy() -> None:
    loaded = packages(modules_after(HELP))
    assert "typer" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_help_through_the_entry_point_imports_nothing_heavy() -> None:
    """execute() (what `aira`'s main() runs) handles errors itself: --help still loads
    nothing heavy."""
    loaded = packages(modules_after(ENTRY_POINT))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_help_does_not_import_rich_progress() -> None:
    """The progress display (cli._output.progress) is imported by the commands that show it."""
    assert "rich.progress" not in modules_after(HELP)


def test_the_entry_points_first_step_imports_only_the_standard_library() -> None:
    """`aira` starts in aira_core.cli, which decides between the warm host and the command
    table before importing either: a served command never pays for typer."""
    code = "import sys\nfrom aira_core import cli\nprint(' '.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = packages(set(out.stdout.split()))
    assert not loaded & {"typer", "rich", "pydantic", "click"}, sorted(loaded)
    assert "aira_core.cli.warm" not in out.stdout.split()
