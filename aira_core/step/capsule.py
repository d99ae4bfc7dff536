"""The Task Capsule κ (spec 003 §4.2): the one prompt prefix a round starts from.

Eight segments in a fixed, stable-first order (what changes least comes first, so a
provider's prefix cache survives as far as possible):

1. ``index``: capsule format, tier and segment order, then the index text the loop passes
   (interface version, decision grammar, the compact signatures of the capabilities in use);
2. ``intent``: the intent frame (≤ 1k tokens), the contract it is bound to, and the open
   commitments a continuity adapter carried over from the last round (≤ 500 tokens);
3. ``schemaPages``: the L2 pages of the kinds in use, shared ``$defs`` first;
4. ``workingSet``: the pages in the working set, each with rev and hash;
5. ``summary``: the head summary (≤ 2k tokens);
6. ``note``: the model's note, verbatim (≤ b);
7. ``ledger``: budget table, pinned pages, folded commit/rejection rows, evictions;
8. ``lastResult``: the last result, or the current rejection in full (≤ 8k tokens).

Every segment is metered when built, and a capsule cannot exist over budget: with the log
it goes with, it is at most B tokens (checked by :class:`Capsule` itself). When the parts
would exceed B, unpinned pages are released least recently used first, then schema pages
(a contract can be described again); each release is written into the ledger, so the
capsule tells the model. If only pinned pages are left, :class:`CapsuleOverBudget` names
the pages to release.

A capsule is a snapshot: its text is rendered once, so later changes to the ledger (a
commit in the same round) cannot change the prefix the model was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aira_core.canonical import sha256_bytes_hex
from aira_core.diagnostics import AiraError
from aira_core.runtime.tiers import HOST_BYTES_PER_TOKEN, Tier, host_tokens, tokens_of_bytes
from aira_core.step.ledger import (
    Ledger,
    WorkingPage,
    clean_text,
    fold,
    to_text,
    truncate_utf8,
    utf8_size,
)

__all__ = [
    "CAPSULE_FORMAT",
    "CARRY_MAX_TOKENS",
    "INTENT_MAX_TOKENS",
    "LAST_RESULT_MAX_TOKENS",
    "SEGMENTS",
    "SHARED_DEFS",
    "STEP_CAPSULE_OVER_BUDGET",
    "SUMMARY_MAX_TOKENS",
    "Capsule",
    "CapsuleOverBudget",
    "build_capsule",
]

CAPSULE_FORMAT = "aira.capsule/1"
SEGMENTS = (
    "index",
    "intent",
    "schemaPages",
    "workingSet",
    "summary",
    "note",
    "ledger",
    "lastResult",
)
SHARED_DEFS = "$defs"
"""The ``schema_pages`` key of the shared definitions, which go before every kind's page."""
INTENT_MAX_TOKENS = 1_000
CARRY_MAX_TOKENS = 500
"""The open commitments a continuity adapter carries into a round (the intent segment)."""
SUMMARY_MAX_TOKENS = 2_000
LAST_RESULT_MAX_TOKENS = 8_000
STEP_CAPSULE_OVER_BUDGET = "STEP_CAPSULE_OVER_BUDGET"


class CapsuleOverBudget(AiraError):
    """The capsule does not fit in B even with every unpinned page released. ``pages`` are
    the pinned pages whose release would make room, largest first (all of them when even
    that is not enough)."""

    def __init__(self, message: str, *, pages: tuple[str, ...], over_tokens: int) -> None:
        super().__init__(STEP_CAPSULE_OVER_BUDGET, message, subject=pages[0] if pages else None)
        self.pages = pages
        self.over_tokens = over_tokens


@dataclass(frozen=True)
class Capsule:
    """A rendered capsule. ``segments`` are ``(name, bytes)`` in :data:`SEGMENTS` order and
    add up to ``bytes``; ``hash`` is ``capsule:sha256:<hex of the text's UTF-8 bytes>``."""

    text: str
    segments: tuple[tuple[str, int], ...]
    tier: str
    budget: int
    log_tokens: int
    step: int
    schema_kinds: tuple[str, ...] = ()
    """The schema pages the capsule carries (the rest were released for budget)."""
    bytes: int = field(init=False)
    tokens: int = field(init=False)
    hash: str = field(init=False)

    def __post_init__(self) -> None:
        data = self.text.encode("utf-8")
        object.__setattr__(self, "bytes", len(data))
        object.__setattr__(self, "tokens", host_tokens(data))
        object.__setattr__(self, "hash", "capsule:sha256:" + sha256_bytes_hex(data))
        # The invariants the whole loop rests on; checked even under python -O.
        if sum(size for _, size in self.segments) != self.bytes:
            raise AssertionError("capsule segments do not add up to the capsule")
        if self.tokens + self.log_tokens > self.budget:
            raise AssertionError(
                f"capsule {self.tokens} + log {self.log_tokens} tokens exceed B {self.budget}"
            )

    @property
    def metered(self) -> tuple[tuple[str, int, int], ...]:
        """``(name, bytes, host tokens)`` per segment."""
        return tuple((name, size, tokens_of_bytes(size)) for name, size in self.segments)


def build_capsule(
    ledger: Ledger,
    tier: Tier,
    *,
    index: str,
    summary: Mapping[str, Any] | str,
    schema_pages: Mapping[str, str],
    last_result: str | Mapping[str, Any] | None,
    log_bytes: int = 0,
    step: int,
    carry_unchanged: bool = False,
) -> Capsule:
    """Build the capsule of a round at ``step`` such that capsule + log ≤ ``tier.budget``.

    May release unpinned pages from ``ledger``, then schema pages in ``schema_pages``'
    order (the caller lists the one it needs least first; shared ``$defs`` go last), each
    recorded in the ledger; :attr:`Capsule.schema_kinds` says which were kept. Raises
    :class:`CapsuleOverBudget` when only pinned pages could make room.

    ``carry_unchanged``: render a page a commit left unchanged as one line
    ``unchanged @hash`` instead of its text. Only correct while the model's prompt still
    holds that text (a capsule rebuilt within a round); a new round after compaction starts
    from nothing, so by default every page is shown in full.
    """
    log_tokens = tokens_of_bytes(log_bytes)
    schemas = dict(schema_pages)
    releasable = [k for k in schemas if k != SHARED_DEFS] + [k for k in schemas if k == SHARED_DEFS]
    fixed = {
        "index": _index_body(tier, index),
        "intent": _intent_body(ledger),
        "summary": _capped(to_text(summary), SUMMARY_MAX_TOKENS, "summary"),
        "note": _note_body(ledger, tier),
        "lastResult": _last_result_body(ledger, last_result),
    }
    while True:
        bodies = dict(fixed)
        bodies["schemaPages"] = _schema_body(schemas)
        bodies["workingSet"] = _working_set_body(ledger, carry_unchanged)
        # The ledger segment shows the prompt's own size. Numbers are padded to B's width,
        # so the segment's length (hence the total) does not depend on the value shown.
        probe = _segments(bodies | {"ledger": _ledger_body(ledger, tier, step, 0, log_tokens)})
        used = tokens_of_bytes(sum(utf8_size(s) for s in probe)) + log_tokens
        bodies["ledger"] = _ledger_body(ledger, tier, step, used, log_tokens)
        texts = _segments(bodies)
        if used <= tier.budget:
            text = "".join(texts)
            segments = tuple((name, utf8_size(t)) for name, t in zip(SEGMENTS, texts, strict=True))
            return Capsule(text, segments, tier.name, tier.budget, log_tokens, step, tuple(schemas))
        unpinned = ledger.lru(pinned=False)
        if unpinned:
            ledger.evict(unpinned[0], step)
        elif releasable:
            # Host-held and describable again, so they go before the model's pinned pages.
            kind = releasable.pop(0)
            del schemas[kind]
            ledger.release_schema(kind, step)
        else:
            raise _over_budget(ledger, tier, used, texts)


def _segments(bodies: Mapping[str, str]) -> list[str]:
    # Cleaned here so the bytes metered are the bytes sent, whatever a caller passed in.
    return [clean_text(f"# {n} {name}\n{bodies[name]}\n") for n, name in enumerate(SEGMENTS, 1)]


def _over_budget(ledger: Ledger, tier: Tier, used: int, texts: list[str]) -> CapsuleOverBudget:
    over = used - tier.budget
    need = over * HOST_BYTES_PER_TOKEN
    pinned = sorted(ledger.lru(pinned=True), key=lambda i: (-ledger.pages[i].bytes, i))
    chosen: list[str] = []
    freed = 0
    for page_id in pinned:
        if freed >= need:
            break
        chosen.append(page_id)
        freed += ledger.pages[page_id].bytes
    head = f"the capsule needs {used} tokens with the log, over B {tier.budget} by {over}"
    if chosen and freed >= need:
        named = ", ".join(
            f"{i} ({ledger.pages[i].label}, {ledger.pages[i].bytes} B)" for i in chosen
        )
        message = f"{head}; release (unpin) {named} to make room"
    else:
        sizes = ", ".join(
            f"{name} {utf8_size(t)} B" for name, t in zip(SEGMENTS, texts, strict=True)
        )
        pages = (
            f"releasing every pinned page ({', '.join(pinned)}) would not make room"
            if pinned
            else "no page is left to release"
        )
        message = f"{head}; {pages} (segments: {sizes})"
    return CapsuleOverBudget(message, pages=tuple(chosen or pinned), over_tokens=over)


# -- segment bodies -----------------------------------------------------------------------------


def _capped(text: str, max_tokens: int, what: str) -> str:
    """``text`` within ``max_tokens``; cut text ends with a notice saying how much is left
    out, so the model knows to read the rest by address."""
    limit = max_tokens * HOST_BYTES_PER_TOKEN
    size = utf8_size(text)
    if size <= limit:
        return text
    notice = f"\n[{what} truncated: {{kept}} of {size} bytes shown]"
    kept = truncate_utf8(text, limit - utf8_size(notice.format(kept=limit)))
    return kept + notice.format(kept=utf8_size(kept))


def _index_body(tier: Tier, index: str) -> str:
    header = (
        f"{CAPSULE_FORMAT} tier {tier.name}: B {tier.budget} tokens (capsule + log), "
        f"note ≤ {tier.note} tokens, page ≤ {tier.page} tokens; segments: {' · '.join(SEGMENTS)}"
    )
    return f"{header}\n{index}" if index else header


def _intent_body(ledger: Ledger) -> str:
    frame = ledger.intent
    lines = [f"frame {frame.frame_hash()}"]
    if ledger.contract:
        lines.append(ledger.contract)
    lines.append(f"goal: {frame.goal}")
    lists = (
        ("hard requirements", frame.hard_requirements),
        ("soft preferences", frame.soft_preferences),
        ("assumptions", frame.assumptions),
        ("unknowns", frame.unknowns),
        ("acceptance", frame.acceptance_assertions),
    )
    for title, items in lists:
        if items:
            lines.append(f"{title}:")
            lines += [f"- {item}" for item in items]
    lines.append("scope: " + (", ".join(frame.scope) if frame.scope else "any body"))
    if frame.prohibited_effects:
        lines.append("prohibited effects: " + ", ".join(e.value for e in frame.prohibited_effects))
    body = _capped("\n".join(lines), INTENT_MAX_TOKENS, "intent")
    if not ledger.carry:
        return body
    # Capped on its own, after the frame: a long carry must never cut the user's intent.
    carried = "\n".join(["open commitments (carried over):", *(f"- {c}" for c in ledger.carry)])
    return body + "\n" + _capped(carried, CARRY_MAX_TOKENS, "open commitments")


def _schema_body(pages: Mapping[str, str]) -> str:
    # Sorted so the same pages give the same bytes whatever order they were collected in.
    kinds = sorted(pages, key=lambda k: (k != SHARED_DEFS, k))
    return "\n".join(f"## {kind}\n{pages[kind]}" for kind in kinds) or "(none)"


def _page_head(page_id: str, page: WorkingPage) -> str:
    pin = " pinned" if page.pinned else ""
    return f"[{page_id}] {page.label}{pin}"


def _working_set_body(ledger: Ledger, carry_unchanged: bool) -> str:
    blocks = []
    for page_id in sorted(ledger.pages, key=_id_key):
        page = ledger.pages[page_id]
        head = _page_head(page_id, page)
        if carry_unchanged and page.unchanged:
            blocks.append(f"{head} unchanged @{page.hash}")
        else:
            blocks.append(f"{head} rev {page.rev} hash {page.hash} {page.bytes} B\n{page.text}")
    return "\n".join(blocks) or "(empty)"


def _note_body(ledger: Ledger, tier: Tier) -> str:
    # set_note already keeps the note within b; a ledger rebuilt at another tier may not.
    note = truncate_utf8(ledger.note, tier.bytes(tier.note)) or "(empty)"
    return f"{note}\n[{ledger.note_notice}]" if ledger.note_notice else note


def _ledger_body(ledger: Ledger, tier: Tier, step: int, used: int, log_tokens: int) -> str:
    budgets, usage, width = ledger.budgets, ledger.usage, len(str(tier.budget))
    lines = [
        f"step {step} of {budgets.steps}",
        f"prompt {used:>{width}} of {tier.budget} tokens used (log {log_tokens:>{width}}), "
        f"{max(0, tier.budget - used):>{width}} left",
        f"input {usage.input_tokens} of {budgets.input_tokens} tokens, "
        f"output {usage.output_tokens} of {budgets.output_tokens}, "
        f"usd {usage.usd:.4f} of {budgets.usd:.2f}",
        f"discovery {ledger.discovery_hash()} ({len(ledger.discovery)} shown)",
    ]
    pinned = [i for i in sorted(ledger.pages, key=_id_key) if ledger.pages[i].pinned]
    lines.append("pinned:" + ("" if pinned else " none"))
    lines += [
        f"- {i} {ledger.pages[i].label} {ledger.pages[i].hash} {ledger.pages[i].bytes} B"
        for i in pinned
    ]
    keep = tier.ledger_rows
    for title, rows, noun in (
        ("commits", ledger.commit_rows(), "commits"),
        ("earlier rejections", ledger.rejections, "rejections"),
        ("evictions", ledger.eviction_rows(), "evictions"),
    ):
        if rows:
            lines.append(f"{title}:")
            lines += [f"- {row}" for row in fold(rows, keep, noun)]
    return "\n".join(lines)


def _last_result_body(ledger: Ledger, last_result: str | Mapping[str, Any] | None) -> str:
    if last_result is not None:
        text = to_text(last_result)
    elif ledger.rejection is not None:
        r = ledger.rejection
        text = to_text({"status": "rejected", "step": r.step, "code": r.code, "message": r.message})
    else:
        text = "(none)"
    return _capped(text, LAST_RESULT_MAX_TOKENS, "result")


def _id_key(page_id: str) -> tuple[int, str]:
    tail = page_id.rsplit(":", 1)[-1]
    return (int(tail) if tail.isdigit() else 0, page_id)
