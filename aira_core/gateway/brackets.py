"""The bracket repair of a decision's JSON (spec 003 §8 row N4): models drop closing brackets
in deep decisions (an eight-level plan that ends ``}}}}}}}}, "note"`` with one ``]`` gone, or a
reply cut off before its last ``}``).

:func:`open_at` knows which brackets are open at any position of a text, strings and escapes
respected, in one linear, iterative scan (a regular expression jumps from one significant
character to the next; no recursion, so a hostile text of megabytes or 100,000 levels costs
a scan, never a ``RecursionError``). :func:`repair` puts back a closer only where the JSON
parser stopped at a position where that closer is due, and accepts the result only if it
parses to a JSON object. :func:`account` says what was open where a text stopped parsing,
for the host's ``STEP_DECISION_NOT_JSON`` message (brackets only: nothing of the text).

Local, cheap and dependency-free (the host's grammar imports it).
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

REPAIR = "brackets-restored"
"""The channel repair :func:`repair` is reported as (``StepReply.repairs``)."""

MAX_RESTORED = 4
"""The most closers one repair puts back: a decision missing more is the model's to fix."""

CLOSER = {"{": "}", "[": "]"}
_SIGNIFICANT = re.compile(r'["\[\]{}]')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""The rest of a string after its opening quote, through its closing quote (escapes
skipped): one match, however long the string."""
_SHOWN = 12


class Open(NamedTuple):
    """The brackets open before a position, outermost first, and whether that position is
    inside a string."""

    brackets: str
    in_string: bool

    @property
    def due(self) -> str | None:
        """The closer the innermost open bracket waits for (``None`` when none is open)."""
        return CLOSER[self.brackets[-1]] if self.brackets else None


def open_at(text: str, pos: int | None = None) -> Open:
    """The brackets open before ``text[pos]`` (the whole text without ``pos``). A closer
    that matches the innermost open bracket closes it; one that does not is left alone
    (a JSON parser stops there, so a repair never looks past it)."""
    end = len(text) if pos is None else max(0, min(pos, len(text)))
    stack: list[str] = []
    i = 0
    while True:
        found = _SIGNIFICANT.search(text, i, end)
        if found is None:
            return Open("".join(stack), False)
        char = found.group()
        i = found.end()
        if char == '"':
            rest = _STRING_REST.match(text, i, end)
            if rest is None:
                return Open("".join(stack), True)
            i = rest.end()
        elif char in CLOSER:
            stack.append(char)
        elif stack and CLOSER[stack[-1]] == char:
            stack.pop()


def _closer_due(text: str, exc: json.JSONDecodeError) -> str | None:
    """The closer to put back where the parser stopped, if the stack says one is due
    there: the text ends (it was cut off), or a different closer stands there."""
    pos = exc.pos
    at = open_at(text, pos)
    if at.in_string or at.due is None:
        return None
    if pos >= len(text) or (text[pos] in "]}" and text[pos] != at.due):
        return at.due
    return None


def repair(text: str, limit: int = MAX_RESTORED) -> tuple[str, int] | None:
    """``(repaired, n)``: ``text`` with ``n`` (1 to ``limit``) missing closers put back, when
    that makes it parse to a JSON object; otherwise ``None`` and nothing changed (a text
    that already parses is not repaired)."""
    restored = 0
    while True:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            if restored >= limit:
                return None
            closer = _closer_due(text, exc)
            if closer is None:
                return None
            text = text[: exc.pos] + closer + text[exc.pos :]
            restored += 1
            continue
        except (ValueError, RecursionError):  # too deep, or a number Python will not convert
            return None
        return (text, restored) if restored and isinstance(value, dict) else None


def account(text: str, pos: int) -> str | None:
    """What is open at ``text[pos]``, for a rejection's message: the open brackets (the
    innermost few), how many, and the closer due; ``None`` when no bracket is open. Shows
    brackets only, never the text."""
    at = open_at(text, pos)
    if not at.brackets:
        return None
    shown = " ".join(at.brackets[-_SHOWN:])
    if len(at.brackets) > _SHOWN:
        shown = "… " + shown
    where = " (inside a string)" if at.in_string else ""
    return f'open at the error{where}: {shown} — {len(at.brackets)} unclosed; expected "{at.due}"'


__all__ = ["MAX_RESTORED", "REPAIR", "Open", "account", "open_at", "repair"]
