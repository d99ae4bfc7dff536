"""The task ledger (spec 003 §4.1): what the host remembers for the model between rounds.

In the bounded-step loop the transcript is not the memory; the ledger is. It holds the
intent, the working set of pages the model read (and pinned), what discovery showed it,
the current rejection in full and earlier ones as one line each, one line per committed
plan, the model's own note, the usage so far, and the pages released for budget. A new
round's capsule is built from it alone (``aira_core.step.capsule``).

Everything here is plain data: :meth:`Ledger.to_wire` / :meth:`Ledger.from_wire` round-trip
it through JSON, so a trajectory can rebuild the ledger of any step.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from aira_core.canonical import CanonicalJSONError, canonical_bytes, sha256_id
from aira_core.contracts.capability import Effect
from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError, redact
from aira_core.runtime.tiers import TaskBudgets, Tier

__all__ = [
    "COMMIT_SUMMARY_MAX_BYTES",
    "LEDGER_FORMAT",
    "STEP_LEDGER_INVALID",
    "STEP_PAGE_UNKNOWN",
    "CommitRow",
    "Eviction",
    "Ledger",
    "Rejection",
    "Usage",
    "WorkingPage",
    "clean_text",
    "fold",
    "to_text",
    "truncate_utf8",
    "utf8_size",
]

LEDGER_FORMAT = "aira.step-ledger/1"
PAGE_ID_PREFIX = "pg:"
COMMIT_SUMMARY_MAX_BYTES = 1024
"""A commit line's summary (spec 003 §4.1: "changes 摘要 ≤ 1 KB")."""
FOLDED_REJECTION_MAX_BYTES = 200
"""An earlier rejection folded to one line keeps its code and the start of its message."""

STEP_PAGE_UNKNOWN = "STEP_PAGE_UNKNOWN"
STEP_LEDGER_INVALID = "STEP_LEDGER_INVALID"

Discovery = tuple[str, str, str]
"""``(kind, id, hash)`` of something the model was shown: the index, a search hit, an L2 page."""


def clean_text(text: str) -> str:
    """``text`` as a prompt can carry it: a lone surrogate (valid in a JSON string, not in
    UTF-8) becomes ``?``, as :func:`~aira_core.runtime.tiers.host_tokens` meters it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` as :func:`clean_text` makes it."""
    return len(text.encode("utf-8", "replace"))


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` (cleaned) cut to at most ``max_bytes`` UTF-8 bytes, never inside a
    character."""
    data = text.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return clean_text(text)
    return data[: max(0, max_bytes)].decode("utf-8", errors="ignore")


def to_text(value: str | Mapping[str, Any] | Sequence[Any]) -> str:
    """A string as it is (cleaned), any other JSON value as canonical JSON, so the same
    value always renders to the same bytes. A value canonical JSON refuses (NaN, a lone
    surrogate) still renders, as escaped JSON: a prompt must never fail on what a tool or a
    model put in a result."""
    if isinstance(value, str):
        return clean_text(value)
    try:
        return canonical_bytes(value).decode("utf-8")
    except CanonicalJSONError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def fold(rows: Sequence[str], keep: int, noun: str) -> list[str]:
    """The last ``keep`` rows in full, the ones before them as a single count line, so the
    ledger segment has a bound independent of the task's length (spec 003 item 14)."""
    if len(rows) <= keep:
        return list(rows)
    hidden = len(rows) - keep
    return [f"({hidden} earlier {noun} folded)", *rows[len(rows) - keep :]]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


@dataclass
class WorkingPage:
    """A page in the working set: what was read at ``path`` (and ``offset``/``limit``) at
    ``rev``, its content hash and text. Pinned pages stay in every capsule; unpinned ones
    are the first released when the capsule would exceed B."""

    path: list[str]
    rev: str
    hash: str
    bytes: int
    pinned: bool
    text: str
    last_used: int
    """The step that last read, pinned or touched the page (LRU order for eviction)."""
    offset: int = 0
    limit: int | None = None
    unchanged: bool = False
    """A commit left the page's content as it was (same hash at the new head)."""

    @property
    def label(self) -> str:
        """The path as ``nodes/n2`` (with ``@offset`` for a later page of a long list)."""
        joined = "/".join(self.path)
        return f"{joined}@{self.offset}" if self.offset else joined


@dataclass(frozen=True)
class Rejection:
    step: int
    code: str
    message: str

    def folded(self) -> str:
        """The one line an earlier rejection is kept as."""
        line = f"step {self.step} {self.code}: {_first_line(self.message)}"
        return truncate_utf8(line, FOLDED_REJECTION_MAX_BYTES)


@dataclass(frozen=True)
class CommitRow:
    step: int | None
    rev: str
    summary: str

    def line(self) -> str:
        where = f"step {self.step} " if self.step is not None else ""
        return f"{where}{self.rev} {self.summary}".rstrip()


@dataclass(frozen=True)
class Eviction:
    step: int
    page: str
    """A working page's id, or for a schema page the capability whose contract it holds."""
    path: str
    pinned: bool = False
    reason: Literal["budget", "gone", "round", "schema"] = "budget"

    def line(self) -> str:
        if self.reason == "schema":
            return (
                f"schema page {self.page} released for budget at step {self.step}; "
                "describe it again (lookup capability) if needed"
            )
        what = f"{self.path}, pinned" if self.pinned else self.path
        if self.reason == "gone":
            return f"page {self.page} ({what}) no longer resolves at step {self.step}; released"
        if self.reason == "round":
            return f"page {self.page} ({what}) was not pinned and left with the last round"
        return f"page {self.page} ({what}) released for budget; read it again if needed"


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0


@dataclass
class Ledger:
    """The host's memory of one task. Mutated by the loop; read by the capsule builder."""

    intent: IntentFrame
    budgets: TaskBudgets = field(default_factory=TaskBudgets)
    pages: dict[str, WorkingPage] = field(default_factory=dict)
    """The working set: page id (``pg:1`` …, never reused) → page."""
    discovery: list[Discovery] = field(default_factory=list)
    rejection: Rejection | None = None
    """The current rejection, shown in full."""
    rejections: list[str] = field(default_factory=list)
    """Earlier rejections, one line each, oldest first."""
    commits: list[CommitRow] = field(default_factory=list)
    note: str = ""
    note_notice: str | None = None
    """Told to the model with its note: set when :meth:`set_note` had to cut it."""
    usage: Usage = field(default_factory=Usage)
    evictions: list[Eviction] = field(default_factory=list)
    next_page: int = 1
    contract: str = ""
    """The contract the intent is bound to, one line (empty: unbound; see
    :mod:`aira_core.integrations`)."""
    carry: tuple[str, ...] = ()
    """The open commitments the continuity adapter carried into this round."""

    @classmethod
    def for_instruction(
        cls,
        instruction: str,
        *,
        hard_requirements: Iterable[str] = (),
        scope: Iterable[str] = (),
        prohibited_effects: Iterable[Effect | str] = (),
        budgets: TaskBudgets | None = None,
    ) -> Ledger:
        """A ledger whose intent is the instruction as written, its scope and hard limits
        (spec 003 item 10: the host does not paraphrase the instruction)."""
        frame = IntentFrame(
            goal=instruction,
            hard_requirements=list(hard_requirements),
            scope=list(scope),
            prohibited_effects=[Effect(e) for e in prohibited_effects],
        )
        return cls(intent=frame, budgets=budgets or TaskBudgets())

    # -- working set --------------------------------------------------------------------------

    def add_page(
        self,
        path: Sequence[str],
        rev: str,
        text: str,
        *,
        step: int,
        pinned: bool = False,
        hash: str | None = None,
        offset: int = 0,
        limit: int | None = None,
    ) -> str:
        """Put a page read at ``rev`` into the working set and return its id.

        A page of the same path and offset replaces the earlier one under the same id (a
        re-read after an eviction or a commit); a pinned page stays pinned. ``hash`` is the
        page's content hash (``Page.hash``); without it the text's hash is used.
        """
        path = [clean_text(str(part)) for part in path]
        text = clean_text(text)
        page_id = self._find(path, offset)
        old = self.pages.get(page_id) if page_id else None
        if page_id is None:
            page_id = f"{PAGE_ID_PREFIX}{self.next_page}"
            self.next_page += 1
        self.pages[page_id] = WorkingPage(
            path=path,
            rev=rev,
            hash=hash or sha256_id("text", text),
            bytes=utf8_size(text),
            pinned=pinned or (old is not None and old.pinned),
            text=text,
            last_used=step,
            offset=offset,
            limit=limit,
        )
        return page_id

    def _find(self, path: list[str], offset: int) -> str | None:
        for page_id, page in self.pages.items():
            if page.path == path and page.offset == offset:
                return page_id
        return None

    def _known(self, page_ids: Iterable[str]) -> list[str]:
        ids = list(page_ids)
        unknown = [p for p in ids if p not in self.pages]
        if unknown:
            held = ", ".join(self.pages) or "none"
            raise AiraError(
                STEP_PAGE_UNKNOWN,
                f"no page {', '.join(unknown)} in the working set (it holds: {held}); "
                "read the path again to get a page id",
                subject=unknown[0],
            )
        return ids

    def pin(self, pages: Iterable[str] = (), unpin: Iterable[str] = (), step: int = 0) -> list[str]:
        """Pin and unpin pages; returns the ids whose flag changed. Unknown ids raise
        ``STEP_PAGE_UNKNOWN`` and change nothing."""
        to_pin, to_unpin = self._known(pages), self._known(unpin)
        changed: list[str] = []
        for page_id, flag in [*((p, True) for p in to_pin), *((p, False) for p in to_unpin)]:
            page = self.pages[page_id]
            page.last_used = max(page.last_used, step)
            if page.pinned != flag:
                page.pinned = flag
                changed.append(page_id)
        return changed

    def touch(self, page_ids: Iterable[str], step: int) -> None:
        """Mark pages as used at ``step`` (they move to the back of the eviction order)."""
        for page_id in self._known(page_ids):
            page = self.pages[page_id]
            page.last_used = max(page.last_used, step)

    def lru(self, *, pinned: bool = False) -> list[str]:
        """Page ids in eviction order: least recently used first, older ids on ties."""
        candidates = [(p.last_used, _page_number(i), i) for i, p in self.pages.items()]
        return [i for _, _, i in sorted(candidates) if self.pages[i].pinned == pinned]

    def evict(
        self, page_id: str, step: int, reason: Literal["budget", "gone", "round"] = "budget"
    ) -> None:
        """Drop a page from the working set and record it, so the model is told."""
        page = self.pages.pop(self._known([page_id])[0])
        self.evictions.append(Eviction(step, page_id, page.label, page.pinned, reason))

    def release_schema(self, kind: str, step: int) -> None:
        """Record that the capsule left out the schema page of ``kind`` for budget (the
        loop holds schema pages; the ledger remembers, so the capsule tells the model)."""
        self.evictions.append(Eviction(step, clean_text(kind), "schema", reason="schema"))

    def release_oldest_pinned(self, step: int) -> str | None:
        """Release the least recently used pinned page (for a new round whose pinned pages
        alone exceed B: the bound is hard, so the host unpins rather than stall); returns its
        id, or None when nothing is pinned."""
        oldest = self.lru(pinned=True)
        if not oldest:
            return None
        self.evict(oldest[0], step)
        return oldest[0]

    def refresh(
        self,
        rev: str,
        fetch: Callable[[WorkingPage], tuple[str, str] | None],
        *,
        step: int,
    ) -> dict[str, list[str]]:
        """Bring the working set to ``rev`` after a commit.

        ``fetch(page)`` re-selects the page's path at ``rev`` and returns ``(hash, text)``,
        or None when the path no longer resolves. A page whose hash is the same is marked
        unchanged (its text stays as read); a changed one takes the new text; a gone one is
        released. Returns ``{"changed": [...], "unchanged": [...], "released": [...]}`` for
        the commit's result.
        """
        report: dict[str, list[str]] = {"changed": [], "unchanged": [], "released": []}
        for page_id in list(self.pages):
            page = self.pages[page_id]
            fetched = fetch(page)
            if fetched is None:
                self.evict(page_id, step, "gone")
                report["released"].append(page_id)
            elif fetched[0] == page.hash:
                page.unchanged = True
                report["unchanged"].append(page_id)
            else:
                new_hash, text = fetched[0], clean_text(fetched[1])
                page.rev, page.hash, page.text = rev, new_hash, text
                page.bytes, page.unchanged = utf8_size(text), False
                report["changed"].append(page_id)
        return report

    # -- discovery, rejections, commits ---------------------------------------------------------

    def discovered(self, kind: str, item_id: str, item_hash: str) -> None:
        """Record that the model was shown ``item_id`` (each triple once, in order)."""
        entry = (kind, item_id, item_hash)
        if entry not in self.discovery:
            self.discovery.append(entry)

    def discovery_hash(self) -> str:
        """``discovery:sha256:…`` over what discovery showed the model, in order."""
        return sha256_id("discovery", [list(entry) for entry in self.discovery])

    def reject(self, step: int, code: str, message: str) -> None:
        """The new current rejection; the one it replaces is folded to one line."""
        self._fold_rejection()
        self.rejection = Rejection(step, clean_text(code), clean_text(message))

    def _fold_rejection(self) -> None:
        if self.rejection is not None:
            self.rejections.append(self.rejection.folded())
            self.rejection = None

    def committed(self, rev: str, summary: str, step: int | None = None) -> None:
        """One line for a committed plan (summary cut to 1 KB). A commit resolves the current
        rejection, which is folded."""
        self._fold_rejection()
        # one line, whatever the model wrote; redacted before the cut (a resumed run's
        # summary comes from a commit message, not from a parsed decision)
        text = " ".join(redact(summary).split())
        self.commits.append(CommitRow(step, rev, truncate_utf8(text, COMMIT_SUMMARY_MAX_BYTES)))

    # -- note and usage -------------------------------------------------------------------------

    def set_note(self, text: str, tier: Tier) -> str | None:
        """Replace the note (the model owns it; the host never summarises it). A note over
        b tokens is cut, and the returned notice (also shown with the note) says so."""
        limit = tier.bytes(tier.note)
        text = redact(text)  # before the cut, which could leave half a key unrecognised
        size = utf8_size(text)
        self.note = truncate_utf8(text, limit)
        self.note_notice = None
        if size > limit:
            kept = utf8_size(self.note)
            self.note_notice = (
                f"note truncated to {kept} bytes (it was {size} bytes; "
                f"the note holds at most {limit} bytes at tier {tier.name})"
            )
        return self.note_notice

    def record_usage(self, input_tokens: int = 0, output_tokens: int = 0, usd: float = 0.0) -> None:
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        self.usage.usd += usd

    # -- rows as the capsule shows them ---------------------------------------------------------

    def commit_rows(self) -> list[str]:
        return [row.line() for row in self.commits]

    def eviction_rows(self) -> list[str]:
        return [row.line() for row in self.evictions]

    # -- wire -----------------------------------------------------------------------------------

    def to_wire(self) -> dict[str, Any]:
        """The ledger as a JSON value (``aira.step-ledger/1``)."""
        return {
            "format": LEDGER_FORMAT,
            "intent": self.intent.to_wire(),
            "budgets": asdict(self.budgets),
            "pages": {
                page_id: {
                    "path": list(p.path),
                    "rev": p.rev,
                    "hash": p.hash,
                    "bytes": p.bytes,
                    "pinned": p.pinned,
                    "text": p.text,
                    "lastUsed": p.last_used,
                    "offset": p.offset,
                    "limit": p.limit,
                    "unchanged": p.unchanged,
                }
                for page_id, p in self.pages.items()
            },
            "discovery": [list(entry) for entry in self.discovery],
            "rejection": asdict(self.rejection) if self.rejection else None,
            "rejections": list(self.rejections),
            "commits": [asdict(row) for row in self.commits],
            "note": self.note,
            "noteNotice": self.note_notice,
            "usage": {
                "inputTokens": self.usage.input_tokens,
                "outputTokens": self.usage.output_tokens,
                "usd": self.usage.usd,
            },
            "evictions": [asdict(row) for row in self.evictions],
            "nextPage": self.next_page,
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Ledger:
        """The ledger :meth:`to_wire` wrote; anything else raises ``STEP_LEDGER_INVALID``."""
        try:
            if data.get("format") != LEDGER_FORMAT:
                raise ValueError(f"format is {data.get('format')!r}, not {LEDGER_FORMAT}")
            usage = data["usage"]
            rejection = data["rejection"]
            return cls(
                intent=IntentFrame.model_validate(data["intent"]),
                budgets=TaskBudgets(**data["budgets"]),
                pages={
                    str(page_id): WorkingPage(
                        path=[str(part) for part in p["path"]],
                        rev=p["rev"],
                        hash=p["hash"],
                        bytes=int(p["bytes"]),
                        pinned=bool(p["pinned"]),
                        text=p["text"],
                        last_used=int(p["lastUsed"]),
                        offset=int(p["offset"]),
                        limit=p["limit"],
                        unchanged=bool(p["unchanged"]),
                    )
                    for page_id, p in data["pages"].items()
                },
                discovery=[(str(k), str(i), str(h)) for k, i, h in data["discovery"]],
                rejection=Rejection(**rejection) if rejection is not None else None,
                rejections=[str(line) for line in data["rejections"]],
                commits=[CommitRow(**row) for row in data["commits"]],
                note=data["note"],
                note_notice=data["noteNotice"],
                usage=Usage(usage["inputTokens"], usage["outputTokens"], usage["usd"]),
                evictions=[Eviction(**row) for row in data["evictions"]],
                next_page=int(data["nextPage"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError, ValidationError) as exc:
            raise AiraError(STEP_LEDGER_INVALID, f"not a step ledger: {exc}") from None


def _page_number(page_id: str) -> int:
    tail = page_id.removeprefix(PAGE_ID_PREFIX)
    return int(tail) if tail.isdigit() else 0
