"""What a tool result shows the model: the observation envelope in its compact form.

A client hands a tool result's content to its model, so the content is sized for a model:
one JSON object, sent once. The envelope's fields that only a program needs, or that repeat
another field, are left out:

- ``requestId`` (the caller sent it) and ``budgets.consumed`` (the trace resource has it);
- ``status`` when it is ``success``: the result is not an error and carries its data (every
  other status, ``partial`` included, is stated, and a refusal starts with it);
- ``null``, empty lists and empty objects (``effectsObserved: []``, ``terminal: null``);
- a refusal's ``data.rejection`` (the first diagnostic's code) and ``completedPrefix`` (the
  trace resource), and ``data.nextOperation``, which becomes the first of ``nextActions``;
- a model summary's block digests (for programs that cache pages), its zero counts and
  zero ``…Omitted`` counts; its ``aliases`` table becomes ``handles``, the handles alone (a
  model writes handles; the entity ids they stand for are for programs, in the resource);
- ``data.planId`` (a model never sends it back: nothing takes a plan id);
- a search's hits in their compact form (:mod:`aira_core.catalog.shown`, which the step
  host shows too);
- a failed step's ``data.stepSchema`` (its input schema) beside its ``stepSignature``, the
  same inputs in one line (``catalog_describe`` gives the schema);
- ``observedRevision`` when ``data.rev`` (or the summary's ``rev``) already says it, a
  diagnostic's ``severity`` when it is ``error``, and the effect ``commit:task/…`` beside
  ``data.state: committed`` (a task commits to its own branch only; ``publish:main`` stays);
- a number's trailing ``.0`` (``30.0`` is ``30``: the same value, shorter);
- ``artifacts``: the exports of one part are one URI template and its formats
  (``{"uriTemplate": "aira://tasks/…/part.{format}", "formats": ["step", …]}``);
- ``nextActions`` name tools, not meta-operations (``model_commit``, not ``model.commit``):
  a plain action is the tool's name, an action with arguments or a reason is an object
  ``{"tool", "capability"?, "args"?, "reason"?}``, and actions specific to the refusal come
  before the operations the state merely allows. The four tools legal in every state of a
  live task (interface_manifest, catalog_search, catalog_describe, model_read) are not
  listed unless an action names them specifically.

The full envelope stays what the runtime traces and what :mod:`aira_core.mcp.engine` works
with; nothing in the compact form is new information.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aira_core.catalog.shown import compact_search, failed_step_shown
from aira_core.mcp.tools import tool_name
from aira_core.model.blocks import shown_summary

_DROPPED_DATA = frozenset({"completedPrefix", "nextOperation", "planId"})
_ALWAYS = frozenset({"interface_manifest", "catalog_search", "catalog_describe", "model_read"})
"""Tools legal in every state of a live task: not repeated as next actions."""


def _present(value: Any) -> bool:
    return value is not None and value != [] and value != {}


def _diagnostic(d: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in d.items() if _present(v)}
    if out.get("severity") == "error":
        out.pop("severity")
    return out


def _actions(wire: Mapping[str, Any]) -> list[Any]:
    """Specific actions first (with their arguments), then the tools the state allows."""
    specific: list[dict[str, Any]] = []
    plain: list[str] = []
    first = (wire.get("data") or {}).get("nextOperation")
    for action in wire.get("nextActions") or []:
        tool = tool_name(str(action.get("operation", "")))
        detail = {k: action[k] for k in ("capability", "args", "reason") if _present(action.get(k))}
        if detail:
            item = {"tool": tool, **detail}
            if item not in specific:
                specific.append(item)
        elif tool not in plain and tool not in _ALWAYS:
            plain.append(tool)
    if isinstance(first, str):
        tool = tool_name(first)
        if not any(s["tool"] == tool for s in specific):
            plain = [tool, *(p for p in plain if p != tool)]
    return [*specific, *plain]


def _artifacts(artifacts: list[Any]) -> Any:
    """One URI template for the exports of one part (``…/part.{format}`` and the formats),
    else the URIs."""
    uris = [a["uri"] for a in artifacts if isinstance(a, Mapping) and isinstance(a.get("uri"), str)]
    bases = {u.rsplit(".", 1)[0] for u in uris}
    if len(uris) > 1 and len(bases) == 1 and all("." in u for u in uris):
        return {
            "uriTemplate": bases.pop() + ".{format}",
            "formats": [u.rsplit(".", 1)[1] for u in uris],
        }
    return uris


def compact(wire: Mapping[str, Any]) -> dict[str, Any]:
    """The compact form of an envelope's wire form (see the module's docstring)."""
    out: dict[str, Any] = {} if wire.get("status") == "success" else {"status": wire.get("status")}
    diagnostics = [_diagnostic(d) for d in wire.get("diagnostics") or []]
    if diagnostics:
        out["diagnostics"] = diagnostics
    data = {
        k: v for k, v in (wire.get("data") or {}).items() if k not in _DROPPED_DATA and _present(v)
    }
    if isinstance(data.get("hits"), list):  # a search: the model's form of it
        data = compact_search(data)
    if diagnostics and data.get("rejection") == diagnostics[0].get("code"):
        data.pop("rejection")
    data = failed_step_shown(data)
    if isinstance(data.get("summary"), Mapping):
        data["summary"] = shown_summary(data["summary"])
    if data:
        out["data"] = data
    observed = wire.get("observedRevision")
    summary_rev = data["summary"].get("rev") if isinstance(data.get("summary"), Mapping) else None
    if observed and observed not in (data.get("rev"), summary_rev):
        out["observedRevision"] = observed
    effects = list(wire.get("effectsObserved") or [])
    if data.get("state") == "committed":
        effects = [e for e in effects if not str(e).startswith("commit:task/")]
    if effects:
        out["effectsObserved"] = effects
    if _present(wire.get("certificateSummary")):
        out["certificateSummary"] = wire["certificateSummary"]
    artifacts = _artifacts(wire.get("artifacts") or [])
    if artifacts:
        out["artifacts"] = artifacts
    remaining = (wire.get("budgets") or {}).get("remaining")
    if _present(remaining):
        out["budgets"] = {"remaining": remaining}
    actions = _actions(wire)
    if actions:
        out["nextActions"] = actions
    return _short_numbers(out)


def _short_numbers(value: Any) -> Any:
    """Integral floats as integers (``30.0`` → ``30``); booleans and everything else as is."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, Mapping):
        return {k: _short_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short_numbers(v) for v in value]
    return value
