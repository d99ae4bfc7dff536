"""A FAKE OpenAI-compatible provider for tests: a real HTTP server on 127.0.0.1 that answers
chat completions from a decision script. It is not a model, not a proxy, and never for
production.

:class:`FakeProviderServer` listens on a random loopback port (stdlib ``http.server`` in
daemon threads; no dependency) and speaks the DeepSeek flavour of the OpenAI wire, so a
provider plugin is exercised through its real HTTP client, byte for byte::

    with FakeProviderServer(script.decisions, mode="tool", reasoning="thinking") as fake:
        fake.inject(Fault.status(429, code="rate_limit"), Fault.drop_after_read())
        ...  # point the plugin at fake.base_url ("http://127.0.0.1:PORT/v1")
        assert fake.submissions == 3

In a test, the ``fake_provider`` fixture of :mod:`aira_core.testing` hands one over started
(configure it with :meth:`FakeProviderServer.configure`) and stops it afterwards.

Chat completions (``POST /v1/chat/completions``)
    Each successful answer takes the script's next decision: in ``mode="tool"`` as one tool
    call to the function ``aira_step`` whose ``arguments`` are the decision's JSON
    (``finish_reason`` ``"tool_calls"``, tool-call ids ``call_1``, ``call_2``, ... by
    decision), in ``mode="json"`` as the message ``content`` (``finish_reason`` ``"stop"``),
    in ``mode="auto"`` as a tool call when the request offers ``tools``, else as content.
    ``/v1/beta/chat/completions`` (and ``/beta/…``, DeepSeek's beta base URL) answers as
    ``/v1/chat/completions`` does; :attr:`ReceivedRequest.path` tells them apart.
    A decision given as a string is sent verbatim (a script may hold a broken one); a dict is
    sent as ``json.dumps(decision, ensure_ascii=False)``, as the scripted source does. After
    the last decision it answers ``{"act": "abstain", "reason": "the fake has no more
    decisions"}``. ``reasoning`` (a string, or ``callable(decision_index) -> str``) is sent
    under ``reasoning_field`` (``reasoning_content``, DeepSeek's and llama.cpp's name, by
    default; vLLM ≥ 0.11 and Ollama say ``reasoning``); ``None`` sends no reasoning.
    ``model`` echoes the request's.
    ``usage`` holds ``prompt_tokens`` (request bytes / 4), ``completion_tokens`` (answer and
    reasoning bytes / 4), ``total_tokens``, DeepSeek's ``prompt_cache_hit_tokens`` /
    ``prompt_cache_miss_tokens`` (hit: the bytes / 4 that this request's ``messages`` share
    as a prefix with the previous request's, a plausible prefix cache),
    ``completion_tokens_details.reasoning_tokens`` and OpenAI's
    ``prompt_tokens_details.cached_tokens``. A body that is not a JSON object with a
    ``model`` string and a ``messages`` list is answered 400; with
    ``require_reasoning_replay=True`` so is an assistant message that made tool calls but
    lacks the reasoning field (DeepSeek's thinking-mode rule, with its message); with
    ``refuse_forced_tool_choice=True`` so is a ``tool_choice`` other than ``auto`` / ``none``
    while thinking is on (a body without ``"thinking": {"type": "disabled"}``: DeepSeek's
    default), with DeepSeek's message "Thinking mode does not support this tool_choice".

Jobs (the async path; Aira's own FAKE protocol, no provider's)
    ``POST /v1/jobs`` (body: a chat-completions body) -> 202 ``{"id": "job_<n>", "status":
    "queued"}``. ``GET /v1/jobs/{id}`` -> ``{"id", "status"}``, status one of ``queued``
    ``running`` ``succeeded`` ``failed`` ``canceled`` (plus ``"error"`` when failed). Each
    poll of an unfinished job advances it one status: the first polls answer ``running``,
    poll number ``job_polls_to_finish`` (default 2) answers ``job_outcome`` (``succeeded``,
    or ``failed``). A job takes its decision when it succeeds. ``GET /v1/jobs/{id}/result``
    -> the chat-completion JSON of a succeeded job, the same body on every fetch; 409 before
    (or for a failed or canceled job). ``POST /v1/jobs/{id}/cancel`` -> ``{"id", "status":
    "canceled"}`` for an unfinished or canceled job, 409 for a finished one. An unknown id
    is 404. Errors everywhere have OpenAI's shape, ``{"error": {"message", "type", "param",
    "code"}}``.

Faults (:class:`Fault`)
    :meth:`FakeProviderServer.inject` queues faults, each for the next request it can apply
    to (``on=`` restricts it to one endpoint: ``chat``, ``submit``, ``poll``, ``fetch``,
    ``cancel``); :meth:`~FakeProviderServer.inject_at` aims one at the n-th request. One
    fault per request. A fault changes what the client receives, never what the server did,
    with two exceptions: a ``status`` fault refuses the request before any work (no job is
    created, advanced or canceled, no decision is taken), and a chat completion whose answer
    is not delivered in full (``drop_after_read``, ``hang``, ``truncated_body``) leaves its
    decision for the next request, unless that answer was saved under an Idempotency-Key.
    So a dropped job submit still creates the job, a dropped cancel still cancels, and a
    malformed or text-only answer still takes its decision (it is how that decision came
    out). The content faults (``malformed_arguments``, ``text_instead_of_tool``) apply to
    chat completions and job submits only (a job's result then has that shape).

Counts
    :attr:`~FakeProviderServer.submissions` counts every chat-completion and job-submit
    request received in full, counted as soon as its body is read, before any fault, any
    authentication or any validation: a request whose connection is then dropped counts.
    :attr:`~FakeProviderServer.replays` counts the requests answered from the idempotency
    cache instead (``honours_idempotency=True``: a chat or submit request repeating an
    ``Idempotency-Key`` whose answer was saved gets that answer again, takes no decision and
    creates no job; a repeat with a different body is answered 422; only 2xx answers are
    saved). ``polls``, ``fetches``, ``cancels`` and :attr:`~FakeProviderServer.counts` count
    the other endpoints; :attr:`~FakeProviderServer.requests` holds every request received
    (decoded JSON body, headers with the Authorization value withheld). All thread-safe.

The fake writes no log and echoes no key: a request's Authorization header is compared,
never stored or sent back.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any, Literal

__all__ = ["ENDPOINTS", "EXHAUSTED_DECISION", "FakeProviderServer", "Fault", "ReceivedRequest"]

ENDPOINTS = ("chat", "submit", "poll", "fetch", "cancel")
"""The endpoints a fault or a count names (see the module docstring for their paths)."""

EXHAUSTED_DECISION: Mapping[str, str] = {
    "act": "abstain",
    "reason": "the fake has no more decisions",
}
"""What the fake answers once its script is used up (a caller must not loop forever)."""

_CONTENT_ENDPOINTS = frozenset({"chat", "submit"})
_SHAPES = frozenset({"malformed_arguments", "text_instead_of_tool"})
_KINDS = frozenset(
    {
        "status",
        "blank_lines",
        "drop_after_read",
        "slow_body",
        "hang",
        "malformed_arguments",
        "text_instead_of_tool",
        "truncated_body",
    }
)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_balance",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}
_JOB_OUTCOMES = ("succeeded", "failed")
_UNFINISHED = ("queued", "running")
_SLOW_PIECES = 8
_WITHHELD = "<withheld>"


# -- faults ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """One misbehaviour of the fake, for one request. Make them with the class methods."""

    kind: str
    status_code: int = 0
    code: str | None = None
    message: str | None = None
    body: Mapping[str, Any] | str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    count: int = 0
    interval_s: float = 0.0
    seconds: float = 0.0
    text: str | None = None
    answer: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; one of {sorted(_KINDS)}")

    @classmethod
    def status(
        cls,
        status: int,
        *,
        code: str | None = None,
        message: str | None = None,
        body: Mapping[str, Any] | str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Fault:
        """Answer ``status`` instead, with an OpenAI-style error body (``code`` and
        ``message`` in it), or ``body`` verbatim (a string is sent as text/plain: an HTML
        page from a proxy, say), plus ``headers`` (``Retry-After``, ...). The request is
        refused before any work. Any status from 200 to 599: ``status(200, body="<html>")``
        is a 2xx whose body is not JSON."""
        if not isinstance(status, int) or not 200 <= status <= 599:
            raise ValueError(f"a fault's HTTP status is an int from 200 to 599, not {status!r}")
        return cls(
            "status",
            status_code=status,
            code=code,
            message=message,
            body=body,
            headers=tuple((headers or {}).items()),
        )

    @classmethod
    def blank_lines(cls, count: int = 3, interval_s: float = 0.05) -> Fault:
        """DeepSeek's keep-alive: the status and headers, then ``count`` blank lines
        (``b"\\n"``, one every ``interval_s``) before the normal JSON body, chunked, so the
        client sees bytes trickle and its read timeout never trips."""
        _check_count(count, "count")
        _check_seconds(interval_s, "interval_s")
        return cls("blank_lines", count=count, interval_s=interval_s)

    @classmethod
    def drop_after_read(cls) -> Fault:
        """Read the whole request, then close the connection without a response."""
        return cls("drop_after_read")

    @classmethod
    def slow_body(cls, seconds: float) -> Fault:
        """The status and headers at once, then the normal body in pieces over ``seconds``."""
        _check_seconds(seconds, "seconds")
        return cls("slow_body", seconds=seconds)

    @classmethod
    def hang(cls, seconds: float, *, answer: bool = False) -> Fault:
        """Read the request, send nothing for ``seconds``, then close the connection without
        a response; with ``answer=True`` send the normal answer instead (a slow server
        rather than a dead one). Stopping the server ends the wait."""
        _check_seconds(seconds, "seconds")
        return cls("hang", seconds=seconds, answer=answer)

    @classmethod
    def malformed_arguments(cls, arguments: str | None = None) -> Fault:
        """A 200 answer whose decision is not valid JSON: the tool call's ``arguments`` (the
        ``content`` in json mode) are ``arguments``, or by default the decision's JSON with
        its last closing brace dropped, the way models get deep JSON wrong."""
        return cls("malformed_arguments", text=arguments)

    @classmethod
    def text_instead_of_tool(cls, text: str | None = None) -> Fault:
        """A 200 answer with plain ``content`` and no tool call (``finish_reason`` "stop"):
        ``text``, or by default the decision's JSON, as a model that wrote its decision in
        the text channel (in json mode the normal answer already is text: only ``text``
        changes it)."""
        return cls("text_instead_of_tool", text=text)

    @classmethod
    def truncated_body(cls) -> Fault:
        """The status and a Content-Length for the whole body, half the body, then close."""
        return cls("truncated_body")

    @property
    def applies_to(self) -> frozenset[str]:
        """The endpoints this fault can apply to."""
        return _CONTENT_ENDPOINTS if self.kind in _SHAPES else frozenset(ENDPOINTS)

    @property
    def delivers(self) -> bool:
        """Whether the client still gets a complete answer (slowly, or mangled)."""
        return self.kind in ("blank_lines", "slow_body", *_SHAPES) or (
            self.kind == "hang" and self.answer
        )


def _check_count(value: object, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} is an int >= 0, not {value!r}")


def _check_seconds(value: object, name: str) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value < 3600:
        raise ValueError(f"{name} is a number of seconds from 0 to 3600, not {value!r}")


# -- what the fake saw -----------------------------------------------------------------------


@dataclass(frozen=True)
class ReceivedRequest:
    """One request the fake received in full. ``headers`` have lower-case names and the
    Authorization value withheld; ``authorized`` says whether it matched the server's key
    (None: the server checks none)."""

    seq: int
    endpoint: str
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    size: int
    job_id: str | None
    fault: str | None
    replay: bool
    authorized: bool | None


@dataclass(frozen=True)
class _Answer:
    status: int
    payload: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class _Job:
    id: str
    model: Any
    prompt: tuple[int, int, int]
    shape: Fault | None
    tools: bool
    status: str = "queued"
    polls: int = 0
    result: dict[str, Any] | None = None


def _json(status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> _Answer:
    return _Answer(status, json.dumps(body, ensure_ascii=False).encode(), headers=headers)


def _error_body(status: int, message: str, code: str | None, param: str | None = None) -> dict:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _error(status: int, message: str, code: str | None, param: str | None = None) -> _Answer:
    return _json(status, _error_body(status, message, code, param))


def _refusal(fault: Fault) -> _Answer:
    if isinstance(fault.body, str):
        return _Answer(fault.status_code, fault.body.encode(), "text/plain", fault.headers)
    body = fault.body
    if body is None:
        message = fault.message or f"fake provider fault: HTTP {fault.status_code}"
        body = _error_body(fault.status_code, message, fault.code)
    return _json(fault.status_code, body, fault.headers)


def _tokens(size: int) -> int:
    return (size + 3) // 4


def _common_prefix(a: bytes, b: bytes) -> int:
    # Binary search over slice comparisons: memcmp speed on prompts of hundreds of KB.
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _broken(text: str) -> str:
    end = text.rstrip()
    if end.endswith("}"):
        cut = text.rfind("}")
        return text[:cut] + text[cut + 1 :]
    return text + "}"


def _decision_text(decision: object) -> str:
    if isinstance(decision, str):
        return decision
    if isinstance(decision, Mapping):
        try:
            return json.dumps(dict(decision), ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a decision must be JSON-serialisable: {exc}") from None
    raise TypeError(f"a decision is a dict or a JSON string, not {type(decision).__name__}")


def _route(method: str, path: str) -> tuple[str | None, str | None]:
    parts = path.split("?", 1)[0].rstrip("/").split("/")
    if parts[:2] != ["", "v1"] and parts[:2] != ["", "beta"]:
        return None, None
    rest = parts[2:]
    if parts[1] == "v1" and rest[:1] == ["beta"]:
        rest = rest[1:]
    if parts[1] == "beta" or parts[2:3] == ["beta"]:
        # DeepSeek's beta base URL serves chat completions only
        return (
            ("chat", None) if method == "POST" and rest == ["chat", "completions"] else (None, None)
        )
    if method == "POST" and rest == ["chat", "completions"]:
        return "chat", None
    if rest[:1] != ["jobs"]:
        return None, None
    if method == "POST" and len(rest) == 1:
        return "submit", None
    if len(rest) >= 2 and rest[1]:
        job = rest[1]
        if method == "GET" and len(rest) == 2:
            return "poll", job
        if method == "GET" and rest[2:] == ["result"]:
            return "fetch", job
        if method == "POST" and rest[2:] == ["cancel"]:
            return "cancel", job
    return None, None


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


# -- the server ------------------------------------------------------------------------------


class FakeProviderServer:
    """A FAKE OpenAI-compatible provider on ``127.0.0.1`` (a random port), for tests only.

    See the module docstring for what it answers, its job protocol, its faults and its
    counts. Use it as a context manager, or :meth:`start` it and :meth:`stop` it in a
    ``finally``; :attr:`base_url` is ``"http://127.0.0.1:PORT/v1"``.
    """

    def __init__(
        self,
        decisions: Iterable[Mapping[str, Any] | str] = (),
        *,
        mode: Literal["tool", "json", "auto"] = "tool",
        reasoning: str | Callable[[int], str] | None = None,
        api_key: str | None = None,
        tool_name: str = "aira_step",
        job_polls_to_finish: int = 2,
        job_outcome: Literal["succeeded", "failed"] = "succeeded",
        honours_idempotency: bool = False,
        require_reasoning_replay: bool = False,
        reasoning_field: str = "reasoning_content",
        refuse_forced_tool_choice: bool = False,
    ) -> None:
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._texts: list[str] = []
        self._position = 0
        self._seq = 0
        self._counts = dict.fromkeys(ENDPOINTS, 0)
        self._submissions = 0
        self._replays = 0
        self._requests: list[ReceivedRequest] = []
        self._errors: list[str] = []
        self._queue: list[tuple[str | None, Fault]] = []
        self._scheduled: list[tuple[int, str | None, Fault]] = []
        self._jobs: dict[str, _Job] = {}
        self._saved: dict[str, tuple[Any, _Answer]] = {}
        self._last_messages = b""
        self.configure(
            decisions=decisions,
            mode=mode,
            reasoning=reasoning,
            api_key=api_key,
            tool_name=tool_name,
            job_polls_to_finish=job_polls_to_finish,
            job_outcome=job_outcome,
            honours_idempotency=honours_idempotency,
            require_reasoning_replay=require_reasoning_replay,
            reasoning_field=reasoning_field,
            refuse_forced_tool_choice=refuse_forced_tool_choice,
        )

    def __repr__(self) -> str:
        where = self.base_url if self._httpd is not None else "stopped"
        return f"FakeProviderServer({where}, mode={self._mode!r}, position={self._position})"

    def configure(
        self,
        *,
        decisions: Iterable[Mapping[str, Any] | str] = _UNSET,
        mode: Literal["tool", "json", "auto"] = _UNSET,
        reasoning: str | Callable[[int], str] | None = _UNSET,
        api_key: str | None = _UNSET,
        tool_name: str = _UNSET,
        job_polls_to_finish: int = _UNSET,
        job_outcome: Literal["succeeded", "failed"] = _UNSET,
        honours_idempotency: bool = _UNSET,
        require_reasoning_replay: bool = _UNSET,
        reasoning_field: str = _UNSET,
        refuse_forced_tool_choice: bool = _UNSET,
    ) -> FakeProviderServer:
        """Change any constructor option, running or not (the fixture's server is configured
        this way). New ``decisions`` replace the script: the next answer is its first."""
        with self._lock:
            if decisions is not _UNSET:
                if isinstance(decisions, str | bytes | Mapping):
                    raise TypeError("decisions is a sequence of decisions, not one decision")
                texts = [_decision_text(d) for d in decisions]
            if mode is not _UNSET and mode not in ("tool", "json", "auto"):
                raise ValueError(f"mode is 'tool', 'json' or 'auto', not {mode!r}")
            if reasoning_field is not _UNSET and (
                not isinstance(reasoning_field, str) or not reasoning_field
            ):
                raise ValueError("reasoning_field is a non-empty string")
            if not (
                reasoning is _UNSET or reasoning is None or isinstance(reasoning, str)
            ) and not callable(reasoning):
                raise TypeError("reasoning is a str, a callable(decision_index) or None")
            if api_key not in (_UNSET, None) and (not isinstance(api_key, str) or not api_key):
                raise ValueError("api_key is a non-empty string or None")
            if tool_name is not _UNSET and (not isinstance(tool_name, str) or not tool_name):
                raise ValueError("tool_name is a non-empty string")
            if job_polls_to_finish is not _UNSET:
                _check_count(job_polls_to_finish, "job_polls_to_finish")
                if job_polls_to_finish < 1:
                    raise ValueError("job_polls_to_finish is at least 1")
            if job_outcome is not _UNSET and job_outcome not in _JOB_OUTCOMES:
                raise ValueError(f"job_outcome is one of {_JOB_OUTCOMES}, not {job_outcome!r}")
            # Everything checked: apply all or nothing.
            if decisions is not _UNSET:
                self._texts = texts
                self._position = 0
            if mode is not _UNSET:
                self._mode = mode
            if reasoning is not _UNSET:
                self._reasoning = reasoning
            if api_key is not _UNSET:
                self._api_key = api_key
            if tool_name is not _UNSET:
                self._tool_name = tool_name
            if job_polls_to_finish is not _UNSET:
                self._polls_to_finish = job_polls_to_finish
            if job_outcome is not _UNSET:
                self._job_outcome = job_outcome
            if honours_idempotency is not _UNSET:
                self._idempotency = bool(honours_idempotency)
            if require_reasoning_replay is not _UNSET:
                self._reasoning_replay = bool(require_reasoning_replay)
            if reasoning_field is not _UNSET:
                self._reasoning_field = reasoning_field
            if refuse_forced_tool_choice is not _UNSET:
                self._refuse_forced = bool(refuse_forced_tool_choice)
        return self

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeProviderServer:
        """Listen on a fresh random port of 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("the fake provider is already running")
        self._stopping.clear()
        httpd = _HTTPServer(self)
        thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"aira-fake-provider:{httpd.server_address[1]}",
            daemon=True,
        )
        self._httpd, self._thread = httpd, thread
        thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, end every open connection (a hang or a slow body ends at once),
        and wait for every thread the server started. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        thread.join()
        httpd.close_connections()
        httpd.server_close()
        httpd.join_handlers()
        self._httpd = self._thread = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake provider is not running: start() it first")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the OpenAI-style base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- faults ------------------------------------------------------------------------------

    def inject(self, *faults: Fault, on: str | None = None) -> None:
        """Queue ``faults``, in order, each for the next request it can apply to (of endpoint
        ``on`` only, when given)."""
        for fault in faults:
            self._check_fault(fault, on)
        with self._lock:
            self._queue.extend((on, fault) for fault in faults)

    def inject_at(self, n: int, fault: Fault, *, on: str | None = None) -> None:
        """Aim ``fault`` at the ``n``-th request (1-based, since the server was made): the
        n-th of endpoint ``on`` when given, else the n-th of all the requests this fault can
        apply to. It takes precedence over queued faults."""
        self._check_fault(fault, on)
        _check_count(n, "n")
        with self._lock:
            if n < 1 or n <= self._count_for(on, fault):
                raise ValueError(f"request {n} has already been received (or n < 1)")
            self._scheduled.append((n, on, fault))

    def clear_faults(self) -> None:
        """Forget every fault not yet applied."""
        with self._lock:
            self._queue.clear()
            self._scheduled.clear()

    @property
    def pending_faults(self) -> int:
        """How many injected faults have not been applied yet."""
        with self._lock:
            return len(self._queue) + len(self._scheduled)

    @staticmethod
    def _check_fault(fault: object, on: str | None) -> None:
        if not isinstance(fault, Fault):
            raise TypeError(f"a fault is a Fault, not {type(fault).__name__}")
        if on is not None and on not in ENDPOINTS:
            raise ValueError(f"on is one of {ENDPOINTS} or None, not {on!r}")
        if on is not None and on not in fault.applies_to:
            raise ValueError(f"a {fault.kind} fault applies to {sorted(fault.applies_to)} only")

    def _count_for(self, on: str | None, fault: Fault) -> int:
        if on is not None:
            return self._counts[on]
        if fault.applies_to == _CONTENT_ENDPOINTS:
            return self._counts["chat"] + self._counts["submit"]
        return self._seq

    def _take_fault(self, endpoint: str) -> Fault | None:
        for index, (n, on, fault) in enumerate(self._scheduled):
            applies = endpoint in fault.applies_to and on in (None, endpoint)
            if applies and n == self._count_for(on, fault):
                del self._scheduled[index]
                return fault
        for index, (on, fault) in enumerate(self._queue):
            if endpoint in fault.applies_to and on in (None, endpoint):
                del self._queue[index]
                return fault
        return None

    # -- counts ------------------------------------------------------------------------------

    @property
    def submissions(self) -> int:
        """Chat-completion and job-submit requests received in full (not replays)."""
        with self._lock:
            return self._submissions

    @property
    def replays(self) -> int:
        """Requests answered from the idempotency cache."""
        with self._lock:
            return self._replays

    @property
    def polls(self) -> int:
        with self._lock:
            return self._counts["poll"]

    @property
    def fetches(self) -> int:
        with self._lock:
            return self._counts["fetch"]

    @property
    def cancels(self) -> int:
        with self._lock:
            return self._counts["cancel"]

    @property
    def counts(self) -> dict[str, int]:
        """Requests received in full, per endpoint (replays included)."""
        with self._lock:
            return dict(self._counts)

    @property
    def requests(self) -> list[ReceivedRequest]:
        """Every request received in full, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def position(self) -> int:
        """How many answers have taken a decision (the next one is ``decisions[position]``,
        or the abstention once past the end)."""
        with self._lock:
            return self._position

    @property
    def jobs(self) -> dict[str, str]:
        """``{job id: status}`` of every job created."""
        with self._lock:
            return {job.id: job.status for job in self._jobs.values()}

    @property
    def errors(self) -> list[str]:
        """Failures inside the fake itself (a bug, a ``reasoning`` callable that raised);
        a test can assert there were none. Clients going away are not errors."""
        with self._lock:
            return list(self._errors)

    def _record_error(self, text: str) -> None:
        with self._lock:
            self._errors.append(text)

    # -- answering ---------------------------------------------------------------------------

    def _receive(
        self, method: str, path: str, endpoint: str, job_id: str | None, raw: bytes, headers: Any
    ) -> tuple[_Answer, Fault | None]:
        names = {name.lower(): value for name, value in headers.items()}
        given = names.get("authorization")
        if given is not None:
            names["authorization"] = _WITHHELD
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        with self._lock:
            self._seq += 1
            self._counts[endpoint] += 1
            key = names.get("idempotency-key") if self._idempotency else None
            key = key if endpoint in _CONTENT_ENDPOINTS else None
            replay = key is not None and key in self._saved
            if replay:
                self._replays += 1
            elif endpoint in _CONTENT_ENDPOINTS:
                self._submissions += 1
            fault = self._take_fault(endpoint)
            authorized = None
            if self._api_key is not None:
                expected = f"Bearer {self._api_key}".encode()
                authorized = given is not None and hmac.compare_digest(given.encode(), expected)
            self._requests.append(
                ReceivedRequest(
                    seq=self._seq,
                    endpoint=endpoint,
                    method=method,
                    path=path,
                    headers=names,
                    body=body,
                    size=len(raw),
                    job_id=job_id,
                    fault=fault.kind if fault else None,
                    replay=replay,
                    authorized=authorized,
                )
            )
            if fault is not None and fault.kind == "status":
                return _refusal(fault), fault
            if authorized is False:
                message = "Authentication Fails: the API key is missing or invalid"
                return _error(401, message, "invalid_api_key"), fault
            if replay:
                saved_body, answer = self._saved[key]
                if saved_body != body:
                    message = "Idempotency-Key reused with a different request body"
                    return _error(422, message, "idempotency_key_reused"), fault
                return answer, fault
            answer, takes_decision = self._handle(endpoint, job_id, body, len(raw), fault)
            saved = key is not None and 200 <= answer.status < 300
            if saved:
                self._saved[key] = (body, answer)
            if takes_decision and (saved or fault is None or fault.delivers):
                self._position += 1
            return answer, fault

    def _handle(
        self, endpoint: str, job_id: str | None, body: Any, size: int, fault: Fault | None
    ) -> tuple[_Answer, bool]:
        """The normal answer (no transport fault); True when it takes a decision."""
        if endpoint in _CONTENT_ENDPOINTS:
            invalid = self._invalid(body)
            if invalid is not None:
                return invalid, False
            prompt = self._prompt_usage(body["messages"], size)
            shape = fault if fault is not None and fault.kind in _SHAPES else None
            if endpoint == "chat":
                tools = bool(body.get("tools"))
                return _json(200, self._completion(body["model"], prompt, shape, tools)), True
            job = _Job(
                f"job_{len(self._jobs) + 1}", body["model"], prompt, shape, bool(body.get("tools"))
            )
            self._jobs[job.id] = job
            return _json(202, {"id": job.id, "status": job.status}), False
        job = self._jobs.get(job_id or "")
        if job is None:
            return _error(404, f"no job {job_id!r}", "job_not_found"), False
        if endpoint == "poll":
            return self._poll(job), False
        if endpoint == "fetch":
            if job.result is None:
                message = f"job {job.id} is {job.status}: it has no result"
                return _error(409, message, "job_not_succeeded"), False
            return _json(200, job.result), False
        if job.status in _UNFINISHED:
            job.status = "canceled"
        if job.status != "canceled":
            message = f"job {job.id} is {job.status}: too late to cancel"
            return _error(409, message, "job_finished"), False
        return _json(200, {"id": job.id, "status": job.status}), False

    def _poll(self, job: _Job) -> _Answer:
        if job.status in _UNFINISHED:
            job.polls += 1
            if job.polls < self._polls_to_finish:
                job.status = "running"
            elif self._job_outcome == "succeeded":
                job.result = self._completion(job.model, job.prompt, job.shape, job.tools)
                job.status = "succeeded"
                self._position += 1
            else:
                job.status = "failed"
        reply: dict[str, Any] = {"id": job.id, "status": job.status}
        if job.status == "failed":
            reply["error"] = _error_body(500, "the fake job failed", "job_failed")["error"]
        return _json(200, reply)

    def _invalid(self, body: Any) -> _Answer | None:
        if not isinstance(body, dict):
            return _error(400, "the request body is not a JSON object", "invalid_body")
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _error(400, "you must provide a model parameter", "missing_model", "model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            message = "messages must be a non-empty list"
            return _error(400, message, "invalid_messages", "messages")
        if self._reasoning_replay:
            for index, item in enumerate(messages):
                if (
                    isinstance(item, dict)
                    and item.get("role") == "assistant"
                    and item.get("tool_calls")
                    and self._reasoning_field not in item
                ):
                    message = (
                        f"Missing `{self._reasoning_field}` field in the assistant message at "
                        f"message index {index}"
                    )
                    return _error(400, message, "invalid_request_error", "messages")
        if self._refuse_forced:
            thinking = body.get("thinking")
            off = isinstance(thinking, dict) and thinking.get("type") == "disabled"
            choice = body.get("tool_choice")
            if not off and choice is not None and choice not in ("auto", "none"):
                message = "Thinking mode does not support this tool_choice"
                return _error(400, message, "invalid_request_error", "tool_choice")
        return None

    def _prompt_usage(self, messages: list[Any], size: int) -> tuple[int, int, int]:
        text = json.dumps(messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        current = text.encode()
        prompt = _tokens(size)
        hit = min(prompt, _common_prefix(current, self._last_messages) // 4)
        self._last_messages = current
        return prompt, hit, prompt - hit

    def _completion(
        self, model: str, prompt: tuple[int, int, int], shape: Fault | None, tools: bool
    ) -> dict[str, Any]:
        index = self._position
        text = (
            self._texts[index]
            if index < len(self._texts)
            else json.dumps(dict(EXHAUSTED_DECISION), ensure_ascii=False)
        )
        reasoning = self._reasoning(index) if callable(self._reasoning) else self._reasoning
        if reasoning is not None and not isinstance(reasoning, str):
            raise TypeError(f"reasoning({index}) returned {type(reasoning).__name__}, not str")
        kind = shape.kind if shape is not None else None
        if kind == "malformed_arguments":
            text = shape.text if shape.text is not None else _broken(text)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if reasoning is not None:
            message[self._reasoning_field] = reasoning
        if kind == "text_instead_of_tool":
            message["content"] = shape.text if shape.text is not None else text
            finish = "stop"
        elif self._mode == "json" or (self._mode == "auto" and not tools):
            message["content"] = text
            finish = "stop"
        else:
            call = {"name": self._tool_name, "arguments": text}
            tool_call = {"id": f"call_{index + 1}", "type": "function", "function": call}
            message["tool_calls"] = [tool_call]
            finish = "tool_calls"
        said = message["content"] if message["content"] is not None else text
        answer_tokens = _tokens(len(said.encode()))
        reasoning_tokens = _tokens(len(reasoning.encode())) if reasoning else 0
        completion = answer_tokens + reasoning_tokens
        prompt_tokens, hit, miss = prompt
        return {
            "id": f"chatcmpl-fake-{self._seq}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fake",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
                "prompt_cache_hit_tokens": hit,
                "prompt_cache_miss_tokens": miss,
                "prompt_tokens_details": {"cached_tokens": hit},
                "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
            },
        }


# -- HTTP ------------------------------------------------------------------------------------


class _HTTPServer(ThreadingHTTPServer):
    """Tracks its connections and handler threads, so stop() can end and join them all."""

    daemon_threads = True

    def __init__(self, fake: FakeProviderServer) -> None:
        self.fake = fake
        self.guard = threading.Lock()
        self.handlers: set[threading.Thread] = set()
        self.connections: set[socket.socket] = set()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN (a DNS lookup): skip it.
        TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._process,
            args=(request, client_address),
            name=f"aira-fake-provider:{self.server_port}:connection",
            daemon=True,
        )
        with self.guard:
            self.handlers.add(thread)
            self.connections.add(request)
        thread.start()

    def _process(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self.guard:
                self.connections.discard(request)
                self.handlers.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        # A client that gave up, or stop() ending the connection, is no fault of the fake.
        if not isinstance(error, OSError):
            self.fake._record_error(traceback.format_exc())

    def close_connections(self) -> None:
        with self.guard:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by its handler
                connection.shutdown(socket.SHUT_RDWR)

    def join_handlers(self) -> None:
        with self.guard:
            handlers = list(self.handlers)
        for thread in handlers:
            thread.join(timeout=5)  # a handler still alive after that is a bug tests will see


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aira-fake-provider"
    sys_version = ""
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the fake logs nothing: a request line or header may carry a secret

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    do_PUT = do_DELETE = do_PATCH = do_POST

    def _serve(self) -> None:
        fake = self.server.fake
        try:
            raw = self._read_body()
        except ValueError as exc:
            self.close_connection = True
            self._write(_error(400, f"unreadable request body: {exc}", "invalid_body"))
            return
        except ConnectionError:
            self.close_connection = True
            return  # the body never arrived in full: not a received request
        path = self.path.split("?", 1)[0]
        endpoint, job_id = _route(self.command, path)
        if endpoint is None:
            self._write(_error(404, f"no route {self.command} {path}", "not_found"))
            return
        try:
            answer, fault = fake._receive(self.command, path, endpoint, job_id, raw, self.headers)
        except Exception:
            fake._record_error(traceback.format_exc())
            self.close_connection = True
            self._write(_error(500, "the fake provider failed (see its .errors)", "fake_error"))
            return
        self._deliver(answer, fault)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline(65537).split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                part = self.rfile.read(size)
                if len(part) < size:
                    raise ConnectionError("the request body was cut off")
                parts.append(part)
                self.rfile.readline()
        length = self.headers.get("Content-Length")
        if length is None:
            return b""
        size = int(length)
        if size < 0:
            raise ValueError("negative Content-Length")
        data = self.rfile.read(size)
        if len(data) < size:
            raise ConnectionError("the request body was cut off")
        return data

    def _head(self, answer: _Answer, length: int | None) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        for name, value in answer.headers:
            self.send_header(name, value)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()

    def _write(self, answer: _Answer) -> None:
        self._head(answer, len(answer.payload))
        self.wfile.write(answer.payload)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))

    def _deliver(self, answer: _Answer, fault: Fault | None) -> None:
        stopping = self.server.fake._stopping
        kind = fault.kind if fault is not None else None
        if kind == "drop_after_read":
            self.close_connection = True
            return
        if kind == "hang" and (stopping.wait(fault.seconds) or not fault.answer):
            self.close_connection = True
            return
        if kind == "truncated_body":
            self.close_connection = True
            self._head(answer, len(answer.payload))
            self.wfile.write(answer.payload[: len(answer.payload) // 2])
            return
        if kind == "blank_lines":
            self._head(answer, None)
            for _ in range(fault.count):
                if stopping.wait(fault.interval_s):
                    self.close_connection = True
                    return
                self._chunk(b"\n")
            self._chunk(answer.payload)
            self._chunk(b"")
            return
        if kind == "slow_body":
            self._head(answer, None)
            payload = answer.payload
            step = max(1, -(-len(payload) // _SLOW_PIECES))
            pieces = [payload[i : i + step] for i in range(0, len(payload), step)]
            for piece in pieces:
                if stopping.wait(fault.seconds / len(pieces)):
                    self.close_connection = True
                    return
                self._chunk(piece)
            self._chunk(b"")
            return
        self._write(answer)
