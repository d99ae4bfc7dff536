"""Fit the search's ranking weights (``aira_core.catalog.search.Weights``) on the dev half of
the discovery benchmark (odd query ids) and report both halves, so the numbers in
benchmarks/README.md can be reproduced.

    .venv/bin/python benchmarks/discovery/fit_weights.py [--trials 400] [--model] [--seed 0]

It runs the real search pipeline for every trial (random search over the weights), keeping
the weights that maximise ``min(recall@5 / 0.95, no-match accuracy / 0.9) + 0.2·recall@1``
on the dev half; it prints them as a ``Weights(...)`` literal to paste into search.py, with
dev, test and overall scores. ``--model`` fits the weights used with the embeddings extra.

``--evidence`` refits only the two numbers that decide "no match" (``evidence_lexical`` and
``no_match_below``) on a grid, keeping the ranking weights: among the dev-best settings it
takes the one with the widest run of equally good thresholds, at that run's middle (the
largest margin to the dev queries on either side), then the one nearest the current
weights. This is how the current default evidence weights were set.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from pathlib import Path
from typing import Any

from aira_core.catalog.evaluation import Query, evaluate, load_queries
from aira_core.catalog.search import DEFAULT_WEIGHTS, MODEL_WEIGHTS, SearchIndex, Weights
from aira_core.contracts.package import PackageManifest

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "plugins/aira-kernel-occt/aira_kernel_occt/package/manifest.json"
QUERIES = Path(__file__).with_name("queries.json")

RANGES = {
    "bm25": (0.0, 1.0),
    "alias": (0.0, 1.0),
    "example": (0.0, 1.0),
    "lexical": (0.0, 1.0),
    "dense": (0.0, 1.0),
    "model_example": (0.0, 2.0),
    "counter": (0.0, 4.0),
    "model_counter": (0.0, 4.0),
    "cue_boost": (1.0, 1.6),
    "off_cue": (0.5, 1.0),
    "evidence_lexical": (0.2, 1.0),
    "evidence_alias": (0.0, 0.5),
    "evidence_model": (0.0, 1.0),
    "no_match_below": (0.1, 0.7),
}
MODEL_ONLY = ("model_example", "model_counter", "evidence_model")


class Memo:
    """An embedder that remembers what it embedded (every trial embeds the same queries)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self._seen = inner, inner.name, {}

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        if len(texts) != 1:
            return self.inner.embed(texts)
        if texts[0] not in self._seen:
            self._seen[texts[0]] = self.inner.embed(texts)
        return np.array(self._seen[texts[0]])


def score(index: SearchIndex, queries: list[Query]) -> tuple[float, float, float]:
    """recall@5, no-match accuracy and recall@1, as ``aira bench discovery`` scores them."""
    scores = evaluate(index, queries)["all"]
    return scores["recallAt5"], scores["noMatchAccuracy"], scores["recallAt1"]


def objective(r5: float, nm: float, r1: float) -> float:
    return min(r5 / 0.95, nm / 0.9) + 0.2 * r1


LEXICAL_STEPS = [0.05 * i for i in range(-4, 5)]
BELOW_STEPS = [0.005 * i for i in range(-16, 17)]
"""The grid of ``--evidence``, around the starting weights."""


def _longest_run(values: list[float], top: float) -> list[int]:
    """The longest stretch of consecutive grid points scoring ``top``."""
    best: list[int] = []
    current: list[int] = []
    for i, value in enumerate(values):
        current = [*current, i] if value == top else []
        if len(current) > len(best):
            best = current
    return best


def fit_evidence(index: SearchIndex, dev: list[Query], start: Weights) -> Weights:
    """The dev-best (evidence_lexical, no_match_below) with the widest margin (see above)."""
    lexicals = sorted(
        {round(min(0.95, max(0.05, start.evidence_lexical + d)), 3) for d in LEXICAL_STEPS}
    )
    belows = sorted({round(max(0.01, start.no_match_below + d), 3) for d in BELOW_STEPS})
    choices = []
    for lexical in lexicals:
        values = []
        for below in belows:
            index.weights = dataclasses.replace(
                start, evidence_lexical=lexical, no_match_below=below
            )
            values.append(round(objective(*score(index, dev)), 4))
        top = max(values)
        run = _longest_run(values, top)
        middle = belows[run[len(run) // 2]]
        choices.append((top, len(run), -abs(lexical - start.evidence_lexical), lexical, middle))
    _, _, _, lexical, below = max(choices)
    return dataclasses.replace(start, evidence_lexical=lexical, no_match_below=below)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=None, help="random trials (default 400)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", action="store_true", help="fit the embeddings-extra weights")
    parser.add_argument(
        "--evidence", action="store_true", help="refit only the no-match evidence on a grid"
    )
    args = parser.parse_args(argv)
    if args.evidence and args.trials is not None:
        parser.error("--evidence fits on a grid: it takes no --trials")
    trials = 0 if args.evidence else (400 if args.trials is None else args.trials)

    manifest = PackageManifest.model_validate(json.loads(MANIFEST.read_text()))
    _, queries = load_queries(QUERIES)
    dev = [q for q in queries if q.half == "dev"]
    test = [q for q in queries if q.half == "test"]
    embedder = None
    if args.model:
        from aira_core.catalog import embeddings

        model = embeddings.load()
        if model is None:
            print("the embeddings extra is not installed", file=sys.stderr)
            return 1
        embedder = Memo(model)
    index = SearchIndex(manifest.descriptors, manifest.schemas, embedder=embedder)
    start = MODEL_WEIGHTS if args.model else DEFAULT_WEIGHTS
    best = start
    index.weights = start
    best_score = objective(*score(index, dev))
    if args.evidence:
        best = fit_evidence(index, dev, start)
    rng = random.Random(args.seed)
    for _ in range(trials):
        values = {
            name: (
                getattr(start, name)
                if not args.model and name in MODEL_ONLY
                else rng.uniform(*RANGES[name])
            )
            for name in RANGES
        }
        index.weights = Weights(**values)
        value = objective(*score(index, dev))
        if value > best_score:
            best, best_score = index.weights, value
    index.weights = best
    fields = ", ".join(f"{k}={round(v, 3)}" for k, v in dataclasses.asdict(best).items())
    print(f"Weights({fields})")
    for name, half in (("dev", dev), ("test", test), ("all", queries)):
        r5, nm, r1 = score(index, half)
        print(f"{name:5} recall@5 {r5:.3f}  no-match {nm:.3f}  recall@1 {r1:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
