"""STL, 3MF and display meshes of the OCCT kernel, read back with independent mesh libraries
(trimesh; at the default tolerances also CGAL's exact self-intersection test and open3d's
manifold checks): every valid closed solid the tests build gives a watertight, manifold,
consistently wound, outward mesh without degenerate, sliver or self-intersecting triangles,
whose volume is the solid's exact volume within the tessellation's error; the default
tolerance follows the part's size, and a user's tolerance (mm) and angular tolerance
(degrees), coarse or fine, are honoured through the kernel the host calls, with the same
guarantees (but the checkers') and more triangles when finer."""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

pytest.importorskip("cadquery")

from occt_docs import doc, node, v

from aira_kernel_occt import geometry

trimesh = pytest.importorskip("trimesh")
np = pytest.importorskip("numpy")  # trimesh's own dependency


def _checker(module: str, package: str) -> Any:
    """An independent mesh checker of the test extra: a failure under CI, a skip elsewhere
    (open3d needs Debian's libusb-1.0-0, which .ci/run installs)."""
    import importlib
    import os

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{package} cannot be imported ({exc}): .ci/run installs it")
        pytest.skip(f"{package} cannot be imported: {exc}")


SLIVER = 1e-4
"""The least height / longest edge a triangle of a default mesh may have: the loft's seam
slivers were 1e-5 (0.0004 mm by 40 mm), which checkers read as crossing their neighbours."""
OPEN3D_SELF_INTERSECTION = {"square to circle loft", "revolved triangle"}
"""The parts whose meshes open3d's own self-intersection test is asked of as well (the ones it
found self-intersecting at the old default). Elsewhere CGAL's exact test decides: open3d's
reports pairs that do not meet when they are nearly coplanar (isl-org/Open3D#5117, #6462),
as on a cone's strips once STL rounds the vertices to float32."""


CORE = "{http://schemas.microsoft.com/3dmanufacturing/core/2015/02}"
VOLUME_REL = 5e-3
"""How far (relative) a mesh's volume may be from the solid's: chords cut curved faces."""
LEVELS: dict[str, dict[str, float]] = {
    "coarse": {"tolerance": 1.0, "angular_tolerance": 30.0},
    "default": {},
    "fine": {"tolerance": 0.01, "angular_tolerance": 4.0},
}
"""Tolerances a user gives the kernel (mm, degrees), coarse to fine; every part the tests
build is finer than 1 mm / 30° and coarser than 0.01 mm / 4° by default."""


def polyline_revolve(points: list[list[float]]) -> list[dict[str, Any]]:
    return [
        node("p", "sketch.polyline@1.0.0", plane=v("XZ"), points=v(points)),
        node("r", "exact.revolve@1.0.0", profile={"node": "p"}, axis=v("Z")),
    ]


def dome() -> list[dict[str, Any]]:
    """A hemisphere r 10 (a sphere less the box below its equator): its apex is a pole."""
    return [
        node("ball", "exact.sphere@1.0.0", radius=v(10)),
        node("below", "exact.box@1.0.0", length=v(30), width=v(30), height=v(15)),
        node("down", "exact.translate@1.0.0", target={"node": "below"}, z=v(-7.5)),
        node("half", "exact.cut@1.0.0", target={"node": "ball"}, tool={"node": "down"}),
    ]


BRACKET = [
    node("plate", "exact.box@1.0.0", length=v(60), width=v(40), height=v(8)),
    node(
        "round",
        "exact.fillet@1.0.0",
        target={"node": "plate"},
        edges={"body": "b", "select": "|Z", "entity": "Edge"},
        radius=v(4),
    ),
    node(
        "drill",
        "exact.hole@1.0.0",
        target={"node": "round"},
        face={"body": "b", "select": ">Z", "entity": "Face"},
        points=v([[-22, -12], [22, -12], [-22, 12], [22, 12]]),
        diameter=v(6),
    ),
]

PARTS = {
    "sphere": ([node("s", "exact.sphere@1.0.0", radius=v(10))], "s"),
    "dome": (dome(), "half"),
    "revolved triangle": (polyline_revolve([[0, 0], [10, 0], [0, 20], [0, 0]]), "r"),
    "revolved ring": (polyline_revolve([[8, 0], [12, 0], [12, 10], [8, 10], [8, 0]]), "r"),
    "cone": ([node("c", "exact.cone@1.0.0", radius1=v(8), radius2=v(0), height=v(12))], "c"),
    "cylinder": ([node("c", "exact.cylinder@1.0.0", radius=v(5), height=v(20))], "c"),
    "torus": ([node("t", "exact.torus@1.0.0", majorRadius=v(10), minorRadius=v(3))], "t"),
    "box with holes and fillets": (BRACKET, "drill"),
    # the parts whose meshes open3d found self-intersecting at the old 0.1 rad (issue 33)
    "square to circle loft": (
        [
            node("a", "sketch.rectangle@1.0.0", plane=v("XY"), width=v(30), height=v(30)),
            node("c", "sketch.circle@1.0.0", plane=v("XY"), offset=v(40), radius=v(20)),
            node("x", "exact.loft@1.0.0", profile={"node": "a"}, to={"node": "c"}),
        ],
        "x",
    ),
    "hexagon to circle loft": (
        [
            node("a", "sketch.polygon@1.0.0", plane=v("XY"), sides=v(6), diameter=v(30)),
            node("c", "sketch.circle@1.0.0", plane=v("XY"), offset=v(25), radius=v(8)),
            node("x", "exact.loft@1.0.0", profile={"node": "a"}, to={"node": "c"}),
        ],
        "x",
    ),
    "bent tube": (
        [
            node("s", "sketch.circle@1.0.0", plane=v("XY"), radius=v(3)),
            node(
                "x",
                "exact.sweep@1.0.0",
                profile={"node": "s"},
                path=v({"points": [[0, 0, 0], [0, 0, 20], {"to": [10, 0, 30], "tangent": True}]}),
            ),
        ],
        "x",
    ),
    "revolved triangle ring": (polyline_revolve([[10, 0], [30, 0], [20, 20], [10, 0]]), "r"),
    "threaded shaft": (
        [
            node("c", "exact.cylinder@1.0.0", radius=v(4), height=v(24)),
            node(
                "t",
                "exact.thread@1.0.0",
                target={"node": "c"},
                face={"body": "b", "select": "%CYLINDER"},
                size=v("M8"),
                length=v(12),
            ),
        ],
        "t",
    ),
    "engraved and embossed plate": (
        [
            node("p", "exact.box@1.0.0", length=v(50), width=v(20), height=v(6)),
            node(
                "s",
                "sketch.text@1.0.0",
                text=v("Aira 2"),
                size=v(6),
                face={"body": "b", "select": ">Z", "entity": "Face"},
            ),
            node(
                "e", "exact.pocket@1.0.0", target={"node": "p"}, profile={"node": "s"}, depth=v(0.6)
            ),
            node(
                "s2",
                "sketch.text@1.0.0",
                text=v("P-10"),
                size=v(5),
                face={"body": "b", "select": "<Z", "entity": "Face"},
            ),
            node("x", "exact.extrude@1.0.0", profile={"node": "s2"}, distance=v(0.8)),
            node("u", "exact.union@1.0.0", target={"node": "e"}, tool={"node": "x"}),
        ],
        "u",
    ),
    "tapped plate": (
        [
            node("p", "exact.box@1.0.0", length=v(20), width=v(20), height=v(8)),
            node(
                "h",
                "exact.hole@1.0.0",
                target={"node": "p"},
                face={"body": "b", "select": ">Z", "entity": "Face"},
                points=v([[0, 0]]),
                diameter=v(5),
            ),
            node(
                "t",
                "exact.thread@1.0.0",
                target={"node": "h"},
                face={"body": "b", "select": "%CYLINDER"},
                size=v("M6"),
            ),
        ],
        "t",
    ),
}


def exact_volume(document: dict[str, Any], body: str = "b") -> float:
    out = geometry.evaluate(document, None, {})
    assert out["diagnostics"] == [] and out["bodies"][body]["valid"] is True
    return out["bodies"][body]["volume"]


def stl_mesh(data: bytes) -> Any:
    """The STL as trimesh reads it: vertices merged by position, nothing else repaired."""
    mesh = trimesh.load(io.BytesIO(data), file_type="stl", process=False)
    mesh.merge_vertices()
    return mesh


def threemf_mesh(data: bytes) -> Any:
    """The 3MF's meshes as written (indexed vertices, no merging): its own welding counts."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        root = ET.fromstring(package.read("3D/3dmodel.model"))
    vertices: list[list[float]] = []
    faces: list[list[int]] = []
    for mesh in root.iter(f"{CORE}mesh"):
        base = len(vertices)
        vertices += [[float(e.get(k)) for k in "xyz"] for e in mesh.iter(f"{CORE}vertex")]
        faces += [
            [base + int(e.get(k)) for k in ("v1", "v2", "v3")] for e in mesh.iter(f"{CORE}triangle")
        ]
    return trimesh.Trimesh(np.array(vertices), np.array(faces), process=False)


def assert_closed(mesh: Any, volume: float, what: str, error: float = 0.0) -> None:
    """Closed, manifold, outward, no degenerate triangle, and the solid's ``volume`` within
    VOLUME_REL or ``error`` mm³, whichever is larger (a coarse mesh's chords, each within its
    linear tolerance of the surface, may cut off up to area × tolerance)."""
    size = float(np.linalg.norm(mesh.extents))
    assert len(mesh.faces) > 0, what
    areas = mesh.area_faces
    assert int((areas <= 1e-10 * size**2).sum()) == 0, f"{what}: degenerate triangles"
    assert mesh.is_watertight, f"{what}: not watertight"
    assert mesh.is_winding_consistent, f"{what}: inconsistent winding"
    assert mesh.volume > 0, f"{what}: inside out"
    assert abs(mesh.volume - volume) <= max(VOLUME_REL * volume, error), (what, mesh.volume)


def assert_clean(mesh: Any, what: str) -> None:
    """The checks of the mesh as the file holds it: no sliver; CGAL (exact predicates): a
    closed polygon mesh that does not self-intersect; open3d: every edge with two triangles,
    every vertex one fan (and, for OPEN3D_SELF_INTERSECTION, its own crossing test)."""
    vertices = np.asarray(mesh.vertices, dtype=float)
    faces = np.asarray(mesh.faces, dtype=np.int64)
    p = vertices[faces]
    longest = np.linalg.norm(p - np.roll(p, 1, axis=1), axis=2).max(axis=1)
    height = np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1) / longest
    assert (height / longest).min() >= SLIVER, f"{what}: sliver triangles"
    pmp = _checker("CGAL.CGAL_Polygon_mesh_processing", "cgal")
    from CGAL.CGAL_Kernel import Point_3
    from CGAL.CGAL_Polyhedron_3 import Polyhedron_3

    points, polygons = pmp.Point_3_Vector(), pmp.Polygon_Vector()
    for x, y, z in vertices.tolist():
        points.append(Point_3(x, y, z))
    for face in faces.tolist():
        polygon = pmp.Int_Vector()
        for i in face:
            polygon.append(i)
        polygons.append(polygon)
    polyhedron = Polyhedron_3()
    pmp.polygon_soup_to_polygon_mesh(points, polygons, polyhedron)
    assert polyhedron.size_of_facets() == len(faces), f"{what}: not a polygon mesh (CGAL)"
    assert polyhedron.is_closed(), f"{what}: not closed (CGAL)"
    assert not pmp.does_self_intersect(polyhedron), f"{what}: self-intersecting (CGAL)"
    o3d = _checker("open3d", "open3d-cpu")
    checked = o3d.geometry.TriangleMesh(
        o3d.utility.Vector3dVector(vertices), o3d.utility.Vector3iVector(faces.astype(np.int32))
    )
    assert checked.is_edge_manifold(allow_boundary_edges=False), f"{what}: not edge-manifold"
    assert checked.is_vertex_manifold(), f"{what}: not vertex-manifold (open3d)"
    if what.split(" at ")[0] in OPEN3D_SELF_INTERSECTION:
        assert not checked.is_self_intersecting(), f"{what}: self-intersecting (open3d)"


def check_exports(
    export: Any, volume: float, what: str, error: float = 0.0, display: bool = True
) -> int:
    """STL, 3MF and (``display``) display mesh of one body: closed, and the same
    tessellation; its number of triangles."""
    stl = export("stl")
    assert_closed(stl_mesh(stl), volume, f"{what} (stl)", error)
    threemf = threemf_mesh(export("3mf"))
    assert_closed(threemf, volume, f"{what} (3mf)", error)
    if "at default" in what:  # the guarantee is the defaults' (a user's tolerance is used as given)
        assert_clean(stl_mesh(stl), f"{what} (stl)")
        assert_clean(threemf, f"{what} (3mf)")
    (count,) = np.frombuffer(stl[80:84], dtype="<u4")
    assert int(count) == len(threemf.faces)
    if display:
        (body,) = json.loads(export("mesh"))["bodies"]
        assert len(body["triangles"]) == 3 * len(threemf.faces)
    return len(threemf.faces)


def check_levels(export: Any, volume: float, area: float, what: str) -> None:
    """:func:`check_exports` at every level of LEVELS (the display mesh, the same
    tessellation, at one: it costs a third of the time); finer levels, more triangles."""
    counts = []
    for level, tolerances in LEVELS.items():
        error = area * tolerances.get("tolerance", 0.0)

        def at(kind: str, tolerances: dict[str, float] = tolerances) -> bytes:
            return export(kind, **tolerances)

        display = level == "fine"
        counts.append(check_exports(at, volume, f"{what} at {level}", error, display))
    assert counts == sorted(set(counts)), (what, dict(zip(LEVELS, counts, strict=True)))


@pytest.mark.parametrize("name", PARTS)
def test_every_part_meshes_closed_with_its_volume(name: str, kernel: Any) -> None:
    """Through the kernel the host calls (the worker, the host's units), at the default and
    at a coarse and a fine user tolerance."""
    nodes, tip = PARTS[name]
    document = doc(nodes, {"b": tip})
    result = kernel.evaluate(document).bodies["b"]
    assert result.valid and result.volume == pytest.approx(exact_volume(document), rel=1e-9)

    def export(kind: str, **tolerances: float) -> bytes:
        data = kernel.export(document, kind, "b", **tolerances)
        assert data, kernel.last_export_diagnostics
        return data

    check_levels(export, result.volume, result.area, name)


def test_the_pole_of_a_sphere_leaves_no_degenerate_triangle() -> None:
    """BRepMesh closes a sphere's pole with triangles that have two nodes at the apex; the
    mesh keeps none of them (they would leave the fan open to an STL reader)."""
    document = doc([node("s", "exact.sphere@1.0.0", radius=v(10))], {"b": "s"})
    mesh = trimesh.load(
        io.BytesIO(geometry.export(document, "stl", "b", {})["data"]),
        file_type="stl",
        process=False,
    )
    triangles = mesh.triangles.reshape(-1, 3, 3)
    apex = np.array([0.0, 0.0, 10.0])
    at_apex = (np.linalg.norm(triangles - apex, axis=2) < 1e-9).sum(axis=1)
    assert at_apex.max() == 1  # every triangle touches the pole at most once


def test_the_default_tolerance_follows_the_part_size() -> None:
    """A sphere 20 times bigger gets about as many triangles (a fixed tolerance would give it
    hundreds of times more); an explicit tolerance is honoured and stays closed."""

    def triangles(radius: float, **tolerances: float) -> int:
        document = doc([node("s", "exact.sphere@1.0.0", radius=v(radius))], {"b": "s"})
        out = geometry.export(document, "stl", "b", {}, **tolerances)
        assert out["diagnostics"] == []
        mesh = stl_mesh(out["data"])
        assert mesh.is_watertight
        return len(mesh.faces)

    small, big = triangles(10), triangles(200)
    assert 0.5 <= big / small <= 2
    coarse = triangles(10, tolerance=0.5, angular_tolerance=0.5)  # the geometry's radians
    fine = triangles(10, tolerance=0.005, angular_tolerance=0.06)
    assert coarse < small < fine
    assert geometry.mesh_tolerance(geometry.cq.Solid.makeBox(1e4, 1e4, 1e4)) == (
        geometry.MESH_TOLERANCE_MAX
    )
    tiny = geometry.mesh_tolerance(geometry.cq.Solid.makeBox(0.01, 0.01, 0.01))
    assert tiny == geometry.MESH_TOLERANCE_MIN


def test_the_same_part_exports_the_same_bytes() -> None:
    """An earlier, finer tessellation left on a cached shape does not change the next one."""
    document = doc(BRACKET, {"b": "drill"})
    cache: dict[str, Any] = {}
    first = geometry.export(document, "stl", "b", cache)["data"]
    geometry.export(document, "stl", "b", cache, tolerance=0.001, angular_tolerance=0.06)
    assert geometry.export(document, "stl", "b", cache)["data"] == first
    assert (
        geometry.export(document, "3mf", "b", {})["data"]
        == (geometry.export(document, "3mf", "b", cache)["data"])
    )


# -- through the kernel ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    from aira_kernel_occt.kernel import OcctKernel

    k = OcctKernel()
    yield k
    k.close()


def test_the_kernel_takes_degrees_and_millimetres(kernel: Any) -> None:
    """The host's angle (degrees) is the geometry's radians: the same bytes as asking the
    geometry directly, and not the bytes of the default."""
    nodes, tip = PARTS["torus"]
    document = doc(nodes, {"b": tip})
    by_kernel = kernel.export(document, "stl", "b", tolerance=0.05, angular_tolerance=10)
    direct = geometry.export(
        document, "stl", "b", {}, tolerance=0.05, angular_tolerance=math.radians(10)
    )
    assert by_kernel == direct["data"] and by_kernel != kernel.export(document, "stl", "b")
    mesh = json.loads(kernel.export(document, "mesh", "b", tolerance=0.05, angular_tolerance=10))
    assert mesh["tolerance"] == 0.05


def test_the_ends_of_the_ranges_mesh_closed(kernel: Any) -> None:
    """The coarsest tolerances the host passes (10 mm, 60°) and the finest (1 µm on a ball
    small enough to allow it, 3°) still give closed meshes with their volume."""
    from aira_core.extensions import EXPORT_ANGULAR_TOLERANCE_RANGE, EXPORT_TOLERANCE_RANGE

    (fine, coarse), (finest, coarsest) = EXPORT_TOLERANCE_RANGE, EXPORT_ANGULAR_TOLERANCE_RANGE
    document = doc([node("s", "exact.sphere@1.0.0", radius=v(5))], {"b": "s"})
    result = kernel.evaluate(document).bodies["b"]
    counts = []
    for tolerance, angle in ((coarse, coarsest), (fine, finest)):
        data = kernel.export(document, "stl", "b", tolerance=tolerance, angular_tolerance=angle)
        assert data, kernel.last_export_diagnostics
        mesh = stl_mesh(data)
        assert_closed(
            mesh, result.volume, f"ball at {tolerance} mm, {angle}°", result.area * tolerance
        )
        counts.append(len(mesh.faces))
    assert counts[0] < counts[1]


@pytest.mark.parametrize(
    ("tolerances", "says"),
    [
        ({"tolerance": 0.005}, "1/30000 of its bounding-box diagonal"),  # a 400 mm sphere
        ({"tolerance": 0.0}, "from 0.001 to 10 mm"),
        ({"tolerance": float("nan")}, "from 0.001 to 10 mm"),
        ({"tolerance": "fine"}, "not 'fine'"),
        ({"angular_tolerance": 1.0}, "from 3 to 60 degrees, not 1"),
        ({"angular_tolerance": "x"}, "not 'x'"),
    ],
)
def test_the_kernel_refuses_what_it_cannot_mesh(kernel: Any, tolerances: Any, says: str) -> None:
    """Called directly (the host would have refused most of these itself), the kernel writes
    nothing and says why with a declared code; it keeps working."""
    document = doc([node("s", "exact.sphere@1.0.0", radius=v(400))], {"b": "s"})
    for kind in ("stl", "3mf", "mesh"):
        assert kernel.export(document, kind, "b", **tolerances) == b""
        (found,) = kernel.last_export_diagnostics
        assert found.code == "KERNEL_INPUT_INVALID" and says in found.message, found
    assert kernel.export(document, "stl", "b", angular_tolerance=30)


@pytest.mark.parametrize("name", ["bracket", "flanged_shaft", "parametric_edit"])
def test_the_bundled_parts_mesh_closed(
    aira_home: Path, register_plugin, tmp_path: Path, kernel: Any, name: str
) -> None:
    import aira_kernel_occt.plugin
    from aira_core.runtime.contract import TerminalState
    from aira_core.step.runner import _open, bundled_script, run_script

    register_plugin(aira_kernel_occt.plugin, "occt")
    store = tmp_path / "store.sqlite3"
    run = run_script(
        bundled_script(name), kernel=kernel, store=store, trajectory=tmp_path / "t.jsonl"
    )
    assert run.outcome.terminal is TerminalState.COMPLETED, run.outcome.reason
    repository, _ = _open(store)
    try:
        document = repository.document(run.outcome.head)
    finally:
        repository.close()
    evaluation = kernel.evaluate(document)
    assert evaluation.ok, evaluation.diagnostics
    for body in document.bodies:
        result = evaluation.bodies[body.id]
        assert result.valid

        def export(kind: str, bid: str = body.id, **tolerances: float) -> bytes:
            data = kernel.export(document, kind, bid, **tolerances)
            assert data, kernel.last_export_diagnostics
            return data

        check_levels(export, result.volume, result.area, f"{name}/{body.id}")
