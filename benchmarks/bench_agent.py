"""Benchmark: what an agent that already knows its plan pays to build a part over MCP.

A real ``aira mcp serve`` per task (this interpreter, the OCCT kernel, a fresh store and
``AIRA_HOME``), driven by the official MCP SDK's client (``mcp.Client``) over stdio, as a
desktop client starts it. Each task is a part and the plan(s) that build it:

- the bundled scripts' plans (``aira_core/step/scripts``), in the order the script sends
  them; a script that starts from a seeded part is left out (no MCP call makes one), and
- the single-part plans of ``benchmarks/agent/plans.json``, written for this benchmark.

Two routes per task, each on its own fresh server:

``known`` (the one this framework offers an agent): ``task_open`` naming the capabilities
the plan uses, one ``model_apply`` per plan, and a ``model_read`` of the head. The agent
discovers only what a refusal asks for: a refusal's ``nextActions`` that name a describe
are followed (one ``catalog_describe``), a repair's ``model_read`` is called and its
candidate plan applied; any other refusal ends that plan (a bundled script's next plan is
its author's fix). Then one more ``model_read view=picture``: the part as an image,
reported on its own (its bytes are an image, not text, and an agent may skip it).

``stepwise`` (how an agent had to work before): ``task_open``, one ``catalog_search`` with
the task's intent, one ``catalog_describe`` per capability, then per plan
``model_proposePatch``, ``model_preview``, ``model_validate``, ``model_commit`` (a refusal
ends that plan), and a ``model_read``. Its results are today's compact ones, so it is a
lower bound of what the same route cost before them.

Per task and route: calls by tool, the bytes of the text results a client shows its model
(UTF-8, every content block of every call, refusals included), the plan's own bytes
(compact JSON of the task's plans, what the agent knew; a repair's candidate it sends back
is the server's), their ratio, whether the task reached a
committed head, and its revision (both routes must reach the same one: the same plans make
the same part). The summary gives medians over tasks. Target (issue 31): the known route's
median ≤ 6 calls and ≤ 3× the plan's bytes.

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_agent.py            # report
    .venv/bin/python benchmarks/bench_agent.py --json     # one JSON object
    .venv/bin/python benchmarks/bench_agent.py --only washer --only bracket

Exits 0 when it measured (a missed target is reported, not an exit code), 2 (an
``error:`` line on stderr) when it could not: the server did not start, a task did not
reach a committed head, or the two routes built different parts.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import BenchmarkError, parse_args, report_run, script_parser
from bench_mcp import (  # a sibling script, not a package
    _benchmark_error,
    _first_leaf,
    server_command,
    server_env,
)

PLANS = Path(__file__).resolve().parent / "agent" / "plans.json"
PLANS_FORMAT = "aira.bench-agent-plans/1"
TARGET_CALLS = 6
TARGET_RATIO = 3.0
MAX_FOLLOW = 3
"""Refusals of one plan the known route follows (describe, repair) before it gives up."""


def compact_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def capability_of(ref: str) -> str:
    """A step's capability, or an assertion's validatorRef as the capability id it names
    (``validate.volumeRange@1.0.0`` → ``cap:validate.volumeRange@1``)."""
    if ref.startswith("cap:"):
        return ref
    name, _, version = ref.partition("@")
    return f"cap:{name}@{version.split('.')[0]}"


def capabilities(plans: list[dict[str, Any]]) -> list[str]:
    used = [
        *(s["capability"] for p in plans for s in p.get("steps", [])),
        *(a["validatorRef"] for p in plans for a in p.get("acceptanceAssertions", [])),
    ]
    return list(dict.fromkeys(capability_of(c) for c in used))


def load_tasks(only: list[str] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tasks, skipped): each task ``{id, source, intent, plans}``."""
    from aira_core.step.runner import BUNDLED, bundled_script

    tasks, skipped = [], []
    for name in BUNDLED:
        script = bundled_script(name)
        if script.document is not None:
            skipped.append({"id": name, "why": "starts from a seeded part (no MCP call makes one)"})
            continue
        plans = []
        for decision in script.decisions:
            wire = decision.to_wire() if hasattr(decision, "to_wire") else dict(decision)
            for act in wire["acts"] if wire["act"] == "batch" else [wire]:
                if act["act"] == "plan":
                    plans.append(act["plan"])
        tasks.append(
            {"id": name, "source": "bundled", "intent": script.intent.goal, "plans": plans}
        )
    data = json.loads(PLANS.read_text(encoding="utf-8"))
    if data.get("format") != PLANS_FORMAT:
        raise BenchmarkError(f"{PLANS.name} is not {PLANS_FORMAT}")
    for t in data["tasks"]:
        tasks.append({"id": t["id"], "source": "own", "intent": t["intent"], "plans": [t["plan"]]})
    if only:
        tasks = [t for t in tasks if t["id"] in only]
        if not tasks:
            raise BenchmarkError(f"no task is named {', '.join(only)}")
    return tasks, skipped


class Session:
    """One client's calls, counted as the model sees them."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.calls: Counter[str] = Counter()
        self.text_bytes = 0
        self.texts: list[tuple[str, int]] = []

    async def call(self, tool: str, **arguments: Any) -> tuple[Any, dict[str, Any]]:
        result = await self.client.call_tool(tool, arguments)
        self.calls[tool] += 1
        size = sum(len(c.text.encode()) for c in result.content if c.type == "text")
        self.text_bytes += size
        self.texts.append((tool, size))
        return result, json.loads(result.content[0].text)


def _descriptions(envelope: dict[str, Any]) -> list[str]:
    """The capabilities a refusal's next actions ask to describe."""
    out = []
    for action in envelope.get("nextActions") or []:
        if isinstance(action, dict) and action.get("tool") == "catalog_describe":
            cap = action.get("capability") or (action.get("args") or {}).get("capabilityId")
            if cap:
                out.append(cap)
    for d in envelope.get("diagnostics") or []:
        if d.get("code") == "DISCOVERY_REQUIRED" and d.get("subject", "").startswith("cap:"):
            out.append(d["subject"])
    return list(dict.fromkeys(out))


def _repair(envelope: dict[str, Any]) -> dict[str, Any] | None:
    for action in envelope.get("nextActions") or []:
        if not isinstance(action, dict) or action.get("tool") != "model_read":
            continue
        args = action.get("args")
        if isinstance(args, dict) and "repair" in args:
            return args
    return None


async def known_route(session: Session, task: dict[str, Any]) -> dict[str, Any]:
    _, opened = await session.call(
        "task_open", intent=task["intent"], capabilities=capabilities(task["plans"])
    )
    handle = opened["data"]["task"]
    outcomes, sent = [], []
    for plan in task["plans"]:
        current = plan
        sent.append(current)
        for _ in range(MAX_FOLLOW + 1):
            result, envelope = await session.call("model_apply", task=handle, plan=current)
            if not result.is_error:
                outcomes.append("committed")
                break
            code = (envelope.get("diagnostics") or [{}])[0].get("code")
            wanted, repair = _descriptions(envelope), _repair(envelope)
            if repair is not None:  # the refusal's own fix first
                made, candidate = await session.call("model_read", task=handle, **repair)
                if made.is_error and _descriptions(candidate):
                    await session.call(
                        "catalog_describe", task=handle, capabilityIds=_descriptions(candidate)
                    )
                    made, candidate = await session.call("model_read", task=handle, **repair)
                if made.is_error:
                    outcomes.append(f"refused:{code}")
                    break
                steps = candidate["data"]["candidate"]["plan"]["steps"]
                current = {
                    **current,
                    "steps": [{k: v for k, v in s.items() if k != "dependsOn"} for s in steps],
                }
                sent.append(current)
            elif wanted:
                await session.call("catalog_describe", task=handle, capabilityIds=wanted)
            else:
                outcomes.append(f"refused:{code}")
                break
    _, read = await session.call("model_read", task=handle)
    picture = await session.client.call_tool("model_read", {"task": handle, "view": "picture"})
    images = [c for c in picture.content if c.type == "image"]
    import base64

    return {
        "outcomes": outcomes,
        "rev": read["data"]["summary"]["rev"],
        "planBytes": sum(compact_bytes(p) for p in task["plans"]),
        "plansSent": len(sent),
        "pictureBytes": len(base64.b64decode(images[0].data)) if images else 0,
    }


async def stepwise_route(session: Session, task: dict[str, Any]) -> dict[str, Any]:
    _, opened = await session.call("task_open", intent=task["intent"])
    handle = opened["data"]["task"]
    await session.call("catalog_search", task=handle, intent=task["intent"])
    for cap in capabilities(task["plans"]):
        described, envelope = await session.call("catalog_describe", task=handle, capabilityId=cap)
        if described.is_error:
            # not surfaced by the whole intent's search: one search by the capability's name
            name = cap.removeprefix("cap:").split("@")[0].split(".")[-1]
            await session.call("catalog_search", task=handle, intent=name)
            described, envelope = await session.call(
                "catalog_describe", task=handle, capabilityId=cap
            )
            if described.is_error:
                raise BenchmarkError(f"{task['id']}: {cap} cannot be described: {envelope}")
    outcomes = []
    for plan in task["plans"]:
        current = plan
        for _ in range(MAX_FOLLOW + 1):
            result, envelope = await session.call("model_proposePatch", task=handle, plan=current)
            for tool in ("model_preview", "model_validate", "model_commit"):
                if result.is_error:
                    break
                result, envelope = await session.call(tool, task=handle)
            repair = _repair(envelope) if result.is_error else None
            if repair is None:
                break
            # as the refusal's next actions say: describe the repair, then read its candidate
            for cap in _descriptions(envelope):
                await session.call("catalog_describe", task=handle, capabilityId=cap)
            made, candidate = await session.call("model_read", task=handle, **repair)
            if made.is_error:
                break
            steps = candidate["data"]["candidate"]["plan"]["steps"]
            current = {
                **current,
                "steps": [{k: v for k, v in s.items() if k != "dependsOn"} for s in steps],
            }
        code = (envelope.get("diagnostics") or [{}])[0].get("code")
        outcomes.append("committed" if not result.is_error else f"refused:{code}")
    _, read = await session.call("model_read", task=handle)
    return {
        "outcomes": outcomes,
        "rev": read["data"]["summary"]["rev"],
        "planBytes": sum(compact_bytes(p) for p in task["plans"]),
    }


async def _run_task(task: dict[str, Any], route: str) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    with tempfile.TemporaryDirectory(prefix="aira-bench-agent-") as tmp:
        home = Path(tmp)
        command = server_command(home / "store.sqlite3", "occt")
        env = {**server_env(home), "AIRA_EMBEDDER": "hashing"}
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        start = time.perf_counter()
        async with Client(params) as client:
            session = Session(client)
            run = known_route if route == "known" else stepwise_route
            out = await run(session, task)
        seconds = time.perf_counter() - start
    if "committed" not in out["outcomes"]:
        raise BenchmarkError(f"{task['id']} ({route}) reached no committed head: {out['outcomes']}")
    calls = sum(session.calls.values())
    return {
        **out,
        "calls": calls,
        "callsByTool": dict(session.calls),
        "resultBytes": session.text_bytes,
        "ratio": round(session.text_bytes / out["planBytes"], 2),
        "seconds": round(seconds, 2),
    }


def run(only: list[str] | None = None) -> dict[str, Any]:
    import anyio

    tasks, skipped = load_tasks(only)
    rows = []
    for task in tasks:
        row: dict[str, Any] = {"id": task["id"], "source": task["source"]}
        for route in ("known", "stepwise"):
            try:
                row[route] = anyio.run(_run_task, task, route)
            except Exception as exc:  # the SDK raises from its task groups
                own = _benchmark_error(exc)
                if own is not None:
                    raise own from None
                leaf = _first_leaf(exc)
                raise BenchmarkError(
                    f"{task['id']} ({route}): {type(leaf).__name__}: {leaf}"
                ) from None
        if row["known"]["rev"] != row["stepwise"]["rev"]:
            raise BenchmarkError(f"{task['id']}: the two routes built different parts")
        rows.append(row)

    def median(route: str, key: str) -> float:
        return statistics.median(r[route][key] for r in rows)

    summary = {
        route: {
            "medianCalls": median(route, "calls"),
            "medianResultBytes": median(route, "resultBytes"),
            "medianPlanBytes": median(route, "planBytes"),
            "medianRatio": median(route, "ratio"),
        }
        for route in ("known", "stepwise")
    }
    summary["known"]["medianPictureBytes"] = statistics.median(
        r["known"]["pictureBytes"] for r in rows
    )
    summary["known"]["maxPictureBytes"] = max(r["known"]["pictureBytes"] for r in rows)
    met = (
        summary["known"]["medianCalls"] <= TARGET_CALLS
        and summary["known"]["medianRatio"] <= TARGET_RATIO
    )
    return {
        "format": "aira.bench.agent/1",
        "tasks": rows,
        "skipped": skipped,
        "summary": summary,
        "target": {"medianCalls": TARGET_CALLS, "medianRatio": TARGET_RATIO, "met": met},
    }


def print_report(r: dict[str, Any]) -> None:
    print(
        f"{'task':<24} {'route':<9} {'calls':>5} {'result B':>9} {'plan B':>7} {'ratio':>6}"
        f" {'picture B':>9}  calls by tool"
    )
    for row in r["tasks"]:
        for route in ("known", "stepwise"):
            x = row[route]
            tools = ", ".join(f"{t} {n}" for t, n in x["callsByTool"].items())
            picture = f"{x['pictureBytes']:>9,}" if route == "known" else " " * 9
            print(
                f"{row['id']:<24} {route:<9} {x['calls']:>5} {x['resultBytes']:>9,} "
                f"{x['planBytes']:>7,} {x['ratio']:>6} {picture}  {tools}"
            )
    for s in r["skipped"]:
        print(f"{s['id']:<24} skipped: {s['why']}")
    k, w = r["summary"]["known"], r["summary"]["stepwise"]
    print()
    print(
        f"known:    median {k['medianCalls']} calls, {k['medianResultBytes']:,.0f} B of results, "
        f"{k['medianRatio']}x the plan; picture median {k['medianPictureBytes']:,.0f} B, "
        f"max {k['maxPictureBytes']:,} B"
    )
    print(
        f"stepwise: median {w['medianCalls']} calls, {w['medianResultBytes']:,.0f} B of results, "
        f"{w['medianRatio']}x the plan"
    )
    t = r["target"]
    print(
        f"target: median <= {t['medianCalls']} calls and <= {t['medianRatio']}x the plan "
        f"(known route): {'met' if t['met'] else 'TARGET MISSED'}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--only", action="append", help="run only this task (repeatable)")
    args = parse_args(parser, argv)
    return report_run(
        lambda: run(args.only),
        print_report,
        as_json=args.json,
        errors=(OSError,),
        ensure_ascii=False,
    )


if __name__ == "__main__":
    sys.exit(main())
