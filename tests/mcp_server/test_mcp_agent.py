"""What makes Aira affordable to an agent over MCP: discovery that carries over within a
server and a catalog snapshot, a batch describe, capabilities named at task_open, one call
for a plan that is right (model_apply), answers replayed for a retried request id, and the
next actions of a refusal leading to its fix. Through the SDK's own Client, in memory, on
the fake kernel's catalog."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import BOX_CAP, VOLUME_RANGE_CAP
from test_repairs import REDUCE_CAP
from test_repairs import runtime as repair_runtime

from aira_core.mcp.tools import MODEL_APPLY

from .conftest import call, codes, envelope, open_task, state
from .test_mcp_server import CAPS, plan_draft

pytestmark = pytest.mark.anyio


def heads(repository: Any) -> dict[str, str]:
    return {b: repository.head(b) for b in repository.store.branches()}


async def test_a_known_plan_commits_in_three_calls(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, _, repository = runtime
    opened = await call(client, "task_open", intent="a filleted plate", capabilities=list(CAPS))
    shown = envelope(opened)
    assert not opened.is_error and shown["data"]["state"] == "described"
    task = shown["data"]["task"]
    # the capabilities' compact signatures came back: they are what the agent was shown
    signatures = shown["data"]["signatures"]
    assert all(cap.removeprefix("cap:") + "(" in signatures for cap in CAPS)
    applied = await call(client, MODEL_APPLY, task=task, plan=plan_draft())
    done = envelope(applied)
    assert not applied.is_error, applied.content[0].text
    rev = done["data"]["rev"]
    assert "status" not in done and done["data"]["state"] == "committed"  # success: unsaid
    assert repository.head(f"task/{task}") == rev
    assert set(done["data"]["bodies"]) == {"b:plate"}  # handles, not entity ids
    assert done["artifacts"]["uriTemplate"] == f"aira://tasks/{task}/part.{{format}}"
    read = await call(client, "model_read", task=task)
    assert not read.is_error and envelope(read)["data"]["summary"]["rev"] == rev
    # the same check → propose → preview → validate → commit, each traced as itself
    trace = json.loads((await client.read_resource(f"aira://tasks/{task}/trace")).contents[0].text)
    ops = [r["operation"] for r in trace["trace"]]
    assert ops == [
        "model.proposePatch",
        "model.preview",
        "model.validate",
        "model.commit",
        "model.read",
    ]


async def test_model_apply_stops_at_the_first_refusal_and_writes_nothing(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, _, repository = runtime
    task = await open_task(client)
    before = heads(repository)
    # nothing shown yet: refused at propose, and the refusal names the describes it needs
    refused = await call(client, MODEL_APPLY, task=task, plan=plan_draft())
    shown = envelope(refused)
    assert refused.is_error and codes(refused) == ["DISCOVERY_REQUIRED"]
    assert shown["data"]["stage"] == "model.proposePatch"
    assert heads(repository) == before


async def test_what_one_task_was_shown_carries_over_to_the_next(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    first = await open_task(client)
    await call(client, "catalog_search", task=first, intent="box plate fillet volume")
    batch = await call(client, "catalog_describe", task=first, capabilityIds=list(CAPS))
    contracts = envelope(batch)["data"]["contracts"]
    assert not batch.is_error and sorted(contracts) == sorted(CAPS)
    # a later task: no search, no describe, and the plan is taken
    second = await open_task(client)
    assert state(await call(client, "model_read", task=second)) == "described"
    proposed = await call(client, "model_proposePatch", task=second, plan=plan_draft())
    assert not proposed.is_error, proposed.content[0].text
    # and a describe of what was shown needs no search in the new task
    again = await call(client, "catalog_describe", task=second, capabilityId=BOX_CAP)
    assert not again.is_error


async def test_reading_the_signatures_resource_counts_as_discovery(
    client: Any, no_small_catalog: None
) -> None:
    task = await open_task(client)
    text = (await client.read_resource("aira://catalog/signatures")).contents[0].text
    assert "exact.box@1(" in text
    proposed = await call(client, "model_proposePatch", task=task, plan=plan_draft())
    assert not proposed.is_error, proposed.content[0].text


async def test_a_changed_catalog_snapshot_shows_nothing_of_before(
    client: Any, runtime: Any, no_small_catalog: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx, _, _ = runtime
    await call(client, "task_open", capabilities=list(CAPS))
    monkeypatch.setattr(
        type(ctx.catalog), "discovery_catalog_hash", lambda self: "catalog:sha256:" + "0" * 64
    )
    later = await open_task(client)
    refused = await call(client, "model_proposePatch", task=later, plan=plan_draft())
    assert refused.is_error and codes(refused) == ["DISCOVERY_REQUIRED"]
    refused = await call(client, "catalog_describe", task=later, capabilityId=BOX_CAP)
    assert refused.is_error and codes(refused) == ["DESCRIBE_NOT_VISIBLE"]


async def test_task_open_names_a_capability_it_does_not_know_and_shows_the_rest(
    client: Any, no_small_catalog: None
) -> None:
    opened = await call(client, "task_open", capabilities=[BOX_CAP, "cap:exact.bxo@1"])
    shown = envelope(opened)
    assert not opened.is_error and shown["status"] == "partial"
    assert codes(opened) == ["MCP_CAPABILITY_UNKNOWN"]
    assert BOX_CAP in shown["diagnostics"][0]["message"]  # the closest id, named
    assert "exact.box@1(" in shown["data"]["signatures"]


async def test_a_batch_describe_reports_each_refusal_beside_the_contracts(
    client: Any, no_small_catalog: None
) -> None:
    task = await open_task(client)
    await call(client, "catalog_search", task=task, intent="box")
    mixed = await call(
        client, "catalog_describe", task=task, capabilityIds=[BOX_CAP, "cap:nothing.here@1"]
    )
    shown = envelope(mixed)
    assert not mixed.is_error and shown["status"] == "partial"
    assert list(shown["data"]["contracts"]) == [BOX_CAP]
    assert shown["diagnostics"][0]["subject"] == "cap:nothing.here@1"
    both = await call(
        client, "catalog_describe", task=task, capabilityId=BOX_CAP, capabilityIds=[BOX_CAP]
    )
    assert both.is_error and codes(both) == ["ARGS_INVALID"]


async def test_a_retried_apply_is_answered_again_and_runs_once(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, kernel, repository = runtime
    task = await open_task(client, capabilities=list(CAPS))
    first = await call(client, MODEL_APPLY, task=task, plan=plan_draft(), requestId="apply-1")
    after = heads(repository)
    calls = kernel.total_calls
    again = await call(client, MODEL_APPLY, task=task, plan=plan_draft(), requestId="apply-1")
    assert again.content == first.content
    assert heads(repository) == after and kernel.total_calls == calls
    other = await call(
        client, MODEL_APPLY, task=task, plan=plan_draft(radius=2.0), requestId="apply-1"
    )
    assert codes(other) == ["DUPLICATE_REQUEST_ID"] and heads(repository) == after


# -- a refusal's next actions lead to its fix -----------------------------------------------------


@pytest.fixture
def repairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, Any]]:
    from aira_core.model.store import ModelStore

    monkeypatch.setattr(ModelStore, "CHECK_SAME_THREAD", False)
    ctx, kernel, repository = repair_runtime(tmp_path)
    try:
        yield ctx, kernel, repository
    finally:
        repository.close()


async def test_a_refused_apply_names_the_repair_and_its_candidate_commits(
    repairs: tuple[Any, Any, Any],
) -> None:
    from mcp import Client

    from aira_core.mcp.engine import Engine
    from aira_core.mcp.server import build_server

    ctx, kernel, repository = repairs
    async with Client(build_server(Engine(None, kernel=kernel, context=ctx))) as client:
        task = await open_task(client, capabilities=list(CAPS))
        before = heads(repository)
        refused = await call(client, MODEL_APPLY, task=task, plan=plan_draft(radius=16.0))
        shown = envelope(refused)
        assert refused.is_error and codes(refused)[0] == "FILLET_RADIUS_TOO_LARGE"
        assert shown["data"]["stage"] == "model.preview" and heads(repository) == before
        # the failed step in one line, not its input schema (catalog_describe has that)
        assert shown["data"]["stepSignature"].startswith("exact.fillet@1(")
        assert "stepSchema" not in shown["data"]
        # the describe a refusal names for its repair is one the agent may make
        wanted = next(
            a
            for a in shown["nextActions"]
            if isinstance(a, dict) and a["tool"] == "catalog_describe"
        )
        described = await call(
            client, "catalog_describe", task=task, capabilityId=wanted["capability"]
        )
        assert not described.is_error, described.content[0].text
        # the next actions name the repair, with the arguments to send as they are
        fix = next(a for a in shown["nextActions"] if isinstance(a, dict) and "args" in a)
        assert fix["tool"] == "model_read" and fix["capability"] == REDUCE_CAP
        made = await call(client, fix["tool"], task=task, **fix["args"])
        assert not made.is_error, made.content[0].text
        candidate = envelope(made)["data"]["candidate"]["plan"]
        fixed = {
            "steps": [{k: v for k, v in s.items() if k != "dependsOn"} for s in candidate["steps"]]
        }
        applied = await call(client, MODEL_APPLY, task=task, plan=fixed)
        assert not applied.is_error, applied.content[0].text
        assert repository.head(f"task/{task}") == envelope(applied)["data"]["rev"]


async def test_an_assertion_names_its_validator_as_task_open_showed_it(
    client: Any, no_small_catalog: None
) -> None:
    opened = await call(client, "task_open", capabilities=[*CAPS, VOLUME_RANGE_CAP])
    task = envelope(opened)["data"]["task"]
    plan = plan_draft()
    plan["acceptanceAssertions"] = [
        {"validatorRef": VOLUME_RANGE_CAP, "target": "b:plate", "args": {"min": 1, "max": 1e7}}
    ]
    applied = await call(client, MODEL_APPLY, task=task, plan=plan)
    assert not applied.is_error, applied.content[0].text
    assert list(envelope(applied)["data"]["assertions"].values()) == [
        True,
        True,
    ]  # the step's, ours


async def test_validator_capability_ids_are_shown_at_task_open(
    client: Any, no_small_catalog: None
) -> None:
    opened = await call(client, "task_open", capabilities=[VOLUME_RANGE_CAP])
    assert ":validator" in envelope(opened)["data"]["signatures"]


# -- annotations that hold ------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Two answers alike but for what names the call itself."""
    return envelope(a) == envelope(b) and a.is_error == b.is_error


async def test_every_tools_annotations_hold(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, _, repository = runtime
    hints = {t.name: t.annotations for t in (await client.list_tools()).tools}
    task = await open_task(client, capabilities=list(CAPS))
    before = heads(repository)
    # read-only: nothing in the store moves
    for name, args in [
        ("interface_manifest", {}),
        ("catalog_search", {"intent": "box"}),
        ("catalog_describe", {"capabilityId": BOX_CAP}),
        ("model_read", {}),
    ]:
        assert hints[name].read_only_hint is True, name
        result = await call(client, name, task=task, **args)
        assert not result.is_error and heads(repository) == before, name
    # idempotent and not destructive: the same call again answers the same, changes nothing more
    for name, args in [
        ("model_proposePatch", {"plan": plan_draft()}),
        ("model_preview", {}),
        ("model_validate", {}),
    ]:
        hint = hints[name]
        assert (hint.read_only_hint, hint.destructive_hint, hint.idempotent_hint) == (
            False,
            False,
            True,
        ), name
        first = await call(client, name, task=task, **args)
        second = await call(client, name, task=task, **args)
        assert not first.is_error and _same(first, second), (
            name,
            first.content[0].text,
            second.content[0].text,
        )
        assert heads(repository) == before
    # not idempotent: a commit twice is one commit and a refusal; it destroys nothing
    assert hints["model_commit"].idempotent_hint is False
    committed = await call(client, "model_commit", task=task)
    rev = envelope(committed)["data"]["rev"]
    again = await call(client, "model_commit", task=task)
    assert again.is_error and repository.head(f"task/{task}") == rev
    assert all(repository.store.read(r) for r in before.values())
    # a revert makes a new revision: the commit it undoes stays readable
    assert hints["model_revert"].destructive_hint is False
    reverted = await call(client, "model_revert", task=task)
    assert not reverted.is_error and repository.store.read(rev)
    # task_open is not idempotent (a new handle each time) and touches only its own branch
    assert hints["task_open"].idempotent_hint is False
    assert await open_task(client) != await open_task(client)
    # open world: publishing reaches beyond the task, to main; refused without the grant
    assert hints["model_commit"].open_world_hint is True
    assert hints[MODEL_APPLY].open_world_hint is True
    main = repository.head("main")
    published = await call(
        client, MODEL_APPLY, task=task, plan=plan_draft(radius=2.0), publish=True
    )
    assert published.is_error and codes(published) == ["PLAN_APPROVAL_REQUIRED"]
    assert repository.head("main") == main


async def test_a_failed_preview_sent_again_answers_the_same(
    repairs: tuple[Any, Any, Any],
) -> None:
    from mcp import Client

    from aira_core.mcp.engine import Engine
    from aira_core.mcp.server import build_server

    ctx, kernel, _ = repairs
    async with Client(build_server(Engine(None, kernel=kernel, context=ctx))) as client:
        task = await open_task(client, capabilities=list(CAPS))
        await call(client, "model_proposePatch", task=task, plan=plan_draft(radius=16.0))
        first = await call(client, "model_preview", task=task)
        second = await call(client, "model_preview", task=task)
        assert codes(first)[0] == "FILLET_RADIUS_TOO_LARGE"
        assert _same(first, second), second.content[0].text


# -- exports -------------------------------------------------------------------------------------


async def test_exports_take_tolerances_and_come_in_pieces_past_one_read(
    client: Any, runtime: Any, no_small_catalog: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.shared.exceptions import MCPError

    from aira_core.mcp import engine as engine_module

    _, kernel, _ = runtime
    task = await open_task(client, capabilities=list(CAPS))
    assert not (await call(client, MODEL_APPLY, task=task, plan=plan_draft())).is_error
    base = f"aira://tasks/{task}/part"
    await client.read_resource(f"{base}.stl?tolerance=0.05&angularTolerance=10")
    assert kernel.export_tolerances[-1] == (0.05, 10.0)
    for uri, code in [
        (f"{base}.stl?tolerance=99", "EXPORT_TOLERANCE_INVALID"),
        (f"{base}.step?tolerance=0.1", "EXPORT_TOLERANCE_INVALID"),
        (f"{base}.stl?colour=red", "MCP_RESOURCE_UNKNOWN"),
        (f"{base}.stl?tolerance=0.1&tolerance=0.2", "MCP_RESOURCE_UNKNOWN"),
        (f"{base}.stl?chunk=-1", "MCP_RESOURCE_UNKNOWN"),
    ]:
        with pytest.raises(MCPError) as exc:
            await client.read_resource(uri)
        assert exc.value.error.message.startswith(code), (uri, exc.value.error.message)
    # a mesh larger than one read: refused with the pieces to read, which join to it
    data = bytes(range(256)) * 5000  # 1.28 MB
    monkeypatch.setattr(kernel, "export", lambda *a, **k: data)
    with pytest.raises(MCPError) as exc:
        await client.read_resource(f"{base}.3mf")
    message = exc.value.error.message
    assert message.startswith("MCP_RESOURCE_TOO_LARGE") and "?chunk=2" in message
    import base64

    pieces = []
    for n in range(3):
        read = await client.read_resource(f"{base}.3mf?chunk={n}")
        pieces.append(base64.b64decode(read.contents[0].blob))
    assert b"".join(pieces) == data
    assert all(len(p) <= engine_module.CHUNK_BYTES for p in pieces)
    with pytest.raises(MCPError) as exc:
        await client.read_resource(f"{base}.3mf?chunk=3")
    assert exc.value.error.message.startswith("MCP_RESOURCE_UNKNOWN")
