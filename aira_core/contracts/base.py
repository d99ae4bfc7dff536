"""The base of every wire model: camelCase on the wire, unknown fields refused, immutable."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from aira_core.canonical import CanonicalJSONError, canonical_bytes


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        # NaN and the infinities have no JSON form: a float field refuses them on the way in
        # rather than turning into null on the way out.
        allow_inf_nan=False,
        # A command uses a few of the hundred wire models: each builds its validator on first
        # use, not when its module is imported (that was most of a warm command's start).
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON value of this model as it goes over the wire (and into hashes)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


MAX_VALUE_DEPTH = 32
"""How deeply a free JSON value (an argument, a literal) may nest; CAD arguments need a few
levels, and a bound keeps every reader (pydantic, json, SQLite) far from its recursion limit."""


def json_value(value: Any) -> Any:
    """``value`` if it is plain JSON that canonicalises exactly (what every hash and every
    stored record needs): no NaN or infinity, no integer a double cannot hold, no lone
    surrogate, no other Python type, at most :data:`MAX_VALUE_DEPTH` levels deep."""
    try:
        canonical_bytes(value, max_depth=MAX_VALUE_DEPTH)
    except CanonicalJSONError as exc:
        raise PydanticCustomError(
            "json_value", "not plain JSON: {reason}", {"reason": str(exc)}
        ) from None
    return value


JsonValue = Annotated[Any, AfterValidator(json_value)]
"""Any JSON value that has canonical bytes (see :func:`json_value`)."""

JsonObject = Annotated[dict[str, Any], AfterValidator(json_value)]
"""A JSON object of such values: the arguments of a step, an assertion or an example."""

SEMVER_PATTERN = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$"
SemVer = Annotated[str, Field(pattern=SEMVER_PATTERN, examples=["1.0.0"])]
"""An exact version ``MAJOR.MINOR.PATCH``."""

DIAGNOSTIC_CODE_PATTERN = r"^[A-Z][A-Z0-9_]*$"
DiagnosticCode = Annotated[str, Field(pattern=DIAGNOSTIC_CODE_PATTERN)]


def semver_key(version: str) -> tuple[int, int, int]:
    """Sort key for an exact ``MAJOR.MINOR.PATCH`` version."""
    major, minor, patch = version.split(".")
    return int(major), int(minor), int(patch)
