"""Check benchmarks/discovery/queries.json against the OCCT capability manifest.

Standard library only. Run from anywhere:

    python3 benchmarks/discovery/check_queries.py

Prints a summary and exits 1 when a rule is broken (the violations are listed on stderr).
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
MANIFEST = ROOT / "plugins/aira-kernel-occt/aira_kernel_occt/package/manifest.json"

FORMAT = "aira.discovery-benchmark/1"
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
    errors: list[str] = []
    warnings: list[str] = []

    doc = json.loads(QUERIES.read_text(encoding="utf-8"))
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
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
