"""Test-only builders for the plan runtime: the fake kernel's package admitted through the
catalog and a ready :class:`PlanContext` over a fresh revision store.

The fakes themselves are the library's, for plugin authors too (:mod:`aira_core.testing`):
the package ``test.runtime`` (:func:`~aira_core.testing.package.fake_kernel_manifest`)
declares a small exact-modelling vocabulary, and :class:`FakeGeometryKernel` computes it
analytically. This module keeps what is specific to Aira's own tests (the composite plan,
``seed``, ``make_runtime``) and re-exports the names the tests import from here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amir_factory import commit_patch

from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.catalog import Catalog, build_catalog
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.catalog.state import CatalogState
from aira_core.catalog.trust import TrustPolicy
from aira_core.contracts.capability import SessionGrant
from aira_core.contracts.plan import IntentFrame, Plan, PlanStep
from aira_core.model.repository import ModelRepository
from aira_core.plugins import Registered, Registry
from aira_core.runtime.plan import PlanContext
from aira_core.testing.kernel import (  # noqa: F401 (re-exported for the tests)
    KERNEL_METHODS,
    KERNEL_OPERATION_UNKNOWN,
    FakeGeometryKernel,
    Solid,
    box_volume,
)
from aira_core.testing.package import (  # noqa: F401 (re-exported for the tests)
    BOX,
    BOX_CAP,
    DEFINE_CAP,
    FILLET,
    FILLET_CAP,
    FILLET_RADIUS_TOO_LARGE,
    MASS_PROPERTIES,
    MASS_PROPERTIES_CAP,
    MESH_BOX,
    MESH_BOX_CAP,
    PACKAGE,
    PARAMETER_DEFINE,
    PARAMETER_SET,
    PUBLISHER,
    QUERY_TARGET_UNKNOWN,
    SELECTION_EMPTY,
    SET_CAP,
    VOLUME_OUT_OF_RANGE,
    VOLUME_RANGE,
    VOLUME_RANGE_CAP,
    _io,
    package_source,
)
from aira_core.testing.package import fake_implementations as runtime_implementations
from aira_core.testing.package import fake_kernel_manifest as runtime_manifest
from aira_core.testing.signing import ThrowawaySigner, trust_policy_for

PLUGIN = "runtime-tests"


# -- a runtime over a fresh store ----------------------------------------------------------------


@dataclass
class Runtime:
    catalog: Catalog
    trust: TrustPolicy
    registry: Registry


def admit(
    tmp_path: Path, m: Mapping[str, Any] | None = None, kernel: FakeGeometryKernel | None = None
) -> Runtime:
    """Sign ``m`` (default: :func:`runtime_manifest`) with a throwaway key and admit it
    through ``build_catalog`` with a registry built in-process (kernel registered too)."""
    m = copy.deepcopy(dict(m)) if m is not None else runtime_manifest()
    signer = ThrowawaySigner(PUBLISHER)
    trust = trust_policy_for(signer)
    impls = runtime_implementations(m)
    registry = Registry()
    registry.by_type["capability_packages"][m["name"]] = Registered(
        package_source(m, signer, impls), PLUGIN, PLUGIN
    )
    if kernel is not None:
        registry.by_type["kernels"][kernel.name] = Registered(kernel, PLUGIN, PLUGIN)
    state = CatalogState(tmp_path / "catalog.sqlite3")
    try:
        catalog = build_catalog(registry, trust=trust, state=state)
    finally:
        state.close()
    if catalog.quarantine or m["name"] not in catalog.packages:
        reasons = [str(r) for q in catalog.quarantine for r in q.reasons]
        raise AssertionError(f"the runtime test package was not admitted: {reasons}")
    return Runtime(catalog, trust, registry)


def make_runtime(
    tmp_path: Path,
    *,
    grant: SessionGrant = LOCAL_GRANT,
    intent: IntentFrame | None = None,
) -> tuple[PlanContext, FakeGeometryKernel, ModelRepository]:
    """Admit the test package, open a store at ``tmp_path/"store.sqlite3"`` initialised with
    an empty document, and build a :class:`PlanContext` for it."""
    kernel = FakeGeometryKernel()
    runtime = admit(tmp_path, kernel=kernel)
    index = capability_index(runtime.catalog)
    signatures = node_signatures(index)
    repository = ModelRepository.open(tmp_path / "store.sqlite3", signatures)
    repository.init()
    ctx = PlanContext(
        catalog=runtime.catalog,
        repository=repository,
        grant=grant,
        intent=intent,
        capabilities=index,
    )
    kernel.calls.clear()
    return ctx, kernel, repository


def step(
    sid: str,
    capability: str,
    label: str | None = None,
    depends_on: Sequence[str] = (),
    **args: Any,
) -> PlanStep:
    return PlanStep(
        id=sid, capability=capability, args=args, label=label, depends_on=list(depends_on)
    )


def plan(base_rev: str, *steps: PlanStep | Mapping[str, Any], **kw: Any) -> Plan:
    """A plan bound to ``base_rev``; steps are :class:`PlanStep` or their wire dicts; ``kw``
    are further Plan fields (``bindings``, ``acceptance_assertions`` …)."""
    return Plan.model_validate(
        {
            "base_revision": base_rev,
            "steps": [s if isinstance(s, PlanStep) else PlanStep.model_validate(s) for s in steps],
            **kw,
        }
    )


# The composite plan of the tests: a parameter, a plate whose length is that parameter, its
# vertical edges rounded, a volume-range check and a mass-properties query.
PLATE = {"length": 40.0, "width": 30.0, "height": 10.0, "radius": 2.0}


def composite_steps(
    *, radius: Any = None, vmin: float = 1000.0, vmax: float = 20000.0
) -> list[PlanStep]:
    return [
        step(
            "width",
            DEFINE_CAP,
            name="width",
            value=PLATE["length"],
            unit="mm",
            type="Length",
            min=1,
            max=500,
        ),
        step(
            "plate",
            BOX_CAP,
            label="plate",
            length={"param": "p:width"},
            width=PLATE["width"],
            height=PLATE["height"],
        ),
        step(
            "round",
            FILLET_CAP,
            target="b:plate",
            edges={"body": "b:plate", "select": "|Z", "entity": "Edge"},
            radius=radius if radius is not None else {"value": 0.2, "unit": "cm"},
        ),
        step("check", VOLUME_RANGE_CAP, label="volume", target="b:plate", min=vmin, max=vmax),
        step("mass", MASS_PROPERTIES_CAP, target="b:plate"),
    ]


def plate_volume(length: float = PLATE["length"], radius: float = PLATE["radius"]) -> float:
    return box_volume(length, PLATE["width"], PLATE["height"], radius)


def seed(repository: ModelRepository, *labels: str, length: float = PLATE["length"]) -> str:
    """Commit on main, without the plan runtime, parameter ``p:width`` and one box body per
    label (``b:<label>``, length = the parameter, 30 × 10 mm); returns the new head."""
    ops: list[dict[str, Any]] = [
        {
            "op": "parameter.add",
            "parameter": {
                "id": "pwidth",
                "label": "width",
                "type": "Length",
                "unit": "mm",
                "value": length,
            },
        }
    ]
    for label in labels:
        ops.append(
            {
                "op": "node.add",
                "node": {
                    "id": f"n{label}",
                    "label": label,
                    "op": BOX,
                    "inputs": {
                        "length": {"param": "pwidth"},
                        "width": {"value": PLATE["width"]},
                        "height": {"value": PLATE["height"]},
                    },
                },
            }
        )
        ops.append(
            {"op": "body.add", "body": {"id": f"b{label}", "label": label, "tip": f"n{label}"}}
        )
    return commit_patch(repository, "main", repository.head(), {"ops": ops}, message="seed").rev


def input_schema(capability: str) -> dict[str, Any]:
    """The full input schema the package declares for ``capability``."""
    m = runtime_manifest()
    d = next(d for d in m["descriptors"] if d["capabilityId"] == capability)
    return m["schemas"][d["inputs"]["schemaRef"]]
