"""``aira mcp serve``'s tools through the SDK's own Client, in memory, on the real low-level
server over the fake kernel's catalog: a whole task, the shared corpus of legal and illegal
sequences with the runtime's outcomes, bad input for every tool, scoped bindings, resources,
and a kernel that fails or hangs mid-call."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from runtime_factory import (
    BOX_CAP,
    DEFINE_CAP,
    FILLET_CAP,
    MASS_PROPERTIES_CAP,
    VOLUME_RANGE_CAP,
    composite_steps,
)

from aira_core.mcp.engine import Engine
from aira_core.mcp.observation import compact
from aira_core.mcp.tools import MODEL_APPLY, OPERATIONS, TASK_OPEN
from aira_core.runtime.contract import load_corpus
from aira_core.runtime.session import Task

from .conftest import call, codes, envelope, open_task, state, status

pytestmark = pytest.mark.anyio

API_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
CAPS = (DEFINE_CAP, BOX_CAP, FILLET_CAP, VOLUME_RANGE_CAP, MASS_PROPERTIES_CAP)


def plan_draft(**kw: Any) -> dict[str, Any]:
    """The composite plan of the runtime tests as a client sends it: no baseRevision."""
    return {
        "steps": [
            {k: v for k, v in s.to_wire().items() if k != "dependsOn"}
            for s in composite_steps(**kw)
        ]
    }


def second_box() -> dict[str, Any]:
    """A plan for a head that has the plate already: one more box."""
    args = {"length": 5, "width": 5, "height": 5}
    return {"steps": [{"id": "second", "capability": BOX_CAP, "label": "second", "args": args}]}


async def discover(client: Any, task: str) -> None:
    """Search, then describe every capability the composite plan uses."""
    found = await call(client, "catalog_search", task=task, intent="box plate fillet volume")
    assert not found.is_error, found.content[0].text
    for cap in CAPS:
        described = await call(client, "catalog_describe", task=task, capabilityId=cap)
        assert not described.is_error, described.content[0].text


async def commit_composite(client: Any, task: str) -> dict[str, Any]:
    for name, args in [
        ("model_proposePatch", {"plan": plan_draft()}),
        ("model_preview", {}),
        ("model_validate", {}),
        ("model_commit", {}),
    ]:
        result = await call(client, name, task=task, **args)
        assert not result.is_error, (name, result.content[0].text)
    return envelope(result)


# -- the tool list ----------------------------------------------------------------------------


async def test_eleven_tools_with_api_safe_names_schemas_and_annotations(client: Any) -> None:
    import jsonschema

    tools = (await client.list_tools()).tools
    names = [t.name for t in tools]
    assert names == [TASK_OPEN, *OPERATIONS, MODEL_APPLY]
    assert all(API_NAME.match(n) for n in names)
    by = {t.name: t for t in tools}
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.output_schema is None  # the result is one JSON text, never two copies
    # effectClass → annotations (§12.1): reads are read-only, bufferable ones idempotent
    for name in ("interface_manifest", "catalog_search", "catalog_describe", "model_read"):
        assert by[name].annotations.read_only_hint is True
    for name in ("model_proposePatch", "model_preview", "model_validate"):
        a = by[name].annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == (False, False, True)
    commit = by["model_commit"].annotations
    assert (commit.read_only_hint, commit.destructive_hint, commit.open_world_hint) == (
        False,
        False,
        True,  # it may publish to the user's head: beyond the task
    )
    revert = by["model_revert"].annotations
    assert (revert.destructive_hint, revert.open_world_hint) == (False, False)
    assert by[MODEL_APPLY].annotations == commit.model_copy(update={"title": "model.apply"})


async def test_one_open_task_puts_its_legal_handles_into_the_schemas(
    client: Any, no_small_catalog: None
) -> None:
    def body_alias(tools: Any) -> dict[str, Any]:
        schema = next(t for t in tools if t.name == "model_proposePatch").input_schema
        return schema["$defs"]["BodyAlias"]

    before = body_alias((await client.list_tools()).tools)
    assert "enum" not in before and before["pattern"] == "^b:"  # no task: no handles to list
    task = await open_task(client)
    empty = json.dumps([t.input_schema for t in (await client.list_tools()).tools])
    assert '"enum": []' not in empty  # a task with no body yet: patterns, no empty enums
    await discover(client, task)
    await commit_composite(client, task)
    listed = body_alias((await client.list_tools()).tools)
    assert listed["enum"] == ["b:plate"]
    # a second task: no one task's handles stand for both, so patterns again
    await open_task(client)
    assert "enum" not in body_alias((await client.list_tools()).tools)


# -- a whole task -----------------------------------------------------------------------------


async def test_a_whole_task_ends_in_a_committed_revision_and_is_read_back(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, _, repository = runtime
    main_before = repository.head("main")
    task = await open_task(client, intent="a 40 x 30 x 10 mm plate with rounded edges")
    await discover(client, task)
    committed = await commit_composite(client, task)
    rev = committed["data"]["rev"]
    # success is unsaid; the revision observed is data.rev; the commit effect is data.state
    assert "status" not in committed and "observedRevision" not in committed
    assert "effectsObserved" not in committed and committed["data"]["state"] == "committed"
    assert repository.head(f"task/{task}") == rev and repository.head("main") == main_before
    assert committed["artifacts"] == {
        "uriTemplate": f"aira://tasks/{task}/part.{{format}}",
        "formats": ["step", "stl", "3mf", "svg", "png"],
    }

    read = await call(
        client, "model_read", task=task, query="massProperties", args={"target": "b:plate"}
    )
    assert not read.is_error and envelope(read)["data"]["result"]["volume"] > 0
    # as in the step host, a read-back does not end a task the agent is still working on
    assert "terminal" not in envelope(read)["data"]

    summary = await client.read_resource(f"aira://tasks/{task}/model")
    assert json.loads(summary.contents[0].text)["rev"] == rev
    trace = json.loads((await client.read_resource(f"aira://tasks/{task}/trace")).contents[0].text)
    assert [r["operation"] for r in trace["trace"]][-2:] == ["model.commit", "model.read"]

    # the same task goes on: a second plan on top of the first commit
    for name, args in [
        ("model_proposePatch", {"plan": second_box()}),
        ("model_preview", {}),
        ("model_validate", {}),
        ("model_commit", {}),
    ]:
        step = await call(client, name, task=task, **args)
        assert not step.is_error, (name, step.content[0].text)
    second = envelope(step)["data"]["rev"]
    assert second != rev and repository.head(f"task/{task}") == second
    # another task from this one's head (not main's)
    follow = await open_task(client, **{"from": task})
    assert repository.head(f"task/{follow}") == second


async def test_a_refusal_is_one_json_text_that_starts_with_its_status_and_code(
    client: Any, no_small_catalog: None
) -> None:
    task = await open_task(client)
    refused = await call(client, "model_proposePatch", task=task, plan=plan_draft())
    assert refused.is_error and codes(refused) == ["DISCOVERY_REQUIRED"]
    assert len(refused.content) == 1
    text = refused.content[0].text
    assert text.startswith('{"status":"blocked","diagnostics":[{"code":"DISCOVERY_REQUIRED"')
    shown = envelope(refused)
    assert "requestId" not in shown and "budgets" not in shown  # for programs, not the model
    first = shown["nextActions"][0]
    assert (first if isinstance(first, str) else first["tool"]) in (
        "catalog_search",
        "catalog_describe",
    )


# -- the shared corpus, through MCP and through the runtime -------------------------------------


def _arguments(steps: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """What a corpus step's operation is called with: a plan that fails where the next
    step of the sequence expects a diagnostic (preview: a fillet too large; validate: a
    volume range the part misses)."""
    op = steps[k]["operation"]
    if op == "catalog.search":
        return {"intent": "box plate fillet volume"}
    if op == "catalog.describe":
        return {"capabilityId": BOX_CAP}
    if op != "model.proposePatch":
        return {}
    fails: dict[str, Any] = {}
    for later in steps[k + 1 :]:  # this candidate's own preview and validation
        if later["operation"] == "model.proposePatch":
            break
        fails.setdefault(later["operation"], later.get("diagnostic"))
    if any(s["operation"] == "model.commit" for s in steps[:k]):  # on top of the plate
        return {
            "plan": {
                "steps": [
                    {
                        "id": "second",
                        "capability": BOX_CAP,
                        "label": "second",
                        "args": {"length": 5, "width": 5, "height": 5},
                    }
                ]
            }
        }
    if fails.get("model.preview"):
        return {"plan": plan_draft(radius=100)}
    if fails.get("model.validate"):
        return {"plan": plan_draft(vmax=1.0)}
    return {"plan": plan_draft()}


def _runtime_outcomes(runtime: Any, steps: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    from aira_core.mcp.engine import PROTOCOL

    ctx, kernel, _ = runtime
    t = Task(ctx, kernel, task_id="direct", protocol=PROTOCOL)
    out = []
    for k, s in enumerate(steps):
        args = _arguments(steps, k)
        if s["operation"] == "catalog.describe":
            for cap in CAPS:
                t.call("catalog.describe", f"d{k}-{cap}", {"capabilityId": cap})
        if s["operation"] == "model.proposePatch":
            args = {"plan": {**args["plan"], "baseRevision": t.head}}
        e = t.call(s["operation"], f"s{k}", args)
        out.append(
            (
                e.status,
                [d.code for d in e.diagnostics],
                e.data.get("state"),
                # what the compact form a client shows makes of the runtime's next actions
                compact(e.to_wire()).get("nextActions"),
            )
        )
    return out


async def _mcp_outcomes(client: Any, steps: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    task = await open_task(client)
    out = []
    for k, s in enumerate(steps):
        if s["operation"] == "catalog.describe":
            for cap in CAPS:
                await call(client, "catalog_describe", task=task, capabilityId=cap)
        name = s["operation"].replace(".", "_")
        r = await call(client, name, task=task, **_arguments(steps, k))
        e = envelope(r)
        assert r.is_error == (status(e) in ("blocked", "failed", "stale"))
        out.append((status(e), codes(r), e["data"].get("state"), e.get("nextActions")))
    return out


CORPUS = [
    *(("legal", c) for c in load_corpus("legal_sequences")),
    *(("illegal", c) for c in load_corpus("illegal_sequences")),
]


@pytest.mark.parametrize(
    ("kind", "case"),
    [c for c in CORPUS if c[1].get("start", "ready") == "ready"],
    ids=lambda v: v if isinstance(v, str) else v["name"],
)
async def test_the_shared_corpus_has_the_runtimes_outcomes_through_mcp(
    client: Any, runtime: Any, no_small_catalog: None, kind: str, case: dict[str, Any]
) -> None:
    steps = case["steps"]
    direct = _runtime_outcomes(runtime, steps)
    via = await _mcp_outcomes(client, steps)
    for k in range(1, len(steps)):
        if steps[k]["operation"] in ("model.preview", "model.validate") and (
            steps[k - 1]["operation"] == steps[k]["operation"] and via[k] != direct[k]
        ):
            # over MCP a check is idempotent (its annotation says so): the same check again,
            # the task unmoved, answers as the first did instead of the runtime's refusal
            assert via[k] == via[k - 1], (case["name"], via)
            assert via[k + 1 :] == [] and direct[k][0] == "blocked", (case["name"], direct)
            via, direct, steps = via[:k], direct[:k], steps[:k]
            break
    assert via == direct
    if kind == "legal":
        # the state each step leaves, as the corpus says; after the last one the runtime may
        # decide the task (completed on a read-back of a commit)
        expected_states = [s["state"] for s in steps]
        assert [o[2] for o in via[:-1]] == expected_states[:-1]
        assert via[-1][2] in (expected_states[-1], "terminal")
        for outcome, s in zip(via, steps, strict=True):
            assert (outcome[0] == "failed") == bool(s.get("diagnostic")), (case["name"], s)
    elif case["expected"]["refusedAt"] < len(via):  # else: the refused step was a replay
        expected = case["expected"]
        refused = via[expected["refusedAt"]]
        # the operation the corpus names comes first among the tools a client is shown
        first = refused[3][0] if refused[3] else None
        first = first["tool"] if isinstance(first, dict) else first
        assert refused[1] == [expected["code"]]
        assert first == (expected["nextOperation"] or "").replace(".", "_") or None
        for outcome, s in zip(via[: expected["refusedAt"]], steps, strict=False):
            assert outcome[0] == ("failed" if s.get("diagnostic") else "success")


# -- bad input: every tool, a code, never a traceback -------------------------------------------

BAD = [
    (TASK_OPEN, {"tier": "T7"}, "ARGS_INVALID"),
    (TASK_OPEN, {"intent": ""}, "ARGS_INVALID"),
    (TASK_OPEN, {"intent": "a plate\u202e"}, "RUN_TASK_INVALID"),
    (TASK_OPEN, {"from": "mcp-0000000000000000"}, "MCP_TASK_UNKNOWN"),
    (TASK_OPEN, {"extra": 1}, "ARGS_INVALID"),
    ("interface_manifest", {}, "ARGS_INVALID"),
    ("interface_manifest", {"task": "mcp-0000000000000000"}, "MCP_TASK_UNKNOWN"),
    ("interface_manifest", {"task": ["x"]}, "MCP_TASK_UNKNOWN"),
    ("catalog_search", {"intent": 7}, "ARGS_INVALID"),
    ("catalog_search", {"intent": "x" * 3000}, "ARGS_INVALID"),
    ("catalog_search", {"intent": "box", "topK": 10_000}, "ARGS_INVALID"),
    ("catalog_describe", {}, "ARGS_INVALID"),
    ("catalog_describe", {"capabilityId": "cap:nope.nothing@1"}, "DESCRIBE_NOT_VISIBLE"),
    ("catalog_describe", {"capabilityId": BOX_CAP, "level": "L9"}, "ARGS_INVALID"),
    ("model_read", {"select": [["nope"]]}, "ARGS_INVALID"),
    ("model_read", {"limit": "x"}, "ARGS_INVALID"),
    ("model_read", {"query": "noSuchQuery"}, "QUERY_UNKNOWN"),
    ("model_read", {"query": "massProperties", "rev": "rev:sha256:" + "0" * 64}, None),
    ("model_read", {"rev": "rev:sha256:" + "0" * 64}, "ARGS_INVALID"),  # rev is for a query
    ("catalog_describe", {"capabilityId": "cap:" + "x" * 5000}, "ARGS_INVALID"),
    ("model_proposePatch", {}, "ARGS_INVALID"),
    ("model_proposePatch", {"plan": "box"}, "ARGS_INVALID"),
    ("model_proposePatch", {"plan": {"steps": []}}, "ARGS_INVALID"),
    (
        "model_proposePatch",
        {"plan": {"steps": [{"id": "s", "capability": "nope"}]}},
        "ARGS_INVALID",
    ),
    ("model_proposePatch", {"plan": plan_draft(), "baseRevision": "main"}, "ARGS_INVALID"),
    ("model_preview", {"extra": True}, "ARGS_INVALID"),
    ("model_preview", {}, "CANDIDATE_REQUIRED"),
    ("model_validate", {}, "CANDIDATE_REQUIRED"),
    ("model_commit", {"publish": "yes"}, "ARGS_INVALID"),
    ("model_commit", {}, "CANDIDATE_REQUIRED"),
    ("model_revert", {}, "NOTHING_TO_REVERT"),
    ("model_revert", {"requestId": "bad id with spaces"}, "ARGS_INVALID"),
    ("no_such_tool", {}, "MCP_TOOL_UNKNOWN"),
    ("bound_exact_box_1_000000", {"args": {}}, "MCP_TOOL_UNKNOWN"),
]


async def test_bad_input_of_every_tool_is_an_error_result_with_a_code(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, kernel, repository = runtime
    task = await open_task(client)
    await discover(client, task)
    before = (repository.store.branches(), repository.head(f"task/{task}"))
    calls = kernel.total_calls
    for name, arguments, code in BAD:
        if name != TASK_OPEN and "task" not in arguments and name in OPERATIONS and arguments:
            arguments = {"task": task, **arguments}
        elif name in OPERATIONS and not arguments and code != "ARGS_INVALID":
            arguments = {"task": task}
        result = await client.call_tool(name, arguments)
        assert result.is_error, (name, arguments)
        text = result.content[0].text
        assert "Traceback" not in text and "INTERNAL" not in text
        found = codes(result)
        assert found and (code is None or found[0] == code), (name, arguments, found, text)
        assert text.startswith('{"status":"') and f'"code":"{found[0]}"' in text[:80]
    # nothing was written, and no bad call reached the kernel
    assert (repository.store.branches(), repository.head(f"task/{task}")) == before
    assert kernel.total_calls == calls
    # the task is still usable
    assert not (await call(client, "model_proposePatch", task=task, plan=plan_draft())).is_error


async def test_arguments_nested_without_bound_or_not_plain_json_are_refused(
    client: Any,
) -> None:
    task = await open_task(client)
    deep: Any = "leaf"
    for _ in range(200):  # deep enough for a schema walk to hit its recursion limit
        deep = [deep]
    for name, arguments in [
        ("model_read", {"task": task, "query": "massProperties", "args": {"target": deep}}),
        ("model_proposePatch", {"task": task, "plan": {"steps": [{"args": {"x": deep}}]}}),
        ("catalog_search", {"task": task, "intent": "box", "knownInputs": [deep]}),
        ("catalog_search", {"task": task, "intent": "box", "topK": float("nan")}),
        (TASK_OPEN, {"intent": "\ud800 lone surrogate"}),
        ("model_read", {"task": task, "query": "massProperties", "args": {"t": "x" * 2_000_000}}),
    ]:
        result = await client.call_tool(name, arguments)
        assert result.is_error and codes(result) == ["ARGS_INVALID"], (name, result.content)
    assert not (await call(client, "model_read", task=task)).is_error


async def test_a_refused_request_id_is_never_used_up(client: Any) -> None:
    """An id that fails its pattern (the shape of the server's own ids, say) is refused
    under a server id: the calls after it are not taken for repeats."""
    task = await open_task(client)
    for n in range(1, 4):
        refused = await call(client, "model_read", task=task, requestId=f"mcp#{n}")
        assert codes(refused) == ["ARGS_INVALID"]
    for _ in range(3):
        assert not (await call(client, "model_read", task=task)).is_error
    first = await call(client, "model_read", task=task, requestId="mine-1")
    assert not first.is_error
    # sent again as it was (a retry after a lost answer): the same answer, not run again
    trace = (await client.read_resource(f"aira://tasks/{task}/trace")).contents[0].text
    again = await call(client, "model_read", task=task, requestId="mine-1")
    assert again.content == first.content
    assert (await client.read_resource(f"aira://tasks/{task}/trace")).contents[0].text == trace
    # the same id for another call is refused
    other = await call(client, "model_read", task=task, requestId="mine-1", limit=3, select=[])
    assert codes(other) == ["DUPLICATE_REQUEST_ID"]


async def test_publishing_to_main_needs_a_grant_that_allows_it(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, _, repository = runtime
    main = repository.head("main")
    task = await open_task(client)
    await discover(client, task)
    for name in ("model_proposePatch", "model_preview", "model_validate"):
        args = {"plan": plan_draft()} if name == "model_proposePatch" else {}
        assert not (await call(client, name, task=task, **args)).is_error
    refused = await call(client, "model_commit", task=task, publish=True)
    assert refused.is_error and codes(refused) == ["PLAN_APPROVAL_REQUIRED"]
    assert repository.head("main") == main
    # the refusal says exactly how the user can allow it, and what the agent can do now
    how = envelope(refused)["nextActions"][0]
    assert how["tool"] == "model_commit" and how["args"] == {"publish": False}
    assert "aira mcp serve --allow-publish" in how["reason"]
    assert not (await call(client, "model_commit", task=task)).is_error  # the task branch


async def test_a_server_the_user_allowed_to_publish_publishes(
    runtime: Any, no_small_catalog: None
) -> None:
    from mcp import Client

    from aira_core.mcp.engine import default_grant
    from aira_core.mcp.server import build_server

    ctx, kernel, repository = runtime
    engine = Engine(None, kernel=kernel, context=ctx, grant=default_grant(allow_publish=True))
    async with Client(build_server(engine), raise_exceptions=True) as client:
        task = await open_task(client, capabilities=list(CAPS))
        published = await call(client, MODEL_APPLY, task=task, plan=plan_draft(), publish=True)
        assert not published.is_error, published.content[0].text
        shown = envelope(published)
        assert repository.head("main") == shown["data"]["rev"]
        # the commit to the task's branch goes unsaid beside state committed; publishing not
        assert shown["effectsObserved"] == ["publish:main"]


def test_the_compact_form_leaves_out_only_what_repeats() -> None:
    rev = "rev:sha256:" + "a" * 64
    wire = {
        "requestId": "req:1",
        "observedRevision": rev,
        "status": "success",
        "data": {
            "state": "committed",
            "rev": rev,
            "bodies": {"b:p": {"volume": 11681.914, "box": [-30.0, -2.5, 0.0, True]}},
            "summary": {"rev": rev, "counts": {"parameters": 0, "nodes": 2}},
        },
        "effectsObserved": ["commit:task/mcp-1", "publish:main"],
    }
    shown = compact(wire)
    assert shown == {
        "data": {
            "state": "committed",
            "rev": rev,
            "bodies": {"b:p": {"volume": 11681.914, "box": [-30, -2.5, 0, True]}},
            "summary": {"rev": rev, "counts": {"nodes": 2}},
        },
        "effectsObserved": ["publish:main"],
    }
    assert all(type(n) is int for n in shown["data"]["bodies"]["b:p"]["box"][:3:2])
    # any status but success is stated, and an effect without its commit state is kept
    partial = compact({**wire, "status": "partial", "data": {"state": "proposed"}})
    assert partial["status"] == "partial"
    assert partial["effectsObserved"] == ["commit:task/mcp-1", "publish:main"]


async def test_a_refusal_after_the_preview_names_the_plans_handles(
    runtime: Any, no_small_catalog: None
) -> None:
    """A plan refused at its validate stage speaks of the candidate as the plan does
    (b:plate, the assertion's handle), not by entity ids that no revision holds."""
    from mcp import Client

    from aira_core.mcp.server import build_server

    ctx, kernel, _ = runtime
    async with Client(build_server(Engine(None, kernel=kernel, context=ctx))) as client:
        task = await open_task(client, capabilities=list(CAPS))
        refused = await call(client, MODEL_APPLY, task=task, plan=plan_draft(vmax=10.0))
        shown = envelope(refused)
        assert refused.is_error and shown["data"]["stage"] == "model.validate"
        assert list(shown["data"]["bodies"]) == ["b:plate"]
        subjects = [d["subject"] for d in shown["diagnostics"] if d.get("subject")]
        # the validator's step or the assertion's handle, never an entity id
        assert subjects and not any(re.search(r"[0-9a-f]{10}", x) for x in subjects), subjects


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
@pytest.mark.parametrize("answer", ["yes", "no", "cancel"])
async def test_publishing_asks_the_user_through_elicitation(
    runtime: Any, no_small_catalog: None, mode: str, answer: str
) -> None:
    """A client that can ask its user (form elicitation) is asked before a publish the grant
    wants approved: a 2026-07-28 client with an input-required result it answers by calling
    again, a handshake-era one with elicitation/create. Yes publishes that one call; no or
    a cancel leaves main as it was and says the user declined; the approval does not hold
    for a later publish."""
    import mcp_types as types
    from mcp import Client

    from aira_core.mcp.server import build_server

    ctx, kernel, repository = runtime
    main = repository.head("main")
    asked: list[str] = []

    async def ask_user(context: Any, params: Any) -> Any:
        asked.append(params.message)
        if answer == "cancel":
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept", content={"publish": answer == "yes"})

    engine = Engine(None, kernel=kernel, context=ctx)  # the default grant: publish asks
    server = build_server(engine)
    async with Client(server, mode=mode, elicitation_callback=ask_user) as client:
        task = await open_task(client, capabilities=list(CAPS))
        applied = await call(client, MODEL_APPLY, task=task, plan=plan_draft(), publish=True)
        assert len(asked) == 1 and task in asked[0] and "cannot be undone" in asked[0]
        if answer == "yes":
            assert not applied.is_error, applied.content[0].text
            assert repository.head("main") == envelope(applied)["data"]["rev"]
            # the approval was for that call: the next publish asks again
            more = await call(client, MODEL_APPLY, task=task, plan=second_box(), publish=True)
            assert len(asked) == 2 and not more.is_error
        else:
            assert applied.is_error and codes(applied) == ["PLAN_APPROVAL_REQUIRED"]
            assert repository.head("main") == main
            how = envelope(applied)["nextActions"][0]
            assert how["args"] == {"publish": False} and "declined" in how["reason"]
            # the plan passed its checks: the agent may keep it on the task branch
            kept = await call(client, "model_commit", task=task)
            assert not kept.is_error and len(asked) == 1  # no publish, no question


async def test_a_client_that_cannot_ask_its_user_is_told_how_to_grant(
    runtime: Any, no_small_catalog: None
) -> None:
    from mcp import Client

    from aira_core.mcp.server import build_server

    ctx, kernel, repository = runtime
    main = repository.head("main")
    async with Client(build_server(Engine(None, kernel=kernel, context=ctx))) as client:
        task = await open_task(client, capabilities=list(CAPS))
        applied = await call(client, MODEL_APPLY, task=task, plan=plan_draft(), publish=True)
        assert applied.is_error and codes(applied) == ["PLAN_APPROVAL_REQUIRED"]
        assert "aira mcp serve --allow-publish" in envelope(applied)["nextActions"][0]["reason"]
        assert repository.head("main") == main


async def test_exports_are_checked_against_the_grant(runtime: Any, no_small_catalog: None) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from aira_core.catalog.policy import LOCAL_GRANT
    from aira_core.mcp.server import build_server

    ctx, kernel, _ = runtime
    permissions = LOCAL_GRANT.permissions.model_copy(update={"export": False})
    grant = LOCAL_GRANT.model_copy(update={"permissions": permissions})
    engine = Engine(None, kernel=kernel, context=ctx, grant=grant)
    async with Client(build_server(engine), raise_exceptions=True) as client:
        task = await open_task(client)
        await discover(client, task)
        await commit_composite(client, task)
        exports = kernel.calls["export"]
        with pytest.raises(MCPError) as exc:
            await client.read_resource(f"aira://tasks/{task}/part.step")
        assert exc.value.error.message.startswith("GRANT_PERMISSION_DENIED")
        assert kernel.calls["export"] == exports


async def test_a_secret_in_an_argument_is_never_echoed(client: Any) -> None:
    from aira_core.diagnostics import register_secret

    secret = "sk-live-0123456789abcdefSENTINEL"
    register_secret(secret)
    task = await open_task(client)
    for name, arguments in [
        ("catalog_describe", {"task": task, "capabilityId": secret}),
        ("model_read", {"task": task, "query": secret}),
        ("model_read", {"task": secret}),
        (secret, {}),
    ]:
        result = await client.call_tool(name, arguments)
        assert result.is_error
        assert secret not in result.content[0].text
        assert secret not in json.dumps(envelope(result))
    # a request id that holds it is used, and redacted wherever it is shown
    assert not (await call(client, "model_read", task=task, requestId=secret)).is_error
    trace = (await client.read_resource(f"aira://tasks/{task}/trace")).contents[0].text
    assert secret not in trace and "model.read" in trace


async def test_resources_answer_with_a_code_for_what_they_do_not_hold(client: Any) -> None:
    from mcp.shared.exceptions import MCPError

    listed = [str(r.uri) for r in (await client.list_resources()).resources]
    assert listed == ["aira://interface/manifest", "aira://catalog/signatures"]
    manifest = json.loads((await client.read_resource(listed[0])).contents[0].text)
    assert manifest["metaOperations"][0] == "interface.manifest"
    assert "exact.box@1(" in (await client.read_resource(listed[1])).contents[0].text
    templates = [
        t.uri_template for t in (await client.list_resource_templates()).resource_templates
    ]
    assert "aira://tasks/{task}/part.{format}{?tolerance,angularTolerance,chunk}" in templates
    task = await open_task(client)
    for uri, code in [
        ("aira://nothing", "MCP_RESOURCE_UNKNOWN"),
        ("https://example.com/x", "MCP_RESOURCE_UNKNOWN"),
        ("aira://tasks/mcp-0000000000000000/model", "MCP_TASK_UNKNOWN"),
        (f"aira://tasks/{task}/part.exe", "MCP_RESOURCE_UNKNOWN"),
        (f"aira://tasks/{task}/part.step", "MCP_RESOURCE_UNKNOWN"),  # no body yet
        (f"aira://tasks/{task}/revisions/rev:sha256:{'0' * 64}", None),
    ]:
        with pytest.raises(MCPError) as exc:
            await client.read_resource(uri)
        assert code is None or exc.value.error.message.startswith(code), exc.value.error.message


# -- scoped binding -----------------------------------------------------------------------------


async def test_a_bound_capability_runs_through_the_pipeline_and_goes_stale(
    client: Any, runtime: Any, no_small_catalog: None
) -> None:
    _, kernel, repository = runtime
    task = await open_task(client)
    await discover(client, task)
    described = await call(client, "catalog_describe", task=task, capabilityId=BOX_CAP, bind=True)
    tool = envelope(described)["data"]["binding"]["tool"]
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert tool in listed and len(listed) == 12
    assert listed[tool].input_schema["properties"]["args"]["properties"]["length"]
    # a query capability is no writing capability: described, but not bound
    query = await call(
        client, "catalog_describe", task=task, capabilityId=MASS_PROPERTIES_CAP, bind=True
    )
    assert not query.is_error and "MCP_BIND_REFUSED" in codes(query)

    # only the task that made it can use it: a handle is what lets a client act
    other = await open_task(client)
    foreign = await call(client, tool, task=other, args={"length": 1, "width": 1, "height": 1})
    assert codes(foreign) == ["MCP_TASK_UNKNOWN"]
    assert codes(await call(client, tool, args={"length": 1, "width": 1, "height": 1})) == [
        "MCP_TASK_UNKNOWN"
    ]
    assert task not in listed[tool].description
    calls = kernel.total_calls
    proposed = await call(
        client, tool, task=task, args={"length": 20, "width": 10, "height": 5}, label="blk"
    )
    assert not proposed.is_error, proposed.content[0].text
    assert state(proposed) == "proposed" and kernel.total_calls == calls  # a plan, no kernel
    for name in ("model_preview", "model_validate", "model_commit"):
        assert not (await call(client, name, task=task)).is_error
    assert repository.aliases(repository.head(f"task/{task}")).resolve("b:blk")

    stale = await call(client, tool, task=task, args={"length": 1, "width": 1, "height": 1})
    assert stale.is_error and codes(stale) == ["BOUND_CAPABILITY_STALE"]
    assert "moved" in stale.content[0].text
    assert tool not in {t.name for t in (await client.list_tools()).tools}
    head = repository.head(f"task/{task}")
    again = await call(client, tool, task=task, args={"length": 1, "width": 1, "height": 1})
    assert codes(again) == ["BOUND_CAPABILITY_STALE"] and repository.head(f"task/{task}") == head


async def test_a_binding_expires_and_clients_are_told_the_list_changed(
    runtime: Any, no_small_catalog: None
) -> None:
    import anyio
    from mcp import Client

    from aira_core.mcp.server import build_server

    ctx, kernel, _ = runtime
    now = [0.0]
    engine = Engine(None, kernel=kernel, context=ctx, bind_ttl=60.0, clock=lambda: now[0])
    async with Client(build_server(engine), raise_exceptions=True) as client:
        task = await open_task(client)
        await discover(client, task)
        async with client.listen(tools_list_changed=True) as events:
            bound = await call(
                client, "catalog_describe", task=task, capabilityId=BOX_CAP, bind=True
            )
            tool = envelope(bound)["data"]["binding"]["tool"]
            with anyio.fail_after(5):
                await events.__anext__()  # the binding joined the list
        now[0] = 61.0
        expired = await call(client, tool, task=task, args={"length": 1, "width": 1, "height": 1})
        assert (
            codes(expired) == ["BOUND_CAPABILITY_STALE"]
            and "time to live" in expired.content[0].text
        )


async def test_a_handshake_era_client_is_told_the_list_changed(
    engine: Engine, no_small_catalog: None
) -> None:
    """Clients of the 2025 protocols (most desktop clients today) get the notification on
    their connection; the server says it sends it."""
    import anyio
    import mcp_types as types
    from mcp import Client

    from aira_core.mcp.server import build_server

    seen: list[Any] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        seen.append(message)
        if isinstance(message, types.ToolListChangedNotification) or "list_changed" in repr(
            message
        ):
            changed.set()

    async with Client(
        build_server(engine), mode="legacy", message_handler=on_message, raise_exceptions=True
    ) as client:
        assert client.server_capabilities.tools.list_changed is True
        task = await open_task(client)
        await discover(client, task)
        await call(client, "catalog_describe", task=task, capabilityId=BOX_CAP, bind=True)
        with anyio.fail_after(5):
            await changed.wait()


# -- a kernel that fails or hangs mid-call ---------------------------------------------------------


async def test_a_kernel_crash_or_timeout_leaves_the_task_usable_and_its_revisions_intact(
    client: Any, runtime: Any, no_small_catalog: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    _, kernel, repository = runtime
    task = await open_task(client)
    await discover(client, task)
    committed = await commit_composite(client, task)
    rev = committed["data"]["rev"]
    follow = await open_task(client, **{"from": task})
    await discover(client, follow)
    real = kernel.evaluate

    def crash(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("segfault-ish in the kernel")

    kernel.evaluate = crash
    assert not (await call(client, "model_proposePatch", task=follow, plan=second_box())).is_error
    failed = await call(client, "model_preview", task=follow)
    assert failed.is_error and codes(failed) == ["KERNEL_FAILED"]
    kernel.evaluate = real  # the kernel is back: the same task goes on
    assert not (await call(client, "model_proposePatch", task=follow, plan=second_box())).is_error
    assert not (await call(client, "model_preview", task=follow)).is_error
    assert repository.head(f"task/{task}") == rev

    # a kernel that hangs: the call ends at the deadline with a code, the server answers
    monkeypatch.setenv("AIRA_KERNEL_TIMEOUT", "0.5")
    release = threading.Event()
    kernel.validate = lambda *a, **k: release.wait(30)
    timed_out = await call(client, "model_validate", task=follow)
    assert timed_out.is_error and codes(timed_out) == ["KERNEL_TIMEOUT"]
    read = await call(client, "model_read", task=follow)
    assert not read.is_error and envelope(read)["data"]["summary"]["rev"] == rev
    release.set()
    assert repository.head(f"task/{task}") == rev and repository.head(f"task/{follow}") == rev


def test_a_search_hit_names_its_kind_only_when_it_is_no_operation() -> None:
    from aira_core.catalog.shown import compact_hit

    hit = {
        "capabilityId": "cap:exact.box@1",
        "kind": "authoring.operation",
        "title": "Box",
        "summary": "An exact box.",
        "retrievalRelevance": 0.53827,
        "profileVersion": "1.0.0",
        "whyMatched": ["term:box"],
    }
    shown = compact_hit(hit)
    # an operation is what a hit is unless it says otherwise, as a signature without :kind
    assert shown == {
        "capabilityId": "cap:exact.box@1",
        "title": "Box",
        "summary": "An exact box.",
        "relevance": 0.54,
    }
    assert compact_hit({**hit, "kind": "model.query"})["kind"] == "model.query"


def test_a_contract_and_a_summary_are_shown_without_what_repeats() -> None:
    from aira_core.catalog.shown import compact_contract
    from aira_core.model.blocks import shown_summary

    contract = {
        "capabilityId": "cap:exact.box@1",
        "profileVersion": "1.0.0",
        "operationRef": "exact.box@1.0.0",
        "kind": "authoring.operation",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "t",
            "type": "object",
            "properties": {"length": {"type": "number"}},
        },
        "inputTypes": ["Length"],
        "outputSchema": {"type": "object", "title": "exact.box@1.0.0 output"},
        "outputTypes": ["ExactSolid"],
        "applicability": {"requiresRepresentation": [], "predicates": [{"id": "p"}]},
        "purity": "pure",
        "risk": {"level": "low", "destructive": False},
        "execution": {"quality": ["preview"], "costClass": "interactive"},
        "diagnostics": ["SOLID_INVALID", "KERNEL_TIMEOUT"],
        "contractHash": "contract:sha256:" + "0" * 64,
    }
    assert compact_contract(contract) == {
        "capabilityId": "cap:exact.box@1",
        "kind": "authoring.operation",
        "inputSchema": {"type": "object", "properties": {"length": {"type": "number"}}},
        "outputTypes": ["ExactSolid"],
        "applicability": {"predicates": [{"id": "p"}]},
        "diagnostics": ["SOLID_INVALID"],
    }
    # the unusual is kept: a risky, impure, slow operation says so
    unusual = compact_contract(
        {
            **contract,
            "purity": "effectful",
            "risk": {"level": "high", "destructive": True},
            "execution": {"costClass": "batch"},
        }
    )
    assert unusual["purity"] == "effectful" and unusual["risk"]["level"] == "high"
    assert unusual["costClass"] == "batch"
    summary = {
        "rev": "rev:1",
        "counts": {"parameters": 0, "bodies": 1},
        "blocks": {"bodies": "block:sha256:" + "1" * 64},
        "roots": {"bodies": {"b:p": "n:1"}, "nodes": ["n:1"]},
        "aliases": {"b:p": "b123", "n:1": "n456"},
        "aliasesOmitted": 0,
    }
    assert shown_summary(summary) == {
        "rev": "rev:1",
        "counts": {"bodies": 1},
        "roots": {"bodies": {"b:p": "n:1"}, "nodes": ["n:1"]},
        "handles": ["b:p", "n:1"],
    }
