"""Running a decision script end to end: a store, the production catalog, a kernel, the
step host, a trajectory, and (for the demo) the artefacts: a STEP file, an SVG preview and a
display mesh of the task's final revision, and the run report (``report.html``).

The bundled scripts (``aira_core/step/scripts``): :data:`BUNDLED` are the demo's tasks,
:data:`LONG` the long tasks on big products that ``aira bench capsule`` measures too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from aira_core import kernel_guard
from aira_core.diagnostics import AiraError, Diagnostic
from aira_core.extensions import DecisionSource
from aira_core.files import write_file
from aira_core.integrations import Integrations
from aira_core.model.patch import PatchRejected
from aira_core.runtime.intents import RUN_TASK_INVALID, intent_frame
from aira_core.runtime.tiers import TaskBudgets, tier
from aira_core.runtime.write import WritePath
from aira_core.step.loop import Outcome, StepHost
from aira_core.step.trajectory import (
    SCRIPT_INVALID,
    DecisionScript,
    ScriptedSource,
    TrajectoryWriter,
    load_script,
)

BUNDLED = ("bracket", "flanged_shaft", "parametric_edit")
"""The demo's tasks: short, one small body each (``aira demo`` runs them; CI's quickstart)."""
LONG = ("storage_rack", "pcb_enclosure")
"""Long tasks on big products (issue 20): 40+ bodies, 30+ assertions, 24+ parameters, 30-48
steps with at least one compaction at T32. Not in ``aira demo`` (it stays quick);
``aira bench capsule`` runs them with the demo's, ``aira run --script NAME`` runs one."""
SCRIPTS = BUNDLED + LONG
"""Every bundled script, by name."""
RUN_SCRIPT_MISMATCH = "RUN_SCRIPT_MISMATCH"
RUN_STORE_EXISTS = "RUN_STORE_EXISTS"
INTENT_SCRIPT = "intent"


def bundled_script(name: str) -> DecisionScript:
    """The bundled script called ``name`` (one of :data:`SCRIPTS`; ``SCRIPT_INVALID`` for any
    other name)."""
    if name not in SCRIPTS:
        raise AiraError(
            SCRIPT_INVALID, f"no bundled script {name[:80]!r} (bundled: {', '.join(SCRIPTS)})"
        )
    path = resources.files("aira_core.step").joinpath("scripts").joinpath(f"{name}.json")
    with resources.as_file(path) as file:
        return load_script(Path(file))


def intent_script(text: str, tier_name: str | None = None) -> DecisionScript:
    """A task in words as the step host runs it: the Intent Frame's goal is the text as
    written (spec 003 item 10: the host does not paraphrase it), an empty model, no
    decisions of its own (a decision source answers every step; without one the host
    abstains at once). ``RUN_TASK_INVALID`` for a text
    :func:`~aira_core.runtime.intents.intent_frame` refuses."""
    frame = intent_frame(text)
    title = frame.goal.splitlines()[0][:80]
    return DecisionScript.model_validate(
        {
            "format": "aira.decision-script/1",
            "name": INTENT_SCRIPT,
            "title": title,
            "intent": frame.to_wire(),
            "tier": tier_name or "T128",
            "decisions": [{"act": "abstain", "reason": "no decision source was given"}],
        }
    )


def intent_of_header(header: Mapping[str, Any]) -> DecisionScript:
    """The task in words a trajectory's header recorded (``intent``), for a resume."""
    from pydantic import ValidationError

    from aira_core.contracts.plan import IntentFrame

    try:
        frame = IntentFrame.model_validate(header.get("intent"))
    except ValidationError:
        raise AiraError(
            RUN_TASK_INVALID, "the trajectory's header holds no usable intent"
        ) from None
    script = intent_script(
        frame.goal, header.get("tier") if isinstance(header.get("tier"), str) else None
    )
    return script.model_copy(update={"intent": frame})


@dataclass
class Run:
    script: DecisionScript
    outcome: Outcome
    store: Path
    trajectory: Path
    files: dict[str, Path]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    """What the run's integrations said: exports the guard refused, adapters that failed
    (``INTEGRATION_FAILED`` warnings; the run went on without them)."""


def _seam(integrations: Iterable[Any] | Integrations | None) -> Integrations:
    """The run's integrations: at most one adapter per role (``INTEGRATION_ROLE_CONFLICT``
    before anything is created)."""
    if isinstance(integrations, Integrations):
        return integrations
    return Integrations(integrations or ())


def _ran(host: StepHost) -> list[Diagnostic]:
    return [*host.refusals, *host.integrations.reported()]


def task_id(script: DecisionScript) -> str:
    """Stable per script, so a replay lands on the same branch name and the same revisions."""
    digest = hashlib.sha256(script.model_dump_json(by_alias=True).encode()).hexdigest()[:12]
    return f"{script.name}-{digest}"


def run_script(
    script: DecisionScript,
    *,
    kernel: Any,
    store: Path,
    trajectory: Path,
    tier_name: str | None = None,
    budgets: TaskBudgets | None = None,
    outputs: Path | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    force: bool = False,
    source: DecisionSource | None = None,
    header: Mapping[str, Any] | None = None,
    task: str | None = None,
    existing_store: bool = False,
    integrations: Iterable[Any] | Integrations | None = None,
    catalog: Any = None,
) -> Run:
    """Replay ``script`` on a fresh store at ``store`` (it must not exist yet).

    With ``existing_store``, a store that exists is worked on instead: the task branches
    from its main head (the script must then bring no starting document). ``task`` is the
    task id (default: :func:`task_id`, a hash of the script, so a replay lands on the same
    branch); a run on an existing store needs its own, or it would continue an earlier
    run's branch.

    ``source`` answers the steps instead of the script's own decisions (the gateway and a
    provider that serves them, say); ``header`` adds fields to the trajectory's header (the
    gateway's task id, so that a resume finds its ledger task). When the run ends (the host
    decided a terminal state), a source with a ``finish()`` is told: the gateway's ledger
    task becomes terminal.

    The trajectory is created first, exclusively on its resolved path (``TRAJECTORY_EXISTS``
    for a path that exists, unless ``force`` replaces it). A run refused after that (a
    document the catalog or the kernel refuses) takes it back: it leaves nothing behind,
    neither trajectory nor store nor the run's directory.

    ``integrations``: the run's Intent / Continuity / Guard adapters (at most one per role;
    :func:`aira_core.integrations.registered_integrations` lists the plugins' ones). The
    guard judges each export; the adapters hear of the task's end after the exports.
    ``catalog``: the production catalog when the caller built it already (built here
    otherwise).
    """
    from aira_core.contracts.amir import AmirDocument

    seam = _seam(integrations)

    reuse = existing_store and store.exists()
    if store.exists() and not reuse:
        raise AiraError(RUN_STORE_EXISTS, f"{store.name} exists; a run starts from a new store")
    if reuse and script.document is not None:
        raise AiraError(
            RUN_STORE_EXISTS,
            f"{store.name} exists: a task that brings its own starting document needs a new store",
        )
    chosen = tier(tier_name or script.tier)
    document = (
        AmirDocument.model_validate(script.document, by_name=False)
        if script.document is not None
        else None
    )
    task = task or task_id(script)  # a hash of the whole script: computed once
    first = {**(header or {}), "script": script.name, "tier": chosen.name, "taskId": task}
    if script.title:  # what the run report is headed with
        first["title"] = script.title
    writer = TrajectoryWriter(trajectory, first, force=force, protect=[store])
    try:
        repository, ctx = _open(store, catalog)
        try:
            # The starting document is written as every document is: checked, its
            # assertions on the kernel (a document the catalog or the kernel refuses starts
            # no run), as `aira model init --from` writes it.
            if not reuse:
                started = WritePath(ctx, kernel).init(document, "init")
                if started.status != "success":
                    raise PatchRejected(list(started.diagnostics))
            writer.keep()
        except BaseException:
            repository.close()
            raise
    except BaseException:
        writer.discard()
        raise
    try:
        try:
            host = StepHost(
                ctx,
                kernel,
                source or ScriptedSource(script),
                task_id=task,
                intent=script.intent,
                tier=chosen,
                budgets=budgets,
                trajectory=writer,
                on_step=on_step,
                integrations=seam,
            )
            outcome = host.run()
            _finish_source(source)
        finally:
            writer.close()
        files: dict[str, Path] = {}
        if outputs is not None:
            files = _artefacts(kernel, repository, host, outputs / script.name, store)
        host.conclude()
    finally:
        repository.close()
    said = _ran(host)
    if outputs is not None:
        files.update(_report(outputs, trajectory, store, files, said))
    return Run(script, outcome, store, trajectory, files, said)


def resume_script(
    script: DecisionScript,
    *,
    kernel: Any,
    store: Path,
    trajectory: Path,
    tier_name: str | None = None,
    budgets: TaskBudgets | None = None,
    outputs: Path | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    source: DecisionSource | None = None,
    task: str | None = None,
    integrations: Iterable[Any] | Integrations | None = None,
) -> Run:
    """Continue an interrupted run of ``script`` from its trajectory and store, without
    running its committed plans again. ``source`` as for :func:`run_script` (a gateway
    answers a step whose reply it already delivered from its ledger, never sending it
    again; it is told when the run ends). The trajectory is opened once, read and continued
    through the same descriptor; a resume refused before its first record changes neither
    the trajectory nor the store. ``integrations`` as for :func:`run_script`."""
    seam = _seam(integrations)
    if not store.exists():
        raise AiraError("RUN_STORE_MISSING", f"{store.name} does not exist; nothing to resume")
    writer = TrajectoryWriter(trajectory, None)  # no header: continue the file
    try:
        header, records = writer.header, writer.records
        # Checked before the store is opened: a task of another script must not even get a
        # branch there.
        expected = task or task_id(script)
        if (header.get("script"), header.get("taskId")) != (script.name, expected):
            raise AiraError(
                RUN_SCRIPT_MISMATCH,
                f"{trajectory.name} is a run of script {header.get('script')!r} "
                f"(task {header.get('taskId')}), not of {script.name!r} (task {expected}); "
                "resume it with the script it ran",
            )
        chosen = tier(tier_name or header.get("tier") or script.tier)
        repository, ctx = _open(store)
        try:
            scripted = ScriptedSource(script)
            host = StepHost(
                ctx,
                kernel,
                source or scripted,
                task_id=expected,
                intent=script.intent,
                tier=chosen,
                budgets=budgets,
                trajectory=writer,
                on_step=on_step,
                integrations=seam,
            )
            scripted.seek(host.resume(records))
            outcome = host.run()
            _finish_source(source)
            files = (
                _artefacts(kernel, repository, host, outputs / script.name, store)
                if outputs
                else {}
            )
            host.conclude()
        finally:
            repository.close()
    finally:
        writer.close()
    said = _ran(host)
    if outputs:
        files.update(_report(outputs, trajectory, store, files, said))
    return Run(script, outcome, store, trajectory, files, said)


def _finish_source(source: DecisionSource | None) -> None:
    """Tell ``source`` that its run ended, when it keeps state about the run: the gateway
    then marks its ledger task terminal (it would otherwise stay ``running``, a task Aira
    still advances, and never show ``completed``). Not called when the run stops by an
    exception: a paused gateway has set its own facts, and an interrupted run may resume."""
    finish = getattr(source, "finish", None)
    if callable(finish):
        finish()


def _open(store: Path, catalog: Any = None) -> tuple[Any, Any]:
    """The store at ``store`` and a plan context on it: the production catalog (``catalog``
    when the caller built it already, with progress say), the local user's grant."""
    from aira_core.catalog.capabilities import capability_index, node_signatures
    from aira_core.catalog.catalog import build_catalog
    from aira_core.catalog.policy import LOCAL_GRANT
    from aira_core.model.repository import ModelRepository
    from aira_core.runtime.plan import PlanContext

    catalog = catalog if catalog is not None else build_catalog()
    index = capability_index(catalog)
    repository = ModelRepository.open(store, node_signatures(index))
    ctx = PlanContext(catalog=catalog, repository=repository, grant=LOCAL_GRANT, capabilities=index)
    return repository, ctx


def _artefacts(
    kernel: Any, repository: Any, host: StepHost, base: Path, store: Path
) -> dict[str, Path]:
    """A STEP file, an SVG preview and the display mesh the run report draws
    (``NAME.mesh.json``, ``aira.mesh/1``) of the task's final revision (every body), each
    written only if the run's guard allows it (:meth:`StepHost.judge_export`). A resumed run
    replaces its own (never writing through a symlink put there)."""
    from aira_core.report import display_mesh
    from aira_core.report.reader import MESH_SUFFIX

    document = repository.document(host.task.head)
    if not document.bodies:
        return {}
    base.parent.mkdir(parents=True, exist_ok=True)
    out = {}
    exports: dict[str, tuple[Path, Callable[[], bytes]]] = {
        "step": (base.with_suffix(".step"), lambda: kernel_guard.export(kernel, document, "step")),
        "svg": (base.with_suffix(".svg"), lambda: kernel_guard.export(kernel, document, "svg")),
        "mesh": (base.with_name(base.name + MESH_SUFFIX), lambda: display_mesh(kernel, document)),
    }
    for fmt, (path, export) in exports.items():
        data = export()
        if data and host.judge_export(fmt, path.name, data):
            write_file(path, data, force=True, protect=[store])
            out[fmt] = path
    return out


def _report(
    outputs: Path,
    trajectory: Path,
    store: Path,
    files: Mapping[str, Path],
    said: list[Diagnostic],
) -> dict[str, Path]:
    """The run's report (``report.html`` in ``outputs``), from what the run wrote: its
    trajectory, its store and its display mesh (``files``: drawn only if this run wrote
    it). A report that cannot be made is a warning
    in ``said``: the run it would describe stands."""
    from aira_core.report import REPORT, read_run, write_report

    try:
        run = read_run(outputs, trajectory=trajectory, store=store, mesh_file=files.get("mesh"))
        outputs.mkdir(parents=True, exist_ok=True)  # a task without bodies exported nothing
        return {"report": write_report(run, outputs / REPORT, protect=(store, trajectory))}
    except AiraError as exc:
        code, why = exc.code, exc.diagnostic.message
    except OSError as exc:  # its directory could not be made
        code, why = "OUTPUT_UNWRITABLE", f"{exc.strerror or exc} ({outputs.name})"
    said.append(
        Diagnostic(code=code, severity="warning", message=f"the run report was not written: {why}")
    )
    return {}
