"""A warm kernel for repeated CLI calls: one per-user OCCT worker that outlives a command.

Every ``aira plan apply`` (or ``model export``, ``query`` …) otherwise starts a worker and
imports CadQuery, 1.5 s before the first node is built; a warm process builds a small part
in tens of milliseconds. With ``AIRA_OCCT_WARM=1`` the kernel talks to a worker that stays
up between commands instead (:class:`WarmClient`, the same calls and failures as
:class:`~aira_kernel_occt.worker.WorkerClient`):

- **Private to the user.** It listens on a Unix socket in a directory only the user can
  enter (``$XDG_RUNTIME_DIR/aira-occt``, else ``/tmp/aira-occt-<uid>``, mode 0700; one with
  any other owner or mode is refused), and answers only a peer of the same uid
  (``SO_PEERCRED``).
- **The right version.** The socket's name is a digest of what its answers depend on: the
  plugin's version and source, CadQuery's and OCP's versions, the interpreter, the
  environment it is given and ``AIRA_HOME``. A changed install never talks to an old worker;
  the old one idles out.
- **Shared, in order.** Several commands at once each have their connection; the geometry
  runs one call at a time on the worker's main thread (as in a per-process worker).
- **Gone when idle.** It exits after ``AIRA_OCCT_WARM_IDLE`` seconds (default 900) without a
  call, and removes its socket (its own only). A call that runs past twice its timeout ends
  it.
- **Restarted when it dies.** A call that times out kills it (``KERNEL_TIMEOUT``); one it dies
  in is ``KERNEL_WORKER_CRASHED``; the next call, or the next command, starts a new one.

Off by default: a process that stays behind after a command holds CadQuery's memory
(~300 MB) and its own copy of the node cache, and a tool that leaves processes running
should be asked for; agents and scripts that call the CLI in a loop turn it on.

Run as ``python -m aira_kernel_occt.warm SOCKET IDLE ENV_JSON``: the client starts it so.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any

from aira_core.warm import (
    NotPrivate,
    enabled,
    is_process_of,
    peer_is_own,
    processes_under,
    socket_path,
    world,
)
from aira_core.warm import idle_seconds as warm_idle_seconds
from aira_core.warm import socket_dir as private_socket_dir
from aira_kernel_occt.worker import (
    DEFAULT_TIMEOUT,
    KERNEL_TIMEOUT,
    KERNEL_UNAVAILABLE,
    KERNEL_WORKER_CRASHED,
    START_TIMEOUT,
    TEST_HOOKS_ENV,
    answer,
    failure,
    load_geometry,
    send_reply,
)

WARM_ENV = "AIRA_OCCT_WARM"
IDLE_ENV = "AIRA_OCCT_WARM_IDLE"
DEFAULT_IDLE = 900.0
_POLL = 0.05
HELLO_TIMEOUT = 10.0
"""How long a worker whose socket is up may take to say hello (its reader thread answers
it, whatever call the geometry is running)."""
_INHERITED = (TEST_HOOKS_ENV, "CSF_", "MMGT_", "CASROOT", "PYTHONPATH", "PYTHONHOME")


def warm_enabled() -> bool:
    """Whether the user asked for the warm kernel: ``AIRA_OCCT_WARM`` when set, else
    ``AIRA_WARM`` (every warm process the CLI offers; :func:`aira_core.warm.enabled`)."""
    return enabled(WARM_ENV)


def idle_seconds() -> float:
    """``AIRA_OCCT_WARM_IDLE`` (seconds, > 0), else :data:`DEFAULT_IDLE`."""
    return warm_idle_seconds(IDLE_ENV, DEFAULT_IDLE)


# -- where it lives ------------------------------------------------------------------------------

SOCKET_DIR = "aira-occt"
"""The user's private directory of warm workers (:func:`aira_core.warm.socket_dir`)."""


def socket_dir() -> Path:
    """The user's private directory for warm workers (see :func:`aira_core.warm.socket_dir`)."""
    return private_socket_dir(SOCKET_DIR)


def worker_key(fingerprint: str, env: Mapping[str, str]) -> str:
    """What a warm worker's answers depend on, as a short digest (its socket's name): the
    kernel's ``fingerprint`` (plugin version and source, CadQuery's and OCP's versions), the
    interpreter, the environment the worker is given and ``AIRA_HOME``."""
    from aira_core.config import aira_home

    said = {
        "kernel": fingerprint,
        # the interpreter, however it was started (python, python3, a console script)
        "python": [os.path.realpath(sys.executable), sys.prefix, sys.version],
        "env": dict(sorted(env.items())),
        # what the worker inherits from the command that starts it and its answers may see
        "inherited": {k: v for k, v in sorted(os.environ.items()) if k.startswith(_INHERITED)},
        "home": str(aira_home().resolve()),
        # a sandboxed caller (another namespace, seccomp) is refused by a worker outside it
        "world": world(),
    }
    return hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()[:24]


# -- the worker side -----------------------------------------------------------------------------


def serve(path: str, idle: float, env: Mapping[str, str]) -> None:
    """Import the geometry, listen on ``path`` and answer every client of this uid until
    nothing was asked for ``idle`` seconds. Each connection has a thread that reads its
    calls; the geometry runs on this (the main) thread, one call at a time, in order."""
    os.environ.update(env)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    hooks = os.environ.get(TEST_HOOKS_ENV) == "1"
    geometry, broken = load_geometry()
    cache: dict[str, Any] = {}
    listener = Listener(path, backlog=64)  # a path: a Unix socket
    os.chmod(path, 0o600)
    mine = os.stat(path).st_ino  # the socket this worker made (a later one is not its own)
    key = Path(path).stem
    jobs: queue.Queue[tuple[Connection, Any, str, Any, float]] = queue.Queue()
    state: dict[str, Any] = {"last": time.monotonic(), "busy": None}

    def watchdog() -> None:
        while True:
            time.sleep(min(1.0, idle / 4))
            now, busy = time.monotonic(), state["busy"]
            if busy is not None and now - busy[0] > 2 * busy[1]:
                _leave(path, mine)  # a call stuck in OpenCASCADE past its client's patience
            if busy is None and jobs.empty() and now - state["last"] > idle:
                _leave(path, mine)

    def reader(conn: Connection) -> None:
        try:
            while True:
                try:
                    seq, method, payload, limit = conn.recv()
                except (EOFError, OSError, ValueError, TypeError):
                    return
                state["last"] = time.monotonic()
                if method == "hello":
                    reply = {"ok": True, "result": {"pid": os.getpid(), "key": key}}
                    if not send_reply(conn, seq, method, reply):
                        return
                    continue
                done = threading.Event()
                jobs.put((conn, seq, method, (payload, done), float(limit)))
                done.wait()  # one call of a connection at a time, as its client sends them
        finally:
            conn.close()

    def acceptor() -> None:
        while True:
            try:
                conn = listener.accept()
            except OSError:
                continue
            if not peer_is_own(conn.fileno()):
                conn.close()  # another user's process: it gets nothing, not even a reply
                continue
            threading.Thread(target=reader, args=(conn,), daemon=True).start()

    threading.Thread(target=watchdog, name="aira-occt-warm-idle", daemon=True).start()
    threading.Thread(target=acceptor, name="aira-occt-warm-accept", daemon=True).start()
    while True:
        conn, seq, method, (payload, done), limit = jobs.get()
        state["busy"] = (time.monotonic(), limit)
        reply = answer(geometry, broken, cache, hooks, method, payload)
        send_reply(conn, seq, method, reply)  # still busy: a client that stopped reading ends it
        state["busy"], state["last"] = None, time.monotonic()
        done.set()


def _leave(path: str, mine: int) -> None:
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == mine:
            os.unlink(path)  # only its own: a newer worker's socket stays
    os._exit(0)


# -- the host side -------------------------------------------------------------------------------


class WarmClient:
    """A connection to the user's warm worker, started when there is none. The same calls,
    failures and attributes as :class:`~aira_kernel_occt.worker.WorkerClient`; ``close``
    leaves the worker running (that is the point)."""

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        fingerprint: str,
        start_timeout: float = START_TIMEOUT,
        env: Mapping[str, str] | None = None,
        idle: float | None = None,
    ) -> None:
        self.timeout = timeout
        self.fingerprint = fingerprint
        """What the worker's answers depend on (the kernel's implementations fingerprint)."""
        self.start_timeout = start_timeout
        self.env = dict(env or {})
        self.idle = idle_seconds() if idle is None else idle
        self.restarts = 0
        self._conn: Connection | None = None
        self._pid: int | None = None
        self._process: subprocess.Popen[bytes] | None = None  # when this process started it
        self._seq = itertools.count(1)
        self._lock = threading.RLock()

    @property
    def pid(self) -> int | None:
        """The warm worker's pid (None before the first call)."""
        return self._pid

    def alive(self) -> bool:
        if self._pid is None:
            return False
        try:
            os.kill(self._pid, 0)
        except OSError:
            return False
        return True

    def socket_path(self) -> Path:
        return socket_path(SOCKET_DIR, worker_key(self.fingerprint, self.env))

    def start(self) -> None:
        """Connect to the warm worker, starting one if none answers."""
        with self._lock:
            if self._conn is None:
                self._connect()

    def close(self) -> None:
        """Close this connection; the worker stays up for the next command."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            self._pid = None  # whatever it is later, this client no longer speaks for it

    def stop(self) -> None:
        """End the warm worker (it is started again by the next call)."""
        with self._lock:
            self._kill()
            self.close()

    def __enter__(self) -> WarmClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _kill(self) -> None:
        """Kill the worker this client spoke to. Its socket stays: the next command finds it
        dead and replaces it under the lock (a socket is never removed unproven)."""
        if self._pid is not None and _is_warm_worker(self._pid):
            with contextlib.suppress(OSError):
                os.kill(self._pid, signal.SIGKILL)
            _wait_gone(self._pid)
        self._pid = None
        self._reap()

    def _reap(self) -> None:
        if self._process is not None and self._process.poll() is not None:
            self._process = None

    def _dial(self, path: Path) -> Connection | None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(HELLO_TIMEOUT)  # a full backlog must not block a command for ever
        try:
            sock.connect(str(path))
        except OSError:
            sock.close()
            return None
        sock.setblocking(True)
        return Connection(sock.detach())

    def _connect(self) -> None:
        path = self.socket_path()
        conn = self._dial(path)
        if conn is None:
            # nobody answers: start one, one process at a time (the lock file sits beside)
            with open(path.with_suffix(".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                conn = self._dial(path)
                if conn is None:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()  # a socket its worker left behind
                    conn = self._launch(path)
        self._conn = conn
        hello = self._exchange("hello", {}, HELLO_TIMEOUT, "hello")
        if not hello.get("ok") or hello["result"].get("key") != path.stem:
            self.close()
            raise _Failed(
                hello
                if not hello.get("ok")
                else failure(KERNEL_UNAVAILABLE, "the warm OCCT worker is not this install's")
            )
        self._pid = int(hello["result"]["pid"])

    def _launch(self, path: Path) -> Connection:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aira_kernel_occt.warm",
                str(path),
                repr(self.idle),
                json.dumps(self.env),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not the command's: Ctrl-C there does not reach it
            close_fds=True,
        )
        self._process = process
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise _Failed(
                    failure(
                        KERNEL_UNAVAILABLE,
                        f"the warm OCCT worker exited as it started (exit code "
                        f"{process.returncode})",
                    )
                )
            conn = self._dial(path) if path.exists() else None
            if conn is not None:
                return conn
            time.sleep(_POLL)
        process.kill()
        process.wait()
        raise _Failed(
            failure(
                KERNEL_TIMEOUT,
                f"the warm OCCT worker did not start within {self.start_timeout:g} s",
            )
        )

    def _exchange(self, method: str, payload: Mapping[str, Any], timeout: float, what: str) -> Any:
        """Send one call and wait for its reply (``timeout`` seconds); a failure dict for a
        timeout (the worker is killed) or a worker that went away."""
        assert self._conn is not None
        seq = next(self._seq)
        try:
            if self._conn.poll(0):  # said goodbye while this client was idle (or stale)
                self._conn.recv()
            self._conn.send((seq, method, dict(payload), timeout))
        except (OSError, EOFError):
            self.close()
            raise _Gone from None  # nothing was sent, so nothing ran
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()  # its state cannot be trusted (a hello unanswered: pid unknown)
                self.close()
                self.restarts += 1
                return failure(
                    KERNEL_TIMEOUT,
                    f"the warm OCCT worker did not answer {what} within {timeout:g} s; "
                    "it was stopped, the next call starts a new one",
                )
            try:
                if not self._conn.poll(min(remaining, 0.2)):
                    continue
                message = self._conn.recv()
            except (EOFError, OSError):
                if method == "hello":
                    # a worker on its way out still held the socket: nothing ran
                    self.close()
                    raise _Gone from None
                return self._lost(what)
            if message[0] == seq:
                return message[1]

    def _lost(self, what: str) -> dict[str, Any]:
        self.close()
        self._pid = None
        self.restarts += 1
        return failure(
            KERNEL_WORKER_CRASHED,
            f"the warm OCCT worker died {what}; the next call starts a new one, the host "
            "lost nothing",
        )

    def call(
        self, method: str, payload: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """``{"ok": True, "result": …}`` or a failure dict, as the worker client answers;
        never raises for a worker failure (nor for a socket, lock or process the system
        refuses: ``KERNEL_UNAVAILABLE``)."""
        timeout = self.timeout if timeout is None else timeout
        with self._lock:
            for attempt in range(3):
                if attempt:
                    time.sleep(0.1 * attempt)  # let a dying worker finish dying
                try:
                    self.start()
                    return self._exchange(method, payload or {}, timeout, f"during {method!r}")
                except NotPrivate as exc:
                    return failure(
                        KERNEL_UNAVAILABLE,
                        f"no warm OCCT worker: {exc}; fix it, or set {WARM_ENV}=0",
                    )
                except _Failed as exc:
                    return exc.reply
                except _Gone:
                    continue  # it went away while this process was idle: start one again
                except OSError as exc:
                    self.close()
                    return failure(
                        KERNEL_UNAVAILABLE,
                        f"no warm OCCT worker: {exc.strerror or exc}; set {WARM_ENV}=0 to "
                        "run without it",
                    )
            return failure(KERNEL_WORKER_CRASHED, "the warm OCCT worker cannot be reached")


MARKER = b"aira_kernel_occt.warm"
"""What a warm worker's argv holds (``-m aira_kernel_occt.warm``)."""


def _is_warm_worker(pid: int) -> bool:
    """Whether ``pid`` is still a warm worker (not a process that took its number since)."""
    return is_process_of(pid, MARKER)


def workers_under(folder: Path) -> list[int]:
    """Pids of the warm workers whose socket is under ``folder`` (their argv names it): what
    a test or a benchmark with a runtime directory of its own started."""
    return processes_under(folder, MARKER)


def _wait_gone(pid: int, seconds: float = 2.0) -> None:
    """Wait until a killed worker is gone: reaped when this process started it, else until
    it is no longer there."""
    try:
        os.waitpid(pid, 0)
        return
    except ChildProcessError:
        pass  # another command started it
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.02)


class _Gone(Exception):
    """The connection was closed before a call was sent."""


class _Failed(Exception):
    def __init__(self, reply: dict[str, Any]) -> None:
        super().__init__(reply["diagnostics"][0]["message"])
        self.reply = reply


def main(argv: list[str]) -> None:
    path, idle, env = argv[0], float(argv[1]), json.loads(argv[2])
    serve(path, idle, env)


if __name__ == "__main__":
    main(sys.argv[1:])
