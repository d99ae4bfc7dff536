"""A provider plugin needs nothing but the hooks: the gateway finds its providers and
transports in the registry (``aira_register_providers``, ``aira_register_transports``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from aira_core import hookimpl
from aira_core.diagnostics import AiraError
from aira_core.gateway.gateway import Gateway, resolve_routes, resolve_transport
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import JsonTransport, ToolTransport
from gateway.conftest import FAST, step_request


def plugin(*providers: object, transports: tuple[object, ...] = ()) -> SimpleNamespace:
    @hookimpl
    def aira_register_providers(register):  # type: ignore[no-untyped-def]
        for p in providers:
            register(p)

    @hookimpl
    def aira_register_transports(register):  # type: ignore[no-untyped-def]
        for t in transports:
            register(t)

    return SimpleNamespace(
        aira_register_providers=aira_register_providers,
        aira_register_transports=aira_register_transports,
    )


class Lines(JsonTransport):
    name = "lines"


def test_a_registered_provider_drives_the_gateway(register_plugin, servers, ledger) -> None:
    fake = servers(mode="json")
    local = OpenAICompatProvider("local", fake.base_url, ["tiny"], timeouts=FAST)
    registry = register_plugin(plugin(local, transports=(Lines(),)), "my-provider")
    routes = resolve_routes(["local::tiny"], registry)
    transport = resolve_transport("lines", registry)
    task = ledger.create_task({"intent": "plugin"})
    reply = Gateway(routes, ledger, task.id, transport).decide(step_request())
    assert (reply.provider, reply.model) == ("local", "tiny")
    assert fake.submissions == 1 and ledger.attempts(task.id)[0].model == "local::tiny"


def test_built_in_transports_need_no_plugin(register_plugin) -> None:
    registry = register_plugin(plugin(), "nothing")
    assert isinstance(resolve_transport("tool", registry), ToolTransport)
    assert isinstance(resolve_transport("json", registry), JsonTransport)


@pytest.mark.parametrize(
    ("ref", "code"),
    [
        ("local", "GATEWAY_ROUTE_INVALID"),
        ("::tiny", "GATEWAY_ROUTE_INVALID"),
        ("nobody::tiny", "GATEWAY_PROVIDER_UNKNOWN"),
        ("local::huge", "GATEWAY_MODEL_UNKNOWN"),
    ],
)
def test_a_route_that_names_nothing_installed_is_refused(register_plugin, ref, code) -> None:
    local = OpenAICompatProvider("local", "http://127.0.0.1:9/v1", ["tiny"])
    registry = register_plugin(plugin(local), "my-provider")
    with pytest.raises(AiraError) as err:
        resolve_routes([ref], registry)
    assert err.value.code == code


def test_an_unknown_transport_names_the_known_ones(register_plugin) -> None:
    registry = register_plugin(plugin(transports=(Lines(),)), "t")
    with pytest.raises(AiraError) as err:
        resolve_transport("smoke-signals", registry)
    assert err.value.code == "GATEWAY_TRANSPORT_UNKNOWN"
    assert "json, lines, strict, tool" in err.value.diagnostic.message


def test_a_name_is_no_provider(register_plugin) -> None:
    # The loader checks the protocol: an object without the gateway's methods never
    # reaches a route.
    registry = register_plugin(plugin(SimpleNamespace(name="bare", models=["m"])), "bare")
    assert "bare" not in registry.named("providers")
    assert [e.code for e in registry.errors] == ["PLUGIN_REGISTRATION_INVALID"]
