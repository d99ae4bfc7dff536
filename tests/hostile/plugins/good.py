"""A well-behaved plugin beside the hostile ones: it must keep working."""

from aira_core import hookimpl


@hookimpl
def aira_register_transports(register):  # type: ignore[no-untyped-def]
    register(_transport("good-transport"))


def _transport(name):  # type: ignore[no-untyped-def]
    """A real (built-in) transport under this plugin's own name."""
    from aira_core.gateway.transports import JsonTransport

    transport = JsonTransport()
    transport.name = name
    return transport
