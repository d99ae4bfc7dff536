"""End to end on the real kernel: the first-party package is admitted to production, and a
plan builds a filleted plate through `aira plan apply` (check → propose → preview →
validate → commit) with the volume the closed form gives."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("cadquery")

from cli_runner import new_process

from aira_kernel_occt.operations import OPERATIONS, REPAIRS


def aira(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``aira`` as a user runs it: a new process that loads the installed first-party plugin
    from its entry point and starts the real kernel's worker."""
    return new_process(*args, home=home, AIRA_PLUGINS="occt", timeout=600)


def test_the_first_party_package_is_in_production(aira_home: Path) -> None:
    out = aira(aira_home, "catalog", "list", "--json", "--quarantine")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["quarantine"] == [], body["quarantine"]
    (package,) = body["packages"]
    assert package["name"] == "aira.kernel.occt" and package["publisher"] == "aira-first-party"
    assert package["conformance"]["passed"] is True
    ours = (*OPERATIONS, *REPAIRS)
    assert sorted(package["capabilities"]) == sorted(op.capability for op in ours)


def test_plan_apply_builds_a_filleted_plate_on_the_real_kernel(aira_home: Path, tmp_path) -> None:
    base = json.loads(aira(aira_home, "model", "init", "--json").stdout)["rev"]
    steps = [
        {
            "id": "width",
            "capability": "cap:parameter.define@1",
            "args": {"name": "width", "value": 40, "unit": "mm", "min": 1, "max": 500},
        },
        {
            "id": "plate",
            "capability": "cap:exact.box@1",
            "label": "plate",
            "args": {"length": {"param": "p:width"}, "width": 30, "height": 10},
        },
        {
            "id": "round",
            "capability": "cap:exact.fillet@1",
            "args": {
                "target": "b:plate",
                "radius": {"value": 0.2, "unit": "cm"},
                "edges": {"body": "b:plate", "select": "|Z", "entity": "Edge"},
            },
        },
        {
            "id": "check",
            "capability": "cap:validate.volumeRange@1",
            "args": {"target": "b:plate", "min": 1000, "max": 20000},
        },
        {"id": "mass", "capability": "cap:query.massProperties@1", "args": {"target": "b:plate"}},
    ]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    out = aira(aira_home, "plan", "apply", str(plan), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    envelope = json.loads(out.stdout)
    assert envelope["status"] == "success", envelope["diagnostics"]
    expected = 40 * 30 * 10 - 4 * (1 - math.pi / 4) * 2**2 * 10
    (plate,) = [b for b in envelope["data"]["bodies"].values()]
    assert plate["volume"] == pytest.approx(expected, rel=1e-6)
    assert plate["valid"] is True
    assert all(envelope["data"]["assertions"].values())
    summary = json.loads(aira(aira_home, "model", "show", "--json").stdout)
    assert "b:plate" in summary["aliases"]


def test_export_and_query_on_the_head(aira_home: Path, tmp_path: Path) -> None:
    base = json.loads(aira(aira_home, "model", "init", "--json").stdout)["rev"]
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "baseRevision": base,
                "steps": [
                    {
                        "id": "plate",
                        "capability": "cap:exact.box@1",
                        "label": "plate",
                        "args": {"length": 40, "width": 30, "height": 10},
                    }
                ],
            }
        )
    )
    assert aira(aira_home, "plan", "apply", str(plan)).returncode == 0

    step_file = tmp_path / "plate.step"
    out = aira(
        aira_home,
        "model",
        "export",
        "--format",
        "step",
        "--out",
        str(step_file),
        "--body",
        "b:plate",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert step_file.read_bytes().startswith(b"ISO-10303-21")
    assert json.loads(out.stdout)["bytes"] == step_file.stat().st_size

    out = aira(aira_home, "query", "massProperties", "--args", '{"target": "b:plate"}', "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["data"]["volume"] == pytest.approx(12000, rel=1e-9)
    full = aira(aira_home, "query", "cap:query.boundingBox@1", "--args", '{"target": "b:plate"}')
    assert full.returncode == 0, full.stderr

    for args, code in [
        (["query", "nope", "--args", "{}"], "QUERY_UNKNOWN"),
        (["query", "massProperties", "--args", "[1"], "ARGS_INVALID"),
        (["model", "export", "--format", "xyz", "--out", str(tmp_path / "x")], "EXPORT_FAILED"),
        (
            [
                "model",
                "export",
                "--format",
                "step",
                "--out",
                str(tmp_path / "y"),
                "--body",
                "b:nope",
            ],
            "ALIAS_UNKNOWN",
        ),
    ]:
        bad = aira(aira_home, *args)
        assert bad.returncode == 1, (args, bad.stdout, bad.stderr)
        assert code in bad.stderr + bad.stdout, (args, bad.stderr)
        assert "Traceback" not in bad.stderr


def apply_steps(home: Path, tmp_path: Path, steps: list[dict]) -> dict:
    base = json.loads(aira(home, "model", "show", "--json").stdout)["rev"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    out = aira(home, "plan", "apply", str(plan), "--json")
    envelope = json.loads(out.stdout)
    assert out.returncode == 0 and envelope["status"] == "success", out.stdout + out.stderr
    return envelope


def test_a_sketch_is_swept_into_a_body_and_is_no_body_itself(aira_home: Path, tmp_path) -> None:
    assert aira(aira_home, "model", "init").returncode == 0
    envelope = apply_steps(
        aira_home,
        tmp_path,
        [
            {
                "id": "outline",
                "capability": "cap:sketch.polyline@1",
                "args": {
                    "plane": "XY",
                    "points": [[0, 0], [30, 0], [30, 10], [10, 10], [10, 25], [0, 25], [0, 0]],
                },
            },
            {
                "id": "bracket",
                "capability": "cap:exact.extrude@1",
                "label": "bracket",
                "args": {"profile": {"step": "outline"}, "distance": {"value": 0.5, "unit": "cm"}},
            },
            {
                "id": "section",
                "capability": "cap:sketch.rectangle@1",
                "args": {"plane": "XZ", "width": 4, "height": 10, "center": [10, 5]},
            },
            {
                "id": "ring",
                "capability": "cap:exact.revolve@1",
                "label": "ring",
                "args": {"profile": {"step": "section"}, "axis": "Z"},
            },
        ],
    )
    bodies = envelope["data"]["bodies"]
    assert len(bodies) == 2  # the two sketches made no body
    volumes = sorted(b["volume"] for b in bodies.values())
    assert volumes == pytest.approx(sorted([450 * 5, math.pi * (144 - 64) * 10]), rel=1e-6)
    summary = json.loads(aira(aira_home, "model", "show", "--json").stdout)
    assert {"b:bracket", "b:ring"} <= set(summary["aliases"])
    assert not any(
        a.startswith("b:outline") or a.startswith("b:section") for a in summary["aliases"]
    )


def test_a_plan_lofts_sweeps_and_pockets_from_its_own_sketches(aira_home: Path, tmp_path) -> None:
    """The profile capabilities through the whole write path: sketch steps referenced by
    later steps (an optional loft section left out), a pocket on a body of the same plan,
    and only the solids become bodies."""
    assert aira(aira_home, "model", "init").returncode == 0
    envelope = apply_steps(
        aira_home,
        tmp_path,
        [
            {
                "id": "foot",
                "capability": "cap:sketch.rectangle@1",
                "args": {"plane": "XY", "width": 20, "height": 20},
            },
            {
                "id": "head",
                "capability": "cap:sketch.rectangle@1",
                "args": {"plane": "XY", "offset": 15, "width": 10, "height": 10},
            },
            {
                "id": "frustum",
                "capability": "cap:exact.loft@1",
                "label": "frustum",
                "args": {"profile": {"step": "foot"}, "to": {"step": "head"}, "ruled": True},
            },
            {
                "id": "section",
                "capability": "cap:sketch.circle@1",
                "args": {"plane": "XY", "offset": 40, "radius": 2},
            },
            {
                "id": "rod",
                "capability": "cap:exact.sweep@1",
                "label": "rod",
                "args": {
                    "profile": {"step": "section"},
                    "path": {"points": [[0, 0, 40], [0, 0, 60]]},
                },
            },
            {
                "id": "recess",
                "capability": "cap:sketch.roundedRectangle@1",
                "args": {"plane": "XY", "offset": 15, "width": 6, "height": 6, "radius": 1},
            },
            {
                "id": "pocketed",
                "capability": "cap:exact.pocket@1",
                "args": {"target": {"step": "frustum"}, "profile": {"step": "recess"}, "depth": 2},
            },
        ],
    )
    bodies = envelope["data"]["bodies"]
    assert len(bodies) == 2  # frustum (pocketed in place) and rod; no sketch is a body
    volumes = sorted(b["volume"] for b in bodies.values())
    frustum = 15 / 3 * (400 + 100 + 200) - (36 - (4 - math.pi)) * 2
    assert volumes == pytest.approx(sorted([math.pi * 4 * 20, frustum]), rel=1e-6)


def test_import_a_step_file_and_export_3mf_and_a_display_mesh(aira_home: Path, tmp_path) -> None:
    assert aira(aira_home, "model", "init").returncode == 0
    apply_steps(
        aira_home,
        tmp_path,
        [
            {
                "id": "plate",
                "capability": "cap:exact.box@1",
                "label": "plate",
                "args": {"length": 40, "width": 30, "height": 10},
            },
            {
                "id": "round",
                "capability": "cap:exact.fillet@1",
                "args": {
                    "target": "b:plate",
                    "radius": 3,
                    "edges": {"body": "b:plate", "select": "|Z", "entity": "Edge"},
                },
            },
        ],
    )
    step_file = tmp_path / "plate v2.step"
    out = aira(aira_home, "model", "export", "--format", "step", "--out", str(step_file))
    assert out.returncode == 0, out.stderr

    out = aira(aira_home, "model", "import", str(step_file), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    envelope = json.loads(out.stdout)
    volumes = [b["volume"] for b in envelope["data"]["bodies"].values()]
    assert len(volumes) == 2 and volumes[0] == pytest.approx(volumes[1], rel=1e-6)
    show = json.loads(aira(aira_home, "model", "show", "--json").stdout)
    assert "b:plate_v2" in show["aliases"]  # from the file name, made alias-safe
    assert len(json.dumps(show)) < 8000  # the STEP text is in the revision, not the summary

    mesh_file = tmp_path / "mesh.json"
    out = aira(aira_home, "model", "export", "--format", "mesh", "--out", str(mesh_file))
    assert out.returncode == 0, out.stderr
    mesh = json.loads(mesh_file.read_text())
    assert mesh["format"] == "aira.mesh/1" and len(mesh["bodies"]) == 2
    three = tmp_path / "part.3mf"
    out = aira(
        aira_home, "model", "export", "--format", "3mf", "--out", str(three), "--body", "b:plate_v2"
    )
    assert out.returncode == 0, out.stderr
    assert three.read_bytes()[:2] == b"PK"

    for args, code in [
        (["model", "import", str(tmp_path / "missing.step")], "IMPORT_FAILED"),
        (["model", "import", str(mesh_file)], "IMPORT_UNSUPPORTED"),
        (["model", "import", str(mesh_file), "--format", "step"], "STEP_IMPORT_FAILED"),
    ]:
        bad = aira(aira_home, *args)
        assert bad.returncode == 1, (args, bad.stdout, bad.stderr)
        assert code in bad.stdout + bad.stderr, (args, bad.stdout, bad.stderr)
        assert "Traceback" not in bad.stderr
        assert str(tmp_path) not in bad.stdout + bad.stderr  # no private absolute paths
    after = json.loads(aira(aira_home, "model", "show", "--json").stdout)
    assert after["rev"] == show["rev"]  # failed imports changed nothing


def test_import_keeps_json_clean_and_picks_a_free_alias(aira_home: Path, tmp_path) -> None:
    assert aira(aira_home, "model", "init").returncode == 0
    apply_steps(
        aira_home,
        tmp_path,
        [
            {
                "id": "plate",
                "capability": "cap:exact.box@1",
                "label": "plate",
                "args": {"length": 10, "width": 10, "height": 10},
            }
        ],
    )
    step_file = tmp_path / "plate.step"
    assert (
        aira(aira_home, "model", "export", "--format", "step", "--out", str(step_file)).returncode
        == 0
    )
    out = aira(aira_home, "model", "import", str(step_file), "--json")
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)  # nothing but the envelope on stdout
    cafe = tmp_path / "cafe.step"  # 'cafe' looks like a short id: not an alias-safe label
    cafe.write_bytes(step_file.read_bytes())
    assert aira(aira_home, "model", "import", str(cafe)).returncode == 0
    aliases = json.loads(aira(aira_home, "model", "show", "--json").stdout)["aliases"]
    assert {"b:plate", "b:plate_2", "b:import_cafe"} <= set(aliases)

    broken = tmp_path / "broken.step"  # OpenCASCADE's reader complains on its stdout
    broken.write_text(
        "ISO-10303-21;\nHEADER;\nENDSEC;\nDATA;\n#1=FOO(;\nENDSEC;\nEND-ISO-10303-21;\n"
    )
    out = aira(aira_home, "model", "import", str(broken), "--json")
    assert out.returncode == 1
    envelope = json.loads(out.stdout)  # still valid JSON
    assert "STEP_IMPORT_FAILED" in [d["code"] for d in envelope["diagnostics"]]
    for label, code in [("bad label!", "LABEL_INVALID"), ("plate", "LABEL_TAKEN")]:
        bad = aira(aira_home, "model", "import", str(step_file), "--label", label)
        assert bad.returncode == 1 and code in bad.stderr, bad.stderr


def _plate_plan(tmp_path: Path, base: str, *, radius: float, select: str) -> Path:
    steps = [
        {
            "id": "plate",
            "capability": "cap:exact.box@1",
            "label": "plate",
            "args": {"length": 40, "width": 30, "height": 10},
        },
        {
            "id": "round",
            "capability": "cap:exact.fillet@1",
            "args": {
                "target": "b:plate",
                "radius": radius,
                "edges": {"body": "b:plate", "select": select, "entity": "Edge"},
            },
        },
    ]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    return plan


def test_a_preview_failure_on_the_real_kernel_names_the_step(aira_home: Path, tmp_path) -> None:
    base = json.loads(aira(aira_home, "model", "init", "--json").stdout)["rev"]
    plan = _plate_plan(tmp_path, base, radius=100, select="|Z")
    envelope = json.loads(aira(aira_home, "plan", "apply", str(plan), "--json").stdout)
    assert envelope["status"] == "failed" and envelope["data"]["failedStep"] == "round"
    (d,) = envelope["diagnostics"]
    assert (d["code"], d["subject"], d["phase"]) == ("FILLET_RADIUS_TOO_LARGE", "round", "preview")
    # the OCCT kernel named the lowered fillet node: kept in `affected`, never a step id
    (node,) = d["affected"]
    assert node not in ("plate", "round") and node.startswith("n")


def test_a_not_before_and_warns_and_cadquery_reads_it_loosest(aira_home: Path, tmp_path) -> None:
    base = json.loads(aira(aira_home, "model", "init", "--json").stdout)["rev"]
    # |Z and not (>X and not <X): the two vertical edges not at +X. The form the warning
    # suggests, |Z and (not >X) and (not <X), would select none of the four (all lie at ±X).
    plan = _plate_plan(tmp_path, base, radius=2, select="|Z and not >X and not <X")
    out = aira(aira_home, "plan", "apply", str(plan), "--json")
    envelope = json.loads(out.stdout)
    assert envelope["status"] == "success", envelope["diagnostics"]
    (d,) = envelope["diagnostics"]
    assert (d["code"], d["severity"]) == ("SELECTOR_PRECEDENCE_AMBIGUOUS", "warning")
    assert d["expected"] == "|Z and (not >X) and (not <X)"
    (plate,) = envelope["data"]["bodies"].values()
    # two edges rounded: 40·30·10 − 2·(1 − π/4)·r²·h
    assert plate["volume"] == pytest.approx(12000 - 2 * (1 - math.pi / 4) * 4 * 10, rel=1e-6)


def test_export_takes_mesh_tolerances_and_refuses_bad_ones(aira_home: Path, tmp_path) -> None:
    """`aira model export --tolerance MM --angular-tolerance DEG` end to end on the real
    kernel and store: a finer mesh has more triangles, every one is closed (trimesh); a bad
    value, a format that is no mesh, or a tolerance too fine for the part is refused with its
    code, without a traceback and without writing the file."""
    trimesh = pytest.importorskip("trimesh")
    import io
    import zipfile

    assert aira(aira_home, "model", "init").returncode == 0
    apply_steps(
        aira_home,
        tmp_path,
        [
            {
                "id": "ring",
                "capability": "cap:exact.torus@1",
                "label": "ring",
                "args": {"majorRadius": 10, "minorRadius": 3},
            }
        ],
    )

    def stl(*options: str) -> int:
        out_file = tmp_path / f"ring{len(list(tmp_path.iterdir()))}.stl"
        out = aira(
            aira_home, "model", "export", "--format", "stl", "--out", str(out_file), *options
        )
        assert out.returncode == 0, out.stdout + out.stderr
        mesh = trimesh.load(io.BytesIO(out_file.read_bytes()), file_type="stl", process=False)
        mesh.merge_vertices()
        assert mesh.is_watertight and mesh.is_winding_consistent and mesh.volume > 0
        return len(mesh.faces)

    default = stl()  # coarse levels and the display mesh: test_occt_mesh.py, in one process
    fine = stl("--tolerance", "0.01", "--angular-tolerance", "4")
    assert default < fine

    three = tmp_path / "ring.3mf"
    out = aira(
        aira_home, "model", "export", "--format", "3mf", "--out", str(three),
        "--tolerance", "0.01", "--angular-tolerance", "4", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert (report["tolerance"], report["angularTolerance"]) == (0.01, 4)
    with zipfile.ZipFile(three) as package:
        assert package.read("3D/3dmodel.model").count(b"<triangle ") == fine
    refused = tmp_path / "refused.out"
    cases = [
        *(("stl", ["--tolerance", bad], "EXPORT_TOLERANCE_INVALID") for bad in ("0", "-1", "nan")),
        ("3mf", ["--tolerance", "1e9"], "EXPORT_TOLERANCE_INVALID"),
        ("stl", ["--angular-tolerance", "0.5"], "EXPORT_TOLERANCE_INVALID"),
        ("mesh", ["--angular-tolerance", "inf"], "EXPORT_TOLERANCE_INVALID"),
        ("step", ["--tolerance", "0.1"], "EXPORT_TOLERANCE_UNSUPPORTED"),
        ("svg", ["--angular-tolerance", "10"], "EXPORT_TOLERANCE_UNSUPPORTED"),
        # the ring is 37 mm across: the kernel's finest for it is 1/30000 of that, 0.00124 mm
        ("stl", ["--tolerance", "0.001"], "EXPORT_FAILED"),
    ]
    for fmt, options, code in cases:
        args = ["model", "export", "--format", fmt, "--out", str(refused), *options, "--json"]
        out = aira(aira_home, *args)
        assert out.returncode == 1, (options, out.stdout, out.stderr)
        assert json.loads(out.stdout)["error"]["code"] == code, (options, out.stdout)
        assert "Traceback" not in out.stdout + out.stderr
        assert str(tmp_path) not in out.stdout + out.stderr
        assert not refused.exists(), options
    assert "KERNEL_INPUT_INVALID" in out.stdout and "1/30000" in out.stdout
    usage = aira(aira_home, "model", "export", "--format", "stl", "--out", str(refused),
                 "--tolerance", "fine")  # fmt: skip
    assert usage.returncode == 2 and "USAGE_INVALID" in usage.stderr and not refused.exists()
    shown = aira(aira_home, "model", "export", "--help").stdout
    assert "--tolerance" in shown and "--angular-tolerance" in shown


def test_a_plan_threads_a_stud_and_labels_its_plate(aira_home: Path, tmp_path: Path) -> None:
    """Threads and text through the whole write path (check, preview, validate, commit): a
    stud fused onto a plate, an M8 thread on it, 'M8' engraved beside it; the committed part
    has the closed-form volumes taken out and exports as STEP and as a clean STL."""
    from aira_kernel_occt import geometry, threads

    assert aira(aira_home, "model", "init").returncode == 0
    steps = [
        {"id": "plate", "capability": "cap:exact.box@1", "label": "plate",
         "args": {"length": 40, "width": 30, "height": 6}},
        {"id": "stud", "capability": "cap:exact.cylinder@1", "label": "stud",
         "args": {"radius": 4, "height": 20}},
        {"id": "up", "capability": "cap:exact.translate@1",
         "args": {"target": {"step": "stud"}, "z": 3}},
        {"id": "joined", "capability": "cap:exact.union@1",
         "args": {"target": "b:plate", "tool": {"step": "up"}}},
    ]  # fmt: skip
    plain = apply_steps(aira_home, tmp_path, steps)["data"]["bodies"]
    (before,) = [b["volume"] for b in plain.values()]
    steps = [
        {"id": "thread", "capability": "cap:exact.thread@1",
         "args": {"target": "b:plate", "face": {"body": "b:plate", "select": "%CYLINDER"},
                  "size": "M8", "length": 12}},
        {"id": "label", "capability": "cap:sketch.text@1",
         "args": {"text": "M8", "size": 5, "plane": "XY", "offset": 3, "center": [0, -9]}},
        {"id": "engrave", "capability": "cap:exact.pocket@1",
         "args": {"target": "b:plate", "profile": {"step": "label"}, "depth": 0.5}},
    ]  # fmt: skip
    envelope = apply_steps(aira_home, tmp_path, steps)
    (after,) = [b["volume"] for b in envelope["data"]["bodies"].values()]
    letters = geometry.build(
        "sketch.text@1.0.0", {"text": "M8", "size": 5.0, "plane": "XY", "offset": 3.0}
    )
    removed = threads.parse("M8").removed_volume(4, 12, False) + letters.Area() * 0.5
    assert before - after == pytest.approx(removed, abs=0.05)
    step = tmp_path / "stud.step"
    out = aira(aira_home, "model", "export", "--format", "step", "--out", str(step))
    assert out.returncode == 0 and step.read_text().count("B_SPLINE_SURFACE") >= 2
    stl = tmp_path / "stud.stl"
    assert aira(aira_home, "model", "export", "--format", "stl", "--out", str(stl)).returncode == 0
    import trimesh

    mesh = trimesh.load(stl)
    assert mesh.is_watertight and mesh.volume == pytest.approx(after, rel=5e-3)
