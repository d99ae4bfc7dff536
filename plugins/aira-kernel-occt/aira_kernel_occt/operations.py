"""The capabilities of the OpenCASCADE kernel, as data: the one source of their descriptors,
profiles and input schemas (``manifest.py`` generates the signed package from it, the kernel
dispatches on it). Nothing here imports CadQuery, so plugin discovery stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aira_core.contracts.amir import (
    AMIR_ACCEPTS_KEYWORD,
    AMIR_CONSUMES_KEYWORD,
    AMIR_TYPE_KEYWORD,
    JSON,
    PROFILE,
    SELECTION,
    SHAPE,
    ParamType,
)
from aira_core.extensions import EXPORT_ANGULAR_TOLERANCE_RANGE, EXPORT_TOLERANCE_RANGE
from aira_kernel_occt.fonts import MAX_CHARACTERS

# The AMIR types, by short names for the table below (plain strings, as they appear in the
# manifest); the vocabulary itself is aira_core.contracts.amir's.
LENGTH = ParamType.LENGTH.value
ANGLE = ParamType.ANGLE.value
COUNT = ParamType.COUNT.value
REAL = ParamType.REAL.value
BOOL = ParamType.BOOL.value
STRING = ParamType.STRING.value

_JSON_TYPE = {
    LENGTH: "number",
    ANGLE: "number",
    REAL: "number",
    COUNT: "integer",
    BOOL: "boolean",
    STRING: "string",
    SHAPE: "string",
}

MAX_COPIES = 200
"""The most copies one pattern makes: each is fused with the rest, and a larger count would
run past the worker's timeout (or its memory) instead of answering."""
PATH_MAX_TURNS = 100
"""The most turns a helix path makes: more would run past the worker's timeout."""
MAX_HOLES = 500
"""The most holes one hole feature drills."""

KERNEL_CODES = (
    "KERNEL_TIMEOUT",
    "KERNEL_WORKER_CRASHED",
    "KERNEL_UNAVAILABLE",
    "KERNEL_INTERNAL_ERROR",
    "KERNEL_OPERATION_FAILED",
    "KERNEL_OPERATION_UNKNOWN",
    "KERNEL_INPUT_INVALID",
    "KERNEL_REFERENCE_UNRESOLVED",
    "KERNEL_REFERENCE_CYCLE",
)
"""Codes any kernel call can return, whatever the operation (worker and input failures)."""

SELECTOR_GRAMMAR = (
    "CadQuery string selectors on the body's current shape: '>Z' (the face or edges farthest "
    "along +Z), '<X', '|Z' (edges parallel to Z), '#Z' (perpendicular), '%CIRCLE' / '%LINE' / "
    "'%PLANE' (by geometry type), combined with 'and', 'or', 'not' and brackets, e.g. "
    "'|Z and >X', '>Z or <Z', 'not %LINE'. Precedence: 'not' binds loosest and negates "
    "everything after it, so '|X and not >Y and not <Y' means '|X and not (>Y and not <Y)'; "
    "to negate one selector, bracket it: '|X and (not >Y) and (not <Y)'."
)


SELECTION_FILTERS = ("select", "radius", "length", "area", "between", "nearest")
"""The fields of a selection that choose entities, in the order they are applied."""


def _size_schema(description: str, unit: str) -> dict[str, Any]:
    return {
        "description": description,
        "anyOf": [
            {"type": "number", "exclusiveMinimum": 0, "description": f"one size ({unit})"},
            {
                "type": "object",
                "description": f"an inclusive range ({unit})",
                "properties": {
                    "min": {"type": "number", "minimum": 0},
                    "max": {"type": "number", "exclusiveMinimum": 0},
                },
                "minProperties": 1,
                "additionalProperties": False,
            },
        ],
    }


SELECTION_FILTER_SCHEMAS: dict[str, Any] = {
    "select": {
        "type": "string",
        "minLength": 1,
        "description": "a CadQuery string selector; absent: every entity of the kind",
    },
    "entity": {"enum": ["Face", "Edge", "Vertex"], "description": "what to select"},
    "radius": _size_schema(
        "circular edges (circles, arcs) and cylindrical or spherical faces of this radius "
        "(±1e-6 mm; a hole's radius is half its diameter), or within {min?, max?}",
        "mm",
    ),
    "length": _size_schema("edges this long (±1e-6 mm), or within {min?, max?}", "mm"),
    "area": _size_schema("faces of this area (±1e-6 mm²), or within {min?, max?}", "mm²"),
    "between": {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "minItems": 2,
        "maxItems": 2,
        "description": "two face selectors: the edges (or vertices) a face of the first and "
        "another face of the second share, e.g. ['>Z', '%CYLINDER'] for the rim of a bore",
    },
    "nearest": {
        "type": "array",
        "items": {"type": "number"},
        "minItems": 3,
        "maxItems": 3,
        "description": "a point [x, y, z] (mm): of what the other filters leave, the entity "
        "nearest to it (all that tie within 1e-6 mm)",
    },
}
"""The JSON Schemas of a selection's fields other than its body (those of selectEntities,
too)."""


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _without_description(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "description"}


SELECTION_GRAMMAR = (
    "A selection is {body, select?, entity?, radius?, length?, area?, between?, nearest?}: "
    "entity Face, Edge or Vertex (default: what the input names); each filter given narrows "
    "what the ones before it left, in this order: select, radius, length, area, between, "
    "nearest; at least one. "
    "E.g. {body, entity: 'Edge', select: '>Z', radius: 2.5} (the top rim of a 5 mm bore), "
    "{body, entity: 'Edge', between: ['>Z', '#Z']} (where the top meets the sides), "
    "{body, entity: 'Edge', select: '|Z', nearest: [20, 15, 0]}. " + SELECTOR_GRAMMAR + " On "
    "faces, '|Z' chooses those whose normal is along Z (top and bottom), '#Z' the sides."
)


_SELECTION_EMPTY_MODE = {
    "diagnostic": "SELECTION_EMPTY",
    "explanation": "the selection chose nothing; the message names the filter that left "
    "nothing and the radii, lengths or areas the entities before it have",
    "repair": "try the selection with query.selectEntities; give one of the listed sizes or "
    "a {min, max} range, or drop a filter",
}


@dataclass(frozen=True)
class Input:
    name: str
    type: str
    description: str
    required: bool = True
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    default: Any = None
    entity: str | None = None  # for selections: Face, Edge
    choices: tuple[str, ...] | None = None  # for strings: the allowed values
    json_schema: Mapping[str, Any] | None = None  # for Json inputs
    accepts: str = "ExactSolid"  # for shapes: the semantic type of the result it takes
    consumes: str | None = None  # for shapes: the Bool input that keeps the body it names

    def schema(self) -> dict[str, Any]:
        if self.type == JSON:
            return {
                **dict(self.json_schema or {}),
                AMIR_TYPE_KEYWORD: JSON,
                "description": self.description,
            }
        if self.type == SELECTION:
            return {
                "type": "object",
                AMIR_TYPE_KEYWORD: SELECTION,
                "description": self.description + " " + SELECTION_GRAMMAR,
                "properties": {
                    "body": {"type": "string", "description": "alias or id of the body"},
                    **SELECTION_FILTER_SCHEMAS,
                },
                "required": ["body"],
                "anyOf": [{"required": [name]} for name in SELECTION_FILTERS],
                "additionalProperties": False,
            }
        if self.type == SHAPE:
            # a body (alias or id), or the result of an earlier step of the same plan
            consumed = {AMIR_CONSUMES_KEYWORD: self.consumes} if self.consumes else {}
            return {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "properties": {"step": {"type": "string", "minLength": 1}},
                        "required": ["step"],
                        "additionalProperties": False,
                    },
                ],
                AMIR_TYPE_KEYWORD: SHAPE,
                AMIR_ACCEPTS_KEYWORD: self.accepts,
                **consumed,
                "description": self.description,
            }
        out: dict[str, Any] = {
            "type": _JSON_TYPE[self.type],
            AMIR_TYPE_KEYWORD: self.type,
            "description": self.description,
        }
        for key, value in (
            ("minimum", self.minimum),
            ("exclusiveMinimum", self.exclusive_minimum),
            ("maximum", self.maximum),
        ):
            if value is not None:
                out[key] = value
        if self.choices is not None:
            out["enum"] = list(self.choices)
        return out


@dataclass(frozen=True)
class Operation:
    """One capability and the operation, query, validator or exporter behind it."""

    capability: str
    ref: str
    target: str  # operationRef | patchTemplateRef | queryRef | validatorRef | ioRef
    kind: str
    taxonomy: str
    title: str
    summary: str
    aliases: tuple[str, ...]
    intents: tuple[str, ...]
    """Intent examples, English and Chinese."""
    counter: tuple[str, ...]
    inputs: tuple[Input, ...]
    examples: tuple[Mapping[str, Any], ...]
    outputs: tuple[str, ...] = ("ExactSolid",)
    effects: tuple[str, ...] = ("createsFeature", "additive")
    risk: str = "low"
    destructive: bool = False
    may_invalidate_refs: bool = False
    quality: tuple[str, ...] = ("preview", "authoritative")
    cost: str = "interactive"
    diagnostics: tuple[str, ...] = ()
    requires_representation: tuple[str, ...] = ()
    selection: Mapping[str, str] | None = None
    predicates: tuple[Mapping[str, Any], ...] = ()
    facets: tuple[str, ...] = ()
    failure_modes: tuple[Mapping[str, str], ...] = ()
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Every code the kernel can raise for this operation is declared in its descriptor
        # (conformance checks it): the operation's own, plus the kernel-wide ones.
        extra = list(KERNEL_CODES)
        if any(i.type == SELECTION for i in self.inputs):
            extra += ["SELECTION_EMPTY", "SELECTION_INVALID"]
        if any(i.type in (LENGTH, ANGLE, REAL, COUNT) for i in self.inputs):
            extra += ["UNIT_MISMATCH", "UNIT_UNKNOWN", "PARAMETER_OUT_OF_RANGE"]
        if any(i.type in (LENGTH, ANGLE, REAL, COUNT, BOOL, STRING) for i in self.inputs):
            extra += ["AMIR_TYPE_MISMATCH"]  # a parameter of another type fed to a scalar
        if self.target in ("queryRef", "validatorRef", "ioRef"):
            extra += ["QUERY_TARGET_UNKNOWN"]
        if self.target == "ioRef":
            extra += ["KERNEL_EXPORT_FAILED"]
        if self.target == "validatorRef":
            extra += ["ASSERTION_FAILED"]
        merged = list(dict.fromkeys([*self.diagnostics, *extra]))
        object.__setattr__(self, "diagnostics", tuple(merged))

    @property
    def name(self) -> str:
        return self.ref.split("@")[0]

    def input_schema(self) -> dict[str, Any]:
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"{self.ref} input",
            "type": "object",
            "properties": {i.name: i.schema() for i in self.inputs},
            "required": [i.name for i in self.inputs if i.required],
            "additionalProperties": False,
        }


def _length(name: str, description: str, **kw: Any) -> Input:
    kw.setdefault("exclusive_minimum", 0)
    return Input(name, LENGTH, description, **kw)


_TARGET = Input("target", SHAPE, "The body to change (alias such as 'b:plate', or its id).")


def _tool(description: str) -> Input:
    """A boolean's tool: consumed (it leaves the model with the step) unless keepTool."""
    return Input(
        "tool",
        SHAPE,
        description + " It is consumed: the tool body leaves the model in the same commit, "
        "so the part is the result alone (an export of all bodies writes only it), unless "
        "keepTool is true.",
        consumes="keepTool",
    )


_KEEP_TOOL = Input(
    "keepTool",
    BOOL,
    "Keep the tool body in the model after the boolean (default false: it is consumed). "
    "With true, both bodies stay and an export of all bodies writes both; export one with "
    "--body. Decided when the plan is checked: true or false, not a parameter.",
    required=False,
)
_CONSUMED = (
    {
        "diagnostic": "PLAN_BODY_STILL_REFERENCED",
        "explanation": "an assertion or a feature's selection still refers to the tool body, "
        "so it cannot be consumed",
        "repair": "give keepTool: true, or remove the assertion first",
    },
    {
        "diagnostic": "PLAN_CONSUMES_TARGET",
        "explanation": "the tool is the target body itself",
        "repair": "give another body as the tool",
    },
)
_PRIMITIVE = dict(
    taxonomy="authoring.exact.primitive",
    kind="authoring.operation",
    target="operationRef",
    diagnostics=("SOLID_INVALID",),
)

PLANES = ("XY", "YZ", "ZX", "XZ", "YX", "ZY")
"""Named planes (``cq.Plane.named``), Z up: 'XY' has normal +Z, 'XZ' -Y, 'YZ' +X. CadQuery's
view names (top, front …) are Y-up, so they are not offered."""

_POINT = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
_COPIES = Input(
    "count",
    COUNT,
    f"How many copies, the body included (2 to {MAX_COPIES}).",
    minimum=2,
    maximum=MAX_COPIES,
)
_PLANE_INPUTS = (
    Input(
        "plane",
        STRING,
        "The named plane the profile lies on (its normal is the extrusion direction): "
        "'XY' (normal +Z, the top/bottom plane), 'YZ' (+X), 'ZX' (+Y), 'XZ' (-Y), 'YX' (-Z), "
        "'ZY' (-X).",
        choices=PLANES,
    ),
    Input(
        "offset",
        LENGTH,
        "Distance (mm) the plane is moved along its normal (default 0).",
        required=False,
    ),
)
_CENTER = Input(
    "center",
    JSON,
    "Centre [x, y] (mm) in the plane's own coordinates (default [0, 0]).",
    required=False,
    json_schema=_POINT,
)
_ROTATION = Input(
    "rotation",
    ANGLE,
    "Turn (degrees, counter-clockwise about the plane's normal) about the profile's centre; "
    "lines loft sections up or sets a pattern at an angle.",
    required=False,
)
_TURNED = {"offset": 0.0, "center": [0, 0], "rotation": 0.0}
"""The defaults of a profile that takes a rotation."""

_SKETCH = dict(
    kind="authoring.operation",
    target="operationRef",
    taxonomy="authoring.sketch.profile",
    outputs=(PROFILE,),
    effects=("additive",),
    quality=("authoritative",),
    cost="instant",
    diagnostics=("PROFILE_NOT_CLOSED",),
    defaults={"offset": 0.0, "center": [0, 0]},
)
_ARC_ITEM = {
    "type": "object",
    "properties": {"to": _POINT, "through": _POINT},
    "required": ["to", "through"],
    "additionalProperties": False,
}
_TANGENT_ITEM = {
    "type": "object",
    "properties": {"to": _POINT, "tangent": {"const": True}},
    "required": ["to", "tangent"],
    "additionalProperties": False,
}
_OUTLINE_ITEM = {"anyOf": [_POINT, _ARC_ITEM, _TANGENT_ITEM]}
_POINT3 = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
_PATH_ITEM = {
    "anyOf": [
        _POINT3,
        {**_ARC_ITEM, "properties": {"to": _POINT3, "through": _POINT3}},
        {**_TANGENT_ITEM, "properties": {"to": _POINT3, "tangent": {"const": True}}},
    ]
}
_PROFILE = Input(
    "profile",
    SHAPE,
    'The closed profile to sweep: a sketch step of this plan ({"step": "<id>"}).',
    accepts=PROFILE,
)
_MESH_TOLERANCES = (
    Input(
        "tolerance",
        LENGTH,
        "The largest distance (mm) between the mesh and the exact surface, "
        f"{EXPORT_TOLERANCE_RANGE[0]:g} to {EXPORT_TOLERANCE_RANGE[1]:g} mm and at least "
        "1/30000 of the body's bounding-box diagonal; finer gives more triangles. Default: "
        "1/2000 of each body's bounding-box diagonal, within 0.001-1 mm.",
        required=False,
        minimum=EXPORT_TOLERANCE_RANGE[0],
        maximum=EXPORT_TOLERANCE_RANGE[1],
    ),
    Input(
        "angularTolerance",
        ANGLE,
        "The angular deflection (degrees) on a curved face, "
        f"{EXPORT_ANGULAR_TOLERANCE_RANGE[0]:g} to {EXPORT_ANGULAR_TOLERANCE_RANGE[1]:g}: a full "
        "circle gets about 720/angle segments; finer gives more triangles. Default: 0.3 rad "
        "(about 17 degrees), meshed again where a mesh check fails.",
        required=False,
        minimum=EXPORT_ANGULAR_TOLERANCE_RANGE[0],
        maximum=EXPORT_ANGULAR_TOLERANCE_RANGE[1],
    ),
)
"""The tessellation of a mesh exporter (degrees, as every AMIR angle; the kernel converts)."""

OPERATIONS: tuple[Operation, ...] = (
    # -- primitives ------------------------------------------------------------------------
    Operation(
        capability="cap:exact.box@1",
        ref="exact.box@1.0.0",
        **_PRIMITIVE,
        title="Box",
        summary="An exact rectangular box: length along X, width along Y, "
        "height along Z, centred on the origin unless centered is false.",
        aliases=(
            "cuboid",
            "block",
            "rectangular prism",
            "长方体",
            "方块",
            "slab",
            "brick",
            "solid block",
            "flat plate",
            "spacer block",
            "板材",
            "实心块",
            "立方体",
            "plate",
            "base plate",
            "rectangular bar",
            "lid",
            "底板",
            "平板",
            "方板",
        ),
        intents=(
            "make a 40 by 30 by 10 mm plate",
            "a 20 mm cube",
            "做一个40×30×10毫米的板",
            "创建一个边长20毫米的立方体",
            "I need a base plate 120 × 80 × 6 mm for the bracket",
            "model a 1 inch cube",
            "add a solid rectangular block 50 long, 25 wide and 12 high",
            "建一个长100宽60厚5毫米的长方体底板",
            "来一块2厘米厚、边长8厘米的方形板材",
            "需要一个50×50×50的实心方块",
        ),
        counter=(
            "a rectangle sketch on a plane",
            "a box-shaped triangle mesh",
            "the bounding box of the part",
            "画一个矩形草图",
            "hollow the box into a tray",
        ),
        inputs=(
            _length("length", "Size along X (mm)."),
            _length("width", "Size along Y (mm)."),
            _length("height", "Size along Z (mm)."),
            Input("centered", BOOL, "Centre on the origin (default true).", required=False),
        ),
        examples=(
            {"length": 40, "width": 30, "height": 10},
            {"length": 20, "width": 20, "height": 20, "centered": False},
        ),
        defaults={"centered": True},
        predicates=({"id": "input.positive", "args": {"input": "length"}},),
    ),
    Operation(
        capability="cap:exact.cylinder@1",
        ref="exact.cylinder@1.0.0",
        **_PRIMITIVE,
        title="Cylinder",
        summary="An exact cylinder (rod, shaft, peg, disc) standing on the XY plane along +Z, "
        "centred on the origin.",
        aliases=(
            "rod",
            "disc",
            "圆柱",
            "圆柱体",
            "shaft",
            "peg",
            "dowel pin",
            "standoff",
            "round post",
            "round bar",
            "圆棒",
            "圆轴",
            "圆盘",
            "tube",
            "pipe",
            "washer",
            "spacer",
            "pin",
            "sleeve",
            "bushing",
            "圆管",
            "垫圈",
            "套筒",
        ),
        intents=(
            "a cylinder of radius 5 and height 20",
            "做一个半径5毫米高20毫米的圆柱",
            "make a Ø12 shaft 60 mm long",
            "a 3 mm dowel pin, 10 long",
            "I need a round standoff, diameter 8, 15 mm tall",
            "做一根直径6毫米、长30毫米的轴",
            "创建一个直径50、厚5毫米的圆盘",
            "需要一个Ø10×25的圆柱销",
        ),
        counter=(
            "a hole through a plate",
            "a circle sketch",
            "钻一个直径10毫米的孔",
            "画一个半径5的圆",
        ),
        inputs=(_length("radius", "Radius (mm)."), _length("height", "Height along Z (mm).")),
        examples=({"radius": 5, "height": 20},),
    ),
    Operation(
        capability="cap:exact.sphere@1",
        ref="exact.sphere@1.0.0",
        **_PRIMITIVE,
        title="Sphere",
        summary="An exact sphere (ball) of the given radius, centred on the origin.",
        aliases=(
            "ball",
            "球",
            "球体",
            "spherical",
            "orb",
            "bead",
            "圆球",
            "球形",
            "实心球",
        ),
        intents=(
            "a sphere of radius 10 mm",
            "做一个半径10毫米的球",
            "create a ball 25 mm in diameter",
            "I need a spherical knob, radius 6 mm",
            "a ball joint head of Ø12",
            "生成一个直径20毫米的圆球",
            "来一个球形把手，半径8毫米",
        ),
        counter=(
            "round the edges of a box",
            "draw a circle of radius 10",
            "画一个圆",
        ),
        inputs=(_length("radius", "Radius (mm)."),),
        examples=({"radius": 10},),
    ),
    Operation(
        capability="cap:exact.cone@1",
        ref="exact.cone@1.0.0",
        **_PRIMITIVE,
        title="Cone",
        summary="An exact cone or truncated cone standing on the XY plane along +Z, centred "
        "on the origin: radius1 at the bottom (z 0), radius2 at the top (z height, may be 0).",
        aliases=(
            "frustum",
            "truncated cone",
            "taper",
            "圆锥",
            "圆台",
            "conical",
            "tapered cylinder",
            "spike",
            "pointed tip",
            "锥体",
            "锥形",
            "锥台",
            "截头圆锥",
        ),
        intents=(
            "a cone of base radius 10 and height 20",
            "a frustum from radius 10 down to 5, 15 mm tall",
            "做一个底面半径10毫米高20毫米的圆锥",
            "做一个下底半径10上底半径5的圆台",
            "make a conical tip 12 mm tall with a 4 mm base radius",
            "a tapered post from Ø20 at the bottom to Ø10 at the top, 30 high",
            "I need a pointed cone for a spike",
            "做一个高15毫米的锥形尖头",
            "生成一个上小下大的锥台，底径20顶径10",
            "需要一个截头圆锥",
        ),
        counter=(
            "a countersunk hole",
            "chamfer the edge of a cylinder",
            "打一个锥形沉头孔",
            "chamfer the top edge of a shaft",
        ),
        inputs=(
            _length("radius1", "Radius at the bottom, z 0 (mm)."),
            Input("radius2", LENGTH, "Radius at the top (mm); 0 for a pointed cone.", minimum=0),
            _length("height", "Height along Z (mm)."),
        ),
        examples=(
            {"radius1": 10, "radius2": 0, "height": 20},
            {"radius1": 10, "radius2": 5, "height": 15},
        ),
    ),
    Operation(
        capability="cap:exact.torus@1",
        ref="exact.torus@1.0.0",
        **_PRIMITIVE,
        title="Torus",
        summary="An exact torus (ring) centred on the origin, its axis along Z: the tube of "
        "minorRadius swept around a circle of majorRadius; minorRadius < majorRadius.",
        aliases=(
            "ring",
            "donut",
            "o-ring",
            "圆环",
            "环面",
            "toroid",
            "doughnut",
            "seal ring",
            "圆环体",
            "环形体",
            "密封圈",
            "O型圈",
        ),
        intents=(
            "a ring of radius 20 with a 3 mm tube",
            "an o-ring 40 mm across, 4 mm thick",
            "做一个大半径20毫米、截面半径3毫米的圆环",
            "make a toroid with major radius 25 and tube radius 4",
            "an O-ring seal, 30 mm centre diameter, 2.5 mm cord",
            "I need a doughnut shape for a handle ring",
            "做一个O型密封圈，中径30毫米，线径3毫米",
            "生成一个甜甜圈形状的环",
            "来一个圆环体，大半径40小半径5",
        ),
        counter=(
            "a washer (a flat ring cut from a plate)",
            "a circle sketch",
            "arrange six bosses in a ring around Z",
            "画一个圆形草图",
        ),
        inputs=(
            _length("majorRadius", "Radius of the tube's centre circle (mm)."),
            _length("minorRadius", "Radius of the tube (mm), less than majorRadius."),
        ),
        examples=({"majorRadius": 20, "minorRadius": 3},),
        failure_modes=(
            {
                "diagnostic": "PARAMETER_OUT_OF_RANGE",
                "explanation": "minorRadius is not less than majorRadius (a self-intersecting "
                "torus)",
                "repair": "make minorRadius smaller than majorRadius",
            },
        ),
    ),
    Operation(
        capability="cap:exact.wedge@1",
        ref="exact.wedge@1.0.0",
        **_PRIMITIVE,
        title="Wedge",
        summary="An exact right-angle wedge: the right triangle (0,0)-(length,0)-(0,height) in "
        "the XZ plane, extruded width along +Y; the right angle sits on the Y axis at the "
        "origin. Volume length·width·height/2.",
        aliases=(
            "ramp",
            "triangular prism",
            "gusset",
            "楔形",
            "楔块",
            "三角块",
            "sloped block",
            "incline",
            "triangular rib",
            "door stop",
            "斜坡",
            "斜块",
            "三角筋",
            "楔子",
        ),
        intents=(
            "a ramp 40 long, 20 wide and 10 high",
            "a triangular gusset 15 by 15, 5 mm thick",
            "做一个长40宽20高10毫米的楔块",
            "做一个直角三角形截面的加强筋",
            "I need a sloped block 30 long rising to 15 mm",
            "add a right-angle gusset 20 × 20 × 4 mm for the bracket corner",
            "a door-stop wedge 80 long, 30 wide, 20 high",
            "做一个斜坡，长50、宽20、高15毫米",
            "支架转角处加一个20×20、厚4毫米的三角筋",
            "来个直角三角形截面的楔子",
        ),
        counter=(
            "a chamfer on an edge",
            "a pyramid",
            "给边倒斜角",
            "bevel the edge of the block",
        ),
        inputs=(
            _length("length", "Size along X (mm), the triangle's base."),
            _length("width", "Extrusion along Y (mm)."),
            _length("height", "Size along Z (mm), the triangle's upright side."),
        ),
        examples=({"length": 40, "width": 20, "height": 10},),
    ),
    # -- profiles ------------------------------------------------------------------------------
    Operation(
        capability="cap:sketch.rectangle@1",
        ref="sketch.rectangle@1.0.0",
        **{**_SKETCH, "defaults": _TURNED},
        title="Rectangle profile",
        summary="A closed rectangular profile on a named plane (width along the plane's x, "
        "height along its y), to extrude or revolve; not a body by itself.",
        aliases=(
            "rectangle sketch",
            "rect",
            "矩形",
            "矩形草图",
            "square sketch",
            "rectangular outline",
            "rectangle profile",
            "2D rectangle",
            "长方形",
            "正方形草图",
            "方形轮廓",
        ),
        intents=(
            "sketch a 40 by 20 rectangle on the XY plane",
            "a rectangular profile 10 mm above the base to extrude",
            "在XY平面上画一个40×20的矩形",
            "画一个矩形轮廓用来拉伸",
            "draw a 25 × 25 square on the XY plane",
            "I need a rectangular outline 60 by 30 to pad into a plate",
            "sketch a rectangle centred at (10, 5) on the XZ plane",
            "在顶面上画一个50×30的长方形",
            "画一个20毫米见方的正方形草图",
            "在XZ平面画一个矩形截面，用于旋转",
        ),
        counter=(
            "a box",
            "a square plate 5 mm thick",
            "做一个长方体",
            "a solid rectangular block",
        ),
        inputs=(
            *_PLANE_INPUTS,
            _length("width", "Size along the plane's x (mm)."),
            _length("height", "Size along the plane's y (mm)."),
            _CENTER,
            _ROTATION,
        ),
        examples=(
            {"plane": "XY", "width": 40, "height": 20},
            {"plane": "XZ", "offset": 5, "width": 10, "height": 4, "center": [20, 2]},
            {"plane": "XY", "width": 30, "height": 10, "rotation": 45},
        ),
    ),
    Operation(
        capability="cap:sketch.circle@1",
        ref="sketch.circle@1.0.0",
        **_SKETCH,
        title="Circle profile",
        summary="A closed circular profile on a named plane, to extrude or revolve; not a body "
        "by itself.",
        aliases=(
            "circle sketch",
            "round profile",
            "圆",
            "圆形草图",
            "circular outline",
            "circle profile",
            "2D circle",
            "圆形轮廓",
            "圆截面",
            "画圆",
        ),
        intents=(
            "sketch a circle of radius 8 on the XY plane",
            "a round profile for a shaft to extrude 30 mm",
            "在XY平面画一个半径8毫米的圆",
            "画一个圆形轮廓",
            "draw a Ø20 circle on the XZ plane for a revolve",
            "I need a circular outline of radius 4 centred at (15, 0)",
            "sketch a circle to pad into a boss",
            "在YZ平面上画一个直径12毫米的圆",
            "画个半径3的圆，圆心在(15,0)",
            "先画一个圆形截面，稍后拉伸",
        ),
        counter=(
            "a cylinder",
            "a sphere",
            "drill a hole",
            "做一个圆柱体",
            "在板上钻一个圆孔",
        ),
        inputs=(*_PLANE_INPUTS, _length("radius", "Radius (mm)."), _CENTER),
        examples=({"plane": "XY", "radius": 8}, {"plane": "XZ", "radius": 3, "center": [15, 0]}),
    ),
    Operation(
        capability="cap:sketch.polygon@1",
        ref="sketch.polygon@1.0.0",
        **{**_SKETCH, "defaults": _TURNED},
        title="Regular polygon profile",
        summary="A closed regular polygon (e.g. a hexagon) on a named plane, its corners on a "
        "circle of the given diameter; to extrude or revolve, not a body by itself.",
        aliases=(
            "hexagon",
            "regular polygon",
            "nut profile",
            "多边形",
            "正六边形",
            "hex",
            "octagon",
            "pentagon",
            "n-gon",
            "正多边形",
            "六角形",
            "六边形",
            "正八边形",
        ),
        intents=(
            "a hexagon 10 mm across corners on the XY plane",
            "sketch an octagon of diameter 30",
            "画一个外接圆直径10毫米的正六边形",
            "在XY平面画一个正八边形",
            "draw a hex 13 mm across corners for a nut pocket",
            "a pentagon 40 mm across corners on the YZ plane",
            "I need a regular 12-sided polygon of diameter 50",
            "画一个外接圆直径20的正五边形",
            "在XY平面画个六角形，用来切螺母槽",
            "需要一个正十二边形轮廓",
        ),
        counter=(
            "an irregular outline through given points",
            "a circle",
            "画一条经过给定点的任意折线轮廓",
            "a triangle through three given points",
        ),
        inputs=(
            *_PLANE_INPUTS,
            Input("sides", COUNT, "Number of sides (3 to 360).", minimum=3, maximum=360),
            _length("diameter", "Diameter (mm) of the circle through the corners."),
            _CENTER,
            _ROTATION,
        ),
        examples=(
            {"plane": "XY", "sides": 6, "diameter": 10},
            {"plane": "XY", "sides": 6, "diameter": 10, "rotation": 30},
        ),
    ),
    Operation(
        capability="cap:sketch.slot@1",
        ref="sketch.slot@1.0.0",
        **{**_SKETCH, "defaults": {"offset": 0.0, "center": [0, 0], "angle": 0.0}},
        title="Slot profile",
        summary="A closed slot (obround: two half circles joined by straight sides) on a named "
        "plane; length end to end, width = the ends' diameter, turned by angle.",
        aliases=(
            "obround",
            "stadium",
            "oblong hole",
            "slot",
            "腰形",
            "长圆孔",
            "槽",
            "slotted hole",
            "elongated hole",
            "racetrack",
            "slot profile",
            "腰圆孔",
            "腰形孔",
            "跑道形",
            "长条孔",
        ),
        intents=(
            "a slot 20 long and 6 wide on the top plane",
            "sketch an obround 30 by 8 rotated 45 degrees",
            "画一个长20宽6的腰形槽轮廓",
            "在顶面画一个长圆孔轮廓",
            "sketch a racetrack slot 40 long, 10 wide",
            "I need an elongated slot outline at 30° for an adjustable mount",
            "draw a 25 × 6 oblong on XY centred at (10, 0)",
            "画一个长30宽8的腰圆孔轮廓",
            "在顶面画一个倾斜30度的长条孔草图",
            "需要一个跑道形槽轮廓，用于调节孔",
        ),
        counter=(
            "a rectangle",
            "cut a groove with a saw",
            "钻一个圆孔",
            "drill a round hole",
        ),
        inputs=(
            *_PLANE_INPUTS,
            _length("length", "Overall length end to end (mm), more than the width."),
            _length("width", "Width (mm): the diameter of the round ends."),
            Input("angle", ANGLE, "Rotation (degrees) from the plane's x axis.", required=False),
            _CENTER,
        ),
        examples=(
            {"plane": "XY", "length": 20, "width": 6},
            {"plane": "XY", "length": 30, "width": 8, "angle": 45},
        ),
    ),
    Operation(
        capability="cap:sketch.polyline@1",
        ref="sketch.polyline@1.0.0",
        **{
            **_SKETCH,
            "diagnostics": ("PROFILE_NOT_CLOSED", "PROFILE_SELF_INTERSECTING"),
            "defaults": {"offset": 0.0, "rotation": 0.0},
        },
        title="Polyline profile",
        summary="A closed outline on a named plane through points [x, y], each segment a "
        "straight line or an arc (through a point, or tangent to the segment before it); the "
        "last point repeats the first. To extrude, revolve, loft, sweep or pocket.",
        aliases=(
            "outline",
            "polygon through points",
            "closed polyline",
            "折线",
            "多段线轮廓",
            "custom outline",
            "closed polygon",
            "irregular polygon",
            "point outline",
            "outline with arcs",
            "lines and arcs",
            "自定义轮廓",
            "闭合轮廓",
            "多段线",
            "任意轮廓",
            "带圆弧的轮廓",
        ),
        intents=(
            "an L-shaped outline through these points to extrude",
            "sketch a closed triangle (0,0) (30,0) (0,20)",
            "画一条闭合折线作为拉伸轮廓",
            "用这些点画一个L形轮廓",
            "sketch a T-shaped cross-section from these coordinates",
            "I need a closed outline through (0,0), (40,0), (40,5), (5,5), (5,30), (0,30)",
            "draw a trapezoid profile from its four corners",
            "an outline of two straight sides joined by a tangent arc at the end",
            "a D-shaped profile: a straight edge and a half circle",
            "用坐标(0,0)(30,0)(30,10)(0,10)画一个闭合轮廓",
            "画一个梯形截面，后面要拉伸",
            "按给定点画一个不规则多边形草图",
            "画一个由直线和相切圆弧组成的闭合轮廓",
        ),
        counter=(
            "a regular hexagon",
            "an open path to sweep along",
            "画一个正六边形",
            "a rectangle 40 by 20",
        ),
        inputs=(
            *_PLANE_INPUTS,
            Input(
                "points",
                JSON,
                "The outline in the plane's coordinates (mm): a start point [x, y], then the "
                "end of each segment in order: [x, y] for a straight line, "
                '{"to": [x, y], "through": [x, y]} for an arc through a point, or '
                '{"to": [x, y], "tangent": true} for an arc leaving tangent to the segment '
                "before it. The last end repeats the start to close the outline.",
                json_schema={
                    "type": "array",
                    "minItems": 3,
                    "maxItems": 500,
                    "items": _OUTLINE_ITEM,
                },
            ),
            Input(
                "rotation",
                ANGLE,
                "Turn (degrees, counter-clockwise about the plane's normal) about the plane's "
                "origin [0, 0], where the points are measured from; lines loft sections up.",
                required=False,
            ),
        ),
        examples=(
            {
                "plane": "XY",
                "points": [[0, 0], [30, 0], [30, 10], [10, 10], [10, 25], [0, 25], [0, 0]],
            },
            {"plane": "XY", "points": [[-5, -5], [5, -5], [0, 8], [-5, -5]], "rotation": 30},
            {"plane": "XZ", "points": [[5, 0], [15, 0], [15, 10], [5, 0]]},
            {
                "plane": "XY",
                "points": [[0, 0], [20, 0], {"to": [20, 10], "through": [25, 5]}, [0, 10], [0, 0]],
            },
            {
                "plane": "XY",
                "points": [[0, 0], [20, 0], {"to": [20, 10], "tangent": True}, [0, 10], [0, 0]],
            },
        ),
        failure_modes=(
            {
                "diagnostic": "PROFILE_NOT_CLOSED",
                "explanation": "the last point does not repeat the first, so the outline is open",
                "repair": "append the first point at the end of points",
            },
            {
                "diagnostic": "PROFILE_SELF_INTERSECTING",
                "explanation": "two segments of the outline cross",
                "repair": "reorder the points so the outline goes round once without crossing",
            },
        ),
    ),
    Operation(
        capability="cap:sketch.roundedRectangle@1",
        ref="sketch.roundedRectangle@1.0.0",
        **{
            **_SKETCH,
            "defaults": _TURNED,
            "diagnostics": ("PROFILE_NOT_CLOSED", "PARAMETER_OUT_OF_RANGE"),
        },
        title="Rounded rectangle profile",
        summary="A closed rectangle with all four corners rounded to one radius, on a named "
        "plane (width along the plane's x, height along its y); to extrude, pocket or loft.",
        aliases=(
            "rounded rectangle",
            "rectangle with rounded corners",
            "filleted rectangle",
            "rounded square",
            "圆角矩形",
            "带圆角的矩形",
            "圆角方形",
            "rounded rect",
        ),
        intents=(
            "a 40 by 20 rectangle with 3 mm rounded corners on the XY plane",
            "sketch a rounded rectangle 60 × 30, corner radius 5, for a pocket",
            "在XY平面画一个40×20、圆角半径3的圆角矩形",
            "画一个带R5圆角的矩形轮廓用来挖槽",
            "a rounded-corner outline for a lid, 80 by 50 with R8",
            "需要一个圆角方形截面，边长30，圆角4",
        ),
        counter=(
            "fillet the edges of a box",
            "a slot with round ends",
            "给长方体倒圆角",
            "a sharp-cornered rectangle",
        ),
        inputs=(
            *_PLANE_INPUTS,
            _length("width", "Size along the plane's x (mm)."),
            _length("height", "Size along the plane's y (mm)."),
            _length("radius", "Corner radius (mm), less than half the smaller side."),
            _CENTER,
            _ROTATION,
        ),
        examples=(
            {"plane": "XY", "width": 40, "height": 20, "radius": 3},
            {"plane": "XY", "width": 40, "height": 20, "radius": 3, "rotation": 15},
            {"plane": "XY", "offset": 10, "width": 30, "height": 30, "radius": 4, "center": [5, 5]},
        ),
        failure_modes=(
            {
                "diagnostic": "PARAMETER_OUT_OF_RANGE",
                "explanation": "the corner radius is half the smaller side or more, so the "
                "straight sides vanish",
                "repair": "use a smaller radius, or cap:sketch.slot@1 for round ends",
            },
        ),
    ),
    Operation(
        capability="cap:sketch.offset@1",
        ref="sketch.offset@1.0.0",
        **{
            **_SKETCH,
            "defaults": {"side": "outward", "corners": "arc"},
            "diagnostics": ("OFFSET_COLLAPSED",),
        },
        title="Offset a profile",
        summary="A 2-D offset of a closed profile in its own plane: every point moved by "
        "distance outward or inward, convex corners rounded (arc) or extended until the sides "
        "meet (intersection). The result is a new profile; the original stays.",
        aliases=(
            "offset outline",
            "offset curve",
            "inset",
            "outset",
            "offset2D",
            "轮廓偏移",
            "偏移",
            "等距线",
            "向内偏移",
            "向外偏移",
            "wall outline",
        ),
        intents=(
            "offset the profile 2 mm inward for a pocket wall",
            "make an outline 3 mm larger all round than this sketch",
            "将轮廓向内偏移2毫米",
            "把草图向外等距偏移3毫米，尖角保持尖角",
            "an inset of the rectangle by 1.5 mm for a lip",
            "偏移这个截面得到壁厚1毫米的内轮廓",
        ),
        counter=(
            "move a body 5 mm",
            "shell a solid",
            "把零件平移5毫米",
            "offset the plane of a sketch",
        ),
        inputs=(
            Input(
                "profile",
                SHAPE,
                'The closed profile to offset: a sketch step of this plan ({"step": "<id>"}).',
                accepts=PROFILE,
            ),
            _length("distance", "How far (mm) each point moves."),
            Input(
                "side",
                STRING,
                "'outward' (default, a larger outline) or 'inward'.",
                required=False,
                choices=("outward", "inward"),
            ),
            Input(
                "corners",
                STRING,
                "Convex corners of an outward offset: 'arc' (default, rounded with radius "
                "distance) or 'intersection' (sharp, the sides extended).",
                required=False,
                choices=("arc", "intersection"),
            ),
        ),
        examples=(
            {"profile": {"step": "sketch"}, "distance": 2, "side": "inward"},
            {"profile": {"step": "sketch"}, "distance": 3, "corners": "intersection"},
        ),
        failure_modes=(
            {
                "diagnostic": "OFFSET_COLLAPSED",
                "explanation": "an inward offset larger than half the profile's width leaves "
                "nothing, or splits it into several outlines",
                "repair": "use a smaller distance",
            },
        ),
    ),
    Operation(
        capability="cap:sketch.subtract@1",
        ref="sketch.subtract@1.0.0",
        **{**_SKETCH, "defaults": {}, "diagnostics": ("PROFILE_SUBTRACT_FAILED",)},
        title="Profile with cut-outs",
        summary="A profile with other profiles on its plane taken out: a ring (an outline less "
        "its inward offset), a plate outline with round or slotted openings. Extrude or "
        "pocket it in one step; the inner loops become holes or walls.",
        aliases=(
            "profile with holes",
            "ring profile",
            "outline minus offset",
            "inner loop",
            "sketch with holes",
            "annulus",
            "带孔轮廓",
            "环形轮廓",
            "草图减去",
            "内轮廓挖空",
        ),
        intents=(
            "a rectangle less its 2 mm inward offset, to pocket a groove",
            "the plate outline with two round openings, to extrude in one step",
            "a washer profile: a circle less a smaller circle",
            "矩形轮廓减去向内偏移2毫米的轮廓，做一圈槽",
            "在外轮廓里挖掉两个圆孔再拉伸",
            "an outline with a slot cut out of it",
        ),
        counter=(
            "cut a body with another body",
            "drill a hole in the plate",
            "用一个实体切另一个实体",
            "offset the profile 2 mm",
        ),
        inputs=(
            Input(
                "profile",
                SHAPE,
                'The outer profile: a sketch step of this plan ({"step": "<id>"}).',
                accepts=PROFILE,
            ),
            *(
                Input(
                    name,
                    SHAPE,
                    f"{what} profile to take out, on the same plane (a sketch step).",
                    accepts=PROFILE,
                    required=name == "minus",
                )
                for name, what in (("minus", "A"), ("minus2", "Another"), ("minus3", "A third"))
            ),
        ),
        examples=(
            {"profile": {"step": "sketch"}, "minus": {"step": "hole"}},
            {"profile": {"step": "sketch"}, "minus": {"step": "hole"}, "minus2": {"step": "hole2"}},
        ),
        failure_modes=(
            {
                "diagnostic": "PROFILE_SUBTRACT_FAILED",
                "explanation": "a profile to take out is not on the outer profile's plane, "
                "misses it, covers it, or splits it into pieces",
                "repair": "sketch the cut-outs on the same plane, inside the outline",
            },
        ),
    ),
    Operation(
        capability="cap:sketch.faceOutline@1",
        ref="sketch.faceOutline@1.0.0",
        **{
            **_SKETCH,
            "defaults": {"outline": False},
            "diagnostics": ("PROFILE_FACE_INVALID",),
        },
        title="Face as a profile",
        summary="A planar face of a body as a profile, where it is: its outline and openings "
        "(or its outline alone), to offset, pocket into the body, extrude from it or loft "
        "from. The body is unchanged.",
        aliases=(
            "face outline",
            "project face",
            "use face as sketch",
            "convert face to sketch",
            "face profile",
            "面轮廓",
            "取面为草图",
            "用面做轮廓",
        ),
        intents=(
            "use the plate's upper face as a profile, offset 2 mm inward, for a lip",
            "take the outline of the lid's face and pocket a 1 mm recess inside it",
            "extrude the front face of the bracket outward by 5 mm as a new body",
            "以底板顶面的轮廓为草图，向内偏移2毫米做一圈止口",
            "用零件顶面的外形拉伸出一个新的凸台",
        ),
        counter=(
            "sketch a rectangle on the XY plane",
            "select the upper face",
            "在XY平面画一个矩形",
            "move the face 2 mm",
        ),
        inputs=(
            Input(
                "face",
                SELECTION,
                "The one planar face to take (such as '>Z' of a body).",
                entity="Face",
            ),
            Input(
                "outline",
                BOOL,
                "true: the face's outer outline only, without its openings (needed by offset "
                "and loft); false (default): as it is.",
                required=False,
            ),
        ),
        examples=(
            {"face": {"body": "b:plate", "select": ">Z"}},
            {"face": {"body": "b:plate", "select": ">Z"}, "outline": True},
        ),
        failure_modes=(
            {
                "diagnostic": "PROFILE_FACE_INVALID",
                "explanation": "the selection is not one planar face",
                "repair": "select one flat face (query.selectEntities lists them)",
            },
        ),
    ),
    Operation(
        capability="cap:sketch.text@1",
        ref="sketch.text@1.0.0",
        **{
            **_SKETCH,
            "defaults": {**_TURNED, "halign": "center", "valign": "center"},
            "diagnostics": ("TEXT_INVALID", "TEXT_GLYPH_MISSING", "PROFILE_FACE_INVALID"),
        },
        title="Text profile",
        summary="One line of text as a profile, a face per letter, in the bundled open font "
        "(DejaVu Sans, Latin): size is the capitals' height. On a planar face (its frame) or "
        "a named plane; pocket it to engrave, extrude and union it to emboss.",
        aliases=(
            "text",
            "engrave",
            "emboss",
            "lettering",
            "label",
            "part number",
            "inscription",
            "文字",
            "刻字",
            "浮雕文字",
            "字体",
            "铭牌",
        ),
        intents=(
            "engrave 'AIRA' 0.5 mm deep into the lid's upper face",
            "emboss the part number 'P-1042' 1 mm high on the front of the bracket",
            "put the text 'V2' 6 mm tall centred on the plate",
            "label the box 'LID' on its upper face",
            "在盖子顶面刻0.5毫米深的文字AIRA",
            "在支架正面做1毫米高的凸起文字",
        ),
        counter=(
            "draw a rectangle",
            "a note about the part",
            "画一个圆形草图",
            "name the body",
        ),
        inputs=(
            Input("text", STRING, f"The text: one line, at most {MAX_CHARACTERS} characters."),
            _length("size", "Height of a capital letter (mm); lower case is about 3/4 of it."),
            Input(
                "face",
                SELECTION,
                "The planar face to write on (its frame: see exact.hole's face); the text's "
                "normal is the face's outward one, so a pocket goes in and an extrude out. "
                "Give face or plane.",
                required=False,
                entity="Face",
            ),
            Input(
                "plane",
                STRING,
                "Or a named plane: 'XY' (normal +Z), 'YZ' (+X), 'ZX' (+Y), 'XZ' (-Y), 'YX' (-Z), "
                "'ZY' (-X).",
                required=False,
                choices=PLANES,
            ),
            Input(
                "offset",
                LENGTH,
                "Distance (mm) the named plane is moved along its normal (default 0).",
                required=False,
            ),
            _CENTER,
            _ROTATION,
            Input(
                "halign",
                STRING,
                "Where the centre point is along the line: 'center' (default), 'left' (the "
                "text starts there) or 'right'.",
                required=False,
                choices=("center", "left", "right"),
            ),
            Input(
                "valign",
                STRING,
                "Where the centre point is across it: 'center' (default: half the capitals' "
                "height), 'baseline' or 'top' (the capitals' top).",
                required=False,
                choices=("center", "baseline", "top"),
            ),
        ),
        examples=(
            {"text": "AIRA", "size": 5, "face": {"body": "b:plate", "select": ">Z"}},
            {"text": "V2", "size": 4, "plane": "XY", "offset": 10, "halign": "left"},
        ),
        failure_modes=(
            {
                "diagnostic": "TEXT_GLYPH_MISSING",
                "explanation": "a character is not in the bundled font (it covers Latin "
                "letters, digits and common signs; no CJK)",
                "repair": "write it with Latin letters and digits",
            },
            {
                "diagnostic": "TEXT_INVALID",
                "explanation": "the text is empty, longer than the limit or not one line",
                "repair": "give one line of visible characters",
            },
        ),
    ),
    # -- sweeps ------------------------------------------------------------------------------
    Operation(
        capability="cap:exact.extrude@1",
        ref="exact.extrude@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Extrude a profile",
        summary="An exact solid swept straight from a closed profile along its plane's normal "
        "by distance; direction 'reverse' goes the other way, 'symmetric' half each way.",
        aliases=(
            "extrusion",
            "pad",
            "prism",
            "拉伸",
            "挤出",
            "push-pull",
            "extruded boss",
            "linear sweep",
            "thicken sketch",
            "拉伸凸台",
            "拉伸成型",
            "拉出实体",
        ),
        intents=(
            "extrude the rectangle 10 mm",
            "pad the outline 5 mm up from the sketch plane",
            "把矩形轮廓拉伸10毫米",
            "将草图向两侧对称拉伸20毫米",
            "pull the circle profile 25 mm into a boss",
            "extrude the slot 3 mm in reverse",
            "make the outline a 4 mm thick solid",
            "把圆形草图拉伸25毫米做成凸台",
            "草图反向挤出3毫米",
            "把这个截面拉成8毫米厚的实体",
        ),
        counter=(
            "a box from three sizes",
            "cut a pocket into a body",
            "revolve the profile around Z",
            "把轮廓绕轴旋转一周",
        ),
        inputs=(
            _PROFILE,
            _length("distance", "Length of the extrusion (mm)."),
            Input(
                "direction",
                STRING,
                "'normal' (default, along the plane's normal), 'reverse' or 'symmetric'.",
                required=False,
                choices=("normal", "reverse", "symmetric"),
            ),
        ),
        examples=(
            {"profile": {"step": "sketch"}, "distance": 10},
            {"profile": {"step": "sketch"}, "distance": 6, "direction": "symmetric"},
        ),
        defaults={"direction": "normal"},
        diagnostics=("PROFILE_NOT_CLOSED", "SOLID_INVALID"),
    ),
    Operation(
        capability="cap:exact.revolve@1",
        ref="exact.revolve@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Revolve a profile",
        summary="An exact solid swept by turning a closed profile about the global X, Y or Z "
        "axis through the origin by angle degrees (default 360); the profile must not cross "
        "the axis.",
        aliases=(
            "revolution",
            "lathe",
            "回转体",
            "revolved boss",
            "lathe profile",
            "revolved solid",
            "axisymmetric solid",
            "旋转成型",
            "旋转体",
            "车削件",
            "回转",
            "stepped shaft",
            "pulley",
            "turned part",
            "阶梯轴",
            "带轮",
        ),
        intents=(
            "revolve the profile 360 degrees around Z into a ring",
            "turn the outline about the Z axis to make a pulley",
            "把轮廓绕Z轴旋转一周",
            "将截面绕Z轴旋转180度",
            "revolve this half-section 360° about Y to make a knob",
            "make a lathe-style solid by sweeping the profile around the Z axis",
            "sweep the section 90 degrees around X",
            "I need a pulley: revolve the groove profile about Z",
            "把半截面绕Y轴旋转360度做成旋钮",
            "用这个截面旋转生成一个带轮",
            "草图绕X轴回转90度",
        ),
        counter=(
            "rotate a body",
            "a polar pattern of copies",
            "把零件绕Z轴旋转90度",
            "turn the part 90 degrees",
        ),
        inputs=(
            _PROFILE,
            Input("axis", STRING, "The global axis through the origin.", choices=("X", "Y", "Z")),
            Input(
                "angle",
                ANGLE,
                "Sweep (degrees, default 360).",
                required=False,
                exclusive_minimum=0,
                maximum=360,
            ),
        ),
        examples=(
            {"profile": {"step": "section"}, "axis": "Z"},
            {"profile": {"step": "section"}, "axis": "Z", "angle": 90},
        ),
        defaults={"angle": 360.0},
        diagnostics=("PROFILE_NOT_CLOSED", "REVOLVE_CROSSES_AXIS", "SOLID_INVALID"),
        failure_modes=(
            {
                "diagnostic": "REVOLVE_CROSSES_AXIS",
                "explanation": "the profile lies on both sides of the axis, so the sweep "
                "would pass through itself",
                "repair": "move the profile to one side of the axis (it may touch it)",
            },
        ),
    ),
    Operation(
        capability="cap:exact.loft@1",
        ref="exact.loft@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Loft between profiles",
        summary="An exact solid that blends two to four closed profiles on different planes "
        "(parallel or not) in order: profile, via, via2, to; smooth through them, or ruled "
        "(straight between neighbours). A square can blend into a circle.",
        aliases=(
            "loft",
            "blend",
            "transition",
            "skin",
            "放样",
            "放样体",
            "过渡",
            "square to round",
            "blend two profiles",
            "ruled surface solid",
            "天圆地方",
            "变截面",
        ),
        intents=(
            "loft between a square and a circle on parallel planes",
            "blend a 20 mm square at the bottom into a Ø16 circle 30 mm above",
            "在两个平行平面上的正方形和圆之间放样",
            "做一个下方上圆的过渡体（天圆地方）",
            "a ruled transition from a rectangle to a smaller rectangle 10 mm up",
            "loft through three sections: a circle, a hexagon and a smaller circle",
            "把三个截面依次放样成一个实体",
            "a duct that changes from a rectangle to a circle",
        ),
        counter=(
            "extrude the profile 10 mm",
            "a cone between two circles on one axis",
            "把轮廓拉伸10毫米",
            "sweep a circle along a path",
        ),
        inputs=(
            Input(
                "profile",
                SHAPE,
                'The first section: a sketch step of this plan ({"step": "<id>"}).',
                accepts=PROFILE,
            ),
            Input(
                "to",
                SHAPE,
                "The last section, on another plane (a sketch step).",
                accepts=PROFILE,
            ),
            Input(
                "via",
                SHAPE,
                "An optional section between profile and to (a sketch step).",
                required=False,
                accepts=PROFILE,
            ),
            Input(
                "via2",
                SHAPE,
                "An optional section after via (or after profile) and before to (a sketch step).",
                required=False,
                accepts=PROFILE,
            ),
            Input(
                "ruled",
                BOOL,
                "True: straight between neighbouring sections; false (default): smooth "
                "through all of them.",
                required=False,
            ),
        ),
        examples=(
            {"profile": {"step": "sketch"}, "to": {"step": "top"}},
            {
                "profile": {"step": "sketch"},
                "via": {"step": "waist"},
                "to": {"step": "top"},
                "ruled": True,
            },
        ),
        defaults={"ruled": False},
        diagnostics=("LOFT_FAILED", "SOLID_INVALID"),
        failure_modes=(
            {
                "diagnostic": "LOFT_FAILED",
                "explanation": "two neighbouring sections lie on one plane, or OpenCASCADE "
                "cannot blend them into a valid solid (they twist or cross)",
                "repair": "sketch each section on its own plane (offset), in order along the "
                "loft; check that via2 is given only with via",
            },
        ),
    ),
    Operation(
        capability="cap:exact.sweep@1",
        ref="exact.sweep@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Sweep a profile along a path",
        summary="An exact solid made by moving a closed profile along a path in world "
        "coordinates (or the profile plane's own): lines and arcs (a polyline with arcs) or a "
        "helix about Z; the path starts on the profile's plane, across it.",
        aliases=(
            "sweep",
            "pipe",
            "tube along a path",
            "swept solid",
            "扫掠",
            "扫描",
            "沿路径扫掠",
            "管道",
            "helical sweep",
            "coil",
            "spring",
            "弹簧",
            "螺旋扫掠",
            "bent pipe",
        ),
        intents=(
            "sweep a Ø6 circle along a path that goes up 20 mm then 30 mm along X",
            "a pipe following an L-shaped path with a bend",
            "沿一条折线路径扫掠一个圆形截面",
            "做一根沿路径弯曲的管子",
            "a coil spring: sweep a small circle along a helix of pitch 5",
            "sweep the profile along an arc of radius 40",
            "用螺旋线扫掠一个圆截面做弹簧",
            "把矩形截面沿圆弧路径扫掠",
        ),
        counter=(
            "extrude straight up 10 mm",
            "revolve a profile about Z",
            "把截面绕轴旋转一周",
            "loft between two profiles",
        ),
        inputs=(
            Input(
                "profile",
                SHAPE,
                'The closed profile to sweep: a sketch step of this plan ({"step": "<id>"}), '
                "on a plane the path starts on.",
                accepts=PROFILE,
            ),
            Input(
                "path",
                JSON,
                'The path in world coordinates (mm): {"points": [start, end, …]} where start '
                'is [x, y, z] and each end is [x, y, z] (a line), {"to": P, "through": Q} (an '
                'arc through Q) or {"to": P, "tangent": true} (an arc tangent to the segment '
                'before it); or {"helix": {"radius", "pitch", "height", "leftHanded"?}} about '
                f"Z from (radius, 0, 0) (at most {PATH_MAX_TURNS} turns).",
                json_schema={
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "points": {
                                    "type": "array",
                                    "minItems": 2,
                                    "maxItems": 500,
                                    "items": _PATH_ITEM,
                                }
                            },
                            "required": ["points"],
                            "additionalProperties": False,
                        },
                        {
                            "type": "object",
                            "properties": {
                                "helix": {
                                    "type": "object",
                                    "properties": {
                                        "radius": {"type": "number", "exclusiveMinimum": 0},
                                        "pitch": {"type": "number", "exclusiveMinimum": 0},
                                        "height": {"type": "number", "exclusiveMinimum": 0},
                                        "leftHanded": {"type": "boolean"},
                                    },
                                    "required": ["radius", "pitch", "height"],
                                    "additionalProperties": False,
                                }
                            },
                            "required": ["helix"],
                            "additionalProperties": False,
                        },
                    ],
                },
            ),
            Input(
                "transition",
                STRING,
                "How the profile turns at a sharp corner of the path: 'right' (default, "
                "mitred) or 'round'.",
                required=False,
                choices=("right", "round"),
            ),
            Input(
                "frame",
                STRING,
                "What the path's coordinates are in: 'world' (default) or 'profile', the "
                "profile plane's own frame: x and y as a sketch's center on XY, XZ or YZ (a "
                "face's frame, as a hole's points), z along the profile's normal. So "
                "[[cx, cy, 0], [cx, cy, 20]] goes 20 mm straight out of a profile centred at "
                "[cx, cy], whatever its plane; a helix turns about that z.",
                required=False,
                choices=("world", "profile"),
            ),
        ),
        examples=(
            {"profile": {"step": "section"}, "path": {"points": [[10, 0, 5], [10, -20, 5]]}},
            {
                "profile": {"step": "section"},
                "path": {"points": [[10, 5, 0], [10, 5, 20]]},
                "frame": "profile",
            },
            {
                "profile": {"step": "section"},
                "path": {
                    "points": [[10, 0, 5], [10, -10, 5], {"to": [30, -30, 5], "tangent": True}]
                },
            },
            {
                "profile": {"step": "ring"},
                "path": {"helix": {"radius": 10, "pitch": 5, "height": 20}},
            },
        ),
        defaults={"transition": "right", "frame": "world"},
        diagnostics=("PATH_INVALID", "SWEEP_FAILED", "SOLID_INVALID"),
        failure_modes=(
            {
                "diagnostic": "PATH_INVALID",
                "explanation": "the path is malformed (coincident points, a straight 'arc', a "
                "tangent arc first), or it does not start on the profile's plane, across it",
                "repair": "start the path at a point of the profile's plane, heading along "
                "the profile's normal",
            },
            {
                "diagnostic": "SWEEP_FAILED",
                "explanation": "the profile is wider than a bend of the path, so the swept "
                "solid crosses itself, or OpenCASCADE cannot sweep it",
                "repair": "use a smaller profile or a larger bend radius",
            },
        ),
    ),
    Operation(
        capability="cap:exact.pocket@1",
        ref="exact.pocket@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Pocket a profile into a body",
        summary="Cut a closed profile into a body to a depth, from the profile's plane "
        "against its normal (into a face whose outward normal it shares: sketch on the "
        "face's plane); no depth cuts through all. The body keeps its id.",
        aliases=(
            "pocket",
            "cut extrude",
            "recess",
            "extruded cut",
            "挖槽",
            "型腔",
            "凹槽",
            "拉伸切除",
            "blind pocket",
            "through cut",
            "切除",
            "凹坑",
        ),
        intents=(
            "pocket a 40 × 20 rounded rectangle 5 mm deep into the top face",
            "cut the slot profile through the plate",
            "在顶面挖一个5毫米深的圆角矩形槽",
            "把轮廓拉伸切除穿透整个板",
            "recess a circle of radius 10, 2 mm deep, from the top",
            "cut a hexagonal nut pocket 4 mm deep into the base",
            "在底座上切一个4毫米深的六角槽",
        ),
        counter=(
            "drill a Ø5 hole",
            "cut one body with another",
            "钻一个5毫米的孔",
            "subtract the cylinder from the block",
        ),
        inputs=(
            _TARGET,
            Input(
                "profile",
                SHAPE,
                'The closed profile to cut: a sketch step of this plan ({"step": "<id>"}), on '
                "the plane of the face the pocket starts from.",
                accepts=PROFILE,
            ),
            _length("depth", "Depth (mm); omit to cut through the whole body.", required=False),
            Input(
                "direction",
                STRING,
                "'against' (default: against the profile's normal, into a face the sketch "
                "lies on) or 'along'.",
                required=False,
                choices=("against", "along"),
            ),
        ),
        examples=(
            {"target": "b:plate", "profile": {"step": "outline"}, "depth": 5},
            {"target": "b:plate", "profile": {"step": "outline"}},
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        defaults={"direction": "against"},
        diagnostics=("POCKET_MISSES_BODY", "BOOLEAN_EMPTY_RESULT", "SOLID_INVALID"),
        failure_modes=(
            {
                "diagnostic": "POCKET_MISSES_BODY",
                "explanation": "the profile, cut against its normal (or along it), does not "
                "reach the body",
                "repair": "sketch on the plane of the face to pocket (plane and offset), or "
                "give direction 'along'",
            },
        ),
    ),
    # -- features ----------------------------------------------------------------------------
    Operation(
        capability="cap:exact.hole@1",
        ref="exact.hole@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Hole",
        summary="Drill round holes (optionally counterbored or countersunk) into a body, "
        "perpendicular to a planar face, through all unless a depth is given, at points "
        "[x, y] (mm) in the face's frame ('>Z': X, Y; '<Z': X, -Y) or on the axes of selected "
        "circles or bores (`at`).",
        aliases=(
            "drill",
            "bore",
            "through hole",
            "counterbore",
            "countersink",
            "孔",
            "钻孔",
            "通孔",
            "沉头孔",
            "埋头孔",
            "clearance hole",
            "screw hole",
            "bolt hole",
            "blind hole",
            "过孔",
            "螺丝孔",
            "固定孔",
            "盲孔",
            "inner diameter",
            "centre bore",
            "内径",
        ),
        intents=(
            "drill four 5 mm through holes in the corners of the plate",
            "a 6 mm hole 8 deep with a 10 mm counterbore 3 deep",
            "在底板四角钻四个直径5毫米的通孔",
            "打一个带沉头的6毫米孔",
            "a countersunk 4 mm hole for a flat-head screw",
            "打一个4毫米的埋头孔",
            "add an M4 clearance hole at (10, 10)",
            "put two Ø3.2 screw holes 20 mm apart on the lid",
            "I need a blind hole 6 mm wide and 10 mm deep in the top face",
            "countersink four holes for M3 flat-head screws",
            "在盖板上打两个M3螺丝过孔",
            "钻一个φ8的盲孔，孔深10",
            "给M5内六角螺钉加沉孔",
        ),
        counter=(
            "cut an arbitrary body out of another",
            "a cylinder standing on a plate",
            "sketch an oblong slot outline",
            "画一个圆形草图",
        ),
        inputs=(
            _TARGET,
            Input(
                "face",
                SELECTION,
                "The one planar face the holes start from (usually '>Z'). Its frame: origin "
                "the global origin projected onto the face, normal the face's outward normal, "
                "x = global Z × normal (global +X on a face normal to Z), y = normal × x. So "
                "'>Z' x +X, y +Y; '<Z' x +X, y -Y (seen from below); '>X' x +Y, y +Z; '<X' "
                "x -Y, y +Z; '>Y' x -X, y +Z; '<Y' x +X, y +Z. query.selectEntities returns "
                "each planar face's frame {origin, xDir, yDir, normal} and its bounds in it.",
                entity="Face",
            ),
            Input(
                "points",
                JSON,
                f"Hole centres [x, y] (mm) in the face's frame (at most {MAX_HOLES}); may be "
                "left out when `at` gives the centres. A centre inside an existing hole of the "
                "face is on the face (a counterbore on that hole).",
                required=False,
                json_schema={
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_HOLES,
                    "items": {
                        "type": "array",
                        "items": {"type": "number"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                },
            ),
            Input(
                "at",
                SELECTION,
                "Optional: circular edges or cylindrical faces (bores) whose axes, "
                "perpendicular to the face, give hole centres where they meet it (each axis "
                "once), besides `points`; e.g. {body, radius: 2.5} selects the bores of 5 mm "
                "holes, to counterbore them.",
                required=False,
                entity="Face",
            ),
            _length("diameter", "Hole diameter (mm)."),
            _length("depth", "Hole depth (mm); absent: through all.", required=False),
            Input(
                "counterbore",
                JSON,
                "Optional counterbore: its diameter (mm, larger than the hole's) and depth (mm).",
                required=False,
                json_schema={
                    "type": "object",
                    "properties": {
                        "diameter": {"type": "number", "exclusiveMinimum": 0},
                        "depth": {"type": "number", "exclusiveMinimum": 0},
                    },
                    "required": ["diameter", "depth"],
                    "additionalProperties": False,
                },
            ),
            Input(
                "countersink",
                JSON,
                "Optional countersink (not with a counterbore): its diameter at the face (mm, "
                "larger than the hole's) and included angle (degrees, default 90).",
                required=False,
                json_schema={
                    "type": "object",
                    "properties": {
                        "diameter": {"type": "number", "exclusiveMinimum": 0},
                        "angle": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 180},
                    },
                    "required": ["diameter"],
                    "additionalProperties": False,
                },
            ),
        ),
        examples=(
            {
                "target": "b:plate",
                "face": {"body": "b:plate", "select": ">Z", "entity": "Face"},
                "points": [[-12, -8], [12, -8], [-12, 8], [12, 8]],
                "diameter": 5,
            },
            {
                "target": "b:plate",
                "face": {"body": "b:plate", "select": ">Z", "entity": "Face"},
                "points": [[0, 0]],
                "diameter": 4,
                "countersink": {"diameter": 8, "angle": 90},
            },
            {
                "target": "b:plate",
                "face": {"body": "b:plate", "select": ">Z", "entity": "Face"},
                "points": [[0, 0]],
                "diameter": 6,
                "depth": 8,
                "counterbore": {"diameter": 10, "depth": 3},
            },
            {
                "target": "b:plate",
                "face": {"body": "b:plate", "select": "<Z", "entity": "Face"},
                "points": [[10, -5]],
                "diameter": 3,
                "depth": 4,
            },
            {
                "target": "b:plate",
                "face": {"body": "b:plate", "select": ">Z", "entity": "Face"},
                "at": {"body": "b:pin", "entity": "Edge", "select": ">Z", "radius": 3},
                "diameter": 4,
            },
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=(
            "SELECTION_CARDINALITY_MISMATCH",
            "HOLE_FACE_NOT_PLANAR",
            "HOLE_OFF_FACE",
            "SOLID_INVALID",
        ),
        requires_representation=("ExactSolid",),
        selection={"entityKind": "Face", "cardinality": "one"},
        failure_modes=(
            {
                "diagnostic": "HOLE_OFF_FACE",
                "explanation": "a hole centre does not lie on the selected face; the message "
                "gives the centre as a world point, the face's frame and its bounds in it",
                "repair": "give points in the face's frame ('<Z' has y = -Y), inside its "
                "bounds; query.selectEntities shows each planar face's frame",
            },
            {
                "diagnostic": "SELECTION_CARDINALITY_MISMATCH",
                "explanation": "the face selector chose more than one face",
                "repair": "narrow the selector to one planar face, e.g. '>Z'",
            },
        ),
    ),
    Operation(
        capability="cap:exact.thread@1",
        ref="exact.thread@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="ISO metric thread",
        summary="An ISO metric thread on one cylindrical face, external (a shaft of the "
        "nominal diameter) or internal (a bore from the minor diameter to the tap drill): "
        "the ISO 68-1 profile cut as a helical groove from an open end; cosmetic: true only "
        "records it.",
        aliases=(
            "thread",
            "screw thread",
            "threaded hole",
            "tapped hole",
            "tap",
            "threaded rod",
            "bolt thread",
            "external thread",
            "internal thread",
            "metric thread",
            "螺纹",
            "外螺纹",
            "内螺纹",
            "螺纹孔",
            "攻丝",
            "公制螺纹",
        ),
        intents=(
            "thread the Ø8 shaft M8 for 12 mm from its end",
            "tap the 6.8 mm hole M8",
            "an M5 threaded hole through the plate",
            "cut an M10 external thread on the end of the pin",
            "add a fine M12x1.5 thread to the spindle",
            "a cosmetic M6 thread on the bore, for the drawing",
            "在直径8的轴端车12毫米长的M8外螺纹",
            "给6.8毫米的孔攻M8内螺纹",
            "在底板的孔里做M5螺纹",
        ),
        counter=(
            "drill an M4 clearance hole",
            "a coil spring along a helix",
            "钻一个M4过孔",
            "sweep a circle along a helix",
        ),
        inputs=(
            _TARGET,
            Input(
                "face",
                SELECTION,
                "The one cylindrical face to thread, all the way round: a shaft's side "
                "(external) or a bore's wall (internal), e.g. {body, select: '%CYLINDER', "
                "radius: 4}.",
                entity="Face",
            ),
            Input(
                "size",
                STRING,
                "ISO metric designation: 'M8' (ISO 261 coarse pitch, 1.25 mm) or 'M8x1' (the "
                "pitch given, mm).",
            ),
            _length(
                "length",
                "Thread length (mm) from the open end; absent: the whole face (half a pitch "
                "short of a closed end).",
                required=False,
            ),
            Input(
                "from",
                STRING,
                "The end it starts from: 'auto' (default: the open end, the upper if both "
                "are), 'upper' (the end farther along the axis: the top of a vertical shaft) "
                "or 'lower'. A closed end (a shoulder, a blind bore's bottom) cannot start it.",
                required=False,
                choices=("auto", "upper", "lower"),
            ),
            Input(
                "handedness",
                STRING,
                "'right' (default) or 'left'.",
                required=False,
                choices=("right", "left"),
            ),
            Input(
                "cosmetic",
                BOOL,
                "true: record the thread (size, length) in the model without cutting it, as "
                "drawings show threads; false (default): cut it.",
                required=False,
            ),
        ),
        examples=(
            {
                "target": "b:boss",
                "face": {"body": "b:boss", "select": "%CYLINDER"},
                "size": "M10",
                "length": 12,
            },
            {
                "target": "b:pin",
                "face": {"body": "b:pin", "select": "%CYLINDER"},
                "size": "M6",
                "length": 10,
                "from": "lower",
                "cosmetic": True,
            },
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        defaults={"from": "auto", "handedness": "right", "cosmetic": False},
        diagnostics=(
            "SELECTION_CARDINALITY_MISMATCH",
            "THREAD_FACE_INVALID",
            "THREAD_SIZE_INVALID",
            "THREAD_SIZE_MISMATCH",
            "THREAD_TOO_LONG",
            "THREAD_FAILED",
            "SOLID_INVALID",
        ),
        requires_representation=("ExactSolid",),
        selection={"entityKind": "Face", "cardinality": "one"},
        failure_modes=(
            {
                "diagnostic": "THREAD_SIZE_MISMATCH",
                "explanation": "the face's diameter does not fit the size: a shaft must be the "
                "nominal diameter, a bore the minor diameter up to the tap drill",
                "repair": "give the size that fits the face (expected holds the diameters "
                "this size takes), or make the shaft or bore that size first",
            },
            {
                "diagnostic": "THREAD_TOO_LONG",
                "explanation": "the thread is longer than the face (less half a pitch at a "
                "closed end) or makes more than 100 turns",
                "repair": "give a length up to expected.max, or cosmetic: true",
            },
            {
                "diagnostic": "THREAD_SIZE_INVALID",
                "explanation": "the size is no ISO metric designation, has no coarse pitch, or "
                "its pitch is outside 0.2 mm to a quarter of the diameter",
                "repair": "give 'M<diameter>' with an ISO 261 coarse size or 'M<diameter>x<pitch>'",
            },
            {
                "diagnostic": "THREAD_FAILED",
                "explanation": "OpenCASCADE's cut did not remove the profile's closed-form "
                "volume, at three starting angles: the material around the face is not solid "
                "to the thread's depth (a thin wall, a hollow shaft), or the boolean failed",
                "repair": "thicken the wall around the face, or use cosmetic: true",
            },
            {
                "diagnostic": "THREAD_FACE_INVALID",
                "explanation": "the face is not a whole cylinder, or the end the thread "
                "starts from is closed",
                "repair": "select a shaft's side or a bore's wall; start from its open end "
                "(from: 'upper' or 'lower')",
            },
        ),
    ),
    Operation(
        capability="cap:exact.shell@1",
        ref="exact.shell@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Shell",
        summary="Hollow a solid inward, leaving walls of the given thickness and removing the "
        "selected faces (the openings), e.g. a box opened at '>Z' becomes a tray.",
        aliases=(
            "hollow",
            "tray",
            "enclosure walls",
            "抽壳",
            "挖空",
            "壳体",
            "hollow out",
            "shell out",
            "hollow body",
            "open box",
            "掏空",
            "空心",
            "薄壁壳",
            "抽壳特征",
        ),
        intents=(
            "hollow the box into a tray with 2 mm walls, open at the top",
            "shell the enclosure 1.5 mm thick, removing the bottom face",
            "把盒子抽壳成2毫米壁厚、顶面开口的托盘",
            "将外壳抽壳1.5毫米，去掉底面",
            "hollow out the housing leaving 2 mm walls and an open bottom",
            "make the cube a hollow cup, 1 mm wall, open on top",
            "shell the part to 1.2 mm for 3D printing, removing the top face",
            "I need an open box with 3 mm thick sides from this block",
            "把外壳掏空，壁厚2毫米，底面开口",
            "将方块做成顶部开口、壁厚1.5毫米的空心盒",
            "抽壳3毫米，去掉顶面",
        ),
        counter=(
            "drill a hole",
            "cut one body out of another",
            "check the wall thickness",
            "检查壁厚不小于2毫米",
        ),
        inputs=(
            _TARGET,
            Input("faces", SELECTION, "The faces to remove (the openings).", entity="Face"),
            _length("thickness", "Wall thickness (mm), measured inward."),
        ),
        examples=(
            {
                "target": "b:plate",
                "faces": {"body": "b:plate", "select": ">Z", "entity": "Face"},
                "thickness": 2,
            },
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        cost="interactive-to-heavy",
        diagnostics=("SHELL_FAILED", "SELECTION_EMPTY", "SOLID_INVALID"),
        requires_representation=("ExactSolid",),
        selection={"entityKind": "Face", "cardinality": "oneOrMore"},
        failure_modes=(
            {
                "diagnostic": "SHELL_FAILED",
                "explanation": "OpenCASCADE cannot offset the walls, usually because the "
                "thickness is at least half the body's smallest inner size",
                "repair": "reduce the thickness, or shell before adding small features",
            },
        ),
    ),
    # -- finishing ---------------------------------------------------------------------------
    Operation(
        capability="cap:exact.fillet@1",
        ref="exact.fillet@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.finishing",
        title="Fillet edges",
        summary="Round (fillet) the selected edges of an exact solid with a constant radius, "
        "e.g. R2 on the vertical edges.",
        aliases=(
            "round edges",
            "blend",
            "圆角",
            "倒圆角",
            "round over",
            "radius the edges",
            "rounded corners",
            "soften edges",
            "R角",
            "倒R",
            "倒圆",
            "圆弧过渡",
        ),
        intents=(
            "round the four vertical edges by 2 mm",
            "把四条竖直边倒2毫米圆角",
            "fillet the outer edges R1",
            "round over the top edges of the lid with a 3 mm radius",
            "I want smooth rounded corners on the enclosure, 5 mm radius",
            "ease the sharp vertical edges with R0.5",
            "给盒子四周的竖边倒R5圆角",
            "外壳边缘做1毫米的圆弧过渡",
            "所有棱边倒圆，半径0.5",
        ),
        counter=(
            "smooth a triangle mesh",
            "a chamfer with a flat bevel",
            "chamfer the edges 1 mm at 45°",
            "把边倒C1斜角",
        ),
        inputs=(
            _TARGET,
            Input("edges", SELECTION, "The edges to round.", entity="Edge"),
            _length("radius", "Fillet radius (mm)."),
        ),
        examples=(
            {
                "target": "b:plate",
                "edges": {"body": "b:plate", "select": "|Z", "entity": "Edge"},
                "radius": 2,
            },
            {
                "target": "b:plate",
                "edges": {"body": "b:plate", "entity": "Edge", "between": [">Z", "#Z"]},
                "radius": 1,
            },
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        cost="interactive-to-heavy",
        diagnostics=("FILLET_RADIUS_TOO_LARGE", "SELECTION_EMPTY", "SOLID_INVALID"),
        requires_representation=("ExactSolid",),
        selection={"entityKind": "Edge", "cardinality": "oneOrMore"},
        predicates=({"id": "input.greaterThanTolerance", "args": {"input": "radius"}},),
        failure_modes=(
            {
                "diagnostic": "FILLET_RADIUS_TOO_LARGE",
                "explanation": "the radius does not fit the faces next to an edge",
                "repair": "take a little less than expected.maxRadius (mm), the largest radius "
                "the kernel found to fit these edges (actual.radius: the one refused); no "
                "expected value when no radius fits",
            },
            _SELECTION_EMPTY_MODE,
        ),
    ),
    Operation(
        capability="cap:exact.chamfer@1",
        ref="exact.chamfer@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.finishing",
        title="Chamfer edges",
        summary="Bevel (chamfer, e.g. C1) the selected edges of an exact solid by an equal "
        "distance on both faces.",
        aliases=(
            "bevel",
            "倒角",
            "斜角",
            "break edges",
            "edge break",
            "C-chamfer",
            "bevelled edge",
            "倒C角",
            "倒斜角",
            "C角",
            "倒钝",
        ),
        intents=(
            "chamfer the top edges by 1 mm",
            "把顶面边缘倒1毫米的角",
            "break all sharp edges with a 0.5 mm chamfer",
            "add a C1 chamfer on the bottom edges of the shaft",
            "bevel the top outer edges 2 mm at 45 degrees",
            "put a lead-in chamfer on the hole edge",
            "把底边倒C0.5的角",
            "顶面外轮廓倒2毫米斜角",
            "所有锐边倒钝0.3毫米",
        ),
        counter=(
            "round edges with a radius",
            "把边倒R2圆角",
            "fillet the edges with a 3 mm radius",
        ),
        inputs=(
            _TARGET,
            Input("edges", SELECTION, "The edges to bevel.", entity="Edge"),
            _length("length", "Chamfer distance (mm)."),
        ),
        examples=(
            {
                "target": "b:plate",
                "edges": {"body": "b:plate", "select": ">Z", "entity": "Edge"},
                "length": 1,
            },
            {
                "target": "b:boss",
                "edges": {"body": "b:boss", "entity": "Edge", "select": ">Z", "radius": 5},
                "length": 1,
            },
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        cost="interactive-to-heavy",
        diagnostics=("CHAMFER_TOO_LARGE", "SELECTION_EMPTY", "SOLID_INVALID"),
        requires_representation=("ExactSolid",),
        selection={"entityKind": "Edge", "cardinality": "oneOrMore"},
        failure_modes=(
            {
                "diagnostic": "CHAMFER_TOO_LARGE",
                "explanation": "the distance does not fit the faces next to an edge",
                "repair": "take a little less than expected.maxLength (mm), the largest length "
                "the kernel found to fit these edges (actual.length: the one refused); no "
                "expected value when no length fits",
            },
        ),
    ),
    # -- booleans ----------------------------------------------------------------------------
    Operation(
        capability="cap:exact.union@1",
        ref="exact.union@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.boolean",
        title="Union",
        summary="Fuse (merge, boolean union) the tool body into the target body.",
        aliases=(
            "fuse",
            "join",
            "合并",
            "并集",
            "merge",
            "combine",
            "weld together",
            "boolean union",
            "unite",
            "合为一体",
            "融合",
            "布尔并",
        ),
        intents=(
            "join the boss onto the plate",
            "把凸台和底板合并",
            "fuse the rib onto the base plate",
            "combine the handle with the lid",
            "weld the boss onto the top of the housing",
            "fuse these two parts together",
            "把加强筋和底座合为一体",
            "将把手与盖子融合成一个实体",
            "凸台与底板做布尔并",
        ),
        counter=(
            "place two bodies side by side without merging",
            "keep only the overlap of two bodies",
            "从底板上减去圆柱",
        ),
        inputs=(_TARGET, _tool("The body fused into the target."), _KEEP_TOOL),
        examples=(
            {"target": "b:plate", "tool": "b:boss"},
            {"target": "b:plate", "tool": "b:boss", "keepTool": True},
        ),
        defaults={"keepTool": False},
        failure_modes=_CONSUMED,
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=(
            "BOOLEAN_EMPTY_RESULT",
            "SOLID_INVALID",
            "PLAN_BODY_STILL_REFERENCED",
            "PLAN_CONSUMES_TARGET",
        ),
        requires_representation=("ExactSolid",),
    ),
    Operation(
        capability="cap:exact.cut@1",
        ref="exact.cut@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.boolean",
        title="Cut",
        summary="Subtract (boolean difference) the tool body from the target body: the "
        "material they share is removed, e.g. to cut a pocket or an opening.",
        aliases=(
            "subtract",
            "difference",
            "减去",
            "差集",
            "切除",
            "boolean subtract",
            "carve out",
            "pocket",
            "cutout",
            "扣除",
            "挖去",
            "布尔减",
        ),
        intents=(
            "cut the cylinder out of the plate",
            "从板上减去圆柱",
            "remove material from the block where the cylinder is",
            "use the pin as a tool to cut a pocket in the plate",
            "subtract the box from the enclosure to make an opening",
            "carve the handle body out of the housing",
            "用圆柱体从底座上挖掉一块",
            "把凸台从外壳中扣除",
            "底板减去销钉，做出定位孔",
        ),
        counter=(
            "drill a standard hole with a counterbore",
            "keep only where two bodies overlap",
            "在板上钻一个直径6的通孔",
        ),
        inputs=(_TARGET, _tool("The body removed from the target."), _KEEP_TOOL),
        examples=({"target": "b:plate", "tool": "b:pin"},),
        defaults={"keepTool": False},
        failure_modes=_CONSUMED,
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=(
            "BOOLEAN_EMPTY_RESULT",
            "SOLID_INVALID",
            "PLAN_BODY_STILL_REFERENCED",
            "PLAN_CONSUMES_TARGET",
        ),
        requires_representation=("ExactSolid",),
    ),
    Operation(
        capability="cap:exact.intersect@1",
        ref="exact.intersect@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.boolean",
        title="Intersect",
        summary="Keep only the volume the target and the tool bodies share.",
        aliases=(
            "common",
            "intersection",
            "overlap",
            "交集",
            "求交",
            "相交",
            "boolean intersect",
            "boolean common",
            "shared region",
            "common region",
            "公共部分",
            "共同部分",
            "布尔交",
            "取交集",
        ),
        intents=(
            "keep only where the cylinder and the plate overlap",
            "the common part of the two bodies",
            "求底板和圆柱的交集",
            "只保留两个实体重叠的部分",
            "trim the sphere to the shape of the cube by intersecting them",
            "give me the solid that both bodies occupy",
            "intersect the two cylinders at right angles",
            "取立方体和球体的公共部分",
            "两个圆柱求交，得到十字交叉体",
            "对两个实体做布尔交运算",
        ),
        counter=(
            "check whether two bodies interfere",
            "subtract one body from another",
            "how much volume do the two parts overlap",
            "两个零件有没有干涉",
        ),
        inputs=(_TARGET, _tool("The body intersected with the target."), _KEEP_TOOL),
        examples=({"target": "b:plate", "tool": "b:pin"},),
        defaults={"keepTool": False},
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=(
            "BOOLEAN_EMPTY_RESULT",
            "SOLID_INVALID",
            "PLAN_BODY_STILL_REFERENCED",
            "PLAN_CONSUMES_TARGET",
        ),
        requires_representation=("ExactSolid",),
        failure_modes=(
            {
                "diagnostic": "BOOLEAN_EMPTY_RESULT",
                "explanation": "the two bodies do not overlap",
                "repair": "move the tool so that it overlaps the target",
            },
            *_CONSUMED,
        ),
    ),
    # -- placement ---------------------------------------------------------------------------
    Operation(
        capability="cap:exact.translate@1",
        ref="exact.translate@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Translate",
        summary="Move (shift) a body by an offset along X, Y and Z.",
        aliases=(
            "move",
            "offset",
            "平移",
            "移动",
            "shift",
            "reposition",
            "displace",
            "nudge",
            "relocate",
            "挪动",
            "位移",
            "移位",
            "place",
            "position",
            "on top of",
            "放置",
        ),
        intents=(
            "move the boss 10 mm up",
            "把凸台向上移动10毫米",
            "shift the pin 4 mm along Y",
            "nudge the lid up 0.5 cm",
            "reposition the boss 15 mm along X",
            "place the cylinder 20 mm away from the origin along X",
            "将顶盖沿Z轴提高5毫米",
            "将销钉沿Y方向平移4毫米",
            "把凸台沿X轴移动15毫米",
        ),
        counter=(
            "rotate a body",
            "make 4 copies spaced 10 mm apart",
            "沿X方向阵列3个",
        ),
        inputs=(
            _TARGET,
            Input("x", LENGTH, "Offset along X (mm).", required=False),
            Input("y", LENGTH, "Offset along Y (mm).", required=False),
            Input("z", LENGTH, "Offset along Z (mm).", required=False),
        ),
        examples=({"target": "b:boss", "z": 10},),
        effects=("createsFeature",),
        requires_representation=("ExactSolid",),
    ),
    Operation(
        capability="cap:exact.rotate@1",
        ref="exact.rotate@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Rotate",
        summary="Rotate a body about the X, Y or Z axis through the origin by an angle "
        "(degrees, counter-clockwise looking down the axis).",
        aliases=(
            "turn",
            "spin",
            "旋转",
            "转动",
            "tilt",
            "reorient",
            "swivel",
            "pivot",
            "旋转零件",
            "倾斜",
            "转角度",
        ),
        intents=(
            "rotate the plate 90 degrees about Z",
            "tilt the boss by 30° around the X axis",
            "把底板绕Z轴旋转90度",
            "将凸台绕X轴转30度",
            "reorient the part so it lies flat: rotate 90° about X",
            "spin the hub 22.5 degrees around Z",
            "tilt the bracket back 15° about Y",
            "把零件绕X轴转90度放平",
            "turn the lid about the Z axis by a quarter turn",
            "将支架倾斜15度",
            "把支架绕Y轴旋转一个角度",
            "绕Z轴把轮毂旋转22.5°",
        ),
        counter=(
            "revolve a sketch into a solid",
            "a polar pattern of copies",
            "sweep a sketch around an axis into a solid",
            "绕Z轴环形阵列6个",
        ),
        inputs=(
            _TARGET,
            Input("angle", ANGLE, "Rotation angle (deg; other angle units converted)."),
            Input("axis", STRING, "The axis through the origin.", choices=("X", "Y", "Z")),
        ),
        examples=(
            {"target": "b:plate", "angle": 90, "axis": "Z"},
            {"target": "b:boss", "angle": -30, "axis": "X"},
        ),
        effects=("createsFeature",),
        requires_representation=("ExactSolid",),
    ),
    Operation(
        capability="cap:exact.mirror@1",
        ref="exact.mirror@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Mirror",
        summary="Reflect a body in the XY, YZ or XZ plane through the origin (the mirrored "
        "body replaces the original; union it with a copy to keep both).",
        aliases=(
            "reflect",
            "flip",
            "镜像",
            "对称",
            "mirror copy",
            "mirrored body",
            "reflection",
            "symmetric copy",
            "镜像复制",
            "翻转",
            "对称件",
        ),
        intents=(
            "mirror the bracket across the YZ plane",
            "flip the boss to below the XY plane",
            "把支架沿YZ平面镜像",
            "将凸台对XY平面做镜像",
            "reflect the handle across the XZ plane",
            "flip the part to the other side of the YZ plane",
            "make the left-hand version of the bracket by mirroring it",
            "把把手关于XZ平面镜像",
            "做出支架的左右对称件",
            "沿YZ面翻转零件",
        ),
        counter=(
            "rotate a body by 180 degrees",
            "a symmetric sketch",
            "把零件旋转180度",
        ),
        inputs=(
            _TARGET,
            Input(
                "plane", STRING, "The mirror plane through the origin.", choices=("XY", "YZ", "XZ")
            ),
        ),
        examples=({"target": "b:boss", "plane": "XY"}, {"target": "b:plate", "plane": "YZ"}),
        effects=("createsFeature",),
        requires_representation=("ExactSolid",),
    ),
    Operation(
        capability="cap:exact.linearPattern@1",
        ref="exact.linearPattern@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Linear pattern",
        summary="Repeat a body count times along X, Y or Z, spacing mm apart (the first copy is "
        "the body itself), all copies fused into one body. Volume count × the body's when the "
        "copies do not overlap.",
        aliases=(
            "rectangular pattern",
            "array",
            "repeat along",
            "线性阵列",
            "直线阵列",
            "阵列",
            "linear array",
            "row of copies",
            "step and repeat",
            "evenly spaced copies",
            "直线排列",
            "等距复制",
            "一排",
            "矩形阵列",
        ),
        intents=(
            "repeat the rib 5 times along X, 12 mm apart",
            "make a row of 4 pins spaced 10 mm along Y",
            "把加强筋沿X方向阵列5个，间距12毫米",
            "沿Y轴排列4个销钉，间距10毫米",
            "make a row of 6 ribs with a 15 mm pitch along X",
            "step and repeat the pin along Z: 4 copies, 8 mm apart",
            "duplicate the boss 3 times in a line along Y, spaced 20 mm",
            "I need 10 evenly spaced fins, 5 mm apart",
            "把散热片沿X方向等距复制10个，间距5毫米",
            "沿Y方向排一排3个凸台，间隔20毫米",
            "把销钉线性阵列4个",
        ),
        counter=(
            "copies around a circle",
            "move a body once",
            "绕中心均布6个",
            "把凸台平移10毫米",
        ),
        inputs=(
            _TARGET,
            _COPIES,
            _length("spacing", "Distance between neighbouring copies (mm)."),
            Input("direction", STRING, "The axis the copies step along.", choices=("X", "Y", "Z")),
        ),
        examples=(
            {"target": "b:boss", "count": 3, "spacing": 12, "direction": "X"},
            {"target": "b:plate", "count": 2, "spacing": 50, "direction": "Y"},
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=("SOLID_INVALID",),
        requires_representation=("ExactSolid",),
    ),
    Operation(
        capability="cap:exact.polarPattern@1",
        ref="exact.polarPattern@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Polar pattern",
        summary="Repeat a body count times about the Z axis through the origin over a total "
        "sweep (deg, default 360), fused into one body. 360° spaces copies angle/count apart, "
        "less spaces them angle/(count-1), ends included; copy one is the body itself.",
        aliases=(
            "circular pattern",
            "radial array",
            "环形阵列",
            "圆周阵列",
            "极坐标阵列",
            "circular array",
            "polar array",
            "radial pattern",
            "evenly around",
            "圆周均布",
            "环形排列",
            "均布",
            "周向阵列",
        ),
        intents=(
            "six bolt bosses evenly around the flange",
            "repeat the spoke 8 times around Z",
            "在法兰上均匀布置6个螺栓凸台",
            "把辐条绕Z轴环形阵列8个",
            "array 5 spokes evenly about Z",
            "place 4 bolt bosses every 90° around the centre",
            "copy the fin 3 times over a 120° arc",
            "place 3 lugs spaced evenly around the hub",
            "pattern 12 teeth around the hub",
            "在法兰上圆周均布8个螺栓凸台",
            "沿圆周每隔60度复制一个",
            "把齿绕Z轴环形排列12个",
        ),
        counter=(
            "a row of copies along a line",
            "rotate a body once",
            "沿X方向阵列5个",
            "把零件绕Z轴旋转45度",
        ),
        inputs=(
            _TARGET,
            _COPIES,
            Input(
                "angle",
                ANGLE,
                "Total sweep (deg, default 360).",
                required=False,
                exclusive_minimum=0,
                maximum=360,
            ),
        ),
        examples=(
            {"target": "b:pin", "count": 6},
            {"target": "b:plate", "count": 3, "angle": 90},
        ),
        defaults={"angle": 360.0},
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=("SOLID_INVALID",),
        requires_representation=("ExactSolid",),
    ),
    # -- parameters (patch templates) ----------------------------------------------------------
    Operation(
        capability="cap:parameter.define@1",
        ref="parameter.define@1.0.0",
        kind="authoring.operation",
        target="patchTemplateRef",
        taxonomy="authoring.exact.feature",
        title="Define a parameter",
        summary="Add a named, typed design parameter that steps "
        "can reference as {param: 'p:<name>'}.",
        aliases=(
            "variable",
            "dimension",
            "参数",
            "定义参数",
            "named parameter",
            "design variable",
            "new parameter",
            "driving dimension",
            "设计变量",
            "新建参数",
            "变量",
            "参数化",
        ),
        intents=(
            "make the plate width a parameter of 40 mm",
            "定义一个名为width的40毫米参数",
            "create a parameter wall = 2 mm that the shell uses",
            "add a design variable for the hole diameter, 5 mm, between 3 and 8",
            "declare a length parameter 'height' of 25 mm",
            "make the bracket parametric with a thickness of 4 mm",
            "新建一个名为厚度的参数，值为3毫米",
            "定义变量孔径=5毫米，范围3到8",
            "把板厚做成参数，默认4毫米",
        ),
        counter=(
            "measure a distance",
            "change the width parameter to 60 mm",
            "把宽度参数改成60",
        ),
        inputs=(
            Input("name", STRING, "Parameter name; alias p:<name>."),
            Input("value", REAL, "Value in unit."),
            Input("unit", STRING, "mm, cm, m, in, deg, rad …", required=False),
            Input(
                "type",
                STRING,
                "Length (default), Angle, Count, Real, Bool, String.",
                required=False,
            ),
            Input("min", REAL, "Lowest allowed value.", required=False),
            Input("max", REAL, "Highest allowed value.", required=False),
        ),
        examples=({"name": "width", "value": 40, "unit": "mm", "min": 1, "max": 500},),
        effects=("additive",),
        outputs=("Parameter",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("PARAMETER_OUT_OF_RANGE", "UNIT_MISMATCH"),
    ),
    Operation(
        capability="cap:parameter.set@1",
        ref="parameter.set@1.0.0",
        kind="authoring.operation",
        target="patchTemplateRef",
        taxonomy="authoring.exact.feature",
        title="Set a parameter",
        summary="Change the value of an existing parameter; every feature that uses it is rebuilt.",
        aliases=(
            "change dimension",
            "修改参数",
            "update parameter",
            "change parameter",
            "set parameter",
            "edit value",
            "modify dimension",
            "设置参数",
            "改参数",
            "修改尺寸",
        ),
        intents=(
            "set the width to 50 mm",
            "把宽度改成50毫米",
            "change the thickness parameter to 3.5 mm",
            "update p:height to 30",
            "make the hole diameter 6 mm instead of 5",
            "bump the wall parameter up to 2.5 mm",
            "把厚度改为3.5毫米",
            "将参数height修改为30",
            "孔径参数调到6毫米",
        ),
        counter=(
            "define a new parameter",
            "新建一个参数",
            "measure the width of the part",
        ),
        inputs=(
            Input("parameter", STRING, "Alias or id of the parameter, e.g. 'p:width'."),
            Input("value", REAL, "New value, in the parameter's unit."),
        ),
        examples=({"parameter": "p:width", "value": 50},),
        effects=("additive",),
        outputs=("Parameter",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("PARAMETER_OUT_OF_RANGE", "UNIT_MISMATCH"),
    ),
    # -- bodies (patch templates) --------------------------------------------------------------
    Operation(
        capability="cap:body.remove@1",
        ref="body.remove@1.0.0",
        kind="authoring.operation",
        target="patchTemplateRef",
        taxonomy="authoring.exact.feature",
        title="Remove a body",
        summary="Take a whole body out of the model, e.g. a helper or construction body that "
        "is no longer needed; earlier revisions keep it and a revert brings it back.",
        aliases=(
            "delete body",
            "remove body",
            "discard body",
            "drop body",
            "delete solid",
            "remove helper body",
            "删除实体",
            "移除实体",
            "删除辅助体",
            "删掉零件",
            "去掉多余实体",
        ),
        intents=(
            "delete the helper cylinder body",
            "remove the pin body from the model, it is not needed any more",
            "get rid of the construction box",
            "the model should only contain the plate: delete the other body",
            "删除辅助圆柱体",
            "把不用的销钉实体从模型里删掉",
            "移除多余的实体，只保留底板",
        ),
        counter=(
            "cut the pin out of the plate",
            "remove material from the plate where the cylinder is",
            "从底板上减去圆柱",
            "delete a parameter",
        ),
        inputs=(
            Input(
                "body",
                SHAPE,
                'The body to remove: its alias (\'b:pin\'), its id, or {"step": "<id>"} of '
                "the earlier step of this plan that made or changed it. Refused while an "
                "assertion or a feature's selection still refers to it.",
            ),
        ),
        examples=({"body": "b:pin"},),
        outputs=(),
        effects=("changesTopology",),
        risk="medium",
        destructive=True,
        may_invalidate_refs=True,
        quality=("authoritative",),
        cost="instant",
        diagnostics=(
            "PLAN_BODY_STILL_REFERENCED",
            "PLAN_REFERENCE_UNRESOLVED",
            "PLAN_STEP_REFERENCE_INVALID",
        ),
    ),
    # -- queries -----------------------------------------------------------------------------
    Operation(
        capability="cap:query.massProperties@1",
        ref="query.massProperties@1.0.0",
        kind="model.query",
        target="queryRef",
        taxonomy="query.geometric",
        title="Mass properties",
        summary="Volume (mm³), surface area (mm²) and centre of mass (centre of gravity) of a "
        "body; multiply the volume by a density for its weight.",
        aliases=(
            "volume",
            "weight",
            "体积",
            "质量属性",
            "mass",
            "center of mass",
            "centre of gravity",
            "surface area",
            "重量",
            "重心",
            "表面积",
            "质心",
        ),
        intents=(
            "what is the volume of the plate",
            "底板的体积是多少",
            "what's the surface area of the enclosure",
            "where is the centre of gravity of the bracket",
            "how much material (volume) is in the lid",
            "what are the volume and centroid of the imported body",
            "外壳的表面积是多少",
            "支架的重心位置在哪",
            "支架的实体体积有多大",
        ),
        counter=(
            "change the volume",
            "the volume must stay under 20 cm³",
            "体积不能超过50立方厘米",
        ),
        inputs=(_TARGET,),
        examples=({"target": "b:plate"},),
        outputs=("MassProperties",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("SOLID_INVALID",),
    ),
    Operation(
        capability="cap:query.boundingBox@1",
        ref="query.boundingBox@1.0.0",
        kind="model.query",
        target="queryRef",
        taxonomy="query.geometric",
        title="Bounding box",
        summary="The axis-aligned bounding box of a body (mm): its min and max corners and "
        "overall size (length, width, height) along X, Y and Z.",
        aliases=(
            "extent",
            "size",
            "包围盒",
            "尺寸",
            "overall dimensions",
            "envelope size",
            "outer dimensions",
            "length width height",
            "外形尺寸",
            "长宽高",
            "外廓尺寸",
            "总尺寸",
        ),
        intents=(
            "how big is the bracket",
            "支架的外形尺寸是多少",
            "what are the overall length, width and height of the housing",
            "how tall is the housing along Z",
            "how wide is the lid",
            "give me the extents of the lid along X, Y and Z",
            "what size box would this part fit in",
            "零件的长宽高分别是多少",
            "外壳有多高",
            "查询支架的包围盒",
        ),
        counter=(
            "fit a body into a box",
            "the part must fit in 200 × 200 × 200 mm",
            "零件高度不能超过100毫米",
        ),
        inputs=(_TARGET,),
        examples=({"target": "b:plate"},),
        outputs=("BoundingBox",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
    ),
    Operation(
        capability="cap:query.topology@1",
        ref="query.topology@1.0.0",
        kind="model.query",
        target="queryRef",
        taxonomy="query.topology",
        title="Topology counts",
        summary="How many distinct solids, shells, faces, edges and vertices a body has.",
        aliases=(
            "face count",
            "edge count",
            "topology",
            "拓扑",
            "面数",
            "边数",
            "vertex count",
            "number of faces",
            "solid count",
            "B-rep counts",
            "顶点数",
            "面的数量",
            "实体数",
        ),
        intents=(
            "how many faces does the bracket have",
            "count the edges and vertices of the plate",
            "支架有多少个面",
            "统计底板的边和顶点数量",
            "how many solids are in the imported model",
            "count the vertices of the lid",
            "number of faces and edges on the lid",
            "导入的模型里有几个实体",
            "数一下零件的顶点个数",
            "盖子有多少条边",
        ),
        counter=(
            "select the upper face",
            "measure the volume",
            "check the part is one valid solid",
            "选出顶面",
        ),
        inputs=(_TARGET,),
        examples=({"target": "b:plate"},),
        outputs=("TopologyCounts",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
    ),
    Operation(
        capability="cap:query.selectEntities@1",
        ref="query.selectEntities@1.0.0",
        kind="model.query",
        target="queryRef",
        taxonomy="query.topology",
        title="Select entities",
        summary="Try a selection on a body: how many faces, edges or vertices it chooses and "
        "what they are (type, centre, area or length, radius; a planar face's normal, frame "
        "for hole points and bounds in it), so a later step's selection can be checked first.",
        aliases=(
            "which faces",
            "preview selection",
            "find edges",
            "选择面",
            "选择边",
            "查找面",
            "test selector",
            "pick faces",
            "selector preview",
            "find faces",
            "选中哪些",
            "选择器",
            "拾取面",
            "查找边",
        ),
        intents=(
            "which faces does '>Z' select on the plate",
            "list the circular edges of the bracket",
            "底板上'>Z'选中了哪些面",
            "列出支架上所有的圆形边",
            "which edges would '|Z' pick on the box",
            "show the faces '>Z or <Z' selects and their normals",
            "list all planar faces of the housing with their areas",
            "try the selector '%CIRCLE' on the lid's edges",
            "'|Z'在盒子上选中了哪些边",
            "列出外壳所有平面及其面积",
            "试一下选择器'>X'",
        ),
        counter=(
            "round the selected edges",
            "count all faces of a body",
            "统计零件有多少个面",
        ),
        inputs=(
            _TARGET,
            Input(
                "select",
                STRING,
                "A CadQuery string selector; may be left out when another filter is given "
                "(then every entity of the kind). The other filters are a selection's: "
                + SELECTION_GRAMMAR,
                required=False,
            ),
            Input(
                "entity",
                STRING,
                "What to select: Face (default), Edge or Vertex.",
                required=False,
                choices=("Face", "Edge", "Vertex"),
            ),
            *(
                Input(
                    name,
                    JSON,
                    _sentence(SELECTION_FILTER_SCHEMAS[name]["description"]),
                    required=False,
                    json_schema=_without_description(SELECTION_FILTER_SCHEMAS[name]),
                )
                for name in ("radius", "length", "area", "between", "nearest")
            ),
        ),
        examples=(
            {"target": "b:plate", "select": ">Z"},
            {"target": "b:boss", "select": "%CIRCLE", "entity": "Edge"},
            {"target": "b:boss", "entity": "Edge", "radius": 5, "nearest": [0, 0, 30]},
            {"target": "b:plate", "entity": "Edge", "between": [">Z", "#Z"]},
        ),
        outputs=("EntityList",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("SELECTION_EMPTY", "SELECTION_INVALID"),
        failure_modes=(
            _SELECTION_EMPTY_MODE,
            {
                "diagnostic": "SELECTION_INVALID",
                "explanation": "a selector does not parse, or a filter is of the wrong kind "
                "(a negative radius, a point of two coordinates, length on faces)",
                "repair": "sizes are numbers above 0 or {min, max}; nearest is [x, y, z]; "
                "between is two face selectors and selects edges or vertices",
            },
        ),
    ),
    Operation(
        capability="cap:query.distance@1",
        ref="query.distance@1.0.0",
        kind="model.query",
        target="queryRef",
        taxonomy="query.geometric",
        title="Minimum distance",
        summary="The minimum distance (mm) between two bodies; 0 when they touch, overlap or "
        "one lies inside the other.",
        aliases=(
            "clearance",
            "gap",
            "minimum distance",
            "距离",
            "间隙",
            "最小距离",
            "how far apart",
            "separation",
            "closest distance",
            "air gap",
            "相隔多远",
            "离多远",
            "最短距离",
        ),
        intents=(
            "how far is the pin from the wall",
            "what is the clearance between the boss and the lid",
            "销钉离侧壁有多远",
            "凸台和盖子之间的间隙是多少",
            "measure the clearance between the shaft and the bore",
            "what's the shortest distance from the lid to the boss",
            "is there a gap between the cover and the frame, and how big",
            "测量盖子和外壳之间的最短距离",
            "轴和孔壁的间隙有多大",
            "两个支架相距多远",
        ),
        counter=(
            "move a body by a distance",
            "how much two bodies overlap",
            "the parts must not collide",
            "把零件移动5毫米",
        ),
        inputs=(_TARGET, Input("tool", SHAPE, "The other body.")),
        examples=({"target": "b:boss", "tool": "b:pin"}, {"target": "b:plate", "tool": "b:boss"}),
        outputs=("Distance",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
    ),
    Operation(
        capability="cap:query.interference@1",
        ref="query.interference@1.0.0",
        kind="model.query",
        target="queryRef",
        taxonomy="query.geometric",
        title="Interference volume",
        summary="The volume (mm³) two bodies share, 0 when they are apart or only touch.",
        aliases=(
            "overlap volume",
            "collision",
            "clash",
            "干涉",
            "干涉体积",
            "重叠",
            "interference volume",
            "collision volume",
            "overlap amount",
            "intersection volume",
            "碰撞",
            "重叠体积",
            "干涉量",
            "相互干涉",
        ),
        intents=(
            "how much do the pin and the plate overlap",
            "do the boss and the pin collide",
            "销钉和底板的干涉体积是多少",
            "凸台和销钉有没有干涉",
            "do the lid and the box collide, and by how much",
            "what volume do the shaft and the housing share",
            "is there any clash between the pin and the bracket",
            "find out how much the two parts overlap",
            "盖子和盒体重叠了多少体积",
            "轴和外壳之间有没有碰撞",
            "两个零件的干涉量有多大",
        ),
        counter=(
            "keep only the common part of two bodies",
            "the gap between two bodies",
            "make sure the lid does not collide with the box",
            "确保两个零件不干涉",
        ),
        inputs=(_TARGET, Input("tool", SHAPE, "The other body.")),
        examples=({"target": "b:plate", "tool": "b:pin"},),
        outputs=("InterferenceVolume",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="interactive",
    ),
    # -- validators --------------------------------------------------------------------------
    Operation(
        capability="cap:validate.solidValidity@1",
        ref="validate.solidValidity@1.0.0",
        kind="validator",
        target="validatorRef",
        taxonomy="validation.geometric",
        title="Solid validity",
        summary="The body is one valid solid: BRep check passes and its shells are closed.",
        aliases=(
            "valid solid",
            "watertight",
            "实体有效性",
            "封闭",
            "manifold",
            "closed solid",
            "valid geometry",
            "BRep check",
            "水密",
            "有效实体",
            "几何检查",
            "封闭实体",
        ),
        intents=(
            "check the part is a valid closed solid",
            "检查零件是否是有效的封闭实体",
            "is the imported body a valid manifold solid",
            "make sure the model is watertight before printing",
            "verify the geometry is not broken after the boolean",
            "check the solid has no open shells",
            "检查模型是否水密",
            "验证布尔运算后的实体是否有效",
            "确认零件是封闭的实体，没有破面",
        ),
        counter=(
            "check a wall thickness",
            "how many solids does the model have",
            "模型有几个实体",
        ),
        inputs=(_TARGET,),
        examples=({"target": "b:plate"},),
        outputs=("ValidationResult",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="interactive",
        diagnostics=("SOLID_INVALID",),
    ),
    Operation(
        capability="cap:validate.volumeRange@1",
        ref="validate.volumeRange@1.0.0",
        kind="validator",
        target="validatorRef",
        taxonomy="validation.requirements",
        title="Volume range",
        summary="The body's volume (mm³) lies within [min, max].",
        aliases=(
            "volume limit",
            "体积范围",
            "volume check",
            "max volume",
            "min volume",
            "volume requirement",
            "体积限制",
            "体积要求",
            "最大体积",
            "体积上限",
        ),
        intents=(
            "the part must stay under 20 cm³",
            "零件体积不超过20立方厘米",
            "verify the enclosure volume stays within 50–80 cm³",
            "the print must use at most 30 cm³ of material",
            "fail if the volume drops below 1000 mm³",
            "assert the body's volume is at most 12 cm³",
            "零件体积应在50到80立方厘米之间",
            "确保材料用量不超过30立方厘米",
            "校验体积不小于1000立方毫米",
        ),
        counter=(
            "measure the volume",
            "零件的体积是多少",
            "the part must fit in a 100 mm box",
        ),
        inputs=(
            _TARGET,
            Input("min", REAL, "Lowest volume (mm³).", required=False, minimum=0),
            Input("max", REAL, "Highest volume (mm³).", required=False, minimum=0),
        ),
        examples=({"target": "b:plate", "min": 1000, "max": 20000},),
        outputs=("ValidationResult",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("VOLUME_OUT_OF_RANGE",),
    ),
    Operation(
        capability="cap:validate.boundingBox@1",
        ref="validate.boundingBox@1.0.0",
        kind="validator",
        target="validatorRef",
        taxonomy="validation.requirements",
        title="Fits within a box",
        summary="The body's axis-aligned bounding box is no larger than maxX, maxY and maxZ "
        "(mm) along X, Y and Z; give at least one of them.",
        aliases=(
            "fits within",
            "envelope",
            "size limit",
            "包络尺寸",
            "尺寸限制",
            "build volume",
            "print bed",
            "max size",
            "maximum dimensions",
            "size check",
            "最大尺寸",
            "成型空间",
            "尺寸上限",
        ),
        intents=(
            "the part must fit in a 100 × 80 × 50 mm envelope",
            "the bracket may be at most 20 mm tall",
            "零件必须能放进100×80×50毫米的空间",
            "支架高度不超过20毫米",
            "make sure the part fits on a 220 × 220 mm print bed, 250 high",
            "the housing can be at most 120 mm long",
            "check it fits inside the printer's build volume of 180 × 180 × 180",
            "verify nothing exceeds 60 mm in Z",
            "assert the size stays within 120 × 80 × 40 mm",
            "零件要能放进打印机220×220×250的成型空间",
            "外壳长度不得超过120毫米",
            "检查零件高度是否在60毫米以内",
        ),
        counter=(
            "measure the bounding box",
            "scale a body to fit",
            "how big is the part",
            "零件的外形尺寸是多少",
        ),
        inputs=(
            _TARGET,
            _length("maxX", "Largest size along X (mm).", required=False),
            _length("maxY", "Largest size along Y (mm).", required=False),
            _length("maxZ", "Largest size along Z (mm).", required=False),
        ),
        examples=(
            {"target": "b:plate", "maxX": 50, "maxY": 40, "maxZ": 20},
            {"target": "b:boss", "maxZ": 25},
        ),
        outputs=("ValidationResult",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("BOUNDING_BOX_EXCEEDED",),
        failure_modes=(
            {
                "diagnostic": "BOUNDING_BOX_EXCEEDED",
                "explanation": "the body is larger than the envelope along at least one axis",
                "repair": "shrink the body along the named axes or enlarge the envelope",
            },
        ),
    ),
    Operation(
        capability="cap:validate.noInterference@1",
        ref="validate.noInterference@1.0.0",
        kind="validator",
        target="validatorRef",
        taxonomy="validation.geometric",
        title="No interference",
        summary="The target and the tool body share no volume (touching is allowed); "
        "INTERFERENCE_FOUND reports the common volume.",
        aliases=(
            "clearance check",
            "无干涉",
            "不干涉",
            "碰撞检查",
            "interference check",
            "interference test",
            "assembly check",
            "interference-free",
            "干涉检查",
            "不重叠",
            "不碰撞",
            "装配检查",
        ),
        intents=(
            "the lid must not collide with the boss",
            "check the pin does not interfere with the plate",
            "盖子不能和凸台干涉",
            "检查销钉和底板之间没有干涉",
            "verify the shaft does not clash with the housing",
            "ensure the two halves don't overlap",
            "confirm the lid fits without interfering with the boss",
            "fail if the pin collides with the housing",
            "assert the cover and the frame are clear of each other",
            "确认轴和外壳不会碰撞",
            "确保两个零件不重叠",
            "装配校验：盖子不能碰到凸台",
        ),
        counter=(
            "measure the gap between two bodies",
            "cut the overlap away",
            "how much do the two parts overlap",
            "两个零件的干涉体积是多少",
        ),
        inputs=(_TARGET, Input("tool", SHAPE, "The body that must not overlap the target.")),
        examples=({"target": "b:plate", "tool": "b:boss"},),
        outputs=("ValidationResult",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="interactive",
        diagnostics=("INTERFERENCE_FOUND",),
        failure_modes=(
            {
                "diagnostic": "INTERFERENCE_FOUND",
                "explanation": "the two bodies overlap by a positive volume",
                "repair": "move or resize one body, or cut the tool out of the target",
            },
        ),
    ),
    Operation(
        capability="cap:validate.holePattern@1",
        ref="validate.holePattern@1.0.0",
        kind="validator",
        target="validatorRef",
        taxonomy="validation.geometric",
        title="Hole pattern",
        summary="Exactly `count` cylindrical bores (concave cylindrical faces, one bore counted "
        "once) run parallel to `axis` with `diameter` within `tolerance` (default 0.01 mm); "
        "missing or extra bores are HOLE_PATTERN_MISMATCH.",
        aliases=(
            "hole count",
            "bolt pattern check",
            "孔数检查",
            "孔阵列校验",
            "孔位检查",
            "hole pattern check",
            "number of holes",
            "bolt circle check",
            "hole verification",
            "孔数量",
            "孔径检查",
            "螺栓孔检查",
        ),
        intents=(
            "the flange must have exactly 4 holes of 6 mm along Z",
            "check the plate has six 5 mm through holes",
            "法兰必须正好有4个沿Z方向的6毫米孔",
            "检查底板上有6个直径5毫米的通孔",
            "verify the flange has 8 bolt holes of 9 mm along Z",
            "make sure there are exactly two Ø3 holes running along X",
            "confirm the four M4 clearance holes (4.5 mm) are all there",
            "the cover should have six 3.2 mm screw holes",
            "assert a pattern of eight Ø6 bores along Y",
            "确认盖板上有6个直径3.2毫米的螺丝孔",
            "校验法兰的8个螺栓孔，孔径9毫米",
            "检查侧面沿X方向是否有2个3毫米的孔",
        ),
        counter=(
            "drill four holes",
            "measure a hole's diameter",
            "count the faces of a body",
            "在底板上钻4个孔",
        ),
        inputs=(
            _TARGET,
            Input("count", COUNT, "How many matching bores there must be.", minimum=0),
            _length("diameter", "The bores' diameter (mm)."),
            Input("axis", STRING, "The axis the bores run along.", choices=("X", "Y", "Z")),
            _length(
                "tolerance",
                "How far a bore's diameter may differ from `diameter` (mm; default 0.01).",
                required=False,
            ),
        ),
        examples=(
            {"target": "b:plate", "count": 0, "diameter": 6, "axis": "Z"},
            {"target": "b:plate", "count": 0, "diameter": 5, "axis": "X", "tolerance": 0.05},
        ),
        outputs=("ValidationResult",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("HOLE_PATTERN_MISMATCH",),
        failure_modes=(
            {
                "diagnostic": "HOLE_PATTERN_MISMATCH",
                "explanation": "the body has more or fewer bores of that diameter along the "
                "axis than expected",
                "repair": "drill the missing holes, fill the extra ones, or correct the "
                "expected count, diameter or axis",
            },
        ),
    ),
    Operation(
        capability="cap:validate.minWallThickness@1",
        ref="validate.minWallThickness@1.0.0",
        kind="validator",
        target="validatorRef",
        taxonomy="validation.manufacturing",
        title="Minimum wall thickness (sampled)",
        summary="Sampled check that walls are at least `min` mm thick: from a grid of points on "
        "every face a ray goes inward along the normal to the next surface. Thinner spots "
        "between samples can be missed.",
        aliases=(
            "wall thickness",
            "thin walls",
            "printability",
            "壁厚",
            "最小壁厚",
            "薄壁检查",
            "min wall",
            "thin spots",
            "wall check",
            "thickness check",
            "壁厚检查",
            "最薄处",
            "壁太薄",
        ),
        intents=(
            "walls must be at least 1.5 mm thick",
            "check the enclosure has no wall thinner than 2 mm",
            "壁厚不能小于1.5毫米",
            "检查外壳最薄的壁是否至少2毫米",
            "is any wall under 0.8 mm? the printer can't do thinner",
            "verify the minimum wall of the housing is 1.2 mm",
            "check for thin spots below 1 mm before printing",
            "make sure the walls are at least 2 mm for injection moulding",
            "确认外壳最小壁厚达到1.2毫米",
            "打印前检查有没有小于0.8毫米的薄壁",
            "注塑件壁厚至少2毫米",
        ),
        counter=(
            "hollow a box with 2 mm walls",
            "measure the distance between two bodies",
            "把盒子抽壳，壁厚2毫米",
        ),
        inputs=(
            _TARGET,
            _length("min", "The thinnest wall allowed (mm)."),
            Input(
                "samples",
                COUNT,
                "Grid points per face along each direction (default 8, at most 32).",
                required=False,
                minimum=2,
                maximum=32,
            ),
        ),
        examples=({"target": "b:plate", "min": 2}, {"target": "b:boss", "min": 1, "samples": 4}),
        outputs=("ValidationResult",),
        effects=("readOnly",),
        quality=("sampled",),
        cost="interactive",
        diagnostics=("WALL_TOO_THIN", "WALL_THICKNESS_UNMEASURED"),
        defaults={"samples": 8},
        failure_modes=(
            {
                "diagnostic": "WALL_TOO_THIN",
                "explanation": "a sampled ray found material thinner than min",
                "repair": "thicken the wall at the reported point or move the feature that "
                "thins it",
            },
        ),
    ),
    # -- io ----------------------------------------------------------------------------------
    Operation(
        capability="cap:io.exportStep@1",
        ref="io.exportStep@1.0.0",
        kind="exporter",
        target="ioRef",
        taxonomy="io.export",
        title="Export STEP",
        summary="Write a body (or all bodies) as a STEP AP214 file.",
        aliases=(
            "step file",
            "stp",
            "导出STEP",
            "STEP AP214",
            "CAD exchange",
            "neutral CAD format",
            "SolidWorks",
            "save as STEP",
            "STEP格式",
            "中性格式",
            "交换文件",
        ),
        intents=(
            "export the bracket as STEP",
            "把支架导出为STEP文件",
            "save everything as a .stp for another CAD program",
            "give me the part as an exact STEP solid",
            "I need a file I can open in SolidWorks",
            "save the housing as STEP AP214",
            "导出STP文件供其他CAD打开",
            "把模型另存为STEP格式，给SolidWorks打开",
            "输出一个通用的三维交换格式文件",
        ),
        counter=(
            "import a STEP file",
            "export an STL for printing",
            "导入一个STP文件",
        ),
        inputs=(Input("target", SHAPE, "The body to export (default: all).", required=False),),
        examples=({"target": "b:plate"},),
        outputs=("StepFile",),
        effects=("externalSideEffect",),
        quality=("authoritative",),
        cost="interactive",
    ),
    Operation(
        capability="cap:io.exportStl@1",
        ref="io.exportStl@1.0.0",
        kind="exporter",
        target="ioRef",
        taxonomy="io.export",
        title="Export STL",
        summary="Write a tessellated body as a binary STL mesh.",
        aliases=(
            "stl file",
            "mesh for printing",
            "导出STL",
            "stl mesh",
            "binary stl",
            "stl export",
            "Cura",
            "打印模型",
            "三角网格文件",
            "STL格式",
        ),
        intents=(
            "export an STL for 3D printing",
            "导出用于3D打印的STL",
            "save the bracket as an STL for my printer",
            "I need a binary .stl mesh of the lid to slice in Cura",
            "output an STL of the enclosure",
            "把外壳导出成STL，拿去3D打印",
            "导出STL网格文件，拿去切片",
            "保存成stl格式",
        ),
        counter=(
            "export an exact STEP model",
            "export a 3MF for the slicer",
            "生成用于显示的网格",
        ),
        inputs=(
            Input("target", SHAPE, "The body to export (default: all).", required=False),
            *_MESH_TOLERANCES,
        ),
        examples=(
            {"target": "b:plate"},
            {"target": "b:plate", "tolerance": 0.05, "angularTolerance": 10},
        ),
        outputs=("StlFile",),
        effects=("externalSideEffect",),
        quality=("approximate",),
        cost="interactive",
    ),
    Operation(
        capability="cap:io.exportSvg@1",
        ref="io.exportSvg@1.0.0",
        kind="exporter",
        target="ioRef",
        taxonomy="io.export",
        title="Export SVG drawing",
        summary="Write a projected line drawing (visible and hidden edges, isometric view) of a "
        "body (or all bodies) as SVG, for previews; not a dimensioned drawing.",
        aliases=(
            "svg preview",
            "line drawing",
            "projection",
            "导出SVG",
            "线框图",
            "预览图",
            "vector drawing",
            "2D view",
            "isometric view",
            "hidden-line view",
            "矢量图",
            "轴测图",
            "线稿",
        ),
        intents=(
            "export a line drawing of the bracket as SVG",
            "give me an SVG preview of the part",
            "把支架导出为SVG线框图",
            "生成零件的SVG预览图",
            "export an isometric line drawing of the housing",
            "save a 2D SVG view of the bracket with hidden lines",
            "export an SVG thumbnail of the bracket",
            "导出零件的SVG矢量图",
            "生成轴测线框图",
            "把模型输出为SVG线稿",
        ),
        counter=(
            "export an exact STEP model",
            "a dimensioned engineering drawing",
            "a display mesh for the web viewer",
            "生成三维预览网格",
        ),
        inputs=(Input("target", SHAPE, "The body to draw (default: all).", required=False),),
        examples=({"target": "b:plate"}, {"target": "b:boss"}),
        outputs=("SvgFile",),
        effects=("externalSideEffect",),
        quality=("preview",),
        cost="interactive",
    ),
    Operation(
        capability="cap:io.export3mf@1",
        ref="io.export3mf@1.0.0",
        kind="exporter",
        target="ioRef",
        taxonomy="io.export",
        title="Export 3MF",
        summary="Write a tessellated body (or all bodies) as a 3MF package (millimetres) for "
        "3D printing.",
        aliases=(
            "3mf file",
            "print file",
            "导出3MF",
            "3mf package",
            "slicer file",
            "PrusaSlicer",
            "Bambu Studio",
            "3MF格式",
            "切片文件",
        ),
        intents=(
            "export the part as 3MF for the slicer",
            "把零件导出为3MF打印文件",
            "save the part as .3mf for PrusaSlicer",
            "export a 3MF package of all bodies for Bambu Studio",
            "I need a 3mf file in millimetres to slice",
            "save the enclosure as 3MF",
            "导出3MF文件用于切片",
            "把所有零件保存为3MF格式",
            "生成3MF用于拓竹切片",
        ),
        counter=(
            "export an exact STEP model",
            "export an STL mesh",
            "导出STL文件",
        ),
        inputs=(
            Input("target", SHAPE, "The body to export (default: all).", required=False),
            *_MESH_TOLERANCES,
        ),
        examples=(
            {"target": "b:plate"},
            {"target": "b:plate", "tolerance": 0.05, "angularTolerance": 10},
        ),
        outputs=("ThreeMfFile",),
        effects=("externalSideEffect",),
        quality=("approximate",),
        cost="interactive",
    ),
    Operation(
        capability="cap:io.importStep@1",
        ref="io.importStep@1.0.0",
        kind="importer",
        target="ioRef",
        taxonomy="io.import",
        title="Import STEP",
        summary="A new body from the solids of a STEP (ISO 10303-21) file: the file's text is "
        "the input, so the model stays reproducible without the file.",
        aliases=(
            "step import",
            "load stp",
            "open step file",
            "导入STEP",
            "读取STP",
            "import stp",
            "load CAD file",
            "bring in STEP",
            "read STEP",
            "打开STEP",
            "载入模型",
            "导入模型",
        ),
        intents=(
            "import the bracket from bracket.step",
            "load a STEP file as a new body",
            "导入一个STEP文件",
            "把供应商的STP模型加载进来",
            "bring motor.stp from the vendor into the model",
            "open motor_mount.step and add it as a body",
            "read this STEP text in as a new solid",
            "load the vendor's CAD file (STEP)",
            "打开供应商提供的STEP模型",
            "把电机的STP文件载入为新实体",
            "从.step文件载入实体",
        ),
        counter=(
            "export a STEP file",
            "import a mesh",
            "导出STEP文件",
            "import an STL mesh",
        ),
        inputs=(
            Input(
                "data",
                STRING,
                "The STEP file's text (ISO 10303-21, starting 'ISO-10303-21;', at most 8 MB); "
                "hosts fill it from a file (aira model import). The input example's "
                "'fixture:plate.step' stands for the conformance fixture's exported plate.",
            ),
        ),
        examples=({"data": "fixture:plate.step"},),
        outputs=("ExactSolid",),
        effects=("additive", "createsFeature"),
        quality=("authoritative",),
        cost="interactive",
        diagnostics=("STEP_IMPORT_FAILED", "SOLID_INVALID"),
        failure_modes=(
            {
                "diagnostic": "STEP_IMPORT_FAILED",
                "explanation": "the text is not a readable STEP file or holds no solid",
                "repair": "pass the complete text of a STEP file that contains solids",
            },
        ),
    ),
    Operation(
        capability="cap:convert.displayMesh@1",
        ref="convert.displayMesh@1.0.0",
        kind="converter",
        target="ioRef",
        taxonomy="io.export",
        title="Display mesh",
        summary="Triangles for a viewer: a body (or all bodies) tessellated to a tolerance "
        "relative to its size (1/2000 of its diagonal, 0.001 to 1 mm), as JSON with flat "
        "vertex and triangle arrays per body. The model is not changed.",
        aliases=(
            "tessellate",
            "triangulate",
            "三角化",
            "显示网格",
            "viewer mesh",
            "display triangles",
            "preview mesh",
            "网格预览",
            "可视化网格",
            "三角面片",
            "显示用网格",
        ),
        intents=(
            "give me a mesh of the part to show in the viewer",
            "tessellate the bracket for a web preview",
            "生成用于显示的三角网格",
            "把支架三角化以便预览",
            "triangulate the housing so the web viewer can draw it",
            "I need vertices and triangles of the lid for a three.js preview",
            "produce a lightweight display mesh of all bodies",
            "stream the lid's triangles to the viewer",
            "生成外壳的显示网格用于网页预览",
            "把所有实体三角化成顶点和三角形数组",
            "把零件的三角面片发给查看器",
        ),
        counter=(
            "export an STL file",
            "convert the body to an editable mesh body",
            "export a 3MF for printing",
            "导出STL文件",
        ),
        inputs=(Input("target", SHAPE, "The body to mesh (default: all).", required=False),),
        examples=({"target": "b:plate"}, {"target": "b:boss"}),
        outputs=("DisplayMesh",),
        effects=("readOnly",),
        quality=("approximate",),
        cost="interactive",
    ),
)

BY_REF: dict[str, Operation] = {op.ref: op for op in OPERATIONS}


def is_profile(op: Operation) -> bool:
    """Whether ``op`` makes a sketch profile (an input of a sweep) rather than a body."""
    return op.outputs == (PROFILE,)


BY_CAPABILITY: dict[str, Operation] = {op.capability: op for op in OPERATIONS}


# -- repairs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Repair:
    """A repair of one of the kernel's own refusals: a declarative patch template the core
    evaluates over the refused step's ``args`` and the diagnostic's typed ``expected`` and
    ``actual`` (aira_core.runtime.repairs). It makes a candidate plan and never writes: no
    kernel code runs behind it, so it is not an :class:`Operation` (nor in ``OPERATIONS``)."""

    capability: str
    ref: str
    title: str
    summary: str
    aliases: tuple[str, ...]
    intents: tuple[str, ...]
    """Intent examples, English and Chinese."""
    counter: tuple[str, ...]
    code: str
    """The diagnostic code it repairs."""
    applies_to: tuple[str, ...]
    when: str
    set: Mapping[str, str]
    hints: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.ref.split("@")[0]


REPAIR_MARGIN = 0.9
"""A size repair's candidate is this fraction of the largest size the kernel found to fit:
the kernel finds that size to within 1 % (or 0.01 mm), so the candidate keeps a margin."""
MARGIN_PERCENT = round(REPAIR_MARGIN * 100)
REPAIR_MIN_SIZE = 0.05
"""The least largest-fitting size (mm) a size repair works from: its candidate is rounded to
0.01 mm, and below 0.05 mm that rounding could eat the margin (or give 0)."""


def _size_repair(
    capability: str, code: str, operation: str, arg: str, limit: str, **kw: Any
) -> Repair:
    return Repair(
        capability=capability,
        ref=capability.removeprefix("cap:").replace("@1", "@1.0.0"),
        code=code,
        applies_to=(operation,),
        when=f"expected is not None and expected.{limit} >= {REPAIR_MIN_SIZE}",
        set={arg: f"round(expected.{limit} * {REPAIR_MARGIN}, 2)"},
        hints=(
            f"Only for {code} with expected.{limit} (the largest {arg} the kernel found to "
            f"fit the same edges): the candidate is the refused plan with the failing step's "
            f"{arg} at {MARGIN_PERCENT}% of it, rounded to 0.01 mm; no candidate "
            f"when the refusal has no expected value (no {arg} fits) or it is below "
            f"{REPAIR_MIN_SIZE} mm.",
            "Never applied by itself: send the candidate's plan as a plan to apply it.",
        ),
        **kw,
    )


REPAIRS: tuple[Repair, ...] = (
    _size_repair(
        "cap:exact.reduceFilletRadius@1",
        "FILLET_RADIUS_TOO_LARGE",
        "cap:exact.fillet@1",
        "radius",
        "maxRadius",
        title="Reduce a fillet's radius to one that fits",
        summary="For a fillet the kernel refused with FILLET_RADIUS_TOO_LARGE: a candidate "
        f"plan, the same plan with the fillet's radius at {MARGIN_PERCENT}% of the largest radius "
        f"the kernel found to fit (expected.maxRadius, found to within 1%: REPAIR_MARGIN keeps "
        "a margin); never applied by itself.",
        aliases=(
            "fillet too large",
            "smaller fillet radius",
            "fit the fillet",
            "圆角过大",
            "减小圆角半径",
        ),
        intents=(
            "the fillet radius is too large for these edges",
            "shrink the rounded edge so the fillet fits",
            "FILLET_RADIUS_TOO_LARGE: make the radius fit",
            "圆角半径太大，减小到能倒出来",
        ),
        counter=("round the edges by 2 mm", "the chamfer is too large"),
    ),
    _size_repair(
        "cap:exact.reduceChamferLength@1",
        "CHAMFER_TOO_LARGE",
        "cap:exact.chamfer@1",
        "length",
        "maxLength",
        title="Reduce a chamfer's length to one that fits",
        summary="For a chamfer the kernel refused with CHAMFER_TOO_LARGE: a candidate plan, "
        f"the same plan with the chamfer's length at {MARGIN_PERCENT}% of the largest length "
        f"the kernel found to fit (expected.maxLength, found to within 1%: REPAIR_MARGIN keeps "
        "a margin); never applied by itself.",
        aliases=(
            "chamfer too large",
            "smaller chamfer",
            "fit the chamfer",
            "倒角过大",
            "减小倒角",
        ),
        intents=(
            "the chamfer is too large for these edges",
            "shrink the bevel so the chamfer fits",
            "CHAMFER_TOO_LARGE: make the chamfer length fit",
            "倒角太大了，减小到能倒出来",
        ),
        counter=("chamfer the top edges by 1 mm", "the fillet radius is too large"),
    ),
)

REPAIR_BY_CAPABILITY: dict[str, Repair] = {r.capability: r for r in REPAIRS}
