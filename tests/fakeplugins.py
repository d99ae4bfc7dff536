"""FAKE plugin objects for tests: kernels, validators, providers, transports and
integrations that do nothing but carry a name (and, for kernels, implementations)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aira_core.extensions import (
    Acceptance,
    AcceptanceTable,
    Evaluation,
    Implementation,
    ProviderError,
    QueryResult,
    TargetImplementation,
    ValidationOutcome,
)


@dataclass
class FakeKernel:
    """FAKE kernel: registers by name and lists implementations; builds no geometry."""

    name: str
    build_hash: str = "build:test"
    impls: Sequence[TargetImplementation] = field(default_factory=tuple)

    def implementations(self) -> Sequence[TargetImplementation]:
        return self.impls

    def evaluate(self, document, changed=None):  # type: ignore[no-untyped-def]
        return Evaluation(bodies={})

    def query(self, document, ref, args):  # type: ignore[no-untyped-def]
        return QueryResult(data={})

    def validate(self, document, assertion):  # type: ignore[no-untyped-def]
        return ValidationOutcome(assertion=assertion.id, passed=True)

    def export(self, document, format, body=None):  # type: ignore[no-untyped-def]
        return b""


@dataclass
class FakeValidator:
    name: str
    ref: str = "test.validate@1.0.0"
    diagnostics: frozenset[str] = frozenset()

    def check(self, inputs):  # type: ignore[no-untyped-def]
        return []

    def validate(self, view, assertion):  # type: ignore[no-untyped-def]
        from aira_core.extensions import ValidationOutcome

        return ValidationOutcome(assertion.id, True)


@dataclass
class FakeProvider:
    """A FAKE provider: the whole protocol, and every call refused before sending."""

    name: str
    models: Sequence[str] = ("fake-model",)
    idempotency: bool = False
    jobs: bool = False

    @property
    def acceptance(self) -> AcceptanceTable:
        return AcceptanceTable(provider=self.name)

    def _refused(self, *_a: Any, **_k: Any) -> Any:
        raise ProviderError(
            "PROVIDER_UNSUPPORTED",
            "a fake provider sends nothing",
            stage="prepare",
            category="unsupported",
            acceptance=Acceptance.NOT_ACCEPTED,
        )

    prepare = send = reply = submit = poll = fetch = cancel = _refused


@dataclass
class FakeTransport:
    """A FAKE transport: adds nothing to a request, reads the message's content."""

    name: str

    def render(self, request: Any) -> dict[str, Any]:
        return {}

    def parse(self, message: Any, request: Any) -> tuple[str, str, tuple[str, ...]]:
        return str(message.get("content") or ""), request.call_id, ()


@dataclass
class FakeIntegration:
    name: str
    role: str = "continuity"


def accept(inputs):  # type: ignore[no-untyped-def]
    return []


def impl(ref: str) -> Implementation:
    return Implementation(ref=ref, check_inputs=accept)


def install_fake_distribution(
    site: Path, dist: str, version: str, plugin: str, module_source: str
) -> None:
    """Write a FAKE installed distribution (dist-info with an ``aira`` entry point, plus its
    module) into ``site``; put ``site`` on sys.path (or PYTHONPATH) to make it visible."""
    module = f"{dist.replace('-', '_')}_plugin"
    (site / f"{module}.py").write_text(textwrap.dedent(module_source))
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[aira]\n{plugin} = {module}\n")


def drop_module(dist: str) -> None:
    sys.modules.pop(f"{dist.replace('-', '_')}_plugin", None)
