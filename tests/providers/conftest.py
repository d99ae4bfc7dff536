"""What the provider tests share: a real OpenAI-compatible server, llama.cpp's own
(``xllamacpp``: the server in-process, CPU), serving a tiny random-weight model the session
writes (:mod:`tiny_gguf`; no download, nothing committed).

``llamacpp_server`` is session-scoped (a start costs a fraction of a second, but the model
file and the server are the same for every test) and stopped at the end. Without
``xllamacpp`` (it is in the ``test`` extra, so CI has it) every test using it is skipped,
saying why.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gateway.conftest import kernel, ledger, occt, servers  # noqa: F401 (shared fixtures)

LLAMACPP_MODEL = "aira-tiny-random"
"""The name the server answers to (llama.cpp serves one model, whatever a request names)."""
LLAMACPP_CONTEXT = 131_072
"""Tokens of context: a prompt of this vocabulary may take a token per byte, and B of the
largest tier the tests use (T32: 24 000 host tokens) is 96 000 bytes."""
LLAMACPP_MAX_TOKENS = 1024
"""The server's own cap on one answer (a request may ask for fewer)."""
LLAMACPP_SEED = 20_261_202
"""Sampling seed: the same prompt gets the same answer."""


@dataclass
class LlamaCppServer:
    """A running llama.cpp server: ``base_url`` is ``http://127.0.0.1:PORT/v1``, ``model``
    the name to route to (``openai::<model>`` with the base URL in a table)."""

    base_url: str
    model: str
    model_path: Path
    _server: Any = None

    def stop(self) -> None:
        """Stop the server (xllamacpp stops it when the object is released) and wait."""
        self._server = None


def _wait_healthy(root: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{root}/health", timeout=2) as answer:
                if json.load(answer).get("status") == "ok":
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama.cpp's server at {root} did not become healthy")
        time.sleep(0.1)


@pytest.fixture(scope="session")
def llamacpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    xlc = pytest.importorskip(
        "xllamacpp", reason="xllamacpp (llama.cpp's server; the test extra) is not installed"
    )
    pytest.importorskip("gguf", reason="gguf (the test extra) is not installed")
    from .tiny_gguf import write_tiny_gguf

    path = write_tiny_gguf(tmp_path_factory.mktemp("llamacpp") / "tiny.gguf")
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.model_alias = {LLAMACPP_MODEL}
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port, chosen by the server
    params.n_parallel = 1
    params.n_ctx = LLAMACPP_CONTEXT
    params.n_predict = LLAMACPP_MAX_TOKENS
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 2
    params.sampling.seed = LLAMACPP_SEED
    params.use_jinja = True
    # measured faster on 2 busy cores for a 15k-token prompt (12 s against 18 s)
    params.flash_attn_type = xlc.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED
    params.verbosity = 0
    server = xlc.Server(params)
    root = server.listening_address.rstrip("/")
    running = LlamaCppServer(f"{root}/v1", LLAMACPP_MODEL, path, server)
    del server  # the one reference is the running server's: stop() releases it
    try:
        _wait_healthy(root)
        yield running
    finally:
        running.stop()
