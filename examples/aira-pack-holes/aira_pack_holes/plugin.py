"""Entry point of the ``acme-holes`` plugin (``[project.entry-points.aira]``): the signed
capability package, and the validator behind its validator descriptor. Cheap to import."""

from __future__ import annotations

from pathlib import Path

from aira_core import hookimpl
from aira_core.extensions import CapabilityPackageSource

PACKAGE_DIR = Path(__file__).parent / "package"


@hookimpl
def aira_register_capability_packages(register):  # type: ignore[no-untyped-def]
    # The workflows and the repair are data the core evaluates; the validator is below.
    register(CapabilityPackageSource.from_directory(PACKAGE_DIR, name="acme.holes"))


@hookimpl
def aira_register_validators(register):  # type: ignore[no-untyped-def]
    from aira_pack_holes.validator import HoleEdgeDistance

    register(HoleEdgeDistance())
