"""Diagnostics: the stable codes and clear messages that bad input gets instead of a traceback."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


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


def redact(text: str) -> str:
    """Replace private absolute path prefixes (home, environment, working directory)."""
    for prefix, repl in _private_prefixes():
        text = re.sub(re.escape(prefix) + r"(?=[/\\]|\b|$)", repl, text)
    return text
