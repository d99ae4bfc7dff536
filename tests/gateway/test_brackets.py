"""The bracket repair (aira_core.gateway.brackets, spec 003 §8 N4): closers a model dropped are
put back only where the parser stopped and the stack says that closer is due, and only when
the result parses to an object; otherwise nothing changes and the host's grammar rejects the
text with the account of what was open."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aira_core.gateway.brackets import MAX_RESTORED, account, open_at, repair
from aira_core.step.decision import STEP_DECISION_NOT_JSON, DecisionRejected, parse_decision

PLAN = {
    "act": "plan",
    "summary": "a plate with a hole",
    "plan": {
        "steps": [
            {
                "id": "plate",
                "capability": "cap:exact.box@1",
                "args": {"size": {"x": {"value": 60, "unit": "mm"}, "y": [40, {"z": 5}]}},
            }
        ]
    },
    "note": "eight levels deep",
}
TEXT = json.dumps(PLAN)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def without(text: str, marker: str, index: int) -> str:
    """``text`` with the closer at ``index`` within the first ``marker`` removed."""
    at = text.index(marker) + index
    return text[:at] + text[at + 1 :]


def test_the_plan_is_eight_levels_deep() -> None:
    assert depth(PLAN) == 8 and TEXT.endswith('5}]}}}]}, "note": "eight levels deep"}')


def test_a_dropped_bracket_before_the_note_is_put_back() -> None:
    broken = without(TEXT, ']}, "note"', 0)  # ...}}}}}, "note": the steps' ] is gone
    assert broken.endswith('5}]}}}}, "note": "eight levels deep"}')
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    fixed, restored = repair(broken)  # type: ignore[misc]
    assert (json.loads(fixed), restored) == (PLAN, 1)


def test_a_dropped_brace_inside_is_put_back() -> None:
    broken = without(TEXT, "5}]}}}]}", 4)  # the step's } before the steps' ]
    assert broken.endswith('5}]}}]}, "note": "eight levels deep"}')
    fixed, restored = repair(broken)  # type: ignore[misc]
    assert (json.loads(fixed), restored) == (PLAN, 1)


@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_missing_final_closers_are_put_back(cut: int) -> None:
    plan = {"act": "plan", "plan": {"steps": [{"id": "a", "args": {"v": [1, {"w": 2}]}}]}}
    text = json.dumps(plan)
    assert text.endswith("}]}}]}}")
    fixed, restored = repair(text[:-cut])  # type: ignore[misc]
    assert (json.loads(fixed), restored) == (plan, cut)


def test_at_most_a_few_closers_are_put_back() -> None:
    text = json.dumps({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}})
    assert repair(text[:-MAX_RESTORED]) is not None
    assert repair(text[: -MAX_RESTORED - 1]) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"act": "read", ',  # a dangling comma: a closer makes {"act": "read", }
        '{"act": "note", "note": "cut in a str',  # inside a string: not a bracket's doing
        '{"act": "read"',  # fine after one }, but
        "[1, 2",  # an array, not an object
        '{"a": 1}}',  # one closer too many: nothing is missing
        '{"a": [1, 2, "b": 3}',  # the ] belongs further back: not where the parser stopped
        '{"a" 1}',  # not a bracket at all
        "not json at all",
        "",
    ],
)
def test_what_a_closer_does_not_fix_is_left_alone(text: str) -> None:
    if text == '{"act": "read"':
        assert repair(text) == ('{"act": "read"}', 1)
        return
    assert repair(text) is None


def test_text_that_parses_is_not_repaired() -> None:
    assert repair(TEXT) is None
    assert repair("[1, 2]") is None


def test_strings_and_escapes_are_respected() -> None:
    text = '{"a": "[{ \\" ]} \\\\", "b": ["x"'
    assert open_at(text) == ("{[", False)
    fixed, _ = repair(text)  # type: ignore[misc]
    assert json.loads(fixed) == {"a": '[{ " ]} \\', "b": ["x"]}
    assert open_at('{"a": "b\\') == ("{", True)  # an escape cut off: still in the string


def test_the_stack_at_a_position() -> None:
    text = '{"a": [{"b": 1}, {"c": ['
    assert open_at(text, text.index('{"b"')) == ("{[", False)
    assert open_at(text, text.index('"c"') + 1) == ("{[{", True)
    assert open_at(text).brackets == "{[{[" and open_at(text).due == "]"
    assert open_at(text, 0) == ("", False) and open_at(text, 10_000) == open_at(text)


def test_hostile_depth_and_size_finish_quickly_without_recursion_errors() -> None:
    deep = "[" * 100_000
    big = '{"note": "' + '[{\\"x' * 1_000_000 + '" '
    deep_obj = '{"a":' * 100_000
    started = time.perf_counter()
    assert repair(deep) is None
    assert repair(deep_obj) is None
    fixed, restored = repair(big)  # type: ignore[misc]
    assert restored == 1 and json.loads(fixed)["note"] == '[{"x' * 1_000_000
    assert account(deep, len(deep)) == (
        'open at the error: … [ [ [ [ [ [ [ [ [ [ [ [ — 100000 unclosed; expected "]"'
    )
    assert len(big) > 5_000_000
    assert time.perf_counter() - started < 5


def test_an_unrepaired_text_is_rejected_with_the_bracket_account() -> None:
    # A ] dropped before another key: the parser stops at its colon, where no closer helps.
    broken = TEXT.replace('{"z": 5}]', '{"z": 5}, "w": 1')
    assert repair(broken) is None
    with pytest.raises(DecisionRejected) as info:
        parse_decision(broken)
    assert info.value.code == STEP_DECISION_NOT_JSON
    message = info.value.diagnostic.message
    assert 'open at the error: { { [ { { { [ — 7 unclosed; expected "]"' in message
    cut = '{"act": "plan", "plan": {"steps": [{"id": "a"'
    with pytest.raises(DecisionRejected) as info:
        parse_decision(cut)
    assert 'open at the error: { { [ { — 4 unclosed; expected "}"' in str(info.value)


def test_the_account_shows_brackets_only() -> None:
    secret = "sk-live-do-not-show"
    text = f'{{"note": "{secret}", "a": [{{"b": 1]'
    said = account(text, text.index("]"))
    assert said is not None and secret not in said and "note" not in said
    assert account('"just a string', 5) is None


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_repair_never_changes_text_that_parses(value: Any) -> None:
    assert repair(json.dumps(value)) is None


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=4), JSON_VALUES, min_size=1, max_size=3), st.data())
def test_what_repair_returns_parses_to_an_object(value: dict[str, Any], data: Any) -> None:
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    drop = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    for broken in (text[:cut], text[:drop] + text[drop + 1 :]):
        result = repair(broken)
        if result is not None:
            fixed, restored = result
            assert isinstance(json.loads(fixed), dict) and 1 <= restored <= MAX_RESTORED


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet='{}[]":, a\\', max_size=40))
def test_repair_of_any_text_is_none_or_an_object(text: str) -> None:
    result = repair(text)
    if result is not None:
        assert isinstance(json.loads(result[0]), dict)
