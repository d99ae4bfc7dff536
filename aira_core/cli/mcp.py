"""``aira mcp serve``: the meta-operations as an MCP server, for Claude Desktop, Claude Code,
Cursor and any other agent that speaks MCP (docs/mcp.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aira_core.cli._options import KernelOption, StoreOption, _kernel, command_group

mcp_app = command_group("The MCP server: Aira's meta-operations for any MCP client.")

MCP_HOST_INVALID = "MCP_HOST_INVALID"
MCP_PORT_IN_USE = "MCP_PORT_IN_USE"
DEFAULT_PORT = 8765


@mcp_app.command("serve")
def serve_cmd(
    store: StoreOption = None,
    grant: Annotated[
        Path | None,
        typer.Option(
            "--grant", help="Session Grant JSON every task runs under (default: the local user's)."
        ),
    ] = None,
    tier: Annotated[
        str, typer.Option("--tier", help="T32, T128 or T200: the tier tasks open at.")
    ] = "T128",
    kernel: KernelOption = None,
    http: Annotated[
        bool,
        typer.Option("--http", help="Serve streamable HTTP instead of stdio (at /mcp)."),
    ] = False,
    host: Annotated[
        str,
        typer.Option("--host", help="With --http: the interface (default loopback only)."),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=1, max=65535, help="With --http: the port.")
    ] = DEFAULT_PORT,
    bind_ttl: Annotated[
        float,
        typer.Option("--bind-ttl", min=1.0, max=86400.0, help="Seconds a scoped binding lives."),
    ] = 900.0,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="With --http: a Host header to accept besides loopback's (HOST:PORT, PORT may "
            "be *; repeatable). Turns DNS-rebinding protection on for any interface.",
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            help="With --http: an Origin header to accept (http://HOST:PORT, repeatable).",
        ),
    ] = None,
    allow_publish: Annotated[
        bool,
        typer.Option(
            "--allow-publish",
            help="Let the agent publish a task's commit to main without asking (the default "
            "grant asks the user first, through the client when it can ask, else refuses).",
        ),
    ] = False,
) -> None:
    """Serve task_open, the nine meta-operations and model_apply over MCP: stdio by default
    (what Claude Desktop, Claude Code and Cursor start), streamable HTTP with --http."""
    from aira_core.diagnostics import AiraError
    from aira_core.mcp.engine import Engine
    from aira_core.mcp.server import (
        Worker,
        build_server,
        serve_http,
        serve_stdio,
        transport_security,
    )
    from aira_core.runtime.tiers import tier as tier_named

    tier_named(tier)  # STEP_TIER_UNKNOWN before anything starts
    if http:
        _check_address(host, port)
    elif host != "127.0.0.1" or port != DEFAULT_PORT or allow_host or allow_origin:
        raise AiraError(MCP_HOST_INVALID, "--host, --port and --allow-* are for --http")
    for value in [*(allow_host or []), *(allow_origin or [])]:
        if not value or len(value) > 255 or any(c.isspace() or ord(c) < 32 for c in value):
            raise AiraError(MCP_HOST_INVALID, f"{value[:80]!r} is no host or origin")
    the_grant = None
    if allow_publish and grant is not None:
        raise AiraError(
            "GRANT_INVALID",
            "--allow-publish is for the default grant; a --grant file says itself whether "
            "publishing needs the user's confirmation (confirmationRequired)",
        )
    if allow_publish:
        from aira_core.mcp.engine import default_grant

        the_grant = default_grant(allow_publish=True)
    if grant is not None:
        from aira_core.cli.plan import _load_model
        from aira_core.contracts.capability import SessionGrant

        the_grant = _load_model(grant, SessionGrant, "grant")
    chosen = _kernel(kernel, "the MCP server's previews, validations and exports")
    engine = Engine(
        store,
        kernel=chosen,
        grant=the_grant,
        tier_name=tier,
        bind_ttl=bind_ttl,
        single_client=not http,
    )
    # Started here, on the worker that will serve every call: a store that cannot be opened
    # is its code now, before any transport prints a banner or a client waits on it.
    worker = Worker()
    try:
        worker.call(engine.start)
    except BaseException:
        worker.shutdown()
        raise
    server = build_server(engine, version=_version(), worker=worker)
    if http:
        typer.echo(f"aira mcp: streamable HTTP on http://{host}:{port}/mcp", err=True)
        security = transport_security(
            host, port, allowed_hosts=allow_host or (), allowed_origins=allow_origin or ()
        )
        serve_http(server, host=host, port=port, security=security)
    else:
        serve_stdio(server)


def _check_address(host: str, port: int) -> None:
    """A host that is no address of this machine, or a port taken, as a code before the
    server starts (uvicorn would log and exit)."""
    import socket

    from aira_core.diagnostics import AiraError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise AiraError(MCP_HOST_INVALID, f"{host[:80]!r} is no address here") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:  # as uvicorn binds: ::ffff:127.0.0.1 is no IPv6 address
            probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            code = MCP_PORT_IN_USE if exc.errno in (48, 98) else MCP_HOST_INVALID
            raise AiraError(code, f"cannot listen on {host[:80]}:{port}: {exc.strerror}") from None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aira-core")
    except PackageNotFoundError:
        return ""
