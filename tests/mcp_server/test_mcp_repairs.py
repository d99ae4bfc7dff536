"""Repairs over MCP: a refused preview offers the repair's model_read call, which returns
the candidate plan (nothing written); the candidate commits through the same tools."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_repairs import REDUCE_CAP
from test_repairs import runtime as repair_runtime

from .conftest import call, codes, envelope, open_task
from .test_mcp_server import plan_draft

pytestmark = pytest.mark.anyio


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, Any]]:
    """The conftest's runtime, with the repair package admitted too."""
    from aira_core.model.store import ModelStore

    monkeypatch.setattr(ModelStore, "CHECK_SAME_THREAD", False)
    ctx, kernel, repository = repair_runtime(tmp_path)
    try:
        yield ctx, kernel, repository
    finally:
        repository.close()


async def test_a_repair_over_mcp_makes_a_candidate_that_commits(client: Any, runtime: Any) -> None:
    _ctx, _kernel, repository = runtime
    task = await open_task(client)
    assert not (await call(client, "interface_manifest", task=task)).is_error
    proposed = await call(client, "model_proposePatch", task=task, plan=plan_draft(radius=16.0))
    assert not proposed.is_error, proposed.content[0].text
    preview = await call(client, "model_preview", task=task)
    assert codes(preview)[0] == "FILLET_RADIUS_TOO_LARGE"
    (action,) = [
        a
        for a in envelope(preview)["nextActions"]
        if isinstance(a, dict) and a["tool"] == "model_read" and a.get("capability") == REDUCE_CAP
    ]
    heads = repository.store.branches()
    made = await call(client, "model_read", task=task, **action["args"])
    assert not made.is_error, made.content[0].text
    found = envelope(made)["data"]["candidate"]
    assert found["changes"] == {"radius": {"from": 16.0, "to": 8.0}}
    assert repository.store.branches() == heads, "a repair writes nothing"
    fixed = {
        "steps": [{k: v for k, v in s.items() if k != "dependsOn"} for s in found["plan"]["steps"]]
    }
    for name, args in [
        ("model_proposePatch", {"plan": fixed}),
        ("model_preview", {}),
        ("model_validate", {}),
        ("model_commit", {}),
    ]:
        out = await call(client, name, task=task, **args)
        assert not out.is_error and "status" not in envelope(out), (
            name,
            out.content[0].text,
        )
