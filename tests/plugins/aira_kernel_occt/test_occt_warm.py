"""The warm OCCT worker (aira_kernel_occt/warm.py): one per user that outlives a command,
private to the user, keyed by what its answers depend on, gone when idle, restarted when it
dies; and ``aira plan apply`` using it across two commands."""

from __future__ import annotations

import json
import os
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

from cli_runner import new_process
from test_occt_worker import BOX  # the same one-box document

from aira_kernel_occt.warm import WARM_ENV, WarmClient, socket_dir, workers_under
from aira_kernel_occt.worker import (
    KERNEL_TIMEOUT,
    KERNEL_UNAVAILABLE,
    KERNEL_WORKER_CRASHED,
    TEST_HOOKS_ENV,
)

HOOKS = {TEST_HOOKS_ENV: "1"}


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private XDG_RUNTIME_DIR of the test's own; every warm worker in it is stopped after."""
    where = tmp_path / "run"
    where.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(where))
    yield where
    for pid in workers_under(where):
        os.kill(pid, signal.SIGKILL)


def client(**kw: Any) -> WarmClient:
    return WarmClient(kw.pop("timeout", 30), fingerprint=kw.pop("fingerprint", "test"), **kw)


def code(reply: dict[str, Any]) -> str:
    assert reply["ok"] is False, reply
    return str(reply["diagnostics"][0]["code"])


def test_a_second_command_finds_the_worker_warm_with_its_cache(runtime: Path) -> None:
    first = client(env=HOOKS)
    assert first.pid is None  # constructing the client started nothing
    built = first.call("evaluate", {"document": BOX})
    assert built["ok"] and built["result"]["evaluatedNodes"] == ["n"]
    pid = first.pid
    first.close()  # the command ends; the worker stays
    assert pid in workers_under(runtime)
    second = client(env=HOOKS)  # the next command
    again = second.call("evaluate", {"document": BOX})
    assert again["ok"] and again["result"]["evaluatedNodes"] == []  # nothing built twice
    assert second.pid == pid
    second.stop()
    assert workers_under(runtime) == []


def test_the_socket_and_its_directory_are_the_users_alone(runtime: Path) -> None:
    warm = client()
    assert warm.call("ping")["ok"]
    folder = socket_dir()
    assert folder.parent == runtime
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(warm.socket_path().stat().st_mode) == 0o600
    warm.stop()


def test_a_directory_others_can_enter_is_refused(runtime: Path) -> None:
    (runtime / "aira-occt").mkdir(mode=0o755)
    os.chmod(runtime / "aira-occt", 0o755)  # whatever the umask
    reply = client().call("ping")
    assert code(reply) == KERNEL_UNAVAILABLE and "other users" in reply["diagnostics"][0]["message"]
    assert WARM_ENV in reply["diagnostics"][0]["message"]  # how to do without
    assert workers_under(runtime) == []


def test_a_symlinked_directory_is_refused(runtime: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (runtime / "aira-occt").symlink_to(elsewhere)
    assert code(client().call("ping")) == KERNEL_UNAVAILABLE


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_reach_the_worker(runtime: Path) -> None:
    warm = client()
    assert warm.call("ping")["ok"]
    path = str(warm.socket_path())
    os.chmod(runtime, 0o755)  # the runtime dir may be open: the worker's own dir is not
    pid = os.fork()
    if pid == 0:  # the child: nobody
        import socket

        os.setgid(65534)
        os.setuid(65534)
        sock = socket.socket(socket.AF_UNIX)
        try:
            sock.connect(path)
        except PermissionError:
            os._exit(0)
        os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    warm.stop()


def test_commands_at_once_share_the_worker_one_call_at_a_time(runtime: Path) -> None:
    """A command that holds its connection (an MCP server, a long apply) does not keep the
    next one out: it is answered once the geometry is free."""
    first, second = client(env=HOOKS), client(env=HOOKS)
    assert first.call("ping")["ok"]  # connected, and stays so
    replies: dict[str, Any] = {}
    busy = threading.Thread(
        target=lambda: replies.setdefault("sleep", first.call("sleep", {"seconds": 2}))
    )
    busy.start()
    time.sleep(0.3)
    started = time.monotonic()
    pinged = second.call("ping")
    waited = time.monotonic() - started
    busy.join()
    assert pinged["ok"] and replies["sleep"]["ok"]
    assert first.pid == second.pid
    assert waited < 20  # served after the sleep, not after a start timeout
    first.stop()


def test_a_stale_runtime_dir_falls_back_to_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/nonexistent/run/user/4242")
    assert socket_dir() == Path(f"/tmp/aira-occt-{os.getuid()}")


def test_a_changed_install_gets_a_worker_of_its_own(runtime: Path) -> None:
    old, new = client(fingerprint="plugin 0.11.0"), client(fingerprint="plugin 0.12.0")
    assert old.call("ping")["ok"] and new.call("ping")["ok"]
    assert old.pid != new.pid and old.socket_path() != new.socket_path()
    old.stop()
    new.stop()


def test_a_call_past_its_timeout_stops_the_worker_and_the_next_starts_one(runtime: Path) -> None:
    warm = client(env=HOOKS)
    assert warm.call("ping")["ok"]
    before = warm.pid
    assert code(warm.call("sleep", {"seconds": 30}, timeout=1)) == KERNEL_TIMEOUT
    assert before not in workers_under(runtime)
    after = warm.call("ping")
    assert after["ok"] and warm.pid != before and warm.restarts == 1
    warm.stop()


def test_a_worker_that_dies_mid_call_is_a_crash_and_is_replaced(runtime: Path) -> None:
    warm = client(env=HOOKS)
    assert warm.call("ping")["ok"]
    victim = warm.pid
    assert victim is not None
    threading.Timer(0.5, os.kill, (victim, signal.SIGKILL)).start()
    assert code(warm.call("sleep", {"seconds": 20})) == KERNEL_WORKER_CRASHED
    assert warm.call("evaluate", {"document": BOX})["ok"] and warm.pid != victim
    warm.stop()


def test_a_worker_that_died_between_commands_is_started_again(runtime: Path) -> None:
    first = client()
    assert first.call("ping")["ok"]
    os.kill(first.pid, signal.SIGKILL)  # type: ignore[arg-type]
    first.close()
    second = client()  # the next command finds its socket dead and starts a new worker
    assert second.call("ping")["ok"] and second.pid != first.pid
    second.stop()


def test_an_idle_worker_exits_and_takes_its_socket_with_it(runtime: Path) -> None:
    warm = client(idle=1.0)
    assert warm.call("ping")["ok"]
    path, pid = warm.socket_path(), warm.pid
    warm.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (path.exists() or pid in workers_under(runtime)):
        time.sleep(0.2)
    assert not path.exists() and pid not in workers_under(runtime)


def test_two_plan_applies_share_one_warm_kernel(runtime: Path, tmp_path: Path) -> None:
    """What the warm kernel is for: two ``aira plan apply`` commands, one worker."""
    home = tmp_path / "home"
    env = {"AIRA_PLUGINS": "occt", WARM_ENV: "1", "XDG_RUNTIME_DIR": str(runtime)}

    def aira(*args: str) -> dict[str, Any]:
        out = new_process(*args, "--json", home=home, timeout=600, **env)
        assert out.returncode == 0, out.stdout + out.stderr
        return dict(json.loads(out.stdout))

    steps = [
        {"id": "plate", "capability": "cap:exact.box@1", "label": "plate",
         "args": {"length": 40, "width": 30, "height": 10}},
        {"id": "round", "capability": "cap:exact.fillet@1",
         "args": {"target": "b:plate", "radius": 2,
                  "edges": {"body": "b:plate", "select": "|Z", "entity": "Edge"}}},
    ]  # fmt: skip
    pids = []
    for name in ("one", "two"):
        store = tmp_path / f"{name}.sqlite3"
        base = aira("model", "init", "--store", str(store))["rev"]
        plan = tmp_path / f"{name}.json"
        plan.write_text(json.dumps({"baseRevision": base, "steps": steps}))
        envelope = aira("plan", "apply", str(plan), "--store", str(store))
        assert envelope["status"] == "success", envelope["diagnostics"]
        pids.append(workers_under(runtime))
    assert len(pids[0]) == 1 and pids[0] == pids[1]  # the first command's worker served both
