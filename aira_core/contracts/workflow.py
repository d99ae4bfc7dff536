"""Wire shape of a declarative workflow definition (RFC-0002 §5.1: a workflow is not a hidden
script; it references a signed, version-locked, deterministic definition).

A definition lives in its package's manifest under ``workflows``, keyed by the descriptor's
``workflowRef``, so the package signature covers it and ``authoringLockHash`` locks it. Its
parameters are the workflow descriptor's input schema; it adds tables and a template of
plan steps whose argument values may be computed (docs/workflows.md)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from aira_core.contracts.base import JsonObject, WireModel
from aira_core.contracts.capability import CapabilityId

TEMPLATE_STEP_ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"
TABLE_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,47}$"


class WorkflowStep(WireModel):
    """One template step: an ordinary plan step whose values may be templates.

        In ``args`` (and ``label``) a value ``{"$expr": "<expression>"}`` is computed,
    ``{"$step": "<templateStepId>"}`` becomes that step's expanded id (a string, e.g. a
    selection's ``body``) and ``{"step": "<templateStepId>"}`` the reference to the shape it
    made; every other value is copied as it is. ``label`` may be ``"$label"``: the workflow
    step's own label (so ``b:<that label>`` names the body this step makes). ``when``, an
    expression, leaves the step out when false."""

    id: str = Field(pattern=TEMPLATE_STEP_ID_PATTERN)
    capability: CapabilityId
    args: JsonObject = Field(default_factory=dict)
    label: Any = None
    when: str | None = None
    depends_on: list[str] = Field(default_factory=list)


class WorkflowDefinition(WireModel):
    """Tables (named JSON values, e.g. ISO metric clearance holes by thread size) and the
    template of steps; ``result`` names the template step whose shape a later plan step gets
    when it refers to the workflow step (``{"step": "<workflow step id>"}``)."""

    tables: dict[str, Any] = Field(default_factory=dict)
    steps: list[WorkflowStep] = Field(min_length=1, max_length=64)
    result: str | None = None
