"""More OCCT kernel capabilities on real CadQuery geometry, against closed-form values:
linear and polar patterns, the inward shell, distance and interference."""

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
LINEAR = "exact.linearPattern@1.0.0"
POLAR = "exact.polarPattern@1.0.0"

REL = 1e-9


def cube(*extra: dict[str, Any], tip: str, x: float = 0) -> dict[str, Any]:
    """A 4 mm cube with a corner on (x, 0, 0), and ``extra`` nodes after it."""
    nodes = [node("cube0", BOX, length=v(4), width=v(4), height=v(4), centered=v(False))]
    nodes.append(node("cube", TRANSLATE, target={"node": "cube0"}, x=v(x)))
    return doc([*nodes, *extra], {"b": tip})


# -- patterns -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("direction", "box"),
    [
        ("X", (0, 0, 0, 4 + 4 * 6, 4, 4)),
        ("Y", (0, 0, 0, 4, 4 + 4 * 6, 4)),
        ("Z", (0, 0, 0, 4, 4, 4 + 4 * 6)),
    ],
)
def test_a_linear_pattern_of_disjoint_copies_has_count_times_the_volume(
    direction: str, box: tuple[float, ...]
) -> None:
    pattern = node(
        "row", LINEAR, target={"node": "cube"}, count=v(5), spacing=v(6), direction=v(direction)
    )
    out = body(evaluate(cube(pattern, tip="row")))
    assert out["volume"] == pytest.approx(5 * 64, rel=REL)
    assert out["area"] == pytest.approx(5 * 6 * 16, rel=REL)
    assert out["boundingBox"] == pytest.approx(box, abs=1e-7)


def test_overlapping_linear_copies_fuse_into_one_solid() -> None:
    pattern = node(
        "row", LINEAR, target={"node": "cube"}, count=v(3), spacing=v(2), direction=v("X")
    )
    document = cube(pattern, tip="row")
    out = body(evaluate(document))
    assert out["volume"] == pytest.approx(8 * 4 * 4, rel=REL)
    topology = geometry.query(document, "query.topology@1.0.0", {"target": "b"}, {})
    assert topology["data"]["solids"] == 1 and topology["data"]["faces"] == 6


def test_a_linear_pattern_needs_two_copies() -> None:
    pattern = node(
        "row", LINEAR, target={"node": "cube"}, count=v(1), spacing=v(6), direction=v("X")
    )
    result = evaluate(cube(pattern, tip="row"))
    assert codes(result) == [("KERNEL_INPUT_INVALID", "row")]


def test_a_full_polar_pattern_of_off_axis_cubes_has_count_times_the_volume() -> None:
    pattern = node("ring", POLAR, target={"node": "cube"}, count=v(6))
    out = body(evaluate(cube(pattern, tip="ring", x=20)))
    assert out["volume"] == pytest.approx(6 * 64, rel=REL)
    # copies every 60°: the outer corners (24, 4) of each copy bound the pattern
    reach = math.hypot(24, 4)
    bb = out["boundingBox"]
    assert bb[3] == pytest.approx(reach * math.cos(math.atan2(4, 24)), abs=1e-7)
    assert bb[2] == pytest.approx(0, abs=1e-7) and bb[5] == pytest.approx(4, abs=1e-7)


def test_a_partial_polar_pattern_spans_its_sweep_end_to_end() -> None:
    # 3 copies over 90°: at 0°, 45° and 90°; the last lies on +Y (x -4…0, y 20…24)
    pattern = node("fan", POLAR, target={"node": "cube"}, count=v(3), angle=v(math.pi / 2, "rad"))
    out = body(evaluate(cube(pattern, tip="fan", x=20)))
    assert out["volume"] == pytest.approx(3 * 64, rel=REL)
    bb = out["boundingBox"]
    assert bb[0] == pytest.approx(-4, abs=1e-7)
    assert bb[4] == pytest.approx(24, abs=1e-7)
    assert bb[1] == pytest.approx(0, abs=1e-7)


# -- shell --------------------------------------------------------------------------------------

SHELL = "exact.shell@1.0.0"


def tray(select: str = ">Z", thickness: Any = None) -> dict[str, Any]:
    """A 40 × 30 × 10 box (corner on the origin) shelled with the faces ``select`` removed."""
    return doc(
        [
            node("box", BOX, length=v(40), width=v(30), height=v(10), centered=v(False)),
            node(
                "hollow",
                SHELL,
                target={"node": "box"},
                faces={"body": "b", "select": select, "entity": "Face"},
                thickness=thickness or v(2),
            ),
        ],
        {"b": "hollow"},
    )


@pytest.mark.parametrize("t", [1, 2, 2.5, 4])
def test_a_box_opened_at_the_top_becomes_a_tray_of_closed_form_volume(t: float) -> None:
    out = body(evaluate(tray(thickness=v(t))))
    assert out["volume"] == pytest.approx(40 * 30 * 10 - (40 - 2 * t) * (30 - 2 * t) * (10 - t))
    # an inward shell keeps the outside
    assert out["boundingBox"] == pytest.approx((0, 0, 0, 40, 30, 10), abs=1e-6)


def test_a_box_opened_at_both_ends_becomes_a_tube() -> None:
    out = body(evaluate(tray(select=">Z or <Z", thickness=v(0.2, "cm"))))
    assert out["volume"] == pytest.approx(12000 - 36 * 26 * 10, rel=1e-9)


def test_walls_too_thick_for_the_body_are_shell_failed() -> None:
    result = evaluate(tray(thickness=v(15)))
    assert codes(result) == [("SHELL_FAILED", "hollow")]
    assert "SHELL_FAILED" in BY_CAPABILITY["cap:exact.shell@1"].diagnostics


def test_a_shell_selector_that_selects_nothing_is_selection_empty() -> None:
    result = evaluate(tray(select="%CYLINDER"))
    assert codes(result) == [("SELECTION_EMPTY", "hollow")]


# -- distance, interference, no-interference ----------------------------------------------------


def two_cubes(dx: float, dy: float = 0, dz: float = 0) -> dict[str, Any]:
    """Body ``a``: a 10 mm cube with a corner on the origin; body ``t``: a 4 mm cube with a
    corner on (dx, dy, dz)."""
    return doc(
        [
            node("na", BOX, length=v(10), width=v(10), height=v(10), centered=v(False)),
            node("nt0", BOX, length=v(4), width=v(4), height=v(4), centered=v(False)),
            node("nt", TRANSLATE, target={"node": "nt0"}, x=v(dx), y=v(dy), z=v(dz)),
        ],
        {"a": "na", "t": "nt"},
    )


def ask(document: dict[str, Any], name: str) -> dict[str, Any]:
    return geometry.query(document, f"query.{name}@1.0.0", {"target": "a", "tool": "t"}, {})


@pytest.mark.parametrize(
    ("offset", "distance", "volume"),
    [
        ((13, 0, 0), 3, 0),  # apart along X
        ((13, 14, 0), 5, 0),  # apart diagonally: a 3-4-5 gap
        ((10, 0, 0), 0, 0),  # touching faces
        ((8, 3, 3), 0, 2 * 4 * 4),  # overlapping by 2 mm along X
        ((3, 3, 3), 0, 64),  # inside
    ],
)
def test_distance_and_interference_match_closed_form_values(
    offset: tuple[float, float, float], distance: float, volume: float
) -> None:
    document = two_cubes(*offset)
    gap = ask(document, "distance")
    assert gap["diagnostics"] == []
    assert gap["data"]["distance"] == pytest.approx(distance, abs=1e-7)
    common = ask(document, "interference")
    assert common["diagnostics"] == []
    assert common["data"]["volume"] == pytest.approx(volume, abs=1e-7)
    assert common["data"]["interferes"] is (volume > 0)


def test_a_distance_to_an_unknown_body_is_query_target_unknown() -> None:
    out = geometry.query(two_cubes(20), "query.distance@1.0.0", {"target": "a", "tool": "x"}, {})
    assert [d["code"] for d in out["diagnostics"]] == ["QUERY_TARGET_UNKNOWN"]


def no_interference(document: dict[str, Any], tool: Any) -> dict[str, Any]:
    return geometry.validate(document, assertion("noInterference", "a", {"tool": tool}), {})


@pytest.mark.parametrize("tool", [{"node": "nt"}, {"value": "t"}, {"value": "b:t"}])
def test_bodies_apart_or_touching_pass_no_interference(tool: dict[str, Any]) -> None:
    for offset in (20, 10):
        out = no_interference(two_cubes(offset), tool)
        assert out == {"passed": True, "measured": {"volume": 0.0}, "diagnostics": []}


def test_overlapping_bodies_are_interference_found_with_the_common_volume() -> None:
    out = no_interference(two_cubes(8, 3, 3), {"node": "nt"})
    assert out["passed"] is False
    assert out["measured"]["volume"] == pytest.approx(32, rel=1e-9)
    assert [(d["code"], d["subject"]) for d in out["diagnostics"]] == [("INTERFERENCE_FOUND", "a1")]
    assert "32 mm³" in out["diagnostics"][0]["message"]
    assert "INTERFERENCE_FOUND" in BY_CAPABILITY["cap:validate.noInterference@1"].diagnostics


@pytest.mark.parametrize(
    ("tool", "code"),
    [
        ({"node": "nowhere"}, "KERNEL_REFERENCE_UNRESOLVED"),
        ({"value": "nobody"}, "QUERY_TARGET_UNKNOWN"),
        ({"value": 3}, "KERNEL_INPUT_INVALID"),
    ],
)
def test_a_no_interference_tool_that_names_nothing_is_a_diagnostic(
    tool: dict[str, Any], code: str
) -> None:
    out = no_interference(two_cubes(8), tool)
    assert out["passed"] is False
    assert [(d["code"], d["subject"]) for d in out["diagnostics"]] == [(code, "a1")]
