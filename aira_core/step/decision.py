"""The decision grammar of the bounded-step host (spec 003 §4.3–§4.5).

At every step the model answers with exactly one decision: one JSON object whose ``act``
names what it does. One line per act::

    {"act":"read",   "select":[["nodes"],["bodies","b:plate"]], "limit":20, "offset":0, "pin":true}
    {"act":"lookup", "query":"round the top edges"}     (or "capability":"cap:…@1", "level":"L3")
    {"act":"inspect","query":"massProperties", "args":{"target":"b:plate"}}
    {"act":"repair", "capability":"cap:…@1", "diagnostic":{"code":"FILLET_…","step":"round"}}
    {"act":"stage",  "name":"arm-p2.step", "mediaType":"model/step", "content":"ISO-10303-21;…"}
    {"act":"plan",   "summary":"…", "plan":{"steps":[{"id":"s1","capability":"cap:…@1","args":{}}]}}
    {"act":"pin",    "pages":["pg:3"], "unpin":["pg:1"]}
    {"act":"note",   "note":"…"}
    {"act":"done",   "summary":"…"}
    {"act":"abstain","reason":"…", "missing":["…"]}
    {"act":"batch",  "acts":[{"act":"read","select":[["parameters"]]},{"act":"lookup","query":"…"}]}

Rules:

- **One write act per step.** ``plan`` and ``stage`` change what the host holds; a step
  carries at most one of them, or one terminal act (``done``, ``abstain``), so every step's
  capsule and cost are predictable and routable.
- **Batch.** Read-only acts (``read``, ``lookup``, ``inspect``, ``repair``, ``pin``) may be
  combined into one ``batch`` of 1 to :attr:`TaskBudgets.batch_acts` (8) acts, run in order.
  A batch that holds a write act, a terminal act, a ``note``, another batch or too many acts
  is refused as a whole (``STEP_DECISION_FIELD_INVALID`` with a JSON pointer to the offending act).
- **Note.** Any top-level act may carry ``note``, which replaces the model's note in full
  (at most b of the tier). Acts inside a batch carry none; the batch itself may. The ``note``
  act only writes the note.
- **Plan.** ``plan`` is the composite plan's wire shape without ``baseRevision`` (the host
  binds the head): ``{"steps": [...], "acceptanceAssertions"?: [...]}``.
- **Repair.** ``repair`` asks a repair capability for the candidate it makes of the plan the
  task last had refused, for one of that refusal's diagnostics (``step`` optional: the first
  diagnostic with the code). A read: nothing is written; the candidate's ``plan`` is in the
  ``plan`` act's shape, to submit as one.
- **Aliases.** A string of the shape ``b:…`` / ``n:…`` / ``p:…`` / ``a:…`` in a read path, in
  a plan's step arguments or acceptance assertions, or in inspect arguments is an alias of the
  *current revision* and must be one of the legal aliases given for this step
  (``STEP_DECISION_ALIAS_UNKNOWN`` otherwise), or, inside a plan, the alias an earlier
  step of the same plan creates (``b:<label>``, ``p:<name>``, with an alias-safe label;
  plan.check resolves those).
  Inside argument values, ``{"param": …}`` takes a parameter alias or id and
  ``{"body": …}`` a body alias or id.
- A read path is ``[block]`` or ``[block, alias-or-id]`` with block one of parameters, nodes,
  bodies, assertions; an empty ``select`` reads the head summary.

The forms inside the acts (the plan draft, arguments, read paths, aliases) and their
``$defs`` are :mod:`aira_core.runtime.drafts`', the same for the MCP server's tools.

:func:`parse_decision` turns the model's text into a :data:`Decision` or raises
:class:`DecisionRejected` with a stable code, never anything else. :func:`decision_schema` is
the per-step JSON Schema (draft 2020-12) in which the legal aliases of the current revision
are enums (RFC-0002 §13.2.1: the schema only narrows; passing it is no evidence of semantic
validity); inside a plan, an alias of the plan's own making is allowed by its shape beside
them. Every decision :func:`parse_decision` accepts validates against it.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from aira_core.contracts.amir import (
    host_tokens,
)
from aira_core.contracts.base import DIAGNOSTIC_CODE_PATTERN, WireModel
from aira_core.contracts.capability import CAPABILITY_ID_PATTERN
from aira_core.contracts.plan import (
    STEP_ID_PATTERN,
    Plan,
    PlanBindings,
)
from aira_core.diagnostics import AiraError, json_pointer, redact, redact_value
from aira_core.model.blocks import MAX_SELECT_LIMIT, MAX_SELECT_OFFSET
from aira_core.runtime.drafts import (
    ALIAS_KINDS,
    ALIAS_SHAPE,
    KIND_WORD,
    MESSAGE_VALUE_CHARS,
    SCHEMA_REF,
    Args,
    Grammar,
    PlanBody,
    SelectPath,
    drop_titles,
    error_text,
    fill_alias_defs,
    legal_sets,
    link_defs,
    plan_local,
    shared_defs,
    short_value,
    visible,
    walk_values,
)
from aira_core.runtime.tiers import DEFAULT_BUDGETS, TaskBudgets, Tier

# -- codes and act sets ---------------------------------------------------------------------------

STEP_DECISION_NOT_JSON = "STEP_DECISION_NOT_JSON"
STEP_DECISION_NOT_OBJECT = "STEP_DECISION_NOT_OBJECT"
STEP_DECISION_ACT_UNKNOWN = "STEP_DECISION_ACT_UNKNOWN"
STEP_DECISION_FIELD_INVALID = "STEP_DECISION_FIELD_INVALID"
STEP_DECISION_ALIAS_UNKNOWN = "STEP_DECISION_ALIAS_UNKNOWN"

ACTS = (
    "read",
    "lookup",
    "inspect",
    "repair",
    "stage",
    "plan",
    "pin",
    "note",
    "done",
    "abstain",
    "batch",
)
READ_ONLY_ACTS = frozenset({"read", "lookup", "inspect", "repair", "pin"})
WRITE_ACTS = frozenset({"plan", "stage"})
TERMINAL_ACTS = frozenset({"done", "abstain"})

GRAMMAR_SUMMARY = (
    "one JSON object per step, exactly one act: "
    "read{select:[[block],[block,alias]],limit?,offset?,pin?} · "
    "lookup{query | capability,level?:L2|L3} · inspect{query,args} · "
    "repair{capability,diagnostic:{code,step?}} (a candidate of your last refused plan) · "
    "stage{name,mediaType,content} · plan{summary,plan:{steps,acceptanceAssertions?}} · "
    "pin{pages,unpin} · note{note} · done{summary} · abstain{reason,missing} · "
    "batch{acts:[read|lookup|inspect|repair|pin, ≤8]}; any top-level act may carry note "
    "(replaces your note); at most one write act (plan, stage) per step; what an earlier "
    'plan step makes is named {"step":"<id>"}, not by a new alias'
)
"""The grammar in one paragraph, for a capsule's index."""

MAX_SELECT_PATHS = 16
"""The most paths one ``read`` may select (each yields a page bounded by the tier)."""
MAX_DEPTH = 64
"""How deeply a decision's JSON may nest; deeper input is refused before validation."""
MAX_SAFE_INT = 2**53
"""Larger integers are not exact in JSON (IEEE doubles), so canonical JSON refuses them."""


class DecisionRejected(AiraError):
    """A decision the host refuses; ``code`` is one of the ``STEP_DECISION_*`` codes and
    ``diagnostic.pointer`` (where known) points into the decision JSON."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        pointer: str | None = None,
        subject: str | None = None,
        expected: Any = None,
    ) -> None:
        super().__init__(code, _clip(message), subject=subject, pointer=pointer)
        update: dict[str, Any] = {"phase": "decision"}
        if expected is not None:
            update["expected"] = expected
        self.diagnostic = self.diagnostic.model_copy(update=update)


# -- field types ---------------------------------------------------------------------------------


NonEmpty = Annotated[str, Field(min_length=1)]


# -- acts ----------------------------------------------------------------------------------------


class BatchedRead(Grammar):
    """Read pages of the head revision; an empty select reads the head summary."""

    act: Literal["read"]
    select: Annotated[list[SelectPath], Field(max_length=MAX_SELECT_PATHS)] = Field(
        default_factory=list
    )
    """Paths [block] or [block, alias-or-id]; blocks: parameters, nodes, bodies, assertions."""
    limit: Annotated[int, Field(ge=1, le=MAX_SELECT_LIMIT)] | None = None
    offset: Annotated[int, Field(ge=0, le=MAX_SELECT_OFFSET)] | None = None
    pin: bool = False
    """Keep the pages in the working set (paid from the budget) instead of one step."""


class BatchedLookup(Grammar):
    """Search the capability catalog (query), or describe one capability (capability)."""

    act: Literal["lookup"]
    query: NonEmpty | None = None
    """What you want to do, in words: a catalog search."""
    capability: NonEmpty | None = None
    """A capability id to describe instead of searching."""
    level: Literal["L2", "L3"] | None = None
    """For capability: L2 the contract (default), L3 with guidance."""

    @model_validator(mode="after")
    def _one_target(self) -> BatchedLookup:
        if (self.query is None) == (self.capability is None):
            raise PydanticCustomError(
                "lookup_target",
                "lookup takes exactly one of query (search) or capability (describe)",
                {"subpointer": ""},
            )
        if self.level is not None and self.capability is None:
            raise PydanticCustomError(
                "lookup_target",
                "level applies to describing a capability; a query search takes none",
                {"subpointer": "/level"},
            )
        return self


class BatchedInspect(Grammar):
    """Run a query capability (e.g. massProperties) on the head revision."""

    act: Literal["inspect"]
    query: Annotated[str, Field(min_length=1, max_length=200)]
    """A query capability id or its short name, e.g. massProperties."""
    args: Args = Field(default_factory=dict)


class RepairTarget(Grammar):
    """The refused plan's diagnostic to repair."""

    code: Annotated[str, Field(pattern=DIAGNOSTIC_CODE_PATTERN, max_length=80)]
    step: Annotated[str, Field(pattern=STEP_ID_PATTERN)] | None = None
    """The failing step's id; absent: the first diagnostic with the code."""


class BatchedRepair(Grammar):
    """The candidate a repair (one a refused plan's result lists) makes of your last refused
    plan; writes nothing: send its plan as a plan act to apply it."""

    act: Literal["repair"]
    capability: Annotated[str, Field(pattern=CAPABILITY_ID_PATTERN)]
    diagnostic: RepairTarget


class BatchedPin(Grammar):
    """Pin pages into the working set, or release them."""

    act: Literal["pin"]
    pages: list[NonEmpty] = Field(default_factory=list)
    unpin: list[NonEmpty] = Field(default_factory=list)


class ReadAct(BatchedRead):
    """Read pages of the head revision; an empty select reads the head summary."""

    note: str | None = None
    """Replaces your note in full."""


class LookupAct(BatchedLookup):
    """Search the capability catalog (query), or describe one capability (capability)."""

    note: str | None = None
    """Replaces your note in full."""


class InspectAct(BatchedInspect):
    """Run a query capability (e.g. massProperties) on the head revision."""

    note: str | None = None
    """Replaces your note in full."""


class RepairAct(BatchedRepair):
    """The candidate a repair (one a refused plan's result lists) makes of your last refused
    plan; writes nothing: send its plan as a plan act to apply it."""

    note: str | None = None
    """Replaces your note in full."""


class PinAct(BatchedPin):
    """Pin pages into the working set, or release them."""

    note: str | None = None
    """Replaces your note in full."""


class StageAct(Grammar):
    """Stage a file for a later plan (refer to it as "staged:<name>"). A write act."""

    act: Literal["stage"]
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    media_type: Annotated[str, Field(pattern=r"^[a-z]+/[A-Za-z0-9.+-]+$")]
    """e.g. model/step."""
    content: str
    note: str | None = None
    """Replaces your note in full."""


class PlanAct(Grammar):
    """Submit a composite plan against the head revision. A write act."""

    act: Literal["plan"]
    summary: NonEmpty
    plan: PlanBody
    note: str | None = None
    """Replaces your note in full."""

    def to_plan(
        self,
        base_revision: str,
        *,
        intent_frame_hash: str | None = None,
        bindings: PlanBindings | None = None,
    ) -> Plan:
        """The :class:`~aira_core.contracts.plan.Plan` bound to ``base_revision``."""
        wire: dict[str, Any] = {**self.plan, "baseRevision": base_revision}
        if intent_frame_hash is not None:
            wire["intentFrameHash"] = intent_frame_hash
        if bindings is not None:
            wire["bindings"] = bindings.to_wire()
        return Plan.model_validate(wire)


class NoteAct(Grammar):
    """Only rewrite your note (the host keeps it for you across steps)."""

    act: Literal["note"]
    note: str
    """Replaces your note in full."""


class DoneAct(Grammar):
    """Claim the task complete; the runtime checks the evidence and decides."""

    act: Literal["done"]
    summary: NonEmpty
    note: str | None = None
    """Replaces your note in full."""


class AbstainAct(Grammar):
    """Give up: the task cannot proceed; say why and what is missing."""

    act: Literal["abstain"]
    reason: NonEmpty
    missing: list[str] = Field(default_factory=list)
    note: str | None = None
    """Replaces your note in full."""


BatchedAct = Annotated[
    BatchedRead | BatchedLookup | BatchedInspect | BatchedRepair | BatchedPin,
    Field(discriminator="act"),
]


class BatchAct(Grammar):
    """Several read-only acts, run in order; results come back together."""

    act: Literal["batch"]
    acts: list[BatchedAct] = Field(min_length=1)
    """1 to 8 of read, lookup, inspect, repair, pin (no note inside: put it on the batch)."""
    note: str | None = None
    """Replaces your note in full."""


Decision = Annotated[
    ReadAct
    | LookupAct
    | InspectAct
    | RepairAct
    | StageAct
    | PlanAct
    | PinAct
    | NoteAct
    | DoneAct
    | AbstainAct
    | BatchAct,
    Field(discriminator="act"),
]
"""One decision: exactly one act."""

DECISION_ADAPTER: TypeAdapter[Decision] = TypeAdapter(Decision)

ACT_MODELS: dict[str, type[WireModel]] = {
    "read": ReadAct,
    "lookup": LookupAct,
    "inspect": InspectAct,
    "repair": RepairAct,
    "stage": StageAct,
    "plan": PlanAct,
    "pin": PinAct,
    "note": NoteAct,
    "done": DoneAct,
    "abstain": AbstainAct,
    "batch": BatchAct,
}
_BATCHED_MODELS: dict[str, type[WireModel]] = {
    "read": BatchedRead,
    "lookup": BatchedLookup,
    "inspect": BatchedInspect,
    "repair": BatchedRepair,
    "pin": BatchedPin,
}


def is_write(decision: Any) -> bool:
    """Whether the decision changes what the host holds (``plan``, ``stage``)."""
    return getattr(decision, "act", None) in WRITE_ACTS


def is_terminal(decision: Any) -> bool:
    """Whether the decision ends the task (``done``, ``abstain``), subject to the runtime."""
    return getattr(decision, "act", None) in TERMINAL_ACTS


def is_read_only(decision: Any) -> bool:
    """Whether the decision only reads (a read-only act, or a batch of them)."""
    return getattr(decision, "act", None) in READ_ONLY_ACTS | {"batch"}


def decision_to_wire(decision: Any) -> dict[str, Any]:
    """The decision's JSON value (camelCase, absent optionals left out)."""
    return decision.to_wire()


# -- parsing -------------------------------------------------------------------------------------


def parse_decision(
    text: str | bytes,
    aliases: Mapping[str, Sequence[str]] | Any | None = None,
    *,
    budgets: TaskBudgets = DEFAULT_BUDGETS,
    tier: Tier | None = None,
) -> Decision:
    """The decision in the model's ``text``, or :class:`DecisionRejected`.

    ``aliases`` maps kinds (``bodies``, ``nodes``, ``parameters``, optionally ``assertions``)
    to the legal aliases of the current revision (an :class:`~aira_core.model.aliases.AliasTable`
    is taken too); an alias-shaped string of a kind that is given must be one of them. A kind
    that is not given is not checked; ``None`` checks none. With ``tier``, a note longer than
    the tier's b is refused.
    """
    raw = _load(text)
    _check_raw(raw)
    # What the model wrote goes on into the ledger, the capsule, the trajectory, commit
    # messages and the documents the store keeps: credentials in it stop here. Strings that
    # hold none (ids, aliases, selectors, labels) are unchanged, and with them the revisions.
    raw = redact_value(raw)
    if not isinstance(raw, dict):
        raise DecisionRejected(
            STEP_DECISION_NOT_OBJECT,
            f'a decision is one JSON object {{"act": …}}, got {_json_type(raw)}'
            + (
                '; for several read-only acts send {"act": "batch", "acts": [...]}'
                if isinstance(raw, list)
                else ""
            ),
            expected="object",
        )
    act = raw.get("act")
    if not isinstance(act, str) or act not in ACT_MODELS:
        what = "no act" if "act" not in raw else f"act {short_value(act)} is not an act"
        raise DecisionRejected(
            STEP_DECISION_ACT_UNKNOWN,
            f"{what}; the acts are {', '.join(ACTS)}",
            pointer="/act",
            expected=list(ACTS),
        )
    if act == "batch":
        _check_batch(raw, budgets)
    model = ACT_MODELS[act]
    try:
        decision = model.model_validate(raw)
    except ValidationError as exc:
        raise _rejection(exc, raw, model) from None
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:  # never a traceback
        raise DecisionRejected(
            STEP_DECISION_FIELD_INVALID, f"the {act} decision could not be validated: {exc}"
        ) from None
    if tier is not None:
        _check_notes(decision, tier)
    table = legal_sets(aliases)
    if table is not None:
        _check_aliases(decision, table)
    return decision  # type: ignore[return-value]


class _Dup(dict):  # type: ignore[type-arg]
    """An object in which a key occurs more than once."""

    dup: str = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            marked = _Dup(pairs)
            marked.dup = key
            return marked
        out[key] = value
    return out


class _Constant(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _Constant(name)


def _load(text: Any) -> Any:
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecisionRejected(
                STEP_DECISION_NOT_JSON,
                f"the decision is not UTF-8 text (invalid byte at offset {exc.start})",
            ) from None
    if not isinstance(text, str):
        raise DecisionRejected(
            STEP_DECISION_NOT_JSON,
            f"a decision is JSON text, got a Python {type(text).__name__}",
        )
    if not text.strip():
        raise DecisionRejected(
            STEP_DECISION_NOT_JSON, 'the decision is empty; send one JSON object {"act": …}'
        )
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        # Redacted whole, then cut: a credential cut in half would no longer be recognised.
        before = redact(visible(text[: exc.pos]))[-40:]
        after = redact(visible(text[exc.pos :]))[:40]
        from aira_core.gateway.brackets import account  # what is open there: brackets only

        hint = ""
        if text.lstrip().startswith("```"):
            hint = "; send the JSON object alone, without a code fence"
        elif exc.msg == "Extra data":
            hint = (
                "; a decision is exactly one JSON object (several read-only acts go in one "
                '{"act": "batch", "acts": [...]})'
            )
        elif opened := account(text, exc.pos):
            hint = f"; {opened}"
        raise DecisionRejected(
            STEP_DECISION_NOT_JSON,
            f"not JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}; "
            f"near …{before}⟦here⟧{after}…{hint}",
        ) from None
    except _Constant as exc:
        raise DecisionRejected(
            STEP_DECISION_NOT_JSON, f"{exc} is not a JSON number; write a finite number"
        ) from None
    except RecursionError:
        raise DecisionRejected(
            STEP_DECISION_NOT_JSON, f"the JSON nests too deeply (the limit is {MAX_DEPTH} levels)"
        ) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise DecisionRejected(STEP_DECISION_NOT_JSON, f"not usable JSON: {exc}") from None


def _check_raw(raw: Any) -> None:
    """Depth, duplicate keys and text that is not UTF-8 (lone surrogates), with pointers."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), raw)]
    while stack:
        parts, value = stack.pop()
        if len(parts) > MAX_DEPTH:
            raise DecisionRejected(
                STEP_DECISION_FIELD_INVALID,
                f"the decision nests deeper than {MAX_DEPTH} levels",
                pointer=json_pointer(parts),
            )
        if isinstance(value, str):
            _utf8(value, parts)
        elif isinstance(value, float) and not math.isfinite(value):
            raise DecisionRejected(
                STEP_DECISION_FIELD_INVALID,
                "the number is too large for a double; write a finite number",
                pointer=json_pointer(parts),
            )
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INT:
            raise DecisionRejected(
                STEP_DECISION_FIELD_INVALID,
                "integers beyond ±2**53 are not exact in JSON; got one of "
                f"{len(str(value))} digits",
                pointer=json_pointer(parts),
            )
        elif isinstance(value, dict):
            if isinstance(value, _Dup):
                raise DecisionRejected(
                    STEP_DECISION_FIELD_INVALID,
                    f"the key {short_value(value.dup)} occurs more than once in one object",
                    pointer=json_pointer((*parts, value.dup)),
                )
            for key, item in value.items():
                _utf8(key, (*parts, key))
                stack.append(((*parts, key), item))
        elif isinstance(value, list):
            stack.extend(((*parts, i), item) for i, item in enumerate(value))


def _utf8(text: str, parts: tuple[str | int, ...]) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise DecisionRejected(
            STEP_DECISION_FIELD_INVALID,
            "the text holds a lone surrogate escape (\\ud800–\\udfff) that is not a character",
            pointer=json_pointer([visible(str(p)) for p in parts]),
        ) from None


def _check_batch(raw: dict[str, Any], budgets: TaskBudgets) -> None:
    acts = raw.get("acts")
    if not isinstance(acts, list):
        return  # the model reports it
    for i, item in enumerate(acts):
        if not isinstance(item, dict):
            continue
        act = item.get("act")
        if isinstance(act, str) and act in ACT_MODELS and act not in READ_ONLY_ACTS:
            why = {
                "plan": "a write act",
                "stage": "a write act",
                "done": "a terminal act",
                "abstain": "a terminal act",
                "note": "not a read-only act (put note on the batch itself)",
                "batch": "a batch (batches do not nest)",
            }[act]
            raise DecisionRejected(
                STEP_DECISION_FIELD_INVALID,
                f"acts[{i}] is {act}, {why}; a batch holds only read-only acts "
                f"({', '.join(sorted(READ_ONLY_ACTS))}), so the whole batch is refused: "
                "send a write or terminal act as its own decision",
                pointer=f"/acts/{i}/act",
                expected=sorted(READ_ONLY_ACTS),
            )
        if not isinstance(act, str) or act not in ACT_MODELS:
            what = "has no act" if "act" not in item else f"act {short_value(act)} is not an act"
            raise DecisionRejected(
                STEP_DECISION_ACT_UNKNOWN,
                f"acts[{i}] {what}; a batch holds {', '.join(sorted(READ_ONLY_ACTS))}",
                pointer=f"/acts/{i}/act",
                expected=sorted(READ_ONLY_ACTS),
            )
    if len(acts) > budgets.batch_acts:
        raise DecisionRejected(
            STEP_DECISION_FIELD_INVALID,
            f"a batch holds at most {budgets.batch_acts} acts, this one {len(acts)}; "
            "split it over two steps",
            pointer=f"/acts/{budgets.batch_acts}",
            expected=budgets.batch_acts,
        )


def _rejection(
    exc: ValidationError, raw: dict[str, Any], model: type[WireModel]
) -> DecisionRejected:
    errors = exc.errors()
    first = errors[0]
    loc = list(first["loc"])
    owner: type[WireModel] = model
    # Inside a batch, pydantic names the tag of the inner act: ("acts", i, "read", …).
    if model is BatchAct and len(loc) >= 3 and loc[0] == "acts" and isinstance(loc[1], int):
        acts = raw.get("acts")
        item = acts[loc[1]] if isinstance(acts, list) and loc[1] < len(acts) else None
        if isinstance(item, dict) and loc[2] == item.get("act") and loc[2] in _BATCHED_MODELS:
            owner = _BATCHED_MODELS[loc[2]]
            del loc[2]
    pointer = json_pointer(loc) + (first.get("ctx") or {}).get("subpointer", "")
    message = f"{raw.get('act')}: {error_text(first, owner)}"
    if (
        model is BatchAct
        and first["type"] == "extra_forbidden"
        and len(loc) == 3
        and loc[2] == "note"
    ):
        message += "; acts inside a batch carry no note: put it on the batch itself"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return DecisionRejected(STEP_DECISION_FIELD_INVALID, message, pointer=pointer or "")


def _check_notes(decision: Any, tier: Tier) -> None:
    note = getattr(decision, "note", None)
    if isinstance(note, str) and host_tokens(note) > tier.note:
        raise DecisionRejected(
            STEP_DECISION_FIELD_INVALID,
            f"the note is {host_tokens(note)} tokens ({len(note.encode('utf-8'))} bytes); "
            f"at tier {tier.name} it holds at most {tier.note} tokens ({tier.bytes(tier.note)} "
            "bytes): keep what the next steps need",
            pointer="/note",
            expected=tier.bytes(tier.note),
        )


def _check_aliases(decision: Any, legal: dict[str, frozenset[str]]) -> None:
    acts: list[tuple[str, Any]] = [("", decision)]
    if decision.act == "batch":
        acts = [(f"/acts/{i}", act) for i, act in enumerate(decision.acts)]
    for base, act in acts:
        if act.act == "read":
            for i, path in enumerate(act.select):
                if len(path) == 2:
                    _known(path[1], legal, f"{base}/select/{i}/1")
        elif act.act == "inspect":
            for parts, value in walk_values(act.args):
                if isinstance(value, str):
                    _known(value, legal, f"{base}/args{json_pointer(parts)}")
        elif act.act == "plan":
            steps = act.plan["steps"]
            for i, step in enumerate(steps):
                for parts, value in walk_values(step.get("args", {})):
                    if isinstance(value, str):
                        _known(value, legal, f"/plan/steps/{i}/args{json_pointer(parts)}", steps)
            for i, check in enumerate(act.plan.get("acceptanceAssertions", [])):
                _known(check["target"], legal, f"/plan/acceptanceAssertions/{i}/target", steps)
                for parts, value in walk_values(check.get("args", {})):
                    if isinstance(value, str):
                        where = f"/plan/acceptanceAssertions/{i}/args{json_pointer(parts)}"
                        _known(value, legal, where, steps)


def _known(
    value: str,
    legal: dict[str, frozenset[str]],
    pointer: str,
    steps: Sequence[Mapping[str, Any]] = (),
) -> None:
    if not ALIAS_SHAPE.match(value):
        return
    kind = ALIAS_KINDS[value[0]]
    allowed = legal.get(kind)
    if allowed is None or value in allowed:
        return
    if plan_local(value, steps) is not None:
        return  # an alias an earlier step of this plan creates: plan.check resolves it
    word = KIND_WORD[kind]
    message = f"{short_value(value)} is not a {word} alias of this revision"
    shown = sorted(allowed)[:12]
    if shown:
        more = len(allowed) - len(shown)
        message += f"; {word} aliases are {', '.join(shown)}"
        message += f" … ({more} more)" if more else ""
    else:
        message += f"; the revision has no {word} aliases"
    raise DecisionRejected(
        STEP_DECISION_ALIAS_UNKNOWN, message, pointer=pointer, subject=_clip(value, 64)
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _clip(message: str, limit: int = 4 * MESSAGE_VALUE_CHARS) -> str:
    message = redact(visible(message))
    return message if len(message) <= limit else message[:limit] + "…"


# -- the per-step schema -------------------------------------------------------------------------


def decision_schema(
    aliases: Mapping[str, Sequence[str]] | Any,
    *,
    budgets: TaskBudgets = DEFAULT_BUDGETS,
    tier: Tier | None = None,
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a decision at this step.

    The legal aliases of each kind given in ``aliases`` (``bodies``, ``nodes``,
    ``parameters``, optionally ``assertions``; or an alias table) become an enum in
    ``$defs/BodyAlias`` etc. when there are at most ``budgets.enum_limit`` of them, and a
    plain prefixed string (checked by the host) beyond that or for a kind not given. In a
    plan's arguments and assertion targets, an alias-shaped name an earlier step of the plan
    may create (``b:<label>``, ``n:<label>``, ``p:<name>``) is allowed by pattern too: no
    enum of this revision can list it, and the host checks it. A batch
    holds at most ``budgets.batch_acts`` acts; with ``tier``, notes carry a length bound.
    Same input, same schema (same bytes under canonical JSON).
    """
    schema = copy.deepcopy(_base_schema())
    defs = schema["$defs"]
    fill_alias_defs(defs, aliases, budgets)
    defs["BatchAct"]["properties"]["acts"]["maxItems"] = budgets.batch_acts
    defs["BatchAct"]["properties"]["acts"]["description"] = (
        f"1 to {budgets.batch_acts} of read, lookup, inspect, repair, pin "
        "(no note inside: put it on the batch)"
    )
    if tier is not None:
        for definition in defs.values():
            note = definition.get("properties", {}).get("note")
            if note is None:
                continue
            bound = tier.bytes(tier.note)  # characters ≤ bytes: a looser bound than the host's
            for branch in note.get("anyOf", [note]):
                if branch.get("type") == "string":
                    branch["maxLength"] = bound
    return schema


@cache
def _base_schema() -> dict[str, Any]:
    generated = DECISION_ADAPTER.json_schema(by_alias=True, ref_template=SCHEMA_REF)
    defs = generated.pop("$defs")
    defs.update(shared_defs())
    drop_titles(defs)
    link_defs(defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Aira step decision",
        "description": GRAMMAR_SUMMARY,
        **generated,
        "$defs": dict(sorted(defs.items())),
    }


__all__ = [
    "ACTS",
    "ACT_MODELS",
    "DECISION_ADAPTER",
    "GRAMMAR_SUMMARY",
    "MAX_DEPTH",
    "MAX_SELECT_PATHS",
    "READ_ONLY_ACTS",
    "STEP_DECISION_ACT_UNKNOWN",
    "STEP_DECISION_ALIAS_UNKNOWN",
    "STEP_DECISION_FIELD_INVALID",
    "STEP_DECISION_NOT_JSON",
    "STEP_DECISION_NOT_OBJECT",
    "TERMINAL_ACTS",
    "WRITE_ACTS",
    "AbstainAct",
    "BatchAct",
    "BatchedInspect",
    "BatchedLookup",
    "BatchedPin",
    "BatchedRead",
    "BatchedRepair",
    "Decision",
    "DecisionRejected",
    "DoneAct",
    "InspectAct",
    "LookupAct",
    "NoteAct",
    "PinAct",
    "PlanAct",
    "ReadAct",
    "RepairAct",
    "RepairTarget",
    "StageAct",
    "decision_schema",
    "decision_to_wire",
    "is_read_only",
    "is_terminal",
    "is_write",
    "parse_decision",
]
