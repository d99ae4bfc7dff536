"""The REAL Guard adapter (aira_continuity.guard.FidelityGuard) on a Task of the FAKE kernel,
bound through the REAL intent adapter (aira_continuity.intent.IntentLoopAdapter) to a
TaskContractLite file whose ``authorization.requires_user`` is ``["action:publish"]``: a commit
runs unasked; a publishing commit is asked (``GUARD_APPROVAL_REQUIRED``, main unchanged) until
the host approves that one call, which then publishes once; a later publish is asked again;
the receipts written at the end record the ``ask``, and nothing is written back to the
contract file, the intent owner's ledger or its bound contract."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import composite_steps, make_runtime, plan
from test_step_loop import INTENT

from aira_continuity.guard import FidelityGuard, rule_id
from aira_continuity.intent import IntentLoopAdapter
from aira_continuity.wire import ReceiptBundle, TaskContractLite, read
from aira_core.integrations import GUARD_APPROVAL_REQUIRED, ContractBinding, Integrations
from aira_core.runtime.session import Task
from tests.continuity.samples import NO_LOCAL_INSTALL

PUBLISH_RULE = "action:publish"
ASKED = rule_id("requires_user", PUBLISH_RULE)


def contract_value(requires_user: list[str]) -> dict[str, Any]:
    value = copy.deepcopy(NO_LOCAL_INSTALL)
    value["authorization"] = {"allowed": [], "requires_user": requires_user, "forbidden": []}
    return value


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root``: relative path → SHA-256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def candidate(t: Task, suffix: str, radius: Any = None) -> None:
    """Propose, preview and validate the composite plan on the task's head."""
    args = {"plan": plan(t.head, *composite_steps(radius=radius)).to_wire()}
    for rid, op in [("p", "model.proposePatch"), ("v", "model.preview"), ("w", "model.validate")]:
        out = t.call(op, rid + suffix, args if op == "model.proposePatch" else {})
        assert out.status == "success", out.diagnostics


@dataclass
class Owned:
    """A task judged by the real guard, which follows the real intent owner's binding."""

    task: Task
    repo: Any
    guard: FidelityGuard
    intent: IntentLoopAdapter
    seam: Integrations
    owner: Path  # the contract file and the owner's ledger


def owned(tmp_path: Path) -> Owned:
    owner = tmp_path / "owner"
    owner.mkdir()
    (owner / "contract.json").write_text(json.dumps(contract_value([PUBLISH_RULE])))
    intent = IntentLoopAdapter(owner / "contract.json", owner / "state")
    guard = FidelityGuard(intent=intent, out_dir=tmp_path / "guard")
    seam = Integrations([intent, guard])
    assert seam.bind(INTENT) is not None and intent.diagnostics == []
    ctx, kernel, repo = make_runtime(tmp_path)
    t = Task(ctx, kernel, task_id="t1", integrations=seam)
    assert t.call("interface.manifest", "m").status == "success"
    return Owned(t, repo, guard, intent, seam, owner)


def codes(out: Any) -> list[str]:
    return [d.code for d in out.diagnostics]


def test_a_commit_runs_and_each_publish_waits_for_its_own_approval(tmp_path: Path) -> None:
    o = owned(tmp_path)
    t, repo = o.task, o.repo
    main, start = repo.head("main"), t.head

    # a commit on the task's branch: allowed, not asked
    candidate(t, "1")
    committed = t.call("model.commit", "c")
    assert committed.status == "success" and codes(committed) == []
    assert t.head != start and repo.head("main") == main
    assert t.pending_approvals == []
    assert t.call("model.revert", "r").status == "success" and t.head == start

    # a publishing commit: asked, nothing runs
    candidate(t, "2", radius=1.5)
    asked = t.call("model.commit", "pub1", {"publish": True})
    assert asked.status == "blocked" and codes(asked) == [GUARD_APPROVAL_REQUIRED]
    assert asked.diagnostics[0].approval is True
    assert asked.data["approvalRequired"] == {"requestId": "pub1", "operation": "model.commit"}
    assert "explicit_user_authorization_required" in asked.diagnostics[0].message
    assert repo.head("main") == main and t.head == start and t.state.value == "validated"
    assert t.pending_approvals == [("model.commit", "pub1")]

    # approved: that one call, sent again as it was, publishes
    assert t.approve_call("pub1") is True and t.pending_approvals == []
    judged = len(o.seam.records)
    published = t.call("model.commit", "pub1", {"publish": True})
    assert published.status == "success", published.diagnostics
    assert published.data["published"] == repo.head("main") != main
    assert len(o.seam.records) == judged  # the approved call is not judged again
    # once: the approval is spent and the call cannot run a second time
    once = repo.head("main")
    assert t.approve_call("pub1") is False
    again = t.call("model.commit", "pub1", {"publish": True})
    assert again.status != "success" and "DUPLICATE_REQUEST_ID" in codes(again)
    assert repo.head("main") == once

    # a later publish of another commit: asked anew, main stays where the approved one put it
    assert t.call("model.revert", "r2").status == "success"
    candidate(t, "3", radius=1.0)
    later = t.call("model.commit", "pub2", {"publish": True})
    assert later.status == "blocked" and codes(later) == [GUARD_APPROVAL_REQUIRED]
    assert later.data["approvalRequired"] == {"requestId": "pub2", "operation": "model.commit"}
    assert repo.head("main") == once and t.pending_approvals == [("model.commit", "pub2")]


def test_the_receipts_record_the_asks_and_nothing_goes_back_to_the_owner(tmp_path: Path) -> None:
    o = owned(tmp_path)
    t = o.task
    owner_before = tree(o.owner)
    bound_before = (o.intent.binding, o.intent.bound_contract.to_wire())
    assert bound_before[1] == contract_value([PUBLISH_RULE])

    candidate(t, "1")
    t.call("model.commit", "c")
    t.call("model.revert", "r")
    candidate(t, "2", radius=1.5)
    t.call("model.commit", "pub1", {"publish": True})
    assert t.approve_call("pub1")
    assert t.call("model.commit", "pub1", {"publish": True}).status == "success"
    t.call("model.revert", "r2")
    candidate(t, "3", radius=1.0)
    t.call("model.commit", "pub2", {"publish": True})

    assert not (tmp_path / "guard").exists()  # nothing written before the end
    before_end = tree(tmp_path)
    o.seam.finish()
    written = sorted((tmp_path / "guard").iterdir())
    assert len(written) == 1 and written[0].name.startswith("receipts-")
    # the guard wrote its one file and changed nothing else
    after_end = tree(tmp_path)
    assert set(after_end) - set(before_end) == {str(written[0].relative_to(tmp_path))}
    assert {k: v for k, v in after_end.items() if k in before_end} == before_end

    bundle = read(ReceiptBundle, json.loads(written[0].read_text()))
    judged = [
        (e.tool_name, tuple(e.facts["action_tags"]), r.decision)
        for e, r in zip(bundle.events, bundle.receipts, strict=True)
    ]
    read_only = [
        ("model.proposePatch", ("read",), "continue"),
        ("model.preview", ("read",), "continue"),
        ("model.validate", ("read",), "continue"),
    ]
    commit = ("model.commit", ("write_workspace",), "continue")
    revert = ("model.revert", ("write_workspace",), "continue")
    publish = ("model.commit", ("publish", "write_workspace"), "ask")
    # the approved pub1 ran unjudged: it has no receipt of its own
    assert judged == [*read_only, commit, revert, *read_only, publish, revert, *read_only, publish]
    asks = [r for r in bundle.receipts if r.decision == "ask"]
    binding = ContractBinding(o.intent.binding.contract_ref, o.intent.binding.contract_version)
    for receipt in asks:
        assert receipt.reason_codes == ["explicit_user_authorization_required"]
        assert receipt.rule_ids == [ASKED] and receipt.visibility == "user"
        assert (receipt.contract_ref, receipt.contract_version) == (
            binding.contract_ref,
            binding.contract_version,
        )
    assert binding.contract_ref.startswith("lite:")  # the owner's binding, not "unbound"
    assert {r.decision for r in bundle.receipts} == {"continue", "ask"}

    # read-only towards the owner: the contract file and the ledger are byte for byte as they
    # were, the owner's binding and contract unchanged, the guard judged by that very contract
    assert tree(o.owner) == owner_before
    assert (o.intent.binding, o.intent.bound_contract.to_wire()) == bound_before
    assert o.guard.contract is o.intent.bound_contract


@pytest.mark.parametrize(("requires_user", "decision"), [([PUBLISH_RULE], "ask"), ([], "continue")])
def test_the_ask_is_the_contracts_rule_given_directly(
    tmp_path: Path, requires_user: list[str], decision: str
) -> None:
    guard = FidelityGuard()
    guard.use_contract(read(TaskContractLite, contract_value(requires_user)))
    ctx, kernel, repo = make_runtime(tmp_path)
    t = Task(ctx, kernel, task_id="t1", integrations=Integrations([guard]))
    main = repo.head("main")
    assert t.call("interface.manifest", "m").status == "success"
    candidate(t, "1")
    out = t.call("model.commit", "pub", {"publish": True})
    receipt = guard.bundles()["t1"]["receipts"][-1]
    assert receipt["decision"] == decision
    if decision == "ask":
        assert codes(out) == [GUARD_APPROVAL_REQUIRED] and repo.head("main") == main
        assert receipt["rule_ids"] == [ASKED]
    else:  # no rule: the same publish runs unasked (allowed is no allowlist)
        assert out.status == "success" and out.data["published"] == repo.head("main") != main
        assert receipt["rule_ids"] == []
