"""Plugin loading: entry points in group ``aira``, one plugin at a time, errors recorded.

The rules (DESIGN.md): a broken plugin is recorded with its distribution, version and a
stable error code and shown by ``aira plugins``; everything else keeps working.
``AIRA_STRICT_PLUGINS=1`` makes any load error fatal; ``AIRA_DISABLE_PLUGINS=a,b`` blocks
plugins by name; ``AIRA_PLUGINS=a,b`` loads only those (empty: none). Only pluggy's public
API is used.

Plugin code is untrusted to behave: whatever an import or a hook raises (``BaseException``
included: a plugin raising ``KeyboardInterrupt`` or ``SystemExit`` is not the user) is a
recorded error; each import and each hook call runs in a daemon thread with a deadline
(``AIRA_PLUGIN_TIMEOUT``), so a plugin that blocks is ``PLUGIN_TIMEOUT`` and ignored, while
a real Ctrl-C still interrupts the wait; and what plugin code prints while it is loaded goes
to stderr, never into a command's (``--json``) output. Two distributions declaring one entry
point name: neither is loaded, unless one of them is the first-party distribution of that
name (:data:`FIRST_PARTY`), which is kept; the error names both. (The CLI's exit does not
wait for threads a plugin left running, nor run its ``atexit`` handlers: aira_core.cli.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
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
PLUGIN_TIMEOUT = "PLUGIN_TIMEOUT"

TIMEOUT_ENV = "AIRA_PLUGIN_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
"""Seconds one plugin import or one hook call may take (an entry-point module must be cheap
to import: docs/plugins.md)."""

FIRST_PARTY = {
    "occt": "aira-kernel-occt",
    "deepseek": "aira-provider-deepseek",
    "openai": "aira-provider-openai",
    "continuity": "aira-continuity",
}
"""Entry point name -> the distribution shipped with Aira that declares it: a clash with any
other distribution keeps this one (an empty package declaring ``occt`` must not withdraw
the real kernel)."""


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

    def __post_init__(self) -> None:
        # plugin text (an exception's message, a name) may hold a credential or a private
        # path: redacted here, once, for every error (as a Diagnostic is when it is made)
        object.__setattr__(self, "message", redact(self.message))

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


class _TimedOut(Exception):
    """Plugin code still running at its deadline (its thread is left to itself)."""


class _PluginRaised(Exception):
    """What plugin code raised, carried out of its thread: never confused with a
    ``KeyboardInterrupt`` from the user's Ctrl-C while the host waits."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(type(raised).__name__)
        self.raised = raised


def plugin_timeout() -> float:
    """``AIRA_PLUGIN_TIMEOUT`` when it is a positive number, else :data:`DEFAULT_TIMEOUT`."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if 0 < value < float("inf") else DEFAULT_TIMEOUT


def _run_plugin_code(
    function: Callable[[], Any], what: str, *, seconds: float | None = None
) -> Any:
    """``function()`` in a daemon thread, waited for up to ``seconds`` (default
    :func:`plugin_timeout`): its value, :class:`_PluginRaised` (whatever it raised) or
    :class:`_TimedOut`. The wait is in the calling thread, so a real Ctrl-C interrupts it as
    a ``KeyboardInterrupt``."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # a plugin's KeyboardInterrupt is the plugin's, not the user's
            outcome["error"] = exc

    thread = threading.Thread(target=run, name=f"aira-plugin {what}", daemon=True)
    thread.start()
    thread.join(plugin_timeout() if seconds is None else seconds)
    if thread.is_alive():
        raise _TimedOut(what)
    if "error" in outcome:
        raise _PluginRaised(outcome["error"])
    return outcome.get("value")


def _describe(exc: BaseException) -> str:
    """``Type: message`` of what plugin code raised, even when its ``__str__`` raises too."""
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:  # a hostile __str__: the type still says enough
        return type(exc).__name__


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While plugin code loads, stdout (``sys.stdout`` and file descriptor 1) is stderr:
    what a plugin prints must not end up in a command's output (``--json``)."""
    saved = sys.stdout
    for stream in (saved, sys.__stdout__):
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[union-attr]
    try:
        saved_fd: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no fd 1 or 2 (an embedding host): sys.stdout still is redirected
        saved_fd = None
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.__stdout__):
            with contextlib.suppress(Exception):
                stream.flush()  # type: ignore[union-attr]
        sys.stdout = saved
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def _normalized(distribution: str) -> str:
    return distribution.lower().replace("_", "-").replace(".", "-")


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
            return error(PLUGIN_INVALID_HOOKIMPL, str(exc))
        self._origins[name] = origin
        return None

    def load_entrypoints(self) -> None:
        """Discover and import the installed plugins, each inside its own guard (see the
        module docstring)."""
        with self._lock:
            if self._entrypoints_loaded:
                return
            self._entrypoints_loaded = True
            disabled = disabled_plugin_names()
            allowed = allowed_plugin_names()
            claims: dict[str, list[tuple[metadata.EntryPoint, _Origin]]] = {}
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                dist = ep.dist.name if ep.dist is not None else "<unknown>"
                version = ep.dist.version if ep.dist is not None else None
                if ep.name in disabled or (allowed is not None and ep.name not in allowed):
                    self.pm.set_blocked(ep.name)
                    self._disabled.append(PluginInfo(ep.name, dist, version, "disabled"))
                    continue
                claims.setdefault(ep.name, []).append((ep, _Origin(dist, version)))
            with _stdout_to_stderr():
                for name, claimants in claims.items():
                    chosen = self._one_claimant(name, claimants)
                    if chosen is not None:
                        self._load_one(*chosen)
            self._registry = None

    def _one_claimant(
        self, name: str, claimants: list[tuple[metadata.EntryPoint, _Origin]]
    ) -> tuple[metadata.EntryPoint, _Origin] | None:
        """The entry point to load for ``name``: the only one; when several distributions
        declare it, the first-party one (the others are reported), else none (all are
        reported: which would win depends on install order). Nothing refused is imported."""
        if len(claimants) == 1:
            return claimants[0]
        first_party = FIRST_PARTY.get(name)
        kept = next(
            (c for c in claimants if first_party and _normalized(c[1].distribution) == first_party),
            None,
        )
        named = " and ".join(
            f"{o.distribution}{f' {o.version}' if o.version else ''}" for _, o in claimants
        )
        if kept is not None:
            for _, origin in claimants:
                if origin is not kept[1]:
                    self._load_errors.append(
                        PluginError(
                            name,
                            origin.distribution,
                            origin.version,
                            PLUGIN_DUPLICATE_NAME,
                            f"plugin name {name!r} is declared by both {named}; the first-party "
                            f"{kept[1].distribution} is kept and {origin.distribution} is not "
                            "loaded",
                        )
                    )
            return kept
        self._clashed.add(name)
        _, first = claimants[0]
        self._load_errors.append(
            PluginError(
                name,
                first.distribution,
                first.version,
                PLUGIN_DUPLICATE_NAME,
                f"plugin name {name!r} is declared by both {named}; neither is loaded (which "
                "would win depends on install order)",
            )
        )
        return None

    def _load_one(self, ep: metadata.EntryPoint, origin: _Origin) -> None:
        def failed(code: str, message: str) -> None:
            self._load_errors.append(
                PluginError(ep.name, origin.distribution, origin.version, code, message)
            )

        try:
            plugin = _run_plugin_code(ep.load, f"import {ep.name}")
        except _TimedOut:
            failed(
                PLUGIN_TIMEOUT,
                f"importing {ep.value} did not finish within {plugin_timeout():g} s "
                f"({TIMEOUT_ENV}); the plugin is ignored",
            )
            return
        except _PluginRaised as exc:  # sys.exit() or KeyboardInterrupt too: not the host's end
            failed(PLUGIN_IMPORT_FAILED, f"importing {ep.value} raised {_describe(exc.raised)}")
            return
        error = self._register_checked(plugin, ep.name, origin)
        if error is not None:
            self._load_errors.append(error)

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
        # by plugin and distribution: a refused claimant of a name does not fail the kept one
        failed = {(e.plugin, e.distribution) for e in self._load_errors}
        hooks_of: dict[str, list[str]] = {}
        with _stdout_to_stderr():
            for ext in EXTENSION_TYPES:
                for error in self._collect_type(ext, registry, hooks_of):
                    registry.errors.append(error)
                    failed.add((error.plugin, error.distribution))
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:  # blocked
                continue
            origin = self._origins.get(name, _Origin(IN_PROCESS, None))
            status = "failed" if (name, origin.distribution) in failed else "loaded"
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
        closed: set[int] = set()
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
                if id(_pending) in closed:  # a hook past its deadline, still registering
                    return
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
            call = {arg: kwargs[arg] for arg in impl.argnames}
            try:
                _run_plugin_code(
                    lambda _f=impl.function, _k=call: _f(**_k), f"{ext.hook} {plugin_name}"
                )
            except _TimedOut:
                closed.add(id(pending))  # what it registers from now on is dropped
                errors.append(
                    error(
                        PLUGIN_TIMEOUT,
                        f"{ext.hook} did not return within {plugin_timeout():g} s "
                        f"({TIMEOUT_ENV}); what it registered is ignored",
                    )
                )
                continue
            except _PluginRaised as exc:  # one plugin's bug must not stop the others
                errors.append(
                    error(PLUGIN_HOOK_FAILED, f"{ext.hook} raised {_describe(exc.raised)}")
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
