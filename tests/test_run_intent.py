"""``aira run "INTENT" --provider P --model M --base-url URL`` end to end against the loopback
FAKE provider (issue 15, "Done when"): the Intent Frame from the text, the bounded-step host
with the gateway as its source, the live per-step view with tokens and cost, the STEP and
SVG files, the trajectory, the summary; ``aira tasks`` shows the ledger task done;
``aira trace show`` the usage. And what a user can get wrong is refused with a code before
anything runs, leaving no task and no run behind.

The provider is the ``openai`` plugin (any OpenAI-compatible server; no models of its own),
registered in-process (the hermetic plugin system), with a price table in providers.toml."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cli_runner
import pytest

from aira_core import hookimpl
from aira_core.extensions import AcceptanceTable
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider  # the refusing one
from aira_core.step.trajectory import read_trajectory
from aira_core.testing.provider import FakeProviderServer, Fault

INTENT = "a 60 x 40 x 5 mm plate with four M4 clearance holes"
HOLE = 4.5  # ISO 273 medium clearance for M4
VOLUME = 60 * 40 * 5 - 4 * 3.141592653589793 * (HOLE / 2) ** 2 * 5

PLAN = {
    "act": "plan",
    "summary": "60 x 40 x 5 plate, four 4.5 mm through holes on 44 x 24, checks",
    "plan": {
        "steps": [
            {
                "id": "plate",
                "capability": "cap:exact.box@1",
                "label": "plate",
                "args": {"length": 60, "width": 40, "height": 5},
            },
            {
                "id": "holes",
                "capability": "cap:exact.hole@1",
                "label": "4 x M4 clearance",
                "args": {
                    "target": "plate",
                    "face": {"body": "plate", "select": ">Z", "entity": "Face"},
                    "points": [[-22, -12], [22, -12], [22, 12], [-22, 12]],
                    "diameter": HOLE,
                },
            },
            {
                "id": "pattern",
                "capability": "cap:validate.holePattern@1",
                "args": {"target": "plate", "count": 4, "diameter": HOLE, "axis": "Z"},
            },
            {
                "id": "valid",
                "capability": "cap:validate.solidValidity@1",
                "args": {"target": "plate"},
            },
        ],
        "acceptanceAssertions": [
            {
                "validatorRef": "validate.volumeRange@1.0.0",
                "target": "plate",
                "args": {"min": round(VOLUME * 0.99, 2), "max": round(VOLUME * 1.01, 2)},
            }
        ],
    },
}
DECISIONS: list[Any] = [
    {"act": "lookup", "query": "rectangular plate with four through holes"},
    {"act": "lookup", "query": "check the hole pattern, the volume and that the solid is valid"},
    *(
        {"act": "batch", "acts": [{"act": "lookup", "capability": c, "level": "L2"} for c in caps]}
        for caps in (
            ("cap:exact.box@1", "cap:exact.hole@1", "cap:validate.holePattern@1"),
            ("cap:validate.solidValidity@1", "cap:validate.volumeRange@1"),
        )
    ),
    PLAN,
    {"act": "done", "summary": "b:plate: 60 x 40 x 5 with four 4.5 mm through holes, checked"},
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """AIRA_HOME with a price table for the model the tests name (USD per 1M tokens)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "providers.toml").write_text(
        "[providers.openai.prices.m]\nhit = 0.1\nmiss = 1.0\noutput = 2.0\n"
    )
    return home


@pytest.fixture
def openai_like(register_plugin: Any) -> None:
    """The OCCT kernel and the ``openai`` provider plugin, registered in-process."""
    pytest.importorskip("cadquery")
    import aira_kernel_occt.plugin
    import aira_provider_openai.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")
    register_plugin(aira_provider_openai.plugin, "openai")


@pytest.fixture
def fake() -> Iterator[FakeProviderServer]:
    with FakeProviderServer(DECISIONS, mode="auto", reasoning="plate first, then holes") as f:
        yield f


def run(home: Path, *args: str) -> Any:
    return cli_runner.in_process("run", *args, home=home, COLUMNS="200")


@pytest.mark.parametrize("transport", ["tool", "json"])
def test_a_task_in_words_runs_through_the_provider_to_completion(
    openai_like: None, fake: FakeProviderServer, home: Path, transport: str
) -> None:
    out = run(
        home, INTENT, "--provider", "openai", "--model", "m", "--base-url", fake.base_url,
        "--transport", transport,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    assert "Traceback" not in out.stderr + out.stdout
    lines = out.stdout.splitlines()
    assert lines[0] == f"intent: {INTENT}"
    steps = [line for line in lines if line.lstrip().startswith("step ")]
    assert len(steps) == len(DECISIONS) == fake.submissions
    assert all("tok  " in s and "[in " in s and "$" in s for s in steps)  # tokens, cost so far
    assert any("-> completed" in line for line in lines)
    assert any(line.lstrip().startswith("tokens: in ") for line in lines)
    files = next(line for line in lines if line.lstrip().startswith("files: "))
    assert "intent.step" in files and "intent.svg" in files and "trajectory.jsonl" in files

    (run_dir,) = (home / "runs").iterdir()
    assert (run_dir / "intent.step").read_bytes().startswith(b"ISO-10303-21")
    header, records = read_trajectory(run_dir / "trajectory.jsonl")
    assert header["intent"]["goal"] == INTENT
    assert header["source"] == {
        "provider": "openai",
        "model": "m",
        "baseUrl": fake.base_url,
        "transport": transport,
    }
    step_records = [r for r in records if "step" in r]
    for r in step_records:
        assert (r["provider"], r["model"]) == ("openai", "m")
        assert r["promptTokens"] <= r["budgetTokens"]
        assert r["usage"]["inputTokens"] > 0 and r["usage"]["costUsd"] > 0
        assert r["calledAt"].endswith("+00:00")
    end = records[-1]
    assert end["terminal"] == "completed"
    total = sum(r["usage"]["costUsd"] for r in step_records)
    assert end["usage"]["costUsd"] == pytest.approx(total)
    hit = sum(r["usage"]["cacheHitTokens"] for r in step_records)
    miss = sum(r["usage"]["cacheMissTokens"] for r in step_records)
    out_tokens = sum(r["usage"]["outputTokens"] for r in step_records)
    # the cost is the price table's arithmetic on what the provider reported
    assert total == pytest.approx((hit * 0.1 + miss * 1.0 + out_tokens * 2.0) / 1e6)

    # the ledger: one task, done, one accepted attempt per step
    listing = cli_runner.in_process("tasks", "--json", home=home)
    assert listing.returncode == 0, listing.stderr
    (task,) = json.loads(listing.stdout)["tasks"]
    assert task["id"] == header["gatewayTask"]
    ledger = AttemptLedger.open(home / "gateway.sqlite3")
    try:
        facts = ledger.task(task["id"])
        assert str(facts.human_state) == "completed"
        attempts = ledger.attempts(task["id"])
        assert [a.step for a in attempts] == list(range(len(DECISIONS)))
        assert all(str(a.acceptance) == "accepted" for a in attempts)
    finally:
        ledger.close()

    shown = cli_runner.in_process("tasks", "show", task["id"], home=home)
    assert shown.returncode == 0, shown.stderr
    assert f"${total:.4f}" in shown.stdout  # the ledger's delivered usage is the run's

    # the trace with the usage
    trace = cli_runner.in_process("trace", "show", run_dir / "trajectory.jsonl", home=home)
    assert trace.returncode == 0, trace.stderr
    assert "USD" in trace.stdout and "openai::m" in trace.stdout
    assert f"${total:.4f} over {len(step_records)} steps" in trace.stdout


def test_the_json_report_has_the_usage_summary(
    openai_like: None, fake: FakeProviderServer, home: Path
) -> None:
    out = run(
        home, INTENT, "--provider", "openai", "--model", "m", "--base-url", fake.base_url,
        "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["format"] == "aira.run/1" and report["terminal"] == "completed"
    usage = report["usage"]
    assert usage["inputTokens"] == usage["cacheHitTokens"] + usage["cacheMissTokens"]
    assert usage["cacheHitShare"] == pytest.approx(
        usage["cacheHitTokens"] / usage["inputTokens"], abs=1e-4
    )
    assert 0 < usage["cacheHitShare"] < 1  # the fake's prefix cache: all but the first request


def test_a_key_is_never_shown_nor_sent_to_a_server_it_was_not_named_for(
    openai_like: None, fake: FakeProviderServer, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-review-found-this-0123456789"
    monkeypatch.setenv("AIRA_TEST_OPENAI_KEY", key)
    (home / "providers.toml").write_text(
        '[providers.openai]\nbase_url = "https://api.example.invalid/v1"\n'
        'api_key_env = "AIRA_TEST_OPENAI_KEY"\n'
    )
    out = run(
        home, f"a plate with the key {key} engraved", "--provider", "openai", "--model", "m",
        "--base-url", fake.base_url,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert key not in out.stdout + out.stderr and "<redacted>" in out.stdout
    # --base-url moved the provider off the table's server: the table's key stays home
    assert all("authorization" not in r.headers for r in fake.requests)


def test_a_lost_answer_stops_the_run_and_an_informed_retry_resumes_it(
    openai_like: None, fake: FakeProviderServer, home: Path
) -> None:
    """A 500 may have been processed (and billed): the run stops with ATTEMPT_UNKNOWN and
    nothing is sent again by itself; `aira tasks retry --informed` and `aira run --resume`
    continue the run on a new linked task, to completion, each step's decision once."""
    fake.inject_at(3, Fault.status(500, message="upstream went away"), on="chat")
    args = ("--provider", "openai", "--model", "m", "--base-url", fake.base_url)
    out = run(home, INTENT, *args)
    assert out.returncode == 1 and "ATTEMPT_UNKNOWN" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and fake.submissions == 3
    (run_dir,) = (home / "runs").iterdir()
    header, _ = read_trajectory(run_dir / "trajectory.jsonl")
    old = header["gatewayTask"]

    # without the retry, a resume does not resubmit the step either
    again = run(home, "--resume", str(run_dir))
    assert again.returncode == 1 and "ATTEMPT_UNKNOWN" in again.stderr
    assert fake.submissions == 3
    refused = cli_runner.in_process("tasks", "retry", old, home=home)
    assert refused.returncode == 1 and "GATEWAY_RETRY_UNCONFIRMED" in refused.stderr
    retried = cli_runner.in_process("tasks", "retry", old, "--informed", "--json", home=home)
    assert retried.returncode == 0, retried.stderr
    new = json.loads(retried.stdout)["task"]["id"]

    resumed = run(home, "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert "-> completed" in resumed.stdout
    assert fake.submissions == 3 + (len(DECISIONS) - 2)  # steps 2.. once more, 0 and 1 never
    _, records = read_trajectory(run_dir / "trajectory.jsonl")
    assert [r["step"] for r in records if "step" in r] == list(range(len(DECISIONS)))
    assert records[-1]["terminal"] == "completed"
    ledger = AttemptLedger.open(home / "gateway.sqlite3")
    try:
        assert ledger.task(new).retry_of == old
        assert str(ledger.task(new).human_state) == "completed"
    finally:
        ledger.close()


def test_a_refused_provider_fails_over_to_the_fallback(
    openai_like: None, fake: FakeProviderServer, home: Path, register_plugin: Any
) -> None:
    (home / "providers.toml").write_text(
        f'[providers.backup]\nkind = "openai"\nbase_url = "{fake.base_url}"\n'
    )
    with FakeProviderServer([], mode="auto") as broke:
        broke.inject(*[Fault.status(402, message="Insufficient Balance") for _ in range(8)])
        table = AcceptanceTable("broke", {402: "Insufficient Balance: refused before inference"})

        class Broke:
            @hookimpl
            def aira_register_providers(self, register: Any) -> None:
                register(OpenAICompatProvider("broke", broke.base_url, ["m"], acceptance=table))

        register_plugin(Broke(), "broke")
        out = run(home, INTENT, "--provider", "broke", "--model", "m", "--fallback", "backup::m")
        # each step is offered to the first route first: refused before any processing
        # (not_accepted: nothing billed), it goes to the next
        assert broke.submissions == len(DECISIONS)
    assert out.returncode == 0, out.stderr
    assert fake.submissions == len(DECISIONS)
    (run_dir,) = (home / "runs").iterdir()
    _, records = read_trajectory(run_dir / "trajectory.jsonl")
    assert {r["provider"] for r in records if "step" in r} == {"backup"}


def test_a_task_in_words_with_the_deepseek_plugin(
    openai_like: None, home: Path, register_plugin: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeepSeek's rules through the whole command: thinking on, the key from the variable the
    table names, the reasoning sent back within the round, no forced tool_choice; the fake
    refuses (400) what the API refuses and never has to."""
    plugin = pytest.importorskip("aira_provider_deepseek.plugin")
    register_plugin(plugin, "deepseek")
    key = "ds-test-key-for-the-run-0123456789"
    monkeypatch.setenv("AIRA_TEST_DS_KEY", key)
    with FakeProviderServer(
        DECISIONS,
        mode="tool",
        reasoning="the plate, then its holes",
        api_key=key,
        require_reasoning_replay=True,
        refuse_forced_tool_choice=True,
    ) as ds:
        # the key goes to the server the table names it for (a --base-url elsewhere drops it)
        (home / "providers.toml").write_text(
            f'[providers.deepseek]\nbase_url = "{ds.base_url}"\napi_key_env = "AIRA_TEST_DS_KEY"\n'
        )
        out = run(
            home, INTENT, "--provider", "deepseek", "--model", "deepseek-flash", "--base-url",
            ds.base_url,
        )  # fmt: skip
        requests = ds.requests
    assert out.returncode == 0, out.stderr + out.stdout
    assert [r.authorized for r in requests] == [True] * len(DECISIONS)
    assert all(r.body["thinking"] == {"type": "enabled"} for r in requests)
    assert all(r.body.get("tool_choice") in (None, "auto") for r in requests)
    last = requests[-1].body["messages"]
    turns = [m for m in last if m["role"] == "assistant"]
    assert turns and all(m["reasoning_content"] for m in turns)
    (run_dir,) = (home / "runs").iterdir()
    _, records = read_trajectory(run_dir / "trajectory.jsonl")
    steps = [r for r in records if "step" in r]
    assert all(r["usage"]["pricing"].startswith("deepseek-flash ") for r in steps)
    assert all(r["usage"]["costUsd"] > 0 for r in steps)
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert key.encode() not in stored and key not in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ((), "RUN_TASK_INVALID"),
        ((INTENT,), "RUN_TASK_INVALID"),  # no provider
        (("   ",), "RUN_TASK_INVALID"),
        (("a plate \u202eevil", "--provider", "openai", "--model", "m"), "RUN_TASK_INVALID"),
        (("a plate \x9b2J", "--provider", "openai", "--model", "m"), "RUN_TASK_INVALID"),
        ((INTENT, "--provider", "openai", "--model", "m", "--tier", "T999"), "STEP_TIER_UNKNOWN"),
        ((INTENT, "--provider", "openai", "--model", "m", "--kernel", "nope"), None),
        (("x" * 4001, "--provider", "openai", "--model", "m"), "RUN_TASK_INVALID"),
        ((INTENT, "--model", "m"), "RUN_TASK_INVALID"),
        ((INTENT, "--provider", "nobody", "--model", "m"), "GATEWAY_PROVIDER_UNKNOWN"),
        ((INTENT, "--provider", "openai", "--model", "m", "--transport", "smoke"), None),
        ((INTENT, "--provider", "openai", "--model", "m", "--base-url", "ftp://x"), None),
        ((INTENT, "--provider", "openai", "--model", "m", "--fallback", "nope"), None),
    ],
)
def test_what_a_user_gets_wrong_is_refused_before_anything_runs(
    openai_like: None, home: Path, args: tuple[str, ...], code: str | None
) -> None:
    out = run(home, *args)
    assert out.returncode in (1, 2), out.stdout
    assert out.stderr.startswith("error: ") and "Traceback" not in out.stderr
    if code is not None:
        assert code in out.stderr
    assert not (home / "runs").exists()
    ledger = home / "gateway.sqlite3"
    if ledger.exists():
        opened = AttemptLedger.open(ledger)
        try:
            assert opened.tasks() == []
        finally:
            opened.close()
