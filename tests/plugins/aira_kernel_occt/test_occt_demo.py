"""`aira demo` and the bundled decision scripts on the real kernel: every task completes, the
bound |capsule| + |log| ≤ B holds at every step for every tier, the bracket's wrong plan is
rejected with failedStep and repaired, replays land on the same head, and the demo writes a
STEP file, an SVG preview and a trajectory per task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("cadquery")

from test_occt_cli import aira

from aira_core.runtime.contract import TerminalState
from aira_core.step.runner import BUNDLED, SCRIPTS, bundled_script, run_script


@pytest.fixture(scope="module")
def kernel():
    from aira_kernel_occt.kernel import OcctKernel

    k = OcctKernel()
    yield k
    k.close()


@pytest.fixture
def occt(aira_home: Path, register_plugin) -> None:
    """The first-party plugin registered in-process, so the production catalog has it."""
    import aira_kernel_occt.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")


def test_the_demo_completes_every_task_and_writes_its_files(aira_home: Path) -> None:
    out = aira(aira_home, "demo", "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert [t["script"] for t in report["tasks"]] == list(BUNDLED)
    for task in report["tasks"]:
        assert task["terminal"] == "completed"
        assert set(task["files"]) == {"step", "svg", "mesh", "report"}
        report = aira_home / task["files"]["report"].removeprefix("$AIRA_HOME/")
        assert report.name == "report.html" and report.read_text().count('class="view"') == 4
        for shown in [*task["files"].values(), task["trajectory"]]:
            path = aira_home / shown.removeprefix("$AIRA_HOME/")
            assert path.is_file() and path.stat().st_size > 0
        assert str(aira_home) not in out.stdout  # no private absolute paths


@pytest.mark.parametrize("tier", ["T32", "T128", "T200"])
@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_script_stays_within_b(
    occt: None, tmp_path: Path, kernel, name: str, tier: str
) -> None:
    run = run_script(
        bundled_script(name),
        kernel=kernel,
        store=tmp_path / "store.sqlite3",
        trajectory=tmp_path / "trajectory.jsonl",
        tier_name=tier,
    )
    assert run.outcome.terminal is TerminalState.COMPLETED, run.outcome.reason
    assert all(r["promptTokens"] <= r["budgetTokens"] for r in run.outcome.records)
    assert (
        run.outcome.records[0]["budgetTokens"]
        == {"T32": 24_000, "T128": 96_000, "T200": 160_000}[tier]
    )


def test_the_bracket_repairs_a_rejected_plan_and_replays_identically(
    occt: None, tmp_path: Path, kernel
) -> None:
    runs = [
        run_script(
            bundled_script("bracket"),
            kernel=kernel,
            store=tmp_path / str(n) / "store.sqlite3",
            trajectory=tmp_path / str(n) / "trajectory.jsonl",
        )
        for n in (1, 2)
    ]
    records = runs[0].outcome.records
    plans = [r for r in records if r["decision"].get("act") == "plan"]
    assert plans[0]["result"]["status"] == "rejected" and plans[0]["result"]["failedStep"]
    assert plans[-1]["result"]["status"] == "ok"
    assert runs[0].outcome.head == runs[1].outcome.head
    assert runs[0].outcome.terminal is runs[1].outcome.terminal is TerminalState.COMPLETED


def test_a_killed_run_resumes_without_committing_again(aira_home: Path, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    script = json.loads(bundled_script("bracket").model_dump_json(by_alias=True))
    decisions = script["decisions"]
    last_plan = max(i for i, d in enumerate(decisions) if d["act"] == "plan")
    # many cheap reads after the last plan: a window to kill the process in
    script["decisions"] = [
        *decisions[: last_plan + 1],
        *[{"act": "read"}] * 25,
        *decisions[last_plan + 1 :],
    ]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(script))
    env = {**os.environ, "AIRA_HOME": str(aira_home), "AIRA_PLUGINS": "occt"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "aira_core.cli", "run", "--script", str(path), "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    trajectory = None
    while time.monotonic() < deadline and proc.poll() is None:
        found = list(aira_home.glob("runs/bracket-*/trajectory.jsonl"))
        if found:
            trajectory = found[0]
            # only whole lines: the record being written now may be read half-way (torn)
            whole = trajectory.read_text().split("\n")[1:-1]
            steps = [json.loads(x) for x in whole if x.strip()]
            if any(
                s.get("decision", {}).get("act") == "plan" and s["result"]["status"] == "ok"
                for s in steps
                if "step" in s
            ):
                os.kill(proc.pid, signal.SIGKILL)
                break
        time.sleep(0.005)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert trajectory is not None
    run_dir = trajectory.parent

    out = aira(aira_home, "run", "--script", str(path), "--resume", str(run_dir), "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["terminal"] == "completed"
    records = [json.loads(x) for x in trajectory.read_text().splitlines()[1:] if x.strip()]
    steps = [r for r in records if "step" in r]
    assert [r["step"] for r in steps] == list(range(len(steps)))  # no step twice
    commits = [
        r for r in steps if r["decision"].get("act") == "plan" and r["result"]["status"] == "ok"
    ]
    assert len(commits) == 1  # the committed plan was adopted, not run again
    assert report["head"] == commits[0]["result"]["rev"]


def test_bad_input_to_the_step_commands_gets_a_code(aira_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "x"}')
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n")
    script = str(Path(__file__).parents[3] / "aira_core/step/scripts/bracket.json")
    for args, code in [
        (["run", "--script", str(tmp_path / "missing.json")], "SCRIPT_INVALID"),
        (["run", "--script", str(bad)], "SCRIPT_INVALID"),
        (["run", "--script", script, "--tier", "T9"], "STEP_TIER_UNKNOWN"),
        (["run", "--script", script, "--resume", str(tmp_path / "nowhere")], "RUN_STORE_MISSING"),
        (["trace", "show", str(junk)], "TRAJECTORY_INVALID"),
        (["demo", "--tier", "T7"], "STEP_TIER_UNKNOWN"),
    ]:
        out = aira(aira_home, *args)
        assert out.returncode == 1 and code in out.stderr, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and str(tmp_path) not in out.stderr
    assert not list(aira_home.glob("runs/*/store.sqlite3"))  # nothing half-made


def test_bench_capsule_reports_every_bundled_task(aira_home: Path) -> None:
    out = aira(aira_home, "bench", "capsule", "--tier", "T32", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert set(report["tasks"]) == set(SCRIPTS)
    for task in report["tasks"].values():
        assert task["terminal"] == "completed" and task["withinBudget"] is True
        assert task["maxPromptTokens"] <= task["budgetTokens"] == 24_000
        assert task["transcriptTokens"] > 0 and task["ratio"] > 0
        assert task["overheadP50Ms"] >= 0
