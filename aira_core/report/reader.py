"""What a run report shows, read from a run: the trajectory (header, steps, end), the
revisions the task made with their assertions (the store, opened only to read), and the
part's display mesh the run wrote beside them.

A run directory (``$AIRA_HOME/runs/NAME-STAMP/``) holds ``trajectory.jsonl``,
``store.sqlite3`` and ``NAME.mesh.json``; a run given its own ``--trajectory`` or
``--store`` is read from those paths (:func:`read_run`'s arguments).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType
from typing import Any

from aira_core.diagnostics import AiraError

TRAJECTORY = "trajectory.jsonl"
STORE = "store.sqlite3"
MESH_SUFFIX = ".mesh.json"
REPORT = "report.html"
REPORT_RUN_MISSING = "REPORT_RUN_MISSING"
REPORT_NOT_A_RUN = "REPORT_NOT_A_RUN"
REPORT_TRAJECTORY_INVALID = "REPORT_TRAJECTORY_INVALID"
REPORT_STORE_INVALID = "REPORT_STORE_INVALID"


@dataclass
class Revision:
    """A revision the task went through: its id, the step that committed it (None: the
    revision the task started from), and what the document holds."""

    rev: str
    step: int | None
    parameters: list[dict[str, Any]] = field(default_factory=list)
    bodies: dict[str, str] = field(default_factory=dict)
    """Body id → label."""
    assertions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunData:
    """Everything the page shows, as plain data (the model's text still unescaped)."""

    name: str
    header: dict[str, Any]
    steps: list[dict[str, Any]]
    end: dict[str, Any] | None
    revisions: list[Revision]
    store_note: str | None = None
    """Why no revisions are shown (no store beside the trajectory), or None."""
    mesh: Any = None
    """The part's bodies (:func:`aira_core.report.views.read_mesh`), or None."""
    mesh_note: str | None = None
    """Why the part is not drawn, or None."""


def trajectory_of(run_dir: Path) -> Path:
    """The run directory's trajectory: ``REPORT_RUN_MISSING`` for a directory that does not
    exist, ``REPORT_NOT_A_RUN`` for one without a trajectory."""
    if not run_dir.is_dir():
        what = "does not exist" if not run_dir.exists() else "is not a directory"
        raise AiraError(
            REPORT_RUN_MISSING, f"{run_dir.name or str(run_dir)!r} {what}: give a run directory"
        )
    path = run_dir / TRAJECTORY
    if not path.exists() and not path.is_symlink():
        raise AiraError(
            REPORT_NOT_A_RUN,
            f"{run_dir.name!r} is not a run directory: it holds no {TRAJECTORY} "
            "(aira run and aira demo make one under $AIRA_HOME/runs/)",
        )
    return path


def read_trajectory(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The trajectory's header and records; a torn last line (a killed run) is dropped as
    the host's own reader drops it, anything else wrong is ``REPORT_TRAJECTORY_INVALID``."""
    from aira_core.step import trajectory

    try:
        return trajectory.read_trajectory(path)
    except AiraError as exc:
        raise AiraError(
            REPORT_TRAJECTORY_INVALID, f"cannot report this run: {exc.diagnostic.message}"
        ) from None


def mesh_path(directory: Path, name: str) -> Path | None:
    """Where a run of the script ``name`` keeps its display mesh (None: a name that is no
    plain file name)."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        return None
    return directory / f"{name}{MESH_SUFFIX}"


def read_mesh_file(path: Path) -> Any:
    """The bodies of the display mesh file at ``path`` (``REPORT_MESH_INVALID`` for one that
    is not an ``aira.mesh/1`` file)."""
    from aira_core.inputs import read_input
    from aira_core.report.views import REPORT_MESH_INVALID

    data = read_input(path, "json", what="mesh", unreadable=REPORT_MESH_INVALID)
    return parse_mesh(data, f"mesh {path.name!r}")


def parse_mesh(data: bytes, what: str) -> Any:
    """The bodies of the ``aira.mesh/1`` JSON ``data`` (a file's or a kernel's export, named
    ``what`` in messages): ``REPORT_MESH_INVALID`` for anything else."""
    from aira_core.canonical import StrictJSONError, loads_strict
    from aira_core.report.views import REPORT_MESH_INVALID, read_mesh

    try:
        value = loads_strict(data, what)[0]
    except StrictJSONError as exc:
        raise AiraError(REPORT_MESH_INVALID, str(exc)) from None
    return read_mesh(value)


def _revisions(store: Path, revs: list[tuple[str, int | None]]) -> list[Revision]:
    """The documents of ``revs`` in the store at ``store``, read only (nothing is written:
    no derived view is kept). ``REPORT_STORE_INVALID`` for a store that cannot be read or
    lacks a revision the trajectory names."""
    from aira_core.model.repository import ModelRepository

    out = []
    try:
        with ModelRepository.open(store) as repository:
            for rev, step in revs:
                document = repository.document(rev)
                out.append(
                    Revision(
                        rev=rev,
                        step=step,
                        parameters=[
                            {"id": p.id, "label": p.label, "value": p.value, "unit": p.unit}
                            for p in document.parameters
                        ],
                        bodies={b.id: b.label for b in document.bodies},
                        assertions=[
                            a.model_dump(mode="json", by_alias=True, exclude_none=True)
                            for a in document.assertions
                        ],
                    )
                )
    except AiraError as exc:
        raise AiraError(
            REPORT_STORE_INVALID, f"cannot read the run's store: {exc.diagnostic.message}"
        ) from None
    return out


def read_run(
    run_dir: Path,
    *,
    trajectory: Path | None = None,
    store: Path | None = None,
    mesh_file: Path | EllipsisType | None = ...,
) -> RunData:
    """The run in ``run_dir`` (its trajectory, store and mesh by their usual names, or the
    paths given). ``mesh_file``: the display mesh the run just wrote, ``None`` when it wrote
    none (a file left there by an earlier run is not drawn); by default the directory's
    ``NAME.mesh.json`` if there is one."""
    path = trajectory if trajectory is not None else trajectory_of(run_dir)
    header, records = read_trajectory(path)
    steps = [r for r in records if "step" in r]
    end = next((r for r in records if "end" in r), None)
    name = header.get("script") if isinstance(header.get("script"), str) else None
    name = name or run_dir.name
    revs: list[tuple[str, int | None]] = []
    first = next((s.get("head") for s in steps if isinstance(s.get("head"), str)), None)
    if first:
        revs.append((first, None))
    for s in steps:
        rev = s["result"].get("rev")
        ok = s["result"].get("status") == "ok" and isinstance(rev, str)
        if ok and rev.startswith("rev:") and rev not in (r for r, _ in revs):
            revs.append((rev, s["step"]))
    store = store if store is not None else run_dir / STORE
    store_note = None
    revisions: list[Revision] = []
    if not store.exists():
        store_note = f"no {STORE} beside the trajectory: the revisions are not shown"
    elif revs:
        revisions = _revisions(store, revs)
    mesh, mesh_note = None, None
    where = mesh_path(run_dir, name) if mesh_file is ... else mesh_file
    if where is not None and where.is_file():
        mesh = read_mesh_file(where)
    else:
        mesh_note = (
            "the run wrote no display mesh (no body, the kernel exports none, or the "
            "guard refused it)"
        )
    return RunData(name, header, steps, end, revisions, store_note, mesh, mesh_note)
