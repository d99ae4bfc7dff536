"""What the MCP tests share: an engine over the fake kernel's catalog, an in-memory SDK
client on the real low-level server, and helpers to call tools and read envelopes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import make_runtime

from aira_core.catalog import disclosure
from aira_core.mcp.engine import Engine
from aira_core.mcp.server import build_server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, Any]]:
    """``(ctx, kernel, repository)``: the fake kernel's package admitted, a fresh store.

    The server uses the store from its worker thread and the test reads it from its own
    between calls (never at once), so this store's connection is not tied to one thread;
    the server's own store is opened on its worker (Engine.start)."""
    from aira_core.model.store import ModelStore

    monkeypatch.setattr(ModelStore, "CHECK_SAME_THREAD", False)
    ctx, kernel, repository = make_runtime(tmp_path)
    try:
        yield ctx, kernel, repository
    finally:
        repository.close()


@pytest.fixture
def engine(runtime: tuple[Any, Any, Any]) -> Engine:
    ctx, kernel, _ = runtime
    return Engine(None, kernel=kernel, context=ctx)


@pytest.fixture
def no_small_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery as in a big catalog: the manifest inlines no contracts (as the corpus
    assumes), so search and describe are real steps."""
    monkeypatch.setattr(disclosure, "SMALL_CATALOG_BYTES", 0)
    monkeypatch.setenv("AIRA_EMBEDDER", "hashing")


@pytest.fixture
async def client(engine: Engine) -> AsyncIterator[Any]:
    from mcp import Client

    async with Client(build_server(engine), raise_exceptions=True) as c:
        yield c


def envelope(result: Any) -> dict[str, Any]:
    """A tool result's one JSON object (its compact envelope): the first content block,
    and no structured copy beside it."""
    import json

    assert result.structured_content is None, "a result carries its JSON once"
    assert result.content and result.content[0].type == "text", result.content
    value = json.loads(result.content[0].text)
    assert isinstance(value, dict)
    return value


def status(shown: dict[str, Any]) -> str:
    """A compact envelope's status: stated unless it is ``success``."""
    assert shown.get("status") != "success", "success goes unsaid"
    return str(shown.get("status", "success"))


async def call(client: Any, name: str, **arguments: Any) -> Any:
    """A tool call's result, its one JSON object checked to be there."""
    result = await client.call_tool(name, arguments)
    envelope(result)
    return result


def codes(result: Any) -> list[str]:
    return [d["code"] for d in envelope(result).get("diagnostics", [])]


def state(result: Any) -> str:
    return envelope(result)["data"]["state"]


async def open_task(client: Any, **arguments: Any) -> str:
    result = await call(client, "task_open", **arguments)
    assert not result.is_error, result.content[0].text
    return envelope(result)["data"]["task"]
