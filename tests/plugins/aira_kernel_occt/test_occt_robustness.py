"""The OCCT geometry under adversarial input: work bounded by the declared sizes, wrong
geometry refused rather than returned, the operation's own code for its own failures, and
one bad node never costing the rest of the document."""

from __future__ import annotations

import io
import math
import re
import zipfile
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from occt_docs import assertion, body, codes, doc, evaluate, node, v

pytest.importorskip("cadquery")

from aira_kernel_occt import geometry
from aira_kernel_occt.operations import MAX_COPIES, MAX_HOLES

BOX = "exact.box@1.0.0"
UNION = "exact.union@1.0.0"
FILLET = "exact.fillet@1.0.0"
SHELL = "exact.shell@1.0.0"
HOLE = "exact.hole@1.0.0"
LINEAR = "exact.linearPattern@1.0.0"
RECT = "sketch.rectangle@1.0.0"
POLYLINE = "sketch.polyline@1.0.0"


def box(nid: str = "box", length: float = 40, width: float = 30, height: float = 10) -> dict:
    return node(nid, BOX, length=v(length), width=v(width), height=v(height))


# -- work is bounded by the declared sizes ------------------------------------------------


@pytest.mark.parametrize("count", [MAX_COPIES + 1, 10**6, 1e300])
def test_a_pattern_beyond_its_maximum_count_is_refused_at_once(count: float) -> None:
    document = {
        "nodes": [
            box(),
            node(
                "row",
                LINEAR,
                target={"node": "box"},
                count=v(count),
                spacing=v(50),
                direction=v("X"),
            ),
        ],
        "bodies": [{"id": "b", "label": "b", "tip": "row"}],
    }
    # refused by the declared maximum: before, 1e6 copies ran into the worker's timeout
    assert codes(evaluate(document)) == [("KERNEL_INPUT_INVALID", "row")]


def test_too_many_hole_points_and_polyline_corners_are_refused() -> None:
    drilled = doc(
        [
            box(),
            node(
                "drill",
                HOLE,
                target={"node": "box"},
                face={"body": "b", "select": ">Z", "entity": "Face"},
                points=v([[0, 0]] * (MAX_HOLES + 1)),
                diameter=v(1),
            ),
        ],
        {"b": "drill"},
    )
    assert codes(evaluate(drilled)) == [("KERNEL_INPUT_INVALID", "drill")]
    ring = [[10 * math.cos(t / 100), 10 * math.sin(t / 100)] for t in range(600)]
    outline = doc([node("p", POLYLINE, plane=v("XY"), points=v([*ring, ring[0]]))], {})
    assert codes(evaluate(outline)) == [("KERNEL_INPUT_INVALID", "p")]


# -- wrong geometry is refused ------------------------------------------------------------


@pytest.mark.parametrize("thickness", [10, 12, 14])
def test_a_shell_that_leaves_no_cavity_is_refused(thickness: float) -> None:
    # OpenCASCADE handed the box back unchanged for walls as thick as the box
    document = doc(
        [
            box(),
            node(
                "hollow",
                SHELL,
                target={"node": "box"},
                faces={"body": "b", "select": ">Z", "entity": "Face"},
                thickness=v(thickness),
            ),
        ],
        {"b": "hollow"},
    )
    assert codes(evaluate(document)) == [("SHELL_FAILED", "hollow")]


def test_a_concave_fillet_is_no_hole() -> None:
    # an L of two bars, its inner corner rounded: one concave quarter cylinder, no bore
    document = doc(
        [
            box("bar", 40, 10, 10),
            box("leg", 10, 40, 10),
            node("ell", UNION, target={"node": "bar"}, tool={"node": "leg"}),
            node(
                "round",
                FILLET,
                target={"node": "ell"},
                edges={"body": "b", "select": "|Z", "entity": "Edge"},
                radius=v(3),
            ),
        ],
        {"b": "round"},
    )
    body(evaluate(document))
    checked = assertion("holePattern", "b", {"count": v(0), "diameter": v(6), "axis": v("Z")})
    out = geometry.validate(document, checked, {})
    assert out["diagnostics"] == [] and out["passed"] is True


# -- the operation's own code -------------------------------------------------------------


@pytest.mark.parametrize(("select", "radius"), [(">Z or <Z or |Z", 5.0001), (">Z or <Z", 6)])
def test_a_fillet_that_breaks_the_solid_is_radius_too_large(select: str, radius: float) -> None:
    document = doc(
        [
            box(),
            node(
                "round",
                FILLET,
                target={"node": "box"},
                edges={"body": "b", "select": select, "entity": "Edge"},
                radius=v(radius),
            ),
        ],
        {"b": "round"},
    )
    assert codes(evaluate(document)) == [("FILLET_RADIUS_TOO_LARGE", "round")]


@pytest.mark.parametrize("size", [1e-12, 1e-7, 1e300])
def test_dimensions_outside_the_modelling_range_are_input_errors(size: float) -> None:
    out = evaluate(doc([box(length=size)], {"b": "box"}))
    assert codes(out) == [("KERNEL_INPUT_INVALID", "box")]
    assert "mm" in out["diagnostics"][0]["message"]


def test_a_cone_with_equal_radii_is_a_cylinder() -> None:
    cone = node("c", "exact.cone@1.0.0", radius1=v(5), radius2=v(5), height=v(10))
    assert body(evaluate(doc([cone], {"b": "c"})))["volume"] == pytest.approx(math.pi * 250)


def test_a_length_parameter_cannot_feed_a_count() -> None:
    document = doc(
        [
            box(),
            node(
                "row",
                LINEAR,
                target={"node": "box"},
                count={"param": "n"},
                spacing=v(50),
                direction=v("X"),
            ),
        ],
        {"b": "row"},
        parameters=[{"id": "n", "label": "n", "type": "Length", "unit": "cm", "value": 0.3}],
    )
    # the host's rule (param_fits): a Length is no count
    assert codes(evaluate(document)) == [("AMIR_TYPE_MISMATCH", "row")]


# -- one bad node costs only itself --------------------------------------------------------


@pytest.mark.parametrize(
    ("nid", "user"),
    [
        (
            "row",
            node(
                "row",
                LINEAR,
                target={"node": "box"},
                count=v(math.nan),
                spacing=v(50),
                direction=v("X"),
            ),
        ),
        (
            "row",
            node(
                "row",
                LINEAR,
                target={"node": "box"},
                count=v(math.inf),
                spacing=v(50),
                direction=v("X"),
            ),
        ),
        (
            "drill",
            node(
                "drill",
                HOLE,
                target={"node": "box"},
                face={"body": "b", "select": ">Z", "entity": "Face"},
                points=v([[math.nan, 0]]),
                diameter=v(3),
            ),
        ),
    ],
    ids=["nan-count", "inf-count", "nan-point"],
)
def test_a_non_finite_argument_fails_its_node_and_keeps_the_others(
    nid: str, user: dict[str, Any]
) -> None:
    # an unchecked document (the host's check refuses these before they reach a kernel)
    document = {
        "nodes": [box(), user],
        "bodies": [{"id": "b", "label": "b", "tip": nid}, {"id": "k", "label": "k", "tip": "box"}],
    }
    out = evaluate(document)
    assert codes(out) == [("KERNEL_INPUT_INVALID", nid)]
    assert out["bodies"]["k"]["valid"] is True


def test_broken_references_of_an_unchecked_document_are_reported() -> None:
    document = {
        "nodes": [box(), box("box", 20, 30, 10)],
        "bodies": [
            {"id": "b", "label": "b", "tip": "box"},
            {"id": "g", "label": "g", "tip": "gone"},
        ],
    }
    out = evaluate(document)
    assert ("KERNEL_INPUT_INVALID", "box") in codes(out)
    assert ("KERNEL_REFERENCE_UNRESOLVED", "g") in codes(out)
    assert out["resultHash"] is None


# -- profiles are no solids ------------------------------------------------------------------


def _profile_document(user: dict[str, Any] | None) -> dict[str, Any]:
    nodes = [box(), node("p", RECT, plane=v("XY"), width=v(10), height=v(5))]
    if user is not None:
        nodes.append(user)
    return {
        "nodes": nodes,
        "bodies": [{"id": "b", "label": "b", "tip": user["id"] if user else "p"}],
    }


@pytest.mark.parametrize(
    "user",
    [
        node("u", UNION, target={"node": "box"}, tool={"node": "p"}),
        node(
            "u",
            FILLET,
            target={"node": "p"},
            edges={"body": "b", "select": "|Z", "entity": "Edge"},
            radius=v(1),
        ),
        node("u", LINEAR, target={"node": "p"}, count=v(2), spacing=v(20), direction=v("X")),
    ],
    ids=["union-tool", "fillet-target", "pattern-target"],
)
def test_a_profile_where_a_solid_is_expected_is_an_input_error(user: dict[str, Any]) -> None:
    out = evaluate(_profile_document(user))
    assert codes(out) == [("KERNEL_INPUT_INVALID", "u")]
    assert "extrude or revolve" in out["diagnostics"][0]["message"]


@pytest.mark.parametrize("kind", ["step", "stl", "3mf"])
def test_a_profile_body_is_not_exported_as_a_solid(kind: str) -> None:
    out = geometry.export(_profile_document(None), kind, "b", {})
    assert out["data"] == b""
    assert [d["code"] for d in out["diagnostics"]] == ["KERNEL_EXPORT_FAILED"]


def test_3mf_object_ids_are_positive() -> None:
    out = geometry.export(doc([box()], {"b": "box"}), "3mf", "b", {})
    with zipfile.ZipFile(io.BytesIO(out["data"])) as package:
        text = package.read("3D/3dmodel.model").decode()
    ids = [int(i) for i in re.findall(r'\bid="(\d+)"', text)]
    refs = [int(i) for i in re.findall(r'\bobjectid="(\d+)"', text)]
    assert ids and min(ids) >= 1
    assert refs and set(refs) <= set(ids)


def _every_crossing_pair(segments: list[tuple[tuple, tuple]]) -> tuple[int, int] | None:
    """The reference: every pair of non-neighbouring segments, in order."""
    n = len(segments)
    for i in range(n):
        for j in range(i + 2, n):
            if (i, j) != (0, n - 1) and geometry._segment_gap(
                *segments[i], *segments[j]
            ) <= geometry.CLOSE_TOLERANCE:
                return (i, j)
    return None


# coordinates on a coarse grid too, so that touching, collinear and shared points occur
_COORD = st.one_of(st.integers(-3, 3).map(float), st.floats(-5, 5, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_COORD, _COORD), min_size=3, max_size=12))
def test_the_crossing_sweep_finds_what_comparing_every_pair_finds(corners: list) -> None:
    segments = [(corners[i], corners[(i + 1) % len(corners)]) for i in range(len(corners))]
    assert geometry._first_crossing(segments) == _every_crossing_pair(segments)


def test_a_polyline_at_its_size_limit_is_built() -> None:
    ring = [
        [10 * math.cos(t * 2 * math.pi / 499), 10 * math.sin(t * 2 * math.pi / 499)]
        for t in range(499)
    ]
    document = doc(
        [
            node("p", POLYLINE, plane=v("XY"), points=v([*ring, ring[0]])),
            node("e", "exact.extrude@1.0.0", profile={"node": "p"}, distance=v(5)),
        ],
        {"b": "e"},
    )
    assert body(evaluate(document))["volume"] == pytest.approx(
        5 * 0.5 * 499 * 100 * math.sin(2 * math.pi / 499), rel=1e-9
    )
