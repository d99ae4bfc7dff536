"""Alias tables: label aliases, short forms, collision lengthening, stability and resolution."""

from __future__ import annotations

from typing import Any

import pytest
from amir_factory import extend, grow, make_document
from hypothesis import given, settings
from hypothesis import strategies as st

from aira_core.canonical import sha256_hex
from aira_core.contracts.amir import AmirDocument
from aira_core.diagnostics import AiraError
from aira_core.model.aliases import (
    ALIAS_UNKNOWN,
    AliasTable,
    label_alias_safe,
)

REV = "rev:sha256:" + "1" * 64
HEAD = "rev:sha256:" + "2" * 64

# Ids chosen so their digests collide: all three share the 4-digit prefix 22c4, and the
# two x ids also share the 5-digit prefix 22c41 (asserted in test_collision_ids_collide).
Y = "y9961"
X1 = "x712"
X2 = "x733"


def param(pid: str, label: str = "p", **extra: Any) -> dict[str, Any]:
    return {"id": pid, "label": label, "type": "Length", "value": 1.0, **extra}


def node(nid: str, label: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": nid, "op": "exact.box@1.0.0", "inputs": {}}
    if label is not None:
        out["label"] = label
    return out


def doc(**blocks: list[dict[str, Any]]) -> AmirDocument:
    return AmirDocument.model_validate(blocks)


def short(entity_id: str, length: int = 4) -> str:
    return sha256_hex(entity_id)[:length]


# -- rules ---------------------------------------------------------------------------------


def test_labels_become_aliases_and_the_rest_short_forms() -> None:
    document = make_document()
    table = AliasTable.build(REV, document)
    for p in document.parameters:
        assert table.alias_of(p.id) == f"p:{p.label}"
    for b in document.bodies:
        assert table.alias_of(b.id) == f"b:{b.label}"
    for n in document.nodes:
        expected = f"n:{n.label}" if n.label else f"n:{short(n.id)}"
        assert table.alias_of(n.id) == expected
    for a in document.assertions:  # labelled or not, assertions get short forms
        assert table.alias_of(a.id) == f"a:{short(a.id)}"
    assert table.alias_of(document.parameters[0].id) == "p:width_1"
    assert len(table) == 120


@pytest.mark.parametrize(
    ("label", "safe"),
    [
        ("width_1", True),
        ("W", True),
        ("w" * 48, True),
        ("w" * 49, False),
        ("abc", True),  # hex, but shorter than any short form
        ("beef", False),  # could equal a short form
        ("cafe01", False),
        ("Beef", True),
        ("1width", False),
        ("has space", False),
        ("dotted.name", False),
        ("宽度", False),
        ("", False),
    ],
)
def test_label_alias_safety(label: str, safe: bool) -> None:
    assert label_alias_safe(label) is safe
    table = AliasTable.build(REV, doc(parameters=[param("p1", label or "x")]))
    if label:
        expected = f"p:{label}" if safe else f"p:{short('p1')}"
        assert table.alias_of("p1") == expected


def test_a_duplicate_label_stays_with_the_first_entity_per_kind() -> None:
    document = doc(
        parameters=[param("p1", "width"), param("p2", "width"), param("p3", "plate")],
        nodes=[node("n1", "width"), node("n2"), node("n3", "width")],
        bodies=[{"id": "b1", "label": "plate", "tip": "n1"}],
    )
    table = AliasTable.build(REV, document)
    # The first entity in document order keeps the label; later ones get short forms.
    assert table.alias_of("p1") == "p:width"
    assert table.alias_of("p2") == f"p:{short('p2')}"
    # Uniqueness is among the entity's own kind: the same label in another kind is fine.
    assert table.alias_of("p3") == "p:plate"
    assert table.alias_of("b1") == "b:plate"
    assert table.alias_of("n1") == "n:width"
    assert table.alias_of("n2") == f"n:{short('n2')}"
    assert table.alias_of("n3") == f"n:{short('n3')}"


def test_an_unsafe_first_label_does_not_hold_the_alias() -> None:
    # An unsafe label is not an alias, so it holds nothing for later entities either.
    table = AliasTable.build(
        REV, doc(parameters=[param("p1", "has space"), param("p2", "has space")])
    )
    assert table.alias_of("p1") == f"p:{short('p1')}"
    assert table.alias_of("p2") == f"p:{short('p2')}"


def test_collision_ids_collide() -> None:
    assert short(Y) == short(X1) == short(X2) == "22c4"
    assert short(X1, 5) == short(X2, 5) != short(Y, 5)


def test_collisions_lengthen_only_the_later_entity() -> None:
    table = AliasTable.build(REV, doc(nodes=[node(Y), node(X1), node(X2)]))
    assert table.alias_of(Y) == "n:22c4"
    assert table.alias_of(X1) == f"n:{short(X1, 5)}"
    assert table.alias_of(X2) == f"n:{short(X2, 6)}"
    # A collision with a different kind does not count: prefixes differ.
    table = AliasTable.build(REV, doc(nodes=[node(Y)], assertions=[]))
    other = AliasTable.build(
        REV,
        doc(
            nodes=[node(Y)],
            bodies=[{"id": X1, "label": "1bad", "tip": Y}],
        ),
    )
    assert other.alias_of(X1) == "b:22c4"
    assert other.alias_of(Y) == table.alias_of(Y) == "n:22c4"


def test_aliases_are_a_bijection_over_all_entities() -> None:
    document = make_document(bodies=20, parameters=40, assertions=60, nodes=90)
    table = AliasTable.build(REV, document)
    wire = table.to_wire()
    assert wire["rev"] == REV
    ids = [
        e.id
        for block in ("parameters", "nodes", "bodies", "assertions")
        for e in getattr(document, block)
    ]
    assert sorted(wire["aliases"].values()) == sorted(ids)
    assert len(set(wire["aliases"])) == len(ids)
    for alias, entity_id in wire["aliases"].items():
        assert table.resolve(alias) == entity_id
        assert table.alias_of(entity_id) == alias


# -- stability -----------------------------------------------------------------------------


def all_aliases(document: AmirDocument) -> dict[str, str]:
    table = AliasTable.build(REV, document)
    return {alias_id: alias for alias, alias_id in table.to_wire()["aliases"].items()}


@settings(max_examples=30, deadline=None)
@given(
    size=st.tuples(st.integers(0, 8), st.integers(0, 12), st.integers(0, 12), st.integers(0, 12)),
    added=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    labelled=st.booleans(),
)
def test_adding_entities_never_changes_an_existing_alias(
    size: tuple[int, int, int, int], added: int, seed: int, labelled: bool
) -> None:
    bodies, parameters, assertions, extra_nodes = size
    document = make_document(
        bodies=bodies,
        parameters=parameters,
        assertions=assertions if bodies else 0,
        nodes=bodies + extra_nodes,
        seed=seed,
    )
    before = all_aliases(document)
    after = all_aliases(grow(document, added, seed=seed + 1, labelled=labelled))
    assert {i: after[i] for i in before} == before
    assert len(after) == len(before) + 5 * added


def test_adding_a_colliding_entity_keeps_the_existing_short_form() -> None:
    first = doc(nodes=[node(Y)])
    second = extend(first, nodes=[node(X1)])
    third = extend(second, nodes=[node(X2)])
    assert all_aliases(first)[Y] == "n:22c4"
    assert all_aliases(second) == {Y: "n:22c4", X1: f"n:{short(X1, 5)}"}
    assert all_aliases(third) == {
        Y: "n:22c4",
        X1: f"n:{short(X1, 5)}",
        X2: f"n:{short(X2, 6)}",
    }


def test_a_new_hex_shaped_label_cannot_take_an_existing_short_form() -> None:
    document = doc(nodes=[node(Y)])
    extended = extend(document, nodes=[node("later", label="22c4")])
    aliases = all_aliases(extended)
    assert aliases[Y] == "n:22c4"
    assert aliases["later"] == f"n:{short('later')}"


def test_adding_a_duplicate_label_keeps_the_existing_alias() -> None:
    """Spec 003 §4.1: adding an entity whose label duplicates an existing one renames
    nothing; the existing entity keeps ``p:<label>`` and the newcomer gets its short form."""
    document = make_document(bodies=2, parameters=3, assertions=1)
    width = document.parameters[0]
    plate = document.bodies[0]
    before = all_aliases(document)
    assert before[width.id] == "p:width_1"
    extended = extend(
        document,
        parameters=[param("par.dup", width.label)],
        bodies=[{"id": "body.dup", "label": plate.label, "tip": plate.tip}],
    )
    aliases = all_aliases(extended)
    assert {i: aliases[i] for i in before} == before
    assert aliases["par.dup"] == f"p:{short('par.dup')}"
    assert aliases["body.dup"] == f"b:{short('body.dup')}"


def test_removing_the_holder_hands_the_label_to_the_next_entity() -> None:
    """The documented exception: removing an entity (not adding one) can move an alias."""
    both = doc(parameters=[param("p1", "width"), param("p2", "width")])
    assert all_aliases(both) == {"p1": "p:width", "p2": f"p:{short('p2')}"}
    assert all_aliases(doc(parameters=[param("p2", "width")])) == {"p2": "p:width"}


@settings(max_examples=30, deadline=None)
@given(
    labels=st.lists(st.sampled_from(["a", "b", "c", "beef", "x y"]), min_size=1, max_size=8),
    added=st.lists(st.sampled_from(["a", "b", "c", "beef", "x y"]), min_size=1, max_size=8),
)
def test_adding_duplicate_labels_never_changes_an_existing_alias(
    labels: list[str], added: list[str]
) -> None:
    first = doc(parameters=[param(f"p{i}", label) for i, label in enumerate(labels)])
    more = [param(f"q{i}", label) for i, label in enumerate(added)]
    before = all_aliases(first)
    after = all_aliases(extend(first, parameters=more))
    assert {i: after[i] for i in before} == before
    assert len(set(after.values())) == len(after)


# -- resolution ----------------------------------------------------------------------------


def test_resolve_by_alias_and_by_full_id() -> None:
    document = make_document()
    table = AliasTable.build(REV, document)
    body = document.bodies[0]
    assert table.resolve("b:plate_1") == body.id
    assert table.resolve(body.id) == body.id
    unlabelled = next(n for n in document.nodes if n.label is None)
    assert table.resolve(f"n:{short(unlabelled.id)}") == unlabelled.id
    assert table.kind_of(body.id) == "bodies"
    assert "b:plate_1" in table and body.id in table and "b:nope" not in table


@pytest.mark.parametrize("wanted", ["b:nope", "p:WIDTH_1", "width_1", "22c4", "", "n:"])
def test_unknown_alias_names_the_alias_and_the_rev(wanted: str) -> None:
    table = AliasTable.build(REV, make_document())
    with pytest.raises(AiraError) as caught:
        table.resolve(wanted)
    assert caught.value.code == ALIAS_UNKNOWN
    assert repr(wanted) in str(caught.value)
    assert REV in str(caught.value)


def test_resolution_only_looks_up_the_table_of_its_revision() -> None:
    old = make_document(bodies=2, parameters=2, assertions=0)
    new = grow(old, 1)
    old_table, new_table = AliasTable.build(REV, old), AliasTable.build(HEAD, new)
    new_body = new.bodies[-1]
    assert new_table.resolve(f"b:{new_body.label}") == new_body.id
    with pytest.raises(AiraError, match=ALIAS_UNKNOWN):
        old_table.resolve(f"b:{new_body.label}")
    # A prefix of a short form is not the alias: nothing is matched by shape.
    unlabelled = next(n for n in new.nodes if n.label is None)
    with pytest.raises(AiraError, match=ALIAS_UNKNOWN):
        new_table.resolve(f"n:{short(unlabelled.id, 3)}")
    with pytest.raises(AiraError, match=ALIAS_UNKNOWN):
        new_table.resolve(["b:plate_1"])  # type: ignore[arg-type]


def test_alias_of_an_unknown_id() -> None:
    table = AliasTable.build(REV, make_document(bodies=1, parameters=1, assertions=1))
    with pytest.raises(AiraError) as caught:
        table.alias_of("nod.missing")
    assert caught.value.code == ALIAS_UNKNOWN
    assert "nod.missing" in str(caught.value) and REV in str(caught.value)


# -- pages of the table --------------------------------------------------------------------


def test_pages_list_parameters_and_bodies_first_and_cover_the_table() -> None:
    document = make_document()
    table = AliasTable.build(REV, document)
    first = table.page(limit=50)
    assert first.total == 120 and first.next_offset == 50
    assert list(first.aliases)[:45] == [f"p:{p.label}" for p in document.parameters] + [
        f"b:{b.label}" for b in document.bodies
    ]
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = table.page(limit=17, offset=offset)
        seen += page.aliases
        offset = page.next_offset
    assert seen == [alias for alias, _ in table.entries()]
    assert len(set(seen)) == len(table)
    bodies = table.page("bodies", limit=100)
    assert bodies.total == 15 and bodies.next_offset is None
    assert all(a.startswith("b:") for a in bodies.aliases)
    assert table.page(["bodies", "parameters"], limit=1).aliases == {
        "b:plate_1": document.bodies[0].id
    }
    with pytest.raises(ValueError):
        table.page("widgets")
    assert table.page(limit=5).to_wire()["nextOffset"] == 5
