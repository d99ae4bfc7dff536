"""Third-party validators (``aira_register_validators``) that are not kernels, through
``aira plan apply`` on the FAKE kernel: the vendor's package is admitted once conformance has
run the validator's check on its examples; a validator step runs on the registered validator
with a read-only view. Hostile validators: tests/hostile/test_hostile_validators.py; the real
DFM check on the real kernel: tests/plugins/aira_kernel_occt/test_occt_validators.py."""

from __future__ import annotations

import contextlib
import json
import time
import types
from pathlib import Path
from typing import Any

import dfm_validator as dfm
import pytest
from cli_runner import RunAira
from factory import Signer, write_package
from runtime_factory import (
    BOX_CAP,
    PUBLISHER,
    runtime_implementations,
    runtime_manifest,
)

from aira_core import hookimpl
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import CapabilityPackageSource, ValidationOutcome
from aira_core.testing import FakeGeometryKernel

MASS = "query.massProperties@1.0.0"


class VolumeAtLeast:
    """A well-behaved validator on the fake kernel: reads the view, never writes. It stands
    in for the DFM check (whose queries the fake kernel does not answer), under its ref."""

    name = "acme-volume"
    ref = dfm.REF
    diagnostics = frozenset({dfm.TOO_CLOSE, dfm.ARGS_INVALID})
    fingerprint = "acme-volume/1"  # a passed conformance report is reused, not rewritten

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def check(self, inputs: Any) -> list[Diagnostic]:
        return dfm.HoleEdgeDistance().check(inputs)

    def validate(self, view: Any, assertion: Any) -> ValidationOutcome:
        volume = view.query(MASS, {"target": assertion.target}).data["volume"]
        self.seen.append(dict(view.bodies))
        passed = volume >= assertion.args["minDistance"]
        diagnostics = [] if passed else [Diagnostic(code=dfm.TOO_CLOSE, message="too small")]
        return ValidationOutcome(assertion.id, passed, {"volume": volume}, diagnostics)


def _install(register_plugin: Any, aira: RunAira, tmp_path: Path, validator: Any) -> None:
    """The fake kernel's package and kernel, and the vendor's package and ``validator``,
    registered in process; both publishers trusted."""
    kernel_signer, vendor_signer = Signer(PUBLISHER), Signer(dfm.PUBLISHER)
    kernel_pkg = write_package(tmp_path / "kernel-pkg", runtime_manifest(), kernel_signer)
    vendor_pkg = write_package(tmp_path / "vendor-pkg", dfm.manifest(), vendor_signer)
    kernel_plugin = types.ModuleType("fake_kernel_plugin")

    @hookimpl
    def aira_register_capability_packages(register: Any) -> None:
        impls = runtime_implementations(runtime_manifest())
        register(CapabilityPackageSource.from_directory(kernel_pkg, impls))

    @hookimpl
    def aira_register_kernels(register: Any) -> None:
        register(FakeGeometryKernel(runtime_implementations(runtime_manifest())))

    kernel_plugin.aira_register_capability_packages = aira_register_capability_packages  # type: ignore[attr-defined]
    kernel_plugin.aira_register_kernels = aira_register_kernels  # type: ignore[attr-defined]
    register_plugin(kernel_plugin, "fake-kernel", distribution="aira-fake-kernel")
    register_plugin(dfm.plugin_module(validator, vendor_pkg), "acme-dfm", distribution="acme-dfm")
    for signer in (kernel_signer, vendor_signer):
        assert aira("trust", "add", signer.publisher, signer.public_b64).returncode == 0


def _head(aira: RunAira) -> str:
    return json.loads(aira("model", "log", "--json").stdout)["records"][0]["rev"]


def _apply(aira: RunAira, tmp_path: Path, minimum: float) -> Any:
    plan = tmp_path / "plan.json"
    steps = [
        {
            "id": "plate",
            "capability": BOX_CAP,
            "label": "plate",
            "args": {"length": 40, "width": 30, "height": 10},
        },
        {"id": "dfm", "capability": dfm.CAP, "args": {"target": "b:plate", "minDistance": minimum}},
    ]
    plan.write_text(json.dumps({"baseRevision": _head(aira), "steps": steps}))
    return aira("plan", "apply", str(plan), "--json")


def _codes(out: Any) -> list[str]:
    body = json.loads(out.stdout)
    return [d["code"] for d in body.get("diagnostics", [])]


@pytest.fixture
def store(aira: RunAira, aira_home: Path) -> RunAira:
    return aira


def test_the_vendor_package_is_admitted_after_conformance_ran_the_validator(
    register_plugin: Any, store: RunAira, tmp_path: Path
) -> None:
    _install(register_plugin, store, tmp_path, VolumeAtLeast())
    listed = json.loads(store("catalog", "list", "--json", "--quarantine").stdout)
    assert listed["quarantine"] == []
    (vendor,) = [p for p in listed["packages"] if p["name"] == dfm.PACKAGE]
    assert vendor["conformance"]["passed"] is True
    plugins = json.loads(store("plugins", "--json").stdout)
    text = json.dumps(plugins)
    assert "acme-dfm" in text and "aira_register_validators" in text


def test_conformance_quarantines_a_package_whose_example_the_validator_rejects(
    register_plugin: Any, store: RunAira, tmp_path: Path
) -> None:
    signer = Signer(dfm.PUBLISHER)
    bad = dfm.manifest(examples=[{"target": "b:plate", "minDistance": 500}])
    package = write_package(tmp_path / "vendor-pkg", bad, signer)
    register_plugin(dfm.plugin_module(dfm.HoleEdgeDistance(), package), "acme-dfm")
    assert store("trust", "add", signer.publisher, signer.public_b64).returncode == 0
    listed = json.loads(store("catalog", "list", "--json", "--quarantine").stdout)
    (quarantined,) = listed["quarantine"]
    assert "CONFORMANCE_EXAMPLE_REJECTED" in json.dumps(quarantined)
    assert dfm.ARGS_INVALID in json.dumps(quarantined)


def test_a_validator_step_runs_on_the_registered_validator(
    register_plugin: Any, store: RunAira, tmp_path: Path
) -> None:
    validator = VolumeAtLeast()
    _install(register_plugin, store, tmp_path, validator)
    assert store("model", "init").returncode == 0
    out = _apply(store, tmp_path, 1000)
    assert out.returncode == 0, out.stdout + out.stderr
    envelope = json.loads(out.stdout)
    assert envelope["status"] == "success"
    assert list(envelope["data"]["assertions"].values()) == [True]
    # it saw the evaluated body through the view
    assert [r.volume for r in validator.seen[0].values()] == [40 * 30 * 10]


def test_a_failing_validator_fails_the_plan_with_its_own_code(
    register_plugin: Any, store: RunAira, tmp_path: Path
) -> None:
    _install(register_plugin, store, tmp_path, VolumeAtLeast())
    assert store("model", "init").returncode == 0
    head = _head(store)
    out = _apply(store, tmp_path, 1e6)
    assert out.returncode == 1
    assert dfm.TOO_CLOSE in _codes(out) or dfm.TOO_CLOSE in out.stderr
    assert _head(store) == head


class Hostile(VolumeAtLeast):
    def __init__(self, behaviour: str) -> None:
        super().__init__()
        self.name = f"acme-{behaviour}"
        self.behaviour = behaviour

    def validate(self, view: Any, assertion: Any) -> Any:
        b = self.behaviour
        if b == "raises":
            raise RuntimeError("boom")
        if b == "exits":
            raise SystemExit(3)
        if b == "junk":
            return {"passed": True}
        if b == "other-assertion":
            return ValidationOutcome("a:someone-else", True)
        if b == "nan":
            return ValidationOutcome(assertion.id, True, {"x": float("nan")})
        if b == "undeclared":
            return ValidationOutcome(
                assertion.id, False, {}, [Diagnostic(code="NOPE", message="x")]
            )
        if b == "slow":
            time.sleep(5)
        if b == "writes":
            view.bodies = {}
        if b == "writes-quietly":
            with contextlib.suppress(AttributeError):
                view.document = None
        if b == "exports":
            view.query("export.step@1.0.0", {})
        if b == "mutates-data":
            view.query(MASS, {"target": assertion.target}).data["volume"] = -1
            view.bodies["x"] = None  # a read-only mapping: raises
        return ValidationOutcome(assertion.id, True)


def _plan_file(aira: RunAira, tmp_path: Path) -> Path:
    plan = tmp_path / "plan.json"
    steps = [
        {
            "id": "plate",
            "capability": BOX_CAP,
            "label": "plate",
            "args": {"length": 40, "width": 30, "height": 10},
        },
        {"id": "dfm", "capability": dfm.CAP, "args": {"target": "b:plate", "minDistance": 1}},
    ]
    plan.write_text(json.dumps({"baseRevision": _head(aira), "steps": steps}))
    return plan


def test_a_validator_plugin_without_validate_is_reported_not_fatal(
    register_plugin: Any, store: RunAira, tmp_path: Path
) -> None:
    class NoValidate:
        name = "acme-broken"
        ref = dfm.REF
        diagnostics = frozenset()

        def check(self, inputs: Any) -> list[Diagnostic]:
            return []

    package = write_package(tmp_path / "vendor-pkg", dfm.manifest(), Signer(dfm.PUBLISHER))
    registry = register_plugin(dfm.plugin_module(NoValidate(), package), "acme-broken")
    assert "acme-broken" not in registry.named("validators")
    assert [e.code for e in registry.errors] == ["PLUGIN_REGISTRATION_INVALID"]
    out = store("plugins", "--json")
    assert out.returncode == 0 and "PLUGIN_REGISTRATION_INVALID" in out.stdout


# -- the view, directly ----------------------------------------------------------------------


def test_the_view_reads_and_never_writes(tmp_path: Path) -> None:
    """A view answers query.* refs on the document and its bodies; it refuses everything
    else, gives away only copies, cannot be copied, and is closed once its call returned."""
    import copy

    from runtime_factory import make_runtime, plan

    from aira_core.runtime.write import WritePath
    from aira_core.validator_guard import View, ViewReadOnly

    ctx, kernel, repository = make_runtime(tmp_path)
    base = repository.head()
    write = WritePath(ctx, kernel, validators={})
    steps = [
        {
            "id": "plate",
            "capability": BOX_CAP,
            "label": "plate",
            "args": {"length": 40, "width": 30, "height": 10},
        }
    ]
    envelope = write.apply(plan(base, *steps), "r1")
    assert envelope.status == "success", envelope.diagnostics
    document = repository.document(repository.head())
    (body,) = document.bodies
    state: dict[str, Any] = {"own": []}
    view = View(kernel, document, state)
    answer = view.query(MASS, {"target": body.id})
    assert answer.data["volume"] == 40 * 30 * 10
    answer.data["volume"] = -1  # its own copy
    assert view.query(MASS, {"target": body.id}).data["volume"] == 40 * 30 * 10
    assert view.bodies[body.id].volume == 40 * 30 * 10
    with pytest.raises(TypeError):
        view.bodies[body.id] = None  # type: ignore[index]
    for attempt in (
        lambda: setattr(view, "bodies", {}),
        lambda: delattr(view, "query"),
        lambda: view.query("export.step@1.0.0", {}),
    ):
        with pytest.raises(ViewReadOnly):
            attempt()
    with pytest.raises(TypeError):
        copy.copy(view)
    assert not hasattr(view, "__dict__")
    state["closed"] = True
    with pytest.raises(ViewReadOnly):
        view.query(MASS, {"target": body.id})


class QueryCrashes(FakeGeometryKernel):
    def query(self, document: Any, ref: str, args: Any) -> Any:
        raise RuntimeError("kernel bug")


@pytest.mark.parametrize("catches", [False, True])
def test_a_kernel_failure_under_a_validator_is_the_kernels_code(
    tmp_path: Path, catches: bool
) -> None:
    """A view's query on a kernel that fails ends the validation with KERNEL_FAILED, even
    when the validator catches it and answers a pass."""
    from runtime_factory import make_runtime, plan

    from aira_core.kernel_guard import KernelFailure
    from aira_core.runtime.write import WritePath
    from aira_core.validator_guard import validate

    class Catching(VolumeAtLeast):
        def validate(self, view: Any, assertion: Any) -> ValidationOutcome:
            try:
                return super().validate(view, assertion)
            except KernelFailure:
                if not catches:
                    raise
                return ValidationOutcome(assertion.id, True)

    ctx, kernel, repository = make_runtime(tmp_path)
    write = WritePath(ctx, kernel, validators={})
    steps = [
        {
            "id": "plate",
            "capability": BOX_CAP,
            "label": "plate",
            "args": {"length": 40, "width": 30, "height": 10},
        }
    ]
    assert write.apply(plan(repository.head(), *steps), "r1").status == "success"
    document = repository.document(repository.head())
    from aira_core.contracts.amir import Assertion

    assertion = Assertion(
        id="a1",
        validator_ref=dfm.REF,
        target=document.bodies[0].id,
        args={"minDistance": {"value": 1}},
    )
    crashing = QueryCrashes(runtime_implementations(runtime_manifest()))
    with pytest.raises(KernelFailure) as raised:
        validate(Catching(), crashing, document, assertion)
    assert raised.value.diagnostic.code == "KERNEL_FAILED"
