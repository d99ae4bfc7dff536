"""The warm CLI host: one per-user process that answers the commands an agent repeats.

A fresh ``aira`` process spends most of a second before it does anything: Python, typer,
pydantic and the contract models, the plugins, the catalog, numpy, the sentence model and
the search index. An agent that calls the CLI from a shell pays that on every call. With
``AIRA_WARM=1`` (:func:`aira_core.warm.enabled`) the first served command starts a host in
the background (and runs in its own process, as always); the next ones are answered by the
host:

- **What it serves.** :data:`SERVED` commands with ``--json`` (their output does not depend
  on a terminal), none reading stdin: the catalog's reads, ``plan check``, ``query`` and
  ``plan apply``. Everything else always runs in the calling process.
- **Never twice, never lost.** A caller sends its command and waits :data:`BUSY_WAIT` for
  the host to take it (a host busy with another command: it runs here instead); the host
  runs it only after the caller says go, so a command is never run by both. When the host
  cannot answer (none yet, changed code, gone mid-command) a read runs here; a ``plan apply``
  the host took and did not finish is ``WARM_HOST_LOST`` (whether it was committed is
  unknown, as after a killed process; a plan is bound to its base revision, so applying it
  again can never commit it twice).
- **Private to the user.** A Unix socket in the user's private directory
  (:func:`aira_core.warm.socket_dir`, ``aira-cli``), mode 0600, answering only a peer of the
  same uid; requests and replies are JSON (never pickle).
- **The right version.** The socket's name is a digest of the interpreter, ``sys.path`` and
  every ``AIRA_*`` variable (what the plugins it keeps loaded may have read). Before each
  command the host compares the code on disk with the code it loaded (the modification time
  of each ``sys.path`` folder, which an install or removal changes, and every file of the
  loaded packages outside the interpreter's prefix: editable installs) and retires when it
  changed.
- **Fresh state.** It keeps what is derived from the installed code: the plugins, the
  imported modules, the sentence model. The catalog (trust store, admission state) is built
  again for every command as in a fresh process, so a key trusted or revoked a moment ago
  counts at once. Each command runs under the caller's environment, working directory and
  umask, one at a time.
- **Gone when idle.** It exits after ``AIRA_WARM_IDLE`` seconds (default 900) without a
  command, and when one runs past :data:`REQUEST_LIMIT`.

Off by default: the host stays behind after a command with ~300 MB (numpy, the sentence
model, the catalog; its kernel, unless that is the warm OCCT worker, another ~300 MB), and a
tool that leaves processes running should be asked for.

This module's client side imports only the standard library (it runs before ``aira`` has
imported anything else). The host runs as ``python -m aira_core.cli.warm SOCKET IDLE PATH``
(``PATH``: the caller's :func:`import_path` as JSON).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aira_core.warm import NotPrivate, enabled, peer_uid, socket_path
from aira_core.warm import idle_seconds as warm_idle_seconds

IDLE_ENV = "AIRA_WARM_IDLE"
DEFAULT_IDLE = 900.0
SOCKET_DIR = "aira-cli"
SERVED = frozenset(
    {
        ("catalog", "search"),
        ("catalog", "list"),
        ("catalog", "describe"),
        ("catalog", "manifest"),
        ("plan", "check"),
        ("query",),
        ("plan", "apply"),
    }
)
"""The commands the host answers (with ``--json``): they read the catalog, the store and the
kernel's answers and (``plan apply``) commit a plan, never call a provider or read stdin."""
WRITES = frozenset({("plan", "apply")})
"""Served commands that change the store: never run twice (see :func:`served`)."""
REQUEST_LIMIT = 900.0
"""A command that runs longer ends the host (past the kernel's own 300 s call limit)."""
BUSY_WAIT = 1.0
"""How long a caller waits for the host to take its command: longer means another command
is running there, and this one runs in its own process instead."""
CONNECT_TIMEOUT = 1.0
READ_TIMEOUT = 10.0
"""How long the host waits for a connected caller's request."""
MAX_FRAME = 256 * 1024 * 1024
_LOCK_WAIT = 2.0
_WARM_UP = ["catalog", "search", "warm up", "--json"]
WARM_HOST_LOST = "WARM_HOST_LOST"
MARKER = b"aira_core.cli.warm"
"""What a host's argv holds (``-m aira_core.cli.warm``)."""


def idle_seconds() -> float:
    """``AIRA_WARM_IDLE`` (seconds, > 0), else :data:`DEFAULT_IDLE`."""
    return warm_idle_seconds(IDLE_ENV, DEFAULT_IDLE)


def servable(argv: Sequence[str]) -> bool:
    """Whether the host answers ``aira *argv``: a :data:`SERVED` command with ``--json``
    before any ``--``, no ``-`` (stdin) and no ``--help``."""
    if not ((argv[:1] and (argv[0],) in SERVED) or tuple(argv[:2]) in SERVED):
        return False
    options = list(argv[: argv.index("--")] if "--" in argv else argv)
    return "--json" in options and "-" not in argv and "--help" not in options


def import_path() -> list[str]:
    """``sys.path`` without the working directory that ``python -m``/``-c`` put first: the
    host imports from the installed places only, so that callers in any directory share it."""
    first = sys.path[0] if sys.path else None
    if first is not None and (first == "" or os.path.abspath(first) == os.getcwd()):
        return sys.path[1:]
    return list(sys.path)


def host_key() -> str:
    """What a host's kept state depends on, as a short digest (its socket's name): the user,
    the interpreter, :func:`import_path` and every ``AIRA_*`` variable."""
    said = {
        "uid": os.getuid(),
        "python": [os.path.realpath(sys.executable), sys.prefix, sys.version],
        "path": import_path(),
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("AIRA_")},
    }
    return hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()[:24]


# -- the caller's side ---------------------------------------------------------------------------


def served(argv: Sequence[str]) -> int | None:
    """The exit status of ``aira *argv`` as the warm host ran it, its output written to this
    process's stdout and stderr; None when the command is to run here (not servable, warm
    host off, or no host could answer: one is then started for the next call)."""
    if not enabled() or not servable(argv):
        return None
    try:
        path = socket_path(SOCKET_DIR, host_key())
    except (NotPrivate, OSError):
        return None  # no private place: the command runs here, as without AIRA_WARM
    sock = _dial(path)
    if sock is None:
        _launch(path)
        return None
    sent = False
    try:
        _send(sock, _request(argv))
        taken = _receive(sock, timeout=BUSY_WAIT)
        if not isinstance(taken, dict) or not taken.get("accepted"):
            if isinstance(taken, dict) and taken.get("stale"):
                _launch(path, wait=True)  # the old host retires; a new one loads the new code
            return None
        # Only now does the host run it: a caller that gave up before this never has its
        # command run by both.
        _send(sock, {"go": True})
        sent = True
        reply = _receive(sock, timeout=REQUEST_LIMIT + 10)
    except (OSError, ValueError):
        reply = None  # busy past the wait, or gone
    finally:
        sock.close()
    if isinstance(reply, dict) and reply.get("fallback"):
        return None  # the host ran nothing of it: it runs here
    if not isinstance(reply, dict) or not isinstance(reply.get("status"), int):
        if sent and _writes(argv):
            return _lost(argv)
        return None  # only read: it runs here
    try:
        for stream, name in ((sys.stdout, "stdout"), (sys.stderr, "stderr")):
            stream.flush()
            stream.buffer.write(base64.b64decode(reply.get(name, "")))
            stream.flush()
    except (OSError, ValueError, AttributeError):
        pass  # a closed pipe (`aira … | head`), as in a command run here
    return int(reply["status"])


def _writes(argv: Sequence[str]) -> bool:
    return tuple(argv[:2]) in WRITES


def _lost(argv: Sequence[str]) -> int:
    """A write the host took and did not finish: whether it took effect is unknown, so it is
    not run again here (a process killed mid-command leaves the same question)."""
    from aira_core.cli._output import _error_json
    from aira_core.diagnostics import Diagnostic

    lost = Diagnostic(
        code=WARM_HOST_LOST,
        message="the warm CLI host ended while it ran this command; it may or may not have "
        "taken effect: look (aira model log) before running it again",
    )
    print(f"error: {lost.code}: {lost.message}", file=sys.stderr)
    if "--json" in argv:
        print(_error_json([lost]))
    return 1


def _request(argv: Sequence[str]) -> dict[str, Any]:
    mask = os.umask(0o022)
    os.umask(mask)
    return {
        "key": host_key(),
        "argv": _encoded(argv),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": mask,
        "encoding": [sys.stdout.encoding, sys.stdout.errors],
        "errEncoding": [sys.stderr.encoding, sys.stderr.errors],
    }


def _encoded(argv: Sequence[str]) -> list[str]:
    """argv as the process got it (undecodable bytes are lone surrogates), as base64."""
    return [base64.b64encode(os.fsencode(a)).decode() for a in argv]


def _dial(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _launch(path: Path, *, wait: bool = False) -> None:
    """Start a host for ``path`` in the background, unless one holds the lock beside the
    socket (a host holds it for life, from before it loads); ``wait``: start one anyway, to
    take the lock when a retiring host lets it go."""
    try:
        if not wait:
            with open(path.with_suffix(".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(lock, fcntl.LOCK_UN)
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aira_core.cli.warm",
                str(path),
                repr(idle_seconds()),
                json.dumps(import_path()),
            ],
            cwd=path.parent,  # `-m` puts the working directory first on sys.path: a private one
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not the command's: Ctrl-C there does not reach it
            close_fds=True,
        )
    except OSError:
        pass  # held (one is starting), or the system refused: the next call tries again


def hosts_under(folder: Path) -> list[int]:
    """Pids of the warm hosts whose socket is under ``folder``."""
    from aira_core.warm import processes_under

    return processes_under(folder, MARKER)


def _send(sock: socket.socket, message: Mapping[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def _receive(sock: socket.socket, *, timeout: float) -> Any:
    """One frame (4-byte length, then JSON); ``ValueError`` for a malformed one, ``OSError``
    (``TimeoutError`` included) when the other side goes away or stays silent."""
    sock.settimeout(timeout)
    (size,) = struct.unpack(">I", _exactly(sock, 4))
    if size > MAX_FRAME:
        raise ValueError("frame too large")
    return json.loads(_exactly(sock, size))


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 20))
        if not chunk:
            raise ConnectionResetError("closed mid-frame")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# -- the host's side -----------------------------------------------------------------------------


def code_fingerprint(seen: dict[str, str]) -> bool:
    """Whether the code on disk is still what this process loaded. ``seen`` maps each place
    to its digest: every ``sys.path`` entry (its modification time) and the top folder of
    every loaded package outside the interpreter's prefixes (its files' sizes and times).
    Places first met are added (code imported since was read as it is now)."""
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    places: dict[str, str] = {}
    for entry in sys.path:
        try:
            places[f"path:{entry}"] = str(os.stat(entry or ".").st_mtime_ns)
        except OSError:
            places[f"path:{entry}"] = "missing"
    tops: set[str] = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if "." in name or not isinstance(file, str) or file.startswith(prefixes):
            continue  # a submodule is in its top package's folder; installed code: see above
        tops.add(str(Path(file).parent if Path(file).name == "__init__.py" else Path(file)))
    for top in sorted(tops):
        places[f"code:{top}"] = _tree_digest(Path(top))
    same = all(seen.get(k, v) == v for k, v in places.items())
    for k, v in places.items():
        seen.setdefault(k, v)
    return same


def _tree_digest(top: Path) -> str:
    h = hashlib.sha256()
    if top.is_file():
        st = top.stat()
        h.update(f"{top}:{st.st_size}:{st.st_mtime_ns}".encode())
        return h.hexdigest()
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def serve(path: str, idle: float) -> None:
    """Load, listen on ``path`` and answer this uid's served commands, one at a time, until
    none came for ``idle`` seconds (or the code on disk changed)."""
    lock = open(Path(path).with_suffix(".lock"), "a")  # noqa: SIM115 (held for life: one host)
    deadline = time.monotonic() + _LOCK_WAIT
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            if time.monotonic() > deadline:
                return  # another host has it (starting or serving)
            time.sleep(0.05)
    from aira_core.cli import commands

    warm_up = _command({"argv": _encoded(_WARM_UP), "env": dict(os.environ), "cwd": os.getcwd()})
    assert warm_up is not None
    _run(commands, warm_up)
    seen: dict[str, str] = {}
    code_fingerprint(seen)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket its host left behind (that host no longer holds the lock)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    mine = os.stat(path).st_ino
    server.listen(64)
    server.settimeout(idle)
    busy: list[float] = []

    def watchdog() -> None:
        while True:
            time.sleep(1.0)
            if busy and time.monotonic() - busy[0] > REQUEST_LIMIT:
                _leave(path, mine)

    threading.Thread(target=watchdog, name="aira-warm-watchdog", daemon=True).start()
    while True:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            _leave(path, mine)
        except OSError:
            continue
        with conn:
            if peer_uid(conn.fileno()) != os.getuid():
                continue  # another user's process: it gets nothing, not even a reply
            try:
                request = _receive(conn, timeout=READ_TIMEOUT)
            except (OSError, ValueError):
                continue
            if not isinstance(request, dict) or request.get("key") != Path(path).stem:
                continue
            if not code_fingerprint(seen):
                with contextlib.suppress(OSError):
                    _send(conn, {"stale": True})
                _leave(path, mine)
            command = _command(request)
            try:
                _send(conn, {"accepted": True} if command else {"fallback": True})
                go = _receive(conn, timeout=READ_TIMEOUT) if command else None
            except (OSError, ValueError):
                continue  # the caller gave up (or went away) before it said go: nothing ran
            if command is None or go != {"go": True}:
                continue
            busy.append(time.monotonic())
            reply = _run(commands, command)
            busy.clear()
            with contextlib.suppress(OSError):
                conn.settimeout(READ_TIMEOUT)
                _send(conn, reply)


def _command(request: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a request asks to run, checked: a servable argv (base64), the caller's
    environment (str to str), working directory and umask; None for anything else."""
    said_env, cwd, umask = request.get("env"), request.get("cwd"), request.get("umask", 0o022)
    if not (
        isinstance(request.get("argv"), list)
        and isinstance(said_env, dict)
        and all(isinstance(v, str) for v in [*said_env, *said_env.values()])
        and isinstance(cwd, str)
        and isinstance(umask, int)
        and 0 <= umask <= 0o777
    ):
        return None
    try:
        argv = [os.fsdecode(base64.b64decode(a, validate=True)) for a in request["argv"]]
    except (TypeError, ValueError):
        return None
    if not servable(argv):
        return None  # only what a caller would have offered
    return {
        "argv": argv,
        "env": said_env,
        "cwd": cwd,
        "umask": umask,
        "encoding": request.get("encoding"),
        "errEncoding": request.get("errEncoding"),
    }


def _run(commands: Any, command: Mapping[str, Any]) -> dict[str, Any]:
    """One checked command (:func:`_command`) under the caller's environment, directory and
    umask, its output kept."""
    import io
    import tempfile

    try:
        os.chdir(command["cwd"])
    except OSError:
        return {"fallback": True}  # the caller's directory is not reachable from here
    os.environ.clear()
    os.environ.update(command["env"])
    tempfile.tempdir = None  # TMPDIR is the caller's
    os.umask(command["umask"])
    argv = command["argv"]
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdout, sys.stderr
    streams = _text(out, command.get("encoding")), _text(err, command.get("errEncoding"))
    sys.stdout, sys.stderr = streams
    try:
        status = commands.execute(argv)
    except BaseException:  # a bug that escaped the command table
        return {"lost": True}  # a read runs again in the caller's process, a write does not
    finally:
        sys.stdout, sys.stderr = saved
        for stream in streams:
            with contextlib.suppress(Exception):
                stream.flush()
                stream.detach()  # its buffer stays open to be read
        if "aira_core.databases" in sys.modules:  # as a process's end would
            from aira_core.databases import close_all

            close_all()
    return {
        "status": int(status),
        "stdout": base64.b64encode(out.getvalue()).decode(),
        "stderr": base64.b64encode(err.getvalue()).decode(),
    }


def _text(buffer: Any, said: Any) -> Any:
    """A text stream over ``buffer`` with the caller's encoding and error handler (UTF-8,
    strict, when it said none that this interpreter knows)."""
    import codecs
    import io

    encoding, errors = "utf-8", "strict"
    if isinstance(said, list) and len(said) == 2 and all(isinstance(x, str) for x in said):
        with contextlib.suppress(LookupError):
            codecs.lookup(said[0])
            codecs.lookup_error(said[1])
            encoding, errors = said
    return io.TextIOWrapper(buffer, encoding=encoding, errors=errors, write_through=True)


def _leave(path: str, mine: int) -> None:
    with contextlib.suppress(OSError):
        if os.stat(path).st_ino == mine:
            os.unlink(path)  # only its own: a newer host's socket stays
    from aira_core.cli._exit import exit_now

    exit_now(0)  # as a command's process ends: a kernel worker it started goes with it


def main(argv: list[str]) -> None:
    sys.path[:] = json.loads(argv[2])  # the caller's (its key says so), not this directory
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # a plugin's print goes nowhere
    os.close(devnull)
    serve(argv[0], float(argv[1]))
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
