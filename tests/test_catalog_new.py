"""``aira catalog new NAME``: the package it writes lints clean against the kernel its workflow
builds on, its own tests pass, it is admitted once signed, trusted and installed (and found
by search), and a bad name or an occupied directory is refused with its code and nothing
written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aira_core.catalog import scaffold
from aira_core.contracts.capability import CapabilityKind

NAME = "acme.brackets"
MODULE = "aira_pack_acme_brackets"
PACKAGE_DIR = f"{MODULE}/package"
WORKFLOW = "cap:acmeBrackets.mountingPlate@1"
CAPABILITIES = [WORKFLOW, "cap:acmeBrackets.smallerFillet@1", "cap:acmeBrackets.maxMass@1"]
FILES = {
    ".gitignore",
    "README.md",
    "pyproject.toml",
    f"{MODULE}/__init__.py",
    f"{MODULE}/plugin.py",
    f"{MODULE}/validator.py",
    f"{MODULE}/package/manifest.json",
    "tests/test_package.py",
}
KINDS_IN_IT = {CapabilityKind.WORKFLOW, CapabilityKind.REPAIR, CapabilityKind.VALIDATOR}


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """An empty directory to write in (``tmp_path`` also holds the test's AIRA_HOME)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


def _everything(root: Path) -> set[str]:
    """Every entry under ``root``, hidden ones (a temporary directory left behind) too."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.fixture
def made(aira: Any, tmp_path: Path) -> Path:
    target = tmp_path / "pack"
    out = aira("catalog", "new", NAME, "--dir", target)
    assert out.returncode == 0, out.stderr
    return target


def test_the_package_has_one_capability_of_each_kind_a_package_can_bring(
    aira: Any, tmp_path: Path
) -> None:
    out = aira("catalog", "new", NAME, "--dir", tmp_path / "pack", "--json")
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["package"] == NAME and answer["publisher"] == "acme"
    assert answer["distribution"] == "aira-pack-acme-brackets"
    assert answer["capabilities"] == CAPABILITIES and answer["signed"] is False
    assert f"aira catalog sign {PACKAGE_DIR} --key acme.pem" in answer["nextSteps"]
    root = tmp_path / "pack"
    assert _tree(root) == FILES
    manifest = json.loads((root / PACKAGE_DIR / "manifest.json").read_text())
    assert manifest["name"] == NAME and manifest["publisher"] == "acme"
    kinds = [d["kind"] for d in manifest["descriptors"]]
    assert sorted(kinds) == sorted(k.value for k in KINDS_IN_IT)
    assert not (root / PACKAGE_DIR / "manifest.sig").exists()  # a publisher signs it
    # every kind left out is explained, in the README and in the command's help
    readme = (root / "README.md").read_text()
    help_text = " ".join(aira("catalog", "new", "--help").stdout.split())
    for kind in set(CapabilityKind) - KINDS_IN_IT:
        assert f"`{kind.value}`" in readme and kind.value in help_text


def test_the_package_lints_clean_against_the_kernel_it_builds_on(
    aira: Any, made: Path, register_plugin: Any
) -> None:
    occt = pytest.importorskip("aira_kernel_occt.plugin")
    register_plugin(occt, "occt")
    out = aira("catalog", "lint", made / PACKAGE_DIR, "--json")
    assert out.returncode == 0, out.stdout
    assert json.loads(out.stdout) == {
        "format": "aira.lint/1",
        "package": NAME,
        "ok": True,
        "findings": [],
    }
    assert "lint clean (3 capabilities)" in aira("catalog", "lint", made / PACKAGE_DIR).stdout


def test_its_own_tests_pass_and_its_code_is_lint_clean(made: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=made,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "9 passed" in run.stdout
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if ruff is None:
        pytest.skip("ruff is not installed (the test extra has it)")
    rules = ["--isolated", "--line-length", "100"]
    checked = subprocess.run(
        [ruff, "check", *rules, "--select", "E,F,W,I,B,UP,SIM,RUF", "."],
        cwd=made,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout
    formatted = subprocess.run(
        [ruff, "format", *rules, "--check", "."], cwd=made, capture_output=True, text=True
    )
    assert formatted.returncode == 0, formatted.stdout


def test_names_are_carried_into_every_identifier() -> None:
    names = scaffold.scaffold_names("acme-3d.parts", "acme-tools")
    assert (names.distribution, names.module, names.plugin) == (
        "aira-pack-acme-3d-parts",
        "aira_pack_acme_3d_parts",
        "acme-3d-parts",
    )
    assert (names.namespace, names.code, names.publisher) == (
        "acme3dParts",
        "ACME_3D_PARTS",
        "acme-tools",
    )
    files = scaffold.scaffold_files(names)
    assert not [path for path, data in files.items() if re.search(rb"\{\{\w+\}\}", data)]
    manifest = json.loads(files["aira_pack_acme_3d_parts/package/manifest.json"])
    assert [d["capabilityId"] for d in manifest["descriptors"]] == names.capability_ids()


@pytest.mark.parametrize(
    "name", ["Acme", "acme_tools", "acme.", "1acme", "acme..x", "acme\n", "a" * 65, ""]
)
def test_a_bad_name_is_refused_and_nothing_is_written(aira: Any, work: Path, name: str) -> None:
    out = aira("catalog", "new", name, "--dir", work / "pack", "--json")
    assert out.returncode == 1
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "CATALOG_NEW_NAME_INVALID"
    assert "is not a package name" in error["message"]
    assert _everything(work) == set()


def test_a_bad_publisher_is_refused_as_trust_would(aira: Any, work: Path) -> None:
    out = aira("catalog", "new", NAME, "--dir", work / "pack", "--publisher", "Acme Inc")
    assert out.returncode == 1
    assert "TRUST_PUBLISHER_INVALID" in out.stderr
    assert _everything(work) == set()


def test_the_default_directory_is_the_distribution_name(
    aira: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = aira("catalog", "new", NAME, "--publisher", "acme-tools")
    assert out.returncode == 0, out.stderr
    assert _tree(tmp_path / "aira-pack-acme-brackets") == FILES
    assert "aira trust add acme-tools acme-tools.pub" in out.stdout


@pytest.mark.parametrize("occupant", ["file in a directory", "file", "symlink"])
def test_an_occupied_target_is_refused_and_left_as_it_was(
    aira: Any, work: Path, occupant: str
) -> None:
    target = work / "pack"
    if occupant == "file in a directory":
        target.mkdir()
        (target / "notes.txt").write_text("mine")
    elif occupant == "file":
        target.write_text("mine")
    else:
        (work / "elsewhere").mkdir()
        target.symlink_to(work / "elsewhere")
    before = _everything(work)
    out = aira("catalog", "new", NAME, "--dir", target, "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "CATALOG_NEW_TARGET_EXISTS"
    assert _everything(work) == before
    if occupant != "symlink":
        assert (target / "notes.txt" if target.is_dir() else target).read_text() == "mine"


def test_an_empty_directory_is_filled(aira: Any, tmp_path: Path) -> None:
    (tmp_path / "pack").mkdir()
    assert aira("catalog", "new", NAME, "--dir", tmp_path / "pack").returncode == 0
    assert _tree(tmp_path / "pack") == FILES


def test_a_failed_write_leaves_nothing(
    aira: Any, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aira_core import files

    written: list[str] = []
    original = files._write_member

    def fail_on_third(directory: int, temp: str, relative: str, data: bytes) -> None:
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        written.append(relative)
        original(directory, temp, relative, data)

    monkeypatch.setattr(files, "_write_member", fail_on_third)
    out = aira("catalog", "new", NAME, "--dir", work / "pack", "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "OUTPUT_UNWRITABLE"
    assert len(written) == 2 and _everything(work) == set()


def test_a_directory_filled_meanwhile_is_kept_and_the_package_dropped(
    aira: Any, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aira_core import files

    target = work / "pack"
    original = files._write_member

    def someone_else_writes(directory: int, temp: str, relative: str, data: bytes) -> None:
        if not target.exists():  # after the check, before the rename
            target.mkdir()
            (target / "theirs.txt").write_text("theirs")
        original(directory, temp, relative, data)

    monkeypatch.setattr(files, "_write_member", someone_else_writes)
    out = aira("catalog", "new", NAME, "--dir", target, "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["error"]["code"] == "CATALOG_NEW_TARGET_EXISTS"
    assert _everything(work) == {"pack", "pack/theirs.txt"}


# -- signed, trusted, installed: admitted and found (slow: a pip install) --------------------


def test_signed_trusted_and_installed_it_is_admitted_and_found(tmp_path: Path) -> None:
    pytest.importorskip("cadquery")  # the workflow's steps are the OCCT kernel's
    pytest.importorskip("aira_kernel_occt")
    root, site, home = tmp_path / "pack", tmp_path / "site", tmp_path / "home"
    aira_exe = Path(sys.executable).with_name("aira")  # the console script a user runs

    def aira(*args: str | Path) -> subprocess.CompletedProcess[str]:
        path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "AIRA_HOME": str(home), "COLUMNS": "300"}
        env["AIRA_PLUGINS"] = "occt,acme-brackets"
        return subprocess.run(
            [str(aira_exe), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,
        )

    def ok(*args: str | Path) -> str:
        out = aira(*args)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    ok("catalog", "new", NAME, "--dir", root)
    made = ok("catalog", "keygen", tmp_path / "acme.pem")
    public = next(ln.split()[-1] for ln in made.splitlines() if ln.startswith("public key"))
    ok("catalog", "sign", root / PACKAGE_DIR, "--key", tmp_path / "acme.pem")
    ok("trust", "add", "acme", public)
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, root],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr
    assert (site / MODULE / "package" / "manifest.sig").is_file()  # the wheel carries it

    listed = json.loads(ok("catalog", "list", "--quarantine", "--json"))
    assert listed.get("quarantine", []) == []
    (pack,) = [p for p in listed["packages"] if p["name"] == NAME]
    assert pack["publisher"] == "acme" and pack["conformance"]["passed"]
    assert sorted(pack["capabilities"]) == sorted(CAPABILITIES)
    hits = json.loads(ok("catalog", "search", "a 60 by 40 mounting plate for M4 screws", "--json"))
    assert hits["hits"][0]["capabilityId"] == WORKFLOW
