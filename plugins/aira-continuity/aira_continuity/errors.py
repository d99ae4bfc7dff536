"""The stable codes of this plugin (registered in ``aira_core.codes``, phase ``continuity``)
and the one error that carries them."""

from __future__ import annotations

from collections.abc import Sequence

from aira_core.diagnostics import AiraError, Diagnostic

CONTRACT_INVALID = "CONTRACT_INVALID"
CONTRACT_RULE_UNSUPPORTED = "CONTRACT_RULE_UNSUPPORTED"
CONTRACT_PLACEHOLDER = "CONTRACT_PLACEHOLDER"
CONTRACT_HASH_MISMATCH = "CONTRACT_HASH_MISMATCH"
CONTRACT_OUTSIDE_DOMAIN = "CONTRACT_OUTSIDE_DOMAIN"
CONTRACT_VERSION_ROLLBACK = "CONTRACT_VERSION_ROLLBACK"
CONTRACT_VERSION_COLLISION = "CONTRACT_VERSION_COLLISION"
CONTRACT_LEDGER_INVALID = "CONTRACT_LEDGER_INVALID"
WIRE_RECORD_INVALID = "WIRE_RECORD_INVALID"

CODES = (
    CONTRACT_INVALID,
    CONTRACT_RULE_UNSUPPORTED,
    CONTRACT_PLACEHOLDER,
    CONTRACT_HASH_MISMATCH,
    CONTRACT_OUTSIDE_DOMAIN,
    CONTRACT_VERSION_ROLLBACK,
    CONTRACT_VERSION_COLLISION,
    CONTRACT_LEDGER_INVALID,
    WIRE_RECORD_INVALID,
)


class WireError(AiraError):
    """A wire value refused: every problem found, each with its code and JSON pointer. The
    first is the error's own diagnostic, so a caller that matches one code sees it."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        if not diagnostics:  # a refusal always says why
            raise ValueError("WireError needs at least one diagnostic")
        first = diagnostics[0]
        more = f" (and {len(diagnostics) - 1} more)" if len(diagnostics) > 1 else ""
        super().__init__(first.code, first.message + more, pointer=first.pointer)
        self.diagnostics = list(diagnostics)


def problem(code: str, message: str, pointer: str = "") -> Diagnostic:
    """One diagnostic; an empty pointer is the whole document."""
    return Diagnostic(code=code, message=message, pointer=pointer or None)
