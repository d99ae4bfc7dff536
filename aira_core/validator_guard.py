"""Every call the host makes into a registered validator (``aira_register_validators``)
goes through here, as every kernel call goes through :mod:`aira_core.kernel_guard`.

A validator is plugin code that is not a kernel: it gets a read-only :class:`View` of the
document (the kernel's queries and body results, nothing that writes, exports or evaluates
another document) and answers a :class:`~aira_core.extensions.ValidationOutcome`.
Whatever else it does is a failed assertion with a stable code, never a traceback, a hang
or a pass it did not earn:

- it raises (``BaseException`` included), answers anything but an outcome of its assertion
  with JSON measured values, or fails with a code it does not declare: ``VALIDATOR_FAILED``;
- it misses the deadline (``AIRA_KERNEL_TIMEOUT``, as a kernel call): ``VALIDATOR_TIMEOUT``,
  and it is not called again in this process;
- it sets or deletes an attribute of its view, or asks it for something other than a
  ``query.*`` ref: ``VALIDATOR_VIEW_READONLY``, even if it catches the error itself;
- a kernel call of its view fails: the kernel's own code (``KERNEL_FAILED`` …), even if
  the validator caught it and answered.

The view is closed when the call returns (or is abandoned): a validator that keeps a
reference and calls it later gets ``VALIDATOR_VIEW_READONLY``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from aira_core import kernel_guard
from aira_core.canonical import CanonicalJSONError, canonical_bytes
from aira_core.extensions import AssertionView, BodyResult, QueryResult, ValidationOutcome
from aira_core.kernel_guard import KernelFailure

VALIDATOR_FAILED = "VALIDATOR_FAILED"
VALIDATOR_TIMEOUT = "VALIDATOR_TIMEOUT"
VALIDATOR_VIEW_READONLY = "VALIDATOR_VIEW_READONLY"

QUERY_PREFIX = "query."
"""The only refs a view answers: read-only kernel queries."""


class ValidatorFailure(KernelFailure):
    """A validator call that failed; the write path refuses it as it does a kernel's."""

    def __init__(self, code: str, message: str, *, subject: str | None = None) -> None:
        super().__init__(code, message, subject=subject)
        self.diagnostic = self.diagnostic.model_copy(update={"cause": "validator"})


class ViewReadOnly(AttributeError):
    """Raised into a validator that tries to write to its view (or use it after its call)."""


class View:
    """The read-only :class:`~aira_core.extensions.ModelView` of one document for one
    validator call. The kernel and the document are held in closures, not in attributes:
    the view's API offers nothing to reach them by (in-process plugin code is trusted not
    to dig into closures; the guard keeps an honest mistake from writing)."""

    __slots__ = ("_bodies_of", "_query_of", "_state")

    def __init__(self, kernel: Any, document: Any, state: dict[str, Any]) -> None:
        def bodies() -> Mapping[str, BodyResult]:
            if "bodies" not in state:
                evaluation = kernel_guard.evaluate(kernel, document)
                state["bodies"] = MappingProxyType(dict(evaluation.bodies))
            return state["bodies"]

        def query(ref: str, args: Mapping[str, Any]) -> QueryResult:
            answer = kernel_guard.query(kernel, document, ref, copy.deepcopy(dict(args)))
            # the validator's own copy: what it does to it reaches no cache of the kernel
            return QueryResult(copy.deepcopy(dict(answer.data)), tuple(answer.diagnostics))

        object.__setattr__(self, "_bodies_of", bodies)
        object.__setattr__(self, "_query_of", query)
        object.__setattr__(self, "_state", state)

    def _open(self, what: str) -> None:
        if self._state.get("closed"):
            self._refuse(f"{what} on a view whose validation has ended")

    def _refuse(self, message: str) -> None:
        error = ViewReadOnly(message)
        self._state.setdefault("refused", message)
        raise error

    @property
    def bodies(self) -> Mapping[str, BodyResult]:
        self._open("bodies")
        try:
            return self._bodies_of()
        except KernelFailure as exc:
            self._state["own"].append(exc)
            raise

    def query(self, ref: str, args: Mapping[str, Any] | None = None) -> QueryResult:
        self._open(f"query {str(ref)[:80]!r}")
        if not isinstance(ref, str) or not ref.startswith(QUERY_PREFIX):
            self._refuse(f"asked the view for {str(ref)[:80]!r}; a view answers query.* refs only")
        if args is not None and not isinstance(args, Mapping):
            self._refuse("query arguments must be a mapping")
        try:
            return self._query_of(ref, args or {})
        except KernelFailure as exc:
            self._state["own"].append(exc)
            raise

    def __setattr__(self, name: str, value: Any) -> None:
        self._refuse(f"set {name!r} on a read-only view")

    def __delattr__(self, name: str) -> None:
        self._refuse(f"deleted {name!r} of a read-only view")

    def __reduce__(self) -> Any:  # no copy or pickle carries the kernel out
        raise TypeError("a model view cannot be copied")


def _name(validator: Any) -> str:
    try:
        name = getattr(validator, "name", "?")
    except BaseException:
        return "?"
    return name if isinstance(name, str) else "?"


def validate(validator: Any, kernel: Any, document: Any, assertion: Any) -> ValidationOutcome:
    """``validator.validate(view, assertion)`` on a read-only view of ``document`` evaluated
    by ``kernel``: the outcome, checked; else :class:`ValidatorFailure` (or the kernel's
    :class:`KernelFailure` when a query it asked for failed)."""
    aid = assertion.id
    name = _name(validator)
    state: dict[str, Any] = {"own": []}
    view = View(kernel, document, state)
    given = assertion_view(document, assertion)
    try:
        answer = kernel_guard.guarded(
            validator,
            "validate",
            (view, given),
            {},
            role="validator",
            failed=VALIDATOR_FAILED,
            timed_out=VALIDATOR_TIMEOUT,
            failure=ValidatorFailure,
            own=state["own"],
        )
    except ValidatorFailure as exc:
        if exc.diagnostic.code == VALIDATOR_FAILED and "refused" in state:
            raise _readonly(name, state, aid) from None
        raise ValidatorFailure(exc.diagnostic.code, exc.diagnostic.message, subject=aid) from None
    finally:
        state["closed"] = True
    if "refused" in state:  # it caught the refusal: an attempt to write is still a failure
        raise _readonly(name, state, aid)
    if state["own"]:  # it caught a failed kernel call: no answer stands on a failed kernel
        raise state["own"][0]
    try:
        problem = _problem(validator, assertion, answer)
    except Exception as exc:  # a hostile answer whose parts raise when read
        problem = f"an answer that cannot be read ({type(exc).__name__})"
    if problem is not None:
        raise ValidatorFailure(
            VALIDATOR_FAILED, f"the validator {name!r} answered {aid} with {problem}", subject=aid
        )
    return ValidationOutcome(
        aid,
        answer.passed,
        dict(answer.measured),
        [d if d.subject else d.model_copy(update={"subject": aid}) for d in answer.diagnostics],
    )


def assertion_view(document: Any, assertion: Any) -> AssertionView:
    """``assertion`` of ``document`` as a validator gets it: plain args (literals in base
    units, parameters resolved), frozen, and its own copy."""
    from aira_core.contracts.amir import LiteralInput, ParamInput, ParamType, dimension_of, to_base

    parameters = {p.id: p for p in document.parameters}

    def plain(value: Any) -> Any:
        if isinstance(value, ParamInput):
            param = parameters.get(value.param)
            if param is None:
                return None
            if (
                param.type in (ParamType.LENGTH, ParamType.ANGLE)
                and isinstance(param.value, int | float)
                and not isinstance(param.value, bool)
            ):
                return to_base(float(param.value), param.unit, param.type)
            return copy.deepcopy(param.value)
        if isinstance(value, LiteralInput):
            number = isinstance(value.value, int | float) and not isinstance(value.value, bool)
            if value.unit is not None and number:
                dim = dimension_of(value.unit) or ParamType.LENGTH
                return to_base(float(value.value), value.unit, dim)
            return copy.deepcopy(value.value)
        return value.to_wire() if hasattr(value, "to_wire") else copy.deepcopy(value)

    return AssertionView(
        id=assertion.id,
        validator_ref=assertion.validator_ref,
        target=assertion.target,
        args=MappingProxyType({k: plain(v) for k, v in assertion.args.items()}),
        label=assertion.label,
    )


def _readonly(name: str, state: Mapping[str, Any], aid: str) -> ValidatorFailure:
    return ValidatorFailure(
        VALIDATOR_VIEW_READONLY,
        f"the validator {name!r} tried to {state['refused']}; a validator reads, never writes",
        subject=aid,
    )


def _problem(validator: Any, assertion: Any, answer: Any) -> str | None:
    problem = kernel_guard.outcome_problem(assertion, answer)
    if problem is not None:
        return problem
    try:
        canonical_bytes(dict(answer.measured))
    except CanonicalJSONError as exc:
        return f"measured values that are not JSON: {exc}"
    declared = _declared(validator)
    codes: Sequence[str] = [d.code for d in answer.diagnostics]
    undeclared = sorted({c for c in codes if c not in declared})
    if undeclared:
        return f"the code(s) {', '.join(undeclared)}, which it does not declare"
    return None


def _declared(validator: Any) -> frozenset[str]:
    try:
        codes = getattr(validator, "diagnostics", ()) or ()
        return frozenset(c for c in codes if isinstance(c, str))
    except Exception:
        return frozenset()
