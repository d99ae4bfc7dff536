"""Test-session setup. The hermetic plugin fixtures come from ``aira_core.testing``, which
pytest loads through aira-core's ``pytest11`` entry point."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cli_runner
import pytest
from cli_runner import RunAira


@pytest.fixture(autouse=True, scope="session")
def _session_aira_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One AIRA_CACHE for the session: derived data (the sentence model's arrays, ~85 MB;
    built indexes) is written once, not once per test home. Tests of the cache itself set
    their own."""
    cache = tmp_path_factory.mktemp("aira-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRA_CACHE", str(cache))
        yield cache


@pytest.fixture(autouse=True)
def _isolated_aira_home(aira_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the developer's trust store or catalog state, and no
    ``aira`` subprocess loads an installed plugin the test did not name in AIRA_PLUGINS."""
    monkeypatch.setenv("AIRA_PLUGINS", "")
    return aira_home


@pytest.fixture
def aira() -> RunAira:
    """``aira(*args, home=None, input=None, **env)``: the command line, run in this process
    (tests/cli_runner.py ``in_process``). Use it for every command test."""
    return cli_runner.in_process


@pytest.fixture
def aira_process() -> RunAira:
    """``aira_process(*args, home=None, input=None, **env)``: the command line as a new
    process (``new_process``), for what only a process shows: startup, argv bytes, installed
    entry points (``AIRA_PLUGINS``)."""
    return cli_runner.new_process
