"""`aira plan check|apply` end to end, on a FAKE kernel plugin (registered in process; once
installed as a real distribution and run in a new process)."""

from __future__ import annotations

import json
import os
import subprocess
import types
from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira
from factory import Signer, write_package
from fakeplugins import drop_module, install_fake_distribution
from runtime_factory import (
    BOX,
    PUBLISHER,
    VOLUME_OUT_OF_RANGE,
    VOLUME_RANGE,
    composite_steps,
    runtime_manifest,
)

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


# The same package with no kernel: the catalog knows the operations, nothing evaluates them.
PACKAGE_ONLY_PLUGIN = PLUGIN.split("@hookimpl\ndef aira_register_kernels")[0]


# The kernel crashes while validating: a kernel bug, which must not commit or trace back.
CRASHING_PLUGIN = PLUGIN.replace(
    "register(FakeGeometryKernel(",
    "register(type('Crashing', (FakeGeometryKernel,), {{'validate': _crash}})(",
).replace(
    "@hookimpl\ndef aira_register_kernels",
    "def _crash(*a):\n    raise RuntimeError('boom')\n\n@hookimpl\ndef aira_register_kernels",
)


# The kernel measures NaN: a kernel bug, which --json must report, not print as "NaN".
NAN_PLUGIN = PLUGIN.replace(
    "register(FakeGeometryKernel(",
    "register(type('NaNKernel', (FakeGeometryKernel,), {{'query': _nan}})(",
).replace(
    "@hookimpl\ndef aira_register_kernels",
    "def _nan(*a):\n    from aira_core.extensions import QueryResult\n"
    "    return QueryResult({{'volume': float('nan')}})\n\n"
    "@hookimpl\ndef aira_register_kernels",
)


@pytest.fixture
def nan_kernel(register_plugin, aira: RunAira, tmp_path: Path) -> RunAira:
    return _install(register_plugin, aira, tmp_path, "aira-fake-nan", NAN_PLUGIN)


@pytest.fixture
def installed(register_plugin, aira: RunAira, tmp_path: Path) -> RunAira:
    return _install(register_plugin, aira, tmp_path, "aira-fake-kernel", PLUGIN)


@pytest.fixture
def crashing(register_plugin, aira: RunAira, tmp_path: Path) -> RunAira:
    return _install(register_plugin, aira, tmp_path, "aira-fake-crashing", CRASHING_PLUGIN)


@pytest.fixture
def package_only(register_plugin, aira: RunAira, tmp_path: Path) -> RunAira:
    return _install(register_plugin, aira, tmp_path, "aira-fake-package", PACKAGE_ONLY_PLUGIN)


def _install(register_plugin, aira: RunAira, tmp_path: Path, dist: str, plugin: str) -> RunAira:  # type: ignore[no-untyped-def]
    """The plugin module registered in this process, as its distribution would be; returns
    ``aira``, with the package's publisher trusted."""
    signer = Signer(PUBLISHER)
    package = write_package(tmp_path / "package", runtime_manifest(), signer)
    module = types.ModuleType(f"{dist.replace('-', '_')}_plugin")
    exec(plugin.format(package=str(package)), module.__dict__)
    register_plugin(module, "fake-kernel", distribution=dist, version="0.0.1")
    assert aira("trust", "add", PUBLISHER, signer.public_b64).returncode == 0
    return aira


@pytest.fixture
def installed_process(aira_process: RunAira, tmp_path: Path):  # type: ignore[no-untyped-def]
    """The plugin as a real installed distribution, loaded from its entry point by a new
    ``aira`` process (AIRA_PLUGINS=fake-kernel); yields that process's runner."""
    dist = "aira-fake-kernel"
    signer = Signer(PUBLISHER)
    package = write_package(tmp_path / "package", runtime_manifest(), signer)
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(
        site, dist, "0.0.1", "fake-kernel", PLUGIN.format(package=str(package))
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(TESTS)]), "AIRA_PLUGINS": "fake-kernel"}

    def aira(*args: str) -> subprocess.CompletedProcess[str]:
        return aira_process(*args, timeout=120, **env)

    assert aira("trust", "add", PUBLISHER, signer.public_b64).returncode == 0
    yield aira
    drop_module(dist)


def write_plan(path: Path, base: str, **kw) -> Path:  # type: ignore[no-untyped-def]
    steps = [s.to_wire() for s in composite_steps(**kw)]
    path.write_text(json.dumps({"baseRevision": base, "steps": steps}))
    return path


def test_plan_check_and_apply_on_the_installed_kernel(installed_process, tmp_path: Path) -> None:
    """End to end through a real process and an installed plugin; the other tests register
    the same plugin in process."""
    aira = installed_process
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


# -- aira model init --from / model patch against the catalog and the kernel -----------------


def plate_ops(volume_max: float = 20_000.0) -> list[dict[str, Any]]:
    """A 40 × 30 × 10 mm plate (12,000 mm³) whose length is parameter ``pl``, with a
    volume-range assertion on it."""
    return [
        {
            "op": "parameter.add",
            "parameter": {"id": "pl", "label": "length", "type": "Length", "value": 40},
        },
        {
            "op": "node.add",
            "node": {
                "id": "nbox",
                "op": BOX,
                "inputs": {
                    "length": {"param": "pl"},
                    "width": {"value": 30},
                    "height": {"value": 10},
                },
            },
        },
        {"op": "body.add", "body": {"id": "bplate", "label": "plate", "tip": "nbox"}},
        {
            "op": "assertion.add",
            "assertion": {
                "id": "avol",
                "validatorRef": VOLUME_RANGE,
                "target": "bplate",
                "args": {"min": {"value": 1000}, "max": {"value": volume_max}},
            },
        },
    ]


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def head(aira: Any) -> tuple[str, int]:
    summary = json.loads(aira("model", "show", "--json").stdout)
    records = json.loads(aira("model", "log", "--json").stdout)["records"]
    return summary["rev"], len(records)


def test_model_patch_rechecks_assertions_on_every_commit(installed, tmp_path: Path) -> None:
    aira = installed
    aira("model", "init", "--json")
    plate = write_json(tmp_path / "plate.json", {"ops": plate_ops()})
    out = aira("model", "patch", str(plate), "--json")
    assert out.returncode == 0, out.stderr
    before = head(aira)

    # A later commit that breaks the assertion (40 -> 100 mm: 30,000 mm³) is refused.
    longer = write_json(
        tmp_path / "longer.json",
        {"ops": [{"op": "parameter.setValue", "id": "pl", "value": 100}]},
    )
    out = aira("model", "patch", str(longer), "--json")
    assert out.returncode == 1
    assert VOLUME_OUT_OF_RANGE in out.stderr and "avol" in out.stderr
    assert "Traceback" not in out.stderr
    assert head(aira) == before
    # One that keeps it passing commits.
    shorter = write_json(
        tmp_path / "shorter.json",
        {"ops": [{"op": "parameter.setValue", "id": "pl", "value": 50}]},
    )
    out = aira("model", "patch", str(shorter), "--kernel", "fake-analytic", "--json")
    assert out.returncode == 0, out.stderr
    assert head(aira)[1] == before[1] + 1

    # An assertion that fails as it is added is refused too; so is an unknown kernel.
    tight = plate_ops(volume_max=100.0)[3]
    tight["assertion"]["id"] = "atight"
    out = aira("model", "patch", str(write_json(tmp_path / "tight.json", {"ops": [tight]})))
    assert out.returncode == 1 and VOLUME_OUT_OF_RANGE in out.stderr
    out = aira("model", "patch", str(shorter), "--kernel", "nope")
    assert out.returncode == 1 and "KERNEL_UNAVAILABLE" in out.stderr
    assert "Traceback" not in out.stderr


def test_model_patch_with_assertions_needs_a_kernel(package_only, tmp_path: Path) -> None:
    aira = package_only
    aira("model", "init", "--json")
    before = head(aira)
    plate = write_json(tmp_path / "plate.json", {"ops": plate_ops()})
    out = aira("model", "patch", str(plate))
    assert out.returncode == 1
    assert "KERNEL_UNAVAILABLE" in out.stderr and "no kernel is installed" in out.stderr
    assert "Traceback" not in out.stderr
    assert head(aira) == before
    # Without assertions no kernel is needed.
    out = aira("model", "patch", str(write_json(tmp_path / "p.json", {"ops": plate_ops()[:3]})))
    assert out.returncode == 0, out.stderr
    help_text = aira("model", "patch", "--help").stdout
    assert "KERNEL_UNAVAILABLE" in help_text


def test_model_init_from_a_document_checks_the_catalog(installed, tmp_path: Path) -> None:
    aira = installed
    store = tmp_path / "s" / "store.sqlite3"
    document = {"nodes": [{"id": "n1", "op": "exact.draft@1.0.0", "inputs": {}}]}
    out = aira(
        "model",
        "init",
        "--from",
        str(write_json(tmp_path / "bad.json", document)),
        "--store",
        str(store),
    )
    assert out.returncode == 1 and "AMIR_OPERATION_UNKNOWN" in out.stderr
    assert not store.exists()
    box = plate_ops()[1]["node"]
    wrong = {"nodes": [{**box, "inputs": {**box["inputs"], "length": {"value": 1, "unit": "deg"}}}]}
    out = aira(
        "model",
        "init",
        "--from",
        str(write_json(tmp_path / "w.json", wrong)),
        "--store",
        str(store),
    )
    assert out.returncode == 1 and "UNIT_MISMATCH" in out.stderr
    assert not store.exists()
    good = {"parameters": [plate_ops()[0]["parameter"]], "nodes": [plate_ops()[1]["node"]]}
    out = aira(
        "model",
        "init",
        "--from",
        str(write_json(tmp_path / "g.json", good)),
        "--store",
        str(store),
        "--json",
    )
    assert out.returncode == 0, out.stderr
    assert store.is_file()


def test_model_patch_refuses_when_the_kernel_crashes(crashing, tmp_path: Path) -> None:
    aira = crashing
    aira("model", "init", "--json")
    before = head(aira)
    out = aira("model", "patch", str(write_json(tmp_path / "plate.json", {"ops": plate_ops()})))
    assert out.returncode == 1, out.stdout
    assert "KERNEL_FAILED" in out.stderr and "boom" in out.stderr
    assert "Traceback" not in out.stderr
    assert head(aira) == before


def plate_document(volume_max: float = 20_000.0) -> dict[str, Any]:
    """:func:`plate_ops` as a whole AMIR document."""
    ops = plate_ops(volume_max)
    return {
        "parameters": [ops[0]["parameter"]],
        "nodes": [ops[1]["node"]],
        "bodies": [ops[2]["body"]],
        "assertions": [ops[3]["assertion"]],
    }


def test_model_init_from_a_document_checks_its_assertions(installed, tmp_path: Path) -> None:
    """As every commit does: a document whose assertions fail is not stored (every later
    patch would be refused for them)."""
    aira = installed
    store = tmp_path / "s" / "store.sqlite3"
    failing = write_json(tmp_path / "failing.json", plate_document(volume_max=100.0))
    out = aira("model", "init", "--from", str(failing), "--store", str(store))
    assert out.returncode == 1, out.stdout
    assert f"error: {VOLUME_OUT_OF_RANGE}" in out.stderr and "avol" in out.stderr
    assert "Traceback" not in out.stderr
    assert not store.exists() and not store.parent.exists()
    out = aira("model", "init", "--from", str(failing), "--store", str(store), "--kernel", "no")
    assert out.returncode == 1 and "KERNEL_UNAVAILABLE" in out.stderr
    passing = write_json(tmp_path / "passing.json", plate_document())
    out = aira("model", "init", "--from", str(passing), "--store", str(store), "--json")
    assert out.returncode == 0, out.stderr
    # The stored document takes patches that keep its assertion passing.
    shorter = {"ops": [{"op": "parameter.setValue", "id": "pl", "value": 50}]}
    out = aira(
        "model", "patch", str(write_json(tmp_path / "p.json", shorter)), "--store", str(store)
    )
    assert out.returncode == 0, out.stderr


def test_model_init_with_assertions_needs_a_kernel(package_only, tmp_path: Path) -> None:
    aira = package_only
    store = tmp_path / "store.sqlite3"
    document = write_json(tmp_path / "doc.json", plate_document())
    out = aira("model", "init", "--from", str(document), "--store", str(store))
    assert out.returncode == 1
    assert "KERNEL_UNAVAILABLE" in out.stderr and "no kernel is installed" in out.stderr
    assert not store.exists()


def test_plan_files_are_named_in_parse_errors(installed, tmp_path: Path) -> None:
    aira = installed
    aira("model", "init")
    empty = write_json(tmp_path / "empty.json", {})
    empty.write_bytes(b"")
    for args in (["plan", "check", str(empty)], ["plan", "apply", str(empty)]):
        out = aira(*args)
        assert out.returncode == 1
        assert "INPUT_NOT_JSON: plan 'empty.json' is not JSON" in out.stderr, out.stderr
        assert "manifest.json" not in out.stderr


def test_a_query_result_json_cannot_hold_is_an_error(nan_kernel, tmp_path: Path) -> None:
    # The one read path checks a kernel's answer before anyone prints it: data JSON cannot
    # hold is the kernel's failure (as in the step host's inspect), not an output error.
    aira = nan_kernel
    document = write_json(tmp_path / "doc.json", plate_document())
    assert aira("model", "init", "--from", str(document)).returncode == 0
    for extra in ([], ["--json"]):
        out = aira("query", "massProperties", "--args", '{"target": "b:plate"}', *extra)
        assert out.returncode == 1, out.stdout
        assert out.stderr.startswith("error: KERNEL_FAILED: "), out.stderr
        assert "not JSON" in out.stderr
        if extra:

            def no_constants(name: str) -> None:
                raise AssertionError(f"{name} in the output")

            parsed = json.loads(out.stdout, parse_constant=no_constants)
            assert parsed["error"]["code"] == "KERNEL_FAILED"
        else:
            assert out.stdout == ""
