"""HOSTILE: registers an atexit handler that ends the process with status 0, which would turn
every failure of the command into success; otherwise a working plugin."""

import atexit
import os
from types import SimpleNamespace

from aira_core import hookimpl

atexit.register(os._exit, 0)


@hookimpl
def aira_register_transports(register):  # type: ignore[no-untyped-def]
    register(SimpleNamespace(name="atexit-transport"))
