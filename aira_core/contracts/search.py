"""``catalog.search`` on the wire (RFC-0002 §8.1 request, §8.3 response).

Scores are named and have a written meaning; none of them is a probability of success:

- ``retrievalRelevance`` in [0, 1]: the evidence that ties the intent to the capability's
  discovery text: the idf-weighted share of the intent's terms the text contains, the
  similarity of the nearest intent example (and, with the embeddings extra, of the nearest
  example by a sentence-embedding model) and the share of the intent a matched alias
  explains; a negated term divides it by four. 1 means every signal at its maximum, 0 none.
  It is absolute: the search answers "no match" when the best evidence near the top stays
  below ``Weights.no_match_below`` (:mod:`aira_core.catalog.search`). Hits are ordered by
  the reranker, which also weighs BM25, routing, counterexamples, desired outputs, risk,
  quality and cost, so the order need not follow this number.
- ``runtimeApplicability``: whether this environment, the grant and the revision allow the
  capability now (``applicable``, ``conditionallyApplicable``, ``notApplicable``,
  ``unknown``), with the unmet preconditions.
"""

from __future__ import annotations

from pydantic import Field

from aira_core.contracts.base import WireModel
from aira_core.contracts.capability import (
    Applicability,
    Authorization,
    CapabilityKind,
    CostClass,
    ExecutionLocation,
    ExecutionQuality,
    RiskLevel,
)

MAX_TOP_K = 32
"""The server's own cap on hits, whatever a client asks for."""


class KnownInput(WireModel):
    type: str = Field(examples=["ExactSolid"])
    ref: str | None = Field(default=None, examples=["body:bracket"])


class SearchConstraints(WireModel):
    preserve_editability: bool = False
    precision: ExecutionQuality | None = None
    """``authoritative``: prefer (and mark applicable only) capabilities that can be."""
    max_risk: RiskLevel | None = None
    max_cost: CostClass | None = None
    execution_locations: list[ExecutionLocation] = Field(default_factory=list)


class SearchRequest(WireModel):
    """§8.1. Only ``intent`` is required."""

    intent: str = Field(min_length=1, max_length=2000)
    revision: str | None = None
    selection_refs: list[str] = Field(default_factory=list)
    known_inputs: list[KnownInput] = Field(default_factory=list)
    desired_outputs: list[str] = Field(default_factory=list)
    constraints: SearchConstraints = Field(default_factory=SearchConstraints)
    include_kinds: list[CapabilityKind] = Field(default_factory=list)
    top_k: int = Field(default=8, ge=1, le=MAX_TOP_K)
    max_bytes: int | None = Field(default=None, ge=256)
    """The client's limit on the response size (canonical JSON bytes); the server's own
    limit applies as well."""
    catalog_snapshot: str | None = None
    runtime_snapshot: str | None = None
    grant_id: str | None = None


class Quantity(WireModel):
    """A number with a unit found in the intent, in the unit's base (mm, degrees), or a
    count ("500 pieces", "12个": unit ``count``, dimension ``Count``)."""

    text: str
    value: float
    unit: str
    dimension: str = Field(examples=["Length", "Angle"])
    role: str | None = Field(default=None, examples=["diameter", "thread"])


class NormalizedIntent(WireModel):
    raw: str
    """The intent as given, never discarded."""
    terms: list[str]
    negated: list[str] = Field(default_factory=list)
    """Terms the intent rules out ("without holes", "不要倒角")."""
    quantities: list[Quantity] = Field(default_factory=list)
    branches: list[str] = Field(default_factory=list)
    """Taxonomy branches the intent was routed to, best first."""


class SearchHit(WireModel):
    """§8.3: one capability, its exact versions and the signals that matched."""

    capability_id: str
    profile_version: str
    operation_version: str
    """The exact execution target, e.g. ``exact.fillet@1.0.0``."""
    kind: CapabilityKind
    title: str
    summary: str
    input_types: list[str] = Field(default_factory=list)
    output_types: list[str] = Field(default_factory=list)
    risk: RiskLevel
    destructive: bool = False
    cost: CostClass
    quality: list[ExecutionQuality]
    retrieval_relevance: float = Field(ge=0, le=1)
    runtime_applicability: Applicability
    unmet_preconditions: list[str] = Field(default_factory=list)
    authorization: Authorization = Authorization.ALLOWED
    authorization_reasons: list[str] = Field(default_factory=list)
    why_matched: list[str]
    """Observable signals only: ``taxonomy:…``, ``alias:…``, ``example:…``, ``term:…``,
    ``type:…``, ``unit:…``, ``relation:…``, ``policy:…``."""
    handle: str
    """Pass to ``catalog.describe``: ``<capabilityId>#<profileVersion>``."""


class Sufficiency(WireModel):
    """Whether the hits can form a complete plan from the known inputs to the desired
    outputs through ``produces``/``accepts``, and what is missing when not."""

    evaluated: bool
    """False when the request gave neither known inputs nor desired outputs."""
    complete: bool = False
    missing_types: list[str] = Field(default_factory=list)
    expanded_with: list[str] = Field(default_factory=list)
    """Capabilities added to the hits because they produce a missing type."""
    missing_information: list[str] = Field(default_factory=list)


class SearchResponse(WireModel):
    intent: NormalizedIntent
    hits: list[SearchHit]
    no_match: bool
    """True when nothing in the catalog matches well enough: an explicit answer, not a weak
    guess (``hits`` is then empty)."""
    no_match_reason: str | None = None
    filtered: dict[str, int] = Field(default_factory=dict)
    """How many candidates each filter removed (kind, risk, cost, type, policy…)."""
    sufficiency: Sufficiency
    truncated: bool = False
    """True when hits were dropped to respect topK or the byte limit."""
    catalog_snapshot: str | None = None
    embedder: str | None = None
    """The dense retriever that ranked the hits (``use-multilingual-v3``, ``hashing-ngrams``)."""
