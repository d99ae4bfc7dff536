"""``aira catalog new``: the files of a new capability package, a distribution of its own.

The files are made from the templates in ``scaffold_templates/`` (package data; every
``{{key}}`` replaced by a name derived from the package's name), so what a vendor gets is
plain text that can be read, and tested, as it is. The package holds one capability of each
kind a package can bring without a kernel: a workflow, a repair and a validator (its README
says why the other kinds are not there). It is not signed: a publisher signs it with their
own key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aira_core.contracts.package import PACKAGE_NAME_PATTERN
from aira_core.diagnostics import AiraError

CATALOG_NEW_NAME_INVALID = "CATALOG_NEW_NAME_INVALID"
CATALOG_NEW_TARGET_EXISTS = "CATALOG_NEW_TARGET_EXISTS"

NAME_MAX_CHARS = 64
"""Longer names make directory, module and capability names past what anyone types (the
directory name also has to fit the file system's 255 bytes)."""

_NAME = re.compile(PACKAGE_NAME_PATTERN)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")

# output path (``{module}``: the Python package) -> its template in scaffold_templates/
_FILES = {
    "pyproject.toml": "pyproject.toml.tmpl",
    "README.md": "README.md.tmpl",
    ".gitignore": "gitignore.tmpl",
    "{module}/__init__.py": "init.py.tmpl",
    "{module}/plugin.py": "plugin.py.tmpl",
    "{module}/validator.py": "validator.py.tmpl",
    "{module}/package/manifest.json": "manifest.json.tmpl",
    "tests/test_package.py": "test_package.py.tmpl",
}

CAPABILITIES = ("mountingPlate", "smallerFillet", "maxMass")
"""The short names of the scaffold's capabilities: a workflow, a repair, a validator."""


@dataclass(frozen=True)
class ScaffoldNames:
    """Every name of a new package, derived from its package name (``acme.brackets``)."""

    name: str
    publisher: str
    distribution: str
    """``aira-pack-acme-brackets``: the pip distribution and the default directory."""
    module: str
    """``aira_pack_acme_brackets``: the Python package."""
    plugin: str
    """``acme-brackets``: the entry-point name (what AIRA_PLUGINS and `aira plugins` show)."""
    namespace: str
    """``acmeBrackets``: the first part of the capability ids (no dashes or leading digits
    there, which a package name may have)."""
    code: str
    """``ACME_BRACKETS``: the prefix of the validator's diagnostic codes."""

    def capability_ids(self) -> list[str]:
        return [f"cap:{self.namespace}.{short}@1" for short in CAPABILITIES]

    def package_dir(self) -> str:
        """The package directory inside the distribution: what lint and sign take."""
        return f"{self.module}/package"


def scaffold_names(name: str, publisher: str | None = None) -> ScaffoldNames:
    """The names of package ``name``; ``publisher`` defaults to the name's first part.
    ``CATALOG_NEW_NAME_INVALID`` for a name the package contract (``PACKAGE_NAME_PATTERN``)
    refuses, ``TRUST_PUBLISHER_INVALID`` for such a publisher (as `aira trust add` would)."""
    from aira_core.catalog.trust import check_publisher

    # fullmatch: "$" would let a trailing newline through
    if len(name) > NAME_MAX_CHARS or not _NAME.fullmatch(name):
        raise AiraError(
            CATALOG_NEW_NAME_INVALID,
            f"{name[:80]!r} is not a package name: lowercase letters and digits, starting "
            "with a letter, in parts joined by '.' or '-' (e.g. 'acme.brackets'), at most "
            f"{NAME_MAX_CHARS} characters",
        )
    parts = re.split(r"[.-]", name)
    publisher = parts[0] if publisher is None else publisher
    check_publisher(publisher)
    return ScaffoldNames(
        name=name,
        publisher=publisher,
        distribution="aira-pack-" + "-".join(parts),
        module="aira_pack_" + "_".join(parts),
        plugin="-".join(parts),
        namespace=parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:]),
        code="_".join(parts).upper(),
    )


def _render(template: str, names: ScaffoldNames) -> str:
    values = {
        "name": names.name,
        "publisher": names.publisher,
        "distribution": names.distribution,
        "module": names.module,
        "plugin": names.plugin,
        "namespace": names.namespace,
        "code": names.code,
    }
    # a template naming a key that does not exist is a bug here: KeyError, not a hole
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def scaffold_files(names: ScaffoldNames) -> dict[str, bytes]:
    """The files of the new package: relative POSIX path -> content."""
    templates = resources.files("aira_core.catalog") / "scaffold_templates"
    return {
        path.format(module=names.module): _render(
            (templates / template).read_text(encoding="utf-8"), names
        ).encode("utf-8")
        for path, template in _FILES.items()
    }


def default_directory(names: ScaffoldNames) -> Path:
    return Path(names.distribution)


def write_scaffold(names: ScaffoldNames, directory: Path) -> Path:
    """Write the package into ``directory`` (new, or an empty directory), all or nothing;
    ``CATALOG_NEW_TARGET_EXISTS`` if anything is there."""
    from aira_core.files import write_tree

    return write_tree(
        directory,
        scaffold_files(names),
        exists_code=CATALOG_NEW_TARGET_EXISTS,
        hint="choose another directory with --dir, or remove it",
    )
