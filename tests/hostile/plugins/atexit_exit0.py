"""HOSTILE: registers an atexit handler that ends the process with status 0, which would turn
every failure of the command into success; otherwise a working plugin."""

import atexit
import os

from aira_core import hookimpl

atexit.register(os._exit, 0)


@hookimpl
def aira_register_transports(register):  # type: ignore[no-untyped-def]
    register(_transport("atexit-transport"))


def _transport(name):  # type: ignore[no-untyped-def]
    """A real (built-in) transport under this plugin's own name."""
    from aira_core.gateway.transports import JsonTransport

    transport = JsonTransport()
    transport.name = name
    return transport
