"""The two ways tests run the ``aira`` command line, behind the ``aira`` and ``aira_process``
fixtures of conftest.py. One signature, ``run(*args, home=None, input=None, **env)``, and one
result type, ``subprocess.CompletedProcess`` (``returncode``, ``stdout``, ``stderr``)::

    def test_list(aira: RunAira) -> None:
        out = aira("catalog", "list", "--json")
        assert out.returncode == 0, out.stderr

``in_process`` runs ``execute()`` (what ``main()`` runs before it ends the process) in this
process under typer's ``CliRunner`` (stderr apart from stdout): fast, and the command sees
the plugins a test registered with ``register_plugin``.
``new_process`` starts ``python -m aira_core.cli``: for what needs a real process (startup
and imports, argv bytes, installed entry points selected by ``AIRA_PLUGINS``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

RunAira = Callable[..., "subprocess.CompletedProcess[str]"]

WIDTH = "300"
"""The terminal width both give Rich: wide enough that no table cell wraps."""

PROCESS_ONLY = ("AIRA_PLUGINS", "PYTHONPATH")
"""Read when a process starts (plugin discovery, sys.path): meaningless in this process."""


def _env(home: Path | None, env: dict[str, str]) -> dict[str, str]:
    return {"COLUMNS": WIDTH, **({"AIRA_HOME": str(home)} if home is not None else {}), **env}


def in_process(
    *args: str | os.PathLike[str] | bytes,
    home: Path | None = None,
    input: str | bytes | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """``aira *args`` through ``main()``, so a failure prints as a user sees it (``error:
    CODE: …`` on stderr, exit 1 or 2). ``home`` (AIRA_HOME) and ``env`` apply to this call
    only; the plugins are this process's hermetic ones. An exception ``main()`` lets through
    (``AIRA_DEBUG=1``) propagates, traceback and all."""
    from typer._click import formatting
    from typer.testing import CliRunner

    from aira_core import cli

    if set(env) & set(PROCESS_ONLY):
        raise ValueError(f"{sorted(set(env) & set(PROCESS_ONLY))} need a new process")
    argv = [os.fsdecode(a) for a in args]  # bytes as argv holds them: lone surrogates
    saved, status = sys.argv, 0
    with CliRunner().isolation(input=input, env=_env(home, env)) as (out, err, _):
        # The runner forces help text to 80 columns; a process computes its width from the
        # terminal (COLUMNS), as click does outside tests.
        formatting.FORCED_WIDTH = None
        sys.argv = ["aira", *argv]
        try:
            status = cli.execute()  # main() would end this process
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        finally:
            sys.argv = saved
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = (s.getvalue().decode().replace("\r\n", "\n") for s in (out, err))
    return subprocess.CompletedProcess(["aira", *argv], status, stdout, stderr)


def new_process(
    *args: str | os.PathLike[str] | bytes,
    home: Path | None = None,
    input: str | None = None,
    timeout: float = 60,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """``python -m aira_core.cli *args`` with this process's environment plus ``env``. A
    ``PYTHONPATH`` given goes before the inherited one, which may be what points the
    interpreter at the aira_core under test (a checkout other than the installed one)."""
    if "PYTHONPATH" in env and os.environ.get("PYTHONPATH"):
        env = {**env, "PYTHONPATH": os.pathsep.join([env["PYTHONPATH"], os.environ["PYTHONPATH"]])}
    return subprocess.run(
        [sys.executable, "-m", "aira_core.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **_env(home, env)},
    )
