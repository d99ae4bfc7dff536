"""Compact step signatures (RFC-0002 §10.4): capabilities rendered as one-line, TypeScript-like
declarations for a model's context, instead of their JSON Schema ASTs.

Every signature is generated from the capability's canonical input schema (JSON Schema
2020-12, the one its package ships) and, for defaults, its descriptor; nothing is hand-written,
and descriptions are never included. A construct the renderer does not know degrades to
``any``; rendering never raises. Grammar, one capability a line::

    exact.fillet@1(target:Shape,edges:Sel,radius:Len>0)
    exact.revolve@1(profile:Shape,axis:"X"|"Y"|"Z",angle:Ang(0,360]=360)
    validate.minWallThickness@1(target:Shape,min:Len>0,samples:Count[2,32]=8):validator

Legend (also :data:`LEGEND`, the form a Task Capsule prepends):

- ``<id>(…)``: the capability id without its ``cap:`` prefix, then its inputs in schema order.
- ``name:T`` required · ``name?:T`` optional · ``name:T=v`` optional, default ``v`` (JSON).
- ``Len`` mm · ``Ang`` deg · ``Count`` integer count · ``num`` · ``int`` · ``bool`` · ``str``
  · ``null`` · ``any``.
- ``Shape``: a body: its alias ``"b:<label>"``, its id, or ``{step:"<id>"}`` (an earlier step).
- ``Sel<E>``: a selection ``{body,select,entity?:E}``; plain ``Sel`` takes any entity.
- ``"a"|"b"`` literals (enum, const); ``A|B`` a union (anyOf/oneOf).
- ``T[]`` an array, ``T[n..m]`` / ``T[n..]`` with length bounds, ``[A,B]`` a tuple,
  ``{k:T,…}`` an object (same ``?``/``=`` rules), ``Record<str,T>`` a map.
- Numeric bounds: ``T>0`` ``T>=3`` ``T<180`` ``T<=32``; both: ``T(0,360]`` ``T[2,32]``
  (round bracket exclusive, square inclusive). ``(…)`` groups before ``[]``.
- ``type Name=…`` above a block of signatures names an enum several of them share.
- ``:kind`` after the ``)``: a step that is not an authoring operation (``:query``,
  ``:validator``, ``:importer`` …: the last segment of the capability kind).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aira_core.contracts.amir import AMIR_TYPE_KEYWORD, SELECTION, SHAPE, ParamType

if TYPE_CHECKING:
    from aira_core.catalog.capabilities import CapabilityEntry

__all__ = ["LEGEND", "catalog_signatures", "signature", "signatures"]

LEGEND = (
    "// name:T required; name?:T optional; name:T=v default v. Len mm, Ang deg, Count int.\n"
    '// Shape: body alias "b:<label>" | id | {step:"<id>"}. '
    "Sel<E>: {body,select,entity?:E}, Sel any entity.\n"
    "// T[] array, T[n..m] length, [A,B] tuple. Bounds: T>0 T<=9, T(0,360] round=exclusive.\n"
    "// :kind marks a step that is not an authoring operation."
)
"""The grammar in four comment lines, to prepend to a block of signatures."""

ANY = "any"
CAPABILITY_PREFIX = "cap:"
# The authoring kind is the common case; only the other kinds are marked, to save bytes.
_UNMARKED_KINDS = frozenset({"authoring.operation"})
_AMIR_TYPES = {
    ParamType.LENGTH.value: "Len",
    ParamType.ANGLE.value: "Ang",
    ParamType.COUNT.value: "Count",
    ParamType.REAL.value: "num",
    ParamType.BOOL.value: "bool",
    ParamType.STRING.value: "str",
}
_JSON_TYPES = {
    "number": "num",
    "integer": "int",
    "boolean": "bool",
    "string": "str",
    "null": "null",
}
# Type names of the grammar, never used for a shared enum.
_RESERVED = frozenset(
    {"Len", "Ang", "Count", "Shape", "Sel", "Record", "num", "int", "bool", "str", "null", "any"}
)
_NUMERIC = frozenset({"Len", "Ang", "Count", "num", "int"})
_ALL_ENTITIES = frozenset({"Face", "Edge", "Vertex"})
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
# Deep enough for any real input schema; deeper nesting (or a $ref cycle) renders as `any`.
_MAX_DEPTH = 8
# Arrays of at most this many equal items render as a tuple: [num,num] beats num[2..2].
_MAX_TUPLE = 4


def signature(
    capability_id: str,
    input_schema: Mapping[str, Any],
    *,
    kind: str | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> str:
    """One capability as ``<id>(<inputs>)[:<kind>]``; ``defaults`` are the descriptor's
    defaults of optional inputs (a schema's own ``default`` wins)."""
    return _Item(capability_id, input_schema, kind, defaults).render({})[0]


def signatures(entries: Iterable[tuple[str, Mapping[str, Any]]]) -> str:
    """Several signatures, one a line, in the order given; an enum repeated across them is
    declared once as ``type Name=…`` above them when that is shorter."""
    return _block([_Item(cid, schema) for cid, schema in entries])


def catalog_signatures(
    capabilities: Mapping[str, CapabilityEntry], ids: Iterable[str] | None = None
) -> str:
    """:func:`signatures` of ``ids`` (default: every capability, in the mapping's order), each
    with its kind and descriptor defaults; ids not in ``capabilities`` are skipped."""
    chosen = capabilities if ids is None else ids
    items = []
    for cid in chosen:
        entry = capabilities.get(cid)
        if entry is not None:
            d = entry.descriptor
            items.append(_Item(d.capability_id, entry.input_schema, d.kind, d.defaults))
    return _block(items)


# -- a block: shared enums ---------------------------------------------------------------------


class _Item:
    def __init__(
        self,
        capability_id: str,
        input_schema: Mapping[str, Any],
        kind: str | None = None,
        defaults: Mapping[str, Any] | None = None,
    ) -> None:
        self.capability_id = capability_id
        self.schema = input_schema if isinstance(input_schema, Mapping) else {}
        self.kind = kind
        self.defaults = defaults if isinstance(defaults, Mapping) else {}

    def render(self, aliases: Mapping[str, str]) -> tuple[str, list[tuple[str, str]]]:
        """The signature with ``aliases`` (enum text → type name) applied, and the
        (input name, enum text) of its enum inputs."""
        renderer = _Renderer(self.schema, aliases)
        params = renderer.fields(self.schema, self.defaults, 0)
        text = f"{_short_id(self.capability_id)}({params})"
        if self.kind and str(self.kind) not in _UNMARKED_KINDS:
            text += ":" + str(self.kind).rsplit(".", 1)[-1]
        return text, renderer.enums


def _block(items: list[_Item]) -> str:
    # Pass one finds the enums of top-level inputs; one repeated in several signatures gets a
    # name when `type Name=<enum>` plus the name at each use is shorter than writing it out.
    uses: dict[str, list[str]] = {}
    for item in items:
        for name, text in item.render({})[1]:
            uses.setdefault(text, []).append(name)
    aliases: dict[str, str] = {}
    taken = set(_RESERVED)
    for text, names in uses.items():
        alias = _alias_name(names[0], taken)
        saved = len(names) * (len(text) - len(alias)) - len(f"type {alias}={text}\n")
        if len(names) > 1 and saved > 0:
            aliases[text] = alias
            taken.add(alias)
    lines = [f"type {alias}={text}" for text, alias in aliases.items()]
    lines += [item.render(aliases)[0] for item in items]
    return "\n".join(lines)


def _alias_name(input_name: str, taken: set[str]) -> str:
    base = input_name[:1].upper() + input_name[1:]
    base = base if _IDENTIFIER.match(base) else "Enum"
    alias, n = base, 1
    while alias in taken:
        n += 1
        alias = f"{base}{n}"
    return alias


# -- rendering ---------------------------------------------------------------------------------


def _short_id(capability_id: str) -> str:
    # Every capability id starts with "cap:" (CAPABILITY_ID_PATTERN), so dropping it is lossless.
    cid = str(capability_id)
    return cid[len(CAPABILITY_PREFIX) :] if cid.startswith(CAPABILITY_PREFIX) else cid


def _literal(value: Any) -> str | None:
    """``value`` as compact JSON (``40.0`` as ``40``), or None when it is not JSON."""

    def plain(v: Any) -> Any:
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            return int(v)
        if isinstance(v, Mapping):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        return v

    try:
        return json.dumps(plain(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def _number(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return _literal(value)


def _bounds(schema: Mapping[str, Any]) -> str:
    """``>0``, ``<=9``, ``(0,360]`` … from minimum/maximum and their exclusive forms."""
    low, low_open = _number(schema.get("exclusiveMinimum")), True
    if low is None:
        low, low_open = _number(schema.get("minimum")), schema.get("exclusiveMinimum") is True
    high, high_open = _number(schema.get("exclusiveMaximum")), True
    if high is None:
        high, high_open = _number(schema.get("maximum")), schema.get("exclusiveMaximum") is True
    if low is not None and high is not None:
        return f"{'(' if low_open else '['}{low},{high}{')' if high_open else ']'}"
    if low is not None:
        return (">" if low_open else ">=") + low
    if high is not None:
        return ("<" if high_open else "<=") + high
    return ""


class _Renderer:
    """Renders the schemas of one root (``$ref`` resolves against it)."""

    def __init__(self, root: Mapping[str, Any], aliases: Mapping[str, str]) -> None:
        self.root = root
        self.aliases = aliases
        self.enums: list[tuple[str, str]] = []
        """(input name, enum text) of the top-level inputs that are an enum."""
        # Texts that need parentheses before an array suffix (a union, a bounded number):
        # the same text is always the same construct, so remembering it by text is exact.
        self.loose: set[str] = set()
        self.expanding: set[str] = set()

    def fields(self, schema: Mapping[str, Any], defaults: Mapping[str, Any], depth: int) -> str:
        """The properties of an object schema as ``name:T``, ``name?:T``, ``name:T=v``."""
        props = schema.get("properties")
        if not isinstance(props, Mapping):
            return ""
        listed = schema.get("required")
        required = {r for r in listed if isinstance(r, str)} if isinstance(listed, list) else set()
        out = []
        for name, prop in props.items():
            key = str(name)
            key = key if _IDENTIFIER.match(key) else _literal(key) or ANY
            text = self.type(prop, depth + 1)
            if depth == 0 and isinstance(prop, Mapping) and "enum" in prop and "|" in text:
                self.enums.append((key, text))
                text = self.aliases.get(text, text)
            if name in required:
                out.append(f"{key}:{text}")
                continue
            if isinstance(prop, Mapping) and "default" in prop:
                shown = _literal(prop["default"])
            else:
                shown = _literal(defaults[name]) if name in defaults else None
            out.append(f"{key}:{text}={shown}" if shown is not None else f"{key}?:{text}")
        return ",".join(out)

    def type(self, schema: Any, depth: int) -> str:
        if schema is False:
            return "never"
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return ANY
        try:
            return self._type(schema, depth)
        except (TypeError, ValueError, AttributeError, RecursionError):
            # A malformed schema (a list where a number belongs …) must not break the capsule.
            return ANY

    def _type(self, schema: Mapping[str, Any], depth: int) -> str:
        amir = schema.get(AMIR_TYPE_KEYWORD)
        if amir == SHAPE:
            return "Shape"
        if amir == SELECTION:
            return self._selection(schema)
        if amir in _AMIR_TYPES and "enum" not in schema and "const" not in schema:
            return self._bounded(_AMIR_TYPES[amir], schema)
        # "Json", no annotation, or an enum of a String: the schema's own structure.
        if "const" in schema:
            return _literal(schema["const"]) or ANY
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list | tuple):
                return ANY
            return self._union(_literal(v) or ANY for v in values)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref in self.expanding:
                return ANY  # a recursive schema: one level is enough for a signature
            self.expanding.add(ref)
            try:
                return self.type(self._resolve(ref), depth + 1)
            finally:
                self.expanding.discard(ref)
        json_type = schema.get("type")
        if json_type is None:
            branches = schema.get("anyOf", schema.get("oneOf"))
            if isinstance(branches, list | tuple) and branches:
                return self._union(self.type(b, depth + 1) for b in branches)
            all_of = schema.get("allOf")
            if isinstance(all_of, list | tuple) and len(all_of) == 1:
                return self.type(all_of[0], depth + 1)
            if "properties" in schema:
                json_type = "object"
            elif "items" in schema or "prefixItems" in schema:
                json_type = "array"
            else:
                return ANY
        if isinstance(json_type, list | tuple):
            return self._union(self._of_type(schema, t, depth) for t in json_type)
        return self._of_type(schema, json_type, depth)

    def _of_type(self, schema: Mapping[str, Any], json_type: Any, depth: int) -> str:
        if json_type == "object":
            return self._object(schema, depth)
        if json_type == "array":
            return self._array(schema, depth)
        name = _JSON_TYPES.get(json_type) if isinstance(json_type, str) else None
        if name is None:
            return ANY
        return self._bounded(name, schema) if name in _NUMERIC else name

    def _bounded(self, name: str, schema: Mapping[str, Any]) -> str:
        bounds = _bounds(schema)
        if not bounds:
            return name
        self.loose.add(name + bounds)
        return name + bounds

    def _union(self, parts: Iterable[str]) -> str:
        unique = list(dict.fromkeys(parts))
        if not unique or ANY in unique:
            return ANY
        text = "|".join(unique)
        if len(unique) > 1:
            self.loose.add(text)
        return text

    def _grouped(self, text: str) -> str:
        return f"({text})" if text in self.loose else text

    def _object(self, schema: Mapping[str, Any], depth: int) -> str:
        if isinstance(schema.get("properties"), Mapping):
            return "{" + self.fields(schema, {}, depth) + "}"
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return f"Record<str,{self.type(extra, depth + 1)}>"
        return "{}"

    def _array(self, schema: Mapping[str, Any], depth: int) -> str:
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(prefix, list | tuple):
            parts = [self.type(p, depth + 1) for p in prefix]
            if isinstance(items, Mapping):
                parts.append("..." + self._grouped(self.type(items, depth + 1)) + "[]")
            return "[" + ",".join(parts) + "]"
        item = self.type(items, depth + 1) if items is not None else ANY
        low, high = _count(schema.get("minItems")), _count(schema.get("maxItems"))
        if low and low == high and low <= _MAX_TUPLE:
            return "[" + ",".join([item] * low) + "]"
        if not low and high is None:
            return self._grouped(item) + "[]"
        return f"{self._grouped(item)}[{low or 0}..{'' if high is None else high}]"

    def _selection(self, schema: Mapping[str, Any]) -> str:
        props = schema.get("properties")
        entity = props.get("entity") if isinstance(props, Mapping) else None
        if not isinstance(entity, Mapping):
            return "Sel"
        if "const" in entity:
            names = [entity["const"]]
        else:
            names = entity.get("enum")
            names = list(names) if isinstance(names, list | tuple) else []
        names = [str(n) for n in names]
        # Every entity allowed (or none named) is the plain form: Sel<Face|Edge|Vertex> = Sel.
        if not names or set(names) >= _ALL_ENTITIES:
            return "Sel"
        return "Sel<" + "|".join(dict.fromkeys(names)) + ">"

    def _resolve(self, ref: str) -> Any:
        """A local ``#/…`` pointer into the root; anything else is unknown (``any``)."""
        if not ref.startswith("#"):
            return None
        node: Any = self.root
        for part in ref[1:].split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
