"""The task runtime: every call admitted by the contract before any kernel or store work,
grants enforced at execution, adaptive discovery, repair cap and runtime-decided ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runtime_factory import (
    BOX_CAP,
    FILLET_CAP,
    composite_steps,
    make_runtime,
    plan,
)

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
    t.call("interface.manifest", "m")
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
    other = repo.apply(
        t.ctx.branch,
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
    ran = [e.request_id for e in out]
    assert "b3" not in ran, "a second effect in one turn is deferred"
    assert "b2" in ran
    assert any(codes(e) == ["DUPLICATE_REQUEST_ID"] for e in out)


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
    calls, head, log = kernel.total_calls, t.head, len(repo.store.log(t.ctx.branch, None))
    args = plan_args(t) if op == "model.proposePatch" else {}
    out = t.call(op, "illegal", args)
    assert out.status == "blocked"
    assert codes(out) == [code]
    assert out.data["nextOperation"] is not None or code == "NOTHING_TO_REVERT"
    assert kernel.total_calls == calls, "no kernel call for a refused operation"
    assert (t.head, len(repo.store.log(t.ctx.branch, None))) == (head, log)
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
