"""Benchmark: the provider gateway's overhead per step, network excluded.

One step through :class:`aira_core.gateway.gateway.Gateway` is what the bounded-step host
pays besides the model: the ledger's writes, synced (the attempt written ``submitting``
before the request may leave, then the delivered reply: two ``synchronous=FULL``
transactions) and its reads (is this step delivered already? attempts left by an earlier
process?), the request build (``OpenAICompatProvider.prepare``: the chat messages of the
capsule and the round log, the ``aira_step`` tool with the step's decision schema, the
body, encoded once), the request digest the ledger keeps instead of the body (of the bytes
sent), and the reply parse (``OpenAICompatProvider.reply``: the tool call, reasoning, usage
and cost).

What is measured is the Gateway's real ``decide`` on a real ``AttemptLedger`` file in a
temporary directory (``--dir`` chooses where; the report names the filesystem, since fsync
on tmpfs costs nothing), with the real ``OpenAICompatProvider``. Only the wire is replaced:
the provider's ``httpx2.Client`` runs on ``httpx2.MockTransport``, whose handler answers a
canned DeepSeek-style completion (one ``aira_step`` call, ``reasoning_content``, usage)
without reading the request. So the provider's whole ``send`` runs (``http.post_json``: the
body encoded, the call's deadline watchdog, the answer read in chunks and decoded) but no
socket is opened; a Provider whose ``send`` returned a canned ``ProviderResponse`` would hide
that client-side cost. The send is timed on its own and left out of the overhead (the
target's "network excluded"); the total with it is reported for information.

The request is realistic in size: a capsule of ``--capsule-kb`` (default 40) KB of capsule
segments (index, summary, pages as JSON, some of it non-ASCII), a round log of
``--log-pairs`` (default 3) decisions, each with ~2 KB of reasoning, and their results
(~4 KB each), and the step's real decision schema (``aira_core.step.decision``, ~15 KB).
Every ``TaskBudgets().steps`` (48) steps a new ledger task starts, as new runs would.

Each stage is timed inside the real calls (the ledger and the provider are wrapped in
timing proxies; the request digest is timed where the gateway calls it), so the split
(ledger writes, ledger reads, build, digest, parse, the gateway's own glue) adds up to the
overhead of the same steps. ``--steps`` (default 300) steps are timed after 20 warm-up
steps. For scale, two more numbers: one trivial synced SQLite commit on the same disk (the
floor under each ledger write), and a real call's local fixed cost, which the mock skips
(``http.post_json`` to a closed loopback port: its fresh client, SSL context, the refused
connect).

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_gateway_overhead.py            # report
    .venv/bin/python benchmarks/bench_gateway_overhead.py --json     # one JSON object
    .venv/bin/python benchmarks/bench_gateway_overhead.py --steps 1000 --dir /var/tmp

Target (issue 14): overhead p50 <= 3 ms per step. The script reports and never fails a
build: it exits 0 whether or not the target is met (2 only if the benchmark itself is
broken: a reply that is not the canned decision, an attempt not delivered).
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from _report import BenchmarkError, parse_args, report_run, script_parser, verdict
from bench_store import filesystem  # a sibling script: run from benchmarks/ on sys.path

from aira_core.extensions import BudgetsLeft, DecisionEntry, ResultEntry, StepRequest
from aira_core.gateway import gateway as gateway_module
from aira_core.gateway.chat import Prices
from aira_core.gateway.facts import DeliveryState
from aira_core.gateway.gateway import Gateway, Route
from aira_core.gateway.ledger import AttemptLedger
from aira_core.gateway.openai_compat import OpenAICompatProvider
from aira_core.gateway.transports import ToolTransport
from aira_core.runtime.tiers import TIERS, TaskBudgets
from aira_core.stats import quantiles
from aira_core.step import decision as grammar

TARGET_P50_S = 0.003
WARMUP_STEPS = 20
DEFAULT_STEPS = 300
DEFAULT_CAPSULE_KB = 40
DEFAULT_LOG_PAIRS = 3
STEPS_PER_TASK = TaskBudgets().steps
LEDGER_WRITES = frozenset({"begin_attempt", "update_attempt", "deliver", "set_task"})
DECISION = {"act": "read", "select": [["nodes", "n:plate", "source"]], "limit": 1, "pin": True}
MODEL = "deepseek-v4"


# -- the request ------------------------------------------------------------------------------


def capsule_text(kilobytes: int) -> str:
    """Capsule segments as the host writes them (docs/step.md), padded with working pages
    of a made-up plate document to ``kilobytes`` KB."""
    head = (
        "# 1 index\naira.capsule/1 tier T128: B 96000 tokens (capsule + log)\n"
        "# 2 frame\ngoal: 一块 40 × 30 × 10 的板，竖边倒圆 2 mm (a plate, edges rounded)\n"
        "# 3 summary\n"
    )
    parts = [head]
    size = len(head.encode())
    page = 0
    while size < kilobytes * 1000:
        body = {
            "nodes": [
                {
                    "alias": f"n:feature{page}_{i}",
                    "op": "exact.fillet@1.0.0",
                    "inputs": {"target": f"b:plate{i}", "radius": {"value": 2, "unit": "mm"}},
                    "label": f"圆角 {i}",
                }
                for i in range(8)
            ]
        }
        text = f"# 5 page p:{page} rev rev:sha256:{'ab' * 32}\n" + json.dumps(
            body, ensure_ascii=False, sort_keys=True
        )
        parts.append(text + "\n")
        size += len(text.encode()) + 1
        page += 1
    return "".join(parts)


def round_log(pairs: int) -> tuple[DecisionEntry | ResultEntry, ...]:
    entries: list[DecisionEntry | ResultEntry] = []
    for k in range(pairs):
        call = f"call_{k + 1}"
        decision = {"act": "lookup", "query": f"fillet vertical edges {k}", "note": "板的竖边"}
        reasoning = f"step {k}: the plate exists, its vertical edges want a fillet. " * 32
        result = {
            "status": "ok",
            "act": "lookup",
            "data": {
                "hits": [{"capabilityId": f"cap:exact.op{j}@1", "score": 0.5} for j in range(60)]
            },
        }
        entries.append(DecisionEntry(call, json.dumps(decision, ensure_ascii=False), reasoning))
        entries.append(ResultEntry(call, json.dumps(result, ensure_ascii=False)))
    return tuple(entries)


def requests(capsule_kb: int, log_pairs: int) -> Callable[[str, int], StepRequest]:
    capsule = capsule_text(capsule_kb)
    log = round_log(log_pairs)
    aliases = {
        "bodies": [f"b:plate{i}" for i in range(8)],
        "nodes": [f"n:feature{i}" for i in range(40)],
        "parameters": [f"p:width{i}" for i in range(12)],
    }
    schema = grammar.decision_schema(aliases, tier=TIERS["T128"])

    def make(task: str, step: int) -> StepRequest:
        return StepRequest(
            task_id=task,
            step=step,
            call_id=f"aira_s{step}",
            tier="T128",
            capsule=capsule,
            log=log,
            schema=schema,
            budgets=BudgetsLeft(steps=40, input_tokens=3_000_000, output_tokens=300_000, usd=4.0),
        )

    return make


def completion() -> bytes:
    """A DeepSeek-style answer: one aira_step call, 2 KB of reasoning, cache usage."""
    message = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The plate's source is what the next plan binds to. " * 40,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "aira_step", "arguments": json.dumps(DECISION)},
            }
        ],
    }
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {
            "prompt_tokens": 16_000,
            "completion_tokens": 700,
            "prompt_cache_hit_tokens": 15_000,
            "prompt_cache_miss_tokens": 1_000,
            "completion_tokens_details": {"reasoning_tokens": 520},
        },
    }
    return json.dumps(body).encode()


# -- timing proxies ---------------------------------------------------------------------------


class Clock:
    """Seconds spent per bucket, since the last :meth:`take`."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def timed(self, bucket: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[bucket] += time.perf_counter() - start
                self.calls[bucket] += 1

        return call

    def take(self) -> tuple[dict[str, float], dict[str, int]]:
        spent, calls = dict(self.spent), dict(self.calls)
        self.spent.clear()
        self.calls.clear()
        return spent, calls


class TimedLedger:
    """The real ledger; each method's time goes to ``ledger_write`` or ``ledger_read``."""

    def __init__(self, ledger: AttemptLedger, clock: Clock) -> None:
        self._ledger, self._clock = ledger, clock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._ledger, name)
        if not callable(value):
            return value
        return self._clock.timed("ledger_write" if name in LEDGER_WRITES else "ledger_read", value)


class TimedProvider:
    """The real provider; prepare → ``build``, send → ``send``, reply → ``parse``."""

    BUCKETS: ClassVar[dict[str, str]] = {"prepare": "build", "send": "send", "reply": "parse"}

    def __init__(self, provider: OpenAICompatProvider, clock: Clock) -> None:
        self._provider, self._clock = provider, clock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._provider, name)
        bucket = self.BUCKETS.get(name)
        return self._clock.timed(bucket, value) if bucket else value


# -- the run ----------------------------------------------------------------------------------


def real_call_fixed_seconds(runs: int = 20) -> float:
    """Median of a real call (``http.post_json``, its own fresh client) to a loopback port
    nothing listens on: what a call costs locally before the network (the client, its SSL
    context, the refused connect), which the mock send skips."""
    import socket

    from aira_core.extensions import AcceptanceTable, ProviderError
    from aira_core.gateway import http

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        try:
            http.post_json(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                {"model": MODEL},
                {},
                deadline=time.monotonic() + 2.0,
                table=AcceptanceTable("bench"),
            )
        except ProviderError:
            pass
        else:
            raise BenchmarkError(f"a call to the closed port {port} was answered")
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def synced_commit_seconds(where: Path, runs: int = 50) -> float:
    """Median of one trivial ``BEGIN IMMEDIATE``; insert; commit with WAL and
    ``synchronous=FULL`` in ``where``: the disk's floor under each ledger write."""
    import sqlite3

    db = sqlite3.connect(where / "floor.sqlite3", isolation_level=None)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE t (v INTEGER)")
        samples = []
        for n in range(runs):
            start = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t VALUES (?)", (n,))
            db.execute("COMMIT")
            samples.append(time.perf_counter() - start)
    finally:
        db.close()
    return statistics.median(samples)


def run(steps: int, capsule_kb: int, log_pairs: int, where: Path | None) -> dict[str, Any]:
    import httpx2

    answer = completion()
    client = httpx2.Client(
        transport=httpx2.MockTransport(
            lambda request: httpx2.Response(
                200, content=answer, headers={"Content-Type": "application/json"}
            )
        )
    )
    clock = Clock()
    provider = OpenAICompatProvider(
        "bench",
        "https://provider.invalid/v1",
        [MODEL],
        prices={MODEL: Prices(hit=0.028, miss=0.28, output=0.42)},
        client=client,
    )
    timed_provider = TimedProvider(provider, clock)
    make = requests(capsule_kb, log_pairs)
    sample_request = make("t", 0)
    body = provider.prepare(sample_request, MODEL, ToolTransport()).body
    real_digest = gateway_module._digest
    # Timed where the gateway calls it, so the digest has its own line in the split.
    gateway_module._digest = clock.timed("digest", real_digest)
    rows: list[dict[str, float]] = []
    try:
        with tempfile.TemporaryDirectory(dir=where, prefix="aira-bench-gateway-") as tmp:
            path = Path(tmp) / "gateway.sqlite3"
            fs = filesystem(Path(tmp))
            ledger = AttemptLedger.open(path)
            try:
                timed_ledger = TimedLedger(ledger, clock)
                gateway: Gateway | None = None
                tasks: list[str] = []
                for n in range(WARMUP_STEPS + steps):
                    if n % STEPS_PER_TASK == 0:
                        task = ledger.create_task({"intent": f"bench run {n // STEPS_PER_TASK}"})
                        tasks.append(task.id)
                        gateway = Gateway(
                            [Route(timed_provider, MODEL)], timed_ledger, task.id, ToolTransport()
                        )
                    assert gateway is not None
                    request = make(tasks[-1], n % STEPS_PER_TASK)
                    clock.take()
                    start = time.perf_counter()
                    reply = gateway.decide(request)
                    total = time.perf_counter() - start
                    spent, calls = clock.take()
                    if json.loads(reply.text) != DECISION or reply.provider != "bench":
                        raise BenchmarkError(f"step {n} answered {reply.text[:80]!r}")
                    if n < WARMUP_STEPS:
                        continue
                    send = spent.get("send", 0.0)
                    row = {
                        "total": total,
                        "overhead": total - send,
                        "send": send,
                        **{k: spent.get(k, 0.0) for k in ("ledger_write", "ledger_read")},
                        **{k: spent.get(k, 0.0) for k in ("build", "digest", "parse")},
                        "ledger_writes": calls.get("ledger_write", 0),
                    }
                    named = sum(row[k] for k in ("ledger_write", "ledger_read", "build", "digest"))
                    row["gateway"] = row["overhead"] - named - row["parse"]
                    rows.append(row)
                delivered = [
                    a
                    for t in tasks
                    for a in ledger.attempts(t)
                    if a.delivery_state == DeliveryState.READY and a.reply
                ]
                if len(delivered) != WARMUP_STEPS + steps:
                    raise BenchmarkError(
                        f"{len(delivered)} attempts delivered of {WARMUP_STEPS + steps} steps"
                    )
                ledger_bytes = path.stat().st_size
            finally:
                ledger.close()
            floor = synced_commit_seconds(Path(tmp))
    finally:
        gateway_module._digest = real_digest
        client.close()
    overhead = quantiles([r["overhead"] for r in rows], 50, 95)
    parts = ("ledger_write", "ledger_read", "build", "digest", "parse", "gateway")
    return {
        "benchmark": "gateway-overhead",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "filesystem": fs,
        "steps": steps,
        "warmup_steps": WARMUP_STEPS,
        "steps_per_task": STEPS_PER_TASK,
        "request": {
            "capsule_bytes": len(sample_request.capsule.encode()),
            "log_entries": len(sample_request.log),
            "schema_bytes": len(json.dumps(sample_request.schema).encode()),
            "body_bytes": len(json.dumps(body, ensure_ascii=False).encode()),
            "reply_bytes": len(answer),
        },
        "ledger_writes_per_step": statistics.median(r["ledger_writes"] for r in rows),
        "ledger_file_bytes": ledger_bytes,
        "overhead_seconds": overhead,
        "target": {
            "metric": "overhead p50",
            "max_seconds": TARGET_P50_S,
            "met": overhead["p50"] <= TARGET_P50_S,
        },
        "split_p50_seconds": {k: statistics.median(r[k] for r in rows) for k in parts},
        "split_mean_seconds": {k: statistics.fmean(r[k] for r in rows) for k in parts},
        "send_in_process_seconds": quantiles([r["send"] for r in rows], 50, 95),
        "total_with_send_seconds": quantiles([r["total"] for r in rows], 50, 95),
        "synced_commit_floor_seconds": floor,
        "real_call_fixed_seconds": real_call_fixed_seconds(),
    }


LABELS = {
    "ledger_write": "ledger writes, synced (attempt submitting; delivery)",
    "ledger_read": "ledger reads (delivered already? leftovers of a dead process?)",
    "build": "request build (prepare: messages, tool schema, JSON check)",
    "digest": "request digest (SHA-256 of the bytes sent)",
    "parse": "reply parse (reply: tool call, reasoning, usage, cost)",
    "gateway": "the gateway's own glue (the rest)",
}


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:7.3f} ms"


def print_report(result: dict[str, Any]) -> None:
    req, q, target = result["request"], result["overhead_seconds"], result["target"]
    print(
        f"gateway overhead per step, network excluded (python {result['python']}; ledger on "
        f"{result['filesystem']})"
    )
    if result["filesystem"] in ("tmpfs", "ramfs"):
        print("  note: fsync on tmpfs costs nothing; use --dir on a disk for real numbers")
    print(
        f"  request: capsule {req['capsule_bytes']:,} B, {req['log_entries']} log entries, "
        f"schema {req['schema_bytes']:,} B, body {req['body_bytes']:,} B; "
        f"reply {req['reply_bytes']:,} B"
    )
    print(
        f"  {result['steps']} steps after {result['warmup_steps']} warm-up steps, "
        f"a new task every {result['steps_per_task']}; "
        f"{result['ledger_writes_per_step']:.0f} synced ledger writes per step"
    )
    print(
        f"  p50  {ms(q['p50'])}   target <= {target['max_seconds'] * 1e3:.0f} ms: "
        f"{verdict(target['met'])}"
    )
    print(f"  p95  {ms(q['p95'])}")
    print(f"  min  {ms(q['min'])}   max {ms(q['max']).strip()}")
    print()
    print("where it goes (p50 of each part over the same steps; mean in brackets):")
    for key, label in LABELS.items():
        p50, mean = result["split_p50_seconds"][key], result["split_mean_seconds"][key]
        print(f"  {ms(p50)}  ({ms(mean).strip()})  {label}")
    print()
    send, total = result["send_in_process_seconds"], result["total_with_send_seconds"]
    print("information (not in the overhead):")
    print(
        f"  in-process send (httpx2 MockTransport: body encoded, watchdog, answer decoded): "
        f"p50 {ms(send['p50']).strip()}, p95 {ms(send['p95']).strip()}"
    )
    print(f"  total with that send: p50 {ms(total['p50']).strip()}, p95 {ms(total['p95']).strip()}")
    print(
        "  one trivial synced SQLite commit on this disk (the floor under each ledger write): "
        f"{ms(result['synced_commit_floor_seconds']).strip()}"
    )
    print(
        "  a real call's local fixed cost (its fresh client, SSL context, a refused loopback "
        f"connect): {ms(result['real_call_fixed_seconds']).strip()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="timed steps (300)")
    parser.add_argument(
        "--capsule-kb", type=int, default=DEFAULT_CAPSULE_KB, help="capsule size in KB (40)"
    )
    parser.add_argument(
        "--log-pairs", type=int, default=DEFAULT_LOG_PAIRS, help="decision/result pairs (3)"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the ledger file lives")
    args = parse_args(parser, argv)
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    if args.capsule_kb < 1 or args.log_pairs < 0:
        parser.error("--capsule-kb must be at least 1 and --log-pairs at least 0")
    return report_run(
        lambda: run(args.steps, args.capsule_kb, args.log_pairs, args.dir),
        print_report,
        as_json=args.json,
    )


if __name__ == "__main__":
    sys.exit(main())
