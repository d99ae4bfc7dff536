"""The warm worker process the OCCT kernel runs its geometry in.

OpenCASCADE can hang or take the process down with it; the host must not. :class:`WorkerClient`
keeps one ``spawn``-ed worker process (which imports CadQuery once and keeps the node cache
between calls) and talks to it over a pipe. Each call has a timeout: a call that takes longer
kills the worker (``KERNEL_TIMEOUT``), a worker that dies mid-call (``KERNEL_WORKER_CRASHED``)
is replaced; either way the caller gets a failure dict, never an exception, and the next call
goes to a fresh worker.

This module is imported by the host: it must not import CadQuery (only the worker's
``_serve`` imports :mod:`aira_kernel_occt.geometry`).
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import threading
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

KERNEL_TIMEOUT = "KERNEL_TIMEOUT"
KERNEL_WORKER_CRASHED = "KERNEL_WORKER_CRASHED"
KERNEL_UNAVAILABLE = "KERNEL_UNAVAILABLE"
KERNEL_INTERNAL_ERROR = "KERNEL_INTERNAL_ERROR"
KERNEL_METHOD_UNKNOWN = "KERNEL_METHOD_UNKNOWN"

TEST_HOOKS_ENV = "AIRA_OCCT_TEST_HOOKS"
"""Set to ``1`` in the worker's environment to enable the test-only ``sleep`` method."""
DEFAULT_TIMEOUT = 60.0
START_TIMEOUT = 180.0
"""How long a new worker may take to import CadQuery (not counted against a call)."""
_POLL = 0.2


def failure(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "diagnostics": [{"code": code, "message": message}]}


# -- the worker side ----------------------------------------------------------------------------


def _dispatch(
    geometry: Any, cache: dict[str, Any], hooks: bool, method: str, payload: Mapping[str, Any]
) -> dict[str, Any]:
    if method == "ping":
        return {"pid": os.getpid(), "cached": len(cache)}
    if method == "clearCache":
        cache.clear()
        return {"cached": 0}
    if method == "sleep" and hooks:
        time.sleep(float(payload.get("seconds", 0)))
        return {"slept": payload.get("seconds", 0), "pid": os.getpid()}
    if method == "evaluate":
        return geometry.evaluate(payload["document"], payload.get("changed"), cache)
    if method == "query":
        return geometry.query(payload["document"], payload["ref"], payload.get("args", {}), cache)
    if method == "validate":
        return geometry.validate(payload["document"], payload["assertion"], cache)
    if method == "export":
        return geometry.export(
            payload["document"],
            payload["format"],
            payload.get("body"),
            cache,
            tolerance=payload.get("tolerance"),
            angular_tolerance=_radians(payload.get("angularTolerance")),
        )
    raise LookupError(method)


def _radians(degrees: Any) -> Any:
    """The host's angle (degrees, as every AMIR angle) in OpenCASCADE's radians; anything
    but a number is passed on for the geometry to refuse."""
    number = isinstance(degrees, int | float) and not isinstance(degrees, bool)
    return math.radians(degrees) if number else degrees


def _quiet_stdout() -> None:
    # OpenCASCADE prints parse errors and warnings on fd 1, which is the host's stdout (its
    # --json output): the worker's own output goes nowhere; replies go over the pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def load_geometry() -> tuple[Any, str | None]:
    """The geometry module (imports CadQuery), or why it cannot be loaded (then every call
    says so)."""
    try:
        from aira_kernel_occt import geometry
    except Exception as exc:  # e.g. CadQuery missing
        return None, f"CadQuery/OpenCASCADE cannot be loaded: {type(exc).__name__}: {exc}"
    return geometry, None


CACHE_ENTRIES = 512
"""A worker clears its node cache past this many shapes: a worker may live for many commands
(the warm worker, or the per-process one of a warm CLI host)."""


def answer(
    geometry: Any,
    broken: str | None,
    cache: dict[str, Any],
    hooks: bool,
    method: str,
    payload: Mapping[str, Any],
) -> dict[str, Any]:
    """The reply to one call: a result or a failure dict, never an exception."""
    if broken is not None:
        return failure(KERNEL_UNAVAILABLE, broken)
    if len(cache) > CACHE_ENTRIES:
        cache.clear()
    try:
        return {"ok": True, "result": _dispatch(geometry, cache, hooks, method, payload)}
    except LookupError:
        return failure(KERNEL_METHOD_UNKNOWN, f"the OCCT worker has no method {method!r}")
    except Exception as exc:  # a bug, not a geometry failure: still never escapes
        return failure(KERNEL_INTERNAL_ERROR, f"{method}: {type(exc).__name__}: {exc}")


def send_reply(conn: Connection, seq: Any, method: str, reply: dict[str, Any]) -> bool:
    """Send ``(seq, reply)``; False when the other end is gone."""
    try:
        conn.send((seq, reply))
    except (OSError, EOFError):
        return False
    except Exception as exc:  # the reply did not pickle
        conn.send((seq, failure(KERNEL_INTERNAL_ERROR, f"{method}: reply not sendable: {exc}")))
    return True


def _serve(conn: Connection, env: Mapping[str, str]) -> None:
    """The worker's main loop: import the geometry once, then answer ``(seq, method,
    payload)`` messages with ``(seq, reply)`` until the pipe closes."""
    os.environ.update(env)
    _quiet_stdout()
    hooks = os.environ.get(TEST_HOOKS_ENV) == "1"
    geometry, broken = load_geometry()
    cache: dict[str, Any] = {}
    try:
        conn.send(("ready", os.getpid()))
    except (OSError, EOFError):
        return
    while True:
        try:
            seq, method, payload = conn.recv()
        except (EOFError, OSError):
            return
        reply = answer(geometry, broken, cache, hooks, method, payload)
        if not send_reply(conn, seq, method, reply):
            return


# -- the host side ------------------------------------------------------------------------------


class WorkerClient:
    """One warm worker process, started on the first call and replaced after a timeout or a
    crash. Thread-safe: calls are serialised."""

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        start_timeout: float = START_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.env = dict(env or {})
        self.restarts = 0
        self._process: Any = None
        self._conn: Connection | None = None
        self._ready = False
        self._seq = itertools.count(1)
        self._lock = threading.RLock()

    @property
    def pid(self) -> int | None:
        """The worker's pid (None before the first call or after ``close``)."""
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    def start(self) -> None:
        """Start the worker if none is running (it warms up in the background)."""
        with self._lock:
            if self._process is not None and self._process.is_alive():
                return
            self._discard()
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe(duplex=True)
            process = ctx.Process(
                target=_serve, args=(child, self.env), name="aira-occt-worker", daemon=True
            )
            process.start()
            child.close()  # so that the worker's death is EOF on our end
            self._process, self._conn, self._ready = process, parent, False

    def close(self) -> None:
        with self._lock:
            self._discard()

    def __enter__(self) -> WorkerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _discard(self) -> None:
        conn, process = self._conn, self._process
        self._conn = self._process = None
        self._ready = False
        if conn is not None:
            conn.close()
        if process is not None:
            if process.is_alive():
                process.kill()
            process.join(5)
            if not process.is_alive():
                process.close()

    def _replace(self) -> None:
        """Kill the current worker and start a fresh one warming up right away."""
        self._discard()
        self.restarts += 1
        self.start()

    def _died(self, what: str) -> dict[str, Any]:
        code = self._process.exitcode if self._process is not None else None
        how = (
            f"killed by signal {-code}"
            if isinstance(code, int) and code < 0
            else f"exit code {code}"
            if code is not None
            else "pipe closed"
        )
        self._replace()
        return failure(
            KERNEL_WORKER_CRASHED,
            f"the OCCT worker died {what} ({how}); it was replaced, the host lost nothing",
        )

    def _receive(self, seq: int | None, timeout: float, what: str) -> tuple[Any, dict | None]:
        """The next message answering ``seq`` (``None``: the ready message) or a failure."""
        assert self._conn is not None and self._process is not None
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._replace()
                return None, failure(
                    KERNEL_TIMEOUT,
                    f"the OCCT worker did not answer {what} within {timeout:g} s; "
                    "it was killed and replaced",
                )
            try:
                if self._conn.poll(min(remaining, _POLL)):
                    message = self._conn.recv()
                elif self._process.is_alive():
                    continue
                elif self._conn.poll(0):
                    message = self._conn.recv()
                else:
                    return None, self._died(what)
            except (EOFError, OSError):
                return None, self._died(what)
            if seq is None and message[0] == "ready":
                return message, None
            if seq is not None and message[0] == seq:
                return message[1], None
            # a stale message (e.g. the answer to an abandoned call): skip it

    def call(
        self, method: str, payload: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """``{"ok": True, "result": …}`` or ``{"ok": False, "diagnostics": [{code, message}]}``
        (``KERNEL_TIMEOUT``, ``KERNEL_WORKER_CRASHED`` …); never raises for a worker failure."""
        timeout = self.timeout if timeout is None else timeout
        with self._lock:
            for attempt in range(2):
                self.start()
                if not self._ready:
                    _, failed = self._receive(None, self.start_timeout, "while starting")
                    if failed is not None:
                        return failed
                    self._ready = True
                seq = next(self._seq)
                try:
                    self._conn.send((seq, method, dict(payload or {})))  # type: ignore[union-attr]
                except (OSError, EOFError):
                    # died while idle: nothing ran yet, so one retry on a fresh worker is safe
                    self._replace()
                    if attempt == 0:
                        continue
                    return failure(KERNEL_WORKER_CRASHED, "the OCCT worker cannot be reached")
                reply, failed = self._receive(seq, timeout, f"during {method!r}")
                return failed if failed is not None else reply
        raise AssertionError("unreachable")
