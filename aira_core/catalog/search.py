"""Keyword search over the production catalog: the retrieval ``catalog.search`` uses until
the hybrid pipeline of RFC-0002 §8 (BM25, embeddings, typed filtering, reranking) lands.

It scores capabilities by the intent's words found in their title, summary, aliases and
intent examples (CJK text by character bigrams), filtered by kind, and never returns more
than ``top_k`` hits, whatever the catalog's size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from aira_core.contracts.capability import CapabilityDescriptor, CapabilityKind

MAX_TOP_K = 32
_WORD = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]+")


def _terms(text: str) -> set[str]:
    out: set[str] = set()
    for token in _WORD.findall(text.lower()):
        if token[0] >= "\u3400":  # CJK: character bigrams (and the single character)
            out.update(token[i : i + 2] for i in range(max(1, len(token) - 1)))
        elif len(token) > 1:
            out.add(token)
    return out


@dataclass(frozen=True)
class Hit:
    capability_id: str
    title: str
    summary: str
    kind: str
    score: float
    """retrievalRelevance in [0, 1]: the share of the intent's terms the capability's
    discovery text contains. Not a probability of success."""
    matched: tuple[str, ...]


def keyword_search(
    descriptors: Iterable[CapabilityDescriptor],
    intent: str,
    *,
    top_k: int = 8,
    kinds: Iterable[CapabilityKind] | None = None,
) -> list[Hit]:
    wanted = _terms(intent)
    allowed = set(kinds) if kinds else None
    hits = []
    for d in descriptors:
        if allowed is not None and d.kind not in allowed:
            continue
        text = " ".join(
            [d.title, d.summary, *d.aliases, *d.intent_examples, d.capability_id.replace(".", " ")]
        )
        matched = wanted & _terms(text)
        if matched:
            hits.append(
                Hit(
                    d.capability_id,
                    d.title,
                    d.summary,
                    d.kind.value,
                    round(len(matched) / len(wanted), 4),
                    tuple(sorted(matched)),
                )
            )
    hits.sort(key=lambda h: (-h.score, h.capability_id))
    return hits[: max(0, min(top_k, MAX_TOP_K))]
