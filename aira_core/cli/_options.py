"""Options several command groups share, and what they name: the output form, the
installed kernel, the model store and its branch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable output (stable).")]

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
