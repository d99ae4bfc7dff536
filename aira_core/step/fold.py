"""Folding a round: which results of the round log are stale, and their short forms.

A round's log only grows, so that every prompt starts with the one before it and the
provider's prefix cache hits (spec 003 §6.6). But much of a long round's log is settled
work: hit lists already acted on, reads of a head that is gone, refusals a commit resolved.
A fold starts a new round whose log is the old one with each stale result replaced by its
short form. The decisions stay verbatim, with the model's reasoning, so the model keeps its
own account of the task and re-derives nothing (unlike a compaction, which leaves it its
note); what it may still name stays in the short forms (hit ids, revisions, codes).

A result is stale once a later commit moved the head: a search's hits were acted on (their
ids stay), a read or an inspect showed an older head, a plan's or a repair's result or a
refusal was settled by the commit. So is a plan decision, from the commit that built it on
(its own commit included: what it built is in the revision, the capsule's summary, a read),
and its short form keeps the model's summary of it and its reasoning; a refused plan's
decision is settled by the commit after it. An L2 contract is stale only once a later commit
used its capability, in a step or an assertion, or followed an inspect that used it (spec
003 N2: released after successful use); its signature stays in the capsule's index, and a
lookup shows the contract again. A contract that states a shared grammar in full is kept
while a text that is kept refers to that grammar. Other decisions stay verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FOLDED",
    "LEGEND",
    "SUMMARY_IN_CAPSULE",
    "Shown",
    "fold",
    "stated_grammars",
    "without_summary",
]
SUMMARY_IN_CAPSULE = "the head's summary is the capsule's (segment 5 summary)"

FOLDED = "folded"
"""The key that marks a short form, so the model knows it is reading one. Its value is why
the entry was folded: a one-word code, spelled out in :data:`LEGEND` where a log first uses
it (a long log holds dozens of short forms; the same sentence in each would be most of
their bytes)."""
SETTLED, USED, BUILT = "settled", "used", "built"
LEGEND = {
    SETTLED: "settled: a commit since settled this; later short forms say settled",
    USED: "used: a commit since used this capability; its signature is in the index, a lookup"
    " shows its contract again; later short forms say used",
    BUILT: "built: a commit since built this plan; its steps are in the model (read them);"
    " later short forms say built",
}
_SMALL_ACTS = frozenset({"done", "abstain", "note", "pin", "stage"})
_GRAMMAR_REF = re.compile(r"grammar:([A-Za-z0-9_.-]+)")


@dataclass(frozen=True)
class Shown:
    """A result the round log holds: where (its entry index), the decision it answers, the
    result as the host made it, its text in the log, and how many commits the task had
    when it was shown."""

    index: int
    decision: Any
    result: Mapping[str, Any]
    text: str
    commits: int
    decision_text: str = ""
    """The decision's text in the log (its entry is ``index - 1``)."""
    decision_settled: bool = False
    """The decision is in short form already."""


def _committed(result: Mapping[str, Any]) -> bool:
    """The result (or its short form) is a plan's commit: it names the revision it made and
    no refusal."""
    return bool(result.get("rev")) and "code" not in result and result.get("status") in (None, "ok")


def _short_decision(decision: Any, result: Mapping[str, Any]) -> dict[str, Any] | None:
    """A plan decision's short form once it is settled (None: the decision stays verbatim):
    built when its own commit made it, settled when it was refused."""
    if getattr(decision, "act", None) != "plan":
        return None
    out: dict[str, Any] = {"act": "plan"}
    if getattr(decision, "summary", None):
        out["summary"] = decision.summary
    out[FOLDED] = BUILT if _committed(result) else SETTLED
    return out


def stated_grammars(result: Any) -> set[str]:
    """The shared grammars a result states in full (``data.grammars`` of a describe, in a
    batch's parts too)."""
    out: set[str] = set()
    if not isinstance(result, Mapping):
        return out
    data = result.get("data")
    if isinstance(data, Mapping) and isinstance(data.get("grammars"), Mapping):
        out |= set(data["grammars"])
    for part in result.get("results") or []:
        out |= stated_grammars(part)
    return out


def _short(
    decision: Any,
    result: Mapping[str, Any],
    shown_at: int,
    used: Mapping[str, int],
    keep: set[str],
) -> Mapping[str, Any]:
    """The result's short form, or the result itself when it is not stale."""
    if FOLDED in result:
        return result  # a short form already
    act = getattr(decision, "act", None)
    if act == "batch" and isinstance(result.get("results"), list):
        parts = [
            _short(d, r, shown_at, used, keep)
            for d, r in zip(decision.acts, result["results"], strict=False)
        ]
        if all(p is r for p, r in zip(parts, result["results"], strict=False)):
            return result
        kept = {k: v for k, v in result.items() if k != "act" and (k, v) != ("status", "ok")}
        return {**kept, "results": parts + result["results"][len(parts) :]}
    if act in _SMALL_ACTS or not isinstance(result, Mapping):
        return result
    capability = getattr(decision, "capability", None)
    if act == "lookup" and capability and result.get("status") == "ok":
        if used.get(capability, 0) <= shown_at or stated_grammars(result) & keep:
            return result
        return {"capability": capability, FOLDED: USED}
    # the act is the decision's, just above; a status only when it was not ok
    out = {k: result[k] for k in ("code", "rev", "failedStep") if k in result}
    if result.get("status") not in (None, "ok"):
        out["status"] = result["status"]
    data = result.get("data")
    if act == "lookup" and isinstance(data, Mapping) and isinstance(data.get("hits"), list):
        out["hits"] = [h.get("capabilityId") for h in data["hits"] if isinstance(h, Mapping)]
    if act == "inspect" and "query" in result:
        out["query"] = result["query"]
    out[FOLDED] = SETTLED
    return out


def _codes(value: Any) -> list[str]:
    """The fold codes a short form holds, in order (a batch's parts too)."""
    if not isinstance(value, Mapping):
        return []
    said = value.get(FOLDED)
    found = [said.split(":", 1)[0]] if isinstance(said, str) else []
    for part in value.get("results") or []:
        found += _codes(part)
    return found


def _explained(value: Any, code: str) -> Any:
    """``value`` with the first short form saying ``code`` spelling it out (:data:`LEGEND`)."""
    if not isinstance(value, Mapping):
        return value
    if value.get(FOLDED) == code:
        return {**value, FOLDED: LEGEND[code]}
    parts = value.get("results")
    if isinstance(parts, list):
        for i, part in enumerate(parts):
            if code in _codes(part):
                return {**value, "results": [*parts[:i], _explained(part, code), *parts[i + 1 :]]}
    return value


def without_summary(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """A commit's result without the head summary the new round's capsule shows (the last
    result a folded log ends with); any other result as it is."""
    if result.get("act") != "plan" or not isinstance(result.get("summary"), Mapping):
        return result
    return {**result, "summary": SUMMARY_IN_CAPSULE}


def fold(
    shown: Iterable[Shown], *, commits: int, used: Mapping[str, int], render: Any
) -> dict[int, tuple[Mapping[str, Any] | None, str]]:
    """The short forms of the stale entries of a round log whose results are ``shown``
    (every result of the log), by entry index: a result's short form and its text
    (``render``: value → log text), or a decision's (``None``, text); only those shorter
    than what they replace. ``commits`` is the task's commit count now, ``used`` the
    ordinal of the commit after which each capability's use was settled."""
    shown = list(shown)
    keep: set[str] = set()
    while True:
        out: dict[int, tuple[Mapping[str, Any] | None, str]] = {}
        kept: list[str] = []
        for s in shown:
            stale = s.commits < commits
            short = _short(s.decision, s.result, s.commits, used, keep) if stale else s.result
            text = render(short) if short is not s.result else s.text
            if len(text) < len(s.text):
                out[s.index] = (short, text)
            else:
                kept.append(s.text)
            # a committed plan's decision is settled by its own commit: the revision holds it
            settled = stale or _committed(s.result)
            brief = (
                _short_decision(s.decision, s.result)
                if settled and not s.decision_settled
                else None
            )
            said = render(brief) if brief is not None else s.decision_text
            if len(said) < len(s.decision_text):
                out[s.index - 1] = (None, said)
            else:
                kept.append(s.decision_text)
        # A grammar a text that stays refers to must stay stated by one that stays.
        referred = {g for text in kept for g in _GRAMMAR_REF.findall(text)}
        lost = {
            g
            for s in shown
            if s.index in out
            for g in stated_grammars(s.result)
            if g in referred and g not in keep
        }
        if not lost:
            return _with_legend(shown, out, render)
        keep |= lost


def _with_legend(
    shown: list[Shown],
    out: dict[int, tuple[Mapping[str, Any] | None, str]],
    render: Any,
) -> dict[int, tuple[Mapping[str, Any] | None, str]]:
    """``out`` with each fold code spelled out (:data:`LEGEND`) in the first entry of the
    folded log that uses it, unless an entry folded before already does, earlier."""
    told: set[str] = set()
    for s in shown:
        for index in (s.index - 1, s.index):
            if index in out:
                short, _ = out[index]
                value = short if short is not None else _short_decision(s.decision, s.result)
                spelled = value
                for code in _codes(value):
                    if code not in told:
                        told.add(code)
                        spelled = _explained(spelled, code)
                if spelled is not value:
                    out[index] = (spelled if short is not None else None, render(spelled))
            elif index == s.index:
                told.update(_codes(s.result))
            else:
                told.update(c for c, line in LEGEND.items() if line in s.decision_text)
    return out
