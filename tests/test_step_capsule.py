"""The task ledger, the capsule built from it and the round log (spec 003 §4.1, §4.2, §6.6):
segment order, the bound capsule + log ≤ B, eviction, folding, truncation notices,
determinism and the ledger's wire round trip."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace

import pytest

from aira_core.canonical import sha256_bytes_hex, sha256_id
from aira_core.contracts.plan import IntentFrame
from aira_core.diagnostics import AiraError
from aira_core.runtime.tiers import TIERS, Tier, host_tokens
from aira_core.step.capsule import (
    INTENT_MAX_TOKENS,
    LAST_RESULT_MAX_TOKENS,
    SEGMENTS,
    STEP_CAPSULE_OVER_BUDGET,
    SUMMARY_MAX_TOKENS,
    Capsule,
    CapsuleOverBudget,
    build_capsule,
)
from aira_core.step.ledger import (
    COMMIT_SUMMARY_MAX_BYTES,
    STEP_LEDGER_INVALID,
    STEP_PAGE_UNKNOWN,
    Ledger,
)
from aira_core.step.log import RoundLog

TIER_NAMES = ("T32", "T128", "T200")
REV1 = "rev:sha256:" + "1" * 64
REV2 = "rev:sha256:" + "2" * 64
SUMMARY = {"rev": REV1, "counts": {"nodes": 3, "bodies": 1}, "aliases": {"b:base": "body-1"}}
INDEX = "acts: read · lookup · plan · pin · note · done · abstain · batch\ncore.box@1(w:Len>0)"


def ledger_with_pages(*sizes: int, pinned: tuple[int, ...] = ()) -> Ledger:
    ledger = Ledger.for_instruction("Make a bracket", scope=["b:base"])
    for n, size in enumerate(sizes, 1):
        ledger.add_page(["nodes", f"n{n}"], REV1, "x" * size, step=n, pinned=n in pinned)
    return ledger


def build(ledger: Ledger, tier: Tier, **kw: object) -> Capsule:
    args: dict[str, object] = {
        "index": INDEX,
        "summary": SUMMARY,
        "schema_pages": {},
        "last_result": None,
        "step": 1,
    }
    args.update(kw)
    return build_capsule(ledger, tier, **args)  # type: ignore[arg-type]


def segment_text(capsule: Capsule, name: str) -> str:
    start = sum(size for n, size in capsule.segments[: SEGMENTS.index(name)])
    size = dict(capsule.segments)[name]
    return capsule.text.encode()[start : start + size].decode()


def copy(ledger: Ledger) -> Ledger:
    return Ledger.from_wire(json.loads(json.dumps(ledger.to_wire())))


# -- segments -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TIER_NAMES)
def test_segments_come_in_the_specs_stable_first_order(name: str) -> None:
    tier = TIERS[name]
    ledger = ledger_with_pages(100, 200, pinned=(1,))
    ledger.set_note("keep the 40 mm width", tier)
    ledger.committed(REV1, "base plate", step=2)
    capsule = build(ledger, tier, schema_pages={"cap:core.box@1": "BOX", "$defs": "DEFS"})

    assert (
        [n for n, _ in capsule.segments]
        == list(SEGMENTS)
        == [
            "index",
            "intent",
            "schemaPages",
            "workingSet",
            "summary",
            "note",
            "ledger",
            "lastResult",
        ]
    )
    headers = re.findall(r"^# (\d) (\w+)$", capsule.text, flags=re.M)
    assert headers == [(str(n), s) for n, s in enumerate(SEGMENTS, 1)]
    assert sum(size for _, size in capsule.segments) == capsule.bytes == len(capsule.text.encode())
    assert capsule.tokens == host_tokens(capsule.text)
    assert [t for _, _, t in capsule.metered] == [-(-b // 4) for _, b in capsule.segments]
    # Shared definitions go before every kind's page.
    schema = segment_text(capsule, "schemaPages")
    assert schema.index("## $defs") < schema.index("## cap:core.box@1")
    assert f"tier {name}" in segment_text(capsule, "index")
    assert INDEX in segment_text(capsule, "index")


@pytest.mark.parametrize("name", TIER_NAMES)
def test_the_ledger_segment_reports_the_prompts_own_size(name: str) -> None:
    tier = TIERS[name]
    capsule = build(ledger_with_pages(5000, 300), tier, log_bytes=4001)
    pattern = r"prompt +(\d+) of (\d+) tokens used \(log +(\d+)\), +(\d+) left"
    match = re.search(pattern, capsule.text)
    assert match is not None
    used, budget, log, left = map(int, match.groups())
    assert (used, budget, log) == (capsule.tokens + 1001, tier.budget, 1001)
    assert left == tier.budget - used


# -- the bound ------------------------------------------------------------------------------


def _text(rng: random.Random, size: int) -> str:
    # Mixed widths so byte limits are checked on multi-byte characters too.
    alphabet = "abcdef ghij{}:,\n" + "é中🙂"
    return "".join(rng.choice(alphabet) for _ in range(min(size, 64))) * (size // 64 + 1)


def random_ledger(rng: random.Random, tier: Tier) -> Ledger:
    ledger = Ledger.for_instruction(
        _text(rng, rng.choice([20, 500, 12_000])),
        hard_requirements=[_text(rng, 80) for _ in range(rng.randrange(4))],
        scope=["b:base", "b:arm"][: rng.randrange(3)],
    )
    for n in range(rng.randrange(9)):
        size = rng.choice([10, 2_000, 8_000, 40_000, 150_000])
        ledger.add_page(
            ["nodes", f"n{n}"],
            REV1,
            _text(rng, size),
            step=rng.randrange(20),
            pinned=rng.random() < 0.3,
        )
    for n in range(rng.randrange(40)):
        if rng.random() < 0.5:
            ledger.committed(REV2, _text(rng, rng.choice([30, 3_000])), step=n)
        else:
            ledger.reject(n, "PLAN_INVALID", _text(rng, rng.choice([40, 5_000])))
    ledger.set_note(_text(rng, rng.choice([0, 300, tier.bytes(tier.note) + 1, 60_000])), tier)
    ledger.record_usage(rng.randrange(10**6), rng.randrange(10**5), rng.random())
    for n in range(rng.randrange(12)):
        ledger.discovered("hit", f"cap:x.op{n}@1", f"h{n}")
    return ledger


@pytest.mark.parametrize("name", TIER_NAMES)
@pytest.mark.parametrize("seed", range(40))
def test_capsule_plus_log_never_exceeds_b(name: str, seed: int) -> None:
    tier = TIERS[name]
    rng = random.Random(f"{name}-{seed}")
    ledger = random_ledger(rng, tier)
    log_bytes = rng.choice([0, 0, 10_000, tier.bytes(tier.budget) // 2])
    schema_pages = {
        kind: _text(rng, rng.choice([500, 20_000, 60_000]))
        for kind in rng.sample(["$defs", "cap:a@1", "cap:b@1", "cap:c@1"], rng.randrange(4))
    }
    last_result = rng.choice(
        [
            None,
            _text(rng, 200_000),
            {"status": "ok", "pages": [_text(rng, 50_000)]},
            {"status": "ok"},
        ]
    )
    summary = rng.choice([SUMMARY, {"rev": REV1, "aliases": _text(rng, 30_000)}])
    pinned_before = {i for i, p in ledger.pages.items() if p.pinned}
    kwargs = {
        "summary": summary,
        "schema_pages": schema_pages,
        "last_result": last_result,
        "log_bytes": log_bytes,
        "step": 7,
    }
    mark = 0
    try:
        capsule = build(ledger, tier, **kwargs)
    except CapsuleOverBudget as exc:
        assert exc.code == STEP_CAPSULE_OVER_BUDGET
        # Raised only once every unpinned page is gone; nothing pinned was touched.
        assert all(page.pinned for page in ledger.pages.values())
        assert set(ledger.pages) == pinned_before
        assert set(exc.pages) <= pinned_before
        for page_id in exc.pages:
            assert page_id in exc.diagnostic.message
        if "to make room" in exc.diagnostic.message:
            # The model follows the advice: releasing the named pages makes it fit.
            ledger.pin(unpin=exc.pages, step=8)
            mark = len(ledger.evictions)
            capsule = build(ledger, tier, **kwargs)
        else:
            return
    log_tokens = -(-log_bytes // 4)
    assert capsule.tokens + log_tokens <= tier.budget
    released = {e.page for e in ledger.evictions[mark:] if e.reason == "schema"}
    for kind in schema_pages:  # each schema page is carried or its release is recorded
        assert (kind in capsule.schema_kinds) != (kind in released)
        assert (f"## {kind}\n" in capsule.text) == (kind in capsule.schema_kinds)
    assert host_tokens(capsule.text + "x" * log_bytes) <= tier.budget
    assert [n for n, _ in capsule.segments] == list(SEGMENTS)
    sizes = dict(capsule.segments)
    header = 32  # "# n name\n" and the closing newline
    assert sizes["lastResult"] <= LAST_RESULT_MAX_TOKENS * 4 + header
    assert sizes["summary"] <= SUMMARY_MAX_TOKENS * 4 + header
    assert sizes["intent"] <= INTENT_MAX_TOKENS * 4 + header
    assert len(ledger.note.encode()) <= tier.bytes(tier.note)
    # Every page still in the working set is in the capsule, with its text.
    for page_id, page in ledger.pages.items():
        assert f"[{page_id}] {page.label}" in capsule.text
        assert page.text in capsule.text


@pytest.mark.parametrize("name", TIER_NAMES)
def test_only_pinned_pages_left_raises_and_names_the_pages_to_release(name: str) -> None:
    tier = TIERS[name]
    big = tier.bytes(tier.budget) // 2
    ledger = ledger_with_pages(big, 10, big, 500, pinned=(1, 3))
    with pytest.raises(CapsuleOverBudget) as caught:
        build(ledger, tier)
    exc = caught.value
    assert exc.code == STEP_CAPSULE_OVER_BUDGET and exc.over_tokens > 0
    # Unpinned pages went first (recorded); the pinned ones are named, not evicted.
    assert sorted(ledger.pages) == ["pg:1", "pg:3"]
    assert [e.page for e in ledger.evictions] == ["pg:2", "pg:4"]
    assert exc.pages == ("pg:1",)  # one of the two is enough (same size: lower id first)
    assert "release (unpin) pg:1 (nodes/n1" in exc.diagnostic.message
    ledger.pin(unpin=exc.pages, step=9)
    capsule = build(ledger, tier)
    assert "page pg:1 (nodes/n1) released for budget; read it again if needed" in capsule.text
    assert "pg:3" in ledger.pages


def test_over_budget_without_pinned_pages_says_which_segments_are_large() -> None:
    tier = TIERS["T32"]
    ledger = ledger_with_pages(100)
    with pytest.raises(CapsuleOverBudget) as caught:
        build(ledger, tier, index="i" * tier.bytes(tier.budget), schema_pages={"cap:a@1": "s"})
    assert caught.value.pages == ()
    message = caught.value.diagnostic.message
    assert "no page is left to release" in message and "index 96" in message
    assert ledger.pages == {}  # the unpinned page was released first
    assert [e.reason for e in ledger.evictions] == ["budget", "schema"]  # then the schema page


@pytest.mark.parametrize("name", TIER_NAMES)
def test_schema_pages_are_released_for_budget_before_pinned_pages(name: str) -> None:
    # A rejected plan keeps the contracts of every capability it used into the next round:
    # however many, they must not take the capsule over B (they can be described again).
    tier = TIERS[name]
    page = "s" * 2_000
    kinds = [f"cap:k{n}@1" for n in range(tier.bytes(tier.budget) // 2_000 + 5)]
    ledger = ledger_with_pages(300, 300, pinned=(1,))
    capsule = build(ledger, tier, schema_pages={"$defs": "d" * 500, **dict.fromkeys(kinds, page)})
    assert capsule.tokens <= tier.budget
    kept = capsule.schema_kinds
    released = [e.page for e in ledger.evictions if e.reason == "schema"]
    # Released in the order given (least recently described first), $defs last; pinned kept.
    assert released == kinds[: len(released)] and "$defs" in kept
    assert set(kept) | set(released) == {"$defs", *kinds}
    assert "pg:1" in ledger.pages and "pg:2" not in ledger.pages
    text = segment_text(capsule, "ledger")
    assert f"schema page {released[-1]} released for budget" in text
    assert "describe it again (lookup capability)" in text
    assert f"## {kinds[-1]}" in segment_text(capsule, "schemaPages")
    assert f"## {released[0]}" not in capsule.text
    # A ledger rebuilt from its wire form keeps the releases (the trajectory can rebuild it).
    assert copy(ledger).eviction_rows() == ledger.eviction_rows()


def test_a_capsule_cannot_be_made_over_budget() -> None:
    with pytest.raises(AssertionError):
        Capsule("x" * 400, (("index", 400),), "T32", 100, 1, 0)
    with pytest.raises(AssertionError):
        Capsule("x" * 40, (("index", 39),), "T32", 100, 0, 0)


# -- eviction -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TIER_NAMES)
def test_unpinned_pages_are_evicted_least_recently_used_first(name: str) -> None:
    ledger = Ledger.for_instruction("Make a bracket")
    last_used = {1: 5, 2: 1, 3: 4, 4: 2, 5: 3}
    for n, used in last_used.items():
        ledger.add_page(["nodes", f"n{n}"], REV1, "p" * 4_000, step=used)
    ledger.add_page(["bodies", "b:base"], REV1, "q" * 4_000, step=0, pinned=True)
    ledger.touch(["pg:3"], 6)  # pg:3 was used after all: it goes last
    full = build(copy(ledger), TIERS[name]).tokens
    # Room for all but ~1.5 pages: exactly two must go.
    tier = replace(TIERS[name], budget=full - 1_500)
    capsule = build(ledger, tier, step=7)

    assert [e.page for e in ledger.evictions] == ["pg:2", "pg:4"]
    assert sorted(ledger.pages) == ["pg:1", "pg:3", "pg:5", "pg:6"]
    assert ledger.pages["pg:6"].pinned
    text = segment_text(capsule, "ledger")
    assert "page pg:2 (nodes/n2) released for budget; read it again if needed" in text
    assert "page pg:4 (nodes/n4) released for budget; read it again if needed" in text
    assert "[pg:2]" not in capsule.text and "[pg:5] nodes/n5" in capsule.text
    assert capsule.tokens <= tier.budget


def test_release_oldest_pinned_and_unknown_page_ids() -> None:
    ledger = ledger_with_pages(10, 10, 10, pinned=(2, 3))
    ledger.touch(["pg:2"], 9)
    assert ledger.release_oldest_pinned(10) == "pg:3"
    assert ledger.evictions[-1].line() == (
        "page pg:3 (nodes/n3, pinned) released for budget; read it again if needed"
    )
    assert ledger.release_oldest_pinned(10) == "pg:2"
    assert ledger.release_oldest_pinned(10) is None
    with pytest.raises(AiraError) as caught:
        ledger.pin(["pg:1", "pg:9"], step=11)
    assert caught.value.code == STEP_PAGE_UNKNOWN and "pg:9" in caught.value.diagnostic.message
    assert not ledger.pages["pg:1"].pinned  # nothing changed
    assert ledger.pin(["pg:1"], step=11) == ["pg:1"]
    assert ledger.pin(["pg:1"], step=12) == []


def test_a_reread_replaces_the_page_and_keeps_its_id_and_pin() -> None:
    ledger = ledger_with_pages(10, pinned=(1,))
    page_id = ledger.add_page(["nodes", "n1"], REV2, "new", step=4, hash="page:sha256:ab")
    assert page_id == "pg:1" and ledger.pages["pg:1"].pinned
    assert ledger.pages["pg:1"].text == "new" and ledger.pages["pg:1"].rev == REV2
    assert ledger.add_page(["nodes", "n1"], REV2, "more", step=4, offset=50) == "pg:2"
    assert ledger.pages["pg:2"].label == "nodes/n1@50"
    ledger.evict("pg:2", 5)
    assert ledger.add_page(["nodes", "n9"], REV2, "x", step=6) == "pg:3"  # ids never reused


# -- commits: refresh and "unchanged" -------------------------------------------------------


def test_refresh_after_a_commit_and_unchanged_pages() -> None:
    ledger = Ledger.for_instruction("Make a bracket")
    for n in (1, 2, 3):
        ledger.add_page(["nodes", f"n{n}"], REV1, f"text {n}", step=1, hash=f"page:sha256:{n}")
    ledger.pin(["pg:1", "pg:2"], step=1)
    fetched = {"nodes/n1": ("page:sha256:1", "text 1 again"), "nodes/n2": ("page:sha256:9", "v2")}
    report = ledger.refresh(REV2, lambda page: fetched.get(page.label), step=3)
    assert report == {"changed": ["pg:2"], "unchanged": ["pg:1"], "released": ["pg:3"]}
    assert ledger.pages["pg:1"].text == "text 1" and ledger.pages["pg:1"].unchanged
    assert (ledger.pages["pg:2"].text, ledger.pages["pg:2"].rev) == ("v2", REV2)
    assert ledger.evictions[-1].reason == "gone"

    tier = TIERS["T128"]
    full = build(copy(ledger), tier)
    assert "text 1" in full.text  # a new round starts from nothing: shown in full
    carried = build(copy(ledger), tier, carry_unchanged=True)
    assert "[pg:1] nodes/n1 pinned unchanged @page:sha256:1" in carried.text
    assert "text 1" not in carried.text and "v2" in carried.text


def test_a_capsule_is_a_snapshot_of_the_ledger() -> None:
    ledger = ledger_with_pages(10)
    capsule = build(ledger, TIERS["T128"])
    text, digest = capsule.text, capsule.hash
    ledger.committed(REV2, "in-round commit", step=2)
    ledger.set_note("changed", TIERS["T128"])
    assert (capsule.text, capsule.hash) == (text, digest)
    assert "in-round commit" not in capsule.text


# -- note, caps and notices -----------------------------------------------------------------


@pytest.mark.parametrize("name", TIER_NAMES)
def test_a_long_note_is_truncated_with_a_notice(name: str) -> None:
    tier = TIERS[name]
    limit = tier.bytes(tier.note)
    ledger = ledger_with_pages()
    assert ledger.set_note("short", tier) is None and ledger.note_notice is None
    note = "中" * limit  # 3 bytes a character: the cut must not split one
    notice = ledger.set_note(note, tier)
    assert notice is not None and notice.startswith(f"note truncated to {limit - limit % 3} bytes")
    assert ledger.note == "中" * (limit // 3)
    capsule = build(ledger, tier)
    assert f"[{notice}]" in segment_text(capsule, "note")
    assert ledger.set_note("fits now", tier) is None
    assert "truncated" not in segment_text(build(ledger, tier), "note")


def test_results_summaries_and_intents_are_capped_with_a_notice() -> None:
    tier = TIERS["T200"]
    ledger = Ledger.for_instruction("é" * 10_000)
    capsule = build(
        ledger,
        tier,
        summary={"rev": REV1, "aliases": "a" * 20_000},
        last_result={"status": "ok", "data": "r" * 100_000},
    )
    result = segment_text(capsule, "lastResult")
    assert "[result truncated: " in result and "of 100025 bytes shown]" in result
    assert len(result.encode()) <= LAST_RESULT_MAX_TOKENS * 4 + 20
    assert "[summary truncated: " in segment_text(capsule, "summary")
    intent = segment_text(capsule, "intent")
    assert "[intent truncated: " in intent
    assert len(intent.encode()) <= INTENT_MAX_TOKENS * 4 + 20
    assert ledger.intent.frame_hash() in intent  # the full frame stays addressable


def test_the_current_rejection_is_the_last_result_when_none_is_given() -> None:
    ledger = ledger_with_pages()
    ledger.reject(3, "PLAN_STEP_INVALID", "radius must be > 0\nat /steps/0/args/radius")
    text = segment_text(build(ledger, TIERS["T32"]), "lastResult")
    assert '"code":"PLAN_STEP_INVALID"' in text and "at /steps/0/args/radius" in text
    given = segment_text(build(ledger, TIERS["T32"], last_result="page text"), "lastResult")
    assert "page text" in given and "PLAN_STEP_INVALID" not in given


# -- the ledger -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", TIER_NAMES)
def test_commit_and_rejection_rows_fold_per_tier(name: str) -> None:
    tier = TIERS[name]
    keep = tier.ledger_rows
    ledger = ledger_with_pages()
    for n in range(30):
        ledger.reject(n, f"CODE_{n}", f"message {n}\nsecond line")
        ledger.committed(f"rev:{n}", f"summary {n}", step=n)
    assert ledger.rejection is None and len(ledger.rejections) == 30  # commits fold them
    text = segment_text(build(ledger, tier), "ledger")
    assert f"- ({30 - keep} earlier commits folded)" in text
    assert f"- ({30 - keep} earlier rejections folded)" in text
    shown = re.findall(r"^- step (\d+) rev:", text, flags=re.M)
    assert shown == [str(n) for n in range(30 - keep, 30)]
    assert re.findall(r"^- step (\d+) CODE_", text, flags=re.M) == shown
    assert "second line" not in text  # a folded rejection is one line


def test_rejections_fold_to_one_line_and_commit_summaries_to_1kb() -> None:
    ledger = ledger_with_pages()
    ledger.reject(1, "A_B", "first\nmore")
    ledger.reject(2, "C_D", "x" * 1_000)
    assert ledger.rejections == ["step 1 A_B: first"]
    assert ledger.rejection is not None and ledger.rejection.code == "C_D"
    ledger.committed(REV2, "line one\nline two " + "s" * 5_000, step=3)
    row = ledger.commits[-1]
    assert row.summary.startswith("line one line two ")
    assert len(row.summary.encode()) == COMMIT_SUMMARY_MAX_BYTES
    assert len(ledger.rejections[-1].encode()) <= 200


def test_discovery_hash_uses_the_project_hasher() -> None:
    ledger = ledger_with_pages()
    ledger.discovered("index", "index", "h0")
    ledger.discovered("hit", "cap:core.box@1", "h1")
    ledger.discovered("hit", "cap:core.box@1", "h1")  # shown twice, recorded once
    assert ledger.discovery == [("index", "index", "h0"), ("hit", "cap:core.box@1", "h1")]
    expected = sha256_id("discovery", [["index", "index", "h0"], ["hit", "cap:core.box@1", "h1"]])
    assert ledger.discovery_hash() == expected
    assert expected in build(ledger, TIERS["T32"]).text


# -- determinism and the wire ---------------------------------------------------------------


@pytest.mark.parametrize("name", TIER_NAMES)
def test_same_inputs_give_the_same_capsule(name: str) -> None:
    tier = TIERS[name]
    rng = random.Random(name)
    ledger = random_ledger(rng, tier)
    pages = {"cap:b@1": "B", "$defs": "D", "cap:a@1": "A"}
    reordered = dict(reversed(pages.items()))
    try:
        one = build(copy(ledger), tier, schema_pages=pages, last_result={"b": 1, "a": [2]})
    except CapsuleOverBudget:
        pytest.skip("this random ledger does not fit")
    two = build(copy(ledger), tier, schema_pages=reordered, last_result={"a": [2], "b": 1})
    assert one.text == two.text and one.hash == two.hash
    assert one.hash == "capsule:sha256:" + sha256_bytes_hex(one.text.encode())
    other = build(copy(ledger), tier, schema_pages=pages, last_result={"b": 2})
    assert other.hash != one.hash


@pytest.mark.parametrize("name", TIER_NAMES)
def test_the_ledger_round_trips_through_json(name: str) -> None:
    tier = TIERS[name]
    ledger = random_ledger(random.Random(f"wire-{name}"), tier)
    ledger.intent = IntentFrame(goal="g", hard_requirements=["r"], prohibited_effects=["additive"])
    ledger.add_page(["nodes"], REV1, "t", step=3, offset=50, limit=50, hash="page:sha256:1")
    ledger.evict("pg:1", 4) if "pg:1" in ledger.pages else None
    wire = json.loads(json.dumps(ledger.to_wire()))
    rebuilt = Ledger.from_wire(wire)
    assert rebuilt == ledger
    assert rebuilt.to_wire() == ledger.to_wire()
    assert rebuilt.discovery_hash() == ledger.discovery_hash()
    kwargs = {"schema_pages": {"$defs": "D"}, "step": 3}
    try:
        expected = build(copy(ledger), tier, **kwargs).hash
    except CapsuleOverBudget:
        return
    assert build(rebuilt, tier, **kwargs).hash == expected


@pytest.mark.parametrize(
    "wire",
    [{}, {"format": "other"}, {"format": "aira.step-ledger/1", "intent": {"goal": "g"}}, []],
)
def test_a_broken_ledger_is_refused_with_a_code(wire: object) -> None:
    with pytest.raises(AiraError) as caught:
        Ledger.from_wire(wire)  # type: ignore[arg-type]
    assert caught.value.code == STEP_LEDGER_INVALID


# -- the round log --------------------------------------------------------------------------


def test_the_round_log_appends_and_meters() -> None:
    log = RoundLog()
    assert (log.bytes, log.tokens, log.text, len(log)) == (0, 0, "", 0)
    decision = {"act": "read", "select": [["nodes"]]}
    entry = RoundLog.decision("c0", decision)
    expected = RoundLog.entry_bytes(entry)
    log.append(entry)
    assert log.bytes == expected == len(log.text.encode())
    decision["act"] = "plan"  # the caller's dict changing later does not rewrite the log
    assert '"act":"read"' in log.text
    log.append(RoundLog.result("c", "中" * 10))
    assert log.bytes == len(log.text.encode()) and log.tokens == host_tokens(log.text)
    assert [e.kind for e in log.entries] == ["decision", "result"]
    first = '# decision\n{"act":"read","select":[["nodes"]]}\n'
    assert log.text == first + "# result\n" + "中" * 10 + "\n"
    with pytest.raises(TypeError):
        log.append("x")  # type: ignore[arg-type]


def test_would_fit_and_window_full_against_b() -> None:
    tier = TIERS["T32"]
    capsule = build(ledger_with_pages(), tier)
    log = RoundLog()
    room = tier.bytes(tier.budget - capsule.tokens)
    assert log.would_fit(capsule, room, tier)
    assert not log.would_fit(capsule, room + 1, tier)
    assert not log.would_fit(capsule, room, tier, margin_tokens=1)
    assert not log.window_full(capsule, tier, 2_000)
    log.append(RoundLog.result("c", "r" * (room - tier.bytes(1_999) - 20)))
    assert not log.window_full(capsule, tier, 2_000)
    log.append(RoundLog.result("c", "r" * tier.bytes(10)))
    assert log.window_full(capsule, tier, 2_000)
    assert host_tokens(capsule.text + log.text) <= tier.budget


def test_text_a_prompt_cannot_carry_is_cleaned_not_fatal() -> None:
    # json.loads("\"\\ud800\"") gives a lone surrogate: a model can send one in any string.
    tier = TIERS["T32"]
    ledger = ledger_with_pages()
    ledger.set_note("note \ud800 end", tier)
    ledger.add_page(["nodes", "n\udfff"], REV1, "page \ud800", step=1, pinned=True)
    ledger.reject(2, "X_Y", "bad \udc00")
    capsule = build(ledger, tier, last_result={"value": float("nan"), "text": "\ud800"})
    assert capsule.bytes == len(capsule.text.encode()) and "note ? end" in capsule.text
    assert "[pg:1] nodes/n? pinned" in capsule.text
    log = RoundLog()
    log.append(RoundLog.result("c", {"x": float("inf"), "y": "\ud800"}))
    log.append(RoundLog.decision("c", "\ud800"))
    assert log.bytes == len(log.text.encode())
    assert Ledger.from_wire(json.loads(json.dumps(ledger.to_wire()))) == ledger
