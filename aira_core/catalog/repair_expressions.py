"""The expressions of a repair's declarative patch template (``patchTemplate``,
:mod:`aira_core.runtime.repairs`): a small whitelist evaluator over Python's ``ast``.

An expression uses ``args`` (the failing step's arguments as written), ``expected`` and
``actual`` (the diagnostic's typed values): literals, arithmetic on numbers, comparisons,
``and`` / ``or`` / ``not``, ``a if c else b``, ``x.key`` / ``x["key"]`` / ``x[0]`` on JSON
values, and the functions ``min``, ``max``, ``abs``, ``round``, ``value`` (a number, or a
``{"value", "unit"}`` quantity in its base unit: mm, deg). Nothing else parses.

It lives in the catalog layer because lint checks templates; it is deliberately minimal (a
workflow expression language may later replace it with one shared evaluator).
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from aira_core.canonical import CanonicalJSONError, canonical_bytes
from aira_core.contracts.amir import UNITS
from aira_core.contracts.capability import RepairTemplate

NAMES = ("args", "expected", "actual")
"""The names a template expression may use."""

MAX_EXPRESSION = 500
"""Characters of one expression (the contract bounds it too)."""
_MAX_NODES = 200


class ExpressionError(ValueError):
    """An expression that does not parse, uses what the whitelist does not hold, or fails."""


def _value(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, dict)):
        raise ExpressionError(f"value() takes a number or a {{value, unit}} quantity, not {x!r}")
    if isinstance(x, dict):
        v, unit = x.get("value"), x.get("unit")
        factor = next((t[unit] for t in UNITS.values() if unit in t), None)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or factor is None:
            raise ExpressionError(f"value() needs a numeric value and a known unit, not {x!r}")
        return v * factor
    return float(x)


def _number(*xs: Any) -> None:
    for x in xs:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise ExpressionError(f"arithmetic takes numbers, not {x!r}")


def _round(x: Any, digits: Any = 0) -> float:
    _number(x, digits)
    if not isinstance(digits, int) or not 0 <= digits <= 12:
        raise ExpressionError("round() takes 0 to 12 digits")
    return round(x, digits)


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def call(*xs: Any) -> Any:
        if not xs:
            raise ExpressionError("min()/max() need at least one number")
        _number(*xs)
        return pick(xs)

    return call


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": _extreme(min),
    "max": _extreme(max),
    "abs": lambda x: (_number(x), abs(x))[1],
    "round": _round,
    "value": _value,
}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_NODES = (
    ast.Expression,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Attribute,
    ast.Subscript,
    ast.BinOp,
    ast.UnaryOp,
    ast.USub,
    ast.UAdd,
    ast.Not,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    *_BINARY,
    *_COMPARE,
)


def compile_expression(text: str) -> ast.Expression:
    """``text`` parsed and checked against the whitelist, or :class:`ExpressionError`."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_EXPRESSION:
        raise ExpressionError(f"an expression is 1 to {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"does not parse: {exc.msg}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > _MAX_NODES:
        raise ExpressionError(f"more than {_MAX_NODES} nodes")
    for node in nodes:
        if not isinstance(node, _NODES):
            raise ExpressionError(f"{type(node).__name__} is not allowed")
        if isinstance(node, ast.Constant) and not (
            node.value is None or isinstance(node.value, (bool, int, float, str))
        ):
            raise ExpressionError(f"constant {node.value!r} is not allowed")
        if isinstance(node, ast.Name) and node.id not in NAMES and node.id not in _FUNCTIONS:
            raise ExpressionError(f"unknown name {node.id!r}; known: {', '.join(NAMES)}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ExpressionError(f"attribute {node.attr!r} is not allowed")
        if isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS or node.keywords
        ):
            raise ExpressionError("only min, max, abs, round and value may be called, positionally")
    callees = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    for node in nodes:  # a function's name only as the callee, never as a value
        if isinstance(node, ast.Name) and node.id in _FUNCTIONS and id(node) not in callees:
            raise ExpressionError(f"{node.id} is a function: call it")
    return tree


def _get(container: Any, key: Any) -> Any:
    if isinstance(container, dict) and isinstance(key, str):
        if key not in container:
            raise ExpressionError(f"no key {key!r}")
        return container[key]
    if isinstance(container, list) and isinstance(key, int) and not isinstance(key, bool):
        if not -len(container) <= key < len(container):
            raise ExpressionError(f"index {key} out of range")
        return container[key]
    raise ExpressionError(f"cannot look up {key!r} in {type(container).__name__}")


def _eval(node: ast.AST, names: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, names)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        return _get(_eval(node.value, names), node.attr)
    if isinstance(node, ast.Subscript):
        return _get(_eval(node.value, names), _eval(node.slice, names))
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, names), _eval(node.right, names)
        _number(left, right)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ExpressionError("division by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        x = _eval(node.operand, names)
        if isinstance(node.op, ast.Not):
            return not x
        _number(x)
        return -x if isinstance(node.op, ast.USub) else x
    if isinstance(node, ast.BoolOp):
        result: Any = None
        for part in node.values:
            result = _eval(part, names)
            if isinstance(node.op, ast.And) != bool(result):
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, names)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _eval(comparator, names)
            if type(op) in (ast.Lt, ast.LtE, ast.Gt, ast.GtE):
                _number(left, right)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, names) else node.orelse, names)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)  # compile_expression allows nothing else
        return _FUNCTIONS[node.func.id](*(_eval(a, names) for a in node.args))
    raise ExpressionError(f"{type(node).__name__} is not allowed")  # pragma: no cover


def evaluate(text: str, names: Mapping[str, Any]) -> Any:
    """The JSON value of expression ``text`` with ``names`` bound, or :class:`ExpressionError`."""
    try:
        result = _eval(compile_expression(text), names)
    except (OverflowError, RecursionError, TypeError, ValueError) as exc:
        if isinstance(exc, ExpressionError):
            raise
        raise ExpressionError(f"{type(exc).__name__}: {exc}") from None
    if isinstance(result, float) and not math.isfinite(result):
        raise ExpressionError("the result is not a finite number")
    try:
        canonical_bytes(result)
    except CanonicalJSONError as exc:
        raise ExpressionError(f"the result is not plain JSON: {exc}") from None
    return result


def template_problems(template: RepairTemplate) -> list[str]:
    """What is wrong with a template's expressions (empty: well-formed)."""
    found = []
    for where, text in [
        ("when", template.when),
        *((f"set/{k}", v) for k, v in template.set.items()),
    ]:
        if text is None:
            continue
        try:
            compile_expression(text)
        except ExpressionError as exc:
            found.append(f"{where}: {exc}")
    return found
