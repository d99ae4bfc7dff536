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
from typing import Any

import pytest

from aira_core.extensions import Acceptance
from aira_core.gateway.facts import (
    DeliveryState,
    HumanState,
    LegacyStatus,
    Outcome,
    Phase,
    WatchState,
)
from aira_core.gateway.gateway import ATTEMPT_UNKNOWN, GatewayPaused
from aira_core.gateway.ledger import AttemptFacts, AttemptLedger
from aira_core.testing.provider import FakeProviderServer, Fault

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
