"""Plugin loading: entry points in group ``aira``, one plugin at a time, errors recorded.

The rules (DESIGN.md): a broken plugin is recorded with its distribution, version and a
stable error code and shown by ``aira plugins``; everything else keeps working.
``AIRA_STRICT_PLUGINS=1`` makes any load error fatal; ``AIRA_DISABLE_PLUGINS=a,b`` blocks
plugins by name; ``AIRA_PLUGINS=a,b`` loads only those (empty: none). Only pluggy's public
API is used.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from aira_core import hookspecs
from aira_core.diagnostics import AiraError, redact
from aira_core.extensions import EXTENSION_TYPES, ExtensionType

ENTRY_POINT_GROUP = "aira"
IN_PROCESS = "<in-process>"

# Stable codes of plugin load errors (documented in docs/plugins.md).
PLUGIN_IMPORT_FAILED = "PLUGIN_IMPORT_FAILED"
PLUGIN_INVALID_HOOKIMPL = "PLUGIN_INVALID_HOOKIMPL"
PLUGIN_HOOK_FAILED = "PLUGIN_HOOK_FAILED"
PLUGIN_REGISTRATION_INVALID = "PLUGIN_REGISTRATION_INVALID"
PLUGIN_DUPLICATE_NAME = "PLUGIN_DUPLICATE_NAME"
PLUGIN_LOAD_FAILED = "PLUGIN_LOAD_FAILED"


@dataclass(frozen=True)
class PluginInfo:
    """One plugin as ``aira plugins`` shows it."""

    name: str
    distribution: str
    version: str | None
    status: str  # "loaded" | "failed" | "disabled"
    hooks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "status": self.status,
            "hooks": list(self.hooks),
        }


@dataclass(frozen=True)
class PluginError:
    """A plugin that could not be (fully) loaded: who, which distribution, what went wrong."""

    plugin: str
    distribution: str
    version: str | None
    code: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "plugin": self.plugin,
            "distribution": self.distribution,
            "version": self.version,
            "code": self.code,
            "message": self.message,
        }

    def __str__(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"{self.code}: plugin {self.plugin!r} ({self.distribution}{version}): {self.message}"


@dataclass(frozen=True)
class Registered:
    """A registered object and the plugin and distribution it came from."""

    obj: Any
    plugin: str
    distribution: str


@dataclass
class Registry:
    """Everything the loaded plugins registered, by extension type and name."""

    plugins: list[PluginInfo] = field(default_factory=list)
    errors: list[PluginError] = field(default_factory=list)
    by_type: dict[str, dict[str, Registered]] = field(
        default_factory=lambda: {t.key: {} for t in EXTENSION_TYPES}
    )

    def named(self, key: str) -> dict[str, Any]:
        """The registered objects of one extension type (e.g. ``"kernels"``) by name."""
        return {name: r.obj for name, r in self.by_type[key].items()}

    def entries(self, key: str) -> Iterator[Registered]:
        return iter(self.by_type[key].values())


@dataclass(frozen=True)
class _Origin:
    distribution: str
    version: str | None


class PluginSystem:
    """A pluggy manager for group ``aira`` plus the rules above.

    ``load_entrypoints=False`` gives a hermetic system (tests): only plugins registered
    in-process with :meth:`register` take part.
    """

    def __init__(self, *, load_entrypoints: bool = True) -> None:
        self.pm = pluggy.PluginManager("aira")
        self.pm.add_hookspecs(hookspecs)
        self._load_entrypoints = load_entrypoints
        self._entrypoints_loaded = False
        self._origins: dict[str, _Origin] = {}
        self._load_errors: list[PluginError] = []
        self._disabled: list[PluginInfo] = []
        self._clashed: set[str] = set()
        self._registry: Registry | None = None
        self._lock = threading.RLock()

    # -- registration ------------------------------------------------------------------
    def register(
        self,
        plugin: object,
        name: str,
        *,
        distribution: str = IN_PROCESS,
        version: str | None = None,
    ) -> None:
        """Register an in-process plugin (a module or any object with hook functions)."""
        with self._lock:
            error = self._register_checked(plugin, name, _Origin(distribution, version))
            if error is not None:
                raise AiraError(error.code, str(error), subject=name)
            self._registry = None

    def unregister(self, name: str) -> None:
        with self._lock:
            plugin = self.pm.get_plugin(name)
            if plugin is not None:
                self.pm.unregister(plugin, name=name)
            self._origins.pop(name, None)
            self._registry = None

    def _register_checked(self, plugin: object, name: str, origin: _Origin) -> PluginError | None:
        def error(code: str, message: str) -> PluginError:
            return PluginError(name, origin.distribution, origin.version, code, message)

        if self.pm.has_plugin(name) or name in self._clashed:
            other = self._origins.get(name, _Origin(IN_PROCESS, None))
            return error(
                PLUGIN_DUPLICATE_NAME,
                f"plugin name {name!r} is registered by both {other.distribution} and "
                f"{origin.distribution}",
            )
        if self.pm.is_registered(plugin):
            other_name = self.pm.get_name(plugin)
            other = self._origins.get(other_name or "", _Origin(IN_PROCESS, None))
            return error(
                PLUGIN_DUPLICATE_NAME,
                f"the module of plugin {name!r} ({origin.distribution}) is already registered "
                f"as plugin {other_name!r} ({other.distribution}); one module is one plugin",
            )
        try:
            self.pm.register(plugin, name=name)
            # A hookimpl that names no known hook is a typo that would otherwise be ignored.
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            if self.pm.has_plugin(name):
                self.pm.unregister(name=name)
            return error(PLUGIN_INVALID_HOOKIMPL, redact(str(exc)))
        self._origins[name] = origin
        return None

    def load_entrypoints(self) -> None:
        """Discover and import the installed plugins, each inside its own try."""
        with self._lock:
            if self._entrypoints_loaded:
                return
            self._entrypoints_loaded = True
            disabled = disabled_plugin_names()
            allowed = allowed_plugin_names()
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                dist = ep.dist.name if ep.dist is not None else "<unknown>"
                version = ep.dist.version if ep.dist is not None else None
                if ep.name in disabled or (allowed is not None and ep.name not in allowed):
                    self.pm.set_blocked(ep.name)
                    self._disabled.append(PluginInfo(ep.name, dist, version, "disabled"))
                    continue
                try:
                    plugin = ep.load()
                # SystemExit too: a plugin calling sys.exit() at import must not end the host
                except (Exception, SystemExit) as exc:
                    self._load_errors.append(
                        PluginError(
                            ep.name,
                            dist,
                            version,
                            PLUGIN_IMPORT_FAILED,
                            redact(f"importing {ep.value} raised {type(exc).__name__}: {exc}"),
                        )
                    )
                    continue
                error = self._register_checked(plugin, ep.name, _Origin(dist, version))
                if error is not None:
                    if error.code == PLUGIN_DUPLICATE_NAME and self.pm.has_plugin(ep.name):
                        # Two distributions claim one plugin name: neither is used, as for
                        # any other name clash (which would win depends on install order).
                        self.pm.unregister(name=ep.name)
                        self._clashed.add(ep.name)
                    self._load_errors.append(error)
            self._registry = None

    # -- collection --------------------------------------------------------------------
    def registry(self) -> Registry:
        """What every loaded plugin registered, computed once and cached until it changes.

        Raises :class:`AiraError` with code ``PLUGIN_LOAD_FAILED`` when
        ``AIRA_STRICT_PLUGINS=1`` and any plugin failed.
        """
        with self._lock:
            if self._load_entrypoints:
                self.load_entrypoints()
            if self._registry is None:
                self._registry = self._collect()
            registry = self._registry
        if registry.errors and strict_plugins():
            raise AiraError(
                PLUGIN_LOAD_FAILED,
                "AIRA_STRICT_PLUGINS=1 and plugins failed to load: "
                + "; ".join(str(e) for e in registry.errors),
            )
        return registry

    def _collect(self) -> Registry:
        registry = Registry(errors=list(self._load_errors))
        failed: set[str] = {e.plugin for e in self._load_errors}
        hooks_of: dict[str, list[str]] = {}
        for ext in EXTENSION_TYPES:
            for error in self._collect_type(ext, registry, hooks_of):
                registry.errors.append(error)
                failed.add(error.plugin)
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            origin = self._origins.get(name, _Origin(IN_PROCESS, None))
            status = "failed" if name in failed else "loaded"
            registry.plugins.append(
                PluginInfo(
                    name, origin.distribution, origin.version, status, tuple(hooks_of.get(name, ()))
                )
            )
        for error in self._load_errors:
            if error.plugin not in {p.name for p in registry.plugins}:
                registry.plugins.append(
                    PluginInfo(error.plugin, error.distribution, error.version, "failed")
                )
        registry.plugins.extend(self._disabled)
        registry.plugins.sort(key=lambda p: p.name)
        return registry

    def _collect_type(
        self, ext: ExtensionType, registry: Registry, hooks_of: dict[str, list[str]]
    ) -> list[PluginError]:
        errors: list[PluginError] = []
        table = registry.by_type[ext.key]
        # Names registered twice are withdrawn entirely: which one would win depends on
        # install order, and silently picking one is how a shadowing plugin gets in.
        clashes: set[str] = set()
        caller = getattr(self.pm.hook, ext.hook)
        for impl in caller.get_hookimpls():
            plugin_name = impl.plugin_name
            origin = self._origins.get(plugin_name, _Origin(IN_PROCESS, None))
            hooks_of.setdefault(plugin_name, []).append(ext.hook)

            def error(
                code: str, message: str, *, _p: str = plugin_name, _o: _Origin = origin
            ) -> PluginError:
                return PluginError(_p, _o.distribution, _o.version, code, message)

            # What this call registers is kept only if the hook returns normally: a plugin
            # that raises half-way is not half-loaded.
            pending: dict[str, Any] = {}

            def register(
                obj: Any,
                *,
                _ext: ExtensionType = ext,
                _pending: dict[str, Any] = pending,
                _error: Any = error,
            ) -> None:
                name = getattr(obj, "name", None)
                if not isinstance(obj, _ext.protocol) or not isinstance(name, str) or not name:
                    errors.append(
                        _error(
                            PLUGIN_REGISTRATION_INVALID,
                            f"{_ext.hook} registered a {type(obj).__name__}, which is not a "
                            f"{_ext.protocol.__name__} with a non-empty name",
                        )
                    )
                    return
                if name in _pending:
                    clashes.add(name)
                _pending.setdefault(name, obj)

            kwargs = {"register": register}
            try:
                impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
            except (Exception, SystemExit) as exc:  # one plugin's bug must not stop the others
                errors.append(
                    error(
                        PLUGIN_HOOK_FAILED, redact(f"{ext.hook} raised {type(exc).__name__}: {exc}")
                    )
                )
                continue
            for name, obj in pending.items():
                previous = table.get(name)
                if previous is None and name not in clashes:
                    table[name] = Registered(obj, plugin_name, origin.distribution)
                    continue
                first = (
                    f"{previous.distribution} (plugin {previous.plugin!r})"
                    if previous
                    else f"{origin.distribution} (plugin {plugin_name!r})"
                )
                errors.append(
                    error(
                        PLUGIN_DUPLICATE_NAME,
                        f"{ext.description} name {name!r} is registered twice: by {first} and by "
                        f"{origin.distribution} (plugin {plugin_name!r}); neither is used",
                    )
                )
                table.pop(name, None)
                clashes.add(name)
        return errors


def strict_plugins() -> bool:
    return os.environ.get("AIRA_STRICT_PLUGINS", "").strip() in {"1", "true", "yes"}


def allowed_plugin_names() -> set[str] | None:
    """``AIRA_PLUGINS=a,b`` loads only these plugins (set but empty: none); unset, all."""
    raw = os.environ.get("AIRA_PLUGINS")
    if raw is None:
        return None
    return {n.strip() for n in raw.split(",") if n.strip()}


def disabled_plugin_names() -> set[str]:
    raw = os.environ.get("AIRA_DISABLE_PLUGINS", "")
    return {n.strip() for n in raw.split(",") if n.strip()}


_system: PluginSystem | None = None
_system_lock = threading.Lock()
_entrypoints_by_default = True


def get_plugin_system() -> PluginSystem:
    """The process-wide plugin system (installed plugins load on first use)."""
    global _system
    with _system_lock:
        if _system is None:
            _system = PluginSystem(load_entrypoints=_entrypoints_by_default)
        return _system


def get_registry() -> Registry:
    """Shorthand for ``get_plugin_system().registry()``."""
    return get_plugin_system().registry()


def use_hermetic_plugins() -> None:
    """Make the process-wide system ignore installed entry points (called by the pytest
    plugin in :mod:`aira_core.testing`)."""
    global _system, _entrypoints_by_default
    with _system_lock:
        _entrypoints_by_default = False
        _system = PluginSystem(load_entrypoints=False)
