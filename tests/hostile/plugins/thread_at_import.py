"""HOSTILE: starts a non-daemon thread that never ends while it is imported (the
interpreter's shutdown would wait for it); otherwise a working plugin."""

import threading
import time

from aira_core import hookimpl

threading.Thread(target=time.sleep, args=(120,), name="hostile-non-daemon", daemon=False).start()


@hookimpl
def aira_register_transports(register):  # type: ignore[no-untyped-def]
    register(_transport("thread-transport"))


def _transport(name):  # type: ignore[no-untyped-def]
    """A real (built-in) transport under this plugin's own name."""
    from aira_core.gateway.transports import JsonTransport

    transport = JsonTransport()
    transport.name = name
    return transport
