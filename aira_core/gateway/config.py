"""Provider settings: ``AIRA_HOME/providers.toml``.

One table per provider; every key is optional::

    [providers.deepseek]
    kind = "deepseek"                    # the plugin that serves it (default: the table's name)
    base_url = "https://api.deepseek.com"  # default: the plugin's own
    models = ["deepseek-flash", "deepseek-v4-pro"]   # default: the plugin's own (or the route's)
    api_key_env = "DEEPSEEK_API_KEY"     # or api_key = "…" (one of them, or neither)
    transport = "tool"                   # tool, json or strict (default: tool)
    timeouts = { connect = 10, read = 300, write = 30, pool = 5 }   # seconds
    options = { thinking = true }        # the plugin's own settings, checked by the plugin
    [providers.deepseek.prices.deepseek-flash]                      # USD per 1M tokens
    hit = 0.006
    miss = 0.30
    output = 1.20

    [providers.ollama]                   # a second OpenAI-compatible server, by another name
    kind = "openai"
    base_url = "http://127.0.0.1:11434/v1"

A table's ``kind`` names the registered provider that serves it: the plugin's provider is
*configured* with the table (:meth:`aira_core.extensions.ConfigurableProvider.configure`),
so one plugin serves any number of tables.

No file is no providers. A file that is not valid TOML, or not valid settings (an unknown
key, a wrong type), is ``PROVIDER_CONFIG_INVALID``, naming the file
by name and the key path, never a value. Every API key read (from the file or the variable
``api_key_env`` names) is registered with the redactor, so it is scrubbed from every message,
log and store, whatever it looks like.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aira_core.diagnostics import AiraError, json_pointer, register_secret
from aira_core.gateway.chat import Prices
from aira_core.gateway.http import DEFAULT_TIMEOUTS, Timeouts, url_problem

PROVIDER_CONFIG_INVALID = "PROVIDER_CONFIG_INVALID"
PROVIDERS_FILE = "providers.toml"

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
"""A provider id or a transport name: lowercase, as a ledger's ``providerId::modelId`` holds it."""
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MODEL_CHARS = 200
MAX_TIMEOUT = 86_400.0
PROVIDER_KEYS = frozenset(
    {
        "kind",
        "base_url",
        "models",
        "api_key",
        "api_key_env",
        "transport",
        "timeouts",
        "prices",
        "options",
    }
)
PRICE_KEYS = ("hit", "miss", "output")


@dataclass(frozen=True)
class ProviderSettings:
    """One provider's settings. ``kind`` is the registered provider that serves them (the
    table's name when not set); ``base_url`` ``None`` and ``models`` empty mean the
    provider's own defaults; ``api_key`` is the key itself (from the file or from the
    variable ``api_key_env`` names, ``None`` when neither gives one), never shown;
    ``options`` are the plugin's own settings, as the file has them (the plugin checks them:
    ``PROVIDER_CONFIG_INVALID``)."""

    name: str
    base_url: str | None = None
    models: tuple[str, ...] = ()
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    transport: str = "tool"
    timeouts: Timeouts = DEFAULT_TIMEOUTS
    prices: Mapping[str, Prices] = field(default_factory=dict)
    kind: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", self.name)

    @property
    def key_missing(self) -> bool:
        """An ``api_key_env`` was named but the variable gives no key."""
        return self.api_key_env is not None and not self.api_key


def key_from_env(variable: str) -> str | None:
    """The API key the environment variable ``variable`` holds, stripped; ``None`` when it is
    unset or blank. Registered with the redactor before it is returned, so no message, log or
    store can show it (the variable's name may be shown: it is where the user sets the key)."""
    key = os.environ.get(variable, "").strip()
    if key:
        register_secret(key)
    return key or None


class _Invalid(Exception):
    def __init__(self, path: tuple[str, ...], problem: str) -> None:
        super().__init__(problem)
        self.path, self.problem = path, problem


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else repr(p[:40]) for p in path)


def load_settings(home: str | Path) -> dict[str, ProviderSettings]:
    """The providers of ``home``'s ``providers.toml``, by name; ``{}`` when there is none."""
    from aira_core.inputs import read_input

    path = Path(home) / PROVIDERS_FILE
    if not path.exists() and not path.is_symlink():
        return {}
    data = read_input(path, "key", what="provider settings", unreadable=PROVIDER_CONFIG_INVALID)
    document = _parse(data)
    try:
        return _settings(document)
    except _Invalid as exc:
        raise AiraError(
            PROVIDER_CONFIG_INVALID,
            f"{PROVIDERS_FILE} in AIRA_HOME: {_dotted(exc.path)} {exc.problem}",
            pointer=json_pointer(exc.path),
        ) from None


CONFIG_DEPTH = 32
"""The deepest nesting of arrays and tables a settings file may have (a real one has 3)."""


def _parse(data: bytes) -> dict[str, Any]:
    import tomllib

    try:
        document = tomllib.loads(data.decode("utf-8"))
        if _depth(document) <= CONFIG_DEPTH:
            return document
        problem = f"nests arrays or tables deeper than {CONFIG_DEPTH} levels"
    except RecursionError:  # the parser's own recursion, past the interpreter's limit
        problem = f"nests arrays or tables deeper than {CONFIG_DEPTH} levels"
    except UnicodeDecodeError:
        problem = "is not UTF-8 text"
    except tomllib.TOMLDecodeError as exc:
        # Only the position: a parser's message may quote what it could not read.
        where = re.search(r"\(at (?:line \d+, column \d+|end of document)\)", str(exc))
        problem = "is not valid TOML" + (f" {where.group(0)}" if where else "")
    raise AiraError(PROVIDER_CONFIG_INVALID, f"{PROVIDERS_FILE} in AIRA_HOME {problem}")


def _depth(value: Any) -> int:
    """How deep arrays and tables nest in a parsed document (iteratively: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level <= CONFIG_DEPTH:  # deeper is refused anyway: no need to walk it all
                stack.extend(
                    (v, level + 1) for v in (item.values() if isinstance(item, dict) else item)
                )
    return deepest


def _settings(document: Mapping[str, Any]) -> dict[str, ProviderSettings]:
    # Keys first, everywhere: a key must be registered before any message could be made.
    _register_keys(document)
    unknown = sorted(set(document) - {"providers"})
    if unknown:
        raise _Invalid((unknown[0],), "is not a setting (only [providers.<name>] tables)")
    providers = document.get("providers", {})
    if not isinstance(providers, dict):
        raise _Invalid(("providers",), "must be a table of [providers.<name>] tables")
    out: dict[str, ProviderSettings] = {}
    for name, table in providers.items():
        where = ("providers", name)
        if not NAME.match(name):
            raise _Invalid(where, "is not a provider name (lowercase a-z, 0-9, . _ -)")
        if not isinstance(table, dict):
            raise _Invalid(where, "must be a table")
        out[name] = _provider(name, table, where)
    return out


def _register_keys(document: Mapping[str, Any]) -> None:
    providers = document.get("providers")
    if not isinstance(providers, dict):
        return
    for table in providers.values():
        if isinstance(table, dict) and isinstance(table.get("api_key"), str):
            register_secret(table["api_key"])
            register_secret(table["api_key"].strip())


def _provider(name: str, table: dict[str, Any], where: tuple[str, ...]) -> ProviderSettings:
    unknown = sorted(set(table) - PROVIDER_KEYS)
    if unknown:
        raise _Invalid(
            (*where, unknown[0]), f"is not a setting ({', '.join(sorted(PROVIDER_KEYS))})"
        )
    kind = table.get("kind", name)
    if not isinstance(kind, str) or not NAME.match(kind):
        raise _Invalid((*where, "kind"), "must be a provider plugin's name (deepseek, openai …)")
    base_url = table.get("base_url")
    if base_url is not None:
        problem = url_problem(base_url)
        if problem:
            raise _Invalid((*where, "base_url"), problem)
        base_url = base_url.rstrip("/")
    models = table.get("models", [])
    if not isinstance(models, list) or not all(
        isinstance(m, str) and 0 < len(m) <= MODEL_CHARS for m in models
    ):
        raise _Invalid((*where, "models"), "must be a list of model names")
    if len(set(models)) != len(models):
        raise _Invalid((*where, "models"), "names a model twice")
    api_key, api_key_env = table.get("api_key"), table.get("api_key_env")
    if api_key is not None and api_key_env is not None:
        raise _Invalid((*where, "api_key"), "and api_key_env are both set; set one")
    if api_key is not None and (not isinstance(api_key, str) or not api_key.strip()):
        raise _Invalid((*where, "api_key"), "must be a non-empty string")
    if api_key_env is not None:
        if not isinstance(api_key_env, str) or not ENV_NAME.match(api_key_env):
            raise _Invalid((*where, "api_key_env"), "must be an environment variable name")
        api_key = key_from_env(api_key_env)
    transport = table.get("transport", "tool")
    if not isinstance(transport, str) or not NAME.match(transport):
        raise _Invalid((*where, "transport"), "must be a transport name (tool, json …)")
    options = table.get("options", {})
    if not isinstance(options, dict):
        raise _Invalid((*where, "options"), "must be a table (the plugin's own settings)")
    return ProviderSettings(
        name=name,
        kind=kind,
        options=options,
        base_url=base_url,
        models=tuple(models),
        api_key=api_key.strip() if api_key else None,
        api_key_env=api_key_env,
        transport=transport,
        timeouts=_timeouts(table.get("timeouts"), (*where, "timeouts")),
        prices=_prices(table.get("prices"), set(models), (*where, "prices")),
    )


def _number(value: Any, path: tuple[str, ...], *, positive: bool, at_most: float) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0) or value > at_most:
        kind = "a positive number" if positive else "a number ≥ 0"
        raise _Invalid(path, f"must be {kind} (at most {at_most:g})")
    return float(value)


def _timeouts(value: Any, where: tuple[str, ...]) -> Timeouts:
    if value is None:
        return DEFAULT_TIMEOUTS
    if not isinstance(value, dict):
        raise _Invalid(where, "must be a table (connect, read, write, pool)")
    names = ("connect", "read", "write", "pool")
    unknown = sorted(set(value) - set(names))
    if unknown:
        raise _Invalid((*where, unknown[0]), "is not a timeout (connect, read, write, pool)")
    given = {
        n: _number(value[n], (*where, n), positive=True, at_most=MAX_TIMEOUT)
        for n in names
        if n in value
    }
    return Timeouts(**given)


def _prices(value: Any, models: set[str], where: tuple[str, ...]) -> dict[str, Prices]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Invalid(where, "must be a table of [prices.<model>] tables")
    out: dict[str, Prices] = {}
    for model, row in value.items():
        at = (*where, model)
        if models and model not in models:
            raise _Invalid(at, "is not one of the provider's models")
        if not isinstance(row, dict) or set(row) != set(PRICE_KEYS):
            raise _Invalid(at, "must be a table of exactly hit, miss, output (USD per 1M tokens)")
        out[model] = Prices(
            *(_number(row[k], (*at, k), positive=False, at_most=1e6) for k in PRICE_KEYS)
        )
    return out
