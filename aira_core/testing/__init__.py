"""Pytest support for Aira and for plugin authors (loaded through the ``pytest11`` entry point).

In a test session, installed ``aira`` entry points are *not* loaded: the process-wide plugin
system is hermetic, and a test registers exactly the plugins it needs::

    def test_my_kernel(register_plugin):
        registry = register_plugin(my_plugin_module)
        assert "occt" in registry.named("kernels")

A test that wants the installed plugins asks for the ``aira_entrypoints`` fixture.

The package also ships FAKES to test against, the way httpx ships ``MockTransport`` beside
its transports. They are for tests only, never for production:

- :mod:`aira_core.testing.kernel`: :class:`FakeGeometryKernel`, an analytic implementation
  of the ``Kernel`` protocol (boxes and vertical-edge fillets; no cadquery);
- :mod:`aira_core.testing.package`: :func:`fake_kernel_manifest`, the package declaring the
  fake kernel's operations, accept-all :func:`fake_implementations` for any manifest, and
  :func:`package_findings`, what admission would find wrong with a package;
- :mod:`aira_core.testing.signing`: :class:`ThrowawaySigner` (a fresh Ed25519 publisher
  key) and :func:`trust_policy_for` (trust in such keys);
- :mod:`aira_core.testing.integrations`: :class:`FakeIntentAdapter`,
  :class:`FakeContinuityAdapter`, :class:`FakeGuardAdapter` (the integration seam's three
  roles, driven by tables) and :class:`BrokenAdapter` (raises, hangs or answers nonsense);
- :mod:`aira_core.testing.provider`: :class:`FakeProviderServer`, an OpenAI-compatible
  HTTP server on 127.0.0.1 answering from a decision script, with :class:`Fault` to make
  it misbehave (status codes, keep-alive blank lines, dropped connections, jobs, ...).

They are importable from here (``from aira_core.testing import FakeGeometryKernel``) but
load only when first used: pytest imports this module in every session, which must stay
cheap. The fixtures ``fake_kernel``, ``throwaway_signer``, ``throwaway_trust``,
``signed_package`` and ``fake_provider`` hand them to a test ready to use (docs/plugins.md,
"Testing a plugin").
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from aira_core import plugins
from aira_core.plugins import IN_PROCESS, PluginSystem, Registry

if TYPE_CHECKING:
    from aira_core.catalog.trust import TrustPolicy
    from aira_core.testing.integrations import (
        BrokenAdapter,
        FakeContinuityAdapter,
        FakeGuardAdapter,
        FakeIntentAdapter,
    )
    from aira_core.testing.jobs import FakeJobProvider
    from aira_core.testing.kernel import FakeGeometryKernel, Solid, box_volume
    from aira_core.testing.package import (
        accept_all,
        fake_implementations,
        fake_kernel_manifest,
        package_findings,
        package_source,
        write_package,
    )
    from aira_core.testing.provider import FakeProviderServer, Fault
    from aira_core.testing.signing import (
        ThrowawaySigner,
        trust_policy_for,
        trust_store_for,
    )

# Public name -> the submodule that defines it, imported on first access (PEP 562).
_LAZY = {
    "FakeGeometryKernel": "kernel",
    "Solid": "kernel",
    "box_volume": "kernel",
    "accept_all": "package",
    "fake_implementations": "package",
    "fake_kernel_manifest": "package",
    "package_findings": "package",
    "package_source": "package",
    "write_package": "package",
    "FakeJobProvider": "jobs",
    "BrokenAdapter": "integrations",
    "FakeContinuityAdapter": "integrations",
    "FakeGuardAdapter": "integrations",
    "FakeIntentAdapter": "integrations",
    "FakeProviderServer": "provider",
    "Fault": "provider",
    "ThrowawaySigner": "signing",
    "trust_policy_for": "signing",
    "trust_store_for": "signing",
}

__all__ = [
    "BrokenAdapter",
    "FakeContinuityAdapter",
    "FakeGeometryKernel",
    "FakeGuardAdapter",
    "FakeIntentAdapter",
    "FakeJobProvider",
    "FakeProviderServer",
    "Fault",
    "RegisterPlugin",
    "SignPackage",
    "Solid",
    "ThrowawaySigner",
    "accept_all",
    "box_volume",
    "fake_implementations",
    "fake_kernel_manifest",
    "package_findings",
    "package_source",
    "trust_policy_for",
    "trust_store_for",
    "write_package",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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


# -- fakes -----------------------------------------------------------------------------------


@pytest.fixture
def fake_kernel() -> FakeGeometryKernel:
    """A fresh FAKE kernel (:class:`~aira_core.testing.kernel.FakeGeometryKernel`), listing
    the implementations of :func:`~aira_core.testing.package.fake_kernel_manifest`."""
    from aira_core.testing.kernel import FakeGeometryKernel

    return FakeGeometryKernel()


@pytest.fixture
def throwaway_signer() -> ThrowawaySigner:
    """A FAKE publisher key for this test only: publisher ``test-vendor``, the publisher of
    :func:`~aira_core.testing.package.fake_kernel_manifest`."""
    from aira_core.testing.signing import ThrowawaySigner

    return ThrowawaySigner()


@pytest.fixture
def throwaway_trust(aira_home: Path, throwaway_signer: ThrowawaySigner) -> TrustPolicy:
    """Trust in ``throwaway_signer``: the ``TrustPolicy`` to pass to ``build_catalog``,
    also written to ``$AIRA_HOME/trust.json`` for code that loads the user's store."""
    from aira_core.catalog.trust import TRUST_FILE
    from aira_core.testing.signing import trust_policy_for

    return trust_policy_for(throwaway_signer, path=aira_home / TRUST_FILE)


SignPackage = Callable[..., Path]


@pytest.fixture
def signed_package(tmp_path: Path, throwaway_signer: ThrowawaySigner) -> SignPackage:
    """Make a package directory signed by ``throwaway_signer``; returns its path.

    ``signed_package(package=None, *, signer=None)``: ``package`` is a manifest dict
    (default: :func:`~aira_core.testing.package.fake_kernel_manifest`) or an existing
    package directory, which is copied first, so your source tree never gets a
    ``manifest.sig``. The manifest must name the signer's publisher.
    """
    import shutil

    from aira_core.testing.package import fake_kernel_manifest, write_package

    made = tmp_path / "signed-packages"
    count = 0

    def fresh(name: str) -> Path:
        nonlocal count  # one directory per call: a test may sign the same package twice
        count += 1
        return made / str(count) / name

    def sign(
        package: Mapping[str, Any] | str | Path | None = None,
        *,
        signer: ThrowawaySigner | None = None,
    ) -> Path:
        signer = signer or throwaway_signer
        if isinstance(package, str | Path):
            source = Path(package)
            target = fresh(source.name)
            shutil.copytree(source, target)
            signer.sign_package(target)
            return target
        manifest = package if package is not None else fake_kernel_manifest()
        return write_package(fresh(str(manifest.get("name", "package"))), manifest, signer)

    return sign


@pytest.fixture
def fake_provider() -> Iterator[FakeProviderServer]:
    """A started FAKE OpenAI-compatible provider
    (:class:`~aira_core.testing.provider.FakeProviderServer`) on 127.0.0.1, stopped after the
    test. It has no decisions yet (it abstains): give it some with
    ``fake_provider.configure(decisions=script.decisions, mode="json", ...)``."""
    from aira_core.testing.provider import FakeProviderServer

    server = FakeProviderServer().start()
    try:
        yield server
    finally:
        server.stop()
