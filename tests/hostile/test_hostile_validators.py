"""Hostile third-party validators (``aira_register_validators``) through ``aira plan
apply``: one that raises (SystemExit too), answers junk, another assertion's outcome or NaN,
fails with a code it does not declare, hangs, or writes to its read-only view (even quietly)
fails the write with a stable code, no traceback, and the store and files on disk exactly as
they were. The validator plugins and the vendor package: tests/test_validators.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira
from test_validators import Hostile, _codes, _head, _install, _plan_file
from unchanged import assert_unchanged, snapshot


@pytest.fixture
def store(aira: RunAira, aira_home: Path) -> RunAira:
    return aira


@pytest.mark.parametrize(
    ("behaviour", "code"),
    [
        ("raises", "VALIDATOR_FAILED"),
        ("exits", "VALIDATOR_FAILED"),
        ("junk", "VALIDATOR_FAILED"),
        ("other-assertion", "VALIDATOR_FAILED"),
        ("nan", "VALIDATOR_FAILED"),
        ("undeclared", "VALIDATOR_FAILED"),
        ("slow", "VALIDATOR_TIMEOUT"),
        ("writes", "VALIDATOR_VIEW_READONLY"),
        ("writes-quietly", "VALIDATOR_VIEW_READONLY"),
        ("exports", "VALIDATOR_VIEW_READONLY"),
        ("mutates-data", "VALIDATOR_FAILED"),
    ],
)
def test_a_hostile_validator_is_contained_and_the_store_unchanged(
    register_plugin: Any,
    store: RunAira,
    aira_home: Path,
    tmp_path: Path,
    behaviour: str,
    code: str,
) -> None:
    _install(register_plugin, store, tmp_path, Hostile(behaviour))
    assert store("model", "init").returncode == 0
    plan = _plan_file(store, tmp_path)
    assert store("plan", "check", str(plan)).returncode == 0  # the catalog's state settled
    head = _head(store)
    before = snapshot(aira_home)
    out = store(
        *["plan", "apply", str(plan), "--json"],
        AIRA_KERNEL_TIMEOUT="1",
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert code in _codes(out), out.stdout
    assert _head(store) == head
    assert_unchanged(before, aira_home)
