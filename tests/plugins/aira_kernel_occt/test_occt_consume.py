"""Booleans consume their tools, on the real kernel and a real SQLite store (issue 17): a plan
step ``cap:exact.union@1`` / ``cut`` / ``intersect`` leaves one body in the committed
revision, whose exported STL has the boolean's volume (not the result plus the tool) and is
watertight; ``keepTool: true`` keeps the tool; ``cap:body.remove@1`` takes a body out. The
plans that would leave a dangling reference are refused at check time with a stable code,
and the store stays as it was.

Closed forms: the plate is a 40 × 30 × 10 box and the tool a 10 × 10 × 20 box, both centred
on the origin, so the tool pierces the plate: cut 12000 − 1000, union 12000 + 2000 − 1000,
intersect 1000 mm³.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.plan import IntentFrame, Plan
from aira_core.diagnostics import AiraError
from aira_core.model.repository import ModelRepository
from aira_core.model.store import MAIN
from aira_core.runtime.plan import PlanContext, check_plan
from aira_core.runtime.write import WritePath

PLATE, TOOL = 40 * 30 * 10, 10 * 10 * 20
SHARED = 10 * 10 * 10
VOLUME = {"cut": PLATE - SHARED, "union": PLATE + TOOL - SHARED, "intersect": SHARED}


@pytest.fixture(scope="module")
def occt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    """One kernel (a warm worker) and the production catalog admitting the first-party
    package on it, per module: admission runs every input example on the kernel."""
    import aira_kernel_occt.plugin
    from aira_core.catalog.state import CatalogState
    from aira_core.catalog.trust import TrustPolicy
    from aira_core.extensions import CapabilityPackageSource
    from aira_core.plugins import Registered, Registry
    from aira_kernel_occt.kernel import OcctKernel
    from aira_kernel_occt.manifest import NAME

    kernel = OcctKernel()
    registry = Registry()
    source = CapabilityPackageSource.from_directory(aira_kernel_occt.plugin.PACKAGE_DIR)
    registry.by_type["capability_packages"][NAME] = Registered(source, "occt", "occt")
    registry.by_type["kernels"][kernel.name] = Registered(kernel, "occt", "occt")
    state = CatalogState(tmp_path_factory.mktemp("catalog") / "catalog.sqlite3")
    try:
        catalog = build_catalog(registry, trust=TrustPolicy(), state=state)
        assert catalog.quarantine == [], catalog.quarantine
        yield kernel, catalog
    finally:
        state.close()
        kernel.close()


@pytest.fixture
def write(occt: tuple[Any, Any], tmp_path: Path) -> Iterator[WritePath]:
    """The write path on a fresh store."""
    kernel, catalog = occt
    index = capability_index(catalog)
    repository = ModelRepository.open(tmp_path / "store.sqlite3", node_signatures(index))
    repository.init()
    ctx = PlanContext(catalog=catalog, repository=repository, grant=LOCAL_GRANT, capabilities=index)
    try:
        yield WritePath(ctx, kernel)
    finally:
        repository.close()


def box(sid: str, length: float, width: float, height: float) -> dict[str, Any]:
    return {
        "id": sid,
        "capability": "cap:exact.box@1",
        "label": sid,
        "args": {"length": length, "width": width, "height": height},
    }


def boolean(kind: str, sid: str = "op", **args: Any) -> dict[str, Any]:
    return {"id": sid, "capability": f"cap:exact.{kind}@1", "args": args}


def remove(sid: str, body: Any) -> dict[str, Any]:
    return {"id": sid, "capability": "cap:body.remove@1", "args": {"body": body}}


def volume_check(sid: str, target: str) -> dict[str, Any]:
    return {
        "id": sid,
        "capability": "cap:validate.volumeRange@1",
        "args": {"target": target, "min": 1, "max": 1e6},
    }


PARTS = [box("plate", 40, 30, 10), box("tool", 10, 10, 20)]


def apply(write: WritePath, *steps: dict[str, Any], **kw: Any) -> Any:
    head = write.repository.head(MAIN)
    plan = Plan.model_validate({"baseRevision": head, "steps": list(steps), **kw})
    return write.apply(plan, f"req-{head[-8:]}-{len(steps)}")


def committed(write: WritePath, *steps: dict[str, Any], **kw: Any) -> str:
    envelope = apply(write, *steps, **kw)
    assert envelope.status == "success", [d.to_wire() for d in envelope.diagnostics]
    return write.repository.head(MAIN)


def stl_volume(write: WritePath, rev: str) -> tuple[float, bool]:
    """The volume of the STL an export of every body writes, and whether it is
    watertight."""
    import trimesh

    data = write.kernel.export(write.repository.document(rev), "stl")
    assert data, write.kernel.last_export_diagnostics
    mesh = trimesh.load(io.BytesIO(data), file_type="stl")
    return float(mesh.volume), bool(mesh.is_watertight)


def store_state(write: WritePath) -> tuple[str, list[Any], dict[str, str]]:
    store = write.repository.store
    return write.repository.head(MAIN), store.log(MAIN, limit=None), store.branches()


def refused(write: WritePath, *steps: dict[str, Any], **kw: Any) -> list[Any]:
    """The diagnostics of a plan that must be refused at check time, leaving the store."""
    before = store_state(write)
    envelope = apply(write, *steps, **kw)
    assert envelope.status != "success"
    assert store_state(write) == before
    head = write.repository.head(MAIN)
    plan = Plan.model_validate({"baseRevision": head, "steps": list(steps), **kw})
    report, lowered = check_plan(plan, write.ctx)
    assert not report.ok and lowered is None
    assert [d.code for d in envelope.diagnostics] == [d.code for d in report.diagnostics]
    return list(report.diagnostics)


# -- the default: the tool is consumed ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["cut", "union", "intersect"])
def test_a_boolean_leaves_one_body_whose_export_is_the_booleans_volume(
    write: WritePath, kind: str
) -> None:
    base = committed(write, *PARTS)
    assert len(write.repository.document(base).bodies) == 2

    head = committed(write, boolean(kind, target="b:plate", tool="b:tool"))

    document = write.repository.document(head)
    (body,) = document.bodies
    assert body.label == "plate"
    volume, watertight = stl_volume(write, head)
    assert volume == pytest.approx(VOLUME[kind], rel=1e-6)
    assert watertight
    # the tool's history stays: the boolean's node still takes its shape
    node = next(n for n in document.nodes if n.id == body.tip)
    assert set(node.inputs) == {"target", "tool"}  # keepTool is the plan's, not the node's
    # its alias is gone from the new revision, not from the old one
    with pytest.raises(AiraError) as exc:
        write.repository.aliases(head).resolve("b:tool")
    assert exc.value.code == "ALIAS_UNKNOWN"
    assert write.repository.aliases(base).resolve("b:tool")


def test_before_issue_17_the_same_plan_exported_the_tool_too(write: WritePath) -> None:
    """What the issue reported (+49.9 % for its part), reproduced with keepTool: both
    bodies are exported, overlapping, so the file holds more than the part."""
    committed(write, *PARTS)
    head = committed(write, boolean("union", target="b:plate", tool="b:tool", keepTool=True))
    assert len(write.repository.document(head).bodies) == 2
    assert stl_volume(write, head)[0] == pytest.approx(VOLUME["union"] + TOOL, rel=1e-6)


def test_keep_tool_keeps_the_tool_body(write: WritePath) -> None:
    committed(write, *PARTS)
    envelope = apply(write, boolean("cut", target="b:plate", tool="b:tool", keepTool=True))
    assert envelope.status == "success"
    head = write.repository.head(MAIN)
    labels = sorted(b.label for b in write.repository.document(head).bodies)
    assert labels == ["plate", "tool"]
    assert envelope.data["removedBodies"] == {}
    # the tool is still a body of the model: a later plan uses it
    committed(write, boolean("union", target="b:plate", tool="b:tool"))
    (body,) = write.repository.document(write.repository.head(MAIN)).bodies
    assert body.label == "plate"


def test_a_tool_made_in_the_same_plan_goes_too(write: WritePath) -> None:
    head = committed(
        write,
        *PARTS,
        boolean("cut", "hole", target={"step": "plate"}, tool={"step": "tool"}),
        volume_check("check", "b:plate"),
    )
    (body,) = write.repository.document(head).bodies
    assert body.label == "plate"
    assert stl_volume(write, head)[0] == pytest.approx(VOLUME["cut"], rel=1e-6)


def test_the_plan_result_names_the_consumed_body(write: WritePath) -> None:
    committed(write, *PARTS)
    tool = write.repository.aliases(write.repository.head(MAIN)).resolve("b:tool")
    envelope = apply(write, boolean("cut", target="b:plate", tool="b:tool"))
    assert envelope.status == "success"
    assert envelope.data["removedBodies"] == {tool: "op"}
    assert tool not in envelope.data["createdBodies"].values()


# -- cap:body.remove@1 ---------------------------------------------------------------------------


def test_body_remove_takes_a_body_out_and_a_revert_brings_it_back(write: WritePath) -> None:
    base = committed(write, *PARTS)
    head = committed(write, remove("drop", "b:tool"))
    (body,) = write.repository.document(head).bodies
    assert body.label == "plate"
    assert stl_volume(write, head)[0] == pytest.approx(PLATE, rel=1e-6)
    restored = write.revert(base, "undo")
    assert restored.status == "success"
    labels = sorted(b.label for b in write.repository.document(write.repository.head()).bodies)
    assert labels == ["plate", "tool"]


def test_body_remove_of_a_body_made_by_an_earlier_step(write: WritePath) -> None:
    head = committed(write, *PARTS, remove("drop", {"step": "tool"}))
    assert [b.label for b in write.repository.document(head).bodies] == ["plate"]


# -- refused at check time, the store unchanged --------------------------------------------------


def test_the_tool_being_the_target_is_refused(write: WritePath) -> None:
    committed(write, *PARTS)
    (d,) = refused(write, boolean("union", target="b:plate", tool="b:plate"))
    assert d.code == "PLAN_CONSUMES_TARGET" and d.pointer == "/steps/0/args/tool"
    # with keepTool the step consumes nothing; the kernel then decides (a union with itself)
    assert apply(write, boolean("union", target="b:plate", tool="b:plate", keepTool=True))


def test_a_tool_with_an_assertion_on_it_is_refused_with_the_repair(write: WritePath) -> None:
    committed(write, *PARTS, volume_check("checkTool", "b:tool"))
    (d,) = refused(write, boolean("cut", target="b:plate", tool="b:tool"))
    assert d.code == "PLAN_BODY_STILL_REFERENCED" and d.pointer == "/steps/0/args/tool"
    assert "keepTool: true" in d.message and "remove the assertion" in d.message
    # the repair the message names works
    committed(write, boolean("cut", target="b:plate", tool="b:tool", keepTool=True))


def test_a_tool_asserted_earlier_in_the_same_plan_is_refused(write: WritePath) -> None:
    (d,) = refused(
        write,
        *PARTS,
        volume_check("checkTool", "b:tool"),
        boolean("cut", target="b:plate", tool="b:tool"),
    )
    assert d.code == "PLAN_BODY_STILL_REFERENCED" and "checkTool" in d.message


def shaped(capability: str, size_arg: str, size: float, sid: str = "round") -> dict[str, Any]:
    """A feature on the tool's vertical edges (a fillet's radius, a chamfer's length)."""
    return {
        "id": sid,
        "capability": capability,
        "args": {
            "target": "b:tool",
            "edges": {"body": "b:tool", "select": "|Z", "entity": "Edge"},
            size_arg: size,
        },
    }


ROUNDED_HOLE = PLATE - (10 * 10 - (4 - math.pi) * 1**2) * 10
"""The plate less the tool rounded R1 on its vertical edges (it pierces the plate's 10 mm)."""
CHAMFERED_HOLE = PLATE - (10 * 10 - 4 * 0.5 * 1**2) * 10


@pytest.mark.parametrize(
    ("feature", "expected"),
    [
        (shaped("cap:exact.fillet@1", "radius", 1), ROUNDED_HOLE),
        (shaped("cap:exact.chamfer@1", "length", 1), CHAMFERED_HOLE),
    ],
    ids=["fillet", "chamfer"],
)
def test_a_tool_shaped_by_a_feature_is_consumed_with_its_shape(
    write: WritePath, feature: dict[str, Any], expected: float
) -> None:
    """Issue 33: box plate, box tool, a fillet (chamfer) on the tool, the cut by it was
    PLAN_BODY_STILL_REFERENCED. The feature's selection follows the node that made the shape
    it names: the tool leaves the model, one body is committed, a plate with a rounded
    (chamfered) square hole."""
    rev = committed(write, *PARTS, feature, boolean("cut", target="b:plate", tool="b:tool"))
    document = write.repository.document(rev)
    assert [b.id for b in document.bodies] == [write.repository.aliases(rev).resolve("b:plate")]
    (node,) = [n for n in document.nodes if n.op.startswith(("exact.fillet", "exact.chamfer"))]
    edges = node.inputs["edges"]
    tool_box = node.inputs["target"].node
    assert edges.body is None and edges.node == tool_box and edges.select == "|Z"
    result = write.kernel.evaluate(document)
    (body,) = result.bodies.values()
    assert body.valid and body.volume == pytest.approx(expected, rel=1e-9)
    volume, watertight = stl_volume(write, rev)
    assert watertight and volume == pytest.approx(expected, rel=5e-3)


def test_a_shaped_tool_kept_then_removed_goes_too(write: WritePath) -> None:
    """keepTool: true, then cap:body.remove@1 of the rounded tool: the same one body."""
    rev = committed(
        write,
        *PARTS,
        shaped("cap:exact.fillet@1", "radius", 1),
        boolean("cut", target="b:plate", tool="b:tool", keepTool=True),
        remove("drop", "b:tool"),
    )
    document = write.repository.document(rev)
    assert len(document.bodies) == 1
    (body,) = write.kernel.evaluate(document).bodies.values()
    assert body.volume == pytest.approx(ROUNDED_HOLE, rel=1e-9)


def test_a_shaped_tool_moved_after_its_feature_is_consumed_where_it_is(write: WritePath) -> None:
    """The feature selects on the box it rounds, also when the rounded tool is moved before
    the cut (the body's tip then builds on the feature): the selection is walked back to the
    shape the feature read, as the kernel reads a selection on a body."""
    move = {
        "id": "move",
        "capability": "cap:exact.translate@1",
        "args": {"target": "b:tool", "x": 100},
    }
    rev = committed(
        write,
        *PARTS,
        shaped("cap:exact.fillet@1", "radius", 1),
        move,
        boolean("cut", target="b:plate", tool="b:tool"),
    )
    document = write.repository.document(rev)
    (body,) = write.kernel.evaluate(document).bodies.values()
    assert body.volume == pytest.approx(PLATE, rel=1e-9)  # moved clear of the plate


def test_a_feature_of_the_base_revision_selecting_on_the_tool_still_holds_it(
    write: WritePath,
) -> None:
    """A committed revision's feature names the body in its selection; a later plan that
    consumes the body is refused, and says to give keepTool or apply the feature after."""
    committed(write, *PARTS, shaped("cap:exact.fillet@1", "radius", 1))
    (d,) = refused(write, boolean("cut", target="b:plate", tool="b:tool"))
    assert d.code == "PLAN_BODY_STILL_REFERENCED" and "keepTool: true" in d.message


def test_a_plan_that_consumes_nothing_keeps_body_selections(write: WritePath) -> None:
    """Revision ids of plans whose bodies stay are as they were: their selections still
    name the body."""
    rev = committed(write, *PARTS, shaped("cap:exact.fillet@1", "radius", 1))
    (node,) = [n for n in write.repository.document(rev).nodes if n.op.startswith("exact.fillet")]
    assert node.inputs["edges"].node is None and node.inputs["edges"].body is not None


def test_a_later_step_naming_the_consumed_body_is_told_which_step_consumed_it(
    write: WritePath,
) -> None:
    committed(write, *PARTS)
    found = refused(
        write,
        boolean("cut", "first", target="b:plate", tool="b:tool"),
        {
            "id": "move",
            "capability": "cap:exact.translate@1",
            "args": {"target": "b:tool", "x": 5},
        },
    )
    (d,) = found
    assert d.code == "PLAN_REFERENCE_UNRESOLVED" and d.pointer == "/steps/1/args/target"
    assert "consumed" in d.message and "'first'" in d.message and "keepTool: true" in d.message


def test_a_body_consumed_by_one_step_and_used_as_tool_by_another(write: WritePath) -> None:
    committed(write, *PARTS, box("other", 5, 5, 5))
    (d,) = refused(
        write,
        boolean("cut", "first", target="b:plate", tool="b:tool"),
        boolean("union", "second", target="b:other", tool="b:tool"),
    )
    assert d.code == "PLAN_REFERENCE_UNRESOLVED" and d.pointer == "/steps/1/args/tool"
    assert "'first'" in d.message


def test_a_step_reference_to_a_consumed_body_is_refused(write: WritePath) -> None:
    (d,) = refused(
        write,
        *PARTS,
        boolean("cut", "first", target="b:plate", tool={"step": "tool"}),
        volume_check("check", "tool"),
    )
    assert d.code == "PLAN_REFERENCE_UNRESOLVED" and "'first'" in d.message


def test_an_acceptance_assertion_on_the_consumed_body_is_refused(write: WritePath) -> None:
    committed(write, *PARTS)
    (d,) = refused(
        write,
        boolean("cut", target="b:plate", tool="b:tool"),
        acceptanceAssertions=[
            {"validatorRef": "validate.volumeRange@1.0.0", "target": "b:tool", "args": {"min": 1}}
        ],
    )
    assert d.code == "PLAN_REFERENCE_UNRESOLVED"
    assert d.pointer == "/acceptanceAssertions/0/target"


def test_keep_tool_from_a_parameter_is_refused(write: WritePath) -> None:
    """Whether the tool stays is decided when the plan is checked: a parameter, whose value
    a later plan may change, cannot decide it."""
    committed(write, *PARTS)
    flag = {"id": "pkeep", "label": "keep", "type": "Bool", "value": True}
    envelope = write.apply_patch({"ops": [{"op": "parameter.add", "parameter": flag}]}, "seed")
    assert envelope.status == "success", envelope.diagnostics
    (d,) = refused(
        write, boolean("cut", target="b:plate", tool="b:tool", keepTool={"param": "p:keep"})
    )
    assert d.code == "PLAN_ARGS_INVALID" and d.pointer == "/steps/0/args/keepTool"


def test_body_remove_of_an_asserted_body_is_refused(write: WritePath) -> None:
    committed(write, *PARTS, volume_check("checkTool", "b:tool"))
    (d,) = refused(write, remove("drop", "b:tool"))
    assert d.code == "PLAN_BODY_STILL_REFERENCED" and d.pointer == "/steps/0/args/body"
    assert "remove the assertion" in d.message


def test_body_remove_twice_and_of_nothing(write: WritePath) -> None:
    committed(write, *PARTS)
    (d,) = refused(write, remove("a", "b:tool"), remove("b", "b:tool"))
    assert d.code == "PLAN_REFERENCE_UNRESOLVED" and "removed" in d.message and "'a'" in d.message
    (d,) = refused(write, remove("a", "b:nothing"))
    assert d.code == "PLAN_REFERENCE_UNRESOLVED"
    (d,) = refused(write, remove("a", {"step": "nowhere"}))
    assert d.code == "PLAN_STEP_REFERENCE_INVALID"
    for bad in (7, ["b:tool"], {"step": 3}, ""):
        codes = {d.code for d in refused(write, remove("a", bad))}
        assert codes == {"PLAN_ARGS_INVALID"}, (bad, codes)


def test_consuming_a_body_outside_the_intent_scope_is_refused(write: WritePath) -> None:
    committed(write, *PARTS)
    write.ctx.intent = IntentFrame.model_validate({"goal": "cut the plate", "scope": ["b:plate"]})
    try:
        (d,) = refused(write, boolean("cut", target="b:plate", tool="b:tool"))
        assert d.code == "PLAN_OUT_OF_SCOPE" and "keepTool: true" in d.message
        committed(write, boolean("cut", target="b:plate", tool="b:tool", keepTool=True))
    finally:
        write.ctx.intent = None


# -- aira model export: the part, and every body it writes named --------------------------------


def test_model_export_writes_the_part_and_names_the_bodies_it_writes(
    register_plugin: Any, aira: Any, aira_home: Path, tmp_path: Path
) -> None:
    import json

    import trimesh

    import aira_kernel_occt.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")

    def run(*args: str) -> Any:
        out = aira(*args)
        assert out.returncode == 0, out.stdout + out.stderr
        return out

    def plan_file(name: str, steps: list[dict[str, Any]]) -> str:
        head = json.loads(run("model", "log", "--json").stdout)["records"][0]["rev"]
        path = tmp_path / name
        path.write_text(json.dumps({"baseRevision": head, "steps": steps}))
        return str(path)

    run("model", "init")
    run("plan", "apply", plan_file("parts.json", PARTS))
    keep = [boolean("cut", target="b:plate", tool="b:tool", keepTool=True)]
    run("plan", "apply", plan_file("keep.json", keep))
    both = tmp_path / "both.stl"
    out = run("model", "export", "--format", "stl", "--out", str(both))
    assert "(2 bodies: b:plate, b:tool)" in out.stdout
    one = tmp_path / "one.stl"
    out = run(
        "model", "export", "--format", "stl", "--out", str(one), "--body", "b:plate", "--json"
    )
    assert json.loads(out.stdout)["bodies"] == ["b:plate"]

    run("plan", "apply", plan_file("drop.json", [remove("drop", "b:tool")]))
    part = tmp_path / "part.stl"
    out = run("model", "export", "--format", "stl", "--out", str(part), "--json")
    assert json.loads(out.stdout)["bodies"] == ["b:plate"]
    mesh = trimesh.load(part, file_type="stl")
    assert mesh.is_watertight and float(mesh.volume) == pytest.approx(VOLUME["cut"], rel=1e-6)
    assert trimesh.load(both, file_type="stl").volume == pytest.approx(
        VOLUME["cut"] + TOOL, rel=1e-6
    )
    help_text = run("model", "export", "--help").stdout
    assert "consumed" in help_text and "keepTool" in help_text


def test_the_fast_and_the_reference_validator_agree_on_every_input_schema(
    occt: tuple[Any, Any],
) -> None:
    """aira_core/schema_errors.py trusts the Rust validator's "valid": over every first-party
    input schema, each input example and variations of it (a value of another type, a
    missing or an unknown argument), it says valid exactly when python-jsonschema does."""
    import random

    import jsonschema_rs
    from jsonschema import Draft202012Validator

    _, catalog = occt
    rng = random.Random(7)
    others = [0, -1, 1.5, "x", "", "b:plate", None, True, [], [1, 2], {"value": 2, "unit": "cm"},
              {"param": "p:w"}, {"body": "b:x", "select": ">Z"}, {"step": "s1"}, 2**53]  # fmt: skip
    cases = 0
    for entry in capability_index(catalog).values():
        schema, names = entry.input_schema, [*entry.input_schema.get("properties", {}), "zz"]
        for example in [dict(e.input) for e in entry.descriptor.input_examples] or [{}]:
            for n in range(25):
                value = dict(example)
                if n:
                    value[rng.choice(names)] = rng.choice(others)
                    if n % 3 == 0 and value:
                        value.pop(rng.choice(list(value)))
                fast = jsonschema_rs.Draft202012Validator(schema).is_valid(value)
                reference = next(Draft202012Validator(schema).iter_errors(value), None) is None
                assert fast == reference, (entry.descriptor.capability_id, value)
                cases += 1
    assert cases > 1000
