"""`aira plan check|apply` end to end, on a FAKE kernel installed as a real plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from factory import Signer, write_package
from fakeplugins import drop_module, install_fake_distribution
from runtime_factory import PUBLISHER, composite_steps, runtime_manifest

TESTS = Path(__file__).parent

PLUGIN = """
from pathlib import Path
from aira_core import hookimpl
from aira_core.extensions import CapabilityPackageSource
from runtime_factory import FakeGeometryKernel, runtime_implementations, runtime_manifest

PACKAGE = Path({package!r})

@hookimpl
def aira_register_capability_packages(register):
    impls = runtime_implementations(runtime_manifest())
    register(CapabilityPackageSource.from_directory(PACKAGE, impls))

@hookimpl
def aira_register_kernels(register):
    register(FakeGeometryKernel(runtime_implementations(runtime_manifest())))
"""


@pytest.fixture
def installed(tmp_path: Path, aira_home: Path):  # type: ignore[no-untyped-def]
    signer = Signer(PUBLISHER)
    package = write_package(tmp_path / "package", runtime_manifest(), signer)
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(
        site, "aira-fake-kernel", "0.0.1", "fake-kernel", PLUGIN.format(package=str(package))
    )
    env = {
        **os.environ,
        "AIRA_HOME": str(aira_home),
        "PYTHONPATH": os.pathsep.join([str(site), str(TESTS)]),
    }

    def aira(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "aira_core.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    assert aira("trust", "add", PUBLISHER, signer.public_b64).returncode == 0
    yield aira
    drop_module("aira-fake-kernel")


def write_plan(path: Path, base: str, **kw) -> Path:  # type: ignore[no-untyped-def]
    steps = [s.to_wire() for s in composite_steps(**kw)]
    path.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    return path


def test_plan_check_and_apply_on_the_installed_kernel(installed, tmp_path: Path) -> None:
    aira = installed
    listed = json.loads(aira("catalog", "list", "--json").stdout)
    assert len(listed["packages"]) == 1 and listed["quarantineCount"] == 0
    base = json.loads(aira("model", "init", "--json").stdout)["rev"]
    plan = write_plan(tmp_path / "plan.json", base)

    check = aira("plan", "check", str(plan), "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    assert json.loads(check.stdout)["ok"] is True

    applied = aira("plan", "apply", str(plan), "--json")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    envelope = json.loads(applied.stdout)
    assert envelope["status"] == "success"
    assert envelope["data"]["assertions"] and all(envelope["data"]["assertions"].values())
    summary = json.loads(aira("model", "show", "--json").stdout)
    assert summary["rev"] == envelope["observedRevision"]
    assert "b:plate" in summary["aliases"]


def test_plan_cli_refuses_bad_plans_with_codes(installed, tmp_path: Path) -> None:
    aira = installed
    base = json.loads(aira("model", "init", "--json").stdout)["rev"]
    wrong_unit = write_plan(tmp_path / "unit.json", base, radius={"value": 2, "unit": "deg"})
    out = aira("plan", "check", str(wrong_unit), "--json")
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["failedStep"] == "round"
    assert "UNIT_MISMATCH" in [d["code"] for d in report["diagnostics"]]
    assert report["stepSchema"]["properties"]["radius"]

    applied = aira("plan", "apply", str(wrong_unit), "--json")
    assert applied.returncode == 1
    assert json.loads(applied.stdout)["status"] == "blocked"
    assert json.loads(aira("model", "show", "--json").stdout)["rev"] == base

    (tmp_path / "junk.json").write_text("{")
    junk = aira("plan", "check", str(tmp_path / "junk.json"))
    assert junk.returncode == 1 and "INPUT_NOT_JSON" in junk.stderr
    stale = write_plan(tmp_path / "stale.json", "rev:sha256:" + "1" * 64)
    out = aira("plan", "apply", str(stale), "--json")
    assert out.returncode == 1 and json.loads(out.stdout)["status"] in {"stale", "failed"}
    assert "Traceback" not in out.stderr


def test_plan_apply_on_a_task_branch_leaves_main_alone(installed, tmp_path: Path) -> None:
    aira = installed
    base = json.loads(aira("model", "init", "--json").stdout)["rev"]
    plan = write_plan(tmp_path / "plan.json", base)
    out = aira("plan", "apply", str(plan), "--branch", "task/one", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(aira("model", "show", "main", "--json").stdout)["rev"] == base
    task_head = json.loads(aira("model", "show", "task/one", "--json").stdout)["rev"]
    assert task_head == json.loads(out.stdout)["observedRevision"]


def test_plan_apply_prints_a_readable_outcome_without_json(installed, tmp_path: Path) -> None:
    aira = installed
    base = json.loads(aira("model", "init", "--json").stdout)["rev"]
    out = aira("plan", "apply", str(write_plan(tmp_path / "big.json", base, radius=100)))
    assert out.returncode == 1
    assert "failed" in out.stdout and "failedStep: round" in out.stdout
    assert "FILLET_RADIUS_TOO_LARGE" in out.stdout
