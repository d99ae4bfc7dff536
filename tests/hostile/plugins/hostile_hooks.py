"""HOSTILE hooks: ``aira_register_kernels`` raises a BaseException subclass,
``aira_register_transports`` raises KeyboardInterrupt, ``aira_register_providers`` blocks
(AIRA_HOSTILE_SLEEP seconds, default 120) after registering."""

import os
import time

from aira_core import hookimpl


class Hostile(BaseException):
    pass


@hookimpl
def aira_register_kernels(register):  # type: ignore[no-untyped-def]
    raise Hostile("raised in a hook")


@hookimpl
def aira_register_transports(register):  # type: ignore[no-untyped-def]
    raise KeyboardInterrupt


@hookimpl
def aira_register_providers(register):  # type: ignore[no-untyped-def]
    from aira_core.gateway.openai_compat import OpenAICompatProvider

    register(OpenAICompatProvider("late-provider", "http://127.0.0.1:9/v1", ["m"]))
    time.sleep(float(os.environ.get("AIRA_HOSTILE_SLEEP", "120")))
