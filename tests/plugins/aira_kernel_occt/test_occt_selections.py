"""Selections beyond a CadQuery selector on real OpenCASCADE geometry (radius, length, area,
the faces an edge joins, the point it is nearest), the frame hole points are given in on
any planar face, counterbores on existing bores, and a validator step judging its body at
its position in a plan."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

from cli_runner import new_process
from occt_docs import body, codes, doc, evaluate, node, v

from aira_core.canonical import sha256_hex
from aira_kernel_occt import geometry
from aira_kernel_occt.operations import BY_CAPABILITY

BOX = "exact.box@1.0.0"
CYLINDER = "exact.cylinder@1.0.0"
WEDGE = "exact.wedge@1.0.0"
HOLE = "exact.hole@1.0.0"
FILLET = "exact.fillet@1.0.0"
CHAMFER = "exact.chamfer@1.0.0"
SELECT = "query.selectEntities@1.0.0"


def entities(document: dict[str, Any], **args: Any) -> dict[str, Any]:
    return geometry.query(document, SELECT, {"target": "b", **args}, {})


def plate(*more: dict[str, Any], tip: str = "plate") -> dict[str, Any]:
    """A centred 40 × 30 × 10 plate (z -5…5) and the nodes ``more`` built on it."""
    return doc([node("plate", BOX, length=v(40), width=v(30), height=v(10)), *more], {"b": tip})


def tube(*more: dict[str, Any], tip: str = "tube") -> dict[str, Any]:
    """A cylinder r 10, h 20 (z 0…20) with a 10 mm bore along its axis: two concentric
    circles at each end, the case a selector alone cannot tell apart."""
    return doc(
        [
            node("rod", CYLINDER, radius=v(10), height=v(20)),
            node(
                "tube",
                HOLE,
                target={"node": "rod"},
                face={"body": "b", "select": ">Z"},
                points=v([[0, 0]]),
                diameter=v(10),
            ),
            *more,
        ],
        {"b": tip},
    )


TUBE = math.pi * (10**2 - 5**2) * 20


def chamfered_rim(**selection: Any) -> dict[str, Any]:
    edges = {"body": "b", "entity": "Edge", **selection}
    return tube(
        node("cut", CHAMFER, target={"node": "tube"}, edges=edges, length=v(1)),
        tip="cut",
    )


# -- radius -------------------------------------------------------------------------------------


def test_radius_tells_two_concentric_circles_at_one_height_apart() -> None:
    assert entities(tube(), select=">Z", entity="Edge")["data"]["count"] == 2  # both rims
    # a 1 mm chamfer removes a triangle of c²/2 revolved at r ± c/3 (Pappus)
    inner = body(evaluate(chamfered_rim(select=">Z", radius=5)))
    assert inner["volume"] == pytest.approx(TUBE - 2 * math.pi * (5 + 1 / 3) * 0.5, rel=1e-6)
    outer = body(evaluate(chamfered_rim(select=">Z", radius={"min": 9})))
    assert outer["volume"] == pytest.approx(TUBE - 2 * math.pi * (10 - 1 / 3) * 0.5, rel=1e-6)


def test_radius_selects_bores_and_circles_and_names_the_radii_there_when_none_fits() -> None:
    assert entities(tube(), radius=5)["data"]["count"] == 1  # the bore's cylindrical face
    both = entities(tube(), entity="Edge", radius=5)["data"]
    assert both["count"] == 2 and {e["center"][2] for e in both["entities"]} == {0, 20}
    missing = entities(tube(), entity="Edge", select=">Z", radius=7)
    assert codes(missing) == [("SELECTION_EMPTY", None)]
    message = missing["diagnostics"][0]["message"]
    assert "'>Z'" in message and "radius 7" in message and "radii 5, 10 mm" in message


def test_a_sphere_s_face_has_a_radius() -> None:
    ball = doc([node("s", "exact.sphere@1.0.0", radius=v(6))], {"b": "s"})
    (face,) = entities(ball, radius=6)["data"]["entities"]
    assert face["type"] == "SPHERE" and face["radius"] == pytest.approx(6)


# -- length and area ----------------------------------------------------------------------------


def test_length_and_area_choose_edges_and_faces_by_size() -> None:
    assert entities(plate(), entity="Edge", length=40)["data"]["count"] == 4
    assert entities(plate(), entity="Edge", length={"min": 30, "max": 40})["data"]["count"] == 8
    assert entities(plate(), area=1200)["data"]["count"] == 2
    assert entities(plate(), area={"max": 300})["data"]["count"] == 2  # the 30 × 10 ends
    none = entities(plate(), entity="Edge", length=7)
    assert "lengths 10, 30, 40 mm" in none["diagnostics"][0]["message"]


# -- between ------------------------------------------------------------------------------------


def test_between_chooses_the_edges_two_face_selections_share() -> None:
    top_outline = entities(plate(), entity="Edge", between=[">Z", "#Z"])["data"]
    assert top_outline["count"] == 4
    assert all(e["center"][2] == pytest.approx(5) for e in top_outline["entities"])
    (rim,) = entities(tube(), entity="Edge", between=[">Z", "%CYLINDER"], radius=5)["data"][
        "entities"
    ]
    assert rim["center"] == pytest.approx([0, 0, 20]) and rim["radius"] == pytest.approx(5)
    corners = entities(plate(), entity="Vertex", between=[">Z", ">X"])["data"]
    assert corners["count"] == 2
    assert all(c["center"][0] == 20 and c["center"][2] == 5 for c in corners["entities"])


def test_between_a_face_and_itself_is_nothing() -> None:
    result = entities(plate(), entity="Edge", between=[">Z", ">Z"])
    assert codes(result) == [("SELECTION_EMPTY", None)]
    assert "share no edge" in result["diagnostics"][0]["message"]
    lonely = entities(plate(), entity="Edge", between=[">Z", "%CYLINDER"])
    assert "'%CYLINDER' selects no face" in lonely["diagnostics"][0]["message"]


def test_a_fillet_on_the_edges_between_top_and_sides_is_a_fillet_on_the_top_edges() -> None:
    def rounded(**edges: Any) -> float:
        fillet = node(
            "r", FILLET, target={"node": "plate"}, edges={"body": "b", **edges}, radius=v(1)
        )
        return body(evaluate(plate(fillet, tip="r")))["volume"]

    between = rounded(entity="Edge", between=[">Z", "#Z"])
    assert between == pytest.approx(rounded(entity="Edge", select=">Z"), rel=1e-12)
    assert between < 12000


# -- nearest ------------------------------------------------------------------------------------


def test_nearest_picks_one_edge_and_keeps_ties() -> None:
    fillet = node(
        "r",
        FILLET,
        target={"node": "plate"},
        edges={"body": "b", "entity": "Edge", "select": "|Z", "nearest": [20, 15, 0]},
        radius=v(2),
    )
    out = body(evaluate(plate(fillet, tip="r")))
    assert out["volume"] == pytest.approx(12000 - (1 - math.pi / 4) * 4 * 10, rel=1e-6)
    ties = entities(plate(), entity="Edge", select="|Z", nearest=[0, 0, 0])["data"]
    assert ties["count"] == 4


# -- bad filters, keys --------------------------------------------------------------------------


def raw_fillet(edges: dict[str, Any]) -> dict[str, Any]:
    """A document the host has not checked (what a kernel may still be handed)."""
    return {
        "format": "aira.amir/1",
        "parameters": [],
        "nodes": [
            node("plate", BOX, length=v(40), width=v(30), height=v(10)),
            node("r", FILLET, target={"node": "plate"}, edges=edges, radius=v(1)),
        ],
        "bodies": [{"id": "b", "label": "b", "tip": "r"}],
    }


@pytest.mark.parametrize(
    ("edges", "says"),
    [
        ({"radius": float("nan")}, "radius is a size in mm"),
        ({"radius": -2}, "greater than 0"),
        ({"radius": True}, "radius is a size in mm"),
        ({"length": {"min": 5, "max": 1}}, "min 5 is above max 1"),
        ({"nearest": [1, 2]}, "nearest takes a point [x, y, z]"),
        ({"between": [">Z"]}, "between takes two face selectors"),
        ({"entity": "Face", "between": [">Z", "<Z"]}, "not faces"),
        ({"entity": "Face", "length": 3}, "length does not measure a face"),
        ({"entity": "Edge"}, "needs select"),
        ({"select": "|Z", "colour": "red"}, "no field 'colour'"),
    ],
)
def test_a_bad_filter_in_an_unchecked_document_is_selection_invalid(
    edges: dict[str, Any], says: str
) -> None:
    result = evaluate(raw_fillet({"body": "b", "entity": "Edge", **edges}))
    assert codes(result) == [("SELECTION_INVALID", "r")]
    assert says in result["diagnostics"][0]["message"]
    assert "SELECTION_INVALID" in BY_CAPABILITY["cap:exact.fillet@1"].diagnostics
    query = entities(plate(), **{"entity": "Edge", **edges})
    assert [d["code"] for d in query["diagnostics"]] == ["SELECTION_INVALID"]


def test_the_filters_are_part_of_the_node_s_cache_key_and_a_selector_alone_keeps_its_key() -> None:
    cache: dict[str, Any] = {}
    inner = body(evaluate(chamfered_rim(select=">Z", radius=5), cache))["volume"]
    outer = body(evaluate(chamfered_rim(select=">Z", radius=10), cache))["volume"]
    assert inner != pytest.approx(outer)  # the second did not come from the first's entry

    plain = plate(
        node(
            "r",
            FILLET,
            target={"node": "plate"},
            edges={"body": "b", "select": "|Z", "entity": "Edge"},
            radius=v(1),
        ),
        tip="r",
    )
    ev = geometry.Evaluator(plain, {})
    ev.run()
    # the key every selection had before filters existed: results and their hashes stand
    before = sha256_hex(
        {
            "op": FILLET,
            "inputs": {
                "target": {"node": ev.keys["plate"]},
                "edges": {"select": [ev.keys["plate"], "|Z", "Edge"]},
                "radius": {"value": 1.0},
            },
        }
    )
    assert ev.keys["r"] == before


# -- the frame of a face ------------------------------------------------------------------------

FRAMES = {
    ">Z": ([0, 0, 5], [1, 0, 0], [0, 1, 0], [0, 0, 1]),
    "<Z": ([0, 0, -5], [1, 0, 0], [0, -1, 0], [0, 0, -1]),
    ">X": ([20, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]),
    "<X": ([-20, 0, 0], [0, -1, 0], [0, 0, 1], [-1, 0, 0]),
    ">Y": ([0, 15, 0], [-1, 0, 0], [0, 0, 1], [0, 1, 0]),
    "<Y": ([0, -15, 0], [1, 0, 0], [0, 0, 1], [0, -1, 0]),
}
"""The frames the hole's face input documents, for the centred plate."""


@pytest.mark.parametrize("face", list(FRAMES))
def test_select_entities_returns_the_frame_holes_are_drilled_in(face: str) -> None:
    (found,) = entities(plate(), select=face)["data"]["entities"]
    origin, x, y, normal = FRAMES[face]
    assert found["frame"] == {"origin": origin, "xDir": x, "yDir": y, "normal": normal}
    # a blind hole at (6, 2) in that frame: its bore's centre is origin + 6x + 2y, 1.5 deep
    drilled = plate(
        node(
            "d",
            HOLE,
            target={"node": "plate"},
            face={"body": "b", "select": face},
            points=v([[6, 2]]),
            diameter=v(2),
            depth=v(3),
        ),
        tip="d",
    )
    (bore,) = entities(drilled, select="%CYLINDER")["data"]["entities"]
    frame = zip(origin, x, y, normal, strict=True)
    expected = [o + 6 * a + 2 * b - 1.5 * n for o, a, b, n in frame]
    assert bore["center"] == pytest.approx(expected, abs=1e-6)
    xmin, ymin, xmax, ymax = found["bounds"]
    assert xmin < 6 < xmax and ymin < 2 < ymax


def test_a_slanted_face_s_frame_follows_the_documented_rule() -> None:
    wedge = doc([node("w", WEDGE, length=v(30), width=v(20), height=v(10))], {"b": "w"})
    slanted = [
        f
        for f in entities(wedge, select="%PLANE")["data"]["entities"]
        if abs(f["normal"][0]) > 1e-6 and abs(f["normal"][2]) > 1e-6
    ]
    (face,) = slanted
    frame = face["frame"]
    n = frame["normal"]
    cross = [-n[1], n[0], 0.0]  # global Z × normal
    length = math.hypot(*cross)
    assert frame["xDir"] == pytest.approx([c / length for c in cross], abs=1e-9)
    y = frame["yDir"]
    expected_y = [
        n[1] * frame["xDir"][2] - n[2] * frame["xDir"][1],
        n[2] * frame["xDir"][0] - n[0] * frame["xDir"][2],
        n[0] * frame["xDir"][1] - n[1] * frame["xDir"][0],
    ]
    assert y == pytest.approx(expected_y, abs=1e-9)
    # the origin is the global origin projected onto the face's plane
    o = frame["origin"]
    along = sum(a * b for a, b in zip(o, n, strict=True))
    assert along == pytest.approx(sum(a * b for a, b in zip(face["center"], n, strict=True)))
    assert [o[i] - n[i] * along for i in range(3)] == pytest.approx([0, 0, 0], abs=1e-9)


def test_a_hole_off_a_bottom_face_says_which_frame_and_where_in_the_world() -> None:
    # y on '<Z' runs along -Y: [0, 23] is world (0, -23, -5), 8 mm past the plate's edge
    off = evaluate(
        plate(
            node(
                "d",
                HOLE,
                target={"node": "plate"},
                face={"body": "b", "select": "<Z"},
                points=v([[0, 23]]),
                diameter=v(2),
            ),
            tip="d",
        )
    )
    assert codes(off) == [("HOLE_OFF_FACE", "d")]
    message = off["diagnostics"][0]["message"]
    for part in (
        "world point [0, -23, -5]",
        "8 mm off",
        "origin [0, 0, -5]",
        "x along [1, 0, 0]",
        "y along [0, -1, 0]",
        "normal [0, 0, -1]",
        "x -20…20, y -15…15",
    ):
        assert part in message, message


# -- counterbores on existing bores -------------------------------------------------------------


def bored(*more: dict[str, Any], tip: str) -> dict[str, Any]:
    """The plate with two 5 mm through bores at (±10, 0)."""
    return plate(
        node(
            "bores",
            HOLE,
            target={"node": "plate"},
            face={"body": "b", "select": ">Z"},
            points=v([[-10, 0], [10, 0]]),
            diameter=v(5),
        ),
        *more,
        tip=tip,
    )


BORED = 12000 - 2 * math.pi * 2.5**2 * 10
SINK = 2 * math.pi * (4.5**2 - 2.5**2) * 3
"""What two 9 mm counterbores 3 deep on the two bores remove."""


@pytest.mark.parametrize(
    "hole",
    [
        {"diameter": v(5), "counterbore": v({"diameter": 9, "depth": 3})},
        {"diameter": v(9), "depth": v(3)},
    ],
    ids=["counterbore", "blind-hole"],
)
def test_existing_bores_are_counterbored_through_at(hole: dict[str, Any]) -> None:
    counterbored = node(
        "cb",
        HOLE,
        target={"node": "bores"},
        face={"body": "b", "select": ">Z"},
        at={"body": "b", "radius": 2.5},  # the bores' cylindrical faces: one centre each
        **hole,
    )
    document = bored(counterbored, tip="cb")
    out = body(evaluate(document))
    assert out["volume"] == pytest.approx(BORED - SINK, rel=1e-9)
    assert entities(document, radius=4.5)["data"]["count"] == 2
    # the same with the bores' rims (two circles per bore, one axis) and explicit points
    rims = dict(counterbored, inputs={**counterbored["inputs"]})
    rims["inputs"]["at"] = {"body": "b", "entity": "Edge", "radius": 2.5}
    assert body(evaluate(bored(rims, tip="cb")))["volume"] == pytest.approx(BORED - SINK, rel=1e-9)
    explicit = dict(counterbored, inputs={**counterbored["inputs"], "points": v([[-10, 0]])})
    del explicit["inputs"]["at"]
    one = body(evaluate(bored(explicit, tip="cb")))["volume"]
    assert one == pytest.approx(BORED - SINK / 2, rel=1e-9)  # a centre inside a bore is on the face


@pytest.mark.parametrize(
    ("at", "code"),
    [
        ({"body": "b", "select": ">Z"}, "KERNEL_INPUT_INVALID"),  # a plane has no axis
        ({"body": "b", "radius": 9}, "SELECTION_EMPTY"),
    ],
)
def test_at_without_an_axis_or_without_a_match_is_refused(at: dict[str, Any], code: str) -> None:
    counterbore = node(
        "cb",
        HOLE,
        target={"node": "bores"},
        face={"body": "b", "select": ">Z"},
        at=at,
        diameter=v(9),
        depth=v(3),
    )
    assert codes(evaluate(bored(counterbore, tip="cb"))) == [(code, "cb")]


def test_at_along_another_direction_and_a_hole_without_centres_are_refused() -> None:
    sideways = plate(
        node(
            "side",
            HOLE,
            target={"node": "plate"},
            face={"body": "b", "select": ">X"},
            points=v([[0, 0]]),
            diameter=v(4),
            depth=v(5),
        ),
        node(
            "cb",
            HOLE,
            target={"node": "side"},
            face={"body": "b", "select": ">Z"},
            at={"body": "b", "radius": 2},
            diameter=v(3),
            depth=v(1),
        ),
        tip="cb",
    )
    refused = evaluate(sideways)
    assert codes(refused) == [("KERNEL_INPUT_INVALID", "cb")]
    assert "not along the face's normal" in refused["diagnostics"][0]["message"]
    nothing = plate(
        node(
            "d", HOLE, target={"node": "plate"}, face={"body": "b", "select": ">Z"}, diameter=v(3)
        ),
        tip="d",
    )
    assert codes(evaluate(nothing)) == [("KERNEL_INPUT_INVALID", "d")]


# -- a validator step at its position, through `aira plan apply` --------------------------------


def aira(home: Path, *args: str) -> Any:
    return new_process(*args, home=home, AIRA_PLUGINS="occt", timeout=600)


def test_a_validator_step_judges_the_box_before_the_cut(aira_home: Path, tmp_path: Path) -> None:
    """box → volumeRange → cut: the check judges the 12 000 mm³ box, not the cut plate. A
    range that holds for the box only passes (with the warning that it fails on the
    result); a range that holds for the cut plate only is refused at its step."""
    base = json.loads(aira(aira_home, "model", "init", "--json").stdout)["rev"]

    def apply(vmin: float, vmax: float, name: str) -> dict[str, Any]:
        steps = [
            {
                "id": "plate",
                "capability": "cap:exact.box@1",
                "label": "plate",
                "args": {"length": 40, "width": 30, "height": 10},
            },
            {
                "id": "pin",
                "capability": "cap:exact.cylinder@1",
                "label": "pin",
                "args": {"radius": 5, "height": 30},
            },
            {
                "id": "check",
                "capability": "cap:validate.volumeRange@1",
                "args": {"target": "b:plate", "min": vmin, "max": vmax},
            },
            {
                "id": "cut",
                "capability": "cap:exact.cut@1",
                "args": {"target": "b:plate", "tool": "b:pin"},
            },
        ]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"baseRevision": base, "steps": steps}))
        return json.loads(aira(aira_home, "plan", "apply", str(path), "--json").stdout)

    cut = 12000 - math.pi * 5**2 * 5  # the pin (z 0…30) takes a 5 mm deep disc of the plate
    assert cut < 11_900
    # refused first: nothing is committed, so both plans are bound to the same base
    cut_only = apply(cut - 1, cut + 1, "cut")
    assert cut_only["status"] == "failed" and cut_only["data"]["stage"] == "validate"
    assert cut_only["data"]["failedStep"] == "check"
    (refused,) = cut_only["diagnostics"]
    assert (refused["code"], refused["subject"]) == ("VOLUME_OUT_OF_RANGE", "check")
    assert "12000" in refused["message"]

    box_only = apply(11_990, 12_010, "box")
    assert box_only["status"] == "success", box_only["diagnostics"]
    # the cut plate is the largest body (the pin, 2356 mm³, may be consumed by the cut)
    largest = max(r["volume"] for r in box_only["data"]["bodies"].values())
    assert largest == pytest.approx(cut, rel=1e-6)
    assert all(box_only["data"]["assertions"].values())
    (warning,) = box_only["diagnostics"]
    assert (warning["code"], warning["severity"], warning["subject"]) == (
        "ASSERTION_FAILS_ON_RESULT",
        "warning",
        "check",
    )
