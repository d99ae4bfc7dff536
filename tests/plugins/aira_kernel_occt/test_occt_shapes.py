"""The OCCT kernel's shape-making capabilities beyond primitives and straight sweeps, on real
CadQuery geometry and checked against closed forms: outlines with arcs, rounded rectangles,
2-D offsets, lofts, sweeps along paths (lines, arcs, helices) and pockets; and each one's
refusals with their codes."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("cadquery")
pytest.importorskip("trimesh")

import trimesh
from occt_docs import doc, node, v

from aira_kernel_occt import geometry

POLYLINE = "sketch.polyline@1.0.0"
ROUNDED = "sketch.roundedRectangle@1.0.0"
RECT = "sketch.rectangle@1.0.0"
CIRCLE = "sketch.circle@1.0.0"
POLYGON = "sketch.polygon@1.0.0"
OFFSET = "sketch.offset@1.0.0"
EXTRUDE = "exact.extrude@1.0.0"
LOFT = "exact.loft@1.0.0"
SWEEP = "exact.sweep@1.0.0"
POCKET = "exact.pocket@1.0.0"
BOX = "exact.box@1.0.0"


def lit(**args: Any) -> dict[str, Any]:
    return {k: v(x) for k, x in args.items()}


def run(nodes: list[dict[str, Any]], tip: str) -> dict[str, Any]:
    out = geometry.evaluate(doc(nodes, {"b": tip}), None, {})
    return {"body": out["bodies"]["b"], "diagnostics": out["diagnostics"]}


def solid(nodes: list[dict[str, Any]], tip: str) -> dict[str, Any]:
    """The measures of a clean, valid result, whose STL mesh is watertight (checked with an
    independent mesh library) and holds the same volume."""
    document = doc(nodes, {"b": tip})
    out = geometry.evaluate(document, None, {})
    assert out["diagnostics"] == []
    body = out["bodies"]["b"]
    assert body["valid"] is True
    data = geometry.export(document, "stl", "b", {})
    assert data["diagnostics"] == []
    import io

    mesh = trimesh.load(io.BytesIO(data["data"]), file_type="stl")
    assert mesh.is_watertight and mesh.is_winding_consistent
    assert mesh.volume == pytest.approx(body["volume"], rel=2e-2)
    return body


def codes(result: dict[str, Any]) -> list[str]:
    return [d["code"] for d in result["diagnostics"]]


def extruded(sketch: str, args: dict[str, Any], distance: float = 5) -> list[dict[str, Any]]:
    return [
        node("s", sketch, **lit(**args)),
        node("x", EXTRUDE, profile={"node": "s"}, **lit(distance=distance)),
    ]


# -- outlines with arcs ----------------------------------------------------------------------


def test_a_polyline_with_a_three_point_arc_has_the_closed_form_area() -> None:
    # a 20 × 10 rectangle whose right side is a half circle of radius 5 bulging out
    points = [[0, 0], [20, 0], {"to": [20, 10], "through": [25, 5]}, [0, 10], [0, 0]]
    body = solid(extruded(POLYLINE, {"plane": "XY", "points": points}), "x")
    assert body["volume"] == pytest.approx((200 + math.pi * 25 / 2) * 5, rel=1e-6)


def test_a_tangent_arc_continues_the_segment_before_it() -> None:
    # along +x to (20, 0), then tangent: the arc leaves heading +x and ends at (20, 10), a
    # half circle of radius 5 bulging to x = 25
    points = [[0, 0], [20, 0], {"to": [20, 10], "tangent": True}, [0, 10], [0, 0]]
    body = solid(extruded(POLYLINE, {"plane": "XY", "points": points}), "x")
    assert body["volume"] == pytest.approx((200 + math.pi * 25 / 2) * 5, rel=1e-6)
    assert body["boundingBox"][3] == pytest.approx(25, abs=1e-6)


def test_a_disc_from_two_arcs() -> None:
    points = [[10, 0], {"to": [-10, 0], "through": [0, 10]}, {"to": [10, 0], "through": [0, -10]}]
    body = solid(extruded(POLYLINE, {"plane": "XY", "points": points}, 2), "x")
    assert body["volume"] == pytest.approx(math.pi * 100 * 2, rel=1e-6)


@pytest.mark.parametrize(
    ("points", "code"),
    [
        # a straight "arc": its three points are collinear
        (
            [[0, 0], [20, 0], {"to": [20, 10], "through": [20, 5]}, [0, 10], [0, 0]],
            "KERNEL_INPUT_INVALID",
        ),
        # a tangent arc first: nothing to be tangent to
        ([[0, 0], {"to": [20, 0], "tangent": True}, [0, 10], [0, 0]], "KERNEL_INPUT_INVALID"),
        # a tangent arc whose end lies straight ahead
        (
            [[0, 0], [10, 0], {"to": [20, 0], "tangent": True}, [0, 10], [0, 0]],
            "KERNEL_INPUT_INVALID",
        ),
        # open
        ([[0, 0], [20, 0], {"to": [20, 10], "through": [25, 5]}, [0, 10]], "PROFILE_NOT_CLOSED"),
        # the arc bulges across the opposite side
        (
            [[0, 0], [20, 0], {"to": [20, 10], "through": [10, 15]}, [0, 10], [0, 0]],
            "PROFILE_SELF_INTERSECTING",
        ),
        # an unknown segment form
        ([[0, 0], [20, 0], {"to": [20, 10], "bulge": 1}, [0, 10], [0, 0]], "KERNEL_INPUT_INVALID"),
        (
            [[0, 0], [20, 0], {"to": [20, 10], "through": ["5", 5]}, [0, 0]],
            "KERNEL_INPUT_INVALID",
        ),
    ],
)
def test_bad_outlines_are_diagnosed(points, code) -> None:
    out = run(extruded(POLYLINE, {"plane": "XY", "points": points}), "x")
    assert codes(out)[:1] == [code]
    assert out["body"]["valid"] is False


def test_a_rounded_rectangle_has_the_closed_form_area_and_round_corners() -> None:
    w, h, r = 40, 20, 3
    body = solid(extruded(ROUNDED, {"plane": "XY", "width": w, "height": h, "radius": r}), "x")
    assert body["volume"] == pytest.approx((w * h - (4 - math.pi) * r * r) * 5, rel=1e-6)
    assert body["boundingBox"][:2] == pytest.approx([-20, -10], abs=1e-6)


def test_a_rounded_rectangle_follows_its_plane_and_centre() -> None:
    args = {"plane": "XZ", "offset": 2, "width": 10, "height": 6, "radius": 1, "center": [5, 3]}
    body = solid(extruded(ROUNDED, args, 4), "x")
    # on XZ the plane's x is world x, its y is world z, its normal is -Y (offset moves it to y=-2)
    assert body["boundingBox"] == pytest.approx([0, -6, 0, 10, -2, 6], abs=1e-6)


@pytest.mark.parametrize("radius", [10, 12])
def test_a_corner_radius_of_half_the_side_is_refused(radius) -> None:
    out = run(extruded(ROUNDED, {"plane": "XY", "width": 40, "height": 20, "radius": radius}), "x")
    assert codes(out) == ["PARAMETER_OUT_OF_RANGE"]
    assert "cap:sketch.slot@1" in out["diagnostics"][0]["message"]


# -- offsets -------------------------------------------------------------------------------------


def offset_of(sketch: str, args: dict[str, Any], **offset: Any) -> list[dict[str, Any]]:
    return [
        node("s", sketch, **lit(**args)),
        node("o", OFFSET, profile={"node": "s"}, **lit(**offset)),
        node("x", EXTRUDE, profile={"node": "o"}, **lit(distance=1)),
    ]


@pytest.mark.parametrize(
    ("offset", "area"),
    [
        ({"distance": 2}, 44 * 24 - (4 - math.pi) * 4),
        ({"distance": 2, "corners": "intersection"}, 44 * 24),
        ({"distance": 2, "side": "inward"}, 36 * 16),
    ],
)
def test_an_offset_rectangle_has_the_closed_form_area(offset, area) -> None:
    body = solid(offset_of(RECT, {"plane": "XY", "width": 40, "height": 20}, **offset), "x")
    assert body["volume"] == pytest.approx(area, rel=1e-6)


def test_an_offset_keeps_the_profiles_plane_and_normal() -> None:
    body = solid(
        offset_of(CIRCLE, {"plane": "YZ", "offset": 3, "radius": 5}, distance=1, side="inward"),
        "x",
    )
    assert body["volume"] == pytest.approx(math.pi * 16, rel=1e-6)
    assert body["boundingBox"][0] == pytest.approx(3, abs=1e-6)  # extruded +X from x = 3
    assert body["boundingBox"][3] == pytest.approx(4, abs=1e-6)


def test_an_inward_offset_wider_than_the_profile_collapses() -> None:
    out = run(
        offset_of(RECT, {"plane": "XY", "width": 40, "height": 20}, distance=12, side="inward"), "x"
    )
    assert codes(out) == ["OFFSET_COLLAPSED"]


# -- lofts ---------------------------------------------------------------------------------------


def test_a_loft_between_two_squares_is_a_pyramid_frustum() -> None:
    nodes = [
        node("a", RECT, **lit(plane="XY", width=20, height=20)),
        node("c", RECT, **lit(plane="XY", offset=15, width=10, height=10)),
        node("x", LOFT, profile={"node": "a"}, to={"node": "c"}, ruled=v(True)),
    ]
    body = solid(nodes, "x")
    a1, a2, h = 400, 100, 15
    assert body["volume"] == pytest.approx(h / 3 * (a1 + a2 + math.sqrt(a1 * a2)), rel=1e-6)


def test_a_loft_between_two_circles_is_a_cone_frustum() -> None:
    nodes = [
        node("a", CIRCLE, **lit(plane="XY", radius=10)),
        node("c", CIRCLE, **lit(plane="XY", offset=20, radius=5)),
        node("x", LOFT, profile={"node": "a"}, to={"node": "c"}),
    ]
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx(math.pi * 20 / 3 * (100 + 25 + 50), rel=1e-4)


def test_a_square_blends_into_a_circle() -> None:
    nodes = [
        node("a", RECT, **lit(plane="XY", width=20, height=20)),
        node("c", CIRCLE, **lit(plane="XY", offset=30, radius=8)),
        node("x", LOFT, profile={"node": "a"}, to={"node": "c"}),
    ]
    body = solid(nodes, "x")
    # between the prism of the circle and the prism of the square
    assert math.pi * 64 * 30 < body["volume"] < 400 * 30
    assert body["boundingBox"] == pytest.approx([-10, -10, 0, 10, 10, 30], abs=1e-3)


def test_a_loft_through_a_middle_section_passes_through_it() -> None:
    nodes = [
        node("a", CIRCLE, **lit(plane="XY", radius=10)),
        node("m", CIRCLE, **lit(plane="XY", offset=10, radius=4)),
        node("c", CIRCLE, **lit(plane="XY", offset=20, radius=10)),
        node("x", LOFT, profile={"node": "a"}, via={"node": "m"}, to={"node": "c"}, ruled=v(True)),
    ]
    body = solid(nodes, "x")
    frustum = math.pi * 10 / 3 * (100 + 16 + 40)
    assert body["volume"] == pytest.approx(2 * frustum, rel=1e-4)


def test_a_loft_across_non_parallel_planes() -> None:
    nodes = [
        node("a", RECT, **lit(plane="XY", width=10, height=10)),
        node("c", CIRCLE, **lit(plane="YZ", offset=30, radius=4, center=[0, 20])),
        node("x", LOFT, profile={"node": "a"}, to={"node": "c"}),
    ]
    body = solid(nodes, "x")
    assert body["boundingBox"][3] == pytest.approx(30, abs=1e-3)


def test_profiles_on_one_plane_do_not_loft() -> None:
    nodes = [
        node("a", RECT, **lit(plane="XY", width=20, height=20)),
        node("c", CIRCLE, **lit(plane="XY", radius=4)),
        node("x", LOFT, profile={"node": "a"}, to={"node": "c"}),
    ]
    out = run(nodes, "x")
    assert codes(out) == ["LOFT_FAILED"]
    assert "one plane" in out["diagnostics"][0]["message"]


def test_a_solid_is_no_loft_section() -> None:
    nodes = [
        node("a", BOX, **lit(length=5, width=5, height=5)),
        node("c", CIRCLE, **lit(plane="XY", offset=10, radius=4)),
        node("x", LOFT, profile={"node": "a"}, to={"node": "c"}),
    ]
    assert codes(run(nodes, "x")) == ["KERNEL_INPUT_INVALID"]


# -- sweeps --------------------------------------------------------------------------------------


def sweep(profile: dict[str, Any], path: Any, sketch: str = CIRCLE, **more: Any) -> list[dict]:
    return [
        node("s", sketch, **lit(**profile)),
        node("x", SWEEP, profile={"node": "s"}, path=v(path), **lit(**more)),
    ]


def test_a_sweep_along_a_line_is_an_extrusion() -> None:
    body = solid(sweep({"plane": "XY", "radius": 2}, {"points": [[0, 0, 0], [0, 0, 20]]}), "x")
    assert body["volume"] == pytest.approx(math.pi * 4 * 20, rel=1e-6)


def test_a_sweep_along_a_bent_path_has_the_pipes_volume() -> None:
    # up 20, a quarter arc of radius 10 turning to +x, then 20 along x
    path = {
        "points": [
            [0, 0, 0],
            [0, 0, 20],
            {"to": [10, 0, 30], "tangent": True},
            [30, 0, 30],
        ]
    }
    body = solid(sweep({"plane": "XY", "radius": 2}, path), "x")
    length = 20 + math.pi * 10 / 2 + 20
    assert body["volume"] == pytest.approx(math.pi * 4 * length, rel=1e-4)
    assert body["boundingBox"][3] == pytest.approx(30, abs=1e-3)


def test_a_sharp_corner_is_mitred_by_default() -> None:
    path = {"points": [[0, 0, 0], [0, 0, 20], [20, 0, 20]]}
    body = solid(sweep({"plane": "XY", "radius": 2}, path), "x")
    assert body["volume"] == pytest.approx(math.pi * 4 * 40, rel=1e-4)


def test_a_sweep_along_a_helix_is_a_coil() -> None:
    # a circle of radius 1 on the XZ plane at (10, 0), swept along a helix of radius 10
    helix = {"helix": {"radius": 10, "pitch": 5, "height": 20}}
    body = solid(sweep({"plane": "XZ", "radius": 1, "center": [10, 0]}, helix), "x")
    turns = 20 / 5
    length = turns * math.hypot(2 * math.pi * 10, 5)
    assert body["volume"] == pytest.approx(math.pi * 1 * length, rel=2e-2)
    assert body["boundingBox"][5] == pytest.approx(21, abs=0.2)


@pytest.mark.parametrize(
    ("profile", "path", "code"),
    [
        ({"plane": "XY", "radius": 2}, {"points": [[0, 0, 5], [0, 0, 20]]}, "PATH_INVALID"),
        ({"plane": "XY", "radius": 2}, {"points": [[0, 0, 0], [20, 0, 0]]}, "PATH_INVALID"),
        ({"plane": "XY", "radius": 2}, {"points": [[0, 0, 0], [0, 0, 0]]}, "PATH_INVALID"),
        ({"plane": "XY", "radius": 2}, {"points": [[0, 0, 0]]}, "KERNEL_INPUT_INVALID"),
        (
            {"plane": "XY", "radius": 2},
            {"helix": {"radius": 5, "pitch": 0.01, "height": 100}},
            "PATH_INVALID",
        ),
        (
            {"plane": "XY", "radius": 2},
            {"helix": {"radius": -5, "pitch": 1, "height": 10}},
            "KERNEL_INPUT_INVALID",
        ),
        ({"plane": "XY", "radius": 2}, "up", "KERNEL_INPUT_INVALID"),
        # a tube of radius 8 round a bend of radius 3 crosses itself
        (
            {"plane": "XY", "radius": 8},
            {"points": [[0, 0, 0], [0, 0, 20], {"to": [3, 0, 23], "tangent": True}, [30, 0, 23]]},
            "SWEEP_FAILED",
        ),
    ],
)
def test_bad_sweeps_are_diagnosed(profile, path, code) -> None:
    out = run(sweep(profile, path), "x")
    assert codes(out)[:1] == [code]
    assert out["body"]["valid"] is False


# -- pockets -------------------------------------------------------------------------------------


def plate(*more: dict[str, Any]) -> list[dict[str, Any]]:
    # a 60 × 40 × 10 plate from z = 0 to 10
    return [node("p", BOX, **lit(length=60, width=40, height=10, centered=False)), *more]


def test_a_rounded_rectangle_pocket_removes_its_closed_form_volume() -> None:
    nodes = plate(
        node(
            "s",
            ROUNDED,
            **lit(plane="XY", offset=10, width=30, height=20, radius=4, center=[30, 20]),
        ),
        node("x", POCKET, target={"node": "p"}, profile={"node": "s"}, depth=v(5)),
    )
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx(60 * 40 * 10 - (600 - (4 - math.pi) * 16) * 5, rel=1e-6)


def test_a_pocket_without_depth_cuts_through() -> None:
    nodes = plate(
        node("s", CIRCLE, **lit(plane="XY", offset=10, radius=5, center=[30, 20])),
        node("x", POCKET, target={"node": "p"}, profile={"node": "s"}),
    )
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx(24000 - math.pi * 25 * 10, rel=1e-6)


def test_a_pocket_from_the_bottom_goes_along_a_sketch_on_the_base_plane() -> None:
    nodes = plate(
        node("s", POLYGON, **lit(plane="XY", sides=6, diameter=10, center=[30, 20])),
        node(
            "x",
            POCKET,
            target={"node": "p"},
            profile={"node": "s"},
            depth=v(4),
            direction=v("along"),
        ),
    )
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx(24000 - 3 * math.sqrt(3) / 2 * 25 * 4, rel=1e-6)


def test_a_pocket_that_misses_the_body_says_which_way_it_went() -> None:
    nodes = plate(
        node("s", CIRCLE, **lit(plane="XY", offset=10, radius=5, center=[30, 20])),
        node("x", POCKET, target={"node": "p"}, profile={"node": "s"}, direction=v("along")),
    )
    out = run(nodes, "x")
    assert codes(out) == ["POCKET_MISSES_BODY"]
    assert "along" in out["diagnostics"][0]["message"]


def test_an_offset_pocket_leaves_a_wall_of_the_offset() -> None:
    # a 2 mm wall: the outer outline, offset 2 mm inward, pocketed 8 mm from the top
    nodes = plate(
        node("s", RECT, **lit(plane="XY", offset=10, width=60, height=40, center=[30, 20])),
        node("o", OFFSET, profile={"node": "s"}, **lit(distance=2, side="inward")),
        node("x", POCKET, target={"node": "p"}, profile={"node": "o"}, depth=v(8)),
    )
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx(24000 - 56 * 36 * 8, rel=1e-6)


# -- a rotation on the sketch primitives (issue 33) --------------------------------------------


@pytest.mark.parametrize(
    ("sketch", "args", "half_extent"),
    [
        # a 30 x 10 rectangle at 45 degrees: (30 + 10) cos 45 / 2 either side
        (RECT, {"width": 30, "height": 10}, (40 * math.sqrt(0.5) / 2,) * 2),
        # a hexagon through corners on a 10 mm circle, a corner on +x; turned 30 degrees its
        # flats face x: 5 cos 30 along x, 5 along y
        ("sketch.polygon@1.0.0", {"sides": 6, "diameter": 10}, (5 * math.sqrt(3) / 2, 5.0)),
    ],
    ids=["rectangle", "hexagon"],
)
def test_a_profile_turns_about_its_centre(sketch: str, args: dict, half_extent: tuple) -> None:
    turn = 45 if sketch == RECT else 30
    centre = (12, -4)
    nodes = [
        node("s", sketch, **lit(plane="XY", center=list(centre), rotation=turn, **args)),
        node("x", EXTRUDE, profile={"node": "s"}, **lit(distance=2)),
    ]
    body = solid(nodes, "x")
    (hx, hy) = half_extent
    cx, cy = centre
    assert body["boundingBox"] == pytest.approx(
        [cx - hx, cy - hy, 0, cx + hx, cy + hy, 2], abs=1e-6
    )
    unturned = solid(
        [{**nodes[0], "inputs": {**nodes[0]["inputs"], "rotation": v(0)}}, nodes[1]], "x"
    )
    assert body["volume"] == pytest.approx(unturned["volume"], rel=1e-9)


def test_a_polyline_turns_about_its_planes_origin() -> None:
    """Its points are measured from the plane's origin, so it turns about that: a 10 x 4
    rectangle from [10, 0] to [20, 4] on XZ turned 90 degrees about the plane's normal (-Y)
    stands at x -4 to 0, z 10 to 20 (the plane's x is world X, its y world Z)."""
    points = [[10, 0], [20, 0], [20, 4], [10, 4], [10, 0]]
    nodes = [
        node("s", POLYLINE, **lit(plane="XZ", points=points, rotation=90)),
        node("x", EXTRUDE, profile={"node": "s"}, **lit(distance=2)),
    ]
    body = solid(nodes, "x")
    assert body["boundingBox"] == pytest.approx([-4, -2, 10, 0, 0, 20], abs=1e-6)  # out along -Y
    assert body["volume"] == pytest.approx(80, rel=1e-9)


def test_loft_sections_line_up_with_a_turned_profile() -> None:
    """A square lofted to the same square turned 45 degrees: a twisted prism, its top's box
    the turned square's; with both at 0 a plain box."""
    top = lambda turn: node(  # noqa: E731
        "t", RECT, **lit(plane="XY", offset=20, width=10, height=10, rotation=turn)
    )
    bottom = node("base", RECT, **lit(plane="XY", width=10, height=10))
    loft = node("x", LOFT, profile={"node": "base"}, to={"node": "t"}, ruled=v(True))
    straight = solid([bottom, top(0), loft], "x")
    assert straight["volume"] == pytest.approx(2000, rel=1e-6)
    twisted = solid([bottom, top(45), loft], "x")
    half = 10 * math.sqrt(0.5)
    assert twisted["boundingBox"] == pytest.approx([-half, -half, 0, half, half, 20], abs=1e-6)


# -- profiles with cut-outs (issue 33) ---------------------------------------------------------

SUBTRACT = "sketch.subtract@1.0.0"


def test_a_ring_profile_pockets_a_groove_in_one_step() -> None:
    """An outline less its inward offset, pocketed 3 mm into a 60 x 50 x 10 plate: the groove
    is the ring's area deep (it took two extrudes and two cuts)."""
    nodes = [
        node("plate", BOX, **lit(length=60, width=50, height=10)),  # centred: z -5 to 5
        node("outer", RECT, **lit(plane="XY", offset=5, width=40, height=30)),
        node("inner", OFFSET, profile={"node": "outer"}, **lit(distance=2, side="inward")),
        node("ring", SUBTRACT, profile={"node": "outer"}, minus={"node": "inner"}),
        node("x", POCKET, target={"node": "plate"}, profile={"node": "ring"}, **lit(depth=3)),
    ]
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx(60 * 50 * 10 - (40 * 30 - 36 * 26) * 3, rel=1e-9)


def test_an_outline_with_two_openings_extrudes_into_a_plate_with_two_holes() -> None:
    nodes = [
        node("outline", RECT, **lit(plane="XY", width=40, height=20)),
        node("left", CIRCLE, **lit(plane="XY", radius=3, center=[-10, 0])),
        node("right", CIRCLE, **lit(plane="XY", radius=3, center=[10, 0])),
        node(
            "s",
            SUBTRACT,
            profile={"node": "outline"},
            minus={"node": "left"},
            minus2={"node": "right"},
        ),
        node("x", EXTRUDE, profile={"node": "s"}, **lit(distance=5)),
    ]
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx((40 * 20 - 2 * math.pi * 9) * 5, rel=1e-9)


@pytest.mark.parametrize(
    ("minus", "says"),
    [
        ({"plane": "XZ", "radius": 2}, "not on the profile's plane"),
        ({"plane": "XY", "offset": 3, "radius": 2}, "not on the profile's plane"),
        ({"plane": "XY", "radius": 2, "center": [100, 0]}, "takes nothing out"),
        ({"plane": "XY", "radius": 50}, "covers the whole profile"),
    ],
    ids=["other-plane", "offset", "outside", "covers"],
)
def test_a_cut_out_that_cannot_be_taken_out_is_refused(minus: dict, says: str) -> None:
    nodes = [
        node("outline", RECT, **lit(plane="XY", width=40, height=20)),
        node("c", CIRCLE, **lit(**minus)),
        node("s", SUBTRACT, profile={"node": "outline"}, minus={"node": "c"}),
        node("x", EXTRUDE, profile={"node": "s"}, **lit(distance=5)),
    ]
    out = run(nodes, "x")
    assert codes(out) == ["PROFILE_SUBTRACT_FAILED"] and says in out["diagnostics"][0]["message"]


def test_a_cut_out_that_splits_the_profile_is_refused() -> None:
    nodes = [
        node("outline", RECT, **lit(plane="XY", width=40, height=20)),
        node("bar", RECT, **lit(plane="XY", width=4, height=30)),
        node("s", SUBTRACT, profile={"node": "outline"}, minus={"node": "bar"}),
    ]
    out = run(nodes, "s")
    assert (
        codes(out) == ["PROFILE_SUBTRACT_FAILED"] and "2 pieces" in out["diagnostics"][0]["message"]
    )


def test_an_outline_only_operation_refuses_a_profile_with_cut_outs() -> None:
    """A loft or an offset reads the outline alone: given a ring it would drop the hole."""
    ring = [
        node("outer", CIRCLE, **lit(plane="XY", radius=10)),
        node("inner", CIRCLE, **lit(plane="XY", radius=5)),
        node("ring", SUBTRACT, profile={"node": "outer"}, minus={"node": "inner"}),
    ]
    lofted = run(
        [*ring, node("c", CIRCLE, **lit(plane="XY", offset=20, radius=5)),
         node("x", LOFT, profile={"node": "ring"}, to={"node": "c"})],
        "x",
    )  # fmt: skip
    offset = run([*ring, node("x", OFFSET, profile={"node": "ring"}, **lit(distance=1))], "x")
    for out in (lofted, offset):
        assert codes(out) == ["KERNEL_INPUT_INVALID"]
        assert "without inner loops" in out["diagnostics"][0]["message"]


# -- a face's outline as a profile (issue 33) --------------------------------------------------

FACE = "sketch.faceOutline@1.0.0"


def drilled_plate() -> list[dict[str, Any]]:
    """A 40 x 30 x 10 plate (centred: its top at z 5) with a Ø6 hole through its middle; the
    faces are selected on its node (``{"node": "drilled", …}``), the result being body b."""
    return [
        node("plate", BOX, **lit(length=40, width=30, height=10)),
        node("hole", CIRCLE, **lit(plane="XY", offset=5, radius=3)),
        node("drilled", POCKET, target={"node": "plate"}, profile={"node": "hole"}),
    ]


def test_a_face_offset_inward_pockets_a_recess_inside_its_outline() -> None:
    """The plate's top face, outline only, offset 2 mm inward, pocketed 1 mm: a recess of
    36 x 26 (corners rounded by nothing: an inward offset keeps sharp convex corners)."""
    nodes = [
        *drilled_plate(),
        node(
            "top", FACE, face={"node": "drilled", "select": ">Z", "entity": "Face"}, outline=v(True)
        ),
        node("lip", OFFSET, profile={"node": "top"}, **lit(distance=2, side="inward")),
        node("x", POCKET, target={"node": "drilled"}, profile={"node": "lip"}, **lit(depth=1)),
    ]
    body = solid(nodes, "x")
    hole = math.pi * 9
    assert body["volume"] == pytest.approx(
        40 * 30 * 10 - hole * 10 - (36 * 26 - hole) * 1, rel=1e-9
    )


def test_a_face_as_it_is_keeps_its_openings() -> None:
    """Extruded up 5 mm from the top face: a second plate with the same hole, joined on."""
    nodes = [
        *drilled_plate(),
        node("top", FACE, face={"node": "drilled", "select": ">Z", "entity": "Face"}),
        node("x", EXTRUDE, profile={"node": "top"}, **lit(distance=5)),
    ]
    body = solid(nodes, "x")
    assert body["volume"] == pytest.approx((40 * 30 - math.pi * 9) * 5, rel=1e-9)
    assert body["boundingBox"][2] == pytest.approx(5, abs=1e-9)  # it starts on the face


@pytest.mark.parametrize(
    ("select", "says"), [("|Z", "gives 2 faces"), (None, "not planar")], ids=["four", "curved"]
)
def test_a_selection_that_is_not_one_planar_face_is_refused(select: Any, says: str) -> None:
    picked = {
        "node": "drilled",
        "entity": "Face",
        **({"select": select} if select else {"radius": 3}),
    }
    nodes = [*drilled_plate(), node("f", FACE, face=picked)]
    out = run(nodes, "f")
    assert codes(out) == ["PROFILE_FACE_INVALID"] and says in out["diagnostics"][0]["message"]


# -- a sweep path in the profile plane's frame (issue 33) --------------------------------------


@pytest.mark.parametrize(
    ("plane", "world"),
    [
        # the profile centred at [10, 5] on each plane; 20 mm straight out along its normal
        ("XY", [[10, 5, 0], [10, 5, 20]]),
        ("XZ", [[10, 0, 5], [10, -20, 5]]),  # XZ's normal is -Y
        ("YZ", [[0, 10, 5], [20, 10, 5]]),
    ],
)
def test_a_path_in_the_profiles_frame_is_the_same_sweep(plane: str, world: list) -> None:
    """The same path written in the profile plane's frame ([cx, cy, 0] then 20 out along the
    normal, whatever the plane) and in world coordinates makes the same solid."""
    profile = {"plane": plane, "radius": 2, "center": [10, 5]}
    local = {"points": [[10, 5, 0], [10, 5, 20], {"to": [25, 5, 35], "tangent": True}]}
    in_frame = solid(sweep(profile, local, frame="profile"), "x")
    bend = world[1][:]  # the same tangent arc, in world coordinates
    out = [a - b for a, b in zip(world[1], world[0], strict=True)]  # 20 along the normal
    # the arc's end: 15 more along the normal and 15 along the plane's x
    x_dir = {"XY": [1, 0, 0], "XZ": [1, 0, 0], "YZ": [0, 1, 0]}[plane]
    end = [b + o * 0.75 + x * 15 for b, o, x in zip(bend, out, x_dir, strict=True)]
    in_world = solid(
        sweep(profile, {"points": [world[0], world[1], {"to": end, "tangent": True}]}), "x"
    )
    assert in_frame["volume"] == pytest.approx(in_world["volume"], rel=1e-9)
    assert in_frame["boundingBox"] == pytest.approx(in_world["boundingBox"], abs=1e-6)
    straight = solid(sweep(profile, {"points": [[10, 5, 0], [10, 5, 20]]}, frame="profile"), "x")
    assert straight["volume"] == pytest.approx(math.pi * 4 * 20, rel=1e-9)
