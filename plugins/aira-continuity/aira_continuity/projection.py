"""The Guard's projection hash, byte for byte.

Execution Fidelity Guard 0.2.2 binds a provider document only if its ``snapshot_sha256`` is
``sha256(projection)``, and names a bare TaskContractLite ``lite:`` + the first 20 hex digits
of the same hash. Its hash is SHA-256 over ``JSON.stringify`` of the value with object keys
sorted recursively by ``Array.prototype.sort`` (UTF-16 code units), array order kept, no
whitespace, non-ASCII raw, only ``"``, ``\\`` and controls below U+0020 escaped, UTF-8,
lowercase hex.

Where that coincides with :func:`aira_core.canonical.canonical_bytes` (RFC 8785), this module
reuses it, so the project keeps one serialiser:

- key order: RFC 8785 sorts by UTF-16 code units too (``_utf16_key``), so an astral key
  (U+1F600, D83D DE00) comes before U+FF61 in both, unlike Python's code-point sort;
- strings: RFC 8785 serialises them exactly as ``JSON.stringify`` does;
- no whitespace, UTF-8.

They differ only outside the projection's domain (objects, arrays and strings), which is
refused with ``CONTRACT_OUTSIDE_DOMAIN`` instead of being hashed in a way that might not be
the Guard's:

- numbers, booleans, null: the projection holds none (both format numbers by the ES
  algorithm, but nothing needs it and a JSON number read by Python may not be the double
  the Guard read);
- lone surrogates: ``JSON.stringify`` escapes each as a ``\\u`` escape (``\\ud800``);
  RFC 8785 has no form for them;
- array-index-like keys (``"2"``, ``"10"``): a JavaScript object emits them first, in
  numeric order, before the sorted rest; RFC 8785 sorts them as strings;
- a top level that is no object: the Guard hashes a bare string as its raw UTF-8, without
  quotes. :func:`requirement_ref` is the one place that form is needed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aira_continuity.errors import (
    CONTRACT_HASH_MISMATCH,
    CONTRACT_OUTSIDE_DOMAIN,
    WireError,
    problem,
)
from aira_core.canonical import MAX_DEPTH, canonical_bytes, sha256_bytes_hex
from aira_core.diagnostics import json_pointer

__all__ = [
    "check_snapshot",
    "lite_ref",
    "projection_bytes",
    "projection_sha256",
    "requirement_ref",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
# ECMAScript's CanonicalNumericIndexString for array indices: 0 .. 2**32 - 2, no sign, no
# leading zero. Such keys are enumerated before all others by a JS object.
_INDEX_KEY = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_INDEX = 2**32 - 2


def _outside(message: str, path: list[str | int]) -> WireError:
    return WireError([problem(CONTRACT_OUTSIDE_DOMAIN, message, json_pointer(path))])


def _check_domain(value: Any) -> None:
    """Refuse what the Guard's bytes and RFC 8785's could disagree on (module docstring)."""
    if not isinstance(value, Mapping):
        raise _outside(
            f"the projection must be a JSON object, not {_kind(value)}: the Guard hashes "
            "anything else in another form",
            [],
        )
    # Iterative: a hostile value nested thousands deep must be refused, not recursed into.
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise _outside(f"nested deeper than {MAX_DEPTH} levels", path)
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise _outside("a string holds a lone surrogate, which has no UTF-8 form", path)
        elif isinstance(item, Mapping):
            for key, member in item.items():
                if not isinstance(key, str):
                    raise _outside(f"an object key must be a string, not {_kind(key)}", path)
                if _SURROGATE.search(key):
                    raise _outside("an object key holds a lone surrogate", path)
                if _INDEX_KEY.fullmatch(key) and int(key) <= _MAX_INDEX:
                    raise _outside(
                        f"the key {key!r} is array-index-like: JavaScript orders it before "
                        "the sorted keys, RFC 8785 among them",
                        [*path, key],
                    )
                stack.append((member, [*path, key]))
        elif isinstance(item, list | tuple):
            stack.extend((member, [*path, i]) for i, member in enumerate(item))
        else:
            raise _outside(
                f"{_kind(item)} is outside the projection, which holds only objects, "
                "arrays and strings",
                path,
            )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _plain(projection: Any) -> Any:
    # A wire model (TaskContractLite) hashes as its JSON value; pydantic is not imported here.
    dump = getattr(projection, "model_dump", None)
    return dump(mode="json") if callable(dump) else projection


def projection_bytes(projection: Any) -> bytes:
    """The bytes the Guard hashes for ``projection`` (a JSON object or a TaskContractLite);
    ``CONTRACT_OUTSIDE_DOMAIN`` for a value outside the projection's domain."""
    value = _plain(projection)
    _check_domain(value)
    return canonical_bytes(value)


def projection_sha256(projection: Any) -> str:
    """The Guard's ``sha256(projection)``: 64 lowercase hex digits."""
    return sha256_bytes_hex(projection_bytes(projection))


def lite_ref(projection: Any) -> str:
    """The Guard's identity of a bare TaskContractLite: ``lite:`` + 20 hex digits."""
    return "lite:" + projection_sha256(projection)[:20]


def requirement_ref(index: int, requirement: str) -> str:
    """The Guard's reference to a completion-evidence requirement (``requirement_refs`` of an
    evidence record): ``requirement:<index>:`` + 16 hex digits of SHA-256 over the raw,
    untrimmed requirement text (a bare string: its UTF-8, no quotes)."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise _outside(f"a requirement index is an integer >= 0, not {index!r}", [])
    if not isinstance(requirement, str):
        raise _outside(f"a requirement is a string, not {_kind(requirement)}", [])
    if _SURROGATE.search(requirement):
        # the Guard would hash U+FFFD in its place: two texts, one reference
        raise _outside("the requirement holds a lone surrogate", [])
    return f"requirement:{index}:{sha256_bytes_hex(requirement.encode('utf-8'))[:16]}"


def check_snapshot(document: Mapping[str, Any] | Any) -> str:
    """The projection hash of a provider document ``{envelope, projection}`` (a mapping or a
    ProviderDocument) if its ``envelope.snapshot_sha256`` is that hash;
    ``CONTRACT_HASH_MISMATCH`` otherwise (also when it is missing)."""
    value = _plain(document)
    if not isinstance(value, Mapping) or not isinstance(value.get("envelope"), Mapping):
        raise WireError(
            [problem(CONTRACT_HASH_MISMATCH, "a provider document has no envelope", "/envelope")]
        )
    actual = projection_sha256(value.get("projection"))
    stated = value["envelope"].get("snapshot_sha256")
    if stated != actual:
        shown = "missing" if stated is None else repr(stated)
        raise WireError(
            [
                problem(
                    CONTRACT_HASH_MISMATCH,
                    f"snapshot_sha256 is {shown}, the projection hashes to {actual}",
                    "/envelope/snapshot_sha256",
                )
            ]
        )
    return actual
