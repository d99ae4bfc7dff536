"""The FAKE OpenAI-compatible provider of ``aira_core.testing``, driven over real HTTP by
httpx2, the client the provider plugins use."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from aira_core.testing import FakeProviderServer, Fault

DECISIONS = [
    {"act": "read", "ids": ["box1"]},
    '{"act": "done", "summary": "a box"}',
    {"act": "note", "text": "ü ok"},
]
BODY = {"model": "deepseek-flash", "messages": [{"role": "user", "content": "make a box"}]}
ABSTAIN = {"act": "abstain", "reason": "the fake has no more decisions"}


@pytest.fixture
def make() -> Iterator[Callable[..., FakeProviderServer]]:
    made: list[FakeProviderServer] = []

    def make(*args: Any, **options: Any) -> FakeProviderServer:
        server = FakeProviderServer(*args, **options).start()
        made.append(server)
        return server

    try:
        yield make
    finally:
        for server in made:
            server.stop()


def call(
    server: FakeProviderServer,
    method: str = "POST",
    path: str = "/chat/completions",
    *,
    read: float = 2.0,
    **kwargs: Any,
) -> httpx2.Response:
    """One request on a fresh connection, as the gateway makes them."""
    if method == "POST" and "json" not in kwargs and "content" not in kwargs:
        kwargs["json"] = BODY
    timeout = httpx2.Timeout(2.0, read=read)
    limits = httpx2.Limits(max_keepalive_connections=0)
    # Plain HTTP on loopback: verify=False only skips loading the trust store (50 ms a client).
    with httpx2.Client(
        base_url=server.base_url, timeout=timeout, limits=limits, verify=False
    ) as client:
        return client.request(method, path, **kwargs)


def message(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]


def decided(response: httpx2.Response) -> Any:
    """The decision a tool-mode answer carries."""
    (tool_call,) = message(response)["tool_calls"]
    assert tool_call["function"]["name"] == "aira_step"
    return json.loads(tool_call["function"]["arguments"])


def test_tool_mode_answers_each_decision_as_one_aira_step_call(make) -> None:
    server = make(DECISIONS)
    answers = [call(server) for _ in range(4)]
    bodies = [a.json() for a in answers]
    assert [decided(a) for a in answers] == [
        DECISIONS[0],
        json.loads(DECISIONS[1]),
        DECISIONS[2],
        ABSTAIN,
    ]
    # A string decision goes out verbatim; a dict as json.dumps does (the scripted source).
    arguments = [
        b["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] for b in bodies
    ]
    assert arguments[1] == DECISIONS[1]
    assert arguments[2] == json.dumps(DECISIONS[2], ensure_ascii=False)
    assert [b["choices"][0]["message"]["tool_calls"][0]["id"] for b in bodies] == [
        "call_1",
        "call_2",
        "call_3",
        "call_4",
    ]
    assert {b["choices"][0]["finish_reason"] for b in bodies} == {"tool_calls"}
    assert {b["model"] for b in bodies} == {"deepseek-flash"}
    assert all("reasoning_content" not in b["choices"][0]["message"] for b in bodies)
    assert bodies[0]["object"] == "chat.completion"
    assert server.position == 4 and server.submissions == 4 and server.counts["chat"] == 4


def test_json_mode_puts_the_decision_in_content_with_reasoning(make) -> None:
    server = make(DECISIONS, mode="json", reasoning=lambda index: f"step {index}: think" * 3)
    first, second = call(server).json(), call(server).json()
    for index, body in enumerate((first, second)):
        choice = body["choices"][0]
        assert choice["finish_reason"] == "stop"
        assert "tool_calls" not in choice["message"]
        assert choice["message"]["reasoning_content"] == f"step {index}: think" * 3
    assert json.loads(first["choices"][0]["message"]["content"]) == DECISIONS[0]
    assert second["choices"][0]["message"]["content"] == DECISIONS[1]
    usage = first["usage"]
    reasoning_tokens = -(-len(b"step 0: think" * 3) // 4)
    answer_tokens = -(-len(first["choices"][0]["message"]["content"].encode()) // 4)
    assert usage["completion_tokens_details"] == {"reasoning_tokens": reasoning_tokens}
    assert usage["completion_tokens"] == answer_tokens + reasoning_tokens


def test_usage_counts_bytes_and_a_plausible_prefix_cache(make) -> None:
    server = make(DECISIONS, reasoning="")
    follow_up = {
        "model": "m",
        "messages": [*BODY["messages"], {"role": "assistant", "content": "x" * 400}],
    }
    other = {"model": "m", "messages": [{"role": "system", "content": "y" * 400}]}
    usages = [call(server, json=body).json()["usage"] for body in (BODY, follow_up, other)]
    sizes = [r.size for r in server.requests]
    for usage, size in zip(usages, sizes, strict=True):
        assert usage["prompt_tokens"] == -(-size // 4)
        assert (
            usage["prompt_cache_hit_tokens"] + usage["prompt_cache_miss_tokens"]
            == (usage["prompt_tokens"])
        )
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["prompt_tokens_details"] == {"cached_tokens": usage["prompt_cache_hit_tokens"]}
        assert usage["completion_tokens_details"] == {"reasoning_tokens": 0}
    first_messages = json.dumps(BODY["messages"], separators=(",", ":")).encode()
    assert usages[0]["prompt_cache_hit_tokens"] == 0  # nothing came before
    # The follow-up repeats the first request's messages: all of them hit but the closing ].
    assert usages[1]["prompt_cache_hit_tokens"] == (len(first_messages) - 1) // 4
    assert usages[2]["prompt_cache_hit_tokens"] < 5  # only '[{"content":"' in common
    assert usages[2]["prompt_cache_miss_tokens"] > 100


def test_the_api_key_is_checked_and_never_kept(make) -> None:
    key = "sk-fake-sentinel-4242"
    server = make(DECISIONS, api_key=key)
    missing = call(server)
    wrong = call(server, headers={"Authorization": "Bearer sk-other"})
    right = call(server, headers={"Authorization": f"Bearer {key}"})
    for refused in (missing, wrong):
        assert refused.status_code == 401
        error = refused.json()["error"]
        assert error["type"] == "authentication_error" and error["code"] == "invalid_api_key"
        assert "sk-" not in refused.text
    assert decided(right) == DECISIONS[0]  # a 401 takes no decision
    assert server.submissions == 3
    assert [r.authorized for r in server.requests] == [False, False, True]
    assert [r.headers.get("authorization") for r in server.requests] == [
        None,
        "<withheld>",
        "<withheld>",
    ]
    assert key not in repr(server.requests) and "sk-other" not in repr(server.requests)


def test_status_faults_refuse_the_request_and_take_no_decision(make) -> None:
    server = make(DECISIONS)
    server.inject(
        Fault.status(429, code="rate_limit", headers={"Retry-After": "2"}),
        Fault.status(500),
        Fault.status(502, body="<html>bad gateway</html>"),
        Fault.status(200, body="not json"),
    )
    limited, broken, proxy, garbage = (call(server) for _ in range(4))
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"] == {
        "message": "fake provider fault: HTTP 429",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit",
    }
    assert broken.status_code == 500 and broken.json()["error"]["type"] == "server_error"
    assert proxy.status_code == 502 and proxy.text == "<html>bad gateway</html>"
    assert proxy.headers["content-type"] == "text/plain"
    assert garbage.status_code == 200 and garbage.text == "not json"
    assert server.position == 0 and server.pending_faults == 0
    assert decided(call(server)) == DECISIONS[0]
    assert server.submissions == 5
    assert [r.fault for r in server.requests] == ["status"] * 4 + [None]


def test_blank_lines_trickle_before_the_json_body(make) -> None:
    server = make(DECISIONS)
    server.inject(Fault.blank_lines(3, 0.03))
    limits = httpx2.Limits(max_keepalive_connections=0)
    started = time.monotonic()
    with (
        httpx2.Client(timeout=httpx2.Timeout(2.0), limits=limits, verify=False) as client,
        client.stream("POST", f"{server.base_url}/chat/completions", json=BODY) as response,
    ):
        assert response.status_code == 200
        assert "content-length" not in response.headers
        arrivals = []
        for chunk in response.iter_raw():
            arrivals.append((time.monotonic() - started, chunk))
    raw = b"".join(chunk for _, chunk in arrivals)
    assert raw.startswith(b"\n\n\n{") and raw.count(b"\n") == 3
    assert arrivals[0][1] == b"\n" and len(arrivals) >= 2  # bytes came before the body
    assert arrivals[-1][0] >= 0.09
    body = json.loads(raw)  # leading whitespace is valid JSON
    assert (
        json.loads(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
        == (DECISIONS[0])
    )
    assert server.position == 1


def test_a_dropped_connection_counts_and_leaves_the_decision(make) -> None:
    server = make(DECISIONS)
    server.inject(Fault.drop_after_read())
    with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
        call(server)
    assert server.submissions == 1 and server.position == 0
    assert server.requests[0].fault == "drop_after_read" and server.requests[0].body == BODY
    assert decided(call(server)) == DECISIONS[0]


def test_a_truncated_body_is_a_protocol_error_and_leaves_the_decision(make) -> None:
    server = make(DECISIONS)
    server.inject(Fault.truncated_body())
    with pytest.raises(httpx2.RemoteProtocolError, match="complete message body"):
        call(server)
    assert server.submissions == 1 and server.position == 0
    assert decided(call(server)) == DECISIONS[0]


def test_a_slow_body_never_trips_the_read_timeout(make) -> None:
    server = make(DECISIONS)
    server.inject(Fault.slow_body(0.24))
    started = time.monotonic()
    # Each piece arrives within 0.03 s: a 0.15 s read timeout never trips on 0.24 s.
    answer = call(server, read=0.15)
    assert time.monotonic() - started >= 0.2
    assert decided(answer) == DECISIONS[0] and server.position == 1


def test_a_hang_times_the_client_out_and_an_answering_hang_is_late(make) -> None:
    server = make(DECISIONS)
    server.inject(Fault.hang(30))
    started = time.monotonic()
    with pytest.raises(httpx2.ReadTimeout):
        call(server, read=0.1)
    assert time.monotonic() - started < 1
    assert server.submissions == 1 and server.position == 0
    server.inject(Fault.hang(0.1, answer=True))
    started = time.monotonic()
    assert decided(call(server)) == DECISIONS[0]
    assert time.monotonic() - started >= 0.1
    stopping = time.monotonic()
    server.stop()  # the 30 s hang is still waiting: stop ends it
    assert time.monotonic() - stopping < 1


def test_malformed_arguments_and_text_instead_of_a_tool_call(make) -> None:
    server = make(DECISIONS)
    server.inject(
        Fault.malformed_arguments(),
        Fault.text_instead_of_tool(),
        Fault.malformed_arguments("{'act': 'done'"),
        Fault.text_instead_of_tool("I think the box is done."),
    )
    broken, text, given, prose = (call(server) for _ in range(4))
    arguments = message(broken)["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)
    assert json.loads(arguments + "}") == DECISIONS[0]  # one closing brace dropped
    assert "tool_calls" not in message(text) and message(text)["content"] == DECISIONS[1]
    assert text.json()["choices"][0]["finish_reason"] == "stop"
    assert message(given)["tool_calls"][0]["function"]["arguments"] == "{'act': 'done'"
    assert message(prose)["content"] == "I think the box is done."
    # A mangled 200 answer is how its decision came out: each one took a decision.
    assert server.position == 4

    json_server = make(DECISIONS, mode="json")
    json_server.inject(Fault.malformed_arguments())
    with pytest.raises(json.JSONDecodeError):
        json.loads(message(call(json_server))["content"])


def test_faults_wait_for_a_request_they_apply_to(make) -> None:
    server = make(DECISIONS)
    server.inject(Fault.status(500), on="poll")
    server.inject(Fault.malformed_arguments())
    server.inject_at(4, Fault.status(503))
    job = call(server, path="/jobs").json()["id"]  # request 1: the content fault shapes it
    assert call(server).status_code == 200  # request 2: the poll fault waits for a poll
    assert call(server, "GET", f"/jobs/{job}").status_code == 500  # request 3
    assert call(server, "GET", f"/jobs/{job}").status_code == 503  # request 4: inject_at
    assert call(server, "GET", f"/jobs/{job}").json()["status"] == "running"
    assert call(server, "GET", f"/jobs/{job}").json()["status"] == "succeeded"
    result = call(server, "GET", f"/jobs/{job}/result")
    with pytest.raises(json.JSONDecodeError):
        json.loads(message(result)["tool_calls"][0]["function"]["arguments"])
    assert server.pending_faults == 0
    with pytest.raises(ValueError, match="already been received"):
        server.inject_at(3, Fault.status(500))
    with pytest.raises(ValueError, match="applies to"):
        server.inject(Fault.text_instead_of_tool(), on="poll")
    with pytest.raises(ValueError, match="on is one of"):
        server.inject(Fault.drop_after_read(), on="everything")
    with pytest.raises(TypeError, match="a fault is a Fault"):
        server.inject("drop")  # type: ignore[arg-type]
    server.inject(Fault.drop_after_read(), on="cancel")
    server.clear_faults()
    assert server.pending_faults == 0


def test_a_job_goes_queued_running_succeeded_and_its_result_is_fetched_again(make) -> None:
    server = make(DECISIONS, reasoning="deep")
    submitted = call(server, path="/jobs")
    assert submitted.status_code == 202 and submitted.json() == {"id": "job_1", "status": "queued"}
    early = call(server, "GET", "/jobs/job_1/result")
    assert early.status_code == 409 and early.json()["error"]["code"] == "job_not_succeeded"
    assert call(server, "GET", "/jobs/job_1").json() == {"id": "job_1", "status": "running"}
    assert server.position == 0  # a job takes its decision when it succeeds
    assert call(server, "GET", "/jobs/job_1").json() == {"id": "job_1", "status": "succeeded"}
    first, again = (
        call(server, "GET", "/jobs/job_1/result"),
        call(server, "GET", "/jobs/job_1/result"),
    )
    assert decided(first) == DECISIONS[0] and first.json() == again.json()
    assert message(first)["reasoning_content"] == "deep"
    assert first.json()["model"] == BODY["model"]
    late = call(server, path="/jobs/job_1/cancel")
    assert late.status_code == 409 and late.json()["error"]["code"] == "job_finished"
    assert call(server, "GET", "/jobs/job_9").status_code == 404
    assert server.submissions == 1 and server.polls == 3 and server.fetches == 3
    assert server.cancels == 1 and server.position == 1 and server.jobs == {"job_1": "succeeded"}
    assert decided(call(server)) == json.loads(DECISIONS[1])  # chat shares the script


def test_a_job_can_be_made_slower_or_to_fail(make) -> None:
    server = make(DECISIONS, job_polls_to_finish=3, job_outcome="failed")
    call(server, path="/jobs")
    statuses = [call(server, "GET", "/jobs/job_1").json() for _ in range(4)]
    assert [s["status"] for s in statuses] == ["running", "running", "failed", "failed"]
    assert statuses[2]["error"]["code"] == "job_failed"
    assert call(server, "GET", "/jobs/job_1/result").status_code == 409
    assert server.position == 0
    server.configure(job_polls_to_finish=1, job_outcome="succeeded")
    call(server, path="/jobs")
    assert call(server, "GET", "/jobs/job_2").json()["status"] == "succeeded"


def test_cancel_confirms_and_a_lost_cancel_response_still_cancelled(make) -> None:
    server = make(DECISIONS)
    call(server, path="/jobs")
    confirmed = call(server, path="/jobs/job_1/cancel")
    assert confirmed.status_code == 200 and confirmed.json() == {
        "id": "job_1",
        "status": "canceled",
    }
    assert call(server, "GET", "/jobs/job_1").json()["status"] == "canceled"
    assert call(server, path="/jobs/job_1/cancel").json()["status"] == "canceled"  # idempotent
    assert call(server, "GET", "/jobs/job_1/result").status_code == 409
    call(server, path="/jobs")
    server.inject(Fault.drop_after_read(), on="cancel")
    with pytest.raises(httpx2.RemoteProtocolError):
        call(server, path="/jobs/job_2/cancel")
    assert server.jobs == {"job_1": "canceled", "job_2": "canceled"}
    assert server.position == 0 and server.cancels == 3


def test_job_faults_lose_responses_not_work(make) -> None:
    server = make(DECISIONS)
    server.inject(Fault.drop_after_read(), on="submit")
    with pytest.raises(httpx2.RemoteProtocolError):
        call(server, path="/jobs")
    assert server.submissions == 1 and server.jobs == {"job_1": "queued"}  # it was created
    server.inject(Fault.status(429, code="rate_limit"), on="poll")
    assert call(server, "GET", "/jobs/job_1").status_code == 429
    assert server.jobs == {"job_1": "queued"}  # refused: not advanced
    server.inject(Fault.hang(30), on="poll")
    with pytest.raises(httpx2.ReadTimeout):
        call(server, "GET", "/jobs/job_1", read=0.1)
    assert call(server, "GET", "/jobs/job_1").json()["status"] == "succeeded"
    server.inject(Fault.status(500), Fault.truncated_body(), on="fetch")
    assert call(server, "GET", "/jobs/job_1/result").status_code == 500
    with pytest.raises(httpx2.RemoteProtocolError):
        call(server, "GET", "/jobs/job_1/result")
    assert decided(call(server, "GET", "/jobs/job_1/result")) == DECISIONS[0]
    assert server.position == 1 and server.fetches == 3 and server.polls == 3


def test_idempotency_keys_replay_the_first_answer(make) -> None:
    server = make(DECISIONS, honours_idempotency=True)
    key = {"Idempotency-Key": "step-1"}
    first, replayed = call(server, headers=key), call(server, headers=key)
    assert replayed.json() == first.json() and decided(first) == DECISIONS[0]
    assert server.submissions == 1 and server.replays == 1 and server.position == 1
    assert [r.replay for r in server.requests] == [False, True]
    other = {"model": "m", "messages": [{"role": "user", "content": "else"}]}
    mismatch = call(server, json=other, headers=key)
    assert mismatch.status_code == 422
    assert mismatch.json()["error"]["code"] == "idempotency_key_reused"
    # A lost answer saved under its key is replayed, not regenerated or skipped.
    server.inject(Fault.drop_after_read())
    with pytest.raises(httpx2.RemoteProtocolError):
        call(server, headers={"Idempotency-Key": "step-2"})
    assert decided(call(server, headers={"Idempotency-Key": "step-2"})) == json.loads(DECISIONS[1])
    assert decided(call(server)) == DECISIONS[2]
    # A refused request saves nothing: the same key then submits afresh.
    server.inject(Fault.status(429))
    assert call(server, headers={"Idempotency-Key": "step-4"}).status_code == 429
    assert decided(call(server, headers={"Idempotency-Key": "step-4"})) == ABSTAIN
    assert server.submissions == 5 and server.replays == 3
    # Jobs: a lost submit response, then the same key, is the same job.
    server.inject(Fault.drop_after_read(), on="submit")
    with pytest.raises(httpx2.RemoteProtocolError):
        call(server, path="/jobs", headers={"Idempotency-Key": "job-a"})
    again = call(server, path="/jobs", headers={"Idempotency-Key": "job-a"})
    assert again.status_code == 202 and again.json()["id"] == "job_1"
    assert list(server.jobs) == ["job_1"]


def test_without_idempotency_a_repeated_key_is_a_new_submission(make) -> None:
    server = make(DECISIONS)
    key = {"Idempotency-Key": "step-1"}
    assert decided(call(server, headers=key)) == DECISIONS[0]
    assert decided(call(server, headers=key)) == json.loads(DECISIONS[1])
    assert server.submissions == 2 and server.replays == 0


def test_requests_are_kept_for_assertions_and_reasoning_replay_can_be_required(make) -> None:
    server = make(DECISIONS, reasoning="because", require_reasoning_replay=True)
    reply = message(call(server))
    tool_call = reply["tool_calls"][0]
    result = {"role": "tool", "tool_call_id": tool_call["id"], "content": '{"ok": true}'}
    forgot = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
    refused = call(server, json={"model": "m", "messages": [*BODY["messages"], forgot, result]})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == (
        "Missing `reasoning_content` field in the assistant message at message index 1"
    )
    replayed = {**forgot, "reasoning_content": reply["reasoning_content"]}
    body = {"model": "m", "messages": [*BODY["messages"], replayed, result]}
    assert decided(call(server, json=body)) == json.loads(DECISIONS[1])
    sent = server.requests[-1].body["messages"]
    assert sent[1]["reasoning_content"] == "because"
    assert sent[2]["tool_call_id"] == sent[1]["tool_calls"][0]["id"] == "call_1"
    assert server.requests[-1].path == "/v1/chat/completions"
    assert server.requests[-1].endpoint == "chat" and server.requests[-1].seq == 3


def want(index: int) -> Any:
    d = DECISIONS[index]
    return json.loads(d) if isinstance(d, str) else d


def test_reasoning_under_another_name_and_its_replay_rule(make) -> None:
    # vLLM >= 0.11 and Ollama name it `reasoning`: the fake says it so and checks that name.
    server = make(DECISIONS, reasoning="hmm", reasoning_field="reasoning")
    server.configure(require_reasoning_replay=True)
    reply = message(call(server))
    assert reply["reasoning"] == "hmm" and "reasoning_content" not in reply
    tool_call = reply["tool_calls"][0]
    result = {"role": "tool", "tool_call_id": tool_call["id"], "content": "{}"}
    wrong = {
        "role": "assistant",
        "content": "",
        "tool_calls": [tool_call],
        "reasoning_content": "x",
    }
    refused = call(server, json={"model": "m", "messages": [*BODY["messages"], wrong, result]})
    assert refused.status_code == 400 and "`reasoning`" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("choice", "thinking", "refused"),
    [
        ("required", None, True),
        ({"type": "function", "function": {"name": "aira_step"}}, {"type": "enabled"}, True),
        ("auto", None, False),
        ("none", None, False),
        ("required", {"type": "disabled"}, False),
    ],
)
def test_a_forced_tool_choice_is_refused_in_thinking_mode(make, choice, thinking, refused) -> None:
    server = make(DECISIONS, refuse_forced_tool_choice=True)
    body: dict[str, Any] = {**BODY, "tools": [{"type": "function"}], "tool_choice": choice}
    if thinking is not None:
        body["thinking"] = thinking
    answer = call(server, json=body)
    if refused:
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert (error["message"], error["param"]) == (
            "Thinking mode does not support this tool_choice",
            "tool_choice",
        )
        assert server.position == 0  # refused before any work
    else:
        assert decided(answer) == want(0)


def test_auto_mode_follows_the_request_and_the_beta_path_answers(make) -> None:
    server = make(DECISIONS, mode="auto")
    assert decided(call(server, json={**BODY, "tools": [{"type": "function"}]})) == want(0)
    text = message(call(server, "POST", "/beta/chat/completions"))["content"]
    assert json.loads(text) == want(1)
    assert server.requests[-1].path == "/v1/beta/chat/completions"
    assert call(server, "POST", "/beta/jobs").status_code == 404


def test_bad_requests_are_answered_and_counted(make) -> None:
    server = make(DECISIONS)
    not_json = call(server, content=b"{nope", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "invalid_body"
    no_model = call(server, json={"messages": BODY["messages"]})
    assert no_model.status_code == 400 and no_model.json()["error"]["param"] == "model"
    no_messages = call(server, json={"model": "m", "messages": []})
    assert no_messages.status_code == 400
    assert server.submissions == 3 and server.requests[0].body is None
    assert call(server, "GET", "/chat/completions").status_code == 404
    assert call(server, "GET", "/models").status_code == 404
    assert server.submissions == 3 and len(server.requests) == 3  # routes it lacks: not counted
    assert server.position == 0 and server.errors == []


def test_concurrent_requests_each_take_one_decision(make) -> None:
    decisions = [{"act": "note", "text": str(i)} for i in range(6)]
    server = make(decisions)
    answers: list[httpx2.Response] = []
    threads = [threading.Thread(target=lambda: answers.append(call(server))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    got = sorted((decided(a) for a in answers), key=lambda d: d["text"])
    assert got == decisions
    ids = {a.json()["choices"][0]["message"]["tool_calls"][0]["id"] for a in answers}
    assert ids == {f"call_{i}" for i in range(1, 7)}
    assert server.submissions == 6 and server.position == 6


def test_stop_ends_every_connection_and_thread() -> None:
    before = set(threading.enumerate())
    server = FakeProviderServer(DECISIONS)
    with pytest.raises(RuntimeError, match="not running"):
        server.base_url  # noqa: B018
    server.start()
    try:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        with pytest.raises(RuntimeError, match="already running"):
            server.start()
        # An idle keep-alive connection and a hanging request are both open when it stops.
        idle = httpx2.Client(base_url=server.base_url, timeout=2.0, verify=False)
        assert idle.post("/chat/completions", json=BODY).status_code == 200
        server.inject(Fault.hang(30))
        failures: list[Exception] = []

        def hang() -> None:
            try:
                call(server)
            except httpx2.HTTPError as exc:  # the connection ends when the server stops
                failures.append(exc)

        hung = threading.Thread(target=hang)
        hung.start()
        deadline = time.monotonic() + 2
        while server.counts["chat"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(set(threading.enumerate()) - before) >= 3  # serve, idle, hung (+ client)
    finally:
        started = time.monotonic()
        server.stop()
    assert time.monotonic() - started < 1
    hung.join(2)
    idle.close()
    assert len(failures) == 1
    assert set(threading.enumerate()) - before == set()
    server.stop()  # idempotent
    with pytest.raises(RuntimeError):
        server.base_url  # noqa: B018
    with server:  # a stopped server starts again, on a new port, keeping its counts
        assert decided(call(server)) == json.loads(DECISIONS[1])
        assert server.submissions == 3
    assert set(threading.enumerate()) - before == set()


def test_the_fixture_yields_a_started_server(fake_provider: FakeProviderServer) -> None:
    assert decided(call(fake_provider)) == ABSTAIN  # no decisions yet
    fake_provider.configure(decisions=DECISIONS, mode="json", api_key="k")
    answer = call(fake_provider, headers={"Authorization": "Bearer k"})
    assert json.loads(message(answer)["content"]) == DECISIONS[0]
    assert fake_provider.position == 1


def test_a_failure_inside_the_fake_is_a_500_and_recorded(make) -> None:
    def reasoning(index: int) -> str:
        raise RuntimeError("the reasoning callable broke")

    server = make(DECISIONS, reasoning=reasoning)
    answer = call(server)
    assert answer.status_code == 500 and answer.json()["error"]["code"] == "fake_error"
    assert len(server.errors) == 1 and "the reasoning callable broke" in server.errors[0]
    assert server.position == 0


@pytest.mark.parametrize(
    ("make_bad", "error", "match"),
    [
        (lambda: FakeProviderServer(mode="xml"), ValueError, "mode is"),
        (lambda: FakeProviderServer(DECISIONS[0]), TypeError, "not one decision"),
        (lambda: FakeProviderServer([42]), TypeError, "dict or a JSON string"),
        (lambda: FakeProviderServer([{"x": {1, 2}}]), ValueError, "JSON-serialisable"),
        (lambda: FakeProviderServer(reasoning=3), TypeError, "reasoning is"),
        (lambda: FakeProviderServer(api_key=""), ValueError, "api_key"),
        (lambda: FakeProviderServer(job_polls_to_finish=0), ValueError, "at least 1"),
        (lambda: FakeProviderServer(job_outcome="canceled"), ValueError, "job_outcome"),
        (lambda: Fault.status(99), ValueError, "200 to 599"),
        (lambda: Fault.blank_lines(-1), ValueError, "count"),
        (lambda: Fault.hang(-1), ValueError, "seconds"),
        (lambda: Fault("explode"), ValueError, "unknown fault kind"),
    ],
)
def test_bad_options_are_refused_with_a_clear_message(make_bad, error, match) -> None:
    with pytest.raises(error, match=match):
        make_bad()


def test_a_refused_configure_changes_nothing(make) -> None:
    server = make(DECISIONS)
    with pytest.raises(ValueError):
        server.configure(decisions=[{"act": "done"}], mode="xml")
    assert decided(call(server)) == DECISIONS[0]
