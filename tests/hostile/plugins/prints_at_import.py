"""HOSTILE: writes to stdout while it is imported and while its hook runs (print, the
original sys.__stdout__ and file descriptor 1), as if it owned the command's output."""

import os
import sys

from aira_core import hookimpl

print("PRINTED-AT-IMPORT {")
sys.__stdout__.write("DUNDER-STDOUT-AT-IMPORT\n")
os.write(1, b"FD1-AT-IMPORT\n")


@hookimpl
def aira_register_transports(register):  # type: ignore[no-untyped-def]
    print("PRINTED-IN-HOOK")
    os.write(1, b"FD1-IN-HOOK\n")
    register(_transport("noisy-transport"))


def _transport(name):  # type: ignore[no-untyped-def]
    """A real (built-in) transport under this plugin's own name."""
    from aira_core.gateway.transports import JsonTransport

    transport = JsonTransport()
    transport.name = name
    return transport
