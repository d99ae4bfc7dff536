"""Issue 13, item 10 (kernel cases): a kernel that raises (an Exception or a BaseException),
answers with the wrong type, omits a body's result or blocks, in ``export``, ``query`` and
``plan apply``. Each is refused with a stable code (``KERNEL_FAILED``, ``KERNEL_TIMEOUT``), no
traceback, no hang, and the store, the home and the output file unchanged.

The kernel is tests/hostile/plugins/hostile_kernel.py, told how to misbehave by
``AIRA_HOSTILE_KERNEL``; in process it is registered like an installed plugin, and one test
installs it as a real distribution to show that a new ``aira`` process does not hang."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cli_runner import RunAira
from ctrl_c import interrupted
from fakeplugins import drop_module, install_fake_distribution
from runtime_factory import step
from unchanged import assert_unchanged, snapshot

from aira_core.testing.package import BOX, BOX_CAP, VOLUME_RANGE

PLUGINS = Path(__file__).parent / "plugins"
TESTS = Path(__file__).parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"hostile_{name}", PLUGINS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOSTILE = _load("hostile_kernel")


def plate_document() -> dict[str, Any]:
    """A 40 × 30 × 10 mm plate (body ``bplate``, alias ``b:plate``) with a volume assertion."""
    return {
        "parameters": [{"id": "pl", "label": "length", "type": "Length", "value": 40}],
        "nodes": [
            {
                "id": "nbox",
                "op": BOX,
                "inputs": {
                    "length": {"param": "pl"},
                    "width": {"value": 30},
                    "height": {"value": 10},
                },
            }
        ],
        "bodies": [{"id": "bplate", "label": "plate", "tip": "nbox"}],
        "assertions": [
            {
                "id": "avol",
                "validatorRef": VOLUME_RANGE,
                "target": "bplate",
                "args": {"min": {"value": 1000}, "max": {"value": 20000}},
            }
        ],
    }


def post_plan(base: str) -> dict[str, Any]:
    """A plan creating a second body (a post, step ``post``) on ``base``."""
    post = step("post", BOX_CAP, label="post", length=5, width=5, height=20)
    return {"baseRevision": base, "steps": [post.to_wire()]}


@pytest.fixture
def hostile(
    register_plugin,
    aira: RunAira,
    signed_package,
    throwaway_trust,
    aira_home,
    tmp_path,
    monkeypatch,
) -> Iterator[RunAira]:
    """``aira`` in this process with the hostile kernel installed (well-behaved until a test
    sets AIRA_HOSTILE_KERNEL) and a store holding the plate."""
    monkeypatch.setenv("AIRA_HOSTILE_PACKAGE", str(signed_package()))
    monkeypatch.delenv("AIRA_HOSTILE_KERNEL", raising=False)
    register_plugin(HOSTILE, "hostile", distribution="aira-hostile-kernel", version="0.0.1")
    document = tmp_path / "plate.json"
    document.write_text(json.dumps(plate_document()))
    out = aira("model", "init", "--from", str(document), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    HOSTILE.RELEASE.clear()
    yield aira
    HOSTILE.RELEASE.set()  # a call left sleeping at its deadline ends now


def refused(out: subprocess.CompletedProcess[str], code: str) -> dict[str, Any]:
    """A --json failure: exit 1, the code on stderr and in the JSON, no traceback."""
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stdout + out.stderr
    assert "INTERNAL_ERROR" not in out.stdout + out.stderr
    body = json.loads(out.stdout)
    codes = [d["code"] for d in body.get("diagnostics", [])] or [body["error"]["code"]]
    assert code in codes, body
    return body


def kept(home: Path) -> tuple[Path, ...]:
    """What a refused kernel call must leave as it was: all of AIRA_HOME (the model store,
    the trust store, the catalog's state)."""
    return (home,)


MISBEHAVIOURS = ["raise", "base", "interrupt", "exit", "wrong"]


@pytest.mark.parametrize("what", MISBEHAVIOURS)
def test_export_by_a_hostile_kernel_is_kernel_failed(
    hostile, what, aira_home, tmp_path, monkeypatch
) -> None:
    out_file = tmp_path / "out.json"
    before = snapshot(*kept(aira_home), out_file)
    monkeypatch.setenv("AIRA_HOSTILE_KERNEL", f"export={what}")
    out = hostile("model", "export", "--format", "json", "--out", str(out_file), "--json")
    body = refused(out, "KERNEL_FAILED")
    assert "'hostile'" in body["error"]["message"]
    assert_unchanged(before, *kept(aira_home), out_file)


def test_a_kernel_whose_export_predates_tolerances_works_and_refuses_them(
    hostile, aira_home, tmp_path
) -> None:
    """The hostile kernel, well-behaved, has the older ``export(document, format, body)``:
    a plain export works; one with --tolerance is refused with a stable code before the kernel
    is called, and nothing is written."""
    out_file = tmp_path / "out.json"
    before = snapshot(*kept(aira_home), out_file)
    for option in (["--tolerance", "0.1"], ["--angular-tolerance", "10"]):
        out = hostile(
            "model", "export", "--format", "json", "--out", str(out_file), *option, "--json"
        )
        body = refused(out, "EXPORT_TOLERANCE_UNSUPPORTED")
        assert "'hostile' takes no mesh tolerances" in body["error"]["message"]
    assert_unchanged(before, *kept(aira_home), out_file)
    out = hostile("model", "export", "--format", "json", "--out", str(out_file), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out_file.read_text())["bplate"]["volume"] == pytest.approx(12000)
    assert json.loads(out.stdout)["tolerance"] is None


@pytest.mark.parametrize("what", MISBEHAVIOURS)
def test_query_by_a_hostile_kernel_is_kernel_failed(hostile, what, aira_home, monkeypatch) -> None:
    before = snapshot(*kept(aira_home))
    monkeypatch.setenv("AIRA_HOSTILE_KERNEL", f"query={what}")
    out = hostile("query", "massProperties", "--args", '{"target": "b:plate"}', "--json")
    refused(out, "KERNEL_FAILED")
    assert_unchanged(before, *kept(aira_home))


@pytest.mark.parametrize(
    "behaviour",
    [f"evaluate={w}" for w in [*MISBEHAVIOURS, "omit", "nan"]]
    + [f"validate={w}" for w in MISBEHAVIOURS],
)
def test_plan_apply_on_a_hostile_kernel_commits_nothing(
    hostile, behaviour, aira_home, tmp_path, monkeypatch
) -> None:
    base = json.loads(hostile("model", "show", "--json").stdout)["rev"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(post_plan(base)))
    before = snapshot(*kept(aira_home))
    monkeypatch.setenv("AIRA_HOSTILE_KERNEL", behaviour)
    out = hostile("plan", "apply", str(plan), "--json")
    envelope = refused(out, "KERNEL_FAILED")
    assert envelope["status"] == "failed"
    assert envelope["data"]["stage"] == behaviour.split("=")[0].replace("evaluate", "preview")
    if behaviour == "evaluate=omit":
        # the body the plan creates has no result: a failure of the step that creates it
        assert envelope["data"]["failedStep"] == "post"
        assert "no result for body" in envelope["diagnostics"][0]["message"]
    assert_unchanged(before, *kept(aira_home))
    monkeypatch.delenv("AIRA_HOSTILE_KERNEL")
    assert json.loads(hostile("model", "show", "--json").stdout)["rev"] == base


def test_a_kernel_that_blocks_misses_its_deadline(hostile, aira_home, tmp_path, monkeypatch):
    out_file = tmp_path / "out.json"
    before = snapshot(*kept(aira_home), out_file)
    monkeypatch.setenv("AIRA_HOSTILE_KERNEL", "export=sleep")
    monkeypatch.setenv("AIRA_HOSTILE_SLEEP", "30")  # a regression fails below, not hangs
    started = time.monotonic()
    out = hostile(
        "model",
        "export",
        "--format",
        "json",
        "--out",
        str(out_file),
        "--json",
        AIRA_KERNEL_TIMEOUT="0.5",
    )
    assert time.monotonic() - started < 20
    body = refused(out, "KERNEL_TIMEOUT")
    assert "did not answer export within 0.5 s" in body["error"]["message"]
    # the call is still running: the kernel is not called again (no second hang)
    started = time.monotonic()
    again = hostile("query", "massProperties", "--args", '{"target": "b:plate"}', "--json")
    assert time.monotonic() - started < 20
    assert (
        "still running a call that missed its deadline"
        in refused(again, "KERNEL_TIMEOUT")["error"]["message"]
    )
    assert_unchanged(before, *kept(aira_home), out_file)


def test_a_plan_apply_that_blocks_commits_nothing(hostile, aira_home, tmp_path, monkeypatch):
    base = json.loads(hostile("model", "show", "--json").stdout)["rev"]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(post_plan(base)))
    before = snapshot(*kept(aira_home))
    monkeypatch.setenv("AIRA_HOSTILE_KERNEL", "validate=sleep")
    monkeypatch.setenv("AIRA_HOSTILE_SLEEP", "30")
    started = time.monotonic()
    out = hostile("plan", "apply", str(plan), "--json", AIRA_KERNEL_TIMEOUT="0.5")
    assert time.monotonic() - started < 20
    assert refused(out, "KERNEL_TIMEOUT")["data"]["stage"] == "validate"
    assert_unchanged(before, *kept(aira_home))


@pytest.fixture
def installed_hostile(
    aira_process: RunAira, signed_package, throwaway_signer, tmp_path
) -> Iterator[dict[str, str]]:
    """The hostile kernel installed as a distribution, its publisher trusted and the plate
    in the default store: the environment a new ``aira`` process needs to load it."""
    site = tmp_path / "site"
    site.mkdir()
    source = (PLUGINS / "hostile_kernel.py").read_text()
    install_fake_distribution(site, "aira-hostile-kernel", "0.0.1", "hostile", source)
    env = {
        "PYTHONPATH": os.pathsep.join([str(site), str(TESTS)]),
        "AIRA_PLUGINS": "hostile",
        "AIRA_HOSTILE_PACKAGE": str(signed_package()),
    }
    key = throwaway_signer.public_b64
    added = aira_process("trust", "add", throwaway_signer.publisher, key, **env)
    assert added.returncode == 0, added.stderr
    document = tmp_path / "plate.json"
    document.write_text(json.dumps(plate_document()))
    assert aira_process("model", "init", "--from", str(document), **env).returncode == 0
    yield env
    drop_module("aira-hostile-kernel")


def test_a_blocking_installed_kernel_does_not_hang_the_process(
    aira_process: RunAira, installed_hostile, aira_home, tmp_path
) -> None:
    """A new ``aira`` process with the kernel installed as a distribution: the export that
    blocks is KERNEL_TIMEOUT, and the process exits although the call never returns."""
    out_file = tmp_path / "out.json"
    before = snapshot(*kept(aira_home), out_file)
    started = time.monotonic()
    out = aira_process(
        "model", "export", "--format", "json", "--out", str(out_file), "--json",
        timeout=60, AIRA_HOSTILE_KERNEL="export=sleep", AIRA_KERNEL_TIMEOUT="1",
        **installed_hostile,
    )  # fmt: skip
    assert time.monotonic() - started < 60
    refused(out, "KERNEL_TIMEOUT")
    assert_unchanged(before, *kept(aira_home), out_file)


def test_a_real_ctrl_c_during_a_kernel_call_stops_the_command(
    installed_hostile, aira_home, tmp_path
) -> None:
    """The deadline is the host's; the user's Ctrl-C still ends the command at once (130),
    with a code and no traceback."""
    out_file = tmp_path / "out.json"
    before = snapshot(*kept(aira_home), out_file)
    out = interrupted(
        "model", "export", "--format", "json", "--out", str(out_file),
        mark=tmp_path / "started", AIRA_HOSTILE_KERNEL="export=sleep",
        AIRA_KERNEL_TIMEOUT="120", **installed_hostile,
    )  # fmt: skip
    assert out.returncode == 130, (out.returncode, out.stdout, out.stderr)
    assert "error: ABORTED: interrupted" in out.stderr
    assert "Traceback" not in out.stderr
    assert_unchanged(before, *kept(aira_home), out_file)
