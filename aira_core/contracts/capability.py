"""Capability contracts of RFC-0002 §4–6: the four-layer model and the Capability Descriptor.

One flat :class:`CapabilityDescriptor` goes over the wire (the §6.1 shape). It is the union
of two layers, each defined once here: :class:`SemanticOperationDescriptor` (authoring
semantics; its fields and the schemas they reference make up ``authoringLockHash``) and
:class:`CapabilityProfile` (discovery metadata; ``discoveryCatalogHash``). A profile edit
therefore never changes the lock hash, and a semantic edit always does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from aira_core.contracts.base import (
    SEMVER_PATTERN,
    DiagnosticCode,
    JsonObject,
    SemVer,
    WireModel,
)

CAPABILITY_ID_PATTERN = r"^cap:[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)*@(0|[1-9]\d*)$"
TARGET_REF_PATTERN = r"^[a-z][a-zA-Z0-9]*(\.[a-z][a-zA-Z0-9]*)*@" + SEMVER_PATTERN[1:]

CapabilityId = Annotated[str, Field(pattern=CAPABILITY_ID_PATTERN, examples=["cap:exact.fillet@1"])]
"""``cap:<dotted.name>@<major>``: for discovery and product compatibility only."""
TargetRef = Annotated[str, Field(pattern=TARGET_REF_PATTERN, examples=["exact.fillet@1.0.0"])]
"""``<dotted.name>@<MAJOR.MINOR.PATCH>``: an exact, versioned execution target."""


class CapabilityKind(StrEnum):
    """The seven top-level kinds of §5.1; the seventh, importer/exporter, has one value per
    direction."""

    AUTHORING_OPERATION = "authoring.operation"
    MODEL_QUERY = "model.query"
    WORKFLOW = "workflow"
    VALIDATOR = "validator"
    CONVERTER = "converter"
    REPAIR = "repair"
    IMPORTER = "importer"
    EXPORTER = "exporter"


WRITING_KINDS = frozenset({CapabilityKind.AUTHORING_OPERATION, CapabilityKind.IMPORTER})
"""Kinds whose steps change the model: they add nodes (and bodies) and need a write grant."""


class TaxonomyPath(StrEnum):
    """The taxonomy of §5.2 as dotted paths; every node is a legal primary path."""

    AUTHORING = "authoring"
    AUTHORING_DATUM = "authoring.datum"
    AUTHORING_SKETCH = "authoring.sketch"
    AUTHORING_SKETCH_PRIMITIVE = "authoring.sketch.primitive"
    AUTHORING_SKETCH_CONSTRAINT = "authoring.sketch.constraint"
    AUTHORING_SKETCH_PROFILE = "authoring.sketch.profile"
    AUTHORING_EXACT = "authoring.exact"
    AUTHORING_EXACT_PRIMITIVE = "authoring.exact.primitive"
    AUTHORING_EXACT_FEATURE = "authoring.exact.feature"
    AUTHORING_EXACT_BOOLEAN = "authoring.exact.boolean"
    AUTHORING_EXACT_FINISHING = "authoring.exact.finishing"
    AUTHORING_MESH = "authoring.mesh"
    AUTHORING_FIELD = "authoring.field"
    AUTHORING_ASSEMBLY = "authoring.assembly"
    QUERY = "query"
    QUERY_IDENTITY_LINEAGE = "query.identity-lineage"
    QUERY_GEOMETRIC = "query.geometric"
    QUERY_TOPOLOGY = "query.topology"
    QUERY_CONSTRAINT = "query.constraint"
    QUERY_DEPENDENCY_IMPACT = "query.dependency-impact"
    VALIDATION = "validation"
    VALIDATION_GEOMETRIC = "validation.geometric"
    VALIDATION_REQUIREMENTS = "validation.requirements"
    VALIDATION_MANUFACTURING = "validation.manufacturing"
    VALIDATION_EXCHANGE = "validation.exchange"
    IO = "io"
    IO_IMPORT = "io.import"
    IO_EXPORT = "io.export"


class RelationType(StrEnum):
    """The nine graph relations of §5.3 (``produces``/``accepts`` is one relation, two
    directions). Relations only narrow or explain a search; they never bypass checks."""

    REQUIRES = "requires"
    PRODUCES = "produces"
    ACCEPTS = "accepts"
    COMPOSES_WITH = "composesWith"
    ALTERNATIVE_TO = "alternativeTo"
    CONVERTS_TO = "convertsTo"
    VALIDATES = "validates"
    REPAIRS_DIAGNOSTIC = "repairsDiagnostic"
    SUPERSEDES = "supersedes"
    CONFLICTS_WITH = "conflictsWith"


# Relations whose targets are capability ids (the others name semantic types, requirement
# kinds or diagnostic codes); ``requires`` may also name a state, so only its ``cap:`` targets.
CAPABILITY_RELATIONS = frozenset(
    {
        RelationType.COMPOSES_WITH,
        RelationType.ALTERNATIVE_TO,
        RelationType.SUPERSEDES,
        RelationType.CONFLICTS_WITH,
        RelationType.REQUIRES,
    }
)


class Effect(StrEnum):
    """What executing a capability does (§6.2 asks for at least the first five classes)."""

    READ_ONLY = "readOnly"
    ADDITIVE = "additive"
    CHANGES_TOPOLOGY = "changesTopology"
    CHANGES_AUTHORITY = "changesAuthority"
    EXTERNAL_SIDE_EFFECT = "externalSideEffect"
    CREATES_FEATURE = "createsFeature"


class RiskLevel(StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class ExecutionQuality(StrEnum):
    PREVIEW = "preview"
    AUTHORITATIVE = "authoritative"
    APPROXIMATE = "approximate"
    SAMPLED = "sampled"


class CostClass(StrEnum):
    INSTANT = "instant"
    INTERACTIVE = "interactive"
    INTERACTIVE_TO_HEAVY = "interactive-to-heavy"
    HEAVY = "heavy"
    BATCH = "batch"


class Purity(StrEnum):
    PURE = "pure"
    EFFECTFUL = "effectful"


class EntityKind(StrEnum):
    BODY = "Body"
    FACE = "Face"
    EDGE = "Edge"
    VERTEX = "Vertex"


class Cardinality(StrEnum):
    ONE = "one"
    OPTIONAL = "optional"
    ONE_OR_MORE = "oneOrMore"
    ZERO_OR_MORE = "zeroOrMore"


class Applicability(StrEnum):
    """Runtime applicability of a capability to a revision and selection (§8.2)."""

    APPLICABLE = "applicable"
    CONDITIONALLY_APPLICABLE = "conditionallyApplicable"
    NOT_APPLICABLE = "notApplicable"
    UNKNOWN = "unknown"


class Authorization(StrEnum):
    ALLOWED = "allowed"
    DENIED = "denied"
    APPROVAL_REQUIRED = "approvalRequired"


# -- descriptor parts -----------------------------------------------------------------------


class IOContract(WireModel):
    schema_ref: str = Field(min_length=1, examples=["amir://ops/exact.fillet/1.0.0/input"])
    """Key of a JSON Schema in the package's ``schemas``; schemas are never inlined twice."""
    semantic_types: list[str] = Field(default_factory=list, examples=[["ExactSolid", "Length"]])


class Predicate(WireModel):
    """A registered predicate id with typed arguments (never free text; §6.2)."""

    id: str = Field(examples=["input.greaterThanTolerance"])
    args: JsonObject = Field(default_factory=dict)


class SelectionRule(WireModel):
    entity_kind: EntityKind
    cardinality: Cardinality


class ApplicabilityRule(WireModel):
    requires_representation: list[str] = Field(default_factory=list)
    selection: SelectionRule | None = None
    predicates: list[Predicate] = Field(default_factory=list)


class Risk(WireModel):
    """A policy input that the executor enforces on its own, not advisory prose."""

    level: RiskLevel
    destructive: bool = False
    reversible_by_revision: bool = True
    may_invalidate_refs: bool = False


class ExecutionProfile(WireModel):
    quality: list[ExecutionQuality] = Field(min_length=1)
    required_capabilities: list[str] = Field(default_factory=list)
    cost_class: CostClass
    cancellable: bool = False


class Taxonomy(WireModel):
    primary: TaxonomyPath
    facets: list[str] = Field(default_factory=list)


class InputExample(WireModel):
    """A complete, copyable input binding; it must validate against the canonical schema."""

    title: str | None = None
    input: JsonObject


class FailureMode(WireModel):
    diagnostic: DiagnosticCode
    explanation: str
    repair: str | None = None


class Guidance(WireModel):
    when_to_use: list[str] = Field(default_factory=list)
    common_misuse: list[str] = Field(default_factory=list)
    failure_modes: list[FailureMode] = Field(default_factory=list)
    composition_hints: list[str] = Field(default_factory=list)


REPAIR_TEMPLATE_NAMES = ("args", "expected", "actual")
"""The names a repair template's expressions read: the failing step's arguments as written,
and the diagnostic's typed values (``None`` when the kernel gave none)."""


class RepairTemplate(WireModel):
    """The declarative patch template of a ``repair`` capability (``patchTemplate``, named by
    its ``patchTemplateRef``): a candidate plan step made from the failing step of the plan a
    diagnostic refused. Each ``set`` value is an expression (``aira_core.runtime.repairs``)
    over ``args`` (the failing step's arguments), ``expected`` and ``actual`` (the
    diagnostic's typed values); ``when``, if given, must hold for the repair to apply.
    Data, never code: a repair produces a candidate and never edits the model itself."""

    applies_to: list[CapabilityId] = Field(default_factory=list)
    """Capabilities the failing step may use (empty: any)."""
    # the expression language bounds an expression (length, depth, cost): lint refuses one
    # with its EXPRESSION_* code, one bound in one place
    when: str | None = None
    set: dict[str, Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    """Argument name -> expression for the candidate step's new value."""


class TrustInfo(WireModel):
    """Filled in by the catalog on admission; a manifest never asserts its own trust."""

    package: str
    publisher: str
    key_id: str
    signature: str


# -- the layers -------------------------------------------------------------------------------

TARGET_FIELDS = (
    "operation_ref",
    "patch_template_ref",
    "query_ref",
    "validator_ref",
    "workflow_ref",
    "io_ref",
)


class SemanticOperationDescriptor(WireModel):
    """§4.1 authoring semantics: everything that changes how a call is interpreted,
    normalised or executed. These fields (with the schemas they reference) are hashed into
    ``authoringLockHash``."""

    capability_id: CapabilityId
    kind: CapabilityKind
    operation_ref: TargetRef | None = None
    patch_template_ref: TargetRef | None = None
    query_ref: TargetRef | None = None
    validator_ref: TargetRef | None = None
    workflow_ref: TargetRef | None = None
    io_ref: TargetRef | None = None
    inputs: IOContract
    outputs: IOContract | None = None
    defaults: JsonObject = Field(default_factory=dict)
    """Canonical default values of optional inputs."""
    default_binding: JsonObject = Field(default_factory=dict)
    """Copyable, semantically neutral values for required structured inputs."""
    applicability: ApplicabilityRule = Field(default_factory=ApplicabilityRule)
    preconditions: list[Predicate] = Field(default_factory=list)
    postconditions: list[Predicate] = Field(default_factory=list)
    purity: Purity = Purity.PURE
    effects: list[Effect] = Field(default_factory=list)
    risk: Risk
    execution: ExecutionProfile
    diagnostics: list[DiagnosticCode] = Field(default_factory=list)
    patch_template: RepairTemplate | None = None
    """The template ``patchTemplateRef`` names, for a ``repair`` capability (lint checks)."""

    @model_validator(mode="after")
    def _exactly_one_target(self) -> SemanticOperationDescriptor:
        if len(self.targets()) != 1:
            raise PydanticCustomError(
                "LINT_TARGET_NOT_EXACTLY_ONE",
                "a capability declares exactly one execution target among operationRef, "
                "patchTemplateRef, queryRef, validatorRef, workflowRef, ioRef; found {found}",
                {"found": ", ".join(self.targets()) or "none"},
            )
        return self

    def targets(self) -> dict[str, str]:
        """The declared execution targets as ``{wireFieldName: ref}``."""
        fields = type(self).model_fields
        return {
            fields[f].alias or f: getattr(self, f)
            for f in TARGET_FIELDS
            if getattr(self, f) is not None
        }

    @property
    def target(self) -> tuple[str, str]:
        """The one execution target as ``(wireFieldName, ref)``."""
        ((name, ref),) = self.targets().items()
        return name, ref


class CapabilityProfile(WireModel):
    """§4.2 the AI-discoverable projection: pure discovery metadata, hashed into
    ``discoveryCatalogHash``. It may explain when to copy a defaultBinding but never defines
    an input shape or a default of its own."""

    capability_id: CapabilityId
    profile_version: SemVer
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    taxonomy: Taxonomy
    intent_examples: list[str] = Field(default_factory=list)
    counter_examples: list[str] = Field(default_factory=list)
    input_examples: list[InputExample] = Field(default_factory=list)
    relations: dict[RelationType, list[str]] = Field(default_factory=dict)
    guidance: Guidance = Field(default_factory=Guidance)


class CapabilityDescriptor(SemanticOperationDescriptor, CapabilityProfile):
    """§6.1: one capability as a package declares it (semantic fields + profile fields)."""

    trust: TrustInfo | None = None

    def semantic(self) -> SemanticOperationDescriptor:
        return SemanticOperationDescriptor.model_validate(
            {f: getattr(self, f) for f in SemanticOperationDescriptor.model_fields}
        )

    def profile(self) -> CapabilityProfile:
        return CapabilityProfile.model_validate(
            {f: getattr(self, f) for f in CapabilityProfile.model_fields}
        )

    def schema_refs(self) -> list[str]:
        return [io.schema_ref for io in (self.inputs, self.outputs) if io is not None]


# -- runtime, grant, view -------------------------------------------------------------------


class ComponentStatus(StrEnum):
    AVAILABLE = "available"
    DEGRADED = "degraded"
    MAINTENANCE = "maintenance"
    UNAVAILABLE = "unavailable"


class ExecutionLocation(StrEnum):
    BROWSER = "browser"
    NATIVE = "native"
    SERVER = "server"


class Exactness(StrEnum):
    EXACT = "exact"
    APPROXIMATE = "approximate"
    PREVIEW_ONLY = "previewOnly"


class RuntimeComponent(WireModel):
    name: str
    role: str = Field(examples=["kernel", "adapter", "solver", "exporter", "validator"])
    build_hash: str
    location: ExecutionLocation = ExecutionLocation.NATIVE
    supported_operations: list[TargetRef] = Field(default_factory=list)
    quality_profiles: list[ExecutionQuality] = Field(default_factory=list)
    exactness: Exactness = Exactness.EXACT
    status: ComponentStatus = ComponentStatus.AVAILABLE


class RuntimeLoad(WireModel):
    """Volatile load figures: reported, but not part of the snapshot's identity."""

    queue_depth: int = 0
    utilization: float = Field(default=0.0, ge=0, le=1)


class RuntimeCapabilitySnapshot(WireModel):
    """§4.3 what this environment can actually execute right now. It never changes a
    revision's identity, but enters plan applicability and execution manifests."""

    captured_at: datetime
    components: list[RuntimeComponent] = Field(default_factory=list)
    cost_ceiling_usd: float | None = Field(default=None, ge=0)
    estimated_cost_usd_per_step: float | None = Field(default=None, ge=0)
    load: RuntimeLoad = Field(default_factory=RuntimeLoad)

    def identity(self) -> dict[str, Any]:
        """The hashed part: everything but the capture time and the volatile load."""
        return self.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"captured_at", "load"}
        )


class ReadScope(WireModel):
    projects: list[str] = Field(default_factory=list)
    documents: list[str] = Field(default_factory=list)
    branches: list[str] = Field(default_factory=list)


class GrantPermissions(WireModel):
    destructive: bool = False
    export: bool = False
    network: bool = False
    external_asset: bool = False


class GrantBudgets(WireModel):
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    compute_seconds: float | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0)


class SessionGrant(WireModel):
    """§4.4 the actor's authorization boundary; the executor re-checks it on every call."""

    grant_id: str = Field(pattern=r"^grant:[A-Za-z0-9._:-]+$")
    actor: str
    readable: ReadScope = Field(default_factory=ReadScope)
    query_classes: list[TaxonomyPath] = Field(default_factory=list)
    write_classes: list[TaxonomyPath] = Field(default_factory=list)
    permissions: GrantPermissions = Field(default_factory=GrantPermissions)
    auto_commit_max_risk: RiskLevel = RiskLevel.LOW
    budgets: GrantBudgets = Field(default_factory=GrantBudgets)
    confirmation_required: list[str] = Field(default_factory=list, examples=[["publish", "export"]])
    expires_at: datetime | None = None
    revoked: bool = False


class ViewBasis(WireModel):
    """The snapshots a view was derived from, so it can be recomputed and compared."""

    discovery_catalog_hash: str
    authoring_lock_hash: str
    runtime_snapshot: str
    grant_id: str


class ApplicableCapabilityView(WireModel):
    """§4.5 a derived, recomputable view of one capability for a revision, selection,
    runtime and grant. Never a source of truth for the model."""

    capability_id: CapabilityId
    revision: str | None = None
    selection_refs: list[str] = Field(default_factory=list)
    applicability: Applicability
    unmet_preconditions: list[str] = Field(default_factory=list)
    missing_information: list[str] = Field(default_factory=list)
    authorization: Authorization
    authorization_reasons: list[str] = Field(default_factory=list)
    cost_class: CostClass | None = None
    basis: ViewBasis


def short_name(capability_id: str) -> str:
    """The last name of a capability id: ``cap:query.massProperties@1`` → ``massProperties``."""
    return capability_id.split(":", 1)[-1].split("@")[0].split(".")[-1]


def find_capability(
    descriptors: Mapping[str, CapabilityDescriptor], name: str, kind: CapabilityKind
) -> tuple[str | None, list[str]]:
    """The capability of ``kind`` named ``name`` (its id or its short name), and the short
    names of all capabilities of that kind (for a message when there is none)."""
    of_kind = [cap for cap, d in descriptors.items() if d.kind is kind]
    short = {short_name(cap): cap for cap in of_kind}
    found = name if name in of_kind else short.get(name)
    return found, sorted(short)
