"""Diagnostics: the stable codes and clear messages that bad input gets instead of a traceback."""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


_VERBATIM = frozenset({"code", "severity", "approval"})
"""Diagnostic fields that hold no text from outside (a checked code, an enum, a flag)."""


def _redact_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    sub = _redactor().sub  # looked up once for all the fields
    return {k: v if k in _VERBATIM or v is None else _walk(v, sub) for k, v in fields.items()}


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

    @model_validator(mode="before")
    @classmethod
    def _redacted(cls, data: Any) -> Any:
        # Messages, subjects, pointers, expected/actual values echo input, exception and
        # kernel texts, and a diagnostic is printed, stored and written into trajectories:
        # redacted here, when it is made, so no use of it (str(), .message, a dump) can leak.
        if isinstance(data, dict):
            return _redact_fields(data)
        return data

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Any:
        # model_copy skips validation: what an update brings in is redacted as well.
        if update:
            update = _redact_fields(update)
        return super().model_copy(update=update, deep=deep)

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


# -- redaction ---------------------------------------------------------------------------------
#
# What must never be written down (DESIGN.md, Quality bar): credentials and private absolute
# paths. One regular expression finds them all, in one pass over a text: the values of
# credential-named environment variables, token formats that are secrets whatever surrounds
# them, credentials named by what precedes them, then private path prefixes. It runs only on
# a text in which one of its literal anchors occurs (:data:`_ANCHORS`, one fast pass), which
# most text, and most of a large output, does not hold. Ordinary CAD text (ids such as
# ``rev:sha256:…``, capability names, numbers with units) matches none of it.

REDACTED = "<redacted>"

_END = r"""\s&,;'"\\<>`"""
"""What ends an unquoted value: whitespace, a query or list separator, a quote, a backslash
(the start of a JSON escape), angle brackets (so ``<redacted>`` is never redacted again)."""
_MIXED = rf"(?=[^{_END}]*[A-Za-z])(?=[^{_END}]*\d)"
"""A value of a name that is not always a credential (``key``, ``token``…) counts only if it
mixes letters and digits, as keys and signatures do: ``max_tokens=4096`` or ``signature:
SIGNATURE_INVALID`` are no credentials."""
_OUR_IDS = r"(?![a-z]+:sha256:)"
"""Aira's own content addresses (``rev:sha256:…``, ``lock:sha256:…``) are never secrets."""
_SEP = r"""\\?["']?[ \t]*[:=][ \t]*"""
"""Between a name and its value: an optional closing quote (``"token": …`` in JSON or a
Python repr, JSON-escaped too) and ``:`` or ``=``."""

_START = r"(?:(?<![\w])|(?<=\\[nrtbf])|(?<=\\u[0-9a-fA-F]{4}))"
"""Where a token starts: not inside a word, or right after an escape (``\\n``, ``\\u0000``),
as in a message that quotes a value as JSON or as Python's repr() does (``\\b`` would not
match between the escape's letter and the token)."""

_TOKEN_FORMATS = (
    # PEM private keys, whole blocks (or to the end, when the END line was cut off)
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:[\s\S]*?-----END[A-Z0-9 ]*PRIVATE KEY-----"
    r"|[A-Za-z0-9+/=\s\\]*)",
    r"sk-[A-Za-z0-9_-]{8,}",  # OpenAI, Anthropic (sk-ant-…), DeepSeek (sk-<hex>)
    r"[rs]k_(?:live|test)_[A-Za-z0-9]{8,}",  # Stripe
    r"gh[pousr]_[A-Za-z0-9]{8,}",  # GitHub tokens
    r"github_pat_[A-Za-z0-9_]{8,}",
    r"glpat-[A-Za-z0-9_-]{8,}",  # GitLab
    r"(?:AKIA|ASIA|ABIA|AGPA|AIDA|AROA)[A-Z0-9]{12,}(?![a-z0-9])",  # AWS access key ids
    r"AIza[A-Za-z0-9_-]{20,}",  # Google API keys
    r"xox[abposre]-[A-Za-z0-9-]{8,}",  # Slack
    r"xapp-[A-Za-z0-9-]{8,}",
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"npm_[A-Za-z0-9]{20,}",
    # JWT: header.payload.signature
    r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
)
"""Secrets whatever surrounds them: replaced whole. One rule, so where a token starts is
tested once per position, not once per format."""

_ALWAYS = (
    r"password|passwd|passphrase|pwd|secret|private[_-]?key|api[_-]?key|apikey|access[_-]?key"
    r"|credentials?|(?:access|refresh|auth|session|id|bearer)[_-]?token|cookie|set-cookie"
)
"""Names whose value is a credential whatever it looks like (``secret_key``, ``client_secret``,
``db_password``, ``aws_secret_access_key`` contain them)."""
_MAYBE = r"token|key|sig|signature"
"""Names whose value is a credential when it looks like one (:data:`_MIXED`)."""
_SIGNED_QUERY = (
    *("x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature"),
    *("x-goog-credential", "signature", "sig", "token", "access_token", "id_token", "api_key"),
    *("api-key", "apikey", "key", "secret", "password", "auth", "code"),
)
"""Query parameters of signed URLs (S3, GCS, Azure SAS, CloudFront, OAuth): any value."""
_SCHEMES = r"bearer|basic|token|digest|negotiate|ntlm|aws4-hmac-sha256"

# Each rule: what it matches is replaced by <redacted>, but for its group k§ (§: the rule's
# number), which is kept: the name before a value, the scheme of an Authorization header.
_RULES: tuple[str, ...] = (
    rf"{_START}(?:{'|'.join(_TOKEN_FORMATS)})",
    # https://user:password@host: the user information goes, the host stays
    r"(?<=://)[^\s/@:'\"<>]+:[^\s/@'\"<>]+(?=@)",
    # ?X-Amz-Signature=… &sig=… &token=…
    rf"(?P<k§>(?<=[?&])(?i:{'|'.join(_SIGNED_QUERY)})=)[^&#{_END}]+",
    # Authorization: Bearer …, "Authorization": "Basic …" (JSON), authorization=…
    rf"(?P<k§>{_START}(?i:(?:proxy-)?authorization){_SEP}\\?[\"']?[ \t]*"
    rf"(?P<s§>(?i:{_SCHEMES})[ \t]+)?)(?(s§)[^{_END}]+|{_MIXED}[^{_END}]{{8,}})",
    # a bearer token anywhere
    rf"(?P<k§>{_START}(?i:bearer)[ \t]+)[A-Za-z0-9._~+/=-]{{8,}}",
    # password=…, "client_secret": "…", private_key: …
    rf"(?P<k§>(?i:{_ALWAYS})[\w.-]*{_SEP}(?P<q§>\\?[\"'])?)"
    rf"(?!{REDACTED})(?(q§)[^\"'\\\n]+|[^{_END}]+)",
    # key=…, token="…", sig: … when the value mixes letters and digits
    rf"(?P<k§>(?<!public)(?<!public[_-])(?i:{_MAYBE})[\w.-]*{_SEP}\\?[\"']?)"
    rf"{_OUR_IDS}{_MIXED}[^{_END}]{{8,}}",
)
_BASIC = rf"(?P<k§>{_START}Basic[ \t]+)(?P<b§>[A-Za-z0-9+/]{{8,}}={{0,2}})(?![A-Za-z0-9+/=])"
"""``Basic <base64>`` anywhere: redacted when it decodes to ``user:password``."""
_PATH_START = r"(?:(?<![\w.~-])|(?<=\\[nrtbf]))"
"""Where an absolute path starts: not inside a word or another path (``/var/tmp`` holds no
``/tmp``), or right after an escape."""
_HOMES = (
    rf"{_PATH_START}(?:/home|/Users)/[^/\s'\"\\<>]+"
    r"|(?<![\w])[A-Za-z]:\\Users\\[^\\\s'\"<>]+"
)
"""Other users' home directories (the current one's is named ``~``)."""

_ANCHORS = (
    *("-----begin", "sk-", "sk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    *("glpat-", "akia", "asia", "abia", "agpa", "aida", "aroa", "aiza", "xox", "xapp-", "hf_"),
    *("npm_", "eyj", "://", "authorization", "bearer", "basic", "password", "passwd"),
    *("passphrase", "pwd", "secret", "private", "api_", "api-", "apikey", "access"),
    *("credential", "cookie", "token", "key", "sig", "/home/", "/users/", "users\\"),
    *(f"{sep}{name}=" for name in _SIGNED_QUERY for sep in "?&"),
)
"""Lower-case text that every match of the rules contains (a credential's value and a private
prefix are added per pattern). A text in which none occurs is passed without running the
rules: Python's re tries every alternative at every position, so the rules cost ~1.5 µs a
character, and this test ~20 ns. None consists of hex digits only, which hashes are made of,
and none holds a character JSON escapes, so it finds the same in a value and in its JSON."""

_SECRET_ENV = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)")
_secret_names: tuple[frozenset[Any], list[str]] = (frozenset(), [])
_registered: tuple[str, ...] = ()
"""Secrets read from elsewhere than the environment (an API key in providers.toml), in the
order they were registered: one tuple, so the compiled pattern's cache key stays the same
between registrations."""
SECRET_MIN_CHARS = 8
"""Shorter values are not scrubbed: they would match ordinary words and numbers."""


def register_secret(value: str) -> None:
    """Scrub ``value`` wherever it appears from now on, whatever its shape, as the values of
    credential-named environment variables are (values under :data:`SECRET_MIN_CHARS`
    characters are ignored)."""
    global _registered
    if isinstance(value, str) and len(value) >= SECRET_MIN_CHARS and value not in _registered:
        _registered = (*_registered, value)


def _secret_values() -> tuple[str, ...]:
    """Values of environment variables named like credentials (``DEEPSEEK_API_KEY``...),
    then the values given to :func:`register_secret`: they are scrubbed wherever they
    appear, whatever their shape. The names are matched again only when the environment's
    names change."""
    global _secret_names
    # os.environ's own store (encoded keys): iterating os.environ decodes every name.
    names = getattr(os.environ, "_data", os.environ)
    if len(names) != len(_secret_names[0]) or not _secret_names[0].issuperset(names):
        found = [k for k in os.environ if _SECRET_ENV.search(k)]
        _secret_names = (frozenset(names), found)
    found = tuple(v for k in _secret_names[1] if len(v := os.environ.get(k, "")) >= 8)
    return found + _registered if _registered else found


def _private_prefixes(places: tuple[str | None, ...]) -> tuple[tuple[str, str], ...]:
    """(prefix, name) for the environment, home, working directory, temp and AIRA_HOME,
    longest first, so a venv inside the home directory is named as the environment."""
    pairs: dict[str, str] = {}
    for place, name in zip(places, ("<env>", "~", ".", "<tmp>", "$AIRA_HOME"), strict=True):
        if place:
            pairs[str(Path(place))] = name
    return tuple(
        sorted(((k, v) for k, v in pairs.items() if len(k) > 1), key=lambda kv: -len(kv[0]))
    )


class _Redactor:
    """The one pattern for a set of credential values and private prefixes, and its
    replacement. Built once per such set (see :func:`_redactor`)."""

    def __init__(self, values: tuple[str, ...], prefixes: tuple[tuple[str, str], ...]) -> None:
        rules = [rule.replace("§", str(i)) for i, rule in enumerate(_RULES)]
        self.basic = len(rules)
        rules.append(_BASIC.replace("§", str(self.basic)))
        self.kept = {i for i, rule in enumerate(rules) if f"(?P<k{i}>" in rule}
        alternatives = [f"(?P<r{i}>{rule})" for i, rule in enumerate(rules)]
        if values:  # first: an environment value is scrubbed whatever it is part of
            alternatives.insert(0, "(?P<env>" + "|".join(map(re.escape, values)) + ")")
        # Last, where no credential matched: private prefixes (longest first, as they come),
        # then the homes of other users.
        self.paths = dict(prefixes)
        if prefixes:
            alternation = "|".join(re.escape(prefix) for prefix, _ in prefixes)
            alternatives.append(rf"(?P<path>{_PATH_START}(?:{alternation})(?=[/\\]|\b|$))")
        alternatives.append(f"(?P<home>{_HOMES})")
        self.pattern = re.compile("|".join(alternatives))
        literals = {*_ANCHORS, *(v.lower() for v in values), *(p.lower() for p, _ in prefixes)}
        self.gate = re.compile(_trie(literals)).search

    def sub(self, text: str) -> str:
        if self.gate(text.lower()) is None:
            return text
        return self.pattern.sub(self._replace, text)

    def _replace(self, m: re.Match[str]) -> str:
        name = m.lastgroup or ""
        if name == "env":
            return REDACTED
        if name == "path":
            return self.paths[m.group(0)]
        if name == "home":
            return "<home>"
        i = int(name[1:])
        if i == self.basic and not _is_basic_credential(m.group(f"b{i}")):
            return m.group(0)
        return (m.group(f"k{i}") or "") + REDACTED if i in self.kept else REDACTED


def _trie(words: set[str]) -> str:
    """A regular expression that finds any of ``words``, as a trie (``s(?:k[-_]|ecret)``):
    Python's re tries every alternative of a flat list at every position, which costs three
    times as much. A word that another one starts with is enough to stop at."""
    root: dict[str, Any] = {}
    for word in sorted(words, key=len):
        node = root
        for ch in word:
            if "" in node:
                break  # a shorter word is already there: the longer one adds nothing
            node = node.setdefault(ch, {})
        else:
            node.clear()
            node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        if "" in node:
            return ""
        alternatives = [re.escape(ch) + emit(child) for ch, child in sorted(node.items())]
        return alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"

    return emit(root) if root else r"(?!)"


def _is_basic_credential(text: str) -> bool:
    import base64
    import binascii

    try:
        decoded = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


@functools.lru_cache(maxsize=8)
def _compiled(values: tuple[str, ...], places: tuple[str | None, ...]) -> _Redactor:
    return _Redactor(
        tuple(sorted(set(values), key=lambda v: (-len(v), v))), _private_prefixes(places)
    )


def _redactor() -> _Redactor:
    """The redactor for the environment as it is now (a few microseconds when it is the one
    of the last call: compiled once per set of credential values and private places)."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # a working directory that was removed: there is none to name
        cwd = None
    places = (
        sys.prefix,
        os.path.expanduser("~"),
        cwd,
        tempfile.tempdir or tempfile.gettempdir(),
        os.environ.get("AIRA_HOME"),
    )
    return _compiled(_secret_values(), places)


def redact(text: str) -> str:
    """``text`` without what must never reach a message, log, output or store: credentials
    (token formats, named credentials, signed URL parameters, URL passwords, PEM private
    keys, the values of credential-named environment variables) and private absolute path
    prefixes (home, environment, working directory, temp, ``$AIRA_HOME``, other users'
    homes). One regular-expression pass."""
    return _redactor().sub(text)


def may_hold_secrets(text: str) -> bool:
    """False when :func:`redact` would certainly leave ``text`` as it is (and then its JSON
    too, see :data:`_ANCHORS`): a fast test, for a whole output at once."""
    return _redactor().gate(text.lower()) is not None


def redact_value(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, strings, scalars) with every string
    redacted, keys included, at any depth. The pattern is looked up once for the whole
    value. Two keys that redact to the same text keep the later value."""
    return _walk(value, _redactor().sub)


def _walk(value: Any, sub: Any) -> Any:
    if isinstance(value, str):
        return sub(value)
    if isinstance(value, dict):
        return {(sub(k) if isinstance(k, str) else k): _walk(v, sub) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, sub) for v in value]
    if isinstance(value, tuple):
        return tuple(_walk(v, sub) for v in value)
    return value


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
