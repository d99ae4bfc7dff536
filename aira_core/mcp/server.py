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
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from aira_core.diagnostics import AiraError
from aira_core.mcp.engine import Answer, Engine

NAME = "aira"
MCP_CALL_FAILED = "MCP_CALL_FAILED"
INSTRUCTIONS = (
    "Aira designs CAD parts through nine meta-operations. Call task_open first and pass the "
    "handle it returns as `task` to every other tool. Find capabilities with catalog_search, "
    "read a contract with catalog_describe, submit a composite plan with model_proposePatch, "
    "then model_preview, model_validate and model_commit; model_read reads the result back. "
    "nextActions name meta-operations: model.commit is the tool model_commit. A refused call "
    "is an error result whose text starts with its code. Exported files of a task are "
    "resources (aira://tasks/<task>/part.step, .stl, .svg)."
)
_log = logging.getLogger("aira.mcp")
T = TypeVar("T")


class _Worker:
    """One thread for every engine call, in submission order."""

    def __init__(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aira-mcp")

    async def run(self, fn: Callable[[], T]) -> T:
        future = self._pool.submit(fn)
        return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _result(answer: Answer) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer.text)],
        structured_content=answer.envelope,
        is_error=answer.is_error,
    )


def build_server(engine: Engine, *, version: str = "") -> Server[Any]:
    """The low-level server serving ``engine``; the engine is started in its lifespan (on
    the worker thread) and closed when the server stops."""
    worker = _Worker()
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

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        def run() -> tuple[Answer, bool]:
            before = engine.tools_key()
            try:
                answer = engine.call(params.name, params.arguments)
            except Exception as exc:  # a bug of ours: a coded error result, never a crash
                _log.exception("tool %r failed", params.name)
                answer = Answer(
                    {"requestId": "-", "status": "failed"},
                    True,
                    f"{MCP_CALL_FAILED}: {params.name} failed inside Aira "
                    f"({type(exc).__name__}); the task and its revisions are unchanged",
                )
            return answer, engine.tools_key() != before

        answer, changed = await worker.run(run)
        if changed:
            await bus.publish(ToolsListChanged())
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
                code=types.INVALID_PARAMS, message=str(exc.diagnostic), data={"code": exc.code}
            ) from None
        if isinstance(content, bytes):
            import base64

            item: Any = types.BlobResourceContents(
                uri=uri, blob=base64.b64encode(content).decode(), mime_type=mime
            )
        else:
            item = types.TextResourceContents(uri=uri, text=content, mime_type=mime)
        return types.ReadResourceResult(contents=[item])

    return Server(
        NAME,
        version=version,
        title="Aira",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscriptions_listen=ListenHandler(bus),
    )


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes the stream."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def serve_http(server: Server[Any], *, host: str, port: int, path: str = "/mcp") -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` (DNS-rebinding protection on for
    a loopback host, as the SDK sets it)."""
    import anyio
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve)
