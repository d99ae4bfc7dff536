"""Issue 32, the provider leftovers: a missing key was found only at the first step's
``prepare``, after a run directory and a ledger task existed, and the outer message
(``GATEWAY_ALL_REFUSED``) dropped the "set VAR" hint; a model name that breaks the ledger's
model-id rule was refused at the first attempt, leaving a run and a task; a generic
server's 401 was ``unknown`` (the run paused for a person, no fallback tried). Each is
refused through ``aira run`` before anything is created, or classified as HTTP says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira
from unchanged import assert_unchanged, snapshot

from aira_core.extensions import Acceptance
from aira_core.gateway.ledger import AttemptLedger
from aira_core.testing.provider import FakeProviderServer

KEY = "sk-local-0123456789abcdefghij"
WRONG = "sk-wrong-9876543210zyxwvutsrq"


@pytest.fixture
def providers(register_plugin: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The OCCT kernel and both provider plugins, in-process; no key in the environment."""
    pytest.importorskip("cadquery")
    import aira_kernel_occt.plugin
    import aira_provider_deepseek.plugin
    import aira_provider_openai.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")
    register_plugin(aira_provider_deepseek.plugin, "deepseek")
    register_plugin(aira_provider_openai.plugin, "openai")
    for name in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "LOCAL_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    """A FAKE OpenAI-compatible server that wants ``KEY``: anything else is a 401."""
    with FakeProviderServer([{"act": "read"}], api_key=KEY) as fake:
        yield fake


def refused(out: Any, code: str) -> None:
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"error: {code}:" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    assert "INTERNAL_ERROR" not in out.stderr


@pytest.mark.parametrize(
    ("args", "settings", "variable"),
    [
        (["--provider", "deepseek", "--model", "deepseek-flash"], "", "DEEPSEEK_API_KEY"),
        # the default model, and a primary route with a key whose fallback has none
        (["--provider", "deepseek"], "", "DEEPSEEK_API_KEY"),
        (
            ["--provider", "local", "--model", "m1", "--fallback", "deepseek::deepseek-flash"],
            '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            f'api_key = "{KEY}"\n',
            "DEEPSEEK_API_KEY",
        ),
        (
            ["--provider", "local", "--model", "m1"],
            '[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
            'api_key_env = "LOCAL_TOKEN"\n',
            "LOCAL_TOKEN",
        ),
    ],
    ids=["deepseek", "default-model", "fallback", "named-variable"],
)
def test_a_missing_key_is_refused_before_anything_is_created(
    providers: None,
    aira: RunAira,
    aira_home: Path,
    args: list[str],
    settings: str,
    variable: str,
) -> None:
    if settings:
        (aira_home / "providers.toml").write_text(settings, encoding="utf-8")
    before = snapshot(aira_home)
    out = aira("run", "a 20 mm cube", *args)
    refused(out, "PROVIDER_KEY_MISSING")
    assert f"(set {variable})" in out.stderr and "nothing was sent" in out.stderr
    assert KEY not in out.stderr + out.stdout
    assert_unchanged(before, aira_home)  # no run directory, no ledger, no catalog


@pytest.mark.parametrize(
    "model",
    ["bad name!", "m::x", "m" * 201, "tab\tname", "-leading", KEY],
    ids=["space", "double-colon", "too-long", "control", "leading-dash", "credential"],
)
def test_a_model_name_the_ledger_cannot_record_is_refused_before_anything_is_created(
    providers: None, aira: RunAira, aira_home: Path, model: str
) -> None:
    """A generic server serves whatever model a route names: the name is checked against
    the rule every attempt records it by, when the route is read."""
    before = snapshot(aira_home)
    out = aira(
        "run", "a 20 mm cube", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1",
        "--model", model,
    )  # fmt: skip
    refused(out, "GATEWAY_ROUTE_INVALID")
    assert "model id" in out.stderr and "use 1-200 of" in out.stderr
    assert KEY not in out.stderr and len(out.stderr) < 600
    assert_unchanged(before, aira_home)


def _attempts(home: Path) -> list[Any]:
    ledger = AttemptLedger.open(home / "gateway.sqlite3")
    try:
        (task,) = ledger.tasks()
        return ledger.attempts(task.id)
    finally:
        ledger.close()


@pytest.mark.parametrize(
    ("env", "settings", "hint"),
    [
        ({}, "", "no key was sent: name its variable in providers.openai.api_key_env"),
        (
            {"LOCAL_TOKEN": WRONG},
            'kind = "openai"\napi_key_env = "LOCAL_TOKEN"\n',
            "the key sent came from LOCAL_TOKEN",
        ),
    ],
    ids=["no-key", "wrong-key"],
)
def test_a_generic_servers_401_is_an_auth_failure_that_was_not_applied(
    providers: None,
    aira: RunAira,
    aira_home: Path,
    server: FakeProviderServer,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    settings: str,
    hint: str,
) -> None:
    """RFC 9110 §15.5.2: a 401 says the request was not applied, whoever the server. So the
    attempt is ``not_accepted`` (a resumed run or a fallback may send it again), not
    ``unknown`` (a person had to decide), and the message says where the key came from."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if settings:
        (aira_home / "providers.toml").write_text(
            f'[providers.openai]\nbase_url = "{server.base_url}"\n{settings}', encoding="utf-8"
        )
    flags = [] if settings else ["--base-url", server.base_url]
    out = aira("run", "a 20 mm cube", "--provider", "openai", "--model", "m1", *flags)
    refused(out, "GATEWAY_ALL_REFUSED")
    assert "PROVIDER_AUTH_FAILED" in out.stderr and "HTTP 401" in out.stderr
    assert hint in out.stderr
    assert WRONG not in out.stderr + out.stdout and KEY not in out.stderr + out.stdout
    (attempt,) = _attempts(aira_home)
    assert attempt.acceptance == Acceptance.NOT_ACCEPTED
    assert attempt.error["code"] == "PROVIDER_AUTH_FAILED"
    assert server.submissions == 1


def test_a_401_fails_over_to_the_next_route(
    providers: None, aira: RunAira, aira_home: Path, server: FakeProviderServer
) -> None:
    """Not applied, so the fallback gets the step: the run goes on."""
    with FakeProviderServer([{"act": "read"}], mode="auto") as second:
        (aira_home / "providers.toml").write_text(
            f'[providers.locked]\nkind = "openai"\nbase_url = "{server.base_url}"\n'
            f'[providers.open]\nkind = "openai"\nbase_url = "{second.base_url}"\n',
            encoding="utf-8",
        )
        out = aira(
            "run", "a 20 mm cube", "--provider", "locked", "--model", "m1",
            "--fallback", "open::m1", "--max-steps", "1",
        )  # fmt: skip
        assert "Traceback" not in out.stderr + out.stdout
        assert second.submissions >= 1, (out.stdout, out.stderr)
    acceptances = [a.acceptance for a in _attempts(aira_home)]
    assert acceptances[:2] == [Acceptance.NOT_ACCEPTED, Acceptance.ACCEPTED]
