"""What a model is shown of a search: a ``catalog.search`` response in its compact form.

The full response (``SearchResponse.to_wire()``) stays what programs read (``aira catalog
search --json``, the trace, the ledger); a model reads this one, over MCP
(:mod:`aira_core.mcp.observation`) and in the step host's results (:mod:`aira_core.step.loop`),
the same form in both. A hit keeps what a model decides on: its id, kind, title, summary,
relevance, the part clause it answers (a whole-part search), and anything unusual: a risk
above low, a destructive operation, an authorization other than allowed, a runtime
applicability other than applicable (with their reasons). It leaves out what repeats the id
(``profileVersion``, ``operationVersion``, ``handle``), the types a signature states, the
cost and quality classes, and the match evidence (``whyMatched``, for people tuning search).
The response leaves out the echo of the normalized intent, the catalog snapshot and the
embedder's name (programs pin those), empty and zero fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_PART = "part:"


def compact_hit(hit: Mapping[str, Any]) -> dict[str, Any]:
    """One L1 hit (wire form) as a model is shown it (see the module)."""
    out: dict[str, Any] = {
        k: hit[k] for k in ("capabilityId", "kind", "title", "summary") if k in hit
    }
    if "retrievalRelevance" in hit:
        out["relevance"] = hit["retrievalRelevance"]
    clause = next(
        (w[len(_PART) :] for w in hit.get("whyMatched") or [] if w.startswith(_PART)), None
    )
    if clause:
        out["for"] = clause
    if hit.get("risk") not in (None, "low"):
        out["risk"] = hit["risk"]
    if hit.get("destructive"):
        out["destructive"] = True
    if hit.get("authorization") not in (None, "allowed"):
        out["authorization"] = hit["authorization"]
        if hit.get("authorizationReasons"):
            out["authorizationReasons"] = hit["authorizationReasons"]
    if hit.get("runtimeApplicability") not in (None, "applicable"):
        out["runtimeApplicability"] = hit["runtimeApplicability"]
        if hit.get("unmetPreconditions"):
            out["unmetPreconditions"] = hit["unmetPreconditions"]
    return out


def compact_search(data: Mapping[str, Any]) -> dict[str, Any]:
    """A search response's wire form (or an envelope's data holding one) as a model is
    shown it: compact hits (:func:`compact_hit`), without the intent's echo, the snapshot
    and the embedder, and without empty or zero fields."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("intent", "catalogSnapshot", "embedder"):
            continue
        if key == "hits":
            out["hits"] = [compact_hit(h) for h in value]
        elif key == "sufficiency" and isinstance(value, Mapping):
            shown = {k: v for k, v in value.items() if v not in (None, [], {}, False)}
            if shown:
                out["sufficiency"] = shown
        elif key == "filtered" and isinstance(value, Mapping):
            if any(value.values()):
                out["filtered"] = {k: v for k, v in value.items() if v}
        elif value not in (None, [], {}) and not (key == "truncated" and value is False):
            out[key] = value
    return out
