"""Plans: ``plan.check`` (the ten static checks of RFC-0002 §10.2) and lowering.

A composite plan is a list of steps ``{"id", "capability", "args", "label"?}`` bound to a
base revision. :func:`check_plan` refuses everything decidable before a kernel runs, each
finding with a stable code and a JSON pointer into the plan, and names the first failing
step with its full input schema for a targeted repair. A plan that passes is lowered:
authoring steps into one AMIR patch (committed all or nothing), validator steps into
assertions (judged on their body's state at their position in the plan, then re-checked on
every later commit), query steps into kernel queries.

A workflow step is first expanded into ordinary steps from its signed definition
(:mod:`aira_core.catalog.workflows`, docs/workflows.md: ``WORKFLOW_*`` codes); the checks and
the plan id are then those of the expanded plan, and findings on expanded steps are reported
on their workflow step.

The ten checks and their codes:

1. capability and version exist, catalog not replaced: ``PLAN_CAPABILITY_UNKNOWN``,
   ``PLAN_CATALOG_STALE``, ``PLAN_STEP_KIND_UNSUPPORTED``
2. input/output type flow: ``PLAN_ARGS_INVALID``, ``PLAN_REFERENCE_UNRESOLVED``,
   ``PLAN_STEP_REFERENCE_INVALID``
3. known preconditions: ``PLAN_PRECONDITION_UNMET``
4. read/write scope: ``PLAN_SCOPE_DENIED``
5. Session Grant and approvals: ``GRANT_EXPIRED``, ``GRANT_REVOKED``,
   ``PLAN_CLASS_DENIED``, ``GRANT_PERMISSION_DENIED``, ``PLAN_APPROVAL_REQUIRED``
6. acyclic dependencies: ``PLAN_STEP_DUPLICATE``, ``PLAN_DEPENDENCY_UNKNOWN``, ``PLAN_CYCLE``
7. budget upper bound: ``PLAN_BUDGET_EXCEEDED``
8. representation conversions explicit: ``PLAN_CONVERSION_IMPLICIT``
9. effects within the Intent Frame: ``PLAN_EFFECT_PROHIBITED``, ``PLAN_OUT_OF_SCOPE``
10. acceptance assertions supported: ``PLAN_ASSERTION_UNSUPPORTED``

Warnings, which do not fail the plan: ``SELECTOR_PRECEDENCE_AMBIGUOUS`` (a selector whose
``not`` is followed by ``and``/``or``/``exc`` at the same level: CadQuery's ``not`` binds
loosest, so it negates everything after it).

A plan bound to a revision other than the branch head is refused first, with
``STEP_STALE_REVISION``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from pydantic import ValidationError

from aira_core.canonical import sha256_hex
from aira_core.catalog.capabilities import CapabilityEntry, capability_index
from aira_core.catalog.catalog import Catalog
from aira_core.catalog.policy import LOCAL_GRANT, RISK_RANK, authorize
from aira_core.catalog.signatures import signature
from aira_core.catalog.workflows import Expansion, expand_plan, workflow_index
from aira_core.contracts.amir import (
    AMIR_ACCEPTS_KEYWORD,
    AMIR_CONSUMES_KEYWORD,
    BASE_UNIT,
    INTERMEDIATE_TYPES,
    JSON,
    SELECTION,
    SHAPE,
    AmirDocument,
    Assertion,
    AssertionAdd,
    Body,
    BodyAdd,
    BodyRemove,
    BodySetTip,
    InputValue,
    LiteralInput,
    Node,
    NodeAdd,
    NodeInput,
    Parameter,
    ParameterAdd,
    ParameterSetValue,
    ParamInput,
    ParamType,
    Patch,
    PatchOp,
    SemanticInput,
    param_fits,
    to_base,
)
from aira_core.contracts.capability import (
    WRITING_KINDS,
    Applicability,
    CapabilityDescriptor,
    CapabilityKind,
    CostClass,
    EntityKind,
    ExecutionQuality,
    RiskLevel,
    SessionGrant,
)
from aira_core.contracts.plan import CheckReport, IntentFrame, Plan, PlanStep, UncertaintyReport
from aira_core.contracts.workflow import WorkflowDefinition
from aira_core.diagnostics import (
    AiraError,
    Diagnostic,
    FindingCap,
    Severity,
    json_pointer,
    redact_value,
)
from aira_core.model.aliases import AliasTable, label_alias_safe
from aira_core.model.operations import node_ref
from aira_core.model.patch import (
    PatchRejected,
    apply_patch,
    find_cycle,
    references,
    validate_document,
)
from aira_core.model.repository import ModelRepository
from aira_core.model.store import MAIN
from aira_core.schema_errors import schema_errors

# Seconds of kernel time a step of each cost class may take, for the budget upper bound.
COST_CLASS_SECONDS = {
    CostClass.INSTANT: 0.01,
    CostClass.INTERACTIVE: 0.5,
    CostClass.INTERACTIVE_TO_HEAVY: 5.0,
    CostClass.HEAVY: 30.0,
    CostClass.BATCH: 300.0,
}
# A length this small is below any kernel's modelling tolerance (mm).
TOLERANCE_MM = 1e-6
_AUTHORING_KINDS = frozenset({CapabilityKind.AUTHORING_OPERATION})
_LOWERED_KINDS = WRITING_KINDS | {CapabilityKind.VALIDATOR, CapabilityKind.MODEL_QUERY}


# -- what a plan is checked against ------------------------------------------------------------


@dataclass
class PlanContext:
    """What a plan is checked and lowered against."""

    catalog: Catalog
    repository: ModelRepository
    grant: SessionGrant = LOCAL_GRANT
    intent: IntentFrame | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    capabilities: dict[str, CapabilityEntry] = field(default_factory=dict)
    workflows: dict[str, WorkflowDefinition] = field(default_factory=dict)
    """The catalog's workflow definitions by ``workflowRef``
    (:mod:`aira_core.catalog.workflows`)."""

    def __post_init__(self) -> None:
        if not self.capabilities:
            self.capabilities = capability_index(self.catalog)
        if not self.workflows:
            self.workflows = workflow_index(p.manifest for p in self.catalog.packages.values())


@dataclass
class Lowered:
    """A checked plan, lowered: the patch of its authoring and validator steps and the
    kernel queries of its query steps; which node and body each step made."""

    ops: list[PatchOp] = field(default_factory=list)
    queries: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    query_at: dict[str, int] = field(default_factory=dict)
    """How many of ``ops`` come before each query step: the state it reads is the base
    with those applied (a plan sees its own order)."""
    assertion_at: dict[str, int] = field(default_factory=dict)
    """How many of ``ops`` come before each validator step's ``assertion.add``: during the
    plan's validation the assertion judges its body in that state, as a query step reads
    it (later commits re-check it on the body as it is then)."""
    node_of_step: dict[str, str] = field(default_factory=dict)
    body_of_step: dict[str, str] = field(default_factory=dict)
    assertion_of_step: dict[str, str] = field(default_factory=dict)
    param_of_step: dict[str, str] = field(default_factory=dict)
    types_of_step: dict[str, frozenset[str]] = field(default_factory=dict)
    """The output semantic types of each step that made a node."""
    removed_by_step: dict[str, list[str]] = field(default_factory=dict)
    """The bodies each step took out of the model: a boolean's consumed tool, a removed
    body."""
    selection_source: dict[tuple[str, str], str] = field(default_factory=dict)
    """(step id, input) of each selection on a body -> the body's tip when the step was
    lowered: the shape the selection reads (unless a later step changes the body apart)."""
    plan: Plan | None = None
    """The plan as checked and lowered: workflow steps expanded (its step ids are the ones
    the tables above use)."""

    def step_of(self, entity_id: str) -> str | None:
        tables = (self.node_of_step, self.body_of_step, self.assertion_of_step)
        for table in (*tables, self.param_of_step):
            for step, eid in table.items():
                if eid == entity_id:
                    return step
        return None


class _Findings:
    def __init__(self) -> None:
        self.items: list[tuple[int | None, Diagnostic]] = []
        self.cap = FindingCap()  # a plan of 50,000 bad steps: the first of each code

    def add(
        self,
        code: str,
        message: str,
        *pointer: str | int,
        step: str | None = None,
        **fields: Any,
    ) -> None:
        """One finding; ``fields`` are further :class:`Diagnostic` fields (expected …)."""
        if not self.cap.keep(code):
            return
        # The failing step is found by position (/steps/<i>), never by id: ids may be
        # duplicated in a plan refused for exactly that.
        index = pointer[1] if len(pointer) > 1 and pointer[0] == "steps" else None
        diagnostic = Diagnostic(
            code=code,
            message=message,
            pointer=json_pointer(list(pointer)),
            phase="check",
            **fields,
        )
        self.items.append((index if isinstance(index, int) else None, diagnostic))

    def __bool__(self) -> bool:
        """Whether there is an error: warnings do not fail a plan."""
        return any(d.severity is Severity.ERROR for _, d in self.items)


# CadQuery's selector grammar (cadquery.selectors, infix_notation) ranks `and` over `or` over
# `exc`/`except` over `not`: `not` binds loosest and negates all that follows it at its level.
_BINARY_SELECTOR_OPS = frozenset({"and", "or", "exc", "except"})
# A direction vector `>(1, 0, 0)` is one operand, not a group.
_SELECTOR_TOKEN = re.compile(r"[<>|#+\-]\s*\([^()]*\)|[()]|[^\s()]+")


def validator_ref(ctx: Any, ref: str) -> str:
    """The ``validatorRef`` an assertion names, as the operation ref validators implement:
    also given as the catalog shows the validator (``cap:validate.volumeRange@1``), or that
    without its ``cap:`` prefix. Unknown: as given (plan.check refuses it)."""
    entry = ctx.capabilities.get(ref) or ctx.capabilities.get(f"cap:{ref}")
    if entry is not None and entry.descriptor.kind is CapabilityKind.VALIDATOR:
        return entry.ref
    return ref


def capability_of(ctx: Any, ref: str) -> str:
    """The catalog's capability id for a reference to it: the id itself, the id without its
    ``cap:`` prefix, or the operation ref it implements (``validate.volumeRange@1.0.0``, as
    a ``validatorRef`` may be written). Unknown: as given."""
    if ref in ctx.capabilities:
        return ref
    if f"cap:{ref}" in ctx.capabilities:
        return f"cap:{ref}"
    return next((cap for cap, e in ctx.capabilities.items() if e.ref == ref), ref)


def ambiguous_not(selector: str) -> str | None:
    """The operator after a ``not`` at the same parenthesis level (``and``, ``or``, ``exc``):
    CadQuery then parses ``A and not B and C`` as ``A and not (B and C)``, which a reader
    rarely means. ``None`` when every ``not`` negates only what it is meant to (``not B``
    at the end of its level, or ``not (B and C)``)."""
    seen_not = [False]  # per parenthesis level: a `not` was seen at this level
    for token in _SELECTOR_TOKEN.findall(selector):
        if token == "(":
            seen_not.append(False)
        elif token == ")":
            if len(seen_not) > 1:
                seen_not.pop()
        elif token == "not":
            seen_not[-1] = True
        elif token in _BINARY_SELECTOR_OPS and seen_not[-1]:
            return token
    return None


def negations_parenthesised(selector: str) -> str:
    """``selector`` with each ``not`` closed before the next operator at its level:
    ``|X and not >Y and not <Y`` → ``|X and (not >Y) and (not <Y)``."""
    out: list[str] = []
    pending = [0]  # per parenthesis level: the `(not` groups still open
    for token in _SELECTOR_TOKEN.findall(selector):
        if token == "(":
            pending.append(0)
        elif token == ")" or token in _BINARY_SELECTOR_OPS:
            out += [")"] * pending[-1]
            pending[-1] = 0
            if token == ")" and len(pending) > 1:
                pending.pop()
        elif token == "not":
            out.append("(")
            pending[-1] += 1
        out.append(token)
    out += [")"] * sum(pending)
    return " ".join(out).replace("( ", "(").replace(" )", ")")


def _selector_precedence(
    selector: str, where: tuple[Any, ...], found: _Findings, step: str
) -> None:
    op = ambiguous_not(selector)
    if op is None:
        return
    meant = negations_parenthesised(selector)
    found.add(
        "SELECTOR_PRECEDENCE_AMBIGUOUS",
        f"selector {selector!r}: CadQuery's `not` binds loosest and negates everything after "
        f"it, `{op}` included (`A and not B {op} C` means `A and not (B {op} C)`); to negate "
        f"only the next operand, parenthesise it: {meant!r}",
        *where,
        step=step,
        severity=Severity.WARNING,
        expected=meant,
        actual=selector,
    )


# -- the checks ---------------------------------------------------------------------------------


def _step_graph(plan: Plan, found: _Findings) -> None:
    ids = {s.id for s in plan.steps}
    seen: set[str] = set()
    for i, step in enumerate(plan.steps):
        if step.id in seen:
            found.add(
                "PLAN_STEP_DUPLICATE",
                f"step id {step.id!r} is used twice",
                "steps",
                i,
                "id",
                step=step.id,
            )
        seen.add(step.id)
        for dep in step.depends_on:
            if dep not in ids:
                found.add(
                    "PLAN_DEPENDENCY_UNKNOWN",
                    f"step {step.id!r} depends on unknown step {dep!r}",
                    "steps",
                    i,
                    "dependsOn",
                    step=step.id,
                )
    deps = {s.id: [d for d in s.depends_on if d in ids] for s in plan.steps}
    cycle = find_cycle(deps)
    if cycle:
        found.add(
            "PLAN_CYCLE",
            "steps depend on each other in a cycle: " + " -> ".join(cycle),
            "steps",
        )


def grant_problems(grant: SessionGrant, now: datetime) -> list[tuple[str, str]]:
    """Why ``grant`` cannot be used at ``now``: revoked, expired (codes and messages)."""
    problems = []
    if grant.revoked:
        problems.append(("GRANT_REVOKED", f"grant {grant.grant_id} is revoked"))
    expires = grant.expires_at
    if expires is not None:
        expires = expires if expires.tzinfo else expires.replace(tzinfo=UTC)
        if expires <= now:
            problems.append(("GRANT_EXPIRED", f"grant {grant.grant_id} expired at {expires}"))
    return problems


def _check_grant(ctx: PlanContext, branch: str, found: _Findings) -> None:
    grant = ctx.grant
    for code, message in grant_problems(grant, ctx.now):
        found.add(code, message, "bindings", "grantId")
    readable = grant.readable.branches
    if readable and "*" not in readable and branch not in readable:
        found.add(
            "PLAN_SCOPE_DENIED",
            f"grant {grant.grant_id} does not cover branch {branch}",
            "baseRevision",
        )


def _check_capability_grant(
    ctx: PlanContext,
    d: CapabilityDescriptor,
    i: int,
    step: PlanStep,
    found: _Findings,
    approved: bool,
) -> None:
    _, reasons = authorize(ctx.grant, d, approved=approved)
    for code, message in reasons:
        found.add(code, message, "steps", i, "capability", step=step.id)


# -- arguments -----------------------------------------------------------------------------------


class _Removal(NamedTuple):
    """How a body left the model during a plan."""

    step: str
    input: str
    keep: str | None
    """The Bool input that would have kept it (a consumed tool), or None (removed)."""


class _Scope:
    """Names as the plan sees them: the base revision's aliases and ids, then what earlier
    steps of the plan created (their ``b:<label>`` / ``p:<name>``, step ids and entity ids).

    The rule is the alias table's (:mod:`aira_core.model.aliases`): a name that is already
    taken keeps naming what it named. A plan-local name never shadows an alias of the base
    revision, and of two steps claiming the same ``b:<label>`` the first keeps it; the
    entity that does not get the name is reachable by its step (``{"step": id}``, or the
    step id) and by its id. So a name resolves within the plan to the entity it names in
    the committed revision."""

    def __init__(self, document: AmirDocument, aliases: AliasTable) -> None:
        self.aliases = aliases
        self.document = document
        self.params: dict[str, Parameter] = {p.id: p for p in document.parameters}
        self.tips: dict[str, str] = {b.id: b.tip for b in document.bodies}
        self.local: dict[str, str] = {}
        self.resolved: dict[str, str] = {}
        self.removed: dict[str, _Removal] = {}
        """Bodies an earlier step took out of the model: later steps cannot name them."""
        self.writable: set[str] | None = None
        """The bodies the Intent Frame lets the plan change (None: any)."""
        self._users: dict[str, list[tuple[str, str]]] | None = None

    def name_of(self, entity_id: str) -> str:
        """How a message names an entity: its alias in the base revision, else the name
        the plan gave it (``b:<label>``, else its step's id), else its id."""
        try:
            return self.aliases.alias_of(entity_id)
        except AiraError:
            names = [n for n, eid in self.local.items() if eid == entity_id and n != entity_id]
            return next((n for n in names if ":" in n), names[0] if names else entity_id)

    def users(self, body: str) -> list[tuple[str, str]]:
        """The nodes and assertions of the base revision that refer to ``body`` (a selection
        on it, an assertion on it), as (kind, how a message names it): while they are in
        the model, the body cannot leave it."""
        if self._users is None:
            self._users = {}
            for kind, entities in (
                ("node", self.document.nodes),
                ("assertion", self.document.assertions),
            ):
                for entity in entities:
                    for ref, block in references(entity):
                        if block == "bodies":
                            shown = "feature" if kind == "node" else kind
                            named = (kind, f"{shown} {self.name_of(entity.id)}")
                            self._users.setdefault(ref, []).append(named)
        return self._users.get(body, [])

    def gone(self, value: Any, body: str | None) -> str | None:
        """Why ``value`` (a reference the plan wrote) names no body although it resolves:
        the body it named was removed by an earlier step. None if it was not."""
        removal = self.removed.get(body or "")
        if removal is None:
            return None
        name = self.name_of(body or "")
        said = "" if value == name else f" (named {_short(value)})"
        if removal.keep is None:
            return (
                f"body {name}{said} was removed by step {removal.step!r}: it is not in the "
                "model after that step"
            )
        return (
            f"body {name}{said} was consumed by step {removal.step!r} (its input "
            f"{removal.input!r}): it is not in the model after that step; to use it later, "
            f"give step {removal.step!r} {removal.keep}: true"
        )

    def created(self, entity_id: str, step_id: str, kind: str, label: str | None) -> None:
        """Name an entity a step created: by its id, its step's id and, if the label is
        alias-safe and the alias still free, ``<kind>:<label>``."""
        names = [entity_id, step_id]
        if label is not None and label_alias_safe(label):
            names.append(f"{kind}:{label}")
        for name in names:
            if name not in self.aliases and name not in self.local:
                self.local[name] = entity_id

    def resolve(self, ref: Any) -> str | None:
        if not isinstance(ref, str):  # a list or an object names nothing
            return None
        try:
            found: str | None = self.aliases.resolve(ref)
        except AiraError:
            found = self.local.get(ref)
        self.resolved[ref] = f"resolved:{found}" if found else "unresolved"
        return found


def _entity_id(kind: str, plan_key: str, step_id: str) -> str:
    # Stable across re-checks of the same plan and unique enough never to collide.
    return f"{kind}{sha256_hex({'plan': plan_key, 'step': step_id})[:12]}"


@dataclass
class _Arg:
    normal: Any  # the value the canonical input schema validates
    lowered: InputValue | None
    resolved: Any = None  # ids instead of aliases: what a kernel query or an assertion takes


def _number_arg(
    value: Any,
    spec_type: str,
    scope: _Scope,
    where: tuple[Any, ...],
    found: _Findings,
    step: str,
) -> _Arg | None:
    if isinstance(value, dict) and "param" in value:
        pid = scope.resolve(str(value["param"]))
        param = scope.params.get(pid or "")
        if param is None:
            found.add(
                "PLAN_REFERENCE_UNRESOLVED",
                f"no parameter {value['param']!r} in the base revision or earlier steps",
                *where,
                step=step,
            )
            return None
        # an Angle into a Length, a String into a Count
        why = param_fits(param.type.value, spec_type)
        if why is not None:
            found.add(
                why,
                f"parameter {value['param']!r} is of type {param.type.value}; this input takes a "
                f"{spec_type}",
                *where,
                step=step,
            )
            return None
        normal: Any = param.value
        if spec_type in BASE_UNIT and isinstance(param.value, int | float):
            try:
                normal = to_base(float(param.value), param.unit, ParamType(param.type.value))
            except AiraError:
                normal = param.value  # a parameter with a bad unit: reported by the patch check
        return _Arg(normal, ParamInput(param=param.id), normal)
    if isinstance(value, dict) and "value" in value:
        unit = value.get("unit")
        if unit is not None and not isinstance(unit, str):
            found.add(
                "PLAN_ARGS_INVALID",
                f"unit {unit!r} is not a unit name such as 'mm' or 'deg'",
                *where,
                step=step,
            )
            return None
        normal = value["value"]
        if (
            spec_type in BASE_UNIT
            and isinstance(normal, int | float)
            and not isinstance(normal, bool)
        ):
            try:
                normal = to_base(float(normal), unit, ParamType(spec_type))
            except AiraError as exc:
                found.add(exc.code, exc.diagnostic.message, *where, step=step)
                return None
        return _Arg(normal, LiteralInput(value=value["value"], unit=unit), normal)
    return _Arg(value, LiteralInput(value=value), value)


def _accepts(entry: CapabilityEntry, name: str) -> str | None:
    """The semantic type a Shape input declares it takes (``x-amir-accepts``), if any."""
    prop = (entry.input_schema.get("properties") or {}).get(name)
    accepts = prop.get(AMIR_ACCEPTS_KEYWORD) if isinstance(prop, dict) else None
    return accepts if isinstance(accepts, str) else None


def _consumes(entry: CapabilityEntry) -> dict[str, str]:
    """The Shape inputs whose body the step consumes (``x-amir-consumes``), each with the
    name of the Bool input that keeps it instead."""
    out: dict[str, str] = {}
    if entry.descriptor.kind not in _AUTHORING_KINDS:
        return out
    for name, prop in (entry.input_schema.get("properties") or {}).items():
        keep = prop.get(AMIR_CONSUMES_KEYWORD) if isinstance(prop, dict) else None
        spec = entry.signature.inputs.get(name)
        if isinstance(keep, str) and spec is not None and spec.type == SHAPE:
            out[name] = keep
    return out


MESSAGE_VALUE_CHARS = 120
"""How much of a rejected value a diagnostic repeats (it may be megabytes of text)."""


def _clip(message: str, limit: int = 3 * MESSAGE_VALUE_CHARS) -> str:
    return message if len(message) <= limit else message[:limit] + "…"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MESSAGE_VALUE_CHARS else text[:MESSAGE_VALUE_CHARS] + "…"


def selection_problems(exc: ValidationError) -> str:
    """What is wrong with a selection, one clause per problem (``radius: …; nearest: …``)."""
    clauses = []
    for error in exc.errors():
        # the tags of a size's number | {min, max} branches are no part of the field's name
        where = ".".join(str(p) for p in error["loc"] if p not in ("size", "range"))
        clauses.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(dict.fromkeys(clauses))


def _normalise_args(
    step: PlanStep,
    i: int,
    entry: CapabilityEntry,
    scope: _Scope,
    lowered: Lowered,
    found: _Findings,
) -> dict[str, _Arg] | None:
    out: dict[str, _Arg] = {}
    ok = True
    for name, value in step.args.items():
        where = ("steps", i, "args", name)
        spec = entry.signature.inputs.get(name)
        kind = spec.type if spec else JSON
        if kind == SHAPE:
            wanted = _accepts(entry, name)
            if isinstance(value, dict) and "step" in value:
                node = lowered.node_of_step.get(str(value["step"]))
                made = lowered.types_of_step.get(str(value["step"]), frozenset())
                mismatch = (wanted is not None and made and wanted not in made) or (
                    wanted is None and made and made <= INTERMEDIATE_TYPES
                )
                if node is None or mismatch:
                    found.add(
                        "PLAN_STEP_REFERENCE_INVALID",
                        f"{value['step']!r} is not an earlier step that made a shape"
                        if node is None
                        else f"step {value['step']!r} makes {', '.join(sorted(made))}; "
                        f"{name} takes {wanted or 'a body'}",
                        *where,
                        step=step.id,
                    )
                    ok = False
                    continue
                made_body = lowered.body_of_step.get(str(value["step"]))
                gone = scope.gone(value, made_body)
                if gone is not None:
                    found.add("PLAN_REFERENCE_UNRESOLVED", gone, *where, step=step.id)
                    ok = False
                    continue
                out[name] = _Arg(f"step:{value['step']}", NodeInput(node=node), made_body)
                continue
            if wanted in INTERMEDIATE_TYPES:
                found.add(
                    "PLAN_ARGS_INVALID",
                    f'{name} takes a {wanted} made by an earlier step ({{"step": "<id>"}}), '
                    f"not {_short(value)}",
                    *where,
                    step=step.id,
                )
                ok = False
                continue
            body = scope.resolve(value) if isinstance(value, str) else None
            if body is None or body not in scope.tips:
                found.add(
                    "PLAN_REFERENCE_UNRESOLVED",
                    scope.gone(value, body)
                    or f"{value!r} names no body of the base revision or of an earlier step",
                    *where,
                    step=step.id,
                )
                ok = False
                continue
            out[name] = _Arg(value, NodeInput(node=scope.tips[body]), body)
            continue
        if kind == SELECTION:
            if not isinstance(value, dict) or not isinstance(value.get("body"), str):
                found.add(
                    "PLAN_ARGS_INVALID",
                    f"selection {_short(value)} is not {{body, select?, entity?, radius?, "
                    "length?, area?, between?, nearest?}} with a body alias",
                    *where,
                    step=step.id,
                )
                ok = False
                continue
            body = scope.resolve(value["body"])
            if body is None or body not in scope.tips:
                found.add(
                    "PLAN_REFERENCE_UNRESOLVED",
                    scope.gone(value["body"], body) or f"selection {value!r} names no body",
                    *where,
                    step=step.id,
                )
                ok = False
                continue
            entity = value.get("entity", EntityKind.EDGE.value if "edge" in name else "Face")
            try:
                lowered_sel = SemanticInput.model_validate(
                    {**value, "body": body, "entity": entity}
                )
            except ValidationError as exc:
                found.add(
                    "PLAN_ARGS_INVALID",
                    _clip(f"selection {_short(value)}: {selection_problems(exc)}"),
                    *where,
                    step=step.id,
                )
                ok = False
                continue
            if lowered_sel.select is not None:
                _selector_precedence(lowered_sel.select, (*where, "select"), found, step.id)
            for k, selector in enumerate(lowered_sel.between or ()):
                _selector_precedence(selector, (*where, "between", k), found, step.id)
            out[name] = _Arg(value, lowered_sel, {**value, "body": body})
            lowered.selection_source[(step.id, name)] = scope.tips[body]
            continue
        if kind == JSON:
            out[name] = _Arg(value, LiteralInput(value=value), value)
            continue
        arg = _number_arg(value, kind, scope, where, found, step.id)
        if arg is None:
            ok = False
            continue
        out[name] = arg
    return out if ok else None


def _schema_errors(
    schema: Mapping[str, Any],
    value: Any,
    subject: str,
    found: _Findings,
    *where: str | int,
    step: str | None = None,
) -> bool:
    """``PLAN_ARGS_INVALID`` for each way ``value`` breaks ``schema`` (pointers below
    ``where``); True when it breaks it."""
    errors = schema_errors(schema, value)
    for err in errors:
        found.add(
            "PLAN_ARGS_INVALID", f"{subject}: {_clip(err.message)}", *where, *err.path, step=step
        )
    return bool(errors)


def _preconditions(
    entry: CapabilityEntry, normal: Mapping[str, Any], i: int, step: PlanStep, found: _Findings
) -> None:
    d = entry.descriptor
    for pred in [*d.applicability.predicates, *d.preconditions]:
        name = pred.args.get("input")
        value = normal.get(name) if isinstance(name, str) else None
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        why = None
        if pred.id == "input.present" and name not in normal:
            why = f"{name!r} must be given"
        elif pred.id == "input.positive" and number is not None and number <= 0:
            why = f"{name!r} must be positive, got {number}"
        elif (
            pred.id == "input.greaterThanTolerance"
            and number is not None
            and (number <= TOLERANCE_MM)
        ):
            why = f"{name!r} must exceed the modelling tolerance, got {number}"
        elif pred.id == "input.compare" and number is not None:
            other = pred.args.get("value")
            if isinstance(other, dict):
                other = normal.get(other.get("input"))
            if isinstance(other, int | float):
                ops = {
                    "lt": number < other,
                    "le": number <= other,
                    "gt": number > other,
                    "ge": number >= other,
                    "eq": number == other,
                    "ne": number != other,
                }
                if not ops.get(pred.args.get("op", ""), True):
                    why = f"{name!r} = {number} must be {pred.args['op']} {other}"
        if why:
            found.add(
                "PLAN_PRECONDITION_UNMET",
                f"{d.capability_id}: {why}",
                "steps",
                i,
                "args",
                name or "",
                step=step.id,
            )


# -- lowering ------------------------------------------------------------------------------------


def _template_ops(
    entry: CapabilityEntry,
    step: PlanStep,
    i: int,
    scope: _Scope,
    plan_key: str,
    found: _Findings,
    lowered_params: dict[str, str],
    lowered: Lowered | None = None,
) -> list[PatchOp]:
    """The built-in patch templates (``patchTemplateRef``): parameters, and removing a
    body."""
    name = entry.ref.split("@")[0]
    args = step.args
    if name == "body.remove" and lowered is not None:
        ref = args.get("body")
        if isinstance(ref, dict):  # {"step": id}: the body that step made or changed
            body = lowered.body_of_step.get(str(ref.get("step")))
            if body is None:
                found.add(
                    "PLAN_STEP_REFERENCE_INVALID",
                    f"{_short(ref)} is not an earlier step that made or changed a body",
                    "steps",
                    i,
                    "args",
                    "body",
                    step=step.id,
                )
                return []
        else:
            body = scope.resolve(ref)
        if body is None or body not in scope.tips:
            found.add(
                "PLAN_REFERENCE_UNRESOLVED",
                scope.gone(ref, body)
                or f"{_short(ref)} names no body of the base revision or of an earlier step",
                "steps",
                i,
                "args",
                "body",
                step=step.id,
            )
            return []
        return _remove_body(body, step, i, "body", None, scope, lowered, found)
    if name == "parameter.define":
        pid = _entity_id("p", plan_key, step.id)
        try:
            param = Parameter(
                id=pid,
                label=str(args.get("name")),
                type=ParamType(args.get("type", ParamType.LENGTH.value)),
                unit=args.get("unit"),
                value=args.get("value"),
                min=args.get("min"),
                max=args.get("max"),
            )
        except ValueError as exc:
            found.add(
                "PLAN_ARGS_INVALID",
                f"{entry.descriptor.capability_id}: {exc}",
                "steps",
                i,
                "args",
                step=step.id,
            )
            return []
        problems = validate_document(AmirDocument(parameters=[param]))
        for problem in problems:  # unit of another dimension, value outside [min, max]
            found.add(
                problem.code,
                f"{entry.descriptor.capability_id}: {problem.message}",
                "steps",
                i,
                "args",
                "unit" if "UNIT" in problem.code else "value",
                step=step.id,
            )
        if problems:
            return []
        lowered_params[step.id] = pid
        scope.params[pid] = param
        scope.created(pid, step.id, "p", param.label)
        return [ParameterAdd(op="parameter.add", parameter=param)]
    if name == "parameter.set":
        pid = scope.resolve(str(args.get("parameter")))
        param = scope.params.get(pid or "")
        if param is None:
            found.add(
                "PLAN_REFERENCE_UNRESOLVED",
                f"no parameter {args.get('parameter')!r}",
                "steps",
                i,
                "args",
                "parameter",
                step=step.id,
            )
            return []
        value = args.get("value")
        unit = None
        if isinstance(value, dict):
            value, unit = value.get("value"), value.get("unit")
        try:
            op = ParameterSetValue(op="parameter.setValue", id=param.id, value=value, unit=unit)
        except ValidationError as exc:  # a package whose schema lets a non-scalar through
            found.add(
                "PLAN_ARGS_INVALID",
                f"{entry.descriptor.capability_id}: value {args.get('value')!r}: "
                f"{exc.errors(include_url=False)[0]['msg']}",
                "steps",
                i,
                "args",
                "value",
                step=step.id,
            )
            return []
        try:
            changed = apply_patch(AmirDocument(parameters=[param]), Patch(ops=[op]))
        except PatchRejected as exc:
            for problem in exc.diagnostics:
                found.add(
                    problem.code,
                    f"{entry.descriptor.capability_id}: {problem.message}",
                    "steps",
                    i,
                    "args",
                    "value",
                    step=step.id,
                )
            return []
        lowered_params[step.id] = param.id
        scope.params[param.id] = changed.parameters[0]
        return [op]
    found.add(
        "PLAN_STEP_KIND_UNSUPPORTED",
        f"patch template {entry.ref} is not known to this runtime",
        "steps",
        i,
        "capability",
        step=step.id,
    )
    return []


def _lower_step(
    entry: CapabilityEntry,
    step: PlanStep,
    args: dict[str, _Arg],
    scope: _Scope,
    lowered: Lowered,
    plan_key: str,
) -> None:
    d = entry.descriptor
    keeps = set(_consumes(entry).values())  # a directive to the plan, not a node input
    inputs = {n: a.lowered for n, a in args.items() if a.lowered is not None and n not in keeps}
    if d.kind is CapabilityKind.MODEL_QUERY:
        lowered.queries.append((step.id, entry.ref, {n: a.resolved for n, a in args.items()}))
        lowered.query_at[step.id] = len(lowered.ops)
        return
    if d.kind is CapabilityKind.VALIDATOR:
        target = args.get("target")
        body = target.resolved if target is not None else None
        aid = _entity_id("a", plan_key, step.id)
        lowered.assertion_of_step[step.id] = aid
        lowered.assertion_at[step.id] = len(lowered.ops)
        lowered.ops.append(
            AssertionAdd(
                op="assertion.add",
                assertion=Assertion(
                    id=aid,
                    label=step.label,
                    validator_ref=entry.ref,
                    target=body if body is not None else str(step.args.get("target")),
                    args={n: v for n, v in inputs.items() if n != "target"},
                ),
            )
        )
        return
    node_id = _entity_id("n", plan_key, step.id)
    lowered.node_of_step[step.id] = node_id
    node = Node(id=node_id, label=step.label, op=entry.ref, inputs=inputs)
    lowered.ops.append(NodeAdd(op="node.add", node=node))
    outputs = set(d.outputs.semantic_types) if d.outputs is not None else set()
    lowered.types_of_step[step.id] = frozenset(outputs)
    if outputs and outputs <= INTERMEDIATE_TYPES:  # a sketch: later steps use it, no body
        return
    target = args.get("target")
    if target is not None and isinstance(target.lowered, NodeInput):
        body = next((b for b, tip in scope.tips.items() if tip == target.lowered.node), None)
        if body is not None:  # a feature on a body: the body's tip moves to the new node
            lowered.ops.append(BodySetTip(op="body.setTip", id=body, tip=node_id))
            scope.tips[body] = node_id
            lowered.body_of_step[step.id] = body
            return
    body_id = _entity_id("b", plan_key, step.id)
    label = step.label or step.id
    lowered.ops.append(BodyAdd(op="body.add", body=Body(id=body_id, label=label, tip=node_id)))
    scope.tips[body_id] = node_id
    scope.created(body_id, step.id, "b", label)
    lowered.body_of_step[step.id] = body_id


def _consumed_bodies(
    entry: CapabilityEntry,
    step: PlanStep,
    i: int,
    args: dict[str, _Arg],
    scope: _Scope,
    found: _Findings,
) -> list[tuple[str, str, str]]:
    """(input, body, keep input) for each body the step consumes (``x-amir-consumes``): the
    body whose current shape the input takes, unless the keep input is true. Decided before
    the step is lowered, while the target's tip is still where the plan named it."""
    out: list[tuple[str, str, str]] = []
    target = args.get("target")
    target_body = (
        next((b for b, tip in scope.tips.items() if tip == target.lowered.node), None)
        if target is not None and isinstance(target.lowered, NodeInput)
        else None
    )
    for name, keep in _consumes(entry).items():
        arg, flag = args.get(name), args.get(keep)
        if arg is None or not isinstance(arg.lowered, NodeInput):
            continue
        if flag is not None and isinstance(flag.lowered, ParamInput):
            found.add(
                "PLAN_ARGS_INVALID",
                f"{keep} decides when the plan is checked whether the body of {name!r} stays "
                "in the model; give true or false, not a parameter",
                "steps",
                i,
                "args",
                keep,
                step=step.id,
            )
            continue
        if flag is not None and flag.normal is True:
            continue
        body = next((b for b, tip in scope.tips.items() if tip == arg.lowered.node), None)
        if body is None or any(body == b for _, b, _ in out):
            continue  # an earlier state of a body (no body is that shape), or already taken
        if body == target_body:
            found.add(
                "PLAN_CONSUMES_TARGET",
                f"step {step.id!r}: {name} names {scope.name_of(body)}, the body the step "
                f"changes (its target); it cannot consume the body it writes its result to. "
                f"Give another body as {name}",
                "steps",
                i,
                "args",
                name,
                step=step.id,
                expected="a body other than the target",
                actual=str(step.args.get(name)),
            )
            continue
        out.append((name, body, keep))
    return out


def _remove_body(
    body: str,
    step: PlanStep,
    i: int,
    name: str,
    keep: str | None,
    scope: _Scope,
    lowered: Lowered,
    found: _Findings,
) -> list[PatchOp]:
    """The op that takes ``body`` out of the model at this point of the plan: refused
    while an assertion or a node still refers to it, or when the Intent Frame's scope does
    not cover it; later steps naming it are told which step removed it."""
    users = list(scope.users(body))
    followed: dict[int, NodeAdd] = {}
    for k, op in enumerate(lowered.ops):
        entity = op.node if isinstance(op, NodeAdd) else getattr(op, "assertion", None)
        if entity is not None and any(ref == body for ref, _ in references(entity)):
            kind = "node" if isinstance(op, NodeAdd) else "assertion"
            moved = _followed(op, body, scope, lowered) if isinstance(op, NodeAdd) else None
            if moved is not None:
                followed[k] = moved  # its selections on the body now name the shape's node
                continue
            shown = "feature" if kind == "node" else kind
            users.append((kind, f"the {shown} of step {lowered.step_of(entity.id)!r}"))
    what = scope.name_of(body)
    verb = "consumes" if keep is not None else "removes"
    if users:
        kinds = {kind for kind, _ in users}
        shown = ", ".join(u for _, u in users[:3])
        shown += f" and {len(users) - 3} more" if len(users) > 3 else ""
        why = [w for k, w in (("assertion", "checks it"), ("node", "selects on it")) if k in kinds]
        fixes = [f"give {keep}: true to keep the body"] if keep is not None else []
        if "assertion" in kinds:
            fixes.append("remove the assertion first")
        if "node" in kinds and keep is not None:
            fixes.append("apply that feature to the result, after this step")
        found.add(
            "PLAN_BODY_STILL_REFERENCED",
            f"step {step.id!r} {verb} body {what}, but {shown} "
            f"{'still refers' if len(users) == 1 else 'still refer'} to it "
            f"({' or '.join(why)}), so it cannot leave the model: "
            + (", or ".join(fixes) or "it stays while a feature selects on it"),
            "steps",
            i,
            "args",
            name,
            step=step.id,
        )
        return []
    if scope.writable is not None and body in scope.aliases and body not in scope.writable:
        found.add(
            "PLAN_OUT_OF_SCOPE",
            f"step {step.id!r} {verb} body {what}, outside the Intent Frame's scope"
            + (f"; give {keep}: true to keep it" if keep is not None else ""),
            "steps",
            i,
            "args",
            name,
            step=step.id,
        )
        return []
    for k, moved in followed.items():
        lowered.ops[k] = moved
    del scope.tips[body]
    scope.removed[body] = _Removal(step.id, name, keep)
    lowered.removed_by_step.setdefault(step.id, []).append(body)
    return [BodyRemove(op="body.remove", id=body)]


def _followed(op: NodeAdd, body: str, scope: _Scope, lowered: Lowered) -> NodeAdd | None:
    """``op`` (a node this plan adds) with each selection on ``body`` re-pointed at the
    node whose shape it reads, so that ``body`` may leave the model: a selection resolves
    against the node that made the shape it names, not the body's name. That node is the
    one the kernel would read: the body's tip now, walked back past this node and what builds
    on it (a feature moves the tip of the body it changes). None when the node refers to
    the body otherwise, or the shape is not known."""
    node = op.node
    step = lowered.step_of(node.id)
    made = {o.node.id: o.node for o in lowered.ops if isinstance(o, NodeAdd)}
    inputs = dict(node.inputs)
    for name, value in node.inputs.items():
        if not isinstance(value, SemanticInput) or value.body != body:
            continue
        source = scope.tips.get(body)
        seen: set[str] = set()
        while source is not None and source not in seen and _builds_on(source, node.id, made):
            seen.add(source)
            source = _upstream(made.get(source))
        if source is None or step is None or (step, name) not in lowered.selection_source:
            return None
        wire = {k: v for k, v in value.to_wire().items() if k != "body"}
        inputs[name] = SemanticInput.model_validate({**wire, "node": source})
    if inputs == dict(node.inputs):
        return None
    return NodeAdd(op="node.add", node=node.model_copy(update={"inputs": inputs}))


def _builds_on(node_id: str, on: str, made: Mapping[str, Node]) -> bool:
    """Whether ``node_id`` is ``on`` or takes its shape, through the plan's own nodes."""
    todo, seen = [node_id], set()
    while todo:
        current = todo.pop()
        if current == on:
            return True
        if current in seen or current not in made:
            continue
        seen.add(current)
        todo += [ref for ref, block in references(made[current]) if block == "nodes"]
    return False


def _upstream(node: Node | None) -> str | None:
    """The node a feature changes: its target's, else its first shape input's."""
    if node is None:
        return None
    target = node.inputs.get("target")
    if isinstance(target, NodeInput):
        return target.node
    return next((v.node for v in node.inputs.values() if isinstance(v, NodeInput)), None)


def revision_types(document: AmirDocument, ctx: PlanContext) -> set[str]:
    """The semantic types a revision's bodies have (the outputs of their tips' operations):
    what a search or describe treats as known inputs."""
    ops = {n.id: n.op for n in document.nodes}
    out: set[str] = set()
    for body in document.bodies:
        out |= _representation(body.tip, ops, ctx) or set()
    return out


def _representation(
    node_id: str, document_ops: Mapping[str, str], ctx: PlanContext
) -> set[str] | None:
    op = document_ops.get(node_id)
    if op is None:
        return None
    for entry in ctx.capabilities.values():
        if node_ref(entry.descriptor) == op and entry.descriptor.outputs is not None:
            return set(entry.descriptor.outputs.semantic_types)
    return None


# -- check_plan ----------------------------------------------------------------------------------


def branch_head(ctx: PlanContext, plan: Plan, branch: str = MAIN) -> str:
    """The head a plan must be bound to: the branch's head, or for a task branch that does
    not exist yet the plan's own base (the branch is created there on commit)."""
    heads = ctx.repository.store.branches()
    if branch in heads:
        return heads[branch]
    if branch.startswith("task/"):
        ctx.repository.document(plan.base_revision)  # STORE_REVISION_UNKNOWN if it is not
        return plan.base_revision
    return ctx.repository.head(branch)  # raises STORE_BRANCH_UNKNOWN / _INVALID


def check_plan(
    plan: Plan, ctx: PlanContext, *, branch: str = MAIN, approved: bool = False
) -> tuple[CheckReport, Lowered | None]:
    """Run the static checks on ``plan`` for a write on ``branch``; lower it if they pass.
    ``approved``: the user approved this plan's risk (``PLAN_APPROVAL_REQUIRED`` no longer
    blocks).

    Never calls a kernel. The report's diagnostics carry JSON pointers into the plan;
    ``failedStep`` and ``stepSchema`` name the first failing step and its input schema.
    """
    found = _Findings()
    # Workflow steps first: what is checked (and gets the plan id) is the expanded plan.
    expansion = expand_plan(plan, ctx.capabilities, ctx.workflows)
    if expansion.findings:
        for f in expansion.findings:
            found.add(f.code, f.message, *f.pointer, step=f.step, cause="workflow")
        report = _report(plan.plan_id(), found, ctx, UncertaintyReport(), plan)
        return report, None
    submitted, plan = plan, expansion.plan
    plan_id = plan.plan_id()
    head = branch_head(ctx, plan, branch)
    if plan.base_revision != head:
        summary = ctx.repository.summary(head)
        found.add(
            "STEP_STALE_REVISION",
            f"the plan is bound to {plan.base_revision} but the "
            f"head of {branch} is {head}; re-plan on the new summary "
            f"({summary.counts})",
            "baseRevision",
            expected=plan.base_revision,
            actual=head,
            cause="revision",
        )
        report = _report(plan_id, found, ctx, UncertaintyReport())
        return report.model_copy(update={"summary": summary.to_wire()}), None
    bound = plan.bindings
    for field_name, value, current in (
        ("discoveryCatalogHash", bound.discovery_catalog_hash, ctx.catalog.discovery_catalog_hash),
        ("authoringLockHash", bound.authoring_lock_hash, ctx.catalog.authoring_lock_hash),
    ):
        if value is not None and value != current():
            found.add(
                "PLAN_CATALOG_STALE",
                f"the plan was made against another catalog ({field_name}); "
                "describe the capabilities again",
                "bindings",
                field_name,
            )
    if bound.grant_id is not None and bound.grant_id != ctx.grant.grant_id:
        found.add(
            "PLAN_GRANT_MISMATCH",
            f"the plan is bound to grant {bound.grant_id}; the session holds {ctx.grant.grant_id}",
            "bindings",
            "grantId",
        )

    _step_graph(plan, found)
    _check_grant(ctx, branch, found)

    document = ctx.repository.document(head)
    scope = _Scope(document, ctx.repository.aliases(head))
    lowered = Lowered()
    applicability: dict[str, Applicability] = {}
    sufficiency: list[str] = []
    node_ops = {n.id: n.op for n in document.nodes}
    seconds = 0.0
    risk = RiskLevel.LOW
    prohibited = set(ctx.intent.prohibited_effects) if ctx.intent else set()
    in_scope = (
        {scope.resolve(ref) or ref for ref in ctx.intent.scope}
        if ctx.intent and ctx.intent.scope
        else None
    )
    scope.writable = in_scope

    for i, step in enumerate(plan.steps):
        entry = ctx.capabilities.get(step.capability)
        if entry is None:
            found.add(
                "PLAN_CAPABILITY_UNKNOWN",
                f"{step.capability} is not in the production catalog",
                "steps",
                i,
                "capability",
                step=step.id,
            )
            sufficiency.append(f"missing capability {step.capability}")
            continue
        d = entry.descriptor
        applicability[step.id] = (
            Applicability.APPLICABLE
            if ExecutionQuality.AUTHORITATIVE in d.execution.quality
            else Applicability.CONDITIONALLY_APPLICABLE
        )
        if d.kind not in _LOWERED_KINDS:
            found.add(
                "PLAN_STEP_KIND_UNSUPPORTED",
                f"{d.kind.value} steps are not run inside a plan ({step.capability})",
                "steps",
                i,
                "capability",
                step=step.id,
            )
            continue
        _check_capability_grant(ctx, d, i, step, found, approved)
        seconds += COST_CLASS_SECONDS[d.execution.cost_class]
        if RISK_RANK[d.risk.level] > RISK_RANK[risk]:
            risk = d.risk.level
        for effect in sorted(prohibited & set(d.effects)):
            found.add(
                "PLAN_EFFECT_PROHIBITED",
                f"{d.capability_id} has effect {effect.value}, which the Intent Frame prohibits",
                "steps",
                i,
                "capability",
                step=step.id,
            )

        if d.patch_template_ref is not None:
            if not _schema_errors(
                entry.input_schema,
                step.args,
                d.capability_id,
                found,
                "steps",
                i,
                "args",
                step=step.id,
            ):
                lowered.ops.extend(
                    _template_ops(
                        entry, step, i, scope, plan_id, found, lowered.param_of_step, lowered
                    )
                )
            continue

        args = _normalise_args(step, i, entry, scope, lowered, found)
        if args is None:
            continue
        normal = {n: a.normal for n, a in args.items()}
        if _schema_errors(
            entry.input_schema, normal, d.capability_id, found, "steps", i, "args", step=step.id
        ):
            continue
        _preconditions(entry, normal, i, step, found)

        target = args.get("target")
        if (
            d.kind in _AUTHORING_KINDS
            and target is not None
            and isinstance(target.lowered, NodeInput)
        ):
            body = next((b for b, t in scope.tips.items() if t == target.lowered.node), None)
            if in_scope is not None and body is not None and body not in in_scope:
                found.add(
                    "PLAN_OUT_OF_SCOPE",
                    f"step {step.id!r} changes body {body!r}, outside the Intent Frame's scope",
                    "steps",
                    i,
                    "args",
                    "target",
                    step=step.id,
                )
            wanted = set(d.applicability.requires_representation)
            have = _representation(target.lowered.node, node_ops, ctx)
            if wanted and have is not None and not wanted & have:
                found.add(
                    "PLAN_CONVERSION_IMPLICIT",
                    f"{d.capability_id} needs "
                    f"{sorted(wanted)} but the target is {sorted(have)}; add an explicit "
                    "conversion step",
                    "steps",
                    i,
                    "args",
                    "target",
                    step=step.id,
                )
        removals = _consumed_bodies(entry, step, i, args, scope, found)
        _lower_step(entry, step, args, scope, lowered, plan_id)
        for name, body, keep in removals:
            lowered.ops.extend(_remove_body(body, step, i, name, keep, scope, lowered, found))
        for node_id in (lowered.node_of_step.get(step.id),):
            if node_id:
                node_ops[node_id] = entry.ref

    validators = {
        e.ref: e for e in ctx.capabilities.values() if e.descriptor.kind is CapabilityKind.VALIDATOR
    }
    for k, assertion in enumerate(plan.acceptance_assertions):
        ref = validator_ref(ctx, assertion.validator_ref)
        if ref not in validators:
            known = sorted(
                cap
                for cap, e in ctx.capabilities.items()
                if e.descriptor.kind is CapabilityKind.VALIDATOR
            )
            near = difflib.get_close_matches(
                assertion.validator_ref.removeprefix("cap:"),
                [c.removeprefix("cap:") for c in known],
                n=3,
                cutoff=0.5,
            )
            hint = (
                f"; did you mean {', '.join('cap:' + c for c in near)}?"
                if near
                else f"; the validators: {', '.join(known[:12])}"
                if known
                else "; no validator is admitted"
            )
            found.add(
                "PLAN_ASSERTION_UNSUPPORTED",
                f"no admitted validator implements {assertion.validator_ref!r} (name one as the "
                f"catalog shows it, cap:validate.volumeRange@1, or by its operation, "
                f"validate.volumeRange@1.0.0){hint}",
                "acceptanceAssertions",
                k,
                "validatorRef",
            )
            continue
        if ref != assertion.validator_ref:
            assertion = assertion.model_copy(update={"validator_ref": ref})
        body = scope.resolve(assertion.target)
        if body is None or body not in scope.tips:
            found.add(
                "PLAN_REFERENCE_UNRESOLVED",
                scope.gone(assertion.target, body) or f"{assertion.target!r} names no body",
                "acceptanceAssertions",
                k,
                "target",
            )
            continue
        # the validator's own input schema, as for a step: bad arguments are found here, not
        # after the plan was previewed and ran into them at validation
        if _schema_errors(
            validators[assertion.validator_ref].input_schema,
            {**assertion.args, "target": assertion.target},
            assertion.validator_ref,
            found,
            "acceptanceAssertions",
            k,
            "args",
        ):
            continue
        aid = _entity_id("a", plan_id, f"acceptance:{k}")
        lowered.ops.append(
            AssertionAdd(
                op="assertion.add",
                assertion=Assertion(
                    id=aid,
                    validator_ref=assertion.validator_ref,
                    target=body,
                    args={n: LiteralInput(value=v) for n, v in assertion.args.items()},
                ),
            )
        )

    budget = ctx.grant.budgets.compute_seconds
    if budget is not None and seconds > budget:
        found.add(
            "PLAN_BUDGET_EXCEEDED",
            f"the plan may take up to {seconds:g} s of kernel "
            f"time; grant {ctx.grant.grant_id} allows {budget:g} s",
            "steps",
        )

    authoring = sum(1 for s in plan.steps if s.id in lowered.node_of_step)
    asserted = len(lowered.assertion_of_step) + len(plan.acceptance_assertions)
    total = asserted + len(document.assertions)
    uncertainty = UncertaintyReport(
        intent_ambiguity=redact_value(list(ctx.intent.unknowns)) if ctx.intent else [],
        # keyed by the references as the plan wrote them: user or model text
        reference_resolution=redact_value(dict(scope.resolved)),
        capability_sufficiency=sufficiency,
        runtime_applicability=applicability,
        estimated_geometric_risk=risk,
        validation_coverage={
            "assertions": total,
            "authoringSteps": authoring,
            "uncovered": authoring if total == 0 else 0,
        },
    )
    if expansion.expanded:
        _from_workflows(found, expansion, submitted)
        report = _report(plan_id, found, ctx, uncertainty, submitted)
        report = report.model_copy(update={"expansions": expansion.expansions})
    else:
        report = _report(plan_id, found, ctx, uncertainty, plan)
    lowered.plan = plan
    return report, (lowered if report.ok else None)


def _from_workflows(found: _Findings, expansion: Expansion, submitted: Plan) -> None:
    """Findings on the expanded plan, told in terms of the submitted one: a finding on an
    expanded step points into its workflow step's expansion (``/steps/<i>/expansion/<k>``,
    as the report's ``expansions`` show it) and names both steps."""
    items = []
    for index, d in found.items:
        if index is None or index >= len(expansion.origin):
            items.append((index, d))
            continue
        original, k = expansion.origin[index]
        rest = (d.pointer or "").split("/")[3:]  # after "", "steps", "<index>"
        if k is None:
            pointer = "/".join(["", "steps", str(original), *rest])
            items.append((original, d.model_copy(update={"pointer": pointer})))
            continue
        wf = submitted.steps[original]
        sid = expansion.expansions[wf.id][k]["id"]
        pointer = "/".join(["", "steps", str(original), "expansion", str(k), *rest])
        message = f"expanded step {sid!r} of workflow step {wf.id!r} ({wf.capability}): {d.message}"
        update = {"pointer": pointer, "message": message, "affected": [sid, wf.id]}
        items.append((original, d.model_copy(update=update)))
    found.items = items


def _report(
    plan_id: str,
    found: _Findings,
    ctx: PlanContext,
    uncertainty: UncertaintyReport,
    plan: Plan | None = None,
) -> CheckReport:
    index = next(
        (i for i, d in found.items if i is not None and d.severity is Severity.ERROR), None
    )
    failed_step = None
    schema = None
    compact = None
    if index is not None and plan is not None and index < len(plan.steps):
        step = plan.steps[index]
        failed_step = step.id
        entry = ctx.capabilities.get(step.capability)
        if entry is not None:
            desc = entry.descriptor
            schema = entry.input_schema
            compact = signature(desc.capability_id, schema, kind=desc.kind, defaults=desc.defaults)
    return CheckReport(
        plan_id=plan_id,
        ok=not found,
        diagnostics=[d for _, d in found.items] + found.cap.summary(),
        failed_step=failed_step,
        step_schema=schema,
        step_signature=compact,
        uncertainty=uncertainty,
    )
