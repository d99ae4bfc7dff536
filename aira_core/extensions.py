"""The objects a plugin registers through the hooks in :mod:`aira_core.hookspecs`.

Every registered object has a ``name``; two objects of one type with the same name are a
load error naming both distributions. These types are deliberately small: the runtime,
gateway and step host grow the protocols they call when they are built, and a plugin only
ever imports from here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from aira_core.diagnostics import AiraError, Diagnostic
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
    - ``export(document, format, body)``: bytes of ``step``, ``stl``, ``3mf``, ``svg`` …

    Failures are diagnostics with stable codes in the results, never exceptions.
    """

    name: str
    build_hash: str

    def implementations(self) -> Sequence[TargetImplementation]: ...

    def evaluate(self, document: Any, changed: Collection[str] | None = None) -> Evaluation: ...

    def query(self, document: Any, ref: str, args: Mapping[str, Any]) -> QueryResult: ...

    def validate(self, document: Any, assertion: Any) -> ValidationOutcome: ...

    def export(self, document: Any, format: str, body: str | None = None) -> bytes: ...


@runtime_checkable
class Validator(TargetImplementation, Protocol):
    """A validator implementation for a ``validatorRef`` contract, registered by name."""

    name: str


@runtime_checkable
class Provider(Protocol):
    """A model provider adapter: ``name`` is its providerId, ``models`` the models it serves."""

    name: str
    models: Sequence[str]


@runtime_checkable
class Transport(Protocol):
    """A decision transport (``tool``, ``json``, strict structured output)."""

    name: str


@runtime_checkable
class Integration(Protocol):
    """An Intent Loop / Continuity / Guard adapter; ``role`` says which of the three."""

    name: str
    role: str


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
