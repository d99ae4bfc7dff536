"""``aira bench providers`` (aira_core.gateway.bench): the prefix measures on synthetic
prompts, and a smoke run of the bundled bracket through every built-in transport on the
OCCT kernel whose numbers come from the requests the fake received. No timing is asserted."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from aira_core.diagnostics import AiraError
from aira_core.extensions import StepRequest
from aira_core.gateway import bench
from aira_core.gateway.transports import (
    BUILTIN_TRANSPORTS,
    JsonTransport,
    ToolTransport,
    plain,
)
from aira_core.step.runner import bundled_script

SYSTEM = {"role": "system", "content": "You make the decisions of an Aira CAD task."}
CAPSULE = {"role": "user", "content": "aira.step/1 capsule " + "x" * 3000}
TOOLS = [{"type": "function", "function": {"name": "aira_step", "parameters": {"enum": ["a"]}}}]


def body(*messages: dict[str, Any], tools: Any = TOOLS, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "m1", "messages": [SYSTEM, CAPSULE, *messages], **extra}
    if tools is not None:
        out["tools"], out["tool_choice"] = tools, "auto"
    return out


DECISION = {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1"}]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "ok " * 200}


def test_identical_prompts_share_everything_and_a_changed_one_less() -> None:
    prompt = bench.prompt_bytes(body())
    tokens = -(-len(prompt) // 4)
    # all of it shared; cached: its whole 64-token blocks (a partial last block is not)
    assert bench.prefix_share(prompt, prompt) == (1.0, (len(prompt) // 4) // 64 * 64 / tokens)
    assert bench.prefix_share(b"a" * 1024, b"a" * 1024) == (1.0, 1.0)
    changed = prompt[:1000] + b"#" + prompt[1001:]
    share, hit = bench.prefix_share(prompt, changed)
    assert share == 1000 / len(changed)
    # 1000 bytes = 250 tokens = 3 whole 64-token blocks, of the prompt's tokens
    assert hit == 192 / tokens


def test_the_cache_hit_counts_whole_64_token_blocks() -> None:
    previous = b"a" * 1024
    assert bench.prefix_share(previous, previous[:600] + b"b" * 424) == (600 / 1024, 128 / 256)
    assert bench.prefix_share(previous, b"b" * 1024) == (0.0, 0.0)


def test_what_the_model_reads_is_tools_then_the_schema_then_the_messages() -> None:
    schema = {"name": "aira_step", "strict": True, "schema": {"type": "object"}}
    parts = bench.prompt_parts(
        body(DECISION, response_format={"type": "json_schema", "json_schema": schema})
    )
    assert [label for label, _ in parts] == [
        "tools",
        "response_format",
        "messages[0] (system)",
        "messages[1] (user)",
        "messages[2] (assistant)",
    ]
    assert json.loads(parts[1][1]) == schema
    # a bare json_object format, the model name and tool_choice are not read
    plain = bench.prompt_parts(body(tools=None, response_format={"type": "json_object"}))
    assert [label for label, _ in plain] == ["messages[0] (system)", "messages[1] (user)"]
    assert bench.prompt_bytes(body()) == b"".join(data for _, data in bench.prompt_parts(body()))


def test_within_rounds_counts_appends_and_names_rewrites() -> None:
    first, appended = body(), body(DECISION, RESULT)
    new_tools = [{"type": "function", "function": {"name": "aira_step", "parameters": {}}}]
    rewritten = body(DECISION, RESULT, DECISION, tools=new_tools)
    next_round = body()
    report = bench.within_rounds([first, appended, rewritten, next_round], [0, 0, 0, 1])
    assert report["rounds"] == 2 and report["pairs"] == 2  # the new round's first: not a pair
    a, b, c = (bench.prompt_bytes(x) for x in (first, appended, rewritten))
    assert report["minShare"] < report["meanShare"] < 1.0
    assert report["meanShare"] == round((len(a) / len(b) + bench.prefix_share(b, c)[0]) / 2, 4)
    assert report["appendOnlyShare"] == round((len(a) / len(b) + len(b) / len(c)) / 2, 4)
    assert report["meanShare"] < report["appendOnlyShare"]  # what the rewrite cost
    [rewrite] = report["rewrites"]
    assert rewrite["step"] == 2 and rewrite["at"] == "tools"
    assert report["met"] is False

    same = bench.within_rounds([first, first, first], [0, 0, 0])
    assert same["meanShare"] == same["minShare"] == 1.0 and same["rewrites"] == []
    assert same["meanCacheHit"] == round(bench.prefix_share(a, a)[1], 4) >= 0.85
    assert same["met"] is True
    assert bench.within_rounds([first], [0])["met"] is None


def test_the_fake_answers_a_tool_transport_with_a_tool_call_and_any_other_with_text() -> None:
    assert bench.fake_mode(ToolTransport()) == "tool"
    assert bench.fake_mode(JsonTransport()) == "json"

    class Schema:  # a transport of another style (a json_schema one, say)
        name = "strict"
        style = "json"

    assert bench.fake_mode(Schema()) == "json"


@pytest.fixture
def occt(register_plugin: Any) -> None:
    pytest.importorskip("cadquery")
    import aira_kernel_occt.plugin

    register_plugin(aira_kernel_occt.plugin, "occt")


class SchemaTransport(JsonTransport):
    """A transport the benchmark has never seen: the schema as ``response_format``
    ``json_schema`` (what a strict transport sends)."""

    name = "schema-test"

    def render(self, request: StepRequest) -> dict[str, Any]:
        schema = {"name": "aira_step", "strict": True, "schema": plain(request.schema)}
        return {"response_format": {"type": "json_schema", "json_schema": schema}}


def test_the_bracket_through_every_built_in_transport(
    occt: None, aira: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(BUILTIN_TRANSPORTS, "schema-test", SchemaTransport())
    out = aira("bench", "providers", "--task", "bracket", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["format"] == "aira.bench.providers/1"
    assert report["completed"] is True
    assert set(report["transports"]) == set(BUILTIN_TRANSPORTS)  # whatever it holds
    steps = len(bundled_script("bracket").decisions)
    for name, transport in report["transports"].items():
        assert transport["fakeMode"] == bench.fake_mode(BUILTIN_TRANSPORTS[name])
        task = transport["tasks"]["bracket"]
        assert (task["terminal"], task["steps"], task["timedSteps"]) == ("completed", steps, steps)
        # one request the fake received per step, none retried
        assert task["requestsPerRun"] == steps and task["retriedSteps"] == 0
        for key in ("overheadMs", "sendMs", "kernelMs", "gatewayMs", "otherMs"):
            assert task[key]["p50"] <= task[key]["p95"]
        assert task["sendMs"]["p50"] > 0 and task["decisionsPerSecond"] > 0
        prefix = task["prefix"]
        assert prefix["pairs"] == steps - task["rounds"]
        # the prompts grow within the round: each step appends its decision and result
        assert 0 < prefix["minShare"] <= prefix["meanShare"] < 1
        assert 0 <= prefix["minCacheHit"] <= prefix["meanCacheHit"] < 1
        assert prefix["met"] == (prefix["meanShare"] >= 0.85 and prefix["meanCacheHit"] >= 0.85)
        assert task["promptBytes"]["first"] < task["promptBytes"]["max"]
    # the schema a json_schema transport sends is read first: its prompt is the longer
    json_first = report["transports"]["json"]["tasks"]["bracket"]["promptBytes"]["first"]
    schema_first = report["transports"]["schema-test"]["tasks"]["bracket"]["promptBytes"]
    assert schema_first["first"] > json_first


def test_an_unknown_task_or_transport_is_refused(aira: Any) -> None:
    out = aira("bench", "providers", "--task", "nope")
    assert out.returncode == 2 and "no bundled task nope" in out.stderr
    out = aira("bench", "providers", "--transport", "nope")
    assert out.returncode == 1 and "GATEWAY_TRANSPORT_UNKNOWN" in out.stderr


def test_without_the_fake_the_benchmark_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "aira_core.testing.provider", None)  # not importable
    with pytest.raises(AiraError) as caught:
        bench._fake_server()
    assert caught.value.code == bench.BENCH_FAKE_UNAVAILABLE
    assert "aira-core[test]" in caught.value.diagnostic.message
