"""Canonical JSON (RFC 8785 / JCS) and the project's only hashing helpers.

Every content-addressed identifier in Aira (revisions, manifests, descriptors,
...) is a SHA-256 over bytes produced here. Keeping a single serialiser and
a single hasher means two components can never disagree about an id because
one of them sorted keys, formatted a float or escaped a string slightly
differently. Nothing else in the code base should import ``hashlib`` or call
``json.dumps`` to produce bytes that get hashed.

Untrusted JSON is read with :func:`loads_strict`, which refuses what this serialiser
could not write back (duplicate keys, NaN, inexact integers, over-deep nesting).

The serialiser follows RFC 8785: keys sorted by UTF-16 code units, no
insignificant whitespace, strings and numbers formatted exactly as
ECMAScript's ``JSON.stringify`` does, UTF-8 output. Inputs that JCS cannot
represent faithfully (NaN, infinities, lone surrogates, integers that would
be silently rounded to a double, unknown types) raise
:class:`CanonicalJSONError` instead of producing a "close enough" encoding.
"""

from __future__ import annotations

import hashlib
import json
import re
from json.encoder import encode_basestring
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "CanonicalJSONError",
    "StrictJSONError",
    "canonical_bytes",
    "loads_strict",
    "sha256_bytes_hex",
    "sha256_hex",
    "sha256_id",
]

# `encode_basestring` is exactly what `json.dumps(s, ensure_ascii=False)`
# calls (C-accelerated): it escapes `"`, `\` and control characters < 0x20 as
# \b \t \n \f \r or lowercase \u00xx and leaves everything else literal, which
# is ECMAScript JSON.stringify's string serialisation. Calling it directly
# avoids building a JSONEncoder per string.

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_PREFIX_RE = re.compile(r"[a-z][a-z0-9_-]*")

MAX_DEPTH = 128
"""How deeply arrays and objects may nest in canonical JSON. Far beyond any document Aira
writes, and far below the depth at which a reader (json, pydantic) runs out of recursion:
what is hashed and stored here can always be read back."""

# Integers with magnitude <= 2**53 are exact doubles whose shortest
# round-trip form is the integer itself, so str() already matches ES.
_MAX_SAFE_INT = 2**53

# A path is a linked list (parent, token) so building it per element is
# cheap; it is only rendered into a pointer string when an error occurs.
_Path = tuple[Any, "str | int"] | None


class CanonicalJSONError(ValueError):
    """A value cannot be represented in canonical JSON (RFC 8785)."""


def _pointer(path: _Path) -> str:
    """Render a path as an RFC 6901 JSON pointer (``""`` is the root)."""
    from aira_core.diagnostics import json_pointer  # only on the error path

    tokens: list[str | int] = []
    while path is not None:
        path, token = path
        tokens.append(token)
    return json_pointer(tokens[::-1])


def _error(message: str, path: _Path) -> CanonicalJSONError:
    where = _pointer(path) or "root"
    return CanonicalJSONError(f"{message} (at {where})")


class _TooDeepError(CanonicalJSONError):
    """Nesting beyond :data:`MAX_DEPTH` (a reader tells it from a value without a form)."""


def _too_deep(path: _Path, limit: int) -> CanonicalJSONError:
    return _TooDeepError(f"nested deeper than {limit} levels (at {_pointer(path) or 'root'})")


def _format_number(value: float, path: _Path) -> str:
    """Serialise a double as ECMAScript Number.prototype.toString does."""
    if value != value:
        raise _error("NaN is not allowed in canonical JSON", path)
    if value in (float("inf"), float("-inf")):
        name = "Infinity" if value > 0 else "-Infinity"
        raise _error(f"{name} is not allowed in canonical JSON", path)
    if value == 0:
        return "0"  # ES prints -0 as "0" too.

    # repr() gives the shortest digit string that round-trips, which is the
    # digit selection ES mandates; only the layout rules differ.
    text = float.__repr__(value)  # bypass any subclass __repr__
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    # value = int(digits) * 10**exp10
    digits = (int_part + frac_part).lstrip("0")
    exp10 = (int(exp_text) if exp_text else 0) - len(frac_part)
    stripped = digits.rstrip("0")
    exp10 += len(digits) - len(stripped)
    digits = stripped

    # ES notation: value = 0.d1d2...dk * 10**n
    k = len(digits)
    n = exp10 + k
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp_str = ("+" if e >= 0 else "-") + str(abs(e))
    if k == 1:
        return sign + digits + "e" + exp_str
    return sign + digits[0] + "." + digits[1:] + "e" + exp_str


def _format_int(value: int, path: _Path) -> str:
    """Serialise an int as ES would after conversion to an IEEE double."""
    if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return int.__repr__(value)  # bypass IntEnum & co. __str__
    # Refuse to round silently: a different integer would hash the same.
    try:
        as_float = float(value)
    except OverflowError:
        as_float = None
    if as_float is None or int(as_float) != value:
        raise _error(
            f"integer {int.__repr__(value)} is not exactly representable as an IEEE-754 double",
            path,
        )
    return _format_number(as_float, path)


def _format_string(value: str, path: _Path, what: str = "string") -> str:
    # Lone surrogates cannot be encoded as UTF-8 and are not I-JSON.
    if _SURROGATE_RE.search(value):
        raise _error(f"{what} contains a lone surrogate", path)
    return encode_basestring(value)


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be")


class Canonical(bytes):
    """Bytes that :func:`canonical_bytes` produced. Passing them back to
    :func:`canonical_bytes`, :func:`sha256_hex` or :func:`sha256_id` reuses them as they
    are, so a large document is canonicalised once however many times it is hashed or
    signed."""


def canonical_bytes(obj: Any, *, max_depth: int = MAX_DEPTH) -> Canonical:
    """Return the RFC 8785 canonical JSON encoding of ``obj`` as UTF-8 bytes.

    Arrays and objects nest at most ``max_depth`` levels (a caller may ask for less, as
    free values in wire models do).

    Accepts dict (str keys), list, tuple, str, int, float, bool, None,
    pydantic v2 models (serialised via their JSON-mode, by-alias,
    exclude-none dump) and :class:`Canonical` bytes (returned unchanged).
    Raises :class:`CanonicalJSONError` otherwise.
    """
    if isinstance(obj, Canonical):
        return obj
    if type(obj) not in _PLAIN_TYPES and _is_model(obj):
        obj = obj.model_dump(mode="json", by_alias=True, exclude_none=True)
    fast = _fast_path(obj, max_depth)
    if fast is not None:
        return fast
    return _serialise(obj, max_depth)


_MAX_EXACT_INT = 2**53
_PLAIN_TYPES = frozenset({dict, list, tuple, str, int, float, bool, type(None)})


def _is_model(obj: Any) -> bool:
    import pydantic  # pydantic is only needed when a model is passed

    return isinstance(obj, pydantic.BaseModel)


def _plain(obj: Any, limit: int, depth: int = 0) -> Any:
    """``obj`` with integral floats as ints (copy on write), or ``_SLOW`` when some value
    would print differently from ECMAScript in ``json.dumps`` (other floats outside
    [1e-4, 1e16), ints a double cannot hold, non-str or astral keys, other types)."""
    t = type(obj)
    if t is str or t is bool or obj is None:
        return obj
    if t is int:
        return obj if -_MAX_EXACT_INT <= obj <= _MAX_EXACT_INT else _SLOW
    if t is float:
        if obj.is_integer():  # ES prints 20.0 as 20; Python as 20.0
            return int(obj) if -_MAX_EXACT_INT <= obj <= _MAX_EXACT_INT else _SLOW
        magnitude = obj if obj > 0 else -obj
        # Python's repr and ES agree on shortest digits in fixed notation here; NaN fails.
        return obj if 1e-4 <= magnitude < 1e16 else _SLOW
    if (t is dict or t is list or t is tuple) and depth >= limit:
        return _SLOW
    if t is dict:
        out = None
        for key, value in obj.items():
            # Code-point order (sort_keys) equals UTF-16 order unless a key is astral.
            if type(key) is not str or not (key.isascii() or max(key) <= "\uffff"):
                return _SLOW
            new = _plain(value, limit, depth + 1)
            if new is _SLOW:
                return _SLOW
            if new is not value:
                if out is None:
                    out = dict(obj)
                out[key] = new
        return obj if out is None else out
    if t is list or t is tuple:
        items = None
        for i, value in enumerate(obj):
            new = _plain(value, limit, depth + 1)
            if new is _SLOW:
                return _SLOW
            if new is not value:
                if items is None:
                    items = list(obj)
                items[i] = new
        return obj if items is None else items
    return _SLOW


_SLOW = object()


def _fast_path(obj: Any, limit: int = MAX_DEPTH) -> Canonical | None:
    """The C json encoder's output when it is already canonical; None otherwise.

    About four times faster than :func:`_serialise` on model documents, and exact: every
    value it lets through prints the same in json.dumps and in ECMAScript. Anything else,
    including every error case, goes to :func:`_serialise` for its precise message.
    """
    try:
        plain = _plain(obj, limit)
        if plain is _SLOW:
            return None
        text = json.dumps(
            plain, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
        )
        return Canonical(text.encode("utf-8"))
    except (RecursionError, ValueError, TypeError, UnicodeEncodeError):
        return None


def _serialise(obj: Any, limit: int = MAX_DEPTH) -> Canonical:
    """The general RFC 8785 serialiser (iterative; precise errors)."""
    parts: list[str] = []
    # Iterative to survive deep nesting. Stack items: str -> emit verbatim;
    # int -> container id leaving the ancestor set; tuple -> (value, path).
    stack: list[Any] = [(obj, None)]
    ancestors: set[int] = set()  # container ids on the current path (cycles)
    emit = parts.append
    push = stack.append

    while stack:
        item = stack.pop()
        item_type = type(item)
        if item_type is str:
            emit(item)
            continue
        if item_type is int:
            ancestors.discard(item)
            continue

        value, path = item
        if value is None:
            emit("null")
        elif value is True:
            emit("true")
        elif value is False:
            emit("false")
        elif isinstance(value, str):
            emit(_format_string(value, path))
        elif isinstance(value, int):  # bool already handled above
            emit(_format_int(value, path))
        elif isinstance(value, float):
            emit(_format_number(value, path))
        elif isinstance(value, dict):
            oid = id(value)
            if oid in ancestors:
                raise _error("circular reference detected", path)
            if len(ancestors) >= limit:  # the containers on the current path
                raise _too_deep(path, limit)
            keys = list(value)
            for key in keys:
                if not isinstance(key, str):
                    raise _error(
                        f"object keys must be str, got {type(key).__name__} {key!r}",
                        path,
                    )
                if _SURROGATE_RE.search(key):
                    raise _error(f"object key {key!r} contains a lone surrogate", path)
            keys.sort(key=_utf16_key)
            ancestors.add(oid)
            push(oid)
            push("}")
            # Pushed in reverse so they pop in sorted order.
            for index in range(len(keys) - 1, -1, -1):
                key = keys[index]
                push((value[key], (path, key)))
                prefix = "," if index else ""
                push(prefix + encode_basestring(key) + ":")
            emit("{")
        elif isinstance(value, (list, tuple)):
            oid = id(value)
            if oid in ancestors:
                raise _error("circular reference detected", path)
            if len(ancestors) >= limit:
                raise _too_deep(path, limit)
            ancestors.add(oid)
            push(oid)
            push("]")
            for index in range(len(value) - 1, -1, -1):
                push((value[index], (path, index)))
                if index:
                    push(",")
            emit("[")
        else:
            # Imported lazily: only needed for non-plain values.
            import pydantic

            if isinstance(value, pydantic.BaseModel):
                dumped = value.model_dump(mode="json", by_alias=True, exclude_none=True)
                push((dumped, path))
            else:
                cls = type(value)
                raise _error(
                    f"unsupported type {cls.__module__}.{cls.__qualname__}",
                    path,
                )

    return Canonical("".join(parts).encode("utf-8"))


def sha256_hex(obj: Any) -> str:
    """Return the hex SHA-256 of ``canonical_bytes(obj)``."""
    return hashlib.sha256(canonical_bytes(obj)).hexdigest()


def sha256_id(prefix: str, obj: Any) -> str:
    """Return a typed content id ``"<prefix>:sha256:<hex>"`` for ``obj``.

    ``prefix`` names the kind of object (e.g. ``"rev"``) and must match
    ``[a-z][a-z0-9_-]*`` so ids stay unambiguous to parse.
    """
    if not isinstance(prefix, str) or not _PREFIX_RE.fullmatch(prefix):
        raise ValueError(f"id prefix must match [a-z][a-z0-9_-]*, got {prefix!r}")
    return f"{prefix}:sha256:{sha256_hex(obj)}"


def sha256_bytes_hex(data: bytes) -> str:
    """Return the hex SHA-256 of raw ``data`` (for non-JSON inputs)."""
    return hashlib.sha256(data).hexdigest()


# -- reading ----------------------------------------------------------------------------------


class StrictJSONError(CanonicalJSONError):
    """Input that :func:`loads_strict` refuses. ``kind`` says why, for callers that give each
    reason its own code: ``"syntax"`` (not JSON, not UTF-8, NaN/Infinity, too deep),
    ``"duplicate-key"`` or ``"not-canonical"`` (a value without an RFC 8785 form)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise StrictJSONError(f"duplicate key {key!r}", "duplicate-key")
        obj[key] = value
    return obj


def _no_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not valid JSON", "syntax")


def _exact_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # beyond Python's digit limit, far beyond what a double holds exactly
        digits = len(text.lstrip("-"))
        raise StrictJSONError(
            f"an integer of {digits} digits has no exact JSON value", "not-canonical"
        ) from None


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):  # 1e999 overflows; JSON has no Infinity
        raise StrictJSONError(f"number {text} is out of range", "syntax")
    return value


def loads_strict(data: bytes | str, name: str = "the input") -> tuple[Any, Canonical]:
    """Untrusted JSON read as strictly as it will be written: ``json.loads`` that refuses
    duplicate keys (two readers could see two different values), NaN/Infinity, nesting
    deeper than :data:`MAX_DEPTH`, text that is not UTF-8 and values without an RFC 8785
    form (e.g. integers a double cannot hold). Returns the value and its canonical bytes,
    which hashes and signature checks reuse; :class:`StrictJSONError` otherwise, its message
    naming the input as ``name``."""
    try:
        # UTF-8 only (RFC 8259 §8.1): json.loads would also guess UTF-16 and UTF-32 from bytes
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
        # a BOM some editors write: RFC 8259 lets readers skip it
        text = text.removeprefix("\ufeff")
        value = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
            parse_int=_exact_int,
        )
        return value, canonical_bytes(value)
    except StrictJSONError as exc:
        raise StrictJSONError(f"{name}: {exc}", exc.kind) from None
    except _TooDeepError:  # however deep: json.loads itself gives up at about 1,000 levels
        raise StrictJSONError(
            f"{name} is nested deeper than {MAX_DEPTH} levels", "syntax"
        ) from None
    except CanonicalJSONError as exc:
        raise StrictJSONError(f"{name}: {exc}", "not-canonical") from None
    except RecursionError:
        raise StrictJSONError(
            f"{name} is nested deeper than {MAX_DEPTH} levels", "syntax"
        ) from None
    except UnicodeDecodeError as exc:
        raise StrictJSONError(f"{name} is not UTF-8: {exc.reason}", "syntax") from None
    except json.JSONDecodeError as exc:
        raise StrictJSONError(
            f"{name} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", "syntax"
        ) from None
