"""benchmarks/bench_agent.py on two tasks (a bundled script and one of its own plans): the
known-plan route reaches the part in a few calls and a few bytes, the stepwise route reaches
the same revision, the picture is within its bound. The numbers are the benchmark's; here
only what must hold whatever they are."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from aira_core import plugins

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "bench_agent.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_agent", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench = _load()


@pytest.fixture(scope="module")
def report() -> Iterator[dict[str, Any]]:
    if importlib.util.find_spec("aira_kernel_occt") is None:
        pytest.skip("aira-kernel-occt is not installed: aira mcp serve has no kernel")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AIRA_PLUGINS", "occt")
        patch.setattr(plugins, "_system", plugins.PluginSystem(load_entrypoints=True))
        yield bench.run(["bracket", "washer"])


def test_a_known_plan_is_a_few_calls_and_the_same_part_as_step_by_step(
    report: dict[str, Any],
) -> None:
    from aira_core.report.picture import MAX_BYTES

    rows = {r["id"]: r for r in report["tasks"]}
    assert set(rows) == {"bracket", "washer"}
    washer = rows["washer"]["known"]
    assert washer["callsByTool"] == {"task_open": 1, "model_apply": 1, "model_read": 1}
    assert washer["outcomes"] == ["committed"]
    # the bracket's first plan is refused at plan.check (its fillet has no selection); the
    # script's next plan is the fix: one more model_apply, nothing to describe
    bracket = rows["bracket"]["known"]
    assert bracket["callsByTool"] == {"task_open": 1, "model_apply": 2, "model_read": 1}
    assert bracket["outcomes"][0].startswith("refused:") and bracket["outcomes"][-1] == "committed"
    for row in rows.values():
        known, stepwise = row["known"], row["stepwise"]
        assert known["rev"] == stepwise["rev"]  # the same plans make the same part
        assert known["calls"] < stepwise["calls"]
        assert known["resultBytes"] < stepwise["resultBytes"]
        assert known["ratio"] == round(known["resultBytes"] / known["planBytes"], 2)
        assert 0 < known["pictureBytes"] <= MAX_BYTES
    assert report["summary"]["known"]["medianCalls"] == 3.5
    assert {s["id"] for s in report["skipped"]} <= {"parametric_edit"}
    json.dumps(report)  # --json prints it


def test_a_task_that_is_not_there_is_an_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--only", "no-such-part"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no task is named no-such-part") and "Traceback" not in err
