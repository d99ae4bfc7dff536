"""The forms a model writes against a revision, for every entry that takes them from a
model (the bounded-step host's acts, :mod:`aira_core.step.decision`; the MCP server's tools,
:mod:`aira_core.mcp.tools`): the plan draft (the composite plan without ``baseRevision``),
its steps' arguments, a read path, the aliases they may name, and their JSON Schema ``$defs``
with the revision's aliases as enums.

- A string of the shape ``b:…`` / ``n:…`` / ``p:…`` / ``a:…`` is an alias of the current
  revision; inside a plan also the alias an earlier step of the same plan creates
  (``b:<label>``, ``n:<label>``, ``p:<name>``, with an alias-safe label).
- Inside argument values, ``{"param": …}`` takes a parameter alias or id and ``{"body": …}``
  a body alias or id.
- A read path is ``[block]`` or ``[block, alias-or-id]`` with block one of parameters,
  nodes, bodies, assertions.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, ValidationError, WithJsonSchema
from pydantic_core import PydanticCustomError

from aira_core.contracts.amir import (
    ASSERTIONS,
    BLOCK_BY_NAME,
    BLOCK_BY_PREFIX,
    BLOCKS,
    BODIES,
    ENTITY_ID_PATTERN,
    NODES,
    PARAMETERS,
)
from aira_core.contracts.base import WireModel, json_value
from aira_core.contracts.plan import AcceptanceAssertion, PlanStep
from aira_core.diagnostics import json_pointer, redact
from aira_core.model.aliases import LABEL_PATTERN, label_alias_safe
from aira_core.runtime.tiers import DEFAULT_BUDGETS, TaskBudgets

__all__ = [
    "ALIAS_DEFS",
    "ALIAS_KINDS",
    "ALIAS_ORDER",
    "ALIAS_PREFIXES",
    "ALIAS_SHAPE",
    "KIND_PREFIX",
    "KIND_WORD",
    "LATER_DEF",
    "MESSAGE_VALUE_CHARS",
    "SCHEMA_REF",
    "ArgString",
    "Args",
    "AssertionDraft",
    "Grammar",
    "PlanArgString",
    "PlanArgs",
    "PlanBody",
    "PlanDraft",
    "SelectPath",
    "StepDraft",
    "draft_defs",
    "drop_titles",
    "error_text",
    "fill_alias_defs",
    "legal_aliases",
    "legal_sets",
    "link_defs",
    "plan_draft_wire",
    "plan_local",
    "shared_defs",
    "short_value",
    "visible",
    "walk_values",
]

MESSAGE_VALUE_CHARS = 120
"""How much of a rejected value a message repeats (what a model sent may hold megabytes)."""

ALIAS_ORDER = (BODIES, NODES, PARAMETERS, ASSERTIONS)
"""The order the schemas list the alias kinds in (their bytes depend on it)."""
ALIAS_KINDS = {b.prefix: b.name for b in ALIAS_ORDER}
"""Alias prefix → the kind (alias-table block) it names."""
KIND_PREFIX = {b.name: b.prefix for b in ALIAS_ORDER}
ALIAS_DEFS = {b.name: f"{b.singular.capitalize()}Alias" for b in ALIAS_ORDER}
"""Kind → the name of its ``$defs`` entry: ``BodyAlias`` …"""
ALIAS_PREFIXES = "".join(sorted(BLOCK_BY_PREFIX))
ALIAS_SHAPE = re.compile(f"^[{ALIAS_PREFIXES}]:")
_ENTITY_ID = re.compile(ENTITY_ID_PATTERN)
KIND_WORD = {b.name: b.singular for b in BLOCK_BY_NAME.values()}

SCHEMA_REF = "#/$defs/{model}"
LATER_DEF = "x-aira-def"
"""Marks a reference to one of the hand-written ``$defs`` (:func:`shared_defs`, and the step
host's ``decision_schema``; a ``$ref`` there would make pydantic look for a definition it
does not have). :func:`link_defs` turns the marks into ``$ref``s."""


def _custom(kind: str, message: str, sub: Sequence[str | int] = ()) -> PydanticCustomError:
    # ``subpointer`` lets a caller point below the field the validator ran on.
    return PydanticCustomError(kind, message, {"subpointer": json_pointer(list(sub))})


def _check_path(path: list[str]) -> list[str]:
    if not 1 <= len(path) <= 2:
        raise _custom(
            "select_path",
            "a read path is [block] or [block, alias-or-id], got {n} segments".replace(
                "{n}", str(len(path))
            ),
        )
    block = path[0]
    if block not in BLOCKS:
        raise _custom(
            "select_path",
            f"{short_value(block)} is not a block; blocks are {', '.join(BLOCKS)}",
            [0],
        )
    if len(path) == 2:
        ref = path[1]
        if ALIAS_SHAPE.match(ref):
            kind = ALIAS_KINDS[ref[0]]
            if kind != block:
                raise _custom(
                    "select_path",
                    f"{short_value(ref)} is a {KIND_WORD[kind]} alias; it is not in {block}",
                    [1],
                )
        elif not _ENTITY_ID.match(ref):
            raise _custom(
                "select_path",
                f"{short_value(ref)} is neither an alias ({KIND_PREFIX[block]}:…) nor an entity id",
                [1],
            )
    return path


def _check_args(args: dict[str, Any]) -> dict[str, Any]:
    """Free JSON values as a plan step's arguments must be (``json_value``: depth, canonical
    bytes), and inside them ``{"param": …}`` names a parameter, ``{"body": …}`` a body."""
    json_value(args)  # what PlanStep will require: refused here, with the model's pointer
    for parts, value in walk_values(args):
        if not parts or not isinstance(value, dict):
            continue
        for key, own in (("param", "p"), ("body", "b")):
            if key not in value:
                continue
            ref = value[key]
            if not isinstance(ref, str):
                raise _custom(
                    "arg_reference",
                    f'"{key}" takes a {KIND_WORD[ALIAS_KINDS[own]]} alias or id (a string), '
                    f"got {short_value(ref)}",
                    [*parts, key],
                )
            if ALIAS_SHAPE.match(ref) and ref[0] != own:
                raise _custom(
                    "arg_reference",
                    f'"{key}" takes a {KIND_WORD[ALIAS_KINDS[own]]} alias ({own}:…), '
                    f"not the {KIND_WORD[ALIAS_KINDS[ref[0]]]} alias {short_value(ref)}",
                    [*parts, key],
                )
    return args


SelectPath = Annotated[
    list[str], AfterValidator(_check_path), WithJsonSchema({LATER_DEF: "SelectPath"})
]
Args = Annotated[
    dict[str, Any],
    AfterValidator(_check_args),
    WithJsonSchema({"type": "object", "additionalProperties": {LATER_DEF: "ArgValue"}}),
]
ArgString = Annotated[str, WithJsonSchema({LATER_DEF: "ArgString"})]
PlanArgs = Annotated[
    dict[str, Any],
    AfterValidator(_check_args),
    WithJsonSchema({"type": "object", "additionalProperties": {LATER_DEF: "PlanArgValue"}}),
]
"""Arguments inside a plan: they may also name what an earlier step of the plan creates."""
PlanArgString = Annotated[str, WithJsonSchema({LATER_DEF: "PlanArgString"})]


class Grammar(WireModel):
    # Strict and by alias only: a schema (by alias, exact JSON types) must accept every
    # value the models accept, so no coercion ("5" → 5) and no snake_case names.
    model_config = ConfigDict(strict=True, populate_by_name=False, use_attribute_docstrings=True)


class StepDraft(PlanStep):
    """One step of the plan: a capability and its arguments."""

    model_config = ConfigDict(strict=True, populate_by_name=False)

    args: PlanArgs = Field(default_factory=dict)


class AssertionDraft(AcceptanceAssertion):
    """A check the plan's result must pass."""

    model_config = ConfigDict(strict=True, populate_by_name=False)

    target: PlanArgString
    args: PlanArgs = Field(default_factory=dict)


class PlanDraft(Grammar):
    """The composite plan without ``baseRevision``: the host binds it to the head."""

    steps: list[StepDraft] = Field(min_length=1)
    acceptance_assertions: list[AssertionDraft] = Field(default_factory=list)


def _check_plan(plan: dict[str, Any]) -> dict[str, Any]:
    try:
        draft = PlanDraft.model_validate(plan)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = list(first["loc"])
        sub = json_pointer(loc) + (first.get("ctx") or {}).get("subpointer", "")
        owner: type[WireModel] = PlanDraft
        if len(loc) >= 3 and loc[0] == "steps":
            owner = StepDraft
        elif len(loc) >= 3 and loc[0] == "acceptanceAssertions":
            owner = AssertionDraft
        raise PydanticCustomError(
            "plan_invalid", error_text(first, owner), {"subpointer": sub}
        ) from None
    return draft.to_wire()


def plan_draft_wire(plan: Any) -> dict[str, Any]:
    """``plan`` checked as a :class:`PlanDraft` (the composite plan without
    ``baseRevision``) and normalised to its wire form; ``ValueError`` naming the first
    problem and where it is (``at /steps/0/capability``) otherwise. What every entry that
    takes a plan from a model (the step host, MCP) checks it with."""
    try:
        return _check_plan(plan)
    except PydanticCustomError as exc:
        where = (exc.context or {}).get("subpointer", "") or "/"
        raise ValueError(f"{exc.message()} at {where}") from None


PlanBody = Annotated[
    dict[str, Any], AfterValidator(_check_plan), WithJsonSchema({LATER_DEF: "PlanDraft"})
]
"""The plan as the wire dict (validated as :class:`PlanDraft`, normalised to its wire form)."""


_OWN_ERRORS = frozenset({"select_path", "arg_reference", "plan_invalid", "lookup_target"})
"""Error kinds whose message is the form's own (said in full, not as pydantic's)."""


def error_text(error: Mapping[str, Any], owner: type[WireModel]) -> str:
    loc = list(error["loc"])
    field = str(loc[-1]) if loc else ""
    kind = error["type"]
    if kind == "extra_forbidden":
        known = [f.alias or name for name, f in owner.model_fields.items()]
        return f"unknown field {short_value(field)}; the fields are {', '.join(known)}"
    if kind == "missing":
        return f"the required field {short_value(field)} is missing"
    if kind in _OWN_ERRORS:
        return str(error["msg"])
    return f"{error['msg']} (got {short_value(error.get('input'))})"


def legal_sets(aliases: Any) -> dict[str, frozenset[str]] | None:
    """The legal aliases by kind, as sets (of a mapping by kind, or an alias table); None
    for none given (nothing is checked)."""
    if aliases is None:
        return None
    if hasattr(aliases, "entries") and not isinstance(aliases, Mapping):
        aliases = legal_aliases(aliases)
    return {
        kind: frozenset(a for a in aliases[kind] if isinstance(a, str))
        for kind in ALIAS_KINDS.values()
        if kind in aliases and aliases[kind] is not None
    }


def legal_aliases(table: Any, kinds: Sequence[str] = tuple(ALIAS_DEFS)) -> dict[str, list[str]]:
    """``{kind: [alias, …]}`` of an :class:`~aira_core.model.aliases.AliasTable`, in the
    table's order: the ``aliases`` of :func:`draft_defs` (and of the step host's
    ``parse_decision`` and ``decision_schema``)."""
    return {kind: [alias for alias, _ in table.entries(kind)] for kind in kinds}


def plan_local(alias: str, steps: Sequence[Mapping[str, Any]]) -> str | None:
    """The id of the plan step whose result ``alias`` would name once committed."""
    name = alias[2:]
    if not label_alias_safe(name):
        return None  # such a label never becomes an alias (and the schema's pattern says so)
    for step in steps:
        args = step.get("args") or {}
        if alias[0] == "b" and name in (step.get("label"), step.get("id")):
            return str(step.get("id"))
        if alias[0] == "p" and args.get("name") == name:
            return str(step.get("id"))
        if alias[0] == "n" and step.get("label") == name:
            return str(step.get("id"))
    return None


def walk_values(value: Any) -> Iterator[tuple[list[str | int], Any]]:
    """(path, value) of every value below ``value`` (not ``value`` itself), depth first."""
    stack: list[tuple[list[str | int], Any]] = [([], value)]
    while stack:
        parts, item = stack.pop()
        if parts:
            yield parts, item
        if isinstance(item, dict):
            stack.extend(([*parts, k], v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend(([*parts, i], v) for i, v in reversed(list(enumerate(item))))


def visible(text: str) -> str:
    """``text`` with what does not print escaped (a message never hands a terminal a control)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def short_value(value: Any) -> str:
    """A value as JSON (what the model wrote), clipped."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = redact(visible(text))  # before the cut, which could leave half a key unrecognised
    return text if len(text) <= MESSAGE_VALUE_CHARS else text[:MESSAGE_VALUE_CHARS] + "…"


# -- the schema ----------------------------------------------------------------------------------

_NOT_ALIAS_PATTERN = f"^(?:[^{ALIAS_PREFIXES}]|[{ALIAS_PREFIXES}](?:[^:]|$)|$)"
"""A string that does not start with an alias prefix (``b:``, ``n:``, ``p:``, ``a:``); no
look-ahead, so every regex dialect providers use can run it."""
_PLAN_LOCAL_DEFS = {b.name: f"Plan{ALIAS_DEFS[b.name]}" for b in ALIAS_ORDER if b.labelled}
"""The kinds a plan step can name for later steps (``b:<label>``, ``n:<label>``,
``p:<name>``; see :func:`plan_local`): in a plan, by pattern, beside the enums."""


def _arg_value(string: str, body: list[str], param: list[str], itself: str) -> dict[str, Any]:
    """The schema of an argument value whose strings are ``string``, whose ``{"body": …}``
    takes one of ``body`` and whose ``{"param": …}`` one of ``param`` (def names)."""

    def refs(names: list[str]) -> dict[str, Any]:
        return {"anyOf": [{"$ref": f"#/$defs/{n}"} for n in [*names, "PlainString"]]}

    return {
        "description": (
            'a number, a string, {"value","unit"}, {"param": parameter}, '
            '{"body": body, "select": …}, {"step": "<id>"} or a list'
        ),
        "anyOf": [
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
            {"$ref": f"#/$defs/{string}"},
            {"type": "array", "items": {"$ref": f"#/$defs/{itself}"}},
            {
                "type": "object",
                "properties": {"param": refs(param), "body": refs(body)},
                "additionalProperties": {"$ref": f"#/$defs/{itself}"},
            },
        ],
    }


@cache
def _shared_defs() -> dict[str, Any]:
    """The ``$defs`` of the forms, the alias kinds left as plain strings (filled in per
    revision), before titles are dropped and ``x-aira-def`` markers linked."""
    defs: dict[str, Any] = {}
    defs["PlanDraft"] = _plan_draft_schema(defs)
    alias_or_id = {
        kind: {"anyOf": [{"$ref": f"#/$defs/{name}"}, {"$ref": "#/$defs/EntityId"}]}
        for kind, name in ALIAS_DEFS.items()
    }
    defs.update(
        {
            "EntityId": {"type": "string", "pattern": ENTITY_ID_PATTERN},
            "SelectPath": {
                "description": "[block] or [block, alias-or-id]",
                "anyOf": [
                    {
                        "type": "array",
                        "prefixItems": [{"enum": list(BLOCKS)}],
                        "minItems": 1,
                        "maxItems": 1,
                    },
                    *(
                        {
                            "type": "array",
                            "prefixItems": [{"const": kind}, alias_or_id[kind]],
                            "minItems": 2,
                            "maxItems": 2,
                        }
                        for kind in BLOCKS
                    ),
                ],
            },
            "PlainString": {
                "type": "string",
                "pattern": _NOT_ALIAS_PATTERN,
                "description": "any string that does not start with b:, n:, p: or a:",
            },
            "ArgString": {
                "anyOf": [{"$ref": f"#/$defs/{name}"} for name in ALIAS_DEFS.values()]
                + [{"$ref": "#/$defs/PlainString"}],
            },
            "ArgValue": _arg_value("ArgString", ["BodyAlias"], ["ParameterAlias"], "ArgValue"),
            # A plan may name what its own earlier steps create, which no enum of this
            # revision lists: those names are allowed by shape, and the host checks them.
            **{
                name: {
                    "type": "string",
                    "pattern": f"^{KIND_PREFIX[kind]}:{LABEL_PATTERN.pattern[1:]}",
                    "description": (
                        f"a {KIND_WORD[kind]} alias an earlier step of this plan creates "
                        f"({KIND_PREFIX[kind]}:<{'name' if kind == 'parameters' else 'label'}>)"
                    ),
                }
                for kind, name in _PLAN_LOCAL_DEFS.items()
            },
            "PlanArgString": {
                "anyOf": [
                    {"$ref": "#/$defs/ArgString"},
                    *({"$ref": f"#/$defs/{name}"} for name in _PLAN_LOCAL_DEFS.values()),
                ]
            },
            "PlanArgValue": _arg_value(
                "PlanArgString",
                ["BodyAlias", "PlanBodyAlias"],
                ["ParameterAlias", "PlanParameterAlias"],
                "PlanArgValue",
            ),
        }
    )
    for name in ALIAS_DEFS.values():
        defs[name] = {"type": "string"}  # filled in per revision
    return defs


def shared_defs() -> dict[str, Any]:
    """A fresh copy of :func:`_shared_defs` (callers fill in and link their own)."""
    return copy.deepcopy(_shared_defs())


def fill_alias_defs(
    defs: dict[str, Any], aliases: Mapping[str, Sequence[str]] | Any, budgets: TaskBudgets
) -> None:
    """Fill in ``defs``' alias kinds (``BodyAlias`` …): the legal aliases of each kind given
    in ``aliases`` (a mapping by kind, or an alias table) as an enum of at most
    ``budgets.enum_limit``, a plain prefixed string (checked by the host) beyond that or for
    a kind not given."""
    legal = legal_sets(aliases) or {}
    ordered: dict[str, list[str]] = {}
    source = aliases
    if hasattr(source, "entries") and not isinstance(source, Mapping):
        source = legal_aliases(source)
    for kind in ALIAS_DEFS:
        if kind in legal:
            seen: dict[str, None] = {}
            for alias in source[kind]:
                if isinstance(alias, str) and alias.startswith(f"{KIND_PREFIX[kind]}:"):
                    seen.setdefault(alias, None)
            ordered[kind] = list(seen)
    for kind, name in ALIAS_DEFS.items():
        prefix = KIND_PREFIX[kind]
        word = KIND_WORD[kind]
        values = ordered.get(kind)
        if values is not None and len(values) <= budgets.enum_limit:
            defs[name] = {
                "type": "string",
                "enum": values,
                "description": f"a {word} alias of the current revision",
            }
        else:
            why = (
                f"{len(values)} in this revision, more than the {budgets.enum_limit} "
                "listed as an enum: the host checks it"
                if values is not None
                else "not listed: the host checks it"
            )
            defs[name] = {
                "type": "string",
                "pattern": f"^{prefix}:",
                "description": f"a {word} alias ({prefix}:…); {why}",
            }


def draft_defs(
    aliases: Mapping[str, Sequence[str]] | Any = None,
    *,
    budgets: TaskBudgets = DEFAULT_BUDGETS,
) -> dict[str, Any]:
    """The ``$defs`` of the forms (``PlanDraft``, ``ArgValue``, ``SelectPath`` and what they
    refer to) with ``aliases`` filled in as :func:`fill_alias_defs` does: what a tool's
    input schema refers to. Same input, same bytes."""
    defs = shared_defs()
    drop_titles(defs)
    link_defs(defs)
    fill_alias_defs(defs, aliases, budgets)
    return dict(sorted(defs.items()))


def _plan_draft_schema(defs: dict[str, Any]) -> dict[str, Any]:
    plan = PlanDraft.model_json_schema(by_alias=True, ref_template=SCHEMA_REF)
    for name, definition in plan.pop("$defs", {}).items():
        defs.setdefault(name, definition)
    return plan


def link_defs(node: Any) -> None:
    """Turn the ``x-aira-def`` markers into ``$ref``s."""
    if isinstance(node, dict):
        name = node.pop(LATER_DEF, None)
        if name is not None:
            node["$ref"] = f"#/$defs/{name}"
        for value in node.values():
            link_defs(value)
    elif isinstance(node, list):
        for item in node:
            link_defs(item)


def drop_titles(defs: dict[str, Any]) -> None:
    """Pydantic's generated titles only repeat the names; the schema rides every request."""

    def strip(node: Any) -> None:
        if isinstance(node, dict):
            node.pop("title", None)
            for key, value in node.items():
                if key in ("properties", "$defs") and isinstance(value, dict):
                    for sub in value.values():
                        strip(sub)
                elif key != "const" and key != "enum" and key != "default":
                    strip(value)
        elif isinstance(node, list):
            for item in node:
                strip(item)

    for definition in defs.values():
        strip(definition)
