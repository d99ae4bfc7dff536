"""Aira: the host between AI models and CAD kernels.

The public API, what a plugin may use, is the flat list :data:`__all__` (``from aira_core
import Kernel, Diagnostic, ParamType, to_base``) and the modules in :data:`PUBLIC_MODULES`.
Everything else (``aira_core.model``, ``catalog``, ``runtime``, ``step``, the CLI) is the
host's own and may change; tests/test_public_api.py fails on a first-party plugin that
imports it.

- ``hookimpl``: the marker for plugin hook implementations.
- the extension types a plugin registers, and the provider seam (:mod:`aira_core.extensions`);
- ``Diagnostic``, ``AiraError``: stable codes and clear messages (:mod:`aira_core.diagnostics`);
- canonical JSON bytes and sha256 ids, the only hasher (:mod:`aira_core.canonical`);
- the AMIR vocabulary: blocks, parameter and input types, units, which parameter type may feed
  which input, the host's token meter (:mod:`aira_core.contracts.amir`).

Importing ``aira_core`` stays cheap (``aira --help`` imports it): every name but
``__version__`` is imported from its module (or, for ``hookimpl``, made) on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

PUBLIC_MODULES: tuple[str, ...] = (
    "aira_core",
    "aira_core.canonical",
    "aira_core.contracts",
    "aira_core.contracts.amir",
    "aira_core.contracts.base",
    "aira_core.contracts.capability",
    "aira_core.contracts.package",
    "aira_core.contracts.plan",
    "aira_core.contracts.script",
    "aira_core.contracts.search",
    "aira_core.config",
    "aira_core.diagnostics",
    "aira_core.extensions",
    "aira_core.files",
    "aira_core.gateway.chat",
    "aira_core.gateway.config",
    "aira_core.gateway.http",
    "aira_core.gateway.openai_compat",
    "aira_core.gateway.transports",
    "aira_core.inputs",
    "aira_core.integrations",
    "aira_core.testing",
    "aira_core.warm",
)
"""The modules a plugin may import from: the flat names below, the wire shapes, the pieces a
provider plugin is built from (the one HTTP call and its classification, the chat wire, the
decision transports, the OpenAI-compatible adapter), the integration seam an Intent /
Continuity / Guard adapter implements, the one reader of user-named files and the one
writer of files (with ``AIRA_HOME``), the pytest plugin for its tests, and the private
socket directory of a worker that outlives a command."""

_EXPORTS: dict[str, tuple[str, ...]] = {
    "aira_core.extensions": (
        "Acceptance",
        "AcceptanceTable",
        "AssertionView",
        "BodyResult",
        "BudgetsLeft",
        "CapabilityPackageSource",
        "ConfigurableProvider",
        "DecisionEntry",
        "DecisionSource",
        "Evaluation",
        "Implementation",
        "Integration",
        "Kernel",
        "ModelView",
        "PreparedCall",
        "Provider",
        "ProviderError",
        "ProviderResponse",
        "QueryResult",
        "ResultEntry",
        "RoundEntry",
        "StepReply",
        "StepRequest",
        "TargetImplementation",
        "Transport",
        "Usage",
        "ValidationOutcome",
        "Validator",
    ),
    "aira_core.diagnostics": ("AiraError", "Diagnostic", "Severity", "json_pointer"),
    "aira_core.canonical": (
        "CanonicalJSONError",
        "StrictJSONError",
        "canonical_bytes",
        "loads_strict",
        "sha256_bytes_hex",
        "sha256_hex",
        "sha256_id",
    ),
    "aira_core.contracts.amir": (
        "AMIR_ACCEPTS_KEYWORD",
        "AMIR_CONSUMES_KEYWORD",
        "AMIR_TYPE_KEYWORD",
        "AMIR_TYPE_MISMATCH",
        "BASE_UNIT",
        "BLOCKS",
        "BLOCK_BY_NAME",
        "BLOCK_BY_PREFIX",
        "HOST_BYTES_PER_TOKEN",
        "INPUT_TYPES",
        "INTERMEDIATE_TYPES",
        "JSON",
        "PROFILE",
        "SELECTION",
        "SHAPE",
        "UNITS",
        "UNIT_MISMATCH",
        "UNIT_UNKNOWN",
        "AmirDocument",
        "Block",
        "ParamType",
        "dimension_of",
        "host_tokens",
        "param_fits",
        "to_base",
        "value_tokens",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ["PUBLIC_MODULES", "__version__", "hookimpl", *_MODULE_OF]


def __getattr__(name: str) -> Any:
    if name == "hookimpl":
        # Marks a plugin's hook functions: ``@hookimpl def aira_register_kernels(register):``.
        # Made on first use: `aira --help` does not need pluggy.
        import pluggy

        globals()["hookimpl"] = marker = pluggy.HookimplMarker("aira")
        return marker
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'aira_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
