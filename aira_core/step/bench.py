"""``aira bench capsule``: what the bounded host costs and saves, per task, computed from
the task's own trajectory.

- **max prompt**: the largest capsule + log of any step, in host tokens, against B;
- **input**: the host tokens the decision source was sent over the whole task (every step's
  capsule + log), against a **transcript baseline** from the same trajectory: the first
  step's prompt plus every earlier decision and result re-sent at each step, as a
  conversation that is its own memory would; the ratio is bounded / transcript;
- **host overhead** per step: building the capsule and validating the decision (no kernel
  work, no decision source): p50 and p95 in ms; target p50 ≤ 5 ms.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

from aira_core.step.tiers import host_tokens

OVERHEAD_TARGET_MS = 5.0


def capsule_report(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    # a recovered step (its record rebuilt on resume) had no prompt the host measured
    steps = [r for r in records if "step" in r and not r.get("recovered")]
    if not steps:
        return {"steps": 0}
    prompts = [r["promptTokens"] for r in steps]
    first = prompts[0]
    transcript = 0
    history = 0
    for r in steps:
        transcript += first + history
        history += host_tokens(json.dumps(r["decision"], ensure_ascii=False))
        history += -(-int(r["result"].get("bytes", 0)) // 4)
    overhead = sorted(r["timings"]["capsuleMs"] + r["timings"]["validateMs"] for r in steps)
    bounded = sum(prompts)
    return {
        "steps": len(steps),
        "budgetTokens": steps[0]["budgetTokens"],
        "maxPromptTokens": max(prompts),
        "withinBudget": all(r["promptTokens"] <= r["budgetTokens"] for r in steps),
        "inputTokens": bounded,
        "transcriptTokens": transcript,
        "ratio": round(bounded / transcript, 4) if transcript else None,
        "overheadP50Ms": round(statistics.median(overhead), 3),
        "overheadP95Ms": round(overhead[min(len(overhead) - 1, int(0.95 * len(overhead)))], 3),
    }
