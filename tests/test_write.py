"""``WritePath.apply``: check → propose → preview → validate → commit, end to end.

Runs on the signed test package and the FAKE analytic kernel of ``runtime_factory`` (a test
fake: boxes and vertical-edge fillets computed in closed form, no CAD). What a caller relies
on: a plan lands all or nothing; every outcome is an observation envelope bound to a
revision; a failure names the stage, ``failedStep`` and that step's input schema and leaves
the store as it was; assertions are re-checked on every later commit; two writers on one
head never both win; a grant is enforced before the kernel is reached.

Known production bugs are marked ``xfail(strict=True)`` with the reason (``bug(...)``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from runtime_factory import (
    BOX,
    BOX_CAP,
    FILLET,
    FILLET_CAP,
    FILLET_RADIUS_TOO_LARGE,
    MASS_PROPERTIES_CAP,
    PLATE,
    SELECTION_EMPTY,
    SET_CAP,
    VOLUME_OUT_OF_RANGE,
    VOLUME_RANGE_CAP,
    FakeGeometryKernel,
    composite_steps,
    input_schema,
    make_runtime,
    plan,
    plate_volume,
    seed,
    step,
)

from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.contracts.amir import AmirDocument
from aira_core.contracts.capability import GrantBudgets
from aira_core.contracts.plan import ObservationEnvelope
from aira_core.diagnostics import Diagnostic
from aira_core.extensions import Kernel, QueryResult, ValidationOutcome
from aira_core.model.repository import ModelRepository
from aira_core.model.store import MAIN
from aira_core.runtime.contract import MetaOperation
from aira_core.runtime.plan import PlanContext
from aira_core.runtime.write import WritePath

REGISTERED_OPERATIONS = {op.value for op in MetaOperation}


def codes(envelope: ObservationEnvelope) -> list[str]:
    return [d.code for d in envelope.diagnostics]


def snapshot(repository: ModelRepository) -> tuple[dict[str, str], list[Any]]:
    return repository.store.branches(), repository.store.log(MAIN, limit=None)


def post_step(sid: str = "post") -> Any:
    return step(sid, BOX_CAP, label=sid, length=5, width=5, height=5)


# -- the fake kernel itself --------------------------------------------------------------------


def _doc(*, radius: float | None = None, select: str = "|Z", centered: bool = True) -> Any:
    nodes: list[dict[str, Any]] = [
        {
            "id": "nbox",
            "op": BOX,
            "inputs": {
                "length": {"param": "pw"},
                "width": {"value": 3, "unit": "cm"},
                "height": {"value": 10},
                "centered": {"value": centered},
            },
        }
    ]
    tip = "nbox"
    if radius is not None:
        nodes.append(
            {
                "id": "nfil",
                "op": FILLET,
                "inputs": {
                    "target": {"node": "nbox"},
                    "edges": {"body": "bplate", "select": select, "entity": "Edge"},
                    "radius": {"value": radius},
                },
            }
        )
        tip = "nfil"
    return AmirDocument.model_validate(
        {
            "parameters": [
                {"id": "pw", "label": "width", "type": "Length", "unit": "mm", "value": 40}
            ],
            "nodes": nodes,
            "bodies": [{"id": "bplate", "label": "plate", "tip": tip}],
        }
    )


def test_fake_kernel_is_a_kernel_with_analytic_geometry() -> None:
    kernel = FakeGeometryKernel()
    assert isinstance(kernel, Kernel)
    assert "FAKE" in (FakeGeometryKernel.__doc__ or "")

    box = kernel.evaluate(_doc())
    assert box.ok and box.evaluated_nodes == ["nbox"]
    assert box.bodies["bplate"].volume == pytest.approx(40 * 30 * 10, rel=1e-12)
    assert box.bodies["bplate"].bounding_box == (-20, -15, -5, 20, 15, 5)
    corner = kernel.evaluate(_doc(centered=False)).bodies["bplate"]
    assert corner.bounding_box == (0, 0, 0, 40, 30, 10)

    rounded = kernel.evaluate(_doc(radius=2))
    assert rounded.ok
    assert rounded.evaluated_nodes == ["nfil"]  # the box came from the cache
    expected = 40 * 30 * 10 - 4 * (1 - math.pi / 4) * 2**2 * 10
    assert rounded.bodies["bplate"].volume == pytest.approx(expected, rel=1e-12)
    assert kernel.evaluate(_doc(radius=2)).evaluated_nodes == []

    too_large = kernel.evaluate(_doc(radius=15))  # min(40, 30) / 2
    assert [(d.code, d.subject) for d in too_large.diagnostics] == [
        (FILLET_RADIUS_TOO_LARGE, "nfil")
    ]
    assert not too_large.bodies["bplate"].valid
    empty = kernel.evaluate(_doc(radius=2, select=">Z"))
    assert [(d.code, d.subject) for d in empty.diagnostics] == [(SELECTION_EMPTY, "nfil")]

    assert json.loads(kernel.export(_doc(radius=2), "json"))["bplate"]["volume"] == pytest.approx(
        expected
    )
    assert kernel.export(_doc(), "step") == b""
    assert kernel.calls["evaluate"] == 6 and kernel.calls["export"] == 2
    assert kernel.total_calls == 8


# -- success -----------------------------------------------------------------------------------


def test_composite_plan_commits_with_a_full_success_envelope(tmp_path: Path) -> None:
    grant = LOCAL_GRANT.model_copy(update={"budgets": GrantBudgets(compute_seconds=100)})
    ctx, kernel, repository = make_runtime(tmp_path, grant=grant)
    init = repository.head()
    log_before = repository.store.log(MAIN, limit=None)

    envelope = WritePath(ctx, kernel).apply(plan(init, *composite_steps()), "req:1")

    assert envelope.status == "success", envelope.diagnostics
    assert envelope.request_id == "req:1"
    assert envelope.diagnostics == []
    head = repository.head()
    assert head != init
    assert envelope.observed_revision == head == envelope.data["rev"]
    assert envelope.effects_observed == ["commit:main"]
    assert envelope.data["branch"] == MAIN and envelope.data["published"] is None

    summary = repository.summary(head)
    body = summary.aliases["b:plate"]
    assert envelope.data["summary"] == summary.to_wire()
    assert "p:width" in summary.aliases
    assert summary.counts == {"parameters": 1, "nodes": 2, "bodies": 1, "assertions": 1}
    assert envelope.data["createdBodies"] == {"plate": body, "round": body}

    result = envelope.data["bodies"][body]
    assert result["valid"] is True
    assert result["volume"] == pytest.approx(plate_volume(), rel=1e-9)
    assert plate_volume() == pytest.approx(40 * 30 * 10 - 4 * (1 - math.pi / 4) * 4 * 10)
    assert list(envelope.data["assertions"].values()) == [True]
    assert set(envelope.data["queries"]) == {"mass"}

    consumed = envelope.budgets.consumed["kernelSeconds"]
    assert consumed >= 0
    assert envelope.budgets.remaining["kernelSeconds"] == pytest.approx(100 - consumed, abs=1e-5)
    assert envelope.next_actions
    assert {a.operation for a in envelope.next_actions} <= REGISTERED_OPERATIONS

    document = repository.document(head)
    (plate,) = document.bodies
    tip = next(n for n in document.nodes if n.id == plate.tip)
    assert tip.op == FILLET
    log = repository.store.log(MAIN, limit=None)
    assert len(log) == len(log_before) + 1
    assert log[0].meta is not None and log[0].meta["planId"] == envelope.data["planId"]
    assert log[0].meta["steps"] == ["width", "plate", "round", "check", "mass"]
    assert kernel.calls["evaluate"] == 1 and kernel.calls["validate"] == 1
    assert kernel.calls["query"] == 1


def test_a_query_step_reads_the_state_at_its_position_in_the_plan(tmp_path: Path) -> None:
    """A plan sees its own order: a query before the fillet reads the sharp box, the one
    after it the rounded plate; one evaluation of the document, one of each prefix."""
    ctx, kernel, repository = make_runtime(tmp_path)
    steps = composite_steps()
    before = step("sharp", MASS_PROPERTIES_CAP, target="b:plate")
    width, plate_step, round_step, check, mass = steps
    ordered = [width, plate_step, before, round_step, check, mass]
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *ordered), "q")
    assert envelope.status == "success", envelope.diagnostics
    queries = envelope.data["queries"]
    assert queries["sharp"]["volume"] == pytest.approx(40 * 30 * 10, rel=1e-9)
    assert queries["mass"]["volume"] == pytest.approx(plate_volume(), rel=1e-9)
    # and one before the step that makes its body names what is not there yet: plan.check
    # refuses it, naming the step
    ctx2, kernel2, repository2 = make_runtime(tmp_path / "fresh")
    early = step("early", MASS_PROPERTIES_CAP, target="plate")
    out = WritePath(ctx2, kernel2).apply(plan(repository2.head(), width, early, plate_step), "q2")
    assert out.status == "blocked" and out.data["failedStep"] == "early"
    assert [d.code for d in out.diagnostics] == ["PLAN_REFERENCE_UNRESOLVED"]


def positioned_check(vmin: float, vmax: float) -> list[Any]:
    """The composite plan with its volume check moved before the fillet: it then judges
    the sharp 40 × 30 × 10 box (12 000 mm³), not the rounded plate."""
    width, plate_step, round_step, _check, mass = composite_steps()
    check = step("check", VOLUME_RANGE_CAP, label="volume", target="b:plate", min=vmin, max=vmax)
    return [width, plate_step, check, round_step, mass]


def test_a_validator_step_judges_its_body_at_its_position_in_the_plan(tmp_path: Path) -> None:
    """A range that holds for the box only: the check passes where it stands, the plan
    commits, the assertion stays on the body, and the warning says a later commit will
    re-check it on the rounded plate (which fails it: the next write is refused)."""
    assert plate_volume() < 11_990 < 12_000
    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    p = plan(repository.head(), *positioned_check(11_990, 12_010))
    aid = tx.propose(p, "r0").lowered.assertion_of_step["check"]

    envelope = tx.apply(p, "r")

    assert envelope.status == "success", envelope.diagnostics
    assert envelope.data["assertions"] == {aid: True}
    assert [(d.code, d.severity.value, d.subject, d.affected) for d in envelope.diagnostics] == [
        ("ASSERTION_FAILS_ON_RESULT", "warning", "check", [aid])
    ]
    assert "outside" in envelope.diagnostics[0].message  # the measured reason, in words
    (assertion,) = repository.document(repository.head()).assertions
    (plate,) = repository.document(repository.head()).bodies
    assert (assertion.id, assertion.target) == (aid, plate.id)
    later = tx.apply(plan(repository.head(), post_step()), "later")
    assert later.status == "failed" and later.data["stage"] == "validate"
    assert [(d.code, d.subject) for d in later.diagnostics] == [("VOLUME_OUT_OF_RANGE", aid)]


def test_a_validator_step_refuses_the_state_at_its_position(tmp_path: Path) -> None:
    """The opposite: a range that holds for the rounded plate, not the box. Judged on the
    plan's result it would pass; judged where it stands, it fails and names its step."""
    assert 11_900 < plate_volume() < 11_990
    ctx, kernel, repository = make_runtime(tmp_path)
    before = snapshot(repository)
    at_end = WritePath(ctx, kernel).propose(
        plan(repository.head(), *composite_steps(vmin=11_900, vmax=11_990)), "end"
    )
    assert WritePath(ctx, kernel).validate(at_end, "end")[0][0].passed  # the plate fits

    envelope = WritePath(ctx, kernel).apply(
        plan(repository.head(), *positioned_check(11_900, 11_990)), "r"
    )

    assert envelope.status == "failed" and envelope.data["stage"] == "validate"
    assert envelope.data["failedStep"] == "check"
    assert [(d.code, d.subject) for d in envelope.diagnostics] == [("VOLUME_OUT_OF_RANGE", "check")]
    assert "12000" in envelope.diagnostics[0].message  # the box's volume
    assert snapshot(repository) == before


def test_a_validator_step_at_the_end_is_judged_once_on_the_result(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *composite_steps()), "r")
    assert envelope.status == "success" and envelope.diagnostics == []
    assert kernel.calls["validate"] == 1  # a query after it changes no body


def test_a_query_as_the_first_step_of_a_writing_plan_reads_the_base(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    seed(repository, "plate")
    first = step("first", MASS_PROPERTIES_CAP, target="b:plate")
    steps = [first, post_step()]
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *steps), "r")
    assert envelope.status == "success", envelope.diagnostics
    assert envelope.data["queries"]["first"]["volume"] == pytest.approx(12_000, rel=1e-9)


def test_query_step_data_is_in_the_envelope(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *composite_steps()), "q")
    assert envelope.status == "success"
    mass = envelope.data["queries"]["mass"]
    assert mass["volume"] == pytest.approx(plate_volume(), rel=1e-9)
    assert mass["boundingBox"] == [-20, -15, -5, 20, 15, 5]


def test_query_diagnostics_are_reported(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)

    def failing_query(document: Any, ref: str, args: Any) -> QueryResult:
        kernel.calls["query"] += 1
        return QueryResult({}, [Diagnostic(code="QUERY_FAILED", message="fake failure")])

    kernel.query = failing_query  # type: ignore[method-assign]
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *composite_steps()), "q")
    assert kernel.calls["query"] == 1
    assert [(d.code, d.subject) for d in envelope.diagnostics] == [("QUERY_FAILED", "mass")]


def test_a_query_diagnostic_names_its_step_and_keeps_the_kernels_subject(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)

    def failing_query(document: Any, ref: str, args: Any) -> QueryResult:
        target = args["target"]
        return QueryResult({}, [Diagnostic(code="QUERY_FAILED", message="x", subject=target)])

    kernel.query = failing_query  # type: ignore[method-assign]
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *composite_steps()), "q")
    body = repository.aliases(repository.head()).resolve("b:plate")
    assert [(d.subject, d.affected) for d in envelope.diagnostics] == [("mass", [body])]


@pytest.mark.parametrize("radius", [100, 15])
def test_a_preview_failure_names_the_step_as_its_subject(tmp_path: Path, radius: int) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    p = plan(repository.head(), *composite_steps(radius=radius))
    lowered = WritePath(ctx, kernel).propose(p, "r0").lowered
    envelope = WritePath(ctx, kernel).apply(p, "r")
    assert envelope.data["failedStep"] == "round"
    assert [(d.code, d.subject, d.affected, d.phase) for d in envelope.diagnostics] == [
        (FILLET_RADIUS_TOO_LARGE, "round", [lowered.node_of_step["round"]], "preview")
    ]
    # the kernel itself still names its node: the write path maps it to the step
    document = WritePath(ctx, kernel).propose(p, "r1").document
    assert [d.subject for d in kernel.evaluate(document).diagnostics] == [
        lowered.node_of_step["round"]
    ]


def test_a_patch_problem_of_a_lowered_node_names_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aira_core.runtime.write as write
    from aira_core.model.patch import PatchRejected

    ctx, kernel, repository = make_runtime(tmp_path)
    p = plan(repository.head(), *composite_steps())
    lowered = WritePath(ctx, kernel).propose(p, "r0").lowered
    fillet = lowered.node_of_step["round"]
    base = repository.document(repository.head())
    index = write._entity_order(base, lowered)["nodes"].index(fillet)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        # a pointer into the patched document, as apply_patch's problems carry
        bad = Diagnostic(code="X_BAD", message="bad input", pointer=f"/nodes/{index}/inputs/r")
        raise PatchRejected([bad, Diagnostic(code="X_DOC", message="document-level")])

    monkeypatch.setattr(write, "apply_patch", refuse)
    envelope = WritePath(ctx, kernel).apply(p, "r")
    assert envelope.data["stage"] == "propose" and envelope.data["failedStep"] == "round"
    assert [(d.code, d.subject, d.affected, d.pointer) for d in envelope.diagnostics] == [
        ("X_BAD", "round", [fillet], f"/nodes/{index}/inputs/r"),
        ("X_DOC", None, None, None),  # of no step: as it was
    ]


def test_a_validate_failure_names_the_step_of_its_assertion(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    p = plan(repository.head(), *composite_steps(vmin=1000, vmax=10_000))
    assertion = WritePath(ctx, kernel).propose(p, "r0").lowered.assertion_of_step["check"]
    envelope = WritePath(ctx, kernel).apply(p, "r")
    assert [(d.code, d.subject, d.affected) for d in envelope.diagnostics] == [
        (VOLUME_OUT_OF_RANGE, "check", [assertion])
    ]


# -- incremental evaluation --------------------------------------------------------------------


def test_parameter_change_reevaluates_only_downstream_nodes(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    assert tx.apply(plan(repository.head(), *composite_steps()), "a").status == "success"
    post = tx.apply(plan(repository.head(), post_step()), "b")
    assert post.status == "success"
    document = repository.document(repository.head())
    aliases = repository.summary(repository.head()).aliases
    plate = next(b for b in document.bodies if b.id == aliases["b:plate"])
    post_body = next(b for b in document.bodies if b.id == aliases["b:post"])
    fillet_node = plate.tip
    box_node = next(n for n in document.nodes if n.id == fillet_node).inputs["target"].node
    assert post.data["evaluatedNodes"] == [post_body.tip]  # the plate came from the cache

    envelope = tx.apply(
        plan(repository.head(), step("set", SET_CAP, parameter="p:width", value=50)), "c"
    )

    assert envelope.status == "success", envelope.diagnostics
    assert envelope.data["evaluatedNodes"] == [box_node, fillet_node]
    assert kernel.evaluated_nodes == [box_node, fillet_node]
    assert post_body.tip not in envelope.data["evaluatedNodes"]
    bodies = envelope.data["bodies"]
    assert bodies[plate.id]["volume"] == pytest.approx(plate_volume(length=50), rel=1e-9)
    assert bodies[post_body.id]["volume"] == pytest.approx(125, rel=1e-9)
    assert repository.document(repository.head()).parameters[0].value == 50


def test_changed_nodes_include_consumers_of_a_changed_parameter(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    assert tx.apply(plan(repository.head(), *composite_steps()), "a").status == "success"
    document = repository.document(repository.head())
    (plate,) = document.bodies

    envelope = tx.apply(
        plan(repository.head(), step("set", SET_CAP, parameter="p:width", value=50)), "c"
    )

    assert envelope.status == "success"
    changed = kernel.changed_args[-1]
    assert changed is None or plate.tip in changed


# -- failures leave the store as it was --------------------------------------------------------


@pytest.mark.parametrize("radius", [15, 16, {"value": 1.5, "unit": "cm"}])
def test_fillet_too_large_fails_at_preview(tmp_path: Path, radius: Any) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    before = snapshot(repository)
    p = plan(repository.head(), *composite_steps(radius=radius))

    envelope = WritePath(ctx, kernel).apply(p, "req:big")

    assert envelope.status == "failed"
    assert envelope.observed_revision == repository.head()
    assert envelope.data["stage"] == "preview"
    assert envelope.data["failedStep"] == "round"
    assert envelope.data["stepSchema"] == input_schema(FILLET_CAP)
    assert envelope.data["planId"] == p.plan_id()
    # the plan's step is the subject; the lowered node the kernel named is in `affected`
    node = WritePath(ctx, kernel).propose(p, "req:big2").lowered.node_of_step["round"]
    (diagnostic,) = envelope.diagnostics
    assert diagnostic.code == FILLET_RADIUS_TOO_LARGE
    assert (diagnostic.subject, diagnostic.affected) == ("round", [node])
    assert [a.operation for a in envelope.next_actions] == ["model.proposePatch"]
    assert kernel.calls["evaluate"] == 1
    assert kernel.calls["validate"] == 0 and kernel.calls["query"] == 0
    assert snapshot(repository) == before


def test_unknown_selector_fails_at_preview(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    before = snapshot(repository)
    steps = composite_steps()
    steps[2] = steps[2].model_copy(
        update={"args": {**steps[2].args, "edges": {"body": "b:plate", "select": ">Z"}}}
    )
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *steps), "req:sel")
    assert envelope.status == "failed" and envelope.data["stage"] == "preview"
    assert codes(envelope) == [SELECTION_EMPTY]
    assert envelope.data["failedStep"] == "round"
    assert snapshot(repository) == before


def test_assertion_failing_fails_at_validate(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    before = snapshot(repository)
    p = plan(repository.head(), *composite_steps(vmin=1000, vmax=10_000))

    envelope = WritePath(ctx, kernel).apply(p, "req:tight")

    assert envelope.status == "failed"
    assert envelope.data["stage"] == "validate"
    assert envelope.data["failedStep"] == "check"
    assert envelope.data["stepSchema"] == input_schema(VOLUME_RANGE_CAP)
    assert codes(envelope) == [VOLUME_OUT_OF_RANGE]
    assert envelope.observed_revision == repository.head()
    assert kernel.calls["validate"] == 1 and kernel.calls["query"] == 0
    assert {a.operation for a in envelope.next_actions} <= REGISTERED_OPERATIONS
    assert snapshot(repository) == before


def test_earlier_assertion_is_rechecked_on_a_later_commit(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    assert tx.apply(plan(repository.head(), *composite_steps()), "a").status == "success"
    (assertion,) = repository.document(repository.head()).assertions
    before = snapshot(repository)

    # 100 mm × 30 × 10 is 30 000 mm³, above the 20 000 mm³ the first plan asserted.
    widen = step("set", SET_CAP, parameter="p:width", value={"value": 10, "unit": "cm"})
    envelope = tx.apply(plan(repository.head(), widen), "b")

    assert envelope.status == "failed"
    assert envelope.data["stage"] == "validate"
    assert [(d.code, d.subject) for d in envelope.diagnostics] == [
        (VOLUME_OUT_OF_RANGE, assertion.id)
    ]
    assert snapshot(repository) == before
    assert repository.document(repository.head()).parameters[0].value == PLATE["length"]


def test_parameter_out_of_range_names_its_step(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    assert tx.apply(plan(repository.head(), *composite_steps()), "a").status == "success"
    envelope = tx.apply(
        plan(repository.head(), step("set", SET_CAP, parameter="p:width", value=1000)), "b"
    )
    assert envelope.status == "blocked", "caught by plan.check, before any kernel work"
    assert "PARAMETER_OUT_OF_RANGE" in codes(envelope)
    assert envelope.data["failedStep"] == "set"
    assert envelope.data["stepSchema"] == input_schema(SET_CAP)


def test_a_plan_that_changes_nothing_is_bound_to_the_head(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    assert tx.apply(plan(repository.head(), *composite_steps()), "a").status == "success"
    head = repository.head()
    same = step("set", SET_CAP, parameter="p:width", value=PLATE["length"])
    envelope = tx.apply(plan(head, same), "b")
    assert envelope.status in {"failed", "success"}
    assert envelope.observed_revision == head
    assert repository.head() == head


def test_a_refused_first_commit_leaves_no_task_branch(tmp_path: Path) -> None:
    # The task branch is created with its first commit, in one store transaction: a plan
    # whose commit is refused (here: it changes nothing) must not leave the branch behind,
    # since branches are never deleted.
    ctx, kernel, repository = make_runtime(tmp_path)
    head = seed(repository, "plate")
    same = step("set", SET_CAP, parameter="p:width", value=PLATE["length"])
    envelope = WritePath(ctx, kernel).apply(plan(head, same), "a", branch="task/x")
    assert envelope.status == "failed"
    assert codes(envelope) == ["STORE_NO_CHANGE"]
    assert repository.store.branches() == {"main": head}

    change = step("set", SET_CAP, parameter="p:width", value=PLATE["length"] + 1)
    assert WritePath(ctx, kernel).apply(plan(head, change), "b", branch="task/x").status == (
        "success"
    )
    assert set(repository.store.branches()) == {"main", "task/x"}
    assert repository.head("task/x") != head


# -- concurrent writers ------------------------------------------------------------------------


def test_two_writers_on_one_head_one_wins_the_other_is_stale(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    base = repository.head()
    tx = WritePath(ctx, kernel)

    first = tx.apply(plan(base, *composite_steps()), "w1")
    calls = kernel.total_calls
    second = tx.apply(plan(base, post_step()), "w2")

    assert first.status == "success"
    head = repository.head()
    assert head == first.observed_revision
    assert second.status == "stale"
    assert second.observed_revision == head
    assert codes(second) == ["STEP_STALE_REVISION"]
    assert second.data["summary"]["rev"] == head
    assert "b:plate" in second.data["summary"]["aliases"]
    assert [a.operation for a in second.next_actions] == ["model.read"]
    assert kernel.total_calls == calls  # the stale plan never reached the kernel
    assert "b:post" not in repository.summary(head).aliases


def test_writer_overtaken_between_check_and_commit_gets_stale(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    base = repository.head()
    winner: list[ObservationEnvelope] = []

    def overtake(document: Any) -> None:
        # Another writer with its own connection to the same store and its own kernel,
        # opened here: kernel calls run in a thread of their own (kernel_guard's deadline).
        kernel.on_evaluate = None
        other = ModelRepository.open(tmp_path / "store.sqlite3", repository.signatures)
        try:
            other_ctx = PlanContext(ctx.catalog, other, capabilities=ctx.capabilities)
            winner.append(
                WritePath(other_ctx, FakeGeometryKernel()).apply(plan(base, post_step()), "w2")
            )
        finally:
            other.close()

    kernel.on_evaluate = overtake
    envelope = WritePath(ctx, kernel).apply(plan(base, *composite_steps()), "w1")

    assert [w.status for w in winner] == ["success"]
    head = repository.head()
    assert head == winner[0].observed_revision
    assert envelope.status == "stale"
    assert envelope.observed_revision == head
    assert envelope.data["stage"] == "commit"
    assert envelope.data["summary"]["rev"] == head
    assert "b:post" in envelope.data["summary"]["aliases"]
    assert codes(envelope) == ["STEP_STALE_REVISION"]
    assert "b:plate" not in repository.summary(head).aliases


# -- task branches and publish -----------------------------------------------------------------

T1 = "task/t1"


def _task(ctx: PlanContext, name: str, **grant: Any) -> PlanContext:
    head = ctx.repository.store.branch(name, ctx.repository.head(MAIN))
    assert head == ctx.repository.head(MAIN)
    return PlanContext(
        ctx.catalog,
        ctx.repository,
        grant=LOCAL_GRANT.model_copy(update=grant),
        capabilities=ctx.capabilities,
    )


def test_plan_on_a_task_branch_then_publish_moves_main(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    task = _task(ctx, "task/t1")
    tx = WritePath(task, kernel)
    main_before = repository.head(MAIN)

    on_task = tx.apply(plan(repository.head("task/t1"), *composite_steps()), "t1", branch=T1)
    assert on_task.status == "success"
    assert on_task.effects_observed == ["commit:task/t1"]
    assert repository.head("task/t1") == on_task.observed_revision
    assert repository.head(MAIN) == main_before

    published = tx.apply(
        plan(repository.head("task/t1"), post_step()), "t2", branch=T1, publish=True
    )
    assert published.status == "success"
    assert published.effects_observed == ["commit:task/t1", "publish:main"]
    assert repository.head(MAIN) == repository.head("task/t1") == published.data["rev"]
    assert published.data["published"] == repository.head(MAIN)
    assert {"b:plate", "b:post"} <= set(repository.summary(repository.head(MAIN)).aliases)
    assert repository.store.log(MAIN, limit=1)[0].kind == "publish"


def test_publish_needs_approval_when_the_grant_says_so(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    task = _task(ctx, "task/t1", confirmation_required=["publish"])
    tx = WritePath(task, kernel)
    before = snapshot(repository)
    p = plan(repository.head("task/t1"), *composite_steps())

    blocked = tx.apply(p, "p1", branch=T1, publish=True)

    assert blocked.status == "blocked"
    assert codes(blocked) == ["PLAN_APPROVAL_REQUIRED"]
    assert blocked.observed_revision == repository.head("task/t1")
    assert {a.operation for a in blocked.next_actions} <= REGISTERED_OPERATIONS
    assert snapshot(repository) == before

    approved = tx.apply(p, "p2", branch=T1, publish=True, approved=True)
    assert approved.status == "success"
    assert repository.head(MAIN) == repository.head("task/t1") == approved.data["published"]


def test_refused_publish_still_reports_the_task_commit(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    task = _task(ctx, "task/t2")
    base = repository.head("task/t2")
    assert WritePath(ctx, kernel).apply(plan(base, post_step()), "m").status == "success"

    envelope = WritePath(task, kernel).apply(
        plan(base, *composite_steps()), "t", branch="task/t2", publish=True
    )

    assert repository.head("task/t2") != base  # the commit on the task branch happened
    assert envelope.observed_revision == repository.head("task/t2")
    assert "commit:task/t2" in envelope.effects_observed
    assert "STORE_PUBLISH_NOT_FAST_FORWARD" in codes(envelope)


# -- the grant -----------------------------------------------------------------------------------


def test_revoked_grant_is_blocked_before_the_kernel(tmp_path: Path) -> None:
    revoked = LOCAL_GRANT.model_copy(update={"revoked": True})
    ctx, kernel, repository = make_runtime(tmp_path, grant=revoked)
    before = snapshot(repository)
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *composite_steps()), "r")
    assert envelope.status == "blocked"
    assert "GRANT_REVOKED" in codes(envelope)
    assert kernel.total_calls == 0
    assert snapshot(repository) == before


def test_grant_revoked_mid_task_blocks_the_next_plan(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    assert tx.apply(plan(repository.head(), *composite_steps()), "a").status == "success"
    calls = kernel.total_calls
    before = snapshot(repository)

    ctx.grant = LOCAL_GRANT.model_copy(update={"revoked": True})
    envelope = tx.apply(plan(repository.head(), post_step()), "b")

    assert envelope.status == "blocked"
    assert codes(envelope) == ["GRANT_REVOKED"]
    assert kernel.total_calls == calls
    assert snapshot(repository) == before


def test_seeded_store_is_usable_by_plans(tmp_path: Path) -> None:
    """The helper that seeds a store without the plan runtime gives aliases plans can use."""
    ctx, kernel, repository = make_runtime(tmp_path)
    seed(repository, "plate")
    steps = [composite_steps()[2]]
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *steps), "s")
    assert envelope.status == "success", envelope.diagnostics
    volume = envelope.data["bodies"]["bplate"]["volume"]
    assert volume == pytest.approx(plate_volume(), rel=1e-9)


def test_a_plan_of_queries_only_reads_without_committing(tmp_path: Path) -> None:
    from runtime_factory import MASS_PROPERTIES_CAP

    ctx, kernel, repository = make_runtime(tmp_path)
    tx = WritePath(ctx, kernel)
    assert tx.apply(plan(repository.head(), *composite_steps()), "a").status == "success"
    head = repository.head()
    envelope = tx.apply(plan(head, step("mass", MASS_PROPERTIES_CAP, target="b:plate")), "q")
    assert envelope.status == "success", envelope.diagnostics
    assert envelope.effects_observed == [] and repository.head() == head
    assert envelope.data["queries"]["mass"]["volume"] == pytest.approx(plate_volume(), rel=1e-9)


def test_a_kernel_raising_in_a_query_after_the_commit_is_reported(tmp_path: Path) -> None:
    ctx, kernel, repository = make_runtime(tmp_path)

    def boom(document, ref, args):  # type: ignore[no-untyped-def]
        raise RuntimeError("query exploded")

    kernel.query = boom  # type: ignore[method-assign]
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *composite_steps()), "a")
    assert envelope.status == "partial"
    assert [d.code for d in envelope.diagnostics] == ["KERNEL_FAILED"]
    assert envelope.observed_revision == repository.head()
    assert envelope.effects_observed == ["commit:main"]


# -- every write goes through the same stages ---------------------------------------------------


def _with_assertion(tmp_path: Path) -> tuple[PlanContext, Any, ModelRepository, str]:
    ctx, kernel, repository = make_runtime(tmp_path)
    envelope = WritePath(ctx, kernel).apply(plan(repository.head(), *composite_steps()), "a")
    assert envelope.status == "success", envelope.diagnostics
    width = repository.aliases(repository.head()).resolve("p:width")
    return ctx, kernel, repository, width


def _set(param: str, value: float) -> dict[str, Any]:
    return {"ops": [{"op": "parameter.setValue", "id": param, "value": value}]}


def test_a_patch_re_checks_every_assertion_on_the_kernel(tmp_path: Path) -> None:
    ctx, kernel, repository, width = _with_assertion(tmp_path)
    write = WritePath(ctx, kernel)
    validations = kernel.calls["validate"]
    ok = write.apply_patch(_set(width, 45.0), "p1", message="wider")
    assert ok.status == "success", ok.diagnostics
    assert kernel.calls["validate"] == validations + 1
    assert ok.data["rev"] == repository.head() and ok.data["assertions"] == {
        a.id: True for a in repository.document(repository.head()).assertions
    }

    before = snapshot(repository)
    refused = write.apply_patch(_set(width, 450.0), "p2")  # 450 mm: out of the volume range
    assert refused.status == "failed" and refused.data["stage"] == "validate"
    assert refused.diagnostics and all(d.phase == "validate" for d in refused.diagnostics)
    assert snapshot(repository) == before


def test_a_patch_with_assertions_and_no_kernel_is_refused(tmp_path: Path) -> None:
    ctx, _kernel, repository, width = _with_assertion(tmp_path)
    before = snapshot(repository)
    refused = WritePath(ctx, None).apply_patch(_set(width, 45.0), "p")
    assert refused.status == "failed" and codes(refused) == ["KERNEL_UNAVAILABLE"]
    assert snapshot(repository) == before


def test_a_patch_without_assertions_needs_no_kernel(tmp_path: Path) -> None:
    ctx, _kernel, repository = make_runtime(tmp_path)
    head = seed(repository, "plate")
    width = repository.aliases(head).resolve("p:width")
    envelope = WritePath(ctx, None).apply_patch(_set(width, 50.0), "p")
    assert envelope.status == "success", envelope.diagnostics
    assert repository.head() == envelope.data["rev"] != head


def test_a_stale_patch_is_refused_by_the_store_with_the_new_head(tmp_path: Path) -> None:
    ctx, kernel, repository, _width = _with_assertion(tmp_path)
    old = repository.store.log(MAIN, limit=None)[-1].rev  # the empty initial document
    before = snapshot(repository)
    envelope = WritePath(ctx, kernel).apply_patch(
        {
            "ops": [
                {
                    "op": "parameter.add",
                    "parameter": {"id": "pq", "label": "q", "type": "Length", "value": 1},
                }
            ]
        },
        "p",
        expected_head=old,
    )
    assert envelope.status == "stale" and codes(envelope) == ["STEP_STALE_REVISION"]
    assert envelope.observed_revision == repository.head()
    assert envelope.data["summary"]["rev"] == repository.head()
    assert snapshot(repository) == before


def test_a_refused_first_document_creates_no_store_history(tmp_path: Path) -> None:
    ctx, kernel, repository, _ = _with_assertion(tmp_path)
    document = repository.document(repository.head())
    broken = document.model_copy(update={"parameters": []})  # nodes now name a missing param
    fresh = ModelRepository.open(tmp_path / "fresh.sqlite3", create=True)
    fresh_ctx = PlanContext(ctx.catalog, fresh, capabilities=ctx.capabilities)
    refused = WritePath(fresh_ctx, kernel).init(broken, "i")
    assert refused.status == "failed" and refused.data["stage"] == "propose"
    assert fresh.store.branches() == {}
    created = WritePath(fresh_ctx, kernel).init(document, "i2")
    assert created.status == "success", created.diagnostics
    assert fresh.head(MAIN) == repository.head()  # content-addressed: the same revision
    fresh.close()


def test_a_revert_re_checks_the_restored_documents_assertions(tmp_path: Path) -> None:
    ctx, kernel, repository, width = _with_assertion(tmp_path)
    good = repository.head()
    write = WritePath(ctx, kernel)
    assert write.apply_patch(_set(width, 45.0), "p").status == "success"

    real_validate = kernel.validate
    kernel.validate = lambda document, assertion: ValidationOutcome(  # type: ignore[method-assign]
        assertion=assertion.id, passed=False, measured={"volume": 0}
    )
    before = snapshot(repository)
    refused = write.revert(good, "r")
    assert refused.status == "failed" and codes(refused) == ["ASSERTION_FAILED"]
    assert snapshot(repository) == before

    kernel.validate = real_validate  # type: ignore[method-assign]
    reverted = write.revert(good, "r2")
    assert reverted.status == "success", reverted.diagnostics
    assert repository.head() == good and reverted.effects_observed == ["revert:main"]
