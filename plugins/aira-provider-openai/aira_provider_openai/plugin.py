"""Entry point of the ``openai`` plugin: one provider, ``openai``, with its defaults (OpenAI's
hosted API). Every other OpenAI-compatible server is a ``providers.toml`` table of
``kind = "openai"`` that configures it.

Cheap to import and to register: no I/O, no HTTP client; the key is read when a call is
prepared.
"""

from __future__ import annotations

from aira_core import hookimpl


@hookimpl
def aira_register_providers(register):  # type: ignore[no-untyped-def]
    from aira_provider_openai.provider import OpenAIProvider

    register(OpenAIProvider())
