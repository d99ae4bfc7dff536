"""Every extension point of Aira: one register-style hook per extension type.

A plugin implements any of these with :data:`aira_core.hookimpl` and calls ``register``
once per object. Hooks are called with keyword arguments, one plugin at a time, so an
exception in one plugin is recorded against that plugin and never stops the others.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

from aira_core.extensions import (
    CapabilityPackageSource,
    Integration,
    Kernel,
    Provider,
    Transport,
    Validator,
)

hookspec = pluggy.HookspecMarker("aira")


@hookspec
def aira_register_capability_packages(
    register: Callable[[CapabilityPackageSource], None],
) -> None:
    """Register signed capability packages: manifest and signature bytes plus the
    implementations behind each execution target. The catalog admits a package only if its
    signature verifies under a trusted key and it passes lint and conformance."""


@hookspec
def aira_register_kernels(register: Callable[[Kernel], None]) -> None:
    """Register geometry kernels (:class:`aira_core.extensions.Kernel`): a name, a build
    hash, the exact operation versions they implement, and ``evaluate(document, changed)``,
    ``query(document, ref, args)``, ``validate(document, assertion)`` and
    ``export(document, format, body, *, tolerance=None, angular_tolerance=None)`` on AMIR
    documents (mesh tolerances in mm and degrees, passed only when a user asks). Failures
    are diagnostics with stable codes in the results, never exceptions."""


@hookspec
def aira_register_validators(register: Callable[[Validator], None]) -> None:
    """Register validators that are not kernels (:class:`aira_core.extensions.Validator`): a
    name, the exact ``validatorRef`` they implement, the codes they can fail with, a
    ``check`` of an assertion's args (conformance runs it on the examples) and
    ``validate(view, assertion)``, which judges one assertion on a read-only
    :class:`~aira_core.extensions.ModelView` of the evaluated document (the kernel's
    queries, never a write). Every call is guarded (:mod:`aira_core.validator_guard`)."""


@hookspec
def aira_register_providers(register: Callable[[Provider], None]) -> None:
    """Register model provider adapters (a providerId and the models it serves)."""


@hookspec
def aira_register_transports(register: Callable[[Transport], None]) -> None:
    """Register decision transports: how a decision schema rides a provider request and how
    the decision comes back (``tool``, ``json``, strict structured output)."""


@hookspec
def aira_register_integrations(register: Callable[[Integration], None]) -> None:
    """Register Intent Loop, Context Continuity and Execution Guard adapters."""
