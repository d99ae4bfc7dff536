"""ISO metric threads (``exact.thread``) on real OpenCASCADE geometry: the volume each one
removes against the closed form of the ISO 68-1 profile, its pitch and hand measured on the
solid, external and internal, open and closed ends, any axis; and each refusal's code."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("cadquery")

import itertools

from occt_docs import doc, node, v

from aira_kernel_occt import geometry, threads

THREAD = "exact.thread@1.0.0"
CYL = "exact.cylinder@1.0.0"
BOX = "exact.box@1.0.0"
HOLE = "exact.hole@1.0.0"


def evaluate(nodes: list[dict[str, Any]], tip: str) -> dict[str, Any]:
    return geometry.evaluate(doc(nodes, {"b": tip}), None, {})


def threaded(tip: str = "t", **args: Any) -> list[dict[str, Any]]:
    return [node(tip, THREAD, **args)]


def thread_on(target: str, select: Any = "%CYLINDER", **args: Any) -> dict[str, Any]:
    face = {"body": "b", "select": select} if isinstance(select, str) else select
    return node(
        "t", THREAD, target={"node": target}, face=face, **{k: v(x) for k, x in args.items()}
    )


def shaft(radius: float = 4, height: float = 24, axis: str = "Z") -> list[dict[str, Any]]:
    nodes = [node("c", CYL, radius=v(radius), height=v(height))]
    if axis != "Z":  # laid along X (or against it)
        angle = 90 if axis == "X" else -90
        nodes.append(
            node("c2", "exact.rotate@1.0.0", target={"node": "c"}, axis=v("Y"), angle=v(angle))
        )
    return nodes


def plate_with_bore(diameter: float, depth: float | None = None) -> list[dict[str, Any]]:
    """A 30 × 30 × 16 plate (z 0…16) with one bore of ``diameter`` at its centre, from the top
    (through, or ``depth`` deep)."""
    drill: dict[str, Any] = {"diameter": v(diameter), "points": v([[0, 0]])}
    if depth is not None:
        drill["depth"] = v(depth)
    return [
        node("p0", BOX, length=v(30), width=v(30), height=v(16)),
        node("p", "exact.translate@1.0.0", target={"node": "p0"}, z=v(8)),
        node(
            "h",
            HOLE,
            target={"node": "p"},
            face={"body": "b", "select": ">Z", "entity": "Face"},
            **drill,
        ),
    ]


def volume(result: dict[str, Any]) -> float:
    assert result["diagnostics"] == [], result["diagnostics"]
    body = result["bodies"]["b"]
    assert body["valid"] is True
    return body["volume"]


def codes(result: dict[str, Any]) -> list[str]:
    return [d["code"] for d in result["diagnostics"]]


# -- the numbers ---------------------------------------------------------------------------------


def test_designations_read_as_iso_261() -> None:
    assert threads.parse("M8") == threads.Thread(8, 1.25)
    assert threads.parse("m12x1.5") == threads.Thread(12, 1.5)
    assert threads.parse("M3 × 0.35").name == "M3x0.35"
    assert threads.parse("M8x1.25").name == "M8"  # the coarse pitch given is still M8
    m8 = threads.parse("M8")
    # ISO 724: D1 of M8 is 6.647 mm; the thread depth 5H/8 = 0.6766 mm
    assert m8.minor == pytest.approx(6.647, abs=5e-4)
    assert m8.depth == pytest.approx(0.67658, abs=1e-5)
    assert m8.tap_drill == 6.75


@pytest.mark.parametrize(
    "size, says",
    [
        ("M7.5", "no ISO 261 coarse pitch"),
        ("M8x5", "a quarter of the diameter"),
        ("M8x0.1", "0.2 mm"),
        ("M0.5", "1 to 300 mm"),
        ("UNC 1/4-20", "no ISO metric thread"),
        ("", "no ISO metric thread"),
    ],
)
def test_a_size_no_thread_has_is_refused(size: str, says: str) -> None:
    with pytest.raises(threads.ThreadError) as caught:
        threads.parse(size)
    assert caught.value.code == "THREAD_SIZE_INVALID" and says in caught.value.message


def test_the_closed_form_is_the_integral_of_the_profile() -> None:
    """removed_volume against a numeric integration of the groove's width over the band."""
    for internal, radius in ((False, 4.0), (True, 3.375)):
        m8 = threads.parse("M8")
        lo, hi = (radius, 4.0) if internal else (4.0 - m8.depth, radius)
        n = 20000
        step = (hi - lo) / n
        moment = sum(
            (lo + (i + 0.5) * step) * m8.width(lo + (i + 0.5) * step, internal) * step
            for i in range(n)
        )
        assert m8.removed_volume(radius, 12, internal) == pytest.approx(
            2 * math.pi * moment * 12 / 1.25, rel=1e-7
        )


# -- external -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size, radius", [("M3", 1.5), ("M8", 4.0), ("M12x1.5", 6.0), ("M20", 10)])
def test_an_external_thread_removes_the_closed_form_volume(size: str, radius: float) -> None:
    thread = threads.parse(size)
    length = 3 * radius
    plain = volume(evaluate(shaft(radius, 6 * radius), "c"))
    cut = volume(
        evaluate([*shaft(radius, 6 * radius), thread_on("c", size=size, length=length)], "t")
    )
    assert plain - cut == pytest.approx(thread.removed_volume(radius, length, False), rel=1e-4)


def _grooves(shape: Any, r: float, angle: float) -> list[float]:
    """The heights of the groove centres a line parallel to the axis meets at radius ``r``
    and ``angle``: where it crosses the surface, midway between two crossings outside the
    material."""
    import cadquery as cq
    from OCP.BRepIntCurveSurface import BRepIntCurveSurface_Inter
    from OCP.gp import gp_Dir, gp_Lin, gp_Pnt

    x, y = r * math.cos(math.radians(angle)), r * math.sin(math.radians(angle))
    crossings = BRepIntCurveSurface_Inter()
    crossings.Init(shape.wrapped, gp_Lin(gp_Pnt(x, y, 0), gp_Dir(0, 0, 1)), 1e-7)
    zs = []
    while crossings.More():
        zs.append(crossings.Pnt().Z())
        crossings.Next()
    zs.sort()
    return [
        (a + b) / 2
        for a, b in itertools.pairwise(zs)
        if not geometry._inside(shape, cq.Vector(x, y, (a + b) / 2))
    ]


def _solid(nodes: list[dict[str, Any]], tip: str) -> Any:
    """The cached OCCT shape of the body (the measures say nothing about the hand)."""
    shape, found = geometry._body_shape(doc(nodes, {"b": tip}), "b", {})
    assert found == []
    return shape


@pytest.mark.parametrize("hand, sign", [("right", 1), ("left", -1)])
def test_the_pitch_length_and_hand_are_on_the_solid(hand: str, sign: int) -> None:
    """Along a line parallel to the axis through the flanks, the grooves come one pitch apart
    from the open end down to the length; a quarter turn on (counter-clockwise seen from +Z),
    a right-hand thread's grooves are a quarter pitch higher, a left-hand one's lower."""
    shape = _solid([*shaft(4, 24), thread_on("c", size="M8", length=12, handedness=hand)], "t")
    r = 4 - threads.parse("M8").depth / 2
    at0, at90 = _grooves(shape, r, 0), _grooves(shape, r, 90)
    assert len(at0) == 10 and at0[0] == pytest.approx(12, abs=1e-3)  # 24 - 12
    assert 24 - at0[-1] < 1.25
    for a, b in itertools.pairwise(at0):
        assert b - a == pytest.approx(1.25, abs=1e-4)
    nearest = min((b - a for a in at0 for b in at90), key=abs)
    assert nearest == pytest.approx(sign * 1.25 / 4, abs=1e-4)


def test_the_axis_may_run_along_x_either_way() -> None:
    expected = threads.parse("M8").removed_volume(4, 12, False)
    plain = volume(evaluate(shaft(), "c"))
    for axis in ("X", "-X"):
        cut = volume(evaluate([*shaft(axis=axis), thread_on("c2", size="M8", length=12)], "t"))
        assert plain - cut == pytest.approx(expected, rel=1e-4), axis


def test_a_whole_pin_threads_end_to_end() -> None:
    plain = volume(evaluate(shaft(), "c"))
    cut = volume(evaluate([*shaft(), thread_on("c", size="M8")], "t"))
    assert plain - cut == pytest.approx(threads.parse("M8").removed_volume(4, 24, False), rel=1e-4)


def test_a_long_thread_is_cut_in_pieces_end_to_end() -> None:
    """40 turns, left-handed: one sweep of so many turns is lost by OpenCASCADE's boolean;
    cut as pieces of at most 20 turns, one after the other, it removes the closed form."""
    plain = volume(evaluate(shaft(4, 60), "c"))
    cut = volume(
        evaluate([*shaft(4, 60), thread_on("c", size="M8", length=50, handedness="left")], "t")
    )
    assert plain - cut == pytest.approx(threads.parse("M8").removed_volume(4, 50, False), rel=1e-4)


def test_a_chamfered_end_is_threaded_through_its_chamfer() -> None:
    chamfer = node(
        "ch",
        "exact.chamfer@1.0.0",
        target={"node": "c"},
        edges={"body": "b", "select": ">Z", "entity": "Edge"},
        length=v(0.8),
    )
    plain = volume(evaluate([*shaft(), chamfer], "ch"))
    face = {"body": "b", "select": "%CYLINDER"}
    cut = volume(evaluate([*shaft(), chamfer, thread_on("ch", face, size="M8", length=12)], "t"))
    m8 = threads.parse("M8")
    # the cylinder ends 0.8 below the top: 12 mm on it, and the groove goes on through the cone
    assert m8.removed_volume(4, 12, False) < plain - cut < m8.removed_volume(4, 12.8, False)


def test_a_shoulder_closes_an_end() -> None:
    nodes = [
        node("pin", CYL, radius=v(4), height=v(14)),
        node("head0", CYL, radius=v(7), height=v(10)),
        node("head", "exact.translate@1.0.0", target={"node": "head0"}, z=v(-10)),
        node("u", "exact.union@1.0.0", target={"node": "pin"}, tool={"node": "head"}),
    ]
    face = {"body": "b", "select": "%CYLINDER", "radius": 4}
    plain = volume(evaluate(nodes, "u"))
    # no length: the whole face less half a pitch before the shoulder
    cut = volume(evaluate([*nodes, thread_on("u", face, size="M8")], "t"))
    assert plain - cut == pytest.approx(
        threads.parse("M8").removed_volume(4, 14 - 0.625, False), rel=1e-4
    )
    too_long = evaluate([*nodes, thread_on("u", face, size="M8", length=14)], "t")
    assert codes(too_long) == ["THREAD_TOO_LONG"]
    assert too_long["diagnostics"][0]["expected"] == {"max": 13.375}
    from_shoulder = evaluate([*nodes, thread_on("u", face, size="M8", **{"from": "lower"})], "t")
    assert codes(from_shoulder) == ["THREAD_FACE_INVALID"]
    assert "from 'upper'" in from_shoulder["diagnostics"][0]["message"]


# -- internal ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bore", [6.647, 6.75])  # the basic minor diameter, the tap drill
def test_a_tapped_through_hole_removes_the_closed_form_volume(bore: float) -> None:
    plain = volume(evaluate(plate_with_bore(bore), "h"))
    face = {"body": "b", "select": "%CYLINDER"}
    cut = volume(evaluate([*plate_with_bore(bore), thread_on("h", face, size="M8")], "t"))
    expected = threads.parse("M8").removed_volume(bore / 2, 16, True)
    assert plain - cut == pytest.approx(expected, rel=1e-4)


def test_a_blind_hole_is_tapped_to_half_a_pitch_above_its_bottom() -> None:
    nodes = plate_with_bore(5.0, depth=12)
    face = {"body": "b", "select": "%CYLINDER"}
    plain = volume(evaluate(nodes, "h"))
    cut = volume(evaluate([*nodes, thread_on("h", face, size="M6")], "t"))
    expected = threads.parse("M6").removed_volume(2.5, 12 - 0.5, True)
    assert plain - cut == pytest.approx(expected, rel=1e-4)
    partial = volume(evaluate([*nodes, thread_on("h", face, size="M6", length=8)], "t"))
    assert plain - partial == pytest.approx(
        threads.parse("M6").removed_volume(2.5, 8, True), rel=1e-4
    )


def test_a_cosmetic_thread_is_recorded_and_leaves_the_solid() -> None:
    plain = volume(evaluate(shaft(), "c"))
    nodes = [*shaft(), thread_on("c", size="M8", length=12, cosmetic=True)]
    assert volume(evaluate(nodes, "t")) == plain
    assert nodes[-1]["inputs"]["size"] == {"value": "M8"}  # the model holds the thread
    # of any length: nothing is cut (a modeled one stops at 100 turns)
    long = [*shaft(4, 200), thread_on("c", size="M8", cosmetic=True)]
    assert volume(evaluate(long, "t")) == pytest.approx(math.pi * 16 * 200, rel=1e-9)


# -- refusals ------------------------------------------------------------------------------------


def test_a_face_that_does_not_fit_the_size_is_refused_with_the_diameters() -> None:
    out = evaluate([*shaft(5), thread_on("c", size="M8")], "t")
    assert codes(out) == ["THREAD_SIZE_MISMATCH"]
    (found,) = out["diagnostics"]
    assert "Ø8 mm shaft" in found["message"] and "Ø10" in found["message"]
    assert found["expected"] == {"min": 7.9375, "max": 8.0625} and found["actual"] == 10
    bore = evaluate([*plate_with_bore(8), thread_on("h", size="M8")], "t")
    assert codes(bore) == ["THREAD_SIZE_MISMATCH"]
    assert "bore of Ø6.647" in bore["diagnostics"][0]["message"]


@pytest.mark.parametrize(
    "nodes, face, args, code",
    [
        (shaft(), ">Z", {"size": "M8"}, "THREAD_FACE_INVALID"),  # planar
        (shaft(), "%CYLINDER", {"size": "M7.5"}, "THREAD_SIZE_INVALID"),
        (shaft(), "%CYLINDER", {"size": "M8", "length": 30}, "THREAD_TOO_LONG"),
        (shaft(), "%CYLINDER", {"size": "M8", "length": 1}, "PARAMETER_OUT_OF_RANGE"),
        (shaft(4, 130), "%CYLINDER", {"size": "M8"}, "THREAD_TOO_LONG"),  # 104 turns
        ([node("c", BOX, length=v(20), width=v(20), height=v(20))], "%CYLINDER", {"size": "M8"},
         "SELECTION_EMPTY"),
    ],
)  # fmt: skip
def test_impossible_threads_are_refused(nodes: list, face: str, args: dict, code: str) -> None:
    assert codes(evaluate([*nodes, thread_on(nodes[-1]["id"], face, **args)], "t")) == [code]


def test_a_face_that_is_not_a_whole_cylinder_is_refused() -> None:
    nodes = [
        node("c", BOX, length=v(20), width=v(20), height=v(10)),
        node(
            "f",
            "exact.fillet@1.0.0",
            target={"node": "c"},
            edges={"body": "b", "select": "|Z", "entity": "Edge"},
            radius=v(3),
        ),
    ]
    face = {"body": "b", "select": "%CYLINDER", "nearest": [10, 10, 5]}
    out = evaluate([*nodes, thread_on("f", face, size="M6")], "t")
    assert codes(out) == ["THREAD_FACE_INVALID"]
    assert "90°" in out["diagnostics"][0]["message"]
