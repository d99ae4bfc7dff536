"""ModelRepository: AMIR documents over the revision store, with their views kept.

What a user of the model layer relies on: every revision written through the repository
has a summary equal to the one :func:`blocks.summary` computes, kept in the store so that a
fresh repository (a new process, cold caches) reads it without recomputing; rejected
patches and stale commits change nothing; diffs, pages and aliases are per revision; a
stored document that is not AMIR is a clean ``AMIR_DOCUMENT_INVALID``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from amir_factory import commit_patch, grow, make_document

from aira_core.canonical import canonical_bytes, sha256_id
from aira_core.contracts.amir import AmirDocument, value_tokens
from aira_core.diagnostics import AiraError
from aira_core.model import blocks
from aira_core.model.aliases import ALIAS_UNKNOWN, AliasTable
from aira_core.model.operations import signature_from_schema
from aira_core.model.patch import (
    AMIR_DANGLING_REFERENCE,
    AMIR_OPERATION_UNKNOWN,
    PARAMETER_OUT_OF_RANGE,
    PatchRejected,
    feature_ops,
    validate_document,
)
from aira_core.model.repository import (
    AMIR_DOCUMENT_INVALID,
    BLOCKS_KEY,
    SUMMARY_KEY,
    ModelRepository,
)
from aira_core.model.store import (
    MAIN,
    STEP_STALE_REVISION,
    STORE_CORRUPT,
    STORE_REVISION_UNKNOWN,
    ModelStore,
    StaleRevision,
)

# Signatures of the operations ``make_document`` uses (as an admitted catalog would give).
LENGTH = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
_BOX = {
    "type": "object",
    "properties": {"width": LENGTH, "depth": LENGTH, "height": LENGTH},
    "required": ["width", "depth", "height"],
}
_FEATURE = {
    "type": "object",
    "properties": {
        "target": {"x-amir-type": "Shape"},
        "edges": {"x-amir-type": "Selection"},
        "size": LENGTH,
    },
    "required": ["target", "edges", "size"],
}
SIGNATURES = {
    "exact.box@1.0.0": signature_from_schema("exact.box@1.0.0", _BOX),
    **{
        ref: signature_from_schema(ref, _FEATURE)
        for ref in (
            "exact.fillet@1.0.0",
            "exact.chamfer@1.0.0",
            "exact.hole@1.0.0",
            "exact.shell@1.0.0",
        )
    },
}


# -- helpers -------------------------------------------------------------------------------


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "models" / "store.sqlite3"


@pytest.fixture
def repo(path: Path) -> Iterator[ModelRepository]:
    with ModelRepository.open(path) as repository:
        yield repository


@pytest.fixture
def fresh(path: Path, repo: ModelRepository) -> Iterator[Any]:
    """Opens further repositories on the same file: new objects with cold caches."""
    opened: list[ModelRepository] = []

    def open_fresh(signatures: Any = None) -> ModelRepository:
        opened.append(ModelRepository.open(path, signatures))
        return opened[-1]

    yield open_fresh
    for repository in opened:
        repository.close()


def direct_summary(rev: str, document: AmirDocument) -> blocks.Summary:
    """The summary computed from the document alone, with no store involved."""
    return blocks.summary(rev, document, AliasTable.build(rev, document))


def no_recompute(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, computing a summary, block hashes or an alias table fails the test."""

    def boom(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("recomputed a view that should have been kept")

    monkeypatch.setattr(blocks, "summary", boom)
    monkeypatch.setattr(blocks, "block_hashes", boom)
    monkeypatch.setattr(AliasTable, "build", boom)


def set_value(param_id: str, value: Any) -> dict[str, Any]:
    return {"ops": [{"op": "parameter.setValue", "id": param_id, "value": value}]}


def box_node(node_id: str, param_id: str, label: str | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": node_id,
        "op": "exact.box@1.0.0",
        "inputs": {
            "width": {"param": param_id},
            "depth": {"value": 2, "unit": "cm"},
            "height": {"value": 5},
        },
    }
    if label is not None:
        node["label"] = label
    return node


def snapshot(store: ModelStore, revs: list[str]) -> dict[str, Any]:
    """What a refused write must leave as it was: branches, the full log, derived views."""
    return {
        "branches": store.branches(),
        "log": store.log(MAIN, None),
        "derived": {
            rev: (store.derived(rev, SUMMARY_KEY), store.derived(rev, BLOCKS_KEY)) for rev in revs
        },
    }


def assert_not_stored(store: ModelStore, rev: str) -> None:
    with pytest.raises(AiraError) as exc:
        store.read(rev)
    assert exc.value.code == STORE_REVISION_UNKNOWN
    assert store.derived(rev, SUMMARY_KEY) is None


# -- init, commit, apply: summaries computed once and kept ----------------------------------


def test_signatures_fit_the_generated_documents() -> None:
    assert validate_document(make_document(), SIGNATURES) == []
    assert validate_document(make_document(nodes=200), SIGNATURES) == []


@pytest.mark.parametrize("document", [None, make_document()], ids=["empty", "document"])
def test_init_keeps_the_summary_a_fresh_repository_reads(
    document: AmirDocument | None,
    repo: ModelRepository,
    fresh: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    revision = repo.init(document)
    expected_doc = document if document is not None else AmirDocument()
    assert revision.kind == "init" and revision.parent is None
    assert revision.rev == repo.head() == sha256_id("rev", expected_doc)
    expected = direct_summary(revision.rev, expected_doc)
    hashes = blocks.block_hashes(expected_doc)
    # Kept in the store by the commit itself, before anyone read it.
    assert repo.store.derived(revision.rev, SUMMARY_KEY) == expected.to_wire()
    assert repo.store.derived(revision.rev, BLOCKS_KEY) == hashes
    assert repo.summary(revision.rev) == expected

    other = fresh()
    no_recompute(monkeypatch)
    assert other.summary(other.head()) == expected
    assert other.block_hashes(revision.rev) == hashes


def test_commit_and_apply_keep_summaries_a_fresh_repository_reads(
    repo: ModelRepository, fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc0 = make_document()
    r0 = repo.init(doc0)
    doc1 = grow(doc0, 2)
    r1 = repo.commit(MAIN, r0.rev, doc1, message="two more bodies", meta={"by": "test"})
    assert (r1.kind, r1.parent, r1.rev) == ("commit", r0.rev, sha256_id("rev", doc1))
    assert repo.store.derived(r1.rev, SUMMARY_KEY) is not None

    param = doc1.parameters[4]
    r2 = commit_patch(repo, MAIN, r1.rev, set_value(param.id, 77.5), message="deeper")
    assert (r2.kind, r2.parent) == ("commit", r1.rev)
    doc2 = repo.document(r2.rev)
    assert doc2.parameters[4].value == 77.5
    assert [p.id for p in doc2.parameters] == [p.id for p in doc1.parameters]
    assert repo.store.derived(r2.rev, SUMMARY_KEY) is not None
    assert repo.head() == r2.rev
    assert [r.rev for r in repo.store.log()] == [r2.rev, r1.rev, r0.rev]

    expected = {rev: direct_summary(rev, doc) for rev, doc in ((r1.rev, doc1), (r2.rev, doc2))}
    for rev, summary in expected.items():
        assert repo.summary(rev) == summary
        assert repo.store.derived(rev, SUMMARY_KEY) == summary.to_wire()
    assert expected[r2.rev].counts == {
        "parameters": 32,
        "nodes": 45 + 4,
        "bodies": 17,
        "assertions": 32,
    }

    other = fresh()
    no_recompute(monkeypatch)
    for rev, summary in expected.items():
        assert other.summary(rev) == summary
    assert other.summary(other.head()).rev == r2.rev


def test_a_kept_summary_keeps_its_documented_order(repo: ModelRepository, fresh: Any) -> None:
    document = make_document()
    rev = repo.init(document).rev
    expected = direct_summary(rev, document)
    assert list(expected.aliases)[:2] == ["p:width_1", "p:depth_1"]  # parameters first
    for repository in (repo, fresh()):
        summary = repository.summary(rev)
        assert summary == expected  # (holds: dict equality ignores order)
        assert list(summary.aliases) == list(expected.aliases)
        assert list(summary.counts) == list(blocks.BLOCKS) == list(summary.blocks)
        assert list(summary.roots.bodies) == list(expected.roots.bodies)


def test_a_missing_derived_value_is_computed_on_first_read_and_kept(
    path: Path, fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc0, doc1 = make_document(), make_document(seed=1)
    with ModelStore(path) as store:  # written without the repository: nothing derived
        r0 = store.init(doc0.to_wire()).rev
        r1 = store.commit(MAIN, r0, doc1.to_wire()).rev
        for rev in (r0, r1):
            assert store.derived(rev, SUMMARY_KEY) is None
            assert store.derived(rev, BLOCKS_KEY) is None

    first = fresh()
    assert first.summary(r1) == direct_summary(r1, doc1)
    assert first.store.derived(r1, SUMMARY_KEY) == direct_summary(r1, doc1).to_wire()
    assert first.store.derived(r1, BLOCKS_KEY) == blocks.block_hashes(doc1)
    # Block hashes missing: the first diff computes and keeps them (and the summary).
    assert first.store.derived(r0, BLOCKS_KEY) is None
    assert first.diff(r0, r1) == blocks.diff(doc0, doc1)
    assert first.store.derived(r0, BLOCKS_KEY) == blocks.block_hashes(doc0)
    assert first.store.derived(r0, SUMMARY_KEY) == direct_summary(r0, doc0).to_wire()

    expected = {r0: direct_summary(r0, doc0), r1: direct_summary(r1, doc1)}
    changed = blocks.diff(doc0, doc1)
    second = fresh()
    no_recompute(monkeypatch)  # kept now: a fresh repository reads them
    for rev, summary in expected.items():
        assert second.summary(rev) == summary
    assert second.diff(r0, r1) == changed


@pytest.mark.parametrize(
    "damage",
    [
        "CAST('{broken' AS BLOB)",
        "CAST('[1, 2]' AS BLOB)",
        # "bodies":15 -> 17 in the summary, one hex digit of a block hash in both
        "CAST(replace(replace(CAST(body AS TEXT), '\"bodies\":15', '\"bodies\":17'),"
        " 'block:sha256:1', 'block:sha256:2') AS BLOB)",
        "CAST(body AS TEXT)",  # the same JSON, stored as TEXT
    ],
    ids=["not json", "other json", "same length edit", "text"],
)
def test_damaged_kept_views_are_corrupt_not_served(path: Path, fresh: Any, damage: str) -> None:
    document = make_document()
    r0 = fresh().init(document).rev
    db = sqlite3.connect(path, isolation_level=None)
    before = db.execute("SELECT body FROM derived ORDER BY name").fetchall()
    db.execute(f"UPDATE derived SET body = {damage}")
    after = db.execute("SELECT body FROM derived ORDER BY name").fetchall()
    assert all(a != b for a, b in zip(after, before, strict=True))
    db.close()
    repo = fresh()
    for read, name in ((repo.summary, SUMMARY_KEY), (repo.block_hashes, BLOCKS_KEY)):
        with pytest.raises(AiraError) as error:
            read(r0)
        assert error.value.code == STORE_CORRUPT
        assert f"the kept {name} of {r0} is damaged" in str(error.value)


def test_intact_kept_views_of_another_shape_are_computed_again(path: Path, fresh: Any) -> None:
    # Kept (with a digest) but not a summary: as another version of Aira might have kept
    # under the same name. Not damage: computed again and replaced.
    document = make_document()
    repo = fresh()
    r0 = repo.init(document).rev
    repo.store.keep_derived(r0, {SUMMARY_KEY: [1, 2], BLOCKS_KEY: {"parameters": 1}})
    repo = fresh()
    assert repo.summary(r0) == direct_summary(r0, document)
    assert repo.block_hashes(r0) == blocks.block_hashes(document)
    assert repo.store.derived(r0, SUMMARY_KEY) == direct_summary(r0, document).to_wire()


# -- refusals change nothing -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "code", "pointer"),
    [
        (
            [{"op": "parameter.setValue", "id": "<param>", "value": 900}],
            PARAMETER_OUT_OF_RANGE,
            "/parameters/0/value",
        ),
        (
            [{"op": "body.setTip", "id": "<body>", "tip": "nod.gone"}],
            AMIR_DANGLING_REFERENCE,
            "/bodies/0",
        ),
        (
            [{"op": "node.add", "node": box_node("nod.new", "par.nowhere")}],
            AMIR_DANGLING_REFERENCE,
            "/nodes/45",
        ),
    ],
    ids=["out-of-range", "dangling-tip", "dangling-param"],
)
def test_a_rejected_patch_changes_nothing(
    ops: list[dict[str, Any]], code: str, pointer: str, path: Path, fresh: Any
) -> None:
    document = make_document()
    repo = fresh(SIGNATURES)
    r0 = repo.init(document).rev
    ids = {"<param>": document.parameters[0].id, "<body>": document.bodies[0].id}
    ops = [{k: ids.get(v, v) if isinstance(v, str) else v for k, v in op.items()} for op in ops]
    before = snapshot(repo.store, [r0])

    with pytest.raises(PatchRejected) as exc:
        commit_patch(repo, MAIN, r0, {"ops": ops})
    assert exc.value.code == code
    assert exc.value.diagnostics[0].pointer == pointer

    assert snapshot(repo.store, [r0]) == before
    assert repo.head() == r0
    assert repo.document(r0) == document
    with ModelStore(path) as store:  # and as another process sees it
        assert snapshot(store, [r0]) == before


def _nested(depth: int) -> Any:
    """``depth`` lists, one inside the other."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), -float("inf"), 2**53 + 1, "\ud800", _nested(33)],
    ids=["nan", "inf", "-inf", "inexact-int", "lone-surrogate", "too-deep"],
)
def test_a_literal_without_canonical_json_is_refused_and_nothing_is_written(
    value: Any, path: Path, fresh: Any
) -> None:
    # NaN used to become null on the way out and be dropped: the commit went through and
    # every other process then found the head unreadable (AMIR_DOCUMENT_INVALID).
    repo = fresh()
    r0 = repo.init().rev
    before = snapshot(repo.store, [r0])
    node = {"id": "n1", "op": "exact.box@1.0.0", "inputs": {"v": {"value": value}}}
    with pytest.raises(PatchRejected) as exc:
        commit_patch(repo, MAIN, r0, {"ops": [{"op": "node.add", "node": node}]})
    assert exc.value.code == "PATCH_INVALID"
    assert snapshot(repo.store, [r0]) == before
    assert fresh().document(repo.head()) == AmirDocument()


def test_a_literal_nested_to_the_limit_round_trips(fresh: Any) -> None:
    repo = fresh()
    r0 = repo.init().rev
    node = {"id": "n1", "op": "exact.box@1.0.0", "inputs": {"v": {"value": _nested(32)}}}
    r1 = commit_patch(repo, MAIN, r0, {"ops": [{"op": "node.add", "node": node}]}).rev
    assert fresh().document(r1).nodes[0].inputs["v"].value == _nested(32)


def test_a_document_handed_out_cannot_be_grown_in_place(fresh: Any) -> None:
    # The repository caches documents per revision: an append to a shared list would have
    # gone into the next commit made from that revision.
    repo = fresh(SIGNATURES)
    r0 = repo.init(make_document()).rev
    document = repo.document(r0)
    with pytest.raises(AttributeError):
        document.parameters.append(document.parameters[0])  # type: ignore[attr-defined]
    assert fresh(SIGNATURES).document(r0) == document


def test_a_commit_is_checked_against_the_signatures(fresh: Any) -> None:
    document = make_document()
    repo = fresh(SIGNATURES)
    r0 = repo.init(document).rev
    before = snapshot(repo.store, [r0])
    wire = document.to_wire()
    wire["nodes"].append({"id": "nod.draft", "op": "exact.draft@1.0.0", "inputs": {}})
    unknown_op = AmirDocument.model_validate(wire)

    with pytest.raises(PatchRejected) as exc:
        repo.commit(MAIN, r0, unknown_op)
    assert exc.value.code == AMIR_OPERATION_UNKNOWN
    assert exc.value.diagnostics[0].pointer == "/nodes/45/op"
    assert snapshot(repo.store, [r0]) == before
    assert_not_stored(repo.store, sha256_id("rev", unknown_op))

    # The same through a patch, and at init; without signatures only structure is checked.
    with pytest.raises(PatchRejected) as exc:
        commit_patch(repo, MAIN, r0, {"ops": [{"op": "node.add", "node": wire["nodes"][-1]}]})
    assert exc.value.code == AMIR_OPERATION_UNKNOWN
    assert snapshot(repo.store, [r0]) == before
    unchecked = fresh()
    assert unchecked.commit(MAIN, r0, unknown_op).rev == sha256_id("rev", unknown_op)


def test_init_refuses_an_invalid_document(path: Path, fresh: Any) -> None:
    wire = make_document().to_wire()
    wire["bodies"][0]["tip"] = "nod.gone"
    with pytest.raises(PatchRejected) as exc:
        fresh().init(AmirDocument.model_validate(wire))
    assert exc.value.code == AMIR_DANGLING_REFERENCE
    # A refused init creates nothing, not even an empty store.
    assert not path.exists()
    with pytest.raises(AiraError) as missing:
        fresh().store.branches()
    assert missing.value.code == "STORE_UNAVAILABLE"


def test_reading_a_missing_store_is_unavailable_and_creates_nothing(path: Path) -> None:
    with ModelRepository.open(path) as repository:
        for read in (repository.head, lambda: repository.summary("rev:sha256:" + "0" * 64)):
            with pytest.raises(AiraError) as exc:
                read()
            assert exc.value.code == "STORE_UNAVAILABLE"
            assert "aira model init" in str(exc.value)
    assert not path.parent.exists()
    with ModelRepository.open(path, create=True) as repository:
        assert repository.store.branches() == {}
    assert path.is_file()


@pytest.mark.parametrize("how", ["commit", "apply"])
def test_committing_on_an_old_head_is_stale_and_writes_nothing(
    how: str, repo: ModelRepository, fresh: Any
) -> None:
    document = make_document()
    r0 = repo.init(document).rev
    param = document.parameters[0].id
    # Another writer (another repository on the same file) moves the head first.
    r1 = commit_patch(fresh(), MAIN, r0, set_value(param, 11)).rev
    before = snapshot(repo.store, [r0, r1])

    late = repo.document(r0).to_wire()
    late["parameters"][0]["value"] = 12
    late_doc = AmirDocument.model_validate(late)
    with pytest.raises(StaleRevision) as exc:
        if how == "commit":
            repo.commit(MAIN, r0, late_doc)
        else:
            commit_patch(repo, MAIN, r0, set_value(param, 12))
    assert exc.value.code == STEP_STALE_REVISION
    assert exc.value.head == r1 and exc.value.expected == r0 and exc.value.branch == MAIN

    assert snapshot(repo.store, [r0, r1]) == before
    assert repo.head() == r1
    assert_not_stored(repo.store, sha256_id("rev", late_doc))
    # Redone on the new head, it goes through.
    r2 = commit_patch(repo, MAIN, exc.value.head, set_value(param, 12))
    assert r2.parent == r1


# -- diff, pages, aliases ------------------------------------------------------------------


def test_diff_names_exactly_the_changed_blocks_from_kept_hashes(
    repo: ModelRepository, fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = make_document()
    r0 = repo.init(document).rev
    param = document.parameters[2].id
    r_value = commit_patch(repo, MAIN, r0, set_value(param, 42.5)).rev
    r_node = commit_patch(
        repo, MAIN, r_value, {"ops": [{"op": "node.add", "node": box_node("nod.x", param)}]}
    ).rev
    body = document.bodies[3]
    feature = feature_ops(
        repo.document(r_node),
        body.id,
        AmirDocument.model_validate(
            {
                "nodes": [
                    {
                        "id": "nod.fillet",
                        "op": "exact.fillet@1.0.0",
                        "inputs": {
                            "edges": {"body": body.id, "select": "|Z", "entity": "Edge"},
                            "size": {"value": 1},
                        },
                    }
                ]
            }
        ).nodes[0],
    )
    r_feature = commit_patch(repo, MAIN, r_node, {"ops": [op.to_wire() for op in feature]}).rev
    r_material = commit_patch(
        repo,
        MAIN,
        r_feature,
        {"ops": [{"op": "body.setMaterial", "id": body.id, "material": "PEEK"}]},
    ).rev
    check = {
        "id": "asr.new",
        "validatorRef": "validate.volumeRange@1.0.0",
        "target": body.id,
        "args": {"max": {"value": 1e6}},
    }
    r_check = commit_patch(
        repo, MAIN, r_material, {"ops": [{"op": "assertion.add", "assertion": check}]}
    ).rev

    other = fresh()
    no_recompute(monkeypatch)  # the diff reads the kept block hashes only
    assert other.diff(r0, r_value) == ["parameters"]
    assert other.diff(r_value, r_node) == ["nodes"]
    assert other.diff(r_node, r_feature) == ["nodes", "bodies"]
    assert other.diff(r_feature, r_material) == ["bodies"]
    assert other.diff(r_material, r_check) == ["assertions"]
    assert other.diff(r_check, r_check) == []
    assert other.diff(r0, r_check) == list(blocks.BLOCKS)
    assert other.diff(r_check, r0) == list(blocks.BLOCKS)


def test_select_pages_carry_the_rev_and_stay_within_the_limit(repo: ModelRepository) -> None:
    document = make_document()
    rev = repo.init(document).rev
    items: list[dict[str, Any]] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = repo.select(rev, ["parameters"], limit=7, offset=offset)
        assert page.rev == rev
        assert page.path == ["parameters"]
        assert page.limit == 7 and page.offset == offset and page.total == 30
        assert 0 < len(page.items) <= 7
        assert len(canonical_bytes(page.to_wire())) <= blocks.DEFAULT_PAGE_LIMIT_BYTES
        assert page.hash == sha256_id("page", page.items)
        items += page.items
        offset = page.next_offset
        pages += 1
    assert pages == 5
    assert [item["id"] for item in items] == [p.id for p in document.parameters]
    assert items[0]["alias"] == "p:width_1"

    # A large block: pages are cut by bytes as well as by count.
    wide = make_document(nodes=200)
    big = repo.commit(MAIN, rev, wide).rev
    offset, seen = 0, []
    while offset is not None:
        page = repo.select(big, ["nodes"], limit=1000, offset=offset)
        assert page.rev == big and page.total == 200
        assert 0 < len(page.items) < 200
        assert len(canonical_bytes(page.to_wire())) <= blocks.DEFAULT_PAGE_LIMIT_BYTES
        seen += [item["id"] for item in page.items]
        offset = page.next_offset
    assert seen == [n.id for n in wide.nodes]


def test_select_resolves_aliases_in_the_revisions_own_table(repo: ModelRepository) -> None:
    document = make_document()
    r0 = repo.init(document).rev
    box = document.nodes[0]
    assert box.label == "plate_1_box"
    page = repo.select(r0, ["nodes", "n:plate_1_box"])
    assert page.rev == r0 and page.total == 1
    assert page.items[0]["id"] == box.id and page.items[0]["alias"] == "n:plate_1_box"
    assert repo.select(r0, ["nodes", box.id]).items == page.items  # a full id works too

    r1 = commit_patch(
        repo, MAIN, r0, {"ops": [{"op": "label.set", "id": box.id, "label": "base"}]}
    ).rev
    assert repo.select(r1, ["nodes", "n:base"]).items[0]["id"] == box.id
    # The old alias is gone in the new revision but still names the node in the old one.
    with pytest.raises(AiraError) as exc:
        repo.select(r1, ["nodes", "n:plate_1_box"])
    assert exc.value.code == ALIAS_UNKNOWN
    assert repo.select(r0, ["nodes", "n:plate_1_box"]).items[0]["id"] == box.id

    for unknown in ("n:nowhere", "p:plate_1_box", "nod.000000000000"):
        with pytest.raises(AiraError) as exc:
            repo.select(r0, ["nodes", unknown])
        assert exc.value.code == ALIAS_UNKNOWN


# -- documents that are not AMIR -----------------------------------------------------------


def test_a_stored_document_that_is_not_amir_is_a_clean_error(path: Path, fresh: Any) -> None:
    with ModelStore(path) as store:
        good = store.init(make_document().to_wire()).rev
        bad = store.commit(MAIN, good, {"hello": 1}).rev

    repo = fresh()
    reads = {
        "document": lambda: repo.document(bad),
        "summary": lambda: repo.summary(bad),
        "block_hashes": lambda: repo.block_hashes(bad),
        "select": lambda: repo.select(bad, ["parameters"]),
        "diff": lambda: repo.diff(good, bad),
        "head summary": lambda: repo.summary(repo.head()),
    }
    for what, read in reads.items():
        with pytest.raises(AiraError) as exc:
            read()
        err = exc.value
        assert err.code == AMIR_DOCUMENT_INVALID, what
        assert bad in str(err), what
        assert err.__cause__ is None and err.__suppress_context__, what  # no chained traceback
    assert repo.store.derived(bad, SUMMARY_KEY) is None  # nothing is kept for it
    assert repo.summary(good).rev == good
    with pytest.raises(AiraError) as exc:
        commit_patch(repo, MAIN, bad, set_value("par.x", 1))
    assert exc.value.code == AMIR_DOCUMENT_INVALID
    assert repo.head() == bad


# -- revert ---------------------------------------------------------------------------------


def test_revert_makes_the_target_summary_the_head_summary(
    repo: ModelRepository, fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = make_document()
    r0 = repo.init(document).rev
    param = document.parameters[0].id
    r1 = commit_patch(repo, MAIN, r0, set_value(param, 60)).rev
    r2 = commit_patch(
        repo, MAIN, r1, {"ops": [{"op": "node.add", "node": box_node("nod.x", param)}]}
    ).rev
    target = repo.summary(r1)

    with pytest.raises(StaleRevision):
        repo.revert(MAIN, r1, r1)
    reverted = repo.revert(MAIN, r2, r1, message="undo the box")
    assert (reverted.kind, reverted.parent, reverted.rev) == ("revert", r2, r1)
    assert repo.head() == r1
    assert repo.summary(repo.head()) == target == direct_summary(r1, repo.document(r1))
    assert [(r.kind, r.rev) for r in repo.store.log()] == [
        ("revert", r1),
        ("commit", r2),
        ("commit", r1),
        ("init", r0),
    ]

    other = fresh()
    no_recompute(monkeypatch)
    assert other.summary(other.head()) == target
    assert other.diff(r2, other.head()) == ["nodes"]


# -- the bound ----------------------------------------------------------------------


@pytest.mark.parametrize("nodes", [None, 200], ids=["reference", "200-nodes"])
def test_the_reference_summary_fits_in_2000_host_tokens(
    nodes: int | None, repo: ModelRepository, fresh: Any
) -> None:
    document = make_document(bodies=15, parameters=30, assertions=30, nodes=nodes)
    rev = repo.init(document).rev
    summary = repo.summary(rev)
    assert summary.counts["bodies"] == 15
    assert summary.counts["parameters"] == 30
    assert summary.counts["assertions"] == 30
    assert value_tokens(summary) <= 2000
    assert value_tokens(fresh().summary(rev)) <= 2000
    if nodes is None:  # the reference document: every alias fits
        assert summary.aliases_omitted == 0 and summary.roots_omitted == 0
