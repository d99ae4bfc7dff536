"""Aira: the host between AI models and CAD kernels.

The public API is small on purpose; import from the modules named here:

- ``aira_core.hookimpl``: the marker for plugin hook implementations.
- ``aira_core.canonical``: canonical JSON bytes and sha256 ids (the only hasher).
- ``aira_core.extensions``: the types a plugin registers (packages, kernels, …).
- ``aira_core.contracts``: pydantic models of every wire shape.
- ``aira_core.diagnostics``: ``Diagnostic`` and ``AiraError`` with stable codes.
"""

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("aira")
"""Marks a plugin's hook functions: ``@hookimpl def aira_register_kernels(register): ...``."""

__all__ = ["__version__", "hookimpl"]
