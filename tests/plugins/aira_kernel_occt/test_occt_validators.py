"""A third-party DFM validator (tests/dfm_validator.py: "minimum hole-to-edge distance") on
the real kernel, through ``aira plan apply``: it is no kernel and judges the plate only
through the read-only view's queries (query.boundingBox, query.selectEntities' circular
edges with their centres and radii). A good plate passes with the distance it measured; a
hole too close to the edge fails the plan with the vendor's own code and commits nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

import dfm_validator as dfm
from factory import Signer, write_package

PLATE = {"length": 60, "width": 40, "height": 6}
DIAMETER = 6.0


@pytest.fixture
def store(aira: Any, aira_home: Path, register_plugin: Any, tmp_path: Path) -> Any:
    import aira_kernel_occt.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")
    signer = Signer(dfm.PUBLISHER)
    package = write_package(tmp_path / "acme-dfm", dfm.manifest(), signer)
    register_plugin(dfm.plugin_module(dfm.HoleEdgeDistance(), package), "acme-dfm")
    assert aira("trust", "add", signer.publisher, signer.public_b64).returncode == 0
    assert aira("model", "init").returncode == 0
    return aira


def _head(aira: Any) -> str:
    return json.loads(aira("model", "log", "--json").stdout)["records"][0]["rev"]


def _apply(aira: Any, tmp_path: Path, points: list[list[float]], minimum: float) -> Any:
    steps = [
        {"id": "plate", "capability": "cap:exact.box@1", "label": "plate", "args": PLATE},
        {
            "id": "holes",
            "capability": "cap:exact.hole@1",
            "args": {
                "target": "b:plate",
                "face": {"body": "b:plate", "select": ">Z", "entity": "Face"},
                "points": points,
                "diameter": DIAMETER,
            },
        },
        {
            "id": "dfm",
            "capability": dfm.CAP,
            "args": {"target": "b:plate", "minDistance": {"value": minimum / 10, "unit": "cm"}},
        },
    ]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"baseRevision": _head(aira), "steps": steps}))
    return aira("plan", "apply", str(plan), "--json")


def _edge_distance(x: float, y: float) -> float:
    """The closed form: the plate is centred on the origin."""
    half_l, half_w, r = PLATE["length"] / 2, PLATE["width"] / 2, DIAMETER / 2
    return min(half_l - abs(x) - r, half_w - abs(y) - r)


def test_a_good_plate_passes_the_vendor_check(store: Any, tmp_path: Path) -> None:
    points = [[-20, -10], [20, 10], [0, 0]]
    out = _apply(store, tmp_path, points, 3)
    assert out.returncode == 0, out.stdout + out.stderr
    envelope = json.loads(out.stdout)
    assert envelope["status"] == "success"
    assert list(envelope["data"]["assertions"].values()) == [True]
    summary = json.loads(store("model", "show", "--json").stdout)
    assert "b:plate" in summary["aliases"]


def test_a_hole_too_close_to_the_edge_fails_with_the_vendors_code(
    store: Any, tmp_path: Path
) -> None:
    head = _head(store)
    points = [[-20, -10], [26, 0]]
    out = _apply(store, tmp_path, points, 3)
    assert out.returncode == 1, out.stdout + out.stderr
    envelope = json.loads(out.stdout)
    (diagnostic,) = envelope["diagnostics"]
    assert diagnostic["code"] == dfm.TOO_CLOSE
    assert diagnostic["subject"] == "dfm"  # the plan step that failed
    closest = min(_edge_distance(x, y) for x, y in points)
    assert f"{closest:.3g} mm" in diagnostic["message"]
    assert _head(store) == head  # nothing committed


def test_the_check_measures_the_closed_form_distance(store: Any, tmp_path: Path) -> None:
    """The margin the validator computes from the kernel's queries is the plate's: it passes
    just below the closed-form distance and fails just above it."""
    closest = _edge_distance(22, 5)  # 30 - 22 - 3 = 5
    out = _apply(store, tmp_path, [[22, 5]], closest + 0.01)  # fails: nothing committed
    assert out.returncode == 1
    assert [d["code"] for d in json.loads(out.stdout)["diagnostics"]] == [dfm.TOO_CLOSE]
    assert _apply(store, tmp_path, [[22, 5]], closest - 0.01).returncode == 0
