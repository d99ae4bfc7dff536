"""The gateway as the decision source of a run: from what a user names (a provider, a model,
fallbacks, a base URL, a transport) and ``providers.toml`` to routes, a ledger task and the
trajectory header that lets ``aira run --resume`` find them again.

``aira run "INTENT" --provider P --model M`` is this plus the step host; so is a test or a
program that drives a real model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aira_core.diagnostics import AiraError, redact
from aira_core.gateway.config import PROVIDER_CONFIG_INVALID, ProviderSettings, load_settings
from aira_core.gateway.gateway import Gateway, preflight, resolve_routes, resolve_transport
from aira_core.gateway.http import url_problem
from aira_core.gateway.ledger import AttemptLedger, default_ledger_path

RUN_SOURCE_INVALID = "RUN_SOURCE_INVALID"
DEFAULT_TRANSPORT = "tool"


@dataclass(frozen=True)
class SourceSpec:
    """What a run's decisions come from, as a user names it: kept in the trajectory's
    header (``source``) so that a resume drives the same routes. No key is in it: keys come
    from the environment variables ``providers.toml`` names, on every run."""

    provider: str
    model: str
    fallbacks: tuple[str, ...] = ()
    base_url: str | None = None
    transport: str | None = None

    @property
    def refs(self) -> list[str]:
        return [f"{self.provider}::{self.model}", *self.fallbacks]

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"provider": self.provider, "model": self.model}
        if self.fallbacks:
            wire["fallbacks"] = list(self.fallbacks)
        if self.base_url:
            wire["baseUrl"] = self.base_url
        if self.transport:
            wire["transport"] = self.transport
        return wire

    @classmethod
    def from_wire(cls, value: Any) -> SourceSpec:
        """The spec a trajectory header holds; ``RUN_SOURCE_INVALID`` for anything else."""
        ok = isinstance(value, Mapping) and all(
            isinstance(value.get(k), str) and value.get(k) for k in ("provider", "model")
        )
        fallbacks = value.get("fallbacks", []) if ok else None
        ok = ok and isinstance(fallbacks, list) and all(isinstance(f, str) for f in fallbacks)
        ok = ok and all(
            value.get(k) is None or isinstance(value.get(k), str) for k in ("baseUrl", "transport")
        )
        if not ok:
            raise AiraError(RUN_SOURCE_INVALID, "the trajectory's header names no usable source")
        return cls(
            provider=value["provider"],
            model=value["model"],
            fallbacks=tuple(fallbacks),
            base_url=value.get("baseUrl"),
            transport=value.get("transport"),
        )


def settings_for(spec: SourceSpec, home: Path) -> dict[str, ProviderSettings]:
    """``providers.toml``'s tables with the spec's base URL put over the provider's own; a
    base URL other than the table's drops the table's key (it was named for that server)."""
    settings = dict(load_settings(home))
    if spec.base_url is not None:
        problem = url_problem(spec.base_url)
        if problem:
            raise AiraError(PROVIDER_CONFIG_INVALID, f"--base-url {problem}")
        table = settings.get(spec.provider) or ProviderSettings(name=spec.provider)
        moved = spec.base_url.rstrip("/")
        if moved != table.base_url:
            # The table's key was given for its own server: never sent to another one.
            table = dataclasses.replace(table, api_key=None, api_key_env=None)
        settings[spec.provider] = dataclasses.replace(table, base_url=moved)
    return settings


def default_model(provider: str, home: Path, registry: Any = None) -> str:
    """The model a run uses when none is named: the first of the provider's table, else of
    the registered provider; ``RUN_SOURCE_INVALID`` when neither lists one."""
    table = load_settings(home).get(provider)
    if table is not None and table.models:
        return table.models[0]
    if registry is None:
        from aira_core.plugins import get_registry

        registry = get_registry()
    kind = table.kind if table is not None else provider
    registered = registry.named("providers").get(kind)
    models = tuple(getattr(registered, "models", ()) or ())
    if not models:
        raise AiraError(
            RUN_SOURCE_INVALID,
            f"name the model: --model M (provider {redact(provider)[:60]!r} lists none)",
        )
    return models[0]


def open_source(
    spec: SourceSpec,
    *,
    home: Path,
    intent: Any,
    task: str | None = None,
    registry: Any = None,
    ledger_path: Path | None = None,
    deadline_s: float | None = None,
) -> tuple[Gateway, dict[str, Any]]:
    """The gateway for ``spec``, on the ledger in ``home`` (or ``ledger_path``), and the
    header fields of its trajectory. A new ledger task for ``intent`` unless ``task`` names
    one to continue (a resume; an informed retry of it is followed). Everything a user
    named is checked (routes, transport, settings) before the ledger is opened or a task
    made: a refused run leaves no task behind. Each route's provider is asked what it would
    refuse whatever the request (a missing key, naming the variable to set)."""
    settings = settings_for(spec, home)
    routes = resolve_routes(spec.refs, registry, settings)
    preflight(routes)
    table = settings.get(spec.provider)
    name = spec.transport or (table.transport if table is not None else DEFAULT_TRANSPORT)
    transport = resolve_transport(name, registry)
    ledger = AttemptLedger.open(ledger_path or default_ledger_path())
    if task is None:
        task = ledger.create_task(intent).id
    else:
        ledger.task(task)  # LEDGER_TASK_UNKNOWN before anything runs
    kw = {} if deadline_s is None else {"deadline_s": deadline_s}
    gateway = Gateway(routes, ledger, task, transport, **kw)
    header = {"source": spec.to_wire(), "gatewayTask": task}
    return gateway, header
