"""Built search indexes kept between runs under ``$AIRA_CACHE/search/``.

Building an index embeds every intent example and description of the catalog (seconds with
the sentence-embedding model); a command that searches once would pay that on every start.
So :class:`~aira_core.catalog.search.SearchIndex` stores its matrices here, under a key of
everything they depend on (the indexed texts, which the discovery catalog hash covers, the
embedder's name, version and width, and the code that builds them), and reads them back
while the key is the same. One ``.npz`` file per key: plain numpy arrays read with
``allow_pickle=False`` and the non-array part as canonical JSON inside it, written to a
temporary file and renamed into place. A file that cannot be read, or does not hold what
the key says, is ignored and written again; a home that cannot be written only costs the
rebuild.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aira_core.canonical import canonical_bytes, loads_strict
from aira_core.catalog.search import INDEX_FORMAT
from aira_core.config import aira_cache

CACHE_DIR = "search"
KEEP = 8
"""Index files kept (the most recently used): one per catalog and embedder in use."""
_META = "__meta__"


class DiskIndexCache:
    """:class:`~aira_core.catalog.search.IndexCache` in a folder (default
    ``$AIRA_CACHE/search``)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else aira_cache() / CACHE_DIR

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def load(self, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        import numpy as np

        path = self.path(key)
        try:
            with np.load(path, allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
            meta, _ = loads_strict(arrays.pop(_META).tobytes(), path.name)
        except FileNotFoundError:
            return None
        except Exception:  # damaged or foreign: ignored (and replaced), never a traceback
            return None
        if not isinstance(meta, dict) or meta.get("format") != INDEX_FORMAT:
            return None
        if meta.get("key") != key:
            return None
        with contextlib.suppress(OSError):  # recently used: kept by the pruning below
            os.utime(path)
        return arrays, meta

    def save(self, key: str, arrays: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
        import numpy as np

        tmp: str | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            blob = canonical_bytes({**meta, "format": INDEX_FORMAT, "key": key})
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=self.folder)
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays, **{_META: np.frombuffer(blob, dtype=np.uint8)})
            os.replace(tmp, self.path(key))
            tmp = None
            self._prune()
        except OSError:
            pass  # the index still works; the next start builds it again
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def _prune(self) -> None:
        files = sorted(
            (p for p in self.folder.glob("*.npz") if not p.name.startswith(".")),
            key=lambda p: p.stat().st_mtime_ns,
            reverse=True,
        )
        for old in files[KEEP:]:
            old.unlink(missing_ok=True)
