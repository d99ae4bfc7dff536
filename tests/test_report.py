"""The run report without a kernel: the projections of a box (extents, culling, paint
order), the page of a run written by hand (chart, plans with their repair, what is
escaped and redacted, no external reference), and `aira report` refusing what is no run,
a damaged trajectory, store or mesh with a stable code and writing nothing. The report of a
real OCCT run in headless chromium: tests/plugins/aira_kernel_occt/test_occt_report.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from aira_core.diagnostics import AiraError
from aira_core.report import build_report, read_run
from aira_core.report.page import BAR, BAR_REJECTED, BUDGET, chart
from aira_core.report.views import PALETTE, read_mesh, render, render_views

np = pytest.importorskip("numpy")


def box_mesh(x: float, y: float, z: float, origin: tuple[float, float, float] = (0, 0, 0)) -> dict:
    """An ``aira.mesh/1`` box, x by y by z mm, triangles counter-clockwise from outside."""
    ox, oy, oz = origin
    corners = [
        (ox + dx * x, oy + dy * y, oz + dz * z) for dz in (0, 1) for dy in (0, 1) for dx in (0, 1)
    ]
    # corner index = dx + 2 dy + 4 dz
    quads = [
        (0, 2, 3, 1),  # bottom (-z)
        (4, 5, 7, 6),  # top (+z)
        (0, 1, 5, 4),  # front (-y)
        (2, 6, 7, 3),  # back (+y)
        (0, 4, 6, 2),  # left (-x)
        (1, 3, 7, 5),  # right (+x)
    ]
    triangles = [i for a, b, c, d in quads for i in (a, b, c, a, c, d)]
    return {
        "body": "box",
        "vertices": [c for v in corners for c in v],
        "triangles": triangles,
    }


def mesh_of(*bodies: dict) -> dict:
    return {"format": "aira.mesh/1", "units": "mm", "bodies": list(bodies)}


# -- views -------------------------------------------------------------------------------------


def test_the_box_is_as_wide_and_high_in_each_view_as_its_sides() -> None:
    bodies = read_mesh(mesh_of(box_mesh(80, 50, 6)))
    views = {v.name: v for v in render_views(bodies)}
    assert list(views) == ["isometric", "front", "top", "right"]
    assert views["front"].extent == (80, 6)
    assert views["top"].extent == (80, 50)
    assert views["right"].extent == (50, 6)
    # one face each orthographic view (two triangles), three faces in the isometric view
    assert views["front"].triangles == views["top"].triangles == views["right"].triangles == 2
    assert views["isometric"].triangles == 6
    for view in views.values():
        assert view.svg.startswith('<svg class="view"') and view.svg.endswith("</svg>")


def test_the_front_view_keeps_the_aspect_and_the_nearer_body_is_painted_last() -> None:
    far = box_mesh(10, 10, 10, origin=(0, 20, 0))  # behind, seen from the front
    near = box_mesh(10, 10, 10, origin=(0, 0, 0))
    near["body"], far["body"] = "near", "far"
    view = render(read_mesh(mesh_of(far, near)), "front")
    width, height = map(float, re.search(r'viewBox="0 0 (\S+) (\S+)"', view.svg).groups())
    assert width == 1000 and height == pytest.approx(1000, abs=1)  # a square face stays one
    fills = re.findall(r'<path fill="(#[0-9a-f]{6})"', view.svg)
    # the far body's face (the first body's colour) first, the near body's over it
    assert len(fills) == 2
    assert _hue_of(fills[0]) == _hue_of(PALETTE[0])
    assert _hue_of(fills[-1]) == _hue_of(PALETTE[1])


def _hue_of(colour: str | tuple[int, int, int]) -> int:
    """The hue in steps of 10 degrees: a body's colour lit or in shade."""
    import colorsys

    if isinstance(colour, str):
        colour = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
    r, g, b = (c / 255 for c in colour)
    return round(colorsys.rgb_to_hsv(r, g, b)[0] * 36)


def test_a_product_of_many_bodies_stays_a_small_page() -> None:
    rng = np.random.default_rng(7)
    bodies = []
    for n in range(48):  # 48 bodies of ~2000 triangles each: a product at the scale of issue 20
        ring = []
        for k in range(500):
            a = 2 * np.pi * k / 500
            ring.append((np.cos(a) * 10, np.sin(a) * 10))
        vertices, triangles = [], []
        for i, (x, y) in enumerate(ring):
            vertices += [x, y, 0.0, x, y, 20.0]
            j = (i + 1) % len(ring)
            a, b, c, d = 2 * i, 2 * j, 2 * j + 1, 2 * i + 1
            triangles += [a, b, c, a, c, d]
        shift = rng.uniform(-200, 200, size=3)
        coords = (np.asarray(vertices).reshape(-1, 3) + shift).ravel().tolist()
        bodies.append({"body": f"b{n}", "vertices": coords, "triangles": triangles})
    svg = "".join(v.svg for v in render_views(read_mesh(mesh_of(*bodies))))
    assert len(svg) < 1_500_000, len(svg)  # ~0.7 MB


@pytest.mark.parametrize(
    "mesh",
    [
        {"format": "aira.mesh/1"},
        {"format": "other", "bodies": []},
        mesh_of({"body": "x", "vertices": [0, 0], "triangles": []}),
        mesh_of({"body": "x", "vertices": [0, 0, 0], "triangles": [0, 0, 1]}),
        mesh_of({"body": "x", "vertices": [0, 0, "1"], "triangles": []}),
        mesh_of({"body": "x", "vertices": [0, 0, 1e309], "triangles": []}),
        mesh_of({"body": "x", "vertices": [0, 0, 0], "triangles": [0, 0, -1]}),
        mesh_of({"body": "x", "vertices": [0, 0, 0], "triangles": [0, True, 0]}),
        mesh_of("not a body"),
    ],
)
def test_a_mesh_that_is_no_display_mesh_is_refused(mesh: Any) -> None:
    with pytest.raises(AiraError) as caught:
        read_mesh(mesh)
    assert caught.value.code == "REPORT_MESH_INVALID"


# -- a run written by hand ----------------------------------------------------------------------

REV0 = "rev:sha256:" + "0" * 64
REV1 = "rev:sha256:" + "1" * 64


def step(n: int, act: str, result: dict, *, round_: int = 0, prompt: int = 100, **decision) -> dict:
    return {
        "step": n,
        "round": round_,
        "capsuleBytes": 100,
        "logBytes": 0,
        "promptTokens": prompt,
        "budgetTokens": 24000,
        "decision": {"act": act, **decision},
        "result": result,
        "usage": {"inputTokens": prompt, "outputTokens": 10, "costUsd": 0.001},
        "provider": "deepseek",
        "model": "deepseek-flash",
        "head": REV0,
    }


HOSTILE = (
    "<script>alert(1)</script> Authorization: Bearer abcdefghijklmnop "
    f"{Path.home() / 'private' / 'notes.txt'}"
)


def write_run(where: Path, *, end: bool = True, extra: str = "") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    records: list[dict] = [
        {"format": "aira.trajectory/1", "script": "plate", "tier": "T32", "taskId": "t"},
        step(0, "read", {"status": "ok"}, prompt=600),
        step(
            1,
            "plan",
            {
                "status": "rejected",
                "code": "PLAN_ARGS_INVALID",
                "failedStep": "round",
                "message": "no select in " + HOSTILE,
            },
            prompt=9000,
            summary="a plate <b>bold</b>",
            plan={"steps": [{"id": "p", "capability": "cap:exact.box@1", "label": "<i>x</i>"}]},
        ),
        step(2, "note", {"status": "ok"}, prompt=12000, note=HOSTILE),
        step(3, "plan", {"status": "ok", "rev": REV1}, round_=1, prompt=3000, summary="again"),
        step(4, "done", {"status": "ok", "terminal": "completed"}, round_=1, prompt=3100),
    ]
    if end:
        records.append(
            {
                "end": True,
                "terminal": "completed",
                "reason": "COMPLETION_EVIDENCE_COMPLETE",
                "head": REV1,
                "inputTokens": 27700,
            }
        )
    text = "".join(json.dumps(r) + "\n" for r in records) + extra
    (where / "trajectory.jsonl").write_text(text)
    return where


def test_the_page_shows_the_steps_plans_and_repair_and_escapes_what_it_was_told(
    tmp_path: Path,
) -> None:
    run = read_run(write_run(tmp_path / "run"))
    assert run.store_note and run.mesh is None  # no store, no mesh: said, not refused
    page = build_report(run).decode()
    assert page.startswith("<!DOCTYPE html>")
    # the chart: five bars against B, the rejected plan in its own colour, a new round marked
    assert page.count('class="bar"') == 5
    assert page.count(f'fill="{BAR_REJECTED}"') == 1 and BUDGET in page and BAR in page
    assert page.count('class="round"') == 1 and "compaction" in page
    assert "B = 24000 tokens" in page
    # the refused plan, its diagnostic and what repaired it
    assert "PLAN_ARGS_INVALID" in page and "failed step <code>round</code>" in page
    assert "<b>Repair</b>" in page and "step 3 plan" in page
    # nothing the model wrote is markup; no credential reaches the page
    assert "<script" not in page and "<b>bold" not in page and "<i>x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "abcdefghijklmnop" not in page and str(Path.home() / "private") not in page
    # tokens and cost: the steps' usage summed (the end record of a script run has none)
    assert "$0.0050" in page and "27700" in page and "decided by deepseek::deepseek-flash" in page
    # self-contained: no URL, no script, nothing loaded
    assert not re.search(r"https?:|src=|href=|url\(|@import|//[a-z]", page, re.IGNORECASE)


def test_markup_in_any_field_of_a_record_stays_text(tmp_path: Path) -> None:
    evil = '<img src=x onerror="alert(1)">'
    where = tmp_path / "run"
    where.mkdir()
    records = [
        {"format": "aira.trajectory/1", "script": evil, "title": evil, "tier": evil},
        {
            **step(0, evil, {"status": evil, "code": evil, "rev": evil, "message": evil}),
            "decision": {"act": "plan", "summary": evil, "plan": {"steps": [{"id": evil}]}},
        },
        step(1, evil, {"status": evil, "terminal": evil}, note=evil, query=evil),
        {"end": True, "terminal": evil, "reason": evil, "head": evil},
    ]
    (where / "trajectory.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    page = build_report(read_run(where)).decode()
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page


def test_a_torn_last_line_is_dropped_as_the_host_drops_it(tmp_path: Path) -> None:
    run = read_run(write_run(tmp_path / "run", end=False, extra='{"step": 5, "round'))
    assert len(run.steps) == 5 and run.end is None
    assert "did not end" in build_report(run).decode()


def test_the_chart_of_no_step_is_an_empty_frame() -> None:
    assert chart([]).startswith("<svg") and 'class="bar"' not in chart([])


# -- aira report refuses what is no run ---------------------------------------------------------


def _refused(aira, *args: str, home: Path) -> str:
    out = aira("report", *map(str, args), home=home)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    (line,) = out.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        ("missing", "REPORT_RUN_MISSING"),
        ("file", "REPORT_RUN_MISSING"),
        ("empty", "REPORT_NOT_A_RUN"),
        ("garbled", "REPORT_TRAJECTORY_INVALID"),
        ("not a trajectory", "REPORT_TRAJECTORY_INVALID"),
        ("store", "REPORT_STORE_INVALID"),
        ("mesh", "REPORT_MESH_INVALID"),
    ],
)
def test_aira_report_refuses_a_damaged_run_and_writes_nothing(
    aira, aira_home: Path, tmp_path: Path, damage: str, code: str
) -> None:
    where = tmp_path / "run"
    if damage == "file":
        where.write_text("x")
    elif damage == "empty":
        where.mkdir()
    elif damage != "missing":
        write_run(where)
        trajectory = where / "trajectory.jsonl"
        if damage == "garbled":
            lines = trajectory.read_text().splitlines(keepends=True)
            trajectory.write_text("".join([*lines[:2], "{not json}\n", *lines[2:]]))
        elif damage == "not a trajectory":
            trajectory.write_text('{"format": "something else"}\n')
        elif damage == "store":
            (where / "store.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
        elif damage == "mesh":
            (where / "plate.mesh.json").write_text('{"format": "aira.mesh/1", "bodies": 3}')
    before = sorted(p.name for p in where.iterdir()) if where.is_dir() else None
    line = _refused(aira, where, home=aira_home)
    assert line.startswith(f"error: {code}: "), line
    assert str(tmp_path) not in line  # names the directory, not where it is
    after = sorted(p.name for p in where.iterdir()) if where.is_dir() else None
    assert after == before  # nothing written


def test_aira_report_writes_the_page_and_refuses_to_replace_another_file(
    aira, aira_home: Path, tmp_path: Path
) -> None:
    where = write_run(tmp_path / "run")
    out = aira("report", str(where), "--json", home=aira_home)
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["format"] == "aira.report/1" and body["report"] == "report.html"
    assert (body["steps"], body["plans"], body["compactions"]) == (5, 2, 1)
    assert (where / "report.html").read_text().startswith("<!DOCTYPE html>")
    other = tmp_path / "mine.html"
    other.write_text("keep me")
    out = aira("report", str(where), "--out", str(other), home=aira_home)
    assert out.returncode == 1 and out.stderr.startswith("error: OUTPUT_EXISTS"), out.stderr
    assert other.read_text() == "keep me"
    out = aira("report", str(where), "--out", str(other), "--force", home=aira_home)
    assert out.returncode == 0 and other.read_text().startswith("<!DOCTYPE html>")


def test_a_run_writes_its_report_and_a_run_without_bodies_has_one_too(tmp_path: Path) -> None:
    from runtime_factory import FakeGeometryKernel

    from aira_core.step.runner import intent_script, run_script

    ran = run_script(
        intent_script("a 60 x 40 x 5 mm plate"),
        kernel=FakeGeometryKernel(),
        store=tmp_path / "store.sqlite3",
        trajectory=tmp_path / "t.jsonl",
        outputs=tmp_path / "out",
    )
    assert ran.diagnostics == [] and set(ran.files) == {"report"}
    page = ran.files["report"].read_text()
    assert ran.files["report"] == tmp_path / "out" / "report.html"
    assert "a 60 x 40 x 5 mm plate" in page and "The task made no plan." in page
    assert "the run wrote no display mesh" in page


def test_a_new_round_is_marked_as_the_fold_or_the_compaction_it_was() -> None:
    def step(n: int, round_: int, log_bytes: int) -> dict[str, Any]:
        return {
            "step": n,
            "round": round_,
            "logBytes": log_bytes,
            "promptTokens": 1000,
            "budgetTokens": 24000,
            "decision": {"act": "read"},
            "result": {"status": "ok"},
        }

    svg = chart([step(0, 0, 0), step(1, 0, 900), step(2, 1, 400), step(3, 2, 0)])
    assert svg.count('class="round"') == 2
    assert "round 1 · fold" in svg and "round 2 · compaction" in svg
