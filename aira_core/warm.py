"""Private places for processes that outlive one command: the warm CLI host
(:mod:`aira_core.cli.warm`) and a kernel's warm worker (the OCCT plugin's ``warm`` module).

Both listen on a Unix socket that only their user may reach: in a directory of that user
alone (``$XDG_RUNTIME_DIR/<name>``, else ``/tmp/<name>-<uid>``, mode 0700; one with another
owner, other permissions or that is not a directory is refused), answering only a peer of
the same user in the same world (:func:`peer_is_own`). Standard library only, and little of
it at import: the CLI's entry point reads :func:`enabled` before anything else.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

WARM_ENV = "AIRA_WARM"
"""``1`` keeps warm what repeated CLI calls need: the CLI host and a kernel's worker."""
SOCKET_PATH_MAX = 107
"""The longest Unix socket path the kernel takes (sun_path, less its terminator)."""


def enabled(own: str | None = None) -> bool:
    """Whether the user asked for warm processes: the variable ``own`` (one worker's own
    switch, e.g. ``AIRA_OCCT_WARM``) when it is set, else :data:`WARM_ENV`."""
    raw = os.environ.get(own) if own else None
    if raw is None:
        raw = os.environ.get(WARM_ENV, "")
    return raw.strip().lower() in ("1", "true", "yes", "on")


KEPT_ENV = (
    "AIRA_",
    "PYTHON",
    "LD_",
    # what native libraries and models read once, when they load in a warm process
    "OMP_",
    "OPENBLAS_",
    "MKL_",
    "HF_",
    "TRANSFORMERS_",
    "SENTENCE_TRANSFORMERS_",
    "CSF_",  # OpenCASCADE's (a kernel loaded in the process)
    "MMGT_",
    "CASROOT",
    # read once at start: the locale (open()'s default encoding, fsdecode) and the time zone
    "LANG",
    "LC_",
    "TZ",
)
"""Prefixes of the environment variables a warm process's kept state may depend on: part
of its key, so that a caller with other values gets a process of its own."""


def kept_env() -> dict[str, str]:
    """This process's variables with a :data:`KEPT_ENV` prefix, sorted by name."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(KEPT_ENV)}


def idle_seconds(variable: str, default: float) -> float:
    """The idle limit of a warm process: ``variable`` (seconds, > 0), else ``default``."""
    try:
        value = float(os.environ.get(variable, ""))
    except ValueError:
        return default
    return value if 0 < value < 1e7 else default


class NotPrivate(Exception):
    """The socket directory is not the user's alone (or a socket path would not fit)."""


def socket_dir(name: str) -> Path:
    """The user's private directory ``name`` for sockets, made 0700 if missing;
    :class:`NotPrivate` when it exists with another owner, other permissions or as
    something else than a directory (a symlink included)."""
    import stat

    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    usable = bool(runtime) and os.path.isdir(runtime)  # a stale value (after su): /tmp
    base = Path(runtime) / name if usable else Path(f"/tmp/{name}-{os.getuid()}")
    shown = f"$XDG_RUNTIME_DIR/{name}" if usable else f"/tmp/{name}-<uid>"  # no home path
    with contextlib.suppress(FileExistsError):
        base.mkdir(mode=0o700, parents=False)
        os.chmod(base, 0o700)  # made: 0700 whatever the umask (0777 would leave it 0000)
    info = os.lstat(base)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise NotPrivate(f"{shown} is not a directory of this user")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise NotPrivate(
            f"{shown} can be entered by other users (mode {stat.S_IMODE(info.st_mode):o})"
        )
    return base


def socket_path(name: str, key: str) -> Path:
    """``<socket_dir(name)>/<key>.sock``; :class:`NotPrivate` when the path is longer than
    a Unix socket's."""
    path = socket_dir(name) / f"{key}.sock"
    if len(str(path).encode()) > SOCKET_PATH_MAX:
        raise NotPrivate(
            f"the socket path in $XDG_RUNTIME_DIR is {len(str(path).encode())} bytes, longer "
            "than a Unix socket's (use a shorter XDG_RUNTIME_DIR)"
        )
    return path


def peer_is_own(fileno: int) -> bool:
    """Whether the process at the other end of the connected Unix socket ``fileno`` is this
    user in this process's world: the same uid and gid (``SO_PEERCRED``) and the same
    :func:`world` (a sandbox or container of the same uid sees other files or may do less,
    and must not borrow this process's view or rights). False when the system does not say."""
    import socket
    import struct

    sock = socket.socket(fileno=os.dup(fileno))
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    finally:
        sock.close()
    pid, uid, gid = struct.unpack("3i", raw)
    if uid != os.getuid() or gid != os.getgid() or pid <= 0:
        return False  # pid 0: a peer in a pid namespace this one cannot see
    mine, theirs = world("self"), world(str(pid))
    return mine is not None and mine == theirs


def world(pid: str = "self") -> list[str] | None:
    """What a process may see and do besides its uid: its root directory; its mount, user
    and pid namespaces; its no-new-privileges flag, seccomp mode and filter count (what
    Landlock and seccomp sandboxes set); and its security label (AppArmor, SELinux). None
    when ``/proc`` does not say."""
    said: list[str] = []
    try:
        for place in ("root", "ns/mnt", "ns/user", "ns/pid"):
            st = os.stat(f"/proc/{pid}/{place}")
            said.append(f"{place}:{st.st_dev}:{st.st_ino}")
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as status:
            said += [
                line.strip()
                for line in status
                if line.startswith(("NoNewPrivs:", "Seccomp:", "Seccomp_filters:"))
            ]
    except OSError:
        return None
    try:
        with open(f"/proc/{pid}/attr/current", "rb") as label:
            said.append("label:" + label.read().decode("utf-8", "replace").strip("\0\n"))
    except OSError:
        said.append("label:")  # no security module that labels processes
    return said


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def is_process_of(pid: int, marker: bytes) -> bool:
    """Whether process ``pid`` has ``marker`` (e.g. its module, ``b"aira_core.cli.warm"``)
    as an argument: still the process it was, not one that took its number since."""
    return marker in _argv(pid)


def processes_under(folder: Path, marker: bytes) -> list[int]:
    """Pids of the processes with ``marker`` as an argument and another argument naming a
    path under ``folder`` (their socket): what a test or a benchmark with a runtime
    directory of its own started."""
    where = str(folder).encode()
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit()
        and is_process_of(int(entry.name), marker)
        and any(where in arg for arg in _argv(int(entry.name)))
    ]
