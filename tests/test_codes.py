"""The registry of diagnostic codes (aira_core/codes.py) is complete and current: a code the
core raises is registered, a registered code is raised somewhere, the OCCT plugin raises
only codes its package declares (or core codes), and docs/codes.md is the generated text.

The codes are found by reading the source (``ast``), the ways this code base makes them:

- any string literal shaped like a code (``UPPER_SNAKE`` with an underscore) outside
  docstrings, ``__all__`` and environment-variable names: constants
  (``STORE_CORRUPT = "STORE_CORRUPT"``), arguments, tables, returns, comparisons;
- the code argument of a callable that takes one: ``Diagnostic(code=...)``, ``AiraError(...)``
  and every function or class of aira_core or the scanned modules with a parameter or field
  named ``code`` (``_diag``, ``add``, ``Failure``, ``PluginError`` …), resolving names bound
  to string constants and enum members, and catching one-word codes (``ABORTED``) there; the
  same for the value of a ``"code"`` key in a dict, the default of a ``code`` parameter and
  the values of a ``*_CODE`` / ``*_CODES`` constant;
- f-strings and concatenations in a code position (``f"{what}_INVALID"``): a template must
  be listed in :data:`TEMPLATES` with the codes it makes.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from aira_core.codes import CODES, PHASES, markdown, meanings, package_codes

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "aira_core"
OCCT = ROOT / "plugins" / "aira-kernel-occt" / "aira_kernel_occt"
OCCT_PACKAGE = "plugins/aira-kernel-occt/aira_kernel_occt/package"
CONTINUITY = ROOT / "plugins" / "aira-continuity" / "aira_continuity"
"""A plugin whose codes are registered in the core's registry (phase ``continuity``): it raises
them, so it is scanned with the core."""

CODE_SHAPE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
CODE_VALUE = re.compile(r"^[A-Z][A-Z0-9_]*$")  # what Diagnostic.code accepts

NOT_CODES = {
    name: "the SQLite error names the model store maps to STORE_CORRUPT / STORE_UNAVAILABLE"
    for name in (
        "SQLITE_BUSY",
        "SQLITE_CORRUPT",
        "SQLITE_LOCKED",
        "SQLITE_NOTADB",
        "SQLITE_READONLY",
    )
}
"""Code-shaped literals of the core that are not Aira codes."""

TEMPLATES = {
    "{}_INVALID": {"GRANT_INVALID", "INTENT_FRAME_INVALID", "PLAN_INVALID", "ENVELOPE_INVALID"}
}
"""Codes built from a template, with every code each makes (cli ``_load_model``: a plan, a
grant, an intent frame or an envelope file that is not a valid document)."""

OCCT_UNDECLARED = {
    "KERNEL_METHOD_UNKNOWN": "the worker's reply to an RPC method it does not have; the "
    "kernel only sends methods the worker has, so no capability raises it (a bug if seen)",
}
"""Codes the OCCT plugin raises that no capability declares, with the reason."""

EXTERNAL_SINKS: dict[str, set[int | str]] = {
    "Diagnostic": {"code"},  # a pydantic model: keyword only
    "PydanticCustomError": {0},  # its error type; the lint and document readers keep it
}


@dataclass(frozen=True)
class Site:
    path: str
    line: int
    code: str
    """The code, or for ``how == "template"`` the template (``{}`` for each hole)."""
    how: str
    """``literal``, ``constant`` (bound to ``name``), ``argument`` or ``template``."""
    name: str | None = None


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _code_params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int | str]:
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    if "code" in params:
        return {"code", params.index("code")}
    return {"code"} if "code" in {a.arg for a in node.args.kwonlyargs} else set()


def _defined_sinks(tree: ast.AST) -> dict[str, set[int | str]]:
    """The callables of one module that take a code: functions (and methods) with a
    parameter ``code``, classes whose ``__init__`` has one or that declare a field ``code``."""
    found: dict[str, set[int | str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if where := _code_params(node):
                found.setdefault(node.name, set()).update(where)
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                    if where := _code_params(stmt):
                        found.setdefault(node.name, set()).update(where)
                elif (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == "code"
                ):
                    found.setdefault(node.name, set()).add("code")
    return found


@functools.cache
def _core_sinks() -> dict[str, set[int | str]]:
    """The callables taking a code that aira_core defines (``AiraError`` …): a plugin
    imports them."""
    found: dict[str, set[int | str]] = {}
    for p in CORE.rglob("*.py"):
        for name, where in _defined_sinks(ast.parse(p.read_text(encoding="utf-8"))).items():
            found.setdefault(name, set()).update(where)
    return found


def _sinks(trees: dict[str, ast.Module]) -> dict[str, dict[str, set[int | str]]]:
    """Per module: the callables taking a code that it defines or imports by name (a local
    ``add`` in search.py is not plan.py's ``add``)."""
    defined = {k: _defined_sinks(t) for k, t in trees.items()}
    anywhere: dict[str, set[int | str]] = {**EXTERNAL_SINKS, **_core_sinks()}
    for table in defined.values():
        for name, where in table.items():
            anywhere.setdefault(name, set()).update(where)
    out = {}
    for k, tree in trees.items():
        table = {**EXTERNAL_SINKS, **defined[k]}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in anywhere:
                        table[alias.asname or alias.name] = anywhere[alias.name]
        out[k] = table
    return out


def _constants(trees: Iterable[ast.Module]) -> dict[str, str]:
    """Module- and class-level ``NAME = "value"`` (enum members included) of all the
    modules; a name bound to two values cannot be resolved and is left out."""
    out: dict[str, str] = {}
    clash: set[str] = set()
    for tree in trees:
        classes = [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        bodies = [tree.body, *classes]
        for stmt in (s for body in bodies for s in body):
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            ):
                name, value = stmt.targets[0].id, stmt.value.value
                if out.get(name, value) != value:
                    clash.add(name)
                out[name] = value
    return {k: v for k, v in out.items() if k not in clash}


def _not_code_nodes(tree: ast.AST) -> set[int]:
    """Ids of string nodes that are no codes: docstrings, ``__all__`` entries, the names of
    environment variables (``os.environ.get(...)``, ``os.environ[...]``, ``*_ENV = ...``)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            skip.update(
                id(s.value)
                for s in body
                if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
            )
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if "__all__" in names:
                skip.update(id(n) for n in ast.walk(node.value))
            if any(n.endswith("_ENV") for n in names):
                skip.add(id(node.value))
        if isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if "environ" in owner or owner in ("os", "monkeypatch"):
                skip.add(id(node.args[0]))
        if isinstance(node, ast.Subscript) and "environ" in ast.unparse(node.value):
            skip.add(id(node.slice))
    return skip


def _template(node: ast.AST) -> str | None:
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        if left is not None or right is not None:
            return (left or "{}") + (right or "{}")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _argument(path: str, arg: ast.AST, consts: dict[str, str]) -> Iterator[Site]:
    if isinstance(arg, ast.Attribute) and arg.attr == "value":
        arg = arg.value  # RejectionCode.X.value
    if isinstance(arg, ast.IfExp):
        yield from _argument(path, arg.body, consts)
        yield from _argument(path, arg.orelse, consts)
    elif isinstance(arg, ast.Constant):
        # Code-shaped literals are found as literals; here the one-word codes.
        word = arg.value if isinstance(arg.value, str) else ""
        if CODE_VALUE.match(word) and not CODE_SHAPE.match(word):
            yield Site(path, arg.lineno, word, "argument")
    elif isinstance(arg, ast.Name | ast.Attribute):
        value = consts.get(arg.id if isinstance(arg, ast.Name) else arg.attr)
        if value is not None and CODE_VALUE.match(value):
            yield Site(path, arg.lineno, value, "argument")
    elif (
        (template := _template(arg))
        and "{}" in template
        and CODE_VALUE.match(template.replace("{}", "X"))
    ):
        yield Site(path, arg.lineno, template, "template")


def _module_sites(
    path: str, tree: ast.AST, sinks: dict[str, set[int | str]], consts: dict[str, str]
) -> Iterator[Site]:
    skip = _not_code_nodes(tree)
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (where := sinks.get(_callee(node) or "")):
            args = [a for i, a in enumerate(node.args) if i in where]
            args += [k.value for k in node.keywords if k.arg in where]
            for arg in args:
                yield from _argument(path, arg, consts)
        elif isinstance(node, ast.Dict):  # {"code": ...}: a failure reply, a model_copy update
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "code":
                    yield from _argument(path, value, consts)
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id.endswith(("_CODE", "_CODES")) for t in node.targets
        ):  # KERNEL_CODES = (...): one-word values too
            for value in ast.walk(node.value):
                yield from _argument(path, value, consts)
        elif isinstance(node, ast.arguments):  # def f(code="..."): the default is a code
            positional = [*node.posonlyargs, *node.args]
            pairs = zip(
                positional[len(positional) - len(node.defaults) :], node.defaults, strict=True
            )
            for param, default in [*pairs, *zip(node.kwonlyargs, node.kw_defaults, strict=True)]:
                if param.arg == "code" and default is not None:
                    yield from _argument(path, default, consts)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
            and CODE_SHAPE.match(node.value)
        ):
            parent = parents.get(id(node))
            if (
                isinstance(parent, ast.Assign)
                and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Name)
            ):
                yield Site(path, node.lineno, node.value, "constant", parent.targets[0].id)
            else:
                yield Site(path, node.lineno, node.value, "literal")


def scan_sources(sources: dict[str, str]) -> tuple[list[Site], set[str]]:
    """The code sites of some modules (``{path: source}``), and every name they read
    (to tell a code constant that nothing uses)."""
    trees = {path: ast.parse(text, path) for path, text in sources.items()}
    sinks = _sinks(trees)
    consts = _constants(trees.values())
    sites = [
        s for path, tree in trees.items() for s in _module_sites(path, tree, sinks[path], consts)
    ]
    read: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                read.add(node.id)
            elif isinstance(node, ast.Attribute):
                read.add(node.attr)
            elif isinstance(node, ast.ImportFrom):
                read.update(alias.name for alias in node.names)
    return sites, read


REGISTRY = CORE / "codes.py"
EXPORTS = CORE / "__init__.py"
"""The public API's table of exported names (constants such as ``BASE_UNIT`` look like codes)."""
TESTING = CORE / "testing"
"""The fakes for plugin authors: a kernel like any plugin's, whose codes its fake package
declares (checked like the OCCT plugin's, not registered as the core's)."""


def scan(root: Path, exclude: Path | None = None) -> tuple[list[Site], set[str]]:
    """The code sites of a package; the registry itself names every code and raises none."""
    return scan_sources(
        {
            p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*.py"))
            if p not in (REGISTRY, EXPORTS) and (exclude is None or exclude not in p.parents)
        }
    )


def unregistered(sites: Iterable[Site], known: set[str] | dict[str, object]) -> list[str]:
    """``path:line: CODE`` for each site whose code is not in ``known``, nor made by a
    listed template (a template not listed is reported itself)."""
    out = []
    for s in sites:
        if s.how == "template":
            made = TEMPLATES.get(s.code)
            if made is None:
                out.append(f"{s.path}:{s.line}: template {s.code!r} (list it in TEMPLATES)")
            else:
                out += [f"{s.path}:{s.line}: {c} (from {s.code!r})" for c in made - set(known)]
        elif s.code not in known and s.code not in NOT_CODES:
            out.append(f"{s.path}:{s.line}: {s.code}")
    return out


def unused(registered: Iterable[str], sites: Iterable[Site], read: set[str]) -> list[str]:
    """The registered codes no site raises: only a constant nothing reads is no use."""
    used = {c for made in TEMPLATES.values() for c in made}
    for s in sites:
        if s.how != "constant" or s.name in read:
            used.add(s.code)
    return sorted(set(registered) - used)


def _core() -> tuple[list[Site], set[str]]:
    return scan(CORE, exclude=TESTING)


def _occt_manifest() -> dict[str, object]:
    return json.loads((ROOT / OCCT_PACKAGE / "manifest.json").read_text(encoding="utf-8"))


# -- the registry against the code base --------------------------------------------------


def test_every_code_the_core_raises_is_registered() -> None:
    sites, _ = _core()
    assert len({s.code for s in sites}) > 150  # the scan sees the code base, not nothing
    missing = unregistered(sites, CODES)
    assert not missing, "register these in aira_core/codes.py:\n" + "\n".join(missing)


def test_the_continuity_plugin_raises_only_registered_codes() -> None:
    sites, _ = scan(CONTINUITY)
    assert {"CONTRACT_INVALID", "CONTRACT_OUTSIDE_DOMAIN"} <= {s.code for s in sites}
    missing = unregistered(sites, CODES)
    assert not missing, "register these in aira_core/codes.py:\n" + "\n".join(missing)


def test_every_registered_code_is_still_raised() -> None:
    sites, read = _core()
    plugin_sites, plugin_read = scan(CONTINUITY)
    sites, read = [*sites, *plugin_sites], read | plugin_read
    # One-word codes that are no code argument (TerminalDecision.reason = "CONTINUE") are
    # found by their literal.
    words = {
        Site("", 0, n.value, "literal")
        for p in CORE.rglob("*.py")
        if p not in (REGISTRY, EXPORTS) and TESTING not in p.parents
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and n.value in CODES
        and not CODE_SHAPE.match(n.value)
    }
    live = [c for c, entry in CODES.items() if entry.reserved is None]
    stale = unused(live, [*sites, *words], read)
    assert not stale, f"nothing raises these any more; remove or mark reserved: {stale}"
    reserved = [c for c, entry in CODES.items() if entry.reserved is not None]
    raised = set(reserved) - set(unused(reserved, [*sites, *words], read))
    assert not raised, f"raised again, so no longer reserved: {sorted(raised)}"


def test_the_occt_plugin_raises_only_declared_or_core_codes() -> None:
    declared = set(package_codes(_occt_manifest()))
    sites, _ = scan(OCCT)
    assert {"SOLID_INVALID", "KERNEL_TIMEOUT"} <= {s.code for s in sites}
    known = {*CODES, *declared, *OCCT_UNDECLARED}
    missing = unregistered(sites, known)
    assert not missing, "declare these in the capability's diagnostics:\n" + "\n".join(missing)
    # An exemption that nothing needs any more goes.
    assert set(OCCT_UNDECLARED) <= {s.code for s in sites} - declared


def test_the_fake_kernel_raises_only_its_packages_or_core_codes() -> None:
    from aira_core.testing.package import fake_kernel_manifest

    declared = set(package_codes(fake_kernel_manifest()))
    sites, _ = scan(TESTING)
    assert {"VOLUME_OUT_OF_RANGE", "QUERY_TARGET_UNKNOWN"} <= {s.code for s in sites}
    # KERNEL_OPERATION_UNKNOWN: the fake's answer to an operation it does not implement.
    missing = unregistered(sites, {*CODES, *declared, "KERNEL_OPERATION_UNKNOWN"})
    assert not missing, "declare these in the fake package's diagnostics:\n" + "\n".join(missing)


def test_templates_make_the_codes_they_list() -> None:
    for template, made in TEMPLATES.items():
        shape = re.compile("^" + re.escape(template).replace(r"\{\}", "[A-Z][A-Z0-9_]*") + "$")
        assert all(shape.match(c) for c in made), (template, made)


# -- the checker catches what it must ----------------------------------------------------


SYNTHETIC = '''
"""A module with NOT_A_CODE in its docstring."""
import os
from aira_core.diagnostics import AiraError, Diagnostic

__all__ = ["WIDGET_CONSTANT_NAME"]
WIDGET_BROKEN = "WIDGET_BROKEN"
DEBUG_ENV = "AIRA_WIDGET_DEBUG"
_TABLE = {"cracked": "WIDGET_CRACKED"}


def _problem(code, message):
    return Diagnostic(code=code, message=message)


def _refuse(message, code="REFUSED"):
    return {"code": "SNAPPED", "message": message, "again": {"code": code}}


LAST_RESORT_CODE = "SURRENDERED"


def run(kind: str) -> None:
    if os.environ.get("AIRA_WIDGET_MODE"):
        raise AiraError(WIDGET_BROKEN, "broken")
    _problem("WIDGETED", "one word, as a code argument")
    yield {"code": "WIDGET_BENT", "message": "a failure table entry"}
    raise AiraError(f"{kind.upper()}_WIDGET_FAILED", "made from a template")
'''


def test_the_checker_reports_unregistered_codes_however_they_are_made() -> None:
    sites, _ = scan_sources({"synthetic.py": SYNTHETIC})
    found = unregistered(sites, CODES)
    codes = {line.split(": ", 1)[1] for line in found}
    assert {
        "WIDGET_BROKEN",  # a constant, raised through its name
        "WIDGET_CRACKED",  # in a table
        "WIDGETED",  # one word, but the code argument of a function taking `code`
        "WIDGET_BENT",  # a dict entry
        "SNAPPED",  # one word, a dict's "code"
        "REFUSED",  # one word, the default of a `code` parameter
        "SURRENDERED",  # one word, a *_CODE constant
        "template '{}_WIDGET_FAILED' (list it in TEMPLATES)",
    } <= codes
    # Docstrings, __all__ and environment variable names are no codes.
    assert not any(w in " ".join(found) for w in ("NOT_A_CODE", "CONSTANT_NAME", "AIRA_WIDGET"))
    found = {"WIDGET_BROKEN", "WIDGET_CRACKED", "WIDGETED", "WIDGET_BENT", "SNAPPED", "REFUSED"}
    assert unregistered(sites, {*CODES, *found, "SURRENDERED"}) == [
        "synthetic.py:28: template '{}_WIDGET_FAILED' (list it in TEMPLATES)"
    ]


def test_a_registered_code_nothing_raises_is_reported() -> None:
    source = 'DEAD_CODE = "DEAD_CODE"\nLIVE_CODE = "LIVE_CODE"\nprint(LIVE_CODE, "USED_CODE")\n'
    sites, read = scan_sources({"m.py": source})
    assert unused(["DEAD_CODE", "LIVE_CODE", "USED_CODE", "GONE_CODE"], sites, read) == [
        "DEAD_CODE",
        "GONE_CODE",
    ]


def test_a_plugin_code_no_capability_declares_is_reported() -> None:
    source = 'from x import Failure\nraise Failure("SOLID_MELTED", "no capability declares it")\n'
    sites, _ = scan_sources({"p.py": source})
    assert unregistered(sites, {*CODES, *package_codes(_occt_manifest())}) == [
        "p.py:2: SOLID_MELTED"
    ]


# -- the registry itself -----------------------------------------------------------------


def test_registry_entries_are_well_formed() -> None:
    for code, entry in CODES.items():
        assert CODE_VALUE.match(code) and entry.code == code
        assert entry.phase in PHASES, entry
        assert entry.meaning and "\n" not in entry.meaning, entry
        assert entry.reserved is None or entry.reserved.strip(), entry
    assert all(meanings(p) for p in PHASES)  # no empty phase


def test_lint_rules_and_rejection_summaries_are_the_registry_meanings() -> None:
    from aira_core.catalog.lint import RULES, SUMMARY_MAX_CHARS
    from aira_core.runtime.contract import REJECTION_SUMMARIES

    assert meanings("lint") == RULES
    assert f"at most {SUMMARY_MAX_CHARS} characters" in RULES["LINT_SUMMARY_TOO_LONG"]
    assert {r.value: s for r, s in REJECTION_SUMMARIES.items()} == {
        r.value: CODES[r.value].meaning for r in REJECTION_SUMMARIES
    }


def test_importing_the_registry_loads_nothing_heavy() -> None:
    code = "import sys, aira_core.codes; print(' '.join(m.split('.')[0] for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not {"pydantic", "jsonschema", "cadquery"} & set(out.stdout.split())


# -- docs/codes.md -----------------------------------------------------------------------


def test_docs_codes_md_is_the_generated_text() -> None:
    generated = markdown([(OCCT_PACKAGE, _occt_manifest())])
    committed = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert committed == generated, (
        "docs/codes.md is stale; regenerate it with "
        f"`python -m aira_core.codes --markdown --package {OCCT_PACKAGE} > docs/codes.md`"
    )
    for code in CODES:
        assert f"| `{code}` |" in generated


def test_the_generator_command_prints_the_document(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "aira_core.codes", "--markdown", "--package", OCCT_PACKAGE],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "aira_core.codes", "--html"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--markdown" in bad.stderr
    named = subprocess.run(
        [sys.executable, "-m", "aira_core.codes", "--markdown", "--package", "aira.kernel.occt"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert named.returncode == 2 and named.stdout == ""
    assert "not a package directory or manifest" in named.stderr
    assert "Traceback" not in named.stderr
