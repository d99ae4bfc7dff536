"""``aira report RUN_DIR``: a run's report, one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from aira_core.cli._options import ForceFlag, JsonFlag, KernelOption
from aira_core.cli._output import _print_json


def report_cmd(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="A run directory ($AIRA_HOME/runs/NAME-STAMP/, as aira run and aira demo "
            "print it).",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write the page (default: RUN_DIR/report.html)."),
    ] = None,
    force: ForceFlag = False,
    kernel: KernelOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Write a run's report: one HTML file, no network, that any browser opens offline
    (xdg-open / open FILE): the part in an isometric and three orthographic views, the steps
    (prompt size against B, rounds, folds and compactions), each plan with its diagnostics and
    repair, the revisions with their assertions, tokens and cost. aira run and aira demo
    write it at the end of a run; this writes it again (RUN_DIR/report.html is replaced;
    an --out file that exists needs --force). A run without its display mesh has its head
    revision drawn by the installed kernel, when there is one."""
    from aira_core.report import REPORT, read_run, write_report
    from aira_core.report.reader import STORE, trajectory_of

    path = trajectory_of(run_dir)  # before anything else: REPORT_RUN_MISSING, _NOT_A_RUN
    target = out if out is not None else run_dir / REPORT
    protect = (run_dir / STORE, path)
    if out is not None:
        from aira_core.files import check_target

        check_target(target, force=force, protect=protect)
    run = read_run(run_dir)
    if run.mesh is None:
        bodies = _drawn(run, run_dir, kernel)
        if bodies is not None:
            run.mesh, run.mesh_note = bodies, None
    from aira_core.cli.run import _shown

    written = write_report(run, target, force=force or out is None, protect=protect)
    shown = _shown(written)
    if as_json:
        from aira_core.report.page import summary

        _print_json({"format": "aira.report/1", "report": shown, **summary(run)})
    else:
        typer.echo(f"report: {shown}")


def _drawn(run: Any, run_dir: Path, kernel: str | None) -> Any:
    """The head revision's bodies as the installed kernel meshes them, or None (no store,
    no head, no kernel installed, or it exports no display mesh): the page then says why
    the part is not drawn."""
    from aira_core.diagnostics import AiraError
    from aira_core.report.reader import STORE, parse_mesh

    head = (run.end or {}).get("head") or (run.revisions[-1].rev if run.revisions else None)
    if not head or not (run_dir / STORE).is_file():
        return None
    try:
        from aira_core.cli._options import _kernel
        from aira_core.model.repository import ModelRepository
        from aira_core.report import display_mesh

        chosen = _kernel(kernel, "drawing the part")
        with ModelRepository.open(run_dir / STORE) as repository:
            document = repository.document(head)
        if not document.bodies:
            return None
        data = display_mesh(chosen, document)
        if not data:
            return None
        return parse_mesh(data, "the kernel's mesh")
    except (AiraError, ValueError) as exc:
        run.mesh_note = f"the part is not drawn: {exc}"
        return None
