"""The task runtime: every call admitted by the contract before any kernel or store work,
grants enforced at execution, adaptive discovery, repair cap and runtime-decided ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from amir_factory import commit_patch
from runtime_factory import (
    BOX_CAP,
    DEFINE_CAP,
    FILLET_CAP,
    VOLUME_RANGE_CAP,
    composite_steps,
    make_runtime,
    plan,
)

from aira_core.diagnostics import AiraError
from aira_core.runtime.session import Task, TaskProtocol


def task(tmp_path: Path, **kw: Any):  # type: ignore[no-untyped-def]
    ctx, kernel, repo = make_runtime(tmp_path)
    return Task(ctx, kernel, task_id="t1", **kw), kernel, repo


def plan_args(t: Task, **kw: Any) -> dict[str, Any]:
    return {"plan": plan(t.head, *composite_steps(**kw)).to_wire()}


def codes(envelope) -> list[str]:  # type: ignore[no-untyped-def]
    return [d.code for d in envelope.diagnostics]


def test_a_whole_task_ends_completed_only_after_a_read_back(tmp_path: Path) -> None:
    t, _kernel, repo = task(tmp_path)
    main_before = repo.head("main")
    manifest = t.call("interface.manifest", "r1")
    assert manifest.status == "success" and manifest.data["smallCatalog"] is True
    assert t.state.value == "described"  # small catalog: contracts inlined, discovery done
    for rid, op, args in [
        ("r2", "model.proposePatch", plan_args(t)),
        ("r3", "model.preview", {}),
        ("r4", "model.validate", {}),
        ("r5", "model.commit", {}),
    ]:
        out = t.call(op, rid, args)
        assert out.status == "success", (op, out.diagnostics, out.data)
    assert t.state.value == "committed"
    early = t.finish("f1")
    assert early.status == "blocked" and early.data["decision"] == "COMPLETION_EVIDENCE_MISSING"
    assert t.terminal is None
    read = t.call("model.read", "r6")
    assert read.data["summary"]["aliases"]["b:plate"]
    done = t.finish("f2")
    assert done.status == "success" and t.terminal.value == "completed"
    assert repo.head("main") == main_before, "a task writes its own branch, not main"
    refused = t.call("model.read", "r7")
    assert codes(refused) == ["TASK_TERMINATED"]


def test_a_write_without_discovery_is_refused_before_any_kernel_call(tmp_path: Path) -> None:
    t, kernel, _repo = task(tmp_path)
    head = t.head
    out = t.call("model.proposePatch", "r1", plan_args(t))
    assert out.status == "blocked"
    assert codes(out) == ["DISCOVERY_REQUIRED"]
    assert out.data["nextOperation"] == "catalog.search"
    assert out.data["completedPrefix"] == []
    assert kernel.total_calls == 0 and t.head == head


def test_adaptive_discovery_needs_the_contract_of_every_capability_used(tmp_path) -> None:
    t, kernel, _ = task(tmp_path)
    hits = t.call("catalog.search", "s1", {"intent": "box block"}).data["hits"]
    assert BOX_CAP in [h["capabilityId"] for h in hits]
    assert t.call("catalog.describe", "d1", {"capabilityId": BOX_CAP}).status == "success"
    out = t.call("model.proposePatch", "p1", plan_args(t))
    assert codes(out) == ["DISCOVERY_REQUIRED"]
    assert out.data["nextOperation"] == "catalog.describe"
    assert "cap:exact.fillet@1" in out.diagnostics[0].message
    not_shown = t.call("catalog.describe", "d2", {"capabilityId": "cap:nowhere.thing@1"})
    assert codes(not_shown) == ["DESCRIBE_NOT_VISIBLE"]
    assert kernel.total_calls == 0


def test_capsule_contracts_count_and_go_stale_when_the_catalog_changes(tmp_path, monkeypatch):
    ctx, kernel, _ = make_runtime(tmp_path)
    caps = list(ctx.capabilities)
    t = Task(ctx, kernel, task_id="t2", capsule_contracts=caps)
    assert t.state.value == "described"
    monkeypatch.setattr(
        type(ctx.catalog), "discovery_catalog_hash", lambda self: "disc:sha256:" + "0" * 64
    )
    out = t.call("model.proposePatch", "p1", plan_args(t))
    assert codes(out) == ["DISCOVERY_REQUIRED"]


@pytest.mark.parametrize(
    ("op", "code", "next_op"),
    [
        ("model.preview", "CANDIDATE_REQUIRED", "model.proposePatch"),
        ("model.validate", "CANDIDATE_REQUIRED", "model.proposePatch"),
        ("model.commit", "CANDIDATE_REQUIRED", "model.proposePatch"),
        ("model.revert", "NOTHING_TO_REVERT", None),
    ],
)
def test_illegal_cells_are_refused_with_the_next_operation(tmp_path, op, code, next_op) -> None:
    t, kernel, _ = task(tmp_path)
    t.call("interface.manifest", "m")
    out = t.call(op, "x")
    assert out.status == "blocked" and codes(out) == [code]
    if next_op:
        assert out.data["nextOperation"] == next_op
    assert out.data["completedPrefix"] == ["interface.manifest"]
    assert kernel.total_calls == 0


def test_commit_needs_validation(tmp_path: Path) -> None:
    t, _kernel, _ = task(tmp_path)
    t.call("interface.manifest", "m")
    t.call("model.proposePatch", "p", plan_args(t))
    out = t.call("model.commit", "c")
    assert codes(out) == ["PREVIEW_REQUIRED"]
    t.call("model.preview", "v")
    assert codes(t.call("model.commit", "c2")) == ["VALIDATION_REQUIRED"]


def test_request_ids_are_used_once_and_unknown_operations_refused(tmp_path) -> None:
    t, _, _ = task(tmp_path)
    assert t.call("interface.manifest", "same").status == "success"
    assert codes(t.call("model.read", "same")) == ["DUPLICATE_REQUEST_ID"]
    assert codes(t.call("model.explode", "new")) == ["UNKNOWN_OPERATION"]


@pytest.mark.parametrize(
    ("operation", "request_id", "code"),
    [
        ("model.read", 7, "ARGS_INVALID"),
        ("model.read", ["x"], "ARGS_INVALID"),
        ("model.read", None, "ARGS_INVALID"),
        ("model.read", "", "ARGS_INVALID"),
        (None, "r1", "UNKNOWN_OPERATION"),
        (5, "r2", "UNKNOWN_OPERATION"),
    ],
)
def test_calls_with_malformed_names_are_refused_with_an_envelope(
    tmp_path: Path, operation: Any, request_id: Any, code: str
) -> None:
    # Names arrive from a transport (MCP, a provider's tool call): wrong types are refused
    # like any other bad call, and a refused call without a usable id uses no id up.
    t, _, repo = task(tmp_path)
    head = repo.store.branches()
    envelope = t.call(operation, request_id)
    assert envelope.status == "blocked"
    assert codes(envelope) == [code]
    assert t.trace[-1].codes == [code]
    assert t.call("interface.manifest", "m1").status == "success"
    assert repo.store.branches() == head


def test_batch_and_adopt_refuse_malformed_input(tmp_path: Path) -> None:
    t, _, _ = task(tmp_path)
    assert [codes(e) for e in t.batch(None)] == [["ARGS_INVALID"]]  # type: ignore[arg-type]
    assert [codes(e) for e in t.batch([5])] == [["ARGS_INVALID"]]
    assert codes(t.adopt(["rev"])) == ["ARGS_INVALID"]  # type: ignore[arg-type]
    assert codes(t.call("model.read", 7)) == ["ARGS_INVALID"]
    # the placeholders those refusals carry are no request ids a client used
    for rid in ("batch", "batch:0", "<invalid>"):
        assert "DUPLICATE_REQUEST_ID" not in codes(t.call("interface.manifest", rid))


@pytest.mark.parametrize(
    ("task_id", "code"), [(None, "ARGS_INVALID"), ("a b", "STORE_BRANCH_INVALID")]
)
def test_a_refused_task_id_leaves_the_context_as_it_was(
    tmp_path: Path, task_id: Any, code: str
) -> None:
    ctx, kernel, repo = make_runtime(tmp_path)
    branches = repo.store.branches()
    with pytest.raises(AiraError) as exc:
        Task(ctx, kernel, task_id=task_id)
    assert exc.value.code == code
    assert repo.store.branches() == branches


def test_repair_is_capped_and_ends_as_cannot_proceed(tmp_path: Path) -> None:
    t, _kernel, _ = task(tmp_path)
    t.call("interface.manifest", "m")
    too_large = plan_args(t, radius=100)
    t.call("model.proposePatch", "p0", too_large)
    failed = t.call("model.preview", "v0")
    assert failed.status == "failed" and t.state.value == "repairing"
    assert failed.data["failedStep"] == "round"
    assert failed.diagnostics[0].code == "FILLET_RADIUS_TOO_LARGE"
    assert failed.diagnostics[0].phase == "preview"
    # named by the plan's step; the lowered node the kernel named is kept in `affected`
    node = t._candidate.lowered.node_of_step["round"]
    assert (failed.diagnostics[0].subject, failed.diagnostics[0].affected) == ("round", [node])
    assert failed.data["stepSchema"]["properties"]["radius"]
    for n in range(1, 4):
        t.call("model.proposePatch", f"p{n}", plan_args(t, radius=100))
        t.call("model.preview", f"v{n}")
    assert t.terminal is not None and t.terminal.value == "cannotProceed"
    assert t.terminal_reason == "REPAIR_CAP_REACHED"


def test_a_revoked_grant_stops_the_task_before_any_kernel_call(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    t.call("interface.manifest", "m")
    t.call("model.proposePatch", "p", plan_args(t))
    t.ctx.grant = t.ctx.grant.model_copy(update={"revoked": True})
    out = t.call("model.preview", "v")
    assert codes(out) == ["GRANT_REVOKED"]
    assert kernel.total_calls == 0
    assert t.terminal is not None and t.terminal.value == "failed"


def test_a_grant_that_forbids_the_write_class_blocks_the_plan(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    t.ctx.grant = t.ctx.grant.model_copy(update={"write_classes": []})
    manifest = t.call("interface.manifest", "m").data
    # the small catalog inlines only what the grant allows: queries and validators
    assert manifest["smallCatalog"] is True
    assert BOX_CAP not in manifest["contracts"] and VOLUME_RANGE_CAP in manifest["contracts"]
    hits = t.call("catalog.search", "s", {"intent": "box plate fillet round edges"}).data["hits"]
    denied = {h["capabilityId"]: h for h in hits if h["authorization"] == "denied"}
    assert BOX_CAP in denied and "policy:denied" in denied[BOX_CAP]["whyMatched"]
    t.call("catalog.search", "s2", {"intent": "define a parameter"})
    for cap in (BOX_CAP, FILLET_CAP, DEFINE_CAP):
        assert t.call("catalog.describe", f"d-{cap}", {"capabilityId": cap}).status == "success"
    out = t.call("model.proposePatch", "p", plan_args(t))
    assert out.status == "blocked"
    assert "PLAN_CLASS_DENIED" in codes(out)
    assert kernel.total_calls == 0


def test_task_protocol_requires_explicit_search(tmp_path: Path) -> None:
    t, _, _ = task(
        tmp_path,
        protocol=TaskProtocol(required_discovery_sequence=["catalog.search", "catalog.describe"]),
    )
    t.call("interface.manifest", "m")  # inlines contracts, but the protocol wants a search
    out = t.call("model.proposePatch", "p", plan_args(t))
    assert codes(out) == ["DISCOVERY_REQUIRED"]
    assert out.data["nextOperation"] == "catalog.search"


def test_a_head_change_makes_the_open_plan_stale(tmp_path: Path) -> None:
    t, _, repo = task(tmp_path)
    t.call("interface.manifest", "m")
    t.call("model.proposePatch", "p", plan_args(t))
    t.call("model.preview", "v")
    t.call("model.validate", "w")
    other = commit_patch(
        repo,
        t.branch,
        t.head,
        {
            "ops": [
                {
                    "op": "parameter.add",
                    "parameter": {"id": "pz", "label": "other", "type": "Length", "value": 5},
                }
            ]
        },
    )
    out = t.call("model.commit", "c")
    assert out.status == "stale" and codes(out) == ["STEP_STALE_REVISION"]
    assert out.data["summary"]["rev"] == other.rev
    assert t.head == other.rev


def test_batch_runs_reads_and_one_effect(tmp_path: Path) -> None:
    t, _, _ = task(tmp_path)
    t.call("interface.manifest", "m")
    out = t.batch(
        [
            {"requestId": "b1", "operation": "model.read"},
            {"requestId": "b2", "operation": "model.proposePatch", "args": plan_args(t)},
            {"requestId": "b3", "operation": "model.proposePatch", "args": plan_args(t)},
            {"requestId": "b1", "operation": "model.read"},
        ]
    )
    by_id = {e.request_id: e for e in out if e.request_id != "b1" or codes(e) == []}
    assert by_id["b2"].status == "success"
    assert codes(by_id["b3"]) == ["BATCH_DEFERRED"], "a second effect in one turn is deferred"
    assert any(codes(e) == ["DUPLICATE_REQUEST_ID"] for e in out)
    again = t.call("model.proposePatch", "b3", plan_args(t))  # deferred ids stay unused
    assert again.status == "success"


def test_revert_restores_the_previous_task_revision(tmp_path: Path) -> None:
    t, _, _repo = task(tmp_path)
    start = t.head
    t.call("interface.manifest", "m")
    for rid, op in [
        ("p", "model.proposePatch"),
        ("v", "model.preview"),
        ("w", "model.validate"),
        ("c", "model.commit"),
    ]:
        assert (
            t.call(op, rid, plan_args(t) if op == "model.proposePatch" else {}).status == "success"
        )
    assert t.head != start
    out = t.call("model.revert", "r")
    assert out.status == "success" and t.head == start


def test_publish_to_main(tmp_path: Path) -> None:
    t, _, repo = task(tmp_path)
    t.call("interface.manifest", "m")
    for rid, op in [("p", "model.proposePatch"), ("v", "model.preview"), ("w", "model.validate")]:
        t.call(op, rid, plan_args(t) if op == "model.proposePatch" else {})
    out = t.call("model.commit", "c", {"publish": True})
    assert out.status == "success" and "publish:main" in out.effects_observed
    assert repo.head("main") == t.head
    assert FILLET_CAP in t.ctx.capabilities


def _drive(t: Task, state: str) -> None:
    """Bring a fresh task into ``state`` through legal calls only."""
    steps: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "ready": [],
        "discovered": [("catalog.search", {"intent": "box"})],
        "described": [("interface.manifest", {})],
        "proposed": [("interface.manifest", {}), ("model.proposePatch", plan_args(t))],
        "previewed": [
            ("interface.manifest", {}),
            ("model.proposePatch", plan_args(t)),
            ("model.preview", {}),
        ],
        "validated": [
            ("interface.manifest", {}),
            ("model.proposePatch", plan_args(t)),
            ("model.preview", {}),
            ("model.validate", {}),
        ],
        "committed": [
            ("interface.manifest", {}),
            ("model.proposePatch", plan_args(t)),
            ("model.preview", {}),
            ("model.validate", {}),
            ("model.commit", {}),
        ],
        "repairing": [
            ("interface.manifest", {}),
            ("model.proposePatch", plan_args(t, radius=100)),
            ("model.preview", {}),
        ],
    }
    for n, (op, args) in enumerate(steps[state]):
        t.call(op, f"drive-{n}", args)
    assert t.state.value == state


ILLEGAL = [
    (cell.state.value, cell.operation.value, cell.rejection.value)
    for cell in __import__("aira_core.runtime.contract", fromlist=["CONTRACT"]).CONTRACT.matrix
    if not cell.legal and cell.state.value != "terminal"
]


@pytest.mark.parametrize(("state", "op", "code"), ILLEGAL)
def test_every_illegal_cell_is_refused_without_kernel_or_store_work(
    tmp_path: Path, state: str, op: str, code: str
) -> None:
    t, kernel, repo = task(tmp_path)
    _drive(t, state)
    calls, head, log = kernel.total_calls, t.head, len(repo.store.log(t.branch, None))
    args = plan_args(t) if op == "model.proposePatch" else {}
    out = t.call(op, "illegal", args)
    assert out.status == "blocked"
    assert codes(out) == [code]
    assert out.data["nextOperation"] is not None or code == "NOTHING_TO_REVERT"
    assert kernel.total_calls == calls, "no kernel call for a refused operation"
    assert (t.head, len(repo.store.log(t.branch, None))) == (head, log)
    assert t.state.value == state


def test_a_terminal_task_refuses_all_nine_operations(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    t.cancel()
    assert t.terminal is not None and t.terminal.value == "cancelled"
    ops = [o.value for o in __import__("aira_core.runtime.contract", fromlist=["O"]).O]
    for n, op in enumerate(ops):
        out = t.call(op, f"after-{n}", plan_args(t) if op == "model.proposePatch" else {})
        assert codes(out) == ["TASK_TERMINATED"], op
    assert kernel.total_calls == 0


# -- review hardening --------------------------------------------------------------------------


def _validated(t: Task) -> None:
    t.call("interface.manifest", "m")
    for rid, op in [("p", "model.proposePatch"), ("v", "model.preview"), ("w", "model.validate")]:
        out = t.call(op, rid, plan_args(t) if op == "model.proposePatch" else {})
        assert out.status == "success", out.diagnostics


def test_the_caller_cannot_approve_its_own_publish(tmp_path: Path) -> None:
    # One publish policy for every write: an unapproved publish is refused before anything
    # is committed, and the candidate stays open for a commit without publish.
    t, _, repo = task(tmp_path)
    t.ctx.grant = t.ctx.grant.model_copy(update={"confirmation_required": ["publish"]})
    main, branch_head = repo.head("main"), t.head
    _validated(t)
    out = t.call("model.commit", "c", {"publish": True, "approved": True})
    assert out.status == "blocked" and codes(out) == ["PLAN_APPROVAL_REQUIRED"]
    assert repo.head("main") == main and t.head == branch_head
    assert t.state.value == "validated" and out.effects_observed == []
    t.approve("publish")  # the host records the user's approval; the model cannot
    published = t.call("model.commit", "c2", {"publish": True})
    assert published.status == "success", published.diagnostics
    assert published.effects_observed == ["commit:task/t1", "publish:main"]
    assert repo.head("main") == t.head == published.data["published"]


def test_a_refused_publish_still_reports_the_commit(tmp_path: Path) -> None:
    t, _, repo = task(tmp_path)
    _validated(t)
    commit_patch(
        repo,
        "main",
        repo.head("main"),
        {
            "ops": [
                {
                    "op": "parameter.add",
                    "parameter": {"id": "pm", "label": "elsewhere", "type": "Length", "value": 1},
                }
            ]
        },
    )
    out = t.call("model.commit", "c", {"publish": True})
    assert out.status == "partial"
    assert codes(out) == ["STORE_PUBLISH_NOT_FAST_FORWARD"]
    assert out.effects_observed == ["commit:task/t1"]
    assert t.state.value == "committed" and out.data["rev"] == t.head


def test_a_tightened_protocol_counts_only_described_contracts(tmp_path: Path) -> None:
    t, kernel, _ = task(
        tmp_path,
        protocol=TaskProtocol(required_discovery_sequence=["catalog.search", "catalog.describe"]),
    )
    t.call("interface.manifest", "m")
    assert t.state.value == "ready", "inlined contracts do not count under the protocol"
    t.call("catalog.search", "s", {"intent": "box"})
    t.call("catalog.describe", "d", {"capabilityId": BOX_CAP})
    out = t.call("model.proposePatch", "p", plan_args(t))
    assert codes(out) == ["DISCOVERY_REQUIRED"]
    assert kernel.total_calls == 0


def test_a_failing_replay_of_preview_opens_repair(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    _validated(t)
    real = kernel.evaluate

    def failing(document, changed=None):  # type: ignore[no-untyped-def]
        from aira_core.diagnostics import Diagnostic
        from aira_core.extensions import Evaluation

        real(document, changed)
        return Evaluation(
            bodies={}, diagnostics=[Diagnostic(code="SOLID_INVALID", message="now broken")]
        )

    kernel.evaluate = failing  # type: ignore[method-assign]
    out = t.call("model.preview", "again")
    assert out.status == "failed" and t.state.value == "repairing"
    assert codes(t.call("model.commit", "c")) == ["CANDIDATE_REQUIRED"]


def test_revert_twice_does_not_reapply_the_commit(tmp_path: Path) -> None:
    t, _, _ = task(tmp_path)
    start = t.head
    _validated(t)
    t.call("model.commit", "c")
    assert t.call("model.revert", "r1").status == "success" and t.head == start
    second = t.call("model.revert", "r2")
    assert codes(second) == ["NOTHING_TO_REVERT"] and t.head == start


def test_a_kernel_that_raises_is_a_diagnostic_not_a_crash(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    t.call("interface.manifest", "m")
    t.call("model.proposePatch", "p", plan_args(t))

    def boom(document, changed=None):  # type: ignore[no-untyped-def]
        raise RuntimeError(f"segfault-ish in {Path.home()}/occt")

    kernel.evaluate = boom  # type: ignore[method-assign]
    out = t.call("model.preview", "v")
    assert out.status == "failed" and codes(out) == ["KERNEL_FAILED"]
    assert str(Path.home()) not in out.diagnostics[0].message


def test_budget_exhausted_and_expired_grant_end_the_task(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from aira_core.contracts.capability import GrantBudgets

    t, _, _ = task(tmp_path)
    t.ctx.grant = t.ctx.grant.model_copy(update={"budgets": GrantBudgets(compute_seconds=0.0)})
    t.call("interface.manifest", "m")
    assert t.terminal is not None and t.terminal.value == "budgetExhausted"

    t2, kernel, _ = task(tmp_path / "second")
    t2.ctx.grant = t2.ctx.grant.model_copy(
        update={"expires_at": datetime.now(UTC) - timedelta(seconds=1)}
    )
    out = t2.call("interface.manifest", "m")
    assert codes(out) == ["GRANT_EXPIRED"] and t2.terminal.value == "failed"
    assert kernel.total_calls == 0


@pytest.mark.parametrize(
    "args",
    [
        ["not", "a", "mapping"],
        {"select": ["parameters"], "limit": "x"},
    ],
)
def test_malformed_arguments_are_refused(tmp_path: Path, args: Any) -> None:
    t, _, _ = task(tmp_path)
    out = t.call("model.read", "r", args)
    assert codes(out) == ["ARGS_INVALID"]


def test_malformed_batches_are_refused_call_by_call(tmp_path: Path) -> None:
    t, _, _ = task(tmp_path)
    out = t.batch(
        [
            {"operation": "model.read"},
            "junk",
            {"requestId": "x", "operation": "nope"},
            {"requestId": "ok", "operation": "model.read", "args": None},
        ]
    )
    assert [codes(e) for e in out][:3] == [["ARGS_INVALID"]] * 3
    assert out[-1].status == "success"


def test_the_shared_corpus_replays_through_the_task(tmp_path: Path, monkeypatch) -> None:
    """The runtime consumes the same fixtures later transports (MCP) reuse: every illegal
    sequence of the corpus is refused by a real Task at the same step, with the same code,
    completed prefix and next operation (no small-catalog inlining, as in the corpus)."""
    from runtime_factory import step

    from aira_core.catalog import disclosure
    from aira_core.runtime.contract import load_corpus

    monkeypatch.setattr(disclosure, "SMALL_CATALOG_BYTES", 0)
    monkeypatch.setenv("AIRA_EMBEDDER", "hashing")  # "box" must find the box: a sequence test
    replayed = 0
    for n, case in enumerate(load_corpus("illegal_sequences")):
        steps, expected = case["steps"], case["expected"]
        if case.get("start", "ready") != "ready" or any("diagnostic" in s for s in steps):
            continue
        t, _kernel, _ = task(tmp_path / f"case{n}")
        box_only = {
            "plan": plan(
                t.head, step("plate", BOX_CAP, label="plate", length=10, width=10, height=10)
            ).to_wire()
        }
        arguments = {
            "model.proposePatch": box_only,
            "catalog.search": {"intent": "box"},
            "catalog.describe": {"capabilityId": BOX_CAP},
        }
        outs = [
            t.call(s_["operation"], f"s{k}", arguments.get(s_["operation"], {}))
            for k, s_ in enumerate(steps)
        ]
        refused = outs[expected["refusedAt"]]
        assert codes(refused) == [expected["code"]], case["name"]
        assert refused.data["completedPrefix"] == expected["completedPrefix"], case["name"]
        assert refused.data["nextOperation"] == expected["nextOperation"], case["name"]
        assert all(o.status == "success" for o in outs[: expected["refusedAt"]]), case["name"]
        replayed += 1
    assert replayed >= 6


# -- the one read path: kernel queries are admitted, grant-checked and traced --------------------


def _committed(t: Task) -> None:
    _validated(t)
    assert t.call("model.commit", "c", {}).status == "success"


def test_a_query_runs_through_the_task_and_is_traced(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    _committed(t)
    before = kernel.calls["query"]
    out = t.call("model.read", "q1", {"query": "massProperties", "args": {"target": "b:plate"}})
    assert out.status == "success", out.diagnostics
    assert out.data["query"] == "cap:query.massProperties@1" and out.data["rev"] == t.head
    assert out.data["result"]["volume"] > 0
    assert kernel.calls["query"] == before + 1
    record = t.trace[-1]
    assert (record.request_id, record.operation, record.status) == ("q1", "model.read", "success")
    # a query of the committed head is a read-back: the runtime may decide completion on it
    assert t.terminal is not None and t.terminal.value == "completed"


def test_a_query_the_grant_does_not_allow_never_reaches_the_kernel(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    _committed(t)
    t.ctx.grant = t.ctx.grant.model_copy(update={"query_classes": []})
    before = kernel.calls["query"]
    out = t.call("model.read", "q", {"query": "massProperties", "args": {"target": "b:plate"}})
    assert out.status == "blocked" and codes(out) == ["PLAN_CLASS_DENIED"]
    assert kernel.calls["query"] == before
    assert t.trace[-1].codes == ["PLAN_CLASS_DENIED"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"query": "noSuchQuery"}, "QUERY_UNKNOWN"),
        ({"query": 7}, "ARGS_INVALID"),
        ({"query": "massProperties", "args": [1]}, "ARGS_INVALID"),
        ({"query": "massProperties", "rev": 5}, "ARGS_INVALID"),
    ],
)
def test_a_bad_query_is_refused_with_a_code(tmp_path: Path, args: Any, code: str) -> None:
    t, kernel, _ = task(tmp_path)
    before = kernel.total_calls
    out = t.call("model.read", "q", args)
    assert out.status == "blocked" and codes(out) == [code]
    assert kernel.total_calls == before


def test_a_kernel_raising_in_a_query_is_kernel_failed_not_an_exception(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    _committed(t)

    def boom(document, ref, args):  # type: ignore[no-untyped-def]
        raise RuntimeError("query exploded")

    kernel.query = boom  # type: ignore[method-assign]
    out = t.call("model.read", "q", {"query": "massProperties", "args": {"target": "b:plate"}})
    assert out.status == "failed" and codes(out) == ["KERNEL_FAILED"]
    assert "query exploded" in out.diagnostics[0].message
    assert t.trace[-1].codes == ["KERNEL_FAILED"]


def test_a_terminated_task_runs_no_query(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    t.cancel()
    before = kernel.total_calls
    out = t.call("model.read", "q", {"query": "massProperties", "args": {}})
    assert codes(out) == ["TASK_TERMINATED"] and kernel.total_calls == before


def test_a_reader_on_main_creates_no_branch(tmp_path: Path) -> None:
    ctx, kernel, repo = make_runtime(tmp_path)
    branches = repo.store.branches()
    reader = Task(ctx, kernel, task_id="reader", branch="main")
    assert reader.head == repo.head("main")
    assert reader.call("model.read", "r").status == "success"
    assert repo.store.branches() == branches


def test_a_query_of_another_revision_needs_a_grant_that_covers_its_branch(tmp_path: Path) -> None:
    ctx, kernel, repo = make_runtime(tmp_path)
    from aira_core.contracts.capability import ReadScope

    ctx.grant = ctx.grant.model_copy(update={"readable": ReadScope(branches=["task/t1"])})
    t = Task(ctx, kernel, task_id="t1")
    add = {
        "op": "parameter.add",
        "parameter": {"id": "pq", "label": "q", "type": "Length", "value": 1},
    }
    elsewhere = commit_patch(repo, "main", repo.head("main"), {"ops": [add]}).rev  # main only
    before = kernel.calls["query"]
    args = {"query": "massProperties", "args": {"target": "b:x"}}
    out = t.call("model.read", "q", {**args, "rev": elsewhere})
    assert out.status == "blocked" and codes(out) == ["PLAN_SCOPE_DENIED"]
    assert kernel.calls["query"] == before
    # the task branch's own history is readable: the revision it was branched from
    start = repo.store.log("task/t1", limit=None)[-1].rev
    own = t.call("model.read", "q2", {**args, "rev": start})
    assert "PLAN_SCOPE_DENIED" not in codes(own) and kernel.calls["query"] == before + 1


def test_a_passing_plans_warnings_come_with_the_proposal(tmp_path: Path) -> None:
    t, kernel, _ = task(tmp_path)
    t.call("interface.manifest", "m")
    steps = composite_steps()
    steps[2] = steps[2].model_copy(
        update={"args": {**steps[2].args, "edges": {"body": "b:plate", "select": "not >Z or <Z"}}}
    )
    out = t.call("model.proposePatch", "p", {"plan": plan(t.head, *steps).to_wire()})
    assert out.status == "success" and t.state.value == "proposed"
    assert codes(out) == ["SELECTOR_PRECEDENCE_AMBIGUOUS"]
    assert out.diagnostics[0].severity == "warning" and kernel.total_calls == 0
