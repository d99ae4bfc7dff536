"""``aira model``: the AMIR model's revisions, history and pages; patch, import, export,
revert."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aira_core.cli._options import (
    BranchOption,
    ForceFlag,
    JsonFlag,
    KernelOption,
    StoreOption,
    _context,
    _kernel,
    _refused_unless_success,
    _repository,
    _rev,
    _write,
    command_group,
)
from aira_core.cli._output import (
    _console,
    _json_text,
    _loads,
    _print_json,
    _read_json_file,
    _report_envelope,
    _table,
    progress,
)

model_app = command_group("The AMIR model: revisions, history, pages.")


@model_app.command("init")
def model_init(
    document: Annotated[
        Path | None, typer.Option("--from", help="Start from this AMIR document (JSON).")
    ] = None,
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Create the store and its main branch (empty, or from a document).

    A document's node inputs are checked against the operations of the admitted catalog,
    as `aira model patch` checks them; if it has assertions, it is evaluated and each
    assertion validated on the installed kernel (the only one, or --kernel NAME), as at
    every commit. A refused document creates nothing.
    """
    from pydantic import ValidationError

    from aira_core.catalog.catalog import Catalog
    from aira_core.contracts.amir import AmirDocument
    from aira_core.diagnostics import AiraError
    from aira_core.model.repository import ModelRepository

    chosen = _kernel(kernel, "--kernel") if kernel is not None else None
    doc = None
    if document is not None:
        try:
            doc = AmirDocument.model_validate(_read_json_file(document, "document"), by_name=False)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            raise AiraError(
                "AMIR_DOCUMENT_INVALID",
                f"{document.name}: {first['msg']} at "
                + "/".join(str(p) for p in first["loc"])
                + f" ({exc.error_count()} errors)",
            ) from None
    with ModelRepository.open(store) as repo:
        # An empty document needs no catalog (nothing to check its nodes against).
        ctx = _context(repo, catalog=None if doc is not None else Catalog(), quiet=as_json)
        envelope = _write(ctx, chosen).init(doc, "init")
        _refused_unless_success(envelope)
    if as_json:
        _print_json({"format": "aira.model.init/1", "branch": "main", "rev": envelope.data["rev"]})
    else:
        typer.echo(f"initialised main at {envelope.data['rev']}")


@model_app.command("log")
def model_log(
    branch: BranchOption = "main",
    limit: Annotated[int, typer.Option("--limit", min=1)] = 20,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """A branch's history, newest first."""
    with _repository(store) as repo:
        records = repo.store.log(branch, limit)
    rows = [
        {
            "seq": r.seq,
            "branch": r.branch,
            "rev": r.rev,
            "parent": r.parent,
            "kind": r.kind,
            "message": r.message,
            "createdAt": r.created_at,
        }
        for r in records
    ]
    if as_json:
        _print_json({"format": "aira.model.log/1", "branch": branch, "records": rows})
        return
    _table(
        f"History of {branch}",
        ["seq", "kind", "rev", "message", "at"],
        [[str(r["seq"]), *(r[k] for k in ("kind", "rev", "message", "createdAt"))] for r in rows],
    )


@model_app.command("show")
def model_show(
    rev: Annotated[str, typer.Argument(help="A revision id, or a branch for its head.")] = "main",
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The summary of a revision: counts, block hashes, roots and the first aliases."""
    with _repository(store) as repo:
        summary = repo.summary(_rev(repo, rev))
    if as_json:
        _print_json(summary.to_wire())
        return
    console = _console()
    console.print(f"revision {summary.rev}", soft_wrap=True)
    for block, count in summary.counts.items():
        console.print(f"  {block:<11} {count:>5}  {summary.blocks[block]}", soft_wrap=True)
    if summary.aliases:
        _table(
            "Aliases",
            ["alias", "id"],
            [[a, i] for a, i in summary.aliases.items()],
        )
    if summary.aliases_omitted:
        console.print(f"  {summary.aliases_omitted} more aliases: `aira model read --select`")


@model_app.command("read")
def model_read(
    select: Annotated[
        str, typer.Option("--select", help='A path: \'["nodes","n:base"]\' or nodes/n:base.')
    ],
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    limit: Annotated[int, typer.Option("--limit", min=1)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """A bounded page of a revision: a block, or one entity by alias or id."""
    if select.lstrip().startswith("["):
        path = _loads(select, "--select", "SELECT_PATH_INVALID")
    else:
        path = [part for part in select.split("/") if part]
    with _repository(store) as repo:
        page = repo.select(_rev(repo, rev), path, limit, offset)
    body = page.to_wire()
    if as_json:
        _print_json(body)
        return
    typer.echo(_json_text(body))


@model_app.command("diff")
def model_diff(
    rev_a: Annotated[str, typer.Argument(help="Revision or branch.")],
    rev_b: Annotated[str, typer.Argument(help="Revision or branch.")],
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The blocks that changed between two revisions."""
    with _repository(store) as repo:
        a, b = _rev(repo, rev_a), _rev(repo, rev_b)
        changed = repo.diff(a, b)
    if as_json:
        _print_json({"format": "aira.model.diff/1", "from": a, "to": b, "changedBlocks": changed})
        return
    typer.echo("\n".join(changed) if changed else "no block changed")


@model_app.command("patch")
def model_patch(
    patch: Annotated[Path, typer.Argument(help='AMIR patch JSON: {"ops": [...]}.')],
    branch: BranchOption = "main",
    expect: Annotated[
        str | None, typer.Option("--expect", help="Refuse unless the head is this revision.")
    ] = None,
    message: Annotated[str, typer.Option("--message", "-m")] = "",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Apply an AMIR patch to a branch head and commit it (all or nothing).

    Node inputs are checked against the operations of the admitted catalog; an operation
    that no admitted capability provides is refused. Assertions are re-checked on every
    commit: if the patched document has assertions, it is evaluated and each assertion
    validated on the installed kernel (the only one, or --kernel NAME), and any failure
    refuses the commit with its diagnostics. A document with assertions cannot be
    committed without a kernel: KERNEL_UNAVAILABLE.
    """
    ops = _read_json_file(patch, "patch")
    chosen = _kernel(kernel, "--kernel") if kernel is not None else None
    with _repository(store) as repo:
        write = _write(_context(repo, quiet=as_json), chosen)
        envelope = write.apply_patch(
            ops,
            "patch",
            branch=branch,
            expected_head=expect,
            message=message or f"patch {patch.name}",
        )
        _refused_unless_success(envelope)
    head, rev = envelope.data["from"], envelope.data["rev"]
    if as_json:
        _print_json({"format": "aira.model.patch/1", "branch": branch, "from": head, "rev": rev})
        return
    typer.echo(f"{branch}: {head} -> {rev}")


@model_app.command("export")
def model_export(
    file_format: Annotated[
        str, typer.Option("--format", help="step, stl, 3mf, svg, or mesh (display-mesh JSON).")
    ],
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    body: Annotated[
        str | None,
        typer.Option(
            "--body",
            help="Export only this body (alias or id). Default: every body of the revision, "
            "the part as the model shows it; a boolean's tool is consumed (no longer a body) "
            "unless its step said keepTool: true, and the output names each body written.",
        ),
    ] = None,
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    tolerance: Annotated[
        float | None,
        typer.Option(
            "--tolerance",
            metavar="MM",
            help="stl, 3mf, mesh: the largest distance (mm, 0.001 to 10) between the mesh and "
            "the exact surface; finer gives more triangles. Default: the kernel's (OCCT: "
            "1/2000 of each body's bounding-box diagonal, within 0.001-1 mm). Out of range: "
            "EXPORT_TOLERANCE_INVALID; for step or svg (not meshes) or a kernel that takes "
            "none: EXPORT_TOLERANCE_UNSUPPORTED, not ignored. Nothing is written then.",
        ),
    ] = None,
    angular_tolerance: Annotated[
        float | None,
        typer.Option(
            "--angular-tolerance",
            metavar="DEG",
            help="stl, 3mf, mesh: the angular deflection (degrees, 3 to 60) on a curved face; "
            "a full circle gets about 720/DEG segments. Default: the kernel's (OCCT: 0.3 rad, "
            "about 17°). Refused as --tolerance is.",
        ),
    ] = None,
    force: ForceFlag = False,
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Export a revision's bodies through the kernel (a file outside the model).

    Without --body, every body of the revision is written, as one compound: the part as
    the model shows it (a boolean consumes its tool unless keepTool, so the tool is no
    longer a body); when that is more than one body, the output lists them. The file is
    written atomically and never over an existing one (OUTPUT_EXISTS) unless
    --force; never through a symlink, and never over Aira's own stores (OUTPUT_PROTECTED)."""
    from aira_core.diagnostics import AiraError
    from aira_core.files import check_target, write_file
    from aira_core.kernel_guard import check_export_tolerances

    # the arguments first, then the file, before the kernel's work, not after
    check_export_tolerances(file_format, tolerance, angular_tolerance)
    check_target(out, force=force, protect=[store])

    chosen = _kernel(kernel, f"exporting {file_format}")
    with _repository(store) as repo:
        at = _rev(repo, rev)
        document = repo.document(at)
        aliases = repo.aliases(at)
        target = aliases.resolve(body) if body is not None else None
        # which bodies the file holds, said in the output: none is written unannounced
        written = [aliases.alias_of(b.id) for b in document.bodies if target in (None, b.id)]
    from aira_core import kernel_guard

    # a kernel that raises, answers with something else than bytes or blocks: a stable code
    with progress(f"Exporting {file_format.lower()}", quiet=as_json):
        data = kernel_guard.export(
            chosen,
            document,
            file_format.lower(),
            target,
            tolerance=tolerance,
            angular_tolerance=angular_tolerance,
        )
    if not data:
        reasons = getattr(chosen, "last_export_diagnostics", None) or []
        detail = "; ".join(f"{d.code}: {d.message}" for d in reasons)
        raise AiraError(
            "EXPORT_FAILED",
            f"the kernel wrote nothing for {file_format!r}" + (f" ({detail})" if detail else ""),
        )
    write_file(out, data, force=force, protect=[store])
    if as_json:
        _print_json(
            {
                "format": "aira.model.export/1",
                "rev": at,
                "body": target,
                "bodies": written,
                "fileFormat": file_format.lower(),
                "bytes": len(data),
                "out": out.name,
                "tolerance": tolerance,
                "angularTolerance": angular_tolerance,
            }
        )
    else:
        several = f" ({len(written)} bodies: {', '.join(written)})" if len(written) > 1 else ""
        typer.echo(f"wrote {len(data)} bytes of {file_format.lower()} to {out.name}{several}")


@model_app.command("import")
def model_import(
    file: Annotated[Path, typer.Argument(help="The file to import.")],
    file_format: Annotated[
        str | None, typer.Option("--format", help="step (default: from the file's suffix).")
    ] = None,
    label: Annotated[
        str | None, typer.Option("--label", help="Label of the new body (alias b:<label>).")
    ] = None,
    branch: BranchOption = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Import a file as a new body through an admitted importer (e.g. cap:io.importStep@1);
    the file's content goes into the revision, so the model does not depend on the file."""
    from aira_core.runtime.imports import import_file, read_text

    text = read_text(file)  # a FIFO, a device, a huge file: refused before anything is opened
    chosen = _kernel(kernel, "--kernel") if kernel is not None else None
    with _repository(store) as repo:
        write = _write(_context(repo, quiet=as_json), chosen)
        label_used, envelope = import_file(
            write, file, "import", kind=file_format, label=label, branch=branch, text=text
        )
    if not as_json:
        typer.echo(f"importing {file.name} as b:{label_used}")
    _report_envelope(envelope, as_json=as_json)


@model_app.command("revert")
def model_revert(
    rev: Annotated[str, typer.Argument(help="The revision to restore.")],
    branch: BranchOption = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Restore an earlier revision as a new history record (history is never rewritten).

    The restored document is checked as every write is: its node inputs against the admitted
    catalog's operations and, if it has assertions, each one on the kernel."""
    chosen = _kernel(kernel, "--kernel") if kernel is not None else None
    with _repository(store) as repo:
        envelope = _write(_context(repo, quiet=as_json), chosen).revert(
            _rev(repo, rev), "revert", branch=branch
        )
        _refused_unless_success(envelope)
    head, new = envelope.data["from"], envelope.data["rev"]
    if as_json:
        _print_json({"format": "aira.model.revert/1", "branch": branch, "from": head, "rev": new})
        return
    typer.echo(f"{branch}: {head} -> {new}")
