"""How a JSON value breaks a JSON Schema (draft 2020-12), in python-jsonschema's words.

A plan's arguments are checked against each capability's input schema on every ``plan
check`` and ``plan apply``. Most are valid, and importing python-jsonschema (its format
checkers and reference resolver) is a tenth of a warm command's start: the Rust validator
(``jsonschema_rs``, the one MCP's bound tools use) answers "valid" first, and python-jsonschema,
whose messages and paths every diagnostic is written from, is asked only for a value that
has errors (or a schema the Rust one cannot compile).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["schema_errors"]


def schema_errors(schema: Mapping[str, Any], value: Any) -> list[Any]:
    """Every ``jsonschema.ValidationError`` of ``value`` against ``schema``, ordered by
    where it is (``error.path``); empty when it is valid."""
    if _plain(value):
        try:
            import jsonschema_rs

            if jsonschema_rs.Draft202012Validator(schema).is_valid(value):
                return []
        except Exception:
            pass  # a schema it cannot compile: the reference decides
    from jsonschema import Draft202012Validator

    errors = Draft202012Validator(schema).iter_errors(value)
    return sorted(errors, key=lambda e: [str(p) for p in e.path])


def _plain(value: Any, depth: int = 0) -> bool:
    """Plain JSON (dict, list, str, number, bool, None), which both validators read alike; a
    tuple or any other Python value is left to the reference (the Rust one reads a tuple as
    an array, python-jsonschema does not)."""
    if depth > 64:
        return False
    if value is None or type(value) in (str, int, float, bool):
        return True
    if type(value) is list:
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    return False
