"""AMIR documents over the revision store: what the runtime and the CLI use.

Every revision comes with its alias table, block hashes, summary and pages. Those are pure
functions of the (immutable) document, so the summary and block hashes are computed once,
kept in the store beside the document (each with a digest the store checks on read), and a
head summary read is one row away.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aira_core.contracts.amir import AmirDocument
from aira_core.diagnostics import AiraError, redact_value
from aira_core.model import blocks
from aira_core.model.aliases import AliasTable
from aira_core.model.operations import OperationSignature
from aira_core.model.patch import PatchRejected, validate_document
from aira_core.model.store import MAIN, ModelStore, Revision

AMIR_DOCUMENT_INVALID = "AMIR_DOCUMENT_INVALID"
SUMMARY_KEY = "summary/1"
BLOCKS_KEY = "blocks/1"
_CACHE = 16


class _LRU(OrderedDict[str, Any]):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def recall(self, key: str) -> Any | None:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def remember(self, key: str, value: Any) -> Any:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)
        return value


class ModelRepository:
    """The model layer: validated AMIR documents in, revisions and their views out.

    :meth:`init`, :meth:`commit` and :meth:`revert` are the store primitives under the one
    write path (:class:`aira_core.runtime.write.WritePath`), which previews the document and
    re-checks its assertions on a kernel first; write through that, not around it.

    ``signatures`` (operation ref → signature, e.g. from the admitted catalog) make every
    commit check node inputs against the operations; without them only the document's own
    structure is checked.
    """

    def __init__(
        self,
        store: ModelStore,
        signatures: Mapping[str, OperationSignature] | None = None,
    ) -> None:
        self.store = store
        self.signatures = signatures
        self._documents: _LRU = _LRU(_CACHE)
        self._aliases: _LRU = _LRU(_CACHE)

    @classmethod
    def open(
        cls,
        path: Path | str | None = None,
        signatures: Mapping[str, OperationSignature] | None = None,
        *,
        create: bool = False,
    ) -> ModelRepository:
        """The repository over the store at ``path``. Without ``create`` a missing store is
        not created: reads are ``STORE_UNAVAILABLE`` and only :meth:`init` creates it."""
        return cls(ModelStore(path, create=create), signatures)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> ModelRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------

    def _checked(self, document: AmirDocument) -> AmirDocument:
        document = _redacted_labels(document)
        problems = validate_document(document, self.signatures)
        if problems:
            raise PatchRejected(problems)
        return document

    def _kept(self, revision: Revision, document: AmirDocument) -> Revision:
        self._documents.remember(revision.rev, document)
        self._keep_views(revision.rev, document)
        return revision

    def init(self, document: AmirDocument | None = None, message: str = "init") -> Revision:
        """Create ``main`` at ``document`` (default: an empty document), and the store if
        there is none yet; a document that is refused creates nothing."""
        document = self._checked(document or AmirDocument())
        return self._kept(self.store.init(document, message), document)

    def commit(
        self,
        branch: str,
        expected_head: str,
        document: AmirDocument,
        message: str = "",
        meta: Mapping[str, Any] | None = None,
        *,
        create_branch: bool = False,
        checked: bool = False,
    ) -> Revision:
        """Commit a whole document on ``branch`` if its head is still ``expected_head``
        (creating ``branch`` at ``expected_head`` first, atomically, with ``create_branch``).

        ``checked``: the caller has just validated ``document`` (``apply_patch`` or
        ``validate_document``, as the write path's propose stage does), so it is not
        validated a second time."""
        document = self._checked(document) if not checked else _redacted_labels(document)
        revision = self.store.commit(
            branch,
            expected_head,
            document,
            message,
            redact_value(meta),
            create_branch=create_branch,
        )
        return self._kept(revision, document)

    def revert(self, branch: str, expected_head: str, to_rev: str, message: str = "") -> Revision:
        return self.store.revert(branch, expected_head, to_rev, message)

    # -- reading ---------------------------------------------------------------------------

    def head(self, branch: str = MAIN) -> str:
        return self.store.head(branch)

    def document(self, rev: str) -> AmirDocument:
        cached = self._documents.recall(rev)
        if cached is not None:
            return cached
        raw = self.store.read(rev)
        try:
            document = AmirDocument.model_validate(raw, by_name=False)
        except ValidationError as exc:
            raise AiraError(
                AMIR_DOCUMENT_INVALID,
                f"revision {rev} is not an AMIR document ({exc.error_count()} errors)",
            ) from None
        return self._documents.remember(rev, document)

    def aliases(self, rev: str) -> AliasTable:
        cached = self._aliases.recall(rev)
        if cached is not None:
            return cached
        return self._aliases.remember(rev, AliasTable.build(rev, self.document(rev)))

    # Kept views are derived from the document: one that is missing, or that is intact but
    # of another shape (kept by another version), is computed again. One that is damaged
    # (fails its digest) is STORE_CORRUPT from the store: never served, never masked.

    def _kept_view(self, rev: str, name: str) -> Any:
        return self.store.derived(rev, name)

    def block_hashes(self, rev: str) -> dict[str, str]:
        kept = self._kept_view(rev, BLOCKS_KEY)
        if not (
            isinstance(kept, dict)
            and set(kept) == set(blocks.BLOCKS)
            and all(isinstance(h, str) for h in kept.values())
        ):
            kept = self._keep_views(rev, self.document(rev))[0]
        return dict(kept)

    def summary(self, rev: str) -> blocks.Summary:
        """The revision's summary (≤ 2k host tokens), computed once per revision."""
        kept = self._kept_view(rev, SUMMARY_KEY)
        if kept is not None:
            try:
                return blocks.Summary.model_validate(kept)
            except ValidationError:
                pass
        return self._keep_views(rev, self.document(rev))[1]

    def select(
        self,
        rev: str,
        path: Sequence[str],
        limit: int = blocks.DEFAULT_SELECT_LIMIT,
        offset: int = 0,
    ) -> blocks.Page:
        return blocks.select(rev, self.document(rev), self.aliases(rev), path, limit, offset)

    def diff(self, rev_a: str, rev_b: str) -> list[str]:
        """The blocks that changed between two revisions."""
        a, b = self.block_hashes(rev_a), self.block_hashes(rev_b)
        return [name for name in blocks.BLOCKS if a[name] != b[name]]

    def _keep_views(
        self, rev: str, document: AmirDocument
    ) -> tuple[dict[str, str], blocks.Summary]:
        hashes = blocks.block_hashes(document)
        aliases = self._aliases.recall(rev) or self._aliases.remember(
            rev, AliasTable.build(rev, document)
        )
        summary = blocks.summary(rev, document, aliases, hashes=hashes)
        # Kept after the commit's own transaction: a crash in between only means the next
        # read computes them again.
        self.store.keep_derived(rev, {BLOCKS_KEY: hashes, SUMMARY_KEY: summary.to_wire()})
        return hashes, summary


AMIR_CREDENTIAL_IN_ID = "AMIR_CREDENTIAL_IN_ID"
_REFERENCE_KEYS = frozenset({"id", "param", "node", "body", "target"})
"""The keys of a document's wire form whose string values name an entity."""


def _redacted_labels(document: AmirDocument) -> AmirDocument:
    """``document`` with every string a user or model wrote into it redacted before it is
    stored: labels, String parameter values, the text of operation arguments. Ids and the
    references to them cannot be changed without breaking what refers to them: one that
    holds a credential is ``AMIR_CREDENTIAL_IN_ID``. The same object when nothing holds a
    credential, as is the rule, so revision ids stay what they were."""
    wire = document.to_wire()
    redacted = redact_value(wire)
    if redacted == wire:
        return document
    changed = _reference_changed(wire, redacted)
    if changed is not None:
        raise AiraError(
            AMIR_CREDENTIAL_IN_ID,
            f"the document's {changed} holds a credential; an id is kept for good, so the "
            "document is refused: name the entity without it",
            pointer=changed,
        )
    return AmirDocument.model_validate(redacted, by_name=False)


def _reference_changed(before: Any, after: Any, path: str = "") -> str | None:
    """The JSON pointer of the first id or reference (or key) that redaction changed."""
    if isinstance(before, dict):
        if list(before) != list(after):
            return path or "/"
        for key, value in before.items():
            if key in _REFERENCE_KEYS and isinstance(value, str) and value != after[key]:
                return f"{path}/{key}"
            found = _reference_changed(value, after[key], f"{path}/{key}")
            if found is not None:
                return found
    elif isinstance(before, list):
        for i, (a, b) in enumerate(zip(before, after, strict=True)):
            found = _reference_changed(a, b, f"{path}/{i}")
            if found is not None:
                return found
    return None
