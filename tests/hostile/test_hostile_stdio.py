"""Issue 32, item 5: malformed stdio requests that carry an id got no answer at all (the
client waits for ever): ``"params": [1, 2]``, a lone surrogate, 100k-deep arguments, a
UTF-8 BOM before the JSON, a batch of two. The SDK drops a line it cannot read; Aira's
server layer answers it (``mcp.server.malformed_answers``) with the request's id, and goes
on serving. Raw lines on a real ``aira mcp serve`` process's stdin, every read with a
deadline, so a regression fails instead of hanging."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from unchanged import assert_unchanged, snapshot

pytest.importorskip("cadquery")

DEEP = "[" * 100_000 + "]" * 100_000
LINES = [
    ('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1,2]}', [7], -32600),
    (
        '{"jsonrpc":"2.0","id":8,"method":"tools/call",'
        '"params":{"name":"task_open\\ud800","arguments":{}}}',
        [8],
        -32700,
    ),
    (
        '{"jsonrpc":"2.0","id":"nine","method":"tools/call",'
        f'"params":{{"name":"task_open","arguments":{{"a":{DEEP}}}}}}}',
        ["nine"],
        -32700,
    ),
    ('\ufeff{"jsonrpc":"2.0","id":10,"method":"tools/list"}', [10], -32700),
    (
        '[{"jsonrpc":"2.0","id":11,"method":"tools/list"},'
        '{"jsonrpc":"2.0","id":12,"method":"tools/list"}]',
        [11, 12],
        -32600,
    ),
    ("this is no JSON at all, and has no id", [None], -32700),
]


class Server:
    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child
        self.pending = b""  # read from the pipe, not yet a whole line

    def send(self, line: str) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.child.stdin.flush()

    def receive(self, seconds: float = 20.0) -> dict[str, Any]:
        """The next answer line. The pipe is read unbuffered (``os.read``): two answers that
        arrive together would otherwise sit in a file object's buffer, unseen by select."""
        assert self.child.stdout is not None
        fd = self.child.stdout.fileno()
        deadline = time.monotonic() + seconds
        while b"\n" not in self.pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, "no answer within the deadline"
            chunk = os.read(fd, 1 << 16)
            assert chunk, "the server closed its output"
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    store = tmp_path / "store.sqlite3"
    env = {k: os.environ[k] for k in ("AIRA_HOME", "AIRA_CACHE", "PATH") if k in os.environ}
    child = subprocess.Popen(
        [sys.executable, "-m", "aira_core.cli", "mcp", "serve", "--store", str(store)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**env, "AIRA_PLUGINS": "occt", "AIRA_EMBEDDER": "hashing"},
    )
    s = Server(child)
    try:
        s.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "1"},
                    },
                }
            )
        )
        assert s.receive(120)["id"] == 1
        s.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield s, store
    finally:
        child.kill()
        child.wait(30)


@pytest.mark.parametrize(("line", "ids", "code"), LINES, ids=lambda v: str(v)[:24])
def test_a_malformed_request_is_answered_with_its_id_and_the_server_goes_on(
    server: tuple[Server, Path], line: str, ids: list[Any], code: int
) -> None:
    s, store = server
    before = snapshot(store.parent)
    s.send(line)
    answers = [s.receive() for _ in ids]
    assert [a["id"] for a in answers] == ids
    assert all(a["error"]["code"] == code and "result" not in a for a in answers)
    assert_unchanged(before, store.parent)
    s.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}))
    after = s.receive()
    assert after["id"] == 99 and len(after["result"]["tools"]) == 11
