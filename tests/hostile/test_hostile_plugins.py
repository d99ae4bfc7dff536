"""Issue 13, item 7: hostile plugins must not break the host. Each plugin of
tests/hostile/plugins is installed on the fly as a distribution with an ``aira`` entry point
and loaded by a new ``aira`` process (what only a process shows: exit status, stdout, a
hang), beside a well-behaved plugin that must keep working. Every process has a timeout, so
a regression fails instead of hanging the suite."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runner import RunAira
from ctrl_c import interrupted
from fakeplugins import drop_module, install_fake_distribution
from unchanged import assert_unchanged, snapshot

from aira_core import plugins
from aira_core.plugins import PluginSystem

PLUGINS = Path(__file__).parent / "plugins"


def install(site: Path, plugin: str, module: str, dist: str | None = None) -> str:
    """Install ``plugins/<module>.py`` into ``site`` as distribution ``dist`` (default
    ``aira-hostile-<module>``) declaring entry point ``plugin``; the distribution's name."""
    dist = dist or f"aira-hostile-{module.replace('_', '-')}"
    source = (PLUGINS / f"{module}.py").read_text()
    install_fake_distribution(site, dist, "0.1.0", plugin, source)
    return dist


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install(site, "good", "good")
    return site


@pytest.fixture
def aira_site(aira_process: RunAira, site: Path):  # type: ignore[no-untyped-def]
    """``aira_site(plugins, *args, **env)``: a new ``aira`` process loading the named
    entry points of ``site`` (and ``good``)."""

    def run(names: str, *args: str, timeout: float = 60, **env: str):  # type: ignore[no-untyped-def]
        return aira_process(
            *args, timeout=timeout, PYTHONPATH=str(site), AIRA_PLUGINS=f"good,{names}", **env
        )

    return run


def plugins_json(out: subprocess.CompletedProcess[str]) -> dict:  # type: ignore[type-arg]
    """``aira plugins --json`` ran cleanly: exit 0, no traceback, stdout nothing but JSON,
    and the well-behaved plugin loaded."""
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stdout + out.stderr
    body = json.loads(out.stdout)
    by_name = {p["name"]: p for p in body["plugins"]}
    assert by_name["good"]["status"] == "loaded"
    assert by_name["good"]["registered"] == {"transports": ["good-transport"]}
    return body


def error_of(body: dict, plugin: str) -> dict:  # type: ignore[type-arg]
    (error,) = [e for e in body["errors"] if e["plugin"] == plugin]
    return error


@pytest.mark.parametrize(
    ("module", "raised"),
    [("base_at_import", "Hostile: raised at import"), ("interrupt_at_import", "KeyboardInterrupt")],
)
def test_a_plugin_raising_a_base_exception_at_import_is_recorded(
    aira_site, site: Path, module: str, raised: str
) -> None:
    """A BaseException subclass gave a traceback; KeyboardInterrupt exited 130 silently."""
    install(site, "hostile", module)
    body = plugins_json(aira_site("hostile", "plugins", "--json"))
    error = error_of(body, "hostile")
    assert error["code"] == "PLUGIN_IMPORT_FAILED"
    assert error["distribution"] == f"aira-hostile-{module.replace('_', '-')}"
    assert raised in error["message"]
    assert {p["name"]: p["status"] for p in body["plugins"]}["hostile"] == "failed"


def test_hooks_raising_base_exceptions_or_blocking_are_recorded(aira_site, site: Path) -> None:
    install(site, "hostile", "hostile_hooks")
    started = time.monotonic()
    body = plugins_json(aira_site("hostile", "plugins", "--json", AIRA_PLUGIN_TIMEOUT="1"))
    assert time.monotonic() - started < 30
    codes = {
        e["message"].split(" ")[0]: e["code"] for e in body["errors"] if e["plugin"] == "hostile"
    }
    assert codes == {
        "aira_register_kernels": "PLUGIN_HOOK_FAILED",
        "aira_register_transports": "PLUGIN_HOOK_FAILED",
        "aira_register_providers": "PLUGIN_TIMEOUT",
    }
    messages = " ".join(e["message"] for e in body["errors"])
    assert "Hostile: raised in a hook" in messages and "KeyboardInterrupt" in messages
    # what the blocking hook registered before its deadline is not used either
    assert "late-provider" not in json.dumps(body["plugins"])


def test_a_plugin_that_blocks_at_import_is_ignored_at_its_deadline(aira_site, site: Path) -> None:
    install(site, "hostile", "sleeps_at_import")
    started = time.monotonic()
    out = aira_site("hostile", "plugins", "--json", AIRA_PLUGIN_TIMEOUT="1")
    assert time.monotonic() - started < 30, "the host waited for the plugin"
    error = error_of(plugins_json(out), "hostile")
    assert error["code"] == "PLUGIN_TIMEOUT"
    assert "did not finish within 1 s" in error["message"]


def test_a_real_ctrl_c_while_a_plugin_imports_stops_the_command(site: Path, tmp_path) -> None:
    """The plugin's own KeyboardInterrupt is recorded; the user's still ends the command."""
    install(site, "hostile", "sleeps_at_import")
    out = interrupted(
        "plugins", "--json", mark=tmp_path / "started",
        PYTHONPATH=str(site), AIRA_PLUGINS="good,hostile", AIRA_PLUGIN_TIMEOUT="120",
    )  # fmt: skip
    assert out.returncode == 130, (out.returncode, out.stdout, out.stderr)
    assert "error: ABORTED: interrupted" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_non_daemon_thread_started_at_import_does_not_hang_the_host(
    aira_site, site: Path
) -> None:
    install(site, "hostile", "thread_at_import")
    started = time.monotonic()
    body = plugins_json(aira_site("hostile", "plugins", "--json"))
    assert time.monotonic() - started < 30, "the exit waited for the plugin's thread"
    assert {p["name"]: p["status"] for p in body["plugins"]}["hostile"] == "loaded"


def test_what_a_plugin_prints_while_loading_never_reaches_stdout(aira_site, site: Path) -> None:
    install(site, "hostile", "prints_at_import")
    out = aira_site("hostile", "plugins", "--json")
    body = plugins_json(out)  # stdout is exactly the JSON document
    assert {p["name"]: p["status"] for p in body["plugins"]}["hostile"] == "loaded"
    for printed in ("PRINTED-AT-IMPORT", "DUNDER-STDOUT-AT-IMPORT", "FD1-AT-IMPORT"):
        assert printed not in out.stdout and printed in out.stderr, printed
    for printed in ("PRINTED-IN-HOOK", "FD1-IN-HOOK"):
        assert printed not in out.stdout and printed in out.stderr, printed


def test_a_plugins_atexit_handler_cannot_turn_a_failure_into_success(
    aira_site, site: Path, tmp_path: Path
) -> None:
    install(site, "hostile", "atexit_exit0")
    missing, out_file = tmp_path / "no-store.sqlite3", tmp_path / "out.json"
    before = snapshot(missing, out_file)
    # a failing command that loads the plugins (finding the kernel reads the registry)
    out = aira_site(
        "hostile", "model", "export", "--format", "json", "--out", str(out_file),
        "--store", str(missing), "--json",
    )  # fmt: skip
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert json.loads(out.stdout)["error"]["code"] == "KERNEL_UNAVAILABLE"
    assert_unchanged(before, missing, out_file)
    body = plugins_json(aira_site("hostile", "plugins", "--json"))
    assert {p["name"]: p["status"] for p in body["plugins"]}["hostile"] == "loaded"


def test_an_empty_distribution_claiming_occt_does_not_withdraw_the_real_kernel(
    aira_process: RunAira, tmp_path: Path
) -> None:
    """An empty package declaring entry point ``occt``: the first-party aira-kernel-occt is
    kept and still registers its kernel, and the clash is reported naming both."""
    try:
        importlib.metadata.distribution("aira-kernel-occt")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("aira-kernel-occt is not installed")
    site = tmp_path / "site"
    site.mkdir()
    dist = install(site, "occt", "empty", dist="aira-occt-squatter")
    out = aira_process("plugins", "--json", PYTHONPATH=str(site), AIRA_PLUGINS="occt")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    (occt,) = [p for p in body["plugins"] if p["name"] == "occt"]
    assert (occt["distribution"], occt["status"]) == ("aira-kernel-occt", "loaded")
    assert occt["registered"]["kernels"] == ["occt"]
    error = error_of(body, "occt")
    assert (error["code"], error["distribution"]) == ("PLUGIN_DUPLICATE_NAME", dist)
    assert "aira-kernel-occt" in error["message"] and dist in error["message"]
    human = aira_process("plugins", PYTHONPATH=str(site), AIRA_PLUGINS="occt")
    assert "PLUGIN_DUPLICATE_NAME" in human.stdout and dist in human.stdout


# -- the rules in process ---------------------------------------------------------------------

CLASH = """
from aira_core import hookimpl
from aira_core.gateway.transports import JsonTransport

@hookimpl
def aira_register_transports(register):
    transport = JsonTransport()
    transport.name = "from-{dist}"
    register(transport)
"""


@pytest.mark.parametrize("first_party", ["aira-clash-a", "aira-clash-b", None])
def test_a_name_clash_keeps_the_first_party_distribution_in_any_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_party: str | None
) -> None:
    """Which distribution is first on sys.path does not matter: the first-party one is
    kept (the other is not even imported), and without one neither is loaded."""
    site = tmp_path / "site"
    site.mkdir()
    for dist in ("aira-clash-a", "aira-clash-b"):
        install_fake_distribution(site, dist, "1.0.0", "clash", CLASH.format(dist=dist))
    monkeypatch.setattr(plugins, "FIRST_PARTY", {"clash": first_party} if first_party else {})
    monkeypatch.setenv("AIRA_PLUGINS", "clash")
    monkeypatch.syspath_prepend(str(site))
    try:
        registry = PluginSystem().registry()
        imported = {
            d
            for d in ("aira-clash-a", "aira-clash-b")
            if f"{d.replace('-', '_')}_plugin" in sys.modules
        }
    finally:
        drop_module("aira-clash-a")
        drop_module("aira-clash-b")
    transports = set(registry.named("transports"))
    errors = [e for e in registry.errors if e.plugin == "clash"]
    assert [e.code for e in errors] == ["PLUGIN_DUPLICATE_NAME"]
    assert "aira-clash-a" in errors[0].message and "aira-clash-b" in errors[0].message
    if first_party is None:
        assert transports == set() and imported == set()
        assert [p.status for p in registry.plugins if p.name == "clash"] == ["failed"]
    else:
        other = ({"aira-clash-a", "aira-clash-b"} - {first_party}).pop()
        assert transports == {f"from-{first_party}"}
        assert imported == {first_party}, "the refused claimant is never imported"
        assert errors[0].distribution == other
        status = {(p.name, p.distribution): p.status for p in registry.plugins}
        assert status[("clash", first_party)] == "loaded"
