"""The import graph of aira_core has no circles.

Every import counts: at module level, under ``if TYPE_CHECKING:`` (a circle there is still
two modules that each need the other to be understood) and inside functions (a local
import keeps a heavy dependency off the startup path; it does not make a circle between two
of the project's modules acceptable, it only hides it until the function runs)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "aira_core"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, at any depth."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(sources: Mapping[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """``{module: modules of the package it imports, anywhere in it}`` from ``{module:
    (source, is_package)}``. ``from pkg import sub`` is an edge to ``pkg.sub`` when that
    is a module, else to ``pkg``."""
    known = set(sources)
    graph: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        edges = graph.setdefault(module, set())
        for node in _imports(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(node, module, is_package)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            edges.update(t for t in targets if t in known and t != module)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def package_sources(root: Path = ROOT, package: str = PACKAGE) -> dict[str, tuple[str, bool]]:
    return {
        module_name(path, root): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for path in sorted((root / package).rglob("*.py"))
    }


def test_aira_core_imports_have_no_circles() -> None:
    graph = import_graph(package_sources())
    assert len(graph) > 40  # the walk found the package
    assert cycles(graph) == []


FIRST_PARTY = sorted(
    (plugin, package.name)
    for plugin in (ROOT / "plugins").iterdir()
    for package in plugin.iterdir()
    if (package / "__init__.py").is_file()
)


@pytest.mark.parametrize(("plugin", "package"), FIRST_PARTY, ids=[p for _, p in FIRST_PARTY])
def test_first_party_plugins_have_no_circles(plugin: Path, package: str) -> None:
    graph = import_graph(package_sources(plugin, package))
    assert graph and cycles(graph) == []


def test_every_first_party_plugin_is_walked() -> None:
    assert len(FIRST_PARTY) == len([p for p in (ROOT / "plugins").iterdir() if p.is_dir()])


def test_the_walk_sees_type_checking_and_relative_imports() -> None:
    """The finder itself: a circle closed only under TYPE_CHECKING, through a relative
    import, or inside a function is found."""
    sources = {
        "pkg": ("", True),
        "pkg.a": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n", False),
        "pkg.b": ("from pkg import a\n", False),
        "pkg.c": ("from . import d\n", False),
        "pkg.d": ("from .c import x\n", False),
        "pkg.e": ("def f():\n    import pkg.f\n", False),
        "pkg.f": ("import pkg.e\n", False),
    }
    assert cycles(import_graph(sources)) == [
        ["pkg.a", "pkg.b"],
        ["pkg.c", "pkg.d"],
        ["pkg.e", "pkg.f"],
    ]


FLOORS = ("contracts", "model", "catalog", "runtime", "step")
"""The packages of aira_core from the bottom up; above them only the CLI and the schema
registry (``aira_core.cli``, ``aira_core.schemas``)."""
TOP = ("cli", "schemas")


def upward_imports(sources: Mapping[str, tuple[str, bool]]) -> list[str]:
    """Imports, at any depth (function-local ones too), from a floor to a higher floor or
    to the top, as ``module -> imported``."""

    def floor(module: str) -> int | None:
        parts = module.split(".")
        if len(parts) < 2 or parts[0] != PACKAGE:
            return None
        if parts[1] in TOP:
            return len(FLOORS)
        return FLOORS.index(parts[1]) if parts[1] in FLOORS else None

    found = []
    for module, (source, is_package) in sorted(sources.items()):
        mine = floor(module)
        if mine is None or mine == len(FLOORS):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [_resolve(node, module, is_package)]
            else:
                continue
            for target in targets:
                theirs = floor(target)
                if theirs is not None and theirs > mine:
                    found.append(f"{module} -> {target}")
    return found


def test_no_floor_imports_a_floor_above_it() -> None:
    """contracts -> model -> catalog -> runtime -> step: nothing reaches up, not even lazily
    inside a function (the way contracts once reached the runtime for its schemas)."""
    assert upward_imports(package_sources()) == []


def test_an_upward_import_inside_a_function_is_found() -> None:
    sources = {
        "aira_core.contracts.x": ("def f():\n    from aira_core.runtime import y\n", False),
        "aira_core.catalog.z": ("from aira_core.model import w\n", False),
        "aira_core.model.v": ("import aira_core.cli\n", False),
    }
    assert upward_imports(sources) == [
        "aira_core.contracts.x -> aira_core.runtime",
        "aira_core.model.v -> aira_core.cli",
    ]


def imports_between(sources: Mapping[str, tuple[str, bool]], low: str, high: str) -> list[str]:
    """Imports, at any depth, from a module of package ``low`` to one of ``high``."""
    found = []
    for module, (source, is_package) in sorted(sources.items()):
        if module != low and not module.startswith(low + "."):
            continue
        for node in _imports(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                targets = [_resolve(node, module, is_package)]
            found += [f"{module} -> {t}" for t in targets if t == high or t.startswith(high + ".")]
    return found


def test_the_mcp_server_and_the_step_host_share_only_what_is_below_them() -> None:
    """Both project the runtime to a model; the forms they share (plan drafts, tiers,
    intents) are the runtime's, so neither reaches into the other."""
    sources = package_sources()
    assert imports_between(sources, "aira_core.mcp", "aira_core.step") == []
    assert imports_between(sources, "aira_core.step", "aira_core.mcp") == []
    assert imports_between(
        {"aira_core.mcp.x": ("def f():\n    from aira_core.step import y\n", False)},
        "aira_core.mcp",
        "aira_core.step",
    ) == ["aira_core.mcp.x -> aira_core.step"]
