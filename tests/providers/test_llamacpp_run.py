"""``aira run "INTENT" --provider openai --model M --base-url http://127.0.0.1:PORT/v1
--transport strict`` against llama.cpp's own server (issue 15, "Done when"): the command a
user types, through the real HTTP wire, to a terminal state the runtime decides.

The model is random weights (tests/providers/tiny_gguf.py): whether the part gets made is
not the point (it will not be); the wire is. Grammar-constrained decoding (``json_schema``)
makes every answer a decision of the step's schema, so the host takes or rejects each one
on its merits; every attempt is accepted and delivered, usage is recorded, every prompt is
within B, and nothing prints a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cli_runner
import pytest

from aira_core.gateway.ledger import AttemptLedger
from aira_core.step.trajectory import read_trajectory

from .conftest import LlamaCppServer

INTENT = "a 60 x 40 x 5 mm plate with four M4 clearance holes"
STEPS = 3
TERMINAL = {"completed", "cannotProceed", "budgetExhausted"}


@pytest.fixture
def plugins(register_plugin: Any) -> None:
    pytest.importorskip("cadquery")
    import aira_kernel_occt.plugin
    import aira_provider_openai.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")
    register_plugin(aira_provider_openai.plugin, "openai")


def test_aira_run_drives_the_real_server_to_a_terminal_state(
    llamacpp_server: LlamaCppServer, plugins: None, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # a short answer: random weights fill whatever room they get
    (home / "providers.toml").write_text("[providers.openai]\noptions = { max_tokens = 256 }\n")
    out = cli_runner.in_process(
        "run", INTENT, "--provider", "openai", "--model", llamacpp_server.model,
        "--base-url", llamacpp_server.base_url, "--transport", "strict", "--tier", "T32",
        "--max-steps", str(STEPS), "--json",
        home=home,
    )  # fmt: skip
    assert "Traceback" not in out.stdout + out.stderr
    assert out.returncode in (0, 1), out.stderr  # 0 only if the runtime says completed
    report = json.loads(out.stdout)
    assert report["format"] == "aira.run/1"
    assert report["terminal"] in TERMINAL, report
    assert (out.returncode == 0) == (report["terminal"] == "completed")
    assert 1 <= report["steps"] <= STEPS
    assert report["usage"]["inputTokens"] > 0 and report["usage"]["outputTokens"] > 0

    (run_dir,) = (home / "runs").iterdir()
    header, records = read_trajectory(run_dir / "trajectory.jsonl")
    assert header["source"]["transport"] == "strict"
    steps = [r for r in records if "step" in r]
    assert len(steps) == report["steps"]
    for r in steps:
        assert (r["provider"], r["model"]) == ("openai", llamacpp_server.model)
        assert r["promptTokens"] <= r["budgetTokens"]
        assert r["usage"]["inputTokens"] > 0
        # the decision the server produced was read as JSON (a refusal names its code)
        assert r["decision"].get("act") or r["result"].get("code")
    ledger = AttemptLedger.open(home / "gateway.sqlite3")
    try:
        attempts = ledger.attempts(header["gatewayTask"])
        assert [(a.step, str(a.acceptance), str(a.delivery_state)) for a in attempts] == [
            (s, "accepted", "ready") for s in range(len(steps))
        ]
        assert str(ledger.task(header["gatewayTask"]).phase) == "terminal"
    finally:
        ledger.close()
