"""The run report as one self-contained HTML page: inline CSS and inline SVG, no script, no
external reference of any kind, so it opens offline in any browser from the file.

Every text that came from a model, a user, a script or the trajectory is redacted (as every
output of Aira is) and HTML-escaped: a note that says ``<script>`` shows as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from aira_core.report.reader import RunData

BAR = "#2a9d8f"
"""The chart's prompt bars (teal): the colour a screenshot test finds the chart by."""
BAR_REJECTED = "#e76f51"
BUDGET = "#d62828"
ROUND = "#8d99ae"
MESSAGE_CHARS = 240
"""The longest result message a table cell shows."""

CSS = """
:root{color-scheme:light;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
body{margin:0;background:#f6f7f9;color:#1d232b}
header{background:#263238;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:22px}
header p{margin:2px 0;opacity:.9}
main{padding:10px 28px 40px;max-width:1280px}
section{background:#fff;border:1px solid #dde1e6;border-radius:8px;margin:16px 0;padding:14px 18px}
h2{font-size:17px;margin:0 0 10px}
.views{display:grid;grid-template-columns:2fr 1fr 1fr;gap:12px;align-items:end;
grid-template-areas:"isometric top ." "isometric front right"}
.views figure{margin:0;border:1px solid #e4e7eb;border-radius:6px;background:#fbfcfd;padding:6px}
.views figure.iso{align-self:stretch}
#view-isometric{grid-area:isometric}#view-top{grid-area:top}#view-front{grid-area:front}
#view-right{grid-area:right}
.views svg{width:100%;height:auto;display:block;max-height:300px}
.views figure.iso svg{max-height:520px}
figcaption{font-size:12px;color:#55606e;text-align:center;margin-top:4px}
.chart svg{width:100%;height:auto;display:block}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #edf0f3;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f1f3f6;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;
word-break:break-all}
.ok{color:#1b7a43}.rejected,.failed,.error{color:#b3261e}
.card{border:1px solid #e4e7eb;border-radius:6px;padding:8px 12px;margin:8px 0}
.card h3{font-size:14px;margin:0 0 6px}
.muted{color:#66707c;font-size:13px}
.kv{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;font-size:14px}
.legend span{display:inline-block;margin-right:16px;font-size:12px}
.swatch{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
"""


def _t(value: Any) -> str:
    """``value`` as text for the page: redacted, then escaped."""
    from aira_core.diagnostics import redact

    return escape(redact(value if isinstance(value, str) else str(value)), quote=True)


def _short(text: Any, limit: int = MESSAGE_CHARS) -> str:
    text = "" if text is None else str(text)
    return _t(text if len(text) <= limit else text[: limit - 1] + "…")


def _num(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(run: RunData) -> dict[str, Any]:
    from aira_core.extensions import Usage

    end = run.end or {}
    if isinstance(end.get("usage"), Mapping):
        total = Usage.from_wire(end["usage"])
    else:
        total = sum((Usage.from_wire(s.get("usage") or {}) for s in run.steps), Usage())
    return total.summary()


def summary(run: RunData) -> dict[str, Any]:
    """The figures the page leads with (``aira report --json`` prints them)."""
    end = run.end or {}
    steps = run.steps
    budget = max((_num(s.get("budgetTokens")) for s in steps), default=0)
    return {
        "script": run.name,
        "tier": run.header.get("tier"),
        "terminal": end.get("terminal"),
        "reason": end.get("reason"),
        "head": end.get("head") or (steps[-1].get("head") if steps else None),
        "steps": len(steps),
        "rounds": len({s.get("round") for s in steps}),
        "compactions": sum(1 for i in _new_rounds(steps) if not _folded(steps[i])),
        "folds": sum(1 for i in _new_rounds(steps) if _folded(steps[i])),
        "plans": sum(1 for s in steps if s["decision"].get("act") == "plan"),
        "revisions": len([r for r in run.revisions if r.step is not None]),
        "maxPromptTokens": max((_num(s.get("promptTokens")) for s in steps), default=0),
        "budgetTokens": budget,
        "hostInputTokens": end.get("inputTokens"),
        "usage": _usage(run),
        "views": run.mesh is not None,
    }


def _new_rounds(steps: Sequence[Mapping[str, Any]]) -> list[int]:
    """The steps that start a new round: after a compaction (the log before them went into
    the ledger) or a fold (the log carried on, its settled entries in short form)."""
    return [i for i in range(1, len(steps)) if steps[i].get("round") != steps[i - 1].get("round")]


def _folded(step: Mapping[str, Any]) -> bool:
    """A round's first step after a fold: its log is not empty."""
    return _num(step.get("logBytes")) > 0


# -- the part ---------------------------------------------------------------------------------


def _views(run: RunData) -> str:
    if run.mesh is None:
        return _section("part", "The part", f'<p class="muted">{_t(run.mesh_note)}</p>')
    from aira_core.report.views import render_views

    figures = []
    for view in render_views(run.mesh):
        w, h = view.extent
        size = f"{round(w, 1):g} × {round(h, 1):g} mm"  # a tessellation's extent: to 0.1 mm
        caption = f"{view.name} — {size}" if view.name != "isometric" else "isometric"
        cls = ' class="iso"' if view.name == "isometric" else ""
        figures.append(
            f'<figure{cls} id="view-{view.name}">{view.svg}'
            f"<figcaption>{_t(caption)}</figcaption></figure>"
        )
    labels = run.revisions[-1].bodies if run.revisions else {}
    names = ", ".join(labels.get(body.name, body.name) for body in run.mesh)
    count = f"{len(run.mesh)} bod{'y' if len(run.mesh) == 1 else 'ies'}"
    return (
        '<section id="part"><h2>The part</h2><div class="views">'
        + "".join(figures)
        + f'</div><p class="muted">{count}: {_short(names, 600)}</p></section>'
    )


# -- the timeline -----------------------------------------------------------------------------


def chart(steps: Sequence[Mapping[str, Any]]) -> str:
    """Prompt tokens per step as bars against the budget B (a line), each new round marked
    as a fold or a compaction: an inline ``<svg>``."""
    width, height, left, right, top, bottom = 1200, 300, 70, 20, 24, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    n = max(len(steps), 1)
    budget = max((_num(s.get("budgetTokens")) for s in steps), default=0)
    peak = max((_num(s.get("promptTokens")) for s in steps), default=0)
    top_value = max(budget, peak, 1) * 1.08
    slot = plot_w / n
    bar = max(slot * 0.7, 1.0)

    def y(v: float) -> float:
        return top + plot_h * (1 - v / top_value)

    parts = [
        f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="prompt tokens per step '
        f'against the budget B" font-size="13" font-family="system-ui,sans-serif">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fbfcfd" '
        'stroke="#dde1e6"/>',
    ]
    for frac in (0.25, 0.5, 0.75, 1.0):  # the axis
        v = top_value / 1.08 * frac
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            'stroke="#edf0f3"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#55606e">'
            f"{_tokens(v)}</text>"
        )
    for i in _new_rounds(steps):
        x = left + slot * i
        how = "fold" if _folded(steps[i]) else "compaction"
        parts.append(
            f'<line class="round" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" '
            f'stroke="{ROUND}" stroke-dasharray="5 4" stroke-width="1.5"/>'
            f'<text x="{x + 4:.1f}" y="{top + 14}" fill="#55606e">round '
            f"{_t(steps[i].get('round'))} · {how}</text>"
        )
    for i, s in enumerate(steps):
        value = _num(s.get("promptTokens"))
        status = s["result"].get("status")
        colour = BAR if status == "ok" else BAR_REJECTED
        x = left + slot * i + (slot - bar) / 2
        act = s["decision"].get("act") or "?"
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{y(value):.1f}" width="{bar:.1f}" '
            f'height="{top + plot_h - y(value):.1f}" fill="{colour}">'
            f"<title>step {_num(s.get('step'))}: {_t(act)}, {value} of "
            f"{_num(s.get('budgetTokens'))} tokens, {_t(status)}</title></rect>"
        )
        if (s["result"].get("host") or {}).get("windowFull"):
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{y(value) - 4:.1f}" text-anchor="middle" '
                f'fill="{BUDGET}">full</text>'
            )
        if n <= 60 or i % max(n // 30, 1) == 0:
            parts.append(
                f'<text x="{left + slot * (i + 0.5):.1f}" y="{top + plot_h + 16}" '
                f'text-anchor="middle" fill="#55606e">{_num(s.get("step"))}</text>'
            )
    if budget:
        parts.append(
            f'<line class="budget" x1="{left}" x2="{left + plot_w}" y1="{y(budget):.1f}" '
            f'y2="{y(budget):.1f}" stroke="{BUDGET}" stroke-width="2.5" stroke-dasharray="10 5"/>'
            # on the left: a round's mark is never at the first step, so the two never meet
            f'<text x="{left + 6}" y="{y(budget) - 6:.1f}" text-anchor="start" '
            f'fill="{BUDGET}">B = {budget} tokens</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle" '
        'fill="#55606e">step</text></svg>'
    )
    return "".join(parts)


def _tokens(v: float) -> str:
    return f"{v / 1000:.0f}k" if v >= 1000 else f"{v:.0f}"


def _legend() -> str:
    return (
        '<p class="legend">'
        f'<span><i class="swatch" style="background:{BAR}"></i>prompt (capsule + log), ok</span>'
        f'<span><i class="swatch" style="background:{BAR_REJECTED}"></i>rejected or failed</span>'
        f'<span><i class="swatch" style="background:{BUDGET}"></i>budget B</span>'
        f'<span><i class="swatch" style="background:{ROUND}"></i>'
        "new round (fold or compaction)</span>"
        "</p>"
    )


def _result_cell(result: Mapping[str, Any]) -> str:
    status = str(result.get("status") or "?")
    extra = result.get("code") or result.get("rev") or result.get("terminal") or ""
    return f'<span class="{_t(status)}">{_t(status)}</span> <code>{_short(extra, 80)}</code>'


def _timeline(run: RunData) -> str:
    rows = []
    for s in run.steps:
        usage = s.get("usage") or {}
        result = s["result"]
        rows.append(
            "<tr>"
            f'<td class="num">{_num(s.get("step"))}</td><td class="num">{_num(s.get("round"))}</td>'
            f"<td>{_t(_act(s['decision']))}</td>"
            f'<td class="num">{_num(s.get("promptTokens"))} / {_num(s.get("budgetTokens"))}</td>'
            f"<td>{_result_cell(result)}</td>"
            f"<td>{_short(result.get('message'))}</td>"
            f'<td class="num">{_num(usage.get("inputTokens"))}</td>'
            f'<td class="num">{_num(usage.get("outputTokens"))}</td>'
            f'<td class="num">{_cost(usage.get("costUsd"))}</td>'
            "</tr>"
        )
    return (
        '<section id="timeline"><h2>Steps</h2><div class="chart">'
        + chart(run.steps)
        + "</div>"
        + _legend()
        + "<table><thead><tr><th>step</th><th>round</th><th>act</th><th>prompt / B (tok)</th>"
        "<th>result</th><th>message</th><th>in</th><th>out</th><th>USD</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


def _act(decision: Mapping[str, Any]) -> str:
    """A decision's act; a decision the host refused (its raw text kept) has none."""
    return str(decision.get("act") or ("(refused)" if "raw" in decision else "?"))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _section(name: str, title: str, inner: str) -> str:
    return f'<section id="{name}"><h2>{_t(title)}</h2>{inner}</section>'


def _cost(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, int | float) and not isinstance(value, bool) else "0"


# -- plans ------------------------------------------------------------------------------------


def _plan_steps(plan: Any) -> str:
    if not isinstance(plan, Mapping):
        return ""
    rows = []
    for step in plan.get("steps") or ():
        if isinstance(step, Mapping):
            rows.append(
                f"<tr><td><code>{_short(step.get('id'), 60)}</code></td>"
                f"<td><code>{_short(step.get('capability'), 80)}</code></td>"
                f"<td>{_short(step.get('label'), 80)}</td></tr>"
            )
    asserted = [a for a in plan.get("acceptanceAssertions") or () if isinstance(a, Mapping)]
    table = (
        "<table><thead><tr><th>id</th><th>capability</th><th>label</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        if rows
        else ""
    )
    checks = (
        '<p class="muted">acceptance assertions: '
        + ", ".join(
            f"<code>{_short(a.get('validatorRef'), 80)}</code> on {_short(a.get('target'), 60)}"
            for a in asserted
        )
        + "</p>"
        if asserted
        else ""
    )
    return table + checks


def _plans(run: RunData) -> str:
    steps = run.steps
    plans = [i for i, s in enumerate(steps) if s["decision"].get("act") == "plan"]
    if not plans:
        return _section("plans", "Plans", '<p class="muted">The task made no plan.</p>')
    cards = []
    for k, i in enumerate(plans):
        s = steps[i]
        result = s["result"]
        status = str(result.get("status") or "?")
        head = f"step {_num(s.get('step'))}: {_t(status)}"
        if result.get("rev"):
            head += f" → <code>{_short(result['rev'], 90)}</code>"
        body = [f"<p>{_short(s['decision'].get('summary'), 600)}</p>"]
        if status != "ok":
            body.append(
                '<p class="rejected">'
                + " · ".join(
                    part
                    for part in (
                        f"<code>{_short(result.get('code'), 80)}</code>"
                        if result.get("code")
                        else "",
                        f"failed step <code>{_short(result.get('failedStep'), 80)}</code>"
                        if result.get("failedStep")
                        else "",
                        _short(result.get("message"), 600),
                    )
                    if part
                )
                + "</p>"
            )
            body.append(_repair(steps, i, plans[k + 1] if k + 1 < len(plans) else None))
        body.append(_plan_steps(s["decision"].get("plan")))
        cards.append(
            f'<div class="card plan"><h3 class="{_t(status)}">Plan {k + 1}, {head}</h3>'
            + "".join(body)
            + "</div>"
        )
    return '<section id="plans"><h2>Plans</h2>' + "".join(cards) + "</section>"


def _repair(steps: Sequence[Mapping[str, Any]], i: int, following: int | None) -> str:
    """What the task did about a refused plan: the steps up to its next plan (notes, repair
    candidates, lookups) and how that plan ended."""
    end = following if following is not None else len(steps)
    items = []
    for s in steps[i + 1 : end]:
        d = s["decision"]
        act = d.get("act") or "?"
        said = d.get("note") or d.get("query") or d.get("capability") or d.get("summary") or ""
        if act == "repair" and isinstance(d.get("diagnostic"), Mapping):
            said = f"{d.get('capability')} for {d['diagnostic'].get('code')}"
        items.append(f"<li>step {_num(s.get('step'))} {_t(act)}: {_short(said, 400)}</li>")
    if following is not None:
        result = steps[following]["result"]
        items.append(
            f"<li>step {_num(steps[following].get('step'))} plan: {_result_cell(result)}</li>"
        )
    else:
        items.append("<li>no later plan</li>")
    return "<p><b>Repair</b></p><ul>" + "".join(items) + "</ul>"


# -- revisions and cost -----------------------------------------------------------------------


def _revisions(run: RunData) -> str:
    if run.store_note:
        return _section("revisions", "Revisions", f'<p class="muted">{_t(run.store_note)}</p>')
    cards = []
    before: set[str] = set()
    for r in run.revisions:
        made = f"committed by step {r.step}" if r.step is not None else "the task's start"
        names = {
            **{b: f"b:{label}" for b, label in r.bodies.items()},
            **{p["id"]: f"p:{p['label']}" for p in r.parameters},
        }
        params = ", ".join(
            f"{_t(p['label'])} = {_t(p['value'])}{(' ' + _t(p['unit'])) if p.get('unit') else ''}"
            for p in r.parameters
        )
        rows = "".join(
            f"<tr><td><code>{_short(a.get('id'), 60)}</code>"
            + (" <b>new</b>" if r.step is not None and a.get("id") not in before else "")
            + f"</td><td>{_short(a.get('label'), 120)}</td>"
            f"<td><code>{_short(a.get('validatorRef'), 80)}</code></td>"
            f"<td>{_short(names.get(a.get('target'), a.get('target')), 60)}</td>"
            f"<td><code>{_short(_args(_named(a.get('args'), names)), 200)}</code></td></tr>"
            for a in r.assertions
        )
        before = {str(a.get("id")) for a in r.assertions}
        table = (
            "<table><thead><tr><th>assertion</th><th>label</th><th>validator</th>"
            "<th>target</th><th>args</th></tr></thead><tbody>" + rows + "</tbody></table>"
            if rows
            else '<p class="muted">no assertions</p>'
        )
        cards.append(
            f'<div class="card revision"><h3><code>{_short(r.rev, 90)}</code> '
            f'<span class="muted">{_t(made)}</span></h3>'
            f'<p class="muted">bodies: {_short(", ".join(r.bodies.values()) or "none", 400)}'
            + (f"; parameters: {params}" if params else "")
            + "</p>"
            + table
            + "</div>"
        )
    note = (
        '<p class="muted">Each committed revision held its assertions on the kernel before it '
        "was committed (the write path validates, then commits).</p>"
    )
    return '<section id="revisions"><h2>Revisions</h2>' + note + "".join(cards) + "</section>"


def _named(value: Any, names: Mapping[str, str]) -> Any:
    """``value`` with references to a parameter (``{"param": id}``) or a body (its id) by
    their aliases (``p:label``, ``b:label``), as the model wrote them."""
    if isinstance(value, Mapping):
        if set(value) == {"param"} and value["param"] in names:
            return names[value["param"]]
        if set(value) == {"value"}:
            return _named(value["value"], names)
        return {k: _named(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, names) for v in value]
    if isinstance(value, str) and value in names:
        return names[value]
    return value


def _args(args: Any) -> str:
    import json

    try:
        return json.dumps(args, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(args)


def _cost_section(info: Mapping[str, Any]) -> str:
    u = info["usage"]
    share = u.get("cacheHitShare")
    rows = [
        ("host-metered prompt tokens (all steps)", info.get("hostInputTokens")),
        ("largest prompt / B", f"{info['maxPromptTokens']} / {info['budgetTokens']}"),
        ("provider input tokens", u.get("inputTokens")),
        ("of them from the provider's cache", "n/a" if share is None else f"{share:.0%}"),
        ("output tokens (reasoning)", f"{u.get('outputTokens')} ({u.get('reasoningTokens')})"),
        ("cost", f"${_cost(u.get('costUsd'))}"),
    ]
    return (
        '<section id="cost"><h2>Tokens and cost</h2><div class="kv">'
        + "".join(f"<div>{_t(k)}</div><div>{_t('—' if v is None else v)}</div>" for k, v in rows)
        + "</div></section>"
    )


def render_page(run: RunData) -> str:
    """The whole page."""
    info = summary(run)
    title = f"Aira run report: {run.name}"
    ended = (
        f"{info['terminal']} ({info['reason']})"
        if info["terminal"]
        else "did not end (no end record)"
    )
    lead = (
        f"<p>{_t(ended)} · {_count(info['steps'], 'step')} in {_count(info['rounds'], 'round')} · "
        f"{_count(info['plans'], 'plan')}, {_count(info['revisions'], 'revision')} · "
        f"tier {_t(info['tier'] or '?')}</p>"
        f'<p class="mono">head {_t(info["head"] or "—")}</p>'
    )
    models = sorted(
        {
            f"{s.get('provider')}::{s.get('model')}"
            for s in run.steps
            if isinstance(s.get("model"), str) and s.get("provider") not in (None, "script")
        }
    )
    if models:
        lead += f"<p>decided by {_short(', '.join(models), 300)}</p>"
    goal = run.header.get("intent")
    if isinstance(goal, Mapping) and isinstance(goal.get("goal"), str):
        lead = f"<p>{_short(goal['goal'], 600)}</p>" + lead
    elif isinstance(run.header.get("title"), str):
        lead = f"<p>{_short(run.header['title'], 600)}</p>" + lead
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_t(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{_t(title)}</h1>{lead}</header><main>"
        + _views(run)
        + _timeline(run)
        + _plans(run)
        + _revisions(run)
        + _cost_section(info)
        + "</main></body></html>\n"
    )
