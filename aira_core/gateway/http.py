"""The one HTTP call of the provider adapters: a JSON request, a JSON answer, and what a
failure proves about whether the provider accepted the request (docs/gateway.md).

Every failure is a :class:`~aira_core.extensions.ProviderError` whose ``acceptance`` follows
one table (the gateway design's): an error of the connect phase (``ConnectError``,
``ConnectTimeout``, ``PoolTimeout``, ``UnsupportedProtocol``, ``LocalProtocolError``) is
``not_accepted``, nothing was sent; a 2xx is ``accepted`` (with a JSON object it is the
response, with anything else a ``body`` failure: processed but not delivered); a status the
provider's :class:`~aira_core.extensions.AcceptanceTable` documents as a refusal is
``not_accepted``; so is a 401 from any server (RFC 9110 §15.5.2: "the request has not been
applied because it lacks valid authentication credentials"); every other status, and every
failure after the request may have left
(read/write timeout, read/write error, a broken or malformed response, the deadline), is
``unknown``. When in doubt: ``unknown``.

The call never retries (a retried generation may be billed twice: the ledger owns retries),
opens a fresh connection (a stale pooled one would fake a ``RemoteProtocolError``), and ends
by ``deadline`` however the server behaves: the timeouts are cut to the time left, the body
is read in chunks with the deadline checked between them (DeepSeek holds a queued request
open with blank lines, which a read timeout never sees), and a watchdog shuts the socket
down when the deadline passes while a read or write blocks.

httpx2 is imported inside the functions only: ``aira --help`` must not load it.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from aira_core.diagnostics import redact
from aira_core.extensions import Acceptance, AcceptanceTable, ProviderError, ProviderResponse

PROVIDER_REQUEST_INVALID = "PROVIDER_REQUEST_INVALID"
PROVIDER_CONNECT_FAILED = "PROVIDER_CONNECT_FAILED"
PROVIDER_TIMEOUT = "PROVIDER_TIMEOUT"
PROVIDER_CONNECTION_LOST = "PROVIDER_CONNECTION_LOST"
PROVIDER_DEADLINE = "PROVIDER_DEADLINE"
PROVIDER_SEND_FAILED = "PROVIDER_SEND_FAILED"
PROVIDER_REFUSED = "PROVIDER_REFUSED"
PROVIDER_HTTP_STATUS = "PROVIDER_HTTP_STATUS"
PROVIDER_AUTH_FAILED = "PROVIDER_AUTH_FAILED"
PROVIDER_BODY_INVALID = "PROVIDER_BODY_INVALID"

MiB = 1024 * 1024
MAX_RESPONSE_BYTES = 32 * MiB
"""The most a 2xx body may hold (decoded): a reply is a few hundred KB at most."""
MAX_ERROR_BODY_BYTES = 64 * 1024
"""The most read of an error answer: only its error code is kept."""
RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
"""Statuses of a kind that may pass (``retryable``; never by itself a licence to resend)."""
MESSAGE_CHARS = 160
"""The most of an exception's own text a message quotes."""


@dataclass(frozen=True)
class Timeouts:
    """httpx2's four limits, in seconds (each also cut to the time left before the
    deadline): ``connect``, ``read`` (the longest gap between received chunks, not the total),
    ``write`` (between sent chunks) and ``pool`` (waiting for a connection)."""

    connect: float = 10.0
    read: float = 300.0
    write: float = 30.0
    pool: float = 5.0


DEFAULT_TIMEOUTS = Timeouts()


def where(url: str) -> str:
    """``url`` as a message may name it: scheme, host, port and path; never the user
    information, the query or the fragment (signed URLs and keys live there)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "the provider"
    if not host:
        return "the provider"
    return redact(f"{parts.scheme}://{host}{port}{parts.path}")


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be a provider's base URL (``None``: it can): it must be http(s)
    with a host, and hold no user information, query or fragment (credentials go in a
    header, never in a URL)."""
    try:
        parts = urlsplit(url) if isinstance(url, str) else None
        port = parts.port if parts else None  # a bad port raises here
    except ValueError:
        parts, port = None, None
    del port
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL with a host"
    if parts.username is not None or parts.password is not None:
        return "must not hold user information (the API key goes in api_key)"
    if parts.query or parts.fragment:
        return "must not hold a query or a fragment"
    return None


def encode_json(body: Mapping[str, Any]) -> bytes:
    """``body`` as a request sends it: compact UTF-8 JSON, no NaN; a read-only mapping (a
    schema may be one) is encoded as the object it is. ``TypeError``/``ValueError`` for a
    body that is not JSON.

    pydantic-core's encoder (Rust; the project already depends on it) writes the same bytes
    as ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` three times as fast,
    which is most of the gateway's request build for an 80 KB body. It writes a non-finite
    number as ``NaN``/``Infinity``, which is no JSON: a body in which either word occurs is
    encoded again by the standard encoder, which refuses a real one."""
    import pydantic_core

    try:
        data = pydantic_core.to_json(body, fallback=_as_json)
    except pydantic_core.PydanticSerializationError as exc:
        raise TypeError(str(exc)) from None
    if b"NaN" in data or b"Infinity" in data:  # rare: the words in a text, or a real NaN
        data = json.dumps(
            body, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_as_json
        ).encode("utf-8")
    return data


def _as_json(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def post_json(
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    deadline: float,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    table: AcceptanceTable,
    stage: str = "submit",
    client: Any = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
    content: bytes | None = None,
) -> ProviderResponse:
    """POST ``body`` as JSON to ``url``; the decoded answer of a 2xx, else a
    :class:`ProviderError` classified as the module says. ``deadline`` is an absolute
    :func:`time.monotonic`; ``client`` an ``httpx2.Client`` to use instead of a fresh one
    (tests pass one on ``httpx2.MockTransport``); ``stage`` names the ledger stage the
    failure belongs to (``submit``, ``poll``, ``fetch``, ``cancel``); ``content``:
    ``body`` already encoded (:func:`encode_json`), sent as it is."""
    if content is None:
        try:
            content = encode_json(body)
        except (TypeError, ValueError) as exc:
            raise ProviderError(
                PROVIDER_REQUEST_INVALID,
                f"the request body for {where(url)} is not JSON ({type(exc).__name__}); "
                "nothing was sent",
                stage=stage,
                category="validation",
                acceptance=Acceptance.NOT_ACCEPTED,
            ) from None
    sent = {**headers, "Content-Type": "application/json"}
    return _call("POST", url, content, sent, deadline, timeouts, table, stage, client, max_bytes)


def get_json(
    url: str,
    headers: Mapping[str, str],
    *,
    deadline: float,
    timeouts: Timeouts = DEFAULT_TIMEOUTS,
    table: AcceptanceTable,
    stage: str = "poll",
    client: Any = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> ProviderResponse:
    """GET ``url`` (a job's status or result): as :func:`post_json`, without a body."""
    return _call("GET", url, None, headers, deadline, timeouts, table, stage, client, max_bytes)


_SSL_CONTEXTS: dict[tuple[str | None, str | None], Any] = {}
_SSL_LOCK = threading.Lock()


def _ssl_context() -> Any:
    """The verifying SSL context every call's fresh client uses, made once per process (per
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, which httpx2 honours): loading the CA bundle takes
    ~40 ms, ten times the gateway's whole overhead per step (benchmarks/
    bench_gateway_overhead.py). A context is shared safely between threads; each call still
    opens its own connection."""
    import httpx2

    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    with _SSL_LOCK:
        context = _SSL_CONTEXTS.get(key)
        if context is None:
            context = _SSL_CONTEXTS[key] = httpx2.create_ssl_context()
    return context


class _Watchdog:
    """Shuts the call's sockets down when the deadline passes, so a read or write that
    blocks (a server trickling header bytes, a stalled upload) ends then, not at its own
    timeout. It learns the sockets from httpx2's ``trace`` extension (a mock transport has
    none: the deadline is then checked between chunks only)."""

    def __init__(self, deadline: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.fired = False
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True

    def trace(self, event: str, info: Mapping[str, Any]) -> None:
        if not event.endswith(".complete"):
            return
        stream = info.get("return_value")
        sock = getattr(stream, "get_extra_info", lambda _: None)("socket")
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            fired = self.fired
        if fired:
            _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        self._timer.join()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # shutdown, not close: it wakes a blocked recv
        sock.shutdown(socket.SHUT_RDWR)


class _DeadlineExceeded(Exception):
    def __init__(self, data: bytes = b"") -> None:
        super().__init__()
        self.data = data
        """What had arrived when the deadline passed."""


class _TooLarge(Exception):
    pass


def _error(
    code: str,
    message: str,
    stage: str,
    category: str,
    acceptance: Acceptance,
    *,
    status: int | None = None,
    provider_code: str | None = None,
    retryable: bool = False,
) -> ProviderError:
    return ProviderError(
        code,
        message,
        stage=stage,
        category=category,
        acceptance=acceptance,
        http_status=status,
        provider_code=provider_code,
        retryable=retryable,
    )


def _call(
    method: str,
    url: str,
    content: bytes | None,
    headers: Mapping[str, str],
    deadline: float,
    timeouts: Timeouts,
    table: AcceptanceTable,
    stage: str,
    client: Any,
    max_bytes: int,
) -> ProviderResponse:
    import httpx2

    name = where(url)
    left = deadline - time.monotonic()
    if left <= 0:
        raise _error(
            PROVIDER_DEADLINE,
            f"the deadline for {name} passed before the request was sent",
            stage,
            "deadline",
            Acceptance.NOT_ACCEPTED,
        )
    timeout = httpx2.Timeout(
        connect=min(timeouts.connect, left),
        read=min(timeouts.read, left),
        write=min(timeouts.write, left),
        pool=min(timeouts.pool, left),
    )
    own = client is None
    if own:
        # No keep-alive: every call on a fresh connection. No retries. The client's limits
        # too, as proxy transports taken from the environment are built with them.
        limits = httpx2.Limits(max_keepalive_connections=0)
        tls = _ssl_context()
        client = httpx2.Client(
            transport=httpx2.HTTPTransport(retries=0, limits=limits, verify=tls),
            limits=limits,
            verify=tls,
            timeout=timeout,
            follow_redirects=False,
        )
    watchdog = _Watchdog(deadline)
    status: int | None = None
    try:
        with (
            watchdog,
            client.stream(
                method,
                url,
                content=content,
                headers=dict(headers),
                timeout=timeout,
                extensions={"trace": watchdog.trace},
            ) as response,
        ):
            status = response.status_code
            ok = 200 <= status < 300
            data = _read(response, deadline, max_bytes if ok else MAX_ERROR_BODY_BYTES, ok)
        if watchdog.fired and ok and not _is_object(data):
            # A body delimited by the connection's end ended when the watchdog shut the
            # socket: cut short, unless what came is a whole reply (the deadline passed
            # between its last chunk and here).
            raise _DeadlineExceeded
    except _DeadlineExceeded as late:
        if status is not None and not 200 <= status < 300:  # the status alone decides
            raise _status_error(name, status, None, table, stage) from None
        if status is not None and _is_object(late.data):  # a whole reply came in time
            return ProviderResponse(status=status, body=_decode(late.data, name, status, stage))
        raise _deadline(name, stage, status) from None
    except _TooLarge:
        raise _error(
            PROVIDER_BODY_INVALID,
            f"{name} answered HTTP {status} with a body over {max_bytes} bytes; it was "
            "processed, but nothing was delivered",
            stage,
            "body",
            Acceptance.ACCEPTED,
            status=status,
        ) from None
    except httpx2.DecodingError as exc:
        if status is not None and 200 <= status < 300:
            raise _error(
                PROVIDER_BODY_INVALID,
                f"{name} answered HTTP {status} with a body that cannot be decoded "
                f"({type(exc).__name__}); it was processed, but nothing was delivered",
                stage,
                "body",
                Acceptance.ACCEPTED,
                status=status,
            ) from None
        if status is not None:
            raise _status_error(name, status, None, table, stage) from None
        raise _lost(name, exc, url, stage, status) from None
    except Exception as exc:  # classified; anything unexpected is unknown
        raise _classify(exc, name, url, deadline, stage, status) from None
    finally:
        if own:
            client.close()
    if not 200 <= status < 300:
        raise _status_error(name, status, data, table, stage)
    return ProviderResponse(status=status, body=_decode(data, name, status, stage))


def _read(response: Any, deadline: float, cap: int, ok: bool) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        if time.monotonic() >= deadline:
            # A keep-alive chunk after a whole reply must not cost the reply: the caller
            # keeps what had come when it is a whole JSON object.
            raise _DeadlineExceeded(b"".join(chunks))
        size += len(chunk)
        if size > cap:
            if ok:
                raise _TooLarge
            break  # an error answer: its head is enough for its error code
        chunks.append(chunk)
    return b"".join(chunks)


def _decode(data: bytes, name: str, status: int, stage: str) -> dict[str, Any]:
    try:
        body = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        raise _error(
            PROVIDER_BODY_INVALID,
            f"{name} answered HTTP {status} with a body that is not a JSON object; it was "
            "processed, but nothing was delivered",
            stage,
            "body",
            Acceptance.ACCEPTED,
            status=status,
        )
    return body


def _is_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8"), parse_constant=_no_constant), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def provider_code(data: bytes | None) -> str | None:
    """The provider's own error code in an error answer (OpenAI style
    ``{"error": {"code": …, "type": …}}``), short and redacted; ``None`` when there is none."""
    if not data:
        return None
    try:
        body = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return redact(str(value).strip())[:80]
    return None


def _status_error(
    name: str, status: int, data: bytes | None, table: AcceptanceTable, stage: str
) -> ProviderError:
    code = provider_code(data)
    if status in table.refusals:
        meaning = table.refusals[status]
        return _error(
            PROVIDER_REFUSED,
            f"{name} refused the request with HTTP {status}: {meaning}; documented as "
            "refused before processing",
            stage,
            "http",
            Acceptance.NOT_ACCEPTED,
            status=status,
            provider_code=code,
            retryable=status == 429,
        )
    if status == 401:  # HTTP's own meaning, whoever the server: not applied
        return _error(
            PROVIDER_AUTH_FAILED,
            f"{name} refused the credentials (HTTP 401: not applied, RFC 9110 §15.5.2); "
            "check the API key",
            stage,
            "auth",
            Acceptance.NOT_ACCEPTED,
            status=status,
            provider_code=code,
        )
    return _error(
        PROVIDER_HTTP_STATUS,
        f"{name} answered HTTP {status}; its documentation does not say the request was "
        "refused before processing, so whether it was processed is unknown",
        stage,
        "http",
        Acceptance.UNKNOWN,
        status=status,
        provider_code=code,
        retryable=status in RETRYABLE_STATUSES,
    )


def _deadline(name: str, stage: str, status: int | None) -> ProviderError:
    return _error(
        PROVIDER_DEADLINE,
        f"the deadline passed while waiting for {name} (after the request was sent); "
        "whether it was processed is unknown",
        stage,
        "deadline",
        Acceptance.UNKNOWN,
        status=status,
        retryable=True,
    )


def _quote(exc: BaseException, url: str) -> str:
    """The exception's own text, safe: without the URL (its query may be signed), redacted,
    short."""
    text = " ".join(str(exc).replace(url, where(url)).split())
    text = redact(text)
    if len(text) > MESSAGE_CHARS:
        text = text[: MESSAGE_CHARS - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _lost(name: str, exc: BaseException, url: str, stage: str, status: int | None) -> ProviderError:
    return _error(
        PROVIDER_CONNECTION_LOST,
        f"the connection to {name} broke after the request was sent ({_quote(exc, url)}); "
        "whether it was processed is unknown",
        stage,
        "protocol",
        Acceptance.UNKNOWN,
        status=status,
        retryable=True,
    )


def _classify(
    exc: Exception, name: str, url: str, deadline: float, stage: str, status: int | None
) -> ProviderError:
    """The design's table, row by row (docs/gateway.md)."""
    import httpx2

    if isinstance(exc, httpx2.ConnectTimeout | httpx2.PoolTimeout):
        return _error(
            PROVIDER_CONNECT_FAILED,
            f"no connection to {name} in time ({type(exc).__name__}); the request was not sent",
            stage,
            "timeout",
            Acceptance.NOT_ACCEPTED,
            retryable=True,
        )
    if isinstance(exc, httpx2.ConnectError):
        return _error(
            PROVIDER_CONNECT_FAILED,
            f"cannot connect to {name} ({_quote(exc, url)}); the request was not sent",
            stage,
            "connect",
            Acceptance.NOT_ACCEPTED,
            retryable=True,
        )
    if isinstance(exc, httpx2.UnsupportedProtocol | httpx2.InvalidURL):
        return _error(
            PROVIDER_CONNECT_FAILED,
            f"cannot call {name}: not an http(s) URL ({type(exc).__name__}); the request "
            "was not sent",
            stage,
            "validation",
            Acceptance.NOT_ACCEPTED,
        )
    if isinstance(exc, httpx2.LocalProtocolError):
        return _error(
            PROVIDER_CONNECT_FAILED,
            f"the request to {name} could not be written ({_quote(exc, url)}); it was not sent",
            stage,
            "protocol",
            Acceptance.NOT_ACCEPTED,
        )
    # From here on the request may have left: unknown, whatever the failure.
    if time.monotonic() >= deadline:
        return _deadline(name, stage, status)
    if isinstance(exc, httpx2.ReadTimeout | httpx2.WriteTimeout):
        return _error(
            PROVIDER_TIMEOUT,
            f"{name} stopped answering after the request was sent ({type(exc).__name__}); "
            "whether it was processed is unknown",
            stage,
            "timeout",
            Acceptance.UNKNOWN,
            status=status,
            retryable=True,
        )
    if isinstance(exc, httpx2.ReadError | httpx2.WriteError | httpx2.RemoteProtocolError):
        return _lost(name, exc, url, stage, status)
    return _error(
        PROVIDER_SEND_FAILED,
        f"calling {name} failed ({_quote(exc, url)}); whether it was processed is unknown",
        stage,
        "other",
        Acceptance.UNKNOWN,
        status=status,
    )
