"""Benchmark: ``aira mcp serve``, tool-call latency over stdio and the size of ``tools/list``.

Two measurements, with the official MCP SDK's client (``mcp.Client``) as any MCP host uses it:

1. **Latency over stdio.** A real subprocess, ``python -m aira_core.cli mcp serve --store
   <tmp>/store.sqlite3`` (this interpreter, the same ``aira_core`` this script imports,
   every installed plugin, the only kernel installed or ``--kernel``; ``AIRA_HOME`` a fresh
   temporary folder, so the store is made with an empty model on main). The client
   connects, lists the tools, calls ``task_open`` once, then for each of ``catalog_search``
   and ``model_read``: warm-up calls (not counted; the first search builds the search
   index), then ``--calls`` timed calls (default 200). Searches take their intent
   round-robin from a fixed list of CAD requests; ``model_read`` with no arguments reads the
   head's summary. Each call is timed with ``time.perf_counter`` around ``await
   client.call_tool(...)``: the JSON-RPC request over the child's stdin, the server's worker
   thread, the engine, and the answer back over its stdout, parsed into a
   ``CallToolResult``. Any error result stops the benchmark. For scale, the floor: as many
   ``resources/templates/list`` requests, whose answer is a constant list made without the
   engine's worker thread (MCP 2026-07-28 has no ping): the stdio round trip and the SDK on
   both ends.
2. **Bytes of ``tools/list``.** The tools as the client receives them, as compact UTF-8
   JSON (wire names, ``None`` fields left out: what the SDK sends, without the JSON-RPC
   frame), at the production catalog (the stdio server above, at connect, before any task
   is open) and at a synthetic catalog of ``--synthetic`` capabilities (default 10,000;
   ``benchmarks/discovery/synthetic.py``) served in memory by
   ``build_server(Engine(None, context=PlanContext(...)))`` over a fresh store. Beside each,
   a **flat projection** of the same catalog: one tool per capability, as a server that
   lists capabilities as tools would — name from the capability id (API-safe), description
   the descriptor's summary, input schema the capability's input schema. The flat tools
   carry no annotations (Aira's eleven do) and, like Aira's, no output schema, so the flat
   numbers are a lower bound. The production catalog is built again in this process for its flat
   projection; its discovery and authoring-lock hashes must be the ones the server's
   ``interface_manifest`` reports, or the benchmark stops (a projection of another catalog
   would mislead).

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_mcp.py                    # report
    .venv/bin/python benchmarks/bench_mcp.py --json             # one JSON object
    .venv/bin/python benchmarks/bench_mcp.py --calls 1000 --synthetic 2000

There is no target: the script reports. It exits 0 when it measured, 2 (an ``error:`` line on
stderr) when it could not: the server did not start (no kernel installed, say), a call
answered an error result, or the catalogs differ.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _report.py (a test loads this by path)

from _report import BenchmarkError, parse_args, report_run, script_parser

from aira_core.stats import quantiles

DEFAULT_CALLS = 200
DEFAULT_SYNTHETIC = 10_000
WARMUP_CALLS = 5
INTENTS = (
    "round the vertical edges by 2 mm",
    "a rectangular plate 120 by 80 by 6 mm",
    "drill four 5 mm through holes near the corners",
    "chamfer the top edges by 1 mm",
    "hollow out the housing with 2 mm walls",
    "extrude the sketch 15 mm",
    "measure the volume and the centre of mass",
    "export the part as a STEP file",
    "在底板上打一个直径 8 毫米的通孔",
)
"""What an agent asks catalog_search, English and Chinese (varied so no one answer is hot)."""
TIMED_TOOLS = ("catalog_search", "model_read")
DISCOVERY = Path(__file__).resolve().parent / "discovery"


# -- numbers ----------------------------------------------------------------------------------


def tools_wire(tools: list[Any]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def json_bytes(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON, as the SDK puts a result on the wire."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def tools_bytes(tools: list[Any]) -> int:
    """Bytes of the listed tools (wire names), as the client received them."""
    return json_bytes(tools_wire(tools))


def tools_split(tools: list[Any]) -> dict[str, int]:
    """Where a list's bytes go: each field's values over all tools, and the rest (names,
    titles, keys and punctuation)."""
    wire = tools_wire(tools)
    # no tool declares an output schema: a result is one JSON text (docs/mcp.md)
    split = {
        key: sum(json_bytes(t[key]) for t in wire if key in t)
        for key in ("inputSchema", "description", "annotations")
    }
    split["rest"] = json_bytes(wire) - sum(split.values())
    return split


def flat_projection(capabilities: dict[str, Any]) -> dict[str, Any]:
    """The tool count and ``tools/list`` bytes of :func:`flat_tools` (serialised as the
    Aira list is)."""
    tools = flat_tools(capabilities)
    return {"tools": len(tools), "bytes": tools_bytes(tools)}


def flat_tools(capabilities: dict[str, Any]) -> list[Any]:
    """One MCP tool per capability of a ``capability_index``, as a flat server lists them
    (:func:`aira_core.catalog.capabilities.flat_tools`, checked as the SDK's tools)."""
    import mcp_types as types

    from aira_core.catalog.capabilities import flat_tools as definitions

    return [types.Tool.model_validate(t) for t in definitions(capabilities)]


def _check(result: Any, what: str) -> Any:
    if result.is_error:
        text = result.content[0].text if result.content else ""
        raise BenchmarkError(f"{what} answered an error result: {text[:300]}")
    return result


def _benchmark_error(exc: BaseException) -> BenchmarkError | None:
    """Our own error, also from inside the exception groups of the SDK's task groups."""
    if isinstance(exc, BenchmarkError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _benchmark_error(inner)
        if found is not None:
            return found
    return None


def _first_leaf(exc: BaseException) -> BaseException:
    """The first error that is no exception group (what actually went wrong)."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


# -- 1. stdio --------------------------------------------------------------------------------


def server_env(home: Path) -> dict[str, str]:
    """The child's environment: this one, ``AIRA_HOME`` the fresh folder, and the folder this
    process imports ``aira_core`` from first on ``PYTHONPATH`` (the child runs the same code,
    a work tree's included, whatever its working directory)."""
    import aira_core

    root = str(Path(aira_core.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["AIRA_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode
    return env


def server_command(store: Path, kernel: str | None = None) -> list[str]:
    """``aira mcp serve`` on this interpreter (the venv's ``aira`` script would run whatever
    ``aira_core`` it was installed from)."""
    chosen = ["--kernel", kernel] if kernel is not None else []
    return [sys.executable, "-m", "aira_core.cli", "mcp", "serve", "--store", str(store), *chosen]


async def _stdio(calls: int, home: Path, kernel: str | None) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    command = server_command(home / "store.sqlite3", kernel)
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(home))
    start = time.perf_counter()
    async with Client(params) as client:
        connected = time.perf_counter() - start
        listed = (await client.list_tools()).tools
        opened = _check(
            await client.call_tool("task_open", {"intent": "a mounting plate with four holes"}),
            "task_open",
        )
        task = json.loads(opened.content[0].text)["data"]["task"]
        with_task = (await client.list_tools()).tools
        manifest = _check(
            await client.call_tool("interface_manifest", {"task": task}), "interface_manifest"
        )
        snapshots = json.loads(manifest.content[0].text)["data"]["snapshots"]
        argument_sets = {
            "catalog_search": [{"task": task, "intent": i} for i in INTENTS],
            "model_read": [{"task": task}],
        }
        timings: dict[str, Any] = {}
        for tool in TIMED_TOOLS:
            args = argument_sets[tool]
            samples, sizes, first = [], [], 0.0
            for n in range(WARMUP_CALLS + calls):
                call_start = time.perf_counter()
                result = await client.call_tool(tool, args[n % len(args)])
                elapsed = time.perf_counter() - call_start
                _check(result, tool)
                if n == 0:
                    first = elapsed
                if n < WARMUP_CALLS:
                    continue
                samples.append(elapsed)
                sizes.append(len(result.content[0].text.encode()))
            timings[tool] = {
                "calls": calls,
                "seconds": quantiles(samples, 50, 95),
                "first_call_seconds": first,
                "result_bytes_p50": statistics.median(sizes),
            }
        floor = []  # ping is gone from the protocol: the cheapest request the server answers
        for n in range(WARMUP_CALLS + calls):
            call_start = time.perf_counter()
            await client.list_resource_templates()
            if n >= WARMUP_CALLS:
                floor.append(time.perf_counter() - call_start)
    return {
        "command": "python -m aira_core.cli mcp serve --store <tmp>/store.sqlite3"
        + (f" --kernel {kernel}" if kernel is not None else ""),
        "connect_seconds": connected,
        "tools": len(listed),
        "tool_names": [t.name for t in listed],
        "tools_list_bytes": tools_bytes(listed),
        "tools_list_split": tools_split(listed),
        "tools_list_bytes_task_open": tools_bytes(with_task),
        "latency": timings,
        "floor_seconds": quantiles(floor, 50, 95),
        "snapshots": {k: snapshots.get(k) for k in ("discoveryCatalogHash", "authoringLockHash")},
    }


def stdio_benchmark(calls: int, kernel: str | None = None) -> dict[str, Any]:
    """Latency of the timed tools and the production ``tools/list`` over a real stdio
    server; the flat projection of the same catalog, built here with the child's
    ``AIRA_HOME`` (the same trust policy and catalog state, so the same catalog)."""
    import anyio

    with tempfile.TemporaryDirectory(prefix="aira-bench-mcp-") as tmp:
        home = Path(tmp)
        try:
            measured = anyio.run(_stdio, calls, home, kernel)
        except Exception as exc:  # the child died or the SDK gave up: say so, no traceback
            ours = _benchmark_error(exc)
            if ours is not None:
                raise ours from None
            leaf = _first_leaf(exc)
            raise BenchmarkError(
                f"the stdio server failed: {type(leaf).__name__}: {str(leaf)[:300]}"
            ) from None
        catalog = production_catalog(home)
    from aira_core.catalog.capabilities import capability_index

    here = {
        "discoveryCatalogHash": catalog.discovery_catalog_hash(),
        "authoringLockHash": catalog.authoring_lock_hash(),
    }
    if here != measured["snapshots"]:  # a flat projection of another catalog would mislead
        raise BenchmarkError(
            "the catalog built here is not the one the server serves (plugins or trust differ "
            "between this process and its child)"
        )
    capabilities = capability_index(catalog)
    measured["capabilities"] = len(capabilities)
    measured["flat"] = flat_projection(capabilities)
    return measured


def production_catalog(home: Path) -> Any:
    """``build_catalog()`` in this process with ``AIRA_HOME`` at ``home``, as the child
    built it (the same trust store and catalog state)."""
    from aira_core.catalog.catalog import build_catalog

    before = os.environ.get("AIRA_HOME")
    os.environ["AIRA_HOME"] = str(home)
    try:
        return build_catalog()
    finally:
        if before is None:
            del os.environ["AIRA_HOME"]
        else:
            os.environ["AIRA_HOME"] = before


# -- 2. a synthetic catalog, in memory --------------------------------------------------------


def _synthetic_module() -> ModuleType:
    """``benchmarks/discovery/synthetic.py`` (a folder of scripts, not a package), under its
    own name as its siblings import it."""
    if "synthetic" in sys.modules:
        return sys.modules["synthetic"]
    spec = importlib.util.spec_from_file_location("synthetic", DISCOVERY / "synthetic.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["synthetic"] = module
    spec.loader.exec_module(module)
    return module


async def _list_in_memory(ctx: Any) -> list[Any]:
    from mcp import Client

    from aira_core.mcp.engine import Engine
    from aira_core.mcp.server import build_server

    # tools/list never reaches a kernel: none is given (a call that needed one would fail).
    server = build_server(Engine(None, kernel=None, context=ctx))
    async with Client(server) as client:
        return list((await client.list_tools()).tools)


def synthetic_benchmark(size: int) -> dict[str, Any]:
    """``tools/list`` of an in-memory server over a synthetic catalog of ``size``
    capabilities, and the flat projection of the same catalog."""
    import anyio

    from aira_core.catalog.capabilities import capability_index, node_signatures
    from aira_core.model.repository import ModelRepository
    from aira_core.runtime.plan import PlanContext

    start = time.perf_counter()
    catalog = _synthetic_module().synthetic_catalog(size, seed=0)
    capabilities = capability_index(catalog)
    built = time.perf_counter() - start
    if len(capabilities) != size:
        raise BenchmarkError(f"the synthetic catalog has {len(capabilities)} capabilities")
    with tempfile.TemporaryDirectory(prefix="aira-bench-mcp-") as tmp:
        path = Path(tmp) / "store.sqlite3"
        repository = ModelRepository.open(path, node_signatures(capabilities), create=True)
        try:
            repository.init()
            ctx = PlanContext(catalog=catalog, repository=repository, capabilities=capabilities)
            start = time.perf_counter()
            listed = anyio.run(_list_in_memory, ctx)
            listed_s = time.perf_counter() - start
        finally:
            repository.close()
    start = time.perf_counter()
    flat = flat_projection(capabilities)
    flat_s = time.perf_counter() - start
    return {
        "capabilities": size,
        "catalog_build_seconds": built,
        "tools": len(listed),
        "tool_names": [t.name for t in listed],
        "tools_list_bytes": tools_bytes(listed),
        "tools_list_seconds": listed_s,
        "flat": flat,
        "flat_projection_seconds": flat_s,
    }


def run(calls: int, synthetic: int, kernel: str | None = None) -> dict[str, Any]:
    production = stdio_benchmark(calls, kernel)
    large = synthetic_benchmark(synthetic)
    return {
        "benchmark": "mcp",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "warmup_calls": WARMUP_CALLS,
        "intents": list(INTENTS),
        "production": production,
        "synthetic": large,
        "aira_bytes_equal": production["tools_list_bytes"] == large["tools_list_bytes"],
    }


# -- the report -------------------------------------------------------------------------------


def print_report(r: dict[str, Any]) -> None:
    p, s = r["production"], r["synthetic"]
    print(f"aira mcp serve (python {r['python']})")
    print(f"  {p['command']}; connected in {p['connect_seconds']:.2f} s (fresh AIRA_HOME)")
    print()
    print(
        f"tool-call latency over stdio, after {r['warmup_calls']} warm-up calls each "
        f"(production catalog, {p['capabilities']} capabilities):"
    )
    print(f"  {'tool':<16} {'calls':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'result B':>9}")
    for tool, t in p["latency"].items():
        q = t["seconds"]
        print(
            f"  {tool:<16} {t['calls']:>6} {q['p50'] * 1e3:>8.2f} {q['p95'] * 1e3:>8.2f} "
            f"{q['max'] * 1e3:>8.2f} {t['result_bytes_p50']:>9,.0f}"
        )
    q = p["floor_seconds"]
    print(
        f"  {'(floor)':<16} {p['latency']['model_read']['calls']:>6} "
        f"{q['p50'] * 1e3:>8.2f} {q['p95'] * 1e3:>8.2f} {q['max'] * 1e3:>8.2f}"
        "   resources/templates/list: no engine, the stdio round trip and the SDK"
    )
    first = p["latency"]["catalog_search"]["first_call_seconds"]
    print(f"  (the first catalog_search, which builds the search index: {first:.2f} s)")
    print()
    print("tools/list, bytes of the tools as the client receives them (compact JSON, UTF-8):")
    print(
        f"  {'catalog':<26} {'Aira tools':>10} {'Aira bytes':>11} "
        f"{'flat tools':>11} {'flat bytes':>12}"
    )
    rows = [
        (f"production ({p['capabilities']})", p),
        (f"synthetic ({s['capabilities']:,})", s),
    ]
    for label, m in rows:
        print(
            f"  {label:<26} {m['tools']:>10} {m['tools_list_bytes']:>11,} "
            f"{m['flat']['tools']:>11,} {m['flat']['bytes']:>12,}"
        )
    same = "equal" if r["aira_bytes_equal"] else "DIFFERENT"
    print(f"  Aira's list at both sizes: {same}")
    split = p["tools_list_split"]
    print(
        "  Aira's bytes by field: "
        + ", ".join(f"{key} {split[key]:,}" for key in split)
        + " (no output schema: a result is one JSON text)"
    )
    print(
        f"  with a task open (its head's handles as enums): {p['tools_list_bytes_task_open']:,} B"
    )
    print(
        "  flat: a tool per capability with its id as name, its summary and input schema; "
        "no output schema, no annotations (a lower bound)"
    )
    print(
        f"  synthetic catalog built in {s['catalog_build_seconds']:.2f} s; its tools/list "
        f"{s['tools_list_seconds'] * 1e3:.0f} ms in memory; "
        f"its flat projection {s['flat_projection_seconds']:.2f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument(
        "--calls", type=int, default=DEFAULT_CALLS, help=f"timed calls per tool ({DEFAULT_CALLS})"
    )
    parser.add_argument(
        "--synthetic",
        type=int,
        default=DEFAULT_SYNTHETIC,
        help=f"capabilities of the synthetic catalog ({DEFAULT_SYNTHETIC:,})",
    )
    parser.add_argument(
        "--kernel", default=None, help="the server's --kernel (default: the only one installed)"
    )
    args = parse_args(parser, argv)
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    if args.synthetic < 1:
        parser.error("--synthetic must be at least 1")
    return report_run(
        lambda: run(args.calls, args.synthetic, args.kernel),
        print_report,
        as_json=args.json,
        errors=(OSError,),
        ensure_ascii=False,
    )


if __name__ == "__main__":
    sys.exit(main())
