"""Every call the host makes into a kernel (evaluate, validate, query, export) goes through
here: a kernel is plugin code, so whatever it does is an answer with a stable code, never a
traceback, a hang or a pass it did not earn.

- Anything it raises, ``BaseException`` included (a kernel raising ``KeyboardInterrupt`` or
  ``SystemExit`` is hostile, not the user), is ``KERNEL_FAILED``.
- An answer of the wrong type (not an ``Evaluation``, ``ValidationOutcome``, ``QueryResult``
  of JSON data, or ``bytes``), or an evaluation without a result for a body of the document,
  is ``KERNEL_FAILED``: a missing result is a failure, never a pass.
- Each call has a deadline (``AIRA_KERNEL_TIMEOUT`` seconds, default
  :data:`DEFAULT_TIMEOUT`): the call runs in a daemon thread the host stops waiting for, so a
  kernel that blocks is ``KERNEL_TIMEOUT`` and the process can still exit. A kernel whose
  abandoned call is still running is not called again (``KERNEL_TIMEOUT`` at once): its
  state cannot be trusted, and waiting on it would be a second hang.

Mesh tolerances of an export are checked here, before any kernel sees them
(:func:`check_export_tolerances`), and passed as keyword arguments only when given, so a
kernel whose ``export`` predates them keeps working (asked for tolerances, it is refused with
``EXPORT_TOLERANCE_UNSUPPORTED`` rather than called with arguments it does not take).

The caller waits in its own thread, so a real Ctrl-C still interrupts the wait and stops
the command. The OCCT kernel's worker has its own, shorter deadlines (60 s a call, 180 s to
start): this one is the host's backstop for a kernel that has none.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import math
import os
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

from aira_core.canonical import CanonicalJSONError, canonical_bytes
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import (
    EXPORT_ANGULAR_TOLERANCE_RANGE,
    EXPORT_TOLERANCE_RANGE,
    BodyResult,
    Evaluation,
    QueryResult,
    ValidationOutcome,
)

KERNEL_FAILED = "KERNEL_FAILED"
KERNEL_TIMEOUT = "KERNEL_TIMEOUT"
EXPORT_TOLERANCE_INVALID = "EXPORT_TOLERANCE_INVALID"
EXPORT_TOLERANCE_UNSUPPORTED = "EXPORT_TOLERANCE_UNSUPPORTED"
NOT_MESH_FORMATS = {"step": "an exact B-rep", "stp": "an exact B-rep", "svg": "a line drawing"}
"""Export formats that are no mesh, so a mesh tolerance means nothing for them."""
TIMEOUT_ENV = "AIRA_KERNEL_TIMEOUT"
DEFAULT_TIMEOUT = 300.0
"""Seconds: above the OCCT worker's own worst case (start 180 s + call 60 s)."""

# Calls abandoned at their deadline and still running, by kernel (id: kernels need not be
# hashable or weak-referenceable); an entry goes when its thread ends.
_running: dict[int, threading.Thread] = {}
_running_lock = threading.Lock()


class KernelFailure(AiraError):
    """A kernel call that failed (``KERNEL_FAILED``) or ran out of time (``KERNEL_TIMEOUT``)."""

    def __init__(
        self, code: str, message: str, *, subject: str | None = None, affected: Sequence[str] = ()
    ) -> None:
        super().__init__(code, message, subject=subject)
        update = {"cause": "kernel", **({"affected": list(affected)} if affected else {})}
        self.diagnostic = self.diagnostic.model_copy(update=update)


def timeout() -> float:
    """The deadline of one kernel call in seconds: ``AIRA_KERNEL_TIMEOUT`` when it is a
    positive number, else :data:`DEFAULT_TIMEOUT` (a call always has a deadline)."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if 0 < value < float("inf") else DEFAULT_TIMEOUT


def _name(kernel: Any) -> str:
    try:
        name = getattr(kernel, "name", "?")
    except BaseException:  # a hostile property: the kernel's failure is still reported
        return "?"
    return name if isinstance(name, str) else "?"


def _text(exc: BaseException) -> str:
    """``Type: message`` of what a kernel raised, even when its ``__str__`` raises too."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:  # a hostile __str__: the type still says enough
        return type(exc).__name__


def call(kernel: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """``kernel.<method>(*args, **kwargs)`` within the deadline; whatever it raises is
    :class:`KernelFailure` (its answer is the caller's to check)."""
    return guarded(kernel, method, args, kwargs)


def guarded(
    obj: Any,
    method: str,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    role: str = "kernel",
    failed: str = KERNEL_FAILED,
    timed_out: str = KERNEL_TIMEOUT,
    failure: type[KernelFailure] | None = None,
    own: Collection[BaseException] = (),
) -> Any:
    """:func:`call` for any plugin object (a kernel, a validator): ``role`` names it in the
    messages, ``failed`` and ``timed_out`` are the codes, ``failure`` the error type; an
    exception in ``own`` (one the host raised into the call, e.g. a failed kernel query of a
    validator) propagates as it is."""
    failure = failure or KernelFailure
    name = _name(obj)
    with _running_lock:
        stuck = _running.get(id(obj))
        if stuck is not None and not stuck.is_alive():
            del _running[id(obj)]
            stuck = None
    if stuck is not None:
        raise failure(
            timed_out,
            f"the {role} {name!r} is still running a call that missed its deadline; "
            "it is not called again in this process",
        )
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = getattr(obj, method)(*args, **kwargs)
        except BaseException as exc:  # in this thread, never the user's Ctrl-C
            outcome["error"] = exc

    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(run,), name=f"aira-{role}-{method}", daemon=True
    )
    limit = timeout()
    thread.start()
    thread.join(limit)  # a real Ctrl-C interrupts this wait: the command stops
    if thread.is_alive():
        with _running_lock:
            _running[id(obj)] = thread
        raise failure(
            timed_out,
            f"the {role} {name!r} did not answer {method} within {limit:g} s "
            f"({TIMEOUT_ENV} sets the deadline)",
        )
    if "error" in outcome:
        error = outcome["error"]
        if any(error is e for e in own):  # the host's own failure: its code stands
            raise error
        raise failure(failed, f"the {role} {name!r} raised {_text(error)}")
    return outcome.get("value")


def _wrong(kernel: Any, method: str, problem: str, **where: Any) -> KernelFailure:
    return KernelFailure(
        KERNEL_FAILED, f"the kernel {_name(kernel)!r} answered {method} with {problem}", **where
    )


def _kind(value: Any) -> str:
    return f"a {type(value).__name__}"


@contextlib.contextmanager
def _reading(kernel: Any, method: str) -> Iterator[None]:
    """Checking an answer: one whose parts raise when read (a hostile ``__eq__``, a
    property) is the kernel's failure too."""
    try:
        yield
    except KernelFailure:
        raise
    except Exception as exc:
        raise _wrong(kernel, method, f"an answer that cannot be read ({_text(exc)})") from None


def evaluate(kernel: Any, document: Any, changed: Collection[str] | None = None) -> Evaluation:
    """An :class:`Evaluation` with a result for every body of ``document`` (unless it failed:
    then its diagnostics say why)."""
    answer = call(kernel, "evaluate", document, changed)
    with _reading(kernel, "evaluate"):
        return _checked_evaluation(kernel, document, answer)


def _checked_evaluation(kernel: Any, document: Any, answer: Any) -> Evaluation:
    problem = _evaluation_problem(answer)
    if problem is not None:
        raise _wrong(kernel, "evaluate", problem)
    if not answer.diagnostics:
        missing = [b.id for b in document.bodies if b.id not in answer.bodies]
        if missing:
            # affected: the bodies without a result, so a plan names the step creating one
            raise _wrong(
                kernel,
                "evaluate",
                f"no result for body {', '.join(missing)}; a missing result is a failure",
                subject=missing[0],
                affected=missing,
            )
    return answer


def _evaluation_problem(answer: Any) -> str | None:
    if not isinstance(answer, Evaluation):
        return f"{_kind(answer)}, not an Evaluation"
    if not isinstance(answer.bodies, Mapping):
        return f"bodies that are {_kind(answer.bodies)}, not a mapping"
    if not all(isinstance(d, Diagnostic) for d in _items(answer.diagnostics)):
        return "diagnostics that are not Diagnostics"
    if not all(isinstance(n, str) for n in _items(answer.evaluated_nodes)):
        return "evaluated nodes that are not node ids"
    wrong = [str(b) for b, r in answer.bodies.items() if not _body_result_ok(r)]
    if wrong:
        return (
            f"results that are not BodyResults (a bool valid, finite numbers) for "
            f"{', '.join(wrong)}"
        )
    return None


def finite(value: Any) -> bool:
    """Whether ``value`` is a finite JSON number (not a bool, NaN or an infinity)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _body_result_ok(result: Any) -> bool:
    if not isinstance(result, BodyResult) or not isinstance(result.valid, bool):
        return False
    if not all(v is None or finite(v) for v in (result.volume, result.area)):
        return False
    box = result.bounding_box
    return box is None or (
        isinstance(box, tuple | list) and len(box) == 6 and all(map(finite, box))
    )


def _items(value: Any) -> list[Any]:
    """The items of a sequence a kernel answered (a str or a mapping is not one)."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Collection):
        return [object()]  # fails every item check
    return list(value)


def validate(kernel: Any, document: Any, assertion: Any) -> ValidationOutcome:
    """A :class:`ValidationOutcome` of ``assertion`` (its id, a bool ``passed``)."""
    answer = call(kernel, "validate", document, assertion)
    with _reading(kernel, f"assertion {assertion.id}"):
        return _checked_outcome(kernel, assertion, answer)


def _checked_outcome(kernel: Any, assertion: Any, answer: Any) -> ValidationOutcome:
    problem = outcome_problem(assertion, answer)
    if problem is not None:
        raise _wrong(kernel, f"assertion {assertion.id}", problem, subject=assertion.id)
    return answer


def outcome_problem(assertion: Any, answer: Any) -> str | None:
    """What is wrong with an answer to ``assertion``, if anything: a ValidationOutcome of
    that assertion with a bool ``passed``, a mapping measured and Diagnostics."""
    problem = None
    if not isinstance(answer, ValidationOutcome):
        problem = f"{_kind(answer)}, not a ValidationOutcome"
    elif answer.assertion != assertion.id:
        problem = f"the outcome of another assertion ({answer.assertion!r})"
    elif not isinstance(answer.passed, bool):
        problem = f"passed = {_kind(answer.passed)}, not a bool"
    elif not isinstance(answer.measured, Mapping):
        problem = f"measured values that are {_kind(answer.measured)}, not a mapping"
    elif not all(isinstance(d, Diagnostic) for d in _items(answer.diagnostics)):
        problem = "diagnostics that are not Diagnostics"
    return problem


def answer_problem(answer: Any) -> str | None:
    """What is wrong with a kernel's answer to a query, if anything: it must be a
    QueryResult with Diagnostics and data a prompt and a trajectory can carry (canonical
    JSON: no NaN, no foreign types)."""
    if not isinstance(answer, QueryResult):
        return f"{_kind(answer)}, not a QueryResult"
    if not isinstance(answer.data, Mapping):
        return f"data that is {_kind(answer.data)}, not an object"
    if not all(isinstance(d, Diagnostic) for d in _items(answer.diagnostics)):
        return "diagnostics that are not Diagnostics"
    try:
        canonical_bytes(dict(answer.data))
    except CanonicalJSONError as exc:
        return f"data that is not JSON: {exc}"
    return None


def query(kernel: Any, document: Any, ref: str, args: Mapping[str, Any]) -> QueryResult:
    """A :class:`QueryResult` of JSON data (see :func:`answer_problem`)."""
    answer = call(kernel, "query", document, ref, args)
    with _reading(kernel, ref):
        problem = answer_problem(answer)
    if problem is not None:
        raise _wrong(kernel, ref, problem)
    return answer


def check_export_tolerances(
    format: str, tolerance: float | None = None, angular_tolerance: float | None = None
) -> None:
    """Refuse mesh tolerances no kernel is asked for: any for a format that is no mesh
    (``EXPORT_TOLERANCE_UNSUPPORTED``: STEP is exact, SVG a line drawing; silently ignoring
    them would let a user believe they took effect), and a value that is not a finite number
    in :data:`~aira_core.extensions.EXPORT_TOLERANCE_RANGE` (mm) or
    :data:`~aira_core.extensions.EXPORT_ANGULAR_TOLERANCE_RANGE` (degrees)
    (``EXPORT_TOLERANCE_INVALID``). None given: nothing to check."""
    if tolerance is None and angular_tolerance is None:
        return
    what = NOT_MESH_FORMATS.get(str(format).lower())
    if what is not None:
        raise AiraError(
            EXPORT_TOLERANCE_UNSUPPORTED,
            f"mesh tolerances apply to mesh formats (stl, 3mf, mesh); {str(format)[:16]!r} is "
            f"{what}, not a mesh: export it without a tolerance",
        )
    for name, value, (low, high), unit in (
        ("tolerance", tolerance, EXPORT_TOLERANCE_RANGE, "mm"),
        ("angular tolerance", angular_tolerance, EXPORT_ANGULAR_TOLERANCE_RANGE, "degrees"),
    ):
        if value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and low <= value <= high):
            shown = f"{value:g}" if number else repr(value)[:40]
            raise AiraError(
                EXPORT_TOLERANCE_INVALID,
                f"the {name} must be a number from {low:g} to {high:g} {unit}, not {shown}",
            )


def _missing_keywords(kernel: Any, method: str, names: Collection[str]) -> list[str]:
    """The keyword arguments of ``names`` that ``kernel.<method>`` does not take (a kernel
    written against an older protocol). One whose signature cannot be read is called
    anyway: what it then raises is its own KERNEL_FAILED."""
    try:
        parameters = inspect.signature(getattr(kernel, method)).parameters
    except BaseException:  # a hostile attribute or a callable without a signature
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return []
    takes = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [n for n in names if n not in parameters or parameters[n].kind not in takes]


def export(
    kernel: Any,
    document: Any,
    format: str,
    body: str | None = None,
    *,
    tolerance: float | None = None,
    angular_tolerance: float | None = None,
) -> bytes:
    """The bytes a kernel exported (``b""``: it wrote nothing, its reasons are its own).

    ``tolerance`` (mm) and ``angular_tolerance`` (degrees) of a mesh are checked
    (:func:`check_export_tolerances`) and passed only when given, as keyword arguments; a
    kernel that does not take them is ``EXPORT_TOLERANCE_UNSUPPORTED``, never called."""
    options = {
        k: v
        for k, v in (("tolerance", tolerance), ("angular_tolerance", angular_tolerance))
        if v is not None
    }
    if options:
        check_export_tolerances(format, tolerance, angular_tolerance)
        missing = _missing_keywords(kernel, "export", options)
        if missing:
            raise AiraError(
                EXPORT_TOLERANCE_UNSUPPORTED,
                f"the kernel {_name(kernel)!r} takes no mesh tolerances (its export has no "
                f"{' or '.join(missing)} argument): export with its own defaults (no "
                "tolerance given), or use a kernel that takes them",
            )
    answer = call(kernel, "export", document, format, body, **options)
    if not isinstance(answer, bytes | bytearray):
        raise _wrong(kernel, f"export {format!r}", f"{_kind(answer)}, not bytes")
    return bytes(answer)
