"""The one expression language of Aira's declarative data: small, side-effect free, bounded.

Two contexts use it, each passing in the names an expression may read: a workflow template
(:mod:`aira_core.catalog.workflows`: the workflow's parameters and tables, such as
``max(2 * clearance[size], 6)``) and a repair's patch template
(:mod:`aira_core.runtime.repairs`: ``args``, ``expected``, ``actual``, such as
``round(expected.maxRadius * 0.9, 2)``). The text is parsed with Python's own parser
(:func:`ast.parse`, ``mode="eval"``) and the tree is then evaluated by :func:`evaluate` here,
node by node, against a whitelist: nothing is ever compiled or passed to ``eval``. What the
language has (docs/workflows.md, The expression language):

- literals: numbers, strings, ``True`` / ``False`` (also ``true`` / ``false``), ``None``,
  lists ``[a, b]``;
- names: the ones the caller passes, and ``pi``; nothing else;
- arithmetic ``+ - * / // % **`` and unary ``-``/``+`` on numbers (``+`` also joins two
  strings or two lists); comparisons ``< <= > >= == !=`` (chained), ``x is None`` and
  ``x is not None``; ``and``, ``or``, ``not`` (on booleans); the conditional
  ``a if cond else b``;
- lookups ``table[key]``, ``row["field"]``, ``row.field`` (the same as ``row["field"]``),
  ``list[i]``;
- the calls ``min max abs round floor ceil sqrt len range value`` by name (no other callee);
- one-generator list comprehensions ``[f(i) for i in range(n) if cond]``.

Bounds: :data:`MAX_CHARS` characters of source, :data:`MAX_DEPTH` levels of nesting,
:data:`MAX_STEPS` evaluated nodes (a comprehension's body counts once per item; shared by
all the expressions of one workflow step's expansion),
:data:`MAX_ITEMS` items in a list or characters in a string, :data:`MAX_MADE` items and
characters made in all (a list of lists counts every inner list; shared like the steps),
numbers finite and integers
below 2**53, the result plain JSON. Every refusal is an :class:`ExpressionError` with a
stable code.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Collection, Mapping
from typing import Any

from aira_core.canonical import CanonicalJSONError, canonical_bytes
from aira_core.contracts.amir import UNITS

MAX_CHARS = 1000
MAX_DEPTH = 32
MAX_STEPS = 20_000
MAX_ITEMS = 1000
MAX_MADE = 20_000
"""List items and string characters the expressions of one expansion may make in all: a
list of lists is many lists of at most :data:`MAX_ITEMS` each."""
MAX_INT = 2**53

EXPRESSION_SYNTAX = "EXPRESSION_SYNTAX"
EXPRESSION_TOO_LONG = "EXPRESSION_TOO_LONG"
EXPRESSION_TOO_DEEP = "EXPRESSION_TOO_DEEP"
EXPRESSION_TOO_COSTLY = "EXPRESSION_TOO_COSTLY"
EXPRESSION_UNSUPPORTED = "EXPRESSION_UNSUPPORTED"
EXPRESSION_NAME_UNKNOWN = "EXPRESSION_NAME_UNKNOWN"
EXPRESSION_TYPE = "EXPRESSION_TYPE"
EXPRESSION_DIVISION_BY_ZERO = "EXPRESSION_DIVISION_BY_ZERO"
EXPRESSION_NOT_FINITE = "EXPRESSION_NOT_FINITE"
EXPRESSION_KEY_UNKNOWN = "EXPRESSION_KEY_UNKNOWN"

CONSTANTS: dict[str, Any] = {"pi": math.pi, "true": True, "false": False}
"""Names every context has (``true`` / ``false``: for authors who write JSON)."""


class ExpressionError(Exception):
    """An expression refused: ``code`` is one of the ``EXPRESSION_*`` codes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: Any, what: str) -> int | float:
    if not _is_number(value):
        raise ExpressionError(EXPRESSION_TYPE, f"{what} takes numbers, not {_kind(value)}")
    return value  # type: ignore[no-any-return]


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if _is_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _checked(value: Any) -> Any:
    """``value`` if it is within bounds (finite, integers below 2**53, short sequences)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError(EXPRESSION_NOT_FINITE, f"the result {value} is not finite")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_INT:
        raise ExpressionError(EXPRESSION_NOT_FINITE, "an integer result reaches 2**53")
    if isinstance(value, list | str) and len(value) > MAX_ITEMS:
        raise ExpressionError(
            EXPRESSION_TOO_COSTLY, f"a list or string of more than {MAX_ITEMS} items"
        )
    return value


def _div(a: Any, b: Any, op: Callable[[Any, Any], Any], name: str) -> Any:
    a, b = _number(a, name), _number(b, name)
    if b == 0:
        raise ExpressionError(EXPRESSION_DIVISION_BY_ZERO, f"{name} by zero")
    return op(a, b)


def _pow(a: Any, b: Any) -> Any:
    a, b = _number(a, "**"), _number(b, "**")
    try:
        # float power: an integer power of integers could take unbounded time and memory
        result = math.pow(a, b)
    except (OverflowError, ValueError):
        raise ExpressionError(EXPRESSION_NOT_FINITE, f"{a} ** {b} is not finite") from None
    if isinstance(a, int) and isinstance(b, int) and b >= 0 and abs(result) < MAX_INT:
        return int(result)
    return result


def _add(a: Any, b: Any) -> Any:
    if (isinstance(a, str) and isinstance(b, str)) or (isinstance(a, list) and isinstance(b, list)):
        return a + b
    return _number(a, "+") + _number(b, "+")


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: _add,
    ast.Sub: lambda a, b: _number(a, "-") - _number(b, "-"),
    ast.Mult: lambda a, b: _number(a, "*") * _number(b, "*"),
    ast.Div: lambda a, b: _div(a, b, operator.truediv, "division"),
    ast.FloorDiv: lambda a, b: _div(a, b, operator.floordiv, "division"),
    ast.Mod: lambda a, b: _div(a, b, operator.mod, "modulo"),
    ast.Pow: _pow,
}


def _compare(op: ast.cmpop, a: Any, b: Any) -> bool:
    if isinstance(op, ast.Is | ast.IsNot):  # parse() allows only `is None` / `is not None`
        return (a is None) == isinstance(op, ast.Is)
    if isinstance(op, ast.Eq):
        return bool(a == b)
    if isinstance(op, ast.NotEq):
        return bool(a != b)
    if not (_is_number(a) and _is_number(b)) and not (isinstance(a, str) and isinstance(b, str)):
        raise ExpressionError(EXPRESSION_TYPE, f"cannot order {_kind(a)} against {_kind(b)}")
    table = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
    fn = table.get(type(op))
    if fn is None:
        raise ExpressionError(EXPRESSION_UNSUPPORTED, f"comparison {type(op).__name__}")
    return bool(fn(a, b))


def _round(x: Any, digits: Any = 0) -> Any:
    x = _number(x, "round")
    if not isinstance(digits, int) or isinstance(digits, bool) or not -15 <= digits <= 15:
        raise ExpressionError(EXPRESSION_TYPE, "round's digits are an integer in [-15, 15]")
    return round(x) if digits == 0 else round(x, digits)


def _range(*args: Any) -> list[int]:
    if not 1 <= len(args) <= 3 or not all(
        isinstance(a, int) and not isinstance(a, bool) for a in args
    ):
        raise ExpressionError(EXPRESSION_TYPE, "range takes one to three integers")
    if len(args) == 3 and args[2] == 0:
        raise ExpressionError(EXPRESSION_TYPE, "range's step is not zero")
    r = range(*args)
    if len(r) > MAX_ITEMS:
        raise ExpressionError(EXPRESSION_TOO_COSTLY, f"range of more than {MAX_ITEMS} items")
    return list(r)


def _minmax(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
        if not items:
            raise ExpressionError(EXPRESSION_TYPE, f"{name} of nothing")
        return fn(_number(v, name) for v in items)

    return call


def _sqrt(x: Any) -> float:
    x = _number(x, "sqrt")
    if x < 0:
        raise ExpressionError(EXPRESSION_NOT_FINITE, f"sqrt({x}) is not a real number")
    return math.sqrt(x)


def _len(x: Any) -> int:
    if not isinstance(x, list | str | dict):
        raise ExpressionError(EXPRESSION_TYPE, f"len of {_kind(x)}")
    return len(x)


def _value(x: Any) -> int | float:
    """A number, or a ``{"value", "unit"}`` quantity in its base unit (mm, deg)."""
    if isinstance(x, dict):
        v, unit = x.get("value"), x.get("unit")
        factor = next((t[unit] for t in UNITS.values() if unit in t), None)
        if not _is_number(v) or factor is None:
            raise ExpressionError(
                EXPRESSION_TYPE, "value takes a quantity with a numeric value and a known unit"
            )
        return v * factor
    return _number(x, "value")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": _minmax(min, "min"),
    "max": _minmax(max, "max"),
    "abs": lambda x: abs(_number(x, "abs")),
    "round": _round,
    "floor": lambda x: math.floor(_number(x, "floor")),
    "ceil": lambda x: math.ceil(_number(x, "ceil")),
    "sqrt": _sqrt,
    "len": _len,
    "range": _range,
    "value": _value,
}


def parse(source: Any) -> ast.expr:
    """The checked tree of ``source``: syntax, length, depth and the whitelist of node types
    (names are checked on evaluation, or by :func:`names`)."""
    if not isinstance(source, str):
        raise ExpressionError(EXPRESSION_SYNTAX, f"an expression is a string, not {_kind(source)}")
    if len(source) > MAX_CHARS:
        raise ExpressionError(
            EXPRESSION_TOO_LONG,
            f"the expression has {len(source)} characters; at most {MAX_CHARS}",
        )
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        why = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ExpressionError(EXPRESSION_SYNTAX, f"{source[:80]!r} does not parse: {why}") from None
    _check_tree(tree.body, 1)
    return tree.body


_ALLOWED = (
    ast.Attribute,
    ast.Constant,
    ast.Name,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Subscript,
    ast.Call,
    ast.List,
    ast.ListComp,
)


def _check_tree(node: ast.AST, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ExpressionError(EXPRESSION_TOO_DEEP, f"the expression nests deeper than {MAX_DEPTH}")
    if not isinstance(node, _ALLOWED):
        raise ExpressionError(
            EXPRESSION_UNSUPPORTED, f"{_describe(node)} is not part of the expression language"
        )
    if isinstance(node, ast.Constant) and not (
        node.value is None or isinstance(node.value, int | float | str | bool)
    ):
        raise ExpressionError(EXPRESSION_UNSUPPORTED, f"the constant {node.value!r}")
    if isinstance(node, ast.BinOp) and type(node.op) not in _BINARY:
        raise ExpressionError(EXPRESSION_UNSUPPORTED, f"the operator {type(node.op).__name__}")
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
        raise ExpressionError(EXPRESSION_UNSUPPORTED, f"the operator {type(node.op).__name__}")
    if isinstance(node, ast.Compare) and any(isinstance(o, ast.In | ast.NotIn) for o in node.ops):
        raise ExpressionError(EXPRESSION_UNSUPPORTED, "in / not in comparisons")
    if isinstance(node, ast.Compare) and any(
        isinstance(o, ast.Is | ast.IsNot)
        and not (isinstance(right, ast.Constant) and right.value is None)
        for o, right in zip(node.ops, node.comparators, strict=True)
    ):  # identity of anything but None is an implementation detail of Python
        raise ExpressionError(EXPRESSION_UNSUPPORTED, "is / is not other than `is None`")
    if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        raise ExpressionError(EXPRESSION_UNSUPPORTED, f"the attribute {node.attr!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExpressionError(
                EXPRESSION_UNSUPPORTED,
                f"calling {_describe(node.func)}: only "
                f"{', '.join(sorted(FUNCTIONS))} may be called",
            )
        if node.keywords:
            raise ExpressionError(EXPRESSION_UNSUPPORTED, "keyword arguments")
        for arg in node.args:
            _check_tree(arg, depth + 1)
        return
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
        raise ExpressionError(EXPRESSION_UNSUPPORTED, "slices")
    if isinstance(node, ast.ListComp):
        if len(node.generators) != 1:
            raise ExpressionError(
                EXPRESSION_UNSUPPORTED, "a comprehension with several for clauses"
            )
        gen = node.generators[0]
        if not isinstance(gen.target, ast.Name) or gen.is_async:
            raise ExpressionError(
                EXPRESSION_UNSUPPORTED, "a comprehension target that is not a name"
            )
        for sub in (node.elt, gen.iter, *gen.ifs):
            _check_tree(sub, depth + 1)
        return
    for child in ast.iter_child_nodes(node):
        if isinstance(
            child, ast.expr_context | ast.operator | ast.unaryop | ast.cmpop | ast.boolop
        ):
            continue
        _check_tree(child, depth + 1)


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"a method or attribute .{node.attr}"
    if isinstance(node, ast.Name):
        return f"{node.id!r}"
    return {
        "Lambda": "a lambda",
        "Dict": "a dict display",
        "Set": "a set display",
        "Tuple": "a tuple",
        "NamedExpr": "an assignment (:=)",
        "GeneratorExp": "a generator",
        "DictComp": "a dict comprehension",
        "SetComp": "a set comprehension",
        "JoinedStr": "an f-string",
        "Starred": "*unpacking",
        "Await": "await",
        "Yield": "yield",
    }.get(type(node).__name__, type(node).__name__)


def names(tree: ast.expr) -> set[str]:
    """The free names ``tree`` reads (comprehension variables excluded): what a lint checks
    against the declared parameters and tables."""
    out: set[str] = set()

    def walk(node: ast.AST, bound: frozenset[str]) -> None:
        if isinstance(node, ast.Name) and node.id not in bound:
            out.add(node.id)
        if isinstance(node, ast.Call):
            for arg in node.args:
                walk(arg, bound)
            return
        if isinstance(node, ast.ListComp):
            gen = node.generators[0]
            walk(gen.iter, bound)
            inner = bound | {gen.target.id} if isinstance(gen.target, ast.Name) else bound
            for sub in (node.elt, *gen.ifs):
                walk(sub, inner)
            return
        for child in ast.iter_child_nodes(node):
            walk(child, bound)

    walk(tree, frozenset())
    return out


class Budget:
    """Evaluation steps left, and list items and string characters left to make, shared by
    the expressions of one expansion (so a template of many expressions costs no more than
    :data:`MAX_STEPS` and makes no more than :data:`MAX_MADE` in all)."""

    def __init__(self, steps: int = MAX_STEPS, made: int = MAX_MADE) -> None:
        self.steps = steps
        self.made = made


_MAKERS = (ast.List, ast.ListComp, ast.BinOp, ast.Call)
"""The nodes whose list or string value is a new one (a name or a lookup reads one)."""


class _Evaluator:
    def __init__(self, env: Mapping[str, Any], budget: Budget) -> None:
        self.env = env
        self.budget = budget

    def eval(self, node: ast.expr, local: Mapping[str, Any]) -> Any:
        self.budget.steps -= 1
        if self.budget.steps < 0:
            raise ExpressionError(
                EXPRESSION_TOO_COSTLY, f"the expressions take more than {MAX_STEPS} steps"
            )
        value = _checked(self._eval(node, local))
        if isinstance(value, list | str) and isinstance(node, _MAKERS):
            self.budget.made -= len(value)
            if self.budget.made < 0:
                raise ExpressionError(
                    EXPRESSION_TOO_COSTLY,
                    f"the expressions make more than {MAX_MADE} list items and characters",
                )
        return value

    def _eval(self, node: ast.expr, local: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            for scope in (local, self.env, CONSTANTS):
                if node.id in scope:
                    return scope[node.id]
            raise ExpressionError(EXPRESSION_NAME_UNKNOWN, f"unknown name {node.id!r}")
        if isinstance(node, ast.BinOp):
            a, b = self.eval(node.left, local), self.eval(node.right, local)
            return _BINARY[type(node.op)](a, b)
        if isinstance(node, ast.UnaryOp):
            value = self.eval(node.operand, local)
            if isinstance(node.op, ast.Not):
                return not _truth(value)
            value = _number(value, "unary " + ("-" if isinstance(node.op, ast.USub) else "+"))
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            for sub in node.values:
                if _truth(self.eval(sub, local)) != is_and:
                    return not is_and
            return is_and
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, local)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self.eval(right_node, local)
                if not _compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            test = _truth(self.eval(node.test, local))
            return self.eval(node.body if test else node.orelse, local)
        if isinstance(node, ast.Subscript):
            return _subscript(self.eval(node.value, local), self.eval(node.slice, local))
        if isinstance(node, ast.Attribute):
            container = self.eval(node.value, local)
            if not isinstance(container, dict):
                raise ExpressionError(
                    EXPRESSION_TYPE, f"cannot read .{node.attr} of {_kind(container)}"
                )
            return _subscript(container, node.attr)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            args = [self.eval(a, local) for a in node.args]
            try:
                return FUNCTIONS[node.func.id](*args)
            except TypeError:
                raise ExpressionError(
                    EXPRESSION_TYPE, f"{node.func.id} does not take {len(args)} argument(s)"
                ) from None
            except (OverflowError, ValueError) as exc:
                raise ExpressionError(EXPRESSION_NOT_FINITE, f"{node.func.id}: {exc}") from None
        if isinstance(node, ast.List):
            return [self.eval(e, local) for e in node.elts]
        if isinstance(node, ast.ListComp):
            gen = node.generators[0]
            items = self.eval(gen.iter, local)
            if not isinstance(items, list):
                raise ExpressionError(EXPRESSION_TYPE, f"a comprehension over {_kind(items)}")
            assert isinstance(gen.target, ast.Name)
            out = []
            for item in items:
                inner = {**local, gen.target.id: item}
                if all(_truth(self.eval(c, inner)) for c in gen.ifs):
                    out.append(self.eval(node.elt, inner))
            return out
        raise ExpressionError(EXPRESSION_UNSUPPORTED, _describe(node))  # parse() refuses it


def _truth(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ExpressionError(EXPRESSION_TYPE, f"a condition is a boolean, not {_kind(value)}")
    return value


def _subscript(container: Any, key: Any) -> Any:
    if isinstance(container, dict):
        if not isinstance(key, str):
            raise ExpressionError(
                EXPRESSION_TYPE, f"a table is indexed by a string, not {_kind(key)}"
            )
        if key not in container:
            shown = ", ".join(sorted(container)[:12])
            raise ExpressionError(EXPRESSION_KEY_UNKNOWN, f"no key {key[:80]!r}; keys: {shown}")
        return container[key]
    if isinstance(container, list):
        if not isinstance(key, int) or isinstance(key, bool):
            raise ExpressionError(
                EXPRESSION_TYPE, f"a list is indexed by an integer, not {_kind(key)}"
            )
        if not -len(container) <= key < len(container):
            raise ExpressionError(
                EXPRESSION_KEY_UNKNOWN, f"index {key} is outside a list of {len(container)}"
            )
        return container[key]
    raise ExpressionError(EXPRESSION_TYPE, f"cannot index {_kind(container)}")


def check(source: Any, known: Collection[str]) -> ast.expr:
    """The checked tree of ``source`` (:func:`parse`) that reads no name but ``known`` and
    the constants: what lint asks of an expression before anything evaluates it."""
    tree = parse(source)
    unknown = sorted(names(tree) - set(known) - set(CONSTANTS))
    if unknown:
        raise ExpressionError(
            EXPRESSION_NAME_UNKNOWN,
            f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not known here; "
            f"known: {', '.join(sorted(known)) or 'none'}",
        )
    return tree


def evaluate(source: Any, env: Mapping[str, Any], budget: Budget | None = None) -> Any:
    """The value of the expression ``source`` with the names of ``env`` (a workflow's
    parameters and tables, a repair's ``args``, ``expected``, ``actual``), plain JSON;
    :class:`ExpressionError` with a stable code otherwise. Never runs code. ``budget``: the
    evaluation steps left (default: :data:`MAX_STEPS` for this one)."""
    tree = parse(source)
    try:
        result = _Evaluator(env, budget or Budget()).eval(tree, {})
    except RecursionError:  # parse() bounds the depth; a last guard all the same
        raise ExpressionError(EXPRESSION_TOO_DEEP, "the expression nests too deeply") from None
    try:  # a value read from the caller's names is returned as it is: it must be JSON too
        canonical_bytes(result)
    except CanonicalJSONError as exc:
        raise ExpressionError(EXPRESSION_TYPE, f"the result is not plain JSON: {exc}") from None
    return result
