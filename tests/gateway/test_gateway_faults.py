"""The fault matrix of spec 002 §12, and more, through the real gateway, the real ledger and
the loopback fake over real HTTP. Every case asserts the final facts in the ledger AND how
many submissions the fake received: an accepted or unknown attempt is never resubmitted
automatically (the count says so), and failover happens on not_accepted and nothing else."""

from __future__ import annotations

import time
from typing import Any

import pytest

from aira_core.diagnostics import AiraError
from aira_core.extensions import Acceptance
from aira_core.gateway.facts import (
    CancelState,
    DeliveryState,
    HumanState,
    LegacyStatus,
    Outcome,
    Phase,
    WatchState,
)
from aira_core.gateway.gateway import GatewayPaused, cancel
from aira_core.gateway.ledger import AttemptLedger
from aira_core.testing.provider import Fault
from gateway.conftest import (
    REFUSALS,
    closed_port,
    make_gateway,
    provider,
    step_request,
)


def only_attempt(ledger: AttemptLedger, gateway: Any) -> Any:
    (attempt,) = ledger.attempts(gateway.task_id)
    return attempt


# -- before sending ----------------------------------------------------------------------------


def test_a_refused_connection_is_not_accepted_and_the_next_route_answers(servers, ledger) -> None:
    fake = servers()
    down = provider(None, "down", base_url=f"http://127.0.0.1:{closed_port()}/v1")
    gw = make_gateway(ledger, down, provider(fake))
    reply = gw.decide(step_request())
    first, second = ledger.attempts(gw.task_id)
    assert (first.model, first.acceptance, first.error["category"]) == (
        "down::m1",
        Acceptance.NOT_ACCEPTED,
        "connect",
    )
    assert (second.model, second.ordinal, second.delivery_state) == (
        "fake::m1",
        2,
        DeliveryState.READY,
    )
    assert reply.provider == "fake" and fake.submissions == 1


def test_a_request_refused_while_preparing_sends_nothing(servers, ledger) -> None:
    fake = servers()
    wrong = provider(fake, "wrong")
    gw = make_gateway(ledger, wrong)
    gw.routes = (type(gw.routes[0])(wrong, "no-such-model"),)
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    assert err.value.code == "GATEWAY_ALL_REFUSED"
    attempt = only_attempt(ledger, gw)
    assert (attempt.acceptance, attempt.error["stage"], fake.submissions) == (
        Acceptance.NOT_ACCEPTED,
        "prepare",
        0,
    )


# -- the submission ----------------------------------------------------------------------------


def test_a_lost_submit_response_is_unknown_and_never_sent_again(servers, ledger) -> None:
    fake, other = servers(), servers()
    fake.inject(Fault.drop_after_read())
    gw = make_gateway(ledger, provider(fake), provider(other, "other"))
    for _ in range(2):  # asking again (a resumed run) pauses again: nothing is sent
        with pytest.raises(GatewayPaused) as err:
            gw.decide(step_request())
        assert err.value.code == "ATTEMPT_UNKNOWN"
    attempt = only_attempt(ledger, gw)
    assert (attempt.acceptance, attempt.outcome) == (Acceptance.UNKNOWN, Outcome.UNKNOWN)
    task = ledger.task(gw.task_id)
    assert (task.human_state, task.status) == (
        HumanState.NEEDS_CONFIRMATION,
        LegacyStatus.RUNNING,
    )
    assert (fake.submissions, other.submissions) == (1, 0)


def test_blank_keep_alive_lines_cannot_hold_a_call_past_its_deadline(servers, ledger) -> None:
    fake = servers()
    fake.inject(Fault.blank_lines(count=200, interval_s=0.02))  # 4 s of "still working"
    gw = make_gateway(ledger, provider(fake), deadline_s=0.5)
    started = time.monotonic()
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    assert time.monotonic() - started < 1.5
    attempt = only_attempt(ledger, gw)
    assert err.value.code == "ATTEMPT_UNKNOWN" and attempt.acceptance == Acceptance.UNKNOWN
    assert attempt.error["code"] == "PROVIDER_DEADLINE" and fake.submissions == 1


def test_a_2xx_whose_body_cannot_be_read_is_accepted_and_undelivered(servers, ledger) -> None:
    fake, other = servers(), servers()
    fake.inject(Fault.status(200, body="<html>not json</html>"))
    gw = make_gateway(ledger, provider(fake), provider(other, "other"))
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    attempt = only_attempt(ledger, gw)
    assert err.value.code == "ATTEMPT_UNDELIVERED"
    assert (attempt.acceptance, attempt.outcome, attempt.delivery_state) == (
        Acceptance.ACCEPTED,
        Outcome.SUCCEEDED,
        DeliveryState.FAILED,
    )
    assert ledger.task(gw.task_id).human_state == HumanState.AWAITING_DELIVERY
    assert (fake.submissions, other.submissions) == (1, 0)


def test_malformed_tool_arguments_are_delivered_for_the_host_to_reject(servers, ledger) -> None:
    # The provider answered (and charged): the reply is kept as it came; the grammar, not
    # the gateway, refuses it, and the model gets the rejection in the next step.
    fake = servers()
    fake.inject(Fault.malformed_arguments("{'act': 'done'"))  # no bracket puts this right
    gw = make_gateway(ledger, provider(fake))
    reply = gw.decide(step_request())
    assert only_attempt(ledger, gw).delivery_state == DeliveryState.READY
    with pytest.raises(ValueError):
        __import__("json").loads(reply.text)
    assert reply.repairs == () and fake.submissions == 1


def test_a_dropped_closing_bracket_is_restored_and_counted(servers, ledger) -> None:
    fake = servers()
    fake.inject(Fault.malformed_arguments())  # the decision with its last "}" dropped
    gw = make_gateway(ledger, provider(fake))
    reply = gw.decide(step_request())
    assert isinstance(__import__("json").loads(reply.text), dict)
    assert reply.repairs == ("brackets-restored",)
    assert only_attempt(ledger, gw).reply["repairs"] == ["brackets-restored"]


def test_a_delivered_step_is_answered_from_the_ledger(servers, ledger) -> None:
    fake = servers()
    gw = make_gateway(ledger, provider(fake))
    first = gw.decide(step_request())
    again = make_gateway(ledger, provider(fake), task=gw.task_id).decide(step_request())
    assert again == first and fake.submissions == 1


# -- failover, row by row ------------------------------------------------------------------

ROWS = [
    # (what the first provider does, acceptance, does the second provider get the step?)
    (Fault.status(400, code="invalid_request_error"), Acceptance.NOT_ACCEPTED, True),
    (Fault.status(401, code="invalid_api_key"), Acceptance.NOT_ACCEPTED, True),
    (Fault.status(402, code="insufficient_balance"), Acceptance.NOT_ACCEPTED, True),
    (Fault.status(422, code="invalid_parameters"), Acceptance.NOT_ACCEPTED, True),
    (Fault.status(429, code="rate_limit"), Acceptance.NOT_ACCEPTED, True),
    (Fault.status(500, code="server_error"), Acceptance.UNKNOWN, False),
    (Fault.status(503, code="overloaded"), Acceptance.UNKNOWN, False),
    (Fault.status(404, code="not_found"), Acceptance.UNKNOWN, False),
    (Fault.status(418), Acceptance.UNKNOWN, False),
    (Fault.drop_after_read(), Acceptance.UNKNOWN, False),
    (Fault.hang(3.0), Acceptance.UNKNOWN, False),
    (Fault.truncated_body(), Acceptance.UNKNOWN, False),
    (Fault.status(200, body="not json"), Acceptance.ACCEPTED, False),
]


@pytest.mark.parametrize(("fault", "acceptance", "fails_over"), ROWS, ids=lambda v: str(v)[:40])
def test_failover_happens_on_not_accepted_and_on_nothing_else(
    servers, ledger, fault: Fault, acceptance: Acceptance, fails_over: bool
) -> None:
    first, second = servers(), servers()
    first.inject(fault)
    gw = make_gateway(ledger, provider(first), provider(second, "second"), deadline_s=2.0)
    if fails_over:
        assert gw.decide(step_request()).provider == "second"
    else:
        with pytest.raises(GatewayPaused):
            gw.decide(step_request())
    attempts = ledger.attempts(gw.task_id)
    assert attempts[0].acceptance == acceptance
    assert (first.submissions, second.submissions) == (1, 1 if fails_over else 0)
    assert len(attempts) == (2 if fails_over else 1)


def test_the_same_status_is_unknown_without_a_documented_table(servers, ledger) -> None:
    # 429 is a refusal only because the provider's documentation says so.
    from aira_core.extensions import AcceptanceTable

    first, second = servers(), servers()
    first.inject(Fault.status(429, code="rate_limit"))
    bare = provider(first, table=AcceptanceTable("fake"))
    gw = make_gateway(ledger, bare, provider(second, "second"))
    with pytest.raises(GatewayPaused):
        gw.decide(step_request())
    assert ledger.attempts(gw.task_id)[0].acceptance == Acceptance.UNKNOWN
    assert (first.submissions, second.submissions) == (1, 0)
    assert REFUSALS.refusals[429]  # and with the table it is refused (ROWS above)


def test_every_route_refusing_pauses_with_nothing_charged(servers, ledger) -> None:
    a, b = servers(), servers()
    a.inject(Fault.status(401))
    b.inject(Fault.status(429))
    gw = make_gateway(ledger, provider(a, "a"), provider(b, "b"))
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    assert err.value.code == "GATEWAY_ALL_REFUSED"
    assert "a::m1" in err.value.diagnostic.message and "b::m1" in err.value.diagnostic.message
    assert [x.acceptance for x in ledger.attempts(gw.task_id)] == [Acceptance.NOT_ACCEPTED] * 2
    assert ledger.task(gw.task_id).phase == Phase.TERMINAL
    # refused before processing: a resumed run may try again, and this time it is answered
    assert make_gateway(ledger, provider(a, "a"), task=gw.task_id).decide(step_request())
    assert (a.submissions, b.submissions) == (2, 1)


# -- informed retry ----------------------------------------------------------------------------


def test_only_an_informed_retry_submits_an_unknown_step_again(servers, ledger) -> None:
    fake = servers()
    fake.inject(Fault.drop_after_read())
    gw = make_gateway(ledger, provider(fake))
    with pytest.raises(GatewayPaused):
        gw.decide(step_request())
    new = ledger.informed_retry(gw.task_id)
    reply = make_gateway(ledger, provider(fake), task=gw.task_id).decide(step_request())
    assert reply.text and fake.submissions == 2
    old = ledger.task(gw.task_id)
    assert (old.handled_by_retry, old.acceptance) == (new.id, Acceptance.UNKNOWN)
    assert ledger.task(new.id).retry_of == gw.task_id
    assert ledger.attempts(new.id)[0].delivery_state == DeliveryState.READY


def test_a_retry_carries_the_steps_idempotency_key_and_is_not_charged_twice(
    servers, ledger
) -> None:
    fake = servers(honours_idempotency=True)
    fake.inject(Fault.drop_after_read(), on="submit")  # the job is made; its id is lost
    jobs = provider(fake, jobs=True, idempotency=True)
    gw = make_gateway(ledger, jobs)
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    assert err.value.code == "ATTEMPT_UNKNOWN"
    ledger.informed_retry(gw.task_id)
    reply = make_gateway(ledger, jobs, task=gw.task_id).decide(step_request())
    keys = {a.idempotency_key for t in ledger.chain(gw.task_id) for a in ledger.attempts(t.id)}
    assert len(keys) == 1 and None not in keys
    assert reply.text and (fake.submissions, fake.replays) == (1, 1)


# -- the job path ----------------------------------------------------------------------------


def test_a_job_is_submitted_once_watched_and_delivered(servers, ledger) -> None:
    fake = servers(job_polls_to_finish=3)
    gw = make_gateway(ledger, provider(fake, jobs=True))
    reply = gw.decide(step_request())
    attempt = only_attempt(ledger, gw)
    assert attempt.remote_id and reply.text
    assert (attempt.acceptance, attempt.outcome, attempt.delivery_state, attempt.watch_state) == (
        Acceptance.ACCEPTED,
        Outcome.SUCCEEDED,
        DeliveryState.READY,
        WatchState.IDLE,
    )
    assert (fake.submissions, fake.polls, fake.fetches) == (1, 3, 1)


def test_remote_id_received_then_local_persistence_fails(servers, ledger, monkeypatch) -> None:
    fake = servers()
    gw = make_gateway(ledger, provider(fake, jobs=True))
    real = ledger.update_attempt

    def disk_full(attempt_id: str, **changes: Any) -> Any:
        if "remote_id" in changes:
            raise AiraError("LEDGER_UNAVAILABLE", "database or disk is full")
        return real(attempt_id, **changes)

    monkeypatch.setattr(ledger, "update_attempt", disk_full)
    with pytest.raises(AiraError) as err:
        gw.decide(step_request())
    assert err.value.code == "LEDGER_UNAVAILABLE"
    monkeypatch.setattr(ledger, "update_attempt", real)
    # The job exists at the provider, but its id never reached the ledger: a resumed run
    # cannot watch it and must not submit again.
    with pytest.raises(GatewayPaused) as err:
        make_gateway(ledger, provider(fake, jobs=True), task=gw.task_id).decide(step_request())
    attempt = only_attempt(ledger, gw)
    assert err.value.code == "ATTEMPT_UNKNOWN"
    assert (attempt.acceptance, attempt.remote_id) == (Acceptance.UNKNOWN, None)
    assert fake.submissions == 1 and len(fake.jobs) == 1


@pytest.mark.parametrize(
    "fault",
    [Fault.status(429, code="rate_limit"), Fault.status(500), Fault.hang(3.0)],
    ids=["429", "500", "timeout"],
)
def test_failed_polls_change_only_the_watch_and_a_resume_watches_again(
    servers, ledger, fault: Fault
) -> None:
    fake = servers()
    jobs = provider(fake, jobs=True)
    fake.inject(*[fault] * 3, on="poll")
    gw = make_gateway(ledger, jobs, deadline_s=0.5, max_failures=3)
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    attempt = only_attempt(ledger, gw)
    assert err.value.code == "ATTEMPT_WATCH_EXHAUSTED"
    assert (attempt.acceptance, attempt.watch_state, attempt.outcome) == (
        Acceptance.ACCEPTED,
        WatchState.EXHAUSTED,
        Outcome.UNKNOWN,
    )
    assert ledger.task(gw.task_id).human_state == HumanState.WATCH_PAUSED
    reply = make_gateway(ledger, jobs, task=gw.task_id).decide(step_request())
    assert reply.text and only_attempt(ledger, gw).delivery_state == DeliveryState.READY
    assert fake.submissions == 1


def test_a_poll_failure_below_the_limit_is_only_a_watch_fact(servers, ledger) -> None:
    fake = servers()
    fake.inject(Fault.status(503), Fault.status(429, code="rate_limit"), on="poll")
    gw = make_gateway(ledger, provider(fake, jobs=True), max_failures=3)
    assert gw.decide(step_request()).text
    assert only_attempt(ledger, gw).outcome == Outcome.SUCCEEDED and fake.submissions == 1


def test_success_then_download_failure_fetches_again_without_regenerating(servers, ledger) -> None:
    fake = servers()
    jobs = provider(fake, jobs=True)
    fake.inject(Fault.status(500), on="fetch")
    gw = make_gateway(ledger, jobs)
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    attempt = only_attempt(ledger, gw)
    assert err.value.code == "ATTEMPT_UNDELIVERED"
    assert (attempt.outcome, attempt.delivery_state) == (Outcome.SUCCEEDED, DeliveryState.FAILED)
    assert ledger.task(gw.task_id).human_state == HumanState.AWAITING_DELIVERY
    reply = make_gateway(ledger, jobs, task=gw.task_id).decide(step_request())
    assert reply.text and only_attempt(ledger, gw).delivery_state == DeliveryState.READY
    assert (fake.submissions, fake.fetches) == (1, 2)


def test_a_job_the_provider_failed_is_failed_and_not_resubmitted(servers, ledger) -> None:
    fake, other = servers(job_outcome="failed"), servers()
    gw = make_gateway(ledger, provider(fake, jobs=True), provider(other, "other"))
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    assert err.value.code == "ATTEMPT_FAILED"
    task = ledger.task(gw.task_id)
    assert (task.outcome, task.status, task.human_state) == (
        Outcome.FAILED,
        LegacyStatus.FAILED,
        HumanState.FAILED,
    )
    assert (fake.submissions, other.submissions) == (1, 0)


# -- cancel --------------------------------------------------------------------------------


def _watching(servers: Any, ledger: AttemptLedger) -> tuple[Any, Any, Any]:
    """An accepted job whose watch was exhausted: remote, unfinished, cancelable."""
    fake = servers(job_polls_to_finish=50)
    jobs = provider(fake, jobs=True)
    fake.inject(*[Fault.status(500)] * 2, on="poll")
    gw = make_gateway(ledger, jobs, max_failures=2)
    with pytest.raises(GatewayPaused):
        gw.decide(step_request())
    return fake, jobs, only_attempt(ledger, gw)


def test_a_confirmed_cancel_is_remote_confirmed_and_canceled(servers, ledger) -> None:
    fake, jobs, attempt = _watching(servers, ledger)
    done = cancel(ledger, attempt.id, jobs)
    assert (done.cancel_state, done.outcome) == (CancelState.REMOTE_CONFIRMED, Outcome.CANCELED)
    assert ledger.task(done.task_id).human_state == HumanState.CANCELED
    assert fake.cancels == 1 and fake.submissions == 1


def test_a_lost_cancel_response_is_unknown_and_fakes_no_cancel(servers, ledger) -> None:
    fake, jobs, attempt = _watching(servers, ledger)
    fake.inject(Fault.drop_after_read(), on="cancel")
    done = cancel(ledger, attempt.id, jobs)
    assert done.cancel_state == CancelState.UNKNOWN and done.outcome != Outcome.CANCELED
    task = ledger.task(done.task_id)
    assert (task.human_state, task.status) == (HumanState.NEEDS_CONFIRMATION, LegacyStatus.RUNNING)
    assert fake.cancels == 1 and fake.submissions == 1


def test_a_failed_job_stays_failed_on_resume_without_a_poll(servers, ledger) -> None:
    fake = servers(job_outcome="failed")
    jobs = provider(fake, jobs=True)
    gw = make_gateway(ledger, jobs)
    with pytest.raises(GatewayPaused):
        gw.decide(step_request())
    polls = fake.polls
    with pytest.raises(GatewayPaused) as err:
        make_gateway(ledger, jobs, task=gw.task_id).decide(step_request())
    assert err.value.code == "ATTEMPT_FAILED"
    assert (fake.polls, fake.submissions) == (polls, 1)


# -- found in review ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault",
    [Fault.status(200, body={"foo": 1}), Fault.status(200)],
    ids=["2xx-json-not-a-completion", "2xx-error-body"],
)
def test_a_2xx_that_is_no_completion_is_accepted_succeeded_and_undelivered(
    servers, ledger, fault: Fault
) -> None:
    fake = servers()
    fake.inject(fault)
    gw = make_gateway(ledger, provider(fake))
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    attempt = only_attempt(ledger, gw)
    assert err.value.code == "ATTEMPT_UNDELIVERED"
    assert (attempt.acceptance, attempt.outcome, attempt.delivery_state, attempt.phase) == (
        Acceptance.ACCEPTED,
        Outcome.SUCCEEDED,
        DeliveryState.FAILED,
        Phase.TERMINAL,
    )
    assert fake.submissions == 1


def test_a_reply_with_a_lone_surrogate_is_delivered_cleaned(servers, ledger) -> None:
    # JSON may escape a lone surrogate ("\ud800"); decoded, it is a str UTF-8 cannot carry.
    completion = (
        '{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",'
        '"content":"{\\"act\\":\\"note\\",\\"note\\":\\"x\\ud800y\\"}"}}],'
        '"usage":{"prompt_tokens":1,"completion_tokens":1}}'
    )
    fake = servers()
    fake.inject(Fault.status(200, body=completion))
    gw = make_gateway(ledger, provider(fake))
    gw.transport = __import__("aira_core.gateway.transports", fromlist=["x"]).JsonTransport()
    reply = gw.decide(step_request())
    assert reply.text == '{"act":"note","note":"x?y"}'
    assert only_attempt(ledger, gw).delivery_state == DeliveryState.READY


def test_a_job_submit_answered_without_an_id_is_no_made_up_success(servers, ledger) -> None:
    fake = servers()
    fake.inject(Fault.status(200, body="<html>ok</html>"), on="submit")
    gw = make_gateway(ledger, provider(fake, jobs=True))
    with pytest.raises(GatewayPaused) as err:
        gw.decide(step_request())
    attempt = only_attempt(ledger, gw)
    assert err.value.code == "ATTEMPT_UNKNOWN"
    assert (attempt.acceptance, attempt.outcome, attempt.delivery_state) == (
        Acceptance.ACCEPTED,
        Outcome.UNKNOWN,
        DeliveryState.NONE,
    )
    assert ledger.task(gw.task_id).human_state == HumanState.NEEDS_CONFIRMATION
    assert fake.submissions == 1


def test_a_prepare_that_claims_unknown_is_still_a_refusal(servers, ledger, monkeypatch) -> None:
    from aira_core.extensions import ProviderError

    fake, other = servers(), servers()
    first = provider(fake)

    def claims(*_a: Any, **_k: Any) -> Any:
        raise ProviderError(
            "PROVIDER_REQUEST_INVALID", "no", stage="prepare", category="x", acceptance="unknown"
        )

    monkeypatch.setattr(first, "prepare", claims)
    gw = make_gateway(ledger, first, provider(other, "other"))
    assert gw.decide(step_request()).provider == "other"
    assert ledger.attempts(gw.task_id)[0].acceptance == Acceptance.NOT_ACCEPTED
    assert (fake.submissions, other.submissions) == (0, 1)


def test_a_finished_attempt_has_nothing_to_cancel(servers, ledger) -> None:
    fake = servers()
    jobs = provider(fake, jobs=True)
    gw = make_gateway(ledger, jobs)
    gw.decide(step_request())
    attempt = only_attempt(ledger, gw)
    with pytest.raises(AiraError) as err:
        cancel(ledger, attempt.id, jobs)
    assert err.value.code == "ATTEMPT_ENDED" and fake.cancels == 0
    assert ledger.attempt(attempt.id) == attempt
