"""What ``aira mcp serve``'s tools and resources do, on the task runtime (no MCP SDK here:
:mod:`aira_core.mcp.server` puts this on the wire).

The protocol keeps no session (MCP 2026-07-28), so a task is an explicit handle:
``task_open`` mints one (``mcp-`` and 16 hex digits), with a branch ``task/<handle>`` from
main's head, and every other tool takes it as ``task``. The handle names a
:class:`~aira_core.runtime.session.Task`: its state machine, grant, budgets and trace are
the ones the step host's tasks have, and every call goes through it. Tasks live as long as
the server process; their revisions live in the store.

Everything here runs on one thread (the server's worker): the store's SQLite connection and
the kernel are used from the thread that opened them.

Every answer is an observation envelope. A refusal (``blocked``, ``failed``, ``stale``) is
an error result whose text begins with the diagnostic codes and messages, never a
traceback; output passes the same redaction as every diagnostic.
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from aira_core.canonical import CanonicalJSONError, canonical_bytes, sha256_hex
from aira_core.contracts.base import MAX_VALUE_DEPTH
from aira_core.contracts.capability import WRITING_KINDS
from aira_core.contracts.plan import NextAction, ObservationEnvelope
from aira_core.diagnostics import AiraError, Diagnostic, redact, redact_value
from aira_core.mcp.binding import (
    BIND_LIMIT,
    BIND_TTL_S,
    BOUND_CAPABILITY_STALE,
    MCP_BIND_LIMIT,
    MCP_BIND_REFUSED,
    Binding,
    bound_input_schema,
    bound_tool_name,
)
from aira_core.mcp.observation import compact
from aira_core.mcp.tools import (
    MODEL_APPLY,
    OPERATIONS,
    TASK_OPEN,
    input_schemas,
    tool_definitions,
    tool_name,
)
from aira_core.runtime import contract as mc
from aira_core.runtime.contract import CompletionAuthority, MetaOperation
from aira_core.runtime.session import TaskProtocol
from aira_core.runtime.tiers import DEFAULT_BUDGETS, DEFAULT_TIER, TaskBudgets, Tier, tier

MCP_TASK_UNKNOWN = "MCP_TASK_UNKNOWN"
MCP_TASK_LIMIT = "MCP_TASK_LIMIT"
MCP_TOOL_UNKNOWN = "MCP_TOOL_UNKNOWN"
MCP_RESOURCE_UNKNOWN = "MCP_RESOURCE_UNKNOWN"
MCP_CAPABILITY_UNKNOWN = "MCP_CAPABILITY_UNKNOWN"
MCP_RESOURCE_TOO_LARGE = "MCP_RESOURCE_TOO_LARGE"
DUPLICATE_REQUEST_ID = "DUPLICATE_REQUEST_ID"
ARGS_INVALID = "ARGS_INVALID"
MAX_TASKS = 64
MAX_CALLS = 4096
"""Calls one task takes before its budget is exhausted (the step host counts 48 decisions;
an agent's call is finer than a decision): what bounds a task's trace in memory."""
TRACE_SHOWN = 1000
"""The most recent trace records the trace resource shows."""
MESSAGE_CHARS = 2000
"""A diagnostic message in a result is cut here: a long argument echoed back stays bounded."""
EXPORT_BYTES = 64 * 1024 * 1024
"""Exported files kept in memory, in all (they are made again on demand)."""
REV_PATTERN = re.compile(r"^rev:sha256:[0-9a-f]{64}$")
"""Open tasks one server holds; past it the oldest ended or idle one is let go."""
IDLE_S = 3600.0
"""A task untouched this long may be let go when the server needs room."""
EXPORT_FORMATS = {
    "step": "model/step",
    "stl": "model/stl",
    "3mf": "model/3mf",
    "svg": "image/svg+xml",
    "png": "image/png",
}
_BINARY = frozenset({"stl", "3mf", "png"})
EXPORTED_TYPES = {"StepFile": "step", "StlFile": "stl", "ThreeMfFile": "3mf", "SvgFile": "svg"}
"""An exporter capability's output type → the export resource that runs it."""
_MESHES = frozenset({"stl", "3mf"})
CHUNK_BYTES = 512 * 1024
"""The most one resource read carries of an export: base64 (binary) and the JSON-RPC frame
keep it under the 1 MiB a message the SDK's clients take by default."""
_ERROR_STATUSES = frozenset({"blocked", "failed", "stale"})
RESOURCE_PREFIX = "aira://"
ARGUMENT_BYTES = 1024 * 1024
"""The most a call's arguments may hold (canonical JSON): a plan of hundreds of steps fits;
what a result echoes of them stays bounded."""
REPLIES_KEPT = 256
"""Answers a task keeps for calls sent again with the same request id."""
ARGUMENT_DEPTH = MAX_VALUE_DEPTH + 8
"""How deeply a call's arguments may nest: a step's free JSON value (MAX_VALUE_DEPTH) inside
a plan inside the arguments."""


PROTOCOL = TaskProtocol(completion_authority=CompletionAuthority.MODEL)
"""As the step host's tasks: a read-back after a commit does not end a task the agent is
still working on; the runtime still decides every terminal state from the trace."""


def default_grant(*, allow_publish: bool = False) -> Any:
    """The local user's grant, except that publishing to main needs the user's confirmation
    (a model never moves the user's head by itself), unless the user started the server with
    ``--allow-publish``."""
    from aira_core.catalog.policy import LOCAL_GRANT

    if allow_publish:
        return LOCAL_GRANT.model_copy(update={"grant_id": "grant:local-mcp-publish"})
    return LOCAL_GRANT.model_copy(
        update={"grant_id": "grant:local-mcp", "confirmation_required": ["publish"]}
    )


PUBLISH_HOW = (
    "publishing to main needs the user's approval, which this client cannot give here: "
    "commit to the task branch (publish false) and ask the user to publish it, or to "
    "restart the server with `aira mcp serve --allow-publish` (or --grant FILE, a Session "
    "Grant without publish in confirmationRequired)"
)
PUBLISH_DECLINED = (
    "the user declined to publish to main: commit to the task branch (publish false); the "
    "user may publish it later"
)


@dataclass
class Answer:
    """One tool result: the envelope (the full wire form, which the runtime traced), whether
    it is an error result, the text a model reads (its compact form, sent once), and any
    images (PNG bytes) shown beside it."""

    envelope: dict[str, Any]
    is_error: bool
    text: str
    images: list[bytes] = dataclasses.field(default_factory=list)


@dataclass
class OpenTask:
    handle: str
    task: Any
    tier: Tier
    budgets: TaskBudgets
    used: float
    calls: int = 0
    # The answers to this task's calls by the client's request id (and what was asked):
    # a call sent again with the same id and arguments gets the same answer, run once.
    replies: OrderedDict[str, tuple[str, Answer]] = dataclasses.field(default_factory=OrderedDict)
    # The last preview or validate: (what was asked, the task's checkpoint after it, the
    # answer). The same check again while the task has not moved answers the same: a
    # preview or validate is idempotent, also after it failed and left the task repairing.
    last_check: tuple[str, tuple[Any, ...], Answer] | None = None

    def request_id_of(self, arguments: Mapping[str, Any], problem: str | None) -> str:
        """The client's request id, or one of the server's: for a call without one, and for
        a call refused for its arguments (an id that fails its pattern is never used up)."""
        self.calls += 1
        given = arguments.get("requestId")
        if problem is None and isinstance(given, str):
            return given
        # '#' is outside the pattern a client's own ids must match: never a collision.
        return f"mcp#{self.calls}"


def _answer(envelope: ObservationEnvelope | dict[str, Any]) -> Answer:
    wire = envelope.to_wire() if isinstance(envelope, ObservationEnvelope) else envelope
    wire = redact_value(wire)
    for d in wire.get("diagnostics", []):
        message = d.get("message")
        if isinstance(message, str) and len(message) > MESSAGE_CHARS:
            d["message"] = message[:MESSAGE_CHARS] + f"… ({len(message)} characters)"
    text = json.dumps(compact(wire), ensure_ascii=False, separators=(",", ":"))
    return Answer(wire, wire.get("status") in _ERROR_STATUSES, text)


def _refusal(request_id: str, code: str, message: str, subject: str | None = None) -> Answer:
    """A refusal before any task runs the call (no task to trace it in)."""
    return _answer(
        ObservationEnvelope(
            request_id=request_id,
            status="blocked",
            diagnostics=[Diagnostic(code=code, message=message, subject=subject)],
        )
    )


@cache
def _validators() -> dict[str, Any]:
    """The argument checks of the eleven tools: their schemas without the enums (the runtime
    names an unknown handle better than a schema can) and with a plan checked as a
    PlanDraft afterwards, where its problem is located precisely."""
    import jsonschema_rs

    out = {}
    for name, schema in input_schemas(None).items():
        schema = json.loads(json.dumps(schema))
        if "plan" in schema["properties"]:
            schema["properties"]["plan"] = {"type": "object"}
            schema.pop("$defs", None)
        out[name] = jsonschema_rs.Draft202012Validator(schema)
    return out


def _argument_problem(name: str, arguments: Mapping[str, Any], validator: Any = None) -> str | None:
    """The first way ``arguments`` miss tool ``name``'s schema (``validator``: default the
    tool's own), located; ``None`` if they fit."""
    validator = validator or _validators()[name]
    for error in validator.iter_errors(dict(arguments)):
        where = "/" + "/".join(str(p) for p in error.instance_path)
        return f"{name}: {error.message[:300]} at {where}"
    return None


class Engine:
    """The tools and resources of one server, over one store, kernel and grant."""

    def __init__(
        self,
        store: Path | None,
        *,
        kernel: Any,
        grant: Any = None,
        tier_name: str = DEFAULT_TIER,
        bind_ttl: float = BIND_TTL_S,
        max_tasks: int = MAX_TASKS,
        clock: Callable[[], float] = time.monotonic,
        context: Any = None,
        single_client: bool = True,
    ) -> None:
        """``context``: a :class:`~aira_core.runtime.plan.PlanContext` whose catalog and
        store to serve instead of the production catalog on ``store`` (its repository stays
        the caller's to close; the grant is still ``grant``).
        ``single_client``: one client talks to this server (stdio), so the one task it has
        open may put its handles into the schemas; a shared server (HTTP) never shows one
        client another's handles. ``grant``: default the local user's, with publishing to
        main needing the user's confirmation (an agent over MCP has no way to give it)."""
        self.single_client = single_client
        self._store_path = store
        self._given = context
        self._kernel = kernel
        self._grant = grant
        self.tier = tier(tier_name)
        self.bind_ttl = bind_ttl
        self.max_tasks = max_tasks
        self._clock = clock
        self._tasks: OrderedDict[str, OpenTask] = OrderedDict()
        self._bindings: dict[str, Binding] = {}
        self._stale: dict[str, str] = {}  # tool name of a binding gone stale → why
        self._exports: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()
        # the catalog's shared grammars (snapshot, by structure) and those stated in full
        self._grammars: tuple[str, dict[str, Any]] | None = None
        self._declined = False  # the user declined to publish in the call being made
        self._stated: set[str] = set()
        self._ctx: Any = None
        self._repository: Any = None
        self._disclosure: Any = None
        self._tools_cache: tuple[Any, list[dict[str, Any]]] | None = None
        # Discovery that carries over (docs/mcp.md): capability → the discovery catalog hash
        # under which this server showed the agent its contract or signature.
        self._shown: dict[str, str] = {}
        self._grammars_sent: set[str] = set()

    # -- the store, the catalog ----------------------------------------------------------------

    def start(self) -> None:
        """Open the store (a missing one is made, with an empty model on main) and build the
        production catalog; called on the worker thread before the first request."""
        if self._ctx is not None:
            return
        if self._given is not None:  # its catalog and store; the grant is the server's
            grant = self._grant or default_grant()
            self._ctx, self._repository = dataclasses.replace(self._given, grant=grant), None
            return
        from aira_core.catalog.capabilities import capability_index, node_signatures
        from aira_core.catalog.catalog import build_catalog
        from aira_core.model.repository import ModelRepository
        from aira_core.model.store import default_store_path
        from aira_core.runtime.plan import PlanContext
        from aira_core.runtime.write import WritePath

        catalog = build_catalog()
        index = capability_index(catalog)
        path = self._store_path or default_store_path()
        fresh = not path.exists()
        repository = ModelRepository.open(path, node_signatures(index), create=fresh)
        try:
            ctx = PlanContext(
                catalog=catalog,
                repository=repository,
                grant=self._grant or default_grant(),
                capabilities=index,
            )
            if fresh:
                started = WritePath(ctx, self._kernel).init(None, "init")
                if started.status != "success":
                    raise AiraError(started.diagnostics[0].code, started.diagnostics[0].message)
        except BaseException:
            repository.close()
            raise
        self._repository, self._ctx = repository, ctx

    def close(self) -> None:
        if self._repository is not None:
            self._repository.close()
            self._repository = None

    @property
    def disclosure(self) -> Any:
        if self._disclosure is None:
            from aira_core.catalog.disclosure import catalog_disclosure, kernels_snapshot
            from aira_core.runtime.write import WritePath

            validators = WritePath(self._ctx, self._kernel).registered_validators()
            self._disclosure = catalog_disclosure(
                self._ctx.catalog,
                snapshot=kernels_snapshot([self._kernel], validators),
                grant=self._ctx.grant,
            )
        return self._disclosure

    def _snapshots(self) -> tuple[str, str | None, str]:
        from aira_core.catalog.hashes import runtime_snapshot_hash

        snapshot = self.disclosure.snapshot
        return (
            self._ctx.catalog.discovery_catalog_hash(),
            runtime_snapshot_hash(snapshot) if snapshot else None,
            self._ctx.grant.grant_id,
        )

    # -- tasks -----------------------------------------------------------------------------------

    def _live(self) -> list[OpenTask]:
        return [t for t in self._tasks.values() if t.task.terminal is None]

    def _room(self) -> bool:
        if len(self._tasks) < self.max_tasks:
            return True
        now = self._clock()
        for handle, open_task in list(self._tasks.items()):  # oldest use first
            if open_task.task.terminal is not None or now - open_task.used > IDLE_S:
                self._drop(handle)
                return True
        return False

    def _drop(self, handle: str) -> None:
        self._tasks.pop(handle, None)
        for name, binding in list(self._bindings.items()):
            if binding.task == handle:
                self._retire(name, "its task is no longer open")

    def _open(self, arguments: Mapping[str, Any]) -> Answer:
        from aira_core.runtime.intents import intent_frame
        from aira_core.runtime.session import Task

        problem = _argument_problem(TASK_OPEN, arguments)
        if problem is not None:
            return _refusal("open", ARGS_INVALID, problem, TASK_OPEN)
        try:
            chosen = tier(arguments.get("tier", self.tier.name))
            goal = arguments.get("intent")
            frame = intent_frame(goal) if goal is not None else None
        except AiraError as exc:
            return _refusal("open", exc.code, exc.diagnostic.message, TASK_OPEN)
        if not self._room():
            return _refusal(
                "open",
                MCP_TASK_LIMIT,
                f"this server holds {self.max_tasks} open tasks, none ended or idle; finish one",
                TASK_OPEN,
            )
        start = None
        if "from" in arguments:
            source = self._tasks.get(arguments["from"])
            if source is None:
                return self._unknown_task(arguments["from"], TASK_OPEN)
            start = source.task.head
        handle = f"mcp-{secrets.token_hex(8)}"
        budgets = DEFAULT_BUDGETS
        ctx = dataclasses.replace(self._ctx, intent=frame)
        try:
            if start is not None:  # the task's branch from there (Task branches from main)
                self._ctx.repository.store.branch(f"task/{handle}", start)
            task = Task(
                ctx,
                self._kernel,
                task_id=handle,
                protocol=PROTOCOL,
                repair_cap=budgets.repair_rounds,
            )
        except AiraError as exc:
            return _refusal("open", exc.code, exc.diagnostic.message, TASK_OPEN)
        open_task = OpenTask(handle, task, chosen, budgets, self._clock())
        self._tasks[handle] = open_task
        data: dict[str, Any] = {"task": handle, "tier": chosen.name}
        diagnostics = []
        wanted = list(dict.fromkeys(arguments.get("capabilities", [])))
        if wanted:
            from aira_core.catalog.signatures import catalog_signatures

            known = [c for c in wanted if c in self._ctx.capabilities]
            unknown = [c for c in wanted if c not in self._ctx.capabilities]
            if known:
                data["signatures"] = catalog_signatures(self._ctx.capabilities, known)
                self._show(known)
            if unknown:
                diagnostics.append(_unknown_capabilities(unknown, self._ctx.capabilities))
        self._carry(open_task)
        data["state"] = task.state.value
        return _answer(
            ObservationEnvelope(
                request_id="open",
                observed_revision=task.head,
                status="partial" if diagnostics else "success",
                data=data,
                diagnostics=diagnostics,
                next_actions=[
                    NextAction(operation=op.value) for op in mc.legal_operations(task.state)
                ],
            )
        )

    # -- discovery that carries over -----------------------------------------------------------

    def _show(self, capabilities: Any) -> None:
        """The agent was shown these capabilities' contracts or signatures under the catalog
        snapshot in force now: every task of this server may use them until it changes."""
        current = self._ctx.catalog.discovery_catalog_hash()
        for cap in capabilities:
            if cap in self._ctx.capabilities:
                self._shown[cap] = current

    def _carry(self, open_task: OpenTask) -> None:
        """What this server has shown the agent, under the current catalog snapshot, counts
        as discovered in ``open_task`` (a changed snapshot shows nothing: each id was shown
        under the hash it is kept with)."""
        if not self._shown or open_task.task.terminal is not None:
            return
        current = self._ctx.catalog.discovery_catalog_hash()
        fresh = [cap for cap, shown_under in self._shown.items() if shown_under == current]
        if fresh:
            open_task.task.shown(fresh)

    def _task(self, handle: Any) -> OpenTask | None:
        found = self._tasks.get(handle) if isinstance(handle, str) else None
        if found is not None:
            found.used = self._clock()
            self._tasks.move_to_end(handle)
        return found

    def _unknown_task(self, handle: Any, name: str) -> Answer:
        shown = redact(handle[:40]) if isinstance(handle, str) else type(handle).__name__
        return _refusal(
            "-",
            MCP_TASK_UNKNOWN,
            f"no open task {shown!r} on this server: task_open makes one (tasks live as long "
            "as the server; their revisions stay in the store)",
            name,
        )

    # -- tools -----------------------------------------------------------------------------------

    def list_tools(self) -> list[dict[str, Any]]:
        """The eleven tools, then the live bindings. With exactly one task open and not ended,
        the schemas list its head's legal handles as enums; with several (a shared HTTP
        server) no one task's handles can stand for all, and they are patterns."""
        key = self._enum_source()
        if self._tools_cache is None or self._tools_cache[0] != key:
            aliases = None
            if key is not None:
                from aira_core.runtime.drafts import legal_aliases

                table = self._ctx.repository.aliases(key[1])
                found = legal_aliases(table, ("bodies", "nodes", "parameters"))
                # a kind with none is a pattern, not an empty enum (which some
                # constrained decoders refuse, and which no call could satisfy)
                aliases = {kind: names for kind, names in found.items() if names}
            self._tools_cache = (key, tool_definitions(aliases, budgets=DEFAULT_BUDGETS))
        self._expire()
        return [*self._tools_cache[1], *(b.definition() for b in self._bindings.values())]

    def _enum_source(self) -> tuple[str, str] | None:
        """The task whose head's handles go into the schemas: the one live task of a
        single-client server; none otherwise."""
        live = self._live()
        if not self.single_client or len(live) != 1:
            return None
        return (live[0].handle, live[0].task.head)

    def tools_key(self) -> Any:
        """What the tool list depends on: when it changes, clients are told to list again."""
        return (self._enum_source(), tuple(self._bindings))

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """A listed tool's input schema as last listed (``None``: not known); cheap, for the
        SDK's HTTP header check, which asks before every call."""
        binding = self._bindings.get(name)
        if binding is not None:
            return binding.input_schema
        for tool in self._tools_cache[1] if self._tools_cache else ():
            if tool["name"] == name:
                return tool["inputSchema"]
        return None

    def publish_question(self, name: Any, arguments: Any) -> str | None:
        """What to ask the user before this call, if it asks to publish a live task's work
        to main and the grant wants the user's approval for that; None: nothing to ask (the
        call is refused or allowed by the usual rules)."""
        from aira_core.runtime.write import PUBLISH_ACTION

        if not asks_to_publish(name, arguments):
            return None
        handle = arguments.get("task")
        open_task = self._tasks.get(handle) if isinstance(handle, str) else None
        if open_task is None or open_task.task.terminal is not None:
            return None
        if PUBLISH_ACTION not in self._ctx.grant.confirmation_required:
            return None
        what = (
            "the plan it is applying, once the plan passes its check, preview and validation"
            if name == MODEL_APPLY
            else "the task's validated change"
        )
        return (
            f"An agent asks to publish {what} to main (task {handle}, branch task/{handle}). "
            "Publishing cannot be undone: main keeps it in its history. Publish it?"
        )

    def call(self, name: Any, arguments: Any, *, publish: bool | None = None) -> Answer:
        """One tool call; an answer whatever the input. ``publish``: the user's answer to
        :meth:`publish_question` (True approves publishing for this one call; False: the
        user declined, and a refusal says so); None when nobody was asked."""
        handle = arguments.get("task") if isinstance(arguments, Mapping) else None
        open_task = self._tasks.get(handle) if isinstance(handle, str) else None
        if publish is None or open_task is None:
            return self._call(name, arguments)
        from aira_core.runtime.write import PUBLISH_ACTION

        self._declined = publish is False
        if publish:
            open_task.task.approve(PUBLISH_ACTION)
        try:
            return self._call(name, arguments)
        finally:
            self._declined = False
            open_task.task.withdraw(PUBLISH_ACTION)  # an approval is for this one call

    def _call(self, name: Any, arguments: Any) -> Answer:
        if not isinstance(name, str):
            return _refusal("-", MCP_TOOL_UNKNOWN, "a tool name is a string")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return _refusal("-", ARGS_INVALID, "tool arguments are a JSON object", name)
        try:  # before any schema walks them: no NaN, no lone surrogate, bounded depth
            size = len(canonical_bytes(arguments, max_depth=ARGUMENT_DEPTH))
        except CanonicalJSONError as exc:
            return _refusal("-", ARGS_INVALID, f"the arguments are not plain JSON: {exc}", name)
        if size > ARGUMENT_BYTES:
            return _refusal(
                "-",
                ARGS_INVALID,
                f"the arguments are {size} bytes; a call takes at most {ARGUMENT_BYTES}",
                name,
            )
        try:
            if name == TASK_OPEN:
                return self._open(arguments)
            if name == MODEL_APPLY:
                return self._replayed(name, arguments, self._apply)
            operation = OPERATIONS.get(name)
            if operation is not None:
                return self._replayed(
                    name, arguments, lambda a: self._operation(name, operation, a)
                )
            if name in self._bindings or name in self._stale:
                return self._bound(name, arguments)
        except AiraError as exc:  # a store or kernel refusal the runtime did not wrap
            return _refusal("-", exc.code, exc.diagnostic.message, name)
        known = ", ".join([TASK_OPEN, *OPERATIONS, MODEL_APPLY])
        return _refusal(
            "-", MCP_TOOL_UNKNOWN, f"no tool {redact(name[:64])!r}; the tools are {known}"
        )

    def _replayed(
        self, name: str, arguments: Mapping[str, Any], run: Callable[[Mapping[str, Any]], Answer]
    ) -> Answer:
        """``run(arguments)``, or, for a call sent again with the same request id and the
        same arguments, the answer it had (nothing runs twice: a retry after a lost answer is
        safe for every tool). The same id with other arguments is refused."""
        rid, handle = arguments.get("requestId"), arguments.get("task")
        open_task = self._tasks.get(handle) if isinstance(handle, str) else None
        if not isinstance(rid, str) or open_task is None:
            return run(arguments)
        asked = sha256_hex({"tool": name, "arguments": dict(arguments)})
        kept = open_task.replies.get(rid)
        if kept is not None:
            if kept[0] == asked:
                return kept[1]
            return _refusal(
                rid,
                DUPLICATE_REQUEST_ID,
                f"request id {rid} was used before for another call; a retry sends the same "
                "arguments, a new call a new id",
                name,
            )
        answer = run(arguments)
        first = (answer.envelope.get("diagnostics") or [{}])[0].get("code")
        if first != ARGS_INVALID:  # refused for its arguments: the id was not used up
            open_task.replies[rid] = (asked, answer)
            while len(open_task.replies) > REPLIES_KEPT:
                open_task.replies.popitem(last=False)
        return answer

    def _operation(
        self, name: str, operation: MetaOperation, arguments: Mapping[str, Any]
    ) -> Answer:
        open_task = self._task(arguments.get("task"))
        problem = _argument_problem(name, arguments)
        if open_task is None:
            if problem is not None and "task" not in arguments:
                return _refusal("-", ARGS_INVALID, problem, name)
            return self._unknown_task(arguments.get("task"), name)
        task = open_task.task
        rid = open_task.request_id_of(arguments, problem)
        if problem is None and "rev" in arguments and "query" not in arguments:
            problem = f"{name}: rev is for a query (a page or the summary is of the head)"
        if problem is not None:
            return _answer(task.refuse(rid, operation.value, ARGS_INVALID, problem))
        if open_task.calls > MAX_CALLS and task.terminal is None:
            task.exhaust(rid, f"the task took {MAX_CALLS} calls")
        self._carry(open_task)
        if operation is MetaOperation.CATALOG_DESCRIBE:
            return self._describe(open_task, rid, arguments)
        if operation is MetaOperation.MODEL_READ and "view" in arguments:
            return self._picture(open_task, rid, arguments)
        args = {
            k: v
            for k, v in arguments.items()
            if k not in ("task", "requestId", "bind", "baseRevision")
        }
        if operation is MetaOperation.MODEL_PROPOSE_PATCH:
            from aira_core.runtime.drafts import plan_draft_wire

            try:
                draft = plan_draft_wire(arguments["plan"])
            except ValueError as exc:
                return _answer(task.refuse(rid, operation.value, ARGS_INVALID, f"the plan: {exc}"))
            base = arguments.get("baseRevision") or task.head
            args = {"plan": {**draft, "baseRevision": base}}
        checks = operation in (MetaOperation.MODEL_PREVIEW, MetaOperation.MODEL_VALIDATE)
        asked = sha256_hex({"tool": name, "arguments": args})
        kept = open_task.last_check
        if checks and kept is not None and kept[0] == asked and kept[1] == task.checkpoint:
            return kept[2]
        envelope = task.call(operation.value, rid, args)
        if operation is MetaOperation.MODEL_COMMIT and envelope.status in ("success", "partial"):
            envelope = envelope.model_copy(update={"artifacts": self._artifacts(open_task)})
        if operation is MetaOperation.MODEL_COMMIT and args.get("publish"):
            envelope = _publish_help(envelope, declined=self._declined)
        answer = _answer(envelope)
        if checks:
            open_task.last_check = (asked, task.checkpoint, answer)
        self._expire()
        return answer

    # -- the part as a picture -------------------------------------------------------------------

    def _picture(self, open_task: OpenTask, rid: str, arguments: Mapping[str, Any]) -> Answer:
        """``model_read view=picture``: the head's summary (a read, traced as one) with the
        head drawn as one PNG image beside it; the picture is the ``part.png`` resource.
        A head with nothing to draw: the summary, ``partial``, with the picture's code."""
        task = open_task.task
        op = MetaOperation.MODEL_READ.value
        others = sorted(k for k in arguments if k not in ("task", "requestId", "view"))
        if others:
            return _answer(
                task.refuse(
                    rid,
                    op,
                    ARGS_INVALID,
                    f"view=picture takes no {', '.join(others)}: "
                    "it draws the head (read pages or a query in another call)",
                )
            )
        envelope = task.call(op, rid, {})
        if envelope.status != "success":
            return _answer(envelope)
        head = task.head
        uri = f"{RESOURCE_PREFIX}tasks/{open_task.handle}/part.png"
        try:
            if not self._ctx.repository.document(head).bodies:
                from aira_core.report.picture import REPORT_PICTURE_EMPTY

                raise AiraError(REPORT_PICTURE_EMPTY, "the head has no body yet: nothing to draw")
            png = self._export(head, "png")
        except AiraError as exc:
            problem = exc.diagnostic.model_copy(update={"subject": "view"})
            return _answer(
                envelope.model_copy(
                    update={"status": "partial", "diagnostics": [*envelope.diagnostics, problem]}
                )
            )
        picture = {"uri": uri, "mimeType": "image/png", "bytes": len(png)}
        answer = _answer(
            envelope.model_copy(update={"data": {**envelope.data, "picture": picture}})
        )
        return dataclasses.replace(answer, images=[png])

    # -- describe, one or several ----------------------------------------------------------------

    def _describe(self, open_task: OpenTask, rid: str, arguments: Mapping[str, Any]) -> Answer:
        task = open_task.task
        op = MetaOperation.CATALOG_DESCRIBE.value
        one, several = arguments.get("capabilityId"), arguments.get("capabilityIds")
        if (one is None) == (several is None):
            return _answer(
                task.refuse(
                    rid,
                    op,
                    ARGS_INVALID,
                    "catalog_describe takes capabilityId or capabilityIds (one of them)",
                )
            )
        if several is not None and arguments.get("bind"):
            return _answer(task.refuse(rid, op, ARGS_INVALID, "bind takes one capabilityId"))
        base = {k: arguments[k] for k in ("level", "selectionRefs") if k in arguments}
        ids = [one] if several is None else list(dict.fromkeys(several))
        described: dict[str, Any] = {}
        diagnostics: list[Diagnostic] = []
        last: ObservationEnvelope | None = None
        for i, cap in enumerate(ids):
            call_id = rid if several is None else f"{rid}#{i + 1}"
            last = task.call(op, call_id, {"capabilityId": cap, **base})
            if last.status == "success":
                described[cap] = {
                    k: v for k, v in last.data.items() if k not in ("state", "terminal")
                }
                run = self._run_hint(open_task, described[cap])
                if run is not None:
                    described[cap]["run"] = run
                if base.get("level", "L2") == "L2":
                    self._show([cap])
            else:
                diagnostics += [d.model_copy(update={"subject": cap}) for d in last.diagnostics]
        assert last is not None
        if several is None:
            if one in described:
                last = last.model_copy(update={"data": {**last.data, **described[one]}})
            answer = _answer(self._compact_contracts(last, described))
            if arguments.get("bind"):
                answer = self._bind(open_task, one, answer)
            return answer
        status = "success" if not diagnostics else "partial" if described else "blocked"
        merged = last.model_copy(
            update={
                "request_id": rid,
                "status": status,
                "data": {"state": task.state.value, "contracts": described},
                "diagnostics": diagnostics,
            }
        )
        return _answer(self._compact_contracts(merged, described))

    def _candidate_handles(
        self, task: Any, envelope: ObservationEnvelope, done: dict[str, Any]
    ) -> ObservationEnvelope:
        """A refusal after the preview speaks of the candidate's entities: by the handles
        the plan named (``b:plate``), as a commit's answer does, not by entity ids no
        revision holds yet."""
        from aira_core.model.aliases import AliasTable

        document = task.candidate_document
        if document is None or not (done.get("bodies") or envelope.diagnostics):
            return envelope
        table = AliasTable.build("candidate", document)
        _by_handles(table, done)
        named = [
            d.model_copy(update={"subject": _alias(table, d.subject)}) if d.subject else d
            for d in envelope.diagnostics
        ]
        return envelope.model_copy(update={"diagnostics": named})

    def _run_hint(self, open_task: OpenTask, described: Mapping[str, Any]) -> dict[str, Any] | None:
        """How to run an exporter over MCP: it is no plan step, its file is a resource."""
        contract = described.get("contract")
        if not isinstance(contract, Mapping) or contract.get("kind") != "exporter":
            return None
        fmt = next(
            (EXPORTED_TYPES[t] for t in contract.get("outputTypes", []) if t in EXPORTED_TYPES),
            None,
        )
        if fmt is None:
            return None
        query = "{?tolerance,angularTolerance}" if fmt in _MESHES else ""
        return {
            "resource": f"{RESOURCE_PREFIX}tasks/{open_task.handle}/part.{fmt}{query}",
            "how": "read this resource (every body of the task's head); an exporter is no "
            "plan step",
        }

    def _compact_contracts(
        self, envelope: ObservationEnvelope, described: Mapping[str, Any]
    ) -> ObservationEnvelope:
        """Contracts with the shared grammars referenced, each grammar stated in full once
        per server, in ``data.grammars`` of the first describe that references it (and
        always readable as ``aira://grammars/<name>``)."""
        from aira_core.catalog.shown import compact_contracts

        if not described:
            return envelope
        data = compact_contracts(envelope.data, self._shared_grammars(), self._stated)
        return envelope.model_copy(update={"data": data})

    def _shared_grammars(self) -> dict[str, Any]:
        """The catalog's shared grammars, found once per catalog snapshot."""
        from aira_core.catalog.shown import shared_grammars

        snapshot = self._ctx.catalog.discovery_catalog_hash()
        if self._grammars is None or self._grammars[0] != snapshot:
            found = shared_grammars(e.input_schema for e in self._ctx.capabilities.values())
            self._grammars = (snapshot, found)
            self._stated = set()
        return self._grammars[1]

    # -- one call for a plan that is right -------------------------------------------------------

    def _apply(self, arguments: Mapping[str, Any]) -> Answer:
        """check → propose → preview → validate → commit, each the meta-operation it is on
        the task runtime (its admission, grant, trace), stopping at the first refusal."""
        from aira_core.runtime.drafts import plan_draft_wire

        open_task = self._task(arguments.get("task"))
        problem = _argument_problem(MODEL_APPLY, arguments)
        if open_task is None:
            if problem is not None and "task" not in arguments:
                return _refusal("-", ARGS_INVALID, problem, MODEL_APPLY)
            return self._unknown_task(arguments.get("task"), MODEL_APPLY)
        task = open_task.task
        rid = open_task.request_id_of(arguments, problem)
        propose = MetaOperation.MODEL_PROPOSE_PATCH.value
        if problem is not None:
            return _answer(task.refuse(rid, propose, ARGS_INVALID, problem))
        if open_task.calls > MAX_CALLS and task.terminal is None:
            task.exhaust(rid, f"the task took {MAX_CALLS} calls")
        self._carry(open_task)
        try:
            draft = plan_draft_wire(arguments["plan"])
        except ValueError as exc:
            return _answer(task.refuse(rid, propose, ARGS_INVALID, f"the plan: {exc}"))
        base = arguments.get("baseRevision") or task.head
        stages = [
            (
                "proposed",
                MetaOperation.MODEL_PROPOSE_PATCH,
                {"plan": {**draft, "baseRevision": base}},
            ),
            ("previewed", MetaOperation.MODEL_PREVIEW, {}),
            ("validated", MetaOperation.MODEL_VALIDATE, {}),
            ("committed", MetaOperation.MODEL_COMMIT, {"publish": bool(arguments.get("publish"))}),
        ]
        done: dict[str, Any] = {}
        warnings: list[Diagnostic] = []
        envelope: ObservationEnvelope | None = None
        for _stage, operation, args in stages:
            envelope = task.call(operation.value, f"{rid}#{operation.value}", args)
            if operation is MetaOperation.MODEL_COMMIT and args.get("publish"):
                envelope = _publish_help(envelope, declined=self._declined)
            if envelope.status not in ("success", "partial"):
                envelope = self._candidate_handles(task, envelope, done)
                data = {**envelope.data, "stage": operation.value, **done}
                return _answer(envelope.model_copy(update={"request_id": rid, "data": data}))
            warnings += [d for d in envelope.diagnostics if d.severity != "error"]
            if operation is MetaOperation.MODEL_PROPOSE_PATCH:
                done["planId"] = envelope.data.get("planId")
            elif operation is MetaOperation.MODEL_PREVIEW:
                done["bodies"] = _bodies(envelope.data.get("bodies", {}))
            elif operation is MetaOperation.MODEL_VALIDATE and envelope.data.get("assertions"):
                done["assertions"] = envelope.data["assertions"]
        assert envelope is not None
        rev = envelope.data.get("rev")
        if isinstance(rev, str):  # the handles the plan named (b:plate), not entity ids
            _by_handles(self._ctx.repository.aliases(rev), done)
        data = {
            "state": task.state.value,
            "rev": envelope.data.get("rev"),
            **({"published": envelope.data["published"]} if envelope.data.get("published") else {}),
            **done,
        }
        committed = envelope.model_copy(
            update={
                "request_id": rid,
                "data": data,
                "diagnostics": [*warnings, *[d for d in envelope.diagnostics if d not in warnings]],
                "artifacts": self._artifacts(open_task),
            }
        )
        answer = _answer(committed)
        self._expire()
        return answer

    # -- scoped binding --------------------------------------------------------------------------

    def _bind(self, open_task: OpenTask, capability: str, described: Answer) -> Answer:
        if described.is_error:
            return described
        entry = self._ctx.capabilities.get(capability)
        refusal: tuple[str, str] | None = None
        if entry is None or entry.descriptor.kind not in WRITING_KINDS:
            refusal = (
                MCP_BIND_REFUSED,
                f"{capability} is not a writing capability: only those are bound as tools",
            )
        elif sum(b.task == open_task.handle for b in self._bindings.values()) >= BIND_LIMIT:
            refusal = (MCP_BIND_LIMIT, f"the task already holds {BIND_LIMIT} live bindings")
        if refusal is not None:  # described all the same: the binding is what is refused
            envelope = dict(described.envelope)
            warning = Diagnostic(
                code=refusal[0], message=refusal[1], severity="warning", subject=capability
            )
            envelope["diagnostics"] = [
                *envelope.get("diagnostics", []),
                warning.model_dump(mode="json", exclude_none=True),
            ]
            return _answer(envelope)
        for name, old in list(self._bindings.items()):  # bound again: the new one replaces it
            if old.task == open_task.handle and old.capability == capability:
                self._retire(name, "the capability was bound again")
        catalog, runtime, grant = self._snapshots()
        binding = Binding(
            tool=bound_tool_name(capability),
            task=open_task.handle,
            capability=capability,
            revision=open_task.task.head,
            catalog=catalog,
            runtime=runtime,
            grant=grant,
            expires=self._clock() + self.bind_ttl,
            input_schema=bound_input_schema(entry.input_schema),
            summary=entry.descriptor.summary,
        )
        self._bindings[binding.tool] = binding
        envelope = dict(described.envelope)
        envelope["data"] = {
            **envelope.get("data", {}),
            "binding": {
                "tool": binding.tool,
                "revision": binding.revision,
                "ttlSeconds": self.bind_ttl,
            },
        }
        return _answer(envelope)

    def _retire(self, name: str, why: str) -> None:
        self._bindings.pop(name, None)
        self._stale[name] = why
        while len(self._stale) > 1024:  # remembered to answer STALE, within a bound
            self._stale.pop(next(iter(self._stale)))

    def _expire(self) -> None:
        """Retire every binding whose snapshot no longer holds."""
        if not self._bindings:
            return
        catalog, runtime, grant = self._snapshots()
        now = self._clock()
        for name, binding in list(self._bindings.items()):
            open_task = self._tasks.get(binding.task)
            head = (
                open_task.task.head
                if open_task is not None and open_task.task.terminal is None
                else None
            )
            why = binding.problem(head=head, catalog=catalog, runtime=runtime, grant=grant, now=now)
            if why is not None:
                self._retire(name, why)

    def _bound(self, name: str, arguments: Mapping[str, Any]) -> Answer:
        self._expire()
        binding = self._bindings.get(name)
        if binding is None:
            return _refusal(
                "-",
                BOUND_CAPABILITY_STALE,
                f"the binding {name} is stale: {self._stale.get(name, 'it ended')}; describe "
                "the capability again with bind=true for a binding to the current revision",
                name,
            )
        if arguments.get("task") != binding.task:  # a handle is what lets a client act
            return self._unknown_task(arguments.get("task"), name)
        open_task = self._tasks[binding.task]
        task = open_task.task
        problem = _argument_problem(name, arguments, binding.validator)
        rid = open_task.request_id_of(arguments, problem)
        if problem is not None:
            return _answer(
                task.refuse(rid, MetaOperation.MODEL_PROPOSE_PATCH.value, ARGS_INVALID, problem)
            )
        step: dict[str, Any] = {
            "id": "s1",
            "capability": binding.capability,
            "args": arguments["args"],
        }
        if "label" in arguments:
            step["label"] = arguments["label"]
        plan = {"baseRevision": binding.revision, "steps": [step]}
        envelope = task.call(MetaOperation.MODEL_PROPOSE_PATCH.value, rid, {"plan": plan})
        answer = _answer(envelope)
        answer.envelope.setdefault("data", {})["boundTo"] = {
            "capability": binding.capability,
            "revision": binding.revision,
        }
        return answer

    # -- resources -------------------------------------------------------------------------------

    def resources(self) -> list[dict[str, Any]]:
        """What ``resources/list`` shows: what is not a task's (a task's own resources are
        named in its envelopes and by the templates, never listed: a shared server must not
        show one client another's task handles)."""
        return [
            {
                "uri": f"{RESOURCE_PREFIX}interface/manifest",
                "name": "manifest",
                "title": "L0 interface manifest",
                "description": "protocol version, taxonomy root, snapshots and limits",
                "mimeType": "application/json",
            },
            {
                "uri": f"{RESOURCE_PREFIX}catalog/signatures",
                "name": "signatures",
                "title": "Compact signatures",
                "description": "one line per capability: arguments, types, defaults",
                "mimeType": "text/plain",
            },
        ]

    def templates(self) -> list[dict[str, Any]]:
        return [
            {
                "uriTemplate": f"{RESOURCE_PREFIX}tasks/{{task}}/model",
                "name": "model",
                "title": "Model summary of a task's head",
                "mimeType": "application/json",
            },
            {
                "uriTemplate": f"{RESOURCE_PREFIX}tasks/{{task}}/revisions/{{rev}}",
                "name": "revision",
                "title": "Model summary of a revision the task may read",
                "mimeType": "application/json",
            },
            {
                "uriTemplate": (
                    f"{RESOURCE_PREFIX}tasks/{{task}}/part.{{format}}"
                    "{?tolerance,angularTolerance,chunk}"
                ),
                "name": "part",
                "title": "The task's head exported (format: step, stl, 3mf, svg or png); "
                "tolerance (mm) and angularTolerance (degrees) for a mesh, chunk for a "
                "large one",
            },
            {
                "uriTemplate": f"{RESOURCE_PREFIX}grammars/{{name}}",
                "name": "grammar",
                "title": "A grammar contracts share (a $ref grammar:<name> in a contract)",
                "mimeType": "application/json",
            },
            {
                "uriTemplate": f"{RESOURCE_PREFIX}tasks/{{task}}/trace",
                "name": "trace",
                "title": "The task's runtime trace: every call, its states and codes",
                "mimeType": "application/json",
            },
        ]

    def read(self, uri: Any) -> tuple[str | bytes, str]:
        """A resource's content and media type; ``AiraError`` (a stable code) otherwise."""
        if not isinstance(uri, str) or not uri.startswith(RESOURCE_PREFIX):
            raise AiraError(MCP_RESOURCE_UNKNOWN, "Aira's resources are aira:// URIs")
        path = uri.removeprefix(RESOURCE_PREFIX)
        if path == "interface/manifest":
            data = self.disclosure.manifest(
                meta_operations=[o.value for o in MetaOperation],
                contract_version=mc.CONTRACT_VERSION,
            )
            return _json(data), "application/json"
        if path == "catalog/signatures":
            from aira_core.catalog.signatures import catalog_signatures

            self._show(self._ctx.capabilities)  # read: every signature has been shown
            return catalog_signatures(self._ctx.capabilities), "text/plain"
        if path.startswith("grammars/"):
            wanted = path.removeprefix("grammars/")
            found = [g for g in self._shared_grammars().values() if g.name == wanted]
            if not found:
                raise AiraError(MCP_RESOURCE_UNKNOWN, "no grammar of that name in this catalog")
            return _json(found[0].schema), "application/json"
        parts = path.split("/")
        if len(parts) >= 3 and parts[0] == "tasks":
            open_task = self._task(parts[1])
            if open_task is None:
                raise AiraError(MCP_TASK_UNKNOWN, "no open task of that handle on this server")
            task, rest = open_task.task, parts[2:]
            if rest == ["model"]:
                return _json(self._ctx.repository.summary(task.head).to_wire()), "application/json"
            if rest == ["trace"]:
                shown = [r.to_wire() for r in task.trace[-TRACE_SHOWN:]]
                data = {"task": open_task.handle, "calls": len(task.trace), "trace": shown}
                return _json(data), "application/json"
            if len(rest) == 2 and rest[0] == "revisions":
                rev = rest[1]
                if not REV_PATTERN.match(rev):
                    raise AiraError(MCP_RESOURCE_UNKNOWN, "a revision is rev:sha256:<64 hex>")
                if not task.readable(rev):
                    raise AiraError(
                        MCP_RESOURCE_UNKNOWN, "that revision is not one this task may read"
                    )
                return _json(self._ctx.repository.summary(rev).to_wire()), "application/json"
            if len(rest) == 1 and rest[0].startswith("part."):
                fmt, _, query = rest[0].removeprefix("part.").partition("?")
                if fmt not in EXPORT_FORMATS:
                    raise AiraError(
                        MCP_RESOURCE_UNKNOWN,
                        f"formats are {', '.join(EXPORT_FORMATS)}, not {redact(fmt[:16])!r}",
                    )
                options = _export_options(fmt, query)
                self._may_export()
                chunk = options.pop("chunk", None)
                data = self._export(task.head, fmt, **options)
                return _chunk(uri, fmt, data, chunk), EXPORT_FORMATS[fmt]
        raise AiraError(MCP_RESOURCE_UNKNOWN, f"no resource {redact(uri[:120])!r}")

    def _artifacts(self, open_task: OpenTask) -> list[dict[str, Any]]:
        """The resources a commit makes readable: the head exported in each format."""
        base = f"{RESOURCE_PREFIX}tasks/{open_task.handle}/part"
        return [
            {"uri": f"{base}.{fmt}", "mimeType": mime, "format": fmt}
            for fmt, mime in EXPORT_FORMATS.items()
        ]

    def _may_export(self) -> None:
        """The grant is checked on every export, as on every call: alive, permitting
        export, and not asking for a confirmation an agent cannot give."""
        from datetime import UTC, datetime

        from aira_core.runtime.plan import grant_problems

        grant = self._ctx.grant
        problems = grant_problems(grant, datetime.now(UTC))
        if problems:
            raise AiraError(*problems[0])
        if not grant.permissions.export:
            raise AiraError(
                "GRANT_PERMISSION_DENIED", f"grant {grant.grant_id} does not permit export"
            )
        if "export" in grant.confirmation_required:
            raise AiraError(
                "PLAN_APPROVAL_REQUIRED",
                f"grant {grant.grant_id} asks the user to confirm each export: export with "
                "`aira model export` instead",
            )

    def _export(
        self,
        rev: str,
        fmt: str,
        *,
        tolerance: float | None = None,
        angular_tolerance: float | None = None,
    ) -> bytes:
        """The head exported (kept in memory, within a bound, per revision, format and
        tolerances); ``png``: the picture :func:`aira_core.report.picture` draws."""
        from aira_core import kernel_guard

        key = (rev, fmt, tolerance, angular_tolerance)
        data = self._exports.get(key)
        if data is None:
            document = self._ctx.repository.document(rev)
            if not document.bodies:
                raise AiraError(
                    MCP_RESOURCE_UNKNOWN, "the task's head has no body yet: nothing to export"
                )
            if fmt == "png":
                data = self._png(document)
            else:
                data = kernel_guard.export(
                    self._kernel,
                    document,
                    fmt,
                    tolerance=tolerance,
                    angular_tolerance=angular_tolerance,
                )
            self._exports[key] = data
            while sum(map(len, self._exports.values())) > EXPORT_BYTES and len(self._exports) > 1:
                self._exports.popitem(last=False)
        self._exports.move_to_end(key)
        return data

    def _png(self, document: Any) -> bytes:
        """The picture of ``document``: its display mesh drawn in four views, sized by the
        kernel's exact bounding box (:func:`aira_core.report.picture.revision_png`)."""
        from aira_core.report.picture import revision_png

        return revision_png(self._kernel, document)


def _export_options(fmt: str, query: str) -> dict[str, Any]:
    """``?tolerance=…&angularTolerance=…&chunk=N`` of an export's URI, checked as ``aira
    model export`` checks its options."""
    from urllib.parse import parse_qs

    from aira_core.kernel_guard import check_export_tolerances

    names = {"tolerance": "tolerance", "angularTolerance": "angular_tolerance", "chunk": "chunk"}
    try:
        given = parse_qs(
            query, keep_blank_values=True, strict_parsing=bool(query), max_num_fields=8
        )
    except ValueError:
        given = {"?": [query]}
    out: dict[str, Any] = {}
    for key, values in given.items():
        if key not in names or len(values) != 1:
            raise AiraError(
                MCP_RESOURCE_UNKNOWN,
                f"an export takes ?tolerance=MM&angularTolerance=DEG (stl, 3mf) and ?chunk=N, "
                f"once each, not {redact(key[:24])!r}",
            )
        if key == "chunk":
            if not values[0].isdigit() or len(values[0]) > 6:
                raise AiraError(MCP_RESOURCE_UNKNOWN, "chunk is a whole number from 0")
            out["chunk"] = int(values[0])
            continue
        try:
            number = float(values[0])
        except ValueError:
            number = values[0]  # type: ignore[assignment]  # refused below with its value
        out[names[key]] = number
    if (out.keys() - {"chunk"}) and fmt not in _MESHES:
        raise AiraError(
            "EXPORT_TOLERANCE_INVALID", f"{fmt} takes no mesh tolerance (stl and 3mf do)"
        )
    check_export_tolerances(fmt, out.get("tolerance"), out.get("angular_tolerance"))
    return out


def _chunk(uri: str, fmt: str, data: bytes, chunk: int | None) -> str | bytes:
    """The export, or piece ``chunk`` of it: one read stays within the SDK clients' default
    message size, and a larger export says how to get it in pieces."""
    pieces = _pieces(data, fmt)
    if chunk is None and len(pieces) > 1:
        base = uri.split("?", 1)[0]
        raise AiraError(
            MCP_RESOURCE_TOO_LARGE,
            f"part.{fmt} is {len(data)} bytes, more than one read carries ({CHUNK_BYTES}): read "
            f"{base}?chunk=0 … ?chunk={len(pieces) - 1} in order and join them"
            + (", or ask for a coarser mesh (?tolerance=0.2)" if fmt in _MESHES else "")
            + ", or export with `aira model export`",
        )
    index = 0 if chunk is None else chunk
    if index >= len(pieces):
        raise AiraError(
            MCP_RESOURCE_UNKNOWN, f"part.{fmt} has {len(pieces)} chunks (0 … {len(pieces) - 1})"
        )
    piece = pieces[index]
    return piece if fmt in _BINARY else piece.decode("utf-8", "replace")


def _pieces(data: bytes, fmt: str) -> list[bytes]:
    if len(data) <= CHUNK_BYTES:
        return [data]
    out, start = [], 0
    while start < len(data):
        end = min(start + CHUNK_BYTES, len(data))
        if fmt not in _BINARY:  # text: never cut inside a UTF-8 character
            while end < len(data) and (data[end] & 0xC0) == 0x80:
                end -= 1
        out.append(data[start:end])
        start = end
    return out


def _publish_help(envelope: ObservationEnvelope, *, declined: bool) -> ObservationEnvelope:
    """A publish refused for the user's approval names exactly how it can be given (or
    that the user, asked, declined)."""
    if not any(d.code == "PLAN_APPROVAL_REQUIRED" for d in envelope.diagnostics):
        return envelope
    action = NextAction(
        operation=MetaOperation.MODEL_COMMIT.value,
        args={"publish": False},
        reason=PUBLISH_DECLINED if declined else PUBLISH_HOW,
    )
    return envelope.model_copy(update={"next_actions": [action, *envelope.next_actions]})


def asks_to_publish(name: Any, arguments: Any) -> bool:
    """Whether a tool call asks to publish to main (``model_commit`` or ``model_apply`` with
    ``publish: true``): cheap, so a server checks it before any other work."""
    return (
        name in (MODEL_APPLY, tool_name(MetaOperation.MODEL_COMMIT))
        and isinstance(arguments, Mapping)
        and arguments.get("publish") is True
    )


def _by_handles(table: Any, done: dict[str, Any]) -> None:
    """The bodies and assertions model_apply found, keyed by their handles in ``table``."""
    for key in ("bodies", "assertions"):
        if isinstance(done.get(key), dict):
            done[key] = {_alias(table, k): v for k, v in done[key].items()}


def _alias(table: Any, entity_id: str) -> str:
    try:
        return str(table.alias_of(entity_id))
    except Exception:  # an id the table does not hold stays as it is
        return entity_id


def _bodies(bodies: Mapping[str, Any]) -> dict[str, Any]:
    """A preview's bodies as a model needs them after a commit: volume and box, rounded."""
    out = {}
    for handle, body in bodies.items():
        if not isinstance(body, Mapping):
            continue
        item: dict[str, Any] = {}
        if body.get("valid") is False:
            item["valid"] = False
        if isinstance(body.get("volume"), (int, float)):
            item["volume"] = round(body["volume"], 3)
        if body.get("boundingBox"):
            item["box"] = [round(v, 3) for v in body["boundingBox"]]
        out[handle] = item
    return out


def _unknown_capabilities(unknown: list[str], capabilities: Mapping[str, Any]) -> Diagnostic:
    import difflib

    near = sorted(
        {m for c in unknown for m in difflib.get_close_matches(c, list(capabilities), 2, 0.6)}
    )
    return Diagnostic(
        code=MCP_CAPABILITY_UNKNOWN,
        severity="warning",
        message="not in the catalog: "
        + ", ".join(redact(c[:80]) for c in unknown[:8])
        + (f"; did you mean {', '.join(near)}" if near else "; catalog_search finds ids"),
        subject=TASK_OPEN,
    )


def _json(value: Any) -> str:
    """A JSON resource, redacted as every output is (a request id, a label a model wrote)."""
    return canonical_bytes(redact_value(value)).decode()
