"""Progressive capability disclosure (RFC-0002 §7): what a model is shown, level by level,
never more than a fixed cap however large the catalog grows.

- **L0 manifest**: interface version, taxonomy root, meta-operations, snapshot ids, limits.
  Its size does not depend on the catalog, except in small-catalog mode (§7.1): when the
  applicable catalog's L1+L2 fits under :data:`SMALL_CATALOG_BYTES` (declared in the
  manifest), every contract is inlined and ``catalog.search`` may be skipped.
- **L1 hit**: :meth:`Disclosure.search` (:mod:`aira_core.catalog.search`).
- **L2 contract**: exact versions, input and output schemas, preconditions, effects, risk,
  execution, diagnostics, defaults, and a ``contractHash``.
- **L3 guidance**: examples, counterexamples, composition, failure modes.
- **L4 applicability**: for a revision and selection, under the runtime snapshot and grant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from aira_core.canonical import canonical_bytes, sha256_id
from aira_core.catalog.hashes import runtime_snapshot_hash
from aira_core.catalog.policy import authorize
from aira_core.catalog.search import (
    HYBRID,
    Embedder,
    IndexCache,
    SearchConfig,
    SearchContext,
    SearchIndex,
    build_index,
    configured_embedder,
)
from aira_core.contracts.capability import (
    ApplicableCapabilityView,
    Authorization,
    CapabilityDescriptor,
    ExecutionQuality,
    RuntimeCapabilitySnapshot,
    RuntimeComponent,
    SessionGrant,
    ViewBasis,
)
from aira_core.contracts.search import MAX_TOP_K, SearchRequest, SearchResponse
from aira_core.diagnostics import AiraError

INTERFACE_VERSION = "aira.interface/0.1.0"
SMALL_CATALOG_BYTES = 64_000
"""Small-catalog mode: the L1+L2 of every applicable capability inlined in the manifest
when together they stay under this many bytes (canonical JSON)."""
MAX_DESCRIBE_BYTES = 48_000
"""The cap on one ``catalog.describe`` answer."""
TAXONOMY_ROOT = ("authoring", "query", "validation", "io")
LEVELS = ("L2", "L3", "L4")
"""The levels ``describe`` serves (L0 is the manifest, L1 the search hit)."""

DESCRIBE_UNKNOWN = "DESCRIBE_CAPABILITY_UNKNOWN"
DESCRIBE_LEVEL_INVALID = "DESCRIBE_LEVEL_INVALID"


def kernels_snapshot(
    kernels: Iterable[Any], validators: Iterable[Any] = ()
) -> RuntimeCapabilitySnapshot | None:
    """What ``kernels`` and the registered ``validators`` execute, as one runtime snapshot
    (``None``: none says), read from each kernel's optional ``runtime_snapshot()`` without
    starting it. One kernel's snapshot alone is its own; otherwise one of all the components,
    each registered validator (``aira_register_validators``) one of role ``validator``."""
    snapshots = [
        snap() for kernel in kernels if callable(snap := getattr(kernel, "runtime_snapshot", None))
    ]
    extra = [
        RuntimeComponent(
            name=str(v.name),
            role="validator",
            build_hash=str(getattr(v, "fingerprint", v.name)),
            supported_operations=[v.ref],
            quality_profiles=[ExecutionQuality.AUTHORITATIVE],
        )
        for v in validators
    ]
    if len(snapshots) == 1 and not extra:
        return snapshots[0]
    components = [c for snap in snapshots for c in snap.components] + extra
    if not components:
        return None
    return RuntimeCapabilitySnapshot(captured_at=datetime.now(UTC), components=components)


def catalog_disclosure(
    catalog: Any,
    *,
    snapshot: RuntimeCapabilitySnapshot | None = None,
    grant: SessionGrant | None = None,
) -> Disclosure:
    """The disclosure service of a catalog as the CLI and a task both use it, so that one
    query over one catalog gets one ranking: the configured embedder
    (:func:`~aira_core.catalog.search.configured_embedder`, ``$AIRA_EMBEDDER``), loaded on
    the first search, and the built index cached under ``AIRA_HOME``
    (:mod:`aira_core.catalog.search_cache`)."""
    from aira_core.catalog.search_cache import DiskIndexCache

    return Disclosure(
        catalog,
        snapshot=snapshot,
        grant=grant,
        embedder=configured_embedder,
        cache=DiskIndexCache(),
    )


class Disclosure:
    """The five levels over one production catalog, for one runtime snapshot and grant
    (either may be absent; applicability then says ``unknown``)."""

    def __init__(
        self,
        catalog: Any,
        *,
        snapshot: RuntimeCapabilitySnapshot | None = None,
        grant: SessionGrant | None = None,
        config: SearchConfig = HYBRID,
        embedder: Embedder | Callable[[], Embedder] | None = None,
        cache: IndexCache | None = None,
    ) -> None:
        """``embedder`` may be a function that gives it, called on the first search (a
        manifest or describe never loads a model); ``cache`` keeps the built index between
        runs. :func:`catalog_disclosure` assembles both as every entry point should."""
        self.catalog = catalog
        self.snapshot = snapshot
        self.grant = grant
        self._config = config
        self._embedder = embedder
        self._cache = cache
        self._index: SearchIndex | None = None
        self._schemas: dict[str, Mapping[str, Any]] = {}
        self._workflows: dict[str, Any] = {}
        for package in catalog.packages.values():
            self._schemas.update(package.manifest.schemas)
            self._workflows.update(package.manifest.workflows)

    @property
    def index(self) -> SearchIndex:
        if self._index is None:
            embedder = self._embedder
            if callable(embedder) and not hasattr(embedder, "embed"):
                embedder = embedder()
            self._index = build_index(
                self.catalog, config=self._config, embedder=embedder, cache=self._cache
            )
        return self._index

    def _descriptor(self, capability_id: str) -> CapabilityDescriptor:
        d = self.catalog.capabilities().get(capability_id)
        if d is None:
            raise AiraError(
                DESCRIBE_UNKNOWN,
                f"{capability_id!r} is not in the production catalog; find capabilities with "
                "catalog.search",
            )
        return d

    def context(
        self, revision_types: Iterable[str] | None = None, selection_count: int | None = None
    ) -> SearchContext:
        return SearchContext(
            snapshot=self.snapshot,
            grant=self.grant,
            revision_types=frozenset(revision_types) if revision_types is not None else None,
            selection_count=selection_count,
        )

    # -- L0 -------------------------------------------------------------------------------------

    def manifest(
        self, *, meta_operations: Sequence[str] = (), contract_version: str | None = None
    ) -> dict[str, Any]:
        """L0. Its bytes do not depend on the catalog's size (ids are fixed-length hashes),
        unless small-catalog mode inlines the contracts."""
        out: dict[str, Any] = {
            "interfaceVersion": INTERFACE_VERSION,
            "taxonomyRoot": list(TAXONOMY_ROOT),
            "metaOperations": list(meta_operations),
            "snapshots": {
                "discoveryCatalogHash": self.catalog.discovery_catalog_hash(),
                "authoringLockHash": self.catalog.authoring_lock_hash(),
                "runtimeSnapshot": runtime_snapshot_hash(self.snapshot) if self.snapshot else None,
            },
            "limits": {
                "maxTopK": MAX_TOP_K,
                "maxDescribeBytes": MAX_DESCRIBE_BYTES,
                "smallCatalogBytes": SMALL_CATALOG_BYTES,
                "levels": ["L0", "L1", *LEVELS],
            },
            "smallCatalog": False,
        }
        if contract_version is not None:
            out["contractVersion"] = contract_version
        contracts = self._small_catalog()
        if contracts is not None:
            out["smallCatalog"] = True
            out["contracts"] = contracts
        return out

    def applicable_ids(self) -> list[str]:
        """Capabilities the grant does not deny (all of them without a grant)."""
        capabilities = self.catalog.capabilities()
        if self.grant is None:
            return sorted(capabilities)
        # The grant alone decides this: no need to build the search index for a manifest.
        return sorted(
            cap
            for cap, d in capabilities.items()
            if authorize(self.grant, d)[0] is not Authorization.DENIED
        )

    def _small_catalog(self) -> dict[str, Any] | None:
        """Every applicable contract (L1+L2) if together they fit the declared cap."""
        contracts: dict[str, Any] = {}
        size = 0
        for cap in self.applicable_ids():
            contract = self.contract(cap)
            size += len(canonical_bytes(contract))
            if size > SMALL_CATALOG_BYTES:
                return None
            contracts[cap] = contract
        return contracts

    # -- L1 -------------------------------------------------------------------------------------

    def search(
        self,
        request: SearchRequest | str,
        *,
        revision_types: Iterable[str] | None = None,
        selection_count: int | None = None,
    ) -> SearchResponse:
        """L1 hits for an intent (bounded by topK, :data:`MAX_TOP_K` and the byte caps)."""
        response = self.index.search(request, self.context(revision_types, selection_count))
        return response.model_copy(
            update={"catalog_snapshot": self.catalog.discovery_catalog_hash()}
        )

    # -- L2, L3, L4 ------------------------------------------------------------------------------

    def contract(self, capability_id: str) -> dict[str, Any]:
        """L2: everything needed to write a legal step, with the hash that locks it."""
        d = self._descriptor(capability_id)
        target_field, ref = d.target
        body: dict[str, Any] = {
            "capabilityId": d.capability_id,
            "profileVersion": d.profile_version,
            target_field: ref,
            "kind": d.kind.value,
            "title": d.title,
            "summary": d.summary,
            "inputSchema": dict(self._schemas.get(d.inputs.schema_ref, {})),
            "inputTypes": list(d.inputs.semantic_types),
        }
        if d.outputs is not None:
            body["outputSchema"] = dict(self._schemas.get(d.outputs.schema_ref, {}))
            body["outputTypes"] = list(d.outputs.semantic_types)
        semantic = d.semantic().to_wire()
        for key in (
            "defaults",
            "defaultBinding",
            "applicability",
            "preconditions",
            "postconditions",
            "purity",
            "effects",
            "risk",
            "execution",
            "diagnostics",
        ):
            if semantic.get(key) not in (None, {}, []):
                body[key] = semantic[key]
        if d.workflow_ref in self._workflows:  # a workflow is audited by its definition
            body["workflow"] = self._workflows[d.workflow_ref].to_wire()
        body["contractHash"] = sha256_id("contract", body)
        return body

    def guidance(self, capability_id: str) -> dict[str, Any]:
        """L3: how to use it well and how it goes wrong."""
        d = self._descriptor(capability_id)
        profile = d.profile().to_wire()
        out = {"capabilityId": d.capability_id}
        for key in (
            "aliases",
            "intentExamples",
            "counterExamples",
            "inputExamples",
            "relations",
            "guidance",
        ):
            if profile.get(key) not in (None, {}, []):
                out[key] = profile[key]
        return out

    def applicability(
        self,
        capability_id: str,
        *,
        revision: str | None = None,
        revision_types: Iterable[str] | None = None,
        selection_refs: Sequence[str] = (),
    ) -> ApplicableCapabilityView:
        """L4: whether it can run on this revision and selection, here, under this grant."""
        d = self._descriptor(capability_id)
        context = self.context(revision_types, len(selection_refs) if revision else None)
        state, unmet, verdict, reasons = self.index.applicability(d, context)
        missing = [u for u in unmet if u.startswith("needs a")]
        return ApplicableCapabilityView(
            capability_id=d.capability_id,
            revision=revision,
            selection_refs=list(selection_refs),
            applicability=state,
            unmet_preconditions=[u for u in unmet if u not in missing],
            missing_information=missing,
            authorization=verdict,
            authorization_reasons=reasons,
            cost_class=d.execution.cost_class,
            basis=ViewBasis(
                discovery_catalog_hash=self.catalog.discovery_catalog_hash(),
                authoring_lock_hash=self.catalog.authoring_lock_hash(),
                runtime_snapshot=runtime_snapshot_hash(self.snapshot) if self.snapshot else "",
                grant_id=self.grant.grant_id if self.grant else "",
            ),
        )

    def describe(
        self,
        capability_id: str,
        level: str = "L2",
        *,
        revision: str | None = None,
        revision_types: Iterable[str] | None = None,
        selection_refs: Sequence[str] = (),
    ) -> dict[str, Any]:
        """``catalog.describe``: L2 (the contract), L3 (the contract and its guidance) or L4
        (the contract and its applicability), at most :data:`MAX_DESCRIBE_BYTES`."""
        if level not in LEVELS:
            raise AiraError(
                DESCRIBE_LEVEL_INVALID, f"level must be one of {', '.join(LEVELS)}, not {level!r}"
            )
        out: dict[str, Any] = {"level": level, "contract": self.contract(capability_id)}
        if level == "L3":
            out["guidance"] = self.guidance(capability_id)
        elif level == "L4":
            out["applicability"] = self.applicability(
                capability_id,
                revision=revision,
                revision_types=revision_types,
                selection_refs=selection_refs,
            ).to_wire()
        return _bounded(out)


def _bounded(answer: dict[str, Any]) -> dict[str, Any]:
    """Trim the longest guidance lists until the answer fits :data:`MAX_DESCRIBE_BYTES`; a
    contract that does not fit on its own is refused rather than cut (a partial schema would
    let a model write an illegal step)."""
    if len(canonical_bytes(answer)) <= MAX_DESCRIBE_BYTES:
        return answer
    guidance = dict(answer.get("guidance") or {})
    answer = {**answer, "guidance": guidance, "truncated": True}
    while len(canonical_bytes(answer)) > MAX_DESCRIBE_BYTES:
        lists = [k for k, v in guidance.items() if isinstance(v, list) and v]
        if lists:  # drop the last item of the longest list first
            longest = max(lists, key=lambda k: len(canonical_bytes(guidance[k])))
            guidance[longest] = guidance[longest][:-1]
        elif len(guidance) > 1:  # then whole parts (relations, failure modes …)
            del guidance[
                max(
                    (k for k in guidance if k != "capabilityId"),
                    key=lambda k: len(canonical_bytes(guidance[k])),
                )
            ]
        else:
            break
    if len(canonical_bytes(answer)) > MAX_DESCRIBE_BYTES:
        raise AiraError(
            "DESCRIBE_TOO_LARGE",
            f"the contract of {answer['contract']['capabilityId']} exceeds "
            f"{MAX_DESCRIBE_BYTES} bytes",
        )
    return answer
