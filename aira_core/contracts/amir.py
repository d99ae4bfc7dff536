"""The AMIR model document: parameters, nodes (operations), bodies and assertions.

A document is plain data and immutable. A feature applied to body ``X`` appends a node whose
input is ``X``'s current tip and moves the tip; the history stays in the document. Node
inputs are literals ``{value, unit?}``, parameter references ``{param}``, node references
``{node}`` or semantic references ``{body, select}`` (a selector on a body, resolved per
revision by the kernel). Lengths are in millimetres unless a unit says otherwise.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from aira_core.contracts.base import JsonValue, WireModel, json_value
from aira_core.contracts.capability import TARGET_REF_PATTERN, EntityKind

AMIR_FORMAT = "aira.amir/1"
ENTITY_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"

EntityId = Annotated[str, Field(pattern=ENTITY_ID_PATTERN)]
OperationRef = Annotated[str, Field(pattern=TARGET_REF_PATTERN, examples=["exact.box@1.0.0"])]


class ParamType(StrEnum):
    LENGTH = "Length"
    ANGLE = "Angle"
    COUNT = "Count"
    REAL = "Real"
    BOOL = "Bool"
    STRING = "String"


Scalar = Annotated[bool | int | float | str, AfterValidator(json_value)]


class Parameter(WireModel):
    id: EntityId
    label: str = Field(min_length=1)
    type: ParamType
    unit: str | None = None
    """For Length and Angle: the unit of ``value`` (default mm / deg)."""
    value: Scalar
    min: float | None = None
    max: float | None = None


class LiteralInput(WireModel):
    value: JsonValue
    unit: str | None = None


class ParamInput(WireModel):
    param: str


class NodeInput(WireModel):
    node: str


class SemanticInput(WireModel):
    """Entities selected on a body's tip, e.g. ``{"body": "base", "select": ">Z",
    "entity": "Face"}``; resolved against each revision, never stored as kernel ids."""

    body: str
    select: str = Field(min_length=1)
    entity: EntityKind = EntityKind.FACE


InputValue = LiteralInput | ParamInput | NodeInput | SemanticInput


class Node(WireModel):
    id: EntityId
    label: str | None = None
    op: OperationRef
    inputs: dict[str, InputValue] = Field(default_factory=dict)


class Body(WireModel):
    id: EntityId
    label: str = Field(min_length=1)
    tip: str
    material: str | None = None


class Assertion(WireModel):
    id: EntityId
    label: str | None = None
    validator_ref: OperationRef
    target: str
    """The body the validator checks."""
    args: dict[str, InputValue] = Field(default_factory=dict)


class AmirDocument(WireModel):
    format: Literal["aira.amir/1"] = AMIR_FORMAT
    # Tuples: a document is shared (the repository caches it per revision), so its entity
    # lists must not be appendable in place.
    parameters: tuple[Parameter, ...] = ()
    nodes: tuple[Node, ...] = ()
    bodies: tuple[Body, ...] = ()
    assertions: tuple[Assertion, ...] = ()

    @model_validator(mode="after")
    def _unique_ids(self) -> AmirDocument:
        seen: set[str] = set()
        for entity in (*self.parameters, *self.nodes, *self.bodies, *self.assertions):
            if entity.id in seen:
                raise PydanticCustomError(
                    "AMIR_DUPLICATE_ID",
                    "entity id {id} is used twice; ids are unique across the document",
                    {"id": entity.id},
                )
            seen.add(entity.id)
        return self

    def entity(self, entity_id: str) -> Parameter | Node | Body | Assertion | None:
        for entity in (*self.parameters, *self.nodes, *self.bodies, *self.assertions):
            if entity.id == entity_id:
                return entity
        return None


# -- patches ----------------------------------------------------------------------------------


class ParameterAdd(WireModel):
    op: Literal["parameter.add"]
    parameter: Parameter


class ParameterSetValue(WireModel):
    op: Literal["parameter.setValue"]
    id: str
    value: Scalar
    unit: str | None = None
    """The unit of ``value``; converted to the parameter's own unit."""


class ParameterRemove(WireModel):
    op: Literal["parameter.remove"]
    id: str


class NodeAdd(WireModel):
    op: Literal["node.add"]
    node: Node


class NodeSetInputs(WireModel):
    op: Literal["node.setInputs"]
    id: str
    inputs: dict[str, InputValue]


class NodeRemove(WireModel):
    op: Literal["node.remove"]
    id: str


class BodyAdd(WireModel):
    op: Literal["body.add"]
    body: Body


class BodyRemove(WireModel):
    op: Literal["body.remove"]
    id: str


class BodySetMaterial(WireModel):
    op: Literal["body.setMaterial"]
    id: str
    material: str | None = None


class BodySetTip(WireModel):
    op: Literal["body.setTip"]
    id: str
    tip: str


class AssertionAdd(WireModel):
    op: Literal["assertion.add"]
    assertion: Assertion


class AssertionRemove(WireModel):
    op: Literal["assertion.remove"]
    id: str


class LabelSet(WireModel):
    op: Literal["label.set"]
    id: str
    label: str | None = None


PatchOp = Annotated[
    ParameterAdd
    | ParameterSetValue
    | ParameterRemove
    | NodeAdd
    | NodeSetInputs
    | NodeRemove
    | BodyAdd
    | BodyRemove
    | BodySetMaterial
    | BodySetTip
    | AssertionAdd
    | AssertionRemove
    | LabelSet,
    Field(discriminator="op"),
]


class Patch(WireModel):
    """An ordered list of AMIR patch ops, applied all or nothing."""

    ops: list[PatchOp] = Field(min_length=1)
