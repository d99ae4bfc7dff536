"""The base of every wire model: camelCase on the wire, unknown fields refused, immutable."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON value of this model as it goes over the wire (and into hashes)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


SEMVER_PATTERN = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$"
SemVer = Annotated[str, Field(pattern=SEMVER_PATTERN, examples=["1.0.0"])]
"""An exact version ``MAJOR.MINOR.PATCH``."""

DIAGNOSTIC_CODE_PATTERN = r"^[A-Z][A-Z0-9_]*$"
DiagnosticCode = Annotated[str, Field(pattern=DIAGNOSTIC_CODE_PATTERN)]


def semver_key(version: str) -> tuple[int, int, int]:
    """Sort key for an exact ``MAJOR.MINOR.PATCH`` version."""
    major, minor, patch = version.split(".")
    return int(major), int(minor), int(patch)
