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

The part-level set (``benchmarks/discovery/parts.json``, :data:`PARTS_FORMAT`) holds whole-part
descriptions, each with the capabilities a working plan needs (and, where another plan works
as well, its capabilities as an alternative). Each is searched with ``topK`` 10 and scored:

- **part recall@10**: per query, the share of a plan's capabilities among the ten hits (the
  best of its plans), averaged;
- **complete@10**: the share of queries with every capability of one plan among the hits;
- **no match**: the share answered "no match" (each describes a part the catalog can build).
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
PARTS_FORMAT = "aira.discovery-parts/1"
PART_TOP_K = 10
PART_RECALL_TARGET = 0.9
"""Issue 31: part-level recall@10 of the hybrid search."""
WARMUP = 5


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    expected: tuple[str, ...]
    category: str
    lang: str
    plans: tuple[tuple[str, ...], ...] = ()
    """Part queries: the capability sets of the plans that work (``expected`` first)."""

    @property
    def half(self) -> str:
        digits = "".join(ch for ch in self.id if ch.isdigit())
        return "dev" if digits and int(digits) % 2 == 1 else "test"


def load_queries(path: Path, format: str = BENCHMARK_FORMAT) -> tuple[str, list[Query]]:
    """The catalog name and queries of a benchmark file of ``format`` (the single-capability
    set, or :data:`PARTS_FORMAT`); ``BENCH_QUERIES_INVALID`` if it is not one."""
    try:
        data = read_input(path, "json", what="query set", unreadable="BENCH_QUERIES_INVALID")
        doc = loads_strict(data, f"query set {path.name!r}")[0]
        if doc.get("format") != format:
            raise ValueError(f"format is not {format}")
        queries = [
            Query(
                str(q["id"]),
                str(q["query"]),
                tuple(q.get("expected", [])),
                str(q.get("category", "")),
                str(q.get("lang", "")),
                tuple(
                    tuple(str(c) for c in plan)
                    for plan in [q.get("expected", []), *q.get("alternatives", [])]
                )
                if format == PARTS_FORMAT
                else (),
            )
            for q in doc["queries"]
        ]
        if format == PARTS_FORMAT and not all(all(q.plans) and q.expected for q in queries):
            raise ValueError("every part query needs the capabilities of a plan")
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


@dataclass
class PartScores:
    recall: list[float] = field(default_factory=list)
    complete: int = 0
    no_match: int = 0
    latencies: list[float] = field(default_factory=list)

    def add(self, query: Query, hits: Sequence[str], no_match: bool, seconds: float) -> None:
        self.latencies.append(seconds)
        shown = set(hits[:PART_TOP_K])
        shares = [sum(c in shown for c in plan) / len(plan) for plan in query.plans]
        self.recall.append(max(shares))
        self.complete += max(shares) == 1.0
        self.no_match += no_match

    def summary(self) -> dict[str, Any]:
        n = len(self.recall) or 1
        lat = sorted(self.latencies)
        p50 = round(lat[len(lat) // 2] * 1000, 3) if lat else 0.0
        return {
            "queries": len(self.recall),
            "recallAt10": round(sum(self.recall) / n, 4),
            "completeAt10": round(self.complete / n, 4),
            "noMatch": round(self.no_match / n, 4),
            "p50Ms": p50,
        }


def evaluate_parts(index: SearchIndex, queries: Iterable[Query]) -> dict[str, Any]:
    """Part-level scores of one index: all, per half and per language (see the module)."""
    from aira_core.contracts.search import SearchRequest

    queries = list(queries)
    for q in queries[:WARMUP]:
        index.search(SearchRequest(intent=q.text, top_k=PART_TOP_K))
    groups: dict[str, PartScores] = {"all": PartScores()}
    for q in queries:
        start = time.perf_counter()
        response = index.search(SearchRequest(intent=q.text, top_k=PART_TOP_K))
        seconds = time.perf_counter() - start
        hits = [h.capability_id for h in response.hits]
        for key in ("all", q.half, f"lang:{q.lang}"):
            groups.setdefault(key, PartScores()).add(q, hits, response.no_match, seconds)
    return {key: scores.summary() for key, scores in groups.items()}


def run(
    descriptors: Sequence[Any],
    schemas: Mapping[str, Mapping[str, Any]],
    queries: Sequence[Query],
    *,
    embedder: Any = None,
    parts: Sequence[Query] = (),
) -> dict[str, Any]:
    """The three configurations side by side (the third only with an embedder); with
    ``parts``, each configuration's part-level scores under ``"parts"``."""
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
        if parts:
            out[name]["parts"] = evaluate_parts(index, parts)
    return out
