"""The geometry of the OCCT kernel: AMIR documents evaluated with CadQuery/OpenCASCADE.

Imported only inside the kernel's worker process (it imports CadQuery at the top). Everything
here speaks plain dicts (AMIR wire dicts in, JSON-like dicts out) so that it can sit on the
other side of a pipe; every failure is a diagnostic dict ``{code, message, subject?}`` with a
stable code, never an OpenCASCADE exception.

Evaluation is incremental: a node's result is cached under a key made of its operation and
its resolved inputs (numbers in base units, upstream shapes replaced by their own keys,
selections by the key of the shape they select on plus their filters), so a document where one
parameter changed recomputes only the nodes downstream of it.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cadquery as cq
from OCP.BRep import BRep_Tool
from OCP.BRepAlgoAPI import BRepAlgoAPI_Common, BRepAlgoAPI_Cut, BRepAlgoAPI_Fuse
from OCP.BRepCheck import BRepCheck_Analyzer
from OCP.TopAbs import TopAbs_SOLID
from OCP.TopExp import TopExp_Explorer
from OCP.TopoDS import TopoDS_Iterator
from OCP.TopTools import TopTools_ListOfShape

from aira_core.canonical import CanonicalJSONError, canonical_bytes, sha256_hex
from aira_core.contracts.amir import ParamType, param_fits, to_base
from aira_core.diagnostics import AiraError
from aira_core.extensions import EXPORT_ANGULAR_TOLERANCE_RANGE, EXPORT_TOLERANCE_RANGE
from aira_kernel_occt import fonts, threads
from aira_kernel_occt.operations import (
    ANGLE,
    BOOL,
    BY_REF,
    COUNT,
    JSON,
    LENGTH,
    MAX_HOLES,
    OPERATIONS,
    PATH_MAX_TURNS,
    REAL,
    SELECTION,
    SELECTION_FILTERS,
    SHAPE,
    STRING,
    Input,
    Operation,
    is_profile,
)

BOOLEAN_EMPTY_RESULT = "BOOLEAN_EMPTY_RESULT"
BOUNDING_BOX_EXCEEDED = "BOUNDING_BOX_EXCEEDED"
CHAMFER_TOO_LARGE = "CHAMFER_TOO_LARGE"
FILLET_RADIUS_TOO_LARGE = "FILLET_RADIUS_TOO_LARGE"
HOLE_FACE_NOT_PLANAR = "HOLE_FACE_NOT_PLANAR"
HOLE_OFF_FACE = "HOLE_OFF_FACE"
HOLE_PATTERN_MISMATCH = "HOLE_PATTERN_MISMATCH"
INTERFERENCE_FOUND = "INTERFERENCE_FOUND"
KERNEL_EXPORT_FAILED = "KERNEL_EXPORT_FAILED"
KERNEL_INPUT_INVALID = "KERNEL_INPUT_INVALID"
KERNEL_OPERATION_FAILED = "KERNEL_OPERATION_FAILED"
KERNEL_OPERATION_UNKNOWN = "KERNEL_OPERATION_UNKNOWN"
KERNEL_REFERENCE_CYCLE = "KERNEL_REFERENCE_CYCLE"
KERNEL_REFERENCE_UNRESOLVED = "KERNEL_REFERENCE_UNRESOLVED"
LOFT_FAILED = "LOFT_FAILED"
OFFSET_COLLAPSED = "OFFSET_COLLAPSED"
PARAMETER_OUT_OF_RANGE = "PARAMETER_OUT_OF_RANGE"
PATH_INVALID = "PATH_INVALID"
POCKET_MISSES_BODY = "POCKET_MISSES_BODY"
PROFILE_NOT_CLOSED = "PROFILE_NOT_CLOSED"
PROFILE_SELF_INTERSECTING = "PROFILE_SELF_INTERSECTING"
PROFILE_SUBTRACT_FAILED = "PROFILE_SUBTRACT_FAILED"
PROFILE_FACE_INVALID = "PROFILE_FACE_INVALID"
REVOLVE_CROSSES_AXIS = "REVOLVE_CROSSES_AXIS"
STEP_IMPORT_FAILED = "STEP_IMPORT_FAILED"
QUERY_TARGET_UNKNOWN = "QUERY_TARGET_UNKNOWN"
SELECTION_CARDINALITY_MISMATCH = "SELECTION_CARDINALITY_MISMATCH"
SELECTION_EMPTY = "SELECTION_EMPTY"
SELECTION_INVALID = "SELECTION_INVALID"
SHELL_FAILED = "SHELL_FAILED"
SOLID_INVALID = "SOLID_INVALID"
SWEEP_FAILED = "SWEEP_FAILED"
TEXT_GLYPH_MISSING = "TEXT_GLYPH_MISSING"
TEXT_INVALID = "TEXT_INVALID"
THREAD_FACE_INVALID = "THREAD_FACE_INVALID"
THREAD_FAILED = "THREAD_FAILED"
THREAD_SIZE_MISMATCH = "THREAD_SIZE_MISMATCH"
THREAD_TOO_LONG = "THREAD_TOO_LONG"
VOLUME_OUT_OF_RANGE = "VOLUME_OUT_OF_RANGE"
WALL_TOO_THIN = "WALL_TOO_THIN"
WALL_THICKNESS_UNMEASURED = "WALL_THICKNESS_UNMEASURED"

CACHE_LIMIT = 2048
"""Node results kept (least recently used dropped first)."""
EMPTY_VOLUME = 1e-9
"""A boolean result with less volume than this (mm³) is empty."""
BOX_TOLERANCE = 1e-6
"""How far (mm) a bounding box may be from the exact one (:func:`box`), and so how much it
may exceed an envelope; ``query.boundingBox`` says it."""
MEASURE_RELATIVE_TOLERANCE = 1e-7
"""How far (relative) a volume, area or centre of mass may be from the exact one: OpenCASCADE
integrates them by Gauss quadrature, exact for planes and quadrics and within 4e-8 on the
swept and lofted B-spline faces the tests build (test_occt_queries.py measures it against the
adaptive integrator); the queries say it."""
DISTANCE_TOLERANCE = 1e-7
"""How far (mm) a measured distance may be from the exact one (BRepExtrema's precision)."""
ON_FACE_TOLERANCE = 1e-6
"""A hole centre farther than this (mm) from its face is off the face."""
REVOLVE_SAMPLES = 256
"""Points per profile edge checked against the axis of a revolve."""
CLOSE_TOLERANCE = 1e-6
"""How far (mm) a polyline's last point may be from its first and still close it."""
MIN_LENGTH = 1e-6
"""The smallest length (mm) a dimension may have: ten times OpenCASCADE's confusion
tolerance (1e-7 mm); below it the algorithms fail without a message."""
MAX_LENGTH = 1e6
"""The largest (mm): a kilometre, far beyond any part, far below OpenCASCADE's "infinite"."""
STEP_MAX_BYTES = 8 * 1024 * 1024
"""The largest STEP text importStep accepts."""

_PARAM_TYPES = {t.value for t in ParamType}
_NUMERIC = (LENGTH, ANGLE, REAL)


class Failure(Exception):
    """An expected failure of one node, query or check: a stable code and a message, and
    for a repairable one the typed ``expected`` / ``actual`` values a repair computes from."""

    def __init__(
        self, code: str, message: str, *, expected: Any = None, actual: Any = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.expected = expected
        self.actual = actual

    def diagnostic(self, subject: str | None = None) -> dict[str, Any]:
        return diagnostic(
            self.code, self.message, subject, expected=self.expected, actual=self.actual
        )


def diagnostic(
    code: str,
    message: str,
    subject: str | None = None,
    *,
    expected: Any = None,
    actual: Any = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"code": code, "message": message}
    if subject is not None:
        out["subject"] = subject
    if expected is not None:
        out["expected"] = expected
    if actual is not None:
        out["actual"] = actual
    return out


# -- shapes -------------------------------------------------------------------------------------


def has_solid(shape: cq.Shape) -> bool:
    """Whether ``shape`` holds a solid (without listing them all, as ``Solids()`` does)."""
    return bool(TopExp_Explorer(shape.wrapped, TopAbs_SOLID).More())


_BOOLEANS = {"cut": BRepAlgoAPI_Cut, "union": BRepAlgoAPI_Fuse, "intersect": BRepAlgoAPI_Common}


def boolean(kind: str, target: cq.Shape, *tools: cq.Shape) -> cq.Shape:
    """``target`` cut by, fused with or intersected with ``tools``. Non-destructive: by
    default OpenCASCADE may change its arguments (their tolerances) in place, and arguments
    here are cached node results other nodes and later evaluations reuse. No history is
    kept (nothing reads it)."""
    op = _BOOLEANS[kind]()
    arguments, others = TopTools_ListOfShape(), TopTools_ListOfShape()
    arguments.Append(target.wrapped)
    for tool in tools:
        others.Append(tool.wrapped)
    op.SetArguments(arguments)
    op.SetTools(others)
    op.SetNonDestructive(True)
    op.SetToFillHistory(False)
    op.SetRunParallel(True)
    op.Build()
    if not op.IsDone():
        raise Failure(KERNEL_OPERATION_FAILED, f"the {kind} failed in OpenCASCADE")
    return cq.Shape.cast(op.Shape())


def _cleaned(shape: cq.Shape) -> cq.Shape:
    """A boolean's result with coplanar faces merged; if OpenCASCADE cannot merge them the
    result stands as it is (cleaning only tidies, it never changes the volume)."""
    with contextlib.suppress(Exception):
        return shape.clean()
    return shape


def _solid_or_compound(shape: cq.Shape) -> cq.Shape:
    """A compound of exactly one solid (what booleans return) as that solid. Looks at the
    compound's direct children only: listing every solid and shell of a large result (as
    ``Solids()`` and ``Shells()`` do) cost more than a small boolean."""
    if not isinstance(shape, cq.Compound):
        return shape
    children = TopoDS_Iterator(shape.wrapped)
    if not children.More():
        return shape
    only = children.Value()
    children.Next()
    if children.More() or only.ShapeType() != TopAbs_SOLID:
        return shape
    return cq.Shape.cast(only)


def closed_shells(shape: cq.Shape) -> bool:
    shells = shape.Shells()
    return bool(shells) and all(BRep_Tool.IsClosed_s(s.wrapped) for s in shells)


def solid_problem(shape: cq.Shape | None) -> str | None:
    """Why ``shape`` is not a valid solid, or None."""
    if shape is None or shape.isNull():
        return "the result is empty (a null shape)"
    if not has_solid(shape):
        return f"the result is a {shape.ShapeType()} without any solid"
    # parallel: the check of a large result is the most expensive measure of a node
    if not BRepCheck_Analyzer(shape.wrapped, True, True).IsValid():
        return "the result fails the BRep check"
    if not closed_shells(shape):
        return "the result has an open shell"
    return None


def box(shape: cq.Shape) -> cq.occ_impl.geom.BoundBox:
    """The shape's tight box, from its geometry alone (within :data:`BOX_TOLERANCE`).
    ``Shape.BoundingBox`` uses a mesh left on the shape when there is one, so after an export
    it grew by the mesh's deflection on curved faces only ([-20.0062, -20.0000001, …] for a
    40 mm cylinder that preview had measured [-20, -20, …]); preview, queries and validators
    all measure with this one."""
    from OCP.Bnd import Bnd_Box
    from OCP.BRepBndLib import BRepBndLib

    found = Bnd_Box()
    BRepBndLib.AddOptimal_s(shape.wrapped, found, False, False)
    return cq.occ_impl.geom.BoundBox(found)


def stats(shape: cq.Shape, *, known_valid: bool = False) -> dict[str, Any]:
    """Measures of a shape; ``known_valid`` skips the BRep check for a shape that
    :func:`build` already checked (the check is the most expensive measure)."""
    bb = box(shape)
    return {
        "valid": known_valid or solid_problem(shape) is None,
        "volume": shape.Volume(),
        "area": shape.Area(),
        "boundingBox": [bb.xmin, bb.ymin, bb.zmin, bb.xmax, bb.ymax, bb.zmax],
    }


SIZE_TOLERANCE = 1e-6
"""How far (mm, mm²) a measured radius, length or area may be from the size a selection
asks for and still match it (or 1e-9 of the size, for a size above 1000)."""
NEAREST_TOLERANCE = 1e-6
"""Entities this much (mm) farther from a ``nearest`` point than the nearest one still tie
with it (all of them are selected)."""
_SIZES = {"radius": ("Edge", "Face"), "length": ("Edge",), "area": ("Face",)}
"""Which entity kinds each size filter measures."""
_UNITS = {"radius": "mm", "length": "mm", "area": "mm²"}
_PLURAL = {"radius": "radii", "length": "lengths", "area": "areas"}
_ENTITIES = ("Face", "Edge", "Vertex")


@dataclass(frozen=True)
class Selection:
    """A selection's filters, checked (see :func:`selection`): ``sizes`` maps radius,
    length or area to an inclusive (low, high) range, a single size being its value ±
    :data:`SIZE_TOLERANCE`; ``asked`` keeps each filter as written, for messages and keys."""

    entity: str
    select: str | None = None
    sizes: tuple[tuple[str, float, float], ...] = ()
    between: tuple[str, str] | None = None
    nearest: tuple[float, float, float] | None = None
    asked: Mapping[str, Any] = field(default_factory=dict)

    def key(self) -> list[Any]:
        """What the node cache key holds of it: the selector and entity as always, and only
        when another filter is given, the filters as written (so a selection of a selector
        alone keeps the key, and the result hash, it always had)."""
        out: list[Any] = [str(self.select), self.entity]
        extra = {k: v for k, v in self.asked.items() if k != "select"}
        return [*out, extra] if extra else out


def _finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def _size(name: str, raw: Any) -> tuple[float, float]:
    unit = _UNITS[name]
    if _finite(raw):
        if raw <= 0:
            raise Failure(SELECTION_INVALID, f"{name} must be greater than 0 {unit}, not {raw:g}")
        tolerance = max(SIZE_TOLERANCE, abs(raw) * 1e-9)
        return float(raw) - tolerance, float(raw) + tolerance
    if isinstance(raw, Mapping) and raw and set(raw) <= {"min", "max"}:
        low, high = raw.get("min"), raw.get("max")
        for bound, value in (("min", low), ("max", high)):
            if value is not None and not _finite(value):
                raise Failure(SELECTION_INVALID, f"{name}.{bound} must be a number, not {value!r}")
        if low is not None and low < 0:
            raise Failure(SELECTION_INVALID, f"{name}.min must be at least 0, not {low:g}")
        if high is not None and high <= 0:
            raise Failure(SELECTION_INVALID, f"{name}.max must be greater than 0, not {high:g}")
        if low is not None and high is not None and low > high:
            raise Failure(SELECTION_INVALID, f"{name}: min {low:g} is above max {high:g}")
        return (
            -math.inf if low is None else float(low) - SIZE_TOLERANCE,
            math.inf if high is None else float(high) + SIZE_TOLERANCE,
        )
    raise Failure(
        SELECTION_INVALID,
        f"{name} is a size in {unit} (a number) or a range {{min?, max?}}, not {raw!r}"[:300],
    )


def selection(raw: Mapping[str, Any], *, skip: Iterable[str] = ()) -> Selection:
    """The filters of a selection ``{body, select?, entity?, radius?, length?, area?,
    between?, nearest?}`` (or of selectEntities' arguments), checked: ``SELECTION_INVALID``
    for a value of the wrong kind (NaN, a negative radius, a point of two coordinates, a
    filter that does not measure the entity, no filter at all). ``skip``: fields that are
    not filters here (``body``, ``target``)."""
    unknown = sorted(set(raw) - {*SELECTION_FILTERS, "entity", *skip})
    if unknown:
        raise Failure(
            SELECTION_INVALID,
            f"a selection has no field {', '.join(map(repr, unknown))}; it takes "
            + ", ".join(("entity", *SELECTION_FILTERS)),
        )
    entity = raw.get("entity", "Face")
    if entity not in _ENTITIES:
        raise Failure(SELECTION_INVALID, f"cannot select entities of kind {entity!r}")
    asked = {k: raw[k] for k in SELECTION_FILTERS if raw.get(k) is not None}
    if not asked:
        raise Failure(
            SELECTION_INVALID,
            "a selection needs select (a CadQuery selector) or another filter: "
            + ", ".join(SELECTION_FILTERS[1:]),
        )
    selector = asked.get("select")
    if selector is not None and (not isinstance(selector, str) or not selector):
        raise Failure(SELECTION_INVALID, f"select must be a CadQuery selector, not {selector!r}")
    sizes = []
    for name, kinds in _SIZES.items():
        if name in asked:
            if entity not in kinds:
                raise Failure(
                    SELECTION_INVALID,
                    f"{name} does not measure a {entity.lower()}: it selects "
                    + " or ".join(k.lower() + "s" for k in kinds),
                )
            sizes.append((name, *_size(name, asked[name])))
    between = asked.get("between")
    if between is not None:
        if entity == "Face":
            raise Failure(
                SELECTION_INVALID,
                "between selects the edges or vertices two faces share, not faces",
            )
        if (
            not isinstance(between, list | tuple)
            or len(between) != 2
            or not all(isinstance(s, str) and s for s in between)
        ):
            raise Failure(
                SELECTION_INVALID,
                f"between takes two face selectors [selector, selector], not {between!r}"[:300],
            )
        between = (between[0], between[1])
    nearest = asked.get("nearest")
    if nearest is not None:
        if (
            not isinstance(nearest, list | tuple)
            or len(nearest) != 3
            or not all(_finite(c) for c in nearest)
        ):
            raise Failure(
                SELECTION_INVALID,
                f"nearest takes a point [x, y, z] of three numbers (mm), not {nearest!r}"[:300],
            )
        nearest = (float(nearest[0]), float(nearest[1]), float(nearest[2]))
    return Selection(entity, selector, tuple(sizes), between, nearest, asked)


def _selector(selector: str) -> Any:
    try:
        return cq.selectors.StringSyntaxSelector(selector)
    except Exception as exc:
        where = getattr(exc, "loc", None)
        at = f" (at character {where})" if isinstance(where, int) else ""
        raise Failure(
            SELECTION_INVALID, f"{selector!r} is not a CadQuery string selector{at}"
        ) from None


def _chosen(shape: cq.Shape, selector: str, entity: str, body: str) -> list[cq.Shape]:
    """The ``entity`` items of ``shape`` a CadQuery string selector chooses (maybe none)."""
    chooser = _selector(selector)
    items = {"Edge": shape.Edges, "Face": shape.Faces, "Vertex": shape.Vertices}[entity]
    try:
        return list(chooser.filter(items()))
    except Exception as exc:
        raise Failure(
            SELECTION_INVALID, f"selector {selector!r} failed on body {body!r}: {exc}"
        ) from None


def radius_of(item: cq.Shape) -> float | None:
    """The radius of a circular edge (a circle or an arc) or of a cylindrical or spherical
    face; None for anything else."""
    kind = item.geomType()
    if isinstance(item, cq.Edge) and kind == "CIRCLE":
        return item.radius()
    if isinstance(item, cq.Face) and kind in ("CYLINDER", "SPHERE"):
        from OCP.BRepAdaptor import BRepAdaptor_Surface

        surface = BRepAdaptor_Surface(item.wrapped)
        return (surface.Cylinder() if kind == "CYLINDER" else surface.Sphere()).Radius()
    return None


_MEASURES: dict[str, Callable[[cq.Shape], float | None]] = {
    "radius": radius_of,
    "length": lambda item: item.Length() if isinstance(item, cq.Edge) else None,
    "area": lambda item: item.Area() if isinstance(item, cq.Face) else None,
}


def _listed(values: Iterable[float], limit: int = 12) -> str:
    distinct = sorted({round(v, 6) for v in values})
    shown = ", ".join(f"{v:g}" for v in distinct[:limit])
    return shown + (f" and {len(distinct) - limit} more" if len(distinct) > limit else "")


def select(
    shape: cq.Shape, chosen: Selection | str, entity: str = "Face", body: str = "?"
) -> list[cq.Shape]:
    """The items (Edge, Face, Vertex) of ``shape`` a selection chooses: its filters applied
    in order (``select``, ``radius``, ``length``, ``area``, ``between``, ``nearest``), each
    narrowing what the ones before it left (no ``select``: every item of the kind).
    ``SELECTION_INVALID`` for a selector that does not parse, ``SELECTION_EMPTY`` when the
    filters leave nothing, saying which filter emptied the choice and what sizes there
    were. A plain string is a selector on ``entity`` items (the form selections always had)."""
    if isinstance(chosen, str):
        chosen = Selection(entity, chosen, asked={"select": chosen})
    entity, noun = chosen.entity, chosen.entity.lower()
    if entity not in _ENTITIES:
        raise Failure(SELECTION_INVALID, f"cannot select entities of kind {entity!r}")
    if chosen.select is not None:
        items = _chosen(shape, chosen.select, entity, body)
        if not items:
            raise Failure(
                SELECTION_EMPTY, f"selector {chosen.select!r} selects no {noun} of body {body!r}"
            )
        so_far = f"of the {len(items)} {noun}(s) {chosen.select!r} selects"
    else:
        items = {"Edge": shape.Edges, "Face": shape.Faces, "Vertex": shape.Vertices}[entity]()
        so_far = f"of the {len(items)} {noun}(s)"
    for name, low, high in chosen.sizes:
        measured = [(item, _MEASURES[name](item)) for item in items]
        kept = [item for item, m in measured if m is not None and low <= m <= high]
        if not kept:
            found = [m for _, m in measured if m is not None]
            have = (
                f"they have {_PLURAL[name]} {_listed(found)} {_UNITS[name]}"
                if found
                else f"none has a {name}"
            )
            if name == "radius" and len(found) < len(measured):
                have += f" ({len(measured) - len(found)} without a radius)"
            raise Failure(
                SELECTION_EMPTY,
                f"{so_far} on body {body!r}, none has {name} {chosen.asked[name]!r}: {have}",
            )
        items = kept
        so_far = f"of the {len(items)} {noun}(s) left by {name}"
    if chosen.between is not None:
        sides = []
        for selector in chosen.between:
            faces = _chosen(shape, selector, "Face", body)
            if not faces:
                raise Failure(
                    SELECTION_EMPTY, f"between: {selector!r} selects no face of body {body!r}"
                )
            sides.append(faces)
        parts = (lambda f: set(f.Edges())) if entity == "Edge" else (lambda f: set(f.Vertices()))
        first, second = ([(face, parts(face)) for face in side] for side in sides)
        items = [item for item in items if _between(item, first, second)]
        if not items:
            first, second = chosen.between
            raise Failure(
                SELECTION_EMPTY,
                f"{so_far} on body {body!r}, none lies on both a face {first!r} selects and "
                f"another face {second!r} selects (they share no {noun})",
            )
    if chosen.nearest is not None:
        point = cq.Vertex.makeVertex(*chosen.nearest)
        distances = [item.distance(point) for item in items]
        limit = min(distances) + NEAREST_TOLERANCE
        items = [i for i, d in zip(items, distances, strict=True) if d <= limit]
    return items


def _between(
    item: cq.Shape,
    first: list[tuple[cq.Face, set[cq.Shape]]],
    second: list[tuple[cq.Face, set[cq.Shape]]],
) -> bool:
    """Whether ``item`` (an edge or vertex) lies on a face of ``first`` and on another face
    of ``second`` (each face with its edges or vertices); one face on both lists does not
    make its own edges lie between."""
    on_first = [face for face, own in first if item in own]
    return any(item in own and any(not face.isSame(f) for f in on_first) for face, own in second)


def _edges(target: cq.Shape, entities: Iterable[cq.Shape]) -> list[cq.Edge]:
    """The edges of ``target`` in a selection (selected faces stand for their edges);
    ``SELECTION_EMPTY`` when none of them is an edge of the target."""
    own = target.Edges()
    out: list[cq.Edge] = []
    for item in entities:
        for edge in [item] if isinstance(item, cq.Edge) else item.Edges():
            if any(edge.isSame(e) for e in own) and not any(edge.isSame(e) for e in out):
                out.append(edge)
    if not out:
        raise Failure(SELECTION_EMPTY, "none of the selected edges is an edge of the target")
    return out


# -- builders -----------------------------------------------------------------------------------

Builder = Callable[[Mapping[str, Any]], cq.Shape]


def _box(a: Mapping[str, Any]) -> cq.Shape:
    length, width, height = a["length"], a["width"], a["height"]
    corner = (
        cq.Vector(-length / 2, -width / 2, -height / 2)
        if a.get("centered", True)
        else cq.Vector(0, 0, 0)
    )
    return cq.Solid.makeBox(length, width, height, corner)


def _cylinder(a: Mapping[str, Any]) -> cq.Shape:
    return cq.Solid.makeCylinder(a["radius"], a["height"], cq.Vector(0, 0, 0), cq.Vector(0, 0, 1))


def _sphere(a: Mapping[str, Any]) -> cq.Shape:
    return cq.Solid.makeSphere(a["radius"], angleDegrees1=-90, angleDegrees2=90)


def _cone(a: Mapping[str, Any]) -> cq.Shape:
    if a["radius1"] == a["radius2"]:  # OpenCASCADE refuses a cone with two equal radii
        return cq.Solid.makeCylinder(a["radius1"], a["height"])
    return cq.Solid.makeCone(a["radius1"], a["radius2"], a["height"])


def _torus(a: Mapping[str, Any]) -> cq.Shape:
    major, minor = a["majorRadius"], a["minorRadius"]
    if minor >= major:
        raise Failure(
            PARAMETER_OUT_OF_RANGE,
            f"minorRadius {minor:g} mm must be less than majorRadius {major:g} mm "
            "(the tube would cross the axis)",
        )
    return cq.Solid.makeTorus(major, minor)


def _wedge(a: Mapping[str, Any]) -> cq.Shape:
    length, width, height = a["length"], a["width"], a["height"]
    triangle = cq.Wire.makePolygon(
        [cq.Vector(0, 0, 0), cq.Vector(length, 0, 0), cq.Vector(0, 0, height)], close=True
    )
    return cq.Solid.extrudeLinear(cq.Face.makeFromWires(triangle), cq.Vector(0, width, 0))


def _fillet(a: Mapping[str, Any]) -> cq.Shape:
    radius, edges = a["radius"], _edges(a["target"], a["edges"])
    try:
        out = a["target"].fillet(radius, edges)
    except Exception as exc:
        raise Failure(
            FILLET_RADIUS_TOO_LARGE,
            f"OpenCASCADE cannot round the selected edges with radius {radius:g} mm "
            f"({type(exc).__name__}); the radius does not fit the faces next to an edge",
        ) from None
    if out is None or out.isNull():
        raise Failure(FILLET_RADIUS_TOO_LARGE, f"a fillet of radius {radius:g} mm left nothing")
    return out


def _chamfer(a: Mapping[str, Any]) -> cq.Shape:
    length, edges = a["length"], _edges(a["target"], a["edges"])
    try:
        out = a["target"].chamfer(length, None, edges)
    except Exception as exc:
        raise Failure(
            CHAMFER_TOO_LARGE,
            f"OpenCASCADE cannot bevel the selected edges by {length:g} mm "
            f"({type(exc).__name__}); the distance does not fit the faces next to an edge",
        ) from None
    if out is None or out.isNull():
        raise Failure(CHAMFER_TOO_LARGE, f"a chamfer of {length:g} mm left nothing")
    return out


def _shell(a: Mapping[str, Any]) -> cq.Shape:
    target: cq.Shape = a["target"]
    thickness = a["thickness"]
    own = _own_faces(target, a["faces"])
    if not own:
        raise Failure(SELECTION_EMPTY, "none of the selected faces is a face of the target")
    solids = target.Solids()
    if len(solids) != 1:
        raise Failure(
            KERNEL_INPUT_INVALID, f"a shell hollows one solid; the target has {len(solids)}"
        )
    try:
        out = solids[0].hollow(own, -thickness)
    except Exception as exc:
        raise Failure(
            SHELL_FAILED,
            f"OpenCASCADE cannot shell the body with {thickness:g} mm walls "
            f"({type(exc).__name__}); the thickness may not fit inside the body",
        ) from None
    if out is None or out.isNull():
        raise Failure(SHELL_FAILED, f"a shell of {thickness:g} mm left nothing")
    # With walls as thick as the body OpenCASCADE can hand the solid back unchanged, without
    # an error: a shell that removed no material did not happen.
    if out.Volume() >= solids[0].Volume() * (1 - 1e-9):
        raise Failure(
            SHELL_FAILED,
            f"walls of {thickness:g} mm leave no cavity: the thickness does not fit inside "
            "the body",
        )
    return _solid_or_compound(out)


def _positive(value: Any, what: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise Failure(KERNEL_INPUT_INVALID, f"{what} must be a number, not {value!r}")
    if value <= 0:
        raise Failure(KERNEL_INPUT_INVALID, f"{what} must be greater than 0, not {value:g}")
    return float(value)


def _points(raw: Any) -> list[tuple[float, float]]:
    if not isinstance(raw, list) or not raw:
        raise Failure(
            KERNEL_INPUT_INVALID, f"points must be a non-empty list of [x, y], not {raw!r}"
        )
    return [_xy(point, "a hole point") for point in raw]


def _xy(raw: Any, what: str) -> tuple[float, float]:
    """A 2D point given as ``[x, y]`` of finite numbers; ``KERNEL_INPUT_INVALID`` if not."""
    x, y = _vec(raw, what, 2)
    return x, y


def _own_faces(target: cq.Shape, selected: Iterable[Any]) -> list[cq.Face]:
    """The selected entities that are faces of ``target``."""
    faces = target.Faces()
    return [f for f in selected if isinstance(f, cq.Face) and any(f.isSame(g) for g in faces)]


def _one_face(target: cq.Shape, selected: Iterable[Any], needs: str) -> cq.Face:
    """The one face of ``target`` a selection chose; ``needs`` says why one (for the
    cardinality refusal)."""
    own = _own_faces(target, selected)
    if not own:
        raise Failure(SELECTION_EMPTY, "the selected face is no face of the target")
    if len(own) != 1:
        raise Failure(SELECTION_CARDINALITY_MISMATCH, f"{needs}; the selector chose {len(own)}")
    return own[0]


def _hole(a: Mapping[str, Any]) -> cq.Shape:
    target: cq.Shape = a["target"]
    face = _one_face(target, a["face"], "a hole starts from exactly one face")
    if face.geomType() != "PLANE":
        raise Failure(
            HOLE_FACE_NOT_PLANAR, f"holes start from a planar face, not a {face.geomType()} one"
        )
    diameter, depth = a["diameter"], a.get("depth")
    plane = cq.Workplane().add(target).newObject([face]).workplane()  # = face_frame(face)
    points = _points(a["points"]) if a.get("points") is not None else []
    if a.get("at") is not None:
        for p in _axis_points(a["at"], plane.plane):
            if not any(math.dist(p, q) <= ON_FACE_TOLERANCE for q in points):
                points.append(p)
    if not points:
        raise Failure(
            KERNEL_INPUT_INVALID,
            "a hole needs points, or at: circular edges or bores whose axes give its centres",
        )
    if len(points) > MAX_HOLES:
        raise Failure(KERNEL_INPUT_INVALID, f"{len(points)} hole centres; at most {MAX_HOLES}")
    # Against the face's outline, its own holes filled: a centre inside an existing bore
    # (a counterbore on it) is on the face.
    outline = _outline(face)
    for x, y in points:
        at = plane.plane.toWorldCoords((x, y))
        off = outline.distance(cq.Vertex.makeVertex(at.x, at.y, at.z))
        if off > ON_FACE_TOLERANCE:
            raise Failure(HOLE_OFF_FACE, _off_face(x, y, at, off, face, plane.plane))
    located = plane.pushPoints(points)
    bore, sink = a.get("counterbore"), a.get("countersink")
    if bore is not None and sink is not None:
        raise Failure(KERNEL_INPUT_INVALID, "a hole takes a counterbore or a countersink, not both")
    if sink is not None:
        if not isinstance(sink, Mapping) or not set(sink) <= {"diameter", "angle"}:
            raise Failure(
                KERNEL_INPUT_INVALID, f"countersink takes {{diameter, angle?}}, not {sink!r}"
            )
        sink_d = _positive(sink.get("diameter"), "countersink diameter")
        angle = _positive(sink.get("angle", 90.0), "countersink angle")
        if sink_d <= diameter:
            raise Failure(
                PARAMETER_OUT_OF_RANGE,
                f"countersink diameter {sink_d:g} mm must exceed the hole's {diameter:g} mm",
            )
        if angle >= 180:
            raise Failure(
                PARAMETER_OUT_OF_RANGE, f"countersink angle {angle:g}° must be below 180°"
            )
        cone_depth = (sink_d - diameter) / 2 / math.tan(math.radians(angle / 2))
        if depth is not None and cone_depth >= depth:
            raise Failure(
                PARAMETER_OUT_OF_RANGE,
                f"the countersink is {cone_depth:g} mm deep, not less than the hole's {depth:g} mm",
            )
        # The bore, then a frustum from the countersink's diameter at the face down to the
        # bore's (CadQuery's cskHole cuts a full cone, which pokes out of a blind hole).
        drilled = _solid_or_compound(_drill(target, located, diameter, depth))
        normal = face.normalAt()
        sinks = [
            cq.Solid.makeCone(
                sink_d / 2, diameter / 2, cone_depth, plane.plane.toWorldCoords((x, y)), -normal
            )
            for x, y in points
        ]
        out = boolean("cut", drilled, *sinks)
    elif bore is None:
        out = _drill(target, located, diameter, depth)
    else:
        if not isinstance(bore, Mapping) or set(bore) != {"diameter", "depth"}:
            raise Failure(
                KERNEL_INPUT_INVALID, f"counterbore takes {{diameter, depth}}, not {bore!r}"
            )
        bore_d = _positive(bore["diameter"], "counterbore diameter")
        bore_depth = _positive(bore["depth"], "counterbore depth")
        if bore_d <= diameter:
            raise Failure(
                PARAMETER_OUT_OF_RANGE,
                f"counterbore diameter {bore_d:g} mm must exceed the hole's {diameter:g} mm",
            )
        if depth is not None and bore_depth >= depth:
            raise Failure(
                PARAMETER_OUT_OF_RANGE,
                f"counterbore depth {bore_depth:g} mm must be less than the hole's {depth:g} mm",
            )
        out = _drill(target, located, diameter, depth, (bore_d, bore_depth))
    return _solid_or_compound(out)


# -- threads ------------------------------------------------------------------------------------

THREAD_CHECK_TOLERANCE = 1e-3
"""How far (relative) the volume a thread removed may be from the closed form
(:meth:`threads.Thread.removed_volume`) before the cut counts as failed. Where the body goes on
past the open end (a chamfer, threaded too) the closed form bounds it from both sides."""
THREAD_PIECE_TURNS = 20
"""The most turns one swept piece of a groove makes (a longer thread is cut as pieces)."""
THREAD_TURNS = (0.0, 17.0, 41.0)
"""Where (degrees about the axis) the groove's sweep starts, tried in turn: an OpenCASCADE
boolean of a helical sweep now and then misses the surface it crosses, and the check above
sees it; starting the helix elsewhere moves the crossings."""


@dataclass(frozen=True)
class _Bore:
    """A full cylindrical face in its own frame: local z along the axis (oriented so that its
    largest world component is positive: 'upper' is the end farther along it)."""

    frame: cq.Plane
    radius: float
    low: float
    high: float
    internal: bool


def _bore(face: cq.Face) -> _Bore:
    from OCP.BRepAdaptor import BRepAdaptor_Surface

    if face.geomType() != "CYLINDER":
        raise Failure(
            THREAD_FACE_INVALID,
            f"a thread goes on a cylindrical face (a shaft's side or a bore), not a "
            f"{face.geomType().lower()} one",
        )
    cylinder = BRepAdaptor_Surface(face.wrapped).Cylinder()
    axis, radius = cylinder.Axis(), cylinder.Radius()
    loc, d = axis.Location(), axis.Direction()
    direction = cq.Vector(d.X(), d.Y(), d.Z())
    largest = max(range(3), key=lambda i: (abs(direction.toTuple()[i]), i))
    if direction.toTuple()[largest] < 0:
        direction = -direction
    # x along the cylinder's own seam: sleeves fused to the body then have their seams where
    # its face has its own, and the merged face stays one (a seam elsewhere made the groove's
    # cut remove nothing)
    seam = cylinder.Position().XDirection()
    frame = cq.Plane(
        origin=cq.Vector(loc.X(), loc.Y(), loc.Z()),
        xDir=cq.Vector(seam.X(), seam.Y(), seam.Z()),
        normal=direction,
    )
    local = face.transformShape(frame.fG)
    span = box(local)
    length = span.zmax - span.zmin
    full = 2 * math.pi * radius * length
    if length <= 0 or abs(face.Area() - full) > 1e-6 * full:
        raise Failure(
            THREAD_FACE_INVALID,
            f"the face covers {face.Area() / full * 360 if full else 0:.4g}° of its cylinder; a "
            "thread goes on a whole one (all the way round)",
        )
    # the outward normal points away from the axis on a shaft, towards it in a bore
    u0, u1, v0, v1 = face._uvBounds()
    normal, at = face.normalAt((u0 + u1) / 2, (v0 + v1) / 2)
    radial = at - frame.origin
    radial = radial - direction * radial.dot(direction)
    internal = normal.dot(radial) < 0
    return _Bore(frame, radius, span.zmin, span.zmax, internal)


def _inside(shape: cq.Shape, point: cq.Vector) -> bool:
    from OCP.BRepClass3d import BRepClass3d_SolidClassifier
    from OCP.TopAbs import TopAbs_IN

    classifier = BRepClass3d_SolidClassifier(shape.wrapped, point.toPnt(), 1e-7)
    return classifier.State() == TopAbs_IN


def _sleeve(bore: _Bore, thread: threads.Thread, z0: float, z1: float, grow: float) -> cq.Shape:
    """The material around the face between local heights z0 < z1, in the face's frame: the
    core of a shaft (radius + grow) or a ring around a bore (out past the thread's root)."""
    low = cq.Vector(0, 0, z0)
    if not bore.internal:
        return cq.Solid.makeCylinder(bore.radius + grow, z1 - z0, low)
    outer = cq.Solid.makeCylinder(thread.diameter / 2 + thread.pitch + grow, z1 - z0, low)
    if grow > 0:  # a region to clear: the bore's void included
        return outer
    return boolean("cut", outer, cq.Solid.makeCylinder(bore.radius, z1 - z0, low))


def _thread(a: Mapping[str, Any]) -> cq.Shape:
    target: cq.Shape = a["target"]
    face = _one_face(target, a["face"], "a thread goes on exactly one cylindrical face")
    try:
        thread = threads.parse(a["size"])
    except threads.ThreadError as exc:
        raise Failure(exc.code, exc.message) from None
    bore = _bore(face)
    kind = "internal" if bore.internal else "external"
    lo, hi = thread.bore_range() if bore.internal else thread.shaft_range()
    if not lo <= 2 * bore.radius <= hi:
        wanted = (
            f"a bore of Ø{thread.minor:.4g} (the basic minor diameter) to Ø{thread.tap_drill:.4g}"
            " mm (the tap drill)"
            if bore.internal
            else f"a Ø{thread.diameter:g} mm shaft"
        )
        raise Failure(
            THREAD_SIZE_MISMATCH,
            f"an {kind} {thread.name} thread needs {wanted}; the face is Ø{2 * bore.radius:.6g} mm",
            expected={"min": round(lo, 6), "max": round(hi, 6)},
            actual=round(2 * bore.radius, 6),
        )
    # which ends are open: no material just past the end, at the middle of the groove
    p = thread.pitch
    mid = bore.radius + (thread.depth / 2 if bore.internal else -thread.depth / 2)

    def world(r: float, z: float) -> cq.Vector:
        return bore.frame.toWorldCoords((r, 0, z))

    open_high = not _inside(target, world(mid, bore.high + p / 2))
    open_low = not _inside(target, world(mid, bore.low - p / 2))
    start = a.get("from", "auto")
    if start == "auto":
        start = "upper" if open_high or not open_low else "lower"
    upper = start == "upper"
    if not (open_high if upper else open_low):
        where = "upper" if upper else "lower"
        raise Failure(
            THREAD_FACE_INVALID,
            f"the face's {where} end is closed (a shoulder or the bottom of a blind bore): a "
            "thread starts at an open end"
            + ("; the other end is open: from 'lower'" if open_low and upper else "")
            + ("; the other end is open: from 'upper'" if open_high and not upper else ""),
        )
    face_length = bore.high - bore.low
    far_open = open_low if upper else open_high
    most = face_length if far_open else face_length - p / 2
    length = a.get("length", most)
    if length > most + 1e-9:
        raise Failure(
            THREAD_TOO_LONG,
            f"a thread of {length:g} mm on a face {face_length:g} mm long"
            + ("" if far_open else " that ends closed (the groove needs P/2 before it)")
            + f": at most {most:g} mm",
            expected={"max": round(most, 6)},
            actual=length,
        )
    if length < p:
        raise Failure(
            PARAMETER_OUT_OF_RANGE,
            f"a thread of {length:g} mm is shorter than its pitch ({p:g} mm)",
        )
    if a.get("cosmetic", False):  # recorded in the document's node, the solid unchanged
        return target
    if length / p > threads.MAX_TURNS:
        raise Failure(
            THREAD_TOO_LONG,
            f"{length / p:g} turns; a modeled thread makes at most {threads.MAX_TURNS} (use "
            "cosmetic: true for a longer one)",
        )
    return _threaded(a, target, bore, thread, upper, length, far_open)


def _threaded(
    a: Mapping[str, Any],
    target: cq.Shape,
    bore: _Bore,
    thread: threads.Thread,
    upper: bool,
    length: float,
    far_open: bool,
) -> cq.Shape:
    """Cut the groove. A helical sweep crossing a planar end is where OpenCASCADE's booleans
    fail (silently: nothing removed, or too much), so at each open end the body is first
    extended by a sleeve the sweep ends inside, and what the sleeve added is cleared after."""
    p, sign = thread.pitch, 1.0 if upper else -1.0
    start = bore.high if upper else bore.low
    inner = start - sign * length
    run = 1.5 * p  # past an open end: the groove's half-width (< P/2) and then some
    # each open end the groove runs out of, and which way (local z) is out of the body there
    ends = [(start, sign)]
    if far_open and length >= bore.high - bore.low - 1e-9:
        ends.append((inner, -sign))
    helix_a, helix_b = start + sign * run, (inner - sign * run) if len(ends) == 2 else inner
    z0, z1 = sorted((helix_a, helix_b))
    rG = bore.frame.rG
    grown, clear = [], []
    beyond = 0.0  # how far the body goes on past an open end (a chamfer): threaded too
    for end, out in ends:
        z_lo, z_hi = sorted((end - out * p, end + out * 3 * p))  # overlapping: one face
        grown.append(_sleeve(bore, thread, z_lo, z_hi, 0.0).transformShape(rG))
        c_lo, c_hi = sorted((end, end + out * 4 * p))
        region = _sleeve(bore, thread, c_lo, c_hi, p).transformShape(rG)
        clear.append(boolean("cut", region, target))
        if region.Volume() - clear[-1].Volume() > EMPTY_VOLUME:
            span = box(boolean("intersect", region, target).transformShape(bore.frame.fG))
            beyond += (span.zmax - end) if out > 0 else (end - span.zmin)
    extended = _cleaned(boolean("union", target, *grown))  # one face, no seam to cross
    outline = thread.groove(bore.internal)
    expected = thread.removed_volume(bore.radius, length, bore.internal)
    most = thread.removed_volume(bore.radius, length + beyond, bore.internal)
    left = a.get("handedness", "right") == "left"
    before = target.Volume()
    # a sweep of many turns is one long face that OpenCASCADE's boolean loses (40 turns
    # failed, 30 did): cut it as pieces of at most THREAD_PIECE_TURNS, end to end
    pieces = math.ceil((z1 - z0) / p / THREAD_PIECE_TURNS)
    step = (z1 - z0) / pieces
    for turn in THREAD_TURNS:
        grooves = []
        for k in range(pieces):
            at = z0 + k * step
            wire = cq.Wire.makePolygon([cq.Vector(r, 0, at + dz) for r, dz in outline], close=True)
            helix = cq.Wire.makeHelix(
                p, step, bore.radius, center=cq.Vector(0, 0, at), lefthand=left
            )
            try:
                groove = cq.Solid.sweep(wire, [], helix, True, True)
            except Exception:
                break
            phase = 360.0 * k * step / p * (-1 if left else 1)  # where the last piece ended
            grooves.append(
                groove.rotate(cq.Vector(), cq.Vector(0, 0, 1), turn + phase).transformShape(rG)
            )
        if len(grooves) < pieces:
            continue
        out = extended
        for groove in grooves:  # one at a time: a left-hand pair cut together lost one
            out = boolean("cut", out, groove)
        out = boolean("cut", out, *clear)
        out = _solid_or_compound(out)
        removed = before - out.Volume()
        if (
            expected * (1 - THREAD_CHECK_TOLERANCE)
            <= removed
            <= most * (1 + THREAD_CHECK_TOLERANCE)
            and len(out.Solids()) == len(target.Solids())
            and solid_problem(out) is None
        ):
            return out
    raise Failure(
        THREAD_FAILED,
        f"OpenCASCADE could not cut the {thread.name} thread cleanly: the result did not "
        f"remove the {expected:.6g} mm³ the thread's profile does (is the "
        + ("wall around the bore thinner than the thread?" if bore.internal else "shaft hollow?")
        + ")",
    )


def _outline(face: cq.Face) -> cq.Face:
    """``face`` without its inner loops (the face inside its outer wire)."""
    if len(face.innerWires()) == 0:
        return face
    return cq.Face.makeFromWires(face.outerWire())


def _off_face(x: float, y: float, at: cq.Vector, off: float, face: cq.Face, frame: cq.Plane) -> str:
    """Why a hole centre is off its face, with the frame it was read in and the face's
    extent there (a point meant for another frame is then plain to see)."""
    xmin, ymin, xmax, ymax = frame_bounds(face, frame)
    return (
        f"hole centre [{x:g}, {y:g}] is world point {_shown(at)}, {off:g} mm off the selected "
        f"face. Points are [x, y] in the face's frame: origin {_shown(frame.origin)} (the "
        f"global origin projected onto the face), x along {_shown(frame.xDir)}, y along "
        f"{_shown(frame.yDir)}, normal {_shown(frame.zDir)}; the face spans x "
        f"{xmin:g}…{xmax:g}, y {ymin:g}…{ymax:g} in it (query.selectEntities returns a "
        "planar face's frame and bounds)"
    )


def _axis_points(entities: Iterable[cq.Shape], frame: cq.Plane) -> list[tuple[float, float]]:
    """Where the axes of circular edges and cylindrical faces meet the frame's plane, as
    [x, y] in the frame (each axis once); ``KERNEL_INPUT_INVALID`` for an entity without an
    axis, or one whose axis is not along the frame's normal."""
    from OCP.BRepAdaptor import BRepAdaptor_Curve, BRepAdaptor_Surface

    out: list[tuple[float, float]] = []
    for item in entities:
        kind = item.geomType()
        if isinstance(item, cq.Edge) and kind == "CIRCLE":
            axis = BRepAdaptor_Curve(item.wrapped).Circle().Axis()
        elif isinstance(item, cq.Face) and kind == "CYLINDER":
            axis = BRepAdaptor_Surface(item.wrapped).Cylinder().Axis()
        else:
            raise Failure(
                KERNEL_INPUT_INVALID,
                f"at: a {kind.lower()} {type(item).__name__.lower()} has no axis; select "
                "circular edges or cylindrical faces",
            )
        loc, d = axis.Location(), axis.Direction()
        origin, direction = cq.Vector(loc.X(), loc.Y(), loc.Z()), cq.Vector(d.X(), d.Y(), d.Z())
        along = direction.dot(frame.zDir)
        if abs(abs(along) - 1) > 1e-9:
            raise Failure(
                KERNEL_INPUT_INVALID,
                f"at: the axis through {_shown(origin)} runs along {_shown(direction)}, not "
                f"along the face's normal {_shown(frame.zDir)}",
            )
        meets = origin + direction * ((frame.origin - origin).dot(frame.zDir) / along)
        local = frame.toLocalCoords(meets)
        point = (local.x, local.y)
        if not any(math.dist(point, q) <= ON_FACE_TOLERANCE for q in out):
            out.append(point)
    return out


def _drill(
    target: cq.Shape,
    located: cq.Workplane,
    diameter: float,
    depth: float | None,
    counterbore: tuple[float, float] | None = None,
) -> cq.Shape:
    """What CadQuery's ``hole``/``cboreHole`` make (a bore along the workplane's -Z at each
    point, through when ``depth`` is None, with an optional counterbore), cut by the
    non-destructive :func:`boolean`: ``target`` is a cached node result."""
    down = cq.Vector(0, 0, -1)
    length = depth if depth is not None else located.largestDimension()
    tool: cq.Shape = cq.Solid.makeCylinder(diameter / 2, length, cq.Vector(), down)
    if counterbore is not None:
        bore_d, bore_depth = counterbore
        tool = boolean(
            "union", tool, cq.Solid.makeCylinder(bore_d / 2, bore_depth, cq.Vector(), down)
        )
    tools = located.eachpoint(lambda at: tool.moved(at), useLocalCoordinates=True).vals()
    return _cleaned(boolean("cut", target, *tools))


_EMPTY_BECAUSE = {
    "cut": " (the tool covers the whole target)",
    "intersect": " (the bodies do not overlap)",
}


def _boolean(kind: str) -> Builder:
    def build(a: Mapping[str, Any]) -> cq.Shape:
        target, tool = a["target"], a["tool"]
        out = boolean(kind, target, tool)
        # a union holds its (checked, non-empty) target: only a cut or an intersection can
        # leave nothing, or a sliver
        if out.isNull() or not has_solid(out) or (kind != "union" and out.Volume() < EMPTY_VOLUME):
            raise Failure(
                BOOLEAN_EMPTY_RESULT, f"the {kind} leaves no solid" + _EMPTY_BECAUSE.get(kind, "")
            )
        return _solid_or_compound(_cleaned(out))

    return build


def _translate(a: Mapping[str, Any]) -> cq.Shape:
    offset = cq.Vector(a.get("x", 0.0), a.get("y", 0.0), a.get("z", 0.0))
    # A new location on the same geometry: no copy of the B-rep, unlike Shape.translate.
    return a["target"].moved(cq.Location(offset))


_AXES = {"X": (1, 0, 0), "Y": (0, 1, 0), "Z": (0, 0, 1)}


def _rotate(a: Mapping[str, Any]) -> cq.Shape:
    return a["target"].rotate(cq.Vector(0, 0, 0), cq.Vector(*_AXES[a["axis"]]), a["angle"])


def _mirror(a: Mapping[str, Any]) -> cq.Shape:
    return a["target"].mirror(a["plane"], (0, 0, 0))


def _fused(copies: list[cq.Shape]) -> cq.Shape:
    """The copies fused into one body (disjoint copies stay separate solids of it)."""
    return _solid_or_compound(_cleaned(boolean("union", copies[0], *copies[1:])))


def _linear_pattern(a: Mapping[str, Any]) -> cq.Shape:
    target, count, spacing = a["target"], a["count"], a["spacing"]
    step = cq.Vector(*_AXES[a["direction"]]) * spacing
    return _fused([target.moved(cq.Location(step * i)) for i in range(count)])


def _polar_pattern(a: Mapping[str, Any]) -> cq.Shape:
    target, count, sweep = a["target"], a["count"], a.get("angle", 360.0)
    full = math.isclose(sweep, 360.0)
    step = sweep / count if full else sweep / (count - 1)
    origin, axis = cq.Vector(0, 0, 0), cq.Vector(0, 0, 1)
    return _fused([target] + [target.rotate(origin, axis, step * i) for i in range(1, count)])


# -- profiles and sweeps ------------------------------------------------------------------------


def _plane(a: Mapping[str, Any]) -> cq.Plane:
    named = cq.Plane.named(a["plane"])
    origin = named.origin + named.zDir * a.get("offset", 0.0)
    return cq.Plane(origin=origin, xDir=named.xDir, normal=named.zDir)


def _center(a: Mapping[str, Any]) -> tuple[float, float]:
    return _xy(a.get("center", [0, 0]), "center")


def _profile_face(wire: cq.Wire, plane: cq.Plane) -> cq.Face:
    """The face inside a closed wire, its normal along the plane's (the extrusion direction)."""
    if not wire.IsClosed():
        raise Failure(PROFILE_NOT_CLOSED, "the profile's outline is open")
    face = cq.Face.makeFromWires(wire)
    if face.normalAt().dot(plane.zDir) < 0:
        face = cq.Face(face.wrapped.Reversed())
    return face


def _sketch(draw: Callable[[cq.Workplane, Mapping[str, Any]], cq.Workplane]) -> Builder:
    def build(a: Mapping[str, Any]) -> cq.Shape:
        plane = _plane(a)
        x, y = _center(a)
        wire = draw(cq.Workplane(plane).center(x, y), a).val()
        return _profile_face(wire, plane)

    return build


def _turned(builder: Builder) -> Builder:
    """``builder``'s profile turned by ``rotation`` (degrees, counter-clockwise about the
    plane's normal) about its centre."""

    def build(a: Mapping[str, Any]) -> cq.Shape:
        face = builder(a)
        angle = a.get("rotation", 0.0)
        if not angle:
            return face
        plane = _plane(a)
        x, y = _center(a)
        centre = plane.toWorldCoords((x, y))
        return face.rotate(centre, centre + plane.zDir, angle)

    return build


def _slot(wp: cq.Workplane, a: Mapping[str, Any]) -> cq.Workplane:
    if a["length"] <= a["width"]:
        raise Failure(
            PARAMETER_OUT_OF_RANGE,
            f"a slot's length {a['length']:g} mm must exceed its width {a['width']:g} mm",
        )
    return wp.slot2D(a["length"], a["width"], a.get("angle", 0.0))


def _point_segment(p: tuple, a: tuple, b: tuple) -> float:
    """Distance from point ``p`` to segment ``ab`` (2D)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    t = (
        0.0
        if length2 == 0
        else max(0.0, min(1.0, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2))
    )
    return math.dist(p, (a[0] + t * dx, a[1] + t * dy))


def _segment_gap(p: tuple, q: tuple, r: tuple, s: tuple) -> float:
    """Distance between segments pq and rs (0 when they cross)."""

    def orient(a: tuple, b: tuple, c: tuple) -> float:
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    d1, d2, d3, d4 = orient(r, s, p), orient(r, s, q), orient(p, q, r), orient(p, q, s)
    if d1 * d2 < 0 and d3 * d4 < 0:
        return 0.0
    return min(
        _point_segment(p, r, s),
        _point_segment(q, r, s),
        _point_segment(r, p, q),
        _point_segment(s, p, q),
    )


def _first_crossing(segments: list[tuple[tuple, tuple]]) -> tuple[int, int] | None:
    """The first pair (i, j), i < j, of non-neighbouring segments of a closed outline that
    touch or cross, or None. A sweep along x: only segments whose x extents overlap are
    compared (all pairs took seconds at a few hundred corners)."""
    n = len(segments)
    tol = CLOSE_TOLERANCE
    spans = sorted(
        (min(p[0], q[0]) - tol, max(p[0], q[0]) + tol, i) for i, (p, q) in enumerate(segments)
    )
    found: tuple[int, int] | None = None
    for k, (_, right, i) in enumerate(spans):
        for left, _, j in spans[k + 1 :]:
            if left > right:
                break
            a, b = min(i, j), max(i, j)
            if b - a < 2 or (a == 0 and b == n - 1):
                continue  # neighbours share a corner
            if (found is None or (a, b) < found) and _segment_gap(
                *segments[a], *segments[b]
            ) <= tol:
                found = (a, b)
    return found


# -- outlines with arcs -------------------------------------------------------------------------

ARC_CHORDS = 16
"""Chords per arc in the crossing check of an outline (the exact check is OpenCASCADE's)."""
ON_PLANE_TOLERANCE = 1e-4
"""How far (mm) a sweep path may start from its profile's plane."""


@dataclass(frozen=True)
class Segment:
    """One piece of an outline or path: a line ``start → end`` or a circular arc through
    ``via``. Points are tuples of 2 (a sketch, in its plane) or 3 (a path) numbers."""

    start: tuple[float, ...]
    end: tuple[float, ...]
    via: tuple[float, ...] | None = None

    def chords(self) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
        if self.via is None:
            return [(self.start, self.end)]
        pts = [self.start, *_arc_points(self.start, self.via, self.end, ARC_CHORDS), self.end]
        return list(itertools.pairwise(pts))


def _vec(raw: Any, what: str, dims: int) -> tuple[float, ...]:
    if (
        not isinstance(raw, list | tuple)
        or len(raw) != dims
        or not all(_is_number(c) and math.isfinite(c) for c in raw)
    ):
        shape = "[x, y]" if dims == 2 else "[x, y, z]"
        raise Failure(KERNEL_INPUT_INVALID, f"{what} must be {shape}, not {_clipped(raw)}")
    return tuple(float(c) for c in raw)


def _clipped(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


def _v3(p: tuple[float, ...]) -> cq.Vector:
    """A point of a sketch (in its plane, z 0) or of a path, as a 3-D vector."""
    return cq.Vector(*p, *[0.0] * (3 - len(p)))


def _circle_through(
    p: tuple[float, ...], m: tuple[float, ...], q: tuple[float, ...]
) -> tuple[cq.Vector, float, cq.Vector] | None:
    """Centre, radius and unit normal (the arc turns about it from p through m to q) of the
    circle through three points, or None when they are collinear."""
    a, b, c = (_v3(x) for x in (p, m, q))
    ab, ac = b - a, c - a
    normal = ab.cross(ac)
    size = normal.Length
    if size <= 1e-9 * max(ab.Length, ac.Length, 1.0) ** 2:
        return None
    # the circumcentre, from the standard formula in the plane of the three points
    centre = a + (normal.cross(ab) * ac.dot(ac) + ac.cross(normal) * ab.dot(ab)) * (
        1 / (2 * size * size)
    )
    return centre, (a - centre).Length, normal.normalized()


def _arc_points(p, m, q, n: int) -> list[tuple[float, ...]]:
    """``n - 1`` points strictly inside the arc p → m → q (for the crossing check)."""
    circle = _circle_through(p, m, q)
    if circle is None:
        return []
    centre, radius, normal = circle
    u = (_v3(p) - centre).normalized()
    w = normal.cross(u)
    end = _v3(q) - centre
    sweep = math.atan2(end.dot(w), end.dot(u)) % (2 * math.pi) or 2 * math.pi
    out = []
    for k in range(1, n):
        t = sweep * k / n
        point = centre + (u * math.cos(t) + w * math.sin(t)) * radius
        out.append(tuple(point.toTuple()[: len(p)]))
    return out


def _tangent_at_end(seg: Segment) -> tuple[float, ...]:
    """The unit direction an outline leaves ``seg`` in at its end."""
    dims = len(seg.end)
    if seg.via is None:
        d = _v3(seg.end) - _v3(seg.start)
    else:
        centre, _, normal = _circle_through(seg.start, seg.via, seg.end)  # type: ignore[misc]
        d = normal.cross(_v3(seg.end) - centre)
    return tuple(d.normalized().toTuple()[:dims])


def _tangent_via(
    start: tuple[float, ...], tangent: tuple[float, ...], end: tuple[float, ...]
) -> tuple[float, ...] | None:
    """The midpoint of the arc from ``start``, leaving along ``tangent``, to ``end``; None
    when ``end`` lies straight ahead (no arc is tangent there)."""
    dims = len(start)
    p = _v3(start)
    t = _v3(tangent)
    d = _v3(end) - p
    normal = t.cross(d)
    if normal.Length <= 1e-9 * max(d.Length, 1.0):
        return None
    t = t.normalized()
    inward = normal.cross(t).normalized()  # from start towards the centre
    radius = d.dot(d) / (2 * d.dot(inward))
    centre = p + inward * radius
    # the end's angle round the centre, from the start, turning the way the tangent leaves
    u, rel = (p - centre) * (1 / radius), p + d - centre
    turned = math.atan2(rel.dot(t), rel.dot(u)) % (2 * math.pi)
    mid = centre + (u * math.cos(turned / 2) + t * math.sin(turned / 2)) * radius
    return tuple(mid.toTuple()[:dims])


def outline(raw: Any, dims: int, what: str) -> list[Segment]:
    """The segments of an outline given as a start point then, for each segment, its end:
    ``[x, y(, z)]`` (a line), ``{"to": P, "through": Q}`` (an arc through Q) or
    ``{"to": P, "tangent": true}`` (an arc leaving tangent to the segment before it)."""
    if not isinstance(raw, list) or len(raw) < 2:
        raise Failure(KERNEL_INPUT_INVALID, f"{what} must list a start point and at least one end")
    current = _vec(raw[0], f"{what}[0]", dims)
    segments: list[Segment] = []
    for i, item in enumerate(raw[1:], start=1):
        where = f"{what}[{i}]"
        if isinstance(item, Mapping):
            keys = set(item)
            if "to" not in keys or not (keys == {"to", "through"} or keys == {"to", "tangent"}):
                raise Failure(
                    KERNEL_INPUT_INVALID,
                    f'{where} must be a point, {{"to": P, "through": Q}} or '
                    f'{{"to": P, "tangent": true}}, not {_clipped(dict(item))}',
                )
            end = _vec(item["to"], f"{where}.to", dims)
            if "through" in keys:
                via = _vec(item["through"], f"{where}.through", dims)
            else:
                if item["tangent"] is not True:
                    raise Failure(KERNEL_INPUT_INVALID, f"{where}.tangent must be true")
                if not segments:
                    raise Failure(
                        KERNEL_INPUT_INVALID,
                        f"{where}: a tangent arc continues the segment before it; the first "
                        'segment has none (give it "through" instead)',
                    )
                found = _tangent_via(current, _tangent_at_end(segments[-1]), end)
                if found is None:
                    raise Failure(
                        KERNEL_INPUT_INVALID,
                        f"{where}: {list(end)} lies straight ahead of the segment before it, so "
                        "no arc is tangent there; use a straight segment",
                    )
                via = found
            if math.dist(current, end) <= CLOSE_TOLERANCE and "through" in keys:
                raise Failure(KERNEL_INPUT_INVALID, f"{where}: an arc must end away from its start")
            if _circle_through(current, via, end) is None:
                raise Failure(
                    KERNEL_INPUT_INVALID,
                    f"{where}: the arc's points {list(current)}, {list(via)}, {list(end)} lie on "
                    "one line; use a straight segment",
                )
            segment = Segment(current, end, via)
        else:
            end = _vec(item, where, dims)
            segment = Segment(current, end)
        if math.dist(current, end) <= CLOSE_TOLERANCE:
            raise Failure(KERNEL_INPUT_INVALID, f"{where} coincides with the point before it")
        segments.append(segment)
        current = end
    return segments


def _edges_of(segments: list[Segment], to_world: Callable[[tuple], cq.Vector]) -> list[cq.Edge]:
    return [
        cq.Edge.makeLine(to_world(s.start), to_world(s.end))
        if s.via is None
        else cq.Edge.makeThreePointArc(to_world(s.start), to_world(s.via), to_world(s.end))
        for s in segments
    ]


def closed_profile(a: Mapping[str, Any], segments: list[Segment]) -> cq.Face:
    """The face inside a closed outline of lines and arcs on the step's plane, or the
    outline's defect (open, self-crossing, no area) as a diagnostic."""
    first, last = segments[0].start, segments[-1].end
    gap = math.dist(first, last)
    if gap <= CLOSE_TOLERANCE:  # closed: end exactly where it starts, or the wire stays open
        segments = [*segments[:-1], Segment(segments[-1].start, first, segments[-1].via)]
    if gap > CLOSE_TOLERANCE:
        raise Failure(
            PROFILE_NOT_CLOSED,
            f"the outline is open: its last point {list(last)} is {gap:g} mm from its first "
            f"{list(first)}; end it at the first point",
        )
    chords: list[tuple[tuple, tuple]] = []
    owner: list[int] = []
    for i, seg in enumerate(segments):
        pieces = seg.chords()
        chords.extend(pieces)
        owner.extend([i] * len(pieces))
    crossing = _first_crossing(chords)
    if crossing is not None:
        i, j = (owner[k] for k in crossing)
        raise Failure(
            PROFILE_SELF_INTERSECTING,
            f"segment {i} ({list(segments[i].start)}→{list(segments[i].end)}) touches or "
            f"crosses segment {j} ({list(segments[j].start)}→{list(segments[j].end)})",
        )
    plane = _plane(a)
    x, y = _center(a) if "center" in a else (0.0, 0.0)
    edges = _edges_of(segments, lambda p: plane.toWorldCoords((p[0] + x, p[1] + y)))
    face = _profile_face(cq.Wire.assembleEdges(edges), plane)
    if face.Area() <= CLOSE_TOLERANCE:
        raise Failure(KERNEL_INPUT_INVALID, "the outline encloses no area")
    return face


def _polyline(a: Mapping[str, Any]) -> cq.Shape:
    segments = outline(a["points"], 2, "points")
    face = closed_profile(a, segments)
    angle = a.get("rotation", 0.0)
    if not angle:
        return face
    plane = _plane(a)
    return face.rotate(plane.origin, plane.origin + plane.zDir, angle)


def _rounded_rectangle(a: Mapping[str, Any]) -> cq.Shape:
    w, h, r = a["width"] / 2, a["height"] / 2, a["radius"]
    if r >= min(w, h) - CLOSE_TOLERANCE:
        raise Failure(
            PARAMETER_OUT_OF_RANGE,
            f"the corner radius {r:g} mm must be less than half the smaller side "
            f"({min(w, h):g} mm); for round ends use cap:sketch.slot@1",
        )
    s = math.sqrt(0.5)  # the corners' arc midpoints, at 45°
    corners = [
        ((w - r, -h), (w, -h + r), (w - r + r * s, -h + r - r * s)),
        ((w, h - r), (w - r, h), (w - r + r * s, h - r + r * s)),
        ((-w + r, h), (-w, h - r), (-w + r - r * s, h - r + r * s)),
        ((-w, -h + r), (-w + r, -h), (-w + r - r * s, -h + r - r * s)),
    ]
    segments: list[Segment] = []
    start = (-w + r, -h)
    for line_end, arc_end, via in corners:
        segments.append(Segment(start, line_end))
        segments.append(Segment(line_end, arc_end, via))
        start = arc_end
    return closed_profile(a, segments)


def _face_input(a: Mapping[str, Any], name: str) -> cq.Face:
    face = a[name]
    if not isinstance(face, cq.Face):
        if several := _faces(face):
            raise Failure(
                KERNEL_INPUT_INVALID,
                f"{name} is {len(several)} separate profiles (text): only extrude and "
                "pocket take several; this step takes one",
            )
        kind = face.ShapeType() if isinstance(face, cq.Shape) else type(face).__name__
        raise Failure(
            KERNEL_INPUT_INVALID, f"{name} must be a sketch profile (a planar face), not a {kind}"
        )
    return face


def _faces(shape: Any) -> list[cq.Face]:
    """The faces of a compound of planar faces only (a text profile), else []."""
    if not isinstance(shape, cq.Compound) or has_solid(shape):
        return []
    faces = shape.Faces()
    return faces if faces and all(f.geomType() == "PLANE" for f in faces) else []


def _profiles_input(a: Mapping[str, Any], name: str) -> list[cq.Face]:
    """One profile, or the several of a text profile (coplanar, one normal)."""
    if isinstance(a[name], cq.Face):
        return [a[name]]
    faces = _faces(a[name])
    if not faces:
        return [_face_input(a, name)]  # refused with what it is
    return faces


def _offset(a: Mapping[str, Any]) -> cq.Shape:
    face = _plain(_face_input(a, "profile"), "profile", "sketch.offset")
    distance = a["distance"]
    side, corners = a.get("side", "outward"), a.get("corners", "arc")
    normal = face.normalAt()
    # OpenCASCADE's 2-D offset assumes the XY plane for some wires (a lone circle on YZ came
    # back on XY): offset in the profile's own frame, then move the result back.
    plane = cq.Plane(origin=face.Center(), xDir=_any_perpendicular(normal), normal=normal)
    local = face.outerWire().transformShape(plane.fG)
    wires = local.offset2D(distance if side == "outward" else -distance, corners)
    if not wires:
        raise Failure(
            OFFSET_COLLAPSED,
            f"an inward offset of {distance:g} mm leaves nothing: the profile is narrower than "
            f"{2 * distance:g} mm somewhere",
        )
    if len(wires) > 1:
        raise Failure(
            OFFSET_COLLAPSED,
            f"an inward offset of {distance:g} mm splits the profile into {len(wires)} "
            "outlines; use a smaller distance",
        )
    return _profile_face(wires[0].transformShape(plane.rG), plane)


SUBTRACTED = ("minus", "minus2", "minus3")
"""The profiles ``sketch.subtract`` takes out, in order."""


def _subtract(a: Mapping[str, Any]) -> cq.Shape:
    """The profile with each of ``SUBTRACTED`` taken out: one face with inner loops (or a
    notched outline), its normal the profile's. Refused when a cut-out is off the plane,
    misses the profile, leaves nothing, or splits it."""
    result = _face_input(a, "profile")
    normal, centre = result.normalAt(), result.Center()
    for name in (n for n in SUBTRACTED if n in a):
        tool = _face_input(a, name)
        if (
            abs(abs(normal.dot(tool.normalAt())) - 1) > 1e-9
            or abs((tool.Center() - centre).dot(normal)) > CLOSE_TOLERANCE
        ):
            raise Failure(
                PROFILE_SUBTRACT_FAILED,
                f"{name} is not on the profile's plane: sketch it on the same plane and offset",
            )
        faces = boolean("cut", result, tool).Faces()
        left = sum(f.Area() for f in faces)
        if not faces or left < EMPTY_VOLUME:
            raise Failure(
                PROFILE_SUBTRACT_FAILED, f"{name} covers the whole profile: nothing is left"
            )
        if abs(result.Area() - left) < max(result.Area() * 1e-9, 1e-9):
            raise Failure(
                PROFILE_SUBTRACT_FAILED,
                f"{name} takes nothing out: it lies outside the profile",
            )
        if len(faces) > 1:
            raise Failure(
                PROFILE_SUBTRACT_FAILED,
                f"taking {name} out splits the profile into {len(faces)} pieces; extrude each "
                "piece from its own sketch",
            )
        result = faces[0]
    if result.normalAt().dot(normal) < 0:
        result = cq.Face(result.wrapped.Reversed())
    return result


def _face_outline(a: Mapping[str, Any]) -> cq.Shape:
    """The one planar face selected, copied as a profile where it is (its normal the face's
    outward one); with ``outline``, the face inside its outer wire only."""
    chosen = a["face"]
    if len(chosen) != 1:
        raise Failure(
            PROFILE_FACE_INVALID, f"the selection gives {len(chosen)} faces: select exactly one"
        )
    (face,) = chosen
    if not isinstance(face, cq.Face) or face.geomType() != "PLANE":
        kind = face.geomType().lower() if isinstance(face, cq.Face) else type(face).__name__
        raise Failure(PROFILE_FACE_INVALID, f"the selected face is {kind}, not planar")
    out = _outline(face) if a.get("outline") else cq.Face(face.wrapped)
    if out.normalAt().dot(face.normalAt()) < 0:  # the outer wire's own orientation
        out = cq.Face(out.wrapped.Reversed())
    return out


_TEXT_ALIGN = {"left": "LEFT", "center": "CENTER", "right": "RIGHT"}


def _text(a: Mapping[str, Any]) -> cq.Shape:
    """Text as a profile: one planar face per letter (with its counters as openings), in the
    bundled font, on a named plane or on a body's planar face (in the face's frame)."""
    from OCP import Graphic3d
    from OCP.gp import gp_Ax3
    from OCP.NCollection import NCollection_Utf8String
    from OCP.StdPrs import StdPrs_BRepFont, StdPrs_BRepTextBuilder

    text = a["text"]
    if not isinstance(text, str) or not text.strip():
        raise Failure(TEXT_INVALID, "text must hold at least one visible character")
    if len(text) > fonts.MAX_CHARACTERS:
        raise Failure(
            TEXT_INVALID, f"text has {len(text)} characters; at most {fonts.MAX_CHARACTERS}"
        )
    if any(not c.isprintable() for c in text):
        raise Failure(
            TEXT_INVALID, "text is one line of printable characters (no line break or tab)"
        )
    on_face, named = a.get("face") is not None, a.get("plane") is not None
    if on_face == named:
        raise Failure(
            KERNEL_INPUT_INVALID,
            "text lies on a plane or on a face: give plane (with offset) or face, not "
            + ("both" if on_face else "neither"),
        )
    font = StdPrs_BRepFont()
    size = a["size"] / fonts.CAP_HEIGHT  # the em, from the capitals' height asked for
    if not font.Init(NCollection_Utf8String(str(fonts.FONT)), size, 0):
        raise Failure(KERNEL_OPERATION_FAILED, "the bundled font could not be read")
    missing = sorted({c for c in text if not c.isspace() and not font.FTFont().HasSymbol(c)})
    if missing:
        shown = " ".join(f"{c!r} (U+{ord(c):04X})" for c in missing[:8])
        raise Failure(
            TEXT_GLYPH_MISSING,
            f"the bundled font ({fonts.FONT_NAME}, Latin) has no {shown}: use Latin letters, "
            "digits and common signs",
        )
    if on_face:
        faces = [f for f in a["face"] if isinstance(f, cq.Face)]
        if len(faces) != 1 or faces[0].geomType() != "PLANE":
            raise Failure(
                PROFILE_FACE_INVALID,
                "text goes on one planar face; the selection chose "
                + (f"{len(faces)} faces" if len(faces) != 1 else f"a {faces[0].geomType()} one"),
            )
        plane = face_frame(faces[0])
    else:
        plane = _plane(a)
    halign = getattr(Graphic3d, f"Graphic3d_HTA_{_TEXT_ALIGN[a.get('halign', 'center')]}")
    built = StdPrs_BRepTextBuilder().Perform(
        font, NCollection_Utf8String(text), gp_Ax3(), halign, Graphic3d.Graphic3d_VTA_BOTTOM
    )
    letters = cq.Shape.cast(built).Faces() if not built.IsNull() else []
    if not letters:
        raise Failure(TEXT_INVALID, "the text draws nothing (only spaces?)")
    # overlapping contours (accents, some pairs) as one face each, as CadQuery's text does
    glyphs = cq.Compound.makeCompound(letters)
    if len(letters) > 1:
        glyphs = _cleaned(cq.Compound.makeCompound(glyphs.fuse().Faces()))
    drop = {"baseline": 0.0, "center": a["size"] / 2, "top": a["size"]}[a.get("valign", "center")]
    x, y = _center(a)
    local = glyphs.moved(cq.Location(cq.Vector(x, y - drop, 0)))
    angle = a.get("rotation", 0.0)
    if angle:
        local = local.rotate(cq.Vector(x, y, 0), cq.Vector(x, y, 1), angle)
    placed = local.transformShape(plane.rG)
    out = [
        f if f.normalAt().dot(plane.zDir) > 0 else cq.Face(f.wrapped.Reversed())
        for f in placed.Faces()
    ]
    return out[0] if len(out) == 1 else cq.Compound.makeCompound(out)


def _plain(face: cq.Face, name: str, ref: str) -> cq.Face:
    """``face`` when it has no inner loops; refused otherwise, by an operation that reads only
    a profile's outline (it would drop the loops without a word)."""
    if face.innerWires():
        raise Failure(
            KERNEL_INPUT_INVALID,
            f"{ref} takes {name} without inner loops (a cut-out profile): give it the outline "
            "and take the openings out after, with a pocket or a cut",
        )
    return face


def _any_perpendicular(normal: cq.Vector) -> cq.Vector:
    helper = cq.Vector(1, 0, 0) if abs(normal.x) < 0.9 else cq.Vector(0, 1, 0)
    return normal.cross(helper).normalized()


LOFT_SECTIONS = ("profile", "via", "via2", "to")
"""The loft's sections, in order: the first and last are required."""


def _loft(a: Mapping[str, Any]) -> cq.Shape:
    named = [(n, _plain(_face_input(a, n), n, "exact.loft")) for n in LOFT_SECTIONS if n in a]
    for (n1, f1), (n2, f2) in itertools.pairwise(named):
        normal = f1.normalAt()
        if (
            abs(abs(normal.dot(f2.normalAt())) - 1) < 1e-9
            and abs((f2.Center() - f1.Center()).dot(normal)) <= CLOSE_TOLERANCE
        ):
            raise Failure(
                LOFT_FAILED,
                f"{n1} and {n2} lie on one plane: a loft blends profiles on different planes "
                "(use the sketch's offset to move one)",
            )
    wires = [face.outerWire() for _, face in named]
    try:
        solid = cq.Solid.makeLoft(wires, bool(a.get("ruled", False)))
    except Exception as exc:
        raise Failure(
            LOFT_FAILED, f"OpenCASCADE cannot loft these profiles ({type(exc).__name__})"
        ) from None
    return solid


def sweep_path(raw: Any) -> tuple[cq.Wire, bool, float]:
    """The wire a path object describes, whether the sweep follows it with a Frenet frame
    (a helix: the profile turns with it), and the radius of its tightest bend."""
    if not isinstance(raw, Mapping):
        raise Failure(PATH_INVALID, f"path must be an object, not {_clipped(raw)}")
    if "helix" in raw:
        helix = raw["helix"]
        if not isinstance(helix, Mapping):
            raise Failure(PATH_INVALID, "path.helix must be {radius, pitch, height}")
        try:
            radius = _positive(helix.get("radius"), "path.helix.radius")
            pitch = _positive(helix.get("pitch"), "path.helix.pitch")
            height = _positive(helix.get("height"), "path.helix.height")
        except Failure as exc:
            raise Failure(PATH_INVALID, exc.message) from None
        if height / pitch > PATH_MAX_TURNS:
            raise Failure(
                PATH_INVALID,
                f"the helix makes {height / pitch:g} turns; at most {PATH_MAX_TURNS}",
            )
        left = helix.get("leftHanded", False)
        if not isinstance(left, bool):
            raise Failure(PATH_INVALID, "path.helix.leftHanded must be true or false")
        bend = radius + pitch * pitch / (4 * math.pi * math.pi * radius)  # its curvature radius
        return cq.Wire.makeHelix(pitch, height, radius, lefthand=left), True, bend
    try:
        segments = outline(raw.get("points"), 3, "path.points")
    except Failure as exc:
        raise Failure(PATH_INVALID, exc.message) from None
    edges = _edges_of(segments, lambda p: cq.Vector(*p))
    bends = [
        circle[1]
        for s in segments
        if s.via is not None and (circle := _circle_through(s.start, s.via, s.end)) is not None
    ]
    return cq.Wire.assembleEdges(edges), False, min(bends, default=math.inf)


def _sweep(a: Mapping[str, Any]) -> cq.Shape:
    face = _face_input(a, "profile")
    path, frenet, bend = sweep_path(a["path"])
    if a.get("frame", "world") == "profile":  # given in the profile plane's frame
        path = path.transformShape(face_frame(face).rG)
    normal, start = face.normalAt(), path.startPoint()
    off = (start - face.Center()).dot(normal)
    if abs(off) > ON_PLANE_TOLERANCE:
        raise Failure(
            PATH_INVALID,
            f"the path starts at {_rounded(start)}, {off:g} mm off the profile's plane; start "
            "it on the plane (or move the sketch there with its offset)",
        )
    if abs(path.tangentAt(0).dot(normal)) < 1e-3:
        raise Failure(
            PATH_INVALID,
            "the path starts along the profile's plane, so the sweep would be flat; start it "
            "across the plane (along the profile's normal)",
        )
    # A profile reaching farther from the path than a bend's radius folds over itself there:
    # OpenCASCADE builds it anyway, and its BRep check does not see the overlap.
    reach = max(
        (edge.positionAt(t / 32) - start).Length for edge in face.Edges() for t in range(33)
    )
    if reach >= bend:
        raise Failure(
            SWEEP_FAILED,
            f"the profile reaches {reach:g} mm from the path's start, more than the radius of "
            f"its tightest bend ({bend:g} mm), so the sweep would fold over itself; use a "
            "smaller profile or a wider bend",
        )
    transition = a.get("transition", "right")
    try:
        solid = cq.Solid.sweep(
            face.outerWire(), face.innerWires(), path, True, frenet, None, transition
        )
    except Exception as exc:
        raise Failure(
            SWEEP_FAILED, f"OpenCASCADE cannot sweep the profile ({type(exc).__name__})"
        ) from None
    return solid


def _rounded(v: cq.Vector) -> list[float]:
    return [round(c, 6) + 0.0 for c in v.toTuple()]


def _pocket(a: Mapping[str, Any]) -> cq.Shape:
    target, faces = a["target"], _profiles_input(a, "profile")
    face = faces[0]
    normal = face.normalAt()
    direction = a.get("direction", "against")
    if direction == "against":
        normal = -normal
    depth = a.get("depth")
    if depth is None:  # through all: far enough to leave every part of the body behind
        box = target.BoundingBox()
        depth = 2 * (box.DiagonalLength + (box.center - face.Center()).Length)
    tools = [cq.Solid.extrudeLinear(f, normal * depth) for f in faces]
    out = boolean("cut", target, *tools)
    if out.isNull() or not has_solid(out) or out.Volume() < EMPTY_VOLUME:
        raise Failure(BOOLEAN_EMPTY_RESULT, "the pocket removes the whole body")
    # what the cut removed, from the volumes (a second boolean for it cost as much again)
    if target.Volume() - out.Volume() < EMPTY_VOLUME:
        raise Failure(
            POCKET_MISSES_BODY,
            f"the pocket removes nothing: going {direction} the profile's normal it does not "
            "reach the body; sketch on the face's plane, or turn the direction",
        )
    return _solid_or_compound(_cleaned(out))


def _extrude(a: Mapping[str, Any]) -> cq.Shape:
    faces, distance = _profiles_input(a, "profile"), a["distance"]
    normal = faces[0].normalAt()
    direction = a.get("direction", "normal")
    if direction == "symmetric":
        faces = [f.moved(cq.Location(normal * (-distance / 2))) for f in faces]
    vector = normal * (-distance if direction == "reverse" else distance)
    solids = [cq.Solid.extrudeLinear(f, vector) for f in faces]
    return solids[0] if len(solids) == 1 else cq.Compound.makeCompound(solids)


def _revolve(a: Mapping[str, Any]) -> cq.Shape:
    face, axis_name, angle = _face_input(a, "profile"), a["axis"], a.get("angle", 360.0)
    axis = cq.Vector(*_AXES[axis_name])
    normal = face.normalAt()
    if abs(normal.dot(axis)) > 1e-9:
        raise Failure(
            KERNEL_INPUT_INVALID,
            f"the {axis_name} axis is not parallel to the profile's plane (normal "
            f"{normal.x:g}, {normal.y:g}, {normal.z:g}); sketch on a plane that contains it",
        )
    off_plane = face.Center().dot(normal)
    if abs(off_plane) > CLOSE_TOLERANCE:
        raise Failure(
            KERNEL_INPUT_INVALID,
            f"the profile's plane is {off_plane:g} mm from the {axis_name} axis; sketch on a "
            "plane through the origin that contains the axis (offset 0)",
        )
    side = normal.cross(axis)  # in the profile's plane, perpendicular to the axis
    offsets = [
        edge.positionAt(t / REVOLVE_SAMPLES).dot(side)
        for edge in face.Edges()
        for t in range(REVOLVE_SAMPLES + 1)
    ]
    if min(offsets) < -CLOSE_TOLERANCE and max(offsets) > CLOSE_TOLERANCE:
        raise Failure(
            REVOLVE_CROSSES_AXIS,
            f"the profile lies on both sides of the {axis_name} axis "
            f"({min(offsets):g} to {max(offsets):g} mm from it); move it to one side",
        )
    return cq.Solid.revolve(face, angle, cq.Vector(0, 0, 0), axis)


def _import_step(a: Mapping[str, Any]) -> cq.Shape:
    text = a["data"]
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > STEP_MAX_BYTES:
        # the text is part of every later revision of the document: keep it bounded
        raise Failure(
            STEP_IMPORT_FAILED, f"the STEP text is {size} bytes; at most {STEP_MAX_BYTES}"
        )
    if not text.lstrip().startswith("ISO-10303-21"):
        raise Failure(STEP_IMPORT_FAILED, "the text is not STEP: it must start 'ISO-10303-21;'")
    with tempfile.TemporaryDirectory(prefix="aira-occt-") as tmp:
        path = Path(tmp) / "in.step"
        path.write_text(text, encoding="utf-8")
        try:
            imported = cq.importers.importStep(str(path))
        except Exception as exc:
            raise Failure(
                STEP_IMPORT_FAILED, f"OpenCASCADE cannot read the STEP text ({type(exc).__name__})"
            ) from None
    solids = [solid for value in imported.vals() for solid in value.Solids()]
    if not solids:
        raise Failure(STEP_IMPORT_FAILED, "the STEP file holds no solid")
    return solids[0] if len(solids) == 1 else cq.Compound.makeCompound(solids)


BUILDERS: dict[str, Builder] = {
    "exact.box@1.0.0": _box,
    "exact.cylinder@1.0.0": _cylinder,
    "exact.sphere@1.0.0": _sphere,
    "exact.cone@1.0.0": _cone,
    "exact.torus@1.0.0": _torus,
    "exact.wedge@1.0.0": _wedge,
    "exact.fillet@1.0.0": _fillet,
    "exact.chamfer@1.0.0": _chamfer,
    "exact.union@1.0.0": _boolean("union"),
    "exact.cut@1.0.0": _boolean("cut"),
    "exact.intersect@1.0.0": _boolean("intersect"),
    "exact.translate@1.0.0": _translate,
    "exact.hole@1.0.0": _hole,
    "exact.thread@1.0.0": _thread,
    "exact.rotate@1.0.0": _rotate,
    "exact.mirror@1.0.0": _mirror,
    "exact.linearPattern@1.0.0": _linear_pattern,
    "exact.polarPattern@1.0.0": _polar_pattern,
    "exact.shell@1.0.0": _shell,
    "sketch.rectangle@1.0.0": _turned(_sketch(lambda wp, a: wp.rect(a["width"], a["height"]))),
    "sketch.circle@1.0.0": _sketch(lambda wp, a: wp.circle(a["radius"])),
    "sketch.polygon@1.0.0": _turned(_sketch(lambda wp, a: wp.polygon(a["sides"], a["diameter"]))),
    "sketch.slot@1.0.0": _sketch(_slot),
    "sketch.polyline@1.0.0": _polyline,
    "exact.extrude@1.0.0": _extrude,
    "exact.revolve@1.0.0": _revolve,
    "sketch.roundedRectangle@1.0.0": _turned(_rounded_rectangle),
    "sketch.offset@1.0.0": _offset,
    "sketch.subtract@1.0.0": _subtract,
    "sketch.faceOutline@1.0.0": _face_outline,
    "sketch.text@1.0.0": _text,
    "exact.loft@1.0.0": _loft,
    "exact.sweep@1.0.0": _sweep,
    "exact.pocket@1.0.0": _pocket,
    "io.importStep@1.0.0": _import_step,
}
PROFILES = frozenset(op.ref for op in OPERATIONS if is_profile(op))
"""Operations whose result is a planar face for a sweep, not a solid."""


def build(ref: str, inputs: Mapping[str, Any]) -> cq.Shape:
    """Run one operation on resolved inputs; a valid solid or :class:`Failure`. A fillet or
    chamfer refused for its size carries the largest size that fits (:func:`_largest_fit`)."""
    try:
        return _build(ref, inputs)
    except Failure as exc:
        sized = _SIZED.get(ref)
        if sized is None or exc.code != _INVALID_RESULT[ref][0]:  # not refused for its size
            raise
        raise _sized_failure(exc, ref, inputs, *sized) from None


def _build(ref: str, inputs: Mapping[str, Any]) -> cq.Shape:
    builder = BUILDERS.get(ref)
    if builder is None:
        raise Failure(KERNEL_OPERATION_UNKNOWN, f"the OCCT kernel does not implement {ref}")
    try:
        shape = builder(inputs)
    except Failure:
        raise
    except Exception as exc:  # an OpenCASCADE failure we have no better code for
        raise Failure(
            KERNEL_OPERATION_FAILED, f"{ref} failed in OpenCASCADE: {type(exc).__name__}: {exc}"
        ) from None
    if ref in RIGID_MOTIONS:  # a valid solid moved rigidly stays valid: skip the BRep check
        return shape
    if ref in PROFILES:
        if not shape.isValid():
            raise Failure(PROFILE_SELF_INTERSECTING, f"{ref}: the profile's outline crosses itself")
        return shape
    problem = solid_problem(shape)
    if problem is not None:
        code, why = _INVALID_RESULT.get(ref, (SOLID_INVALID, ""))
        raise Failure(code, f"{ref} did not produce a valid solid: {problem}{why}")
    return shape


_INVALID_RESULT = {
    # OpenCASCADE built something, but no valid solid: for these, that is the size
    "exact.fillet@1.0.0": (
        FILLET_RADIUS_TOO_LARGE,
        "; the radius does not fit the faces next to an edge",
    ),
    "exact.chamfer@1.0.0": (
        CHAMFER_TOO_LARGE,
        "; the distance does not fit the faces next to an edge",
    ),
    "exact.loft@1.0.0": (LOFT_FAILED, "; the profiles may twist or cross between sections"),
    "exact.sweep@1.0.0": (
        SWEEP_FAILED,
        "; the profile may be wider than a bend of the path, so the sweep crosses itself",
    ),
}


RIGID_MOTIONS = frozenset({"exact.translate@1.0.0", "exact.rotate@1.0.0", "exact.mirror@1.0.0"})


# -- the largest fillet or chamfer that fits ------------------------------------------------------

FIT_ATTEMPTS = 12
"""The most OpenCASCADE attempts the search for the largest size that fits makes, so that a
refusal stays fast and its answer deterministic (no time budget: the same refusal always
reports the same size)."""
FIT_TOLERANCE = 0.01
"""The search stops once the largest size found to fit is within max(this, this × the size)
(0.01 mm or 1 %, whichever is coarser) of the smallest one refused; a repair keeps a margin
far above that (the example repair takes 90 %)."""
FIT_FLOOR = 0.01
"""No size below this (mm) is tried: a smaller fillet or chamfer is no repair."""

_SIZED = {
    # ref: the size input and the expected value's name (the refusal's code: _INVALID_RESULT)
    "exact.fillet@1.0.0": ("radius", "maxRadius"),
    "exact.chamfer@1.0.0": ("length", "maxLength"),
}


def _largest_fit(fits: Callable[[float], bool], refused: float) -> tuple[float | None, float]:
    """The largest size below ``refused`` for which ``fits`` holds (None if none was found)
    and the smallest size tried. Halves down from ``refused`` until a size fits, then
    bisects between it and the smallest refused one, within :data:`FIT_ATTEMPTS` calls: the
    answer is within :data:`FIT_TOLERANCE` of the limit whenever the limit is above
    ``refused`` / 32 (five halvings, then seven bisections). It assumes that every size
    below one that fits fits too (true of the faces next to an edge, not promised by
    OpenCASCADE); what it returns always fitted."""
    low: float | None = None
    high = smallest = refused
    for _ in range(FIT_ATTEMPTS):
        if low is None:
            size = high / 2
            if size < FIT_FLOOR:
                break
        elif high - low <= FIT_TOLERANCE * max(1.0, low):
            break
        else:
            size = (low + high) / 2
        if fits(size):
            low = size
        else:
            high = size
        smallest = min(smallest, size)
    return low, smallest


def _sized_failure(
    exc: Failure, ref: str, inputs: Mapping[str, Any], name: str, limit: str
) -> Failure:
    """``exc`` (a fillet or chamfer refused for its size) with the largest size that fits the
    same target and edges: one OpenCASCADE builds and that passes the same check as a node
    result. ``expected`` is ``{limit: size}`` (mm), ``actual`` ``{name: requested}``; when
    no size down to :data:`FIT_FLOOR` fits there is no ``expected`` (nothing to repair to)."""
    requested = float(inputs[name])

    def fits(size: float) -> bool:
        try:
            _build(ref, {**inputs, name: size})
        except Failure:
            return False
        return True

    largest, smallest = _largest_fit(fits, requested)
    if largest is None:
        tried = f"down to {smallest:g} mm" if smallest < requested else f"below {FIT_FLOOR:g} mm"
        return Failure(
            exc.code,
            f"{exc.message}; no smaller {name} fits either (none tried {tried})",
            actual={name: requested},
        )
    return Failure(
        exc.code,
        f"{exc.message}; the largest {name} that fits is {largest:g} mm",
        expected={limit: largest},
        actual={name: requested},
    )


# -- scalar inputs ------------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_scalar(spec: Input, value: Any) -> Any:
    """``value`` (in base units) checked against the input's type and declared range."""
    kind = spec.type
    if kind in _NUMERIC:
        if not _is_number(value) or not math.isfinite(value):
            raise Failure(KERNEL_INPUT_INVALID, f"{spec.name} must be a number, not {value!r}")
        value = float(value)
        if kind == LENGTH and not (value == 0 or MIN_LENGTH <= abs(value) <= MAX_LENGTH):
            # below OpenCASCADE's tolerance or beyond any part, its algorithms fail with
            # empty messages ("Standard_DomainError: ") or "Infinite parameter"
            raise Failure(
                KERNEL_INPUT_INVALID,
                f"{spec.name} is {value:g} mm; a length is 0 or between {MIN_LENGTH:g} and "
                f"{MAX_LENGTH:g} mm in size",
            )
    elif kind == COUNT:
        if not _is_number(value) or not math.isfinite(value) or value != int(value):
            raise Failure(KERNEL_INPUT_INVALID, f"{spec.name} must be an integer, not {value!r}")
        value = int(value)
    elif kind == BOOL and not isinstance(value, bool):
        raise Failure(KERNEL_INPUT_INVALID, f"{spec.name} must be true or false, not {value!r}")
    elif kind == STRING and not isinstance(value, str):
        raise Failure(KERNEL_INPUT_INVALID, f"{spec.name} must be a string, not {value!r}")
    elif kind == STRING and spec.choices is not None and value not in spec.choices:
        raise Failure(
            KERNEL_INPUT_INVALID,
            f"{spec.name} must be one of {', '.join(spec.choices)}, not {value!r}",
        )
    elif kind == JSON:
        _check_json(spec, value)
        return value
    elif kind in (SHAPE, SELECTION):
        raise Failure(
            KERNEL_INPUT_INVALID,
            f"{spec.name} takes a "
            + ("{node} reference" if kind == SHAPE else "{body, select?, entity?, …} selection")
            + f", not {value!r}",
        )
    if _is_number(value):
        bounds = (
            (spec.minimum, lambda v, b: v >= b, "at least"),
            (spec.exclusive_minimum, lambda v, b: v > b, "greater than"),
            (spec.maximum, lambda v, b: v <= b, "at most"),
        )
        for bound, fits, words in bounds:
            if bound is not None and not fits(value, bound):
                raise Failure(
                    KERNEL_INPUT_INVALID, f"{spec.name} must be {words} {bound:g}, not {value:g}"
                )
    return value


def _check_json(spec: Input, value: Any) -> None:
    """A structured literal against its input's JSON Schema (array sizes included: they
    bound the work a node can ask for) and as plain JSON (it is hashed into cache keys)."""
    try:
        seen = (id(spec), canonical_bytes(value))
    except CanonicalJSONError as exc:
        raise Failure(KERNEL_INPUT_INVALID, f"{spec.name}: {exc}") from None
    if seen in _VALID_JSON:  # a schema check costs ms for a long point list: once per value
        return
    error = next(iter(_json_validator(spec).iter_errors(value)), None)
    if error is not None:
        where = "".join(f"[{p!r}]" for p in error.absolute_path)
        code = (
            PARAMETER_OUT_OF_RANGE if error.validator in _RANGE_KEYWORDS else KERNEL_INPUT_INVALID
        )
        raise Failure(code, f"{spec.name}{where}: {error.message[:200]}")
    if len(_VALID_JSON) >= CACHE_LIMIT:
        _VALID_JSON.clear()
    _VALID_JSON.add(seen)


_VALID_JSON: set[tuple[int, bytes]] = set()
"""(input, canonical bytes) of structured literals that passed their schema."""


_RANGE_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


_VALIDATORS: dict[int, Any] = {}  # by id: inputs are module constants (and unhashable)


def _json_validator(spec: Input) -> Any:
    if id(spec) not in _VALIDATORS:
        from jsonschema import Draft202012Validator

        _VALIDATORS[id(spec)] = Draft202012Validator(dict(spec.json_schema or {}))
    return _VALIDATORS[id(spec)]


def resolve_scalar(
    raw: Mapping[str, Any], spec: Input, parameters: Mapping[str, Mapping[str, Any]]
) -> Any:
    """A ``{value, unit?}`` or ``{param}`` input as a value in base units (mm, deg)."""
    try:
        if "param" in raw:
            param = parameters.get(raw["param"])
            if param is None:
                raise Failure(
                    KERNEL_REFERENCE_UNRESOLVED, f"{raw['param']!r} is no parameter of the document"
                )
            value, ptype = param.get("value"), param.get("type")
            low, high = param.get("min"), param.get("max")
            if _is_number(value) and (
                (low is not None and value < low) or (high is not None and value > high)
            ):
                raise Failure(
                    PARAMETER_OUT_OF_RANGE,
                    f"parameter {param['id']!r} is {value:g}, outside [{low}, {high}]",
                )
            why = param_fits(str(ptype), spec.type)  # the host's rule, for unchecked documents
            if why is not None:
                raise Failure(
                    why, f"{spec.name} takes a {spec.type}; parameter {param['id']!r} is a {ptype}"
                )
            if ptype in (LENGTH, ANGLE) and _is_number(value):
                value = to_base(float(value), param.get("unit"), ParamType(ptype))
        elif "value" in raw:
            value, unit = raw["value"], raw.get("unit")
            if unit is not None:
                if not _is_number(value):
                    raise Failure(KERNEL_INPUT_INVALID, f"{spec.name}: only a number has a unit")
                expected = ParamType(spec.type) if spec.type in _PARAM_TYPES else ParamType.REAL
                value = to_base(float(value), unit, expected)
        else:
            raise Failure(
                KERNEL_INPUT_INVALID, f"{spec.name}: {dict(raw)!r} is no AMIR input value"
            )
    except AiraError as exc:
        raise Failure(exc.code, f"{spec.name}: {exc.diagnostic.message}") from None
    return _check_scalar(spec, value)


# -- evaluation ---------------------------------------------------------------------------------


@dataclass
class Entry:
    """One cached node result: a shape (with its measures, computed once) or a failure."""

    shape: cq.Shape | None = None
    failure: dict[str, Any] | None = None
    """The node's diagnostic without its subject (the node id is the evaluation's)."""
    _stats: dict[str, Any] | None = field(default=None, repr=False)

    def stats(self) -> dict[str, Any]:
        if self._stats is None:
            # Every cached shape came out of build(), which checked it.
            # A profile (a face) is checked too, but it is no solid.
            self._stats = (
                stats(self.shape, known_valid=has_solid(self.shape))
                if self.shape is not None
                else {"valid": False}
            )
        return self._stats


def _cache_get(cache: dict[str, Any], key: str) -> Entry | None:
    entry = cache.pop(key, None)
    if entry is not None:
        cache[key] = entry  # most recently used last
    return entry


def _cache_put(cache: dict[str, Any], key: str, entry: Entry) -> None:
    cache[key] = entry
    while len(cache) > CACHE_LIMIT:
        del cache[next(iter(cache))]


class Evaluator:
    """One document evaluated against a shared node cache."""

    def __init__(self, document: Mapping[str, Any], cache: dict[str, Any]) -> None:
        self.cache = cache
        self.diagnostics: list[dict[str, Any]] = []
        self.parameters = {p["id"]: p for p in document.get("parameters", [])}
        self.nodes = {n["id"]: n for n in document.get("nodes", [])}
        if len(self.nodes) != len(document.get("nodes", [])):  # only an unchecked document
            ids = [n["id"] for n in document.get("nodes", [])]
            for twice in sorted({i for i in ids if ids.count(i) > 1}):
                self.diagnostics.append(
                    diagnostic(KERNEL_INPUT_INVALID, f"node id {twice!r} is used twice", twice)
                )
        self.bodies = {b["id"]: b for b in document.get("bodies", [])}
        self.memo: dict[str, Entry | None] = {}
        self.keys: dict[str, str] = {}
        self.evaluated: list[str] = []
        self._sources: dict[tuple[str, str], str | None] = {}
        self._users: dict[str, set[str]] = {n: set() for n in self.nodes}
        for nid, node in self.nodes.items():
            for raw in node.get("inputs", {}).values():
                if isinstance(raw, Mapping) and raw.get("node") in self.nodes:
                    self._users[raw["node"]].add(nid)
        self._downstream: dict[str, set[str]] = {}
        self.deps = {nid: self._dependencies(nid) for nid in self.nodes}

    # -- the graph ------------------------------------------------------------------------

    def downstream(self, nid: str) -> set[str]:
        """``nid`` and every node that uses its result, directly or not."""
        if nid not in self._downstream:
            seen, todo = {nid}, deque([nid])
            while todo:
                for user in self._users.get(todo.popleft(), ()):
                    if user not in seen:
                        seen.add(user)
                        todo.append(user)
            self._downstream[nid] = seen
        return self._downstream[nid]

    def _selection_source(self, nid: str, body_id: str) -> str | None:
        """The node whose shape a selection on ``body_id`` in node ``nid`` reads: the body's
        current tip, or, when that tip is ``nid`` itself or builds on it (a feature moves the
        tip of the body it changes), the body's shape just before ``nid`` in its history."""
        body = self.bodies.get(body_id)
        current = body.get("tip") if body else None
        after = self.downstream(nid)
        seen: set[str] = set()
        while current in after and current not in seen:
            seen.add(current)
            inputs = self.nodes[current].get("inputs", {})
            refs = [v["node"] for v in inputs.values() if isinstance(v, Mapping) and "node" in v]
            target = inputs.get("target")
            if isinstance(target, Mapping) and "node" in target:
                current = target["node"]
            else:
                current = refs[0] if refs else None
        return current if current in self.nodes and current not in after else None

    def _dependencies(self, nid: str) -> set[str]:
        out: set[str] = set()
        for name, raw in self.nodes[nid].get("inputs", {}).items():
            if not isinstance(raw, Mapping):
                continue
            if raw.get("node") in self.nodes:
                out.add(raw["node"])
            elif "body" in raw:
                source = self._selection_source(nid, str(raw["body"]))
                self._sources[(nid, name)] = source
                if source is not None:
                    out.add(source)
        return out

    def needed(self, tips: Iterable[str]) -> set[str]:
        seen: set[str] = set()
        todo = [t for t in tips if t in self.nodes]
        while todo:
            nid = todo.pop()
            if nid not in seen:
                seen.add(nid)
                todo.extend(self.deps[nid])
        return seen

    def order(self, only: set[str] | None = None) -> tuple[list[str], list[str]]:
        """Nodes in dependency order (document order among equals), and those on a cycle."""
        chosen = [n for n in self.nodes if only is None or n in only]
        pending = {n: len(self.deps[n]) for n in chosen}
        users: dict[str, list[str]] = {n: [] for n in chosen}
        for n in chosen:
            for d in self.deps[n]:
                users[d].append(n)
        ready = deque(n for n in chosen if pending[n] == 0)
        out: list[str] = []
        while ready:
            n = ready.popleft()
            out.append(n)
            for u in users[n]:
                pending[u] -= 1
                if pending[u] == 0:
                    ready.append(u)
        done = set(out)
        return out, [n for n in chosen if n not in done]

    # -- running --------------------------------------------------------------------------

    def run(self, tips: Iterable[str] | None = None) -> None:
        """Evaluate every node (or only what ``tips`` need), in dependency order."""
        ordered, cyclic = self.order(None if tips is None else self.needed(tips))
        for nid in cyclic:
            self.memo[nid] = None
            self.diagnostics.append(
                diagnostic(KERNEL_REFERENCE_CYCLE, f"node {nid!r} depends on itself", nid)
            )
        for nid in ordered:
            self._node(nid)

    def _fail(self, nid: str, code: str, message: str) -> None:
        self.memo[nid] = None
        self.diagnostics.append(diagnostic(code, message, nid))

    def _node(self, nid: str) -> None:
        node = self.nodes[nid]
        ref = str(node.get("op"))
        op = BY_REF.get(ref)
        if op is None or ref not in BUILDERS:
            self._fail(nid, KERNEL_OPERATION_UNKNOWN, f"the OCCT kernel does not implement {ref}")
            return
        specs = {i.name: i for i in op.inputs}
        values: dict[str, Any] = {}
        key_inputs: dict[str, Any] = {}
        selections: dict[str, tuple[str, str, Selection]] = {}
        for name, raw in node.get("inputs", {}).items():
            spec = specs.get(name)
            if spec is None or not isinstance(raw, Mapping):
                self._fail(nid, KERNEL_INPUT_INVALID, f"{ref} has no input {name!r}")
                return
            selects = "body" in raw or (len(raw) > 1 and "node" in raw)  # on a body or a node
            if selects != (spec.type == SELECTION) or (
                not selects and ("node" in raw) != (spec.type == SHAPE)
            ):
                self._fail(
                    nid, KERNEL_INPUT_INVALID, f"{name} takes a {spec.type}, not {dict(raw)!r}"
                )
                return
            if "node" in raw and not selects:
                upstream = raw["node"]
                if upstream not in self.nodes:
                    self._fail(nid, KERNEL_REFERENCE_UNRESOLVED, f"{name}: no node {upstream!r}")
                    return
                entry = self.memo.get(upstream)
                if entry is None:  # failed upstream, reported there
                    self.memo[nid] = None
                    return
                if spec.accepts == "ExactSolid" and not has_solid(entry.shape):
                    self._fail(
                        nid,
                        KERNEL_INPUT_INVALID,
                        f"{name} takes a solid; node {upstream!r} is a "
                        f"{entry.shape.ShapeType().lower()} (a profile): extrude or revolve it",
                    )
                    return
                values[name] = entry.shape
                key_inputs[name] = {"node": self.keys[upstream]}
            elif selects:
                # on a body: its shape as this node reads it; on a node: that node's shape
                source = self._sources.get((nid, name)) if "body" in raw else raw["node"]
                shown = f"body {raw['body']!r}" if "body" in raw else f"node {raw['node']!r}"
                if source is None or source not in self.nodes:
                    self._fail(
                        nid,
                        KERNEL_REFERENCE_UNRESOLVED,
                        f"{name}: {shown} has no shape to select on",
                    )
                    return
                if self.memo.get(source) is None:
                    self.memo[nid] = None
                    return
                try:
                    chosen = selection(raw, skip=("body", "node"))
                except Failure as exc:
                    self._fail(nid, exc.code, f"{name}: {exc.message}")
                    return
                selections[name] = (source, str(raw.get("body") or raw["node"]), chosen)
                key_inputs[name] = {"select": [self.keys[source], *chosen.key()]}
            else:
                try:
                    values[name] = resolve_scalar(raw, spec, self.parameters)
                except Failure as exc:
                    self._fail(nid, exc.code, exc.message)
                    return
                key_inputs[name] = {"value": values[name]}
        missing = [i.name for i in op.inputs if i.required and i.name not in key_inputs]
        if missing:
            self._fail(nid, KERNEL_INPUT_INVALID, f"{ref} needs {', '.join(missing)}")
            return
        for name, default in op.defaults.items():
            values.setdefault(name, default)
        try:
            key = sha256_hex({"op": ref, "inputs": key_inputs})
        except CanonicalJSONError as exc:  # NaN, a lone surrogate...: no key, no result
            self._fail(nid, KERNEL_INPUT_INVALID, f"{ref}: an input is not plain JSON ({exc})")
            return
        entry = _cache_get(self.cache, key)
        if entry is None:
            entry = self._compute(ref, values, selections)
            _cache_put(self.cache, key, entry)
            self.evaluated.append(nid)
        if entry.failure is not None:
            self.memo[nid] = None
            self.diagnostics.append({**entry.failure, "subject": nid})
            return
        self.memo[nid] = entry
        self.keys[nid] = key

    def _compute(
        self,
        ref: str,
        values: dict[str, Any],
        selections: Mapping[str, tuple[str, str, Selection]],
    ) -> Entry:
        try:
            for name, (source, body, chosen) in selections.items():
                shape = self.memo[source].shape  # type: ignore[union-attr]
                values[name] = select(shape, chosen, body=body)
            return Entry(shape=build(ref, values))
        except Failure as exc:
            return Entry(failure=exc.diagnostic())
        except Exception as exc:  # never let OpenCASCADE escape
            return Entry(
                failure=diagnostic(KERNEL_OPERATION_FAILED, f"{type(exc).__name__}: {exc}")
            )

    # -- results --------------------------------------------------------------------------

    def body_entry(self, body_id: str) -> Entry | None:
        body = self.bodies.get(body_id)
        return self.memo.get(body["tip"]) if body else None

    def body_results(self) -> dict[str, dict[str, Any]]:
        out = {}
        for bid, body in self.bodies.items():
            if body.get("tip") not in self.nodes:
                self.diagnostics.append(
                    diagnostic(
                        KERNEL_REFERENCE_UNRESOLVED,
                        f"body {bid!r} names tip {body.get('tip')!r}, which is no node",
                        bid,
                    )
                )
            entry = self.body_entry(bid)
            out[bid] = entry.stats() if entry is not None else {"valid": False}
            if entry is not None and entry.shape is not None and not has_solid(entry.shape):
                self.diagnostics.append(
                    diagnostic(
                        SOLID_INVALID,
                        f"body {bid!r} is a {entry.shape.ShapeType().lower()} (its tip "
                        f"{body['tip']!r} is a profile), not a solid: extrude or revolve it",
                        bid,
                    )
                )
        return out

    def result_hash(self) -> str | None:
        tips = {bid: self.keys.get(b["tip"]) for bid, b in self.bodies.items()}
        if self.diagnostics or any(v is None for v in tips.values()):
            return None
        return sha256_hex(tips)


def evaluate(
    document: Mapping[str, Any], changed: list[str] | None, cache: dict[str, Any]
) -> dict[str, Any]:
    """Build every body of an AMIR wire document.

    ``changed`` is the runtime's hint of the nodes whose result may differ; the cache is
    content-addressed (operation + resolved inputs), so exactly those nodes whose key changed
    are recomputed whatever the hint says.
    """
    ev = Evaluator(document, cache)
    ev.run()
    return {
        "bodies": ev.body_results(),
        "evaluatedNodes": ev.evaluated,
        "diagnostics": ev.diagnostics,
        "resultHash": ev.result_hash(),
    }


def common_volume(target: cq.Shape, tool: cq.Shape) -> float:
    """The volume (mm³) two shapes share; 0 when they are apart or only touch."""
    common = boolean("intersect", target, tool)
    if common.isNull() or not has_solid(common):
        return 0.0
    return max(common.Volume(), 0.0)


def _shape_arg(
    document: Mapping[str, Any], name: str, raw: Any, cache: dict[str, Any], subject: str
) -> cq.Shape:
    """A validator's Shape argument: ``{node}`` (what a plan step lowers to) as that node's
    shape, ``{value: <body id or b:<label>>}`` (an acceptance assertion) as the body's."""
    if isinstance(raw, Mapping) and isinstance(raw.get("node"), str):
        ev = Evaluator(document, cache)
        nid = raw["node"]
        if nid not in ev.nodes:
            raise Failure(KERNEL_REFERENCE_UNRESOLVED, f"{name}: no node {nid!r}")
        ev.run([nid])
        entry = ev.memo.get(nid)
        if entry is None or entry.shape is None:
            found = ev.diagnostics[0] if ev.diagnostics else None
            raise Failure(
                found["code"] if found else SOLID_INVALID,
                f"{name}: " + (found["message"] if found else f"node {nid!r} has no shape"),
            )
        return entry.shape
    value = raw.get("value") if isinstance(raw, Mapping) else None
    if isinstance(value, str):
        bodies = document.get("bodies", [])
        body_id = next(
            (b["id"] for b in bodies if value in (b["id"], f"b:{b.get('label')}")), value
        )
        shape, found = _body_shape(document, body_id, cache, subject)
        if shape is None:
            raise Failure(found[0]["code"], f"{name}: {found[0]['message']}")
        return shape
    raise Failure(KERNEL_INPUT_INVALID, f"{name} takes a {{node}} or a body id, not {raw!r}")


def _body_shape(
    document: Mapping[str, Any], body_id: Any, cache: dict[str, Any], subject: str | None = None
) -> tuple[cq.Shape | None, list[dict[str, Any]]]:
    """The evaluated shape of one body (only its history is evaluated), or diagnostics."""
    ev = Evaluator(document, cache)
    body = ev.bodies.get(body_id) if isinstance(body_id, str) else None
    if body is None:
        return None, [
            diagnostic(QUERY_TARGET_UNKNOWN, f"{body_id!r} is no body of the document", subject)
        ]
    ev.run([body["tip"]])
    entry = ev.body_entry(body_id)
    if entry is None or entry.shape is None:
        return None, ev.diagnostics or [
            diagnostic(SOLID_INVALID, f"body {body_id!r} has no shape", subject)
        ]
    return entry.shape, []


# -- queries ------------------------------------------------------------------------------------


def query(
    document: Mapping[str, Any], ref: str, args: Mapping[str, Any], cache: dict[str, Any]
) -> dict[str, Any]:
    op = BY_REF.get(ref)
    if op is None or op.target != "queryRef":
        return {
            "data": {},
            "diagnostics": [diagnostic(KERNEL_OPERATION_UNKNOWN, f"no query {ref}")],
        }
    shape, found = _body_shape(document, args.get("target"), cache)
    if shape is None:
        return {"data": {}, "diagnostics": found}
    try:
        if ref == "query.massProperties@1.0.0":
            problem = solid_problem(shape)
            if problem is not None:
                return {"data": {}, "diagnostics": [diagnostic(SOLID_INVALID, problem)]}
            centre = cq.Shape.centerOfMass(shape)
            data = {
                "volume": shape.Volume(),
                "area": shape.Area(),
                "centerOfMass": [centre.x, centre.y, centre.z],
                "relativeTolerance": MEASURE_RELATIVE_TOLERANCE,
            }
        elif ref == "query.boundingBox@1.0.0":
            bb = box(shape)
            data = {
                "boundingBox": [bb.xmin, bb.ymin, bb.zmin, bb.xmax, bb.ymax, bb.zmax],
                "size": [bb.xlen, bb.ylen, bb.zlen],
                "tolerance": BOX_TOLERANCE,
            }
        elif ref == "query.topology@1.0.0":
            data = {
                "solids": len(shape.Solids()),
                "shells": len(shape.Shells()),
                "faces": len(shape.Faces()),
                "edges": len(shape.Edges()),
                "vertices": len(shape.Vertices()),
            }
        elif ref == "query.selectEntities@1.0.0":
            selector, entity = args.get("select"), args.get("entity") or "Face"
            if selector is not None and (not isinstance(selector, str) or not selector):
                raise Failure(KERNEL_INPUT_INVALID, "select must be a CadQuery selector string")
            if entity not in _ENTITIES:
                raise Failure(KERNEL_INPUT_INVALID, "entity must be Face, Edge or Vertex")
            filters = selection({**args, "entity": entity}, skip=("target",))
            chosen = select(shape, filters, body=str(args.get("target")))
            data = {
                "count": len(chosen),
                "entity": entity,
                "entities": [describe(item) for item in chosen[:SELECT_LIST_LIMIT]],
                "truncated": len(chosen) > SELECT_LIST_LIMIT,
            }
        elif ref in ("query.distance@1.0.0", "query.interference@1.0.0"):
            tool, found = _body_shape(document, args.get("tool"), cache)
            if tool is None:
                return {"data": {}, "diagnostics": found}
            if ref == "query.distance@1.0.0":
                data = {"distance": shape.distance(tool), "tolerance": DISTANCE_TOLERANCE}
            else:
                volume = common_volume(shape, tool)
                data = {
                    "volume": volume,
                    "interferes": volume > EMPTY_VOLUME,
                    "relativeTolerance": MEASURE_RELATIVE_TOLERANCE,
                }
        else:
            return {
                "data": {},
                "diagnostics": [diagnostic(KERNEL_OPERATION_UNKNOWN, f"no query {ref}")],
            }
    except Failure as exc:
        return {"data": {}, "diagnostics": [exc.diagnostic()]}
    except Exception as exc:
        return {
            "data": {},
            "diagnostics": [diagnostic(KERNEL_OPERATION_FAILED, f"{ref}: {exc}")],
        }
    return {"data": data, "diagnostics": []}


SELECT_LIST_LIMIT = 50
"""Entities described by selectEntities (the count is always exact)."""


def _xyz(v: cq.Vector) -> list[float]:
    return [round(v.x, 9) + 0.0, round(v.y, 9) + 0.0, round(v.z, 9) + 0.0]  # no -0.0


def _shown(v: cq.Vector) -> str:
    return "[" + ", ".join(f"{c:g}" for c in _xyz(v)) + "]"


def describe(item: cq.Shape) -> dict[str, Any]:
    """What a selected face, edge or vertex is, in observable terms; a planar face also
    with its ``frame`` (the one hole points are given in, :func:`face_frame`) and its
    ``bounds`` [xmin, ymin, xmax, ymax] in that frame."""
    if isinstance(item, cq.Vertex):
        return {"type": "VERTEX", "center": _xyz(item.Center())}
    out: dict[str, Any] = {"type": item.geomType(), "center": _xyz(item.Center())}
    if isinstance(item, cq.Face):
        out["area"] = item.Area()
        if item.geomType() == "PLANE":
            out["normal"] = _xyz(item.normalAt())
            plane = face_frame(item)
            out["frame"] = frame_wire(plane)
            out["bounds"] = [round(c, 6) for c in frame_bounds(item, plane)]
    else:
        out["length"] = item.Length()
    radius = radius_of(item)
    if radius is not None:
        out["radius"] = radius
    return out


def face_frame(face: cq.Face) -> cq.Plane:
    """The frame of a planar face, in which a hole's points [x, y] are given: CadQuery's
    workplane on the face (``Workplane.workplane()``, what :func:`_hole` drills from).
    Origin: the global origin projected onto the face's plane; z: the face's outward
    normal; x: global Z × normal, or global +X on a face normal to Z; y: normal × x. So
    '>Z' has x +X, y +Y; '<Z' x +X, y -Y (seen from below); '>X' x +Y, y +Z; '<X' x -Y,
    y +Z; '>Y' x -X, y +Z; '<Y' x +X, y +Z."""
    return cq.Workplane().newObject([face]).workplane().plane


def frame_wire(plane: cq.Plane) -> dict[str, list[float]]:
    return {
        "origin": _xyz(plane.origin),
        "xDir": _xyz(plane.xDir),
        "yDir": _xyz(plane.yDir),
        "normal": _xyz(plane.zDir),
    }


def frame_bounds(face: cq.Face, plane: cq.Plane) -> tuple[float, float, float, float]:
    """The extent of ``face`` in its frame: (xmin, ymin, xmax, ymax)."""
    box = plane.toLocalCoords(face).BoundingBox()
    return box.xmin, box.ymin, box.xmax, box.ymax


# -- validators ---------------------------------------------------------------------------------


def validate(
    document: Mapping[str, Any], assertion: Mapping[str, Any], cache: dict[str, Any]
) -> dict[str, Any]:
    """One assertion ``{id, validatorRef, target (a body id), args}``: passed, measured,
    diagnostics (subject: the assertion)."""
    aid = str(assertion.get("id"))
    ref = str(assertion.get("validatorRef"))

    def failed(*found: dict[str, Any], measured: Mapping[str, Any] | None = None) -> dict:
        return {"passed": False, "measured": dict(measured or {}), "diagnostics": list(found)}

    op: Operation | None = BY_REF.get(ref)
    if op is None or op.target != "validatorRef":
        return failed(diagnostic(KERNEL_OPERATION_UNKNOWN, f"no validator {ref}", aid))
    shape, found = _body_shape(document, assertion.get("target"), cache, aid)
    if shape is None:
        return failed(*found)
    specs = {i.name: i for i in op.inputs}
    parameters = {p["id"]: p for p in document.get("parameters", [])}
    args: dict[str, Any] = {}
    try:
        for name, raw in (assertion.get("args") or {}).items():
            spec = specs.get(name)
            if spec is None or name == "target" or not isinstance(raw, Mapping):
                raise Failure(KERNEL_INPUT_INVALID, f"{ref} has no argument {name!r}")
            if spec.type == SHAPE:
                args[name] = _shape_arg(document, name, raw, cache, aid)
            else:
                args[name] = resolve_scalar(raw, spec, parameters)
        if ref == "validate.solidValidity@1.0.0":
            brep = bool(shape.isValid())
            closed = closed_shells(shape)
            measured = {
                "brepValid": brep,
                "closedShells": closed,
                "solids": len(shape.Solids()),
                "shells": len(shape.Shells()),
            }
            problem = solid_problem(shape)
            if problem is not None:
                return failed(diagnostic(SOLID_INVALID, problem, aid), measured=measured)
            return {"passed": True, "measured": measured, "diagnostics": []}
        if ref == "validate.volumeRange@1.0.0":
            volume = shape.Volume()
            low, high = args.get("min"), args.get("max")
            measured = {"volume": volume, "min": low, "max": high}
            if (low is not None and volume < low) or (high is not None and volume > high):
                return failed(
                    diagnostic(
                        VOLUME_OUT_OF_RANGE,
                        f"volume {volume:g} mm³ is outside {_interval(low, high)} mm³",
                        aid,
                    ),
                    measured=measured,
                )
            return {"passed": True, "measured": measured, "diagnostics": []}
        if ref == "validate.boundingBox@1.0.0":
            limits = {axis: args.get(f"max{axis}") for axis in "XYZ"}
            if all(limit is None for limit in limits.values()):
                raise Failure(KERNEL_INPUT_INVALID, f"{ref} needs at least one of maxX, maxY, maxZ")
            bb = box(shape)
            size = {"X": bb.xlen, "Y": bb.ylen, "Z": bb.zlen}
            measured = {
                "size": [bb.xlen, bb.ylen, bb.zlen],
                **{f"max{k}": m for k, m in limits.items()},
            }
            over = [
                f"{axis} {size[axis]:g} mm > {limit:g} mm"
                for axis, limit in limits.items()
                if limit is not None and size[axis] > limit + BOX_TOLERANCE
            ]
            if over:
                return failed(
                    diagnostic(
                        BOUNDING_BOX_EXCEEDED,
                        f"the body does not fit the envelope: {', '.join(over)}",
                        aid,
                    ),
                    measured=measured,
                )
            return {"passed": True, "measured": measured, "diagnostics": []}
        if ref == "validate.noInterference@1.0.0":
            if "tool" not in args:
                raise Failure(KERNEL_INPUT_INVALID, f"{ref} needs a tool")
            volume = common_volume(shape, args["tool"])
            measured = {"volume": volume}
            if volume > EMPTY_VOLUME:
                return failed(
                    diagnostic(
                        INTERFERENCE_FOUND,
                        f"the bodies overlap: they share {volume:g} mm³",
                        aid,
                    ),
                    measured=measured,
                )
            return {"passed": True, "measured": measured, "diagnostics": []}
        if ref == "validate.holePattern@1.0.0":
            missing = [k for k in ("count", "diameter", "axis") if k not in args]
            if missing:
                raise Failure(KERNEL_INPUT_INVALID, f"{ref} needs {', '.join(missing)}")
            count, diameter, axis = int(args["count"]), args["diameter"], args["axis"]
            tolerance = args.get("tolerance")
            tolerance = HOLE_DIAMETER_TOLERANCE if tolerance is None else tolerance
            found_d = bores(shape, axis)
            matching = [d for d in found_d if abs(d - diameter) <= tolerance]
            measured = {
                "found": len(matching),
                "expected": count,
                "diameter": diameter,
                "axis": axis,
                "tolerance": tolerance,
                "boresAlongAxis": sorted(found_d),
            }
            if len(matching) != count:
                what = "missing" if len(matching) < count else "extra"
                return failed(
                    diagnostic(
                        HOLE_PATTERN_MISMATCH,
                        f"found {len(matching)} bores of {diameter:g} mm (±{tolerance:g}) along "
                        f"{axis}, expected {count} ({abs(count - len(matching))} {what})",
                        aid,
                    ),
                    measured=measured,
                )
            return {"passed": True, "measured": measured, "diagnostics": []}
        if ref == "validate.minWallThickness@1.0.0":
            if "min" not in args:
                raise Failure(KERNEL_INPUT_INVALID, f"{ref} needs min")
            low, samples = args["min"], int(args.get("samples") or 8)
            thinnest, at, rays = wall_thickness(shape, samples)
            measured = {
                "minThickness": thinnest,
                "at": at,
                "min": low,
                "rays": rays,
                "samplesPerFace": samples * samples,
                "quality": "sampled",
            }
            if thinnest is None:
                return failed(
                    diagnostic(
                        WALL_THICKNESS_UNMEASURED,
                        f"no ray found a wall ({rays} rays cast); raise samples",
                        aid,
                    ),
                    measured=measured,
                )
            if thinnest < low - BOX_TOLERANCE:
                return failed(
                    diagnostic(
                        WALL_TOO_THIN,
                        f"a wall is {thinnest:g} mm thick at {at}, below {low:g} mm "
                        f"(sampled with {rays} rays)",
                        aid,
                    ),
                    measured=measured,
                )
            return {"passed": True, "measured": measured, "diagnostics": []}
    except Failure as exc:
        return failed(exc.diagnostic(aid))
    except Exception as exc:
        return failed(diagnostic(KERNEL_OPERATION_FAILED, f"{ref}: {exc}", aid))
    return failed(diagnostic(KERNEL_OPERATION_UNKNOWN, f"no validator {ref}", aid))


HOLE_DIAMETER_TOLERANCE = 0.01


def bores(shape: cq.Shape, axis: str) -> list[float]:
    """Diameters of the cylindrical bores of ``shape`` along ``axis``: concave cylindrical
    faces (the normal points at the axis) whose axis is parallel to ``axis`` and that go all
    the way round; faces on the same axis line with the same radius (a bore split by a seam
    or a boolean) count once, together."""
    from OCP.BRepAdaptor import BRepAdaptor_Surface
    from OCP.GeomAbs import GeomAbs_Cylinder

    ax = cq.Vector(*_AXES[axis])
    seen: dict[tuple[float, ...], float] = {}
    turn: dict[tuple[float, ...], float] = {}  # the angle the key's faces span together
    for face in shape.Faces():
        surface = BRepAdaptor_Surface(face.wrapped)
        if surface.GetType() != GeomAbs_Cylinder:
            continue
        cylinder = surface.Cylinder()
        d = cylinder.Axis().Direction()
        direction = cq.Vector(d.X(), d.Y(), d.Z())
        if abs(abs(direction.dot(ax)) - 1) > 1e-9:
            continue
        loc = cylinder.Axis().Location()
        origin = cq.Vector(loc.X(), loc.Y(), loc.Z())
        u0, u1, v0, v1 = face._uvBounds()
        normal, point = face.normalAt((u0 + u1) / 2, (v0 + v1) / 2)
        radial = point - origin
        radial = radial - ax * radial.dot(ax)
        if normal.dot(radial) >= 0:  # the normal points away from the axis: a boss, not a bore
            continue
        foot = origin - ax * origin.dot(ax)  # where the axis line meets the plane through 0
        radius = cylinder.Radius()
        key = (round(foot.x, 6), round(foot.y, 6), round(foot.z, 6), round(radius, 6))
        seen[key] = 2 * radius
        turn[key] = turn.get(key, 0.0) + (u1 - u0)  # u is the angle on a cylinder
    # A bore goes all the way round; a concave fillet or a half-hole at an edge does not.
    return [d for key, d in seen.items() if turn[key] >= 2 * math.pi - 1e-6]


def wall_thickness(shape: cq.Shape, samples: int) -> tuple[float | None, list[float] | None, int]:
    """The thinnest wall found by rays cast inward along the normal from a ``samples`` ×
    ``samples`` grid of points on every face (points outside a trimmed face are skipped):
    (thickness, where, rays cast). A sampled measure: a thinner spot between the grid points
    is missed, which is why the validator declares the quality ``sampled``."""
    from OCP.BRepClass import BRepClass_FaceClassifier
    from OCP.gp import gp_Dir, gp_Lin, gp_Pnt, gp_Pnt2d
    from OCP.IntCurvesFace import IntCurvesFace_ShapeIntersector
    from OCP.TopAbs import TopAbs_IN

    hits = IntCurvesFace_ShapeIntersector()
    hits.Load(shape.wrapped, 1e-7)  # once: loading the faces is most of a ray's cost
    best: float | None = None
    where: list[float] | None = None
    rays = 0
    for face in shape.Faces():
        u0, u1, v0, v1 = face._uvBounds()
        for i in range(samples):
            for j in range(samples):
                u = u0 + (u1 - u0) * (i + 0.5) / samples
                v = v0 + (v1 - v0) * (j + 0.5) / samples
                inside = BRepClass_FaceClassifier(face.wrapped, gp_Pnt2d(u, v), 1e-7)
                if inside.State() != TopAbs_IN:
                    continue
                normal, point = face.normalAt(u, v)
                if normal.Length < 1e-12:
                    continue
                rays += 1
                inward = gp_Lin(
                    gp_Pnt(point.x, point.y, point.z), gp_Dir(-normal.x, -normal.y, -normal.z)
                )
                hits.Perform(inward, 1e-6, float("inf"))
                nearest = min(
                    (hits.WParameter(k) for k in range(1, hits.NbPnt() + 1)), default=None
                )
                if nearest is not None and (best is None or nearest < best):
                    best, where = nearest, _xyz(point)
    return best, where, rays


def _interval(low: float | None, high: float | None) -> str:
    left = "(-inf" if low is None else f"[{low:g}"
    right = "inf)" if high is None else f"{high:g}]"
    return f"{left}, {right}"


# -- export -------------------------------------------------------------------------------------

FORMATS = {
    "step": "step",
    "stp": "step",
    "io.exportStep@1.0.0": "step",
    "stl": "stl",
    "io.exportStl@1.0.0": "stl",
    "svg": "svg",
    "io.exportSvg@1.0.0": "svg",
    "3mf": "3mf",
    "io.export3mf@1.0.0": "3mf",
    "mesh": "mesh",
    "convert.displayMesh@1.0.0": "mesh",
}
MESH_TOLERANCE = 5e-4
"""Default linear deflection of STL, 3MF and display meshes, as a fraction of the part's
bounding-box diagonal (a fixed tolerance is too fine for a big part and too coarse for a
small one), clamped to [MESH_TOLERANCE_MIN, MESH_TOLERANCE_MAX] mm. It bounds the distance
to the exact surface (a sphere's mesh is within 0.25 % of its volume)."""
MESH_TOLERANCE_MIN = 1e-3
MESH_TOLERANCE_MAX = 1.0
MESH_ANGULAR_TOLERANCE = 0.3
"""Default angular deflection (radians, about 17°, as CAD tools' STL defaults are) on a curved
face: BRepMesh gives a full circle at least 4π/angle segments (42), more where the linear
deflection asks. It was 0.1 rad with twice the linear deflection: a fine angle left slivers
along the seams of lofts and sweeps that mesh checkers read as self-intersections (52 on a
square-to-circle loft), and up to four times the triangles."""
MESH_REFINEMENTS = ((1.0, 0.35), (1.0, 0.25), (0.5, 0.3), (0.5, 0.2))
"""What a default mesh that fails the checks (:mod:`aira_kernel_occt.meshcheck`) is meshed
again with, in order, until one passes: (a factor on the linear deflection, the angular
deflection in radians). The linear deflection is never coarser than the default's."""
MESH_TOLERANCE_RELATIVE_MIN = 1 / 30000
"""The finest linear deflection a caller may ask for, as a fraction of the body's
bounding-box diagonal (15 times finer than the default): BRepMesh's time grows faster than
its triangle count, which grows as 1/tolerance on a doubly curved face; a sphere of radius
100 mm takes over a minute at 0.001 mm (past the worker's deadline), some 5 s at this floor
(0.0115 mm, about 90 000 triangles)."""


@dataclass
class Mesh:
    """One closed triangle mesh: welded ``vertices`` (x, y, z in mm) and ``triangles``
    (vertex indices, counter-clockwise seen from outside), no triangle with repeated
    vertices."""

    vertices: list[tuple[float, float, float]]
    triangles: list[tuple[int, int, int]]
    linear: float = 0.0
    """The linear deflection it was meshed with (mm)."""
    angular: float = 0.0
    """The angular deflection it was meshed with (radians)."""


def mesh_tolerance(shape: cq.Shape, tolerance: float | None = None) -> float:
    """The linear deflection for ``shape``: ``tolerance`` when given, else relative to its
    size."""
    if tolerance is not None:
        return float(tolerance)
    diagonal = _diagonal(shape)
    return min(max(diagonal * MESH_TOLERANCE, MESH_TOLERANCE_MIN), MESH_TOLERANCE_MAX)


def _diagonal(shape: cq.Shape) -> float:
    """The diagonal of the shape's box from its geometry alone (:func:`box`): one that used a
    mesh left on the shape would move the default tolerance with whatever was exported last."""
    from OCP.Bnd import Bnd_Box
    from OCP.BRepBndLib import BRepBndLib

    found = Bnd_Box()
    BRepBndLib.Add_s(shape.wrapped, found, False)  # cheap: a mesh tolerance needs no tight box
    if found.IsVoid():
        return 0.0
    x0, y0, z0, x1, y1, z1 = found.Get()
    return math.sqrt((x1 - x0) ** 2 + (y1 - y0) ** 2 + (z1 - z0) ** 2)


def tolerance_problem(
    named: list[tuple[str, cq.Shape]], tolerance: Any, angular_tolerance: Any
) -> str | None:
    """Why mesh tolerances a caller gave cannot be used for these bodies, or None: the host's
    ranges (``aira_core.extensions``, mm and degrees; ``angular_tolerance`` arrives in
    radians) and, per body, :data:`MESH_TOLERANCE_RELATIVE_MIN`."""
    if tolerance is not None:
        low, high = EXPORT_TOLERANCE_RANGE
        if not (_is_number(tolerance) and math.isfinite(tolerance) and low <= tolerance <= high):
            return f"tolerance must be a number from {low:g} to {high:g} mm, not {tolerance!r}"
        for bid, shape in named:
            diagonal = _diagonal(shape)
            floor = diagonal * MESH_TOLERANCE_RELATIVE_MIN
            if tolerance < floor:
                return (
                    f"a tolerance of {tolerance:g} mm is finer than body {bid!r} can be meshed "
                    f"in time: it is {diagonal:.4g} mm across, so at least {floor:.3g} mm "
                    "(1/30000 of its bounding-box diagonal)"
                )
    if angular_tolerance is not None:
        low, high = EXPORT_ANGULAR_TOLERANCE_RANGE
        if not (
            _is_number(angular_tolerance)
            and math.isfinite(angular_tolerance)
            and math.radians(low) <= angular_tolerance <= math.radians(high)
        ):
            shown = (
                f"{math.degrees(angular_tolerance):g}"
                if _is_number(angular_tolerance)
                else repr(angular_tolerance)[:40]
            )
            return f"angular tolerance must be from {low:g} to {high:g} degrees, not {shown}"
    return None


def triangulate(
    shape: cq.Shape, tolerance: float | None = None, angular_tolerance: float | None = None
) -> Mesh:
    """The BRepMesh triangulation of ``shape`` as one welded, closed mesh (:func:`mesh_of`).

    At the default tolerances (neither given) the mesh is checked as an STL or 3MF checker
    would check it (:func:`aira_kernel_occt.meshcheck.problems`: closed, consistently wound,
    edge- and vertex-manifold, no sliver, no self-intersection) and, where a check fails,
    meshed again with :data:`MESH_REFINEMENTS` until one passes; if none does (a solid that
    touches itself at a point has no manifold mesh), the default's mesh is kept. Tolerances
    a caller gives are used as they are."""
    linear = mesh_tolerance(shape, tolerance)
    if tolerance is not None or angular_tolerance is not None:
        angular = MESH_ANGULAR_TOLERANCE if angular_tolerance is None else angular_tolerance
        return mesh_of(shape, linear, float(angular))
    from aira_kernel_occt import meshcheck

    first = mesh_of(shape, linear, MESH_ANGULAR_TOLERANCE)
    if not meshcheck.problems(first.vertices, first.triangles):
        return first
    for factor, angular in MESH_REFINEMENTS:
        again = mesh_of(shape, linear * factor, angular)
        if not meshcheck.problems(again.vertices, again.triangles):
            return again
    return first


def mesh_of(shape: cq.Shape, linear: float, angular: float) -> Mesh:
    """The BRepMesh triangulation of ``shape`` at these deflections (mm, radians).

    Each face's triangulation has its own nodes; the nodes on an edge two faces share are
    the same points of the edge's discretization, so they are welded by position (rounded
    far below any tolerance). A triangle that loses a vertex to the weld (at a pole, where
    a sphere's or cone's apex is one point for many parameters) has no area and is dropped,
    which is what makes the mesh closed there. Faces stored reversed have their triangles
    flipped; a solid whose mesh then encloses negative volume (its shell stored inside out)
    is flipped as a whole."""
    from OCP.BRepMesh import BRepMesh_IncrementalMesh
    from OCP.BRepTools import BRepTools
    from OCP.TopAbs import TopAbs_FACE, TopAbs_REVERSED
    from OCP.TopLoc import TopLoc_Location
    from OCP.TopoDS import TopoDS

    # A triangulation left on the shape by an earlier mesh (another tolerance) would be
    # reused by BRepMesh: clean it so that the same tolerance always gives the same mesh.
    BRepTools.Clean_s(shape.wrapped)
    BRepMesh_IncrementalMesh(shape.wrapped, linear, False, angular, False)
    quantum = max(linear * 1e-6, 1e-9)
    index: dict[tuple[int, int, int], int] = {}
    vertices: list[tuple[float, float, float]] = []
    triangles: list[tuple[int, int, int]] = []
    solids = shape.Solids()
    for solid in solids or [shape]:  # a profile (a face) has no inside to orient by
        first = len(triangles)
        explorer = TopExp_Explorer(solid.wrapped, TopAbs_FACE)
        while explorer.More():
            face = TopoDS.Face_s(explorer.Current())
            explorer.Next()
            location = TopLoc_Location()
            poly = BRep_Tool.Triangulation_s(face, location)
            if poly is None:
                raise Failure(KERNEL_EXPORT_FAILED, "a face could not be triangulated")
            transform = location.Transformation()
            local = [0] * (poly.NbNodes() + 1)
            for i in range(1, poly.NbNodes() + 1):
                point = poly.Node(i).Transformed(transform)
                xyz = (point.X(), point.Y(), point.Z())
                key = tuple(round(c / quantum) for c in xyz)
                at = index.get(key)
                if at is None:
                    at = index[key] = len(vertices)
                    vertices.append(xyz)
                local[i] = at
            reverse = face.Orientation() == TopAbs_REVERSED
            for k in range(1, poly.NbTriangles() + 1):
                n1, n2, n3 = poly.Triangle(k).Get()
                a, b, c = local[n1], local[n2], local[n3]
                if a in (b, c) or b == c:
                    continue  # collapsed at a pole or a degenerate edge: no area
                triangles.append((a, c, b) if reverse else (a, b, c))
        if solids and _signed_volume(vertices, triangles[first:]) < 0:
            triangles[first:] = [(a, c, b) for a, b, c in triangles[first:]]
    mesh = _compact(vertices, triangles)
    mesh.linear, mesh.angular = linear, angular
    return mesh


def _signed_volume(
    vertices: list[tuple[float, float, float]], triangles: list[tuple[int, int, int]]
) -> float:
    total = 0.0
    for a, b, c in triangles:
        (ax, ay, az), (bx, by, bz), (cx, cy, cz) = vertices[a], vertices[b], vertices[c]
        total += ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
    return total / 6


def _compact(
    vertices: list[tuple[float, float, float]], triangles: list[tuple[int, int, int]]
) -> Mesh:
    """Only the vertices some triangle uses (a pole's dropped triangles may leave none)."""
    renumber: dict[int, int] = {}
    kept: list[tuple[float, float, float]] = []
    out = []
    for triangle in triangles:
        new = []
        for i in triangle:
            j = renumber.get(i)
            if j is None:
                j = renumber[i] = len(kept)
                kept.append(vertices[i])
            new.append(j)
        out.append((new[0], new[1], new[2]))
    return Mesh(kept, out)


def stl_bytes(mesh: Mesh) -> bytes:
    """A binary STL: facet normals from the vertex order (right-handed, outward)."""
    import struct

    header = b"Aira OCCT kernel binary STL".ljust(80, b" ")
    chunks = [header, struct.pack("<I", len(mesh.triangles))]
    pack = struct.Struct("<12fH").pack
    v = mesh.vertices
    for a, b, c in mesh.triangles:
        (ax, ay, az), (bx, by, bz), (cx, cy, cz) = v[a], v[b], v[c]
        ux, uy, uz, wx, wy, wz = bx - ax, by - ay, bz - az, cx - ax, cy - ay, cz - az
        nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
        length = math.sqrt(nx * nx + ny * ny + nz * nz) or 1.0
        chunks.append(
            pack(nx / length, ny / length, nz / length, ax, ay, az, bx, by, bz, cx, cy, cz, 0)
        )
    return b"".join(chunks)


def threemf_bytes(meshes: list[Mesh]) -> bytes:
    """A 3MF package: one mesh object per body (ids from 1: the core schema's resource ids
    are positive), all of them items of the build; no timestamp, so the bytes are stable."""
    import io
    import zipfile

    core = "http://schemas.microsoft.com/3dmanufacturing/core/2015/02"
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        f'<model unit="millimeter" xml:lang="en-US" xmlns="{core}">',
        '<metadata name="Application">Aira OCCT kernel</metadata><resources>',
    ]
    for n, mesh in enumerate(meshes, start=1):
        parts.append(f'<object id="{n}" name="body {n}" type="model"><mesh><vertices>')
        parts.extend(f'<vertex x="{x!r}" y="{y!r}" z="{z!r}"/>' for x, y, z in mesh.vertices)
        parts.append("</vertices><triangles>")
        parts.extend(f'<triangle v1="{a}" v2="{b}" v3="{c}"/>' for a, b, c in mesh.triangles)
        parts.append("</triangles></mesh></object>")
    parts.append("</resources><build>")
    parts.extend(f'<item objectid="{n}"/>' for n in range(1, len(meshes) + 1))
    parts.append("</build></model>")
    content_types = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="model" '
        'ContentType="application/vnd.ms-package.3dmanufacturing-3dmodel+xml"/></Types>'
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Target="/3D/3dmodel.model" Id="rel0" '
        'Type="http://schemas.microsoft.com/3dmanufacturing/2013/01/3dmodel"/></Relationships>'
    )
    out = io.BytesIO()
    stamp = (1980, 1, 1, 0, 0, 0)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for name, text in (
            ("[Content_Types].xml", content_types),
            ("_rels/.rels", rels),
            ("3D/3dmodel.model", "".join(parts)),
        ):
            package.writestr(zipfile.ZipInfo(name, stamp), text.encode(), zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _joined(meshes: list[Mesh]) -> Mesh:
    vertices: list[tuple[float, float, float]] = []
    triangles: list[tuple[int, int, int]] = []
    for mesh in meshes:
        base = len(vertices)
        vertices.extend(mesh.vertices)
        triangles.extend((a + base, b + base, c + base) for a, b, c in mesh.triangles)
    return Mesh(vertices, triangles)


def display_mesh(
    named: list[tuple[str, cq.Shape]],
    tolerance: float | None = None,
    angular_tolerance: float | None = None,
) -> bytes:
    """``aira.mesh/1`` JSON: per body flat ``vertices`` (x, y, z, mm) and ``triangles``
    (vertex indices, counter-clockwise seen from outside), the same welded tessellation as
    STL and 3MF; ``tolerance`` and ``angularTolerance`` are the largest a body was meshed with."""
    import json

    bodies = []
    linear = angular = 0.0
    for bid, shape in named:
        mesh = triangulate(shape, tolerance, angular_tolerance)
        linear, angular = max(linear, mesh.linear), max(angular, mesh.angular)
        bodies.append(
            {
                "body": bid,
                "vertices": [round(c, 6) for v in mesh.vertices for c in v],
                "triangles": [i for t in mesh.triangles for i in t],
            }
        )
    out = {
        "format": "aira.mesh/1",
        "units": "mm",
        "tolerance": linear,
        "angularTolerance": angular,
        "bodies": bodies,
    }
    return json.dumps(out, separators=(",", ":")).encode()


MESH_FORMATS = frozenset({"stl", "3mf", "mesh"})
"""Formats that are a tessellation: the ones mesh tolerances apply to."""
SOLID_FORMATS = frozenset({"step", "stl", "3mf"})
"""Formats that describe solids: a profile (a face) is refused rather than written as a
sheet. SVG and the display mesh draw whatever there is."""


def export(
    document: Mapping[str, Any],
    format: str,
    body: str | None,
    cache: dict[str, Any],
    *,
    tolerance: float | None = None,
    angular_tolerance: float | None = None,
) -> dict[str, Any]:
    """``{"data": bytes, "diagnostics": []}``: one body, or all bodies as one compound.

    Meshes (STL, 3MF, display) use ``tolerance`` (linear deflection, mm) and
    ``angular_tolerance`` (radians: the worker converts the host's degrees); by default one
    relative to each body's size (:func:`mesh_tolerance`) and :data:`MESH_ANGULAR_TOLERANCE`.
    Values out of range are ``KERNEL_INPUT_INVALID`` (:func:`tolerance_problem`); STEP and
    SVG are not meshes and ignore them (the host refuses to pass them)."""
    kind = FORMATS.get(str(format).lower()) or FORMATS.get(str(format))
    if kind is None:
        return {
            "data": b"",
            "diagnostics": [
                diagnostic(KERNEL_EXPORT_FAILED, f"the OCCT kernel cannot export {format!r}")
            ],
        }
    ids = [body] if body is not None else [b["id"] for b in document.get("bodies", [])]
    shapes = []
    for bid in ids:
        shape, found = _body_shape(document, bid, cache)
        if shape is None:
            return {"data": b"", "diagnostics": found}
        shapes.append(shape)
    if not shapes:
        return {
            "data": b"",
            "diagnostics": [diagnostic(KERNEL_EXPORT_FAILED, "the document has no body")],
        }
    if kind in SOLID_FORMATS:
        for bid, one in zip(ids, shapes, strict=True):
            if not has_solid(one):
                return {
                    "data": b"",
                    "diagnostics": [
                        diagnostic(
                            KERNEL_EXPORT_FAILED,
                            f"body {bid!r} is a {one.ShapeType().lower()} (a profile), not a "
                            f"solid: extrude or revolve it before exporting {kind}",
                            bid,
                        )
                    ],
                }
    if kind in MESH_FORMATS:
        problem = tolerance_problem(
            list(zip(ids, shapes, strict=True)), tolerance, angular_tolerance
        )
        if problem is not None:
            return {"data": b"", "diagnostics": [diagnostic(KERNEL_INPUT_INVALID, problem)]}
    shape = shapes[0] if len(shapes) == 1 else cq.Compound.makeCompound(shapes)
    if kind == "mesh":
        try:
            named = list(zip(ids, shapes, strict=True))
            data = display_mesh(named, tolerance, angular_tolerance)
            return {"data": data, "diagnostics": []}
        except Exception as exc:
            return {
                "data": b"",
                "diagnostics": [
                    diagnostic(KERNEL_EXPORT_FAILED, f"tessellation failed: {type(exc).__name__}")
                ],
            }
    try:
        with tempfile.TemporaryDirectory(prefix="aira-occt-") as tmp:
            path = Path(tmp) / f"out.{kind}"
            if kind == "step":
                shape.exportStep(str(path))
            elif kind == "svg":
                cq.exporters.export(shape, str(path), exportType="SVG")
            else:
                # One mesh per body, each at its own size's tolerance (STL holds one
                # triangle soup: the bodies' meshes side by side).
                meshes = [triangulate(one, tolerance, angular_tolerance) for one in shapes]
                if kind == "3mf":
                    path.write_bytes(threemf_bytes(meshes))
                else:
                    path.write_bytes(stl_bytes(_joined(meshes)))
            data = path.read_bytes() if path.is_file() else b""
    except Exception as exc:
        data, error = b"", f"{type(exc).__name__}: {exc}"
    else:
        error = "nothing was written"
    if not data:
        return {
            "data": b"",
            "diagnostics": [diagnostic(KERNEL_EXPORT_FAILED, f"{kind} export failed: {error}")],
        }
    return {"data": data, "diagnostics": []}
