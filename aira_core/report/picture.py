"""The part as one picture: a kernel's display mesh (``aira.mesh/1``, the mesh the run
report draws) as a PNG a person or a multimodal model can look at.

Four views in one image, laid out as a third-angle drawing: the top view above the front
view, the right view beside it, the isometric view in the remaining corner. The three
orthographic views share one scale and line up (X across top and front, Z across front and
right), so their sizes compare at a glance; the isometric view fits its own cell. Each view
is labelled, carries its two bounding-box dimensions in mm as dimension lines and an axis
key; the isometric view's label gives the whole bounding box.

The views are the run report's (:data:`~aira_core.report.views.VIEWS`, projected with
:func:`~aira_core.report.views.project`, shaded flat with
:func:`~aira_core.report.views.shade` in the report's body colours), rasterised here with a
z-buffer, so a hole is seen through and a fillet reads as bands of shade. Outlines and
sharp edges (where neighbouring pixels' normals turn by more than :data:`CREASE_DEGREES` or
the depth jumps) are drawn dark; the faces of a fillet's tessellation turn less and stay
unlined. Rasterising is numpy; Pillow encodes the PNG and draws the text, both imported in
the functions that use them.

Why :data:`CELL` = 448 px: a 896 × 960 picture stays under the ~1.15 megapixels multimodal
models read without downscaling it, and a Ø6.6 hole of an 80 mm plate is still 30 px wide.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from aira_core.diagnostics import AiraError
from aira_core.report.views import (
    MAX_TRIANGLES,
    PALETTE,
    REPORT_MESH_INVALID,
    VIEWS,
    Body,
    project,
    read_mesh,
    shade,
)

REPORT_PICTURE_EMPTY = "REPORT_PICTURE_EMPTY"
CELL = 448
"""Pixels across (and down) one view's drawing area."""
BAR = 30
"""Pixels of the label bar above each view."""
PAD = (64, 18, 18, 46)
"""Pixels left free around a view's part (left, top, right, bottom): the dimension lines
and their numbers sit in the left and bottom ones."""
MAX_BYTES = 150_000
"""The most a picture may weigh (the benchmark checks the bundled parts against it)."""
MAX_MESH_BYTES = 64_000_000
"""The most display-mesh JSON read (a mesh of MAX_TRIANGLES triangles is about 25 MB)."""
MAX_COORDINATE = 1e9
"""mm either side of the origin a vertex may lie (beyond: no part, and no pixel maths)."""
CREASE_DEGREES = 32.0
"""Neighbouring pixels whose normals turn by more than this are a drawn edge (a display
mesh's tessellation turns by at most its angular tolerance, 15°, between triangles)."""
BACKGROUND = (255, 255, 255)
PANEL = (236, 239, 244)
"""The label bars."""
INK = (28, 32, 40)
"""Edges, dimension lines and text."""
EDGE = (24, 30, 44)
LAYOUT = (("top", 0, 0), ("isometric", 1, 0), ("front", 0, 1), ("right", 1, 1))
"""Each view's cell (column, row): third-angle projection."""
TITLES = {
    "isometric": "ISOMETRIC",
    "front": "FRONT  (looking +Y)",
    "top": "TOP  (looking down -Z)",
    "right": "RIGHT  (looking -X)",
}
AXES = {
    name: (
        "XYZ"[int(max(range(3), key=lambda i: abs(r[i])))],
        "XYZ"[int(max(range(3), key=lambda i: abs(u[i])))],
    )
    for name, (r, u, _) in VIEWS.items()
}
"""The model axis across and up each orthographic view (the isometric's is not used)."""
_FRAGMENTS = 3_000_000
"""Candidate pixels rasterised at once (bounds the memory of one batch)."""


def _empty(message: str) -> AiraError:
    return AiraError(REPORT_PICTURE_EMPTY, f"the part's picture has nothing to draw: {message}")


def _invalid(message: str) -> AiraError:
    return AiraError(REPORT_MESH_INVALID, f"the part's display mesh {message}")


def picture_bodies(mesh: bytes | Mapping[str, Any] | Sequence[Body]) -> list[Body]:
    """The bodies of ``mesh`` (``aira.mesh/1`` JSON bytes, the parsed document, or bodies
    :func:`~aira_core.report.views.read_mesh` read), checked for drawing:
    ``REPORT_MESH_INVALID`` for what is no display mesh (as the run report refuses it, and
    for more vertices than its triangles can use or a coordinate beyond
    :data:`MAX_COORDINATE`), ``REPORT_PICTURE_EMPTY`` for a mesh without a triangle."""
    import numpy as np

    if isinstance(mesh, bytes | bytearray | memoryview):
        from aira_core.report.reader import parse_mesh

        data = bytes(mesh)
        if len(data) > MAX_MESH_BYTES:
            raise _invalid(f"is {len(data):,} bytes, more than the {MAX_MESH_BYTES:,} drawn")
        if not data:
            raise _empty("the kernel exports no display mesh")
        bodies = parse_mesh(data, "the part's display mesh")
    elif isinstance(mesh, Mapping):
        bodies = read_mesh(mesh)
    elif isinstance(mesh, Sequence) and all(isinstance(b, Body) for b in mesh):
        bodies = list(mesh)
    else:
        raise _invalid(f"is a {type(mesh).__name__}, not aira.mesh/1 bytes or document")
    vertices = sum(len(b.vertices) for b in bodies)
    if vertices > 3 * MAX_TRIANGLES:
        raise _invalid(f"holds {vertices:,} vertices, more than its triangles can use")
    for b in bodies:
        v, t = np.asarray(b.vertices, dtype=float), np.asarray(b.triangles)
        if v.ndim != 2 or v.shape[1:] != (3,) or t.ndim != 2 or t.shape[1:] != (3,):
            raise _invalid(f"body {b.name!r} is not (n, 3) vertices and (m, 3) triangles")
        if v.size and not (np.isfinite(v).all() and np.abs(v).max() <= MAX_COORDINATE):
            raise _invalid(f"body {b.name!r} has a vertex beyond ±{MAX_COORDINATE:g} mm")
        if t.size and (t.min() < 0 or t.max() >= len(v)):
            raise _invalid(f"body {b.name!r}: a triangle names a vertex it does not have")
    if not any(len(b.triangles) for b in bodies):
        raise _empty("the display mesh holds no triangle")
    return bodies


def _rasterise(tri: Any, width: int, height: int) -> tuple[Any, Any]:
    """Z-buffer ``tri`` (m, 3 corners, (x px, y px, depth)) into a ``height`` × ``width``
    image: (depth, index of the nearest triangle, -1 for none) per pixel, sampled at pixel
    centres. Scanlines: each triangle's span on each pixel row, so a triangle costs its
    rows plus its pixels (a sliver across the part costs no more than its area)."""
    import numpy as np

    depth = np.full(height * width, -np.inf)
    owner = np.full(height * width, -1, dtype=np.int64)
    x, y, z = tri[:, :, 0], tri[:, :, 1], tri[:, :, 2]
    area = (x[:, 1] - x[:, 0]) * (y[:, 2] - y[:, 0]) - (x[:, 2] - x[:, 0]) * (y[:, 1] - y[:, 0])
    live = np.flatnonzero(np.abs(area) > 1e-9)
    x, y, z, area = x[live], y[live], z[live], area[live]
    # depth is a plane in the picture (an orthographic view): z = gx·x + gy·y + z0
    dz1, dz2 = z[:, 1] - z[:, 0], z[:, 2] - z[:, 0]
    dx1, dx2, dy1, dy2 = x[:, 1] - x[:, 0], x[:, 2] - x[:, 0], y[:, 1] - y[:, 0], y[:, 2] - y[:, 0]
    gx = (dz1 * dy2 - dz2 * dy1) / area
    gy = (dx1 * dz2 - dx2 * dz1) / area
    z0 = z[:, 0] - gx * x[:, 0] - gy * y[:, 0]
    # the rows whose centres the triangle spans
    r0 = np.clip(np.ceil(y.min(axis=1) - 0.5), 0, height).astype(np.int64)
    r1 = np.clip(np.floor(y.max(axis=1) - 0.5), -1, height - 1).astype(np.int64)
    rows = np.maximum(r1 - r0 + 1, 0)
    ends = np.cumsum(rows)
    # batches of at most _FRAGMENTS candidate pixels (a triangle's rows × its box's width)
    cost = np.cumsum(rows * (np.ceil(x.max(axis=1) - x.min(axis=1)) + 2))
    cuts = np.searchsorted(cost, np.arange(_FRAGMENTS, cost[-1] if len(cost) else 0, _FRAGMENTS))
    bounds = [0, *sorted(set(int(c) + 1 for c in cuts)), len(live)]
    for first, stop in itertools.pairwise(bounds):
        if first >= stop:
            continue
        sel = slice(first, stop)
        n = rows[sel]
        if not n.sum():
            continue
        t = np.repeat(np.arange(first, stop), n)
        row = r0[t] + np.arange(len(t)) - np.repeat(ends[sel] - n - (ends[first] - rows[first]), n)
        yc = row + 0.5
        low = np.full(len(t), np.inf)
        high = np.full(len(t), -np.inf)
        for a, b in ((0, 1), (1, 2), (2, 0)):
            ya, yb, xa, xb = y[t, a], y[t, b], x[t, a], x[t, b]
            crosses = (np.minimum(ya, yb) <= yc) & (yc <= np.maximum(ya, yb)) & (ya != yb)
            at = xa + (yc - ya) * (xb - xa) / np.where(ya != yb, yb - ya, 1.0)
            low = np.where(crosses, np.minimum(low, at), low)
            high = np.where(crosses, np.maximum(high, at), high)
        c0 = np.clip(np.ceil(low - 0.5), 0, width).astype(np.int64)
        c1 = np.clip(np.floor(high - 0.5), -1, width - 1).astype(np.int64)
        span = np.maximum(c1 - c0 + 1, 0)
        if not span.sum():
            continue
        k = np.repeat(np.arange(len(t)), span)
        column = c0[k] + np.arange(len(k)) - np.repeat(np.cumsum(span) - span, span)
        who = t[k]
        d = gx[who] * (column + 0.5) + gy[who] * yc[k] + z0[who]
        pixel = row[k] * width + column
        order = np.lexsort((d, pixel))  # by pixel, the nearest last
        pixel, d, who = pixel[order], d[order], who[order]
        last = np.ones(len(pixel), dtype=bool)
        last[:-1] = pixel[1:] != pixel[:-1]
        pixel, d, who = pixel[last], d[last], who[last]
        nearer = d > depth[pixel]
        depth[pixel[nearer]] = d[nearer]
        owner[pixel[nearer]] = live[who[nearer]]
    return depth.reshape(height, width), owner.reshape(height, width)


def _edges(depth: Any, owner: Any, normals: Any, pixel_mm: float) -> Any:
    """Pixels on an outline (part against background), a sharp edge (normals turn by more
    than :data:`CREASE_DEGREES`) or a step in depth (one surface in front of another)."""
    import numpy as np

    part = owner >= 0
    n = np.where(part[..., None], normals[np.maximum(owner, 0)], 0.0)
    slope = np.abs(n[..., :2]).max(axis=-1) / np.maximum(np.abs(n[..., 2]), 0.05)
    out = np.zeros(owner.shape, dtype=bool)
    cos = math.cos(math.radians(CREASE_DEGREES))
    for axis in (0, 1):
        a = [slice(None), slice(None)]
        b = [slice(None), slice(None)]
        a[axis], b[axis] = slice(None, -1), slice(1, None)
        pa, pb = part[tuple(a)], part[tuple(b)]
        both = pa & pb
        turn = (n[tuple(a)] * n[tuple(b)]).sum(axis=-1) < cos
        near = np.where(part, depth, 0.0)  # no -inf - -inf off the part
        gap = np.abs(np.where(both, near[tuple(a)] - near[tuple(b)], 0.0))
        allowed = pixel_mm * (2.0 + np.maximum(slope[tuple(a)], slope[tuple(b)]))
        edge = (pa != pb) | (both & (turn | (gap > allowed)))
        # the line goes on the nearer side (the part's own pixel on an outline)
        near_a = pa & (~pb | (near[tuple(a)] >= near[tuple(b)]))
        out[tuple(a)] |= edge & near_a
        out[tuple(b)] |= edge & ~near_a
    return out


def _number(mm: float) -> str:
    text = f"{mm:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _view(
    bodies: Sequence[Body], name: str, scale: float | None, centre: Any
) -> tuple[Any, Any, float, Any] | None:
    """The view ``name`` as pixels of one cell: (RGB image array, the part's pixel box
    (x0, y0, x1, y1) in cell pixels, px per mm, the model's box in the view's frame),
    or None when no triangle faces it. ``scale`` None: fit the cell."""
    import numpy as np

    tris, colours = [], []
    for n, body in enumerate(bodies):
        if not len(body.triangles):
            continue
        t = project(np.asarray(body.vertices, dtype=float), name)[body.triangles]
        normal = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
        length = np.linalg.norm(normal, axis=1)
        keep = length > 0
        if not keep.any():
            continue  # every triangle of the body is seen edge-on: nothing of it shows
        t, normal, length = t[keep], normal[keep], length[keep]
        unit = normal / length[:, None]
        unit[unit[:, 2] < 0] *= -1  # a face seen from behind is lit as its front
        tris.append(t)
        colours.append(
            (np.asarray(PALETTE[n % len(PALETTE)], dtype=float)[None, :], shade(unit), unit)
        )
    if not tris:
        return None
    t = np.concatenate(tris)
    unit = np.concatenate([u for _, _, u in colours])
    rgb = np.concatenate([np.minimum(255, np.round(c * s[:, None])) for c, s, _ in colours]).astype(
        np.uint8
    )
    low, high = t.reshape(-1, 3).min(axis=0), t.reshape(-1, 3).max(axis=0)
    left, top, right, bottom = PAD
    room = (CELL - left - right, CELL - top - bottom)
    if scale is None:
        span = np.maximum(high[:2] - low[:2], 1e-9)
        scale = float(min(room[0] / span[0], room[1] / span[1]))
        centre = (low[:2] + high[:2]) / 2
    middle = (left + room[0] / 2, top + room[1] / 2)
    px = np.empty_like(t)
    px[:, :, 0] = (t[:, :, 0] - centre[0]) * scale + middle[0]
    px[:, :, 1] = middle[1] - (t[:, :, 1] - centre[1]) * scale
    px[:, :, 2] = t[:, :, 2]
    depth, owner = _rasterise(px, CELL, CELL)
    image = np.empty((CELL, CELL, 3), dtype=np.uint8)
    image[:] = BACKGROUND
    part = owner >= 0
    image[part] = rgb[owner[part]]
    image[_edges(depth, owner, unit, 1.0 / scale)] = EDGE
    box = (
        (low[0] - centre[0]) * scale + middle[0],
        middle[1] - (high[1] - centre[1]) * scale,
        (high[0] - centre[0]) * scale + middle[0],
        middle[1] - (low[1] - centre[1]) * scale,
    )
    return image, box, scale, (low, high)


def _arrow(
    draw: Any, tip: tuple[float, float], direction: tuple[float, float], length: float = 7
) -> None:
    dx, dy = direction
    back = (tip[0] - length * dx, tip[1] - length * dy)
    side = (-dy * length * 0.43, dx * length * 0.43)
    draw.polygon(
        [tip, (back[0] + side[0], back[1] + side[1]), (back[0] - side[0], back[1] - side[1])],
        fill=INK,
    )


def _dimensions(draw: Any, box: tuple[float, ...], across: float, up: float, font: Any) -> None:
    """Dimension lines of the part's box: its width below it, its height left of it."""
    x0, y0, x1, y1 = box
    y = y1 + 16
    draw.line([(x0, y1 + 4), (x0, y + 5)], fill=INK)
    draw.line([(x1, y1 + 4), (x1, y + 5)], fill=INK)
    draw.line([(x0, y), (x1, y)], fill=INK)
    if x1 - x0 > 16:
        _arrow(draw, (x0, y), (-1, 0))
        _arrow(draw, (x1, y), (1, 0))
    draw.text(((x0 + x1) / 2, y + 3), _number(across), fill=INK, font=font, anchor="mt")
    x = x0 - 14
    draw.line([(x0 - 4, y0), (x - 5, y0)], fill=INK)
    draw.line([(x0 - 4, y1), (x - 5, y1)], fill=INK)
    draw.line([(x, y0), (x, y1)], fill=INK)
    if y1 - y0 > 16:
        _arrow(draw, (x, y0), (0, -1))
        _arrow(draw, (x, y1), (0, 1))
    draw.text((x - 4, (y0 + y1) / 2), _number(up), fill=INK, font=font, anchor="rm")


def _axes(draw: Any, name: str, origin: tuple[float, float], font: Any) -> None:
    """A small key of the model's axes as the view shows them, at ``origin`` (in the
    view's label bar): an arrow per axis that does not point at the viewer."""
    frame = VIEWS[name]
    for axis, label in enumerate("XYZ"):
        across, up = frame[0][axis], frame[1][axis]
        length = math.hypot(across, up)
        if length < 0.2:
            continue  # the axis points at the viewer
        tip = (origin[0] + 12 * across, origin[1] - 12 * up)
        draw.line([origin, tip], fill=INK, width=1)
        _arrow(draw, tip, (across / length, -up / length), 5)
        where = (tip[0] + 7 * across / length, tip[1] - 6 * up / length)
        draw.text(where, label, fill=INK, font=font, anchor="mm")


def picture_png(
    mesh: bytes | Mapping[str, Any] | Sequence[Body],
    *,
    box: Sequence[float] | None = None,
) -> bytes:
    """One PNG of the part in ``mesh`` (``aira.mesh/1`` bytes, the parsed document, or
    bodies read with :func:`~aira_core.report.views.read_mesh`): the isometric view and the
    front, top and right views, shaded, labelled, with the part's bounding-box sizes in mm.
    ``box``: the kernel's exact bounding box (xmin, ymin, zmin, xmax, ymax, zmax) whose
    sizes are written (default: the mesh's own, whose chords may fall short of a curved
    face by its tolerance). ``REPORT_MESH_INVALID`` for what is no display mesh,
    ``REPORT_PICTURE_EMPTY`` for one with nothing to draw."""
    import io

    import numpy as np
    from PIL import Image, ImageDraw

    bodies = picture_bodies(mesh)
    points = np.concatenate(
        [
            np.asarray(b.vertices, dtype=float)[b.triangles].reshape(-1, 3)
            for b in bodies
            if len(b.triangles)
        ]
    )
    low, high = points.min(axis=0), points.max(axis=0)
    if not float((high - low).max()) > 0:
        raise _empty("every triangle of the display mesh lies on one point")
    size = high - low
    if box is not None:
        exact = np.asarray(box, dtype=float)
        if exact.shape != (6,) or not np.isfinite(exact).all() or (exact[3:] < exact[:3]).any():
            raise _invalid(f"comes with a bounding box {list(box)!r} that is no (min, max) box")
        size = exact[3:] - exact[:3]
    # one scale for the orthographic views: the part's largest side fills the smaller room
    left, top, right, bottom = PAD
    room = min(CELL - left - right, CELL - top - bottom)
    scale = room / float(size.max())
    middle = (low + high) / 2
    image = np.empty((2 * (CELL + BAR), 2 * CELL, 3), dtype=np.uint8)
    image[:] = BACKGROUND
    drawn: dict[str, Any] = {}
    for name, column, row in LAYOUT:
        centre = None if name == "isometric" else project(middle[None, :], name)[0, :2]
        view = _view(bodies, name, None if name == "isometric" else scale, centre)
        drawn[name] = view
        if view is not None:
            y, x = row * (CELL + BAR) + BAR, column * CELL
            image[y : y + CELL, x : x + CELL] = view[0]
    if all(v is None for v in drawn.values()):
        raise _empty("no triangle of the display mesh has an area")
    picture = Image.fromarray(image, "RGB")
    draw = ImageDraw.Draw(picture)
    label, small = _font(15), _font(13)
    axis_index = {"X": 0, "Y": 1, "Z": 2}
    for name, column, row in LAYOUT:
        x, y = column * CELL, row * (CELL + BAR)
        draw.rectangle([x, y, x + CELL - 1, y + BAR - 1], fill=PANEL)
        if name == "isometric":
            title = (
                f"{TITLES[name]}   {_number(size[0])} x {_number(size[1])} x "
                f"{_number(size[2])} mm (X x Y x Z)"
            )
        else:
            across, up = AXES[name]
            title = (
                f"{TITLES[name]}   {_number(size[axis_index[across]])} x "
                f"{_number(size[axis_index[up]])} mm"
            )
        draw.text((x + 10, y + BAR / 2), title, fill=INK, font=label, anchor="lm")
        view = drawn[name]
        if view is None:
            draw.text(
                (x + CELL / 2, y + BAR + CELL / 2),
                "(no face seen)",
                fill=INK,
                font=small,
                anchor="mm",
            )
            continue
        if name != "isometric":
            across, up = AXES[name]
            x0, y0, x1, y1 = view[1]
            _dimensions(
                draw,
                (x + x0, y + BAR + y0, x + x1, y + BAR + y1),
                size[axis_index[across]],
                size[axis_index[up]],
                small,
            )
        _axes(draw, name, (x + CELL - 40, y + BAR - 6), small)
    # the grid between the cells
    draw.line([(CELL, 0), (CELL, picture.height)], fill=PANEL, width=2)
    draw.line([(0, CELL + BAR), (picture.width, CELL + BAR)], fill=PANEL, width=2)
    out = io.BytesIO()
    # a palette of at most 256 colours holds every shade and the text's grey: far smaller
    picture.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        out, "PNG", optimize=True
    )
    return out.getvalue()


def revision_mesh(kernel: Any, document: Any) -> list[Body]:
    """The display mesh of ``document`` (a revision's AMIR document) as ``kernel`` exports
    it for the run report (:func:`aira_core.report.display_mesh`, through the kernel
    guard), read: ``REPORT_PICTURE_EMPTY`` when the document has no body or the kernel
    exports no display mesh, ``REPORT_MESH_INVALID`` for an export that is no display
    mesh, a kernel's refusal as the guard raises it."""
    from aira_core.report import display_mesh

    if not document.bodies:
        raise _empty("the revision has no body yet")
    data = display_mesh(kernel, document)
    if not data:
        raise _empty(
            f"the kernel {getattr(kernel, 'name', type(kernel).__name__)!r} exports no display mesh"
        )
    return picture_bodies(data)


def revision_box(kernel: Any, document: Any) -> tuple[float, ...] | None:
    """The bounding box of every body of ``document`` as ``kernel`` evaluates it (exact,
    through the kernel guard; a kernel caches what it evaluated already), or None when a
    body has none or the evaluation failed."""
    from aira_core import kernel_guard

    evaluation = kernel_guard.evaluate(kernel, document)
    boxes = [
        evaluation.bodies[b.id].bounding_box for b in document.bodies if b.id in evaluation.bodies
    ]
    if not evaluation.ok or len(boxes) != len(document.bodies) or None in boxes:
        return None
    return (
        *(min(b[i] for b in boxes) for i in range(3)),
        *(max(b[i] for b in boxes) for i in range(3, 6)),
    )


def revision_png(kernel: Any, document: Any) -> bytes:
    """The picture (:func:`picture_png`) of ``document`` as ``kernel`` meshes it
    (:func:`revision_mesh`), its sizes the kernel's exact bounding box
    (:func:`revision_box`) when it has one."""
    bodies = revision_mesh(kernel, document)
    return picture_png(bodies, box=revision_box(kernel, document))
