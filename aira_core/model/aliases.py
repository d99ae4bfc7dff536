"""Aliases: short, per-revision handles for the entities of an AMIR document.

An entity's alias depends only on the entity itself and on the entities of its own kind
that come before it in the document, never on anything added after it, so a commit that
adds entities leaves every existing alias as it was and the handles a model wrote down stay
valid (spec 003 §4.1). Document order is creation order: patches append.

- the first parameter or body (in document order) with an alias-safe label gets
  ``p:<label>`` / ``b:<label>``; the first node with such a label among nodes gets
  ``n:<label>``;
- everything else (assertions, unlabelled entities, and a later entity whose label an
  earlier one of its kind already holds) gets a short form of its own id: the kind prefix
  and the first 4 hex digits of ``sha256_hex(id)``, lengthened one digit at a time only
  while that prefix is already taken by an earlier entity of the same kind.

So adding an entity whose label duplicates an existing one leaves the existing alias alone:
the newcomer gets its short form. Only changing an existing entity can move an alias:
removing (or relabelling) the entity that holds ``b:<label>`` hands that alias to the next
entity with the label, and can shorten the short form of a later entity it collided with;
relabelling an entity to a label that is already held gives it a short form, which in rare
cases lengthens a later entity's colliding short form. A label that looks like a short form
(4 or more lowercase hex digits, e.g. ``beef``) is not used as an alias, so a new label can
never take a short form that an existing entity already has.

The table is authoritative: :meth:`AliasTable.resolve` looks the string up in the table of
its revision and never parses it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from aira_core.canonical import sha256_hex
from aira_core.contracts.amir import (
    ASSERTIONS,
    BLOCK_BY_NAME,
    BLOCKS,
    BODIES,
    NODES,
    PARAMETERS,
    AmirDocument,
)
from aira_core.contracts.base import WireModel
from aira_core.diagnostics import AiraError

ALIAS_UNKNOWN = "ALIAS_UNKNOWN"

SUMMARY_ORDER = tuple(b.name for b in (PARAMETERS, BODIES, NODES, ASSERTIONS))
"""The order aliases are listed and paged in: what a model names most often comes first."""

LABEL_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,47}$")
SHORT_MIN = 4
# A label of this shape could equal some entity's short form; see the module docstring.
_SHORT_SHAPED = re.compile(r"^[0-9a-f]{4,}$")


def label_alias_safe(label: str | None) -> bool:
    """Whether ``label`` may be used as an alias (by the first entity of its kind with it)."""
    return (
        label is not None
        and LABEL_PATTERN.fullmatch(label) is not None
        and _SHORT_SHAPED.fullmatch(label) is None
    )


class AliasPage(WireModel):
    """A slice of an alias table in :data:`SUMMARY_ORDER` (document order within a kind)."""

    rev: str
    aliases: dict[str, str]
    """Alias → full entity id."""
    offset: int
    limit: int
    total: int
    next_offset: int | None = None


class AliasTable:
    """The aliases of one revision: alias ↔ entity id, and each entity's kind."""

    __slots__ = ("_alias_to_id", "_id_to_alias", "_kind", "_order", "rev")

    def __init__(
        self,
        rev: str,
        order: dict[str, list[tuple[str, str]]],
    ) -> None:
        """Use :meth:`build`; ``order`` maps each kind to its (alias, id) pairs in order."""
        self.rev = rev
        self._order = order
        self._alias_to_id: dict[str, str] = {}
        self._id_to_alias: dict[str, str] = {}
        self._kind: dict[str, str] = {}
        for kind, pairs in order.items():
            for alias, entity_id in pairs:
                self._alias_to_id[alias] = entity_id
                self._id_to_alias[entity_id] = alias
                self._kind[entity_id] = kind

    @classmethod
    def build(cls, rev: str, document: AmirDocument) -> AliasTable:
        """The alias table of ``document`` at revision ``rev``."""
        order: dict[str, list[tuple[str, str]]] = {}
        for block in BLOCK_BY_NAME.values():
            kind = block.name
            entities = getattr(document, kind)
            prefix = block.prefix
            held: set[str] = set()  # labels an earlier entity of this kind already holds
            taken: set[str] = set()
            pairs: list[tuple[str, str]] = []
            for entity in entities:
                label = entity.label if block.labelled else None
                if label is not None and label not in held and label_alias_safe(label):
                    held.add(label)
                    pairs.append((f"{prefix}:{label}", entity.id))
                    continue
                pairs.append((f"{prefix}:{_short_form(entity.id, taken)}", entity.id))
            order[kind] = pairs
        return cls(rev, order)

    def alias_of(self, entity_id: str) -> str:
        """The alias of an entity, by its full id."""
        try:
            return self._id_to_alias[entity_id]
        except (KeyError, TypeError):
            raise AiraError(
                ALIAS_UNKNOWN,
                f"no entity with id {entity_id!r} in revision {self.rev}",
                subject=str(entity_id),
            ) from None

    def resolve(self, alias_or_id: str) -> str:
        """The full entity id an alias (or a full id) names in this revision.

        Only a table lookup: nothing is inferred from the shape of the string.
        """
        try:
            found = self._alias_to_id.get(alias_or_id)
            if found is not None:
                return found
            if alias_or_id in self._id_to_alias:
                return alias_or_id
        except TypeError:  # an unhashable value is not an alias either
            pass
        raise AiraError(
            ALIAS_UNKNOWN,
            f"{alias_or_id!r} is neither an alias nor an entity id in revision {self.rev}; "
            "read the summary or a page of this revision for current aliases",
            subject=str(alias_or_id),
        )

    def resolve_values(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """``args`` with every string value that is an alias or id of this revision as the
        entity's id (kernels take ids); other values as they are."""
        return {
            k: self.resolve(v) if isinstance(v, str) and v in self else v for k, v in args.items()
        }

    def kind_of(self, entity_id: str) -> str:
        """The kind (block name) of an entity, by its full id."""
        self.alias_of(entity_id)  # raises ALIAS_UNKNOWN for an unknown id
        return self._kind[entity_id]

    def entries(self, kinds: str | Iterable[str] | None = None) -> Iterator[tuple[str, str]]:
        """(alias, id) pairs of the given kinds (default: all) in summary order."""
        for kind in _kinds(kinds):
            yield from self._order.get(kind, ())

    def count(self, kinds: str | Iterable[str] | None = None) -> int:
        return sum(len(self._order.get(kind, ())) for kind in _kinds(kinds))

    def page(
        self, kind: str | Sequence[str] | None = None, limit: int = 100, offset: int = 0
    ) -> AliasPage:
        """``limit`` aliases of ``kind`` (one kind, several, or all) starting at ``offset``."""
        if limit < 0 or offset < 0:
            raise ValueError("limit and offset must not be negative")
        pairs = list(self.entries(kind))
        chosen = pairs[offset : offset + limit]
        end = offset + len(chosen)
        return AliasPage(
            rev=self.rev,
            aliases=dict(chosen),
            offset=offset,
            limit=limit,
            total=len(pairs),
            next_offset=end if end < len(pairs) else None,
        )

    def to_wire(self) -> dict[str, Any]:
        """``{"rev", "aliases": {alias: id}}`` for the whole table."""
        return {"rev": self.rev, "aliases": dict(self.entries())}

    def __len__(self) -> int:
        return len(self._alias_to_id)

    def __contains__(self, alias_or_id: object) -> bool:
        return alias_or_id in self._alias_to_id or alias_or_id in self._id_to_alias


def _kinds(kinds: str | Iterable[str] | None) -> tuple[str, ...]:
    if kinds is None:
        return SUMMARY_ORDER
    chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    unknown = [k for k in chosen if k not in BLOCK_BY_NAME]
    if unknown:
        raise ValueError(f"unknown entity kind(s) {unknown}; kinds are {', '.join(BLOCKS)}")
    return chosen


def _short_form(entity_id: str, taken: set[str]) -> str:
    """The shortest free prefix (at least 4 hex digits) of the id's digest; marks it taken."""
    digest = sha256_hex(entity_id)
    for length in range(SHORT_MIN, len(digest) + 1):
        candidate = digest[:length]
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    # Two ids with the same SHA-256: ids are unique, so this is a broken invariant.
    raise AssertionError(f"no free short form for {entity_id!r}")
