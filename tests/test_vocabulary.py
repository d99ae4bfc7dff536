"""The AMIR vocabulary of aira_core.contracts.amir: the blocks, the types, which parameter
feeds which input, the token meter, and the one cycle finder."""

from __future__ import annotations

import pytest

from aira_core.canonical import canonical_bytes
from aira_core.contracts.amir import (
    AMIR_TYPE_MISMATCH,
    BLOCK_BY_NAME,
    BLOCK_BY_PREFIX,
    BLOCKS,
    HOST_BYTES_PER_TOKEN,
    INPUT_TYPES,
    UNIT_MISMATCH,
    AmirDocument,
    ParamType,
    Patch,
    host_tokens,
    param_fits,
    value_tokens,
)
from aira_core.model.patch import added_entity, find_cycle


def test_the_blocks_are_the_documents_fields_in_order() -> None:
    fields = [f for f in AmirDocument.model_fields if f != "format"]
    assert list(BLOCKS) == fields == [b.name for b in BLOCK_BY_NAME.values()]
    assert [b.prefix for b in BLOCK_BY_NAME.values()] == ["p", "n", "b", "a"]
    assert {p: b.name for p, b in BLOCK_BY_PREFIX.items()} == {
        "p": "parameters",
        "n": "nodes",
        "b": "bodies",
        "a": "assertions",
    }
    assert [b.name for b in BLOCK_BY_NAME.values() if not b.labelled] == ["assertions"]


def test_each_add_op_appends_its_blocks_singular_field() -> None:
    patch = Patch.model_validate(
        {
            "ops": [
                {
                    "op": "parameter.add",
                    "parameter": {"id": "w", "label": "w", "type": "Length", "value": 1},
                },
                {"op": "node.add", "node": {"id": "n1", "op": "exact.box@1.0.0"}},
                {"op": "body.add", "body": {"id": "b1", "label": "b", "tip": "n1"}},
                {
                    "op": "assertion.add",
                    "assertion": {"id": "a1", "validatorRef": "v.x@1.0.0", "target": "b1"},
                },
                {"op": "body.setTip", "id": "b1", "tip": "n1"},
                {"op": "label.set", "id": "n1", "label": "x"},
            ]
        }
    )
    found = [added_entity(op) for op in patch.ops]
    assert [(b.name, e.id) for b, e in found[:4]] == [  # type: ignore[misc]
        ("parameters", "w"),
        ("nodes", "n1"),
        ("bodies", "b1"),
        ("assertions", "a1"),
    ]
    assert found[4:] == [None, None]


def test_input_types_are_the_parameter_types_and_three_more() -> None:
    assert {*(t.value for t in ParamType), "Shape", "Selection", "Json"} == INPUT_TYPES


@pytest.mark.parametrize(
    ("ptype", "spec", "why"),
    [
        ("Length", "Length", None),
        ("Count", "Real", None),
        ("Real", "Count", AMIR_TYPE_MISMATCH),
        ("Length", "Angle", UNIT_MISMATCH),
        ("Angle", "Length", UNIT_MISMATCH),
        ("Length", "Real", AMIR_TYPE_MISMATCH),
        ("Bool", "String", AMIR_TYPE_MISMATCH),
    ],
)
def test_param_fits(ptype: str, spec: str, why: str | None) -> None:
    assert param_fits(ptype, spec) == why


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("abcd", 1), ("abcde", 2), ("é" * 2, 1), ("é" * 3, 2), ("\ud800", 1), (b"12345", 2)],
)
def test_host_tokens_meters_utf8_bytes(text: str | bytes, tokens: int) -> None:
    assert host_tokens(text) == tokens


@pytest.mark.parametrize(
    "value", [None, 0, "", "x" * 9, {"a": [1, 2.5, "é"]}, AmirDocument(), list(range(100))]
)
def test_value_tokens_meters_canonical_json_bytes(value: object) -> None:
    # What model/blocks.py metered before it shared the meter: canonical bytes / 4, up.
    assert value_tokens(value) == -(-len(canonical_bytes(value)) // HOST_BYTES_PER_TOKEN)
    assert value_tokens(value) == host_tokens(canonical_bytes(value))


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({}, None),
        ({"a": ["b"], "b": []}, None),
        ({"a": ["b", "c"], "b": ["c"], "c": []}, None),  # a diamond is no cycle
        ({"a": ["a"]}, ["a", "a"]),
        ({"a": ["b"], "b": ["c"], "c": ["a"]}, ["a", "b", "c", "a"]),
        ({"x": [], "a": ["b"], "b": ["a"]}, ["a", "b", "a"]),
        ({"a": ["ghost"], "ghost2": ["a"]}, None),  # dependencies that are not keys: ignored
    ],
)
def test_find_cycle(graph: dict[str, list[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_find_cycle_walks_a_long_chain_without_recursion() -> None:
    n = 50_000
    chain = {str(i): [str(i + 1)] for i in range(n)}
    chain[str(n)] = []
    assert find_cycle(chain) is None
    chain[str(n)] = ["0"]
    found = find_cycle(chain)
    assert found is not None and found[0] == found[-1] and len(found) == n + 2


def test_the_occt_plugin_uses_the_vocabulary() -> None:
    operations = pytest.importorskip("aira_kernel_occt.operations")
    from aira_core.contracts import amir

    assert (operations.SHAPE, operations.SELECTION, operations.JSON) == (
        amir.SHAPE,
        amir.SELECTION,
        amir.JSON,
    )
    assert {operations.LENGTH, operations.ANGLE, operations.COUNT} <= INPUT_TYPES
    declared = {i.type for op in operations.OPERATIONS for i in op.inputs}
    assert declared <= INPUT_TYPES
