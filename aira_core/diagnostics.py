"""Diagnostics: the stable codes and clear messages that bad input gets instead of a traceback."""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Diagnostic(BaseModel):
    """One finding: a stable ``code`` to match on, a message for people, and where it applies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str = Field(pattern=r"^[A-Z][A-Z0-9_]*$")
    message: str
    severity: Severity = Severity.ERROR
    subject: str | None = None
    """What the finding is about: a capability id, a package name, a plugin name."""
    pointer: str | None = None
    """JSON pointer (RFC 6901) into the document the subject lives in."""
    # RFC-0002 §11.3: what a repairable diagnostic says beyond its code (all optional).
    phase: str | None = None
    """Where it arose: lint, conformance, check, propose, preview, validate, commit …"""
    affected: list[str] | None = None
    """Ids or aliases of the entities it concerns."""
    expected: Any = None
    actual: Any = None
    cause: str | None = None
    """Cause category, e.g. geometry, reference, unit, policy, budget."""
    repairs: list[str] | None = None
    """Registered capabilities that can repair it (their ``repairsDiagnostic`` names it)."""
    approval: bool | None = None
    """Whether acting on it needs the user's approval."""

    @field_validator("message")
    @classmethod
    def _redacted(cls, message: str) -> str:
        # Messages echo input and exception texts, and they are printed, stored and written
        # into trajectories: whatever builds one, credentials and private paths stay out.
        return redact(message)

    def __str__(self) -> str:
        where = " ".join(p for p in (self.subject, self.pointer) if p)
        return f"{self.code}: {self.message}" + (f" [{where}]" if where else "")


class AiraError(Exception):
    """An expected failure with a stable code; the CLI prints it without a traceback."""

    def __init__(
        self, code: str, message: str, *, subject: str | None = None, pointer: str | None = None
    ) -> None:
        self.diagnostic = Diagnostic(code=code, message=message, subject=subject, pointer=pointer)
        super().__init__(str(self.diagnostic))

    @property
    def code(self) -> str:
        return self.diagnostic.code


def json_pointer(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """RFC 6901 pointer for a path of keys and indices."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _private_prefixes() -> list[tuple[str, str]]:
    # Longest first, so a venv inside the home directory is named as the environment.
    pairs = {
        str(Path(sys.prefix)): "<env>",
        str(Path.home()): "~",
        os.getcwd(): ".",
        tempfile.gettempdir(): "<tmp>",
    }
    if os.environ.get("AIRA_HOME"):
        pairs[os.environ["AIRA_HOME"]] = "$AIRA_HOME"
    return sorted(((k, v) for k, v in pairs.items() if len(k) > 1), key=lambda kv: -len(kv[0]))


# Credentials as they show up in exception texts: an Authorization header or bearer token,
# provider API keys (sk-...), and the value of a key=, token=, secret=, password= or
# signature= pair (query strings of signed URLs included). A pair's value must mix letters
# and digits, as keys and signatures do: "budgetTokens: 32000" or "signature:
# SIGNATURE_INVALID" are no credentials.
_SECRET_PATTERNS = (
    (
        re.compile(r"(?i)\b(authorization\s*[:=]\s*)(?:bearer\s+|basic\s+)?[^\s,;'\"]+"),
        r"\1<redacted>",
    ),
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1<redacted>"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), "<redacted>"),
    (
        re.compile(
            r"(?i)\b([\w.-]*(?:api[_-]?key|access[_-]?key|token|secret|password|passwd"
            r"|signature|credential)\s*[=:]\s*)(?!<redacted>)"
            r"(?=[^\s&,;'\"]*[a-z])(?=[^\s&,;'\"]*\d)[^\s&,;'\"]{8,}"
        ),
        r"\1<redacted>",
    ),
)
_SECRET_ENV = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)")
_secret_names: tuple[frozenset[str], list[str]] = (frozenset(), [])


def _secret_values() -> list[str]:
    """Values of environment variables named like credentials (``DEEPSEEK_API_KEY``...),
    longest first: they are scrubbed wherever they appear, whatever their shape. The names
    are matched again only when the environment's names change."""
    global _secret_names
    names = os.environ.keys()
    if len(names) != len(_secret_names[0]) or not _secret_names[0].issuperset(names):
        _secret_names = (frozenset(names), [k for k in names if _SECRET_ENV.search(k)])
    found = {os.environ[k] for k in _secret_names[1] if len(os.environ.get(k, "")) >= 8}
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """Remove what must never reach a message, log or store: credentials (see
    ``_SECRET_PATTERNS`` and credential-named environment variables) and private absolute
    path prefixes (home, environment, working directory, temp, ``$AIRA_HOME``)."""
    for value in _secret_values():
        text = text.replace(value, "<redacted>")
    for pattern, repl in _SECRET_PATTERNS:
        text = pattern.sub(repl, text)
    pattern, names = _prefix_pattern(tuple(_private_prefixes()))
    return pattern.sub(lambda m: names[m.group(0)], text)


@functools.lru_cache(maxsize=8)
def _prefix_pattern(pairs: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], dict[str, str]]:
    """One alternation for all prefixes (longest first, as ``pairs`` come), compiled once
    per set of prefixes."""
    alternation = "|".join(re.escape(prefix) for prefix, _ in pairs) or r"(?!)"
    return re.compile(f"(?:{alternation})" + r"(?=[/\\]|\b|$)"), dict(pairs)


FINDINGS_TRUNCATED = "FINDINGS_TRUNCATED"
FINDINGS_PER_CODE = 20
"""At most this many findings of one code are listed (lint, conformance, plan check)."""
FINDINGS_MAX = 200
"""At most this many findings are listed in all; the rest are counted."""


class FindingCap:
    """Bounds a list of findings one input could blow up (a manifest with 200,000 unknown
    keys): the first :data:`FINDINGS_PER_CODE` of each code, :data:`FINDINGS_MAX` in all,
    then one ``FINDINGS_TRUNCATED`` finding that counts the rest by code. Ask :meth:`keep`
    before building a finding, so the ones left out cost nothing."""

    def __init__(
        self,
        per_code: int = FINDINGS_PER_CODE,
        total: int = FINDINGS_MAX,
        subject: str | None = None,
    ) -> None:
        self.per_code, self.total, self.subject = per_code, total, subject
        self.kept: dict[str, int] = {}
        self.listed = 0
        self.omitted: dict[str, int] = {}

    def keep(self, code: str) -> bool:
        """Whether a finding of ``code`` is listed (otherwise it is counted)."""
        if self.kept.get(code, 0) >= self.per_code or self.listed >= self.total:
            self.omitted[code] = self.omitted.get(code, 0) + 1
            return False
        self.kept[code] = self.kept.get(code, 0) + 1
        self.listed += 1
        return True

    def summary(self) -> list[Diagnostic]:
        """The ``FINDINGS_TRUNCATED`` finding, if anything was left out (else nothing)."""
        if not self.omitted:
            return []
        n = sum(self.omitted.values())
        by_code = sorted(self.omitted.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = ", ".join(f"{count} {code}" for code, count in by_code[:10])
        more = f" and {len(by_code) - 10} more codes" if len(by_code) > 10 else ""
        return [
            Diagnostic(
                code=FINDINGS_TRUNCATED,
                subject=self.subject,
                message=f"{n} more finding(s) not listed ({shown}{more}); the first "
                f"{self.per_code} of each code, {self.total} in all, are",
            )
        ]

    def apply(self, findings: Any) -> list[Diagnostic]:
        """``findings`` (an iterable of Diagnostics) capped, with the summary at the end."""
        out = [f for f in findings if self.keep(f.code)]
        return out + self.summary()
