"""The bundled eval suite's references on the real kernel (`aira eval verify`): every task's
plan builds, its part passes its own checks, and the kernel's volume matches the closed form
where the task gives one. A suite whose checks are wrong fails the right check."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("cadquery")

from cli_runner import new_process

from aira_core.eval.reference import CLOSED_FORM_REL_TOL
from aira_core.eval.suite import BUNDLED, load_suite


def aira(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return new_process(*args, home=home, AIRA_PLUGINS="occt", timeout=900)


def test_every_bundled_reference_builds_and_passes_its_checks(aira_home: Path) -> None:
    out = aira(aira_home, "eval", "verify", "basic", "--json")
    body = json.loads(out.stdout)
    failed = [(t["task"], t["problem"], t["checks"]) for t in body["tasks"] if not t["ok"]]
    assert out.returncode == 0 and body["ok"], failed
    suite = load_suite("basic")
    assert [t["task"] for t in body["tasks"]] == [t.id for t in suite.tasks]
    forms = [t["closedForm"] for t in body["tasks"] if t["closedForm"]]
    assert len(forms) >= 30
    assert all(f["relativeError"] <= CLOSED_FORM_REL_TOL for f in forms), forms
    holes = {
        c["check"] for t in body["tasks"] for c in t["checks"] if c["check"].startswith("hole:")
    }
    assert {"hole:4.5", "hole:8", "hole:30"} <= holes  # features measured, not only volumes


def test_wrong_checks_fail_the_check_that_is_wrong(aira_home: Path, tmp_path: Path) -> None:
    suite = json.loads((BUNDLED / "basic.json").read_text())
    flange = next(t for t in suite["tasks"] if t["id"] == "flange-six-bolts")
    flange["checks"]["holes"][1]["count"] = 5  # six bolt holes built
    flange["checks"]["volume"]["value"] *= 1.1
    flange["reference"]["closedForm"]["volume"] *= 1.1
    plate = next(t for t in suite["tasks"] if t["id"] == "rounded-plate")
    plate["checks"]["boundingBox"]["size"] = [80, 60, 8]
    plate["reference"]["steps"][1]["args"]["radius"] = 200  # cannot be built
    suite["tasks"] = [flange, plate]
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(suite))
    out = aira(aira_home, "eval", "verify", str(path), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    body = json.loads(out.stdout)
    first, second = body["tasks"]
    assert not first["ok"] and first["built"]
    assert {c["check"] for c in first["checks"] if not c["passed"]} == {"volume", "hole:8"}
    assert not first["closedForm"]["passed"]
    assert not second["ok"] and not second["built"]
    assert second["problem"].startswith("FILLET_RADIUS_TOO_LARGE")
    human = aira(aira_home, "eval", "verify", str(path))
    assert human.returncode == 1 and "0/2 references pass" in human.stdout
