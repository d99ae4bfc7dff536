"""The fact axes (aira_core.gateway.facts) and the attempt ledger (aira_core.gateway.ledger)
against spec 002 (Task/Attempt v2): real SQLite files in tmp_path, real child processes for
the epoch and the kill tests."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aira_core.diagnostics import AiraError
from aira_core.gateway.facts import (
    Acceptance,
    CancelState,
    DeliveryState,
    Facts,
    HumanState,
    LegacyStatus,
    Outcome,
    Phase,
    WatchState,
    human_state,
    legacy_status,
)
from aira_core.gateway.ledger import (
    ATTEMPT_STAGES,
    ERROR_KEYS,
    AttemptFacts,
    AttemptLedger,
    TaskFacts,
    default_ledger_path,
    request_digest,
)

ROOT = Path(__file__).resolve().parents[2]
BODY = {"model": "deepseek-chat", "messages": [{"role": "user", "content": "a 10 mm cube"}]}
DIGEST = request_digest(BODY)
ISO_MS_Z = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "gateway.sqlite3"


@pytest.fixture
def ledger(path: Path) -> Iterator[AttemptLedger]:
    with AttemptLedger.open(path) as opened:
        yield opened


def begin(ledger: AttemptLedger, task: TaskFacts, step: int = 1, **kw: Any) -> AttemptFacts:
    return ledger.begin_attempt(
        task.id, step, kw.pop("provider", "deepseek"), "deepseek-chat", **kw
    )


def accepted(ledger: AttemptLedger, attempt: AttemptFacts) -> AttemptFacts:
    ledger.update_attempt(attempt.id, stage="submitting", phase="submitting", request_digest=DIGEST)
    return ledger.update_attempt(attempt.id, acceptance="accepted", phase="accepted")


def files(path: Path) -> dict[str, bytes | None]:
    """The bytes of the ledger file and its write-ahead log (None: absent)."""
    out: dict[str, bytes | None] = {}
    for p in (path, path.with_name(path.name + "-wal")):
        out[p.name] = p.read_bytes() if p.exists() else None
    return out


def companions(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


# -- the fact axes ---------------------------------------------------------------------------

# The lists of spec 002 §3, as the spec writes them.
SPEC_AXES = {
    Phase: "queued · submitting · accepted · running · terminal",
    Acceptance: "none · not_accepted · accepted · unknown",
    WatchState: "idle · active · suspended · exhausted",
    Outcome: "none · succeeded · failed · canceled · unknown",
    DeliveryState: "none · pending · downloading · ready · failed",
    CancelState: "none · requested · remote_confirmed · local_confirmed · unknown",
}


@pytest.mark.parametrize("enum", list(SPEC_AXES), ids=lambda e: e.__name__)
def test_each_axis_has_exactly_the_specs_values(enum: type) -> None:
    assert [m.value for m in enum] == SPEC_AXES[enum].split(" · ")
    assert all(isinstance(m, str) and str(m) == m.value for m in enum)


def test_facts_wire_form_round_trips_and_refuses_what_is_not_one() -> None:
    facts = Facts("running", "accepted", "active", "unknown", "none", "requested")
    assert facts.acceptance is Acceptance.ACCEPTED  # strings become members
    wire = facts.to_wire()
    assert wire == {
        "phase": "running",
        "acceptance": "accepted",
        "watchState": "active",
        "outcome": "unknown",
        "deliveryState": "none",
        "cancelState": "requested",
    }
    assert json.loads(json.dumps(wire)) == wire
    assert Facts.from_wire(wire) == facts
    for bad in (
        {**wire, "outcome": "maybe"},
        {k: v for k, v in wire.items() if k != "phase"},
        {**wire, "status": "running"},
        ["phase"],
    ):
        with pytest.raises(AiraError) as info:
            Facts.from_wire(bad)  # type: ignore[arg-type]
        assert info.value.code == "LEDGER_ARGUMENT_INVALID"
    with pytest.raises(AiraError, match="acceptance must be one of none, not_accepted"):
        Facts(acceptance="maybe")  # type: ignore[arg-type]


T = Phase.TERMINAL
# spec 002 §3.1, row by row (phase terminal), then what stays running.
LEGACY_ROWS = [
    (Facts(T, "accepted", outcome="succeeded", delivery_state="ready"), "succeeded"),
    (Facts(T, "accepted", outcome="failed"), "failed"),
    (Facts(T, "not_accepted", outcome="failed"), "failed"),
    (Facts(T, "accepted", outcome="failed", delivery_state="none"), "failed"),
    (Facts(T, "accepted", outcome="canceled", cancel_state="remote_confirmed"), "canceled"),
    (Facts(T, "none", outcome="canceled", cancel_state="local_confirmed"), "canceled"),
    # everything else, including unknown acceptance, watch exhausted, delivery failed
    (Facts(T, "unknown"), "running"),
    (Facts(T, "accepted", "exhausted", "unknown"), "running"),
    (Facts(T, "accepted", outcome="succeeded", delivery_state="failed"), "running"),
    (Facts(T, "accepted", outcome="succeeded", delivery_state="pending"), "running"),
    (Facts(T, "accepted", outcome="succeeded", delivery_state="downloading"), "running"),
    (Facts(T, "accepted", outcome="canceled", cancel_state="requested"), "running"),
    (Facts(T, "accepted", outcome="canceled", cancel_state="unknown"), "running"),
    (Facts(T, "accepted", cancel_state="unknown"), "running"),
    (Facts(T, "accepted"), "running"),
    (Facts(), "running"),
    # a run still being advanced is running, whatever its latest attempt says
    (Facts("running", "accepted", outcome="succeeded", delivery_state="ready"), "running"),
    (Facts("submitting", "not_accepted", outcome="failed"), "running"),
]


@pytest.mark.parametrize(("facts", "status"), LEGACY_ROWS)
def test_legacy_status_row_by_row(facts: Facts, status: str) -> None:
    assert legacy_status(facts) is LegacyStatus(status)


HUMAN_ROWS = [
    (Facts(T, "accepted", outcome="canceled", cancel_state="remote_confirmed"), "canceled"),
    (Facts(T, "accepted", outcome="failed"), "failed"),
    (Facts(T, "accepted", outcome="succeeded", delivery_state="ready"), "completed"),
    (Facts("running", "unknown"), "needs_confirmation"),
    (Facts(T, "unknown", "exhausted", "unknown"), "needs_confirmation"),
    (Facts(T, "accepted", cancel_state="unknown"), "needs_confirmation"),
    (Facts(T, "accepted", outcome="succeeded", delivery_state="failed"), "awaiting_delivery"),
    (
        Facts("running", "accepted", outcome="succeeded", delivery_state="failed"),
        "awaiting_delivery",
    ),
    (Facts(T, "accepted", outcome="succeeded", delivery_state="pending"), "awaiting_delivery"),
    (Facts("running", "accepted", "suspended"), "watch_paused"),
    (Facts(T, "accepted", "exhausted", "unknown"), "watch_paused"),
    (Facts(T, "accepted"), "needs_confirmation"),  # an accepted sync attempt without a reply
    (Facts(T, "accepted", cancel_state="requested"), "needs_confirmation"),
    (Facts("running", "accepted", outcome="unknown"), "needs_confirmation"),
    (Facts(), "queued"),
    (Facts("submitting"), "running"),
    (Facts("running", "accepted", "active"), "running"),
    (Facts("running", "accepted", outcome="succeeded", delivery_state="downloading"), "running"),
    (Facts("running", "accepted", outcome="succeeded", delivery_state="ready"), "running"),
]


@pytest.mark.parametrize(("facts", "state"), HUMAN_ROWS)
def test_human_state_row_by_row(facts: Facts, state: str) -> None:
    assert human_state(facts) is HumanState(state)


def test_human_state_agrees_with_legacy_status_on_every_combination() -> None:
    seen = set()
    final = {"completed": "succeeded", "failed": "failed", "canceled": "canceled"}
    for axes in itertools.product(
        Phase, Acceptance, WatchState, Outcome, DeliveryState, CancelState
    ):
        facts = Facts(*axes)
        state, status = human_state(facts), legacy_status(facts)
        seen.add(state)
        assert final.get(state, "running") == status, facts
    assert seen == set(HumanState)  # every human state is reachable


# -- opening, shape, durability ------------------------------------------------------------


def test_a_new_ledger_is_wal_synchronous_full_and_marked(ledger: AttemptLedger, path: Path) -> None:
    db = ledger._connection()
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert db.execute("PRAGMA application_id").fetchone()[0] == 0x41495247
    assert db.execute("PRAGMA user_version").fetchone()[0] == 1
    assert ledger.tasks() == [] and ledger.check() == []
    assert [p for p in companions(path) if p.endswith(".new")] == []  # built aside, linked in


def test_the_default_path_is_in_aira_home(aira_home: Path) -> None:
    assert default_ledger_path() == aira_home / "gateway.sqlite3"


def test_begin_attempt_writes_the_specs_record_before_returning(
    ledger: AttemptLedger, path: Path
) -> None:
    task = ledger.create_task("a 10 mm cube")
    assert task.revision == 1 and task.status is LegacyStatus.RUNNING
    assert task.human_state is HumanState.QUEUED
    attempt = ledger.begin_attempt(
        task.id, 1, "deepseek", "deepseek-chat", request_digest=DIGEST, idempotency_key="k-1"
    )
    # Committed when it returns: another connection (another ledger) reads it.
    with AttemptLedger(path) as other:
        (seen,) = other.attempts(task.id)
    assert seen == attempt
    wire = attempt.to_wire()
    # spec 002 §5: the pre-write record
    assert {k: wire[k] for k in ("ordinal", "providerId", "model", "acceptance", "stage")} == {
        "ordinal": 1,
        "providerId": "deepseek",
        "model": "deepseek::deepseek-chat",
        "acceptance": "none",
        "stage": "preparing",
    }
    assert wire["idempotencyKey"] == "k-1"
    assert wire["id"].startswith("attempt_") and len(wire["id"]) == len("attempt_") + 32
    assert wire["taskId"] == task.id and wire["step"] == 1
    assert wire["requestDigest"] == DIGEST and DIGEST.startswith("sha256:")
    import re

    assert re.fullmatch(ISO_MS_Z, wire["startedAt"]) and re.fullmatch(ISO_MS_Z, wire["updatedAt"])
    assert re.fullmatch(r"task_[0-9a-f]{32}", task.id)
    assert wire["status"] == "running" and wire["humanState"] == "queued"
    assert wire["remoteId"] is None and wire["error"] is None and wire["reply"] is None
    assert attempt.model_id == "deepseek-chat"
    json.dumps(wire)
    task = ledger.task(task.id)
    assert task.revision == 2 and task.model_ref == "deepseek::deepseek-chat"
    assert set(task.to_wire()) >= {
        "id",
        "revision",
        "stateEpoch",
        "modelRef",
        "status",
        "humanState",
    }


def test_ordinals_count_per_task_and_step(ledger: AttemptLedger) -> None:
    task = ledger.create_task("x")
    first = begin(ledger, task)
    ledger.update_attempt(
        first.id, acceptance="not_accepted", error={"code": "PROVIDER_REFUSED", "message": "401"}
    )
    second = begin(ledger, task, provider="other")
    assert (first.ordinal, second.ordinal) == (1, 2)
    ledger.update_attempt(second.id, acceptance="not_accepted")
    third = begin(ledger, task)
    step2 = begin(ledger, task, step=2)
    assert (third.ordinal, step2.ordinal) == (3, 1)
    assert [a.id for a in ledger.attempts(task.id, step=1)] == [first.id, second.id, third.id]
    assert [a.id for a in ledger.attempts(task.id)] == [first.id, second.id, third.id, step2.id]
    other = ledger.create_task("y")
    assert begin(ledger, other).ordinal == 1


@pytest.mark.parametrize("acceptance", ["none", "accepted", "unknown"])
def test_a_second_attempt_of_a_step_needs_the_first_not_accepted(
    ledger: AttemptLedger, path: Path, acceptance: str
) -> None:
    task = ledger.create_task("x")
    first = begin(ledger, task)
    if acceptance != "none":
        ledger.update_attempt(first.id, acceptance=acceptance)
    before, revision = files(path), ledger.task(task.id).revision
    with pytest.raises(AiraError) as info:
        begin(ledger, task, provider="other")
    assert info.value.code == "LEDGER_TRANSITION_INVALID"
    assert "billed twice" in str(info.value)
    assert files(path) == before and ledger.task(task.id).revision == revision
    assert len(ledger.attempts(task.id)) == 1


def test_no_attempt_of_an_earlier_step(ledger: AttemptLedger) -> None:
    task = ledger.create_task("x")
    begin(ledger, task, step=3)
    with pytest.raises(AiraError) as info:
        begin(ledger, task, step=2)
    assert info.value.code == "LEDGER_TRANSITION_INVALID"


def test_every_change_bumps_the_revision_by_one(ledger: AttemptLedger) -> None:
    task = ledger.create_task("x")
    revisions = [ledger.task(task.id).revision]

    def changed(op: Callable[[], object]) -> None:
        op()
        revisions.append(ledger.task(task.id).revision)

    attempt = begin(ledger, task)
    revisions.append(ledger.task(task.id).revision)
    changed(lambda: ledger.update_attempt(attempt.id, stage="submitting", phase="submitting"))
    changed(lambda: ledger.update_attempt(attempt.id, acceptance="accepted", phase="accepted"))
    changed(lambda: ledger.update_attempt(attempt.id, stage="parsing"))
    changed(lambda: ledger.set_task(task.id, phase="running"))
    changed(lambda: ledger.deliver(attempt.id, {"text": "{}", "callId": "aira_s1"}))
    changed(lambda: ledger.set_task(task.id, phase="terminal"))
    changed(lambda: ledger.informed_retry(task.id))
    assert revisions == list(range(1, len(revisions) + 1))
    # A change that changes nothing writes nothing.
    ledger.update_attempt(attempt.id, stage="done", outcome="succeeded")
    ledger.set_task(task.id, phase="terminal")
    assert ledger.task(task.id).revision == revisions[-1]


def test_the_file_refuses_a_task_update_that_does_not_bump_the_revision(
    ledger: AttemptLedger, path: Path
) -> None:
    task = ledger.create_task("x")
    db = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="revision by exactly 1"):
            db.execute("UPDATE tasks SET phase = 'running' WHERE id = ?", (task.id,))
        with pytest.raises(sqlite3.IntegrityError, match="revision by exactly 1"):
            db.execute("UPDATE tasks SET revision = revision + 2 WHERE id = ?", (task.id,))
        with pytest.raises(sqlite3.IntegrityError, match="never deleted"):
            db.execute("DELETE FROM tasks")
    finally:
        db.close()


EPOCH_CHILD = """
import json, sys
from aira_core.gateway.ledger import AttemptLedger
with AttemptLedger(sys.argv[1]) as ledger:
    task = ledger.create_task("from a child")
    print(json.dumps({"epoch": ledger.epoch, "task": task.id, "stamp": task.state_epoch}))
"""


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_each_open_has_its_own_epoch_and_stamps_the_tasks_it_changes(path: Path) -> None:
    child = _python(EPOCH_CHILD, str(path))
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    told = json.loads(out)
    assert told["stamp"] == told["epoch"]
    with AttemptLedger(path) as first, AttemptLedger(path) as second:
        assert len({told["epoch"], first.epoch, second.epoch}) == 3
        task = first.task(told["task"])
        assert task.state_epoch == told["epoch"] and task.revision == 1
        second.set_task(task.id, phase="running")
        task = first.task(task.id)
        assert (task.state_epoch, task.revision) == (second.epoch, 2)


def test_two_ledgers_on_one_file_keep_one_revision_count(path: Path) -> None:
    with AttemptLedger(path) as one, AttemptLedger(path) as two:
        task = one.create_task("x")
        attempt = begin(two, task)
        one.update_attempt(attempt.id, stage="submitting", phase="submitting")
        two.update_attempt(
            attempt.id,
            acceptance="unknown",
            error={"code": "PROVIDER_TIMEOUT", "message": "read timed out"},
        )
        assert one.task(task.id).revision == two.task(task.id).revision == 4
        assert one.check() == []


def test_threads_may_share_one_ledger(ledger: AttemptLedger) -> None:
    tasks = [ledger.create_task(f"t{i}") for i in range(4)]
    failures: list[BaseException] = []

    def work(task: TaskFacts) -> None:
        try:
            for step in range(1, 6):
                a = begin(ledger, task, step=step)
                ledger.update_attempt(a.id, acceptance="accepted", phase="accepted")
                ledger.deliver(a.id, {"text": str(step)})
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not failures and not any(t.is_alive() for t in threads)
    assert [ledger.task(t.id).revision for t in tasks] == [1 + 5 * 3] * 4
    assert ledger.check() == []


# -- the task mirrors its latest attempt -------------------------------------------------------


def test_the_task_mirrors_its_latest_attempt_except_its_phase(ledger: AttemptLedger) -> None:
    task = ledger.create_task("x")
    first = begin(ledger, task, task_phase="submitting")
    assert ledger.task(task.id).phase is Phase.SUBMITTING
    refusal = {
        "code": "PROVIDER_REFUSED",
        "message": "invalid key",
        "httpStatus": 401,
        "acceptance": "not_accepted",
        "stage": "send",
        "category": "auth",
    }
    first = ledger.update_attempt(first.id, acceptance="not_accepted", error=refusal)
    assert first.phase is Phase.TERMINAL  # nothing more happens to a refused attempt
    t = ledger.task(task.id)
    assert (t.acceptance, t.phase, t.error["httpStatus"]) == (
        Acceptance.NOT_ACCEPTED,
        Phase.SUBMITTING,
        401,
    )
    second = ledger.begin_attempt(task.id, 1, "other", "m-2", request_digest=DIGEST)
    t = ledger.task(task.id)
    assert (t.acceptance, t.error, t.model_ref) == (Acceptance.NONE, None, "other::m-2")
    accepted(ledger, second)
    ledger.update_attempt(second.id, acceptance="accepted", task_phase="running")
    ledger.deliver(second.id, {"text": "{}", "callId": "aira_s1"})
    t = ledger.task(task.id)
    assert t.facts == Facts("running", "accepted", "idle", "succeeded", "ready", "none")
    assert t.status is LegacyStatus.RUNNING and t.human_state is HumanState.RUNNING
    t = ledger.set_task(task.id, phase="terminal")
    assert t.status is LegacyStatus.SUCCEEDED and t.human_state is HumanState.COMPLETED
    assert ledger.check() == []


def test_task_facts_are_set_on_the_attempt_once_it_has_one(ledger: AttemptLedger) -> None:
    task = ledger.create_task("x")
    # Canceled before anything was sent: a deterministic local stop.
    other = ledger.create_task("y")
    ledger.set_task(other.id, cancel_state="requested")
    done = ledger.set_task(
        other.id, cancel_state="local_confirmed", outcome="canceled", phase="terminal"
    )
    assert done.status is LegacyStatus.CANCELED and done.human_state is HumanState.CANCELED
    begin(ledger, task)
    with pytest.raises(AiraError) as info:
        ledger.set_task(task.id, outcome="failed")
    assert info.value.code == "LEDGER_TRANSITION_INVALID"
    task = ledger.set_task(task.id, error=AiraError("GATEWAY_BUDGET_EXHAUSTED", "no budget left"))
    assert task.error["code"] == "GATEWAY_BUDGET_EXHAUSTED" and task.error["retryable"] is False


# -- transitions -------------------------------------------------------------------------------


def _fresh(ledger: AttemptLedger) -> AttemptFacts:
    return begin(ledger, ledger.create_task("x"))


def _accepted(ledger: AttemptLedger) -> AttemptFacts:
    return accepted(ledger, _fresh(ledger))


def _refused(ledger: AttemptLedger) -> AttemptFacts:
    return ledger.update_attempt(_fresh(ledger).id, acceptance="not_accepted")


def _delivered(ledger: AttemptLedger) -> AttemptFacts:
    return ledger.deliver(_accepted(ledger).id, {"text": "{}", "callId": "aira_s1"})


def _undelivered(ledger: AttemptLedger) -> AttemptFacts:
    a = _accepted(ledger)
    return ledger.update_attempt(a.id, outcome="succeeded", delivery_state="failed")


def _failed(ledger: AttemptLedger) -> AttemptFacts:
    return ledger.update_attempt(_accepted(ledger).id, outcome="failed")


def _with_remote(ledger: AttemptLedger) -> AttemptFacts:
    return ledger.update_attempt(_fresh(ledger).id, acceptance="accepted", remote_id="job-1")


def _cancel_requested(ledger: AttemptLedger) -> AttemptFacts:
    return ledger.update_attempt(_with_remote(ledger).id, cancel_state="requested")


def _canceled(ledger: AttemptLedger) -> AttemptFacts:
    a = _cancel_requested(ledger)
    return ledger.update_attempt(a.id, cancel_state="remote_confirmed", outcome="canceled")


def _unknown(ledger: AttemptLedger) -> AttemptFacts:
    return ledger.update_attempt(_fresh(ledger).id, acceptance="unknown")


Change = Callable[[AttemptLedger, AttemptFacts], object]
FORBIDDEN: list[tuple[str, Callable[[AttemptLedger], AttemptFacts], Change]] = [
    (
        "accepted->not_accepted",
        _accepted,
        lambda g, a: g.update_attempt(a.id, acceptance="not_accepted"),
    ),
    ("accepted->unknown", _accepted, lambda g, a: g.update_attempt(a.id, acceptance="unknown")),
    (
        "not_accepted->accepted",
        _refused,
        lambda g, a: g.update_attempt(a.id, acceptance="accepted"),
    ),
    ("unknown->none", _unknown, lambda g, a: g.update_attempt(a.id, acceptance="none")),
    (
        "succeeded->failed on a failed delivery",
        _undelivered,
        lambda g, a: g.update_attempt(a.id, outcome="failed"),
    ),
    (
        "succeeded->failed after delivery",
        _delivered,
        lambda g, a: g.update_attempt(a.id, outcome="failed"),
    ),
    ("failed->succeeded", _failed, lambda g, a: g.update_attempt(a.id, outcome="succeeded")),
    ("ready by update", _undelivered, lambda g, a: g.update_attempt(a.id, delivery_state="ready")),
    ("ready->failed", _delivered, lambda g, a: g.update_attempt(a.id, delivery_state="failed")),
    ("deliver twice", _delivered, lambda g, a: g.deliver(a.id, {"text": "again"})),
    ("deliver a refused attempt", _refused, lambda g, a: g.deliver(a.id, {"text": "{}"})),
    ("deliver a failed attempt", _failed, lambda g, a: g.deliver(a.id, {"text": "{}"})),
    (
        "succeeded without acceptance",
        _fresh,
        lambda g, a: g.update_attempt(a.id, outcome="succeeded"),
    ),
    (
        "delivery without success",
        _accepted,
        lambda g, a: g.update_attempt(a.id, delivery_state="pending"),
    ),
    (
        "canceled after a success",
        _delivered,
        lambda g, a: g.update_attempt(a.id, outcome="canceled"),
    ),
    (
        "request digest rewritten",
        _accepted,
        lambda g, a: g.update_attempt(a.id, request_digest="sha256:" + "1" * 64),
    ),
    (
        "a local stop of an accepted job",
        _cancel_requested,
        lambda g, a: g.update_attempt(a.id, cancel_state="local_confirmed", outcome="canceled"),
    ),
    ("canceled->succeeded", _canceled, lambda g, a: g.deliver(a.id, {"text": "{}"})),
    (
        "confirmed cancel->unknown",
        _canceled,
        lambda g, a: g.update_attempt(a.id, cancel_state="unknown"),
    ),
    (
        "remote id without acceptance",
        _fresh,
        lambda g, a: g.update_attempt(a.id, remote_id="job-1"),
    ),
    ("remote id rewritten", _with_remote, lambda g, a: g.update_attempt(a.id, remote_id="job-2")),
    ("phase backwards", _accepted, lambda g, a: g.update_attempt(a.id, phase="submitting")),
    ("running without acceptance", _fresh, lambda g, a: g.update_attempt(a.id, phase="running")),
    ("terminal refused -> running", _refused, lambda g, a: g.update_attempt(a.id, phase="running")),
]


@pytest.mark.parametrize(
    ("setup", "change"), [f[1:] for f in FORBIDDEN], ids=[f[0] for f in FORBIDDEN]
)
def test_a_forbidden_change_is_refused_and_writes_nothing(
    ledger: AttemptLedger,
    path: Path,
    setup: Callable[[AttemptLedger], AttemptFacts],
    change: Change,
) -> None:
    attempt = setup(ledger)
    task = ledger.task(attempt.task_id)
    before = files(path)
    with pytest.raises(AiraError) as info:
        change(ledger, attempt)
    assert info.value.code == "LEDGER_TRANSITION_INVALID", info.value
    assert files(path) == before  # not a byte, in the file or its log
    assert ledger.attempt(attempt.id) == attempt and ledger.task(task.id) == task


def test_what_new_evidence_may_change(ledger: AttemptLedger) -> None:
    # unknown -> accepted (an idempotent query found the job), then observed and delivered
    a = _unknown(ledger)
    a = ledger.update_attempt(
        a.id, acceptance="accepted", remote_id="job-9", phase="running", watch_state="active"
    )
    a = ledger.update_attempt(a.id, watch_state="exhausted", outcome="unknown", phase="terminal")
    assert a.human_state is HumanState.WATCH_PAUSED and a.status is LegacyStatus.RUNNING
    a = ledger.update_attempt(a.id, phase="running", watch_state="active")  # observed again
    a = ledger.update_attempt(a.id, outcome="succeeded", delivery_state="downloading")
    a = ledger.update_attempt(a.id, delivery_state="failed", phase="terminal")
    assert (a.outcome, a.human_state) == (Outcome.SUCCEEDED, HumanState.AWAITING_DELIVERY)
    a = ledger.update_attempt(
        a.id, phase="running", delivery_state="downloading"
    )  # delivered again
    a = ledger.deliver(a.id, {"text": "{}", "callId": "aira_s1"})
    assert (a.status, a.remote_id, a.watch_state) == (
        LegacyStatus.SUCCEEDED,
        "job-9",
        WatchState.IDLE,
    )
    # a later note keeps the delivered reply
    a = ledger.update_attempt(a.id, error={"code": "GATEWAY_NOTE", "message": "late"})
    assert a.reply == {"text": "{}", "callId": "aira_s1"} and a.error["message"] == "late"
    # unknown -> not_accepted (the provider confirmed no job was made)
    b = ledger.update_attempt(_unknown(ledger).id, acceptance="not_accepted")
    assert b.phase is Phase.TERMINAL
    # a cancel whose answer was lost, then confirmed
    c = _with_remote(ledger)
    ledger.update_attempt(c.id, cancel_state="requested")
    c = ledger.update_attempt(c.id, cancel_state="unknown")
    assert c.human_state is HumanState.NEEDS_CONFIRMATION and c.outcome is Outcome.NONE
    c = ledger.update_attempt(c.id, cancel_state="remote_confirmed", outcome="canceled")
    assert (c.status, c.phase) == (LegacyStatus.CANCELED, Phase.TERMINAL)
    assert ledger.check() == []


def test_the_gateways_sequences_are_allowed(ledger: AttemptLedger) -> None:
    """The calls aira_core/gateway/gateway.py makes, in its order (sync, job, leftovers,
    cancel)."""
    task = ledger.create_task("run")
    # sync: begin before the body exists; its digest with the move to submitting
    a = ledger.begin_attempt(task.id, 1, "deepseek", "deepseek-chat", idempotency_key="aira-k-s1")
    assert a.request_digest is None and a.stage == "preparing"
    ledger.update_attempt(a.id, stage="submitting", phase="submitting", request_digest=DIGEST)
    a = ledger.update_attempt(
        a.id,
        stage="delivering",
        phase="accepted",
        acceptance="accepted",
        outcome="succeeded",
        delivery_state="pending",
    )
    a = ledger.deliver(a.id, {"text": "{}", "callId": "aira_s1"})
    ledger.set_task(task.id, phase="running")
    assert (a.request_digest, a.status) == (DIGEST, LegacyStatus.SUCCEEDED)
    # job: accepted with a remote id, watched, exhausted, watched again, fetched, undelivered
    j = ledger.begin_attempt(task.id, 2, "jobs", "m")
    ledger.update_attempt(j.id, stage="submitting", phase="submitting", request_digest=DIGEST)
    j = ledger.update_attempt(
        j.id,
        stage="watching",
        phase="accepted",
        acceptance="accepted",
        remote_id="job-1",
        watch_state="active",
    )
    j = ledger.update_attempt(j.id, watch_state="exhausted", outcome="unknown")
    j = ledger.update_attempt(j.id, stage="watching", watch_state="active")
    j = ledger.update_attempt(j.id, phase="running")
    j = ledger.update_attempt(
        j.id, outcome="succeeded", watch_state="idle", delivery_state="pending"
    )
    j = ledger.update_attempt(j.id, stage="fetching", delivery_state="downloading")
    j = ledger.update_attempt(
        j.id, delivery_state="failed", error={"code": "PROVIDER_BODY", "message": "bad body"}
    )
    j = ledger.update_attempt(j.id, stage="fetching", delivery_state="downloading")
    j = ledger.deliver(j.id, {"text": "{}", "callId": "aira_s2"})
    # a job the provider says was canceled (not by us): a fact, not a confirmed cancel
    c = ledger.begin_attempt(task.id, 3, "jobs", "m")
    ledger.update_attempt(c.id, stage="submitting", phase="submitting", request_digest=DIGEST)
    ledger.update_attempt(
        c.id, phase="accepted", acceptance="accepted", remote_id="job-2", watch_state="active"
    )
    c = ledger.update_attempt(c.id, outcome="canceled", watch_state="idle")
    assert (c.status, c.human_state) == (LegacyStatus.RUNNING, HumanState.NEEDS_CONFIRMATION)
    # leftovers of a dead process: an error without a code
    left = ledger.create_task("left")
    p = ledger.begin_attempt(left.id, 1, "deepseek", "m")
    p = ledger.update_attempt(
        p.id,
        acceptance="not_accepted",
        phase="terminal",
        error={
            "stage": "prepare",
            "category": "interrupted",
            "acceptance": "not_accepted",
            "message": "ended",
        },
    )
    assert p.error is not None and p.error["code"] is None and p.error["retryable"] is False
    s = ledger.begin_attempt(left.id, 1, "deepseek", "m")
    ledger.update_attempt(s.id, stage="submitting", phase="submitting", request_digest=DIGEST)
    s = ledger.update_attempt(
        s.id, acceptance="unknown", outcome="unknown", error={"stage": "submit", "message": "ended"}
    )
    # cancel: requested, then confirmed by the provider, or locally for what never left
    ledger.update_attempt(s.id, cancel_state="requested")
    s = ledger.update_attempt(s.id, cancel_state="unknown")
    assert s.outcome is Outcome.UNKNOWN and s.human_state is HumanState.NEEDS_CONFIRMATION
    other = ledger.create_task("cancel me")
    q = ledger.begin_attempt(other.id, 1, "deepseek", "m")
    ledger.update_attempt(q.id, cancel_state="requested")
    q = ledger.update_attempt(
        q.id, cancel_state="local_confirmed", outcome="canceled", phase="terminal"
    )
    assert q.status is LegacyStatus.CANCELED
    r = ledger.begin_attempt(other.id, 2, "jobs", "m")
    ledger.update_attempt(r.id, stage="submitting", phase="submitting", request_digest=DIGEST)
    ledger.update_attempt(r.id, phase="accepted", acceptance="accepted", remote_id="job-3")
    ledger.update_attempt(r.id, cancel_state="requested")
    r = ledger.update_attempt(
        r.id,
        cancel_state="remote_confirmed",
        outcome="canceled",
        watch_state="idle",
        phase="terminal",
    )
    assert r.status is LegacyStatus.CANCELED
    assert ledger.check() == []


def test_bad_values_are_argument_errors(ledger: AttemptLedger) -> None:
    task = ledger.create_task("x")
    a = begin(ledger, task)
    bad: list[Callable[[], object]] = [
        lambda: ledger.update_attempt(a.id, outcome="maybe"),
        lambda: ledger.update_attempt(a.id, stage="Sending now"),
        lambda: ledger.update_attempt(a.id, error={"code": "X_Y", "message": "m", "body": "…"}),
        lambda: ledger.update_attempt(a.id, error={"code": "not a code", "message": "m"}),
        lambda: ledger.update_attempt(
            a.id, error={"code": "X_Y", "message": "m", "httpStatus": "500"}
        ),
        lambda: ledger.update_attempt(a.id, error="timed out"),
        lambda: ledger.deliver(a.id, ["not", "an", "object"]),
        lambda: ledger.begin_attempt(task.id, 2, "deepseek", "m", request_digest=json.dumps(BODY)),
        lambda: ledger.begin_attempt(task.id, 2, "deep::seek", "m", request_digest=DIGEST),
        lambda: ledger.begin_attempt(task.id, 2, "deepseek", "a::b", request_digest=DIGEST),
        lambda: ledger.begin_attempt(task.id, -1, "deepseek", "m", request_digest=DIGEST),
        lambda: ledger.begin_attempt(
            task.id, 2, "d", "m", request_digest=DIGEST, idempotency_key="a b"
        ),
        lambda: ledger.create_task({"nan": float("nan")}),
    ]
    for op in bad:
        with pytest.raises(AiraError) as info:
            op()
        assert info.value.code == "LEDGER_ARGUMENT_INVALID", info.value
    for op, code in [
        (lambda: ledger.task("task_" + "0" * 32), "LEDGER_TASK_UNKNOWN"),
        (lambda: ledger.task("nope"), "LEDGER_TASK_UNKNOWN"),
        (lambda: ledger.attempt("attempt_" + "0" * 32), "LEDGER_ATTEMPT_UNKNOWN"),
        (lambda: ledger.update_attempt("x", stage="done"), "LEDGER_ATTEMPT_UNKNOWN"),
    ]:
        with pytest.raises(AiraError) as info:
            op()
        assert info.value.code == code
    assert ledger.task(task.id).revision == 2 and ledger.attempt(a.id) == a
    assert "preparing" in ATTEMPT_STAGES and "submitting" in ATTEMPT_STAGES


def test_an_error_is_stored_in_its_structured_form(ledger: AttemptLedger) -> None:
    class ProviderLike(AiraError):
        def to_wire(self) -> dict[str, Any]:
            return {
                "stage": "send",
                "category": "timeout",
                "httpStatus": None,
                "providerCode": 42,
                "acceptance": "unknown",
                "retryable": True,
                "code": "PROVIDER_TIMEOUT",
                "message": "x" * 5000,
            }

    a = _fresh(ledger)
    a = ledger.update_attempt(
        a.id, acceptance="unknown", error=ProviderLike("PROVIDER_TIMEOUT", "t")
    )
    assert a.error is not None
    assert set(a.error) == set(ERROR_KEYS)
    assert a.error["providerCode"] == "42" and a.error["retryable"] is True
    assert len(a.error["message"]) == 1001  # cut: a provider may echo the request


# -- informed retry --------------------------------------------------------------------------


def test_an_informed_retry_links_a_new_task_and_keeps_the_old_facts(ledger: AttemptLedger) -> None:
    old = ledger.create_task({"goal": "a 10 mm cube"})
    a = _attempt_unknown_on(ledger, old)
    with pytest.raises(AiraError) as info:  # still being advanced
        ledger.informed_retry(old.id)
    assert info.value.code == "LEDGER_TRANSITION_INVALID"
    old = ledger.set_task(old.id, phase="terminal")
    assert old.human_state is HumanState.NEEDS_CONFIRMATION
    new = ledger.informed_retry(old.id)
    kept = ledger.task(old.id)
    assert new.retry_of == old.id and new.intent == {"goal": "a 10 mm cube"} and new.revision == 1
    assert new.facts == Facts() and ledger.attempts(new.id) == []
    assert kept.handled_by_retry == new.id and kept.revision == old.revision + 1
    assert kept.facts == old.facts and kept.error == old.error  # the unknown stays on record
    assert ledger.attempt(a.id).acceptance is Acceptance.UNKNOWN
    for op in (lambda: ledger.informed_retry(old.id), lambda: begin(ledger, kept, step=2)):
        with pytest.raises(AiraError) as info:
            op()
        assert info.value.code == "LEDGER_TRANSITION_INVALID"
    ledger.set_task(new.id, phase="terminal")
    newest = ledger.create_task("asked again", retry_of=new.id)
    ids = [t.id for t in ledger.chain(new.id)]
    assert ids == [old.id, new.id, newest.id] == [t.id for t in ledger.chain(old.id)]
    assert ledger.check() == []


def _attempt_unknown_on(ledger: AttemptLedger, task: TaskFacts) -> AttemptFacts:
    a = begin(ledger, task)
    ledger.update_attempt(a.id, stage="submitting", phase="submitting")
    return ledger.update_attempt(
        a.id, acceptance="unknown", error={"code": "PROVIDER_READ_TIMEOUT", "message": "no answer"}
    )


# -- nothing secret is stored ------------------------------------------------------------------


def test_no_secret_reaches_the_file_or_its_log(
    ledger: AttemptLedger, path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sentinel = "zq" + os.urandom(12).hex()
    monkeypatch.setenv("AIRA_TEST_API_KEY", sentinel)
    bearer = "sk-" + "a1B2" * 10
    private = str(tmp_path / "secret-place" / "out.step")
    marker = "visible-marker-4711"
    task = ledger.create_task(f"{marker} intent {sentinel}")
    a = begin(ledger, task)
    ledger.update_attempt(a.id, stage="submitting", phase="submitting")
    ledger.update_attempt(
        a.id,
        acceptance="accepted",
        remote_id=f"job-{sentinel}",
        error={
            "code": "PROVIDER_HTTP",
            "message": f"{marker} key={sentinel} Authorization: Bearer {bearer} at {private}",
        },
    )
    reply = {
        "text": f'{{"act":"done","note":"{marker} {sentinel}"}}',
        "reasoning": f"the key is {sentinel}",
        "callId": "aira_s1",
    }
    ledger.deliver(a.id, reply)
    stored = [b for b in files(path).values() if b]
    assert stored, "nothing written?"
    blob = b"".join(stored)
    assert marker.encode() in blob  # the search sees what was written
    for secret in (sentinel, bearer, private, json.dumps(BODY)):
        assert secret.encode() not in blob, secret
    assert sentinel not in json.dumps(ledger.attempt(a.id).to_wire())
    ledger.close()
    blob = b"".join(b for b in files(path).values() if b)
    assert marker.encode() in blob and sentinel.encode() not in blob


# -- damaged, foreign and unwritable files ---------------------------------------------------


def _text(path: Path) -> None:
    path.write_text("just some notes\n" * 100)


def _other_sqlite(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('hello')")
    db.commit()
    db.close()


def _empty_sqlite(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 0")
    db.execute("VACUUM")  # writes the header: a valid database with nothing in it
    db.close()


def _model_store(path: Path) -> None:
    from aira_core.model.store import ModelStore

    with ModelStore(path, create=True) as store:
        store.init({"format": "test/1"})


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _damaged(path: Path) -> None:
    with AttemptLedger(path) as ledger:
        for i in range(40):
            begin(ledger, ledger.create_task(f"task {i} " + "x" * 300))
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 3 * page
    data[page + 8 : 2 * page] = os.urandom(page - 8)  # a b-tree page: garbage
    path.write_bytes(bytes(data))


def _newer(path: Path) -> None:
    AttemptLedger(path).close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 2")
    db.close()


def _lacking(path: Path) -> None:
    AttemptLedger(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP TRIGGER attempts_final_facts")
    db.close()


BAD_FILES = [
    ("text file", _text, "LEDGER_NOT_A_LEDGER"),
    ("another sqlite", _other_sqlite, "LEDGER_NOT_A_LEDGER"),
    ("an empty sqlite", _empty_sqlite, "LEDGER_NOT_A_LEDGER"),
    ("the model store", _model_store, "LEDGER_NOT_A_LEDGER"),
    ("0 bytes", _empty, "LEDGER_CORRUPT"),
    ("damaged page", _damaged, "LEDGER_CORRUPT"),
    ("a trigger dropped", _lacking, "LEDGER_CORRUPT"),
    ("newer schema", _newer, "LEDGER_UNAVAILABLE"),
]


@pytest.mark.parametrize(
    ("make", "code"), [b[1:] for b in BAD_FILES], ids=[b[0] for b in BAD_FILES]
)
def test_a_file_that_is_no_valid_ledger_is_refused_and_left_as_it_is(
    path: Path, make: Callable[[Path], None], code: str
) -> None:
    make(path)
    before, around = files(path), companions(path)
    with pytest.raises(AiraError) as info:
        AttemptLedger(path)
    assert info.value.code == code, info.value
    message = str(info.value)
    assert "gateway.sqlite3" in message and str(path.parent) not in message  # no private path
    assert files(path) == before and companions(path) == around


def test_a_damaged_row_is_corrupt_not_a_wrong_answer(ledger: AttemptLedger, path: Path) -> None:
    task = ledger.create_task("x")
    db = sqlite3.connect(path)
    db.execute(
        "UPDATE tasks SET error = '{\"code\":', revision = revision + 1 WHERE id = ?", (task.id,)
    )
    db.commit()
    db.close()
    with pytest.raises(AiraError) as info:
        ledger.task(task.id)
    assert info.value.code == "LEDGER_CORRUPT"
    assert any("not readable JSON" in p for p in ledger.check())


def test_an_unwritable_location_is_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    for where in (blocker / "gateway.sqlite3", tmp_path):
        with pytest.raises(AiraError) as info:
            AttemptLedger(where)
        assert info.value.code == "LEDGER_UNAVAILABLE", info.value
    assert blocker.read_text() == "not a directory"
    # A ledger whose write-ahead log cannot be made (a directory in its place).
    path = tmp_path / "blocked.sqlite3"
    AttemptLedger(path).close()
    before = path.read_bytes()
    (tmp_path / "blocked.sqlite3-wal").mkdir()
    with pytest.raises(AiraError) as info:
        AttemptLedger(path)
    assert info.value.code == "LEDGER_UNAVAILABLE", info.value
    assert path.read_bytes() == before
    closed = AttemptLedger(tmp_path / "g.sqlite3")
    closed.close()
    with pytest.raises(AiraError) as info:
        closed.tasks()
    assert info.value.code == "LEDGER_UNAVAILABLE"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes")
def test_a_read_only_ledger_is_unavailable(path: Path) -> None:
    AttemptLedger(path).close()
    path.chmod(0o444)
    path.parent.chmod(0o555)
    try:
        with pytest.raises(AiraError) as info, AttemptLedger(path) as ledger:
            ledger.create_task("x")
        assert info.value.code == "LEDGER_UNAVAILABLE"
    finally:
        path.parent.chmod(0o755)
        path.chmod(0o644)


# -- killed writers ----------------------------------------------------------------------------

KILL_CHILD = """
import contextlib, json, os, signal, sys
from aira_core.gateway.ledger import AttemptLedger

path, when, operation, attempt_id = sys.argv[1:5]


@contextlib.contextmanager
def killed_tx(self):
    db = self._connection()
    db.execute("BEGIN IMMEDIATE")
    yield db
    if when == "after_commit":
        db.execute("COMMIT")
    print("in-transaction" if when == "before_commit" else "committed", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


ledger = AttemptLedger(path)
AttemptLedger._tx = killed_tx
if operation == "accept":
    ledger.update_attempt(attempt_id, acceptance="accepted", remote_id="job-1", phase="running")
elif operation == "deliver":
    ledger.deliver(attempt_id, {"text": "{}", "callId": "aira_s1"}, task_phase="terminal")
elif operation == "begin":
    task_id = ledger.attempt(attempt_id).task_id
    ledger.begin_attempt(task_id, 2, "deepseek", "m", request_digest="sha256:" + "0" * 64)
print("not killed", flush=True)
"""


def _consistent(path: Path) -> None:
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    db.close()
    with AttemptLedger(path) as ledger:
        assert ledger.check() == []


@pytest.mark.parametrize("when", ["before_commit", "after_commit"])
@pytest.mark.parametrize("operation", ["accept", "deliver", "begin"])
def test_a_writer_killed_in_a_transaction_leaves_a_consistent_ledger(
    path: Path, when: str, operation: str
) -> None:
    with AttemptLedger(path) as ledger:
        task = ledger.create_task("x")
        a = begin(ledger, task)
        ledger.update_attempt(a.id, stage="submitting", phase="submitting")
        if operation == "deliver":
            ledger.update_attempt(a.id, acceptance="accepted", phase="running")
        elif operation == "begin":
            ledger.update_attempt(a.id, acceptance="accepted")
            ledger.deliver(a.id, {"text": "{}"})
        task_before, attempts_before = ledger.task(task.id), ledger.attempts(task.id)
    child = _python(KILL_CHILD, str(path), when, operation, a.id)
    out, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, err
    assert out.strip() == ("in-transaction" if when == "before_commit" else "committed")
    _consistent(path)
    with AttemptLedger(path) as ledger:
        task_after = ledger.task(task.id)
        if when == "before_commit":
            assert task_after == task_before and ledger.attempts(task.id) == attempts_before
        else:
            assert task_after.revision == task_before.revision + 1
            latest = ledger.attempts(task.id)[-1]
            expected = {
                "accept": Acceptance.ACCEPTED,
                "deliver": Acceptance.ACCEPTED,
                "begin": Acceptance.NONE,
            }
            assert latest.acceptance is expected[operation]
            assert (latest.remote_id == "job-1") == (operation == "accept")
        # The ledger takes writes again.
        ledger.set_task(task.id, phase="terminal")


LOOP_CHILD = """
import json, sys
from aira_core.gateway.ledger import AttemptLedger

ledger = AttemptLedger(sys.argv[1])
task = ledger.create_task("looping")
step = 0
while True:
    step += 1
    digest = "sha256:" + "0" * 64
    a = ledger.begin_attempt(task.id, step, "deepseek", "deepseek-chat", request_digest=digest)
    ledger.update_attempt(a.id, stage="submitting", phase="submitting")
    ledger.update_attempt(a.id, acceptance="accepted", phase="accepted")
    ledger.deliver(a.id, {"text": str(step)})
    print(json.dumps({"task": task.id, "revision": ledger.task(task.id).revision}), flush=True)
"""


def test_a_writer_killed_at_any_moment_leaves_every_reported_change(path: Path) -> None:
    AttemptLedger(path).close()
    child = _python(LOOP_CHILD, str(path))
    assert child.stdout is not None
    watchdog = threading.Timer(60, child.kill)  # never hang the suite on a stuck child
    watchdog.start()
    told: dict[str, Any] = {}
    try:
        for _ in range(15):
            line = child.stdout.readline()
            if not line:
                break
            told = json.loads(line)
    finally:
        watchdog.cancel()
    os.kill(child.pid, signal.SIGKILL)
    rest, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, err
    assert told, "the child wrote nothing"
    for line in rest.splitlines():
        with contextlib.suppress(ValueError):  # a line cut short by the kill
            told = json.loads(line)
    _consistent(path)
    with AttemptLedger(path) as ledger:
        task = ledger.task(told["task"])
        # Every reported change is durable; the writes in flight landed whole or not at all.
        assert told["revision"] <= task.revision <= told["revision"] + 4
        attempts = ledger.attempts(task.id)
        assert [a.step for a in attempts] == list(range(1, len(attempts) + 1))
        assert all(a.reply == {"text": str(a.step)} for a in attempts[:-1])
