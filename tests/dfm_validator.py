"""The example vendor package's DFM validator (examples/aira-pack-holes, "minimum
hole-to-edge distance") as an in-process fixture: its validator descriptor alone as a
package (signed in each test with a throwaway key) and a plugin module registering it. It is
no kernel: it judges the document only through the read-only view's kernel queries. Used by
tests/test_validators.py (fake kernel, hostile variants) and
tests/plugins/aira_kernel_occt/test_occt_validators.py (the real kernel); the installed
package itself: tests/examples/test_aira_pack_holes.py."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aira_core import hookimpl
from aira_core.extensions import CapabilityPackageSource

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aira-pack-holes"
if str(EXAMPLE) not in sys.path:  # the example is not installed in the test environment
    sys.path.insert(0, str(EXAMPLE))

from aira_pack_holes.validator import (  # noqa: E402
    ARGS_INVALID,
    MAX_DISTANCE,
    REF,
    TOO_CLOSE,
    HoleEdgeDistance,
)

__all__ = ["ARGS_INVALID", "MAX_DISTANCE", "REF", "TOO_CLOSE", "HoleEdgeDistance"]

_FULL = json.loads((EXAMPLE / "aira_pack_holes" / "package" / "manifest.json").read_text())
PACKAGE = _FULL["name"]
PUBLISHER = _FULL["publisher"]
CAP = "cap:holes.edgeDistance@1"


def manifest(version: str = "1.0.0", examples: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The vendor's package with only its validator descriptor (and its input schema)."""
    (descriptor,) = [d for d in _FULL["descriptors"] if d["capabilityId"] == CAP]
    descriptor = dict(descriptor)
    if examples:
        descriptor["inputExamples"] = [{"input": dict(e)} for e in examples]
    schema = descriptor["inputs"]["schemaRef"]
    return {
        "format": _FULL["format"],
        "name": PACKAGE,
        "version": version,
        "publisher": PUBLISHER,
        "descriptors": [descriptor],
        "schemas": {schema: _FULL["schemas"][schema]},
    }


def plugin_module(validator: Any, package_dir: Any) -> Any:
    """An in-process plugin module registering the vendor package and ``validator``."""
    import types

    module = types.ModuleType("acme_dfm_plugin")

    @hookimpl
    def aira_register_capability_packages(register: Any) -> None:
        register(CapabilityPackageSource.from_directory(package_dir))

    @hookimpl
    def aira_register_validators(register: Any) -> None:
        register(validator)

    module.aira_register_capability_packages = aira_register_capability_packages  # type: ignore[attr-defined]
    module.aira_register_validators = aira_register_validators  # type: ignore[attr-defined]
    return module
