"""End to end on the real kernel: the first-party package is admitted to production, and a
plan builds a filleted plate through `aira plan apply` (check → propose → preview →
validate → commit) with the volume the closed form gives."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cadquery")

from aira_kernel_occt.operations import OPERATIONS


def aira(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AIRA_HOME": str(home), "AIRA_PLUGINS": "occt"}
    return subprocess.run(
        [sys.executable, "-m", "aira_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_the_first_party_package_is_in_production(aira_home: Path) -> None:
    out = aira(aira_home, "catalog", "list", "--json", "--quarantine")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["quarantine"] == [], body["quarantine"]
    (package,) = body["packages"]
    assert package["name"] == "aira.kernel.occt" and package["publisher"] == "aira-first-party"
    assert package["conformance"]["passed"] is True
    assert sorted(package["capabilities"]) == sorted(op.capability for op in OPERATIONS)


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
