"""The objects a plugin registers through the hooks in :mod:`aira_core.hookspecs`.

Every registered object has a ``name``; two objects of one type with the same name are a
load error naming both distributions. A plugin only ever imports from here: the kernel and
validator protocols the runtime calls, and the provider seam (:class:`StepRequest`,
:class:`StepReply`, :class:`Provider`, :class:`Transport`) the gateway calls.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from aira_core.diagnostics import AiraError, Diagnostic, redact
from aira_core.inputs import read_input

MANIFEST_FILE = "manifest.json"
SIGNATURE_FILE = "manifest.sig"


@runtime_checkable
class TargetImplementation(Protocol):
    """The implementation behind one execution target of a capability descriptor.

    ``ref`` is the exact target it implements, e.g. ``exact.box@1.0.0``; ``diagnostics`` are
    every code it can raise; ``check`` validates a complete input binding and returns the
    diagnostics it would raise for it (empty when the input is acceptable). Conformance
    calls ``check`` with every input example and the defaultBinding of the descriptor.

    Optional: ``fingerprint: str``, a hash of everything ``check``'s answers depend on (the
    implementation's version, the versions of the libraries it runs on, its operation
    table…). When every implementation a package's targets resolve to has one, the catalog
    reuses a passed conformance report of the same manifest while the fingerprints stay the
    same, instead of running the (possibly expensive) checks on every start; without one
    (absent or ``None``) the checks run every time. It is not a member of the protocol, so an
    implementation without it still satisfies it.
    """

    ref: str
    diagnostics: frozenset[str]

    def check(self, inputs: Mapping[str, Any]) -> Sequence[Diagnostic]: ...


@dataclass(frozen=True)
class Implementation:
    """A ready-made :class:`TargetImplementation` from a check function."""

    ref: str
    check_inputs: Callable[[Mapping[str, Any]], Sequence[Diagnostic]]
    diagnostics: frozenset[str] = frozenset()
    fingerprint: str | None = None
    """See :class:`TargetImplementation`: set it to have a passed report reused."""

    def check(self, inputs: Mapping[str, Any]) -> Sequence[Diagnostic]:
        return self.check_inputs(inputs)


@dataclass(frozen=True)
class CapabilityPackageSource:
    """A signed capability package as a plugin ships it: the manifest and signature bytes
    exactly as on disk, plus the implementations behind its execution targets.

    The bytes are untrusted until the catalog has verified, linted and conformance-tested
    them; nothing here is parsed at registration time, so a broken manifest ends in
    quarantine rather than in a failed plugin load.
    """

    name: str
    manifest: bytes
    signature: bytes | None
    implementations: Sequence[TargetImplementation] = ()
    origin: str = ""
    """Where the bytes came from, for messages (a path relative to the plugin, never absolute)."""
    read_error: Diagnostic | None = None
    """Why ``manifest.json`` could not be read (a FIFO, a device, over the size cap):
    the package is quarantined with it, rather than failing the plugin's load."""

    @classmethod
    def from_directory(
        cls,
        path: str | Path,
        implementations: Sequence[TargetImplementation] = (),
        *,
        name: str | None = None,
        origin: str | None = None,
    ) -> CapabilityPackageSource:
        """Read ``manifest.json`` and ``manifest.sig`` (if present) from a package directory.

        ``name`` defaults to the manifest's own name (or the directory name if the manifest
        cannot be read), so that a malformed package still shows up, quarantined, by name.
        """
        path = Path(path)
        manifest_path = path / MANIFEST_FILE
        manifest, read_error = b"", None
        if manifest_path.exists():
            try:  # the one input reader: a regular file within the JSON cap
                manifest = read_input(manifest_path, "json", what="manifest")
            except AiraError as exc:
                read_error = exc.diagnostic
        sig_path = path / SIGNATURE_FILE
        signature = read_signature(sig_path)
        if name is None:
            from aira_core.canonical import loads_strict

            try:  # untrusted bytes: the one strict reader (a StrictJSONError is a ValueError)
                name = str(loads_strict(manifest, MANIFEST_FILE)[0]["name"])
            except (ValueError, KeyError, TypeError):
                name = path.name
        return cls(
            name=name,
            manifest=manifest,
            signature=signature,
            implementations=tuple(implementations),
            origin=origin if origin is not None else path.name,
            read_error=read_error,
        )


def read_signature(path: Path) -> bytes | None:
    """The signature file's bytes; ``None`` when there is none, or none that can be used (not
    a regular file, over the ``key`` cap): the package is then unsigned, which fails closed."""
    if not path.exists():
        return None
    try:
        return read_input(path, "key", what="signature")
    except AiraError:
        return None


@dataclass(frozen=True)
class BodyResult:
    """What a kernel reports of one evaluated body (units: mm, mm², mm³)."""

    valid: bool
    volume: float | None = None
    area: float | None = None
    bounding_box: tuple[float, float, float, float, float, float] | None = None
    """(xmin, ymin, zmin, xmax, ymax, zmax)"""


@dataclass(frozen=True)
class Evaluation:
    """The result of evaluating a document: per-body results, the nodes actually computed
    (not served from cache), and every diagnostic (empty when all went well)."""

    bodies: Mapping[str, BodyResult]
    evaluated_nodes: Sequence[str] = ()
    diagnostics: Sequence[Diagnostic] = ()
    result_hash: str | None = None

    @property
    def ok(self) -> bool:
        return not self.diagnostics


@dataclass(frozen=True)
class QueryResult:
    data: Mapping[str, Any]
    diagnostics: Sequence[Diagnostic] = ()


@dataclass(frozen=True)
class ValidationOutcome:
    """One assertion checked on evaluated geometry: passed, what was measured, and the
    diagnostics that explain a failure."""

    assertion: str
    passed: bool
    measured: Mapping[str, Any] = field(default_factory=dict)
    diagnostics: Sequence[Diagnostic] = ()


@runtime_checkable
class Kernel(Protocol):
    """A geometry kernel.

    ``name`` and ``build_hash`` identify it in runtime snapshots; ``implementations()`` are
    the exact operation versions it implements (conformance resolves targets against them).
    The runtime calls the rest with an AMIR document (``aira_core.contracts.amir``):

    - ``evaluate(document, changed)``: build every body; ``changed`` names every node whose
      result may differ from the previous revision (changed inputs or parameters, and all
      downstream of them; ``None``: unknown, evaluate all), so a kernel with a cache
      re-evaluates exactly these;
    - ``query(document, ref, args)``: a ``queryRef`` capability on the evaluated document;
    - ``validate(document, assertion)``: one assertion (``validatorRef``, target, args);
    - ``export(document, format, body, *, tolerance=None, angular_tolerance=None)``: bytes
      of ``step``, ``stl``, ``3mf``, ``svg`` …; for a mesh format, ``tolerance`` is the
      largest distance (mm) between the mesh and the exact surface and ``angular_tolerance``
      its angular deflection on a curved face (degrees, as every AMIR angle; OpenCASCADE's
      meaning: a full circle gets about 720/angle segments), ``None`` meaning the kernel's
      own default. The host passes them only when a user asks, only for mesh formats and
      only within :data:`EXPORT_TOLERANCE_RANGE` and :data:`EXPORT_ANGULAR_TOLERANCE_RANGE`,
      as keyword arguments: a kernel written against the older ``export(document, format,
      body)`` keeps working without them (a request with tolerances is then refused,
      ``EXPORT_TOLERANCE_UNSUPPORTED``).

    Failures are diagnostics with stable codes in the results, never exceptions.
    """

    name: str
    build_hash: str

    def implementations(self) -> Sequence[TargetImplementation]: ...

    def evaluate(self, document: Any, changed: Collection[str] | None = None) -> Evaluation: ...

    def query(self, document: Any, ref: str, args: Mapping[str, Any]) -> QueryResult: ...

    def validate(self, document: Any, assertion: Any) -> ValidationOutcome: ...

    def export(
        self,
        document: Any,
        format: str,
        body: str | None = None,
        *,
        tolerance: float | None = None,
        angular_tolerance: float | None = None,
    ) -> bytes: ...


EXPORT_TOLERANCE_RANGE = (0.001, 10.0)
"""The linear mesh tolerances (mm) a user may ask a kernel for: 1 µm is below what any printer
or scanner resolves, and a 10 mm chord error is past any use of a mesh."""
EXPORT_ANGULAR_TOLERANCE_RANGE = (3.0, 60.0)
"""The angular mesh tolerances (degrees) a user may ask for: at 3° a circle is some 240
segments and a torus over 100 000 triangles (finer would outlast a kernel call); at 60° a
circle is a dozen segments."""


@dataclass(frozen=True)
class AssertionView:
    """One assertion as a :class:`Validator` gets it: its ``id``, ``validator_ref``,
    ``target`` (the body it judges, an id the view's queries take) and ``args`` as plain
    JSON values (read-only): a literal in base units (mm, degrees), a parameter resolved to
    its value, a selection as its wire object."""

    id: str
    validator_ref: str
    target: str
    args: Mapping[str, Any] = field(default_factory=dict)
    label: str | None = None


@runtime_checkable
class ModelView(Protocol):
    """What a :class:`Validator` sees of the document it judges: a read-only view of it,
    evaluated by the host's kernel. It can read, never write: it has no document to edit,
    no export, no evaluate of another document, and setting an attribute on it raises.

    - ``bodies``: the result of every body (id -> :class:`BodyResult`), evaluated on first
      use;
    - ``query(ref, args)``: a kernel query (``query.*`` refs only, e.g.
      ``query.selectEntities@1.0.0``) on the document, answered as a :class:`QueryResult`
      whose data is the validator's own copy. A kernel that fails the query ends the
      validation with the kernel's code.

    A view is valid only during the one ``validate`` call it was given to.
    """

    @property
    def bodies(self) -> Mapping[str, BodyResult]: ...

    def query(self, ref: str, args: Mapping[str, Any]) -> QueryResult: ...


@runtime_checkable
class Validator(TargetImplementation, Protocol):
    """A validator implementation for a ``validatorRef`` contract that is not a kernel,
    registered by name through ``aira_register_validators``.

    ``ref`` is the exact ``validatorRef`` it implements (``vendor.holeEdge@1.0.0``);
    ``diagnostics`` every code it can fail an assertion with (the descriptor declares them
    all; conformance checks it); ``check(inputs)`` checks an assertion's args (conformance
    runs it on the descriptor's examples). The host calls ``validate(view, assertion)``
    for every assertion with its ref, on a read-only :class:`ModelView` of the document and
    the assertion as an :class:`AssertionView` (id, target body, plain args). It
    answers a :class:`ValidationOutcome` of that assertion: passed, measured values (JSON)
    and, on a failure, diagnostics with its own declared codes. One that raises, runs past
    the deadline, answers anything else or uses a code it does not declare fails the
    assertion with ``VALIDATOR_FAILED`` / ``VALIDATOR_TIMEOUT`` (one that tries to write to
    the view, ``VALIDATOR_VIEW_READONLY``); the write is refused and the store unchanged.

    A ref that the kernel itself implements is run by the kernel, as conformance resolves
    it (kernels before validators).
    """

    name: str

    def validate(self, view: ModelView, assertion: AssertionView) -> ValidationOutcome: ...


# -- the provider seam -------------------------------------------------------------------------
#
# One step of the bounded-step host is one call through this seam: the host hands a decision
# source a StepRequest (the capsule, the round's log as typed entries, the step's decision
# schema, the tier and the budgets left) and gets a StepReply back. A script, the gateway and
# a test double all implement DecisionSource; the gateway drives a Provider (the wire to one
# model service) through a Transport (how the decision rides that wire) and records every
# billable submission in its ledger before a byte leaves the machine (docs/gateway.md).


class Acceptance(StrEnum):
    """Whether the provider accepted a submission (spec 002 §3, §4): the only fact that may
    allow an automatic failover (``not_accepted``). When in doubt it is ``unknown``."""

    NONE = "none"
    NOT_ACCEPTED = "not_accepted"
    ACCEPTED = "accepted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Usage:
    """What one provider call used, as the provider reports it (0 when it does not say).
    ``input_tokens`` = ``cache_hit_tokens`` + ``cache_miss_tokens`` when the provider reports
    its cache; ``reasoning_tokens`` are part of ``output_tokens``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    pricing: str = ""
    """Which prices made ``cost_usd`` (a provider's price row and period, e.g.
    ``"deepseek-flash off-peak (2026-08-16)"``); empty when none applied."""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {wire: getattr(self, name) for name, wire in _USAGE_WIRE}
        if self.pricing:
            wire["pricing"] = self.pricing
        return wire

    def summary(self) -> dict[str, Any]:
        """The wire form and ``cacheHitShare``: the share of the input the provider reported
        its cache for that hit it (None when it reported none), as run reports show it."""
        cached = self.cache_hit_tokens + self.cache_miss_tokens
        share = round(self.cache_hit_tokens / cached, 4) if cached else None
        return {**self.to_wire(), "cacheHitShare": share}

    @classmethod
    def from_wire(cls, value: Mapping[str, Any]) -> Usage:
        """The usage in a trajectory or ledger record (unknown keys ignored; the older
        ``usd`` key read as ``costUsd``)."""
        fields: dict[str, Any] = {}
        for name, wire in _USAGE_WIRE:
            raw = value.get(wire, value.get("usd") if wire == "costUsd" else None)
            if isinstance(raw, bool) or not isinstance(raw, int | float):
                continue
            fields[name] = float(raw) if name == "cost_usd" else int(raw)
        pricing = value.get("pricing")
        if isinstance(pricing, str):
            fields["pricing"] = pricing[:200]
        return cls(**fields)

    def __add__(self, other: Usage) -> Usage:
        # a sum of calls has no one price row
        return Usage(*(getattr(self, n) + getattr(other, n) for n, _ in _USAGE_WIRE))


_USAGE_WIRE = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_hit_tokens", "cacheHitTokens"),
    ("cache_miss_tokens", "cacheMissTokens"),
    ("reasoning_tokens", "reasoningTokens"),
    ("cost_usd", "costUsd"),
)


@dataclass(frozen=True)
class DecisionEntry:
    """A decision in the round log: the text the model answered, its reasoning (sent back
    within the round, spec 003 §6.6) and the call id its result answers."""

    call_id: str
    text: str
    reasoning: str = ""
    kind: ClassVar[str] = "decision"


@dataclass(frozen=True)
class ResultEntry:
    """The host's result for the decision with the same ``call_id``."""

    call_id: str
    text: str
    kind: ClassVar[str] = "result"


RoundEntry = DecisionEntry | ResultEntry


@dataclass(frozen=True)
class BudgetsLeft:
    """What the task may still spend when the step starts."""

    steps: int
    input_tokens: int
    output_tokens: int
    usd: float


@dataclass(frozen=True)
class StepRequest:
    """One step as a decision source sees it. ``capsule`` and ``log`` together are the prompt
    (|capsule| + |log| <= B by construction); ``schema`` is this step's decision schema;
    ``call_id`` is the host's id for the call (a tool-calling provider may answer with its
    own, which the reply then carries)."""

    task_id: str
    step: int
    call_id: str
    tier: str
    capsule: str
    log: tuple[RoundEntry, ...]
    schema: Mapping[str, Any]
    budgets: BudgetsLeft


@dataclass(frozen=True)
class StepReply:
    """A decision source's answer: the decision text, the call id, the model's reasoning,
    typed usage, why it stopped (``stop``, ``tool_calls``, ``length``, ``content_filter``,
    ``other``), the repairs the channel made to get a decision out of the reply (e.g.
    ``text-as-done``) and the provider and model that answered."""

    text: str
    call_id: str
    provider: str
    model: str
    reasoning: str = ""
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "stop"
    repairs: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "callId": self.call_id,
            "provider": self.provider,
            "model": self.model,
            "reasoning": self.reasoning,
            "usage": self.usage.to_wire(),
            "stopReason": self.stop_reason,
            "repairs": list(self.repairs),
        }

    @classmethod
    def from_wire(cls, value: Mapping[str, Any]) -> StepReply:
        return cls(
            text=str(value.get("text", "")),
            call_id=str(value.get("callId", "")),
            provider=str(value.get("provider", "")),
            model=str(value.get("model", "")),
            reasoning=str(value.get("reasoning", "")),
            usage=Usage.from_wire(value.get("usage") or {}),
            stop_reason=str(value.get("stopReason", "stop")),
            repairs=tuple(str(r) for r in value.get("repairs") or ()),
        )


@runtime_checkable
class DecisionSource(Protocol):
    """Where decisions come from: a script, or a model through the gateway. The loop only
    calls :meth:`decide`; an exception from it interrupts the run (which can be resumed)."""

    name: str

    def decide(self, request: StepRequest) -> StepReply: ...


@dataclass(frozen=True)
class AcceptanceTable:
    """A provider's documented classification: the HTTP statuses its own documentation says
    are refusals before any processing (``not_accepted``), each with what it means and where
    that is written. Everything else follows the gateway's defaults (docs/gateway.md): a 2xx
    with a body is ``accepted``; any other status, ``unknown``."""

    provider: str
    refusals: Mapping[int, str] = field(default_factory=dict)
    source: str = ""


@dataclass(frozen=True)
class PreparedCall:
    """A request ready to send. ``headers`` may hold credentials: never persisted, logged or
    shown. ``content`` is ``body`` encoded as it will be sent, when the provider encoded it
    already (encoded once: the gateway's digest and the send use these bytes); the gateway
    keeps only a digest of the request, never the request."""

    url: str
    body: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotency_key: str | None = None
    content: bytes | None = None


@dataclass(frozen=True)
class ProviderResponse:
    """An HTTP answer: its status and decoded JSON body."""

    status: int
    body: Mapping[str, Any]


class ProviderError(AiraError):
    """A provider call that did not give a decision, as structured, redacted facts: the
    ``stage`` it failed in (``prepare``, ``submit``, ``poll``, ``fetch``, ``parse``,
    ``cancel``), a ``category`` (``validation``, ``connect``, ``timeout``, ``deadline``,
    ``protocol``, ``http``, ``body``…), the HTTP status and the provider's own error code when
    there was one, the ``acceptance`` it proves, and whether the failure is of a kind that may
    pass (``retryable``) — which never by itself allows a resubmission."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        stage: str,
        category: str,
        acceptance: Acceptance | str,
        http_status: int | None = None,
        provider_code: str | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(code, message)
        self.stage = stage
        self.category = category
        self.acceptance = Acceptance(acceptance)
        self.http_status = http_status
        self.provider_code = redact(provider_code)[:200] if provider_code else None
        self.retryable = retryable

    def to_wire(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.diagnostic.message,  # redacted when the Diagnostic was made
            "stage": self.stage,
            "category": self.category,
            "acceptance": self.acceptance.value,
            "httpStatus": self.http_status,
            "providerCode": self.provider_code,
            "retryable": self.retryable,
        }


@runtime_checkable
class Transport(Protocol):
    """A decision transport: how the step's decision schema rides a chat request and how the
    decision comes back (``tool``: one ``aira_step`` tool call; ``json``: JSON text).

    ``render`` gives the request-body fields it adds (``tools``/``tool_choice``, or
    ``response_format``); ``parse`` takes the reply's assistant message and returns the
    decision text, the call id (the tool call's, else ``request.call_id``) and the repairs it
    made. Both are local: no I/O."""

    name: str

    def render(self, request: StepRequest) -> dict[str, Any]: ...

    def parse(
        self, message: Mapping[str, Any], request: StepRequest
    ) -> tuple[str, str, tuple[str, ...]]: ...


@runtime_checkable
class Provider(Protocol):
    """A model provider adapter; ``name`` is its providerId, ``models`` the models it serves.

    The gateway calls it in phases so that it can persist each fact before the next byte
    moves: ``prepare`` (local; a failure there is always ``not_accepted``), then ``send``
    (synchronous) or ``submit`` → ``poll`` → ``fetch`` (``jobs``; ``cancel`` asks the provider
    to stop a job and says whether it confirmed), then ``reply`` (local: the decision out of
    the response). Failures are :class:`ProviderError`; anything else raised is treated as
    ``unknown``. ``deadline`` is an absolute :func:`time.monotonic` by which the call must end.
    ``acceptance`` is the provider's documented classification table; ``idempotency`` says
    whether it honours :attr:`PreparedCall.idempotency_key`.

    Optional: ``preflight(model)``, local, raises what ``prepare`` would refuse whatever the
    request (a key it needs and has not: ``PROVIDER_KEY_MISSING`` naming the variable).
    ``aira run`` asks it of every route before it creates a run directory or a ledger task."""

    name: str
    models: Sequence[str]
    acceptance: AcceptanceTable
    idempotency: bool
    jobs: bool

    def prepare(
        self,
        request: StepRequest,
        model: str,
        transport: Transport,
        *,
        idempotency_key: str | None = None,
    ) -> PreparedCall: ...

    def send(self, call: PreparedCall, *, deadline: float) -> ProviderResponse: ...

    def reply(
        self, response: ProviderResponse, request: StepRequest, model: str, transport: Transport
    ) -> StepReply: ...

    def submit(self, call: PreparedCall, *, deadline: float) -> str: ...

    def poll(self, remote_id: str, *, deadline: float) -> str: ...

    def fetch(self, remote_id: str, *, deadline: float) -> ProviderResponse: ...

    def cancel(self, remote_id: str, *, deadline: float) -> bool: ...


@runtime_checkable
class ConfigurableProvider(Protocol):
    """A provider that can be configured: ``configure(settings)`` returns a provider (a new
    object; this one is unchanged) under ``settings``, an
    :class:`aira_core.gateway.config.ProviderSettings`: a ``providers.toml`` table of this
    provider's kind, or the flags of ``aira run``. Named ``settings.name``; a setting not
    given keeps this provider's default. Bad settings: ``PROVIDER_CONFIG_INVALID``. Local
    and cheap (no I/O): a plugin registers its provider with its defaults, and the settings
    are applied when a run chooses it."""

    def configure(self, settings: Any) -> Provider: ...


IntegrationRole = Literal["intent", "continuity", "guard"]
INTEGRATION_ROLES: tuple[IntegrationRole, ...] = ("intent", "continuity", "guard")


@runtime_checkable
class Integration(Protocol):
    """An Intent Loop / Continuity / Guard adapter; ``role`` says which of the three. What
    each role implements is in :mod:`aira_core.integrations`."""

    name: str
    role: IntegrationRole


@dataclass(frozen=True)
class ExtensionType:
    """One kind of registrable object: the hook that registers it and the type it must have."""

    key: str
    hook: str
    protocol: type
    description: str = field(default="")


EXTENSION_TYPES: tuple[ExtensionType, ...] = (
    ExtensionType(
        "capability_packages",
        "aira_register_capability_packages",
        CapabilityPackageSource,
        "signed capability packages",
    ),
    ExtensionType("kernels", "aira_register_kernels", Kernel, "geometry kernels"),
    ExtensionType("validators", "aira_register_validators", Validator, "validator implementations"),
    ExtensionType("providers", "aira_register_providers", Provider, "model provider adapters"),
    ExtensionType("transports", "aira_register_transports", Transport, "decision transports"),
    ExtensionType(
        "integrations",
        "aira_register_integrations",
        Integration,
        "Intent Loop / Continuity / Guard adapters",
    ),
)
