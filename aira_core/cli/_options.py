"""Options several command groups share, and what they name: the output form, the
installed kernel, the model store and its branch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def positive_amount(value: float | None) -> float | None:
    """A typer callback for an amount that must be a finite number above 0 (a budget): 0,
    -0, inf, 1e309 and nan are usage errors where the option is parsed."""
    import math

    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value!r} is no amount: give a finite number above 0")
    return value


def command_group(help: str) -> typer.Typer:
    """A command group with plain (click) help: typer's Rich help formatter imports
    rich.markdown, markdown_it and rich.traceback, ~0.2 s that every `--help` would pay."""
    return typer.Typer(rich_markup_mode=None, help=help, no_args_is_help=True)


JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output (stable).")]

ForceFlag = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace an existing output file (with a new file: never written into, never "
        "through a symlink; Aira's own stores are never replaced).",
    ),
]

StoreOption = Annotated[
    Path | None,
    typer.Option("--store", help="Store file (default: models/store.sqlite3 in AIRA_HOME)."),
]
BranchOption = Annotated[str, typer.Option("--branch", help="main or task/<id>.")]


def _repository(store: Path | None) -> Any:
    from aira_core.model.repository import ModelRepository

    return ModelRepository.open(store)


def _rev(repo: Any, ref: str) -> str:
    """A revision id, or a branch name standing for its head."""
    return repo.head(ref) if not ref.startswith("rev:") else ref


KernelOption = Annotated[
    str | None, typer.Option("--kernel", help="Kernel name (default: the only one installed).")
]


def _kernel(name: str | None, needed_for: str) -> Any:
    """The installed kernel called ``name``, or the only one installed; else
    ``KERNEL_UNAVAILABLE`` saying what it was ``needed_for``."""
    from aira_core.diagnostics import AiraError
    from aira_core.plugins import get_registry

    kernels = get_registry().named("kernels")
    installed = ", ".join(sorted(kernels)) or "none"
    if name is not None and name not in kernels:
        raise AiraError(
            "KERNEL_UNAVAILABLE", f"no kernel named {name!r} ({needed_for}); installed: {installed}"
        )
    if name is None and len(kernels) != 1:
        raise AiraError(
            "KERNEL_UNAVAILABLE",
            f"{needed_for}: "
            + ("no kernel is installed" if not kernels else "choose a kernel with --kernel")
            + f"; installed: {installed}",
        )
    return kernels[name] if name is not None else next(iter(kernels.values()))


def _catalog(*, quiet: bool = False) -> Any:
    """The production catalog, built with progress on stderr: a first build (or one after a
    package changed) lints and runs conformance on every package, which takes seconds."""
    from aira_core.catalog.catalog import build_catalog
    from aira_core.cli._output import progress

    with progress("Building the catalog", quiet=quiet) as update:
        return build_catalog(
            on_package=lambda name, done, total: update(
                description=f"Checking package {name} ({done + 1}/{total})"
            )
        )


def _context(
    repo: Any, catalog: Any = None, grant: Any = None, intent: Any = None, *, quiet: bool = False
) -> Any:
    """What the library checks a write against: the admitted catalog (built here unless
    given), the repository and the grant (default: the local user's)."""
    from aira_core.catalog.policy import LOCAL_GRANT
    from aira_core.runtime.plan import PlanContext

    return PlanContext(
        catalog=catalog if catalog is not None else _catalog(quiet=quiet),
        repository=repo,
        grant=grant or LOCAL_GRANT,
        intent=intent,
    )


def _write(ctx: Any, chosen: Any) -> Any:
    """The one write path; the kernel is ``chosen``, or the only one installed (``None``
    when there is none or several: a write that needs one is then KERNEL_UNAVAILABLE)."""
    from aira_core.plugins import get_registry
    from aira_core.runtime.write import WritePath

    if chosen is None:
        kernels = get_registry().named("kernels")
        chosen = next(iter(kernels.values())) if len(kernels) == 1 else None
    return WritePath(ctx, chosen)


def _refused_unless_success(envelope: Any) -> None:
    """A write's failed envelope as the command's error (every diagnostic, exit 1); a
    missing kernel names the installed ones, as --kernel would."""
    from aira_core.model.patch import PatchRejected

    if envelope.status == "success":
        return
    if [d.code for d in envelope.diagnostics] == ["KERNEL_UNAVAILABLE"]:
        _kernel(None, envelope.diagnostics[0].message)  # raises with the installed kernels
    raise PatchRejected(list(envelope.diagnostics))
