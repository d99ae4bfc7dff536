"""OCCT kernel capabilities, batch 4, on real CadQuery geometry: sketch profiles and the sweeps
that turn them into solids, countersinks, selectEntities, the sampled wall-thickness check,
3MF and display-mesh output, and STEP import (an exported STEP re-imported keeps its volume)."""

from __future__ import annotations

import io
import json
import math
import zipfile
from typing import Any

import pytest

pytest.importorskip("cadquery")

from occt_docs import assertion, doc, node, v

from aira_kernel_occt import geometry

BOX = "exact.box@1.0.0"
HOLE = "exact.hole@1.0.0"
FILLET = "exact.fillet@1.0.0"
SHELL = "exact.shell@1.0.0"
EXTRUDE = "exact.extrude@1.0.0"
REVOLVE = "exact.revolve@1.0.0"
IMPORT = "io.importStep@1.0.0"


def evaluate(nodes: list[dict[str, Any]], tip: str) -> dict[str, Any]:
    """The body ``b`` whose tip is ``tip``: its measures, or the evaluation's diagnostics."""
    out = geometry.evaluate(doc(nodes, {"b": tip}), None, {})
    return {"body": out["bodies"]["b"], "diagnostics": out["diagnostics"]}


def codes(result: dict[str, Any]) -> list[str]:
    return [d["code"] for d in result["diagnostics"]]


def swept(sketch: str, sweep: str = EXTRUDE, sketch_args=None, **sweep_args: Any):
    sketch_args = {k: v(x) for k, x in (sketch_args or {}).items()}
    args = {k: v(x) for k, x in sweep_args.items()}
    return evaluate(
        [
            node("s", f"sketch.{sketch}@1.0.0", **sketch_args),
            node("x", sweep, profile={"node": "s"}, **args),
        ],
        "x",
    )


# -- profiles and extrusion ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sketch", "args", "area"),
    [
        ("rectangle", {"plane": "XY", "width": 40, "height": 20}, 800),
        ("circle", {"plane": "XY", "radius": 8}, math.pi * 64),
        ("polygon", {"plane": "XY", "sides": 6, "diameter": 10}, 3 * math.sqrt(3) / 2 * 25),
        ("slot", {"plane": "XY", "length": 20, "width": 6}, 14 * 6 + math.pi * 9),
        (
            "polyline",
            {
                "plane": "XY",
                "points": [[0, 0], [30, 0], [30, 10], [10, 10], [10, 25], [0, 25], [0, 0]],
            },
            30 * 10 + 10 * 15,
        ),
    ],
)
def test_each_profile_extrudes_to_its_closed_form_volume(sketch, args, area) -> None:
    out = swept(sketch, sketch_args=args, distance=5)
    assert out["diagnostics"] == []
    assert out["body"]["valid"] is True
    assert out["body"]["volume"] == pytest.approx(area * 5, rel=1e-6)
    box = out["body"]["boundingBox"]
    assert (box[2], box[5]) == pytest.approx((0, 5), abs=1e-6)  # along +Z from the XY plane


def test_extrusion_follows_plane_offset_and_direction() -> None:
    rect = {"plane": "XY", "offset": 5, "width": 10, "height": 10}
    for direction, z in [("normal", (5, 15)), ("reverse", (-5, 5)), ("symmetric", (0, 10))]:
        out = swept("rectangle", sketch_args=rect, distance=10, direction=direction)
        box = out["body"]["boundingBox"]
        assert (box[2], box[5]) == pytest.approx(z, abs=1e-6), direction
    # 'XZ' has normal -Y: the solid grows towards -Y; center is in the plane's own x, y
    xz = {"plane": "XZ", "width": 4, "height": 2, "center": [10, 3]}
    box = swept("rectangle", sketch_args=xz, distance=7)["body"]["boundingBox"]
    assert box == pytest.approx([8, -7, 2, 12, 0, 4], abs=1e-6)


def test_revolve_sweeps_a_section_about_an_axis() -> None:
    ring = {"plane": "XZ", "width": 4, "height": 10, "center": [10, 5]}  # x 8…12, z 0…10
    full = swept("rectangle", REVOLVE, sketch_args=ring, axis="Z")
    assert full["diagnostics"] == []
    assert full["body"]["volume"] == pytest.approx(math.pi * (12**2 - 8**2) * 10, rel=1e-6)
    quarter = swept("rectangle", REVOLVE, sketch_args=ring, axis="Z", angle=90)
    assert quarter["body"]["volume"] == pytest.approx(full["body"]["volume"] / 4, rel=1e-6)


@pytest.mark.parametrize(
    ("sketch", "sketch_args", "sweep", "sweep_args", "code"),
    [
        (
            "polyline",
            {"plane": "XY", "points": [[0, 0], [10, 0], [10, 10], [0, 10]]},
            EXTRUDE,
            {"distance": 1},
            "PROFILE_NOT_CLOSED",
        ),
        (
            "polyline",
            {"plane": "XY", "points": [[0, 0], [10, 10], [10, 0], [0, 10], [0, 0]]},
            EXTRUDE,
            {"distance": 1},
            "PROFILE_SELF_INTERSECTING",
        ),
        (
            "rectangle",
            {"plane": "XZ", "width": 10, "height": 10},  # straddles the Z axis
            REVOLVE,
            {"axis": "Z"},
            "REVOLVE_CROSSES_AXIS",
        ),
        (
            "rectangle",
            {"plane": "XY", "width": 10, "height": 10, "center": [20, 0]},
            REVOLVE,
            {"axis": "Z"},  # perpendicular to the sketch: no solid
            "KERNEL_INPUT_INVALID",
        ),
        (
            "slot",
            {"plane": "XY", "length": 6, "width": 6},
            EXTRUDE,
            {"distance": 1},
            "PARAMETER_OUT_OF_RANGE",
        ),
        (
            "circle",
            {"plane": "XY", "radius": 2, "offset": "up"},
            EXTRUDE,
            {"distance": 1},
            "KERNEL_INPUT_INVALID",
        ),
    ],
)
def test_bad_profiles_are_diagnosed(sketch, sketch_args, sweep, sweep_args, code) -> None:
    out = swept(sketch, sweep, sketch_args=sketch_args, **sweep_args)
    assert codes(out)[:1] == [code], out["diagnostics"]
    assert out["body"]["valid"] is False


def test_a_solid_is_not_a_profile() -> None:
    out = evaluate(
        [
            node("box", BOX, length=v(10), width=v(10), height=v(10)),
            node("x", EXTRUDE, profile={"node": "box"}, distance=v(5)),
        ],
        "x",
    )
    assert codes(out) == ["KERNEL_INPUT_INVALID"]
    assert "planar face" in out["diagnostics"][0]["message"]


# -- countersink -------------------------------------------------------------------------------


def plate_with(**hole: Any) -> list[dict[str, Any]]:
    return [
        node("plate", BOX, length=v(40), width=v(30), height=v(10)),
        node(
            "drill",
            HOLE,
            target={"node": "plate"},
            face={"body": "b", "select": ">Z", "entity": "Face"},
            points=v([[0, 0]]),
            **{k: v(x) for k, x in hole.items()},
        ),
    ]


def test_a_countersink_removes_the_cone_the_closed_form_gives() -> None:
    out = evaluate(plate_with(diameter=4, countersink={"diameter": 8, "angle": 90}), "drill")
    assert out["diagnostics"] == []
    # through bore r 2 over 10 mm, plus the cone from r 4 at the face to r 2, 2 mm deep
    cone = math.pi * 2 / 3 * (4**2 + 4 * 2 + 2**2) - math.pi * 2**2 * 2
    expected = 40 * 30 * 10 - math.pi * 2**2 * 10 - cone
    assert out["body"]["volume"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    ("hole", "code"),
    [
        (
            {
                "diameter": 4,
                "countersink": {"diameter": 8},
                "counterbore": {"diameter": 8, "depth": 2},
            },
            "KERNEL_INPUT_INVALID",
        ),
        ({"diameter": 4, "countersink": {"diameter": 3}}, "PARAMETER_OUT_OF_RANGE"),
        ({"diameter": 4, "countersink": {"diameter": 8, "angle": 200}}, "PARAMETER_OUT_OF_RANGE"),
    ],
)
def test_bad_countersinks_are_diagnosed(hole, code) -> None:
    assert codes(evaluate(plate_with(**hole), "drill")) == [code]


# -- selectEntities ----------------------------------------------------------------------------


def query(document: dict[str, Any], ref: str, **args: Any) -> dict[str, Any]:
    return geometry.query(document, ref, {"target": "b", **args}, {})


def test_select_entities_describes_what_a_selector_chooses() -> None:
    plate = doc([node("p", BOX, length=v(40), width=v(30), height=v(10))], {"b": "p"})
    out = query(plate, "query.selectEntities@1.0.0", select=">Z")
    assert out["diagnostics"] == []
    (top,) = out["data"]["entities"]
    assert out["data"]["count"] == 1
    assert top["type"] == "PLANE" and top["normal"] == [0, 0, 1]
    assert top["area"] == pytest.approx(1200) and top["center"] == pytest.approx([0, 0, 5])
    edges = query(plate, "query.selectEntities@1.0.0", select="|Z", entity="Edge")["data"]
    assert edges["count"] == 4 and all(e["length"] == pytest.approx(10) for e in edges["entities"])

    drilled = doc(plate_with(diameter=6), {"b": "drill"})
    circles = query(drilled, "query.selectEntities@1.0.0", select="%CIRCLE", entity="Edge")
    assert circles["data"]["count"] == 2
    assert all(e["radius"] == pytest.approx(3) for e in circles["data"]["entities"])
    bore = query(drilled, "query.selectEntities@1.0.0", select="%CYLINDER")["data"]
    assert bore["entities"][0]["radius"] == pytest.approx(3)

    assert codes(query(plate, "query.selectEntities@1.0.0", select=">>Q(")) == ["SELECTION_INVALID"]
    assert codes(query(plate, "query.selectEntities@1.0.0", select="%CYLINDER")) == [
        "SELECTION_EMPTY"
    ]
    assert codes(query(plate, "query.selectEntities@1.0.0", select=">Z", entity="Solid")) == [
        "KERNEL_INPUT_INVALID"
    ]


# -- minWallThickness --------------------------------------------------------------------------


def walls(document: dict[str, Any], **args: Any) -> dict[str, Any]:
    checked = assertion("minWallThickness", "b", {k: v(x) for k, x in args.items()})
    return geometry.validate(document, checked, {})


def test_min_wall_thickness_measures_a_shelled_tray() -> None:
    tray = doc(
        [
            node("box", BOX, length=v(40), width=v(30), height=v(10)),
            node(
                "tray",
                SHELL,
                target={"node": "box"},
                faces={"body": "b", "select": ">Z", "entity": "Face"},
                thickness=v(2),
            ),
        ],
        {"b": "tray"},
    )
    ok = walls(tray, min=1.9)
    assert ok["passed"] is True, ok["diagnostics"]
    assert ok["measured"]["minThickness"] == pytest.approx(2, abs=1e-6)
    assert ok["measured"]["quality"] == "sampled" and ok["measured"]["rays"] > 0
    thin = walls(tray, min=2.5)
    assert thin["passed"] is False
    assert [d["code"] for d in thin["diagnostics"]] == ["WALL_TOO_THIN"]


def test_min_wall_thickness_finds_the_web_beside_a_hole() -> None:
    # a 5 mm hole centred 16 mm from the middle of a 40 mm plate: 1.5 mm of wall to the edge
    near = doc(
        [
            node("plate", BOX, length=v(40), width=v(30), height=v(10)),
            node(
                "drill",
                HOLE,
                target={"node": "plate"},
                face={"body": "b", "select": ">Z", "entity": "Face"},
                points=v([[16, 0]]),
                diameter=v(5),
            ),
        ],
        {"b": "drill"},
    )
    out = walls(near, min=3, samples=16)
    assert out["passed"] is False
    # sampled: never thinner than the true 1.5 mm, and close to it with 16 × 16 samples
    assert 1.5 - 1e-6 <= out["measured"]["minThickness"] < 1.6
    assert walls(near, min=1.4, samples=16)["passed"] is True


# -- 3MF, display mesh and STEP round trip -----------------------------------------------------


def bracket() -> dict[str, Any]:
    """A 60 × 40 × 8 bracket: four 6 mm through holes, the vertical edges rounded r 4."""
    return doc(
        [
            node("plate", BOX, length=v(60), width=v(40), height=v(8)),
            node(
                "round",
                FILLET,
                target={"node": "plate"},
                edges={"body": "b", "select": "|Z", "entity": "Edge"},
                radius=v(4),
            ),
            node(
                "drill",
                HOLE,
                target={"node": "round"},
                face={"body": "b", "select": ">Z", "entity": "Face"},
                points=v([[-22, -12], [22, -12], [-22, 12], [22, 12]]),
                diameter=v(6),
            ),
        ],
        {"b": "drill"},
    )


BRACKET_VOLUME = 60 * 40 * 8 - 4 * (1 - math.pi / 4) * 16 * 8 - 4 * math.pi * 9 * 8


def test_3mf_is_a_zip_with_a_model_of_the_body() -> None:
    out = geometry.export(bracket(), "3mf", "b", {})
    assert out["diagnostics"] == []
    with zipfile.ZipFile(io.BytesIO(out["data"])) as package:
        model = next(n for n in package.namelist() if n.endswith(".model"))
        text = package.read(model).decode()
    assert "<triangle " in text and "<vertex " in text
    assert 'unit="millimeter"' in text


def test_display_mesh_is_closed_and_has_the_bodys_volume() -> None:
    out = geometry.export(bracket(), "convert.displayMesh@1.0.0", None, {})
    assert out["diagnostics"] == []
    mesh = json.loads(out["data"])
    assert mesh["format"] == "aira.mesh/1" and mesh["units"] == "mm"
    (body,) = mesh["bodies"]
    assert body["body"] == "b"
    xyz, tri = body["vertices"], body["triangles"]
    assert len(xyz) % 3 == 0 and len(tri) % 3 == 0
    assert max(tri) < len(xyz) // 3
    p = [xyz[i : i + 3] for i in range(0, len(xyz), 3)]
    volume = 0.0  # signed tetrahedra against the origin: the enclosed volume of a closed mesh
    for a, b, c in (tri[i : i + 3] for i in range(0, len(tri), 3)):
        (ax, ay, az), (bx, by, bz), (cx, cy, cz) = p[a], p[b], p[c]
        volume += (
            ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
        ) / 6
    assert volume == pytest.approx(BRACKET_VOLUME, rel=0.01)


def test_a_step_export_reimports_with_the_same_volume() -> None:
    original = bracket()
    measured = geometry.evaluate(original, None, {})["bodies"]["b"]
    assert measured["volume"] == pytest.approx(BRACKET_VOLUME, rel=1e-6)
    step = geometry.export(original, "step", "b", {})["data"].decode()
    imported = evaluate([node("i", IMPORT, data=v(step))], "i")
    assert imported["diagnostics"] == []
    assert imported["body"]["valid"] is True
    assert imported["body"]["volume"] == pytest.approx(measured["volume"], rel=1e-6)
    assert imported["body"]["boundingBox"] == pytest.approx(measured["boundingBox"], abs=1e-6)


@pytest.mark.parametrize(
    "text",
    [
        "solid cube\nendsolid cube\n",  # an ASCII STL, not STEP
        "ISO-10303-21;\nHEADER;\nENDSEC;\nDATA;\nENDSEC;\nEND-ISO-10303-21;\n",  # no solid
        "ISO-10303-21;\nthis is not a STEP file",
    ],
)
def test_unreadable_step_text_is_diagnosed(text: str) -> None:
    out = evaluate([node("i", IMPORT, data=v(text))], "i")
    assert codes(out) == ["STEP_IMPORT_FAILED"]


# -- review fixes ------------------------------------------------------------------------------


def test_a_blind_countersink_stops_at_its_own_depth() -> None:
    out = evaluate(
        plate_with(diameter=4, depth=5, countersink={"diameter": 8, "angle": 90}), "drill"
    )
    assert out["diagnostics"] == []
    extra = math.pi * 2 / 3 * (4**2 + 4 * 2 + 2**2) - math.pi * 2**2 * 2  # cone beyond the bore
    expected = 40 * 30 * 10 - math.pi * 2**2 * 5 - extra
    assert out["body"]["volume"] == pytest.approx(expected, rel=1e-6)
    too_shallow = evaluate(plate_with(diameter=4, depth=1.5, countersink={"diameter": 8}), "drill")
    assert codes(too_shallow) == ["PARAMETER_OUT_OF_RANGE"]


def test_a_body_whose_tip_is_a_profile_is_not_a_valid_solid() -> None:
    out = evaluate([node("s", "sketch.circle@1.0.0", plane=v("XY"), radius=v(3))], "s")
    assert out["body"]["valid"] is False
    assert codes(out) == ["SOLID_INVALID"] and "profile" in out["diagnostics"][0]["message"]


def test_revolve_needs_the_axis_in_the_profiles_plane() -> None:
    ring = {"plane": "XZ", "offset": 5, "width": 4, "height": 10, "center": [10, 5]}
    out = swept("rectangle", REVOLVE, sketch_args=ring, axis="Z")
    assert codes(out) == ["KERNEL_INPUT_INVALID"] and "offset 0" in out["diagnostics"][0]["message"]


@pytest.mark.parametrize(
    ("points", "code"),
    [
        # a corner 1e-8 mm from a segment that is not its neighbour: a pinched outline
        ([[0, 0], [10, 0], [10, 10], [5, 1e-8], [0, 10], [0, 0]], "PROFILE_SELF_INTERSECTING"),
        ([[0, 0], [5, 0], [10, 0], [0, 0]], "KERNEL_INPUT_INVALID"),  # collinear: no area
    ],
)
def test_pinched_and_flat_polylines_are_diagnosed(points, code) -> None:
    out = swept("polyline", sketch_args={"plane": "XY", "points": points}, distance=1)
    assert codes(out)[:1] == [code]
