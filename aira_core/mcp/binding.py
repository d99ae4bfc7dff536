"""Scoped binding (RFC-0002 §13.1): a capability described in a task, projected for a while
as a typed tool of its own.

A binding is made by ``catalog_describe`` with ``bind: true`` and holds the snapshot it was
made under: the task, the revision it binds to (the task's head then), the discovery
catalog hash, the runtime snapshot and the grant. Calling the tool makes a one-step plan of
the capability and its arguments against that revision and submits it through
``model.proposePatch``, the same pipeline as any plan; it never calls a kernel itself.

When any part of the snapshot no longer holds (the task moved on, the catalog or the grant
changed, the TTL ran out), the binding is stale: a call answers ``BOUND_CAPABILITY_STALE``
and never silently runs against the latest revision; the tool leaves the list, and clients
are told the list changed. A task holds at most :data:`BIND_LIMIT` live bindings.
"""

from __future__ import annotations

import copy
import re
import secrets
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

BOUND_CAPABILITY_STALE = "BOUND_CAPABILITY_STALE"
MCP_BIND_LIMIT = "MCP_BIND_LIMIT"
MCP_BIND_REFUSED = "MCP_BIND_REFUSED"
BIND_LIMIT = 20
"""The most live bindings one task holds (the specification's 5–20)."""
BIND_TTL_S = 900.0
"""How long a binding lives unless the server is told otherwise (``--bind-ttl``)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9]+")


@dataclass
class Binding:
    tool: str
    task: str
    capability: str
    revision: str
    catalog: str
    runtime: str | None
    grant: str
    expires: float
    """On the server's monotonic clock."""
    input_schema: dict[str, Any] = field(repr=False)
    summary: str = ""

    @cached_property
    def validator(self) -> Any:
        """The input schema compiled, once per binding (not once per call)."""
        import jsonschema_rs

        return jsonschema_rs.Draft202012Validator(self.input_schema)

    def problem(
        self, *, head: str | None, catalog: str, runtime: str | None, grant: str, now: float
    ) -> str | None:
        """Why this binding no longer holds (``None``: it does)."""
        if now >= self.expires:
            return "its time to live ran out"
        if head is None:
            return "its task is no longer open"
        if head != self.revision:
            return f"its task moved from {self.revision[:19]}… to {head[:19]}…"
        if catalog != self.catalog:
            return "the catalog changed since it was bound"
        if runtime != self.runtime:
            return "the runtime snapshot changed since it was bound"
        if grant != self.grant:
            return "the grant changed since it was bound"
        return None

    def definition(self) -> dict[str, Any]:
        """The tool as ``tools/list`` carries it."""
        return {
            "name": self.tool,
            "title": f"{self.capability} (bound)",
            "description": (
                f"{self.summary} Bound to the task that described it (pass its handle as "
                f"`task`), at {self.revision[:19]}…: a call submits a one-step plan of "
                f"{self.capability} through model.proposePatch (then preview, validate and "
                "commit as usual). Stale once the task moves on."
            ).strip(),
            "inputSchema": self.input_schema,
            "annotations": {
                "title": f"{self.capability} (bound)",
                "readOnlyHint": False,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }


def bound_tool_name(capability: str) -> str:
    """``cap:exact.box@1`` → ``bound_exact_box_1_<6 hex>``: API-safe, at most 64 characters,
    unique (a new name each binding: a stale one is never reused)."""
    stem = _UNSAFE.sub("_", capability.removeprefix("cap:")).strip("_")[:48]
    return f"bound_{stem}_{secrets.token_hex(3)}"


def bound_input_schema(capability_schema: dict[str, Any]) -> dict[str, Any]:
    """The bound tool's input: the capability's own argument schema, a label for what the
    step creates, and the optional request id."""
    from aira_core.mcp.tools import REQUEST_ID_PATTERN, TASK_HANDLE_PATTERN
    from aira_core.model.aliases import LABEL_PATTERN

    args = copy.deepcopy(capability_schema) if capability_schema else {"type": "object"}
    defs = args.pop("$defs", None)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "pattern": TASK_HANDLE_PATTERN,
                "description": "the handle of the task this binding belongs to",
            },
            "args": args,
            "label": {
                "type": "string",
                "pattern": LABEL_PATTERN.pattern,
                "description": "a name for what the step creates (later b:<label>)",
            },
            "requestId": {"type": "string", "pattern": REQUEST_ID_PATTERN},
        },
        "required": ["task", "args"],
        "additionalProperties": False,
    }
    if defs:
        schema["$defs"] = defs
    return schema
