"""Block hashes, the head summary, pages and diffs of an AMIR revision.

The document has four top-level blocks (``parameters``, ``nodes``, ``bodies``,
``assertions``), each hashed on its own so a host can tell which pages a commit left
unchanged. A model sees a revision through a bounded :class:`Summary` (≤ 2k host tokens)
and through :func:`select` pages, each bounded in bytes and carrying ``(rev, hash)``.

Host tokens are counted as UTF-8 bytes of canonical JSON divided by 4, rounded up
(:func:`~aira_core.contracts.amir.value_tokens`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import Any

from aira_core.canonical import canonical_bytes, sha256_id
from aira_core.contracts.amir import BLOCKS, HOST_BYTES_PER_TOKEN, AmirDocument, NodeInput
from aira_core.contracts.base import WireModel
from aira_core.diagnostics import AiraError
from aira_core.model.aliases import ALIAS_UNKNOWN, AliasTable

SUMMARY_MAX_TOKENS = 2000
DEFAULT_ALIAS_PAGE = 128
"""How many aliases the summary lists at most (fewer if the token bound needs it)."""
DEFAULT_SELECT_LIMIT = 50
MAX_SELECT_LIMIT = 10_000
"""The most items one page may ask for (the byte bound usually cuts a page well before)."""
MAX_SELECT_OFFSET = 2**53 - 1
"""The largest offset a page can echo: pages are canonical JSON, whose numbers are IEEE-754
doubles, exact only up to 2**53."""
DEFAULT_PAGE_LIMIT_BYTES = 16_000
"""4k host tokens."""

SELECT_PATH_INVALID = "SELECT_PATH_INVALID"
SELECT_RANGE_INVALID = "SELECT_RANGE_INVALID"
PAGE_ITEM_TOO_LARGE = "PAGE_ITEM_TOO_LARGE"
__all__ = [
    "ALIAS_UNKNOWN",
    "BLOCKS",
    "MAX_SELECT_LIMIT",
    "MAX_SELECT_OFFSET",
    "PAGE_ITEM_TOO_LARGE",
    "SELECT_PATH_INVALID",
    "SELECT_RANGE_INVALID",
    "Page",
    "Roots",
    "Summary",
    "block_hashes",
    "diff",
    "select",
    "summary",
]

# Placeholder of the right length for a page hash while the page's size is worked out.
_HASH_PLACEHOLDER = "page:sha256:" + "0" * 64


def block_hashes(document: AmirDocument) -> dict[str, str]:
    """``{block: sha256_id("block", <the block's JSON list>)}`` for the four blocks."""
    wire = document.to_wire()
    return {name: sha256_id("block", wire.get(name, [])) for name in BLOCKS}


def diff(doc_a: AmirDocument, doc_b: AmirDocument) -> list[str]:
    """The blocks whose hash differs between two documents, in block order."""
    a, b = block_hashes(doc_a), block_hashes(doc_b)
    return [name for name in BLOCKS if a[name] != b[name]]


# -- summary -------------------------------------------------------------------------------


class Roots(WireModel):
    bodies: dict[str, str]
    """Body alias → alias of its tip node."""
    nodes: list[str]
    """Aliases of the nodes no other node consumes, in document order."""


class Summary(WireModel):
    """What a model gets to know a revision by; at most 2k host tokens."""

    rev: str
    counts: dict[str, int]
    blocks: dict[str, str]
    """Block name → block hash."""
    roots: Roots
    aliases: dict[str, str]
    """The first page of the alias table (parameters, bodies, nodes, assertions): alias → id."""
    aliases_omitted: int = 0
    """Aliases not listed here (page size or token bound); pages of each block carry them."""
    roots_omitted: int = 0
    """Roots left out to stay within the bound (only on very large documents)."""


def shown_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A summary's wire form as a model is shown it (MCP results, and the step host's capsule
    and results): without the block digests (for programs that cache pages), zero counts
    and zero ``…Omitted`` counts, and with the ``aliases`` table as ``handles``, the handles
    alone (a model writes handles; the entity ids they stand for are for programs)."""
    out: dict[str, Any] = {
        k: v
        for k, v in summary.items()
        if k not in ("blocks", "aliases") and not (k.endswith("Omitted") and v == 0)
    }
    if isinstance(summary.get("counts"), Mapping):
        out["counts"] = {k: n for k, n in summary["counts"].items() if n != 0}
    if isinstance(summary.get("aliases"), Mapping):
        out["handles"] = list(summary["aliases"])
    return out


def summary(
    rev: str,
    document: AmirDocument,
    aliases: AliasTable,
    alias_page: int = DEFAULT_ALIAS_PAGE,
    *,
    max_tokens: int = SUMMARY_MAX_TOKENS,
    hashes: Mapping[str, str] | None = None,
) -> Summary:
    """The summary of ``document`` at ``rev``, within ``max_tokens`` host tokens.

    The alias page is cut first, from its end (assertions, then nodes, …), then the roots;
    the summary says how many of each it left out. ``hashes`` reuses block hashes the caller
    already has.
    """
    _check_rev(rev, aliases)
    if alias_page < 0:
        raise ValueError("alias_page must not be negative")
    max_bytes = max_tokens * HOST_BYTES_PER_TOKEN
    blocks = dict(hashes) if hashes is not None else block_hashes(document)
    counts = {name: len(getattr(document, name)) for name in BLOCKS}

    alias_of = aliases.alias_of
    node_aliases = {n.id: alias_of(n.id) for n in document.nodes}
    body_roots = [
        # A dangling tip is a patch error elsewhere; show the raw id rather than fail here.
        (alias_of(b.id), node_aliases.get(b.tip, b.tip))
        for b in document.bodies
    ]
    consumed = {
        value.node
        for node in document.nodes
        for value in node.inputs.values()
        if isinstance(value, NodeInput)
    }
    node_roots = [node_aliases[n.id] for n in document.nodes if n.id not in consumed]
    alias_pairs = list(islice(aliases.entries(), alias_page))
    alias_total = len(aliases)

    n_alias, n_nodes, n_bodies = len(alias_pairs), len(node_roots), len(body_roots)
    while True:
        result = Summary(
            rev=rev,
            counts=counts,
            blocks=blocks,
            roots=Roots(bodies=dict(body_roots[:n_bodies]), nodes=node_roots[:n_nodes]),
            aliases=dict(alias_pairs[:n_alias]),
            aliases_omitted=alias_total - n_alias,
            roots_omitted=len(node_roots) - n_nodes + len(body_roots) - n_bodies,
        )
        excess = len(canonical_bytes(result)) - max_bytes
        if excess <= 0:
            return result
        # Cut by estimated entry sizes (ids and aliases are plain ASCII: quotes, colon,
        # comma), then measure again; a few spare bytes cover the omitted counts' digits.
        excess += 4
        if n_alias:
            n_alias = _cut(
                n_alias, excess, lambda i: len(alias_pairs[i][0]) + len(alias_pairs[i][1]) + 6
            )
        elif n_nodes:
            n_nodes = _cut(n_nodes, excess, lambda i: len(node_roots[i]) + 3)
        elif n_bodies:
            n_bodies = _cut(
                n_bodies, excess, lambda i: len(body_roots[i][0]) + len(body_roots[i][1]) + 6
            )
        else:
            raise ValueError(
                f"the summary of {rev} does not fit in {max_tokens} host tokens even empty"
            )


def _cut(count: int, excess: int, size_of: Callable[[int], int]) -> int:
    """How many of the first ``count`` entries remain after freeing ``excess`` bytes."""
    freed = 0
    while count and freed < excess:
        count -= 1
        freed += size_of(count)
    return count


# -- pages ---------------------------------------------------------------------------------


class Page(WireModel):
    """One page of a selection; ``hash`` is ``sha256_id("page", items)``."""

    rev: str
    path: list[Any]
    """The path as the caller gave it (aliases are not rewritten)."""
    hash: str
    items: list[dict[str, Any]]
    """The selected entities as in the document, each with its ``alias`` added."""
    offset: int
    limit: int
    total: int
    next_offset: int | None
    """Where the next page starts, or null on the last page."""

    def to_wire(self) -> dict[str, Any]:
        # nextOffset is null on the last page, not absent.
        return self.model_dump(mode="json", by_alias=True)


def select(
    rev: str,
    document: AmirDocument,
    aliases: AliasTable,
    path: Sequence[str],
    limit: int = DEFAULT_SELECT_LIMIT,
    offset: int = 0,
    page_limit_bytes: int = DEFAULT_PAGE_LIMIT_BYTES,
) -> Page:
    """A page of ``path``: ``[block]`` or ``[block, alias-or-id]``.

    The page holds at most ``limit`` items from ``offset`` and never more than
    ``page_limit_bytes`` of canonical JSON: when the items would not fit, fewer are returned
    and ``nextOffset`` says where to continue.
    """
    _check_rev(rev, aliases)
    for name, value, minimum, maximum in (
        ("limit", limit, 1, MAX_SELECT_LIMIT),
        ("offset", offset, 0, MAX_SELECT_OFFSET),
    ):
        if type(value) is not int or not minimum <= value <= maximum:
            raise AiraError(
                SELECT_RANGE_INVALID,
                f"{name} must be an integer from {minimum} to {maximum}, got {value!r}",
            )
    entities = _select_entities(document, aliases, path)
    total = len(entities)
    echoed = list(path)

    envelope = len(
        canonical_bytes(
            Page(
                rev=rev,
                path=echoed,
                hash=_HASH_PLACEHOLDER,
                items=[],
                offset=offset,
                limit=limit,
                total=total,
                next_offset=None,
            ).to_wire()
        )
    )
    # nextOffset may become a number instead of null.
    envelope += max(0, len(str(total)) - len("null"))
    if envelope > page_limit_bytes:
        raise AiraError(
            SELECT_RANGE_INVALID,
            f"a page limit of {page_limit_bytes} bytes leaves no room for items "
            f"(the page envelope alone is {envelope} bytes)",
        )

    items: list[dict[str, Any]] = []
    used = envelope
    for entity in entities[offset : offset + limit]:
        alias = aliases.alias_of(entity.id)
        item = {"alias": alias, **entity.to_wire()}
        size = len(canonical_bytes(item)) + (1 if items else 0)  # + the separating comma
        if used + size > page_limit_bytes:
            if not items:
                raise AiraError(
                    PAGE_ITEM_TOO_LARGE,
                    f"{alias} is {size} bytes of JSON; with the page envelope "
                    f"({envelope} bytes) it exceeds the page limit of {page_limit_bytes} bytes",
                    subject=entity.id,
                )
            break
        items.append(item)
        used += size

    end = offset + len(items)
    page = Page(
        rev=rev,
        path=echoed,
        hash=sha256_id("page", items),
        items=items,
        offset=offset,
        limit=limit,
        total=total,
        next_offset=end if end < total else None,
    )
    return page


def _select_entities(document: AmirDocument, aliases: AliasTable, path: Sequence[str]) -> list[Any]:
    if (
        not isinstance(path, (list, tuple))
        or not path
        or not all(isinstance(part, str) for part in path)
    ):
        raise AiraError(
            SELECT_PATH_INVALID,
            f"a select path is a non-empty list of strings, got {path!r}",
        )
    block = path[0]
    if block not in BLOCKS:
        raise AiraError(
            SELECT_PATH_INVALID,
            f"{block!r} is not a block; blocks are {', '.join(BLOCKS)}",
            subject=block,
        )
    entities = list(getattr(document, block))
    if len(path) == 1:
        return entities
    if len(path) > 2:
        raise AiraError(
            SELECT_PATH_INVALID,
            f"paths are [block] or [block, alias or id]; got {len(path)} segments",
        )
    entity_id = aliases.resolve(path[1])  # ALIAS_UNKNOWN if the table has no such entry
    kind = aliases.kind_of(entity_id)
    if kind != block:
        raise AiraError(
            SELECT_PATH_INVALID,
            f"{path[1]!r} is in {kind}, not in {block}",
            subject=path[1],
        )
    return [e for e in entities if e.id == entity_id]


def _check_rev(rev: str, aliases: AliasTable) -> None:
    # An alias table of another revision would resolve handles against the wrong document.
    if aliases.rev != rev:
        raise ValueError(f"the alias table is of revision {aliases.rev}, not {rev}")
