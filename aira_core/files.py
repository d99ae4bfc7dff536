"""Writing the files a user names: an export's ``--out``, a run's ``--trajectory``, a new
signing key, a package's signature, a new package's directory (:func:`write_tree`). Every
command writes them through here, so each gets the same guarantees:

- **No overwrite by default.** An existing file (or a symlink, even a dangling one) is
  refused unless the command was given ``--force``.
- **Never through a symlink.** The file is created with ``O_EXCL | O_NOFOLLOW`` and a
  forced write renames a new file over the old name, which replaces a symlink itself and
  never writes into what it points to.
- **On the resolved path.** The directory is resolved first (``nodir/../x`` is ``./x``),
  so an existence check and the write see the same file.
- **Atomic.** :func:`write_file` writes a temporary file in the same directory, fsyncs it
  and renames it into place: a crash leaves the old file or the new one, never half.
- **Aira's own stores are never a target**, not even with ``--force``: the model store (and
  a store a command names), the trust store and the catalog state, with SQLite's side files,
  compared by resolved path and by inode (a hard link is the same file).

Only this module opens a user-named file for writing; readers are elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import BinaryIO, NamedTuple, TypeVar

from aira_core.diagnostics import AiraError

OUTPUT_EXISTS = "OUTPUT_EXISTS"
OUTPUT_PROTECTED = "OUTPUT_PROTECTED"
OUTPUT_UNWRITABLE = "OUTPUT_UNWRITABLE"

_SIDE_FILES = ("", "-wal", "-shm", "-journal")
"""SQLite keeps a database's recent writes in these beside it: overwriting one damages the
store as surely as overwriting the store."""

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
_CLOEXEC = os.O_CLOEXEC


def resolved(path: Path) -> Path:
    """Where ``path`` names a file: its directory resolved (symlinks and ``..``, even past a
    directory that does not exist), its last component kept as it is (a symlink there is
    the file itself, never followed)."""
    path = Path(os.fsdecode(path))
    if path.name in ("", ".", ".."):
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def own_stores(extra: Iterable[Path | None] = ()) -> list[Path]:
    """Aira's own state, which no user-named write may replace: the default model store, the
    trust store, the catalog state, and ``extra`` (a store the command was given)."""
    from aira_core.catalog.state import STATE_FILE
    from aira_core.catalog.trust import TRUST_FILE
    from aira_core.config import aira_home
    from aira_core.model.store import default_store_path

    home = aira_home()
    stores = [default_store_path(), home / TRUST_FILE, home / STATE_FILE]
    stores += [Path(p) for p in extra if p is not None]
    return [Path(f"{s}{side}") for s in stores for side in _SIDE_FILES]


def _identity(path: Path, follow: bool) -> tuple[int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=follow)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def refuse_own_store(where: Path, protect: Iterable[Path | None] = ()) -> None:
    """``OUTPUT_PROTECTED`` if ``where`` (a resolved path) is one of :func:`own_stores`, by
    path or by inode."""
    stores = own_stores(protect)
    names = {Path(os.path.realpath(s)) for s in stores}
    inodes = {i for s in stores if (i := _identity(s, True)) is not None}
    mine = {_identity(where, True), _identity(where, False)} - {None}
    if Path(os.path.realpath(where)) in names or where in names or mine & inodes:
        raise AiraError(
            OUTPUT_PROTECTED,
            f"{where.name!r} is one of Aira's own stores (model store, trust store or "
            "catalog state); it is never written as an output, not even with --force",
        )


def _unwritable(where: Path, exc: OSError) -> AiraError:
    return AiraError(OUTPUT_UNWRITABLE, f"cannot write {where.name!r}: {exc.strerror or exc}")


FORCE_HINT = "--force replaces it"


class _Exists(NamedTuple):
    """How a command refuses an existing file: its code, and what the user can do."""

    code: str
    hint: str


def _exists(where: Path, exists: _Exists) -> AiraError:
    return AiraError(exists.code, f"{where.name!r} exists; refusing to replace it ({exists.hint})")


def _open_dir(where: Path) -> int:
    try:
        return os.open(where.parent, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    except OSError as exc:
        raise _unwritable(where, exc) from None


T = TypeVar("T")


def _beside(where: Path, what: str, make: Callable[[str], T]) -> tuple[str, T]:
    """A new name beside ``where`` that ``make`` creates exclusively (``FileExistsError``
    tries another): the name and what ``make`` returned."""
    for _ in range(8):
        name = f".{where.name[:64]}.{secrets.token_hex(6)}.tmp"
        try:
            return name, make(name)
        except FileExistsError:
            continue
        except OSError as exc:
            raise _unwritable(where, exc) from None
    raise AiraError(OUTPUT_UNWRITABLE, f"cannot make a temporary {what} beside {where.name!r}")


def _temporary(directory: int, where: Path, mode: int) -> tuple[str, int]:
    """A new file beside ``where``, created exclusively: its name and descriptor."""
    return _beside(where, "file", lambda n: os.open(n, _CREATE | _CLOEXEC, mode, dir_fd=directory))


def _lstat(directory: int, where: Path) -> os.stat_result | None:
    """What stands at ``where``'s name (a link as a link), or None when nothing does."""
    try:
        return os.stat(where.name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _unwritable(where, exc) from None


def _refuse_existing(directory: int, where: Path, force: bool, exists: _Exists) -> None:
    info = _lstat(directory, where)
    if info is None:
        return
    if not force:
        raise _exists(where, exists)
    # lstat: a symlink is replaced as a link. A device, FIFO or directory is never replaced
    # (--force on /dev/null must not put a file where the device was).
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
        raise AiraError(
            OUTPUT_UNWRITABLE, f"cannot write {where.name!r}: it exists and is not a regular file"
        )


def check_target(
    path: Path,
    *,
    force: bool = False,
    exists_code: str = OUTPUT_EXISTS,
    hint: str = FORCE_HINT,
    protect: Iterable[Path | None] = (),
    new_dirs: bool = False,
) -> Path:
    """What :func:`write_file` (or, ``new_dirs``: :class:`NewFile`, which makes missing
    directories) would refuse, checked before the work that makes the data (a kernel's
    export, a run): the same codes. The write checks again as it writes."""
    where = resolved(path)
    refuse_own_store(where, protect)
    if new_dirs and not os.path.lexists(where.parent):
        return where
    directory = _open_dir(where)
    try:
        _refuse_existing(directory, where, force, _Exists(exists_code, hint))
    finally:
        os.close(directory)
    return where


def write_file(
    path: Path,
    data: bytes,
    *,
    force: bool = False,
    mode: int = 0o666,
    exists_code: str = OUTPUT_EXISTS,
    hint: str = FORCE_HINT,
    protect: Iterable[Path | None] = (),
) -> Path:
    """Write ``data`` as the file the user named ``path``, atomically (temporary file in the
    same directory, fsync, rename); returns where it was written.

    An existing file or symlink at ``path`` is ``exists_code`` unless ``force`` (then it is
    replaced, never written through); one of Aira's own stores (and ``protect``) is
    ``OUTPUT_PROTECTED``; a directory that does not exist or cannot be written is
    ``OUTPUT_UNWRITABLE``. ``mode`` is filtered by the umask, as for any new file."""
    where = resolved(path)
    refuse_own_store(where, protect)
    directory = _open_dir(where)
    temp = None
    try:
        _refuse_existing(directory, where, force, _Exists(exists_code, hint))
        temp, fd = _temporary(directory, where, mode)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if force:
                os.replace(temp, where.name, src_dir_fd=directory, dst_dir_fd=directory)
            else:
                _link_new(directory, temp, where, _Exists(exists_code, hint))
            temp = None
            os.fsync(directory)  # the new name survives a crash too
        except OSError as exc:
            raise _unwritable(where, exc) from None
    finally:
        if temp is not None:
            _unlink_quietly(temp, directory)
        os.close(directory)
    return where


def _link_new(directory: int, temp: str, where: Path, exists: _Exists) -> None:
    """Give ``temp`` the name ``where`` only if no file has it (a hard link fails on an
    existing name, atomically: no window between the check and the write)."""
    try:
        os.link(temp, where.name, src_dir_fd=directory, dst_dir_fd=directory, follow_symlinks=False)
    except FileExistsError:
        raise _exists(where, exists) from None
    except OSError:
        # A file system without hard links: check, then rename (a narrow window, the best
        # this file system allows).
        _refuse_existing(directory, where, False, exists)
        os.replace(temp, where.name, src_dir_fd=directory, dst_dir_fd=directory)
        return
    os.unlink(temp, dir_fd=directory)


def _unlink_quietly(name: str, directory: int) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=directory)


class NewFile:
    """A file made for appending (a trajectory), created exclusively before anything else a
    command makes, so that a refusal later can take it back: :meth:`discard` removes the
    file and the directories made for it, :meth:`keep` puts it in place.

    Without ``force`` the file is created under its own name (``O_EXCL | O_NOFOLLOW``), so
    the name is held from the first moment. With ``force`` it is created beside the name and
    renamed over it by :meth:`keep`: an existing file is replaced, never written into."""

    def __init__(
        self,
        path: Path,
        *,
        force: bool = False,
        exists_code: str = OUTPUT_EXISTS,
        hint: str = FORCE_HINT,
        protect: Iterable[Path | None] = (),
        mode: int = 0o666,
    ) -> None:
        self.path = resolved(path)
        refuse_own_store(self.path, protect)
        self._made = self._make_parents(self.path)
        try:
            self._dir = _open_dir(self.path)
            try:
                _refuse_existing(self._dir, self.path, force, _Exists(exists_code, hint))
                if force:
                    self._name, fd = _temporary(self._dir, self.path, mode)
                else:
                    self._name = self.path.name
                    fd = self._create(_Exists(exists_code, hint), mode)
            except BaseException:
                os.close(self._dir)
                raise
        except BaseException:
            self._remove_dirs()
            raise
        info = os.fstat(fd)
        self._identity = info.st_dev, info.st_ino
        self.file: BinaryIO = os.fdopen(fd, "ab")
        self._placed = not force

    def _create(self, exists: _Exists, mode: int) -> int:
        try:
            return os.open(self._name, _CREATE | os.O_APPEND | _CLOEXEC, mode, dir_fd=self._dir)
        except FileExistsError:
            raise _exists(self.path, exists) from None
        except OSError as exc:
            raise _unwritable(self.path, exc) from None

    @staticmethod
    def _make_parents(where: Path) -> list[Path]:
        """Make the missing directories above the file; the ones made, deepest first."""
        missing = []
        for d in where.parents:
            if os.path.lexists(d):
                break
            missing.append(d)
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:
                pass
            except OSError as exc:
                raise _unwritable(where, exc) from None
        return missing

    def _remove_dirs(self) -> None:
        for d in self._made:
            try:
                d.rmdir()  # only an empty one: never what someone else put there since
            except OSError:
                break
        self._made = []

    def keep(self) -> None:
        """The file stays: it is in place under its name from now on."""
        if not self._placed:
            try:
                os.replace(self._name, self.path.name, src_dir_fd=self._dir, dst_dir_fd=self._dir)
            except OSError as exc:
                raise _unwritable(self.path, exc) from None
            self._name, self._placed = self.path.name, True
        os.fsync(self._dir)
        self._made = []

    def discard(self) -> None:
        """Take the file back (and the directories made for it): a refused command leaves
        nothing. Only the file this made is removed, never one that took its name since."""
        self.file.close()
        try:
            now = os.stat(self._name, dir_fd=self._dir, follow_symlinks=False)
            if (now.st_dev, now.st_ino) == self._identity:
                os.unlink(self._name, dir_fd=self._dir)
        except OSError:
            pass
        os.close(self._dir)
        self._dir = -1
        self._remove_dirs()

    def close(self) -> None:
        self.file.close()
        if self._dir >= 0:
            os.close(self._dir)
            self._dir = -1


def open_existing(path: Path, code: str) -> BinaryIO:
    """A file a command continues (a resumed trajectory), opened for reading and appending:
    a regular file, never through a symlink; ``code`` otherwise."""
    where = resolved(path)
    try:
        fd = os.open(where, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        reason = "it is a symlink" if os.path.islink(where) else exc.strerror
        raise AiraError(code, f"cannot continue {where.name!r}: {reason}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise AiraError(code, f"cannot continue {where.name!r}: it is not a regular file")
    return os.fdopen(fd, "r+b")


def write_tree(
    path: Path,
    files: Mapping[str, bytes],
    *,
    exists_code: str = OUTPUT_EXISTS,
    hint: str = "choose another directory",
) -> Path:
    """Make the directory ``path`` holding ``files`` (relative POSIX path -> bytes), all or
    nothing: everything is written into a new directory beside ``path``, fsynced, and
    renamed to ``path`` last; on any failure the new directory is removed and ``path`` is as
    it was. An existing empty directory at ``path`` is replaced; anything else there (a
    directory with entries, a file, a symlink) is ``exists_code``, also when it appears
    while the tree is written (the rename refuses it). The parent directory must exist
    (``OUTPUT_UNWRITABLE`` otherwise). Returns where the tree was written."""
    where = resolved(path)
    refuse_own_store(where)
    directory = _open_dir(where)
    temp: str | None = None
    try:
        _refuse_nonempty(directory, where, _Exists(exists_code, hint))
        temp = _temporary_dir(directory, where)
        try:
            for relative, data in files.items():
                _write_member(directory, temp, relative, data)
            os.rename(temp, where.name, src_dir_fd=directory, dst_dir_fd=directory)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                # something took the name since the check: it stays, the tree goes
                raise _exists(where, _Exists(exists_code, hint)) from None
            raise _unwritable(where, exc) from None
        temp = None
        os.fsync(directory)  # the new name survives a crash too
    finally:
        if temp is not None:
            _remove_tree_quietly(directory, temp)
        os.close(directory)
    return where


def _refuse_nonempty(directory: int, where: Path, exists: _Exists) -> None:
    info = _lstat(directory, where)
    if info is None:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise AiraError(
            exists.code,
            f"{where.name!r} exists and is not a directory; refusing to replace it ({exists.hint})",
        )
    try:
        fd = os.open(where.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
        try:
            entries = os.listdir(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _unwritable(where, exc) from None
    if entries:
        raise AiraError(
            exists.code,
            f"{where.name!r} is a directory that is not empty; refusing to write into it "
            f"({exists.hint})",
        )


def _temporary_dir(directory: int, where: Path) -> str:
    """A new directory beside ``where``: its name."""
    return _beside(where, "directory", lambda n: os.mkdir(n, 0o777, dir_fd=directory))[0]


def _write_member(directory: int, temp: str, relative: str, data: bytes) -> None:
    parts = relative.split("/")
    if not relative or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a relative path inside the tree: {relative!r}")
    for depth in range(1, len(parts)):
        with contextlib.suppress(FileExistsError):
            os.mkdir(os.path.join(temp, *parts[:depth]), 0o777, dir_fd=directory)
    fd = os.open(os.path.join(temp, *parts), _CREATE | _CLOEXEC, 0o666, dir_fd=directory)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _remove_tree_quietly(directory: int, name: str) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(name, dir_fd=directory)
