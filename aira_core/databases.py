"""The SQLite databases this process holds open, so that its end can close them.

``aira``'s ``main()`` ends the process with :func:`os._exit` (see :mod:`aira_core.cli`),
which runs no garbage collector: a WAL database still open there keeps its ``-wal``/``-shm``
files beside it. Each holder of a long-lived connection (the model store, the catalog state)
registers itself here. The set holds them weakly, so a holder dropped earlier still closes
its connection as it always did."""

from __future__ import annotations

import contextlib
import weakref
from typing import Protocol


class Holder(Protocol):
    def close(self) -> None: ...


_HOLDERS: weakref.WeakSet[Holder] = weakref.WeakSet()


def hold(holder: Holder) -> None:
    """Register ``holder``: :func:`close_all` closes it if it is still alive then."""
    _HOLDERS.add(holder)


def close_all() -> None:
    """Close every registered holder still alive (a WAL database's last close folds the log
    back into the file and removes its companions)."""
    for holder in list(_HOLDERS):
        # another thread's connection, or one already closed: nothing to fold back here
        with contextlib.suppress(Exception):
            holder.close()
