"""The AMIR model document and its vocabulary: parameters, nodes (operations), bodies and
assertions; the parameter and input types, units and dimensions, which parameter type may
feed which input, and the host's token meter. The host and the kernels import this one
module for all of these (never a copy).

A document is plain data and immutable. A feature applied to body ``X`` appends a node whose
input is ``X``'s current tip and moves the tip; the history stays in the document. Node
inputs are literals ``{value, unit?}``, parameter references ``{param}``, node references
``{node}`` or semantic references ``{body, select}`` (a selector on a body, resolved per
revision by the kernel). Lengths are in millimetres unless a unit says otherwise.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from aira_core.canonical import canonical_bytes
from aira_core.contracts.base import JsonValue, WireModel, json_value
from aira_core.contracts.capability import TARGET_REF_PATTERN, EntityKind
from aira_core.diagnostics import AiraError

AMIR_FORMAT = "aira.amir/1"
ENTITY_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"

EntityId = Annotated[str, Field(pattern=ENTITY_ID_PATTERN)]
OperationRef = Annotated[str, Field(pattern=TARGET_REF_PATTERN, examples=["exact.box@1.0.0"])]

AMIR_TYPE_MISMATCH = "AMIR_TYPE_MISMATCH"
UNIT_MISMATCH = "UNIT_MISMATCH"
UNIT_UNKNOWN = "UNIT_UNKNOWN"

# -- the four blocks ----------------------------------------------------------------------------


class Block(NamedTuple):
    """One top-level block of a document."""

    name: str
    """The document field, also the entity kind of an alias table: ``"bodies"``."""
    prefix: str
    """The alias prefix: ``b`` in ``b:plate``."""
    singular: str
    """One entity of the block, for messages; also the field of its ``*.add`` patch op."""
    labelled: bool
    """Whether an entity's label can become its alias (else it always gets a short form)."""


PARAMETERS = Block("parameters", "p", "parameter", labelled=True)
NODES = Block("nodes", "n", "node", labelled=True)
BODIES = Block("bodies", "b", "body", labelled=True)
ASSERTIONS = Block("assertions", "a", "assertion", labelled=False)

BLOCK_BY_NAME: dict[str, Block] = {b.name: b for b in (PARAMETERS, NODES, BODIES, ASSERTIONS)}
"""The blocks in document order, by name."""
BLOCK_BY_PREFIX: dict[str, Block] = {b.prefix: b for b in BLOCK_BY_NAME.values()}
BLOCKS: tuple[str, ...] = tuple(BLOCK_BY_NAME)
"""The block names in document order: ``parameters``, ``nodes``, ``bodies``, ``assertions``."""

# -- types --------------------------------------------------------------------------------------


# The type of a parameter, and of a scalar input. (A comment, not a docstring: a docstring
# would become the description of every schema that uses it.)
class ParamType(StrEnum):
    LENGTH = "Length"
    ANGLE = "Angle"
    COUNT = "Count"
    REAL = "Real"
    BOOL = "Bool"
    STRING = "String"


SHAPE = "Shape"
"""An input that takes a node's result ``{node}`` (a body's shape)."""
SELECTION = "Selection"
"""An input that takes a semantic reference ``{body, select, entity?}``."""
JSON = "Json"
"""A structured literal (lists, objects), checked by its own JSON Schema."""
INPUT_TYPES = frozenset({*(t.value for t in ParamType), SHAPE, SELECTION, JSON})
"""Every type an operation's input may declare."""
AMIR_TYPE_KEYWORD = "x-amir-type"
"""The JSON Schema keyword on an input's property that names its AMIR type."""
AMIR_ACCEPTS_KEYWORD = "x-amir-accepts"
"""The keyword on a Shape input's property that names the semantic type of the result it
takes (``ExactSolid``, ``Profile``)."""
AMIR_CONSUMES_KEYWORD = "x-amir-consumes"
"""The keyword on a Shape input's property that makes a plan step consume the body it names:
the body leaves the model in the same commit (a boolean's tool is absorbed into its target).
Its value is the name of the step's Bool input that keeps the body instead (``keepTool``);
that input is a directive to the plan, decided when the plan is checked, and is not stored in
the node."""
PROFILE = "Profile"
"""The output type of a sketch: a closed planar profile for a sweep, not a body."""
INTERMEDIATE_TYPES = frozenset({PROFILE})
"""Output types that are the input of a later step, not a body of the model (a sketch
profile): a step producing only these adds a node and no body."""


def param_fits(ptype: str, spec_type: str) -> str | None:
    """Why a parameter of type ``ptype`` cannot feed an input of ``spec_type``, as its code
    (``UNIT_MISMATCH`` between Length and Angle, else ``AMIR_TYPE_MISMATCH``), or None. The
    one rule: the host's checks and the kernels apply it alike."""
    if ptype == spec_type or (spec_type == ParamType.REAL.value and ptype == ParamType.COUNT.value):
        return None
    dims = {ParamType.LENGTH.value, ParamType.ANGLE.value}
    return UNIT_MISMATCH if {ptype, spec_type} <= dims else AMIR_TYPE_MISMATCH


# -- units --------------------------------------------------------------------------------------
# Lengths in millimetres and angles in degrees unless a unit says otherwise. A unit of another
# dimension is UNIT_MISMATCH; an unknown one UNIT_UNKNOWN.

UNITS: dict[ParamType, dict[str, float]] = {
    ParamType.LENGTH: {"mm": 1.0, "cm": 10.0, "m": 1000.0, "um": 0.001, "in": 25.4, "ft": 304.8},
    ParamType.ANGLE: {"deg": 1.0, "rad": 180.0 / math.pi, "turn": 360.0},
}
"""Factor to the base unit, per dimension."""
BASE_UNIT = {ParamType.LENGTH: "mm", ParamType.ANGLE: "deg"}


def dimension_of(unit: object) -> ParamType | None:
    """The dimension (Length, Angle) a unit name measures, or None for an unknown name."""
    if not isinstance(unit, str):
        return None
    return next((dim for dim, table in UNITS.items() if unit in table), None)


def to_base(value: float, unit: str | None, expected: ParamType) -> float:
    """``value`` in ``unit`` converted to the base unit of ``expected`` (mm, deg).

    No unit means the base unit. Dimensionless types (Count, Real) take no unit.
    """
    if unit is None or unit == BASE_UNIT.get(expected):
        return value
    if not isinstance(unit, str):
        raise AiraError(UNIT_UNKNOWN, f"a unit is a name such as 'mm', not {unit!r}")
    dim = dimension_of(unit)
    if dim is None:
        raise AiraError(
            UNIT_UNKNOWN,
            f"unknown unit {unit!r}; known: "
            + ", ".join(u for table in UNITS.values() for u in table),
        )
    if dim != expected:
        raise AiraError(
            UNIT_MISMATCH, f"a {expected.value} cannot be given in {unit!r}, a unit of {dim.value}"
        )
    return value * UNITS[dim][unit]


# -- the host's token meter ---------------------------------------------------------------------

HOST_BYTES_PER_TOKEN = 4
"""The host's meter: one token per 4 UTF-8 bytes; no provider tokenizer is consulted."""


def host_tokens(data: str | bytes) -> int:
    """Host-metered tokens of a text or a byte string: UTF-8 bytes / 4, rounded up.

    A string that cannot be encoded as UTF-8 (a lone surrogate) is metered with each such
    code point replaced by ``?``, so the meter never raises.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "replace")
    return tokens_of_bytes(len(data))


def tokens_of_bytes(n_bytes: int) -> int:
    """Host-metered tokens of ``n_bytes`` bytes: / 4, rounded up (what :func:`host_tokens`
    counts, for a size already known)."""
    return -(-n_bytes // HOST_BYTES_PER_TOKEN)


def value_tokens(value: Any) -> int:
    """Host tokens of a JSON value or wire model: its canonical JSON bytes, metered."""
    return host_tokens(canonical_bytes(value))


# -- the document -------------------------------------------------------------------------------


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


Measure = Annotated[float, Field(strict=True)]
"""A finite number given as a JSON number (not ``true``, not ``"3"``)."""


class SizeRange(WireModel):
    """An inclusive range of a size (mm, mm²): ``{"min"?, "max"?}``, at least one bound."""

    min: Measure | None = Field(default=None, ge=0)
    max: Measure | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _bounded(self) -> SizeRange:
        if self.min is None and self.max is None:
            raise PydanticCustomError("size_range", "a range needs min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise PydanticCustomError(
                "size_range", "min {min} is above max {max}", {"min": self.min, "max": self.max}
            )
        return self


def _size_kind(value: Any) -> str:
    return "range" if isinstance(value, dict | SizeRange) else "size"


Size = Annotated[
    Annotated[Annotated[Measure, Field(gt=0)], Tag("size")] | Annotated[SizeRange, Tag("range")],
    Discriminator(_size_kind),
]
"""One size (matched within the kernel's tolerance) or a range of sizes: a number is
checked as a number, an object as a range (one error, not one per branch)."""

Selector = Annotated[str, Field(min_length=1)]

SELECTION_FILTERS = ("select", "radius", "length", "area", "between", "nearest")
"""The fields of a selection that choose entities, in the order they are applied."""
_MEASURED_BY = {"radius": {"Edge", "Face"}, "length": {"Edge"}, "area": {"Face"}}
"""Which entity kinds each size filter measures (a vertex has no radius, a face no length)."""


class SemanticInput(WireModel):
    """Entities selected on a body's tip, e.g. ``{"body": "base", "select": ">Z",
    "entity": "Face"}``; resolved against each revision, never stored as kernel ids.

    Or on the shape a node made, ``{"node": "n:1a2b", "select": "|Z", …}``: what a plan
    lowers a selection on a body to when a later step takes that body out of the model (a
    rounded tool a cut consumes), so the feature keeps selecting on the same shape with no
    body to name. Exactly one of ``body`` and ``node``.

    Filters narrow the entities of kind ``entity`` one after another, in this order:
    ``select`` (a CadQuery string selector), ``radius`` (circular edges, cylindrical and
    spherical faces), ``length`` (edges), ``area`` (faces), each a size in mm (mm²) or an
    inclusive ``{min?, max?}`` range; ``between`` (two face selectors: the edges or vertices
    a face of each shares); ``nearest`` (a point [x, y, z] in mm: of what is left, the
    entities nearest to it). At least one filter; an absent one does not narrow. A selection
    of ``body`` and ``select`` only is what it always was (its wire form is unchanged)."""

    body: str | None = None
    node: str | None = None
    select: str | None = Field(default=None, min_length=1)
    entity: EntityKind = EntityKind.FACE
    radius: Size | None = None
    length: Size | None = None
    area: Size | None = None
    between: tuple[Selector, Selector] | None = None
    nearest: tuple[Measure, Measure, Measure] | None = None

    @model_validator(mode="after")
    def _filtered(self) -> SemanticInput:
        if (self.body is None) == (self.node is None):
            raise PydanticCustomError(
                "selection_source", "a selection names a body or a node: one of them"
            )
        if all(getattr(self, name) is None for name in SELECTION_FILTERS):
            raise PydanticCustomError(
                "selection_unfiltered",
                "a selection needs select or another filter (radius, length, area, between, "
                "nearest)",
            )
        entity = self.entity.value
        for name, kinds in _MEASURED_BY.items():
            if getattr(self, name) is not None and entity not in kinds:
                raise PydanticCustomError(
                    "selection_filter_entity",
                    "{name} does not measure a {entity}: it selects {kinds}",
                    {"name": name, "entity": entity, "kinds": " or ".join(sorted(kinds))},
                )
        if self.between is not None and entity not in ("Edge", "Vertex"):
            raise PydanticCustomError(
                "selection_filter_entity",
                "between selects the edges or vertices two faces share, not a {entity}",
                {"entity": entity},
            )
        return self


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
