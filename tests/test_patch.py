"""AMIR patches: pure, validated, all or nothing, with stable codes."""

from __future__ import annotations

import pytest

from aira_core.catalog.capabilities import capability_entries, node_signatures
from aira_core.contracts.amir import AmirDocument, Node
from aira_core.model.operations import signature_from_schema
from aira_core.model.patch import PatchRejected, apply_patch, feature_ops, validate_document

LENGTH = {"type": "number", "x-amir-type": "Length", "exclusiveMinimum": 0}
SIGNATURES = {
    "exact.box@1.0.0": signature_from_schema(
        "exact.box@1.0.0",
        {
            "type": "object",
            "properties": {
                "length": LENGTH,
                "width": LENGTH,
                "height": LENGTH,
                "centered": {"type": "boolean"},
            },
            "required": ["length", "width", "height"],
        },
    ),
    "exact.fillet@1.0.0": signature_from_schema(
        "exact.fillet@1.0.0",
        {
            "type": "object",
            "properties": {
                "target": {"x-amir-type": "Shape"},
                "edges": {"x-amir-type": "Selection"},
                "radius": {**LENGTH, "maximum": 50},
            },
            "required": ["target", "edges", "radius"],
        },
    ),
    "exact.rotate@1.0.0": signature_from_schema(
        "exact.rotate@1.0.0",
        {
            "type": "object",
            "properties": {
                "target": {"x-amir-type": "Shape"},
                "angle": {"type": "number", "x-amir-type": "Angle"},
            },
            "required": ["target", "angle"],
        },
    ),
}


def base_doc() -> AmirDocument:
    return AmirDocument.model_validate(
        {
            "parameters": [
                {
                    "id": "p_w",
                    "label": "width",
                    "type": "Length",
                    "value": 40,
                    "min": 1,
                    "max": 500,
                },
                {"id": "p_flag", "label": "flag", "type": "Bool", "value": True},
                {"id": "p_ang", "label": "tilt", "type": "Angle", "value": 30},
            ],
            "nodes": [
                {
                    "id": "n_box",
                    "label": "base",
                    "op": "exact.box@1.0.0",
                    "inputs": {
                        "length": {"param": "p_w"},
                        "width": {"value": 3, "unit": "cm"},
                        "height": {"value": 10},
                    },
                }
            ],
            "bodies": [{"id": "b_plate", "label": "plate", "tip": "n_box"}],
            "assertions": [
                {
                    "id": "a_vol",
                    "validatorRef": "validate.volumeRange@1.0.0",
                    "target": "b_plate",
                    "args": {"max": {"value": 1e6}},
                }
            ],
        }
    )


def rejected(doc: AmirDocument, ops: list[dict], signatures=SIGNATURES) -> PatchRejected:  # type: ignore[no-untyped-def]
    before = doc.to_wire()
    with pytest.raises(PatchRejected) as exc:
        apply_patch(doc, {"ops": ops}, signatures)
    assert doc.to_wire() == before, "a failed patch changes nothing"
    return exc.value


def test_base_document_is_valid() -> None:
    assert validate_document(base_doc(), SIGNATURES) == []


def test_set_value_converts_units_and_is_pure() -> None:
    doc = base_doc()
    new = apply_patch(
        doc,
        {"ops": [{"op": "parameter.setValue", "id": "p_w", "value": 2.5, "unit": "in"}]},
        SIGNATURES,
    )
    assert new.parameters[0].value == pytest.approx(63.5)
    assert doc.parameters[0].value == 40


def test_feature_appends_node_and_moves_tip_keeping_history() -> None:
    doc = base_doc()
    ops = feature_ops(
        doc,
        "b_plate",
        Node.model_validate(
            {
                "id": "n_fillet",
                "op": "exact.fillet@1.0.0",
                "inputs": {
                    "edges": {"body": "b_plate", "select": "|Z", "entity": "Edge"},
                    "radius": {"value": 2},
                },
            }
        ),
    )
    new = apply_patch(doc, {"ops": [op.to_wire() for op in ops]}, SIGNATURES)
    assert new.bodies[0].tip == "n_fillet"
    assert [n.id for n in new.nodes] == ["n_box", "n_fillet"]
    assert new.nodes[1].inputs["target"].node == "n_box"


@pytest.mark.parametrize(
    ("ops", "code", "pointer"),
    [
        (
            [{"op": "parameter.setValue", "id": "p_w", "value": 900}],
            "PARAMETER_OUT_OF_RANGE",
            "/parameters/0/value",
        ),
        (
            [{"op": "parameter.setValue", "id": "p_w", "value": 3, "unit": "deg"}],
            "UNIT_MISMATCH",
            "/ops/0",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {
                        "length": {"value": 2, "unit": "rad"},
                        "width": {"value": 1},
                        "height": {"value": 1},
                    },
                }
            ],
            "UNIT_MISMATCH",
            "/nodes/0/inputs/length",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {
                        "length": {"value": 2, "unit": "furlong"},
                        "width": {"value": 1},
                        "height": {"value": 1},
                    },
                }
            ],
            "UNIT_UNKNOWN",
            "/nodes/0/inputs/length",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {
                        "length": {"param": "p_ang"},
                        "width": {"value": 1},
                        "height": {"value": 1},
                    },
                }
            ],
            "UNIT_MISMATCH",
            "/nodes/0/inputs/length",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {
                        "length": {"param": "p_flag"},
                        "width": {"value": 1},
                        "height": {"value": 1},
                    },
                }
            ],
            "AMIR_TYPE_MISMATCH",
            "/nodes/0/inputs/length",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {
                        "length": {"param": "p_nowhere"},
                        "width": {"value": 1},
                        "height": {"value": 1},
                    },
                }
            ],
            "AMIR_DANGLING_REFERENCE",
            "/nodes/0",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {"length": {"value": 1}, "width": {"value": 1}},
                }
            ],
            "AMIR_INPUT_MISSING",
            "/nodes/0/inputs",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {
                        "length": {"value": 1},
                        "width": {"value": 1},
                        "height": {"value": 1},
                        "colour": {"value": "red"},
                    },
                }
            ],
            "AMIR_INPUT_UNKNOWN",
            "/nodes/0/inputs/colour",
        ),
        (
            [
                {
                    "op": "node.setInputs",
                    "id": "n_box",
                    "inputs": {
                        "length": {"value": -1},
                        "width": {"value": 1},
                        "height": {"value": 1},
                    },
                }
            ],
            "PARAMETER_OUT_OF_RANGE",
            "/nodes/0/inputs/length",
        ),
        (
            [{"op": "node.add", "node": {"id": "n_x", "op": "exact.draft@1.0.0"}}],
            "AMIR_OPERATION_UNKNOWN",
            "/nodes/1/op",
        ),
        (
            [
                {
                    "op": "node.add",
                    "node": {
                        "id": "n_r",
                        "op": "exact.rotate@1.0.0",
                        "inputs": {"target": {"node": "n_r2"}, "angle": {"value": 1}},
                    },
                },
                {
                    "op": "node.add",
                    "node": {
                        "id": "n_r2",
                        "op": "exact.rotate@1.0.0",
                        "inputs": {"target": {"node": "n_r"}, "angle": {"value": 1}},
                    },
                },
            ],
            "AMIR_CYCLE",
            "/nodes",
        ),
        (
            [
                {
                    "op": "node.add",
                    "node": {
                        "id": "n_r",
                        "op": "exact.rotate@1.0.0",
                        "inputs": {"target": {"value": 1}, "angle": {"value": 1}},
                    },
                }
            ],
            "AMIR_TYPE_MISMATCH",
            "/nodes/1/inputs/target",
        ),
        ([{"op": "parameter.remove", "id": "p_w"}], "PATCH_STILL_REFERENCED", "/ops/0"),
        ([{"op": "node.remove", "id": "n_box"}], "PATCH_STILL_REFERENCED", "/ops/0"),
        (
            [{"op": "body.add", "body": {"id": "n_box", "label": "x", "tip": "n_box"}}],
            "PATCH_DUPLICATE_ID",
            "/ops/0",
        ),
        ([{"op": "body.setTip", "id": "p_w", "tip": "n_box"}], "PATCH_ENTITY_UNKNOWN", "/ops/0"),
        (
            [{"op": "body.setTip", "id": "b_plate", "tip": "n_gone"}],
            "AMIR_DANGLING_REFERENCE",
            "/bodies/0",
        ),
        (
            [
                {
                    "op": "assertion.add",
                    "assertion": {"id": "a2", "validatorRef": "v.x@1.0.0", "target": "b_none"},
                }
            ],
            "AMIR_DANGLING_REFERENCE",
            "/assertions/1",
        ),
        ([{"op": "parameter.explode", "id": "p_w"}], "PATCH_INVALID", "/ops/0"),
        ([{"op": "label.set", "id": "b_plate", "label": None}], "PATCH_INVALID", "/ops/0"),
        ([{"op": "label.set", "id": "b_plate", "label": ""}], "PATCH_INVALID", "/ops/0"),
        ([{"op": "label.set", "id": "p_w", "label": ""}], "PATCH_INVALID", "/ops/0"),
        (
            [{"op": "parameter.setValue", "id": "p_w", "value": True, "unit": "cm"}],
            "AMIR_TYPE_MISMATCH",
            "/ops/0",
        ),
        (
            [{"op": "parameter.setValue", "id": "p_w", "value": "wide", "unit": "mm"}],
            "AMIR_TYPE_MISMATCH",
            "/ops/0",
        ),
        (
            [{"op": "parameter.setValue", "id": "p_flag", "value": False, "unit": "mm"}],
            "AMIR_TYPE_MISMATCH",
            "/ops/0",
        ),
        (
            [{"op": "parameter.setValue", "id": "p_w", "value": 1e308, "unit": "ft"}],
            "PARAMETER_OUT_OF_RANGE",
            "/ops/0",
        ),
        (
            [{"op": "parameter.setValue", "id": "p_w", "value": True}],
            "AMIR_TYPE_MISMATCH",
            "/parameters/0/value",
        ),
        *(
            (
                [{"op": "parameter.add", "parameter": {"id": "p_new", "label": "new", **kind}}],
                "AMIR_TYPE_MISMATCH",
                "/parameters/3/value",
            )
            for kind in (
                {"type": "String", "value": "steel", "unit": "mm"},
                {"type": "Bool", "value": True, "unit": "furlong"},
            )
        ),
        (
            [{"op": "parameter.setValue", "id": "p_w", "value": float("nan")}],
            "PATCH_INVALID",
            "/ops/0/parameter.setValue/value/bool",
        ),
    ],
)
def test_bad_patches_are_refused_with_stable_codes(ops, code, pointer) -> None:  # type: ignore[no-untyped-def]
    err = rejected(base_doc(), ops)
    assert err.code == code, err.diagnostics
    assert err.diagnostics[0].pointer == pointer


def test_remove_in_dependency_order_and_labels() -> None:
    doc = base_doc()
    new = apply_patch(
        doc,
        {
            "ops": [
                {"op": "assertion.remove", "id": "a_vol"},
                {"op": "body.remove", "id": "b_plate"},
                {"op": "node.remove", "id": "n_box"},
                {"op": "parameter.remove", "id": "p_w"},
                {"op": "label.set", "id": "p_flag", "label": "enabled"},
                {"op": "body.add", "body": {"id": "b2", "label": "empty", "tip": "n2"}},
                {
                    "op": "node.add",
                    "node": {
                        "id": "n2",
                        "op": "exact.box@1.0.0",
                        "inputs": {
                            "length": {"value": 1},
                            "width": {"value": 1},
                            "height": {"value": 1},
                        },
                    },
                },
                {"op": "body.setMaterial", "id": "b2", "material": "PLA"},
            ]
        },
        SIGNATURES,
    )
    assert [p.id for p in new.parameters] == ["p_flag", "p_ang"]
    assert new.parameters[0].label == "enabled"
    assert new.bodies[0].material == "PLA"


def test_all_problems_are_reported_together() -> None:
    err = rejected(
        base_doc(),
        [
            {
                "op": "node.setInputs",
                "id": "n_box",
                "inputs": {
                    "length": {"value": -1},
                    "width": {"param": "p_flag"},
                    "colour": {"value": 1},
                },
            }
        ],
    )
    codes = {d.code for d in err.diagnostics}
    assert codes == {
        "AMIR_INPUT_MISSING",
        "AMIR_INPUT_UNKNOWN",
        "PARAMETER_OUT_OF_RANGE",
        "AMIR_TYPE_MISMATCH",
    }


def test_without_signatures_structure_is_still_checked() -> None:
    """Callers without a catalog still get references, cycles and ranges checked."""
    rejected(base_doc(), [{"op": "body.setTip", "id": "b_plate", "tip": "n_gone"}], signatures=None)
    new = apply_patch(
        base_doc(),
        {"ops": [{"op": "node.add", "node": {"id": "n_any", "op": "vendor.thing@2.0.0"}}]},
    )
    assert new.nodes[-1].op == "vendor.thing@2.0.0"


def test_signatures_come_from_admitted_descriptors() -> None:
    from factory import manifest

    from aira_core.contracts.package import PackageManifest

    pm = PackageManifest.model_validate(manifest())
    sigs = node_signatures(capability_entries((d, pm.schemas) for d in pm.descriptors))
    assert set(sigs) == {"test.box@1.0.0", "test.fillet@1.0.0", "test.sketch@1.0.0"}
    box = sigs["test.box@1.0.0"]
    assert box.inputs["length"].required and box.inputs["length"].type == "Real"
    assert box.inputs["centered"].type == "Bool" and not box.inputs["centered"].required


def test_a_descriptor_without_its_input_schema_is_left_out_of_the_table() -> None:
    from factory import manifest

    from aira_core.contracts.package import PackageManifest

    pm = PackageManifest.model_validate(manifest())
    box = next(d for d in pm.descriptors if d.target[1] == "test.box@1.0.0")
    schemas = {k: v for k, v in pm.schemas.items() if k != box.inputs.schema_ref}
    table = capability_entries((d, schemas) for d in pm.descriptors)
    assert box.capability_id not in table
    assert "test.box@1.0.0" not in node_signatures(table)
    assert "test.fillet@1.0.0" in node_signatures(table)


def test_a_node_may_have_an_empty_label_but_not_a_malformed_document() -> None:
    # Node labels are optional and unconstrained: "" is a valid (if unhelpful) label.
    new = apply_patch(base_doc(), {"ops": [{"op": "label.set", "id": "n_box", "label": ""}]})
    assert new.nodes[0].label == ""


@pytest.mark.parametrize("reverse", [False, True])
def test_a_long_chain_of_nodes_needs_no_deep_recursion(reverse: bool) -> None:
    """1,500 nodes each fed by the one before, added in either order: no RecursionError
    (the cycle search is iterative), and a cycle at the end of the chain is still found."""
    n = 1500
    ops = [{"op": "node.add", "node": {"id": "n0", "op": "exact.box@1.0.0", "inputs": {}}}]
    chain = [
        {
            "op": "node.add",
            "node": {
                "id": f"n{i}",
                "op": "exact.rotate@1.0.0",
                "inputs": {"target": {"node": f"n{i - 1}"}, "angle": {"value": 1}},
            },
        }
        for i in range(1, n)
    ]
    ops += chain[::-1] if reverse else chain
    doc = apply_patch(AmirDocument(), {"ops": ops})
    assert len(doc.nodes) == n
    loop = {
        "op": "node.setInputs",
        "id": "n0",
        "inputs": {"target": {"node": f"n{n - 1}"}, "angle": {"value": 1}},
    }
    err = rejected(doc, [{**loop}])
    assert err.code == "AMIR_CYCLE"
    cycle = err.diagnostics[0].message.split(": ", 1)[1].split(" -> ")
    assert cycle[0] == cycle[-1] and len(cycle) == n + 1


@pytest.mark.parametrize("unit", [["mm"], {"mm": 1}, 3])
def test_a_unit_that_is_not_a_name_is_unknown(unit: object) -> None:
    from aira_core.contracts.amir import ParamType, dimension_of, to_base
    from aira_core.diagnostics import AiraError

    with pytest.raises(AiraError) as exc:
        to_base(5.0, unit, ParamType.LENGTH)  # type: ignore[arg-type]
    assert exc.value.code == "UNIT_UNKNOWN"
    assert dimension_of(unit) is None
