"""What an STL or 3MF checker asks of a triangle mesh, checked before one is exported: every
edge shared by exactly two triangles that run it opposite ways (closed, consistently wound,
edge-manifold), each vertex's triangles one fan (vertex-manifold), no triangle without area
or so thin that checkers read it as crossing its neighbours (a sliver), and no two triangles
that share no vertex meeting (self-intersection).

BRepMesh meshes each face on its own: where two faces meet at a shallow angle, a fine
angular deflection can leave a sliver along the shared edge (three points of the edge, 40 mm
long and 0.0004 mm high on a loft from a square to a circle) that the neighbouring face's
triangles cross. The exporter asks :func:`problems` and meshes again where it finds one
(``geometry.triangulate``).

numpy only, vectorised: a uniform grid pairs triangles whose boxes meet, and a
separating-axis test decides each pair (the two normals, the nine edge-edge cross products
and the six in-plane edge normals, so coplanar pairs are decided too). A pair is apart when
some axis parts them by more than ``1e-9`` of the mesh's size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

SLIVER = 1e-4
"""A triangle whose height is under this fraction of its longest edge is a sliver. A clean
mesh of the parts the tests build has none under 5e-3; a needle of a long thin cylinder
(400 mm by 1 mm) is about 6e-4."""
GRID_SPAN = 4
"""A triangle's box more grid cells across than this is tested against every box instead."""
PAIR_CHUNK = 100_000
"""Pairs tested at once (memory: 17 axes by 6 points by 8 bytes each)."""


def problems(
    vertices: Sequence[tuple[float, float, float]], triangles: Sequence[tuple[int, int, int]]
) -> list[str]:
    """What a mesh checker would refuse in this mesh, one line per kind; empty when none."""
    v = np.asarray(vertices, dtype=float).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if not len(t):
        return ["no triangles"]
    out = []
    p = v[t]
    longest = np.linalg.norm(p - np.roll(p, 1, axis=1), axis=2).max(axis=1)
    doubled = np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
    thin = int(np.count_nonzero(doubled <= SLIVER * longest**2))
    if thin:
        out.append(f"{thin} triangles without area or thinner than {SLIVER:g} of their length")
    edges = _edge_problems(t, len(v))
    out += edges
    if not edges:  # the fan walk needs each edge used once each way
        out += _vertex_problems(t, len(v))
    crossing = self_intersections(v, t)
    if crossing:
        out.append(f"{crossing} pairs of triangles meet away from a shared vertex")
    return out


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, sorted (a sort and a mask: several times
    faster than ``np.unique``'s hashing on these sizes)."""
    keys = np.sort(keys)
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def _edge_problems(t: np.ndarray, n: int) -> list[str]:
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    directed = a * n + b
    if len(_distinct(directed)) != len(directed):
        return ["an edge is run twice the same way (inconsistent winding, or non-manifold)"]
    # each directed edge needs its reverse: then every edge has exactly two triangles
    missing = int(np.count_nonzero(~np.isin(b * n + a, directed)))
    return [f"{missing} edges with one triangle (the mesh is open)"] if missing else []


def _vertex_problems(t: np.ndarray, n: int) -> list[str]:
    """A vertex whose triangles are not one fan. In a closed edge-manifold mesh each corner
    of a triangle at a vertex has one neighbour across the edge it leaves by: a permutation
    of the corners, whose cycles are the fans. Each corner takes the least corner of its cycle
    (pointer doubling: log2 of the largest fan steps); a vertex with two labels pinches."""
    m = len(t)
    vertex = t.reshape(-1)
    nxt = np.roll(t, -1, axis=1).reshape(-1)
    key = vertex * n + nxt  # the edge each corner leaves by
    order = np.argsort(key)
    at = order[np.searchsorted(key[order], nxt * n + vertex)]  # the reverse edge's corner
    step = (at // 3) * 3 + (at % 3 + 1) % 3  # that triangle's corner at this vertex
    label = np.arange(3 * m)
    largest = int(np.bincount(vertex, minlength=n).max())
    for _ in range(max(largest - 1, 1).bit_length()):
        label = np.minimum(label, label[step])
        step = step[step]
    fans = _distinct(vertex * (3 * m) + label)
    bad = int(np.count_nonzero(np.bincount(fans // (3 * m), minlength=n) > 1))
    return [f"{bad} vertices where the surface pinches (not vertex-manifold)"] if bad else []


def self_intersections(v: np.ndarray, t: np.ndarray) -> int:
    """Pairs of triangles that share no vertex and meet."""
    pairs = _candidate_pairs(v, t)
    if not len(pairs):
        return 0
    a, b = t[pairs[:, 0]], t[pairs[:, 1]]
    shared = (a[:, :, None] == b[:, None, :]).any(axis=(1, 2))
    pairs = pairs[~shared]
    eps = (float(np.ptp(v, axis=0).max()) or 1.0) * 1e-9
    found = 0
    for start in range(0, len(pairs), PAIR_CHUNK):
        chunk = pairs[start : start + PAIR_CHUNK]
        found += int(np.count_nonzero(_meet(v[t[chunk[:, 0]]], v[t[chunk[:, 1]]], eps)))
    return found


def _candidate_pairs(v: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Pairs (i, j) of triangles whose bounding boxes meet. Boxes up to :data:`GRID_SPAN`
    cells across are put in the cells of a uniform grid and paired within each cell; a
    larger one (a long triangle of a big planar face) is tested against every box."""
    points = v[t]
    lo, hi = points.min(axis=1), points.max(axis=1)
    extent = (hi - lo).max(axis=1)
    size = float(np.median(extent)) * 2 or float(extent.max()) or 1.0
    first = np.floor((lo - lo.min(axis=0)) / size).astype(np.int64)
    spans = np.floor((hi - lo.min(axis=0)) / size).astype(np.int64) - first + 1
    big = spans.max(axis=1) > GRID_SPAN
    found = [_grid_pairs(np.flatnonzero(~big), first, spans)]
    for start in range(0, int(big.sum()), 256):
        rows = np.flatnonzero(big)[start : start + 256]
        meet = np.all((lo[rows, None] <= hi[None]) & (lo[None] <= hi[rows, None]), axis=2)
        r, c = np.nonzero(meet)
        found.append(np.stack([rows[r], c], axis=1))
    pairs = np.concatenate(found)
    pairs = np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1)
    keys = _distinct(pairs[:, 0] * len(t) + pairs[:, 1])
    i, j = keys // len(t), keys % len(t)
    meet = np.all((lo[i] <= hi[j]) & (lo[j] <= hi[i]), axis=1)
    return np.stack([i[meet], j[meet]], axis=1)


def _grid_pairs(owners: np.ndarray, first: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """Pairs of the triangles ``owners`` that share a grid cell."""
    counts = spans[owners].prod(axis=1)
    owner = np.repeat(owners, counts)
    k = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    sx, sy = spans[owner, 0], spans[owner, 1]
    cell = first[owner] + np.stack([k % sx, (k // sx) % sy, k // (sx * sy)], axis=1)
    if not len(cell):
        return np.empty((0, 2), dtype=np.int64)
    dims = cell.max(axis=0) + 1
    key = (cell[:, 0] * dims[1] + cell[:, 1]) * dims[2] + cell[:, 2]
    order = np.argsort(key, kind="stable")
    key, owner = key[order], owner[order]
    starts = np.flatnonzero(np.r_[True, np.diff(key) != 0])
    sizes = np.diff(np.r_[starts, len(key)])
    found = [np.empty((0, 2), dtype=np.int64)]
    for n in np.unique(sizes[sizes > 1]):  # all pairs within the cells of n triangles at once
        group = starts[sizes == n][:, None] + np.arange(n)
        i, j = np.triu_indices(int(n), 1)
        found.append(np.stack([owner[group[:, i]].ravel(), owner[group[:, j]].ravel()], axis=1))
    return np.concatenate(found)


def _meet(p: np.ndarray, q: np.ndarray, eps: float) -> np.ndarray:
    """For each pair of triangles ``p[k]``, ``q[k]`` (each (3, 3)): whether no axis parts
    them by more than ``eps``."""
    ep = np.roll(p, -1, axis=1) - p
    eq = np.roll(q, -1, axis=1) - q
    n_p = np.cross(ep[:, 0], ep[:, 1])
    n_q = np.cross(eq[:, 0], eq[:, 1])
    axes = np.concatenate(
        [
            n_p[:, None],
            n_q[:, None],
            np.cross(ep[:, :, None, :], eq[:, None, :, :]).reshape(-1, 9, 3),
            np.cross(n_p[:, None], ep),
            np.cross(n_q[:, None], eq),
        ],
        axis=1,
    )
    length = np.linalg.norm(axes, axis=2, keepdims=True)
    usable = length[..., 0] > 1e-12
    axes = axes / np.where(length > 1e-12, length, 1.0)
    pp = np.einsum("mad,mpd->map", axes, p)
    qq = np.einsum("mad,mpd->map", axes, q)
    gap = np.maximum(qq.min(axis=2) - pp.max(axis=2), pp.min(axis=2) - qq.max(axis=2))
    return ~((gap > eps) & usable).any(axis=1)
