"""Pytest support for Aira and for plugin authors (loaded through the ``pytest11`` entry point).

In a test session, installed ``aira`` entry points are *not* loaded: the process-wide plugin
system is hermetic, and a test registers exactly the plugins it needs::

    def test_my_kernel(register_plugin):
        registry = register_plugin(my_plugin_module)
        assert "occt" in registry.named("kernels")

A test that wants the installed plugins asks for the ``aira_entrypoints`` fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aira_core import plugins
from aira_core.plugins import IN_PROCESS, PluginSystem, Registry


def pytest_configure(config: pytest.Config) -> None:
    plugins.use_hermetic_plugins()


@pytest.fixture
def aira_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty ``AIRA_HOME`` (trust store, catalog state) for one test."""
    home = tmp_path / "aira-home"
    home.mkdir()
    monkeypatch.setenv("AIRA_HOME", str(home))
    return home


@pytest.fixture
def aira_plugin_system() -> PluginSystem:
    """The process-wide (hermetic) plugin system that the CLI and the catalog use."""
    return plugins.get_plugin_system()


RegisterPlugin = Callable[..., Registry]


@pytest.fixture
def register_plugin(aira_plugin_system: PluginSystem) -> Iterator[RegisterPlugin]:
    """Register in-process plugins for one test; they are always unregistered afterwards.

    ``register_plugin(obj, name=None, distribution="<in-process>", version=None)`` returns
    the registry as it is after the registration.
    """
    names: list[str] = []

    def register(
        plugin: object,
        name: str | None = None,
        *,
        distribution: str = IN_PROCESS,
        version: str | None = None,
    ) -> Registry:
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        aira_plugin_system.register(plugin, name, distribution=distribution, version=version)
        names.append(name)
        return aira_plugin_system.registry()

    try:
        yield register
    finally:
        for name in reversed(names):
            aira_plugin_system.unregister(name)


@pytest.fixture
def aira_entrypoints(monkeypatch: pytest.MonkeyPatch) -> PluginSystem:
    """Opt in to the installed entry points for one test: a fresh, non-hermetic system."""
    system = PluginSystem(load_entrypoints=True)
    monkeypatch.setattr(plugins, "_system", system)
    return system
