"""Block hashes, diffs, the bounded summary and bounded pages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from amir_factory import extend, grow, make_document

from aira_core.canonical import canonical_bytes, sha256_id
from aira_core.contracts.amir import AmirDocument, NodeInput, value_tokens
from aira_core.diagnostics import AiraError
from aira_core.model.aliases import ALIAS_UNKNOWN, AliasTable
from aira_core.model.blocks import (
    BLOCKS,
    DEFAULT_PAGE_LIMIT_BYTES,
    PAGE_ITEM_TOO_LARGE,
    SELECT_PATH_INVALID,
    SELECT_RANGE_INVALID,
    Page,
    block_hashes,
    diff,
    select,
    summary,
)

REV = "rev:sha256:" + "3" * 64


def table(document: AmirDocument, rev: str = REV) -> AliasTable:
    return AliasTable.build(rev, document)


def modified(document: AmirDocument, change: Callable[[dict[str, Any]], None]) -> AmirDocument:
    wire = document.to_wire()
    change(wire)
    return AmirDocument.model_validate(wire)


# -- block hashes and diff -----------------------------------------------------------------


def test_block_hashes_hash_each_blocks_json_list() -> None:
    document = make_document()
    hashes = block_hashes(document)
    assert list(hashes) == list(BLOCKS)
    wire = document.to_wire()
    for name in BLOCKS:
        assert hashes[name] == sha256_id("block", wire[name])
    assert block_hashes(AmirDocument())["nodes"] == sha256_id("block", [])


def _set_value(w: dict[str, Any]) -> None:
    w["parameters"][3]["value"] = 42.5


def _set_material(w: dict[str, Any]) -> None:
    w["bodies"][1]["material"] = "titanium"


def _move_tip(w: dict[str, Any]) -> None:
    w["bodies"][0]["tip"] = w["nodes"][0]["id"]


def _relabel_node(w: dict[str, Any]) -> None:
    w["nodes"][5]["label"] = "renamed"


def _swap_nodes(w: dict[str, Any]) -> None:
    w["nodes"][0], w["nodes"][1] = w["nodes"][1], w["nodes"][0]


def _drop_assertion(w: dict[str, Any]) -> None:
    del w["assertions"][-1]


def _value_and_assertion(w: dict[str, Any]) -> None:
    _set_value(w)
    _drop_assertion(w)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda w: None, []),
        (_set_value, ["parameters"]),
        (_set_material, ["bodies"]),
        (_move_tip, ["bodies"]),
        (_relabel_node, ["nodes"]),
        (_swap_nodes, ["nodes"]),
        (_drop_assertion, ["assertions"]),
        (_value_and_assertion, ["parameters", "assertions"]),
    ],
)
def test_diff_names_exactly_the_changed_blocks(
    change: Callable[[dict[str, Any]], None], expected: list[str]
) -> None:
    document = make_document()
    assert diff(document, modified(document, change)) == expected


def test_diff_of_added_entities() -> None:
    document = make_document()
    assert diff(document, grow(document, 1)) == list(BLOCKS)
    new_param = {"id": "par.extra", "label": "extra", "type": "Length", "value": 3.0}
    assert diff(document, extend(document, parameters=[new_param])) == ["parameters"]


# -- summary -------------------------------------------------------------------------------


def test_summary_of_the_reference_document_is_within_2k_host_tokens() -> None:
    document = make_document(bodies=15, parameters=30, assertions=30, nodes=45)
    aliases = table(document)
    result = summary(REV, document, aliases)
    assert value_tokens(result) <= 2000
    assert len(canonical_bytes(result)) <= 8000
    assert result.rev == REV
    assert result.counts == {"parameters": 30, "nodes": 45, "bodies": 15, "assertions": 30}
    assert result.blocks == block_hashes(document)
    assert result.aliases_omitted == 0 and result.roots_omitted == 0
    assert result.aliases == dict(aliases.entries())


def test_summary_roots() -> None:
    document = make_document()
    aliases = table(document)
    result = summary(REV, document, aliases)
    assert result.roots.bodies == {
        aliases.alias_of(b.id): aliases.alias_of(b.tip) for b in document.bodies
    }
    consumed = {
        v.node for n in document.nodes for v in n.inputs.values() if isinstance(v, NodeInput)
    }
    assert result.roots.nodes == [
        aliases.alias_of(n.id) for n in document.nodes if n.id not in consumed
    ]
    # In the generated document the unconsumed nodes are exactly the body tips.
    assert sorted(result.roots.nodes) == sorted(result.roots.bodies.values())


def test_summary_wire_shape() -> None:
    document = make_document(bodies=1, parameters=1, assertions=1, nodes=1)
    wire = summary(REV, document, table(document)).to_wire()
    assert set(wire) == {
        "rev",
        "counts",
        "blocks",
        "roots",
        "aliases",
        "aliasesOmitted",
        "rootsOmitted",
    }


def test_summary_alias_page_size() -> None:
    document = make_document()
    aliases = table(document)
    result = summary(REV, document, aliases, alias_page=10)
    assert result.aliases == dict(list(aliases.entries())[:10])
    assert all(a.startswith("p:") for a in result.aliases)
    assert result.aliases_omitted == 110


@pytest.mark.parametrize(
    ("bodies", "parameters", "assertions", "nodes"),
    [(40, 120, 120, 160), (100, 300, 300, 600), (200, 50, 0, 200)],
)
def test_summary_degrades_on_bigger_documents(
    bodies: int, parameters: int, assertions: int, nodes: int
) -> None:
    document = make_document(bodies, parameters, assertions, nodes)
    aliases = table(document)
    result = summary(REV, document, aliases, alias_page=10_000)
    assert len(canonical_bytes(result)) <= 8000
    listed = list(result.aliases)
    # The listed aliases are the first of the table's order: parameters first, then bodies.
    assert listed == [a for a, _ in aliases.entries()][: len(listed)]
    assert result.aliases_omitted == len(aliases) - len(listed) > 0
    assert result.counts["nodes"] == nodes
    if bodies >= 200:  # the roots alone no longer fit: they are cut too, and say so
        assert listed == []
        assert result.roots_omitted > 0
        shown = len(result.roots.nodes) + len(result.roots.bodies)
        assert shown + result.roots_omitted == 2 * bodies


def test_summary_respects_a_smaller_bound() -> None:
    document = make_document()
    result = summary(REV, document, table(document), max_tokens=600)
    assert value_tokens(result) <= 600
    assert result.aliases_omitted > 0


def test_summary_reuses_given_block_hashes() -> None:
    document = make_document(bodies=2, parameters=2, assertions=2)
    hashes = block_hashes(document)
    assert summary(REV, document, table(document), hashes=hashes).blocks == hashes


def test_summary_and_select_refuse_an_alias_table_of_another_revision() -> None:
    document = make_document(bodies=1, parameters=1, assertions=0)
    other = table(document, "rev:sha256:" + "4" * 64)
    with pytest.raises(ValueError):
        summary(REV, document, other)
    with pytest.raises(ValueError):
        select(REV, document, other, ["nodes"])


# -- select --------------------------------------------------------------------------------


def test_select_a_block() -> None:
    document = make_document()
    aliases = table(document)
    page = select(REV, document, aliases, ["parameters"], limit=10)
    assert page.rev == REV and page.path == ["parameters"]
    assert page.offset == 0 and page.limit == 10 and page.total == 30
    assert page.next_offset == 10
    assert [item["id"] for item in page.items] == [p.id for p in document.parameters[:10]]
    assert page.items[0] == {"alias": "p:width_1", **document.parameters[0].to_wire()}
    assert page.hash == sha256_id("page", page.items)


@pytest.mark.parametrize("by", ["alias", "id"])
def test_select_one_entity_by_alias_or_id(by: str) -> None:
    document = make_document()
    aliases = table(document)
    body = document.bodies[0]
    handle = "b:plate_1" if by == "alias" else body.id
    page = select(REV, document, aliases, ["bodies", handle])
    assert page.path == ["bodies", handle]  # echoed as given, not rewritten
    assert page.items == [{"alias": "b:plate_1", **body.to_wire()}]
    assert page.total == 1 and page.next_offset is None
    tip = select(REV, document, aliases, ("nodes", aliases.alias_of(body.tip)))
    assert tip.items[0]["id"] == body.tip and tip.path == ["nodes", aliases.alias_of(body.tip)]


def test_page_hash_is_stable_and_content_addressed() -> None:
    document = make_document()
    aliases = table(document)
    a = select(REV, document, aliases, ["assertions"], limit=5)
    b = select(REV, document, aliases, ["assertions"], limit=5)
    c = select(REV, document, aliases, ["assertions"], limit=5, offset=5)
    assert a.hash == b.hash != c.hash


def page_bytes(page: Page) -> int:
    return len(canonical_bytes(page.to_wire()))


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize(
    ("limit", "page_limit"), [(1, 16_000), (7, 16_000), (500, 16_000), (500, 3_000), (4, 1_200)]
)
def test_traversal_covers_every_item_exactly_once_within_bounds(
    block: str, limit: int, page_limit: int
) -> None:
    document = make_document(bodies=15, parameters=30, assertions=30, nodes=200)
    aliases = table(document)
    seen: list[str] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        page = select(
            REV, document, aliases, [block], limit=limit, offset=offset, page_limit_bytes=page_limit
        )
        assert page_bytes(page) <= page_limit
        assert 1 <= len(page.items) <= limit
        assert page.offset == offset
        seen += [item["id"] for item in page.items]
        offset = page.next_offset
        pages += 1
        assert pages <= 1000
    assert seen == [e.id for e in getattr(document, block)]


def test_default_page_limit_cuts_a_large_block() -> None:
    document = make_document(bodies=15, parameters=30, assertions=30, nodes=200)
    page = select(REV, document, table(document), ["nodes"], limit=1000)
    assert page_bytes(page) <= DEFAULT_PAGE_LIMIT_BYTES
    assert len(page.items) < 200 and page.next_offset == len(page.items)
    assert page.to_wire()["nextOffset"] == len(page.items)


def test_last_page_says_next_offset_null() -> None:
    document = make_document()
    page = select(REV, document, table(document), ["bodies"], limit=100)
    assert len(page.items) == 15
    assert page.to_wire()["nextOffset"] is None and "nextOffset" in page.to_wire()


def test_offset_past_the_end_is_an_empty_last_page() -> None:
    document = make_document()
    page = select(REV, document, table(document), ["bodies"], offset=15)
    assert page.items == [] and page.total == 15 and page.next_offset is None


def test_an_item_larger_than_the_page_limit() -> None:
    document = make_document(bodies=1, parameters=2, assertions=0)
    big = {"id": "par.big", "label": "notes", "type": "String", "value": "x" * 20_000}
    document = extend(document, parameters=[big])
    aliases = table(document)
    first = select(REV, document, aliases, ["parameters"])
    assert len(first.items) == 2 and first.next_offset == 2
    with pytest.raises(AiraError) as caught:
        select(REV, document, aliases, ["parameters"], offset=first.next_offset)
    assert caught.value.code == PAGE_ITEM_TOO_LARGE
    assert "p:notes" in str(caught.value)
    with pytest.raises(AiraError, match=PAGE_ITEM_TOO_LARGE):
        select(REV, document, aliases, ["parameters", "p:notes"])


@pytest.mark.parametrize(
    "path",
    [
        [],
        ["widgets"],
        "parameters",
        ["Parameters"],
        ["nodes", "n:plate_1_box", "inputs"],
        ["nodes", 3],
        ["nodes", "b:plate_1"],  # resolves, but to a body
        None,
    ],
)
def test_bad_paths(path: Any) -> None:
    document = make_document()
    with pytest.raises(AiraError) as caught:
        select(REV, document, table(document), path)
    assert caught.value.code == SELECT_PATH_INVALID


def test_unknown_entity_in_a_path() -> None:
    document = make_document()
    with pytest.raises(AiraError) as caught:
        select(REV, document, table(document), ["nodes", "n:base"])
    assert caught.value.code == ALIAS_UNKNOWN
    assert "n:base" in str(caught.value) and REV in str(caught.value)


@pytest.mark.parametrize(
    ("limit", "offset", "page_limit"),
    [
        (0, 0, 16_000),
        (1, -1, 16_000),
        (True, 0, 16_000),
        (1.5, 0, 16_000),
        (10, 0, 100),
        (10_001, 0, 16_000),  # more than a page may ask for
        (99999999999999999999, 0, 16_000),
        (1, 99999999999999999999, 16_000),
        (1, 2**53, 16_000),  # not exact in a canonical JSON page
    ],
)
def test_bad_ranges(limit: Any, offset: Any, page_limit: int) -> None:
    document = make_document()
    with pytest.raises(AiraError) as caught:
        select(
            REV,
            document,
            table(document),
            ["nodes"],
            limit=limit,
            offset=offset,
            page_limit_bytes=page_limit,
        )
    assert caught.value.code == SELECT_RANGE_INVALID


def test_the_largest_ranges_still_make_a_page() -> None:
    from aira_core.model.blocks import MAX_SELECT_LIMIT, MAX_SELECT_OFFSET

    document = make_document()
    aliases = table(document)
    page = select(REV, document, aliases, ["nodes"], limit=MAX_SELECT_LIMIT)
    assert page.items and page.limit == MAX_SELECT_LIMIT
    page = select(REV, document, aliases, ["nodes"], offset=MAX_SELECT_OFFSET)
    assert page.items == [] and page.next_offset is None and page.offset == MAX_SELECT_OFFSET


def test_the_factory_document_is_valid_and_realistic() -> None:
    document = make_document()
    assert make_document() == document  # deterministic
    ids = {e.id for block in BLOCKS for e in getattr(document, block)}
    node_ids = {n.id for n in document.nodes}
    body_ids = {b.id for b in document.bodies}
    param_ids = {p.id for p in document.parameters}
    assert len(ids) == 120
    assert all(b.tip in node_ids for b in document.bodies)
    assert all(a.target in body_ids for a in document.assertions)
    seen: set[str] = set()
    for n in document.nodes:  # references point at parameters and *earlier* nodes
        for value in n.inputs.values():
            wire = value.to_wire()
            if "node" in wire:
                assert wire["node"] in seen
            if "param" in wire:
                assert wire["param"] in param_ids
        seen.add(n.id)
    assert {n.op for n in document.nodes} >= {"exact.box@1.0.0", "exact.fillet@1.0.0"}
    assert document.assertions[0].validator_ref == "validate.volumeRange@1.0.0"
