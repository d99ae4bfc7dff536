"""The part as pictures: a kernel's display mesh (``aira.mesh/1``) projected into inline SVG,
one isometric and three orthographic views (front, top, right), kernel-neutral.

Each view projects every triangle, drops those facing away (the mesh is counter-clockwise
seen from outside), paints the rest from the farthest to the nearest (painter's order by
mean depth) and shades each flat by its normal against a light fixed to the viewer, in its
body's colour. Coordinates are whole units of a 1000-wide view box and triangles that round
to nothing are dropped; runs of neighbours in paint order with the same colour share one
``<path>``: a product of many bodies stays a page a browser opens at once.

Z is up (the kernel's frame): front looks along +Y, top down along -Z, right along -X, the
isometric view from the front-right-top corner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aira_core.diagnostics import AiraError

MESH_FORMAT = "aira.mesh/1"
REPORT_MESH_INVALID = "REPORT_MESH_INVALID"
WIDTH = 1000
"""View-box units across a view: coordinates are whole units of it."""
MARGIN = 0.06
"""Of the view's size, left free around the part."""
SHADES = 24
"""Brightness levels a face's shade is rounded to (neighbours of one level merge)."""
PALETTE = (
    (74, 120, 194),  # steel blue: the first body, the colour a test looks for
    (214, 140, 52),
    (92, 168, 104),
    (170, 92, 160),
    (200, 84, 84),
    (80, 166, 178),
    (160, 146, 74),
    (120, 110, 200),
)
"""Body colours, in the mesh's body order (repeated past the last)."""
MAX_TRIANGLES = 400_000
"""Most triangles a mesh may hold for the report (a display mesh is far smaller)."""

_S3, _S2, _S6 = math.sqrt(3), math.sqrt(2), math.sqrt(6)
VIEWS: dict[str, tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]] = {
    # name: (right, up, toward the viewer), a right-handed frame
    "isometric": (
        (1 / _S2, 1 / _S2, 0.0),
        (-1 / _S6, 1 / _S6, 2 / _S6),
        (1 / _S3, -1 / _S3, 1 / _S3),
    ),
    "front": ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0)),
    "top": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "right": ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (1.0, 0.0, 0.0)),
}
"""The four views, each the viewer's frame in model coordinates."""
LIGHT = (-0.35, 0.45, 0.82)
"""Where the light comes from, in the viewer's frame (right, up, toward): upper left, front."""


@dataclass(frozen=True)
class Body:
    """One body of a display mesh: ``vertices`` (n, 3) mm, ``triangles`` (m, 3) indices."""

    name: str
    vertices: Any
    triangles: Any


@dataclass(frozen=True)
class View:
    """One rendered view: its name, the SVG element, the part's extent across and up (mm)."""

    name: str
    svg: str
    extent: tuple[float, float]
    triangles: int


def _bad(message: str) -> AiraError:
    return AiraError(REPORT_MESH_INVALID, f"the part's display mesh {message}")


def read_mesh(value: Any) -> list[Body]:
    """The bodies of an ``aira.mesh/1`` value (parsed JSON), checked: flat coordinate and
    index lists of whole triples, finite numbers, indices within the vertices.
    ``REPORT_MESH_INVALID`` otherwise."""
    import numpy as np

    if not isinstance(value, Mapping) or value.get("format") != MESH_FORMAT:
        raise _bad(f"is not an {MESH_FORMAT} document")
    bodies = value.get("bodies")
    if not isinstance(bodies, list):
        raise _bad("has no list of bodies")
    out, total = [], 0
    for n, body in enumerate(bodies):
        if not isinstance(body, Mapping):
            raise _bad(f"body {n} is not an object")
        coords, indices = body.get("vertices"), body.get("triangles")
        if not isinstance(coords, list) or not isinstance(indices, list):
            raise _bad(f"body {n} has no vertices and triangles lists")
        if len(coords) % 3 or len(indices) % 3:
            raise _bad(f"body {n}: its lists are not of whole triples")
        total += len(indices) // 3
        if total > MAX_TRIANGLES:
            raise _bad(f"holds more than {MAX_TRIANGLES} triangles")
        if not all(isinstance(c, int | float) and not isinstance(c, bool) for c in coords):
            raise _bad(f"body {n}: a vertex coordinate is not a number")
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in indices):
            raise _bad(f"body {n}: a triangle index is not an integer")
        vertices = np.asarray(coords, dtype=float).reshape(-1, 3)
        triangles = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
        if not np.isfinite(vertices).all():
            raise _bad(f"body {n}: a vertex coordinate is not finite")
        if triangles.size and (triangles.min() < 0 or triangles.max() >= len(vertices)):
            raise _bad(f"body {n}: a triangle names a vertex it does not have")
        name = body.get("body")
        out.append(Body(str(name) if name is not None else f"body {n}", vertices, triangles))
    return out


def _colour(rgb: tuple[int, int, int], shade: float) -> str:
    return "#" + "".join(f"{min(255, round(c * shade)):02x}" for c in rgb)


def project(vertices: Any, name: str) -> Any:
    """``vertices`` (n, 3) in model mm as the view ``name`` sees them: (right, up, toward the
    viewer) in mm, the third the depth (larger is nearer). The run report's views and the
    picture (:mod:`~aira_core.report.picture`) both project with it."""
    import numpy as np

    return vertices @ np.asarray(VIEWS[name], dtype=float).T


def shade(unit_normals: Any) -> Any:
    """The brightness (0.38–1, in steps of 1/:data:`SHADES`) of faces whose unit normals
    (m, 3) are in the viewer's frame, lit from :data:`LIGHT`."""
    import numpy as np

    light = np.asarray(LIGHT) / np.linalg.norm(LIGHT)
    lit = np.clip(unit_normals @ light, 0.0, 1.0)
    return np.round((0.38 + 0.62 * lit) * SHADES) / SHADES


def render(bodies: Sequence[Body], name: str, *, label: str | None = None) -> View:
    """The view ``name`` (one of :data:`VIEWS`) of ``bodies`` as an ``<svg>`` element."""
    import numpy as np

    points, tris, colours = [], [], []
    for n, body in enumerate(bodies):
        if not len(body.triangles):
            continue
        p = project(body.vertices, name)  # model -> (x, y, depth)
        t = p[body.triangles]  # (m, 3 corners, 3)
        normal = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
        length = np.linalg.norm(normal, axis=1)
        keep = (normal[:, 2] > 1e-12 * np.maximum(length, 1e-300)) & (length > 0)
        if not keep.any():
            continue
        t, normal, length = t[keep], normal[keep], length[keep]
        points.append(t)
        tris.append(np.full(len(t), n))
        colours.append(shade(normal / length[:, None]))
    if not points:
        return View(name, _svg(name, label, "", (1.0, 1.0)), (0.0, 0.0), 0)
    t = np.concatenate(points)
    body_of = np.concatenate(tris)
    shades = np.concatenate(colours)
    low = t[:, :, :2].reshape(-1, 2).min(axis=0)
    high = t[:, :, :2].reshape(-1, 2).max(axis=0)
    extent = high - low
    span = max(float(extent.max()), 1e-9)
    scale = WIDTH * (1 - 2 * MARGIN) / span
    size = (WIDTH, max(round(extent[1] * scale + 2 * MARGIN * WIDTH), 1))
    xy = np.empty((len(t), 3, 2))
    xy[:, :, 0] = (t[:, :, 0] - low[0]) * scale + MARGIN * WIDTH
    xy[:, :, 1] = size[1] - ((t[:, :, 1] - low[1]) * scale + MARGIN * WIDTH)
    xy = np.round(xy).astype(np.int64)
    area = np.abs(
        (xy[:, 1, 0] - xy[:, 0, 0]) * (xy[:, 2, 1] - xy[:, 0, 1])
        - (xy[:, 2, 0] - xy[:, 0, 0]) * (xy[:, 1, 1] - xy[:, 0, 1])
    )
    order = np.argsort(t[:, :, 2].mean(axis=1), kind="stable")  # far to near
    order = order[area[order] > 0]
    paths: list[str] = []
    fill, run = None, []
    for i in order:
        colour = _colour(PALETTE[body_of[i] % len(PALETTE)], float(shades[i]))
        (ax, ay), (bx, by), (cx, cy) = xy[i]
        if colour != fill and run:
            paths.append(_path(fill, run))
            run = []
        fill = colour
        run.append(f"M{ax} {ay}L{bx} {by}L{cx} {cy}Z")
    if run:
        paths.append(_path(fill, run))
    return View(
        name,
        _svg(name, label, "".join(paths), size),
        (round(float(extent[0]), 3), round(float(extent[1]), 3)),
        len(order),
    )


def _path(fill: str | None, run: list[str]) -> str:
    # the stroke in the fill's colour closes the hairline gaps anti-aliasing leaves
    return f'<path fill="{fill}" stroke="{fill}" d="{"".join(run)}"/>'


def _svg(name: str, label: str | None, body: str, size: tuple[float, float]) -> str:
    from html import escape

    title = escape(label or f"{name} view")
    return (
        f'<svg class="view" viewBox="0 0 {size[0]} {size[1]}"'
        f' role="img" aria-label="{title}" stroke-width="2" stroke-linejoin="round">'
        f"<title>{title}</title>{body}</svg>"
    )


def render_views(bodies: Sequence[Body]) -> list[View]:
    """The isometric view, then front, top and right."""
    return [render(bodies, name) for name in VIEWS]
