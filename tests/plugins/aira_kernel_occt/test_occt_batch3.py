"""OCCT kernel capabilities, batch 3, on real CadQuery geometry: the hole pattern validator."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("cadquery")

from occt_docs import assertion, doc, node, v

from aira_kernel_occt import geometry
from aira_kernel_occt.operations import BY_CAPABILITY

BOX = "exact.box@1.0.0"
CYLINDER = "exact.cylinder@1.0.0"
TRANSLATE = "exact.translate@1.0.0"
UNION = "exact.union@1.0.0"
HOLE = "exact.hole@1.0.0"
CORNERS = [[-15, -10], [15, -10], [-15, 10], [15, 10]]


def plate(points: list[list[float]], diameter: float = 5) -> dict[str, Any]:
    """A centred 40 × 30 × 10 plate with through holes at ``points``, and a 6 mm boss (an
    outer cylinder along Z, which is no bore) standing on it."""
    return doc(
        [
            node("plate", BOX, length=v(40), width=v(30), height=v(10)),
            node(
                "drill",
                HOLE,
                target={"node": "plate"},
                face={"body": "b", "select": ">Z", "entity": "Face"},
                points=v(points),
                diameter=v(diameter),
            ),
            node("boss0", CYLINDER, radius=v(3), height=v(10)),
            node("boss", TRANSLATE, target={"node": "boss0"}, z=v(5)),
            node("joined", UNION, target={"node": "drill"}, tool={"node": "boss"}),
        ],
        {"b": "joined"},
    )


def holes(document: dict[str, Any], **args: Any) -> dict[str, Any]:
    checked = assertion("holePattern", "b", {k: v(x) for k, x in args.items()})
    return geometry.validate(document, checked, {})


def test_four_holes_pass_a_pattern_of_four() -> None:
    out = holes(plate(CORNERS), count=4, diameter=5, axis="Z")
    assert out["diagnostics"] == []
    assert out["passed"] is True
    assert out["measured"]["found"] == 4
    # the boss's outer cylinder is no bore
    assert out["measured"]["boresAlongAxis"] == pytest.approx([5, 5, 5, 5])


def test_an_extra_hole_is_rejected() -> None:
    out = holes(plate(CORNERS), count=3, diameter=5, axis="Z")
    assert out["passed"] is False
    assert [(d["code"], d["subject"]) for d in out["diagnostics"]] == [
        ("HOLE_PATTERN_MISMATCH", "a1")
    ]
    message = out["diagnostics"][0]["message"]
    assert "found 4" in message and "expected 3" in message and "extra" in message


def test_a_missing_hole_is_rejected() -> None:
    out = holes(plate(CORNERS), count=5, diameter=5, axis="Z")
    assert out["passed"] is False
    message = out["diagnostics"][0]["message"]
    assert "found 4" in message and "expected 5" in message and "missing" in message
    three = holes(plate(CORNERS[:3]), count=4, diameter=5, axis="Z")
    assert three["passed"] is False
    assert three["measured"]["found"] == 3


def test_a_wrong_diameter_or_axis_is_rejected() -> None:
    for args in (
        {"diameter": 6},
        {"diameter": 5.05},
        {"diameter": 5, "axis": "X"},
    ):
        out = holes(plate(CORNERS), **{"count": 4, "diameter": 5, "axis": "Z", **args})
        assert out["passed"] is False
        assert out["diagnostics"][0]["code"] == "HOLE_PATTERN_MISMATCH"
        assert out["measured"]["found"] == 0


def test_the_tolerance_widens_the_diameter_match() -> None:
    out = holes(plate(CORNERS), count=4, diameter=5.05, axis="Z", tolerance=0.1)
    assert out["passed"] is True


def test_the_hole_pattern_declares_its_diagnostic() -> None:
    op = BY_CAPABILITY["cap:validate.holePattern@1"]
    assert "HOLE_PATTERN_MISMATCH" in op.diagnostics
    assert any("孔" in i for i in op.intents)


# -- SVG export ---------------------------------------------------------------------------------


@pytest.mark.parametrize("body", ["b", None])
def test_the_svg_export_is_a_non_trivial_line_drawing(body: str | None) -> None:
    out = geometry.export(plate(CORNERS), "svg", body, {})
    assert out["diagnostics"] == []
    text = out["data"].decode("utf-8")
    assert "<svg" in text and "</svg>" in text
    assert text.count("<path") >= 10  # the plate's edges, the holes' circles, the boss
    assert len(text) > 2000


def test_the_svg_exporter_is_wired_by_its_ref_and_declared_preview() -> None:
    out = geometry.export(plate(CORNERS), "io.exportSvg@1.0.0", None, {})
    assert b"<svg" in out["data"]
    op = BY_CAPABILITY["cap:io.exportSvg@1"]
    assert op.kind == "exporter" and op.quality == ("preview",)
    assert any("SVG" in i for i in op.intents if not i.isascii())
