"""The part as a picture (aira_core.report.picture): a display mesh drawn as one PNG of four
views a model can look at, with its sizes; what is no display mesh is a code."""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pytest
from test_report import box_mesh, mesh_of

from aira_core.diagnostics import AiraError
from aira_core.report.picture import (
    BAR,
    CELL,
    LAYOUT,
    MAX_BYTES,
    PAD,
    REPORT_PICTURE_EMPTY,
    picture_png,
)
from aira_core.report.views import REPORT_MESH_INVALID

Image = pytest.importorskip("PIL.Image")


def cells(png: bytes) -> dict[str, np.ndarray]:
    """Each view's drawing area (below its label bar) as an RGB array."""
    picture = Image.open(io.BytesIO(png)).convert("RGB")
    assert picture.size == (2 * CELL, 2 * (CELL + BAR))
    out = {}
    for name, column, row in LAYOUT:
        top = row * (CELL + BAR) + BAR
        out[name] = np.asarray(picture.crop((column * CELL, top, (column + 1) * CELL, top + CELL)))
    return out


def shaded(cell: np.ndarray) -> np.ndarray:
    """The part's shaded pixels: coloured (its body colour), not white, grey or ink."""
    return (cell.max(axis=-1).astype(int) - cell.min(axis=-1)) > 24


def extent(mask: np.ndarray) -> tuple[int, int]:
    ys, xs = np.nonzero(mask)
    return int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)


def test_a_box_is_drawn_in_four_views_at_one_scale() -> None:
    png = picture_png(mesh_of(box_mesh(50, 20, 10)))
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) <= MAX_BYTES
    left, top, right, bottom = PAD
    scale = min(CELL - left - right, CELL - top - bottom) / 50
    views = cells(png)
    sides = {"top": (50, 20), "front": (50, 10), "right": (20, 10)}
    for name, (across, up) in sides.items():
        assert extent(shaded(views[name])) == pytest.approx((across * scale, up * scale), abs=3), (
            name
        )
    # the isometric view fits its own cell and sees three faces in three shades
    iso = views["isometric"]
    assert shaded(iso).sum() > 0.1 * CELL * CELL
    assert len({tuple(p) for p in iso[shaded(iso)]}) >= 3


def test_the_same_mesh_is_the_same_picture_and_bytes_or_document_alike() -> None:
    mesh = mesh_of(box_mesh(30, 30, 30))
    png = picture_png(mesh)
    assert picture_png(json.dumps(mesh).encode()) == png


def test_a_hole_is_seen_through_in_the_top_view() -> None:
    # a 40 x 40 frame around a 20 x 20 opening, as four boxes: the top view's centre is
    # background, its ring is the part
    bars = [
        box_mesh(40, 10, 5, (-20, -20, 0)),
        box_mesh(40, 10, 5, (-20, 10, 0)),
        box_mesh(10, 20, 5, (-20, -10, 0)),
        box_mesh(10, 20, 5, (10, -10, 0)),
    ]
    top = cells(picture_png(mesh_of(*bars)))["top"]
    part = shaded(top)
    ys, xs = np.nonzero(part)
    cy, cx = (ys.min() + ys.max()) // 2, (xs.min() + xs.max()) // 2
    assert not part[cy - 20 : cy + 20, cx - 20 : cx + 20].any()
    assert (top[cy, cx] == 255).all()
    assert part[ys.min() + 5, cx]


def test_the_kernels_box_sizes_the_labels_not_the_chords() -> None:
    mesh = mesh_of(box_mesh(10, 10, 10))
    assert picture_png(mesh, box=(0, 0, 0, 10, 10, 10.004)) != picture_png(mesh)
    with pytest.raises(AiraError) as info:
        picture_png(mesh, box=(0, 0, 0, -1, 10, 10))
    assert info.value.code == REPORT_MESH_INVALID


def _box() -> dict[str, Any]:
    return box_mesh(10, 10, 10)


HOSTILE = [
    ("not a document", b"[1, 2, 3]", REPORT_MESH_INVALID),
    ("not json", b"\xff\xfe{", REPORT_MESH_INVALID),
    ("no bytes", b"", REPORT_PICTURE_EMPTY),
    ("a list of strings", ["a"], REPORT_MESH_INVALID),
    (
        "no triangle",
        mesh_of({"body": "b", "vertices": [0, 0, 0], "triangles": []}),
        REPORT_PICTURE_EMPTY,
    ),
    ("no body", mesh_of(), REPORT_PICTURE_EMPTY),
    (
        "an index beyond its vertices",
        mesh_of({**_box(), "triangles": [0, 1, 99]}),
        REPORT_MESH_INVALID,
    ),
    ("a negative index", mesh_of({**_box(), "triangles": [0, 1, -1]}), REPORT_MESH_INVALID),
    (
        "a coordinate beyond reason",
        mesh_of({**_box(), "vertices": [1e300, 0, 0] * 8}),
        REPORT_MESH_INVALID,
    ),
    (
        "a NaN in JSON",
        b'{"format":"aira.mesh/1","bodies":[{"vertices":[NaN,0,0,1,0,0,0,1,0],'
        b'"triangles":[0,1,2]}]}',
        REPORT_MESH_INVALID,
    ),
    (
        "every triangle on one point",
        mesh_of({"body": "p", "vertices": [1, 1, 1] * 3, "triangles": [0, 1, 2]}),
        REPORT_PICTURE_EMPTY,
    ),
    (
        "a line, no area",
        mesh_of({"body": "l", "vertices": [0, 0, 0, 1, 0, 0, 2, 0, 0], "triangles": [0, 1, 2]}),
        REPORT_PICTURE_EMPTY,
    ),
    ("a boolean coordinate", mesh_of({**_box(), "vertices": [True] * 24}), REPORT_MESH_INVALID),
]


@pytest.mark.parametrize(("what", "mesh", "code"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_what_is_no_drawable_mesh_is_a_code(what: str, mesh: Any, code: str) -> None:
    with pytest.raises(AiraError) as info:
        picture_png(mesh)
    assert info.value.code == code, (what, info.value)
    assert "Traceback" not in str(info.value)
