"""Meta-operation Contract v1: the 9 × 9 matrix is complete and consistent, the §12.1 effect
table holds, and the shared corpus (legal and illegal sequences, batch reductions, terminal
cases) replays; ``aira schema meta-operation-contract`` prints the matrix as data."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from cli_runner import RunAira

from aira_core.diagnostics import AiraError, Diagnostic, Severity
from aira_core.runtime.contract import (
    CONTRACT,
    CORPUS_FILES,
    READS,
    Call,
    CompletionAuthority,
    EffectClass,
    Idempotency,
    MetaOperation,
    MetaOperationContract,
    RejectionCode,
    Reversibility,
    RuntimeState,
    Step,
    TerminalInputs,
    TerminalState,
    admit,
    cell,
    contract_json,
    contract_locked,
    decide_terminal,
    effect_class,
    legal_operations,
    load_corpus,
    next_state,
    operation_contract,
    reduce_batch,
    replay,
)
from aira_core.schemas import DOCUMENTS, SCHEMAS, json_schema

O = MetaOperation  # noqa: E741 - the matrix reads better with short names
S = RuntimeState
ALL_CELLS = [(s, o) for s in RuntimeState for o in MetaOperation]


# -- enums and the §12.1 table -------------------------------------------------------------


def test_nine_operations_nine_states_five_terminals() -> None:
    assert [o.value for o in MetaOperation] == [
        "interface.manifest",
        "catalog.search",
        "catalog.describe",
        "model.read",
        "model.proposePatch",
        "model.preview",
        "model.validate",
        "model.commit",
        "model.revert",
    ]
    assert len(RuntimeState) == 9
    assert {t.value for t in TerminalState} == {
        "completed",
        "cannotProceed",
        "budgetExhausted",
        "cancelled",
        "failed",
    }
    assert CONTRACT.version == "1.0.0"
    assert CONTRACT.repair_cap == 3


@pytest.mark.parametrize(
    ("op", "effect", "idempotency", "reversibility"),
    [
        (O.INTERFACE_MANIFEST, "read", "always", "noEffect"),
        (O.CATALOG_SEARCH, "read", "always", "noEffect"),
        (O.CATALOG_DESCRIBE, "read", "always", "noEffect"),
        (O.MODEL_READ, "read", "always", "noEffect"),
        (O.MODEL_PROPOSE_PATCH, "bufferable", "idempotencyKey", "discardable"),
        (O.MODEL_PREVIEW, "bufferable", "idempotencyKey", "discardable"),
        (O.MODEL_VALIDATE, "bufferable", "fullBinding", "discardable"),
        (O.MODEL_COMMIT, "reversible", "cas", "revertRevision"),
        (O.MODEL_REVERT, "reversible", "request", "revertRevision"),
    ],
)
def test_effect_table_of_12_1(
    op: MetaOperation, effect: str, idempotency: str, reversibility: str
) -> None:
    contract = operation_contract(op)
    assert (contract.effect_class, contract.idempotency, contract.reversibility) == (
        EffectClass(effect),
        Idempotency(idempotency),
        Reversibility(reversibility),
    )
    assert effect_class(op) is EffectClass(effect)
    assert (contract.publish is not None) == (op is O.MODEL_COMMIT)


def test_commit_is_irreversible_only_when_publishing() -> None:
    assert effect_class(O.MODEL_COMMIT, publish=False) is EffectClass.REVERSIBLE
    assert effect_class(O.MODEL_COMMIT, publish=True) is EffectClass.IRREVERSIBLE
    publish = operation_contract(O.MODEL_COMMIT).publish
    assert publish is not None and publish.reversibility is Reversibility.IRREVERSIBLE
    assert effect_class(O.MODEL_REVERT, publish=True) is EffectClass.REVERSIBLE  # no variant
    with pytest.raises(ValueError, match=r"only model\.commit can publish"):
        Call(request_id="req:1", operation=O.MODEL_REVERT, publish=True)


# -- the matrix ----------------------------------------------------------------------------


def test_matrix_is_complete_and_state_major() -> None:
    assert [(c.state, c.operation) for c in CONTRACT.matrix] == ALL_CELLS
    assert len(CONTRACT.matrix) == 81


def _leads_to_legality(state: RuntimeState, op: MetaOperation) -> bool:
    """Following nextOperation from an illegal cell reaches a state where ``op`` is legal."""
    for _ in range(len(RuntimeState)):
        c = cell(state, op)
        if c.legal:
            return True
        step = cell(state, c.next_operation)  # type: ignore[arg-type]
        state = step.next_state  # type: ignore[assignment]
    return False


@pytest.mark.parametrize(("state", "op"), ALL_CELLS, ids=[f"{s}-{o}" for s, o in ALL_CELLS])
def test_every_cell_is_consistent(state: RuntimeState, op: MetaOperation) -> None:
    c = cell(state, op)
    if c.legal:
        assert c.rejection is None and c.next_operation is None
        assert c.next_state in RuntimeState and c.next_state is not S.TERMINAL
        # Repair is entered only from a real Diagnostic of preview or validate.
        assert c.next_state is not S.REPAIRING or state is S.REPAIRING
        if c.on_diagnostic is not None:
            assert c.on_diagnostic is S.REPAIRING
            assert op in (O.MODEL_PREVIEW, O.MODEL_VALIDATE)
        return
    assert c.rejection is not None and c.next_state is None and c.on_diagnostic is None
    if state is S.TERMINAL:
        assert c.rejection is RejectionCode.TASK_TERMINATED and c.next_operation is None
        return
    assert c.next_operation is not None and cell(state, c.next_operation).legal
    assert _leads_to_legality(state, op)


def test_terminal_refuses_everything() -> None:
    assert legal_operations(S.TERMINAL) == []
    assert {cell(S.TERMINAL, o).rejection for o in MetaOperation} == {RejectionCode.TASK_TERMINATED}
    assert not [c for c in CONTRACT.matrix if c.next_state is S.TERMINAL]


@pytest.mark.parametrize("state", [s for s in RuntimeState if s is not S.TERMINAL])
def test_reads_are_legal_everywhere_and_only_move_forward(state: RuntimeState) -> None:
    forward = {
        (S.READY, O.CATALOG_SEARCH): S.DISCOVERED,
        (S.READY, O.CATALOG_DESCRIBE): S.DESCRIBED,
        (S.DISCOVERED, O.CATALOG_DESCRIBE): S.DESCRIBED,
    }
    for op in READS:
        assert cell(state, op).next_state is forward.get((state, op), state)


@pytest.mark.parametrize(
    ("state", "op", "expected"),
    [
        (S.READY, O.MODEL_PROPOSE_PATCH, RejectionCode.DISCOVERY_REQUIRED),
        (S.DISCOVERED, O.MODEL_COMMIT, RejectionCode.DISCOVERY_REQUIRED),
        (S.DESCRIBED, O.MODEL_PROPOSE_PATCH, S.PROPOSED),
        (S.REPAIRING, O.MODEL_PROPOSE_PATCH, S.PROPOSED),
        (S.PREVIEWED, O.MODEL_PROPOSE_PATCH, S.PROPOSED),
        (S.VALIDATED, O.MODEL_PROPOSE_PATCH, S.PROPOSED),
        (S.COMMITTED, O.MODEL_PROPOSE_PATCH, S.PROPOSED),
        (S.DESCRIBED, O.MODEL_PREVIEW, RejectionCode.CANDIDATE_REQUIRED),
        (S.PROPOSED, O.MODEL_VALIDATE, RejectionCode.PREVIEW_REQUIRED),
        (S.PREVIEWED, O.MODEL_COMMIT, RejectionCode.VALIDATION_REQUIRED),
        (S.VALIDATED, O.MODEL_COMMIT, S.COMMITTED),
        (S.VALIDATED, O.MODEL_REVERT, RejectionCode.NOTHING_TO_REVERT),
        (S.COMMITTED, O.MODEL_REVERT, S.COMMITTED),
        (S.COMMITTED, O.MODEL_COMMIT, RejectionCode.CANDIDATE_REQUIRED),
    ],
)
def test_key_cells(state: RuntimeState, op: MetaOperation, expected: Any) -> None:
    c = cell(state, op)
    assert (c.next_state if c.legal else c.rejection) is expected


def test_derived_state_and_operation_data_match_the_matrix() -> None:
    for sc in CONTRACT.states:
        assert sc.legal_operations == legal_operations(sc.state)
        expected = (
            set() if sc.state is S.TERMINAL else set(TerminalState) - {TerminalState.COMPLETED}
        )
        if sc.state is S.COMMITTED:
            expected.add(TerminalState.COMPLETED)
        assert set(sc.reachable_terminals) == expected
    for oc in CONTRACT.operations:
        cells = [cell(s, oc.operation) for s in RuntimeState]
        assert oc.legal_in == [c.state for c in cells if c.legal]
        after = {c.next_state for c in cells if c.legal} | {
            c.on_diagnostic for c in cells if c.on_diagnostic
        }
        assert set(oc.legal_successors) == {o for s in after for o in legal_operations(s)}
        # completed only ever follows a read (the final read-back), never an effect.
        assert (TerminalState.COMPLETED in oc.reachable_terminals) == (oc.operation in READS)
    assert operation_contract(O.MODEL_COMMIT).legal_successors[-1] is O.MODEL_REVERT


def test_next_state_opens_repair_only_for_a_real_error_diagnostic() -> None:
    error = Diagnostic(code="ASSERTION_FAILED", message="wall too thin")
    warning = Diagnostic(code="SLOW_PREVIEW", message="slow", severity=Severity.WARNING)
    assert next_state(S.PROPOSED, O.MODEL_PREVIEW, diagnostic=error) is S.REPAIRING
    assert next_state(S.PREVIEWED, O.MODEL_VALIDATE, diagnostic=error) is S.REPAIRING
    assert next_state(S.PROPOSED, O.MODEL_PREVIEW, diagnostic=warning) is S.PREVIEWED
    # A failed static check creates no candidate: the state stays.
    assert next_state(S.DESCRIBED, O.MODEL_PROPOSE_PATCH, diagnostic=error) is S.DESCRIBED
    with pytest.raises(AiraError) as critique:
        next_state(S.PROPOSED, O.MODEL_PREVIEW, diagnostic={"code": "X"})  # type: ignore[arg-type]
    assert critique.value.code == "REPAIR_REQUIRES_DIAGNOSTIC"
    with pytest.raises(AiraError) as illegal:
        next_state(S.READY, O.MODEL_COMMIT)
    assert illegal.value.code == "DISCOVERY_REQUIRED"


def test_adaptive_discovery_counts_as_described() -> None:
    assert contract_locked(S.READY) is S.DESCRIBED
    assert contract_locked(S.DISCOVERED) is S.DESCRIBED
    assert contract_locked(S.VALIDATED) is S.VALIDATED
    assert replay([O.MODEL_PROPOSE_PATCH], start=contract_locked(S.READY)).rejection is None


def test_admit_parses_wire_names() -> None:
    assert admit("ready", "model.commit").rejection is RejectionCode.DISCOVERY_REQUIRED
    assert admit("validated", "model.commit").next_state is S.COMMITTED
    for state, op, code in [
        ("ready", "model.query", "UNKNOWN_OPERATION"),
        ("idle", "model.read", "UNKNOWN_STATE"),
    ]:
        with pytest.raises(AiraError) as exc:
            admit(state, op)
        assert exc.value.code == code


def test_contract_round_trips_as_json() -> None:
    data = contract_json()
    assert json.loads(json.dumps(data)) == data
    assert MetaOperationContract.model_validate(data) == CONTRACT
    assert data["matrix"][0] == {
        "state": "ready",
        "operation": "interface.manifest",
        "legal": True,
        "nextState": "ready",
    }


# -- batch reduction -----------------------------------------------------------------------

CALL_KINDS = [(o, False) for o in MetaOperation] + [(O.MODEL_COMMIT, True)]


def test_batch_reduction_invariants_over_every_three_call_batch() -> None:
    for kinds in itertools.product(CALL_KINDS, repeat=3):
        calls = [
            Call(request_id=f"req:{i}", operation=o, publish=p) for i, (o, p) in enumerate(kinds)
        ]
        decision = reduce_batch(calls, set())
        assert decision.refused == []
        assert sorted(e.index for e in decision.scheduled + decision.deferred) == [0, 1, 2]
        reads = [i for i, c in enumerate(calls) if c.effect_class is EffectClass.READ]
        effects = [e for e in decision.scheduled if e.effect_class is not EffectClass.READ]
        assert [e.index for e in decision.scheduled[: len(reads)]] == reads  # all reads first
        assert len(effects) == (1 if len(reads) < 3 else 0)  # then at most one effect
        assert all(e.effect_class is not EffectClass.READ for e in decision.deferred)
        if effects and effects[0].effect_class is EffectClass.IRREVERSIBLE:
            # Alone and last: it only runs when no other kind of effect is waiting.
            assert all(e.effect_class is EffectClass.IRREVERSIBLE for e in decision.deferred)


def test_batch_reduction_leaves_seen_ids_alone() -> None:
    seen = {"req:1"}
    decision = reduce_batch([Call(request_id="req:1", operation=O.MODEL_READ)], seen)
    assert seen == {"req:1"}
    assert [e.code for e in decision.refused] == [RejectionCode.DUPLICATE_REQUEST_ID]


# -- terminal decision ---------------------------------------------------------------------


def test_terminal_state_cannot_be_decided_again() -> None:
    with pytest.raises(AiraError) as exc:
        decide_terminal(TerminalInputs(state=S.TERMINAL))
    assert exc.value.code == "TASK_TERMINATED"


def test_model_authority_needs_the_claim_and_the_evidence() -> None:
    trace = [O.MODEL_PROPOSE_PATCH, O.MODEL_PREVIEW, O.MODEL_VALIDATE, O.MODEL_COMMIT, O.MODEL_READ]
    unclaimed = TerminalInputs(
        state=S.COMMITTED, trace=trace, completion_authority=CompletionAuthority.MODEL
    )
    assert decide_terminal(unclaimed).terminal is None
    # A new candidate after the read-back is open work: not completed.
    reopened = TerminalInputs(
        state=S.PROPOSED, trace=[*trace, O.MODEL_PROPOSE_PATCH], completion_claimed=True
    )
    assert decide_terminal(reopened).reason == "COMPLETION_EVIDENCE_MISSING"


# -- the shared corpus ---------------------------------------------------------------------

MINIMUM = {
    "legal_sequences": 4,
    "illegal_sequences": 6,
    "batch_reductions": 3,
    "terminal_cases": 9,
}


def _cases(name: str) -> list[Any]:
    return [pytest.param(case, id=case["name"]) for case in load_corpus(name)]


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_files_are_big_enough_and_named_uniquely(name: str) -> None:
    cases = load_corpus(f"{name}.json")
    assert len(cases) >= MINIMUM[name]
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names)
    assert all(c.get("description") for c in cases)


def test_corpus_covers_every_rejection_and_terminal() -> None:
    matrix_codes = {c.rejection for c in CONTRACT.matrix if c.rejection}
    assert {c["expected"]["code"] for c in load_corpus("illegal_sequences")} == matrix_codes
    decided = {c["expected"]["terminal"] for c in load_corpus("terminal_cases")}
    assert decided == {*TerminalState, None}


def test_unknown_corpus() -> None:
    with pytest.raises(AiraError) as exc:
        load_corpus("nonsense")
    assert exc.value.code == "CORPUS_NOT_FOUND"


@pytest.mark.parametrize("case", _cases("legal_sequences"))
def test_legal_sequence_replays(case: dict[str, Any]) -> None:
    steps = [
        Step.model_validate({k: v for k, v in s.items() if k != "state"}) for s in case["steps"]
    ]
    result = replay(steps, start=RuntimeState(case["start"]))
    assert result.rejection is None
    assert result.states == [RuntimeState(s["state"]) for s in case["steps"]]
    assert result.state is RuntimeState(case["finalState"])
    assert result.completed_prefix == [s.operation for s in steps]


@pytest.mark.parametrize("case", _cases("illegal_sequences"))
def test_illegal_sequence_is_refused_where_expected(case: dict[str, Any]) -> None:
    steps = [Step.model_validate(s) for s in case["steps"]]
    result = replay(steps, start=RuntimeState(case["start"]))
    expected = case["expected"]
    assert result.rejection is not None
    assert len(result.completed_prefix) == expected["refusedAt"]
    got = result.rejection.to_wire()
    assert got["code"] == expected["code"]
    assert got["state"] == expected["state"]
    assert got["completedPrefix"] == expected["completedPrefix"]
    assert got.get("nextOperation") == expected["nextOperation"]
    assert got["operation"] == case["steps"][expected["refusedAt"]]["operation"]
    assert got["recoverable"] == (expected["code"] != "TASK_TERMINATED")


@pytest.mark.parametrize("case", _cases("batch_reductions"))
def test_batch_reduction_case(case: dict[str, Any]) -> None:
    calls = [Call.model_validate(c) for c in case["calls"]]
    decision = reduce_batch(calls, set(case["seenRequestIds"]))
    expected = case["expected"]
    assert [e.request_id for e in decision.scheduled] == expected["scheduled"]
    assert [e.request_id for e in decision.deferred] == expected["deferred"]
    assert [
        {"index": e.index, "requestId": e.request_id, "code": e.code} for e in decision.refused
    ] == expected["refused"]


@pytest.mark.parametrize("case", _cases("terminal_cases"))
def test_terminal_case(case: dict[str, Any]) -> None:
    inputs = TerminalInputs.model_validate(case["input"])
    decision = decide_terminal(inputs)
    assert decision.to_wire() == {k: v for k, v in case["expected"].items() if v is not None}
    if decision.terminal is not None:  # the runtime only declares what the state allows
        state = next(s for s in CONTRACT.states if s.state is inputs.state)
        assert decision.terminal in state.reachable_terminals


# -- publication through `aira schema` -----------------------------------------------------


def test_json_schema_returns_the_contract_document() -> None:
    assert "meta-operation-contract" in DOCUMENTS
    assert "meta-operation-contract" not in SCHEMAS  # data, not a model's schema
    assert json_schema("meta-operation-contract") == contract_json()
    with pytest.raises(AiraError) as exc:
        json_schema("no-such-contract")
    assert "meta-operation-contract" in str(exc.value)


def test_cli_prints_the_matrix(aira: RunAira) -> None:
    out = aira("schema", "meta-operation-contract")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert len(printed["matrix"]) == 81
    assert printed == contract_json()
