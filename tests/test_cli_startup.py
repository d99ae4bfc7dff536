"""`aira --help` stays fast because it imports nothing heavy: no pydantic, no plugin, no
cadquery, httpx or mcp. (Its wall time is measured by benchmarks/bench_cli_help.py.)"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pydantic", "jsonschema", "cryptography", "cadquery", "OCP", "httpx", "mcp")


def test_help_imports_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from aira_core import cli\n"
        "try:\n"
        "    cli.app(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split("\n")[-2].split())
    assert "typer" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_help_through_the_entry_point_imports_nothing_heavy() -> None:
    """execute() (what `aira`'s main() runs) handles errors itself: --help still loads
    nothing heavy."""
    code = (
        "import sys\n"
        "sys.argv = ['aira', '--help']\n"
        "from aira_core import cli\n"
        "assert cli.execute() == 0\n"
        "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split("\n")[-2].split())
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
