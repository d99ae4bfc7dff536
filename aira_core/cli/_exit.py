"""How an ``aira`` process ends: at once, after what the host itself needs done.

At once: the interpreter's shutdown would wait for every non-daemon thread (a plugin's
thread would hang ``aira``) and run every ``atexit`` handler (a plugin's ``os._exit(0)``
would turn a failure into success). The host's own output is flushed and child processes it
started (the OCCT kernel's worker) are stopped and its SQLite databases closed first (a WAL
database's last close folds the log back into the file and removes its ``-wal``/``-shm``, so
a refused command leaves none behind); nothing else of the host needs the interpreter's
shutdown. Standard library only (the entry point imports it first).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn


def exit_now(status: int) -> NoReturn:
    """End this process with ``status`` (see the module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe (`aira … | head`): nothing left to flush to
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if "aira_core.databases" in sys.modules:  # imported only by whoever opened one
        from aira_core.databases import close_all

        close_all()
    if "multiprocessing" in sys.modules:  # imported only by whoever started a child
        import multiprocessing

        for child in multiprocessing.active_children():
            child.kill()
    os._exit(status)
