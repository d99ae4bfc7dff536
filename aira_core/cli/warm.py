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
  same user in the same world (:func:`aira_core.warm.peer_is_own`); requests and replies are
  JSON (never pickle).
- **The right version.** The socket's name is a digest of the protocol, the interpreter,
  ``sys.path`` and the variables of :data:`aira_core.warm.KEPT_ENV` (what the plugins and
  libraries it keeps loaded may have read). Before each command the host compares the code
  on disk with the code it loaded (:func:`code_fingerprint`) and retires when it changed.
- **Fresh state.** It keeps what is derived from the installed code: the plugins, the
  imported modules, the sentence model. The catalog (trust store, admission state) is built
  again for every command as in a fresh process, so a key trusted or revoked a moment ago
  counts at once. Each command runs under the caller's environment, working directory and
  umask, one at a time; its stdout and stderr come back in the order they were written, and
  the caller's Ctrl-C interrupts it there.
- **Gone when idle.** It exits after ``AIRA_WARM_IDLE`` seconds (default 900) without a
  command, and when its warm-up or a command runs past :data:`REQUEST_LIMIT`.

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
import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aira_core.warm import NotPrivate, enabled, kept_env, peer_is_own, socket_path, world
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
INTERRUPT_WAIT = 10.0
"""How long a caller interrupted (Ctrl-C) waits for the host to stop its command and say how
it ended; a second Ctrl-C stops waiting."""
MAX_FRAME = 256 * 1024 * 1024
PROTOCOL = 2
"""The request and reply shapes; part of the key (a host speaks to callers of its own)."""
STDOUT, STDERR = 1, 2
_CLOCK_SLACK_NS = 50_000_000
"""File times come from a coarse clock, a few ms behind ``time.time_ns()``."""
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
    host imports from the installed places only, so that callers in any directory share it.
    Unless that directory holds Aira's code or installed metadata (a checkout, an egg-info
    that ``pip install -e`` left): then this process imports from there, and so must its host
    (one of its own, for callers in that directory)."""
    first = sys.path[0] if sys.path else None
    if first is not None and (first == "" or os.path.abspath(first) == os.getcwd()):
        if _holds_code(first or "."):
            return [os.getcwd(), *sys.path[1:]]
        return sys.path[1:]
    return list(sys.path)


def _holds_code(folder: str) -> bool:
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(
        n.endswith(_INSTALLED)
        or (n.startswith("aira_") and (n.endswith(".py") or os.path.isdir(os.path.join(folder, n))))
        for n in names
    )


def host_key() -> str:
    """What a host's kept state depends on, as a short digest (its socket's name): the user,
    the interpreter, :func:`import_path` and the variables of
    :data:`aira_core.warm.KEPT_ENV` (``AIRA_*`` and what native libraries read as they
    load)."""
    said = {
        "protocol": PROTOCOL,
        "uid": os.getuid(),
        "python": [os.path.realpath(sys.executable), sys.prefix, sys.version],
        "path": import_path(),
        "flags": subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
        "env": kept_env(),
        "world": world(),
    }
    return hashlib.sha256(json.dumps(said, sort_keys=True).encode()).hexdigest()[:24]


# -- the caller's side ---------------------------------------------------------------------------


def served(argv: Sequence[str]) -> int | None:
    """The exit status of ``aira *argv`` as the warm host ran it, its output written to this
    process's stdout and stderr in the order it was written; None when the command is to run
    here (not servable, warm host off, or no host could answer: one is then started for the
    next call)."""
    if not enabled() or not servable(argv) or sys.stdout is None or sys.stderr is None:
        return None
    if _names_special_files(argv):
        return None
    try:
        path = socket_path(SOCKET_DIR, host_key())
    except (NotPrivate, OSError):
        return None  # no private place: the command runs here, as without AIRA_WARM
    sent = False
    try:
        sock = _dial(path)
        if sock is None:
            _launch(path)
            return None
        with sock:
            try:
                _send(sock, _request(argv))
                taken = _receive(sock, timeout=BUSY_WAIT)
                if not isinstance(taken, dict) or not taken.get("accepted"):
                    if isinstance(taken, dict) and taken.get("stale"):
                        _launch(path, wait=True)  # the old host retires; a new one loads anew
                    return None
                # Only now does the host run it: a caller that gave up before this never has
                # its command run by both.
                sent = True  # from here on the host may be running it
                _send(sock, {"go": True})
                reply = _outcome(sock)
            except (OSError, ValueError):
                reply = None  # busy past the wait, or gone
    except KeyboardInterrupt:
        return _say(
            argv, "ABORTED", _INTERRUPTED_WRITE if sent and _writes(argv) else "interrupted", 130
        )
    if isinstance(reply, dict) and reply.get("fallback"):
        return None  # the host ran nothing of it: it runs here
    if reply == {"interrupted": True}:  # the host did not say how it ended
        return _say(argv, "ABORTED", _INTERRUPTED_WRITE if _writes(argv) else "interrupted", 130)
    if not isinstance(reply, dict) or not isinstance(reply.get("status"), int):
        if sent and _writes(argv):
            return _lost(argv)
        return None  # only read: it runs here
    try:
        _replay(reply.get("output"))
    except (OSError, ValueError, AttributeError, TypeError):
        pass  # a closed pipe (`aira … | head`): as in a command run here
    except KeyboardInterrupt:  # it ran; Ctrl-C cut its output short
        return _say(argv, "ABORTED", "interrupted", 130)
    return int(reply["status"])


def _names_special_files(argv: Sequence[str]) -> bool:
    """Whether an argument (or an option's ``=value``) names a device or a ``/proc`` file:
    ``/dev/stdin``, ``/dev/fd/3`` would be the host's own, not this process's."""
    for arg in argv:
        for word in (arg, arg.partition("=")[2]):
            # as written (/dev/stdin resolves to what this process's fd 0 is) and resolved
            named = (os.path.abspath(word), os.path.realpath(word)) if word else ()
            if any(n.startswith(("/dev/", "/proc/")) for n in named):
                return True
    return False


_INTERRUPTED_WRITE = (
    "interrupted while the warm CLI host ran it; it may or may not have taken effect: look "
    "(aira model log) before running it again"
)


def _outcome(sock: socket.socket) -> Any:
    """The host's reply to a command it runs. Ctrl-C here asks the host to interrupt it (as
    Ctrl-C would in the command's own process) and waits :data:`INTERRUPT_WAIT` for how it
    ended; ``{"interrupted": True}`` when the host did not say (a second Ctrl-C stops the
    wait). While it waits, Ctrl-C only sets a flag: a read is never cut in half."""
    presses: list[float] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: presses.append(time.monotonic()))
    except ValueError:  # not the main thread: Ctrl-C is not ours to handle
        previous = None
    frames, asked = _Frames(sock), False
    until = time.monotonic() + REQUEST_LIMIT + 10
    try:
        while True:
            if presses and not asked:
                asked = True
                until = min(until, time.monotonic() + INTERRUPT_WAIT)
                with contextlib.suppress(OSError):
                    _send(sock, {"interrupt": True})
            if len(presses) > 1 or time.monotonic() > until:
                if asked:
                    return {"interrupted": True}
                raise TimeoutError("no reply")
            try:
                return frames.next(timeout=0.1)
            except TimeoutError:
                continue  # what was read stays read
            except (OSError, ValueError):
                if asked:
                    return {"interrupted": True}
                raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _replay(output: Any) -> None:
    """Write the command's output as it was written: stdout and stderr chunks, in order."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    for which, data in output or []:
        stream = sys.stdout if which == STDOUT else sys.stderr
        stream.buffer.write(base64.b64decode(data))
        stream.buffer.flush()


def _writes(argv: Sequence[str]) -> bool:
    return tuple(argv[:2]) in WRITES


def _lost(argv: Sequence[str]) -> int:
    """A write the host took and did not finish: whether it took effect is unknown, so it is
    not run again here (a process killed mid-command leaves the same question)."""
    return _say(
        argv,
        WARM_HOST_LOST,
        "the warm CLI host ended while it ran this command; it may or may not have "
        "taken effect: look (aira model log) before running it again",
        1,
    )


def _say(argv: Sequence[str], code: str, message: str, status: int) -> int:
    """Report ``code`` as the command line does (stderr, and stdout with ``--json``)."""
    from aira_core.cli._output import _error_json
    from aira_core.diagnostics import Diagnostic

    said = Diagnostic(code=code, message=message)
    with contextlib.suppress(OSError, ValueError):
        print(f"error: {said.code}: {said.message}", file=sys.stderr)
        if "--json" in argv:
            print(_error_json([said]))
    return status


def _request(argv: Sequence[str]) -> dict[str, Any]:
    mask = os.umask(0o022)
    os.umask(mask)
    here = os.stat(".")
    return {
        "key": host_key(),
        "argv": _encoded(argv),
        "cwd": os.getcwd(),
        "cwdId": [here.st_dev, here.st_ino],  # the host checks it stands where the caller does
        "env": dict(os.environ),
        "umask": mask,
        "encoding": [getattr(sys.stdout, "encoding", None), getattr(sys.stdout, "errors", None)],
        "errEncoding": [
            getattr(sys.stderr, "encoding", None),
            getattr(sys.stderr, "errors", None),
        ],
    }


def _encoded(argv: Sequence[str]) -> list[str]:
    """argv as the process got it (undecodable bytes are lone surrogates), as base64."""
    return [base64.b64encode(os.fsencode(a)).decode() for a in argv]


def _dial(path: Path) -> socket.socket | None:
    """A connection to the host at ``path``, if one listens there and is this user's in this
    world (:func:`aira_core.warm.peer_is_own`: the host, too, must be who it should be)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(str(path))
        if peer_is_own(sock.fileno()):
            return sock
    except OSError:
        pass
    sock.close()
    return None


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
                *subprocess._args_from_interpreter_flags(),  # type: ignore[attr-defined]
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
    return _Frames(sock).next(timeout=timeout)


class _Frames:
    """The frames coming over ``sock``. What was read stays read when a wait is cut short
    (Ctrl-C), so the next :meth:`next` goes on with the same frame."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.read = sock, bytearray()

    def next(self, *, timeout: float) -> Any:
        self.sock.settimeout(timeout)
        self._fill(4)
        (size,) = struct.unpack(">I", self.read[:4])
        if size > MAX_FRAME:
            raise ValueError("frame too large")
        self._fill(4 + size)
        data = bytes(self.read[4 : 4 + size])
        del self.read[: 4 + size]
        return json.loads(data)

    def _fill(self, size: int) -> None:
        while len(self.read) < size:
            chunk = self.sock.recv(min(size - len(self.read), 1 << 20))
            if not chunk:
                raise ConnectionResetError("closed mid-frame")
            self.read += chunk


# -- the host's side -----------------------------------------------------------------------------


def code_fingerprint(seen: dict[str, str], since_ns: int) -> bool:
    """Whether the code on disk is still what this process loaded (it started at
    ``since_ns``, :func:`time.time_ns`). ``seen`` maps each place to its digest:

    - every ``sys.path`` folder: its distributions and ``.pth`` files (what an install,
      upgrade or removal changes; not the folder's other files, which a project folder on
      ``PYTHONPATH`` changes all day);
    - the folder of every loaded top package, namespace packages' too, outside the
      interpreter's prefixes (editable installs): each file's size, times and inode.

    A place first met is added; one that changed since this process started (while it was
    loading, or before a later import read it) already means different code."""
    prefixes = [p.rstrip(os.sep) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    now = time.time_ns()
    places = {f"path:{entry}": _installed(entry) for entry in sys.path}
    for top in sorted(_loaded_tops(prefixes)):
        places[f"code:{top}"] = _tree_digest(Path(top))
    same = True
    for place, (digest, newest) in places.items():
        if place in seen:
            same = same and seen[place] == digest
        else:
            seen[place] = digest
            if since_ns - _CLOCK_SLACK_NS <= newest <= now:
                same = False  # changed while this process was loading it
    return same


def _under(file: str, prefixes: Sequence[str]) -> bool:
    return any(file == p or file.startswith(p + os.sep) for p in prefixes)


def _loaded_tops(prefixes: Sequence[str]) -> set[str]:
    tops: set[str] = set()
    for name, module in list(sys.modules.items()):
        if "." in name:
            continue  # a submodule is in its top package's folder
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            found = [str(Path(file).parent) if Path(file).name == "__init__.py" else file]
        else:  # a namespace package: its folders
            found = [str(p) for p in getattr(module, "__path__", None) or [] if isinstance(p, str)]
        tops.update(f for f in found if not _under(os.path.abspath(f), prefixes))
    return tops


_INSTALLED = (".dist-info", ".egg-info", ".egg-link", ".pth", ".egg")


def _installed(entry: str) -> tuple[str, int]:
    """What is installed in the ``sys.path`` folder ``entry`` (or the zip file it names),
    as a digest, and the newest time among it."""
    h, newest = hashlib.sha256(), 0
    try:
        if not os.path.isdir(entry or "."):
            st = os.stat(entry)
            return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}", max(
                st.st_mtime_ns, st.st_ctime_ns
            )
        with os.scandir(entry or ".") as found:
            names = sorted(e.name for e in found if e.name.endswith(_INSTALLED))
        for name in names:
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(entry or ".", name))
                h.update(f"{name}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}\0".encode())
                newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        return "missing", 0
    return h.hexdigest(), newest


def _tree_digest(top: Path) -> tuple[str, int]:
    """Every file under ``top`` (or ``top`` itself) by size, times and inode, as a digest,
    and the newest time among them."""
    h, newest = hashlib.sha256(), 0

    def add(path: str) -> None:
        nonlocal newest
        with contextlib.suppress(OSError):  # removed while we looked: its absence counts
            st = os.stat(path)
            h.update(
                f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}\0".encode()
            )
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)

    if not top.is_dir():
        add(str(top))
        return h.hexdigest(), newest
    for folder, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            add(os.path.join(folder, name))
    return h.hexdigest(), newest


class _State:
    """What the host's main thread and its SIGINT handler share (plain attributes: setting
    one is a single step, which a signal handler cannot cut in half)."""

    running = False  # a command runs: the caller's forwarded Ctrl-C may interrupt it
    interrupted = False  # the caller of the current command asked to interrupt it


def serve(path: str, idle: float, started_ns: int) -> None:
    """Load, listen on ``path`` and answer this user's served commands, one at a time, until
    none came for ``idle`` seconds (or the code on disk changed since ``started_ns``)."""
    import warnings

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
    state = _State()

    def interrupt(signum: int, frame: Any) -> None:
        if state.running:
            state.running = False  # once per command
            raise KeyboardInterrupt  # as Ctrl-C in the command's own process

    signal.signal(signal.SIGINT, interrupt)
    fresh_warnings = list(warnings.filters)  # as a new process starts: each warning shown again
    from aira_core.cli import commands

    umask = os.umask(0o077)
    os.umask(umask)
    here = os.stat(".")
    warm_up = _command(
        {
            "argv": _encoded(_WARM_UP),
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "cwdId": [here.st_dev, here.st_ino],
            "umask": umask,  # the caller's, which this process inherited
        }
    )
    assert warm_up is not None
    with _deadline(REQUEST_LIMIT, path, None):  # a warm-up that hangs must not keep the lock
        _run(commands, warm_up, state, fresh_warnings)
    seen: dict[str, str] = {}
    if not code_fingerprint(seen, started_ns):
        return  # code changed while it loaded: the next caller starts a host that loads anew
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)  # a socket its host left behind (that host no longer holds the lock)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    mine = os.stat(path).st_ino
    server.listen(64)
    last = time.monotonic()  # the last command: only commands keep the host up
    refused = 0
    while True:
        server.settimeout(max(0.05, last + idle - time.monotonic()))
        try:
            conn, _ = server.accept()
            refused = 0
        except TimeoutError:
            if time.monotonic() >= last + idle:
                _leave(path, mine)
            continue
        except OSError:  # e.g. out of file descriptors: not a loop that burns a core
            refused += 1
            if refused > 100:
                _leave(path, mine)
            time.sleep(0.1)
            continue
        with conn:
            if not peer_is_own(conn.fileno()):
                continue  # another user's (or a sandbox's) process: it gets nothing
            try:
                request = _receive(conn, timeout=READ_TIMEOUT)
            except (OSError, ValueError):
                continue
            if not isinstance(request, dict) or request.get("key") != Path(path).stem:
                continue
            if not code_fingerprint(seen, started_ns):
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
            state.interrupted = False
            stop = threading.Event()
            threading.Thread(
                target=_forward_interrupt, args=(conn, state, stop), daemon=True
            ).start()
            try:
                with _deadline(REQUEST_LIMIT, path, mine):
                    reply = _run(commands, command, state, fresh_warnings)
            finally:
                stop.set()
            with contextlib.suppress(OSError):
                conn.settimeout(READ_TIMEOUT)
                _send(conn, reply)
            last = time.monotonic()
            if reply.get("lost"):
                _leave(path, mine)  # a bug escaped a command: its state is not to be trusted


def _forward_interrupt(conn: socket.socket, state: _State, stop: threading.Event) -> None:
    """While a command runs: its caller's Ctrl-C (an ``interrupt`` frame) or its going away
    interrupts it, as Ctrl-C in the command's own process would (also when it comes before
    the command started: :func:`_run` then runs nothing)."""
    import select

    while not stop.is_set():
        try:
            ready, _, _ = select.select([conn], [], [], 0.1)
            if not ready:
                continue
            conn.recv(1 << 12, socket.MSG_PEEK)
        except (OSError, ValueError):
            pass  # closed under us: the command ended
        if not stop.is_set():
            state.interrupted = True
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        return


@contextlib.contextmanager
def _deadline(seconds: float, path: str, mine: int | None) -> Any:
    """End this host when the block runs past ``seconds`` (without waiting for anything the
    stuck command may hold)."""
    timer = threading.Timer(seconds, _abandon, (path, mine))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _command(request: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a request asks to run, checked: a servable argv (base64), the caller's
    environment (names and values a process can have), absolute working directory and its
    identity, and umask; None for anything else."""
    said_env, cwd, umask = request.get("env"), request.get("cwd"), request.get("umask")
    cwd_id = request.get("cwdId")
    if not (
        isinstance(request.get("argv"), list)
        and isinstance(said_env, dict)
        and all(_env_name(k) and isinstance(v, str) and "\0" not in v for k, v in said_env.items())
        and isinstance(cwd, str)
        and "\0" not in cwd
        and os.path.isabs(cwd)
        and isinstance(cwd_id, list)
        and len(cwd_id) == 2
        and all(type(x) is int for x in cwd_id)
        and type(umask) is int
        and 0 <= umask <= 0o777
    ):
        return None
    try:
        argv = [os.fsdecode(base64.b64decode(a, validate=True)) for a in request["argv"]]
    except (TypeError, ValueError):
        return None
    if not servable(argv) or any("\0" in a for a in argv):
        return None  # only what a caller would have offered
    return {
        "argv": argv,
        "env": said_env,
        "cwd": cwd,
        "cwdId": cwd_id,
        "umask": umask,
        "encoding": request.get("encoding"),
        "errEncoding": request.get("errEncoding"),
    }


def _env_name(name: Any) -> bool:
    return isinstance(name, str) and bool(name) and "=" not in name and "\0" not in name


def _run(
    commands: Any, command: Mapping[str, Any], state: _State, fresh_warnings: list[Any]
) -> dict[str, Any]:
    """One checked command (:func:`_command`) under the caller's environment, directory and
    umask, its output kept in order."""
    import tempfile
    import warnings

    try:
        os.chdir(command["cwd"])
        here = os.stat(".")
        if [here.st_dev, here.st_ino] != command["cwdId"]:
            return {"fallback": True}  # not the caller's directory (another mount, replaced)
        os.environ.clear()
        os.environ.update(command["env"])
        output: list[list[Any]] = []
        streams = (
            _text(_Recorder(output, STDOUT), command.get("encoding")),
            _text(_Recorder(output, STDERR), command.get("errEncoding")),
        )
    except (OSError, ValueError, LookupError):
        return {"fallback": True}  # not reachable from here, or an encoding not to be had
    tempfile.tempdir = None  # TMPDIR is the caller's
    os.umask(command["umask"])
    warnings.filters[:] = fresh_warnings
    forget = getattr(warnings, "_filters_mutated", None)  # what was shown once: show it again
    if forget is not None:
        forget()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = streams
    try:
        state.running = True
        try:
            if state.interrupted and state.running:  # Ctrl-C before it started
                state.running = False
                raise KeyboardInterrupt
            status = commands.execute(command["argv"])
        except KeyboardInterrupt:  # before execute's own handler, or just after it returned
            status = commands.aborted(command["argv"])
        finally:
            state.running = False
    except BaseException:  # a bug that escaped the command table
        return {"lost": True}  # a read runs again in the caller's process, a write does not
    finally:
        sys.stdout, sys.stderr = saved
        for stream in streams:
            with contextlib.suppress(Exception):
                stream.flush()
        if "aira_core.databases" in sys.modules:  # as a process's end would
            from aira_core.databases import close_all

            close_all()
    return {
        "status": int(status),
        "output": [[which, base64.b64encode(data).decode()] for which, data in output],
    }


class _Recorder(io.RawIOBase):
    """A command's stdout or stderr: each write appended to the output both share, so that
    they are replayed in the order they were written."""

    def __init__(self, output: list[list[Any]], which: int) -> None:
        self.output, self.which = output, which

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.output and self.output[-1][0] == self.which:
            self.output[-1][1] += data
        else:
            self.output.append([self.which, bytearray(data)])
        return len(data)


def _text(buffer: Any, said: Any) -> Any:
    """A text stream over ``buffer`` with the caller's encoding and error handler (UTF-8,
    strict, when it said none that this interpreter knows)."""
    import codecs

    encoding, errors = "utf-8", "strict"
    if isinstance(said, list) and len(said) == 2 and all(isinstance(x, str) for x in said):
        with contextlib.suppress(LookupError):
            codecs.lookup(said[0])
            codecs.lookup_error(said[1])
            encoding, errors = said
    return io.TextIOWrapper(buffer, encoding=encoding, errors=errors, write_through=True)


def _abandon(path: str, mine: int | None) -> None:
    """End this host now, from the deadline's thread: the command that ran too long may hold
    what a clean end would wait for (a database's lock), so only its socket and children go
    with it."""
    try:
        with contextlib.suppress(OSError):
            if mine is not None and os.stat(path).st_ino == mine:
                os.unlink(path)
        if "multiprocessing" in sys.modules:
            import multiprocessing

            for child in multiprocessing.active_children():
                child.kill()
    finally:
        os._exit(1)


def _leave(path: str, mine: int | None) -> None:
    """End this host (from any thread): its own socket removed (a newer host's stays), as
    a command's process ends (a kernel worker it started goes with it)."""
    try:
        with contextlib.suppress(OSError):
            if mine is not None and os.stat(path).st_ino == mine:
                os.unlink(path)
        from aira_core.cli._exit import exit_now

        exit_now(0)
    finally:
        os._exit(0)  # whatever the steps before raised


def main(argv: list[str]) -> None:
    started_ns = time.time_ns()  # code that changes from here on is not surely what it loads
    sys.path[:] = json.loads(argv[2])  # the caller's (its key says so), not this directory
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)  # a plugin's print goes nowhere
    os.close(devnull)
    try:
        serve(argv[0], float(argv[1]), started_ns)
    finally:
        os._exit(0)  # also after a bug: no interpreter shutdown waiting on a plugin's thread


if __name__ == "__main__":
    main(sys.argv[1:])
