"""Queries agree with preview (issue 33): a body's box is the geometry's, however the part was
exported before (a mesh left on the shape made ``query.boundingBox`` report [-20.0062,
-20.0000001, -0.0062, …] for a cylinder preview measured [-20, -20, 0, …]), and every query
that reports a measure says its tolerance, which holds against closed forms and OpenCASCADE's
adaptive integrator."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("cadquery")

from occt_docs import doc, node, v

from aira_kernel_occt import geometry

CYLINDER = doc([node("c", "exact.cylinder@1.0.0", radius=v(20), height=v(95))], {"b": "c"})
EXACT_BOX = [-20, -20, 0, 20, 20, 95]


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    from aira_kernel_occt.kernel import OcctKernel

    k = OcctKernel()
    yield k
    k.close()


@pytest.mark.parametrize("export", [None, {}, {"tolerance": 1.0, "angular_tolerance": 30}])
def test_query_and_preview_report_the_same_tight_box(kernel: Any, export: Any) -> None:
    """Before and after an STL export (at the default or a coarse tolerance), on the same
    kernel: the box preview measured, the box the query reports, the exact one, equal."""
    preview = kernel.evaluate(CYLINDER).bodies["b"].bounding_box
    if export is not None:
        assert kernel.export(CYLINDER, "stl", "b", **export)
    found = kernel.query(CYLINDER, "query.boundingBox@1.0.0", {"target": "b"})
    assert not found.diagnostics
    tolerance = found.data["tolerance"]
    assert tolerance == geometry.BOX_TOLERANCE
    assert found.data["boundingBox"] == pytest.approx(EXACT_BOX, abs=tolerance)
    assert list(preview) == pytest.approx(found.data["boundingBox"], abs=tolerance)
    again = kernel.evaluate(CYLINDER).bodies["b"].bounding_box
    assert list(again) == pytest.approx(EXACT_BOX, abs=tolerance)


def test_every_measure_says_its_tolerance(kernel: Any) -> None:
    two = doc(
        [
            node("s", "exact.sphere@1.0.0", radius=v(10)),
            node("t", "exact.box@1.0.0", length=v(10), width=v(10), height=v(10)),
            node("m", "exact.translate@1.0.0", target={"node": "t"}, x=v(30)),
        ],
        {"ball": "s", "cube": "m"},
    )
    mass = kernel.query(two, "query.massProperties@1.0.0", {"target": "ball"}).data
    rel = mass["relativeTolerance"]
    assert mass["volume"] == pytest.approx(4 / 3 * math.pi * 1000, rel=rel)
    assert mass["area"] == pytest.approx(4 * math.pi * 100, rel=rel)
    distance = kernel.query(two, "query.distance@1.0.0", {"target": "ball", "tool": "cube"}).data
    assert distance["distance"] == pytest.approx(30 - 5 - 10, abs=distance["tolerance"])
    overlap = kernel.query(two, "query.interference@1.0.0", {"target": "ball", "tool": "cube"}).data
    assert overlap["interferes"] is False and "relativeTolerance" in overlap


def test_the_stated_relative_tolerance_holds_on_b_spline_faces() -> None:
    """Lofts and sweeps (B-spline faces, where Gauss quadrature is not exact): the volume and
    area the queries report are within MEASURE_RELATIVE_TOLERANCE of the adaptive
    integrator's, run to 1e-12."""
    from OCP.BRepGProp import BRepGProp
    from OCP.GProp import GProp_GProps

    cq = geometry.cq
    shapes = [
        cq.Workplane("XY").rect(30, 30).workplane(offset=40).circle(20).loft().val(),
        cq.Workplane("XY").circle(3).sweep(cq.Workplane("XZ").spline([(0, 0), (10, 20), (0, 40)])),
        cq.Workplane("XY").rect(4, 2).sweep(cq.Workplane("XZ").spline([(0, 0), (10, 20), (0, 40)])),
    ]
    for shape in (s.val() if hasattr(s, "val") else s for s in shapes):
        volume, area = GProp_GProps(), GProp_GProps()
        BRepGProp.VolumeProperties_s(shape.wrapped, volume, 1e-12, True)
        BRepGProp.SurfaceProperties_s(shape.wrapped, area, 1e-12)
        rel = geometry.MEASURE_RELATIVE_TOLERANCE
        assert shape.Volume() == pytest.approx(volume.Mass(), rel=rel)
        assert shape.Area() == pytest.approx(area.Mass(), rel=rel)
