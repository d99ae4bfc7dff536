"""A third-party validator as a vendor would ship it: a signed capability package declaring
one validator contract (``dfm.holeEdgeDistance@1.0.0``) and the validator behind it,
registered through ``aira_register_validators``. It is no kernel: it judges the document
only through the read-only view's kernel queries (a body's bounding box, its circular
edges). Used by tests/test_validators.py (fake kernel, hostile variants) and
tests/plugins/aira_kernel_occt/test_occt_validators.py (the real kernel)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from aira_core import hookimpl
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import CapabilityPackageSource, ModelView, ValidationOutcome
from aira_core.testing.package import LENGTH, SHAPE

PACKAGE = "acme.dfm"
PUBLISHER = "acme-dfm"
CAP = "cap:dfm.holeEdgeDistance@1"
REF = "dfm.holeEdgeDistance@1.0.0"
TOO_CLOSE = "DFM_HOLE_TOO_CLOSE_TO_EDGE"
ARGS_INVALID = "DFM_ARGS_INVALID"
BOUNDING_BOX = "query.boundingBox@1.0.0"
SELECT = "query.selectEntities@1.0.0"
MAX_DISTANCE = 100.0
"""mm: a DFM margin beyond this is a typo, which only the validator's own check can tell."""


def manifest(version: str = "1.0.0", examples: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The vendor's package: one validator descriptor and its input schema."""
    schema_ref = f"amir://ops/{REF.split('@')[0]}/1.0.0/input"
    return {
        "format": "aira.capability-package/1",
        "name": PACKAGE,
        "version": version,
        "publisher": PUBLISHER,
        "descriptors": [
            {
                "capabilityId": CAP,
                "kind": "validator",
                "validatorRef": REF,
                "profileVersion": "1.0.0",
                "inputs": {"schemaRef": schema_ref, "semanticTypes": ["ExactSolid"]},
                "taxonomy": {"primary": "validation.geometric"},
                "effects": ["readOnly"],
                "risk": {"level": "low"},
                "execution": {"quality": ["authoritative"], "costClass": "instant"},
                "title": "Minimum hole-to-edge distance",
                "summary": "Every through hole of a plate lying in XY keeps at least minDistance "
                "mm of material between its rim and the plate's outer edge (a DFM rule).",
                "intentExamples": ["holes must stay 3 mm away from the plate's edge"],
                "inputExamples": [
                    {"input": dict(e)}
                    for e in (examples or [{"target": "b:plate", "minDistance": 3}])
                ],
                "diagnostics": [TOO_CLOSE, ARGS_INVALID],
            }
        ],
        "schemas": {
            schema_ref: {
                "type": "object",
                "properties": {"target": SHAPE, "minDistance": LENGTH},
                "required": ["target", "minDistance"],
                "additionalProperties": False,
            }
        },
    }


class HoleEdgeDistance:
    """The DFM check: for each full circular edge of the body (a hole's rim) the distance,
    in XY, from the circle to the nearest side of the body's bounding box."""

    name = "acme-dfm-hole-edge"
    ref = REF
    diagnostics = frozenset({TOO_CLOSE, ARGS_INVALID})
    fingerprint = "acme-dfm-hole-edge/1"

    def check(self, inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        value = inputs.get("minDistance")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not 0 < value <= MAX_DISTANCE:
            return [
                Diagnostic(
                    code=ARGS_INVALID,
                    message=f"minDistance must be a length in (0, {MAX_DISTANCE:g}] mm",
                )
            ]
        return []

    def validate(self, view: ModelView, assertion: Any) -> ValidationOutcome:
        minimum = float(assertion.args["minDistance"])
        box = view.query(BOUNDING_BOX, {"target": assertion.target})
        xmin, ymin, _, xmax, ymax, _ = box.data["boundingBox"]
        edges = view.query(
            SELECT, {"target": assertion.target, "select": "%CIRCLE", "entity": "Edge"}
        ).data["entities"]
        # a full circle is a hole's rim; a fillet's arc is a part of one
        rims = [
            e for e in edges if math.isclose(e["length"], 2 * math.pi * e["radius"], rel_tol=1e-6)
        ]
        distances = [
            min(x - r - xmin, xmax - x - r, y - r - ymin, ymax - y - r)
            for e in rims
            for (x, y, _), r in [(e["center"], e["radius"])]
        ]
        closest = min(distances, default=None)
        measured = {"holes": len({tuple(e["center"][:2]) for e in rims}), "minDistance": closest}
        if closest is None or closest >= minimum - 1e-9:
            return ValidationOutcome(assertion.id, True, measured)
        return ValidationOutcome(
            assertion.id,
            False,
            measured,
            [
                Diagnostic(
                    code=TOO_CLOSE,
                    message=f"a hole's rim is {closest:.3g} mm from the edge of "
                    f"{assertion.target}; at least {minimum:g} mm is required",
                )
            ],
        )


def plugin_module(validator: Any, package_dir: Any) -> Any:
    """An in-process plugin module registering the vendor package and ``validator``."""
    import types

    module = types.ModuleType("acme_dfm_plugin")

    @hookimpl
    def aira_register_capability_packages(register: Any) -> None:
        register(CapabilityPackageSource.from_directory(package_dir))

    @hookimpl
    def aira_register_validators(register: Any) -> None:
        register(validator)

    module.aira_register_capability_packages = aira_register_capability_packages  # type: ignore[attr-defined]
    module.aira_register_validators = aira_register_validators  # type: ignore[attr-defined]
    return module
