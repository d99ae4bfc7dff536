"""Wire shapes of tasks and plans (RFC-0002 §9.3, §10, §11.2): the Intent Frame, the Plan
with its bindings and steps, the result of ``plan.check`` with its uncertainty report, and
the observation envelope every runtime response uses."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from aira_core.canonical import sha256_id
from aira_core.contracts.base import JsonObject, WireModel
from aira_core.contracts.capability import (
    Applicability,
    CapabilityId,
    Effect,
    Predicate,
    RiskLevel,
)
from aira_core.diagnostics import Diagnostic

STEP_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$"


class IntentFrame(WireModel):
    """§9.3 the visible, structured form of what the user asked for."""

    goal: str
    hard_requirements: list[str] = Field(default_factory=list)
    soft_preferences: list[str] = Field(default_factory=list)
    scope: list[str] = Field(default_factory=list)
    """Aliases or ids of the bodies the task may change; empty means no restriction."""
    prohibited_effects: list[Effect] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list)
    acceptance_assertions: list[str] = Field(default_factory=list)

    def frame_hash(self) -> str:
        return sha256_id("intent", self)


class PlanStep(WireModel):
    """One step of a composite plan: a capability and its arguments.

    Argument values: a number (mm, deg or the input's natural unit), ``{"value", "unit"}``,
    ``{"param": "p:<name>"}``, a body alias for shape inputs, ``{"body", "select"}`` for
    selections, or ``{"step": "<id>"}`` for the shape an earlier step made.
    """

    id: str = Field(pattern=STEP_ID_PATTERN)
    capability: CapabilityId
    args: JsonObject = Field(default_factory=dict)
    label: str | None = None
    """A body-creating step's label becomes the body's label, so alias ``b:<label>``."""
    depends_on: list[str] = Field(default_factory=list)


class PlanBindings(WireModel):
    discovery_catalog_hash: str | None = None
    authoring_lock_hash: str | None = None
    runtime_snapshot: str | None = None
    grant_id: str | None = None


class AcceptanceAssertion(WireModel):
    validator_ref: str
    target: str
    args: JsonObject = Field(default_factory=dict)


class Plan(WireModel):
    """§10.1 how the task will be done; only its authoring steps lower into an AMIR patch."""

    base_revision: str = Field(pattern=r"^rev:sha256:[0-9a-f]{64}$")
    intent_frame_hash: str | None = None
    bindings: PlanBindings = Field(default_factory=PlanBindings)
    steps: list[PlanStep] = Field(min_length=1)
    acceptance_assertions: list[AcceptanceAssertion] = Field(default_factory=list)
    estimated_effects: list[Effect] = Field(default_factory=list)
    estimated_risk: RiskLevel | None = None

    def plan_id(self) -> str:
        return sha256_id("plan", self)


class UncertaintyReport(WireModel):
    """§10.3 six separate kinds of uncertainty, never folded into one confidence."""

    intent_ambiguity: list[str] = Field(default_factory=list)
    reference_resolution: dict[str, str] = Field(default_factory=dict)
    """Reference as written → ``resolved:<id>`` or ``unresolved``."""
    capability_sufficiency: list[str] = Field(default_factory=list)
    """Missing capabilities or information; empty when the plan's steps cover it."""
    runtime_applicability: dict[str, Applicability] = Field(default_factory=dict)
    estimated_geometric_risk: RiskLevel = RiskLevel.LOW
    validation_coverage: dict[str, int] = Field(default_factory=dict)
    """``{"assertions": n, "authoringSteps": m, "uncovered": k}``"""


class CheckReport(WireModel):
    """The result of ``plan.check``: every finding, and for a targeted repair the first
    failing step with its full input schema and compact signature."""

    plan_id: str
    ok: bool
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    failed_step: str | None = None
    step_schema: dict[str, Any] | None = None
    step_signature: str | None = None
    """The failed step's capability as a compact signature (``aira_core.catalog.signatures``),
    e.g. ``exact.fillet@1(target:Shape,edges:Sel,radius:Len>0)``."""
    uncertainty: UncertaintyReport = Field(default_factory=UncertaintyReport)
    expansions: dict[str, list[dict[str, Any]]] | None = None
    """Each workflow step's expansion: the ordinary steps it became, in order, as they were
    checked (docs/workflows.md). Absent when the plan has no workflow step."""
    summary: dict[str, Any] | None = None
    """On a stale-revision refusal (``STEP_STALE_REVISION``): the summary of the new head,
    to re-plan against without another read."""


class Budgets(WireModel):
    consumed: dict[str, float] = Field(default_factory=dict)
    remaining: dict[str, float] = Field(default_factory=dict)


class NextAction(WireModel):
    """A registered action the caller may take next (never free text)."""

    operation: str
    capability: str | None = None
    reason: str | None = None
    args: JsonObject | None = None
    """The operation's arguments, ready to send (e.g. a repair's ``model.read`` call)."""
    preconditions: list[Predicate] | None = None
    """What must hold for the action to apply: the capability's registered preconditions
    and, for a repair, the diagnostic it repairs (``repair.diagnostic``)."""


class ObservationEnvelope(WireModel):
    """§11.2 the envelope of every runtime response."""

    request_id: str
    observed_revision: str | None = None
    status: Literal["success", "partial", "blocked", "failed", "stale"]
    data: dict[str, Any] = Field(default_factory=dict)
    diagnostics: list[Diagnostic] = Field(default_factory=list)
    effects_observed: list[str] = Field(default_factory=list)
    artifacts: list[dict[str, Any]] = Field(default_factory=list)
    certificate_summary: dict[str, Any] | None = None
    budgets: Budgets = Field(default_factory=Budgets)
    next_actions: list[NextAction] = Field(default_factory=list)
