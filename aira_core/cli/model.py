"""``aira model``: the AMIR model's revisions, history and pages; patch, import, export,
revert."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from aira_core.cli._options import (
    BranchOption,
    JsonFlag,
    KernelOption,
    StoreOption,
    _kernel,
    _repository,
    _rev,
)
from aira_core.cli._output import _console, _json_text, _loads, _print_json, _read_json_file, _table
from aira_core.cli.plan import _apply_and_report, _plan_context

model_app = typer.Typer(help="The AMIR model: revisions, history, pages.", no_args_is_help=True)


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

    from aira_core.contracts.amir import AmirDocument
    from aira_core.diagnostics import AiraError
    from aira_core.model.patch import PatchRejected, validate_document
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
    signatures = _catalog_signatures() if doc is not None else None
    if doc is not None and doc.assertions:
        # Stored with failing assertions, the document would refuse every later patch (each
        # commit re-checks them): checked as a commit is, operations first, then the kernel.
        problems = validate_document(doc, signatures)
        if problems:
            raise PatchRejected(problems)
        needed = (
            f"the document has {len(doc.assertions)} assertion(s), "
            "checked on a kernel before it is stored"
        )
        _check_assertions(chosen or _kernel(None, needed), AmirDocument(), doc)
    with ModelRepository.open(store, signatures) as repo:
        revision = repo.init(doc)
    if as_json:
        _print_json({"format": "aira.model.init/1", "branch": "main", "rev": revision.rev})
    else:
        typer.echo(f"initialised main at {revision.rev}")


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
        [[str(r["seq"]), r["kind"], r["rev"], r["message"], r["createdAt"]] for r in rows],
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
        _table("Aliases", ["alias", "id"], [[a, i] for a, i in summary.aliases.items()])
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


def _catalog_signatures() -> Any:
    """Operation signatures of the admitted production catalog."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.model.operations import signatures_from_descriptors

    catalog = build_catalog()
    return signatures_from_descriptors(
        (d, p.manifest.schemas) for p in catalog.packages.values() for d in p.manifest.descriptors
    )


def _check_assertions(kernel: Any, before: Any, document: Any) -> None:
    """Evaluate ``document`` on ``kernel`` and validate every assertion; raise
    :class:`PatchRejected` with the diagnostics of what failed."""
    from aira_core.diagnostics import AiraError, Diagnostic
    from aira_core.model.patch import PatchRejected, changed_nodes

    try:
        evaluation = kernel.evaluate(document, changed_nodes(before, document))
        outcomes = (
            [kernel.validate(document, a) for a in document.assertions] if evaluation.ok else []
        )
    except Exception as exc:  # a kernel bug: a code, not a traceback
        raise AiraError(
            "KERNEL_FAILED",
            f"the kernel {kernel.name!r} raised {type(exc).__name__}: {exc}",
        ) from None
    if not evaluation.ok:
        raise PatchRejected(
            [d.model_copy(update={"phase": "preview"}) for d in evaluation.diagnostics]
        )
    failing = [
        d.model_copy(update={"phase": "validate"})
        for o in outcomes
        if not o.passed
        for d in (
            o.diagnostics
            or [
                Diagnostic(
                    code="ASSERTION_FAILED",
                    subject=o.assertion,
                    message=f"assertion {o.assertion} failed: {dict(o.measured)}",
                )
            ]
        )
    ]
    if failing:
        raise PatchRejected(failing)


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
    from aira_core.model.patch import apply_patch
    from aira_core.model.repository import ModelRepository

    ops = _read_json_file(patch, "patch")
    with ModelRepository.open(store, _catalog_signatures()) as repo:
        head = expect or repo.head(branch)
        before = repo.document(head)
        chosen = _kernel(kernel, "--kernel") if kernel is not None else None
        document = apply_patch(before, ops, repo.signatures)
        if document.assertions:
            needed = (
                f"the patched document has {len(document.assertions)} assertion(s), "
                "re-checked on a kernel at every commit"
            )
            _check_assertions(chosen or _kernel(None, needed), before, document)
        revision = repo.commit(branch, head, document, message or f"patch {patch.name}")
    if as_json:
        _print_json(
            {"format": "aira.model.patch/1", "branch": branch, "from": head, "rev": revision.rev}
        )
        return
    typer.echo(f"{branch}: {head} -> {revision.rev}")


@model_app.command("export")
def model_export(
    file_format: Annotated[
        str, typer.Option("--format", help="step, stl, 3mf, svg, or mesh (display-mesh JSON).")
    ],
    out: Annotated[Path, typer.Option("--out", help="File to write.")],
    body: Annotated[
        str | None, typer.Option("--body", help="Body alias or id (default: all bodies).")
    ] = None,
    rev: Annotated[str, typer.Option("--rev", help="Revision or branch.")] = "main",
    kernel: KernelOption = None,
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Export a revision's bodies through the kernel (a file outside the model)."""
    from aira_core.diagnostics import AiraError

    chosen = _kernel(kernel, f"exporting {file_format}")
    with _repository(store) as repo:
        at = _rev(repo, rev)
        document = repo.document(at)
        target = repo.aliases(at).resolve(body) if body is not None else None
    data = chosen.export(document, file_format.lower(), target)
    if not data:
        reasons = getattr(chosen, "last_export_diagnostics", None) or []
        detail = "; ".join(f"{d.code}: {d.message}" for d in reasons)
        raise AiraError(
            "EXPORT_FAILED",
            f"the kernel wrote nothing for {file_format!r}" + (f" ({detail})" if detail else ""),
        )
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise AiraError("EXPORT_FAILED", f"cannot write {out.name!r}: {exc.strerror}") from None
    if as_json:
        _print_json(
            {
                "format": "aira.model.export/1",
                "rev": at,
                "body": target,
                "fileFormat": file_format.lower(),
                "bytes": len(data),
                "out": out.name,
            }
        )
    else:
        typer.echo(f"wrote {len(data)} bytes of {file_format.lower()} to {out.name}")


IMPORT_MAX_BYTES = 8 * 1024 * 1024
"""An imported file's content is stored in every later revision: keep it bounded."""


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
    from aira_core.catalog.catalog import build_catalog
    from aira_core.contracts.capability import CapabilityKind, short_name
    from aira_core.contracts.plan import Plan
    from aira_core.diagnostics import AiraError
    from aira_core.model.aliases import label_alias_safe

    kind = (file_format or file.suffix.lstrip(".")).lower()
    kind = {"stp": "step"}.get(kind, kind)
    importers = {
        short_name(cap).lower(): cap
        for cap, d in build_catalog().capabilities().items()
        if d.kind is CapabilityKind.IMPORTER
    }
    capability = importers.get(f"import{kind}")
    if capability is None:
        known = sorted(
            name.removeprefix("import") for name in importers if name.startswith("import")
        )
        raise AiraError(
            "IMPORT_UNSUPPORTED",
            f"no admitted importer reads {kind or 'this file'!r}; known: "
            + (", ".join(known) or "none"),
        )
    try:
        size = file.stat().st_size
        if size > IMPORT_MAX_BYTES:
            raise AiraError(
                "IMPORT_FAILED", f"{file.name!r} is {size} bytes; at most {IMPORT_MAX_BYTES}"
            )
        text = file.read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise AiraError("IMPORT_FAILED", f"{file.name!r} is not a text file") from None
    except OSError as exc:
        raise AiraError("IMPORT_FAILED", f"cannot read {file.name!r}: {exc.strerror}") from None
    if label is not None and not label_alias_safe(label):
        raise AiraError(
            "LABEL_INVALID",
            f"--label {label[:60]!r} cannot be an alias: a letter, then up to 47 letters, digits, "
            "'_' or '-', and not shaped like a short id",
        )
    chosen = _kernel(kernel, f"importing {kind}")
    ctx = _plan_context(store, branch, None, None)
    try:
        head = ctx.repository.head(branch)
        aliases = ctx.repository.aliases(head)
    except Exception:
        ctx.repository.close()
        raise
    if label is None:  # the file's name, made alias-safe and free ('plate v2.step' -> plate_v2)
        stem = re.sub(r"[^A-Za-z0-9_-]+", "_", file.stem).strip("_-")[:40] or "import"
        base = stem if label_alias_safe(stem) else f"import_{stem}"[:47]
        label = base
        n = 2
        while f"b:{label}" in aliases:
            label, n = f"{base}_{n}", n + 1
    elif f"b:{label}" in aliases:
        ctx.repository.close()
        raise AiraError("LABEL_TAKEN", f"b:{label} already names a body; choose another --label")
    step = {"id": "import", "capability": capability, "label": label, "args": {"data": text}}
    the_plan = Plan.model_validate({"baseRevision": head, "steps": [step]}, by_name=False)
    if not as_json:
        typer.echo(f"importing {file.name} as b:{label}")
    _apply_and_report(ctx, chosen, the_plan, publish=False, approve=False, as_json=as_json)


@model_app.command("revert")
def model_revert(
    rev: Annotated[str, typer.Argument(help="The revision to restore.")],
    branch: BranchOption = "main",
    store: StoreOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Restore an earlier revision as a new history record (history is never rewritten)."""
    with _repository(store) as repo:
        head = repo.head(branch)
        revision = repo.revert(branch, head, rev, f"revert to {rev}")
    if as_json:
        _print_json(
            {"format": "aira.model.revert/1", "branch": branch, "from": head, "rev": revision.rev}
        )
        return
    typer.echo(f"{branch}: {head} -> {revision.rev}")
