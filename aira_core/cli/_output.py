"""What every command prints and reads: JSON on stdout, Rich tables, diagnostics, the one
strict reader of the JSON a user gives, and how a failure is rendered (``main``'s error
handling)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer


def _json_text(obj: Any) -> str:
    """``obj`` as JSON text for stdout. NaN, Infinity, a lone surrogate or a value nested too
    deeply to write is ``OUTPUT_NOT_JSON``: what aira prints as JSON always parses."""
    from aira_core.diagnostics import may_hold_secrets, redact_value

    try:
        text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)
        # The last line before stdout: every string, keys included, whatever built it. The
        # fast test on the whole text spares the walk when nothing can need redacting.
        if may_hold_secrets(text):
            text = json.dumps(redact_value(obj), indent=2, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")  # a lone surrogate would fail on the way out, half printed
        return text
    except (ValueError, RecursionError) as exc:
        from aira_core.diagnostics import AiraError

        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        raise AiraError(
            "OUTPUT_NOT_JSON", f"the result cannot be printed as JSON: {reason}"
        ) from None


def _print_json(obj: Any) -> None:
    typer.echo(_json_text(obj))


def _loads(data: bytes | str, name: str, code: str) -> Any:
    """The one reader of the JSON a user gives the command line, files and arguments alike:
    as strict as a manifest (``canonical.loads_strict``: no duplicate key, NaN/Infinity,
    inexact integer, bad UTF-8 or nesting beyond ``canonical.MAX_DEPTH``). Refused as
    ``code``, the message naming the input as ``name``."""
    from aira_core.canonical import StrictJSONError, loads_strict
    from aira_core.diagnostics import AiraError

    if isinstance(data, str):
        try:
            # argv keeps bytes that are not UTF-8 as lone surrogates: give them back, so
            # loads_strict refuses them as it refuses them in a file.
            data = data.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise AiraError(code, f"{name} is not UTF-8 text") from None
    try:
        return loads_strict(data, name)[0]
    except StrictJSONError as exc:
        raise AiraError(code, str(exc)) from None


def _read_json_file(
    path: Path, what: str, code: str = "INPUT_NOT_JSON", unreadable: str = "INPUT_UNREADABLE"
) -> Any:
    """The JSON in the file at ``path`` (a ``what``, e.g. "patch"): read by the one input
    reader (a regular file within the JSON cap, ``aira_core.inputs``), parsed by
    :func:`_loads`."""
    from aira_core.inputs import read_input

    data = read_input(path, "json", what=what, unreadable=unreadable)
    return _loads(data, f"{what} {path.name!r}", code)


def printable(text: str) -> str:
    """``text`` safe to show on a terminal: each control or format character (escape
    sequences, carriage returns, bidi overrides) shown as its Python escape (``\\x1b``), so
    a commit message or a subject cannot move the cursor, recolour or retitle the terminal, or hide
    text. JSON output is not passed through this: it keeps the data, escaped as JSON is."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)


PROGRESS_ENV = "AIRA_PROGRESS"
"""``1`` shows progress even when stderr is not a terminal (tests, recorded sessions); ``0``
never shows it."""


def _progress_wanted(quiet: bool) -> bool:
    if quiet:
        return False
    forced = os.environ.get(PROGRESS_ENV)
    if forced in ("0", "1"):
        return forced == "1"
    from rich.console import Console

    return Console(stderr=True).is_terminal


@contextmanager
def progress(
    description: str, total: int | None = None, *, quiet: bool = False
) -> Iterator[Callable[..., None]]:
    """A transient spinner (``total`` None) or bar on stderr while the block runs; yields
    ``update(advance=0, *, description=None, total=None, completed=None)``. Nothing is shown
    when ``quiet`` (a command printing --json) or stderr is not a terminal, so stdout and
    piped output never change; ``AIRA_PROGRESS`` overrides the terminal test."""
    if not _progress_wanted(quiet):
        yield lambda *args, **kwargs: None
        return
    # Imported here: rich.progress would slow every `aira --help`.
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

    forced = os.environ.get(PROGRESS_ENV) == "1"
    console = Console(stderr=True, force_terminal=True if forced else None)
    # markup=False: descriptions hold package and task names, never rich markup.
    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}", markup=False)]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(printable(description), total=total)

        def update(
            advance: int = 0,
            *,
            description: str | None = None,
            total: int | None = None,
            completed: int | None = None,
        ) -> None:
            bar.update(
                task,
                advance=advance or None,
                description=printable(description) if description is not None else None,
                total=total,
                completed=completed,
            )

        yield update


def _table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from rich.table import Table
    from rich.text import Text

    from aira_core.diagnostics import redact

    # Titles and cells hold user, model and catalog text: plain Text, never rich markup, so
    # "[/x]" prints as written instead of failing (or styling) the output; redacted, as
    # JSON output is.
    table = Table(title=Text(printable(redact(title)), style="table.title"), title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(Text(printable(redact(cell))) for cell in row))
    _console().print(table)


def _print_diagnostics(diags: list[Any]) -> None:
    from rich.markup import escape

    console = _console()
    for d in diags:
        console.print(f"  [red]{d.code}[/red] {escape(printable(d.message))}")


USAGE_INVALID = "USAGE_INVALID"
"""A command line typer/click cannot parse (unknown option, bad value, missing argument);
exit code 2, as click's own usage errors."""


def _json_requested(args: list[str]) -> bool:
    """Whether the command line asks for --json (before a ``--``): then a failure is printed
    as JSON on stdout too, even one typer reports before the command runs."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _failure(exc: Exception) -> tuple[list[Any], int]:
    """The diagnostics and exit status of a command that raised ``exc``."""
    # Imported here, not at the top: pydantic would cost `aira --help` ~70 ms.
    from aira_core.diagnostics import AiraError, Diagnostic

    if isinstance(exc, AiraError):  # a refused patch or document lists every problem
        return list(getattr(exc, "diagnostics", None) or [exc.diagnostic]), 1
    if _is_click_error(exc):
        where = getattr(getattr(exc, "ctx", None), "command_path", None) or "aira"
        message = f"{exc.format_message()} (`{where} --help` shows the usage)"
        return [Diagnostic(code=USAGE_INVALID, message=message)], int(exc.exit_code)
    if isinstance(exc, typer.Abort):
        return [Diagnostic(code="ABORTED", message="aborted")], 1
    if isinstance(exc, OSError):  # a path the user gave us: name the file, not the path
        name = os.path.basename(str(exc.filename or "")) or "a file"
        return [Diagnostic(code="IO_ERROR", message=f"{exc.strerror or exc} ({name})")], 1
    if os.environ.get("AIRA_DEBUG") == "1":
        raise exc  # the traceback, for whoever debugs the bug
    message = (
        f"{type(exc).__name__}: {exc} (this is a bug in aira; AIRA_DEBUG=1 shows the traceback)"
    )
    return [Diagnostic(code="INTERNAL_ERROR", message=message)], 2


def _is_click_error(exc: Exception) -> bool:
    """A usage error from typer's parser: click's ClickException, which typer >= 0.2x
    vendors under its own TyperException."""
    bases = [getattr(typer, "TyperException", None)]
    try:
        import click

        bases.append(click.ClickException)
    except ImportError:
        pass
    return isinstance(exc, tuple(b for b in bases if b is not None))


def _error_json(diagnostics: list[Any]) -> str:
    """``{"error": Diagnostic}`` (with ``"errors"``: all of them, when there are several)."""
    from aira_core.diagnostics import AiraError

    wire = [d.model_dump(mode="json", exclude_none=True) for d in diagnostics]
    try:
        return _json_text({"error": wire[0], **({"errors": wire} if len(wire) > 1 else {})})
    except AiraError:  # a kernel's expected/actual JSON cannot hold: code and message still can
        return _json_text({"error": {k: wire[0][k] for k in ("code", "message", "severity")}})


def _report_envelope(envelope: Any, *, as_json: bool) -> None:
    """Print a write's envelope; exit 1 unless it succeeded."""
    if as_json:
        _print_json(envelope.to_wire())
    else:
        from rich.markup import escape

        from aira_core.diagnostics import redact

        console = _console()
        console.print(escape(f"{envelope.status}: {envelope.observed_revision}"), soft_wrap=True)
        for key in ("stage", "failedStep", "rev", "published"):
            if envelope.data.get(key):
                line = redact(f"  {key}: {envelope.data[key]}")
                console.print(escape(line), soft_wrap=True)
        _print_diagnostics(envelope.diagnostics)
    if envelope.status != "success":
        raise typer.Exit(1)
