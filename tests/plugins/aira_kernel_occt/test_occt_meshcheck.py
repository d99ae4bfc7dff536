"""The exporter's own mesh checks (``aira_kernel_occt.meshcheck``) find each defect a mesh
checker refuses, and a default mesh that fails them is meshed again until it passes: the
old default (0.1 rad) left slivers along a loft's seams; asked for it, the exporter returns a
refined mesh instead. The exported meshes themselves are judged by independent checkers in
test_occt_mesh.py."""

from __future__ import annotations

import pytest

pytest.importorskip("cadquery")

from aira_kernel_occt import geometry, meshcheck

TETRA_V = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
TETRA_T = [(0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2)]


def shifted(dx: float, dy: float = 0.0, dz: float = 0.0, base: int = 0) -> tuple[list, list]:
    v = [(x + dx, y + dy, z + dz) for x, y, z in TETRA_V]
    return v, [(a + base, b + base, c + base) for a, b, c in TETRA_T]


def test_a_closed_tetrahedron_passes() -> None:
    assert meshcheck.problems(TETRA_V, TETRA_T) == []


@pytest.mark.parametrize(
    ("vertices", "triangles", "says"),
    [
        (TETRA_V, TETRA_T[:3], "edges with one triangle"),
        (TETRA_V, [(0, 1, 2), *TETRA_T[1:]], "run twice the same way"),
        (TETRA_V, [*TETRA_T, (0, 1, 1)], "without area"),
    ],
    ids=["open", "flipped", "degenerate"],
)
def test_each_defect_is_found(vertices: list, triangles: list, says: str) -> None:
    found = meshcheck.problems(vertices, triangles)
    assert any(says in line for line in found), found


def test_two_solids_touching_at_a_vertex_pinch() -> None:
    """Two tetrahedra, each closed and wound right, sharing the vertex 0: it has two fans."""
    vertices = [*TETRA_V, (-1.0, 0.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, -1.0)]
    other = [(0, 5, 4), (0, 4, 6), (4, 5, 6), (0, 6, 5)]
    assert (
        meshcheck.problems(
            vertices[:1] + vertices[4:], [(0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2)]
        )
        == []
    )
    found = meshcheck.problems(vertices, TETRA_T + other)
    assert any("pinches" in line for line in found), found


def test_two_overlapping_solids_cross() -> None:
    v2, t2 = shifted(0.3, 0.3, 0.3, base=4)
    found = meshcheck.problems(TETRA_V + v2, TETRA_T + t2)
    assert any("meet away from a shared vertex" in line for line in found), found
    apart_v, apart_t = shifted(5.0, base=4)
    assert meshcheck.problems(TETRA_V + apart_v, TETRA_T + apart_t) == []


def test_a_sliver_is_found() -> None:
    vertices = [*TETRA_V, (0.5, 1e-7, 0.0)]  # on the edge 0-1, nearly
    assert any("thinner than" in line for line in meshcheck.problems(vertices, [(0, 1, 4)]))


def loft() -> geometry.cq.Shape:
    cq = geometry.cq
    return cq.Workplane("XY").rect(30, 30).workplane(offset=40).circle(20).loft().val()


def test_a_default_mesh_that_fails_is_meshed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the old default angle the loft's seams have slivers; the exporter refines (another
    angle from MESH_REFINEMENTS) rather than export them, at a linear deflection no coarser."""
    shape = loft()
    linear = geometry.mesh_tolerance(shape)
    old = geometry.mesh_of(shape, linear, 0.1)
    assert meshcheck.problems(old.vertices, old.triangles)  # the slivers of the issue
    monkeypatch.setattr(geometry, "MESH_ANGULAR_TOLERANCE", 0.1)
    mesh = geometry.triangulate(shape)
    assert meshcheck.problems(mesh.vertices, mesh.triangles) == []
    assert mesh.angular != 0.1 and mesh.linear <= linear
    # a tolerance the caller gives is used as given, checked or not
    asked = geometry.triangulate(shape, linear, 0.1)
    assert (asked.angular, len(asked.triangles)) == (0.1, len(old.triangles))
