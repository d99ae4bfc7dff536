"""``aira bench capsule`` (aira_core.step.bench): the flat client baseline and the prefix
stability, computed from a real run of a bundled script on the OCCT kernel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aira_core.canonical import canonical_bytes
from aira_core.catalog.capabilities import capability_index, flat_tools
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.disclosure import Disclosure
from aira_core.contracts.amir import host_tokens
from aira_core.step import bench
from aira_core.step.runner import LONG, SCRIPTS, bundled_script, run_script
from aira_core.step.trajectory import ScriptedSource


@pytest.fixture
def occt(register_plugin: Any) -> Any:
    pytest.importorskip("cadquery")
    import aira_kernel_occt.plugin
    from aira_core.plugins import get_registry

    register_plugin(aira_kernel_occt.plugin, "occt")
    return get_registry().named("kernels")["occt"]


@pytest.fixture
def bracket(occt: Any, tmp_path: Path) -> tuple[Any, bench.PromptRecorder]:
    script = bundled_script("bracket")
    recorder = bench.PromptRecorder(ScriptedSource(script))
    run = run_script(
        script,
        kernel=occt,
        store=tmp_path / "store.sqlite3",
        trajectory=tmp_path / "t.jsonl",
        tier_name="T32",
        source=recorder,
    )
    assert run.outcome.terminal.value == "completed"
    return run, recorder


def test_the_recorded_prompts_are_the_ones_the_host_metered(bracket: Any) -> None:
    run, recorder = bracket
    steps = [r for r in run.outcome.records if "step" in r]
    assert [host_tokens(recorder.prompts[r["step"]]) for r in steps] == [
        r["promptTokens"] for r in steps
    ]


def test_the_flat_client_lists_every_capability_with_its_full_l2_contract(occt: Any) -> None:
    catalog = build_catalog()
    capabilities = capability_index(catalog)
    disclosure = Disclosure(catalog)
    tools = bench.flat_contract_tools(catalog)
    plain = flat_tools(capabilities)
    assert len(tools) == len(capabilities) > 40
    assert [t["name"] for t in tools] == [t["name"] for t in plain]
    for (cid, _), tool in zip(capabilities.items(), tools, strict=True):
        contract = disclosure.contract(cid)
        carried = {
            **tool["_meta"]["aira.dev/contract"],
            "summary": tool["description"],
            "inputSchema": tool["inputSchema"],
        }
        if "outputSchema" in tool:
            carried["outputSchema"] = tool["outputSchema"]
        # nothing of the contract is left out (its hash, its diagnostics, its schemas)
        assert carried == contract
    # the full contracts are more than the MCP projection's name, summary and input schema
    assert len(canonical_bytes(tools)) > 1.3 * len(canonical_bytes(plain))


def test_the_flat_baseline_is_its_parts_and_grows_with_the_tools(bracket: Any) -> None:
    run, recorder = bracket
    steps = [r for r in run.outcome.records if "step" in r]
    report = bench.task_report(run.outcome.records, run.store, recorder.prompts)
    tools = len(canonical_bytes(bench.flat_contract_tools(build_catalog())))
    assert report["flatToolsTokens"] == -(-tools // 4) > 0
    results = sum(int(r["result"].get("bytes") or 0) for r in steps[:-1])
    rows = report["perStep"]
    # every step re-sends at least the tools; the last, every earlier result too
    assert all(row["flatTokens"] >= tools // 4 for row in rows)
    assert rows[-1]["flatTokens"] >= (tools + results) // 4
    assert report["flatTokens"] == sum(row["flatTokens"] for row in rows)
    assert rows[-1]["cumulativeFlatTokens"] == report["flatTokens"]
    assert report["flatTokens"] > report["inputTokens"] and 0 < report["flatRatio"] < 1

    # one more tool of the same size adds its bytes to every step's prompt
    def flat(tools_bytes: int) -> list[int]:
        return bench.flat_baseline(
            steps, tools_bytes=tools_bytes, document_bytes=lambda rev: 1000, initial_head="r0"
        )

    more = flat(2 * tools)
    assert all(b - a >= tools // 4 for a, b in zip(flat(tools), more, strict=True))
    # the document of the head each step starts from is re-sent in full
    sizes = {r["head"]: 4000 * (i + 1) for i, r in enumerate(steps)}
    grown = bench.flat_baseline(
        steps, tools_bytes=0, document_bytes=lambda rev: sizes.get(rev, 0), initial_head="r0"
    )
    assert grown[0] == 0 and grown[1] >= sizes[steps[0]["head"]] // 4


def test_prefix_shares_of_same_and_changed_prompts() -> None:
    prompt = "x" * 2048
    same = bench.prefix_stability([prompt, prompt], [0, 0])
    assert (same["prefixShare"], same["cacheHitShare"]) == (1.0, 1.0)
    changed = bench.prefix_stability([prompt, "y" + prompt[1:]], [0, 0])
    assert (changed["prefixShare"], changed["cacheHitShare"]) == (0.0, 0.0)
    # a block (256 bytes) hits only if everything up to its end is unchanged
    partial = bench.prefix_stability([prompt, prompt[:300] + "y" * 1748], [0, 0])
    assert partial["prefixShare"] == round(300 / 2048, 4) and partial["cacheHitShare"] == 0.125
    short = bench.prefix_stability([prompt, prompt[:200] + "y" * 1848], [0, 0])
    assert short["cacheHitShare"] == 0.0
    # a round's first prompt is a new capsule: not compared with the round before
    rounds = bench.prefix_stability([prompt, "y" * 2048, "y" * 2048], [0, 1, 1])
    assert rounds["pairs"] == 1 and rounds["prefixShare"] == 1.0
    assert [r["pairs"] for r in rounds["rounds"]] == [0, 1]
    # weighted by tokens: a long prompt that hits counts for more than a short one that misses
    grown = bench.prefix_stability(["x" * 256, "x" * 1024, "x" * 1024 + "z" * 1024], [0] * 3)
    assert grown["cacheHitShare"] == round((64 / 256 + 256 / 512) / 2, 4)
    assert grown["weightedCacheHitShare"] == round((64 + 256) / (256 + 512), 4)
    # over the task, the first prompt and each round's first count, as a bill sees them
    assert rounds["weightedCacheHitShare"] == 1.0
    assert rounds["taskCacheHitShare"] == round(512 / (3 * 512), 4)
    assert (rounds["hitTokens"], rounds["missTokens"]) == (512, 2 * 512)


def test_bench_capsule_prints_both_baselines_and_the_cache_figures(occt: Any, aira: Any) -> None:
    out = aira("bench", "capsule", "--tier", "T32", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert list(report["tasks"]) == list(SCRIPTS)  # the demo's tasks and the long ones
    for task in report["tasks"].values():
        assert task["terminal"] == "completed" and task["head"].startswith("rev:sha256:")
        assert task["transcriptTokens"] > 0 and task["flatTokens"] > task["transcriptTokens"]
        assert task["flatRatio"] < task["ratio"]
        assert 0 < task["prefix"]["prefixShare"] < 1 and task["prefix"]["rounds"]
    for name in LONG:
        # compacted at T32: more than one round, each with its own prefix figures, and the
        # bound makes Aira send less than even the transcript
        task = report["tasks"][name]
        assert task["rounds"] >= 2 and len(task["prefix"]["rounds"]) == task["rounds"]
        assert task["withinBudget"] and task["maxPromptTokens"] <= 24_000
        assert task["ratio"] < 1
    table = aira("bench", "capsule", "--tier", "T32")
    assert table.returncode == 0, table.stderr
    assert "transcript" in table.stdout and "flat client" in table.stdout
    assert "cache-hit share" in table.stdout


def test_bench_capsule_runs_the_tasks_it_is_given(occt: Any, aira: Any) -> None:
    out = aira("bench", "capsule", "--task", "parametric_edit", "--tier", "T128", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert list(report["tasks"]) == ["parametric_edit"]
    assert report["tasks"]["parametric_edit"]["budgetTokens"] == 96_000
    unknown = aira("bench", "capsule", "--task", "nonesuch")
    assert unknown.returncode == 2 and "nonesuch" in unknown.stderr


def test_the_spend_adds_up_to_the_input_and_names_its_parts(bracket: Any) -> None:
    run, recorder = bracket
    report = bench.task_report(run.outcome.records, run.store, recorder.prompts, recorder.requests)
    spend = report["spend"]
    assert list(spend["capsule"]) and set(spend["capsule"]) <= set(bench_segments())
    parts = [*spend["capsule"].values(), *spend["log"].values()]
    # each part is rounded up to whole tokens; the prompts were metered whole
    assert report["inputTokens"] <= sum(parts) <= report["inputTokens"] + len(parts)
    assert "plan decision" in spend["log"] and "lookup (search) result" in spend["log"]
    assert any(k.startswith("batch of lookup (L2)") for k in spend["log"])
    # the bracket folds after its first commit: every entry of a folded log is still the
    # step its call id names, none a guess
    assert report["perStep"][-1]["round"] > 0
    assert not [k for k in spend["log"] if k.startswith("?")]
    # a capsule the host did not build is one lump, not a guess
    assert bench._capsule_segments("no headers here") == {"capsule": 15}


def bench_segments() -> tuple[str, ...]:
    from aira_core.step.capsule import SEGMENTS

    return SEGMENTS
