"""The one reader of the files a user names on the command line: plans, patches, grants,
intent frames, documents, decision scripts, query sets, package manifests, signing keys,
trajectories and files to import.

Every such file must be a regular file within the size cap of its kind. A FIFO, a device
(``/dev/zero``), a socket or a directory is refused (``INPUT_NOT_FILE``) without blocking
and without reading a byte; a file over its cap is refused (``INPUT_TOO_LARGE``, naming the
size and the cap), and no more than cap + 1 bytes are ever read, so a file that grows while
it is read cannot exhaust memory either. Symbolic links are followed: reading the file a
link points at does no harm, and what is read is checked on the opened descriptor (not on
the name), so a link swapped between the check and the read changes nothing.

Plain ``os`` calls, cheap to import: plugin discovery reads package manifests through here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import NamedTuple

INPUT_NOT_FILE = "INPUT_NOT_FILE"
INPUT_TOO_LARGE = "INPUT_TOO_LARGE"

MiB = 1024 * 1024


class Cap(NamedTuple):
    default: int
    """Bytes at most, unless the environment variable says otherwise."""
    env: str
    """The environment variable that overrides the cap (a positive integer of bytes)."""
    what: str
    """What kind of file has this cap, for docs/security.md and messages."""


JSON_MAX_ENV = "AIRA_MAX_JSON_BYTES"
IMPORT_MAX_ENV = "AIRA_MAX_IMPORT_BYTES"
TRAJECTORY_MAX_ENV = "AIRA_MAX_TRAJECTORY_BYTES"
KEY_MAX_ENV = "AIRA_MAX_KEY_BYTES"

CAPS: dict[str, Cap] = {
    "json": Cap(
        16 * MiB,
        JSON_MAX_ENV,
        "a JSON document: plan, patch, grant, intent frame, AMIR document, decision script, "
        "query set, package manifest",
    ),
    "import": Cap(32 * MiB, IMPORT_MAX_ENV, "a file to import (aira model import)"),
    "trajectory": Cap(
        64 * MiB, TRAJECTORY_MAX_ENV, "a trajectory read back (aira trace show, run --resume)"
    ),
    "key": Cap(64 * 1024, KEY_MAX_ENV, "a signing key (catalog sign --key) or a package signature"),
}
"""The size caps, by kind of input file (docs/security.md lists them)."""


def max_bytes(kind: str) -> int:
    """The cap of ``kind``: its environment variable if that is a positive integer, else the
    default (a malformed override never lifts the cap)."""
    cap = CAPS[kind]
    value = os.environ.get(cap.env, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    return cap.default


def _kind_of(mode: int) -> str | None:
    """What a non-regular file is, or ``None`` for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse_kind(name: str, mode: int) -> None:
    from aira_core.diagnostics import AiraError

    other = _kind_of(mode)
    if other is not None:
        raise AiraError(INPUT_NOT_FILE, f"{name} is {other}, not a regular file; nothing was read")


def _refuse_size(name: str, kind: str, size: int, exact: bool = True) -> None:
    from aira_core.diagnostics import AiraError

    cap = max_bytes(kind)
    if size > cap:
        raise AiraError(
            INPUT_TOO_LARGE,
            f"{name} is {'' if exact else 'over '}{size if exact else cap} bytes; "
            f"a {kind} input is at most {cap} bytes ({CAPS[kind].env} sets the cap)",
        )


def _name(path: Path, what: str) -> str:
    return f"{what} {path.name or str(path)!r}"


def read_input(
    path: str | Path, kind: str, *, what: str = "file", unreadable: str = "INPUT_UNREADABLE"
) -> bytes:
    """The bytes of the user-named file at ``path``, a regular file of at most
    :func:`max_bytes` of ``kind``. ``INPUT_NOT_FILE`` for anything but a regular file,
    ``INPUT_TOO_LARGE`` over the cap, ``unreadable`` for an OS error (missing, no
    permission); messages name the file as ``what`` plus its name, never its directory."""
    from aira_core.diagnostics import AiraError

    path = Path(path)
    name = _name(path, what)
    try:
        # Checked by name first, so a FIFO or a device is never even opened (opening some
        # devices has effects); then again on the descriptor, which is what is read.
        _refuse_kind(name, os.stat(path).st_mode)
        # O_NONBLOCK: were the name swapped for a FIFO after the check, open must not wait
        # for a writer; O_NOCTTY: nor may a terminal become ours. (Not inherited: PEP 446.)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise AiraError(unreadable, f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        return read_open(fd, path, kind, what=what, unreadable=unreadable)
    finally:
        os.close(fd)


def read_open(
    fd: int, path: Path, kind: str, *, what: str = "file", unreadable: str = "INPUT_UNREADABLE"
) -> bytes:
    """:func:`read_input` of a file already open as ``fd`` (named ``path`` in messages),
    from its current offset; the caller closes it."""
    from aira_core.diagnostics import AiraError

    name = _name(path, what)
    try:
        info = os.fstat(fd)
        _refuse_kind(name, info.st_mode)
        _refuse_size(name, kind, info.st_size)
        chunks: list[bytes] = []
        left = max_bytes(kind) + 1  # one byte past the cap tells a file that grew since
        while left > 0:
            chunk = os.read(fd, min(left, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        _refuse_size(name, kind, len(data), exact=False)
        return data
    except OSError as exc:
        raise AiraError(unreadable, f"cannot read {name}: {exc.strerror or exc}") from None
