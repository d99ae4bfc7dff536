"""Check benchmarks/discovery/queries.json and parts.json against the OCCT capability manifest.

Standard library only. Run from anywhere:

    python3 benchmarks/discovery/check_queries.py

Prints a summary of each set and exits 1 when a rule is broken (the violations are listed on
stderr).
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
QUERIES = HERE / "queries.json"
PARTS = HERE / "parts.json"
MANIFEST = ROOT / "plugins/aira-kernel-occt/aira_kernel_occt/package/manifest.json"

FORMAT = "aira.discovery-benchmark/1"
PARTS_FORMAT = "aira.discovery-parts/1"
MIN_PARTS = 30
MIN_PARTS_ZH = 5
PLAN_KINDS = {"authoring.operation"}
"""What a plan's steps are: operations that build the part (no query, validator or exporter)."""
CATALOG = "aira.kernel.occt"
MIN_QUERIES = 110
LANGS = {"en", "zh"}
# Minimum number of queries per category (the targets the set was written to).
MIN_PER_CATEGORY = {
    "direct": 20,
    "paraphrase": 30,
    "units": 15,
    "negation": 12,
    "trap": 15,
    "nomatch": 15,
}
MIN_LANG_SHARE = 0.35  # each of en and zh must be at least this share of all queries
MIN_LANG_SHARE_PER_CATEGORY = 0.25  # ... and at least this share inside every category
MAX_EXPECTED = 2
# A query this similar (difflib ratio, case-folded) to an intent example counts as a copy.
COPY_RATIO = 0.85
WARN_RATIO = 0.70

CJK = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[a-z]{3,}")
DIGIT_OR_CN_NUMERAL = re.compile(r"[0-9一二两三四五六七八九十半]")
NEGATION = re.compile(
    r"\b(not|no|without|don't|doesn't|isn't|never|rather than|instead of)\b|n't|[不别没无非]",
    re.IGNORECASE,
)


def norm(text: str) -> str:
    return " ".join(text.casefold().split())


def main() -> int:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    single = check_queries(manifest)
    print()
    parts = check_parts(manifest, json.loads(QUERIES.read_text(encoding="utf-8")))
    return max(single, parts)


def _examples(descriptors: list[dict]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for d in descriptors:
        out += [(norm(t), d["capabilityId"]) for t in d.get("intentExamples", [])]
        counter = f"counterExample of {d['capabilityId']}"
        out += [(norm(t), counter) for t in d.get("counterExamples", [])]
    return out


def check_parts(manifest: dict, single: dict) -> int:
    """parts.json: whole-part descriptions, each with the capabilities of the plans that work."""
    errors: list[str] = []
    warnings: list[str] = []
    doc = json.loads(PARTS.read_text(encoding="utf-8"))
    kinds = {d["capabilityId"]: d["kind"] for d in manifest["descriptors"]}
    if doc.get("format") != PARTS_FORMAT:
        errors.append(f"parts: format is {doc.get('format')!r}, expected {PARTS_FORMAT!r}")
    if doc.get("catalog") != CATALOG:
        errors.append(f"parts: catalog {doc.get('catalog')!r}, expected {CATALOG!r}")
    queries = doc.get("queries", [])
    if len(queries) < MIN_PARTS:
        errors.append(f"parts: {len(queries)} queries, at least {MIN_PARTS} required")
    for qid, n in Counter(q.get("id") for q in queries).items():
        if n > 1:
            errors.append(f"parts: duplicate id {qid!r} ({n}x)")
    for t, n in Counter(norm(q.get("query", "")) for q in queries).items():
        if n > 1:
            errors.append(f"parts: duplicate query text {t!r} ({n}x)")
    # none copied from the single-capability set or from an example of the package
    others = [(norm(q["query"]), f"query {q['id']}") for q in single.get("queries", [])]
    others += _examples(manifest["descriptors"])
    langs: Counter[str] = Counter()
    used: Counter[str] = Counter()
    required = {"id", "query", "lang", "category", "expected", "note"}
    for q in queries:
        qid = q.get("id", "?")
        missing = required - q.keys()
        if missing:
            errors.append(f"{qid}: missing keys {sorted(missing)}")
            continue
        if not re.fullmatch(r"p\d{3}", qid):
            errors.append(f"{qid}: id must look like p001")
        if q["category"] != "part":
            errors.append(f"{qid}: category must be 'part'")
        lang, text = q["lang"], q["query"]
        langs[lang] += 1
        if lang not in LANGS:
            errors.append(f"{qid}: unknown lang {lang!r}")
        if (lang == "zh") != bool(CJK.search(text)):
            errors.append(f"{qid}: lang {lang} does not match its script")
        if not q["note"].strip():
            errors.append(f"{qid}: empty note")
        plans = [q["expected"], *q.get("alternatives", [])]
        if not isinstance(q.get("alternatives", []), list):
            errors.append(f"{qid}: alternatives must be a list of plans")
            continue
        for plan in plans:
            if not isinstance(plan, list) or not plan or len(set(plan)) != len(plan):
                errors.append(f"{qid}: a plan must be a non-empty list of distinct ids")
                continue
            for cid in plan:
                if cid not in kinds:
                    errors.append(f"{qid}: {cid!r} is not in the manifest")
                elif kinds[cid] not in PLAN_KINDS:
                    errors.append(f"{qid}: {cid} is a {kinds[cid]}, not a step building the part")
        if len({frozenset(p) for p in plans if isinstance(p, list)}) != len(plans):
            errors.append(f"{qid}: two plans list the same capabilities")
        used.update(q["expected"])
        n = norm(text)
        for other, src in others:
            r = difflib.SequenceMatcher(None, n, other).ratio()
            if r >= COPY_RATIO:
                errors.append(f"{qid}: near-copy ({r:.2f}) of {src}: {other!r}")
            elif r >= WARN_RATIO:
                warnings.append(f"{qid}: similar ({r:.2f}) to {src}: {other!r}")
    if langs["zh"] < MIN_PARTS_ZH:
        errors.append(f"parts: {langs['zh']} Chinese queries, at least {MIN_PARTS_ZH} required")
    print(
        f"parts: {len(queries)} whole-part queries (en {langs['en']}, zh {langs['zh']}), "
        f"{sum(1 for q in queries if q.get('alternatives'))} with an alternative plan"
    )
    counts = ", ".join(f"{c[4:-2]} {n}" for c, n in used.most_common())
    print(f"capabilities in the first plans: {counts}")
    for w in warnings:
        print(f"warning: {w}")
    if errors:
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        print(f"FAILED: {len(errors)} violation(s) in parts.json", file=sys.stderr)
        return 1
    print("OK")
    return 0


def check_queries(manifest: dict) -> int:
    """queries.json: single-capability and no-match queries."""
    errors: list[str] = []
    warnings: list[str] = []

    doc = json.loads(QUERIES.read_text(encoding="utf-8"))
    descriptors = manifest["descriptors"]
    cap_ids = [d["capabilityId"] for d in descriptors]
    cap_set = set(cap_ids)

    if doc.get("format") != FORMAT:
        errors.append(f"format is {doc.get('format')!r}, expected {FORMAT!r}")
    if doc.get("catalog") != CATALOG or manifest.get("name") != CATALOG:
        errors.append(
            f"catalog {doc.get('catalog')!r} / manifest {manifest.get('name')!r}, "
            f"expected {CATALOG!r}"
        )

    # Texts a query must not reproduce: titles, aliases and intent examples.
    verbatim: dict[str, str] = {}
    examples: list[tuple[str, str]] = []
    for d in descriptors:
        cid = d["capabilityId"]
        for kind, texts in (
            ("title", [d["title"]]),
            ("alias", d.get("aliases", [])),
            ("intentExample", d.get("intentExamples", [])),
        ):
            for t in texts:
                verbatim[norm(t)] = f"{kind} of {cid}"
        examples += [(norm(t), cid) for t in d.get("intentExamples", [])]
        examples += [(norm(t), f"counterExample of {cid}") for t in d.get("counterExamples", [])]

    queries = doc.get("queries", [])
    if len(queries) < MIN_QUERIES:
        errors.append(f"{len(queries)} queries, at least {MIN_QUERIES} required")

    ids = Counter(q.get("id") for q in queries)
    for qid, n in ids.items():
        if n > 1:
            errors.append(f"duplicate id {qid!r} ({n}x)")
    texts = Counter(norm(q.get("query", "")) for q in queries)
    for t, n in texts.items():
        if n > 1:
            errors.append(f"duplicate query text {t!r} ({n}x)")

    cats: Counter[str] = Counter()
    langs: Counter[str] = Counter()
    cat_langs: dict[str, Counter[str]] = defaultdict(Counter)
    mixed = 0
    coverage: dict[str, Counter[str]] = defaultdict(Counter)
    required_keys = {"id", "query", "lang", "category", "expected", "note"}

    for q in queries:
        qid = q.get("id", "?")
        missing = required_keys - q.keys()
        if missing:
            errors.append(f"{qid}: missing keys {sorted(missing)}")
            continue
        text, lang, cat, expected = q["query"], q["lang"], q["category"], q["expected"]
        cats[cat] += 1
        langs[lang] += 1
        cat_langs[cat][lang] += 1
        if not re.fullmatch(r"q\d{3}", qid):
            errors.append(f"{qid}: id must look like q001")
        if cat not in MIN_PER_CATEGORY:
            errors.append(f"{qid}: unknown category {cat!r}")
        if lang not in LANGS:
            errors.append(f"{qid}: unknown lang {lang!r}")
        has_cjk = bool(CJK.search(text))
        if lang == "zh" and not has_cjk:
            errors.append(f"{qid}: lang zh but no Chinese characters")
        if lang == "en" and has_cjk:
            errors.append(f"{qid}: lang en but contains Chinese characters")
        if has_cjk and LATIN_WORD.search(text):
            mixed += 1
        if not q["note"].strip():
            errors.append(f"{qid}: empty note")

        if not isinstance(expected, list) or len(set(expected)) != len(expected):
            errors.append(f"{qid}: expected must be a list of distinct ids")
            continue
        if cat == "nomatch":
            if expected:
                errors.append(f"{qid}: nomatch query with expected {expected}")
        elif not 1 <= len(expected) <= MAX_EXPECTED:
            errors.append(f"{qid}: expected must list 1..{MAX_EXPECTED} ids, has {len(expected)}")
        for cid in expected:
            if cid not in cap_set:
                errors.append(f"{qid}: expected id {cid!r} is not in the manifest")
            else:
                coverage[cid][lang] += 1

        if cat == "units" and not DIGIT_OR_CN_NUMERAL.search(text):
            errors.append(f"{qid}: units query without a number")
        if cat == "negation" and not NEGATION.search(text):
            errors.append(f"{qid}: negation query without a negation word")

        n = norm(text)
        if n in verbatim:
            errors.append(f"{qid}: query is verbatim the {verbatim[n]}: {text!r}")
        for ex, src in examples:
            r = difflib.SequenceMatcher(None, n, ex).ratio()
            if r >= COPY_RATIO:
                errors.append(f"{qid}: near-copy ({r:.2f}) of an example of {src}: {ex!r}")
            elif r >= WARN_RATIO:
                warnings.append(f"{qid}: similar ({r:.2f}) to an example of {src}: {ex!r}")

    for cat, least in MIN_PER_CATEGORY.items():
        if cats[cat] < least:
            errors.append(f"category {cat}: {cats[cat]} queries, at least {least} required")
    total = max(len(queries), 1)
    for lang in sorted(LANGS):
        if langs[lang] / total < MIN_LANG_SHARE:
            errors.append(
                f"lang {lang}: {langs[lang]} queries ({langs[lang] / total:.0%}), "
                f"at least {MIN_LANG_SHARE:.0%} required"
            )
    for cat in MIN_PER_CATEGORY:
        n = max(cats[cat], 1)
        for lang in sorted(LANGS):
            if cat_langs[cat][lang] / n < MIN_LANG_SHARE_PER_CATEGORY:
                errors.append(
                    f"category {cat}: lang {lang} has {cat_langs[cat][lang]} of {cats[cat]} "
                    f"queries, at least {MIN_LANG_SHARE_PER_CATEGORY:.0%} required"
                )
    uncovered = [c for c in cap_ids if not coverage.get(c)]
    for c in uncovered:
        errors.append(f"capability {c} is not the expected answer of any query")
    one_lang = [c for c in cap_ids if coverage.get(c) and len(coverage[c]) < 2]
    for c in one_lang:
        warnings.append(f"capability {c} is covered in one language only: {dict(coverage[c])}")

    print(
        f"queries: {len(queries)} (manifest {manifest.get('name')} {manifest.get('version')}, "
        f"{len(cap_ids)} capabilities)"
    )
    print(
        "categories (en/zh): "
        + ", ".join(
            f"{c} {cats[c]} ({cat_langs[c]['en']}/{cat_langs[c]['zh']})" for c in MIN_PER_CATEGORY
        )
    )
    print(
        "langs: "
        + ", ".join(f"{lang} {langs[lang]} ({langs[lang] / total:.0%})" for lang in sorted(LANGS))
        + f"; code-mixed (Chinese with English words, labelled zh) {mixed} ({mixed / total:.0%})"
    )
    print(f"multi-answer queries: {sum(1 for q in queries if len(q.get('expected', [])) > 1)}")
    print(
        f"capabilities covered: {len(cap_ids) - len(uncovered)}/{len(cap_ids)}, "
        f"in both en and zh: {sum(1 for c in cap_ids if len(coverage.get(c, {})) == 2)}"
    )
    print(
        "per capability (en/zh): "
        + ", ".join(f"{c[4:-2]} {coverage[c]['en']}/{coverage[c]['zh']}" for c in cap_ids)
    )
    for w in warnings:
        print(f"warning: {w}")
    if errors:
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        print(f"FAILED: {len(errors)} violation(s)", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
