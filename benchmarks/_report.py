"""What every benchmark script's ``main`` shares, so that each says only what is its own:

- its parser: the docstring's first line as the description, ``--json`` added after the
  script's own options;
- :class:`BenchmarkError`, raised when a script cannot measure (a missed target is reported,
  not raised);
- the end of a run: the result as one JSON object (``--json``) or the script's own report,
  exit 0; ``error: …`` on stderr, exit 2, when it could not measure; ``skipped: …``, exit 0,
  when this environment cannot run it;
- :func:`verdict`, the words a report gives a target.

Not a benchmark (no ``bench_`` prefix, so tests/test_benchmarks_run.py does not expect a run of
it): the scripts import it as a sibling. ``benchmarks/`` is on ``sys.path`` when one runs as
``python benchmarks/bench_x.py``; a script a test loads by its path, or one in a subfolder,
puts it there itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any


class BenchmarkError(RuntimeError):
    """The benchmark could not measure what it should (a command or the server failed, a call
    was refused): not a missed target."""


def script_parser(doc: str | None) -> argparse.ArgumentParser:
    """A script's parser, described by the first line of its docstring ``doc``."""
    return argparse.ArgumentParser(description=(doc or "").splitlines()[0])


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed, with ``--json`` added after the script's own options."""
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser.parse_args(argv)


def show(
    result: Any, print_report: Callable[[Any], None], *, as_json: bool, ensure_ascii: bool = True
) -> None:
    """``result`` as one indented JSON object, or as ``print_report`` prints it."""
    if as_json:
        print(json.dumps(result, indent=2, ensure_ascii=ensure_ascii))
    else:
        print_report(result)


def report_run(
    measure: Callable[[], Any],
    print_report: Callable[[Any], None],
    *,
    as_json: bool,
    errors: tuple[type[Exception], ...] = (),
    ensure_ascii: bool = True,
) -> int:
    """The exit code of a run: ``measure()`` shown (:func:`show`), 0; a
    :class:`BenchmarkError` (or one of ``errors``) is ``error: …`` on stderr, 2."""
    try:
        result = measure()
    except (BenchmarkError, *errors) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    show(result, print_report, as_json=as_json, ensure_ascii=ensure_ascii)
    return 0


def verdict(met: bool | None) -> str:
    """How a report says whether a target was met (``None``: it was not measured)."""
    return "not measured" if met is None else ("target met" if met else "TARGET MISSED")


def skip(reason: str, *, as_json: bool, hint: str = "") -> int:
    """A benchmark this environment cannot run (a missing dependency): said, exit 0."""
    print(json.dumps({"skipped": reason}) if as_json else f"skipped: {reason}{hint}")
    return 0
