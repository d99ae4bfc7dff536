"""Task suites (aira_core/eval): the bundled suite's shape, every bad suite file refused with
a code and its place, and a part's measures scored check by check. The references built on
the real kernel: tests/plugins/aira_kernel_occt/test_occt_eval.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runner import RunAira

from aira_core.diagnostics import AiraError
from aira_core.eval.checks import Measures, passed, score
from aira_core.eval.measure import measure
from aira_core.eval.suite import (
    EVAL_SUITE_INVALID,
    EVAL_SUITE_UNKNOWN,
    Checks,
    bundled_names,
    load_suite,
)
from aira_core.extensions import QueryResult


def test_the_bundled_suite_covers_the_kinds_of_part_it_promises() -> None:
    suite = load_suite("basic")
    assert "basic" in bundled_names()
    assert len(suite.tasks) >= 30
    tags = {tag for task in suite.tasks for tag in task.tags}
    wanted = {"plate", "holes", "bracket", "shaft", "flange", "enclosure", "pocket", "loft"}
    assert wanted | {"sweep", "thread", "fillet", "chamfer", "revolve", "pattern"} <= tags
    for task in suite.tasks:
        assert task.reference is not None, task.id  # every check shown satisfiable
        assert task.checks.volume is not None and task.checks.bounding_box is not None, task.id
    with_forms = [t for t in suite.tasks if t.reference and t.reference.closed_form]
    assert len(with_forms) >= 30
    for task in with_forms:  # the checked value is the closed form's
        assert task.reference and task.reference.closed_form
        form = task.reference.closed_form.volume
        assert task.checks.volume and abs(task.checks.volume.value - form) <= 1e-3 * form


def suite_file(tmp_path: Path, value: Any, raw: str | None = None) -> Path:
    path = tmp_path / "suite.json"
    path.write_text(raw if raw is not None else json.dumps(value))
    return path


GOOD_TASK = {
    "id": "plate",
    "text": "a 10 mm cube",
    "checks": {"volume": {"value": 1000}, "boundingBox": {"size": [10, 10, 10]}},
}


@pytest.mark.parametrize(
    ("value", "raw", "said"),
    [
        (None, "{not json", "suite.json"),
        (None, '{"format": "aira.eval-suite/1", "format": "x"}', "duplicate"),
        ({"format": "aira.eval-suite/9", "name": "x", "tasks": [GOOD_TASK]}, None, "format"),
        ({"format": "aira.eval-suite/1", "name": "x", "tasks": []}, None, "/tasks"),
        (
            {"format": "aira.eval-suite/1", "name": "x", "tasks": [GOOD_TASK, GOOD_TASK]},
            None,
            "appears twice",
        ),
        (
            {
                "format": "aira.eval-suite/1",
                "name": "x",
                "tasks": [{**GOOD_TASK, "checks": {"volume": {"value": -1}}}],
            },
            None,
            "/tasks/0/checks/volume/value",
        ),
        (
            {"format": "aira.eval-suite/1", "name": "x", "tasks": [{**GOOD_TASK, "id": "A B"}]},
            None,
            "/tasks/0/id",
        ),
        (
            {
                "format": "aira.eval-suite/1",
                "name": "x",
                "tasks": [{**GOOD_TASK, "checks": {"colour": "red"}}],
            },
            None,
            "colour",
        ),
        (
            {
                "format": "aira.eval-suite/1",
                "name": "x",
                "tasks": [{**GOOD_TASK, "reference": {"steps": [{"id": "s"}]}}],
            },
            None,
            "/tasks/0/reference/steps/0/capability",
        ),
        ([1, 2], None, "suite"),
    ],
    ids=[
        "not-json",
        "duplicate-key",
        "format",
        "no-tasks",
        "twice",
        "negative",
        "bad-id",
        "unknown-check",
        "bad-step",
        "not-object",
    ],
)
def test_a_bad_suite_is_refused_naming_the_first_problem(
    tmp_path: Path, value: Any, raw: str | None, said: str
) -> None:
    with pytest.raises(AiraError) as caught:
        load_suite(suite_file(tmp_path, value, raw))
    assert caught.value.code == EVAL_SUITE_INVALID
    assert said in caught.value.diagnostic.message
    assert str(tmp_path) not in caught.value.diagnostic.message


def test_an_unknown_suite_names_the_bundled_ones(tmp_path: Path) -> None:
    with pytest.raises(AiraError) as caught:
        load_suite("no-such-suite")
    assert caught.value.code == EVAL_SUITE_UNKNOWN and "basic" in caught.value.diagnostic.message
    with pytest.raises(AiraError) as caught:
        load_suite(tmp_path / "missing.json")
    assert caught.value.code == EVAL_SUITE_UNKNOWN


def test_the_command_refuses_a_bad_suite_with_its_code(aira: RunAira, tmp_path: Path) -> None:
    path = suite_file(tmp_path, {"format": "aira.eval-suite/1", "name": "x", "tasks": []})
    out = aira("eval", "verify", str(path), "--json")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert json.loads(out.stdout)["error"]["code"] == EVAL_SUITE_INVALID
    good = suite_file(tmp_path, {"format": "aira.eval-suite/1", "name": "x", "tasks": [GOOD_TASK]})
    out = aira("eval", "verify", str(good), "--task", "nope", "--json")
    assert json.loads(out.stdout)["error"]["code"] == EVAL_SUITE_INVALID
    assert "nope" in json.loads(out.stdout)["error"]["message"]


CHECKS = Checks.model_validate(
    {
        "volume": {"value": 1000, "relTol": 0.02},
        "boundingBox": {"size": [10, 20, 5], "tol": 1},
        "components": 1,
        "holes": [{"diameter": 4.5, "count": 4}],
        "fillets": [{"radius": 3, "count": 2}],
    }
)
GOOD = Measures(
    bodies=1,
    solids=1,
    watertight=True,
    volume=1010.0,
    size=(5.2, 20.5, 9.6),  # laid down another way: extents compared largest first
    cylinders={"hole:4.5": 4, "fillet:3": 2},
)


def test_a_part_that_meets_every_check_passes() -> None:
    outcomes = score(CHECKS, GOOD)
    assert [o.check for o in outcomes] == [
        "watertight",
        "components",
        "volume",
        "boundingBox",
        "hole:4.5",
        "fillet:3",
    ]
    assert passed(outcomes)


@pytest.mark.parametrize(
    ("change", "failing"),
    [
        ({"volume": 1030.0}, "volume"),
        ({"volume": None}, "volume"),
        ({"size": (5.0, 20.0, 11.5)}, "boundingBox"),
        ({"size": None}, "boundingBox"),
        ({"solids": 2}, "components"),
        ({"watertight": False, "problems": ("SOLID_INVALID: open shell",)}, "watertight"),
        ({"cylinders": {"hole:4.5": 3, "fillet:3": 2}}, "hole:4.5"),
        ({"cylinders": {"hole:4.5": 4}}, "fillet:3"),
    ],
)
def test_each_check_fails_alone_and_says_what_it_measured(
    change: dict[str, Any], failing: str
) -> None:
    outcomes = score(CHECKS, Measures(**{**GOOD.__dict__, **change}))
    assert [o.check for o in outcomes if not o.passed] == [failing]
    assert not passed(outcomes)
    bad = next(o for o in outcomes if not o.passed)
    assert bad.message and bad.expected is not None


def test_an_oriented_box_is_compared_axis_by_axis() -> None:
    oriented = Checks.model_validate({"boundingBox": {"size": [10, 20, 5], "oriented": True}})
    assert not passed(score(oriented, GOOD))
    assert passed(score(oriented, Measures(**{**GOOD.__dict__, "size": (10, 20, 5)})))


def test_an_empty_model_fails() -> None:
    outcomes = score(CHECKS, Measures(bodies=0, solids=0, watertight=False))
    assert not passed(outcomes) and outcomes[0].check == "part"


class FakeDocument:
    """FAKE: an AMIR document's bodies, all the measuring reads of one."""

    def __init__(self, *ids: str) -> None:
        self.bodies = [type("Body", (), {"id": i})() for i in ids]


class AnsweringKernel:
    """FAKE kernel: canned query answers per body; one body it cannot measure."""

    name = "fake"

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def query(self, document: Any, ref: str, args: dict[str, Any]) -> QueryResult:
        self.asked.append((ref, dict(args)))
        body = args["target"]
        if ref == "query.massProperties@1.0.0":
            return QueryResult({"volume": 100.0 if body == "a" else 50.0})
        if ref == "query.topology@1.0.0":
            return QueryResult({"solids": 1})
        if ref == "query.boundingBox@1.0.0":
            corners = [0, 0, 0, 10, 10, 1] if body == "a" else [5, 5, 0, 20, 12, 3]
            return QueryResult({"boundingBox": corners})
        if ref == "query.selectEntities@1.0.0":
            return QueryResult({"count": 2 if body == "a" else 1})
        raise AssertionError(ref)


def test_measures_sum_and_join_the_bodies() -> None:
    kernel = AnsweringKernel()
    checks = Checks.model_validate({"holes": [{"diameter": 4, "count": 3, "tol": 0.2}]})
    m = measure(kernel, FakeDocument("a", "b"), checks)
    assert (m.bodies, m.solids, m.watertight, m.volume) == (2, 2, True, 150.0)
    assert m.size == (20.0, 12.0, 3.0)
    assert m.cylinders == {"hole:4": 3}
    picked = [a for r, a in kernel.asked if r == "query.selectEntities@1.0.0"]
    assert picked[0]["select"] == "%CYLINDER"
    assert picked[0]["radius"] == {"min": pytest.approx(1.9), "max": pytest.approx(2.1)}


class BrokenKernel:
    """FAKE hostile kernel: raises on every query."""

    name = "broken"

    def query(self, document: Any, ref: str, args: dict[str, Any]) -> QueryResult:
        raise RuntimeError("boom /home/someone/secret")


def test_a_kernel_that_fails_leaves_the_part_unmeasured_and_failing() -> None:
    m = measure(BrokenKernel(), FakeDocument("a"), CHECKS)
    assert (m.watertight, m.volume, m.size, m.solids) == (False, None, None, 0)
    assert m.problems and all(p.startswith("KERNEL_FAILED") for p in m.problems)
    outcomes = score(CHECKS, m)
    assert not passed(outcomes)
    assert {o.check for o in outcomes if not o.passed} >= {"watertight", "volume"}
