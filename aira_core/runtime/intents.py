"""A task in words: the Intent Frame a user's text becomes (spec 003 item 10: the host does
not paraphrase it), the same for ``aira run INTENT`` (the step host) and ``task_open
{intent}`` (the MCP server)."""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from aira_core.diagnostics import AiraError

if TYPE_CHECKING:
    from aira_core.contracts.plan import IntentFrame

__all__ = ["INTENT_CHARS", "RUN_TASK_INVALID", "intent_frame"]

RUN_TASK_INVALID = "RUN_TASK_INVALID"
INTENT_CHARS = 4000
"""The longest task in words (the capsule's intent frame is ≤ 1k tokens)."""
_UNSHOWN = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
"""Characters a task in words may not hold: controls, format (bidi overrides), unassigned."""


def intent_frame(text: str) -> IntentFrame:
    """The Intent Frame whose goal is ``text`` as written (stripped). ``RUN_TASK_INVALID``
    for a blank or over-long text, or one holding control or format characters."""
    from aira_core.contracts.plan import IntentFrame  # pydantic: not for the tool list's limit

    if not isinstance(text, str) or not text.strip():
        raise AiraError(RUN_TASK_INVALID, "the task is blank: say what to design")
    goal = text.strip()
    if len(goal) > INTENT_CHARS:
        raise AiraError(
            RUN_TASK_INVALID,
            f"the task is {len(goal)} characters; at most {INTENT_CHARS} (put details in a "
            "decision script's intent)",
        )
    if any(c not in "\n\t" and unicodedata.category(c) in _UNSHOWN for c in goal):
        # C0/C1 controls, DEL, bidi overrides: nothing a terminal should be handed
        raise AiraError(RUN_TASK_INVALID, "the task holds control or format characters")
    return IntentFrame(goal=goal)
