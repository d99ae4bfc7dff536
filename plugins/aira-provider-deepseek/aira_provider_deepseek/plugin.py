"""Entry point of the ``deepseek`` plugin: DeepSeek's API as a provider, with its defaults.

Cheap to import and to register: no I/O, no HTTP client; the key is read and the price table
loaded when a call is prepared.
"""

from __future__ import annotations

from aira_core import hookimpl


@hookimpl
def aira_register_providers(register):  # type: ignore[no-untyped-def]
    from aira_provider_deepseek.provider import DeepSeekProvider

    register(DeepSeekProvider())
