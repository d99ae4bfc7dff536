"""Task suites (``aira.eval-suite/1``): what a model is asked to design, and the checks its
part must pass.

A task is a text description, the tier it runs in, and :class:`Checks` of the part: its
volume, bounding box, component count and closedness, and the features a plain volume
misses (holes by diameter, fillets by radius). A task may carry a reference: the plan that
builds it on a kernel (so the checks are shown to be satisfiable and were measured, not
guessed) and, where one exists, the closed form of its volume.

A suite is one JSON file: a bundled one by name (``aira_core/eval/suites/<name>.json``) or a
path (a vendor package may ship its own). Bad input is ``EVAL_SUITE_INVALID`` naming the
first problem and where it is; an unknown name is ``EVAL_SUITE_UNKNOWN``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from aira_core.contracts.base import WireModel
from aira_core.contracts.plan import PlanStep

SUITE_FORMAT = "aira.eval-suite/1"
EVAL_SUITE_INVALID = "EVAL_SUITE_INVALID"
EVAL_SUITE_UNKNOWN = "EVAL_SUITE_UNKNOWN"
BUNDLED = Path(__file__).parent / "suites"
"""The suites that ship with Aira, one ``<name>.json`` each."""

Positive = Annotated[float, Field(gt=0)]


class VolumeCheck(WireModel):
    """The part's volume (mm³, every body's summed) within ``relTol`` of ``value``."""

    value: Positive
    rel_tol: float = Field(0.02, gt=0, lt=1)


class BoxCheck(WireModel):
    """The part's axis-aligned extents (mm) within ``tol`` of ``size`` on every axis;
    compared largest to largest unless ``oriented`` (a model may lay the part down)."""

    size: tuple[Positive, Positive, Positive]
    tol: float = Field(1.0, gt=0)
    oriented: bool = False


class FeatureCheck(WireModel):
    """``count`` cylindrical faces of the part whose diameter (holes) or radius (fillets)
    is within ``tol`` (mm) of the one given."""

    count: int = Field(ge=1)
    tol: float = Field(0.05, gt=0)

    def key(self) -> str:
        """The check's name in outcomes and measures: ``hole:4.5``, ``fillet:3``."""
        raise NotImplementedError

    def radii(self) -> tuple[float, float]:
        """The range of face radii (mm) the check counts."""
        raise NotImplementedError

    def said(self) -> str:
        """What is counted, for a message: ``diameter 4.5``."""
        raise NotImplementedError


class HoleCheck(FeatureCheck):
    diameter: Positive

    def key(self) -> str:
        return f"hole:{self.diameter:g}"

    def radii(self) -> tuple[float, float]:
        return self.diameter / 2 - self.tol / 2, self.diameter / 2 + self.tol / 2

    def said(self) -> str:
        return f"diameter {self.diameter:g}"


class FilletCheck(FeatureCheck):
    radius: Positive

    def key(self) -> str:
        return f"fillet:{self.radius:g}"

    def radii(self) -> tuple[float, float]:
        return self.radius - self.tol, self.radius + self.tol

    def said(self) -> str:
        return f"radius {self.radius:g}"


class Checks(WireModel):
    """What a part must be to pass its task; every check given is applied."""

    volume: VolumeCheck | None = None
    bounding_box: BoxCheck | None = None
    components: int | None = Field(1, ge=1)
    """Separate solids the part is made of."""
    watertight: bool = True
    """Every body a valid closed solid."""
    holes: tuple[HoleCheck, ...] = ()
    fillets: tuple[FilletCheck, ...] = ()

    def features(self) -> tuple[FeatureCheck, ...]:
        return (*self.holes, *self.fillets)


class ClosedForm(WireModel):
    """The volume worked out by hand: what the kernel's measure is checked against."""

    volume: Positive
    formula: str = Field(min_length=1, max_length=500)


class Reference(WireModel):
    """How the part is built on a kernel: a plan's steps (on an empty model)."""

    steps: list[PlanStep] = Field(min_length=1)
    closed_form: ClosedForm | None = None


TaskId = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")]


class EvalTask(WireModel):
    id: TaskId
    text: str = Field(min_length=1, max_length=2000)
    """The design task as a user would write it."""
    tier: Literal["T32", "T128", "T200"] = "T128"
    checks: Checks
    reference: Reference | None = None
    tags: tuple[str, ...] = ()
    """What the task exercises (``holes``, ``fillet``, ``revolve``, ``thread`` …)."""


class Suite(WireModel):
    format: Literal["aira.eval-suite/1"]
    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    tasks: list[EvalTask] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Suite:
        seen: set[str] = set()
        for task in self.tasks:
            if task.id in seen:
                raise ValueError(f"task id {task.id!r} appears twice")
            seen.add(task.id)
        return self

    def task(self, task_id: str) -> EvalTask:
        return next(t for t in self.tasks if t.id == task_id)


def bundled_names() -> list[str]:
    return sorted(p.stem for p in BUNDLED.glob("*.json"))


def load_suite(name_or_path: str | Path) -> Suite:
    """The suite a bundled name or a file path names, checked."""
    from pydantic import ValidationError

    from aira_core.canonical import StrictJSONError, loads_strict
    from aira_core.diagnostics import AiraError
    from aira_core.inputs import read_input

    raw = str(name_or_path)
    bundled = BUNDLED / f"{raw}.json"
    if "/" not in raw and not raw.endswith(".json") and raw in bundled_names():
        path = bundled
    else:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise AiraError(
                EVAL_SUITE_UNKNOWN,
                f"no suite {raw!r}: give a bundled one ({', '.join(bundled_names())}) or a "
                "path to an aira.eval-suite/1 file",
            )
    data = read_input(path, "json", what="eval suite")
    try:
        value: Any = loads_strict(data, path.name)[0]
    except StrictJSONError as exc:
        raise AiraError(EVAL_SUITE_INVALID, str(exc)) from None
    if isinstance(value, dict) and value.get("format") != SUITE_FORMAT:
        raise AiraError(
            EVAL_SUITE_INVALID,
            f"{path.name}: format must be {SUITE_FORMAT!r}, not {value.get('format')!r}",
        )
    try:
        return Suite.model_validate(value, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = "/".join(str(p) for p in first["loc"])
        raise AiraError(
            EVAL_SUITE_INVALID,
            f"{path.name}: {first['msg']} at /{where} ({exc.error_count()} errors)",
        ) from None
