"""Child process for the store's crash and concurrency tests (``tests/test_store.py``).

Run as ``python store_crash_child.py MODE STORE_PATH [ARGS...]``; it prints one JSON object
per completed write on stdout. The crash point, if any, comes from ``$AIRA_STORE_CRASH_AT``
set by the parent, so a crashing run prints nothing and exits with 137.

Modes:
    op STORE OPERATION ARGS_JSON   one write: init, commit, revert, publish or branch
    loop STORE                     commit ``doc(1)``, ``doc(2)``, ... on main until killed
    race STORE EXPECTED GO WRITER  wait until the file GO exists, then commit on EXPECTED
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from aira_core.diagnostics import AiraError
from aira_core.model.store import ModelStore, StaleRevision


def doc(n: int) -> dict[str, Any]:
    """The ``n``-th document of a loop (the test computes the same ones)."""
    return {"format": "test/1", "n": n, "nodes": [{"id": f"n{i}", "v": i * n} for i in range(20)]}


def emit(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


def op(store: ModelStore, operation: str, args: dict[str, Any]) -> None:
    result = getattr(store, operation)(**args)
    emit({"result": result if isinstance(result, str) else result.rev})


def loop(store: ModelStore) -> None:
    head = store.head()
    n = 0
    while True:
        n += 1
        head = store.commit("main", head, doc(n), message=f"step {n}").rev
        emit({"n": n, "rev": head})


def race(store: ModelStore, expected: str, go: Path, writer: int) -> None:
    deadline = time.monotonic() + 30
    while not go.exists():
        if time.monotonic() > deadline:
            emit({"error": "no go signal"})
            return
        time.sleep(0.001)
    try:
        rev = store.commit("main", expected, {"writer": writer}, message=f"writer {writer}")
    except StaleRevision as exc:
        emit({"stale": exc.head, "code": exc.code})
    except AiraError as exc:
        emit({"error": str(exc), "code": exc.code})
    else:
        emit({"won": rev.rev})


def main(argv: list[str]) -> int:
    mode, path = argv[0], Path(argv[1])
    with ModelStore(path) as store:
        if mode == "op":
            op(store, argv[2], json.loads(argv[3]))
        elif mode == "loop":
            loop(store)
        elif mode == "race":
            race(store, argv[2], Path(argv[3]), int(argv[4]))
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
