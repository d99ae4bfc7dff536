"""Run reports: one self-contained HTML page per run (``report.html`` in the run's
directory) showing the part (isometric and three orthographic views of the kernel's display
mesh), the step timeline (prompt size against B, rounds, folds and compactions), each plan with its
diagnostics and repair, the revisions with their assertions, and the tokens and cost.

:func:`write_report` is what ``aira run``, ``aira demo`` and ``aira report RUN_DIR`` call;
:mod:`~aira_core.report.reader` reads a run, :mod:`~aira_core.report.views` draws the part,
:mod:`~aira_core.report.page` writes the HTML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aira_core.report.reader import REPORT, RunData, read_run

__all__ = ["REPORT", "RunData", "build_report", "display_mesh", "read_run", "write_report"]

REPORT_ANGULAR_TOLERANCE = 15.0
"""Degrees: the display mesh a report draws is coarse (a picture, not a part to make), so
the page of a product of many bodies stays small."""


def display_mesh(kernel: Any, document: Any) -> bytes:
    """The kernel's ``aira.mesh/1`` display mesh of every body of ``document``, coarse
    (:data:`REPORT_ANGULAR_TOLERANCE`; a kernel that takes no tolerance is asked with its
    own); ``b""`` from a kernel that exports none."""
    from aira_core import kernel_guard
    from aira_core.diagnostics import AiraError

    try:
        return kernel_guard.export(
            kernel, document, "mesh", angular_tolerance=REPORT_ANGULAR_TOLERANCE
        )
    except AiraError as exc:
        if exc.code != kernel_guard.EXPORT_TOLERANCE_UNSUPPORTED:
            raise
    return kernel_guard.export(kernel, document, "mesh")


def build_report(run: RunData) -> bytes:
    """The page of ``run``, UTF-8."""
    from aira_core.report.page import render_page

    return render_page(run).encode("utf-8")


def write_report(
    run: RunData, out: Path, *, force: bool = True, protect: tuple[Path, ...] = ()
) -> Path:
    """Write the page of ``run`` to ``out`` (atomically; an existing file is replaced only
    with ``force``, never written through; ``protect``: files it must never be)."""
    from aira_core.files import write_file

    return write_file(out, build_report(run), force=force, protect=protect)
