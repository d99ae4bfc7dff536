"""Importing a file as a new body: the importer, the bounded read, the label, the plan.

A file's content goes into the revision (the model must not depend on the file), so it is
read once, bounded (the ``import`` cap of :mod:`aira_core.inputs`), as UTF-8 text, and
handed to an admitted importer capability (e.g. ``cap:io.importStep@1``) as the one step
of a plan that then takes the one write path.
"""

from __future__ import annotations

import re
from pathlib import Path

from aira_core.contracts.capability import CapabilityKind, short_name
from aira_core.contracts.plan import ObservationEnvelope, Plan
from aira_core.diagnostics import AiraError
from aira_core.inputs import read_input
from aira_core.model.aliases import label_alias_safe
from aira_core.model.store import MAIN
from aira_core.runtime.write import WritePath

SUFFIXES = {"stp": "step"}
"""File suffixes that name another format."""


def file_format(path: Path, given: str | None = None) -> str:
    """The format of ``path``: ``given``, else its suffix (``.stp`` is ``step``)."""
    kind = (given or path.suffix.lstrip(".")).lower()
    return SUFFIXES.get(kind, kind)


def find_importer(write: WritePath, kind: str) -> str:
    """The admitted importer capability for ``kind``, or ``IMPORT_UNSUPPORTED``."""
    importers = {
        short_name(cap).lower(): cap
        for cap, entry in write.ctx.capabilities.items()
        if entry.descriptor.kind is CapabilityKind.IMPORTER
    }
    capability = importers.get(f"import{kind}")
    if capability is None:
        known = sorted(
            name.removeprefix("import") for name in importers if name.startswith("import")
        )
        raise AiraError(
            "IMPORT_UNSUPPORTED",
            f"no admitted importer reads {kind[:40] or 'this file'!r}; known: "
            + (", ".join(known) or "none"),
        )
    return capability


def read_text(path: Path) -> str:
    """The file's text, read by the one input reader (a regular file of at most the
    ``import`` cap, :mod:`aira_core.inputs`), as UTF-8 (``IMPORT_FAILED``)."""
    data = read_input(path, "import", what="file to import", unreadable="IMPORT_FAILED")
    try:
        return data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise AiraError("IMPORT_FAILED", f"{path.name!r} is not a text file") from None


def body_label(write: WritePath, head: str, stem: str, label: str | None = None) -> str:
    """The label of the new body: ``label`` if it is alias-safe and free (``LABEL_INVALID``,
    ``LABEL_TAKEN``), else the file's name made alias-safe and free
    (``plate v2.step`` → ``plate_v2``, then ``plate_v2_2`` …)."""
    aliases = write.repository.aliases(head)
    if label is not None:
        if not label_alias_safe(label):
            raise AiraError(
                "LABEL_INVALID",
                f"label {label[:60]!r} cannot be an alias: a letter, then up to 47 letters, "
                "digits, '_' or '-', and not shaped like a short id",
            )
        if f"b:{label}" in aliases:
            raise AiraError("LABEL_TAKEN", f"b:{label} already names a body; choose another label")
        return label
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", stem).strip("_-")[:40] or "import"
    base = stem if label_alias_safe(stem) else f"import_{stem}"[:47]
    label, n = base, 2
    while f"b:{label}" in aliases:
        label, n = f"{base}_{n}", n + 1
    return label


def import_file(
    write: WritePath,
    path: Path,
    request_id: str,
    *,
    kind: str | None = None,
    label: str | None = None,
    branch: str = MAIN,
    text: str | None = None,
) -> tuple[str, ObservationEnvelope]:
    """Import ``path`` (whose :func:`read_text` is ``text``, if the caller read it already)
    as a new body on ``branch`` through the write path: the label used and the write's
    envelope. Refusals before the write are :class:`AiraError`."""
    if text is None:
        text = read_text(path)
    kind = file_format(path, kind)
    capability = find_importer(write, kind)
    head = write.repository.head(branch)
    label = body_label(write, head, path.stem, label)
    step = {"id": "import", "capability": capability, "label": label, "args": {"data": text}}
    plan = Plan.model_validate({"baseRevision": head, "steps": [step]}, by_name=False)
    return label, write.apply(plan, request_id, branch=branch)
