"""Registered predicates: the only things ``applicability.predicates``, ``preconditions``
and ``postconditions`` may say (RFC-0002 §6.2: registered ids with typed arguments, never
free text). Each predicate declares a JSON Schema for its ``args``; arguments named
``input`` refer to a property of the capability's input schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_INPUT = {"type": "string", "minLength": 1}
_NUMBER_OR_INPUT = {
    "oneOf": [
        {"type": "number"},
        {
            "type": "object",
            "required": ["input"],
            "properties": {"input": _INPUT},
            "additionalProperties": False,
        },
    ]
}


@dataclass(frozen=True)
class PredicateSpec:
    id: str
    summary: str
    args_schema: dict[str, Any]


def _args(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


PREDICATES: dict[str, PredicateSpec] = {
    p.id: p
    for p in (
        PredicateSpec(
            "input.present", "the named input is bound", _args({"input": _INPUT}, ["input"])
        ),
        PredicateSpec(
            "input.positive", "the named numeric input is > 0", _args({"input": _INPUT}, ["input"])
        ),
        PredicateSpec(
            "input.greaterThanTolerance",
            "the named length is larger than the kernel's modelling tolerance",
            _args({"input": _INPUT}, ["input"]),
        ),
        PredicateSpec(
            "input.compare",
            "compare a numeric input with a number or another input",
            _args(
                {
                    "input": _INPUT,
                    "op": {"enum": ["lt", "le", "gt", "ge", "eq", "ne"]},
                    "value": _NUMBER_OR_INPUT,
                },
                ["input", "op", "value"],
            ),
        ),
        PredicateSpec(
            "selection.entityKind",
            "the selection holds entities of this kind",
            _args({"kind": {"enum": ["Body", "Face", "Edge", "Vertex"]}}, ["kind"]),
        ),
        PredicateSpec(
            "representation.is",
            "the target body has this representation",
            _args({"representation": {"type": "string", "minLength": 1}}, ["representation"]),
        ),
        PredicateSpec(
            "diagnostic.present",
            "the plan last refused carries a diagnostic of this code (on this step): what a "
            "repair's nextAction needs",
            _args(
                {"code": {"type": "string", "minLength": 1}, "step": {"type": "string"}},
                ["code"],
            ),
        ),
        PredicateSpec(
            "body.isSolid",
            "the target body is a closed, valid solid",
            _args({"input": _INPUT}, ["input"]),
        ),
    )
}


def referenced_inputs(args: dict[str, Any]) -> list[str]:
    """Input names a predicate's arguments refer to."""
    names = [args["input"]] if isinstance(args.get("input"), str) else []
    value = args.get("value")
    if isinstance(value, dict) and isinstance(value.get("input"), str):
        names.append(value["input"])
    return names
