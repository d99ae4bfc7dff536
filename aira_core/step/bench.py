"""``aira bench capsule``: what the bounded host costs and saves, per task, computed from
the task's own trajectory.

- **max prompt**: the largest capsule + log of any step, in host tokens, against B;
- **input**: the host tokens the decision source was sent over the whole task (every step's
  capsule + log), against two baselines from the same trajectory (ratios: bounded / baseline):

  - **transcript**: the first step's prompt plus every earlier decision and result re-sent at
    each step, as a conversation that is its own memory would (a lower bound: it already
    keeps Aira's capsule in place of tool schemas and document);
  - **flat**: the client spec 003 §1–§2 replaces, re-sending every step (a) every
    capability's full L2 contract as a tool definition (name, description, input and
    output JSON Schemas, preconditions, effects, diagnostics, risk: what a client that never
    describes needs to write a legal step), (b) the canonical document of the head revision
    at that step and (c) every earlier decision and full result (the trajectory keeps
    ``result.bytes``). It leaves out any system prompt and the intent, so it is a lower
    bound too;
- **prefix stability** of the prompts the host metered (:class:`PromptRecorder`): per round,
  each prompt's share of bytes identical to the previous prompt's prefix and the implied
  cache-hit share in 64-token blocks (spec 003 §6.5); a round's first prompt is a new
  capsule by design and has no predecessor in it. Means per prompt, and weighted by tokens
  (within rounds, and over the whole task with each round's first prompt counted);
- **spend**: where the input goes, per capsule segment and per kind of log entry;
- **host overhead** per step: building the capsule and validating the decision (no kernel
  work, no decision source): p50 and p95 in ms; target p50 ≤ 5 ms.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aira_core.extensions import DecisionSource, StepReply, StepRequest
from aira_core.runtime.tiers import HOST_BYTES_PER_TOKEN, host_tokens, tokens_of_bytes
from aira_core.step.log import prompt_text, step_of

OVERHEAD_TARGET_MS = 5.0
BLOCK_TOKENS = 64  # spec 003 §6.5: a prefix cache keeps whole blocks of 64 tokens


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b``, byte by byte."""
    return len(os.path.commonprefix([a, b]))  # noqa: RUF071 - bytes, not paths


def prefix_share(previous: bytes, current: bytes) -> tuple[float, float]:
    """The share of ``current``'s bytes identical to ``previous``'s prefix, and the cache-hit
    share that implies: whole 64-token blocks of the common prefix over ``current``'s
    tokens (a block hits only if everything up to its end is unchanged)."""
    if not current:
        return 1.0, 1.0
    common = common_prefix(previous, current)
    tokens = tokens_of_bytes(len(current))
    cached = (common // HOST_BYTES_PER_TOKEN) // BLOCK_TOKENS * BLOCK_TOKENS
    return common / len(current), cached / tokens


class PromptRecorder:
    """A decision source around ``source`` that keeps each step's prompt as the host meters
    it (:func:`~aira_core.step.log.prompt_text`) and the request it was made of, so the bench
    can measure prefix stability and where the input goes without a hook in the host."""

    def __init__(self, source: DecisionSource) -> None:
        self.source = source
        self.name = source.name
        self.prompts: dict[int, str] = {}
        self.requests: dict[int, StepRequest] = {}

    def decide(self, request: StepRequest) -> StepReply:
        self.prompts[request.step] = prompt_text(request)
        self.requests[request.step] = request
        return self.source.decide(request)


def prefix_stability(prompts: Sequence[str], rounds: Sequence[int]) -> dict[str, Any]:
    """Per round and overall, the mean prefix share and implied cache-hit share of each
    prompt after the first of its round against the one before it."""
    if len(prompts) != len(rounds):
        raise ValueError(f"{len(prompts)} prompts for {len(rounds)} rounds")
    encoded = [p.encode("utf-8", "replace") for p in prompts]
    pairs: dict[int, list[tuple[float, float]]] = {r: [] for r in rounds}
    for i in range(1, len(encoded)):
        if rounds[i] == rounds[i - 1]:
            pairs[rounds[i]].append(prefix_share(encoded[i - 1], encoded[i]))

    def means(found: Sequence[tuple[float, float]]) -> dict[str, Any]:
        if not found:
            return {"pairs": 0, "prefixShare": None, "cacheHitShare": None}
        return {
            "pairs": len(found),
            "prefixShare": round(statistics.fmean(s for s, _ in found), 4),
            "cacheHitShare": round(statistics.fmean(h for _, h in found), 4),
        }

    every = [p for found in pairs.values() for p in found]
    # Weighted by tokens, as a bill sees it: the cached tokens of every prompt after its
    # round's first over their tokens, and over the whole task (each prompt against the one
    # before it, a round's first included: a new capsule keeps what its head has in common).
    tokens = [tokens_of_bytes(len(p)) for p in encoded]
    cached = [0] + [
        round(prefix_share(encoded[i - 1], encoded[i])[1] * tokens[i])
        for i in range(1, len(encoded))
    ]
    within = [i for i in range(1, len(encoded)) if rounds[i] == rounds[i - 1]]
    in_rounds = sum(tokens[i] for i in within)
    return {
        **means(every),
        "weightedCacheHitShare": round(sum(cached[i] for i in within) / in_rounds, 4)
        if in_rounds
        else None,
        "taskCacheHitShare": round(sum(cached) / sum(tokens), 4) if sum(tokens) else None,
        # the whole task's input as a bill sees it: tokens a prefix cache serves, and the rest
        "hitTokens": sum(cached),
        "missTokens": sum(tokens) - sum(cached),
        "rounds": [{"round": r, **means(found)} for r, found in pairs.items()],
    }


def _act_label(decision: Mapping[str, Any]) -> str:
    act = str(decision.get("act", "?"))
    if act == "lookup":
        return "lookup (L2)" if decision.get("capability") else "lookup (search)"
    if act == "batch":
        inner = sorted({_act_label(a) for a in decision.get("acts", []) if isinstance(a, dict)})
        return f"batch of {' + '.join(inner)}"
    return act


def _capsule_segments(capsule: str) -> dict[str, int]:
    """The bytes of each capsule segment, found by its header (``# <n> <name>``) in order."""
    from aira_core.step.capsule import SEGMENTS

    data = capsule.encode("utf-8", "replace")
    starts = []
    at = 0
    for n, name in enumerate(SEGMENTS, 1):
        found = data.find(f"# {n} {name}\n".encode(), at)
        if found < 0:
            return {"capsule": len(data)}  # not a capsule the host built: one lump
        starts.append((name, found))
        at = found + 1
    bounds = [*(start for _, start in starts[1:]), len(data)]
    return {name: end - start for (name, start), end in zip(starts, bounds, strict=True)}


def input_spend(
    records: Sequence[dict[str, Any]], requests: Mapping[int, StepRequest]
) -> dict[str, Any]:
    """Where the task's input goes, in host tokens summed over every step's prompt: per
    capsule segment, and per kind of round-log entry (the decision or the result of each
    kind of act). An entry belongs to the step its call id names
    (:func:`~aira_core.step.log.step_of`): a folded round's log holds steps of the rounds
    before it."""
    from aira_core.step.log import render

    steps = _steps(records)
    by_step = {r["step"]: r for r in steps}
    first_of_round: dict[int, int] = {}
    for r in steps:
        first_of_round.setdefault(r["round"], r["step"])
    capsule: dict[str, int] = {}
    log: dict[str, int] = {}
    for r in steps:
        request = requests[r["step"]]
        for name, size in _capsule_segments(request.capsule).items():
            capsule[name] = capsule.get(name, 0) + size
        for k, entry in enumerate(request.log):
            at = step_of(entry.call_id)
            if at is None:
                at = first_of_round[r["round"]] + k // 2
            made = by_step.get(at)
            label = _act_label(made["decision"]) if made else "?"
            key = f"{label} {entry.kind}"
            log[key] = log.get(key, 0) + len(render(entry).encode("utf-8", "replace"))

    def tokens(sizes: dict[str, int]) -> dict[str, int]:
        ranked = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))
        return {k: tokens_of_bytes(v) for k, v in ranked}

    return {"capsule": tokens(capsule), "log": tokens(log)}


def _history_bytes(record: dict[str, Any]) -> int:
    """What one step adds to a re-sent history: its decision and its full result."""
    decision = json.dumps(record["decision"], ensure_ascii=False).encode("utf-8", "replace")
    return len(decision) + int(record["result"].get("bytes") or 0)


def flat_baseline(
    steps: Sequence[dict[str, Any]],
    *,
    tools_bytes: int,
    document_bytes: Callable[[str], int],
    initial_head: str,
) -> list[int]:
    """The flat client's prompt of each step, in host tokens: the tool definitions
    (``tools_bytes``), the canonical document of the head the step starts from
    (``document_bytes(rev)``; ``initial_head`` before the first step) and every earlier
    decision and full result."""
    out, history, head = [], 0, initial_head
    for r in steps:
        out.append(tokens_of_bytes(tools_bytes + document_bytes(head) + history))
        history += _history_bytes(r)
        head = r.get("head") or head
    return out


def _steps(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    # a recovered step (its record rebuilt on resume) had no prompt the host measured
    return [r for r in records if "step" in r and not r.get("recovered")]


def capsule_report(
    records: Sequence[dict[str, Any]],
    *,
    flat: Sequence[int] | None = None,
    prompts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The report of one task from its trajectory ``records``; with ``flat`` (each step's
    :func:`flat_baseline` prompt) the flat columns, with ``prompts`` (each step's metered
    prompt text) the prefix stability."""
    steps = _steps(records)
    if not steps:
        return {"steps": 0}
    prompt_tokens = [r["promptTokens"] for r in steps]
    first = prompt_tokens[0]
    transcript: list[int] = []
    history = 0
    for r in steps:
        transcript.append(first + history)
        history += host_tokens(json.dumps(r["decision"], ensure_ascii=False))
        history += tokens_of_bytes(int(r["result"].get("bytes") or 0))
    overhead = sorted(r["timings"]["capsuleMs"] + r["timings"]["validateMs"] for r in steps)
    bounded = sum(prompt_tokens)
    report: dict[str, Any] = {
        "steps": len(steps),
        "budgetTokens": steps[0]["budgetTokens"],
        "maxPromptTokens": max(prompt_tokens),
        "withinBudget": all(r["promptTokens"] <= r["budgetTokens"] for r in steps),
        "inputTokens": bounded,
        "transcriptTokens": sum(transcript),
        "ratio": round(bounded / sum(transcript), 4) if sum(transcript) else None,
        "overheadP50Ms": round(statistics.median(overhead), 3),
        "overheadP95Ms": round(overhead[min(len(overhead) - 1, int(0.95 * len(overhead)))], 3),
    }
    per_step = [
        {"step": r["step"], "round": r["round"], "promptTokens": p, "transcriptTokens": t}
        for r, p, t in zip(steps, prompt_tokens, transcript, strict=True)
    ]
    if flat is not None:
        if len(flat) != len(steps):
            raise ValueError(f"{len(flat)} flat prompts for {len(steps)} steps")
        report["flatTokens"] = sum(flat)
        report["flatRatio"] = round(bounded / sum(flat), 4) if sum(flat) else None
        for row, f in zip(per_step, flat, strict=True):
            row["flatTokens"] = f
    cumulative: dict[str, int] = {}
    for row in per_step:
        for key in ("promptTokens", "transcriptTokens", "flatTokens"):
            if key in row:
                cumulative[key] = cumulative.get(key, 0) + row[key]
                row["cumulative" + key[0].upper() + key[1:]] = cumulative[key]
    report["perStep"] = per_step
    if prompts is not None:
        report["prefix"] = prefix_stability(prompts, [r["round"] for r in steps])
    return report


def flat_contract_tools(catalog: Any) -> list[dict[str, Any]]:
    """The flat client's tool list: every capability of ``catalog`` with its full L2
    contract (:func:`~aira_core.catalog.capabilities.flat_tools` with ``contracts``)."""
    from aira_core.catalog.capabilities import capability_index, flat_tools
    from aira_core.catalog.disclosure import Disclosure

    capabilities = capability_index(catalog)
    disclosure = Disclosure(catalog)
    return flat_tools(capabilities, {cid: disclosure.contract(cid) for cid in capabilities})


def task_report(
    records: Sequence[dict[str, Any]],
    store: Path,
    prompts: Mapping[int, str],
    requests: Mapping[int, StepRequest] | None = None,
    *,
    catalog: Any = None,
) -> dict[str, Any]:
    """:func:`capsule_report` of a run with both baselines and the prefix stability: the flat
    client's tools from the production catalog (the one a run plans against: ``catalog``
    when the caller has it, built here otherwise), its documents from the run's ``store``,
    and ``prompts`` by step (a :class:`PromptRecorder`'s); with its ``requests``, where the
    input goes (:func:`input_spend`)."""
    from aira_core.canonical import canonical_bytes
    from aira_core.catalog.catalog import build_catalog
    from aira_core.model.store import MAIN, ModelStore

    steps = _steps(records)
    catalog = catalog if catalog is not None else build_catalog()
    tools = len(canonical_bytes(flat_contract_tools(catalog)))
    opened = ModelStore(store)
    try:
        initial = opened.log(MAIN, None)[-1].rev  # the run's init: the first step's head
        sizes: dict[str, int] = {}

        def document_bytes(rev: str) -> int:
            if rev not in sizes:
                sizes[rev] = len(canonical_bytes(opened.read(rev)))
            return sizes[rev]

        flat = flat_baseline(
            steps, tools_bytes=tools, document_bytes=document_bytes, initial_head=initial
        )
    finally:
        opened.close()
    report = capsule_report(records, flat=flat, prompts=[prompts[r["step"]] for r in steps])
    report["flatToolsTokens"] = tokens_of_bytes(tools)
    if requests is not None:
        report["spend"] = input_spend(records, requests)
    return report
