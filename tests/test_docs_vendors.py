"""docs/vendors.md works as written: its ``sh`` blocks, in order, run in one ``bash -e`` in
an empty directory, on the real OCCT kernel, with a throwaway ``AIRA_HOME``.

One substitution, so that this environment's site-packages stay as they were: ``pip`` is a
shim on ``PATH`` that installs the named directory into a target directory of its own
(``--target``, build isolation, no dependencies: aira-core is already here), which is on
``PYTHONPATH`` for everything the walk-through runs. The commands themselves are the
document's text; the checks after them read the files the walk-through wrote."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cadquery")

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "vendors.md"

PIP_SHIM = """#!{python}
# The walk-through's `pip install [-e] DIR`, into $DOC_SITE instead of this environment.
import os, subprocess, sys
args = [a for a in sys.argv[1:] if a != "-e"]
if args[:1] != ["install"]:
    sys.exit("the walk-through's pip shim only installs")
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--upgrade", "--target", os.environ["DOC_SITE"], *args[1:]]))
"""


def _blocks() -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", DOC.read_text(encoding="utf-8"), re.S | re.M)


def test_the_document_has_the_walk_through_in_order() -> None:
    text = "\n".join(_blocks())
    order = [
        "aira catalog new",
        "pytest",
        "aira catalog lint",
        "aira catalog keygen",
        "aira catalog sign",
        "aira trust add",
        "aira catalog list",
        "aira catalog search",
        "aira catalog describe",
        "aira plan check",
        "aira plan apply",
        "aira plan repair",
    ]
    where = [text.find(step) for step in order]
    assert -1 not in where and where == sorted(where), dict(zip(order, where, strict=True))


def test_the_vendor_walk_through_runs_as_written(tmp_path: Path) -> None:
    work, site, home, shims = (tmp_path / n for n in ("work", "site", "home", "bin"))
    for d in (work, site, shims):
        d.mkdir()
    pip = shims / "pip"
    pip.write_text(PIP_SHIM.format(python=sys.executable))
    pip.chmod(pip.stat().st_mode | stat.S_IXUSR)
    venv_bin = Path(sys.executable).parent  # aira, pytest and python of this environment
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(shims), str(venv_bin), os.environ.get("PATH", "")]),
        "PYTHONPATH": str(site),
        "DOC_SITE": str(site),
        "AIRA_HOME": str(home),
        "COLUMNS": "200",
    }
    env.pop("AIRA_PLUGINS", None)  # every installed plugin, as for a user
    script = "\n".join(_blocks())
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "Traceback" not in run.stdout + run.stderr

    out = run.stdout
    package = work / "aira-pack-acme-brackets"
    assert "acme.brackets" in out and "0.1.0" in out  # catalog list: admitted
    # search ranked the vendor's workflow first, and describe showed it
    assert "cap:acmeBrackets.mountingPlate@1" in out
    # plan check showed what the workflow step expanded to
    assert "workflow step mount expanded to:" in out
    assert "mount.plate  cap:exact.box@1" in out and "mount.holes  cap:exact.hole@1" in out
    refused = json.loads((package / "refused.json").read_text())
    assert refused["status"] != "success"
    (fillet,) = [d for d in refused["diagnostics"] if d["code"] == "FILLET_RADIUS_TOO_LARGE"]
    # the vendor's repair is offered beside the OCCT package's own (every admitted repair
    # of the code, sorted); the walk-through asks for the vendor's
    assert fillet["repairs"] == [
        "cap:acmeBrackets.smallerFillet@1",
        "cap:exact.reduceFilletRadius@1",
    ]
    assert fillet["actual"]["radius"] == 30 and 20 < fillet["expected"]["maxRadius"] < 25.001
    candidate = json.loads((package / "candidate.json").read_text())
    (corners,) = [s for s in candidate["steps"] if s["id"] == "corners"]
    assert corners["args"]["radius"] == round(fillet["expected"]["maxRadius"] * 0.9, 2)
    shown = subprocess.run(
        ["aira", "model", "log", "--store", str(package / "brackets.sqlite3"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.returncode == 0, shown.stderr
    assert [r["kind"] for r in json.loads(shown.stdout)["records"]] == ["commit", "init"]
