"""The long bundled tasks on big products (issue 20, item 2) on the real kernel: each of
:data:`~aira_core.step.runner.LONG` completes at T32, T128 and T200 with every prompt within
B, compacts at least once at T32, lands on the same head at every tier and on a replay, and
ends with a product at the scale the seed measured (40+ bodies, 30+ assertions, 24+
parameters that drive geometry) after 30–48 steps of reads, lookups, batches, inspections,
several plans and a refused plan repaired by the first-party package's repair
(``cap:exact.reduceFilletRadius@1``: a ``repair`` act, then its candidate as the next plan);
an interrupted run resumes after a compaction to the same head.

Every run is made once per module (eight runs, a few seconds each on a warm kernel)."""

from __future__ import annotations

import itertools
import json
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cadquery")

from aira_core.contracts.amir import host_tokens
from aira_core.contracts.plan import Plan
from aira_core.model.store import ModelStore
from aira_core.runtime.contract import TerminalState
from aira_core.step.runner import BUNDLED, LONG, SCRIPTS, Run, bundled_script, run_script

ROOT = Path(__file__).resolve().parents[3]
BUDGET = {"T32": 24_000, "T128": 96_000, "T200": 160_000}
RUNS = (("T32", 1), ("T32", 2), ("T128", 1), ("T200", 1))
REPAIR_FILLET = "cap:exact.reduceFilletRadius@1"


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    """One OCCT kernel (a warm worker process) for the module."""
    from aira_kernel_occt.kernel import OcctKernel

    k = OcctKernel()
    yield k
    k.close()


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, kernel: Any
) -> Iterator[dict[tuple[str, str, int], Run]]:
    """Every long task at T32 (twice: the replay), T128 and T200, on one kernel and one
    catalog, with the first-party plugin registered for the module."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.plugins import get_plugin_system
    from aira_kernel_occt import plugin

    root = tmp_path_factory.mktemp("long")
    system = get_plugin_system()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRA_HOME", str(root / "home"))
        (root / "home").mkdir()
        system.register(plugin, "occt")
        try:
            catalog = build_catalog()
            out = {}
            for name in LONG:
                for tier, n in RUNS:
                    where = root / f"{name}-{tier}-{n}"
                    out[name, tier, n] = run_script(
                        bundled_script(name),
                        kernel=kernel,
                        store=where / "store.sqlite3",
                        trajectory=where / "trajectory.jsonl",
                        tier_name=tier,
                        catalog=catalog,
                    )
            yield out
        finally:
            system.unregister("occt")


def _steps(run: Run) -> list[dict[str, Any]]:
    return [r for r in run.outcome.records if "step" in r]


def test_the_long_tasks_are_bundled_but_not_the_demo() -> None:
    assert set(LONG).isdisjoint(BUNDLED) and SCRIPTS == BUNDLED + LONG
    for name in LONG:
        assert bundled_script(name).name == name


def test_the_scripts_are_what_their_generator_writes() -> None:
    made = runpy.run_path(str(ROOT / "benchmarks" / "long_scripts.py"))
    for name, build in (("storage_rack", "storage_rack"), ("pcb_enclosure", "pcb_enclosure")):
        shipped = ROOT / "aira_core" / "step" / "scripts" / f"{name}.json"
        assert json.loads(shipped.read_text(encoding="utf-8")) == made[build](), name


@pytest.mark.parametrize("name", LONG)
@pytest.mark.parametrize(("tier", "n"), RUNS)
def test_every_run_completes_within_b(
    runs: dict[tuple[str, str, int], Run], name: str, tier: str, n: int
) -> None:
    run = runs[name, tier, n]
    assert run.outcome.terminal is TerminalState.COMPLETED, run.outcome.reason
    assert run.outcome.reason == "COMPLETION_EVIDENCE_COMPLETE"
    steps = _steps(run)
    assert {r["budgetTokens"] for r in steps} == {BUDGET[tier]}
    assert all(0 < r["promptTokens"] <= r["budgetTokens"] for r in steps)
    assert run.outcome.max_prompt_tokens == max(r["promptTokens"] for r in steps)


@pytest.mark.parametrize("name", LONG)
def test_every_tier_and_the_replay_land_on_the_same_head(
    runs: dict[tuple[str, str, int], Run], name: str
) -> None:
    heads = {runs[name, tier, n].outcome.head for tier, n in RUNS}
    assert len(heads) == 1, heads
    # a replay is the same task, step for step: the same decisions and results
    first, again = (_steps(runs[name, "T32", n]) for n in (1, 2))
    assert [(r["decision"], r["result"], r["head"]) for r in first] == [
        (r["decision"], r["result"], r["head"]) for r in again
    ]


@pytest.mark.parametrize("name", LONG)
def test_rounds_fold_after_commits_and_every_round_starts_from_a_new_capsule(
    runs: dict[tuple[str, str, int], Run], name: str
) -> None:
    for tier in ("T32", "T128"):
        run = runs[name, tier, 1]
        steps = _steps(run)
        rounds = [r["round"] for r in steps]
        assert rounds == sorted(rounds) and rounds[-1] >= 1, f"one round at {tier}"
        assert run.outcome.rounds == rounds[-1] + 1
        for before, after in itertools.pairwise(steps):
            if after["round"] == before["round"]:
                continue
            assert after["capsuleHash"] != before["capsuleHash"]
            if after["logBytes"] == 0:
                continue  # a compaction: an empty log, a capsule rebuilt from the ledger
            # a fold: right after a commit, and the next prompt is shorter for it
            assert before["result"]["act"] == "plan" and before["result"]["status"] == "ok"
            assert after["promptTokens"] < before["promptTokens"], (tier, after["step"])
    # B bounds the rounds: T128 needs no more of them than T32
    assert runs[name, "T128", 1].outcome.rounds <= runs[name, "T32", 1].outcome.rounds


@pytest.mark.parametrize("name", LONG)
def test_the_product_is_at_the_scale_of_the_seed(
    runs: dict[tuple[str, str, int], Run], name: str
) -> None:
    run = runs[name, "T32", 1]
    store = ModelStore(run.store)
    try:
        document = store.read(run.outcome.head)
    finally:
        store.close()
    assert len(document["bodies"]) >= 40
    assert len(document["assertions"]) >= 30
    assert len(document["parameters"]) >= 24
    # every parameter drives geometry: some node's input refers to it
    used = {
        value["param"]
        for node in document["nodes"]
        for value in node["inputs"].values()
        if isinstance(value, dict) and "param" in value
    }
    assert {p["id"] for p in document["parameters"]} <= used
    # every body was built by the task (none brought by a starting document)
    assert bundled_script(name).document is None
    assert 30 <= run.outcome.steps <= 48


@pytest.mark.parametrize("name", LONG)
def test_the_task_reads_looks_up_batches_plans_and_repairs(
    runs: dict[tuple[str, str, int], Run], name: str
) -> None:
    steps = _steps(runs[name, "T32", 1])
    acts = [r["decision"]["act"] for r in steps]
    assert {"read", "lookup", "batch", "inspect", "plan", "repair", "done"} <= set(acts)
    batched = [
        a["act"] for r in steps if r["decision"]["act"] == "batch" for a in r["decision"]["acts"]
    ]
    assert {"lookup", "inspect"} <= set(batched)
    searches = [r for r in steps if r["decision"]["act"] == "lookup" and r["decision"].get("query")]
    described = [
        a
        for r in steps
        if r["decision"]["act"] == "batch"
        for a in r["decision"]["acts"]
        if a.get("level") == "L2"
    ]
    assert len(searches) >= 5 and len(described) >= 8
    assert any(r["decision"].get("select") for r in steps if r["decision"]["act"] == "read")
    plans = [r for r in steps if r["decision"]["act"] == "plan"]
    committed = [r for r in plans if r["result"]["status"] == "ok"]
    assert len(committed) >= 4 and len({r["result"]["rev"] for r in committed}) == len(committed)
    # the deliberate mistake: a fillet larger than the part; the kernel refuses it in the
    # preview, names the step and the largest radius that fits, the next act asks the
    # first-party repair for its candidate, and the next plan applies it
    (refused,) = [r for r in plans if r["result"]["status"] == "rejected"]
    assert refused["result"]["code"] == "FILLET_RADIUS_TOO_LARGE"
    assert (
        refused["result"]["failedStep"]
        and "largest radius that fits" in (refused["result"]["message"])
    )
    (repair,) = [r for r in steps if r["decision"]["act"] == "repair"]
    assert steps.index(repair) == steps.index(refused) + 1
    assert repair["decision"]["capability"] == REPAIR_FILLET
    assert repair["decision"]["diagnostic"] == {
        "code": "FILLET_RADIUS_TOO_LARGE",
        "step": refused["result"]["failedStep"],
    }
    assert repair["result"]["status"] == "ok" and repair["head"] == refused["head"]
    after = plans[plans.index(refused) + 1]
    assert after["result"]["status"] == "ok"

    fits = float(refused["result"]["message"].rsplit("fits is ", 1)[1].split(" mm")[0])
    (tried,) = [
        s
        for s in refused["decision"]["plan"]["steps"]
        if s["id"] == refused["result"]["failedStep"]
    ]
    (fitted,) = [s for s in after["decision"]["plan"]["steps"] if s["id"] == tried["id"]]
    assert fitted["args"]["radius"] == round(0.9 * fits, 2)  # the template's value

    # what committed is the repair's candidate: on the head the repair saw, the plan sent
    # has the candidate's plan id (the enclosure applies it as it came); the rack's other
    # three caps take p:capRadius, which the candidate leaves at the refused radius, so the
    # rack sets that parameter to the candidate's radius too, and nothing else
    sent = after["decision"]["plan"]
    if name == "storage_rack":
        (param,) = [s for s in sent["steps"] if s["id"] == "capRadius"]
        (was,) = [s for s in refused["decision"]["plan"]["steps"] if s["id"] == "capRadius"]
        assert param["args"]["value"] == fitted["args"]["radius"] < fits < was["args"]["value"]
        sent = {
            **sent,
            "steps": [was if s["id"] == "capRadius" else s for s in sent["steps"]],
        }
    candidate = Plan.model_validate({**sent, "baseRevision": repair["head"]})
    assert candidate.plan_id() == repair["result"]["planId"]


def test_the_prompts_are_metered_as_sent(runs: dict[tuple[str, str, int], Run]) -> None:
    # a long round's prompt is the capsule and the log: bytes / 4, never above B
    for name in LONG:
        steps = _steps(runs[name, "T32", 1])
        for r in steps:
            assert r["promptTokens"] == host_tokens(b"x" * (r["capsuleBytes"] + r["logBytes"]))


def test_aira_run_takes_a_bundled_script_by_name(
    runs: dict[tuple[str, str, int], Run], aira: Any
) -> None:
    # the module's runs keep the first-party plugin registered
    out = aira("run", "--script", "pcb_enclosure", "--tier", "T128", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert report["script"] == "pcb_enclosure" and report["terminal"] == "completed"
    assert report["head"] == runs["pcb_enclosure", "T128", 1].outcome.head
    unknown = aira("run", "--script", "nonesuch")
    assert unknown.returncode == 1 and "SCRIPT_INVALID" in unknown.stderr


class _Interrupted(Exception):
    pass


class _Until:
    """The script's decisions until step ``stop``, then the source fails (a lost provider,
    a killed process): the run stops with its trajectory and store as they were."""

    def __init__(self, script: Any, stop: int) -> None:
        from aira_core.step.trajectory import ScriptedSource

        self.inner = ScriptedSource(script)
        self.name = self.inner.name
        self.stop = stop

    def decide(self, request: Any) -> Any:
        if request.step == self.stop:
            raise _Interrupted(f"interrupted at step {request.step}")
        return self.inner.decide(request)


def test_an_interrupted_long_task_resumes_after_a_compaction_to_the_same_head(
    runs: dict[tuple[str, str, int], Run], kernel: Any, tmp_path: Path
) -> None:
    from aira_core.step.runner import resume_script

    name = "storage_rack"
    full = _steps(runs[name, "T32", 1])
    # stopped in the second round, after the refused plan and before its repair
    refused = next(r["step"] for r in full if r["result"].get("status") == "rejected")
    stop = refused + 1
    assert full[stop]["round"] >= 1
    script = bundled_script(name)
    paths = {"store": tmp_path / "store.sqlite3", "trajectory": tmp_path / "t.jsonl"}
    with pytest.raises(_Interrupted):
        run_script(script, kernel=kernel, tier_name="T32", source=_Until(script, stop), **paths)
    resumed = resume_script(script, kernel=kernel, tier_name="T32", **paths)
    assert resumed.outcome.terminal is TerminalState.COMPLETED
    assert resumed.outcome.head == runs[name, "T32", 1].outcome.head
    # the plans committed before the interruption were adopted, not committed again
    records = [json.loads(line) for line in paths["trajectory"].read_text().splitlines()]
    committed = [
        r["result"]["rev"]
        for r in records
        if "step" in r and r["result"].get("act") == "plan" and r["result"].get("rev")
    ]
    assert len(committed) == len(set(committed)) == 4
    # the refused plan was not run again after the interruption, so the repair act finds no
    # refusal to repair (docs/step.md, Repairs): a coded result; the script's next plan, which
    # holds the candidate, commits all the same
    repaired = [r["result"] for r in records if "step" in r and r["decision"]["act"] == "repair"]
    assert [r.get("code") for r in repaired] == ["REPAIR_NO_REFUSED_PLAN"]


def test_a_round_states_each_shared_grammar_once_in_its_log(
    tmp_path: Path, kernel: Any, runs: dict[tuple[str, str, int], Run]
) -> None:
    """The contracts a round's lookups describe reference the selection grammar; its full
    text is in the round's log once (the model does not see earlier rounds: each round
    states it again), where it took 3 KB in every selection input of every contract."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.catalog.shown import shared_grammars
    from aira_core.step.bench import PromptRecorder
    from aira_core.step.log import render
    from aira_core.step.trajectory import ScriptedSource

    catalog = build_catalog()  # the module's fixture registered the plugin for it
    script = bundled_script("storage_rack")
    recorder = PromptRecorder(ScriptedSource(script))
    run = run_script(
        script,
        kernel=kernel,
        store=tmp_path / "store.sqlite3",
        trajectory=tmp_path / "trajectory.jsonl",
        tier_name="T32",
        catalog=catalog,
        source=recorder,
    )
    assert run.outcome.head == runs["storage_rack", "T32", 1].outcome.head
    schemas = [s for p in catalog.packages.values() for s in p.manifest.schemas.values()]
    texts = [g.text for g in shared_grammars(schemas).values()]
    assert texts, "the catalog's selection inputs share their grammar"
    last_of_round: dict[int, Any] = {}
    for record in _steps(run):
        last_of_round[record["round"]] = recorder.requests[record["step"]]
    assert len(last_of_round) >= 2
    referenced = 0
    for request in last_of_round.values():
        log = "".join(render(entry) for entry in request.log)
        referenced += log.count("grammar:")
        for text in texts:
            inlined = json.dumps(text, ensure_ascii=False)[1:-1]
            assert log.count(inlined) <= 1
    assert referenced > 0
