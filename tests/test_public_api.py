"""The public API: every name of ``aira_core.__all__`` imports, ``import aira_core`` stays
cheap, and a first-party plugin imports nothing else of aira_core."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import aira_core

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_SOURCES = sorted((ROOT / "plugins").glob("*/**/*.py"))
HEAVY = ("pydantic", "jsonschema", "cryptography", "cadquery", "OCP", "httpx", "mcp")


@pytest.mark.parametrize("name", aira_core.__all__)
def test_every_public_name_imports_from_aira_core(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from aira_core import {name}", namespace)  # the statement a plugin writes
    assert namespace[name] is getattr(aira_core, name)


def test_a_public_name_is_the_object_of_its_module() -> None:
    from aira_core.contracts import amir
    from aira_core.extensions import Kernel

    assert aira_core.to_base is amir.to_base
    assert aira_core.ParamType is amir.ParamType
    assert aira_core.Kernel is Kernel


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        aira_core.nothing_here  # noqa: B018
    with pytest.raises(ImportError):
        exec("from aira_core import nothing_here", {})


def test_submodules_still_import_through_the_package() -> None:
    from aira_core import canonical

    assert canonical.sha256_hex is aira_core.sha256_hex


@pytest.mark.parametrize("module", aira_core.PUBLIC_MODULES)
def test_every_public_module_imports(module: str) -> None:
    importlib.import_module(module)


def test_import_aira_core_imports_nothing_heavy() -> None:
    code = (
        "import sys\nimport aira_core\nfrom aira_core import hookimpl\n"
        "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert "pluggy" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


# -- what the first-party plugins import ---------------------------------------------------------


def aira_core_imports(source: str) -> Iterator[tuple[int, str, str | None]]:
    """``(line, module, name)`` of every import of aira_core in ``source``, at any depth
    (function-local imports too); ``name`` is None for ``import aira_core.x``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "aira_core":
                    yield node.lineno, alias.name, None
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "aira_core"
        ):
            for alias in node.names:
                yield node.lineno, str(node.module), alias.name


def outside_public_api(source: str) -> list[str]:
    """The imports of ``source`` that reach past the public API, as ``line: what``."""
    public = set(aira_core.PUBLIC_MODULES)
    bad = []
    for line, module, name in aira_core_imports(source):
        if module == "aira_core" and name is not None:
            ok = name in aira_core.__all__ or f"aira_core.{name}" in public
        else:
            ok = module in public and (name is None or not name.startswith("_"))
        if not ok:
            bad.append(f"{line}: {module}" + (f".{name}" if name else ""))
    return bad


def test_the_plugin_sources_were_found() -> None:
    assert any(p.name == "kernel.py" for p in PLUGIN_SOURCES)


@pytest.mark.parametrize("path", PLUGIN_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_first_party_plugins_import_only_the_public_api(path: Path) -> None:
    assert outside_public_api(path.read_text(encoding="utf-8")) == []


def test_the_import_check_refuses_internals() -> None:
    source = (
        "from aira_core import hookimpl, ParamType\n"
        "from aira_core.contracts.amir import to_base\n"
        "import aira_core.extensions\n"
        "from aira_core.model.patch import param_fits\n"
        "def later():\n"
        "    import aira_core.runtime.plan\n"
        "    from aira_core import cli\n"
        "    from aira_core.canonical import _serialise\n"
    )
    assert outside_public_api(source) == [
        "4: aira_core.model.patch.param_fits",
        "6: aira_core.runtime.plan",
        "7: aira_core.cli",
        "8: aira_core.canonical._serialise",
    ]
