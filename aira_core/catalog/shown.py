"""What a model is shown of a search: a ``catalog.search`` response in its compact form.

The full response (``SearchResponse.to_wire()``) stays what programs read (``aira catalog
search --json``, the trace, the ledger); a model reads this one, over MCP
(:mod:`aira_core.mcp.observation`) and in the step host's results (:mod:`aira_core.step.loop`),
the same form in both. A hit keeps what a model decides on: its id, kind, title, summary,
relevance, the part clause it answers (a whole-part search), and anything unusual: a risk
above low, a destructive operation, an authorization other than allowed, a runtime
applicability other than applicable (with their reasons). A hit without a kind is an
authoring operation (as a signature without ``:kind``), and its relevance has two places
(a model ranks by it; the third and fourth place are noise). It leaves out what repeats the id
(``profileVersion``, ``operationVersion``, ``handle``), the types a signature states, the
cost and quality classes, and the match evidence (``whyMatched``, for people tuning search).
The response leaves out the echo of the normalized intent, the catalog snapshot and the
embedder's name (programs pin those), empty and zero fields.

A contract's inputs share grammars: every selection input spells out the selection grammar
(filters, CadQuery selectors, examples), 3 KB each. :func:`shared_grammars` finds them in
a catalog (a typed property's structure that several inputs have, with the sentences their
descriptions end with), and :func:`referenced` replaces one in a property by
``{"$ref": "grammar:<name>"}`` and the property's own sentences; the host states each
grammar in full once (:func:`compact_contracts`; MCP: once per server, in the first describe
that uses it, and as a resource; the step host: once per round, in its log).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aira_core.canonical import sha256_hex

_PART = "part:"


def compact_hit(hit: Mapping[str, Any]) -> dict[str, Any]:
    """One L1 hit (wire form) as a model is shown it (see the module)."""
    out: dict[str, Any] = {k: hit[k] for k in ("capabilityId", "title", "summary") if k in hit}
    if hit.get("kind") not in (None, "authoring.operation"):
        out["kind"] = hit["kind"]
    if isinstance(hit.get("retrievalRelevance"), int | float):
        out["relevance"] = round(hit["retrievalRelevance"], 2)
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


# -- contracts: shared grammars stated once ---------------------------------------------------

MIN_SHARED_CHARS = 200
"""The least text of a grammar that properties share for it to be stated once."""


@dataclass(frozen=True)
class Grammar:
    """A schema that several capabilities' inputs share (a selection): its structure and the
    text all their descriptions end with. ``name``: ``<type>-<12 hex of its content>``."""

    name: str
    schema: dict[str, Any]

    @property
    def text(self) -> str:
        return str(self.schema.get("description", ""))


def _structure(prop: Mapping[str, Any]) -> str:
    return sha256_hex({k: v for k, v in prop.items() if k != "description"})


def shared_grammars(input_schemas: Iterable[Mapping[str, Any]]) -> dict[str, Grammar]:
    """The grammars of a catalog's input schemas, by the hash of their structure: a typed
    property (``x-amir-type``) whose structure two or more properties have and whose
    descriptions end with the same sentences (at least :data:`MIN_SHARED_CHARS`), such as
    the selection grammar every Selection input spells out."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for schema in input_schemas:
        for prop in (schema.get("properties") or {}).values():
            if (
                isinstance(prop, Mapping)
                and isinstance(prop.get("x-amir-type"), str)
                and isinstance(prop.get("description"), str)
            ):
                groups.setdefault(_structure(prop), []).append(prop)
    out: dict[str, Grammar] = {}
    for key, props in groups.items():
        if len(props) < 2:
            continue
        texts = [str(p["description"]) for p in props]
        # the texts' common ending, character by character (what commonprefix does)
        shared = os.path.commonprefix([t[::-1] for t in texts])[::-1]  # noqa: RUF071
        start = shared.find(". ")  # from a sentence's beginning
        shared = shared[start + 2 :] if start >= 0 else shared
        if len(shared) < MIN_SHARED_CHARS:
            continue
        schema = {
            **{k: v for k, v in props[0].items() if k != "description"},
            "description": shared,
        }
        name = f"{str(props[0]['x-amir-type']).lower()}-{sha256_hex(schema)[:12]}"
        out[key] = Grammar(name, schema)
    return out


def referenced(prop: Any, grammars: Mapping[str, Grammar]) -> tuple[Any, Grammar | None]:
    """A property schema with a shared grammar replaced by a reference to it
    (``{"$ref": "grammar:<name>", "description": <its own sentences>}``), and the grammar;
    a property of another structure whose description ends with a grammar's text (a
    query's selector input quoting the selection grammar) keeps its schema and refers to
    the text instead. ``(prop, None)`` for one that has none."""
    if not isinstance(prop, Mapping) or not isinstance(prop.get("description"), str):
        return prop, None
    text = prop["description"]
    grammar = grammars.get(_structure(prop)) if "x-amir-type" in prop else None
    if grammar is not None and text.endswith(grammar.text):
        own = text[: -len(grammar.text)].strip()
        out: dict[str, Any] = {"$ref": f"grammar:{grammar.name}"}
        if own:
            out["description"] = own
        return out, grammar
    for grammar in grammars.values():
        if text.endswith(grammar.text):
            own = text[: -len(grammar.text)].strip()
            return {**prop, "description": f"{own} (the rest: grammar:{grammar.name})"}, grammar
    return prop, None


_CONTRACT_DROPPED = frozenset(
    {"profileVersion", "operationRef", "queryRef", "contractHash", "inputTypes", "execution"}
)


def compact_contract(contract: Mapping[str, Any]) -> dict[str, Any]:
    """An L2 contract as a model is shown it: what it writes a step by and what can go
    wrong, without what repeats the id (the profile version, the operation or query ref),
    what its input schema's types say again (``inputTypes``), what only programs use (the
    hash, the execution classes, the schema's ``$schema`` and ``title``, an output schema
    that says no more than its types), the kernel's own failure codes (``KERNEL_*``, the
    same for every operation), empty fields, and a risk, purity or cost that is the usual
    one (low and reversible, pure, interactive)."""
    out: dict[str, Any] = {}
    for key, value in contract.items():
        if key in _CONTRACT_DROPPED or value in (None, [], {}):
            continue
        if key == "inputSchema" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k not in ("$schema", "title")}
        elif key == "outputSchema" and isinstance(value, Mapping):
            if set(value) <= {"type", "title"}:
                continue
        elif key == "diagnostics" and isinstance(value, list):
            value = [c for c in value if not str(c).startswith("KERNEL_")]
        elif key == "applicability" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if v not in (None, [], {})}
        elif key == "risk" and isinstance(value, Mapping):
            if value.get("level") == "low" and not value.get("destructive"):
                continue
        elif key == "purity" and value == "pure":
            continue
        if value not in (None, [], {}):
            out[key] = value
    cost = (contract.get("execution") or {}).get("costClass")
    if cost not in (None, "interactive"):
        out["costClass"] = cost
    return out


def failed_step_shown(data: Mapping[str, Any]) -> dict[str, Any]:
    """A refused plan's data as a model is shown it: the failed step by its one-line
    signature (``stepSignature``), its input schema (``stepSchema``) only when there is no
    signature (beside one it would state the same inputs again; a describe shows it)."""
    if data.get("stepSignature"):
        return {k: v for k, v in data.items() if k != "stepSchema"}
    return dict(data)


def compact_contracts(
    data: Mapping[str, Any], grammars: Mapping[str, Grammar], stated: set[str]
) -> dict[str, Any]:
    """A describe's data (``contract``, or ``contracts``: id → entry holding ``contract``),
    each contract in its compact form (:func:`compact_contract`), with every shared grammar
    its input properties use referenced (:func:`referenced`).
    A grammar not in ``stated`` yet is stated in full in ``grammars`` of this data and added
    to ``stated`` (the caller keeps that set for as long as the model keeps what it read)."""
    new: dict[str, Any] = {}

    def compact(entry: Any) -> Any:
        contract = entry.get("contract") if isinstance(entry, Mapping) else None
        schema = contract.get("inputSchema") if isinstance(contract, Mapping) else None
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        if not isinstance(props, Mapping):
            if isinstance(contract, Mapping):
                return {**entry, "contract": compact_contract(contract)}
            return entry
        out = {}
        for name, prop in props.items():
            out[name], grammar = referenced(prop, grammars)
            if grammar is not None and grammar.name not in stated:
                stated.add(grammar.name)
                new[grammar.name] = grammar.schema
        schema = {**schema, "properties": out}
        return {**entry, "contract": compact_contract({**contract, "inputSchema": schema})}

    if isinstance(data.get("contracts"), Mapping):
        result = {**data, "contracts": {cap: compact(e) for cap, e in data["contracts"].items()}}
    else:
        result = compact(dict(data))
    if new:
        result["grammars"] = new
    return result
