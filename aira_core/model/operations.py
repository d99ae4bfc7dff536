"""Operation signatures: what each input of an operation accepts, derived from the
operation's canonical input schema (one source: the schema the capability package ships).

An input's AMIR type (:data:`~aira_core.contracts.amir.INPUT_TYPES`) comes from the
``x-amir-type`` annotation of its schema property, else from its JSON type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aira_core.contracts.amir import AMIR_TYPE_KEYWORD, INPUT_TYPES, JSON, ParamType
from aira_core.contracts.capability import CapabilityDescriptor, CapabilityKind

_FROM_JSON_TYPE = {
    "number": ParamType.REAL.value,
    "integer": ParamType.COUNT.value,
    "boolean": ParamType.BOOL.value,
    "string": ParamType.STRING.value,
}


@dataclass(frozen=True)
class InputSpec:
    type: str
    required: bool
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None

    def out_of_range(self, value: float) -> str | None:
        """Why ``value`` (in the base unit) is out of range, or None."""
        if self.minimum is not None and value < self.minimum:
            return f"below the minimum {self.minimum:g}"
        if self.exclusive_minimum is not None and value <= self.exclusive_minimum:
            return f"not above {self.exclusive_minimum:g}"
        if self.maximum is not None and value > self.maximum:
            return f"above the maximum {self.maximum:g}"
        if self.exclusive_maximum is not None and value >= self.exclusive_maximum:
            return f"not below {self.exclusive_maximum:g}"
        return None


@dataclass(frozen=True)
class OperationSignature:
    ref: str
    inputs: Mapping[str, InputSpec]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def signature_from_schema(ref: str, schema: Mapping[str, Any]) -> OperationSignature:
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    inputs = {}
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        declared = prop.get(AMIR_TYPE_KEYWORD)
        if isinstance(declared, str) and declared in INPUT_TYPES:
            kind = declared
        else:
            json_type = prop.get("type")
            kind = _FROM_JSON_TYPE.get(json_type, JSON) if isinstance(json_type, str) else JSON
        inputs[name] = InputSpec(
            type=kind,
            required=name in required,
            minimum=_num(prop.get("minimum")),
            maximum=_num(prop.get("maximum")),
            exclusive_minimum=_num(prop.get("exclusiveMinimum")),
            exclusive_maximum=_num(prop.get("exclusiveMaximum")),
        )
    return OperationSignature(ref, inputs)


def node_ref(d: CapabilityDescriptor) -> str | None:
    """The target a document node may name for ``d`` as its ``op``: an authoring operation's
    ``operationRef`` or an importer's ``ioRef``; None for everything else."""
    if d.kind is CapabilityKind.AUTHORING_OPERATION:
        return d.operation_ref
    if d.kind is CapabilityKind.IMPORTER:
        return d.io_ref
    return None
