"""A third-party workflow on the real kernel: a vendor package (signed with a throwaway key,
trusted in this test's AIRA_HOME) whose definition makes a plate and drills four clearance
holes for a metric screw size, their diameter from an ISO 273 table and their centres
computed from the plate's size. ``aira plan apply`` expands it and builds it on OCCT."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

from aira_core import hookimpl
from aira_core.extensions import CapabilityPackageSource

CAP = "cap:vendor.mountingPlate@1"
REF = "vendor.mountingPlate@1.0.0"
CLEARANCE = {"M3": 3.4, "M4": 4.5, "M5": 5.5, "M6": 6.6}  # ISO 273, medium series (mm)


def vendor_manifest() -> dict[str, Any]:
    length = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
    return {
        "format": "aira.capability-package/1",
        "name": "test.vendor.mounting",
        "version": "1.0.0",
        "publisher": "test-vendor",
        "descriptors": [
            {
                "capabilityId": CAP,
                "kind": "workflow",
                "workflowRef": REF,
                "profileVersion": "1.0.0",
                "title": "Mounting plate",
                "summary": "A plate with four corner clearance holes for a metric screw size.",
                "taxonomy": {"primary": "authoring.exact.feature"},
                "intentExamples": ["a 60 by 40 mounting plate for M4 screws"],
                "inputExamples": [
                    {"input": {"length": 60, "width": 40, "thickness": 5, "size": "M4"}}
                ],
                "inputs": {
                    "schemaRef": "amir://workflows/vendor.mountingPlate/1.0.0/input",
                    "semanticTypes": ["Length"],
                },
                "defaults": {"inset": 6},
                "effects": ["createsFeature", "additive", "changesTopology"],
                "risk": {"level": "low"},
                "execution": {"quality": ["authoritative"], "costClass": "interactive"},
            }
        ],
        "schemas": {
            "amir://workflows/vendor.mountingPlate/1.0.0/input": {
                "type": "object",
                "properties": {
                    "length": length,
                    "width": length,
                    "thickness": length,
                    "inset": length,
                    "size": {"enum": sorted(CLEARANCE), "x-amir-type": "String"},
                },
                "required": ["length", "width", "thickness", "size"],
                "additionalProperties": False,
            }
        },
        "workflows": {
            REF: {
                "tables": {"clearance": CLEARANCE},
                "steps": [
                    {
                        "id": "plate",
                        "capability": "cap:exact.box@1",
                        "label": "$label",
                        "args": {
                            "length": {"$expr": "length"},
                            "width": {"$expr": "width"},
                            "height": {"$expr": "thickness"},
                        },
                    },
                    {
                        "id": "holes",
                        "capability": "cap:exact.hole@1",
                        "args": {
                            "target": {"step": "plate"},
                            "face": {"body": {"$step": "plate"}, "select": ">Z", "entity": "Face"},
                            "points": {
                                "$expr": "[[(i % 2 * 2 - 1) * (length / 2 - inset), "
                                "(i // 2 * 2 - 1) * (width / 2 - inset)] for i in range(4)]"
                            },
                            "diameter": {"$expr": "clearance[size]"},
                        },
                    },
                ],
                "result": "holes",
            }
        },
    }


class VendorPlugin:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @hookimpl
    def aira_register_capability_packages(self, register: Any) -> None:
        register(CapabilityPackageSource.from_directory(self.directory))


def test_a_vendor_workflow_expands_and_builds_on_the_real_kernel(
    register_plugin: Any,
    aira: Any,
    aira_home: Path,
    throwaway_trust: Any,
    signed_package: Any,
    tmp_path: Path,
) -> None:
    import aira_kernel_occt.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")
    register_plugin(VendorPlugin(signed_package(vendor_manifest())), "vendor")

    def run(*args: str) -> Any:
        out = aira(*args)
        assert out.returncode in (0, 1), out.stdout + out.stderr
        return out

    listed = json.loads(run("catalog", "list", "--json", "--quarantine").stdout)
    assert listed["quarantine"] == [], listed["quarantine"]
    base = json.loads(run("model", "init", "--json").stdout)["rev"]
    step = {
        "id": "mount",
        "capability": CAP,
        "label": "plate",
        "args": {"length": 60, "width": 40, "thickness": 5, "size": "M4"},
    }
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"baseRevision": base, "steps": [step]}))

    checks = [json.loads(run("plan", "check", str(plan), "--json").stdout) for _ in range(2)]
    assert checks[0]["ok"] and checks[0]["planId"] == checks[1]["planId"]
    holes = checks[0]["expansions"]["mount"][1]
    assert holes["id"] == "mount.holes" and holes["args"]["diameter"] == 4.5
    assert sorted(map(tuple, holes["args"]["points"])) == [
        (-24, -14),
        (-24, 14),
        (24, -14),
        (24, 14),
    ]

    out = run("plan", "apply", str(plan), "--json")
    envelope = json.loads(out.stdout)
    assert out.returncode == 0 and envelope["status"] == "success", envelope["diagnostics"]
    assert envelope["data"]["planId"] == checks[0]["planId"]
    assert [s["id"] for s in envelope["data"]["expansions"]["mount"]] == [
        "mount.plate",
        "mount.holes",
    ]
    (body,) = envelope["data"]["bodies"].values()
    expected = 60 * 40 * 5 - 4 * math.pi * (4.5 / 2) ** 2 * 5
    assert body["volume"] == pytest.approx(expected, rel=1e-6) and body["valid"] is True
    assert "b:plate" in json.loads(run("model", "show", "--json").stdout)["aliases"]

    # a size the table lacks is refused by the input schema before any kernel call
    bad = {**step, "args": {**step["args"], "size": "M7"}}
    plan.write_text(json.dumps({"baseRevision": envelope["observedRevision"], "steps": [bad]}))
    refused = json.loads(run("plan", "check", str(plan), "--json").stdout)
    assert not refused["ok"] and refused["failedStep"] == "mount"
    assert [d["code"] for d in refused["diagnostics"]] == ["PLAN_ARGS_INVALID"]
