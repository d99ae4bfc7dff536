"""What a refusal must leave behind: nothing. ``snapshot`` records every file, directory and
symlink under some roots (content digest, mode, link target), so a hostile test can assert
that the stores and files are exactly as they were."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def snapshot(*roots: Path | str) -> dict[str, tuple[str, ...]]:
    """Each path under ``roots`` (the roots themselves included) -> what it is. Symlinks are
    recorded, never followed; a missing root is recorded as missing."""
    state: dict[str, tuple[str, ...]] = {}
    for root in map(Path, roots):
        if not os.path.lexists(root):
            state[str(root)] = ("missing",)
            continue
        paths = [root]
        if root.is_dir() and not root.is_symlink():
            paths += sorted(root.rglob("*"))
        for path in paths:
            info = path.lstat()
            if path.is_symlink():
                state[str(path)] = ("link", os.readlink(path))
            elif path.is_dir():
                state[str(path)] = ("dir", oct(info.st_mode))
            elif path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                state[str(path)] = ("file", oct(info.st_mode), digest)
            else:
                state[str(path)] = ("other", oct(info.st_mode))
    return state


def assert_unchanged(before: dict[str, tuple[str, ...]], *roots: Path | str) -> None:
    """Fail naming every path that appeared, vanished or changed since ``before``."""
    after = snapshot(*roots)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert not changed, f"changed on disk: {changed}"
