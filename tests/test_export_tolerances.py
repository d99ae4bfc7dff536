"""Mesh tolerances of an export (issue 17, meshes): the host checks them before any kernel
sees them, passes them as keyword arguments only when a user gives them, and a kernel whose
``export`` predates them keeps working (asked for tolerances, it is refused with a stable
code and never called). The OCCT kernel's meshes at these tolerances are checked with trimesh
in tests/plugins/aira_kernel_occt/test_occt_mesh.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aira_core import kernel_guard
from aira_core.contracts.amir import AmirDocument
from aira_core.diagnostics import AiraError
from aira_core.extensions import EXPORT_ANGULAR_TOLERANCE_RANGE, EXPORT_TOLERANCE_RANGE
from aira_core.testing.kernel import FakeGeometryKernel
from aira_core.testing.package import BOX

LOW, HIGH = EXPORT_TOLERANCE_RANGE
ANGLE_LOW, ANGLE_HIGH = EXPORT_ANGULAR_TOLERANCE_RANGE


def plate() -> AmirDocument:
    return AmirDocument.model_validate(
        {
            "nodes": [
                {
                    "id": "nbox",
                    "op": BOX,
                    "inputs": {
                        "length": {"value": 40},
                        "width": {"value": 30},
                        "height": {"value": 10},
                    },
                }
            ],
            "bodies": [{"id": "bplate", "label": "plate", "tip": "nbox"}],
        }
    )


class OldKernel(FakeGeometryKernel):
    """A third-party kernel written against the protocol before tolerances."""

    name = "old"

    def export(self, document, format, body=None):  # type: ignore[no-untyped-def,override]
        return super().export(document, format, body)


class AnyKeywordsKernel(FakeGeometryKernel):
    """A kernel whose export takes ``**options``: it gets what the user asked for."""

    name = "keywords"

    def __init__(self) -> None:
        super().__init__()
        self.options: list[dict[str, Any]] = []

    def export(self, document, format, body=None, **options):  # type: ignore[no-untyped-def,override]
        self.options.append(options)
        return super().export(document, format, body)


def code_of(call: Any) -> str:
    with pytest.raises(AiraError) as caught:
        call()
    return caught.value.code


def test_tolerances_reach_a_kernel_that_takes_them_and_only_when_given() -> None:
    kernel = FakeGeometryKernel()
    data = kernel_guard.export(kernel, plate(), "json", tolerance=0.05, angular_tolerance=10)
    assert json.loads(data)["bplate"]["volume"] == pytest.approx(12000)
    kernel_guard.export(kernel, plate(), "json", "bplate", angular_tolerance=ANGLE_HIGH)
    kernel_guard.export(kernel, plate(), "json")
    assert kernel.export_tolerances == [(0.05, 10), (None, ANGLE_HIGH), (None, None)]

    keywords = AnyKeywordsKernel()
    kernel_guard.export(keywords, plate(), "json", tolerance=LOW)
    kernel_guard.export(keywords, plate(), "json")
    assert keywords.options == [{"tolerance": LOW}, {}]


def test_a_kernel_without_tolerances_keeps_working_and_refuses_them_uncalled() -> None:
    kernel = OldKernel()
    assert json.loads(kernel_guard.export(kernel, plate(), "json"))["bplate"] is not None
    assert kernel.calls["export"] == 1
    for options in ({"tolerance": 0.1}, {"angular_tolerance": 10.0}):
        assert code_of(lambda o=options: kernel_guard.export(kernel, plate(), "json", **o)) == (
            "EXPORT_TOLERANCE_UNSUPPORTED"
        )
    assert kernel.calls["export"] == 1  # refused before the call, not by a TypeError in it
    with pytest.raises(AiraError, match="'old' takes no mesh tolerances"):
        kernel_guard.export(kernel, plate(), "json", tolerance=0.1)


@pytest.mark.parametrize(
    ("tolerance", "angular"),
    [
        (0, None),
        (-1, None),
        (float("nan"), None),
        (float("inf"), None),
        (1e9, None),
        (LOW / 2, None),
        (HIGH * 1.01, None),
        (True, None),
        ("0.1", None),
        (None, 0),
        (None, -5),
        (None, float("nan")),
        (None, ANGLE_LOW - 0.5),
        (None, ANGLE_HIGH + 1),
        (0.1, 1e6),
    ],
)
def test_bad_tolerances_are_refused_before_the_kernel(tolerance: Any, angular: Any) -> None:
    kernel = FakeGeometryKernel()
    code = code_of(
        lambda: kernel_guard.export(
            kernel, plate(), "stl", tolerance=tolerance, angular_tolerance=angular
        )
    )
    assert code == "EXPORT_TOLERANCE_INVALID"
    assert kernel.calls["export"] == 0


def test_the_ends_of_the_ranges_are_accepted() -> None:
    for tolerance, angular in ((LOW, ANGLE_LOW), (HIGH, ANGLE_HIGH), (1, 30)):
        kernel_guard.check_export_tolerances("stl", tolerance, angular)
    kernel_guard.check_export_tolerances("step")  # nothing asked: nothing to refuse


@pytest.mark.parametrize("fmt", ["step", "STP", "svg"])
def test_tolerances_for_a_format_that_is_no_mesh_are_refused(fmt: str) -> None:
    kernel = FakeGeometryKernel()
    with pytest.raises(AiraError, match="not a mesh") as caught:
        kernel_guard.export(kernel, plate(), fmt, tolerance=0.1)
    assert caught.value.code == "EXPORT_TOLERANCE_UNSUPPORTED"
    assert kernel.calls["export"] == 0
    kernel_guard.export(kernel, plate(), fmt)  # without them the export goes ahead


def test_the_bounds_are_the_ones_the_docs_and_the_occt_descriptors_state() -> None:
    from aira_core.codes import meanings

    meaning = meanings("kernel")["EXPORT_TOLERANCE_INVALID"]
    for bound in (LOW, HIGH, ANGLE_LOW, ANGLE_HIGH):
        assert f"{bound:g}" in meaning
    package = Path(__file__).parents[1] / "plugins/aira-kernel-occt/aira_kernel_occt/package"
    manifest = json.loads((package / "manifest.json").read_text())
    schemas = {
        d["capabilityId"]: manifest["schemas"][d["inputs"]["schemaRef"]]
        for d in manifest["descriptors"]
        if d["capabilityId"] in MESHES
    }
    assert sorted(schemas) == sorted(MESHES)
    for schema in schemas.values():
        inputs = schema["properties"]
        assert (inputs["tolerance"]["minimum"], inputs["tolerance"]["maximum"]) == (LOW, HIGH)
        angle = inputs["angularTolerance"]
        assert (angle["minimum"], angle["maximum"]) == (ANGLE_LOW, ANGLE_HIGH)
        assert (inputs["tolerance"]["x-amir-type"], angle["x-amir-type"]) == ("Length", "Angle")
        assert not {"tolerance", "angularTolerance"} & set(schema["required"])


MESHES = ("cap:io.exportStl@1", "cap:io.export3mf@1")
