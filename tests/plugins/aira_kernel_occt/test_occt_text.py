"""Text profiles (``sketch.text``) on real OpenCASCADE geometry: the bundled font's letters at
the size asked for (a capital's height), aligned and turned as asked, engraved with a pocket
and embossed with an extrude and a union by exactly their area times the depth; and each
refusal's code."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("cadquery")

from occt_docs import doc, node, v

from aira_kernel_occt import fonts, geometry

TEXT = "sketch.text@1.0.0"


def plate() -> list[dict[str, Any]]:
    """A 60 × 30 × 10 plate, z 0…10."""
    return [
        node("p0", "exact.box@1.0.0", length=v(60), width=v(30), height=v(10)),
        node("p", "exact.translate@1.0.0", target={"node": "p0"}, z=v(5)),
    ]


def text(**args: Any) -> dict[str, Any]:
    return node("s", TEXT, **{k: x if k == "face" else v(x) for k, x in args.items()})


def evaluate(nodes: list[dict[str, Any]], tip: str) -> dict[str, Any]:
    return geometry.evaluate(doc(nodes, {"b": tip}), None, {})


def profile(**args: Any) -> Any:
    """The text profile's shape (faces), built as the worker builds it."""
    return geometry.build(TEXT, args)


def bounds(shape: Any) -> tuple[float, ...]:
    box = geometry.box(shape)
    return box.xmin, box.ymin, box.zmin, box.xmax, box.ymax, box.zmax


def codes(result: dict[str, Any]) -> list[str]:
    return [d["code"] for d in result["diagnostics"]]


def test_the_font_is_bundled_with_its_licence() -> None:
    assert fonts.FONT.is_file() and fonts.FONT.stat().st_size < 60_000
    licence = (fonts.FONT.parent / "LICENSE").read_text(encoding="utf-8")
    assert "Bitstream" in licence and "DejaVu changes are in public domain" in licence


def test_a_capital_is_as_tall_as_the_size() -> None:
    h = profile(text="H", size=6.0, plane="XY", halign="left", valign="baseline")
    xmin, ymin, zmin, _xmax, ymax, zmax = bounds(h)
    assert ymin == pytest.approx(0, abs=1e-9) and ymax == pytest.approx(6.0, abs=1e-6)
    assert 0 < xmin < 1 and zmin == zmax == 0  # the side bearing; flat on XY


@pytest.mark.parametrize(
    "halign, valign, x, y",
    [
        ("center", "center", (-1, 1), (-3, 3)),
        ("left", "top", (0, None), (-6, 0)),
        ("right", "baseline", (None, 0), (0, 6)),
    ],
)
def test_the_centre_point_is_where_the_alignment_says(
    halign: str, valign: str, x: tuple, y: tuple
) -> None:
    xmin, ymin, _, xmax, ymax, _ = bounds(
        profile(text="HH", size=6.0, plane="XY", halign=halign, valign=valign)
    )
    assert ymin == pytest.approx(y[0], abs=1e-6) and ymax == pytest.approx(y[1], abs=1e-6)
    if x == (-1, 1):
        assert xmin == pytest.approx(-xmax, abs=0.05)  # centred on its advance
    elif x[0] == 0:
        assert 0 < xmin < 1
    else:
        assert -1 < xmax < 0


def test_a_turned_text_on_a_moved_plane() -> None:
    xmin, ymin, zmin, xmax, ymax, zmax = bounds(
        profile(text="H", size=6.0, plane="XY", offset=4.0, center=[10, 0], rotation=90.0,
                halign="left", valign="baseline")
    )  # fmt: skip
    # turned a quarter turn counter-clockwise about [10, 0]: the capital now spans -x
    assert xmin == pytest.approx(4.0, abs=1e-6) and xmax == pytest.approx(10.0, abs=1e-6)
    assert zmin == pytest.approx(4.0) and zmax == pytest.approx(4.0)
    assert 0 < ymin < 1 < ymax < 6


def test_text_on_a_face_lies_on_it_facing_out() -> None:
    nodes = [*plate(), text(text="AIRA", size=5, face={"body": "b", "select": ">Z"})]
    cache: dict[str, Any] = {}
    out = geometry.evaluate(doc(nodes, {"b": "p"}), None, cache)
    assert out["diagnostics"] == []
    (letters,) = [e.shape for e in cache.values() if e.shape is not None and not e.shape.Solids()]
    assert len(letters.Faces()) == 4
    assert all(f.normalAt().toTuple() == pytest.approx((0, 0, 1)) for f in letters.Faces())
    _xmin, ymin, zmin, _xmax, ymax, zmax = bounds(letters)
    assert zmin == pytest.approx(10) and zmax == pytest.approx(10)
    assert ymin == pytest.approx(-2.5, abs=1e-6) and ymax == pytest.approx(2.5, abs=1e-6)


def test_an_engraving_removes_the_letters_area_times_its_depth() -> None:
    letters = profile(text="AIRA 2", size=6.0, face=_top_face())
    area = sum(f.Area() for f in letters.Faces())
    nodes = [*plate(), text(text="AIRA 2", size=6, face={"body": "b", "select": ">Z"})]
    engraved = [*nodes, node("e", "exact.pocket@1.0.0", target={"node": "p"},
                             profile={"node": "s"}, depth=v(0.5))]  # fmt: skip
    out = evaluate(engraved, "e")
    assert out["diagnostics"] == [] and out["bodies"]["b"]["valid"]
    # the volume of a solid bounded by the letters' spline faces is integrated to about 2e-6
    # of the whole: the plate's 18,000 mm³ hide the last 0.05
    assert 18000 - out["bodies"]["b"]["volume"] == pytest.approx(area * 0.5, abs=0.05)


def test_an_embossing_adds_the_letters_area_times_its_height() -> None:
    letters = profile(text="P-1042", size=5.0, face=_top_face())
    area = sum(f.Area() for f in letters.Faces())
    nodes = [
        *plate(),
        text(text="P-1042", size=5, face={"body": "b", "select": ">Z"}),
        node("x", "exact.extrude@1.0.0", profile={"node": "s"}, distance=v(1)),
        node("u", "exact.union@1.0.0", target={"node": "p"}, tool={"node": "x"}),
    ]
    out = geometry.evaluate(doc(nodes, {"b": "u"}), None, {})
    assert out["diagnostics"] == [] and out["bodies"]["b"]["valid"]
    assert out["bodies"]["b"]["volume"] - 18000 == pytest.approx(area, abs=0.05)
    assert out["bodies"]["b"]["boundingBox"][5] == pytest.approx(11)


def _top_face() -> list[Any]:
    import cadquery as cq

    box = cq.Solid.makeBox(60, 30, 10, pnt=cq.Vector(-30, -15, 0))
    return [f for f in box.Faces() if f.Center().z > 9.9]


@pytest.mark.parametrize(
    "args, code, says",
    [
        ({"text": "中文", "size": 5, "plane": "XY"}, "TEXT_GLYPH_MISSING", "U+4E2D"),
        ({"text": "   ", "size": 5, "plane": "XY"}, "TEXT_INVALID", "visible"),
        ({"text": "two\nlines", "size": 5, "plane": "XY"}, "TEXT_INVALID", "one line"),
        ({"text": "x" * 101, "size": 5, "plane": "XY"}, "TEXT_INVALID", "at most 100"),
        ({"text": "A", "size": 5}, "KERNEL_INPUT_INVALID", "neither"),
        ({"text": "A", "size": 5, "plane": "XY", "face": {"body": "b", "select": ">Z"}},
         "KERNEL_INPUT_INVALID", "both"),
        ({"text": "A", "size": 5, "face": {"body": "b", "select": "%CYLINDER"}},
         "PROFILE_FACE_INVALID", "planar"),
    ],
)  # fmt: skip
def test_impossible_text_is_refused(args: dict[str, Any], code: str, says: str) -> None:
    nodes = [node("c", "exact.cylinder@1.0.0", radius=v(10), height=v(5)), text(**args)]
    out = geometry.evaluate(doc(nodes, {"b": "c"}), None, {})
    found = [d for d in out["diagnostics"] if d.get("subject") == "s"]
    assert [d["code"] for d in found] == [code] and says in found[0]["message"]


def test_only_extrude_and_pocket_take_several_profiles() -> None:
    nodes = [
        text(text="AB", size=5, plane="XY"),
        node("r", "exact.revolve@1.0.0", profile={"node": "s"}, axis=v("Y")),
    ]
    out = evaluate(nodes, "r")
    assert codes(out) == ["KERNEL_INPUT_INVALID"]
    assert "2 separate profiles (text)" in out["diagnostics"][0]["message"]
