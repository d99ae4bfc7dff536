"""The OCCT worker process: lazy start, the cache kept between calls, a timeout and a kill
mid-call each replaced by a fresh worker while the host carries on."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("cadquery")

from aira_kernel_occt.worker import (
    KERNEL_METHOD_UNKNOWN,
    KERNEL_TIMEOUT,
    KERNEL_WORKER_CRASHED,
    TEST_HOOKS_ENV,
    WorkerClient,
)

BOX = {
    "parameters": [],
    "nodes": [
        {
            "id": "n",
            "op": "exact.box@1.0.0",
            "inputs": {"length": {"value": 4}, "width": {"value": 5}, "height": {"value": 6}},
        }
    ],
    "bodies": [{"id": "b", "label": "b", "tip": "n"}],
}


@pytest.fixture(scope="module")
def worker() -> Iterator[WorkerClient]:
    client = WorkerClient(timeout=30, env={TEST_HOOKS_ENV: "1"})
    yield client
    client.close()


def code(reply: dict[str, Any]) -> str:
    assert reply["ok"] is False, reply
    return reply["diagnostics"][0]["code"]


def test_the_worker_starts_on_the_first_call_and_keeps_its_cache(worker: WorkerClient) -> None:
    assert worker.pid is None  # constructing the client started nothing
    first = worker.call("evaluate", {"document": BOX, "changed": None})
    assert first["ok"] and first["result"]["evaluatedNodes"] == ["n"]
    assert first["result"]["bodies"]["b"]["volume"] == pytest.approx(120)
    pid = worker.pid
    assert pid is not None and pid != os.getpid()
    again = worker.call("evaluate", {"document": BOX, "changed": ["n"]})
    assert again["result"]["evaluatedNodes"] == [] and worker.pid == pid
    assert worker.call("ping")["result"] == {"pid": pid, "cached": 1}


def test_a_call_past_its_timeout_is_kernel_timeout_and_the_next_call_works(
    worker: WorkerClient,
) -> None:
    worker.call("ping")
    before, restarts = worker.pid, worker.restarts
    started = time.monotonic()
    reply = worker.call("sleep", {"seconds": 30}, timeout=0.5)
    assert code(reply) == KERNEL_TIMEOUT
    assert time.monotonic() - started < 5
    assert worker.restarts == restarts + 1
    after = worker.call("evaluate", {"document": BOX, "changed": None})
    assert after["ok"] and after["result"]["bodies"]["b"]["valid"] is True
    assert worker.pid != before


def test_a_worker_killed_mid_call_is_kernel_worker_crashed_and_replaced(
    worker: WorkerClient,
) -> None:
    pid = worker.call("ping")["result"]["pid"]
    killer = threading.Timer(0.3, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        reply = worker.call("sleep", {"seconds": 30})
    finally:
        killer.cancel()
    assert code(reply) == KERNEL_WORKER_CRASHED
    after = worker.call("ping")
    assert after["ok"] and after["result"]["pid"] not in (pid, None)
    assert worker.call(
        "query", {"document": BOX, "ref": "query.boundingBox@1.0.0", "args": {"target": "b"}}
    )["result"]["data"]["size"] == pytest.approx([4, 5, 6])


def test_a_worker_that_died_while_idle_is_replaced_silently(worker: WorkerClient) -> None:
    pid = worker.call("ping")["result"]["pid"]
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    reply = worker.call("ping")
    assert reply["ok"] and reply["result"]["pid"] != pid


def test_test_hooks_are_off_unless_the_worker_environment_enables_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(TEST_HOOKS_ENV, raising=False)
    with WorkerClient(timeout=30) as plain:
        assert code(plain.call("sleep", {"seconds": 0})) == KERNEL_METHOD_UNKNOWN
        assert plain.call("ping")["ok"]
    assert plain.pid is None  # closed
