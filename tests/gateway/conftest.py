"""What the gateway tests share: the loopback fake provider, a ledger in tmp_path, a step
request, providers pointed at the fake (synchronous and job mode) and gateways on them."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aira_core.extensions import AcceptanceTable, BudgetsLeft, StepRequest
from aira_core.gateway.gateway import Gateway, Route, WatchPolicy
from aira_core.gateway.http import Timeouts
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import ToolTransport
from aira_core.testing.jobs import FakeJobProvider
from aira_core.testing.provider import FakeProviderServer

FAST = Timeouts(connect=1.0, read=1.0, write=1.0, pool=1.0)
"""Short limits: a fault that waits is a read timeout within a second."""

REFUSALS = AcceptanceTable(
    provider="fake",
    refusals={
        400: "Invalid Format",
        401: "Authentication Fails",
        402: "Insufficient Balance",
        422: "Invalid Parameters",
        429: "Rate Limit Reached",
    },
    source="https://api-docs.deepseek.com/quick_start/error_codes",
)
"""A documented table as a provider plugin gives one (DeepSeek's refusals before processing,
peers.md §3): these statuses are not_accepted, every other one unknown."""

DECISIONS = [
    {"act": "lookup", "query": "box plate block"},
    {"act": "note", "note": "a plate"},
    {"act": "abstain", "reason": "enough"},
]


def step_request(step: int = 0, *, task: str = "t1") -> StepRequest:
    return StepRequest(
        task_id=task,
        step=step,
        call_id=f"aira_s{step}",
        tier="T32",
        capsule="aira.step/1; a small capsule for the gateway tests",
        log=(),
        schema={"type": "object", "properties": {"act": {"type": "string"}}},
        budgets=BudgetsLeft(steps=10, input_tokens=10_000, output_tokens=1_000, usd=1.0),
    )


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def servers() -> Iterator[Callable[..., FakeProviderServer]]:
    """Start fakes on demand (``servers(decisions, mode=…)``); every one is stopped."""
    started: list[FakeProviderServer] = []

    def start(decisions: Any = DECISIONS, **options: Any) -> FakeProviderServer:
        server = FakeProviderServer(decisions, **options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[AttemptLedger]:
    opened = AttemptLedger.open(tmp_path / "gateway.sqlite3")
    yield opened
    opened.close()


def provider(
    fake: FakeProviderServer | None,
    name: str = "fake",
    *,
    jobs: bool = False,
    api_key: str | None = None,
    idempotency: bool = False,
    table: AcceptanceTable = REFUSALS,
    base_url: str | None = None,
) -> OpenAICompatProvider:
    url = base_url or (fake.base_url if fake is not None else "")
    options: dict[str, Any] = {
        "api_key": api_key,
        "acceptance": AcceptanceTable(name, table.refusals, table.source),
        "timeouts": FAST,
    }
    if jobs:
        return FakeJobProvider(name, url, ["m1"], idempotency=idempotency, **options)
    return OpenAICompatProvider(name, url, ["m1"], **options)


def make_gateway(
    ledger: AttemptLedger,
    *providers: OpenAICompatProvider,
    task: str | None = None,
    deadline_s: float = 3.0,
    max_failures: int = 3,
) -> Gateway:
    task_id = task or ledger.create_task({"intent": "a gateway test"}).id
    return Gateway(
        [Route(p, p.models[0]) for p in providers],
        ledger,
        task_id,
        ToolTransport(),
        deadline_s=deadline_s,
        watch=WatchPolicy(interval_s=0.0, max_failures=max_failures),
        sleep=lambda _s: None,
    )


# -- the OCCT kernel, for the tests that run the demo's tasks ---------------------------------


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    """One OCCT kernel (a warm worker process) per test module."""
    pytest.importorskip("cadquery")
    from aira_kernel_occt.kernel import OcctKernel

    k = OcctKernel()
    try:
        yield k
    finally:
        k.close()


@pytest.fixture
def occt(register_plugin: Any) -> None:
    """The first-party kernel plugin registered in-process, so the production catalog has it."""
    pytest.importorskip("cadquery")
    import aira_kernel_occt.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")
