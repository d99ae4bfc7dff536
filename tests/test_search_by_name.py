"""A capability is found by its own name (issue 37): every capability of the first-party
OCCT package and of the example vendor package, searched by its id's words, its dotted id,
its full id and its title, is the first hit; by an alias, a hit ahead of every capability
that does not have that name, never a no-match. The catalog is walked, so a capability added
tomorrow is covered the day it is added; with the sentence-model extra as the CLI searches,
and without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aira_core.catalog.package import parse_package, source_from_path
from aira_core.catalog.search import HYBRID, SearchIndex, id_name, name_key
from aira_core.contracts.search import SearchRequest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    ROOT / "plugins" / "aira-kernel-occt" / "aira_kernel_occt" / "package",
    ROOT / "examples" / "aira-pack-holes" / "aira_pack_holes" / "package",
]


def _manifests() -> list[Any]:
    out = []
    for path in PACKAGES:
        parsed = parse_package(source_from_path(path))
        assert parsed.manifest is not None, parsed.diagnostics
        out.append(parsed.manifest)
    return out


MANIFESTS = _manifests()
DESCRIPTORS = [d for m in MANIFESTS for d in m.descriptors]


def _embedder() -> Any:
    from aira_core.catalog import embeddings

    return embeddings.load()  # None without the extra


@pytest.fixture(scope="module", params=["hybrid", "hybrid+embeddings"])
def index(request: pytest.FixtureRequest) -> SearchIndex:
    schemas = {k: v for m in MANIFESTS for k, v in m.schemas.items()}
    embedder = None
    if request.param == "hybrid+embeddings":
        embedder = _embedder()
        if embedder is None:
            pytest.skip("the embeddings extra is not installed")
    return SearchIndex(DESCRIPTORS, schemas, config=HYBRID, embedder=embedder)


def _first(index: SearchIndex, query: str) -> list[str]:
    response = index.search(SearchRequest(intent=query, top_k=5))
    assert not response.no_match, (query, response.no_match_reason)
    return [h.capability_id for h in response.hits]


def test_the_walk_covers_both_packages() -> None:
    ids = {d.capability_id for d in DESCRIPTORS}
    assert {"cap:exact.translate@1", "cap:exact.torus@1", "cap:holes.clearancePattern@1"} <= ids
    assert len(ids) == len(DESCRIPTORS) >= 55


def test_every_capability_is_the_first_hit_for_its_names(index: SearchIndex) -> None:
    """Its dotted id and full id are first; so are its id's words and its title, unless
    another capability has the same (``query.boundingBox`` and ``validate.boundingBox``:
    both are named ``bounding box``, and both come first, ahead of the rest)."""
    sharing: dict[tuple[str, ...], set[str]] = {}
    for d in DESCRIPTORS:
        for name in (id_name(d.capability_id), d.title):
            sharing.setdefault(name_key(name), set()).add(d.capability_id)
    missed = []
    for d in DESCRIPTORS:
        dotted = d.capability_id.removeprefix("cap:").split("@")[0]
        for query in (dotted, d.capability_id, id_name(d.capability_id), d.title):
            same = sharing.get(name_key(query), {d.capability_id})
            hits = _first(index, query)[: len(same)]
            if d.capability_id not in hits or not set(hits) <= same:
                missed.append((query, d.capability_id, hits))
    assert not missed


def test_an_alias_finds_its_capability_ahead_of_those_it_does_not_name(
    index: SearchIndex,
) -> None:
    named_by: dict[tuple[str, ...], set[str]] = {}
    for d in DESCRIPTORS:
        for name in (id_name(d.capability_id), d.title, *d.aliases):
            named_by.setdefault(name_key(name), set()).add(d.capability_id)
    missed = []
    for d in DESCRIPTORS:
        for alias in d.aliases:
            sharing = named_by[name_key(alias)]
            hits = _first(index, alias)[: len(sharing)]
            if d.capability_id not in hits or not set(hits) <= sharing:
                missed.append((alias, d.capability_id, hits))
    assert not missed


def test_a_name_in_a_sentence_is_no_name(index: SearchIndex) -> None:
    """Only the whole intent names a capability: 'translate' inside another request is one
    word of it, and no-match stays the answer to what the catalog does not do."""
    manual = index.search(SearchRequest(intent="translate this manual into French", top_k=5))
    assert manual.no_match and manual.hits == []
    negated = index.search(SearchRequest(intent="not translate", top_k=5))
    assert not any(w.startswith("name:") for h in negated.hits for w in h.why_matched)
