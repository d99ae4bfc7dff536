"""``aira bench providers``: the bundled tasks through the gateway, per decision transport,
against the loopback FAKE provider (:mod:`aira_core.testing.provider`; no model, no key).

Per transport and task it reports, computed from the run itself:

- **decisions per second** through the whole host: steps over the time from the first
  step's start (its capsule build) to the last step's record;
- **host overhead per step, network excluded**: a step's time (capsule, request, gateway
  and its synced ledger writes, decision validation, the kernel's work, the record) minus
  the time spent inside the provider's ``send`` (the HTTP call to the fake), p50 / p95;
- **prefix stability within rounds**: from the request bodies the fake received, what the
  model reads is rebuilt in order (:func:`prompt_bytes`: the tool definitions first, as chat
  templates put them, then a ``response_format`` schema, then the messages). For each step
  after the first of its round, the share of its bytes identical to the previous prompt's
  prefix, and the cache-hit share that implies for a prefix cache of 64-token blocks (4 bytes
  a token). The first prompt of a round is a new capsule by design and is not counted.

Target: within rounds, mean prefix share and mean cache-hit share ≥ 0.85 (reported, not
enforced). The send is timed by a proxy around the provider made here: the production code
has no timing hooks.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aira_core.diagnostics import AiraError
from aira_core.extensions import StepReply, StepRequest, Transport
from aira_core.gateway.gateway import Gateway, Route
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import BUILTIN_TRANSPORTS
from aira_core.runtime.tiers import HOST_BYTES_PER_TOKEN
from aira_core.stats import percentile
from aira_core.step.bench import BLOCK_TOKENS, common_prefix, prefix_share
from aira_core.step.runner import BUNDLED, bundled_script, run_script
from aira_core.step.trajectory import DecisionScript

if TYPE_CHECKING:
    from aira_core.testing.provider import FakeProviderServer

FORMAT = "aira.bench.providers/1"
TARGET_SHARE = 0.85
MODEL = "m1"
PROVIDER = "fake"
BENCH_FAKE_UNAVAILABLE = "BENCH_FAKE_UNAVAILABLE"


def _fake_server() -> type[FakeProviderServer]:
    """The fake provider's class; it ships in :mod:`aira_core.testing`, which needs pytest."""
    try:
        from aira_core.testing.provider import FakeProviderServer
    except ImportError as exc:
        raise AiraError(
            BENCH_FAKE_UNAVAILABLE,
            "the providers benchmark runs against the fake provider of aira_core.testing, which "
            f"cannot be imported here ({exc.name or 'a dependency'} is missing; pytest comes "
            "with aira-core[test])",
        ) from None
    return FakeProviderServer


# -- what the model reads, and how much of it a prefix cache keeps ---------------------------


def _encoded(part: Any) -> bytes:
    return json.dumps(part, ensure_ascii=False, separators=(",", ":")).encode()


def prompt_parts(body: Mapping[str, Any]) -> list[tuple[str, bytes]]:
    """What a model reads of a chat-completions ``body``, in the order a chat template puts
    it, as named parts: the tool definitions, a ``response_format`` JSON schema, then each
    message (compact JSON, one after another, as a template renders them in turn). Fields the
    model does not read (``model``, ``tool_choice``, a bare ``json_object`` format) are left
    out."""
    parts: list[tuple[str, bytes]] = []
    if body.get("tools"):
        parts.append(("tools", _encoded(body["tools"])))
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and "json_schema" in fmt:
        parts.append(("response_format", _encoded(fmt["json_schema"])))
    for i, message in enumerate(body.get("messages") or []):
        role = message.get("role") if isinstance(message, Mapping) else None
        parts.append((f"messages[{i}] ({role})", _encoded(message)))
    return parts


def prompt_bytes(body: Mapping[str, Any]) -> bytes:
    """The bytes of :func:`prompt_parts`, joined."""
    return b"".join(data for _, data in prompt_parts(body))


def _part_at(parts: Sequence[tuple[str, bytes]], offset: int) -> str:
    for label, data in parts:
        if offset < len(data):
            return label
        offset -= len(data)
    return "the end"


def within_rounds(bodies: Sequence[Mapping[str, Any]], rounds: Sequence[int]) -> dict[str, Any]:
    """Prefix stability of consecutive prompts of the same round: ``bodies[i]`` is step
    ``i``'s request body, ``rounds[i]`` its round. A round's first prompt has no predecessor
    in it and is not counted. A pair whose later prompt does not begin with the whole earlier
    one is a **rewrite**, named by the step and the part where the two first differ (a pair
    that only appended is none: its share is below 1 by what the step added).
    ``appendOnlyShare`` is the mean share had no pair been a rewrite (each prompt's earlier
    one over its length): the most any layout of the same prompts could reach."""
    if len(bodies) != len(rounds):
        raise ValueError(f"{len(bodies)} prompts for {len(rounds)} rounds")
    parts = [prompt_parts(body) for body in bodies]
    prompts = [b"".join(data for _, data in p) for p in parts]
    shares: list[float] = []
    hits: list[float] = []
    ceilings: list[float] = []
    rewrites: list[dict[str, Any]] = []
    for i in range(1, len(prompts)):
        if rounds[i] != rounds[i - 1]:
            continue
        previous, current = prompts[i - 1], prompts[i]
        share, hit = prefix_share(previous, current)
        shares.append(share)
        hits.append(hit)
        ceilings.append(min(1.0, len(previous) / len(current)) if current else 1.0)
        common = common_prefix(previous, current)
        if common < len(previous):
            rewrites.append(
                {
                    "step": i,
                    "at": _part_at(parts[i], common),
                    "keptShare": round(common / len(previous), 4),
                }
            )
    result: dict[str, Any] = {"rounds": len(set(rounds)), "pairs": len(shares)}
    if not shares:
        return {**result, "rewrites": rewrites, "met": None}
    result.update(
        meanShare=round(statistics.fmean(shares), 4),
        minShare=round(min(shares), 4),
        meanCacheHit=round(statistics.fmean(hits), 4),
        minCacheHit=round(min(hits), 4),
        appendOnlyShare=round(statistics.fmean(ceilings), 4),
        rewrites=rewrites,
    )
    result["met"] = result["meanShare"] >= TARGET_SHARE and result["meanCacheHit"] >= TARGET_SHARE
    return result


# -- timing proxies (the benchmark's own) ----------------------------------------------------


class _TimedSend:
    """The real provider; the seconds spent in each ``send`` are appended to ``sends``."""

    def __init__(self, provider: OpenAICompatProvider, sends: list[float]) -> None:
        self._provider, self._sends = provider, sends

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def send(self, call: Any, *, deadline: float) -> Any:
        start = time.perf_counter()
        try:
            return self._provider.send(call, deadline=deadline)
        finally:
            self._sends.append(time.perf_counter() - start)


class _Metered:
    """The gateway, noting when each step's decide starts, how much of it was spent in the
    provider's send, and which of the fake's requests it made."""

    name = "gateway"

    def __init__(self, gateway: Gateway, fake: FakeProviderServer, sends: list[float]) -> None:
        self.gateway, self._fake, self._sends = gateway, fake, sends
        self.steps: list[dict[str, Any]] = []

    def decide(self, request: StepRequest) -> StepReply:
        first, sent = len(self._fake.requests), len(self._sends)
        start = time.perf_counter()
        reply = self.gateway.decide(request)
        self.steps.append(
            {
                "step": request.step,
                "decideStart": start,
                "send": sum(self._sends[sent:]),
                "requests": (first, len(self._fake.requests)),
            }
        )
        return reply

    def finish(self) -> Any:
        return self.gateway.finish()


# -- one run ---------------------------------------------------------------------------------


def _quantiles(samples: Sequence[float]) -> dict[str, float]:
    return {f"p{p}": round(percentile(samples, p), 3) for p in (50, 95)}


def fake_mode(transport: Transport) -> str:
    """How the fake answers ``transport``: a tool call for a tool-style transport, the
    decision as the reply's text for every other (json, json_schema)."""
    return "tool" if getattr(transport, "style", None) == "tool" else "json"


def run_once(
    script: DecisionScript,
    transport: Transport,
    *,
    kernel: Any,
    ledger: AttemptLedger,
    where: Path,
    reasoning: str | None = None,
) -> dict[str, Any]:
    """``script`` through a Gateway on an OpenAI-compatible provider pointed at a fresh
    fake, on ``kernel``, its store and trajectory in ``where`` (which must not exist)."""
    sends: list[float] = []
    marks: list[float] = []
    records: list[dict[str, Any]] = []

    def on_step(record: dict[str, Any]) -> None:
        marks.append(time.perf_counter())
        records.append(record)

    with _fake_server()(script.decisions, mode=fake_mode(transport), reasoning=reasoning) as fake:
        task = ledger.create_task({"intent": script.name, "script": script.name})
        provider = OpenAICompatProvider(PROVIDER, fake.base_url, [MODEL])
        gateway = Gateway([Route(_TimedSend(provider, sends), MODEL)], ledger, task.id, transport)
        metered = _Metered(gateway, fake, sends)
        run = run_script(
            script,
            kernel=kernel,
            store=where / "store.sqlite3",
            trajectory=where / "trajectory.jsonl",
            source=metered,
            header={"gatewayTask": task.id},
            on_step=on_step,
        )
        received = fake.requests
    steps = metered.steps
    if len(steps) != len(records):
        raise RuntimeError(f"{len(steps)} decisions for {len(records)} step records")
    rows = []
    bodies = []
    for meta, record, mark in zip(steps, records, marks, strict=True):
        timings = record["timings"]
        begin = meta["decideStart"] - timings["capsuleMs"] / 1000
        step_s = mark - begin
        first, end = meta["requests"]
        if end == first:
            raise RuntimeError(f"step {meta['step']} made no request")
        # the request that was answered: the last one the step made (a retry's is later)
        bodies.append(received[end - 1].body)
        rows.append(
            {
                "begin": begin,
                "stepMs": step_s * 1000,
                "sendMs": meta["send"] * 1000,
                "overheadMs": (step_s - meta["send"]) * 1000,
                "kernelMs": timings["executeMs"],
                "gatewayMs": timings["decideMs"] - meta["send"] * 1000,
                # capsule, validation, settling the round, the trajectory record
                "otherMs": (step_s - meta["send"]) * 1000
                - timings["executeMs"]
                - (timings["decideMs"] - meta["send"] * 1000),
                "requests": end - first,
            }
        )
    loop_s = marks[-1] - rows[0]["begin"] if rows else 0.0
    return {
        "terminal": run.outcome.terminal.value if run.outcome.terminal else None,
        "steps": run.outcome.steps,
        "rounds": run.outcome.rounds,
        "requests": len(received),
        "retried": sum(1 for r in rows if r["requests"] > 1),
        "loopSeconds": loop_s,
        "rows": rows,
        "bodies": bodies,
        "roundOf": [r["round"] for r in records],
    }


def _summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    rows = [row for run in runs for row in run["rows"]]
    steps = sum(len(run["rows"]) for run in runs)
    loop = sum(run["loopSeconds"] for run in runs)
    summary: dict[str, Any] = {
        "timedSteps": steps,
        "decisionsPerSecond": round(steps / loop, 2) if loop > 0 else None,
    }
    if rows:
        summary.update(
            overheadMs=_quantiles([r["overheadMs"] for r in rows]),
            sendMs=_quantiles([r["sendMs"] for r in rows]),
            kernelMs=_quantiles([r["kernelMs"] for r in rows]),
            gatewayMs=_quantiles([r["gatewayMs"] for r in rows]),
            otherMs=_quantiles([r["otherMs"] for r in rows]),
        )
    return summary


def _task_report(done: Sequence[dict[str, Any]]) -> dict[str, Any]:
    first = done[0]
    sizes = [len(prompt_bytes(body)) for body in first["bodies"]]
    return {
        "terminal": first["terminal"],
        "completed": all(r["terminal"] == "completed" for r in done),
        "steps": first["steps"],
        "rounds": first["rounds"],
        "requestsPerRun": first["requests"],
        "retriedSteps": sum(r["retried"] for r in done),
        **_summary(done),
        "promptBytes": {"first": sizes[0] if sizes else 0, "max": max(sizes, default=0)},
        # from the first run: the prompts are the same in every run (the demo is reproducible)
        "prefix": within_rounds(first["bodies"], first["roundOf"]),
    }


def providers_report(
    kernel: Any,
    *,
    tasks: Sequence[str] = BUNDLED,
    transports: Mapping[str, Transport] | None = None,
    runs: int = 1,
    warmup: int = 1,
    reasoning_bytes: int = 0,
    where: Path | None = None,
    on_run: Callable[[str, str, int], None] | None = None,
) -> dict[str, Any]:
    """The report of ``aira bench providers``: every task in ``tasks`` through every
    transport (default: :data:`BUILTIN_TRANSPORTS`, whatever it holds) ``runs`` times, after
    ``warmup`` unreported runs of the first (the kernel's worker starts, the first connection
    is made); the ledger and the stores in a temporary directory (in ``where``), removed
    afterwards. ``reasoning_bytes`` of reasoning ride with each answer (0: none);
    ``on_run(transport, task, run)`` is told before each run (run -1: a warm-up)."""
    if runs < 1 or warmup < 0:
        raise ValueError("runs must be at least 1 and warmup at least 0")
    chosen = dict(BUILTIN_TRANSPORTS if transports is None else transports)
    filler = "The fake's reasoning for this step. "
    reasoning = (filler * (reasoning_bytes // len(filler) + 1))[:reasoning_bytes] or None
    report: dict[str, Any] = {
        "format": FORMAT,
        "provider": "the loopback fake (aira_core.testing.provider), not a model",
        "targetShare": TARGET_SHARE,
        "blockTokens": BLOCK_TOKENS,
        "bytesPerToken": HOST_BYTES_PER_TOKEN,
        "runs": runs,
        "warmupRuns": warmup,
        "reasoningBytes": reasoning_bytes,
        "transports": {},
    }
    with tempfile.TemporaryDirectory(dir=where, prefix="aira-bench-providers-") as tmp:
        ledger = AttemptLedger.open(Path(tmp) / "gateway.sqlite3")
        count = 0

        def once(name: str, task: str, n: int) -> dict[str, Any]:
            nonlocal count
            count += 1
            if on_run is not None:
                on_run(name, task, n)
            return run_once(
                bundled_script(task),
                chosen[name],
                kernel=kernel,
                ledger=ledger,
                where=Path(tmp) / f"run-{count}",
                reasoning=reasoning,
            )

        try:
            if chosen and tasks:
                for _ in range(warmup):
                    once(next(iter(chosen)), tasks[0], -1)
            for name, transport in chosen.items():
                per_task = {task: [once(name, task, n) for n in range(runs)] for task in tasks}
                reports = {task: _task_report(done) for task, done in per_task.items()}
                report["transports"][name] = {
                    "fakeMode": fake_mode(transport),
                    **_summary([run for done in per_task.values() for run in done]),
                    "completed": all(t["completed"] for t in reports.values()),
                    "prefixMet": all(t["prefix"]["met"] is not False for t in reports.values()),
                    "tasks": reports,
                }
        finally:
            ledger.close()
    entries = report["transports"].values()
    report["completed"] = all(t["completed"] for t in entries)
    report["prefixMet"] = all(t["prefixMet"] for t in entries)
    return report


COLUMNS = [
    "transport",
    "task",
    "steps (rounds)",
    "dec/s",
    "host ms p50/p95",
    "send ms",
    "prefix mean/min",
    "hit mean/min",
    "target",
]


def table_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """One row per transport and task of :func:`providers_report`, under :data:`COLUMNS`."""
    rows = []
    for name, transport in report["transports"].items():
        for task, r in transport["tasks"].items():
            prefix = r["prefix"]
            overhead = r.get("overheadMs", {})
            shares = ("-", "-")
            if prefix["pairs"]:
                shares = (
                    f"{prefix['meanShare']:.2f} / {prefix['minShare']:.2f}",
                    f"{prefix['meanCacheHit']:.2f} / {prefix['minCacheHit']:.2f}",
                )
            verdict = {True: "met", False: "MISSED", None: "no pairs"}[prefix["met"]]
            if not r["completed"]:
                verdict += f" (run {r['terminal']})"
            rows.append(
                [
                    name,
                    task,
                    f"{r['steps']} ({r['rounds']})",
                    f"{r['decisionsPerSecond']:.1f}" if r["decisionsPerSecond"] else "-",
                    f"{_num(overhead.get('p50'))} / {_num(overhead.get('p95'))}",
                    _num(r.get("sendMs", {}).get("p50")),
                    *shares,
                    verdict,
                ]
            )
    return rows


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
