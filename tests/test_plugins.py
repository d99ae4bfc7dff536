"""The plugin loader: broken plugins are recorded, never fatal (unless strict), the others
keep working, names are unique, and tests stay hermetic."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_runner import RunAira
from fakeplugins import (
    FakeIntegration,
    FakeKernel,
    FakeProvider,
    FakeTransport,
    FakeValidator,
    drop_module,
    install_fake_distribution,
)

from aira_core import hookimpl, hookspecs, plugins
from aira_core.diagnostics import AiraError
from aira_core.extensions import EXTENSION_TYPES, CapabilityPackageSource
from aira_core.plugins import PluginSystem

FAKE_OBJECTS = {
    "capability_packages": lambda name: CapabilityPackageSource(
        name=name, manifest=b"{}", signature=None
    ),
    "kernels": FakeKernel,
    "validators": FakeValidator,
    "providers": FakeProvider,
    "transports": FakeTransport,
    "integrations": FakeIntegration,
}


def plugin_registering(hook: str, *objects: object) -> SimpleNamespace:
    """An in-process plugin implementing one register hook."""

    def impl(register):  # type: ignore[no-untyped-def]
        for obj in objects:
            register(obj)

    impl.__name__ = hook
    return SimpleNamespace(**{hook: hookimpl(impl)})


def test_every_hookspec_has_an_extension_type() -> None:
    """A new hookspec cannot be added without the loader knowing what it registers."""
    specs = {n for n in dir(hookspecs) if n.startswith("aira_register_")}
    assert specs == {t.hook for t in EXTENSION_TYPES}
    assert len(specs) == 6


@pytest.mark.parametrize("ext", EXTENSION_TYPES, ids=lambda t: t.hook)
def test_every_hookspec_registers_objects(ext, register_plugin) -> None:
    """Each of the six hooks delivers what a plugin registers, by name and plugin."""
    obj = FAKE_OBJECTS[ext.key](f"thing-{ext.key}")
    registry = register_plugin(
        plugin_registering(ext.hook, obj), "p1", distribution="dist-a", version="1.2.3"
    )
    entry = registry.by_type[ext.key][f"thing-{ext.key}"]
    assert entry.obj is obj
    assert (entry.plugin, entry.distribution) == ("p1", "dist-a")
    assert registry.errors == []
    info = next(p for p in registry.plugins if p.name == "p1")
    assert (info.status, info.version, info.hooks) == ("loaded", "1.2.3", (ext.hook,))


def test_every_hookspec_is_documented() -> None:
    """docs/plugins.md documents every hook (name and a section of its own)."""
    doc = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text()
    for ext in EXTENSION_TYPES:
        assert f"### `{ext.hook}(register)`" in doc, ext.hook
    for code in (
        "PLUGIN_IMPORT_FAILED",
        "PLUGIN_HOOK_FAILED",
        "PLUGIN_DUPLICATE_NAME",
        "PLUGIN_REGISTRATION_INVALID",
        "PLUGIN_INVALID_HOOKIMPL",
        "PLUGIN_LOAD_FAILED",
    ):
        assert f"`{code}`" in doc, code


def test_two_kernels_with_one_name_is_a_load_error(register_plugin) -> None:
    """A plugin registering two kernels named alike: error naming the distribution, the
    name withdrawn, its other kernels and other plugins unaffected."""
    registry = register_plugin(
        plugin_registering(
            "aira_register_kernels", FakeKernel("occt"), FakeKernel("occt"), FakeKernel("other")
        ),
        "twice",
        distribution="aira-kernel-twice",
        version="0.1",
    )
    register_plugin(plugin_registering("aira_register_validators", FakeValidator("v")), "fine")
    registry = plugins.get_registry()
    (error,) = registry.errors
    assert error.code == "PLUGIN_DUPLICATE_NAME"
    assert error.message.count("aira-kernel-twice") == 2
    assert "occt" not in registry.named("kernels")
    assert "other" in registry.named("kernels")
    assert "v" in registry.named("validators")


def test_duplicate_name_across_distributions_names_both(register_plugin) -> None:
    register_plugin(
        plugin_registering("aira_register_kernels", FakeKernel("k")), "a", distribution="dist-a"
    )
    registry = register_plugin(
        plugin_registering("aira_register_kernels", FakeKernel("k")), "b", distribution="dist-b"
    )
    (error,) = registry.errors
    assert error.code == "PLUGIN_DUPLICATE_NAME"
    assert "dist-a" in error.message and "dist-b" in error.message
    assert registry.named("kernels") == {}


def test_hook_that_raises_is_recorded_and_others_keep_working(register_plugin) -> None:
    def boom(register):  # type: ignore[no-untyped-def]
        raise RuntimeError("kernel exploded")

    boom.__name__ = "aira_register_kernels"
    register_plugin(
        SimpleNamespace(aira_register_kernels=hookimpl(boom)),
        "bad",
        distribution="dist-bad",
        version="9",
    )
    registry = register_plugin(
        plugin_registering("aira_register_kernels", FakeKernel("ok")), "good"
    )
    (error,) = registry.errors
    assert (error.code, error.plugin, error.distribution, error.version) == (
        "PLUGIN_HOOK_FAILED",
        "bad",
        "dist-bad",
        "9",
    )
    assert "kernel exploded" in error.message
    assert "ok" in registry.named("kernels")
    assert {p.name: p.status for p in registry.plugins} == {"bad": "failed", "good": "loaded"}


def test_registering_the_wrong_type_is_an_error(register_plugin) -> None:
    registry = register_plugin(
        plugin_registering("aira_register_kernels", object(), FakeKernel("")), "wrong"
    )
    assert [e.code for e in registry.errors] == ["PLUGIN_REGISTRATION_INVALID"] * 2
    assert registry.named("kernels") == {}


def test_unknown_hook_name_is_rejected(aira_plugin_system) -> None:
    """A typo in a hook name would otherwise be silently ignored."""

    def aira_register_kernal(register):  # type: ignore[no-untyped-def]
        pass

    plugin = SimpleNamespace(aira_register_kernal=hookimpl(aira_register_kernal))
    with pytest.raises(AiraError) as exc:
        aira_plugin_system.register(plugin, "typo")
    assert exc.value.code == "PLUGIN_INVALID_HOOKIMPL"
    assert aira_plugin_system.pm.get_plugin("typo") is None


def test_strict_mode_makes_errors_fatal(register_plugin, monkeypatch) -> None:
    register_plugin(
        plugin_registering("aira_register_kernels", FakeKernel("k"), FakeKernel("k")), "dup"
    )
    monkeypatch.setenv("AIRA_STRICT_PLUGINS", "1")
    with pytest.raises(AiraError) as exc:
        plugins.get_registry()
    assert exc.value.code == "PLUGIN_LOAD_FAILED"
    assert "PLUGIN_DUPLICATE_NAME" in str(exc.value)


# -- installed entry points ------------------------------------------------------------------

GOOD_PLUGIN = """
from dataclasses import dataclass
from aira_core import hookimpl

@dataclass
class Kernel:
    name: str = "good-kernel"
    build_hash: str = "b1"
    def implementations(self):
        return []
    def evaluate(self, document, changed=None):
        return None  # a registration-only fake: never called
    def query(self, document, ref, args):
        return None  # a registration-only fake: never called
    def validate(self, document, assertion):
        return None  # a registration-only fake: never called
    def export(self, document, format, body=None):
        return None  # a registration-only fake: never called

@hookimpl
def aira_register_kernels(register):
    register(Kernel())
"""

BROKEN_PLUGIN = """
raise ImportError(
    "this plugin needs a module that is not installed "
    "(Authorization: Bearer sk-live-0123456789abcdef, api_key=sk-ant-api03-abcdefgh)"
)
"""

EXITING_PLUGIN = """
import sys
sys.exit("this plugin gave up at import")
"""


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(site, "aira-good", "1.0.0", "good", GOOD_PLUGIN)
    install_fake_distribution(site, "aira-broken", "0.3.0", "broken", BROKEN_PLUGIN)
    install_fake_distribution(site, "aira-exiting", "0.1.0", "exiting", EXITING_PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("AIRA_PLUGINS", "good,broken,exiting")
    yield site
    drop_module("aira-good")
    drop_module("aira-broken")
    drop_module("aira-exiting")


def test_installed_plugins_are_not_loaded_unless_asked(fake_site) -> None:
    """Hermetic by default: the test session's registry ignores installed entry points."""
    registry = plugins.get_registry()
    assert "good-kernel" not in registry.named("kernels")
    assert all(p.name not in {"good", "broken"} for p in registry.plugins)


def test_broken_plugin_import_is_recorded_with_distribution(fake_site, aira_entrypoints) -> None:
    registry = aira_entrypoints.registry()
    assert "good-kernel" in registry.named("kernels")
    (error,) = [e for e in registry.errors if e.plugin == "broken"]
    assert (error.code, error.distribution, error.version) == (
        "PLUGIN_IMPORT_FAILED",
        "aira-broken",
        "0.3.0",
    )
    assert "not installed" in error.message
    # credentials in an exception text never reach a message
    assert "sk-live" not in error.message and "sk-ant" not in error.message
    assert "Bearer <redacted>" in error.message or "Authorization: <redacted>" in error.message
    status = {p.name: (p.status, p.distribution, p.version) for p in registry.plugins}
    assert status["good"] == ("loaded", "aira-good", "1.0.0")
    assert status["broken"] == ("failed", "aira-broken", "0.3.0")


def test_a_plugin_that_exits_at_import_is_a_load_error(fake_site, aira_entrypoints) -> None:
    registry = aira_entrypoints.registry()
    (error,) = [e for e in registry.errors if e.plugin == "exiting"]
    assert error.code == "PLUGIN_IMPORT_FAILED"
    assert "SystemExit: this plugin gave up at import" in error.message
    assert "good-kernel" in registry.named("kernels")


def test_a_hook_that_exits_is_recorded_and_others_keep_working(register_plugin) -> None:
    def leave(register):  # type: ignore[no-untyped-def]
        raise SystemExit(2)

    leave.__name__ = "aira_register_kernels"
    register_plugin(SimpleNamespace(aira_register_kernels=hookimpl(leave)), "leaving")
    registry = register_plugin(
        plugin_registering("aira_register_kernels", FakeKernel("ok")), "good"
    )
    assert [e.code for e in registry.errors] == ["PLUGIN_HOOK_FAILED"]
    assert "ok" in registry.named("kernels")


def test_disabled_plugins_are_blocked(fake_site, monkeypatch) -> None:
    monkeypatch.setenv("AIRA_DISABLE_PLUGINS", "broken, good")
    registry = PluginSystem().registry()
    assert [e for e in registry.errors if e.plugin in {"good", "broken"}] == []
    assert "good-kernel" not in registry.named("kernels")
    assert {p.name: p.status for p in registry.plugins}["good"] == "disabled"


@pytest.fixture
def aira_site(aira_process: RunAira, fake_site: Path) -> RunAira:
    """``aira`` as a new process that loads the fake site's plugins from their entry points
    (one of them exits while it is imported: only a process shows what a user sees)."""

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return aira_process(
            *args, PYTHONPATH=str(fake_site), AIRA_PLUGINS="good,broken,exiting", **env
        )

    return run


def test_cli_plugins_shows_broken_plugin_without_traceback(aira_site, fake_site) -> None:
    out = aira_site("plugins", "--json")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    body = json.loads(out.stdout)
    assert body["format"] == "aira.plugins/1"
    by_name = {p["name"]: p for p in body["plugins"]}
    assert by_name["good"]["registered"] == {"kernels": ["good-kernel"]}
    assert by_name["broken"]["status"] == "failed"
    (error,) = [e for e in body["errors"] if e["plugin"] == "broken"]
    assert error["code"] == "PLUGIN_IMPORT_FAILED"
    assert error["distribution"] == "aira-broken"
    assert error["version"] == "0.3.0"
    assert str(fake_site) not in out.stdout, "absolute private paths must not be printed"
    assert "sk-live" not in out.stdout and "sk-ant" not in out.stdout
    assert by_name["exiting"]["status"] == "failed"

    human = aira_site("plugins")
    assert human.returncode == 0 and "PLUGIN_IMPORT_FAILED" in human.stdout
    assert "Traceback" not in human.stdout + human.stderr


def test_cli_strict_mode_exits_with_code_and_no_traceback(aira_site) -> None:
    out = aira_site("plugins", AIRA_STRICT_PLUGINS="1")
    assert out.returncode == 1
    assert "PLUGIN_LOAD_FAILED" in out.stderr
    assert "Traceback" not in out.stdout + out.stderr


# -- the fixture itself -------------------------------------------------------------------


def test_register_plugin_fixture_always_unregisters(pytester: pytest.Pytester) -> None:
    """Even a failing test leaves no plugin behind for the next one."""
    pytester.makepyfile("""
        from types import SimpleNamespace
        from aira_core import hookimpl, plugins

        @hookimpl
        def aira_register_transports(register):
            from aira_core.gateway.transports import JsonTransport

            transport = JsonTransport()
            transport.name = "leaky"
            register(transport)

        def test_registers_and_fails(register_plugin):
            register_plugin(SimpleNamespace(aira_register_transports=aira_register_transports),
                            "leaky-plugin")
            assert "leaky" in plugins.get_registry().named("transports")
            raise AssertionError("fails on purpose")

        def test_next_test_sees_nothing():
            assert plugins.get_registry().named("transports") == {}
            assert plugins.get_plugin_system().pm.get_plugin("leaky-plugin") is None
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)


def test_hook_that_raises_after_registering_leaves_nothing_behind(register_plugin) -> None:
    """A plugin is never half-loaded: what it registered before raising is dropped."""

    def half(register):  # type: ignore[no-untyped-def]
        register(FakeKernel("early"))
        raise RuntimeError("then it broke")

    half.__name__ = "aira_register_kernels"
    registry = register_plugin(SimpleNamespace(aira_register_kernels=hookimpl(half)), "half")
    assert [e.code for e in registry.errors] == ["PLUGIN_HOOK_FAILED"]
    assert registry.named("kernels") == {}


def test_one_module_under_two_names_is_reported_plainly(aira_plugin_system) -> None:
    plugin = plugin_registering("aira_register_kernels", FakeKernel("k"))
    aira_plugin_system.register(plugin, "first", distribution="dist-a")
    try:
        with pytest.raises(AiraError) as exc:
            aira_plugin_system.register(plugin, "second", distribution="dist-b")
        assert exc.value.code == "PLUGIN_DUPLICATE_NAME"
        assert "already registered as plugin 'first' (dist-a)" in str(exc.value)
        assert "0x" not in str(exc.value), "no reprs of pluggy internals"
    finally:
        aira_plugin_system.unregister("first")


# The same fake plugin as GOOD_PLUGIN, with its own kernel name.
CLASH_A = GOOD_PLUGIN.replace('"good-kernel"', '"kernel-from-a"')


def test_two_distributions_claiming_one_plugin_name_are_both_withdrawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(site, "aira-clash-a", "1.0.0", "clash", CLASH_A)
    install_fake_distribution(
        site, "aira-clash-b", "2.0.0", "clash", CLASH_A.replace("kernel-from-a", "kernel-from-b")
    )
    monkeypatch.setenv("AIRA_PLUGINS", "clash")
    monkeypatch.syspath_prepend(str(site))
    try:
        registry = PluginSystem().registry()
    finally:
        drop_module("aira-clash-a")
        drop_module("aira-clash-b")
    (error,) = [e for e in registry.errors if e.plugin == "clash"]
    assert error.code == "PLUGIN_DUPLICATE_NAME"
    assert "aira-clash-a" in error.message and "aira-clash-b" in error.message
    assert not {"kernel-from-a", "kernel-from-b"} & set(registry.named("kernels"))
    assert [p.status for p in registry.plugins if p.name == "clash"] == ["failed"]


def test_aira_plugins_loads_only_the_named_plugins(fake_site, monkeypatch) -> None:
    monkeypatch.setenv("AIRA_PLUGINS", "good")
    registry = PluginSystem().registry()
    assert "good-kernel" in registry.named("kernels")
    status = {p.name: p.status for p in registry.plugins}
    assert status["broken"] == "disabled", "not named: not even imported"
    assert [e for e in registry.errors if e.plugin == "broken"] == []
