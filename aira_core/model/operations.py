"""Operation signatures: what each input of an operation accepts, derived from the
operation's canonical input schema (one source: the schema the capability package ships).

An input's AMIR type comes from the ``x-amir-type`` annotation of its schema property
(``Length``, ``Angle``, ``Count``, ``Real``, ``Bool``, ``String``, ``Shape`` for a node's
result, ``Selection`` for a semantic reference), else from its JSON type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aira_core.contracts.amir import ParamType
from aira_core.contracts.capability import CapabilityDescriptor, CapabilityKind

SHAPE = "Shape"
SELECTION = "Selection"
JSON = "Json"
AMIR_TYPE_KEYWORD = "x-amir-type"

_FROM_JSON_TYPE = {
    "number": ParamType.REAL.value,
    "integer": ParamType.COUNT.value,
    "boolean": ParamType.BOOL.value,
    "string": ParamType.STRING.value,
}
KNOWN_TYPES = frozenset({*(t.value for t in ParamType), SHAPE, SELECTION, JSON})


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
        if isinstance(declared, str) and declared in KNOWN_TYPES:
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


def signatures_from_descriptors(
    items: Iterable[tuple[CapabilityDescriptor, Mapping[str, Mapping[str, Any]]]],
) -> dict[str, OperationSignature]:
    """Signatures of every target that can be a node of a document (an ``operationRef``, an
    importer's ``ioRef``) among descriptors (each with its package's schemas), e.g. from an
    admitted catalog."""
    out = {}
    for d, schemas in items:
        ref = node_ref(d)
        if ref is not None and d.inputs.schema_ref in schemas:
            out[ref] = signature_from_schema(ref, schemas[d.inputs.schema_ref])
    return out
