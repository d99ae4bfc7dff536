"""More of the OCCT kernel's capabilities on real CadQuery geometry: cone, torus and wedge
against closed-form values, rotate, mirror and intersect, the hole feature, the topology
query and the bounding-box validator, each with its diagnostics provoked on purpose."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("cadquery")

from occt_docs import assertion, body, codes, doc, evaluate, node, v

from aira_kernel_occt import geometry
from aira_kernel_occt.operations import BY_CAPABILITY

BOX = "exact.box@1.0.0"
CYLINDER = "exact.cylinder@1.0.0"
TRANSLATE = "exact.translate@1.0.0"
CONE = "exact.cone@1.0.0"
TORUS = "exact.torus@1.0.0"
WEDGE = "exact.wedge@1.0.0"
ROTATE = "exact.rotate@1.0.0"
MIRROR = "exact.mirror@1.0.0"
INTERSECT = "exact.intersect@1.0.0"

REL = 1e-9


# -- cone, torus, wedge -------------------------------------------------------------------------


def frustum_area(r1: float, r2: float, h: float) -> float:
    return math.pi * (r1 * r1 + r2 * r2) + math.pi * (r1 + r2) * math.hypot(r1 - r2, h)


PRIMITIVES = [
    pytest.param(
        node("n", CONE, radius1=v(10), radius2=v(0), height=v(20)),
        math.pi * 100 * 20 / 3,
        frustum_area(10, 0, 20),
        (-10, -10, 0, 10, 10, 20),
        id="cone-pointed",
    ),
    pytest.param(
        node("n", CONE, radius1=v(10), radius2=v(5), height=v(15)),
        math.pi * 15 / 3 * (100 + 50 + 25),
        frustum_area(10, 5, 15),
        (-10, -10, 0, 10, 10, 15),
        id="cone-frustum",
    ),
    pytest.param(
        node("n", TORUS, majorRadius=v(20), minorRadius=v(3)),
        2 * math.pi**2 * 20 * 9,
        4 * math.pi**2 * 20 * 3,
        (-23, -23, -3, 23, 23, 3),
        id="torus",
    ),
    pytest.param(
        node("n", WEDGE, length=v(40), width=v(20), height=v(10)),
        40 * 20 * 10 / 2,
        40 * 10 + 40 * 20 + 10 * 20 + math.hypot(40, 10) * 20,
        (0, 0, 0, 40, 20, 10),
        id="wedge",
    ),
]


@pytest.mark.parametrize(("primitive", "volume", "area", "box"), PRIMITIVES)
def test_more_primitives_match_closed_form_values(
    primitive: dict[str, Any], volume: float, area: float, box: tuple[float, ...]
) -> None:
    out = body(evaluate(doc([primitive], {"b": "n"})))
    assert out["volume"] == pytest.approx(volume, rel=REL)
    assert out["area"] == pytest.approx(area, rel=REL)
    assert out["boundingBox"] == pytest.approx(box, abs=1e-6)


def test_a_torus_tube_wider_than_its_ring_is_parameter_out_of_range() -> None:
    result = evaluate(doc([node("n", TORUS, majorRadius=v(5), minorRadius=v(5))], {"b": "n"}))
    assert codes(result) == [("PARAMETER_OUT_OF_RANGE", "n")]
    assert "PARAMETER_OUT_OF_RANGE" in BY_CAPABILITY["cap:exact.torus@1"].diagnostics


def test_a_cone_needs_a_bottom_radius() -> None:
    result = evaluate(doc([node("n", CONE, radius1=v(0), radius2=v(5), height=v(5))], {"b": "n"}))
    assert codes(result) == [("KERNEL_INPUT_INVALID", "n")]


# -- rotate, mirror, intersect ------------------------------------------------------------------


def plate_doc(*extra: dict[str, Any], tip: str) -> dict[str, Any]:
    """A 40 × 30 × 10 box with a corner on the origin (x 0…40, y 0…30, z 0…10)."""
    plate = node("plate", BOX, length=v(40), width=v(30), height=v(10), centered=v(False))
    return doc([plate, *extra], {"b": tip})


@pytest.mark.parametrize(
    ("axis", "angle", "box"),
    [
        ("Z", v(90), (-30, 0, 0, 0, 40, 10)),
        ("X", v(90), (0, -10, 0, 40, 0, 30)),
        ("Y", v(math.pi / 2, "rad"), (0, 0, -40, 10, 30, 0)),
        ("Z", v(180), (-40, -30, 0, 0, 0, 10)),
    ],
)
def test_rotate_turns_a_body_about_an_axis_through_the_origin(
    axis: str, angle: dict[str, Any], box: tuple[float, ...]
) -> None:
    out = body(
        evaluate(
            plate_doc(
                node("turn", ROTATE, target={"node": "plate"}, angle=angle, axis=v(axis)),
                tip="turn",
            )
        )
    )
    assert out["volume"] == pytest.approx(12000, rel=REL)
    assert out["boundingBox"] == pytest.approx(box, abs=1e-7)


def test_rotate_refuses_an_unknown_axis() -> None:
    result = evaluate(
        plate_doc(
            node("turn", ROTATE, target={"node": "plate"}, angle=v(10), axis=v("W")), tip="turn"
        )
    )
    assert codes(result) == [("KERNEL_INPUT_INVALID", "turn")]
    assert "X, Y, Z" in result["diagnostics"][0]["message"]


@pytest.mark.parametrize(
    ("plane", "box"),
    [
        ("XY", (0, 0, -10, 40, 30, 0)),
        ("YZ", (-40, 0, 0, 0, 30, 10)),
        ("XZ", (0, -30, 0, 40, 0, 10)),
    ],
)
def test_mirror_reflects_a_body_in_a_plane_through_the_origin(
    plane: str, box: tuple[float, ...]
) -> None:
    out = body(
        evaluate(
            plate_doc(node("flip", MIRROR, target={"node": "plate"}, plane=v(plane)), tip="flip")
        )
    )
    assert out["volume"] == pytest.approx(12000, rel=REL)
    assert out["boundingBox"] == pytest.approx(box, abs=1e-7)


def test_intersect_keeps_the_common_volume() -> None:
    pin = [
        node("pin0", CYLINDER, radius=v(3), height=v(30)),
        node("pin", TRANSLATE, target={"node": "pin0"}, x=v(20), y=v(15), z=v(-10)),
    ]
    out = body(
        evaluate(
            plate_doc(
                *pin,
                node("common", INTERSECT, target={"node": "plate"}, tool={"node": "pin"}),
                tip="common",
            )
        )
    )
    assert out["volume"] == pytest.approx(math.pi * 9 * 10, rel=REL)
    assert out["boundingBox"] == pytest.approx((17, 12, 0, 23, 18, 10), abs=1e-7)


def test_intersecting_bodies_that_do_not_overlap_is_boolean_empty_result() -> None:
    far = [
        node("ball0", BOX, length=v(5), width=v(5), height=v(5)),
        node("ball", TRANSLATE, target={"node": "ball0"}, z=v(100)),
    ]
    result = evaluate(
        plate_doc(
            *far,
            node("common", INTERSECT, target={"node": "plate"}, tool={"node": "ball"}),
            tip="common",
        )
    )
    assert codes(result) == [("BOOLEAN_EMPTY_RESULT", "common")]
    assert "do not overlap" in result["diagnostics"][0]["message"]


# -- holes --------------------------------------------------------------------------------------

HOLE = "exact.hole@1.0.0"
CORNERS = [[-15, -10], [15, -10], [-15, 10], [15, 10]]


def drilled(select: str = ">Z", points: Any = CORNERS, **inputs: Any) -> dict[str, Any]:
    """A centred 40 × 30 × 10 plate (z -5…5) with holes drilled from the face ``select``."""
    return doc(
        [
            node("plate", BOX, length=v(40), width=v(30), height=v(10)),
            node(
                "drill",
                HOLE,
                target={"node": "plate"},
                face={"body": "b", "select": select, "entity": "Face"},
                points=v(points),
                **inputs,
            ),
        ],
        {"b": "drill"},
    )


def test_four_through_holes_remove_four_cylinders_from_the_plate() -> None:
    out = body(evaluate(drilled(diameter=v(5))))
    assert out["volume"] == pytest.approx(40 * 30 * 10 - 4 * math.pi * 2.5**2 * 10, rel=1e-6)
    assert out["boundingBox"] == pytest.approx((-20, -15, -5, 20, 15, 5), abs=1e-7)


def test_a_blind_counterbored_hole_removes_its_two_cylinders() -> None:
    out = body(
        evaluate(
            drilled(
                points=[[0, 0]],
                diameter=v(6),
                depth=v(8),
                counterbore=v({"diameter": 10, "depth": 3}),
            )
        )
    )
    removed = math.pi * 5**2 * 3 + math.pi * 3**2 * 5
    assert out["volume"] == pytest.approx(12000 - removed, rel=1e-6)


def test_holes_from_a_side_face_use_that_face_s_workplane() -> None:
    # on the +X face the workplane's x is global Y and its y is global Z
    out = body(evaluate(drilled(select=">X", points=[[0, 0]], diameter=v(4), depth=v(10))))
    assert out["volume"] == pytest.approx(12000 - math.pi * 4 * 10, rel=1e-6)


@pytest.mark.parametrize(
    ("select", "points", "inputs", "code"),
    [
        (">Z", [[30, 0]], {}, "HOLE_OFF_FACE"),
        ("|Z", CORNERS, {}, "SELECTION_CARDINALITY_MISMATCH"),
        (">Z", [[0, 0, 0]], {}, "KERNEL_INPUT_INVALID"),
        (">Z", [[0, 0]], {"counterbore": v({"diameter": 4, "depth": 2})}, "PARAMETER_OUT_OF_RANGE"),
    ],
)
def test_hole_diagnostics(select: str, points: Any, inputs: dict[str, Any], code: str) -> None:
    result = evaluate(drilled(select=select, points=points, diameter=v(5), **inputs))
    assert codes(result) == [(code, "drill")]
    assert code in BY_CAPABILITY["cap:exact.hole@1"].diagnostics


def test_a_hole_from_a_curved_face_is_hole_face_not_planar() -> None:
    result = evaluate(
        doc(
            [
                node("rod", CYLINDER, radius=v(10), height=v(20)),
                node(
                    "drill",
                    HOLE,
                    target={"node": "rod"},
                    face={"body": "b", "select": "%CYLINDER", "entity": "Face"},
                    points=v([[0, 0]]),
                    diameter=v(2),
                ),
            ],
            {"b": "drill"},
        )
    )
    assert codes(result) == [("HOLE_FACE_NOT_PLANAR", "drill")]


# -- topology query and bounding-box validator --------------------------------------------------


def test_topology_counts_the_distinct_entities_of_a_body() -> None:
    cache: dict[str, Any] = {}
    box = geometry.query(plate_doc(tip="plate"), "query.topology@1.0.0", {"target": "b"}, cache)
    assert box == {
        "data": {"solids": 1, "shells": 1, "faces": 6, "edges": 12, "vertices": 8},
        "diagnostics": [],
    }
    # each through hole adds a cylindrical face, two circular edges (plus a seam) and 2 vertices
    holes = geometry.query(drilled(diameter=v(5)), "query.topology@1.0.0", {"target": "b"}, cache)
    assert holes["data"] == {"solids": 1, "shells": 1, "faces": 10, "edges": 24, "vertices": 16}
    missing = geometry.query(drilled(diameter=v(5)), "query.topology@1.0.0", {"target": "x"}, {})
    assert [d["code"] for d in missing["diagnostics"]] == ["QUERY_TARGET_UNKNOWN"]


def fits(document: dict[str, Any], **limits: Any) -> dict[str, Any]:
    return geometry.validate(document, assertion("boundingBox", "b", limits), {})


def test_the_bounding_box_validator_passes_a_body_that_fits_exactly() -> None:
    ok = fits(plate_doc(tip="plate"), maxX=v(40), maxY=v(3, "cm"), maxZ=v(10))
    assert ok["passed"] is True and ok["diagnostics"] == []
    assert ok["measured"]["size"] == pytest.approx([40, 30, 10], abs=1e-6)
    assert fits(plate_doc(tip="plate"), maxZ=v(10.5))["passed"] is True


def test_a_body_larger_than_the_envelope_is_bounding_box_exceeded() -> None:
    turned = plate_doc(
        node("turn", ROTATE, target={"node": "plate"}, angle=v(90), axis=v("Z")), tip="turn"
    )
    out = fits(turned, maxX=v(35), maxY=v(35), maxZ=v(5))
    assert out["passed"] is False
    assert [(d["code"], d["subject"]) for d in out["diagnostics"]] == [
        ("BOUNDING_BOX_EXCEEDED", "a1")
    ]
    message = out["diagnostics"][0]["message"]
    assert "Y 40 mm > 35 mm" in message and "Z 10 mm > 5 mm" in message and "X " not in message
    assert "BOUNDING_BOX_EXCEEDED" in BY_CAPABILITY["cap:validate.boundingBox@1"].diagnostics
    nothing = fits(turned)
    assert [d["code"] for d in nothing["diagnostics"]] == ["KERNEL_INPUT_INVALID"]
