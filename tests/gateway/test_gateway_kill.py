"""A process killed (SIGKILL) in the middle of a gateway call, then resumed: at
``submitting`` (the request may have left: the resume records ``unknown`` and pauses, never
resubmits), at ``accepted`` and at ``running`` (the job is watched again and fetched, never
submitted again), and after the reply was delivered but before the run recorded its step
(the step is answered from the ledger). Each case checks the ledger's final facts and the
fake's submission count.

The fake provider runs in this process; the gateway runs in a child
(tests/gateway/kill_driver.py) so that it can really be killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from runtime_factory import (
    BOX_CAP,
    DEFINE_CAP,
    FILLET_CAP,
    MASS_PROPERTIES_CAP,
    PUBLISHER,
    VOLUME_RANGE_CAP,
    FakeGeometryKernel,
    composite_steps,
    package_source,
    runtime_implementations,
    runtime_manifest,
)

from aira_core import hookimpl
from aira_core.extensions import Acceptance, StepReply, StepRequest
from aira_core.gateway.facts import (
    DeliveryState,
    HumanState,
    LegacyStatus,
    Outcome,
    Phase,
    WatchState,
)
from aira_core.gateway.gateway import ATTEMPT_UNKNOWN, Gateway, GatewayPaused
from aira_core.gateway.ledger import AttemptFacts, AttemptLedger
from aira_core.runtime.contract import TerminalState
from aira_core.step.runner import resume_script, run_script
from aira_core.step.trajectory import DecisionScript, read_trajectory
from aira_core.testing.provider import FakeProviderServer, Fault
from aira_core.testing.signing import ThrowawaySigner, trust_policy_for

from .conftest import DECISIONS, make_gateway, provider, step_request

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

DRIVER = Path(__file__).resolve().parent / "kill_driver.py"
ROOT = DRIVER.parents[2]
WAIT_S = 4.0
"""How long a condition the test waits for may take (it is met in milliseconds)."""

FIRST = json.dumps(DECISIONS[0], ensure_ascii=False)
"""The first decision's text, as the fake sends it and the gateway delivers it."""


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def start(fake: FakeProviderServer, ledger: Path, task: str, mode: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(DRIVER), fake.base_url, str(ledger), task, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )


def run(fake: FakeProviderServer, ledger: Path, task: str, mode: str) -> dict[str, Any]:
    """The driver to its end: what it printed."""
    child = start(fake, ledger, task, mode)
    try:
        out, err = child.communicate(timeout=WAIT_S * 2)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def kill_when(child: subprocess.Popen, ready: Callable[[], bool]) -> None:
    """SIGKILL ``child`` as soon as ``ready()`` holds (it must hold within WAIT_S)."""
    try:
        limit = time.monotonic() + WAIT_S
        while not ready():
            assert child.poll() is None, f"the driver ended first: {child.communicate()}"
            assert time.monotonic() < limit, "the driver never got there"
            time.sleep(0.005)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL


def only_attempt(ledger: AttemptLedger, task: str) -> AttemptFacts:
    attempts = ledger.attempts(task)
    assert len(attempts) == 1, attempts
    return attempts[0]


def test_killed_while_submitting_the_resume_records_unknown_and_never_resubmits(
    servers: Callable[..., FakeProviderServer], ledger: AttemptLedger
) -> None:
    fake = servers()
    fake.inject(Fault.hang(30))
    task = ledger.create_task({"intent": "killed while submitting"}).id

    kill_when(start(fake, ledger.path, task, "sync"), lambda: fake.submissions == 1)
    died = only_attempt(ledger, task)
    assert (died.stage, died.acceptance) == ("submitting", Acceptance.NONE)
    assert died.phase == Phase.SUBMITTING and died.request_digest

    assert run(fake, ledger.path, task, "sync") == {"code": ATTEMPT_UNKNOWN}
    resumed = only_attempt(ledger, task)
    assert resumed.acceptance == Acceptance.UNKNOWN and resumed.outcome == Outcome.UNKNOWN
    assert resumed.error and resumed.error["category"] == "interrupted"
    facts = ledger.task(task)
    assert facts.human_state == HumanState.NEEDS_CONFIRMATION
    assert facts.status == LegacyStatus.RUNNING
    assert (facts.acceptance, facts.outcome) == (Acceptance.UNKNOWN, Outcome.UNKNOWN)
    assert fake.submissions == 1  # the unknown attempt was not sent again

    # A second resume (here, in process) changes nothing either: unknown stays paused.
    with pytest.raises(GatewayPaused) as paused:
        make_gateway(ledger, provider(fake), task=task).decide(step_request(0))
    assert paused.value.code == ATTEMPT_UNKNOWN and paused.value.attempt == resumed.id
    assert fake.submissions == 1 and len(ledger.attempts(task)) == 1

    # Only an informed retry (a person's decision) submits the step again.
    retry = ledger.informed_retry(task)
    assert run(fake, ledger.path, task, "sync") == {"text": FIRST, "callId": "call_1"}
    assert fake.submissions == 2
    delivered = only_attempt(ledger, retry.id)
    assert delivered.delivery_state == DeliveryState.READY
    assert delivered.outcome == Outcome.SUCCEEDED
    assert delivered.status == LegacyStatus.SUCCEEDED
    # The run goes on (the driver never ends it): the task runs, its facts the step's.
    assert ledger.task(retry.id).human_state == HumanState.RUNNING
    assert ledger.task(retry.id).delivery_state == DeliveryState.READY
    old = ledger.task(task)
    assert old.handled_by_retry == retry.id
    assert (old.acceptance, old.outcome) == (Acceptance.UNKNOWN, Outcome.UNKNOWN)
    assert only_attempt(ledger, task).acceptance == Acceptance.UNKNOWN


def test_killed_once_accepted_the_resume_watches_and_fetches_the_same_job(
    servers: Callable[..., FakeProviderServer], ledger: AttemptLedger
) -> None:
    fake = servers()
    fake.inject(Fault.hang(30), on="poll")
    task = ledger.create_task({"intent": "killed once accepted"}).id

    kill_when(start(fake, ledger.path, task, "jobs"), lambda: fake.polls >= 1)
    died = only_attempt(ledger, task)
    # The remote id was persisted before the first poll: the job can be found again.
    assert died.remote_id == "job_1" and died.acceptance == Acceptance.ACCEPTED
    assert died.phase == Phase.ACCEPTED and died.watch_state == WatchState.ACTIVE
    assert died.outcome == Outcome.NONE

    assert run(fake, ledger.path, task, "jobs") == {"text": FIRST, "callId": "call_1"}
    assert fake.submissions == 1 and fake.fetches == 1 and fake.polls >= 2
    done = only_attempt(ledger, task)
    assert done.remote_id == "job_1"
    assert (done.acceptance, done.outcome) == (Acceptance.ACCEPTED, Outcome.SUCCEEDED)
    assert done.delivery_state == DeliveryState.READY and done.reply
    assert done.status == LegacyStatus.SUCCEEDED
    assert ledger.task(task).human_state == HumanState.RUNNING


def test_killed_while_running_the_resume_watches_the_job_to_its_end(
    servers: Callable[..., FakeProviderServer], ledger: AttemptLedger
) -> None:
    fake = servers(job_polls_to_finish=4)
    fake.inject_at(2, Fault.hang(30), on="poll")
    task = ledger.create_task({"intent": "killed while running"}).id

    def running() -> bool:
        attempts = ledger.attempts(task)
        # running recorded (after poll 1) and the driver inside poll 2, the one that hangs
        return bool(attempts) and attempts[0].phase == Phase.RUNNING and fake.polls >= 2

    kill_when(start(fake, ledger.path, task, "jobs"), running)
    died = only_attempt(ledger, task)
    assert died.remote_id == "job_1" and died.acceptance == Acceptance.ACCEPTED
    assert died.outcome == Outcome.NONE and died.delivery_state == DeliveryState.NONE

    assert run(fake, ledger.path, task, "jobs") == {"text": FIRST, "callId": "call_1"}
    assert fake.submissions == 1 and fake.fetches == 1 and fake.polls == 4
    done = only_attempt(ledger, task)
    assert (done.acceptance, done.outcome) == (Acceptance.ACCEPTED, Outcome.SUCCEEDED)
    assert done.delivery_state == DeliveryState.READY
    assert done.status == LegacyStatus.SUCCEEDED
    assert ledger.task(task).human_state == HumanState.RUNNING


# -- killed after the reply was delivered, before the run recorded the step ----------------------

PLATE_QUERIES = (
    "box plate block",
    "fillet round edges",
    "define a parameter",
    "volume range mass properties",
)


class Killed(Exception):
    """Stands for the process dying (raised by the source wrapper)."""


class DiesAfterTheReply:
    """The gateway, and a death right after its ``decide`` returned (the reply delivered and
    persisted) at step ``at``: before the host could record that step."""

    name = "gateway"

    def __init__(self, gateway: Gateway, at: int) -> None:
        self.gateway, self.at = gateway, at

    def decide(self, request: StepRequest) -> StepReply:
        reply = self.gateway.decide(request)
        if request.step == self.at:
            raise Killed
        return reply


@pytest.fixture
def plate(
    aira_home: Path, register_plugin: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[DecisionScript, Any]:
    """The plate script on the FAKE kernel, its package admitted by the production catalog
    (run_script's): (script, kernel). Search uses the hashing embedder: no model to load."""
    monkeypatch.setenv("AIRA_EMBEDDER", "hashing")
    signer = ThrowawaySigner(PUBLISHER)
    trust_policy_for(signer, path=aira_home / "trust.json")
    manifest = runtime_manifest()
    impls = runtime_implementations(manifest)

    @hookimpl
    def aira_register_capability_packages(register: Any) -> None:
        register(package_source(manifest, signer, impls))

    plugin = SimpleNamespace(aira_register_capability_packages=aira_register_capability_packages)
    register_plugin(plugin, "plate-package")
    caps = [DEFINE_CAP, BOX_CAP, FILLET_CAP, VOLUME_RANGE_CAP, MASS_PROPERTIES_CAP]
    steps = [s.to_wire() for s in composite_steps()]
    decisions = [
        *({"act": "lookup", "query": q} for q in PLATE_QUERIES),
        *({"act": "lookup", "capability": c} for c in caps),
        {"act": "plan", "summary": "the rounded plate", "plan": {"steps": steps}},
        {"act": "read"},
        {"act": "done", "summary": "the plate is modelled"},
    ]
    script = DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": "plate",
            "intent": {"goal": "a 40 x 30 x 10 plate with its vertical edges rounded 2 mm"},
            "tier": "T128",
            "decisions": decisions,
        }
    )
    return script, FakeGeometryKernel(impls)


def test_killed_after_the_reply_before_the_record_the_resume_sends_no_step_twice(
    servers: Callable[..., FakeProviderServer],
    ledger: AttemptLedger,
    tmp_path: Path,
    plate: tuple[DecisionScript, Any],
) -> None:
    script, kernel = plate
    decisions = list(script.decisions)
    plan_at = len(decisions) - 3

    # The run as it goes uninterrupted, through a gateway of its own.
    whole_fake = servers(decisions)
    whole = run_script(
        script,
        kernel=kernel,
        store=tmp_path / "whole" / "store.sqlite3",
        trajectory=tmp_path / "whole" / "trajectory.jsonl",
        source=make_gateway(ledger, provider(whole_fake)),
    )
    assert whole.outcome.terminal is TerminalState.COMPLETED, whole.outcome.reason
    assert whole_fake.submissions == len(decisions)

    # The same run, killed once the plan's reply was delivered, before its step was recorded.
    fake = servers(decisions)
    gateway = make_gateway(ledger, provider(fake))
    task = gateway.task_id
    store, trajectory = tmp_path / "killed" / "store.sqlite3", tmp_path / "killed" / "t.jsonl"
    with pytest.raises(Killed):
        run_script(
            script,
            kernel=kernel,
            store=store,
            trajectory=trajectory,
            source=DiesAfterTheReply(gateway, plan_at),
            header={"gatewayTask": task},
        )
    assert fake.submissions == plan_at + 1
    header, records = read_trajectory(trajectory)
    assert header["gatewayTask"] == task
    assert [r["step"] for r in records if "step" in r] == list(range(plan_at))
    kept = ledger.attempts(task, plan_at)
    assert [a.delivery_state for a in kept] == [DeliveryState.READY]

    # The resume: a new gateway on the same ledger and task answers the plan from the ledger.
    resumed_gateway = make_gateway(ledger, provider(fake), task=header["gatewayTask"])
    resumed = resume_script(
        script, kernel=kernel, store=store, trajectory=trajectory, source=resumed_gateway
    )
    assert resumed.outcome.terminal is whole.outcome.terminal
    assert resumed.outcome.head == whole.outcome.head
    assert fake.submissions == len(decisions)  # every step sent once: none twice
    attempts = ledger.attempts(task)
    assert sorted(a.step for a in attempts) == list(range(len(decisions)))
    assert all(a.delivery_state == DeliveryState.READY for a in attempts)
    assert resumed_gateway.finish().status == LegacyStatus.SUCCEEDED
    _, records = read_trajectory(trajectory)
    assert [r["step"] for r in records if "step" in r] == list(range(len(decisions)))
