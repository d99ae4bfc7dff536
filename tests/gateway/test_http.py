"""The one HTTP call (aira_core.gateway.http): every failure classified by what it proves about
acceptance, on httpx2.MockTransport and on real loopback sockets (nothing listening, a server
that reads the request and closes, one that never answers, one that holds the connection
with blank lines past the deadline, one that trickles header bytes)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from aira_core.diagnostics import register_secret
from aira_core.extensions import Acceptance, AcceptanceTable, ProviderError
from aira_core.gateway import http
from aira_core.gateway.http import Timeouts, get_json, post_json, provider_code, where

ROOT = Path(__file__).resolve().parents[2]
TABLE = AcceptanceTable(
    provider="test",
    refusals={
        400: "Invalid Format (docs)",
        401: "Authentication Fails (docs)",
        429: "Rate Limit Reached (docs)",
    },
)
FAST = Timeouts(connect=0.5, read=0.25, write=0.5, pool=0.5)
URL = "http://provider.test/v1/chat/completions"


def mock(handler: Callable[[httpx2.Request], httpx2.Response]) -> httpx2.Client:
    return httpx2.Client(transport=httpx2.MockTransport(handler))


def call(
    handler: Callable[[httpx2.Request], httpx2.Response],
    *,
    url: str = URL,
    seconds: float = 2.0,
    **kw: Any,
) -> Any:
    with mock(handler) as client:
        return post_json(
            url,
            {"model": "m", "messages": []},
            {"Authorization": "Bearer sk-test-abcdefgh12345678"},
            deadline=time.monotonic() + seconds,
            timeouts=FAST,
            table=TABLE,
            client=client,
            **kw,
        )


def failure(handler: Callable[[httpx2.Request], httpx2.Response], **kw: Any) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        call(handler, **kw)
    return info.value


def raising(exc_type: type[Exception], text: str = "boom") -> Callable[[httpx2.Request], Any]:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise exc_type(text, request=request)  # type: ignore[call-arg]

    return handler


# -- answers ----------------------------------------------------------------------------------


def test_a_2xx_json_object_is_the_response_and_the_request_is_sent_as_json() -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"choices": [], "id": "x"})

    response = call(handler)
    assert response.status == 200 and response.body == {"choices": [], "id": "x"}
    (request,) = seen
    assert request.method == "POST"
    assert json.loads(request.content) == {"model": "m", "messages": []}
    assert request.headers["content-type"] == "application/json"
    assert request.headers["authorization"] == "Bearer sk-test-abcdefgh12345678"


def test_leading_blank_lines_before_the_json_are_fine() -> None:
    """DeepSeek's keep-alive lines precede the body of a queued request."""
    response = call(lambda r: httpx2.Response(200, content=b"\n\n\n" + b'{"ok": true}'))
    assert response.body == {"ok": True}


@pytest.mark.parametrize(
    "content",
    [b"not json", b"[1, 2]", b"", b'{"a": NaN}', b"\xff\xfe", b"[" * 100_000],
    ids=["text", "array", "empty", "nan", "not-utf8", "too-deep"],
)
def test_a_2xx_without_a_json_object_was_processed_but_not_delivered(content: bytes) -> None:
    err = failure(lambda r: httpx2.Response(200, content=content))
    assert err.code == "PROVIDER_BODY_INVALID"
    assert err.acceptance is Acceptance.ACCEPTED
    assert (err.stage, err.category, err.http_status) == ("submit", "body", 200)


def test_a_2xx_over_the_size_cap_is_accepted_and_not_delivered() -> None:
    err = failure(lambda r: httpx2.Response(200, json={"x": "y" * 5000}), max_bytes=1000)
    assert err.code == "PROVIDER_BODY_INVALID" and err.acceptance is Acceptance.ACCEPTED
    assert "over 1000 bytes" in err.diagnostic.message


def test_the_size_cap_holds_against_a_body_that_never_ends() -> None:
    def endless() -> Iterator[bytes]:
        while True:
            yield b" " * 4096

    started = time.monotonic()
    err = failure(lambda r: httpx2.Response(200, content=endless()), max_bytes=64 * 1024)
    assert err.category == "body" and time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("status", "retryable"), [(400, False), (401, False), (429, True)], ids=str
)
def test_a_documented_refusal_is_not_accepted(status: int, retryable: bool) -> None:
    body = {"error": {"message": "Rate limit reached for sk-zzzzzzzzzzzzzzzz", "code": "rate"}}
    err = failure(lambda r: httpx2.Response(status, json=body))
    assert err.code == "PROVIDER_REFUSED"
    assert err.acceptance is Acceptance.NOT_ACCEPTED
    assert (err.category, err.http_status, err.retryable) == ("http", status, retryable)
    assert err.provider_code == "rate"
    assert TABLE.refusals[status] in err.diagnostic.message
    assert "Rate limit reached" not in err.diagnostic.message  # never the body


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (503, True), (404, False), (402, False), (302, False)],
    ids=str,
)
def test_any_other_status_is_unknown(status: int, retryable: bool) -> None:
    err = failure(lambda r: httpx2.Response(status, json={"error": {"type": "server_error"}}))
    assert err.code == "PROVIDER_HTTP_STATUS"
    assert err.acceptance is Acceptance.UNKNOWN
    assert (err.http_status, err.retryable, err.provider_code) == (
        status,
        retryable,
        "server_error",
    )


def test_an_error_body_is_read_only_as_far_as_its_head() -> None:
    def endless() -> Iterator[bytes]:
        yield b'{"error": {"code": "x"}'
        while True:
            yield b" " * 4096

    err = failure(lambda r: httpx2.Response(503, content=endless()))
    assert err.code == "PROVIDER_HTTP_STATUS" and err.provider_code is None  # cut: no JSON


def test_an_error_status_decides_even_when_its_body_outlasts_the_deadline() -> None:
    def blank_lines() -> Iterator[bytes]:
        for _ in range(100):
            time.sleep(0.02)
            yield b"\n"

    err = failure(lambda r: httpx2.Response(429, content=blank_lines()), seconds=0.1)
    assert err.code == "PROVIDER_REFUSED" and err.acceptance is Acceptance.NOT_ACCEPTED


def test_provider_code_is_short_redacted_and_only_a_code() -> None:
    register_secret("plain-looking-provider-secret")
    assert provider_code(b'{"error": {"code": "plain-looking-provider-secret"}}') == "<redacted>"
    assert provider_code(b'{"error": {"code": "' + b"c" * 500 + b'"}}') == "c" * 80
    assert provider_code(b'{"error": {"code": null, "type": "invalid_request_error"}}') == (
        "invalid_request_error"
    )
    assert provider_code(b'{"error": {"code": 1234}}') == "1234"
    assert provider_code(b'{"error": "just text"}') is None
    assert provider_code(b"<html>") is None
    assert provider_code(b'{"error": {"code": true}}') is None


# -- exceptions ---------------------------------------------------------------------------------


NOT_SENT = [
    (httpx2.ConnectError, "connect"),
    (httpx2.ConnectTimeout, "timeout"),
    (httpx2.PoolTimeout, "timeout"),
    (httpx2.UnsupportedProtocol, "validation"),
    (httpx2.LocalProtocolError, "protocol"),
]
MAYBE_SENT = [
    (httpx2.ReadTimeout, "PROVIDER_TIMEOUT"),
    (httpx2.WriteTimeout, "PROVIDER_TIMEOUT"),
    (httpx2.ReadError, "PROVIDER_CONNECTION_LOST"),
    (httpx2.WriteError, "PROVIDER_CONNECTION_LOST"),
    (httpx2.RemoteProtocolError, "PROVIDER_CONNECTION_LOST"),
    (httpx2.ProxyError, "PROVIDER_SEND_FAILED"),
]


@pytest.mark.parametrize(("exc", "category"), NOT_SENT, ids=lambda v: getattr(v, "__name__", v))
def test_a_connect_phase_error_is_not_accepted(exc: type[Exception], category: str) -> None:
    err = failure(raising(exc))
    assert err.code == "PROVIDER_CONNECT_FAILED" and err.acceptance is Acceptance.NOT_ACCEPTED
    assert err.category == category and err.http_status is None


@pytest.mark.parametrize(("exc", "code"), MAYBE_SENT, ids=lambda v: getattr(v, "__name__", v))
def test_an_error_after_the_request_may_have_left_is_unknown(
    exc: type[Exception], code: str
) -> None:
    err = failure(raising(exc))
    assert err.code == code and err.acceptance is Acceptance.UNKNOWN


def test_any_other_exception_is_unknown_and_named_by_its_type() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise RuntimeError("something odd")

    err = failure(handler)
    assert err.code == "PROVIDER_SEND_FAILED" and err.acceptance is Acceptance.UNKNOWN
    assert "RuntimeError" in err.diagnostic.message


def test_a_deadline_already_passed_sends_nothing() -> None:
    calls: list[object] = []
    err = failure(lambda r: calls.append(r) or httpx2.Response(200, json={}), seconds=-1)
    assert err.code == "PROVIDER_DEADLINE" and err.acceptance is Acceptance.NOT_ACCEPTED
    assert calls == []


def test_the_deadline_is_checked_between_chunks_of_a_mock_stream() -> None:
    def blank_lines() -> Iterator[bytes]:
        for _ in range(100):
            time.sleep(0.02)
            yield b"\n"
        yield b"{}"

    started = time.monotonic()
    err = failure(lambda r: httpx2.Response(200, content=blank_lines()), seconds=0.2)
    assert time.monotonic() - started < 0.5
    assert err.code == "PROVIDER_DEADLINE" and err.acceptance is Acceptance.UNKNOWN
    assert err.http_status == 200  # the status came; the body did not


def test_a_body_that_is_not_json_sends_nothing() -> None:
    calls: list[object] = []
    with pytest.raises(ProviderError) as info, mock(lambda r: calls.append(r)) as client:
        post_json(
            URL, {"x": float("nan")}, {}, deadline=time.monotonic() + 1, table=TABLE, client=client
        )
    assert info.value.code == "PROVIDER_REQUEST_INVALID"
    assert info.value.acceptance is Acceptance.NOT_ACCEPTED and calls == []


def test_get_json_has_the_same_classification() -> None:
    with mock(lambda r: httpx2.Response(200, json={"status": "running"})) as client:
        got = get_json(URL, {}, deadline=time.monotonic() + 1, table=TABLE, client=client)
    assert got.body == {"status": "running"}
    with pytest.raises(ProviderError) as info, mock(raising(httpx2.ReadTimeout)) as client:
        get_json(URL, {}, deadline=time.monotonic() + 1, table=TABLE, client=client, stage="fetch")
    assert info.value.acceptance is Acceptance.UNKNOWN and info.value.stage == "fetch"


# -- what a message may say ------------------------------------------------------------------


def test_messages_never_hold_the_query_the_headers_or_the_body() -> None:
    url = "http://user:pw1234567@provider.test/v1/chat?sig=abcdef123456&x=plainvalue"

    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadError(f"failed for {url} with body secret-body-text", request=request)

    err = failure(handler, url=url)
    text = json.dumps(err.to_wire())
    for leak in ("sig=", "plainvalue", "pw1234567", "sk-test-abcdefgh12345678", "user:"):
        assert leak not in text, leak
    assert "http://provider.test/v1/chat" in err.diagnostic.message
    assert len(err.diagnostic.message) < 400


def test_where_names_scheme_host_port_and_path_only() -> None:
    assert where("https://a.example:8443/v1/x?key=1#f") == "https://a.example:8443/v1/x"
    assert where("not a url") == "the provider"
    assert where("http://[::1") == "the provider"


def test_url_problem() -> None:
    assert http.url_problem("https://api.deepseek.com") is None
    assert http.url_problem("http://127.0.0.1:8080/v1") is None
    assert "http" in (http.url_problem("ftp://x") or "")
    assert "user information" in (http.url_problem("https://u:p@x") or "")
    assert "query" in (http.url_problem("https://x/?key=1") or "")
    assert http.url_problem("https://x:99999") is not None
    assert http.url_problem(None) is not None


def test_importing_the_wire_loads_no_httpx2() -> None:
    code = (
        "import sys\nimport aira_core.gateway.http, aira_core.gateway.chat\n"
        "import aira_core.gateway.transports, aira_core.gateway.openai_compat\n"
        "import aira_core.gateway.config\nprint('httpx2' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# -- real loopback sockets ----------------------------------------------------------------------


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


class Server:
    """A one-behaviour HTTP server on 127.0.0.1: ``behaviour(conn, stop)`` runs per
    connection; ``requests`` counts the requests read."""

    def __init__(self, behaviour: Callable[[socket.socket, threading.Event], None]) -> None:
        self.behaviour = behaviour
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.connections = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def _run(self) -> None:
        workers = []
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            self.connections += 1
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            workers.append(t)
        for t in workers:
            t.join(timeout=2)

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self.behaviour(conn, self.stop)


@contextlib.contextmanager
def server(behaviour: Callable[[socket.socket, threading.Event], None]) -> Iterator[Server]:
    s = Server(behaviour)
    s.thread.start()
    try:
        yield s
    finally:
        s.stop.set()
        s.thread.join(timeout=3)
        s.sock.close()
        assert not s.thread.is_alive()


def real_call(url: str, seconds: float = 1.0, timeouts: Timeouts = FAST) -> Any:
    return post_json(
        url, {"model": "m"}, {}, deadline=time.monotonic() + seconds, timeouts=timeouts, table=TABLE
    )


def real_failure(url: str, seconds: float = 1.0, timeouts: Timeouts = FAST) -> ProviderError:
    with pytest.raises(ProviderError) as info:
        real_call(url, seconds, timeouts)
    return info.value


def answer(status: int, body: bytes) -> Callable[[socket.socket, threading.Event], None]:
    def behaviour(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )

    return behaviour


def test_real_nothing_listening_is_not_accepted() -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    err = real_failure(f"http://127.0.0.1:{port}/v1/chat/completions")
    assert err.code == "PROVIDER_CONNECT_FAILED" and err.acceptance is Acceptance.NOT_ACCEPTED
    assert err.category == "connect"


def test_real_server_reads_the_request_then_closes_is_unknown() -> None:
    with server(lambda conn, stop: read_request(conn) and None) as s:
        err = real_failure(s.url)
    assert err.code == "PROVIDER_CONNECTION_LOST" and err.acceptance is Acceptance.UNKNOWN
    assert s.connections == 1  # no retry


def test_real_server_never_answers_is_a_read_timeout_unknown() -> None:
    def silent(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        stop.wait(2)

    started = time.monotonic()
    with server(silent) as s:
        err = real_failure(s.url, seconds=1.0)
    assert err.code == "PROVIDER_TIMEOUT" and err.acceptance is Acceptance.UNKNOWN
    assert err.category == "timeout" and err.retryable
    assert time.monotonic() - started < 0.8  # the read timeout (0.25 s), not the deadline
    assert s.connections == 1


def test_real_blank_lines_past_the_deadline_end_the_call_at_the_deadline() -> None:
    def keep_alive(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        while not stop.wait(0.05):
            conn.sendall(b"\n")

    started = time.monotonic()
    with server(keep_alive) as s:
        err = real_failure(s.url, seconds=0.3)
        elapsed = time.monotonic() - started
    assert err.code == "PROVIDER_DEADLINE" and err.acceptance is Acceptance.UNKNOWN
    assert err.http_status == 200
    assert 0.3 <= elapsed < 0.3 + 0.25


def test_real_a_whole_reply_before_the_deadline_is_delivered_though_the_connection_stays() -> None:
    """A body delimited by the connection's end: what came by the deadline is a whole JSON
    object, so it is the reply (not a deadline), and the call still ends at the deadline."""

    def reply_then_blank(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        conn.sendall(b'\n\n{"ok": true}')
        while not stop.wait(0.05):
            conn.sendall(b"\n")

    started = time.monotonic()
    with server(reply_then_blank) as s:
        response = real_call(s.url, seconds=0.3)
        elapsed = time.monotonic() - started
    assert response.body == {"ok": True}
    assert elapsed < 0.3 + 0.25


def test_real_header_bytes_trickled_past_the_deadline_end_the_call_at_the_deadline() -> None:
    """No chunk of body ever comes, so only the watchdog can end the call in time."""

    def trickle(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        n = 0
        while not stop.wait(0.05):
            conn.sendall(f"X-Wait-{n}: 1\r\n".encode())
            n += 1

    slow_read = Timeouts(connect=0.5, read=5.0, write=0.5, pool=0.5)
    started = time.monotonic()
    with server(trickle) as s:
        err = real_failure(s.url, seconds=0.3, timeouts=slow_read)
        elapsed = time.monotonic() - started
    assert err.code == "PROVIDER_DEADLINE" and err.acceptance is Acceptance.UNKNOWN
    assert elapsed < 0.3 + 0.25


@pytest.mark.parametrize("status", [400, 401, 429])
def test_real_documented_refusals_are_not_accepted(status: int) -> None:
    with server(answer(status, b'{"error": {"code": "refused"}}')) as s:
        err = real_failure(s.url)
    assert err.acceptance is Acceptance.NOT_ACCEPTED and err.http_status == status
    assert err.provider_code == "refused" and err.retryable is (status == 429)


@pytest.mark.parametrize("status", [500, 503])
def test_real_server_errors_are_unknown(status: int) -> None:
    with server(answer(status, b'{"error": {"message": "overloaded"}}')) as s:
        err = real_failure(s.url)
    assert err.acceptance is Acceptance.UNKNOWN and err.http_status == status and err.retryable


def test_real_answer_and_a_fresh_connection_per_call() -> None:
    def keep(conn: socket.socket, stop: threading.Event) -> None:
        # answers on one connection as long as the client keeps it
        while read_request(conn):
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b'Content-Length: 11\r\n\r\n{"ok":true}'
            )

    with server(keep) as s:
        assert real_call(s.url).body == {"ok": True}
        assert real_call(s.url).body == {"ok": True}
    assert s.connections == 2


def test_real_malformed_status_line_is_unknown() -> None:
    def bad(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(b"NONSENSE\r\n\r\n")

    with server(bad) as s:
        err = real_failure(s.url)
    assert err.code == "PROVIDER_CONNECTION_LOST" and err.acceptance is Acceptance.UNKNOWN


def test_real_body_cut_off_is_unknown() -> None:
    def cut(conn: socket.socket, stop: threading.Event) -> None:
        read_request(conn)
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"choi')

    with server(cut) as s:
        err = real_failure(s.url)
    assert err.code == "PROVIDER_CONNECTION_LOST" and err.acceptance is Acceptance.UNKNOWN
    assert err.http_status == 200


# -- the design's table, row by row -------------------------------------------------------------


def _row_prepare() -> ProviderError:
    from aira_core.extensions import BudgetsLeft, StepRequest
    from aira_core.gateway.openai_compat import OpenAICompatProvider
    from aira_core.gateway.transports import ToolTransport

    request = StepRequest("t", 1, "aira_s1", "T8", "capsule", (), {}, BudgetsLeft(1, 1, 1, 1.0))
    provider = OpenAICompatProvider("p", "http://provider.test", ["m"])
    with pytest.raises(ProviderError) as info:
        provider.prepare(request, "other-model", ToolTransport())
    return info.value


def _row_mock(handler: Callable[[httpx2.Request], Any], **kw: Any) -> Callable[[], Any]:
    def run() -> ProviderError | Acceptance:
        try:
            call(handler, **kw)
        except ProviderError as exc:
            return exc
        return Acceptance.ACCEPTED  # a response: delivered

    return run


def _dns(request: httpx2.Request) -> httpx2.Response:
    raise httpx2.ConnectError("[Errno -2] Name or service not known", request=request)


def _slow_blank(request: httpx2.Request) -> httpx2.Response:
    def lines() -> Iterator[bytes]:
        while True:
            time.sleep(0.02)
            yield b"\n"

    return httpx2.Response(200, content=lines())


def _boom(request: httpx2.Request) -> httpx2.Response:
    raise KeyError("unexpected")


DESIGN_TABLE: list[tuple[str, Callable[[], Any], Acceptance]] = [
    ("local validation / prepare() failed", _row_prepare, Acceptance.NOT_ACCEPTED),
    ("ConnectError", _row_mock(raising(httpx2.ConnectError)), Acceptance.NOT_ACCEPTED),
    ("ConnectTimeout", _row_mock(raising(httpx2.ConnectTimeout)), Acceptance.NOT_ACCEPTED),
    ("PoolTimeout", _row_mock(raising(httpx2.PoolTimeout)), Acceptance.NOT_ACCEPTED),
    (
        "UnsupportedProtocol",
        _row_mock(raising(httpx2.UnsupportedProtocol)),
        Acceptance.NOT_ACCEPTED,
    ),
    ("DNS failure", _row_mock(_dns), Acceptance.NOT_ACCEPTED),
    ("LocalProtocolError", _row_mock(raising(httpx2.LocalProtocolError)), Acceptance.NOT_ACCEPTED),
    (
        "2xx with a JSON body",
        _row_mock(lambda r: httpx2.Response(201, json={})),
        Acceptance.ACCEPTED,
    ),
    ("2xx, not JSON", _row_mock(lambda r: httpx2.Response(200, text="<h1>")), Acceptance.ACCEPTED),
    ("status in refusals", _row_mock(lambda r: httpx2.Response(429)), Acceptance.NOT_ACCEPTED),
    ("500", _row_mock(lambda r: httpx2.Response(500)), Acceptance.UNKNOWN),
    ("503", _row_mock(lambda r: httpx2.Response(503)), Acceptance.UNKNOWN),
    ("404", _row_mock(lambda r: httpx2.Response(404)), Acceptance.UNKNOWN),
    ("undocumented 422", _row_mock(lambda r: httpx2.Response(422)), Acceptance.UNKNOWN),
    ("ReadTimeout", _row_mock(raising(httpx2.ReadTimeout)), Acceptance.UNKNOWN),
    ("WriteTimeout", _row_mock(raising(httpx2.WriteTimeout)), Acceptance.UNKNOWN),
    ("ReadError", _row_mock(raising(httpx2.ReadError)), Acceptance.UNKNOWN),
    ("WriteError", _row_mock(raising(httpx2.WriteError)), Acceptance.UNKNOWN),
    ("RemoteProtocolError", _row_mock(raising(httpx2.RemoteProtocolError)), Acceptance.UNKNOWN),
    ("deadline exceeded", _row_mock(_slow_blank, seconds=0.1), Acceptance.UNKNOWN),
    ("any other exception", _row_mock(_boom), Acceptance.UNKNOWN),
]


@pytest.mark.parametrize(("row", "run", "expected"), DESIGN_TABLE, ids=[r[0] for r in DESIGN_TABLE])
def test_the_design_table_row_by_row(
    row: str, run: Callable[[], Any], expected: Acceptance
) -> None:
    got = run()
    acceptance = got.acceptance if isinstance(got, ProviderError) else got
    assert acceptance is expected, (row, got)
    if isinstance(got, ProviderError):
        assert got.to_wire()["acceptance"] == expected.value
