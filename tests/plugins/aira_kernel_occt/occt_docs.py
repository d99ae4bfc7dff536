"""Building AMIR wire documents for the OCCT geometry tests, and reading what the worker's
geometry answers (shared by the test modules)."""

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


def assertion(validator: str, target: str, args: dict[str, Any]) -> dict[str, Any]:
    """One acceptance assertion ``a1`` of ``validate.<validator>@1.0.0`` on body ``target``."""
    return {
        "id": "a1",
        "validatorRef": f"validate.{validator}@1.0.0",
        "target": target,
        "args": args,
    }


def evaluate(document: dict[str, Any], cache: dict[str, Any] | None = None) -> dict[str, Any]:
    """The worker's evaluation of ``document`` (in this process), on a fresh or given cache."""
    from aira_kernel_occt import geometry

    return geometry.evaluate(document, None, {} if cache is None else cache)


def codes(result: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(d["code"], d.get("subject")) for d in result["diagnostics"]]


def body(result: dict[str, Any], name: str = "b") -> dict[str, Any]:
    """The measures of body ``name`` of a clean evaluation whose body is a valid solid."""
    assert result["diagnostics"] == []
    out = result["bodies"][name]
    assert out["valid"] is True
    return out
