"""The ``aira`` command line: :func:`main`, the console script.

With ``AIRA_WARM=1``, :func:`main` first offers a read-only command to the user's warm CLI
host (:mod:`aira_core.cli.warm`), which answers it without a start; otherwise, and for every
command the host does not serve, the command table (:mod:`aira_core.cli.commands`) runs in
this process. This module imports only the standard library, so that offering costs almost
nothing; ``app``, ``execute`` and ``INTERRUPTED`` are the table's, imported on first use.
"""

from __future__ import annotations

import sys
from typing import Any

from aira_core.cli._exit import exit_now

_TABLE = ("app", "execute", "INTERRUPTED")


def main() -> None:
    """Console-script entry point (``aira``, ``python -m aira_core.cli``): the warm host's
    answer, else :func:`~aira_core.cli.commands.execute`; then the process ends with its
    status at once (:func:`~aira_core.cli._exit.exit_now`)."""
    from aira_core.warm import enabled

    status = None
    if enabled():  # off: not even the host's client is imported
        from aira_core.cli.warm import served

        status = served(sys.argv[1:])
    if status is None:
        from aira_core.cli.commands import execute

        status = execute()
    exit_now(status)


def __getattr__(name: str) -> Any:
    if name in _TABLE:
        from aira_core.cli import commands

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
