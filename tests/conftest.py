"""Test-session setup. The hermetic plugin fixtures come from ``aira_core.testing``, which
pytest loads through aira-core's ``pytest11`` entry point."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_aira_home(aira_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or writes the developer's trust store or catalog state, and no
    ``aira`` subprocess loads an installed plugin the test did not name in AIRA_PLUGINS."""
    monkeypatch.setenv("AIRA_PLUGINS", "")
    return aira_home
