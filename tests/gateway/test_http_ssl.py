"""The one HTTP call builds no SSL context per call: loading the CA bundle costs ~40 ms, more
than the gateway's whole overhead per step (benchmarks/bench_gateway_overhead.py). One per
process, per SSL_CERT_FILE / SSL_CERT_DIR, which httpx2 honours."""

from __future__ import annotations

import os
import ssl
import time
from typing import Any

import httpx2
import pytest

from aira_core.extensions import AcceptanceTable, ProviderError
from aira_core.gateway import http

from .conftest import FAST, closed_port


def refused_call(port: int) -> str:
    with pytest.raises(ProviderError) as refused:
        http.post_json(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            {"model": "m1"},
            {},
            deadline=time.monotonic() + 2.0,
            timeouts=FAST,
            table=AcceptanceTable("fake"),
        )
    return refused.value.code


def test_calls_share_one_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []
    real = httpx2.create_ssl_context

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(httpx2, "create_ssl_context", counting)
    monkeypatch.setattr(http, "_SSL_CONTEXTS", {})
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    port = closed_port()
    codes = {refused_call(port) for _ in range(3)}
    assert codes == {http.PROVIDER_CONNECT_FAILED}
    assert len(made) == 1  # three calls, one context
    assert http._ssl_context() is made[0]


def test_another_ca_bundle_gets_its_own_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http, "_SSL_CONTEXTS", {})
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    default = http._ssl_context()
    bundle = ssl.get_default_verify_paths().openssl_cafile
    if not bundle or not os.path.isfile(bundle):
        pytest.skip("no CA bundle file on this system")
    monkeypatch.setenv("SSL_CERT_FILE", bundle)
    chosen = http._ssl_context()
    assert chosen is not default and http._ssl_context() is chosen
