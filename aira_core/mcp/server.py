"""The MCP server: the official SDK's low-level :class:`~mcp.server.lowlevel.Server` over the
:class:`~aira_core.mcp.engine.Engine`, on stdio or streamable HTTP.

The low-level server is used because the tool list is not fixed at import time: its schemas
carry the legal handles of the revision a client works on, and scoped bindings come and go.
The engine checks every argument itself (the low-level server validates none).

All engine work runs on one worker thread, in order: the store's SQLite connection and the
kernel are thread-affine, and two clients of one HTTP server then never interleave inside a
transaction. When a call changes what ``tools/list`` answers (a binding made or gone stale, a
commit that changes the legal handles), listeners of ``subscriptions/listen`` are told.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from aira_core.diagnostics import AiraError, redact
from aira_core.mcp.engine import Answer, Engine, asks_to_publish

NAME = "aira"
MCP_CALL_FAILED = "MCP_CALL_FAILED"
INSTRUCTIONS = (
    "Aira designs CAD parts through nine meta-operations. Call task_open first and pass the "
    "handle it returns as `task` to every other tool; name the capabilities you mean to use "
    "in task_open's `capabilities` (their signatures come back; the resource "
    "aira://catalog/signatures lists all). catalog_search finds capabilities for a part or "
    "a feature, catalog_describe gives full contracts. A plan you know is right goes in one "
    "call to model_apply (check, preview, validate, commit); or step by step with "
    "model_proposePatch, model_preview, model_validate, model_commit. model_read reads the "
    "head back (view=picture: a PNG). Every result is one JSON object; nextActions name the "
    "tools to call next, a refusal's first. Exported files are resources "
    "(aira://tasks/<task>/part.step, .stl, .3mf, .svg, .png)."
)
_log = logging.getLogger("aira.mcp")
T = TypeVar("T")


class Worker:
    """One thread for every engine call, in submission order."""

    def __init__(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aira-mcp")

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the worker, waited for here (what runs before the server starts)."""
        return self._pool.submit(fn).result()

    async def run(self, fn: Callable[[], T]) -> T:
        future = self._pool.submit(fn)
        try:
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except BaseException:
            # Cancelled by the client: a call still waiting its turn never runs (one that
            # has started finishes; its effect is the task's, read back like any other).
            future.cancel()
            raise

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Server(Server[Any]):
    """Tells handshake-era clients (protocol before 2026-07-28) that the tool list can
    change; 2026-07-28 clients learn it from ``subscriptions/listen``."""

    def create_initialization_options(
        self, notification_options: Any = None, *a: Any, **k: Any
    ) -> Any:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), *a, **k
        )


def _failed(exc: Exception) -> Answer:
    """What a bug of Aira's is on the wire: its code and the exception's type, nothing the
    exception holds (paths, values)."""
    text = (
        f"{MCP_CALL_FAILED}: the call failed inside Aira ({type(exc).__name__}); read the task "
        "back before going on (a write it made stays made)"
    )
    return Answer({"requestId": "-", "status": "failed"}, True, text)


def _result(answer: Answer) -> types.CallToolResult:
    """The answer's one JSON text (no structured copy of it: docs/mcp.md says why), and
    the images it shows."""
    import base64

    content: list[Any] = [types.TextContent(type="text", text=answer.text)]
    for png in answer.images:
        content.append(
            types.ImageContent(
                type="image", data=base64.b64encode(png).decode(), mime_type="image/png"
            )
        )
    return types.CallToolResult(content=content, is_error=answer.is_error)


def build_server(engine: Engine, *, version: str = "", worker: Worker | None = None) -> Server[Any]:
    """The low-level server serving ``engine`` on ``worker`` (default: a new one); the
    engine is started in its lifespan, unless it was started on that worker already (as
    ``aira mcp serve`` does, to report a store it cannot open before any transport starts),
    and closed when the server stops."""
    worker = worker or Worker()
    bus = InMemorySubscriptionBus()

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        await worker.run(engine.start)
        try:
            yield {}
        finally:
            try:
                await worker.run(engine.close)
            finally:
                worker.shutdown()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await worker.run(engine.list_tools)
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in tools])

    async def call_tool(
        ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        publish: bool | None = None
        question = None
        if asks_to_publish(params.name, params.arguments) and _can_elicit(ctx):
            # on the worker: it reads the task and the grant (no hop for any other call)
            question = await worker.run(
                lambda: engine.publish_question(params.name, params.arguments)
            )
        if question is not None:
            asked = await _ask(ctx, params, question)
            if isinstance(asked, types.InputRequiredResult):
                return asked  # 2026-07-28: the client asks its user and calls again
            publish = asked

        def run() -> tuple[Answer, bool]:
            before = engine.tools_key()
            try:
                answer = engine.call(params.name, params.arguments, publish=publish)
            except Exception as exc:  # a bug of ours: a coded error result, never a crash
                _log.exception("a tool call failed")
                answer = _failed(exc)
            return answer, engine.tools_key() != before

        answer, changed = await worker.run(run)
        if changed:
            await bus.publish(ToolsListChanged())
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                with contextlib.suppress(Exception):  # a client gone is no failed call
                    await ctx.session.send_tool_list_changed()
        return _result(answer)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        found = [types.Resource.model_validate(r) for r in engine.resources()]
        return types.ListResourcesResult(resources=found)

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        found = [types.ResourceTemplate.model_validate(t) for t in engine.templates()]
        return types.ListResourceTemplatesResult(resource_templates=found)

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        from mcp.shared.exceptions import MCPError

        uri = str(params.uri)
        try:
            content, mime = await worker.run(lambda: engine.read(uri))
        except AiraError as exc:
            # A resource read has no error result: the code rides the JSON-RPC error.
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=redact(str(exc.diagnostic))[:2000],
                data={"code": exc.code},
            ) from None
        except Exception as exc:
            _log.exception("a resource read failed")
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=_failed(exc).text,
                data={"code": MCP_CALL_FAILED},
            ) from None
        if isinstance(content, bytes):
            import base64

            item: Any = types.BlobResourceContents(
                uri=uri, blob=base64.b64encode(content).decode(), mime_type=mime
            )
        else:
            item = types.TextResourceContents(uri=uri, text=content, mime_type=mime)
        return types.ReadResourceResult(contents=[item])

    server = _Server(
        NAME,
        version=version,
        title="Aira",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        get_tool_input_schema=engine.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscriptions_listen=ListenHandler(bus),
    )
    # The question a 2026-07-28 client answers comes back with the call, sealed: bound to
    # the tool and its arguments, and only for ten minutes (RequestStateSecurity's TTL).
    server.middleware.append(
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=NAME)
    )
    return server


# -- asking the user (MCP elicitation) --------------------------------------------------------

PUBLISH_KEY = "publish"
"""The key of the publish question in an input-required result and its answer."""
PUBLISH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "publish": {
            "type": "boolean",
            "title": "Publish to main",
            "description": "Yes: publish it to main. No: it stays on the task's branch.",
        }
    },
    "required": ["publish"],
}
ASK_SECONDS = 600.0
"""How long a handshake-era client's user has to answer (the request itself has no limit)."""


def _can_elicit(ctx: Any) -> bool:
    """Whether the client can ask its user (form mode): from the handshake, or from a
    2026-07-28 request's own capabilities. An empty ``elicitation`` is form mode."""
    caps = getattr(ctx.session, "client_capabilities", None)
    found = getattr(caps, "elicitation", None)
    return found is not None and (found.form is not None or found.url is None)


async def _ask(
    ctx: Any, params: types.CallToolRequestParams, question: str
) -> bool | types.InputRequiredResult:
    """The user's answer to ``question``: True only for an accepted yes. A 2026-07-28
    client is sent the question as an input-required result first and answers it with
    the call sent again; a handshake-era client is asked with ``elicitation/create`` while
    the call waits. A client that fails to answer, or an answer past :data:`ASK_SECONDS`,
    is no."""
    import json

    import anyio

    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        if params.request_state is None:
            ask = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=question, requested_schema=PUBLISH_SCHEMA
                )
            )
            return types.InputRequiredResult(
                input_requests={PUBLISH_KEY: ask}, request_state=json.dumps({"ask": PUBLISH_KEY})
            )
        with contextlib.suppress(ValueError):
            if json.loads(params.request_state) != {"ask": PUBLISH_KEY}:
                return False
        answer = (params.input_responses or {}).get(PUBLISH_KEY)
    else:
        try:
            with anyio.fail_after(ASK_SECONDS):
                answer = await ctx.session.elicit_form(
                    message=question,
                    requested_schema=PUBLISH_SCHEMA,
                    related_request_id=ctx.request_id,
                )
        except Exception:  # no answer (a timeout, a client error): not approved
            _log.info("the publish question got no answer", exc_info=True)
            return False
    content = getattr(answer, "content", None)
    return (
        getattr(answer, "action", None) == "accept"
        and isinstance(content, dict)
        and content.get(PUBLISH_KEY) is True
    )


_LEADING_ID = re.compile(
    r'^\s*\ufeff?\s*\{\s*(?:"(?:[^"\\]|\\.)*"\s*:\s*(?:"(?:[^"\\]|\\.)*"|[-\w.+]+)\s*,\s*)*'
    r'"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")'
)
"""A request id among the first plain members of a line that is no JSON (a BOM before it,
a lone surrogate or a nesting too deep further on)."""


def _ids(value: Any) -> list[Any]:
    """The request ids a parsed line carries: one object's, or a batch's."""
    items = value if isinstance(value, list) else [value]
    return [
        item["id"]
        for item in items
        if isinstance(item, dict)
        and "method" in item
        and isinstance(item.get("id"), int | str)
        and not isinstance(item.get("id"), bool)
    ]


def malformed_answers(exc: Exception) -> list[types.JSONRPCError]:
    """The answers to a line the SDK could not read as a JSON-RPC message (it drops such a
    line, and a client waits for ever on the request's id): for each request id the line
    carries, ``-32600`` (a request of the wrong shape, a batch: MCP has none since
    2025-06-18) or ``-32700`` (no JSON: a BOM, a lone surrogate, nesting too deep), with
    that id; a line that is no JSON with no readable id gets one ``-32700`` with id null,
    as JSON-RPC says. A notification of the wrong shape (no id) gets no answer."""
    import json

    errors = exc.errors() if hasattr(exc, "errors") else []
    invalid = [e for e in errors if e.get("type") == "json_invalid"]
    if not invalid:  # JSON, but no message: a wrong shape, or a batch
        inputs = [e.get("input") for e in errors]
        # the whole line's value, not a member's (a `"params": [1, 2]` is an error's input too)
        whole = next((v for v in inputs if isinstance(v, dict) and "jsonrpc" in v), None)
        if whole is None:
            whole = next(
                (v for v in inputs if isinstance(v, list) and v and isinstance(v[0], dict)),
                None,
            )
        why = "a batch (MCP has no batches)" if isinstance(whole, list) else "not a valid request"
        return [
            types.JSONRPCError(
                jsonrpc="2.0",
                id=rid,
                error=types.ErrorData(code=types.INVALID_REQUEST, message=why),
            )
            for rid in _ids(whole)
        ]
    line = str(invalid[0].get("input") or "")
    ids: list[Any] = []
    with contextlib.suppress(ValueError, RecursionError):  # Python's reader is lenient
        ids = _ids(json.loads(line.lstrip("\ufeff")))
    if not ids:
        found = _LEADING_ID.match(line)
        if found:
            with contextlib.suppress(ValueError):
                ids = [json.loads(found.group(1))]
    message = "the line is not JSON the server can read (UTF-8 JSON without a BOM, no lone "
    message += "surrogates, nesting within bounds)"
    return [
        types.JSONRPCError(
            jsonrpc="2.0", id=rid, error=types.ErrorData(code=types.PARSE_ERROR, message=message)
        )
        for rid in (ids or [None])
    ]


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes the stream. A line the SDK cannot
    read is answered here (:func:`malformed_answers`), since the SDK drops it."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            send, receive = anyio.create_memory_object_stream[Any](0)

            async def pump() -> None:
                async with send:
                    async for item in read_stream:
                        if not isinstance(item, Exception):
                            await send.send(item)
                            continue
                        for answer in malformed_answers(item):
                            with contextlib.suppress(anyio.ClosedResourceError):
                                await write_stream.send(SessionMessage(answer))

            async with anyio.create_task_group() as tg:
                tg.start_soon(pump)
                await server.run(receive, write_stream, server.create_initialization_options())
                tg.cancel_scope.cancel()

    anyio.run(main)


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""What a client on this machine calls a loopback server (a Host header's name)."""


def is_loopback(address: str) -> bool:
    """Whether an address is this machine's loopback however it is spelled (127.0.0.0/8,
    ``::1``, an IPv4-mapped ``::ffff:127.x.y.z``)."""
    import ipaddress

    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


def transport_security(
    host: str,
    port: int,
    *,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
) -> Any:
    """The DNS-rebinding protection of a server bound to ``host``: on whenever the socket
    is bound to loopback, whatever the spelling (``127.1``, ``127.0.1.1``,
    ``::ffff:127.0.0.1``: the SDK turns it on only for three exact strings), with the
    loopback names, the host as given and the address it resolves to as the allowed Host
    headers (any port) and their ``http://`` forms as the allowed origins; and on, with
    just those, wherever ``allowed_hosts`` or ``allowed_origins`` name some. None (no
    protection) for another interface given neither."""
    import socket

    from mcp.server.transport_security import TransportSecuritySettings

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        infos = []
    addresses = sorted({str(info[4][0]) for info in infos})
    loopback = bool(addresses) and all(is_loopback(a) for a in addresses)
    if not loopback and not allowed_hosts and not allowed_origins:
        return None
    names = [*LOOPBACK_NAMES, _bracketed(host), *map(_bracketed, addresses)] if loopback else []
    hosts = list(dict.fromkeys([*(f"{n}:*" for n in names), *allowed_hosts]))
    origins = list(dict.fromkeys([*(f"http://{n}:*" for n in names), *allowed_origins]))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def serve_http(
    server: Server[Any], *, host: str, port: int, path: str = "/mcp", security: Any = None
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` with ``security`` (see
    :func:`transport_security`; the SDK's own default when None)."""
    import anyio
    import uvicorn

    app = server.streamable_http_app(
        streamable_http_path=path, host=host, transport_security=security
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
