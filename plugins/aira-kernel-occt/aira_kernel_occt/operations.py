"""The capabilities of the OpenCASCADE kernel, as data: the one source of their descriptors,
profiles and input schemas (``manifest.py`` generates the signed package from it, the kernel
dispatches on it). Nothing here imports CadQuery, so plugin discovery stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LENGTH = "Length"
ANGLE = "Angle"
COUNT = "Count"
REAL = "Real"
BOOL = "Bool"
STRING = "String"
SHAPE = "Shape"
PROFILE = "Profile"
"""The output type of a sketch: a closed planar profile for a sweep, not a body."""
SELECTION = "Selection"
JSON = "Json"
"""Structured literal (lists, objects): checked by its own JSON schema and by the builder."""

_JSON_TYPE = {
    LENGTH: "number",
    ANGLE: "number",
    REAL: "number",
    COUNT: "integer",
    BOOL: "boolean",
    STRING: "string",
    SHAPE: "string",
}

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
    "'|Z and >X', '>Z or <Z', 'not %LINE'."
)


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

    def schema(self) -> dict[str, Any]:
        if self.type == JSON:
            return {
                **dict(self.json_schema or {}),
                "x-amir-type": JSON,
                "description": self.description,
            }
        if self.type == SELECTION:
            return {
                "type": "object",
                "x-amir-type": SELECTION,
                "description": self.description + " " + SELECTOR_GRAMMAR,
                "properties": {
                    "body": {"type": "string", "description": "alias or id of the body"},
                    "select": {"type": "string", "minLength": 1},
                    "entity": {"enum": ["Face", "Edge", "Vertex"]},
                },
                "required": ["body", "select"],
                "additionalProperties": False,
            }
        if self.type == SHAPE:
            # a body (alias or id), or the result of an earlier step of the same plan
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
                "x-amir-type": SHAPE,
                "x-amir-accepts": self.accepts,
                "description": self.description,
            }
        out: dict[str, Any] = {
            "type": _JSON_TYPE[self.type],
            "x-amir-type": self.type,
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
            extra += ["UNIT_MISMATCH", "PARAMETER_OUT_OF_RANGE"]
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
_PROFILE = Input(
    "profile",
    SHAPE,
    'The closed profile to sweep: a sketch step of this plan ({"step": "<id>"}).',
    accepts=PROFILE,
)

OPERATIONS: tuple[Operation, ...] = (
    # -- primitives ------------------------------------------------------------------------
    Operation(
        capability="cap:exact.box@1",
        ref="exact.box@1.0.0",
        **_PRIMITIVE,
        title="Box",
        summary="An exact rectangular box: length along X, width along Y, "
        "height along Z, centred on the origin unless centered is false.",
        aliases=("cuboid", "block", "rectangular prism", "长方体", "方块"),
        intents=(
            "make a 40 by 30 by 10 mm plate",
            "a 20 mm cube",
            "做一个40×30×10毫米的板",
            "创建一个边长20毫米的立方体",
        ),
        counter=("a rectangle sketch on a plane", "a box-shaped triangle mesh"),
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
        summary="An exact cylinder standing on the XY plane along +Z, centred on the origin.",
        aliases=("rod", "disc", "圆柱", "圆柱体"),
        intents=("a cylinder of radius 5 and height 20", "做一个半径5毫米高20毫米的圆柱"),
        counter=("a hole through a plate", "a circle sketch"),
        inputs=(_length("radius", "Radius (mm)."), _length("height", "Height along Z (mm).")),
        examples=({"radius": 5, "height": 20},),
    ),
    Operation(
        capability="cap:exact.sphere@1",
        ref="exact.sphere@1.0.0",
        **_PRIMITIVE,
        title="Sphere",
        summary="An exact sphere centred on the origin.",
        aliases=("ball", "球", "球体"),
        intents=("a sphere of radius 10 mm", "做一个半径10毫米的球"),
        counter=("round the edges of a box",),
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
        aliases=("frustum", "truncated cone", "taper", "圆锥", "圆台"),
        intents=(
            "a cone of base radius 10 and height 20",
            "a frustum from radius 10 down to 5, 15 mm tall",
            "做一个底面半径10毫米高20毫米的圆锥",
            "做一个下底半径10上底半径5的圆台",
        ),
        counter=("a countersunk hole", "chamfer the edge of a cylinder"),
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
        aliases=("ring", "donut", "o-ring", "圆环", "环面"),
        intents=(
            "a ring of radius 20 with a 3 mm tube",
            "an o-ring 40 mm across, 4 mm thick",
            "做一个大半径20毫米、截面半径3毫米的圆环",
        ),
        counter=("a washer (a flat ring cut from a plate)", "a circle sketch"),
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
        aliases=("ramp", "triangular prism", "gusset", "楔形", "楔块", "三角块"),
        intents=(
            "a ramp 40 long, 20 wide and 10 high",
            "a triangular gusset 15 by 15, 5 mm thick",
            "做一个长40宽20高10毫米的楔块",
            "做一个直角三角形截面的加强筋",
        ),
        counter=("a chamfer on an edge", "a pyramid"),
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
        **_SKETCH,
        title="Rectangle profile",
        summary="A closed rectangular profile on a named plane (width along the plane's x, "
        "height along its y), to extrude or revolve; not a body by itself.",
        aliases=("rectangle sketch", "rect", "矩形", "矩形草图"),
        intents=(
            "sketch a 40 by 20 rectangle on the XY plane",
            "a rectangular profile 10 mm above the base to extrude",
            "在XY平面上画一个40×20的矩形",
            "画一个矩形轮廓用来拉伸",
        ),
        counter=("a box", "a square plate 5 mm thick"),
        inputs=(
            *_PLANE_INPUTS,
            _length("width", "Size along the plane's x (mm)."),
            _length("height", "Size along the plane's y (mm)."),
            _CENTER,
        ),
        examples=(
            {"plane": "XY", "width": 40, "height": 20},
            {"plane": "XZ", "offset": 5, "width": 10, "height": 4, "center": [20, 2]},
        ),
    ),
    Operation(
        capability="cap:sketch.circle@1",
        ref="sketch.circle@1.0.0",
        **_SKETCH,
        title="Circle profile",
        summary="A closed circular profile on a named plane, to extrude or revolve; not a body "
        "by itself.",
        aliases=("circle sketch", "round profile", "圆", "圆形草图"),
        intents=(
            "sketch a circle of radius 8 on the XY plane",
            "a round profile for a shaft to extrude 30 mm",
            "在XY平面画一个半径8毫米的圆",
            "画一个圆形轮廓",
        ),
        counter=("a cylinder", "a sphere", "drill a hole"),
        inputs=(*_PLANE_INPUTS, _length("radius", "Radius (mm)."), _CENTER),
        examples=({"plane": "XY", "radius": 8}, {"plane": "XZ", "radius": 3, "center": [15, 0]}),
    ),
    Operation(
        capability="cap:sketch.polygon@1",
        ref="sketch.polygon@1.0.0",
        **_SKETCH,
        title="Regular polygon profile",
        summary="A closed regular polygon (e.g. a hexagon) on a named plane, its corners on a "
        "circle of the given diameter; to extrude or revolve, not a body by itself.",
        aliases=("hexagon", "regular polygon", "nut profile", "多边形", "正六边形"),
        intents=(
            "a hexagon 10 mm across corners on the XY plane",
            "sketch an octagon of diameter 30",
            "画一个外接圆直径10毫米的正六边形",
            "在XY平面画一个正八边形",
        ),
        counter=("an irregular outline through given points", "a circle"),
        inputs=(
            *_PLANE_INPUTS,
            Input("sides", COUNT, "Number of sides (3 to 360).", minimum=3, maximum=360),
            _length("diameter", "Diameter (mm) of the circle through the corners."),
            _CENTER,
        ),
        examples=({"plane": "XY", "sides": 6, "diameter": 10},),
    ),
    Operation(
        capability="cap:sketch.slot@1",
        ref="sketch.slot@1.0.0",
        **{**_SKETCH, "defaults": {"offset": 0.0, "center": [0, 0], "angle": 0.0}},
        title="Slot profile",
        summary="A closed slot (obround: two half circles joined by straight sides) on a named "
        "plane; length end to end, width = the ends' diameter, turned by angle.",
        aliases=("obround", "stadium", "oblong hole", "slot", "腰形", "长圆孔", "槽"),
        intents=(
            "a slot 20 long and 6 wide on the top plane",
            "sketch an obround 30 by 8 rotated 45 degrees",
            "画一个长20宽6的腰形槽轮廓",
            "在顶面画一个长圆孔轮廓",
        ),
        counter=("a rectangle", "cut a groove with a saw"),
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
            "defaults": {"offset": 0.0},
        },
        title="Polyline profile",
        summary="A closed outline of straight segments through points [x, y] on a named plane; "
        "the last point must repeat the first. To extrude or revolve.",
        aliases=("outline", "polygon through points", "closed polyline", "折线", "多段线轮廓"),
        intents=(
            "an L-shaped outline through these points to extrude",
            "sketch a closed triangle (0,0) (30,0) (0,20)",
            "画一条闭合折线作为拉伸轮廓",
            "用这些点画一个L形轮廓",
        ),
        counter=("a regular hexagon", "an open path to sweep along"),
        inputs=(
            *_PLANE_INPUTS,
            Input(
                "points",
                JSON,
                "Corners [x, y] (mm) in the plane's coordinates, in order; the last repeats "
                "the first to close the outline.",
                json_schema={"type": "array", "minItems": 4, "maxItems": 1000, "items": _POINT},
            ),
        ),
        examples=(
            {
                "plane": "XY",
                "points": [[0, 0], [30, 0], [30, 10], [10, 10], [10, 25], [0, 25], [0, 0]],
            },
            {"plane": "XZ", "points": [[5, 0], [15, 0], [15, 10], [5, 0]]},
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
        aliases=("extrusion", "pad", "prism", "拉伸", "挤出"),
        intents=(
            "extrude the rectangle 10 mm",
            "pad the outline 5 mm up from the sketch plane",
            "把矩形轮廓拉伸10毫米",
            "将草图向两侧对称拉伸20毫米",
        ),
        counter=("a box from three sizes", "cut a pocket into a body"),
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
        aliases=("revolution", "lathe", "turn", "旋转", "回转体"),
        intents=(
            "revolve the profile 360 degrees around Z into a ring",
            "turn the outline about the Z axis to make a pulley",
            "把轮廓绕Z轴旋转一周",
            "将截面绕Z轴旋转180度",
        ),
        counter=("rotate a body", "a polar pattern of copies"),
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
    # -- features ----------------------------------------------------------------------------
    Operation(
        capability="cap:exact.hole@1",
        ref="exact.hole@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.feature",
        title="Hole",
        summary="Drill round holes (optionally counterbored or countersunk) into a body, "
        "perpendicular to one "
        "of its planar faces, through all unless a depth is given. Points [x, y] (mm) are on "
        "the face's workplane, origin the global origin projected onto it ('>Z': global X, Y).",
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
        ),
        intents=(
            "drill four 5 mm through holes in the corners of the plate",
            "a 6 mm hole 8 deep with a 10 mm counterbore 3 deep",
            "在底板四角钻四个直径5毫米的通孔",
            "打一个带沉头的6毫米孔",
            "a countersunk 4 mm hole for a flat-head screw",
            "打一个4毫米的埋头孔",
        ),
        counter=("cut an arbitrary body out of another", "a cylinder standing on a plate"),
        inputs=(
            _TARGET,
            Input(
                "face",
                SELECTION,
                "The one planar face the holes start from (usually '>Z').",
                entity="Face",
            ),
            Input(
                "points",
                JSON,
                "Hole centres [x, y] (mm) on the face's workplane.",
                json_schema={
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "array",
                        "items": {"type": "number"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                },
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
                "explanation": "a hole centre does not lie on the selected face",
                "repair": "give points in the face's workplane coordinates, inside the face",
            },
            {
                "diagnostic": "SELECTION_CARDINALITY_MISMATCH",
                "explanation": "the face selector chose more than one face",
                "repair": "narrow the selector to one planar face, e.g. '>Z'",
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
        aliases=("hollow", "tray", "enclosure walls", "抽壳", "挖空", "壳体"),
        intents=(
            "hollow the box into a tray with 2 mm walls, open at the top",
            "shell the enclosure 1.5 mm thick, removing the bottom face",
            "把盒子抽壳成2毫米壁厚、顶面开口的托盘",
            "将外壳抽壳1.5毫米，去掉底面",
        ),
        counter=("drill a hole", "cut one body out of another", "check the wall thickness"),
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
        summary="Round the selected edges of an exact solid with a constant radius.",
        aliases=("round edges", "blend", "圆角", "倒圆角"),
        intents=("round the four vertical edges by 2 mm", "把四条竖直边倒2毫米圆角"),
        counter=("smooth a triangle mesh", "a chamfer with a flat bevel"),
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
                "repair": "reduce the radius below half the smallest adjacent face",
            },
        ),
    ),
    Operation(
        capability="cap:exact.chamfer@1",
        ref="exact.chamfer@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.finishing",
        title="Chamfer edges",
        summary="Bevel the selected edges of an exact solid by an equal distance on both faces.",
        aliases=("bevel", "倒角", "斜角"),
        intents=("chamfer the top edges by 1 mm", "把顶面边缘倒1毫米的角"),
        counter=("round edges with a radius",),
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
        ),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        cost="interactive-to-heavy",
        diagnostics=("CHAMFER_TOO_LARGE", "SELECTION_EMPTY", "SOLID_INVALID"),
        requires_representation=("ExactSolid",),
        selection={"entityKind": "Edge", "cardinality": "oneOrMore"},
    ),
    # -- booleans ----------------------------------------------------------------------------
    Operation(
        capability="cap:exact.union@1",
        ref="exact.union@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.boolean",
        title="Union",
        summary="Fuse the tool body into the target body.",
        aliases=("fuse", "join", "add", "合并", "并集"),
        intents=("join the boss onto the plate", "把凸台和底板合并"),
        counter=("place two bodies side by side without merging",),
        inputs=(_TARGET, Input("tool", SHAPE, "The body fused into the target.")),
        examples=({"target": "b:plate", "tool": "b:boss"},),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=("BOOLEAN_EMPTY_RESULT", "SOLID_INVALID"),
        requires_representation=("ExactSolid",),
    ),
    Operation(
        capability="cap:exact.cut@1",
        ref="exact.cut@1.0.0",
        kind="authoring.operation",
        target="operationRef",
        taxonomy="authoring.exact.boolean",
        title="Cut",
        summary="Subtract the tool body from the target body.",
        aliases=("subtract", "difference", "减去", "差集", "切除"),
        intents=("cut the cylinder out of the plate", "从板上减去圆柱"),
        counter=("drill a standard hole with a counterbore",),
        inputs=(_TARGET, Input("tool", SHAPE, "The body removed from the target.")),
        examples=({"target": "b:plate", "tool": "b:pin"},),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=("BOOLEAN_EMPTY_RESULT", "SOLID_INVALID"),
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
        aliases=("common", "intersection", "overlap", "交集", "求交", "相交"),
        intents=(
            "keep only where the cylinder and the plate overlap",
            "the common part of the two bodies",
            "求底板和圆柱的交集",
            "只保留两个实体重叠的部分",
        ),
        counter=("check whether two bodies interfere", "subtract one body from another"),
        inputs=(_TARGET, Input("tool", SHAPE, "The body intersected with the target.")),
        examples=({"target": "b:plate", "tool": "b:pin"},),
        effects=("createsFeature", "changesTopology"),
        risk="medium",
        may_invalidate_refs=True,
        diagnostics=("BOOLEAN_EMPTY_RESULT", "SOLID_INVALID"),
        requires_representation=("ExactSolid",),
        failure_modes=(
            {
                "diagnostic": "BOOLEAN_EMPTY_RESULT",
                "explanation": "the two bodies do not overlap",
                "repair": "move the tool so that it overlaps the target",
            },
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
        summary="Move a body by an offset along X, Y and Z.",
        aliases=("move", "offset", "平移", "移动"),
        intents=("move the boss 10 mm up", "把凸台向上移动10毫米"),
        counter=("rotate a body",),
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
        aliases=("turn", "spin", "旋转", "转动"),
        intents=(
            "rotate the plate 90 degrees about Z",
            "tilt the boss by 30° around the X axis",
            "把底板绕Z轴旋转90度",
            "将凸台绕X轴转30度",
        ),
        counter=("revolve a sketch into a solid", "a polar pattern of copies"),
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
        aliases=("reflect", "flip", "镜像", "对称"),
        intents=(
            "mirror the bracket across the YZ plane",
            "flip the boss to below the XY plane",
            "把支架沿YZ平面镜像",
            "将凸台对XY平面做镜像",
        ),
        counter=("rotate a body by 180 degrees", "a symmetric sketch"),
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
        aliases=("rectangular pattern", "array", "repeat along", "线性阵列", "直线阵列", "阵列"),
        intents=(
            "repeat the rib 5 times along X, 12 mm apart",
            "make a row of 4 pins spaced 10 mm along Y",
            "把加强筋沿X方向阵列5个，间距12毫米",
            "沿Y轴排列4个销钉，间距10毫米",
        ),
        counter=("copies around a circle", "move a body once"),
        inputs=(
            _TARGET,
            Input("count", COUNT, "How many copies, the body included (at least 2).", minimum=2),
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
        aliases=("circular pattern", "radial array", "环形阵列", "圆周阵列", "极坐标阵列"),
        intents=(
            "six bolt bosses evenly around the flange",
            "repeat the spoke 8 times around Z",
            "在法兰上均匀布置6个螺栓凸台",
            "把辐条绕Z轴环形阵列8个",
        ),
        counter=("a row of copies along a line", "rotate a body once"),
        inputs=(
            _TARGET,
            Input("count", COUNT, "How many copies, the body included (at least 2).", minimum=2),
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
        aliases=("variable", "dimension", "参数", "定义参数"),
        intents=("make the plate width a parameter of 40 mm", "定义一个名为width的40毫米参数"),
        counter=("measure a distance",),
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
        aliases=("change dimension", "修改参数"),
        intents=("set the width to 50 mm", "把宽度改成50毫米"),
        counter=("define a new parameter",),
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
    # -- queries -----------------------------------------------------------------------------
    Operation(
        capability="cap:query.massProperties@1",
        ref="query.massProperties@1.0.0",
        kind="model.query",
        target="queryRef",
        taxonomy="query.geometric",
        title="Mass properties",
        summary="Volume (mm³), surface area (mm²) and centre of mass of a body.",
        aliases=("volume", "weight", "体积", "质量属性"),
        intents=("what is the volume of the plate", "底板的体积是多少"),
        counter=("change the volume",),
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
        summary="The axis-aligned bounding box of a body (mm).",
        aliases=("extent", "size", "包围盒", "尺寸"),
        intents=("how big is the bracket", "支架的外形尺寸是多少"),
        counter=("fit a body into a box",),
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
        aliases=("face count", "edge count", "topology", "拓扑", "面数", "边数"),
        intents=(
            "how many faces does the bracket have",
            "count the edges and vertices of the plate",
            "支架有多少个面",
            "统计底板的边和顶点数量",
        ),
        counter=("select the top face", "measure the volume"),
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
        summary="Try a selector on a body: how many faces, edges or vertices it chooses and "
        "what they are (type, centre, area or length, normal, radius), so a later step's "
        "selection can be checked before it is used.",
        aliases=("which faces", "preview selection", "find edges", "选择面", "选择边", "查找面"),
        intents=(
            "which faces does '>Z' select on the plate",
            "list the circular edges of the bracket",
            "底板上'>Z'选中了哪些面",
            "列出支架上所有的圆形边",
        ),
        counter=("round the selected edges", "count all faces of a body"),
        inputs=(
            _TARGET,
            Input("select", STRING, "A CadQuery string selector. " + SELECTOR_GRAMMAR),
            Input(
                "entity",
                STRING,
                "What to select: Face (default), Edge or Vertex.",
                required=False,
                choices=("Face", "Edge", "Vertex"),
            ),
        ),
        examples=(
            {"target": "b:plate", "select": ">Z"},
            {"target": "b:boss", "select": "%CIRCLE", "entity": "Edge"},
        ),
        outputs=("EntityList",),
        effects=("readOnly",),
        quality=("authoritative",),
        cost="instant",
        diagnostics=("SELECTION_EMPTY", "SELECTION_INVALID"),
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
        aliases=("clearance", "gap", "minimum distance", "距离", "间隙", "最小距离"),
        intents=(
            "how far is the pin from the wall",
            "what is the clearance between the boss and the lid",
            "销钉离侧壁有多远",
            "凸台和盖子之间的间隙是多少",
        ),
        counter=("move a body by a distance", "how much two bodies overlap"),
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
        aliases=("overlap volume", "collision", "clash", "干涉", "干涉体积", "重叠"),
        intents=(
            "how much do the pin and the plate overlap",
            "do the boss and the pin collide",
            "销钉和底板的干涉体积是多少",
            "凸台和销钉有没有干涉",
        ),
        counter=("keep only the common part of two bodies", "the gap between two bodies"),
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
        aliases=("valid solid", "watertight", "实体有效性", "封闭"),
        intents=("check the part is a valid closed solid", "检查零件是否是有效的封闭实体"),
        counter=("check a wall thickness",),
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
        aliases=("volume limit", "体积范围"),
        intents=("the part must stay under 20 cm³", "零件体积不超过20立方厘米"),
        counter=("measure the volume",),
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
        aliases=("fits within", "envelope", "size limit", "包络尺寸", "尺寸限制"),
        intents=(
            "the part must fit in a 100 × 80 × 50 mm envelope",
            "the bracket may be at most 20 mm tall",
            "零件必须能放进100×80×50毫米的空间",
            "支架高度不超过20毫米",
        ),
        counter=("measure the bounding box", "scale a body to fit"),
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
        aliases=("no collision", "no clash", "clearance check", "无干涉", "不干涉", "碰撞检查"),
        intents=(
            "the lid must not collide with the boss",
            "check the pin does not interfere with the plate",
            "盖子不能和凸台干涉",
            "检查销钉和底板之间没有干涉",
        ),
        counter=("measure the gap between two bodies", "cut the overlap away"),
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
        aliases=("hole count", "bolt pattern check", "孔数检查", "孔阵列校验", "孔位检查"),
        intents=(
            "the flange must have exactly 4 holes of 6 mm along Z",
            "check the plate has six 5 mm through holes",
            "法兰必须正好有4个沿Z方向的6毫米孔",
            "检查底板上有6个直径5毫米的通孔",
        ),
        counter=("drill four holes", "measure a hole's diameter", "count the faces of a body"),
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
        aliases=("wall thickness", "thin walls", "printability", "壁厚", "最小壁厚", "薄壁检查"),
        intents=(
            "walls must be at least 1.5 mm thick",
            "check the enclosure has no wall thinner than 2 mm",
            "壁厚不能小于1.5毫米",
            "检查外壳最薄的壁是否至少2毫米",
        ),
        counter=("hollow a box with 2 mm walls", "measure the distance between two bodies"),
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
        aliases=("step file", "stp", "导出STEP"),
        intents=("export the bracket as STEP", "把支架导出为STEP文件"),
        counter=("import a STEP file",),
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
        aliases=("stl file", "mesh for printing", "导出STL"),
        intents=("export an STL for 3D printing", "导出用于3D打印的STL"),
        counter=("export an exact STEP model",),
        inputs=(Input("target", SHAPE, "The body to export (default: all).", required=False),),
        examples=({"target": "b:plate"},),
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
        aliases=("svg preview", "line drawing", "projection", "导出SVG", "线框图", "预览图"),
        intents=(
            "export a line drawing of the bracket as SVG",
            "give me an SVG preview of the part",
            "把支架导出为SVG线框图",
            "生成零件的SVG预览图",
        ),
        counter=("export an exact STEP model", "a dimensioned engineering drawing"),
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
        aliases=("3mf file", "print file", "导出3MF"),
        intents=("export the part as 3MF for the slicer", "把零件导出为3MF打印文件"),
        counter=("export an exact STEP model", "export an STL mesh"),
        inputs=(Input("target", SHAPE, "The body to export (default: all).", required=False),),
        examples=({"target": "b:plate"},),
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
        aliases=("step import", "load stp", "open step file", "导入STEP", "读取STP"),
        intents=(
            "import the bracket from bracket.step",
            "load a STEP file as a new body",
            "导入一个STEP文件",
            "把供应商的STP模型加载进来",
        ),
        counter=("export a STEP file", "import a mesh"),
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
        summary="Triangles for a viewer: a body (or all bodies) tessellated to 0.1 mm, as "
        "JSON with flat vertex and triangle arrays per body. The model is not changed.",
        aliases=("tessellate", "triangulate", "render mesh", "三角化", "显示网格"),
        intents=(
            "give me a mesh of the part to show in the viewer",
            "tessellate the bracket for a web preview",
            "生成用于显示的三角网格",
            "把支架三角化以便预览",
        ),
        counter=("export an STL file", "convert the body to an editable mesh body"),
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
