"""A FAKE provider client for the job mode of
:class:`~aira_core.testing.provider.FakeProviderServer`: the gateway's asynchronous path
(submit → remote id, poll, fetch, cancel) driven over real HTTP against Aira's own fake job
protocol. For tests only; no real provider speaks it.

It is :class:`~aira_core.gateway.openai_compat.OpenAICompatProvider` (the same request, the
same reply parsing) with ``jobs`` on: a plugin author whose service has a job API writes the
same four methods against that API, on :mod:`aira_core.gateway.http`.
"""

from __future__ import annotations

from typing import Any

from aira_core.extensions import (
    Acceptance,
    PreparedCall,
    ProviderError,
    ProviderResponse,
)
from aira_core.gateway import http
from aira_core.gateway.openai_compat import OpenAICompatProvider

JOB_STATES = ("queued", "running", "succeeded", "failed", "canceled")


class FakeJobProvider(OpenAICompatProvider):
    """The fake's job protocol as a provider (``jobs = True``); ``idempotency`` as the fake
    server was configured (``honours_idempotency``)."""

    jobs = True

    def __init__(self, *args: Any, idempotency: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.idempotency = idempotency

    def _headers(self, call: PreparedCall | None = None) -> dict[str, str]:
        headers = dict(call.headers) if call is not None else {"Accept": "application/json"}
        if call is None and self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        if call is not None and call.idempotency_key and self.idempotency:
            headers["Idempotency-Key"] = call.idempotency_key
        return headers

    def submit(self, call: PreparedCall, *, deadline: float) -> str:
        response = http.post_json(
            f"{self.base_url}/jobs",
            call.body,
            self._headers(call),
            deadline=deadline,
            timeouts=self.timeouts,
            table=self.acceptance,
            stage="submit",
            client=self.client,
            content=call.content,
        )
        job = response.body.get("id")
        if not isinstance(job, str) or not job:
            # a 2xx was answered: the job may exist, but we cannot name it
            raise ProviderError(
                "PROVIDER_REPLY_INVALID",
                "the job submit was answered without a job id",
                stage="submit",
                category="body",
                acceptance=Acceptance.UNKNOWN,
            )
        return job

    def poll(self, remote_id: str, *, deadline: float) -> str:
        response = self._get(f"jobs/{remote_id}", "poll", deadline)
        state = response.body.get("status")
        return state if state in JOB_STATES else "unknown"

    def fetch(self, remote_id: str, *, deadline: float) -> ProviderResponse:
        return self._get(f"jobs/{remote_id}/result", "fetch", deadline)

    def cancel(self, remote_id: str, *, deadline: float) -> bool:
        response = http.post_json(
            f"{self.base_url}/jobs/{remote_id}/cancel",
            {},
            self._headers(),
            deadline=deadline,
            timeouts=self.timeouts,
            table=self.acceptance,
            stage="cancel",
            client=self.client,
        )
        return response.body.get("status") == "canceled"

    def _get(self, path: str, stage: str, deadline: float) -> ProviderResponse:
        return http.get_json(
            f"{self.base_url}/{path}",
            self._headers(),
            deadline=deadline,
            timeouts=self.timeouts,
            table=self.acceptance,
            stage=stage,
            client=self.client,
        )
