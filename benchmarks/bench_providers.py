"""Benchmark: the bundled tasks through the provider gateway, per decision transport.

Each bundled decision script (``aira_core.step.runner.BUNDLED``) is run on the installed
OCCT kernel through a real ``Gateway`` (a real ``AttemptLedger`` file, synced writes) on a
real ``OpenAICompatProvider`` pointed at the loopback FAKE provider
(``aira_core.testing.provider.FakeProviderServer``: a real HTTP server on 127.0.0.1 that
answers the script's decisions; no model, no key), once per transport of
``aira_core.gateway.transports.BUILTIN_TRANSPORTS`` (a transport added there is picked up
as it is). The fake answers a tool-style transport with a tool call and every other one with
the decision as its text. The work is ``aira_core.gateway.bench.providers_report``, the same
as ``aira bench providers``; this script prints more of it.

Per transport and task:

* **decisions per second** through the whole host: steps over the time from the first
  step's start to the last step's record (capsule, request, gateway with its two synced
  ledger writes, HTTP to the fake, validation, the kernel's work, the trajectory record);
* **host overhead per step, network excluded**: a step's time minus the time inside the
  provider's ``send`` (timed by a proxy the benchmark puts around the provider), p50 / p95;
  the kernel's part (the step record's ``executeMs``) and the gateway's part (``decideMs``
  less the send: ledger, request build, reply parse) beside it;
* **prefix stability within rounds**: what the model reads, rebuilt from the request bodies
  the fake received (the tool definitions first, as chat templates put them, then a
  ``response_format`` JSON schema, then the messages). For each step after the first of its
  round: the share of the prompt's bytes identical to the previous prompt's prefix, and the
  cache-hit share that implies in 64-token blocks (4 bytes a token). A *rewrite* is a pair
  whose later prompt does not begin with the whole earlier one; it is named by the part
  where they first differ.

Run from the repository root with the project's interpreter::

    .venv/bin/python benchmarks/bench_providers.py            # report
    .venv/bin/python benchmarks/bench_providers.py --json     # one JSON object
    .venv/bin/python benchmarks/bench_providers.py --runs 5 --dir /var/tmp

Target (issue 15): mean prefix share and mean cache-hit share >= 0.85 within rounds, per
task and transport. The script reports and never fails a build: it exits 0 whether or not
the target is met (2 only if the benchmark itself is broken: a run that did not complete).
Without an installed kernel it says so and exits 0 (``{"skipped": ...}`` with ``--json``).
"""

from __future__ import annotations

import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from _report import parse_args, script_parser, show, skip, verdict
from bench_store import filesystem  # a sibling script: run from benchmarks/ on sys.path

from aira_core.diagnostics import AiraError
from aira_core.gateway.bench import COLUMNS, TARGET_SHARE, providers_report, table_rows
from aira_core.step.runner import BUNDLED

DEFAULT_RUNS = 3


def print_report(report: dict[str, Any]) -> None:
    print(
        f"bundled tasks through the gateway, per transport, against the loopback fake "
        f"(python {report['python']}; ledger on {report['filesystem']}; {report['runs']} "
        f"timed runs after {report['warmupRuns']} warm-up)"
    )
    rows = [COLUMNS, *table_rows(report)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print()
    for name, transport in report["transports"].items():
        keys = ("overheadMs", "kernelMs", "gatewayMs", "otherMs", "sendMs")
        split = {k: transport[k]["p50"] for k in keys}
        print(
            f"{name} (fake answers {transport['fakeMode']}): {transport['decisionsPerSecond']} "
            f"decisions/s over {transport['timedSteps']} steps; per step p50: host "
            f"{split['overheadMs']:.1f} ms (parts, each its own p50: kernel "
            f"{split['kernelMs']:.1f} ms, gateway {split['gatewayMs']:.1f} ms, capsule + "
            f"validation + record {split['otherMs']:.1f} ms); send (HTTP to the fake) "
            f"{split['sendMs']:.1f} ms"
        )
        for task, r in transport["tasks"].items():
            rewrites = r["prefix"]["rewrites"]
            said = (
                "; ".join(
                    f"step {w['step']} at {w['at']} (kept {w['keptShare']})" for w in rewrites
                )
                if rewrites
                else "none (every later prompt begins with the whole earlier one)"
            )
            ceiling = r["prefix"].get("appendOnlyShare")
            print(
                f"  {task}: prompts {r['promptBytes']['first']:,} -> "
                f"{r['promptBytes']['max']:,} B; mean share without rewrites {ceiling}; "
                f"rewrites: {said}"
            )
    print()
    print(
        f"target: mean prefix share and cache-hit share >= {TARGET_SHARE} within rounds: "
        + verdict(report["prefixMet"])
    )


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="timed runs per task (3)")
    parser.add_argument("--warmup", type=int, default=1, help="unreported warm-up runs (1)")
    parser.add_argument(
        "--task", action="append", choices=BUNDLED, help="a bundled task (repeatable; all)"
    )
    parser.add_argument(
        "--transport", action="append", help="a decision transport (repeatable; every built-in)"
    )
    parser.add_argument(
        "--reasoning-bytes", type=int, default=0, help="reasoning the fake sends per answer (0)"
    )
    parser.add_argument("--dir", type=Path, default=None, help="where the ledger and stores live")
    args = parse_args(parser, argv)
    if args.runs < 1 or args.warmup < 0 or args.reasoning_bytes < 0:
        parser.error("--runs must be at least 1, --warmup and --reasoning-bytes at least 0")
    from aira_core.cli._options import _kernel
    from aira_core.gateway.gateway import resolve_transport

    try:
        kernel = _kernel(None, "the bundled tasks build real geometry")
    except AiraError as exc:
        reason = f"no kernel ({exc.code})"
        return skip(reason, as_json=args.json)
    try:
        transports = (
            {name: resolve_transport(name) for name in args.transport} if args.transport else None
        )
        report = providers_report(
            kernel,
            tasks=tuple(args.task or BUNDLED),
            transports=transports,
            runs=args.runs,
            warmup=args.warmup,
            reasoning_bytes=args.reasoning_bytes,
            where=args.dir,
        )
    except AiraError as exc:
        print(f"error: {exc.diagnostic.message} ({exc.code})", file=sys.stderr)
        return 2
    report = {
        "benchmark": "providers",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "filesystem": filesystem(args.dir or Path(tempfile.gettempdir())),
        **report,
    }
    show(report, print_report, as_json=args.json)
    if not report["completed"]:
        print("error: a run did not complete (see the terminal states above)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
