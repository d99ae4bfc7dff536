"""Entry point of the ``occt`` plugin: the signed capability package and the kernel.

Cheap to import: neither hook imports CadQuery; the kernel starts its worker process (which
does) on first use.
"""

from __future__ import annotations

from pathlib import Path

from aira_core import hookimpl
from aira_core.extensions import CapabilityPackageSource

PACKAGE_DIR = Path(__file__).parent / "package"


@hookimpl
def aira_register_capability_packages(register):  # type: ignore[no-untyped-def]
    # The implementations come from the kernel registered below (conformance resolves
    # operation, query, validator and io targets against every registered kernel).
    from aira_kernel_occt.manifest import NAME

    # named here: from_directory would otherwise parse the whole manifest just for its name
    register(
        CapabilityPackageSource.from_directory(
            PACKAGE_DIR, name=NAME, origin="aira_kernel_occt/package"
        )
    )


@hookimpl
def aira_register_kernels(register):  # type: ignore[no-untyped-def]
    from aira_kernel_occt.kernel import OcctKernel

    register(OcctKernel())
