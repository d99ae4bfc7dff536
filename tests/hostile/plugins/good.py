"""A well-behaved plugin beside the hostile ones: it must keep working."""

from types import SimpleNamespace

from aira_core import hookimpl


@hookimpl
def aira_register_transports(register):  # type: ignore[no-untyped-def]
    register(SimpleNamespace(name="good-transport"))
