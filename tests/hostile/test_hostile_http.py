"""DNS rebinding through other spellings of loopback (issue 32, item 1): ``aira mcp serve
--http --host 127.1`` binds 127.0.0.1, and a page on ``evil.example`` that a browser
resolves there must be refused (Host 421, Origin 403) as for ``--host 127.0.0.1``; no task
is opened, nothing is written. The server is the real one, in its own process, over a real
socket."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from unchanged import assert_unchanged, snapshot

pytest.importorskip("cadquery")

SPELLINGS = ["127.0.0.1", "127.1", "127.0.1.1", "localhost", "::ffff:127.0.0.1", "::1"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _bindable(host: str) -> tuple[int, str] | None:
    """A free port on ``host`` and the address it connects to, or None: this machine
    cannot listen there (no IPv6, say)."""
    try:
        info = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0]
        with socket.socket(info[0], info[1]) as s:
            if info[0] == socket.AF_INET6:  # as the server binds
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind(info[4])
            return s.getsockname()[1], str(info[4][0])
    except OSError:
        return None


@pytest.fixture(params=SPELLINGS)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, int, Path]]:
    host = request.param
    found = _bindable(host)
    store = tmp_path / "store.sqlite3"
    env = {k: os.environ[k] for k in ("AIRA_HOME", "AIRA_CACHE", "PATH") if k in os.environ}
    command = [sys.executable, "-m", "aira_core.cli", "mcp", "serve", "--store", str(store)]
    if found is None:  # nothing can listen there: the server says so, with its code
        refused = subprocess.run(
            [*command, "--http", "--host", host, "--port", "8765"],
            env={**env, "AIRA_PLUGINS": "occt"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode == 1 and "MCP_HOST_INVALID" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr and not store.exists()
        pytest.skip(f"this machine cannot listen on {host} (refused with MCP_HOST_INVALID)")
    port, address = found
    child = subprocess.Popen(
        [*command, "--http", "--host", host, "--port", str(port)],
        env={**env, "AIRA_PLUGINS": "occt", "AIRA_EMBEDDER": "hashing"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
            try:
                socket.create_connection((address, port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield address, port, store
    finally:
        child.terminate()
        child.wait(30)


def _post(address: str, port: int, headers: dict[str, str]) -> httpx2.Response:
    url = f"http://{'[' + address + ']' if ':' in address else address}:{port}/mcp"
    return httpx2.post(url, content=json.dumps(INITIALIZE), headers={**HEADERS, **headers})


def test_a_page_on_another_name_is_refused_whatever_the_loopback_spelling(
    server: tuple[str, int, Path],
) -> None:
    address, port, store = server
    before = snapshot(store.parent)
    hostile = _post(address, port, {"Host": "evil.example", "Origin": "http://evil.example"})
    assert hostile.status_code == 421, hostile.text
    origin = _post(address, port, {"Host": f"127.0.0.1:{port}", "Origin": "http://evil.example"})
    assert origin.status_code == 403, origin.text
    assert_unchanged(before, store.parent)
    # the machine's own names still reach it
    own = _post(address, port, {"Host": f"localhost:{port}"})
    assert own.status_code == 200, own.text


def test_protection_follows_the_bound_address_and_the_explicit_options() -> None:
    from aira_core.mcp.server import transport_security

    for spelling in ("127.1", "127.0.1.1", "localhost", "::1"):
        settings = transport_security(spelling, 8765)
        assert settings is not None and settings.enable_dns_rebinding_protection, spelling
        assert "127.0.0.1:*" in settings.allowed_hosts and "evil.example:*" not in str(settings)
    assert "127.1:*" in transport_security("127.1", 8765).allowed_hosts
    # another interface: the SDK's default (none) unless hosts or origins are named
    assert transport_security("0.0.0.0", 8765) is None
    named = transport_security("0.0.0.0", 8765, allowed_hosts=["cad.lan:8765"])
    assert named.allowed_hosts == ["cad.lan:8765"] and named.allowed_origins == []


@pytest.mark.parametrize(
    "args",
    [
        ["--allow-host", "cad.lan:*"],  # without --http
        ["--http", "--allow-host", "bad host"],
        ["--http", "--allow-origin", "http://x\n"],
    ],
)
def test_bad_allow_options_are_refused_before_anything_starts(
    tmp_path: Path, args: list[str]
) -> None:
    store = tmp_path / "store.sqlite3"
    out = subprocess.run(
        [sys.executable, "-m", "aira_core.cli", "mcp", "serve", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "AIRA_PLUGINS": "occt"},
    )
    assert out.returncode == 1 and "MCP_HOST_INVALID" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not store.exists()
