"""Building AMIR wire documents for the OCCT geometry tests (shared by the test modules)."""

from __future__ import annotations

from typing import Any

from aira_core.contracts.amir import AmirDocument


def v(value: Any, unit: str | None = None) -> dict[str, Any]:
    return {"value": value} if unit is None else {"value": value, "unit": unit}


def node(nid: str, op: str, **inputs: Any) -> dict[str, Any]:
    return {"id": nid, "op": op, "inputs": inputs}


def doc(
    nodes: list[dict[str, Any]],
    bodies: dict[str, str],
    parameters: list[dict[str, Any]] | None = None,
    assertions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A validated AMIR document, as wire dict (what the worker receives); each body is
    labelled with its id."""
    return AmirDocument.model_validate(
        {
            "parameters": parameters or [],
            "nodes": nodes,
            "bodies": [{"id": b, "label": b, "tip": tip} for b, tip in bodies.items()],
            "assertions": assertions or [],
        }
    ).to_wire()
