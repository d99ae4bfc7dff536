"""The tools ``aira mcp serve`` lists: ``task_open``, the nine Core meta-operations and
``model_apply`` (the write path's four steps for one plan, in one call).

Their number never grows with the catalog: capabilities are data that ``catalog_search`` and
``catalog_describe`` return, and a plan names them. Names are the meta-operation's with the
dot as an underscore (``model_proposePatch``): letters, digits and ``_``, which every major
model API accepts.

Schemas come from the contracts: ``catalog_search`` takes the :class:`SearchRequest`, a plan
is the step grammar's ``PlanDraft``, a read takes its select paths, and every result is the
observation envelope in its compact form (:mod:`aira_core.mcp.observation`) as one JSON
text, with no output schema. The body, node and parameter handles a plan or a read may name
are the step grammar's ``$defs`` (RFC-0002 §13.2.1): the legal ones of a revision as enums,
up to the host's limit, or a prefixed pattern; the server checks every call all the same.

Annotations follow each operation's effectClass (§12.1): read → read-only; bufferable →
not destructive, idempotent; a commit → not destructive, and open world, since it may
publish to the user's head.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from aira_core.runtime.contract import EffectClass, MetaOperation, operation_contract
from aira_core.runtime.intents import INTENT_CHARS
from aira_core.runtime.tiers import DEFAULT_BUDGETS, TIERS, TaskBudgets

TASK_OPEN = "task_open"
MODEL_APPLY = "model_apply"
"""Not a meta-operation: check → propose → preview → validate → commit of one plan, each
run by the task runtime as the meta-operation it is, in one call."""
DESCRIBE_BATCH = 16
"""The most capabilities one ``catalog_describe`` takes."""
OPEN_CAPABILITIES = 64
"""The most capabilities ``task_open`` shows (as signatures) and counts as discovered."""
REQUEST_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}$"
TASK_HANDLE_PATTERN = r"^mcp-[0-9a-f]{16}$"


def tool_name(operation: MetaOperation | str) -> str:
    """``model.proposePatch`` → ``model_proposePatch``."""
    return str(operation).replace(".", "_")


OPERATIONS: dict[str, MetaOperation] = {tool_name(op): op for op in MetaOperation}
"""Tool name → the meta-operation it serves."""

_DESCRIPTIONS: dict[MetaOperation, str] = {
    MetaOperation.INTERFACE_MANIFEST: (
        "L0: protocol version, taxonomy root, snapshots and limits; in a small catalog every "
        "capability's contract is inlined (no search needed)."
    ),
    MetaOperation.CATALOG_SEARCH: (
        "Find capabilities for an intent (hybrid search, L1 hits). Capabilities are data, "
        "never tools: describe one, then name it in a plan."
    ),
    MetaOperation.CATALOG_DESCRIBE: (
        "Full contracts (L2), guidance (L3) or applicability (L4) of one capability or of "
        "several (capabilityIds). A plan may only use capabilities this server has shown "
        "you (described, or as signatures). bind=true also lists one as a typed tool bound "
        "to this task and revision."
    ),
    MetaOperation.MODEL_READ: (
        "Read the task's head: its summary (no arguments), a picture of it (view=picture: "
        "a PNG with an isometric and three orthographic views), pages (select), or a query "
        "capability run on the kernel (query + args, e.g. massProperties)."
    ),
    MetaOperation.MODEL_PROPOSE_PATCH: (
        "Submit a composite plan (steps over described capabilities, acceptance assertions); "
        "it is checked and lowered into a candidate. Nothing is committed."
    ),
    MetaOperation.MODEL_PREVIEW: "Evaluate the candidate on the kernel: bodies and diagnostics.",
    MetaOperation.MODEL_VALIDATE: (
        "Authoritative evaluation and the plan's assertions: a validation token, no write."
    ),
    MetaOperation.MODEL_COMMIT: (
        "Commit the validated candidate as an immutable revision on the task's branch "
        "(compare-and-swap); publish=true also moves the user's main head, if the grant allows."
    ),
    MetaOperation.MODEL_REVERT: (
        "Undo this task's last commit with a new revision restoring the one before; history "
        "is kept."
    ),
}

_ENVELOPE_FLOW = (
    " The result is one JSON object: status, data, diagnostics, nextActions (tools to call "
    "next); a refusal is an error result."
)


def annotations(operation: MetaOperation | str | None) -> dict[str, Any]:
    """MCP tool annotations (wire names) from the effectClass; ``None``: ``task_open``;
    :data:`MODEL_APPLY`: a commit's (what its last stage is)."""
    if operation == MODEL_APPLY:
        return {**annotations(MetaOperation.MODEL_COMMIT), "title": "model.apply"}
    if operation is None:
        return {
            "title": "Open a task",
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": False,
        }
    contract = operation_contract(operation)
    title = operation.value
    if contract.effect_class is EffectClass.READ:
        return {"title": title, "readOnlyHint": True, "openWorldHint": False}
    if contract.effect_class is EffectClass.BUFFERABLE:
        return {
            "title": title,
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        }
    publishes = contract.publish is not None  # its irreversible variant leaves the task
    return {
        "title": title,
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": publishes,
    }


def description(operation: MetaOperation | str | None) -> str:
    if operation == MODEL_APPLY:
        return (
            "A plan you know is right, in one call: check, propose, preview, validate and "
            "commit, stopping at the first stage that refuses it (its diagnostics and the "
            "repair in nextActions; nothing is written). Same rules as the single steps."
            + _ENVELOPE_FLOW
        )
    if operation is None:
        return (
            "Open a task: a handle, a branch of its own from main's head, and the runtime "
            "state machine, grant and budgets every other tool enforces. Pass the handle as "
            "`task` to every other tool (the protocol keeps no session)." + _ENVELOPE_FLOW
        )
    return _DESCRIPTIONS[operation] + _ENVELOPE_FLOW


# -- schemas ----------------------------------------------------------------------------------


def _task_property() -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": TASK_HANDLE_PATTERN,
        "description": "the task handle task_open returned",
    }


def _request_id_property() -> dict[str, Any]:
    return {
        "type": "string",
        "pattern": REQUEST_ID_PATTERN,
        "description": "optional: your id for this call; a repeated id is refused, so a "
        "retried call never runs twice",
    }


def _generated(model: Any) -> dict[str, Any]:
    from aira_core.runtime.drafts import drop_titles

    schema = model.model_json_schema(by_alias=True)
    drop_titles({"": schema})  # pydantic's titles repeat the names, in every tools/list
    return schema


@cache
def _search_schema() -> dict[str, Any]:
    from aira_core.contracts.search import SearchRequest

    return _generated(SearchRequest)


def _grammar_defs(aliases: Mapping[str, Sequence[str]] | None, budgets: TaskBudgets) -> Any:
    from aira_core.runtime.drafts import draft_defs

    return draft_defs(aliases or {}, budgets=budgets)


def _reachable(node: Any, defs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``$defs`` that ``node`` refers to, transitively."""
    out: dict[str, Any] = {}
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = ref.removeprefix("#/$defs/")
                if name not in out and name in defs:
                    out[name] = defs[name]
                    stack.append(defs[name])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return dict(sorted(out.items()))


def _object(
    properties: dict[str, Any], required: Sequence[str], defs: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
    if defs:
        found = _reachable(properties, defs)
        if found:
            schema["$defs"] = found
    return schema


def input_schemas(
    aliases: Mapping[str, Sequence[str]] | None = None,
    *,
    budgets: TaskBudgets = DEFAULT_BUDGETS,
) -> dict[str, dict[str, Any]]:
    """Tool name → input schema. ``aliases`` (``{"bodies": […], "nodes": […],
    "parameters": […]}``) are the legal handles of the revision a client works on: enums up
    to ``budgets.enum_limit`` each; without them, prefixed patterns."""
    defs = _grammar_defs(aliases, budgets)
    task = _task_property()
    rid = _request_id_property()
    search = copy.deepcopy(_search_schema())
    search_defs = search.pop("$defs", {})
    search_props = {"task": task, **search["properties"], "requestId": rid}
    search_schema = _object(search_props, ["task", *search.get("required", [])], search_defs)
    ref = {"$ref": "#/$defs/ArgValue"}
    schemas = {
        TASK_OPEN: _object(
            {
                "intent": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": INTENT_CHARS,
                    "description": "what the task is to design, in words (its Intent Frame's goal)",
                },
                "from": {
                    "type": "string",
                    "description": "start from the head of another task of this server (its "
                    "handle; an ended task too) instead of main's head: to go on from a task "
                    "the runtime ended",
                },
                "tier": {
                    "enum": list(TIERS),
                    "description": "the step tier the task runs at (default: the server's)",
                },
                "capabilities": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 200},
                    "maxItems": OPEN_CAPABILITIES,
                    "description": "capability ids you mean to use: their compact signatures "
                    "come back and count as discovered (no search or describe needed)",
                },
            },
            [],
        ),
        tool_name(MetaOperation.INTERFACE_MANIFEST): _object(
            {"task": task, "requestId": rid}, ["task"]
        ),
        tool_name(MetaOperation.CATALOG_SEARCH): search_schema,
        tool_name(MetaOperation.CATALOG_DESCRIBE): _object(
            {
                "task": task,
                "capabilityId": {
                    "type": "string",
                    "maxLength": 200,
                    "description": "a capability id a search or the signatures showed",
                },
                "capabilityIds": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 200},
                    "minItems": 1,
                    "maxItems": DESCRIBE_BATCH,
                    "description": "several at once, instead of capabilityId",
                },
                "level": {"enum": ["L2", "L3", "L4"], "description": "default L2"},
                "selectionRefs": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 200},
                    "maxItems": 64,
                },
                "bind": {
                    "type": "boolean",
                    "description": "also list this capability as a typed tool bound to the "
                    "task, its head and the catalog (writing capabilities only)",
                },
                "requestId": rid,
            },
            ["task"],
        ),
        tool_name(MetaOperation.MODEL_READ): _object(
            {
                "task": task,
                "select": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/SelectPath"},
                    "maxItems": 8,
                    "description": "pages: [block] or [block, handle]; blocks are "
                    "parameters, nodes, bodies, assertions",
                },
                "view": {
                    "enum": ["picture"],
                    "description": "picture: the head as a PNG image (isometric, front, top, "
                    "right, with sizes)",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 200},
                "offset": {"type": "integer", "minimum": 0},
                "query": {
                    "type": "string",
                    "maxLength": 200,
                    "description": "a query capability's name or id (massProperties, "
                    "boundingBox, selectEntities …)",
                },
                "args": {"type": "object", "additionalProperties": ref},
                "repair": {
                    "type": "string",
                    "maxLength": 200,
                    "description": "a repair capability id from nextActions: its candidate "
                    "plan for the plan last refused (nothing is written)",
                },
                "diagnostic": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "maxLength": 100},
                        "step": {"type": "string", "maxLength": 64},
                    },
                    "additionalProperties": False,
                },
                "rev": {
                    "type": "string",
                    "pattern": r"^rev:sha256:[0-9a-f]{64}$",
                    "description": "for a query: a revision this task may read (default: head)",
                },
                "requestId": rid,
            },
            ["task"],
            defs,
        ),
        tool_name(MetaOperation.MODEL_PROPOSE_PATCH): _object(
            {
                "task": task,
                "plan": {"$ref": "#/$defs/PlanDraft"},
                "baseRevision": {
                    "type": "string",
                    "pattern": r"^rev:sha256:[0-9a-f]{64}$",
                    "description": "the revision the plan was made against (default: the "
                    "task's head; a stale one is refused)",
                },
                "requestId": rid,
            },
            ["task", "plan"],
            defs,
        ),
        tool_name(MetaOperation.MODEL_PREVIEW): _object({"task": task, "requestId": rid}, ["task"]),
        tool_name(MetaOperation.MODEL_VALIDATE): _object(
            {"task": task, "requestId": rid}, ["task"]
        ),
        tool_name(MetaOperation.MODEL_COMMIT): _object(
            {
                "task": task,
                "publish": {
                    "type": "boolean",
                    "description": "also move the user's main head (irreversible; the grant "
                    "may require the user's approval)",
                },
                "requestId": rid,
            },
            ["task"],
        ),
        tool_name(MetaOperation.MODEL_REVERT): _object({"task": task, "requestId": rid}, ["task"]),
    }
    apply = copy.deepcopy(schemas[tool_name(MetaOperation.MODEL_PROPOSE_PATCH)])
    apply["properties"] = {
        **{k: v for k, v in apply["properties"].items() if k != "requestId"},
        "publish": schemas[tool_name(MetaOperation.MODEL_COMMIT)]["properties"]["publish"],
        "requestId": rid,
    }
    schemas[MODEL_APPLY] = apply
    return schemas


def tool_definitions(
    aliases: Mapping[str, Sequence[str]] | None = None,
    *,
    budgets: TaskBudgets = DEFAULT_BUDGETS,
) -> list[dict[str, Any]]:
    """The tools as ``tools/list`` carries them (wire names), ``task_open`` first and
    ``model_apply`` last. No output schema: a result's one content block is its JSON
    (docs/mcp.md says why there is no second, structured copy)."""
    schemas = input_schemas(aliases, budgets=budgets)
    out = []
    for name, operation in [(TASK_OPEN, None), *OPERATIONS.items(), (MODEL_APPLY, MODEL_APPLY)]:
        out.append(
            {
                "name": name,
                "title": annotations(operation)["title"],
                "description": description(operation),
                "inputSchema": schemas[name],
                "annotations": annotations(operation),
            }
        )
    return out
