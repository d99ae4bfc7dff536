"""The discovery benchmark: how well catalog search finds the right capabilities
(``aira bench discovery``; the query set is ``benchmarks/discovery/queries.json``).

For each configuration (BM25 alone, the default hybrid, the hybrid with the embeddings
extra when it is installed) every query is searched once, after a warm-up, and scored:

- **recall@1 / recall@5**: the share of answerable queries with an expected capability
  first / among the first five hits;
- **MRR**: mean reciprocal rank of the first expected capability (0 when absent);
- **no-match accuracy**: the share of unanswerable queries (``expected: []``) answered with
  an explicit "no match";
- **false no-match**: the share of answerable queries wrongly answered "no match";
- **p50 / p95 latency** of one search, in milliseconds.

Queries carry a numeric id; odd ids are the half the ranking weights were fitted on
(``dev``), even ids the held-out half (``test``). Both halves are reported.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aira_core.canonical import loads_strict
from aira_core.catalog.search import BM25_ONLY, HYBRID, SearchIndex
from aira_core.diagnostics import AiraError
from aira_core.inputs import read_input

BENCHMARK_FORMAT = "aira.discovery-benchmark/1"
WARMUP = 5


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    expected: tuple[str, ...]
    category: str
    lang: str

    @property
    def half(self) -> str:
        digits = "".join(ch for ch in self.id if ch.isdigit())
        return "dev" if digits and int(digits) % 2 == 1 else "test"


def load_queries(path: Path) -> tuple[str, list[Query]]:
    """The catalog name and queries of a benchmark file; ``BENCH_QUERIES_INVALID`` if it is
    not one."""
    try:
        data = read_input(path, "json", what="query set", unreadable="BENCH_QUERIES_INVALID")
        doc = loads_strict(data, f"query set {path.name!r}")[0]
        if doc.get("format") != BENCHMARK_FORMAT:
            raise ValueError(f"format is not {BENCHMARK_FORMAT}")
        queries = [
            Query(
                str(q["id"]),
                str(q["query"]),
                tuple(q.get("expected", [])),
                str(q.get("category", "")),
                str(q.get("lang", "")),
            )
            for q in doc["queries"]
        ]
        return str(doc.get("catalog", "")), queries
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise AiraError(
            "BENCH_QUERIES_INVALID", f"{path.name} is not a discovery benchmark: {exc}"
        ) from None


@dataclass
class Scores:
    answerable: int = 0
    unanswerable: int = 0
    at1: int = 0
    at5: int = 0
    reciprocal: float = 0.0
    no_match_right: int = 0
    no_match_wrong: int = 0
    latencies: list[float] = field(default_factory=list)

    def add(self, query: Query, hits: Sequence[str], no_match: bool, seconds: float) -> None:
        self.latencies.append(seconds)
        if not query.expected:
            self.unanswerable += 1
            self.no_match_right += no_match
            return
        self.answerable += 1
        self.no_match_wrong += no_match
        rank = next((i for i, cap in enumerate(hits) if cap in query.expected), None)
        if rank is not None:
            self.at1 += rank == 0
            self.at5 += rank < 5
            self.reciprocal += 1 / (rank + 1)

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)

        def pct(q: float) -> float:
            return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 3) if lat else 0.0

        n = self.answerable or 1
        return {
            "queries": self.answerable + self.unanswerable,
            "recallAt1": round(self.at1 / n, 4),
            "recallAt5": round(self.at5 / n, 4),
            "mrr": round(self.reciprocal / n, 4),
            "noMatchAccuracy": round(self.no_match_right / (self.unanswerable or 1), 4),
            "falseNoMatch": round(self.no_match_wrong / n, 4),
            "p50Ms": pct(0.5),
            "p95Ms": pct(0.95),
        }


def evaluate(index: SearchIndex, queries: Iterable[Query]) -> dict[str, Any]:
    """Scores of one index over the queries: all, per half and per category."""
    queries = list(queries)
    for q in queries[:WARMUP]:
        index.search(q.text)
    groups: dict[str, Scores] = {"all": Scores()}
    for q in queries:
        start = time.perf_counter()
        response = index.search(q.text)
        seconds = time.perf_counter() - start
        hits = [h.capability_id for h in response.hits]
        for key in ("all", q.half, f"category:{q.category}", f"lang:{q.lang}"):
            groups.setdefault(key, Scores()).add(q, hits, response.no_match, seconds)
    return {key: scores.summary() for key, scores in groups.items()}


def run(
    descriptors: Sequence[Any],
    schemas: Mapping[str, Mapping[str, Any]],
    queries: Sequence[Query],
    *,
    embedder: Any = None,
) -> dict[str, Any]:
    """The three configurations side by side (the third only with an embedder)."""
    out: dict[str, Any] = {}
    for name, config, model in (
        ("bm25", BM25_ONLY, None),
        ("hybrid", HYBRID, None),
        ("hybrid+embeddings", HYBRID, embedder),
    ):
        if name == "hybrid+embeddings" and model is None:
            out[name] = {"skipped": "the embeddings extra is not installed"}
            continue
        start = time.perf_counter()
        index = SearchIndex(descriptors, schemas, config=config, embedder=model)
        build = time.perf_counter() - start
        out[name] = {"indexBuildS": round(build, 3), **evaluate(index, queries)}
    return out
