"""Synthetic capability catalogs of any size, for the search scaling benchmark.

:func:`synthetic_descriptors` makes ``n`` capability descriptors shaped like the first-party
OCCT package (``plugins/aira-kernel-occt/aira_kernel_occt/package/manifest.json``): all eight
kind values (the seven kinds of RFC-0002 §5.1, importer and exporter being one), each with
an execution target its kind allows, a primary path from :class:`TaxonomyPath` that fits,
English titles and summaries (a fifth are Chinese, as from a Chinese vendor), English and
Chinese aliases, intent examples and counterexamples, a self-contained Draft 2020-12 input
schema with an input example that validates against it, canonical defaults for optional
inputs, registered predicates, effects, risk, execution profile, diagnostics and
``produces``/``accepts``/``composesWith`` relations to other synthetic capabilities. The text
is assembled from a vocabulary of CAD verbs, features, parts, modifiers, file formats and
phrasing templates, so no two descriptors share all their strings and the BM25 vocabulary
and document lengths grow the way a real catalog's would. The descriptors pass
``lint_manifest``.

Descriptor ``i`` depends only on ``(seed, i)`` and, for its relations, on ``n``: a smaller
catalog is (up to relations) a prefix of a larger one with the same seed.

:func:`synthetic_catalog` wraps them in an object that quacks like
:class:`aira_core.catalog.catalog.Catalog` for :class:`aira_core.catalog.disclosure.Disclosure`
and :func:`aira_core.catalog.search.build_index`: packages of up to
:data:`PACKAGE_SIZE` descriptors (``.manifest`` is a real :class:`PackageManifest`),
``capabilities()``, ``discovery_catalog_hash()`` and ``authoring_lock_hash()`` (computed with
:mod:`aira_core.catalog.hashes`; kept after the first call unless ``keep_hashes`` is false).
Nothing is signed or admitted.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from aira_core.catalog import hashes
from aira_core.contracts.capability import CapabilityDescriptor, CapabilityKind, TaxonomyPath
from aira_core.contracts.package import PackageManifest

PACKAGE_SIZE = 250
"""Descriptors per synthetic package (a 10,000-descriptor catalog has 40 packages)."""
VENDORS = (
    "acme",
    "orbit",
    "helix",
    "nova",
    "kite",
    "forge",
    "quill",
    "atlas",
    "delta",
    "ember",
    "lumen",
    "pivot",
)
DRAFT = "https://json-schema.org/draft/2020-12/schema"

K = CapabilityKind
T = TaxonomyPath

# -- vocabulary -----------------------------------------------------------------------------

Word = tuple[str, str]  # (English, Chinese)

OBJECTS: tuple[Word, ...] = (
    ("plate", "底板"),
    ("bracket", "支架"),
    ("housing", "外壳"),
    ("flange", "法兰"),
    ("shaft", "轴"),
    ("lid", "盖子"),
    ("frame", "框架"),
    ("enclosure", "机壳"),
    ("gear", "齿轮"),
    ("hub", "轮毂"),
    ("mount", "安装座"),
    ("panel", "面板"),
    ("block", "块"),
    ("base", "底座"),
    ("cover", "盖板"),
    ("arm", "摆臂"),
    ("clamp", "夹具"),
    ("spacer", "垫块"),
    ("pulley", "滑轮"),
    ("knob", "旋钮"),
    ("manifold", "歧管"),
    ("hinge", "铰链"),
    ("rail", "导轨"),
    ("nozzle", "喷嘴"),
)
MODIFIERS: tuple[Word, ...] = (
    ("outer", "外侧"),
    ("inner", "内侧"),
    ("top", "顶部"),
    ("bottom", "底部"),
    ("vertical", "竖直"),
    ("horizontal", "水平"),
    ("sharp", "尖锐"),
    ("circular", "圆形"),
    ("tangent", "相切"),
    ("symmetric", "对称"),
    ("through", "贯通"),
    ("blind", "盲"),
    ("tapered", "锥形"),
    ("variable", "可变"),
    ("linear", "线性"),
    ("radial", "径向"),
    ("selected", "选中的"),
    ("front", "前部"),
    ("rear", "后部"),
    ("adjacent", "相邻"),
)
FORMATS: tuple[tuple[str, str], ...] = (  # (name, file extension)
    ("STEP", "step"),
    ("IGES", "igs"),
    ("STL", "stl"),
    ("3MF", "3mf"),
    ("OBJ", "obj"),
    ("DXF", "dxf"),
    ("SVG", "svg"),
    ("PLY", "ply"),
    ("glTF", "gltf"),
    ("Parasolid", "x_t"),
    ("JT", "jt"),
    ("AMF", "amf"),
    ("VRML", "wrl"),
    ("PDF", "pdf"),
    ("BREP", "brep"),
    ("IFC", "ifc"),
)
CLAUSES: tuple[Word, ...] = (
    ("with a constant size along the whole selection", "沿整个选择保持恒定尺寸"),
    ("along a guide path", "沿引导路径"),
    ("keeping the original faces where possible", "尽量保留原有的面"),
    ("so later steps can reference the result", "便于后续步骤引用结果"),
    ("in millimetres in the model's coordinate system", "以模型坐标系中的毫米为单位"),
    ("using the kernel's modelling tolerance", "使用内核的建模公差"),
    ("one feature per selected entity", "每个选中的实体生成一个特征"),
    ("with an optional symmetric extent", "可选对称范围"),
    ("measured from the selected face", "从选中的面开始测量"),
    ("following the design intent of the part", "遵循零件的设计意图"),
    ("without changing the remaining topology", "不改变其余拓扑"),
    ("on an exact B-rep body", "作用于精确的B-rep实体"),
    ("for preview and authoritative evaluation", "支持预览和精确计算"),
    ("with a per-instance offset", "每个实例带偏移"),
    ("relative to the chosen datum plane", "相对于选定的基准面"),
    ("for parts made by milling or 3D printing", "适用于铣削或3D打印的零件"),
)
SECOND_SENTENCES = (
    "Fails with a diagnostic instead of guessing when the inputs do not fit the geometry.",
    "The result is a new revision; the previous one stays available.",
    "Large selections can take several seconds on complex parts.",
    "Units are millimetres and degrees unless stated otherwise.",
    "References to entities that the operation replaces may need to be re-selected.",
    "Use the preview quality for quick feedback and authoritative for the final model.",
)

# -- inputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Param:
    schema: dict[str, Any]
    amir_type: str
    values: tuple[Any, ...]
    """Example values (the first one is the canonical default of an optional input)."""


def _num(amir_type: str, description: str, values: tuple[Any, ...], **limits: Any) -> _Param:
    schema = {"type": "number", "x-amir-type": amir_type, "description": description, **limits}
    return _Param(schema, amir_type, values)


LENGTHS = (1, 2, 2.5, 3, 5, 8, 10, 12.5, 20, 40)
PARAMS: dict[str, _Param] = {
    "target": _Param(
        {
            "type": "string",
            "minLength": 1,
            "x-amir-type": "Shape",
            "description": "The body to work on (alias such as 'b:plate', or its id).",
        },
        "Shape",
        ("b:plate", "b:bracket", "b:housing", "b:lid"),
    ),
    "tool": _Param(
        {
            "type": "string",
            "minLength": 1,
            "x-amir-type": "Shape",
            "description": "The second body of the operation.",
        },
        "Shape",
        ("b:boss", "b:pin", "b:cutter"),
    ),
    "sketch": _Param(
        {"type": "string", "minLength": 1, "x-amir-type": "Profile", "description": "A profile."},
        "Profile",
        ("p:outline", "p:slot"),
    ),
    "selection": _Param(
        {
            "type": "string",
            "minLength": 1,
            "x-amir-type": "Selection",
            "description": "Entities by selector: '>Z', '|Z', '%CIRCLE', combined with and/or.",
        },
        "Selection",
        ("|Z", ">Z", "<X", "%CIRCLE", "|Z and >X"),
    ),
    "radius": _num("Length", "Radius (mm).", LENGTHS, exclusiveMinimum=0),
    "distance": _num("Length", "Distance (mm).", LENGTHS, exclusiveMinimum=0),
    "depth": _num("Length", "Depth (mm).", LENGTHS, exclusiveMinimum=0),
    "width": _num("Length", "Width (mm).", LENGTHS, exclusiveMinimum=0),
    "height": _num("Length", "Height (mm).", LENGTHS, exclusiveMinimum=0),
    "length": _num("Length", "Length (mm).", LENGTHS, exclusiveMinimum=0),
    "thickness": _num("Length", "Wall or sheet thickness (mm).", LENGTHS, exclusiveMinimum=0),
    "spacing": _num("Length", "Spacing between instances (mm).", LENGTHS, exclusiveMinimum=0),
    "offset": _num("Length", "Offset from the reference (mm).", (0, 1, 5, 10), minimum=0),
    "tolerance": _num("Length", "Tolerance (mm).", (0.01, 0.05, 0.1), exclusiveMinimum=0),
    "cellSize": _num("Length", "Cell size (mm).", (2, 4, 6), exclusiveMinimum=0),
    "angle": _num(
        "Angle", "Angle (degrees).", (45, 15, 30, 60, 90), exclusiveMinimum=0, maximum=360
    ),
    "strength": _num("Real", "Strength from 0 to 1.", (0.5, 0.2, 0.8), minimum=0, maximum=1),
    "limit": _num("Real", "The limit to check against.", (1, 1.5, 2, 100), minimum=0),
    "count": _Param(
        {"type": "integer", "minimum": 1, "x-amir-type": "Count", "description": "How many."},
        "Count",
        (1, 2, 3, 4, 6, 8, 12),
    ),
    "samples": _Param(
        {"type": "integer", "minimum": 1, "x-amir-type": "Count", "description": "Samples."},
        "Count",
        (8, 4, 16),
    ),
    "plane": _Param(
        {"enum": ["XY", "YZ", "XZ"], "x-amir-type": "String", "description": "The plane."},
        "String",
        ("XY", "YZ", "XZ"),
    ),
    "flip": _Param(
        {"type": "boolean", "x-amir-type": "Bool", "description": "Reverse the direction."},
        "Bool",
        (False, True),
    ),
    "centered": _Param(
        {"type": "boolean", "x-amir-type": "Bool", "description": "Centre on the origin."},
        "Bool",
        (True, False),
    ),
    "keepTool": _Param(
        {"type": "boolean", "x-amir-type": "Bool", "description": "Keep the tool body."},
        "Bool",
        (False, True),
    ),
    "path": _Param(
        {
            "type": "string",
            "minLength": 1,
            "x-amir-type": "String",
            "description": "Where to write the file.",
        },
        "String",
        ("out/part", "exports/bracket", "build/housing"),
    ),
    "data": _Param(
        {
            "type": "string",
            "minLength": 1,
            "x-amir-type": "String",
            "description": "The file's contents (text or base64).",
        },
        "String",
        ("fixture:plate", "fixture:bracket"),
    ),
    "name": _Param(
        {
            "type": "string",
            "pattern": "^[a-z][A-Za-z0-9_]*$",
            "x-amir-type": "String",
            "description": "The parameter's name.",
        },
        "String",
        ("wallThickness", "holeDia", "len0"),
    ),
    "value": _Param(
        {"type": "number", "x-amir-type": "Real", "description": "The value."},
        "Real",
        (2, 10, 42.5),
    ),
    "options": _Param(
        {"type": "object", "x-amir-type": "Json", "description": "Extra options."},
        "Json",
        ({}, {"quality": "high"}),
    ),
}

# -- families -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Family:
    """A group of similar capabilities: one kind, its target field, a taxonomy leaf and the
    words its descriptors are made of."""

    kind: CapabilityKind
    leaves: tuple[TaxonomyPath, ...]
    namespace: str
    targets: tuple[str, ...]
    verbs: tuple[Word, ...]
    nouns: tuple[Word, ...]
    required: tuple[str, ...]
    optional: tuple[str, ...]
    produces: tuple[str, ...]
    accepts: tuple[str, ...]
    style: str
    """Which phrasing templates: make, query, check, export, import, convert, repair, flow."""
    weight: int
    selection: str | None = None
    representation: str | None = None


def _w(pairs: str) -> tuple[Word, ...]:
    """``"en/zh, en/zh"`` → word pairs."""
    out = []
    for pair in pairs.split(","):
        en, zh = pair.strip().split("/")
        out.append((en, zh))
    return tuple(out)


FAMILIES: tuple[_Family, ...] = (
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_EXACT_FINISHING,),
        "exact",
        ("operationRef",),
        _w("fillet/倒圆角, chamfer/倒角, round/圆化, blend/圆滑过渡, bevel/斜切, deburr/去毛刺"),
        _w("edges/边, corners/拐角, rims/边缘, seams/接缝, outlines/轮廓线"),
        ("target", "selection", "radius"),
        ("angle", "tolerance"),
        ("ExactSolid",),
        ("ExactSolid", "EntitySet"),
        "make",
        9,
        selection="Edge",
        representation="ExactSolid",
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_EXACT_FEATURE,),
        "exact",
        ("operationRef",),
        _w(
            "extrude/拉伸, sweep/扫掠, loft/放样, shell/抽壳, thicken/加厚, draft/拔模, "
            "emboss/压印, engrave/雕刻, pocket/挖槽, drill/钻, bore/镗, counterbore/沉孔, "
            "countersink/锪孔, tap/攻丝, knurl/滚花"
        ),
        _w(
            "holes/孔, pockets/凹槽, bosses/凸台, ribs/加强筋, grooves/沟槽, slots/槽, "
            "webs/腹板, walls/壁, lugs/凸耳, keyways/键槽, threads/螺纹"
        ),
        ("target", "depth"),
        ("width", "angle", "flip", "count"),
        ("ExactSolid",),
        ("ExactSolid",),
        "make",
        14,
        selection="Face",
        representation="ExactSolid",
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_EXACT_PRIMITIVE,),
        "exact",
        ("operationRef",),
        _w("create/创建, make/做, add/添加, model/建模, build/生成"),
        _w(
            "box/长方体, cylinder/圆柱, sphere/球体, cone/圆锥, torus/圆环, wedge/楔形, "
            "prism/棱柱, pyramid/棱锥, capsule/胶囊体, tube/圆管, ellipsoid/椭球"
        ),
        ("length", "width", "height"),
        ("centered", "radius"),
        ("ExactSolid",),
        (),
        "make",
        6,
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_EXACT_BOOLEAN,),
        "exact",
        ("operationRef",),
        _w("union/合并, fuse/融合, subtract/相减, cut/切除, intersect/求交, split/分割, trim/修剪"),
        _w("bodies/实体, solids/实体块, shapes/形体, tools/工具体, volumes/体积块"),
        ("target", "tool"),
        ("keepTool",),
        ("ExactSolid",),
        ("ExactSolid",),
        "make",
        5,
        representation="ExactSolid",
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_EXACT_FEATURE,),
        "xform",
        ("operationRef",),
        _w(
            "mirror/镜像, pattern/阵列, translate/平移, rotate/旋转, scale/缩放, array/排列, "
            "copy/复制, align/对齐"
        ),
        _w("bodies/实体, features/特征, holes/孔, instances/实例, components/零件"),
        ("target", "distance"),
        ("count", "angle", "plane"),
        ("ExactSolid",),
        ("ExactSolid",),
        "make",
        5,
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_SKETCH_PROFILE, T.AUTHORING_SKETCH_PRIMITIVE),
        "sketch",
        ("operationRef",),
        _w("draw/绘制, sketch/草绘, trace/描绘, outline/勾勒"),
        _w(
            "rectangle/矩形, circle/圆, polygon/多边形, slot/腰形槽, arc/圆弧, spline/样条线, "
            "ellipse/椭圆, polyline/折线, star/星形, obround/长圆形"
        ),
        ("width", "height"),
        ("plane", "centered", "count"),
        ("Profile",),
        (),
        "make",
        5,
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_SKETCH_CONSTRAINT,),
        "sketch",
        ("operationRef",),
        _w("constrain/约束, fix/固定, dimension/标注, relate/关联"),
        _w("lines/直线, points/点, arcs/圆弧, segments/线段, curves/曲线"),
        ("sketch", "distance"),
        ("angle",),
        ("Profile",),
        ("Profile",),
        "make",
        2,
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_DATUM,),
        "datum",
        ("operationRef",),
        _w("place/放置, define/定义, insert/插入"),
        _w(
            "datum plane/基准面, datum axis/基准轴, reference point/参考点, "
            "coordinate system/坐标系, work plane/工作平面"
        ),
        ("offset",),
        ("angle", "plane"),
        ("Datum",),
        (),
        "make",
        2,
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_MESH,),
        "mesh",
        ("operationRef",),
        _w("smooth/平滑, subdivide/细分, sculpt/雕塑, inflate/膨胀, relax/松弛, displace/置换"),
        _w("mesh/网格, triangles/三角面, vertices/顶点, quads/四边面, patches/面片"),
        ("target", "count"),
        ("strength",),
        ("MeshBody",),
        ("MeshBody",),
        "make",
        3,
        representation="MeshBody",
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_FIELD,),
        "field",
        ("operationRef",),
        _w("fill/填充, grade/渐变, generate/生成, infill/内填充"),
        _w(
            "lattice/晶格, gyroid/螺旋体, density field/密度场, voronoi foam/泰森泡沫, "
            "honeycomb/蜂窝结构"
        ),
        ("target", "cellSize"),
        ("thickness",),
        ("ImplicitField",),
        ("ExactSolid", "MeshBody"),
        "make",
        2,
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_ASSEMBLY,),
        "asm",
        ("operationRef",),
        _w("mate/配合, insert/插入, constrain/约束, align/对齐, fasten/紧固, explode/爆炸"),
        _w(
            "components/零件, subassemblies/子装配, fasteners/紧固件, bolts/螺栓, "
            "bearings/轴承, hinges/铰链"
        ),
        ("target", "offset"),
        ("angle", "flip"),
        ("Assembly",),
        ("ExactSolid", "Assembly"),
        "make",
        3,
    ),
    _Family(
        K.AUTHORING_OPERATION,
        (T.AUTHORING_EXACT_FEATURE,),
        "param",
        ("patchTemplateRef",),
        _w("define/定义, set/设置, rename/重命名, expose/公开"),
        _w("parameter/参数, variable/变量, design table/设计表, configuration/配置"),
        ("name", "value"),
        (),
        ("Parameter",),
        (),
        "make",
        2,
    ),
    _Family(
        K.MODEL_QUERY,
        (T.QUERY_GEOMETRIC,),
        "query",
        ("queryRef",),
        _w("measure/测量, compute/计算, report/报告, get/获取"),
        _w(
            "volume/体积, surface area/表面积, mass/质量, centroid/质心, "
            "bounding box/包围盒, moment of inertia/惯性矩, curvature/曲率, "
            "minimum distance/最小距离, clearance/间隙, thickness/厚度, perimeter/周长"
        ),
        ("target",),
        ("tolerance",),
        ("Measurement",),
        ("ExactSolid",),
        "query",
        8,
    ),
    _Family(
        K.MODEL_QUERY,
        (T.QUERY_TOPOLOGY,),
        "query",
        ("queryRef",),
        _w("count/统计, list/列出, find/查找, select/选择"),
        _w(
            "faces/面, edges/边, vertices/顶点, shells/壳, loops/环, adjacent faces/相邻面, "
            "circular edges/圆形边, planar faces/平面"
        ),
        ("target",),
        ("selection",),
        ("EntityList",),
        ("ExactSolid",),
        "query",
        4,
    ),
    _Family(
        K.MODEL_QUERY,
        (T.QUERY_IDENTITY_LINEAGE, T.QUERY_DEPENDENCY_IMPACT, T.QUERY_CONSTRAINT),
        "query",
        ("queryRef",),
        _w("trace/追溯, explain/解释, show/显示, find/查找"),
        _w(
            "feature history/特征历史, parent features/父特征, dependent steps/依赖步骤, "
            "naming lineage/命名来源, change impact/变更影响, "
            "unsatisfied constraints/未满足约束, degrees of freedom/自由度"
        ),
        ("target",),
        (),
        ("Report",),
        ("ExactSolid",),
        "query",
        3,
    ),
    _Family(
        K.VALIDATOR,
        (T.VALIDATION_GEOMETRIC,),
        "validate",
        ("validatorRef",),
        _w("check/检查, verify/验证, ensure/确保, validate/校验"),
        _w(
            "watertightness/水密性, self-intersections/自相交, interference/干涉, "
            "solid validity/实体有效性, minimum radius/最小圆角, hole spacing/孔间距"
        ),
        ("target",),
        ("tolerance",),
        ("ValidationResult",),
        ("ExactSolid",),
        "check",
        5,
    ),
    _Family(
        K.VALIDATOR,
        (T.VALIDATION_REQUIREMENTS,),
        "validate",
        ("validatorRef",),
        _w("check/检查, verify/验证, ensure/确保, audit/审查"),
        _w(
            "volume limits/体积范围, envelope size/外形尺寸, mass budget/质量预算, "
            "edge distance/边距, tolerance stack/公差累积"
        ),
        ("target", "limit"),
        (),
        ("ValidationResult",),
        ("ExactSolid",),
        "check",
        4,
    ),
    _Family(
        K.VALIDATOR,
        (T.VALIDATION_MANUFACTURING, T.VALIDATION_EXCHANGE),
        "validate",
        ("validatorRef",),
        _w("check/检查, verify/验证, validate/校验, audit/审查"),
        _w(
            "wall thickness/壁厚, draft angle/拔模角, overhangs/悬垂, undercuts/倒扣, "
            "printability/可打印性, machinability/可加工性, export fidelity/导出保真度"
        ),
        ("target", "limit"),
        ("samples",),
        ("ValidationResult",),
        ("ExactSolid",),
        "check",
        4,
    ),
    _Family(
        K.EXPORTER,
        (T.IO_EXPORT,),
        "io",
        ("ioRef",),
        _w("export/导出, save/保存, write/写出, publish/发布"),
        (),
        ("target", "path"),
        ("tolerance",),
        ("File",),
        ("ExactSolid",),
        "export",
        7,
    ),
    _Family(
        K.IMPORTER,
        (T.IO_IMPORT,),
        "io",
        ("ioRef",),
        _w("import/导入, load/加载, read/读取, open/打开"),
        (),
        ("data",),
        ("options",),
        ("ExactSolid",),
        (),
        "import",
        4,
    ),
    _Family(
        K.CONVERTER,
        (T.IO_EXPORT, T.AUTHORING_MESH),
        "convert",
        ("ioRef", "operationRef"),
        _w(
            "tessellate/三角化, remesh/重新网格化, voxelize/体素化, decimate/抽稀, "
            "simplify/简化, convert/转换"
        ),
        _w(
            "display mesh/显示网格, point cloud/点云, voxel grid/体素网格, "
            "preview mesh/预览网格, surface patches/曲面片, level of detail/细节层次"
        ),
        ("target",),
        ("tolerance",),
        ("DisplayMesh",),
        ("ExactSolid",),
        "convert",
        3,
    ),
    _Family(
        K.REPAIR,
        (T.VALIDATION_GEOMETRIC, T.AUTHORING_MESH),
        "repair",
        ("patchTemplateRef", "workflowRef"),
        _w("heal/修复, close/闭合, sew/缝合, remove/移除, merge/合并, fill/填补"),
        _w(
            "gaps/缝隙, sliver faces/碎面, flipped normals/反向法线, "
            "duplicate vertices/重复顶点, open shells/开放壳体, short edges/短边, "
            "mesh holes/网格破洞"
        ),
        ("target",),
        ("tolerance",),
        ("ExactSolid",),
        ("ExactSolid", "MeshBody"),
        "repair",
        2,
    ),
    _Family(
        K.WORKFLOW,
        (T.AUTHORING_EXACT_FEATURE, T.AUTHORING_ASSEMBLY, T.VALIDATION_MANUFACTURING),
        "flow",
        ("workflowRef",),
        _w("design/设计, generate/生成, configure/配置, lay out/布置, prepare/准备"),
        _w(
            "bolt circle/螺栓圆, heat sink/散热器, spur gear/直齿轮, mounting bracket/安装支架, "
            "print job/打印任务, drawing sheet/图纸, snap fit/卡扣, cable clip/线夹"
        ),
        ("count", "spacing"),
        ("thickness", "centered"),
        ("ExactSolid",),
        (),
        "flow",
        2,
    ),
)
_FAMILY_WEIGHTS = [f.weight for f in FAMILIES]

DIAGNOSTIC_POOL = (
    "KERNEL_TIMEOUT",
    "KERNEL_UNAVAILABLE",
    "KERNEL_INPUT_INVALID",
    "KERNEL_OPERATION_FAILED",
    "KERNEL_WORKER_CRASHED",
    "UNIT_MISMATCH",
    "PARAMETER_OUT_OF_RANGE",
    "SELECTION_EMPTY",
    "SOLID_INVALID",
    "QUERY_TARGET_UNKNOWN",
)

# -- phrasing -------------------------------------------------------------------------------
# Placeholders: {v} verb, {n} noun, {m} modifier, {o} object, {k} a number, {f} a format,
# {x} a file extension, {c} a clause. The *_ZH templates take the Chinese words.

TEMPLATES: dict[str, dict[str, tuple[str, ...]]] = {
    "make": {
        "title": ("{V} {m} {n}", "{V} {n}", "{V} {n} on a {o}"),
        "summary": (
            "{V} the {m} {n} of a {o} {c}.",
            "{V} {n} on the selected body {c}.",
            "{V} {m} {n} {c}; the inputs are checked before the kernel runs.",
        ),
        "intent": (
            "{v} the {m} {n} of the {o} by {k} mm",
            "I need to {v} the {n} on this {o}",
            "{v} {n} on the {o}, about {k} mm",
            "can you {v} the {m} {n}",
            "please {v} all {n} of the {o} {k} mm",
        ),
        "title_zh": ("{m}{n}{v}", "{v}{n}"),
        "summary_zh": ("对{o}的{m}{n}进行{v}，{c}。", "在选中的实体上{v}{n}，{c}。"),
        "intent_zh": (
            "把{o}的{m}{n}{v}{k}毫米",
            "给{o}{v}{n}",
            "{v}{o}上的{n}",
            "我想{v}这个{o}的{n}",
        ),
    },
    "query": {
        "title": ("{N}", "{N} of a body", "{V} {n}"),
        "summary": (
            "{V} the {n} of a body {c}; the model is not changed.",
            "The {n} of a {o}, {c}. Read-only.",
        ),
        "intent": (
            "what is the {n} of the {o}",
            "how much {n} does the {o} have",
            "{v} the {n} of the {o}",
            "tell me the {m} {n}",
        ),
        "title_zh": ("{n}", "{v}{n}"),
        "summary_zh": ("{v}实体的{n}，{c}；不修改模型。",),
        "intent_zh": ("{o}的{n}是多少", "{v}{o}的{n}", "告诉我{o}的{m}{n}"),
    },
    "check": {
        "title": ("{N} check", "{V} {n}", "{N} within limits"),
        "summary": (
            "{V} that the {n} of the {o} meets a limit {c}.",
            "Passes when the {n} stays within the given limit; reports where it does not.",
        ),
        "intent": (
            "check the {n} of the {o} is within {k} mm",
            "make sure the {o} passes a {n} check",
            "{v} {n} before release",
            "the {o} must have {n} of at least {k} mm",
        ),
        "title_zh": ("{n}检查", "{v}{n}"),
        "summary_zh": ("{v}{o}的{n}是否满足限值，{c}。",),
        "intent_zh": ("检查{o}的{n}是否满足要求", "确保{o}的{n}不小于{k}毫米", "{v}{o}的{n}"),
    },
    "export": {
        "title": ("{V} {f}", "{V} as {f}", "{f} {v}"),
        "summary": (
            "Write a body as a {f} file {c}.",
            "{V} the model to {f} (.{x}) {c}.",
        ),
        "intent": (
            "export the {o} as {f}",
            "save the {o} to a {f} file",
            "I need a {f} of the {o}",
            "{v} {o}.{x} for the supplier",
        ),
        "title_zh": ("{v}{f}", "{v}为{f}"),
        "summary_zh": ("把实体{v}为{f}文件，{c}。",),
        "intent_zh": ("把{o}导出为{f}", "{v}{f}文件", "给供应商{v}一个{f}"),
    },
    "import": {
        "title": ("{V} {f}", "{V} a {f} file", "{f} {v}"),
        "summary": (
            "A new body from a {f} (.{x}) file {c}.",
            "{V} the solids of a {f} file as new bodies {c}.",
        ),
        "intent": (
            "import the {o} from a {f} file",
            "{v} {o}.{x}",
            "{v} the supplier's {f} model",
        ),
        "title_zh": ("{v}{f}", "{v}{f}文件"),
        "summary_zh": ("从{f}文件{v}新实体，{c}。",),
        "intent_zh": ("从{f}文件{v}{o}", "把供应商的{f}模型{v}进来"),
    },
    "convert": {
        "title": ("{V} to {n}", "{N}", "{V} {n}"),
        "summary": (
            "{V} a body into a {n} {c}; the model is not changed.",
            "A {n} of the {o} for a viewer or a downstream tool, {c}.",
        ),
        "intent": (
            "{v} the {o} into a {n}",
            "give me a {n} of the {o}",
            "{v} the part for a web preview",
        ),
        "title_zh": ("{v}为{n}", "{n}"),
        "summary_zh": ("把实体{v}为{n}，{c}；不修改模型。",),
        "intent_zh": ("把{o}{v}成{n}", "生成{o}的{n}"),
    },
    "repair": {
        "title": ("{V} {n}", "{V} {m} {n}", "{N} repair"),
        "summary": (
            "Propose a patch that will {v} the {n} of an imported body {c}.",
            "{V} {n} found by validation {c}; the patch is proposed, not applied.",
        ),
        "intent": (
            "{v} the {n} in the imported {o}",
            "the {o} has {n}, {v} them",
            "{v} {m} {n}",
        ),
        "title_zh": ("{v}{n}", "{n}修复"),
        "summary_zh": ("提出补丁以{v}{o}中的{n}，{c}。",),
        "intent_zh": ("{v}{o}里的{n}", "导入的{o}有{n}，帮我{v}"),
    },
    "flow": {
        "title": ("{V} a {n}", "{N} wizard", "{N} workflow"),
        "summary": (
            "{V} a {n} in several steps {c}.",
            "A guided workflow to {v} a {n} for a {o} {c}.",
        ),
        "intent": (
            "{v} a {n} for the {o}",
            "{v} a {n} with {k} holes",
            "help me {v} a {n}",
        ),
        "title_zh": ("{v}{n}", "{n}向导"),
        "summary_zh": ("分几步{v}{n}，{c}。",),
        "intent_zh": ("为{o}{v}一个{n}", "帮我{v}{n}"),
    },
}

KIND_PROFILE: dict[CapabilityKind, dict[str, Any]] = {
    K.AUTHORING_OPERATION: {
        "effects": (["createsFeature", "additive"], ["createsFeature", "changesTopology"]),
        "risk": ("low", "medium"),
        "quality": (["preview", "authoritative"],),
        "cost": ("interactive", "interactive-to-heavy"),
    },
    K.MODEL_QUERY: {
        "effects": (["readOnly"],),
        "risk": ("low",),
        "quality": (["authoritative"], ["approximate"]),
        "cost": ("instant", "interactive"),
    },
    K.VALIDATOR: {
        "effects": (["readOnly"],),
        "risk": ("low",),
        "quality": (["authoritative"], ["sampled"]),
        "cost": ("interactive", "heavy"),
    },
    K.EXPORTER: {
        "effects": (["externalSideEffect"],),
        "risk": ("low", "medium"),
        "quality": (["approximate"], ["authoritative"]),
        "cost": ("interactive",),
    },
    K.IMPORTER: {
        "effects": (["additive", "createsFeature"],),
        "risk": ("low",),
        "quality": (["authoritative"],),
        "cost": ("interactive", "heavy"),
    },
    K.CONVERTER: {
        "effects": (["readOnly"],),
        "risk": ("low",),
        "quality": (["approximate"], ["preview"]),
        "cost": ("interactive", "heavy"),
    },
    K.REPAIR: {
        "effects": (["changesTopology"],),
        "risk": ("medium", "high"),
        "quality": (["authoritative"], ["approximate"]),
        "cost": ("interactive-to-heavy", "heavy"),
    },
    K.WORKFLOW: {
        "effects": (["createsFeature", "additive"],),
        "risk": ("medium",),
        "quality": (["preview", "authoritative"],),
        "cost": ("heavy", "batch"),
    },
}

# -- one descriptor -------------------------------------------------------------------------


def _camel(*words: str) -> str:
    parts = [p for w in words for p in re.split(r"[^A-Za-z0-9]+", w) if p]
    head, *rest = parts
    return head.lower() + "".join(p[:1].upper() + p[1:].lower() for p in rest)


def _cap_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fill(template: str, words: dict[str, str]) -> str:
    text = template.format(**words)
    return " ".join(text.split())


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item.casefold() not in seen:
            seen.add(item.casefold())
            out.append(item)
    return out


def _number(rng: random.Random) -> str:
    return str(rng.choice((0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 40, 60)))


@dataclass(frozen=True)
class _Head:
    """What a descriptor's id is made of, drawn first from its own random stream."""

    rng: random.Random
    family: _Family
    verb: Word
    fmt: str
    ext: str
    noun: Word
    vendor: str
    name: str
    major: int


def _head(i: int, seed: int) -> _Head:
    rng = random.Random(f"aira-synthetic:{seed}:{i}")
    fam = rng.choices(FAMILIES, weights=_FAMILY_WEIGHTS)[0]
    verb = rng.choice(fam.verbs)
    fmt, ext = rng.choice(FORMATS)
    noun = rng.choice(fam.nouns) if fam.nouns else (fmt, fmt)
    major = 1 if rng.random() < 0.85 else 2
    vendor = VENDORS[(i // PACKAGE_SIZE) % len(VENDORS)]
    name = f"{vendor}.{fam.namespace}.{_camel(verb[0], noun[0])}{i}"
    return _Head(rng, fam, verb, fmt, ext, noun, vendor, name, major)


def _cap_id(i: int, seed: int) -> str:
    """The capability id of descriptor ``i`` (without building the rest of it)."""
    h = _head(i, seed)
    return f"cap:{h.name}@{h.major}"


def _descriptor(i: int, n: int, seed: int) -> tuple[dict[str, Any], dict[str, dict]]:
    h = _head(i, seed)
    rng, fam, verb, fmt, ext, noun = h.rng, h.family, h.verb, h.fmt, h.ext, h.noun
    vendor, name, major = h.vendor, h.name, h.major
    kind_profile = KIND_PROFILE[fam.kind]
    phr = TEMPLATES[fam.style]
    mod = rng.choice(MODIFIERS)
    obj = rng.choice(OBJECTS)
    clause = rng.choice(CLAUSES)

    def words(lang: int) -> dict[str, str]:
        w = {
            "v": verb[lang],
            "n": noun[lang],
            "m": mod[lang],
            "o": obj[lang],
            "c": clause[lang],
            "f": fmt,
            "x": ext,
            "k": _number(rng),
        }
        w["V"], w["N"] = _cap_first(w["v"]), _cap_first(w["n"])
        return w

    en, zh = words(0), words(1)
    chinese_vendor = rng.random() < 0.2
    if chinese_vendor:
        title = _fill(rng.choice(phr["title_zh"]), zh)
        summary = _fill(rng.choice(phr["summary_zh"]), zh)
    else:
        title = _fill(rng.choice(phr["title"]), en)
        summary = _fill(rng.choice(phr["summary"]), en)
        if rng.random() < 0.4:
            summary += " " + rng.choice(SECOND_SENTENCES)

    other_verb = rng.choice([v for v in fam.verbs if v != verb] or [verb])
    other_mod = rng.choice(MODIFIERS)
    noun_word = noun[0]  # the format's name for importers and exporters
    aliases = _unique(
        [
            a
            for a in (
                f"{verb[0]} {noun_word}",
                f"{other_verb[0]} {noun_word}" if rng.random() < 0.6 else "",
                f"{other_mod[0]} {noun_word} {verb[0]}" if rng.random() < 0.3 else "",
                f"{verb[1]}{noun[1]}",
                f"{other_mod[1]}{noun[1]}" if rng.random() < 0.5 else "",
            )
            if a
        ]
    )
    intents = [
        _fill(t, words(0)) for t in rng.sample(phr["intent"], k=min(2, len(phr["intent"])))
    ] + [
        _fill(t, words(1))
        for t in rng.sample(phr["intent_zh"], k=rng.randint(1, min(2, len(phr["intent_zh"]))))
    ]
    intents = _unique(intents)
    other = rng.choice([f for f in FAMILIES if f.style != fam.style])
    o_verb = rng.choice(other.verbs)
    o_noun = rng.choice(other.nouns) if other.nouns else (fmt, fmt)
    counters = [f"{o_verb[0]} the {o_noun[0]} of the {obj[0]}"]
    if rng.random() < 0.5:
        counters.append(f"{o_verb[1]}{obj[1]}的{o_noun[1]}")

    # identity and target
    version = f"{major}.{rng.randint(0, 4)}.{rng.randint(0, 9)}"
    ref = f"{name}@{version}"
    target_field = rng.choice(fam.targets)
    leaf = rng.choice(fam.leaves)

    # inputs: the family's required inputs, and some of its optional ones
    required = list(fam.required)
    optional = [p for p in fam.optional if rng.random() < 0.7]
    props = {p: dict(PARAMS[p].schema) for p in required + optional}
    in_ref = f"amir://ops/{name}/{version}/input"
    out_ref = f"amir://ops/{name}/{version}/output"
    schemas: dict[str, dict] = {
        in_ref: {
            "$schema": DRAFT,
            "title": f"{ref} input",
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        },
        out_ref: {"type": "object", "title": f"{ref} output"},
    }
    example_inputs = []
    for _ in range(rng.randint(1, 2)):
        example: dict[str, Any] = {p: rng.choice(PARAMS[p].values) for p in required}
        for p in optional:
            if rng.random() < 0.5:
                example[p] = rng.choice(PARAMS[p].values)
        example_inputs.append({"input": example})
    defaults = {p: PARAMS[p].values[0] for p in optional if rng.random() < 0.5}
    lengths = [p for p in required + optional if PARAMS[p].amir_type == "Length"]
    predicates = []
    if lengths:
        predicates.append(
            {
                "id": "input.greaterThanTolerance" if lengths[0] == "radius" else "input.positive",
                "args": {"input": lengths[0]},
            }
        )
    applicability: dict[str, Any] = {"predicates": predicates}
    if fam.representation:
        applicability["requiresRepresentation"] = [fam.representation]
    if fam.selection and "selection" in props:
        applicability["selection"] = {"entityKind": fam.selection, "cardinality": "oneOrMore"}

    out_types = [f"{fmt.replace(' ', '')}File" if t == "File" else t for t in fam.produces]
    in_types = sorted({PARAMS[p].amir_type for p in props})
    relations: dict[str, list[str]] = {"produces": out_types}
    if fam.accepts:
        relations["accepts"] = list(fam.accepts)
    if n > 1:
        others = {rng.randrange(n) for _ in range(rng.randint(1, 2))} - {i}
        if others:
            relations["composesWith"] = [_cap_id(j, seed) for j in sorted(others)]
        if rng.random() < 0.25:
            j = rng.randrange(n)
            if j != i:
                relations["alternativeTo"] = [_cap_id(j, seed)]

    family_code = re.sub(r"[^A-Z0-9]+", "_", f"{fam.namespace}_{verb[0]}_FAILED".upper())
    diagnostics = [family_code, *rng.sample(DIAGNOSTIC_POOL, k=rng.randint(2, 6))]
    if fam.kind is K.REPAIR:  # a repair names what it repairs (no draw: the rest stays put)
        relations["repairsDiagnostic"] = [diagnostics[1]]
    effects = rng.choice(kind_profile["effects"])
    risk_level = rng.choice(kind_profile["risk"])
    destructive = fam.kind is K.REPAIR and risk_level == "high"
    descriptor: dict[str, Any] = {
        "capabilityId": f"cap:{name}@{major}",
        "kind": fam.kind.value,
        target_field: ref,
        "profileVersion": f"1.{rng.randint(0, 3)}.0",
        "title": title,
        "summary": summary,
        "aliases": aliases,
        "taxonomy": {"primary": leaf.value, "facets": [fam.namespace]},
        "intentExamples": intents,
        "counterExamples": counters,
        "inputExamples": example_inputs,
        "inputs": {"schemaRef": in_ref, "semanticTypes": in_types},
        "outputs": {"schemaRef": out_ref, "semanticTypes": out_types},
        "defaults": defaults,
        "applicability": applicability,
        "purity": "effectful" if "externalSideEffect" in effects else "pure",
        "effects": list(effects),
        "risk": {
            "level": risk_level,
            "destructive": destructive,
            "reversibleByRevision": True,
            "mayInvalidateRefs": "changesTopology" in effects,
        },
        "execution": {
            "quality": list(rng.choice(kind_profile["quality"])),
            "requiredCapabilities": [f"{vendor}.kernel"],
            "costClass": rng.choice(kind_profile["cost"]),
            "cancellable": rng.random() < 0.7,
        },
        "diagnostics": diagnostics,
        "relations": relations,
    }
    if fam.kind is K.REPAIR and target_field == "patchTemplateRef":
        # the candidate halves the failing step's first length (data, no draw)
        arg = lengths[0] if lengths else "value"
        descriptor["patchTemplate"] = {"set": {arg: f"value(args[{arg!r}]) * 0.5"}}
    if rng.random() < 0.3:
        descriptor["guidance"] = {
            "failureModes": [
                {
                    "diagnostic": family_code,
                    "explanation": f"the {noun_word} of the {obj[0]} cannot take these inputs",
                    "repair": f"change the {lengths[0] if lengths else 'inputs'} and retry",
                }
            ]
        }
    return descriptor, schemas


# -- public API -----------------------------------------------------------------------------


def synthetic_descriptor_dicts(n: int, seed: int = 0) -> tuple[list[dict], dict[str, dict]]:
    """The wire form (camelCase dicts) of :func:`synthetic_descriptors`."""
    if n < 0:
        raise ValueError("n must be >= 0")
    descriptors: list[dict] = []
    schemas: dict[str, dict] = {}
    for i in range(n):
        d, s = _descriptor(i, n, seed)
        descriptors.append(d)
        schemas.update(s)
    return descriptors, schemas


def synthetic_descriptors(
    n: int, seed: int = 0
) -> tuple[list[CapabilityDescriptor], dict[str, dict]]:
    """``n`` synthetic descriptors and their input and output schemas by ``schemaRef``."""
    raw, schemas = synthetic_descriptor_dicts(n, seed)
    return [CapabilityDescriptor.model_validate(d) for d in raw], schemas


@dataclass(frozen=True)
class SyntheticPackage:
    """Stands in for :class:`aira_core.catalog.catalog.AdmittedPackage`."""

    manifest: PackageManifest

    def descriptors(self) -> list[CapabilityDescriptor]:
        return list(self.manifest.descriptors)


@dataclass
class SyntheticCatalog:
    """Quacks like :class:`aira_core.catalog.catalog.Catalog` for disclosure and search."""

    packages: dict[str, SyntheticPackage]
    quarantine: list[Any] = field(default_factory=list)
    keep_hashes: bool = True
    """Compute the catalog hashes once and keep them; ``False`` recomputes them on every
    call, as the production ``Catalog`` does."""
    _capabilities: dict[str, CapabilityDescriptor] | None = None
    _discovery: str | None = None
    _lock: str | None = None

    def capabilities(self) -> dict[str, CapabilityDescriptor]:
        if self._capabilities is None:
            self._capabilities = {
                d.capability_id: d for p in self.packages.values() for d in p.descriptors()
            }
        return self._capabilities

    def discovery_catalog_hash(self) -> str:
        if self._discovery is None or not self.keep_hashes:
            self._discovery = hashes.catalog_discovery_hash(
                d for p in self.packages.values() for d in p.manifest.descriptors
            )
        return self._discovery

    def authoring_lock_hash(self) -> str:
        if self._lock is None or not self.keep_hashes:
            self._lock = hashes.catalog_authoring_lock_hash(
                (d, p.manifest.schemas)
                for p in self.packages.values()
                for d in p.manifest.descriptors
            )
        return self._lock


def _workflow_definitions(chunk: list[CapabilityDescriptor]) -> dict[str, Any]:
    """A definition for each workflow of a package: one template step over the package's
    first authoring operation (a stand-in; search and disclosure only read descriptors)."""
    operation = next((d.capability_id for d in chunk if d.kind is K.AUTHORING_OPERATION), None)
    if operation is None:
        return {}
    return {
        d.target[1]: {"steps": [{"id": "main", "capability": operation, "args": {}}]}
        for d in chunk
        if d.kind is K.WORKFLOW
    }


def synthetic_catalog(n: int, seed: int = 0) -> SyntheticCatalog:
    """A catalog of ``n`` synthetic descriptors in packages of :data:`PACKAGE_SIZE`."""
    descriptors, schemas = synthetic_descriptors(n, seed)
    packages: dict[str, SyntheticPackage] = {}
    for start in range(0, n, PACKAGE_SIZE):
        chunk = descriptors[start : start + PACKAGE_SIZE]
        p = start // PACKAGE_SIZE
        vendor = VENDORS[p % len(VENDORS)]
        manifest = PackageManifest(
            name=f"synth.{vendor}.p{p}",
            version="1.0.0",
            publisher=f"synth-{vendor}",
            descriptors=chunk,
            schemas={ref: schemas[ref] for d in chunk for ref in d.schema_refs()},
            workflows=_workflow_definitions(chunk),
        )
        packages[manifest.name] = SyntheticPackage(manifest)
    return SyntheticCatalog(packages)
