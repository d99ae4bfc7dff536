"""Privacy: API keys from the environment and from ``providers.toml`` go through every fault of
the gateway's matrix (a hostile fake echoes the key in its error bodies, the model writes it
in its decision and its reasoning) and are then found nowhere: not in the ledger file or its
WAL, a trajectory, a log record, an error's text or wire form, nor the output of ``aira
gateway tasks|show --json``.

The sentinels are plain words, not key-shaped: only their registration (config.py registers
every key it reads) can scrub them, so this tests that path and not the redactor's token
patterns. The variable that holds the environment's key is named like no credential, for the
same reason."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cli_runner
import pytest
from runtime_factory import make_runtime

from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError, redact
from aira_core.extensions import AcceptanceTable
from aira_core.gateway.config import PROVIDERS_FILE, load_settings
from aira_core.gateway.gateway import Gateway, Route, WatchPolicy
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import ToolTransport
from aira_core.runtime.contract import TerminalState
from aira_core.runtime.tiers import TIERS
from aira_core.step.loop import StepHost
from aira_core.step.trajectory import TrajectoryWriter
from aira_core.testing.jobs import FakeJobProvider
from aira_core.testing.provider import FakeProviderServer, Fault

from .conftest import REFUSALS, step_request

ENV_KEY = "plainwordsentinelenvironment12345"
FILE_KEY = "plainwordsentinelconfigfile67890"
ENV_VAR = "AIRA_PRIVACY_PROBE"
"""Not credential-named: the redactor's scan of credential variables does not cover it."""


def hostile(key: str) -> list[tuple[str, str | None, Fault | None, dict[str, Any]]]:
    """(case, endpoint, fault, fake options): every fault of the matrix, each message and
    each content echoing ``key``."""
    leak = {"act": "note", "note": f"the key is {key}"}
    return [
        ("refused 401", None, Fault.status(401, message=f"bad key {key}"), {}),
        ("refused 429", None, Fault.status(429, code=key, message=f"slow down {key}"), {}),
        ("server 500", None, Fault.status(500, message=f"internal: {key}"), {}),
        ("html 502", None, Fault.status(502, body=f"<html>proxy saw {key}</html>"), {}),
        ("non-JSON 2xx", None, Fault.status(200, body=f"<html>{key}</html>"), {}),
        ("dropped", None, Fault.drop_after_read(), {}),
        ("read timeout", None, Fault.hang(0.4), {}),
        ("blank lines past the deadline", None, Fault.blank_lines(count=12, interval_s=0.05), {}),
        ("truncated body", None, Fault.truncated_body(), {}),
        ("malformed arguments", None, Fault.malformed_arguments(f'{{"note": "{key}"'), {}),
        ("text, no tool call", None, Fault.text_instead_of_tool(f"I think {key}"), {}),
        ("a decision and reasoning with the key", None, None, {"decisions": [leak]}),
        ("job submit refused", "submit", Fault.status(401, message=f"bad key {key}"), {"jobs": 1}),
        ("job submit lost", "submit", Fault.drop_after_read(), {"jobs": 1}),
        ("job poll 500", "poll", Fault.status(500, message=f"poll {key}"), {"jobs": 3}),
        ("job poll timeout", "poll", Fault.hang(0.4), {"jobs": 3}),
        ("job fetch 500", "fetch", Fault.status(500, message=f"fetch {key}"), {"jobs": 1}),
        ("job fetch truncated", "fetch", Fault.truncated_body(), {"jobs": 1}),
        ("job result with the key", None, None, {"jobs": 1, "decisions": [leak]}),
    ]


@pytest.fixture
def sentinels(aira_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in (ENV_KEY, FILE_KEY):
        if redact(key) != key:  # registered by an earlier test of this process: still fine
            continue
        assert redact(f"x {key} y") == f"x {key} y"  # no pattern would catch it
    monkeypatch.setenv(ENV_VAR, ENV_KEY)
    yield


def write_settings(home: Path, *, envfake: str, filefake: str) -> None:
    limits = "timeouts = { connect = 1, read = 0.2, write = 1, pool = 1 }"
    (home / PROVIDERS_FILE).write_text(
        f'[providers.envfake]\nbase_url = "{envfake}"\nmodels = ["m1"]\n'
        f'api_key_env = "{ENV_VAR}"\n{limits}\n\n'
        f'[providers.filefake]\nbase_url = "{filefake}"\nmodels = ["m1"]\n'
        f'api_key = "{FILE_KEY}"\n{limits}\n'
    )


def table(name: str) -> AcceptanceTable:
    return AcceptanceTable(name, REFUSALS.refusals, REFUSALS.source)


def gateway_for(
    ledger: AttemptLedger, provider: OpenAICompatProvider, *, failures: int = 2
) -> Gateway:
    task = ledger.create_task({"intent": "privacy"}).id
    return Gateway(
        [Route(provider, "m1")],
        ledger,
        task,
        ToolTransport(),
        deadline_s=0.35,  # the blank lines outlast it: the deadline, not the read timeout
        watch=WatchPolicy(interval_s=0.0, max_failures=failures),
        sleep=lambda _s: None,
    )


def shown(exc: BaseException) -> list[str]:
    """Every way an error is printed or passed on."""
    out = [str(exc), repr(exc)]
    if isinstance(exc, AiraError):
        out.append(exc.diagnostic.model_dump_json())
    to_wire = getattr(exc, "to_wire", None)
    if callable(to_wire):
        out.append(json.dumps(to_wire()))
    return out


@pytest.mark.parametrize(("name", "key"), [("envfake", ENV_KEY), ("filefake", FILE_KEY)])
def test_no_key_reaches_the_ledger_a_trajectory_a_log_an_error_or_the_cli(
    aira_home: Path,
    tmp_path: Path,
    sentinels: None,
    servers: Callable[..., FakeProviderServer],
    caplog: pytest.LogCaptureFixture,
    name: str,
    key: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    printed: list[str] = []
    # The fake checks the key: a missing or wrong one is refused (401).
    fake = servers(api_key=key, reasoning=f"thinking: the key {key} is in the header")
    other = "filefake" if name == "envfake" else "envfake"
    write_settings(aira_home, **{name: fake.base_url, other: "http://127.0.0.1:9/v1"})
    settings = load_settings(aira_home)
    assert settings["envfake"].api_key == ENV_KEY and settings["filefake"].api_key == FILE_KEY

    ledger = AttemptLedger.open(aira_home / "gateway.sqlite3")  # the one `aira tasks` reads
    try:
        delivered = 0
        for case, on, fault, options in hostile(key):
            fake.clear_faults()
            fake.configure(
                decisions=options.get("decisions", [{"act": "read"}]),
                job_polls_to_finish=options.get("jobs", 1),
            )
            kind = FakeJobProvider if "jobs" in options else OpenAICompatProvider
            provider = kind.from_settings(settings[name], acceptance=table(name))
            if fault is not None:  # a poll fails twice: the watch is exhausted
                fake.inject(*[fault] * (2 if on == "poll" else 1), on=on)
            gateway = gateway_for(ledger, provider)
            try:
                reply = gateway.decide(step_request(0))
            except AiraError as exc:
                printed.extend(shown(exc))
            else:
                delivered += 1
                if "decisions" in options:  # the key really went through, both ways
                    assert key in reply.text and key in reply.reasoning, case
                attempt = ledger.attempts(gateway.task_id)[-1]
                assert attempt.reply is not None and key not in json.dumps(attempt.reply)
        # the key was really sent in the Authorization header: the fake answered
        assert delivered >= 2

        # A trajectory of a run whose model writes the key, through the gateway.
        trajectory = tmp_path / "trajectory.jsonl"
        fake.clear_faults()
        fake.configure(
            decisions=[
                {"act": "note", "note": f"remember {key}"},
                {"act": "abstain", "reason": f"no more than {key}"},
            ]
        )
        ctx, kernel, _repo = make_runtime(tmp_path)
        writer = TrajectoryWriter(trajectory, {"script": "privacy"})
        host = StepHost(
            ctx,
            kernel,
            gateway_for(ledger, OpenAICompatProvider.from_settings(settings[name])),
            task_id="t1",
            intent=IntentFrame(goal="a plate"),
            tier=TIERS["T128"],
            trajectory=writer,
        )
        try:
            outcome = host.run()
        finally:
            writer.close()
        assert outcome.terminal is TerminalState.CANNOT_PROCEED, outcome.reason
        printed.append(json.dumps(outcome.records))

        tasks = ledger.tasks()
        for task in tasks:  # what `aira tasks show --json` prints of each
            printed.append(json.dumps(task.to_wire()))
            printed.extend(json.dumps(a.to_wire()) for a in ledger.attempts(task.id))
        # One task of each kind of ending for the command line itself (it costs a start).
        ends: dict[Any, str] = {}
        for task in tasks:
            attempt = ledger.attempts(task.id)[-1]
            kind = (attempt.error or {}).get("code"), attempt.delivery_state
            ends.setdefault(kind, task.id)
        # the hostile bodies reached the ledger, redacted: the scrubbing was exercised
        assert any("<redacted>" in t for t in printed)
        # The WAL as it is while the ledger is open (closing checkpoints and removes it).
        wal = ledger.path.with_name(ledger.path.name + "-wal")
        assert wal.is_file()
        snapshots = {wal: wal.read_bytes()}
    finally:
        ledger.close()

    listing = cli_runner.in_process("tasks", "--json", home=aira_home)
    assert listing.returncode == 0, listing.stderr
    assert len(json.loads(listing.stdout)["tasks"]) == len(tasks)
    printed += [listing.stdout, listing.stderr]
    assert len(ends) >= 8, ends
    for number, task_id in enumerate(ends.values()):
        args = ("--json",) if number % 2 == 0 else ()
        out = cli_runner.in_process("tasks", "show", task_id, *args, home=aira_home)
        assert out.returncode == 0, out.stderr
        printed += [out.stdout, out.stderr]

    stored = {
        path: path.read_bytes()
        for path in tmp_path.rglob("*")
        if path.is_file() and path.name != PROVIDERS_FILE
    }
    assert aira_home / "gateway.sqlite3" in stored
    stored.update({path.with_name(path.name + " (open)"): data for path, data in snapshots.items()})
    assert trajectory in stored
    logs = [caplog.text, *(str(r.getMessage()) for r in caplog.records)]
    for key in (ENV_KEY, FILE_KEY):
        raw = key.encode()
        assert [p.name for p, data in stored.items() if raw in data] == []
        assert [t for t in printed if key in t] == []
        assert [t for t in logs if key in t] == []


# -- the DeepSeek plugin ------------------------------------------------------------------------

DEEPSEEK_KEYS = {
    "DEEPSEEK_API_KEY": "plainwordsentineldeepseekdefault13579",
    "AIRA_PRIVACY_PROBE_DS": "plainwordsentineldeepseekprobe24680",
}
"""The plugin's own variable, and one named like no credential: only the plugin's reading
of the key at ``prepare`` (which registers it) can scrub that one."""


@pytest.mark.parametrize("variable", list(DEEPSEEK_KEYS))
def test_no_deepseek_key_reaches_the_ledger_a_trajectory_a_log_an_error_or_the_output(
    aira_home: Path,
    tmp_path: Path,
    servers: Callable[..., FakeProviderServer],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    deepseek = pytest.importorskip("aira_provider_deepseek.provider")
    from aira_core.gateway.config import ProviderSettings
    from aira_core.gateway.http import Timeouts

    key = DEEPSEEK_KEYS[variable]
    if redact(key) == key:  # not registered by an earlier test of this process
        monkeypatch.delenv(variable, raising=False)
        assert redact(f"x {key} y") == f"x {key} y"  # no pattern would catch it
    monkeypatch.setenv(variable, key)
    caplog.set_level(logging.DEBUG)
    printed: list[str] = []
    fake = servers(api_key=key, reasoning=f"thinking: the key {key} is in the header")
    limits = Timeouts(connect=1.0, read=0.2, write=1.0, pool=1.0)

    def provider() -> Any:  # as a run configures it: the table names the variable, no key
        settings = ProviderSettings(name="deepseek", base_url=fake.base_url, api_key_env=variable)
        return deepseek.DeepSeekProvider(timeouts=limits).configure(settings)

    def gateway(ledger: AttemptLedger) -> Gateway:
        return Gateway(
            [Route(provider(), "deepseek-flash")],
            ledger,
            ledger.create_task({"intent": "privacy"}).id,
            ToolTransport(),
            deadline_s=0.35,
            watch=WatchPolicy(interval_s=0.0, max_failures=2),
            sleep=lambda _s: None,
        )

    ledger = AttemptLedger.open(aira_home / "gateway.sqlite3")
    try:
        delivered = 0
        for case, on, fault, options in hostile(key):
            if "jobs" in options:  # DeepSeek has no job API
                continue
            fake.clear_faults()
            fake.configure(decisions=options.get("decisions", [{"act": "read"}]))
            if fault is not None:
                fake.inject(fault, on=on)
            try:
                reply = gateway(ledger).decide(step_request(0))
            except AiraError as exc:
                printed.extend(shown(exc))
            else:
                delivered += 1
                if "decisions" in options:  # the key really went through, both ways
                    assert key in reply.text and key in reply.reasoning, case
        assert delivered >= 2  # the key was sent in the Authorization header: answered
        assert all(r.authorized for r in fake.requests)

        trajectory = tmp_path / "trajectory.jsonl"
        fake.clear_faults()
        fake.configure(
            decisions=[
                {"act": "note", "note": f"remember {key}"},
                {"act": "abstain", "reason": f"no more than {key}"},
            ]
        )
        ctx, kernel, _repo = make_runtime(tmp_path)
        writer = TrajectoryWriter(trajectory, {"script": "privacy"})
        host = StepHost(
            ctx,
            kernel,
            gateway(ledger),
            task_id="t1",
            intent=IntentFrame(goal="a plate"),
            tier=TIERS["T128"],
            trajectory=writer,
        )
        try:
            outcome = host.run()
        finally:
            writer.close()
        assert outcome.terminal is TerminalState.CANNOT_PROCEED, outcome.reason
        printed.append(json.dumps(outcome.records))
        for task in ledger.tasks():
            printed.append(json.dumps(task.to_wire()))
            printed.extend(json.dumps(a.to_wire()) for a in ledger.attempts(task.id))
        assert any("<redacted>" in t for t in printed)  # the scrubbing was exercised
        wal = ledger.path.with_name(ledger.path.name + "-wal")
        snapshots = {wal: wal.read_bytes()} if wal.is_file() else {}
        last_task = ledger.tasks()[-1].id
    finally:
        ledger.close()

    # And without the key: the refusal names the variable, never a value.
    monkeypatch.delenv(variable)
    with pytest.raises(AiraError) as missing:
        provider().prepare(step_request(0), "deepseek-flash", ToolTransport())
    assert missing.value.code == "PROVIDER_KEY_MISSING" and variable in str(missing.value)
    printed.extend(shown(missing.value))

    for args in (("tasks", "--json"), ("tasks", "show", last_task, "--json")):
        out = cli_runner.in_process(*args, home=aira_home)
        assert out.returncode == 0, out.stderr
        printed += [out.stdout, out.stderr]
    captured = capsys.readouterr()
    printed += [captured.out, captured.err]

    stored = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    assert aira_home / "gateway.sqlite3" in stored and trajectory in stored
    stored.update({path.with_name(path.name + " (open)"): data for path, data in snapshots.items()})
    logs = [caplog.text, *(str(r.getMessage()) for r in caplog.records)]
    raw = key.encode()
    assert [p.name for p, data in stored.items() if raw in data] == []
    assert [t for t in printed if key in t] == []
    assert [t for t in logs if key in t] == []


def test_the_openai_plugin_sends_a_key_named_by_api_key_env_and_shows_it_nowhere(
    aira_home: Path,
    tmp_path: Path,
    sentinels: None,
    servers: Callable[..., FakeProviderServer],
    caplog: pytest.LogCaptureFixture,
    register_plugin: Any,
) -> None:
    """The ``openai`` plugin (a table of kind ``openai`` at a server, the key in the variable
    its ``api_key_env`` names) through the chat faults of the matrix: the key goes to the
    server as a Bearer token and reaches no store, trajectory, log, error or output."""
    import aira_provider_openai.plugin
    from aira_core.gateway.gateway import resolve_routes

    registry = register_plugin(aira_provider_openai.plugin, "openai")
    caplog.set_level(logging.DEBUG)
    printed: list[str] = []
    fake = servers(api_key=ENV_KEY, reasoning=f"thinking: the key {ENV_KEY} is in the header")
    (aira_home / PROVIDERS_FILE).write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{fake.base_url}"\n'
        f'api_key_env = "{ENV_VAR}"\n'
        "timeouts = { connect = 1, read = 0.2, write = 1, pool = 1 }\n"
    )
    settings = load_settings(aira_home)

    ledger = AttemptLedger.open(aira_home / "gateway.sqlite3")
    try:
        delivered = 0
        for case, on, fault, options in hostile(ENV_KEY):
            if "jobs" in options:
                continue  # an OpenAI-compatible server has no job API
            fake.clear_faults()
            fake.configure(decisions=options.get("decisions", [{"act": "read"}]))
            (route,) = resolve_routes(["local::m1"], registry, settings)
            if fault is not None:
                fake.inject(fault, on=on)
            gateway = gateway_for(ledger, route.provider)
            try:
                reply = gateway.decide(step_request(0))
            except AiraError as exc:
                printed.extend(shown(exc))
            else:
                delivered += 1
                if "decisions" in options:
                    assert ENV_KEY in reply.text and ENV_KEY in reply.reasoning, case
        assert delivered >= 2
        # every request carried the key, as the fake expects it: "Bearer <key>"
        assert fake.requests and all(r.authorized is True for r in fake.requests)

        trajectory = tmp_path / "trajectory.jsonl"
        fake.clear_faults()
        fake.configure(
            decisions=[
                {"act": "note", "note": f"remember {ENV_KEY}"},
                {"act": "abstain", "reason": f"no more than {ENV_KEY}"},
            ]
        )
        (route,) = resolve_routes(["local::m1"], registry, settings)
        ctx, kernel, _repo = make_runtime(tmp_path)
        writer = TrajectoryWriter(trajectory, {"script": "privacy-openai"})
        host = StepHost(
            ctx,
            kernel,
            gateway_for(ledger, route.provider),
            task_id="t1",
            intent=IntentFrame(goal="a plate"),
            tier=TIERS["T128"],
            trajectory=writer,
        )
        try:
            outcome = host.run()
        finally:
            writer.close()
        assert outcome.terminal is TerminalState.CANNOT_PROCEED, outcome.reason
        printed.append(json.dumps(outcome.records))
        tasks = ledger.tasks()
        for task in tasks:
            printed.append(json.dumps(task.to_wire()))
            printed.extend(json.dumps(a.to_wire()) for a in ledger.attempts(task.id))
        assert any("<redacted>" in t for t in printed)
        wal = ledger.path.with_name(ledger.path.name + "-wal")
        snapshot = wal.read_bytes() if wal.is_file() else b""
    finally:
        ledger.close()

    listing = cli_runner.in_process("tasks", "--json", home=aira_home)
    assert listing.returncode == 0, listing.stderr
    printed += [listing.stdout, listing.stderr]
    for task in tasks[:3]:
        out = cli_runner.in_process("tasks", "show", task.id, "--json", home=aira_home)
        assert out.returncode == 0, out.stderr
        printed += [out.stdout, out.stderr]

    stored = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    stored = {p: data for p, data in stored.items() if p.name != PROVIDERS_FILE}
    stored[wal.with_name(wal.name + " (open)")] = snapshot
    assert aira_home / "gateway.sqlite3" in stored and trajectory in stored
    raw = ENV_KEY.encode()
    assert [p.name for p, data in stored.items() if raw in data] == []
    assert [t for t in printed if ENV_KEY in t] == []
    assert [
        t for t in (caplog.text, *(r.getMessage() for r in caplog.records)) if ENV_KEY in t
    ] == []
