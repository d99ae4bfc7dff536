"""A write path on the real OCCT kernel over the first-party package (and any packages a test
adds beside it), on a fresh catalog state and store: what the repair tests plan and commit
through."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aira_core.catalog.capabilities import capability_index, node_signatures
from aira_core.catalog.catalog import build_catalog
from aira_core.catalog.policy import LOCAL_GRANT
from aira_core.model.repository import ModelRepository
from aira_core.runtime.plan import PlanContext
from aira_core.runtime.write import WritePath


@contextmanager
def occt_write_path(
    tmp: Path,
    kernel: Any,
    packages: Mapping[str, Any] | None = None,
    trust: Any = None,
) -> Iterator[WritePath]:
    """``packages`` (name → package source) are admitted beside the first-party one, with
    ``trust`` (default: the default trust); nothing may be quarantined."""
    import aira_kernel_occt.plugin
    from aira_core.catalog.state import CatalogState
    from aira_core.extensions import CapabilityPackageSource
    from aira_core.plugins import Registered, Registry
    from aira_kernel_occt.manifest import NAME

    registry = Registry()
    source = CapabilityPackageSource.from_directory(aira_kernel_occt.plugin.PACKAGE_DIR)
    registry.by_type["capability_packages"][NAME] = Registered(source, "occt", "occt")
    for name, package in (packages or {}).items():
        registry.by_type["capability_packages"][name] = Registered(package, "vendor", "vendor")
    registry.by_type["kernels"][kernel.name] = Registered(kernel, "occt", "occt")
    state = CatalogState(tmp / "catalog.sqlite3")
    repository = None
    try:
        options = {"trust": trust} if trust is not None else {}
        catalog = build_catalog(registry, state=state, **options)
        assert catalog.quarantine == [], catalog.quarantine
        index = capability_index(catalog)
        repository = ModelRepository.open(tmp / "store.sqlite3", node_signatures(index))
        repository.init()
        ctx = PlanContext(
            catalog=catalog, repository=repository, grant=LOCAL_GRANT, capabilities=index
        )
        yield WritePath(ctx, kernel)
    finally:
        if repository is not None:
            repository.close()
        state.close()
