"""A HOSTILE kernel plugin: the FAKE analytic kernel and its signed package, except that the
kernel methods named in ``AIRA_HOSTILE_KERNEL`` misbehave (read at each call, so one
installed plugin serves every case, in this process or a new one)::

    AIRA_HOSTILE_KERNEL="export=sleep,query=wrong"  AIRA_HOSTILE_PACKAGE=/path/to/package

``raise`` (a RuntimeError), ``base`` (a BaseException subclass), ``interrupt``
(KeyboardInterrupt), ``exit`` (SystemExit), ``wrong`` (an answer of the wrong type),
``omit`` (evaluate: an evaluation without the document's bodies), ``nan`` (evaluate: a NaN
volume for each body), ``sleep`` (blocks for
``AIRA_HOSTILE_SLEEP`` seconds, default 600; touching ``AIRA_HOSTILE_MARK`` first)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from aira_core import hookimpl
from aira_core.extensions import BodyResult, CapabilityPackageSource, Evaluation
from aira_core.testing.kernel import FakeGeometryKernel
from aira_core.testing.package import fake_implementations, fake_kernel_manifest

RELEASE = threading.Event()
"""Set to end a sleeping call early (a test's teardown)."""


class Hostile(BaseException):
    """Not an Exception: what ``except Exception`` lets through."""


def _behaviour(method: str) -> str | None:
    for item in os.environ.get("AIRA_HOSTILE_KERNEL", "").split(","):
        name, _, what = item.partition("=")
        if name.strip() == method:
            return what.strip()
    return None


def _misbehave(method: str, what: str, document=None):  # type: ignore[no-untyped-def]
    if what == "raise":
        raise RuntimeError(f"hostile {method}")
    if what == "base":
        raise Hostile(f"hostile {method}")
    if what == "interrupt":
        raise KeyboardInterrupt
    if what == "exit":
        raise SystemExit(0)
    if what == "sleep":
        if os.environ.get("AIRA_HOSTILE_MARK"):  # tells a test the call has started
            Path(os.environ["AIRA_HOSTILE_MARK"]).touch()
        RELEASE.wait(float(os.environ.get("AIRA_HOSTILE_SLEEP", "600")))
        return None
    if what == "omit":
        return Evaluation(bodies={})
    if what == "nan":
        return Evaluation(
            bodies={b.id: BodyResult(valid=True, volume=float("nan")) for b in document.bodies}
        )
    if what == "wrong":
        return {"export": "not bytes", "validate": True}.get(method, "not a result")
    raise AssertionError(f"unknown behaviour {what!r}")


class HostileKernel(FakeGeometryKernel):
    name = "hostile"

    def evaluate(self, document, changed=None):  # type: ignore[no-untyped-def]
        what = _behaviour("evaluate")
        if what:
            return _misbehave("evaluate", what, document)
        return super().evaluate(document, changed)

    def validate(self, document, assertion):  # type: ignore[no-untyped-def]
        what = _behaviour("validate")
        return _misbehave("validate", what) if what else super().validate(document, assertion)

    def query(self, document, ref, args):  # type: ignore[no-untyped-def]
        what = _behaviour("query")
        return _misbehave("query", what) if what else super().query(document, ref, args)

    def export(self, document, format, body=None):  # type: ignore[no-untyped-def]
        what = _behaviour("export")
        return _misbehave("export", what) if what else super().export(document, format, body)


@hookimpl
def aira_register_capability_packages(register):  # type: ignore[no-untyped-def]
    package = Path(os.environ["AIRA_HOSTILE_PACKAGE"])
    register(
        CapabilityPackageSource.from_directory(
            package, fake_implementations(fake_kernel_manifest())
        )
    )


@hookimpl
def aira_register_kernels(register):  # type: ignore[no-untyped-def]
    register(HostileKernel())
