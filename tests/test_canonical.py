"""Tests for aira_core.canonical against RFC 8785's published examples."""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aira_core.canonical import (
    MAX_DEPTH,
    CanonicalJSONError,
    StrictJSONError,
    canonical_bytes,
    loads_strict,
    sha256_bytes_hex,
    sha256_hex,
    sha256_id,
)


def _double(hex_bits: str) -> float:
    value: float = struct.unpack(">d", bytes.fromhex(hex_bits))[0]
    return value


# --- RFC 8785 section 3.2.2 ---------------------------------------------------

RFC_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""

# The canonical text exactly as printed in the RFC (raw string: every
# backslash here is a literal byte of the output).
RFC_OUTPUT = (
    r'{"literals":[null,true,false],'
    r'"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    r'"string":"€$\u000f\nA'
    r"'"
    r'B\"\\\\\"/"}'
)


def test_rfc_3_2_2_example() -> None:
    assert canonical_bytes(json.loads(RFC_INPUT)) == RFC_OUTPUT.encode("utf-8")


def test_rfc_3_2_2_expected_bytes_sanity() -> None:
    # Guard against a mistake in building RFC_OUTPUT itself.
    parsed = json.loads(RFC_OUTPUT)
    assert parsed["string"] == '\u20ac$\x0f\nA\'B"\\\\"/'
    assert RFC_OUTPUT.encode("utf-8").startswith(b'{"literals":[null,true,false]')
    assert "\u20ac".encode() in RFC_OUTPUT.encode("utf-8")


# --- RFC 8785 section 3.2.3 (sorting) -----------------------------------------

SORT_INPUT = r"""{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}"""


def test_rfc_3_2_3_sorting() -> None:
    out = canonical_bytes(json.loads(SORT_INPUT))
    keys = list(json.loads(out))
    # U+1F600 sorts before U+FB33 because its UTF-16 lead surrogate is D83D.
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    assert out.startswith(b'{"\\r":"Carriage Return","1":"One",')
    assert out.endswith(
        '"\U0001f600":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'.encode()
    )


# --- RFC 8785 Appendix B (numbers) ---------------------------------------------

APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("hex_bits", "expected"), APPENDIX_B)
def test_rfc_appendix_b_numbers(hex_bits: str, expected: str) -> None:
    assert canonical_bytes(_double(hex_bits)) == expected.encode("ascii")


@pytest.mark.parametrize(
    ("hex_bits", "name"),
    [
        ("7fffffffffffffff", "NaN"),
        ("7ff0000000000000", "Infinity"),
        ("fff0000000000000", "-Infinity"),
    ],
)
def test_rfc_appendix_b_non_finite_rejected(hex_bits: str, name: str) -> None:
    with pytest.raises(CanonicalJSONError, match=re.escape(name)):
        canonical_bytes(_double(hex_bits))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1e21, b"1e+21"),
        (1e-6, b"0.000001"),
        (1e-7, b"1e-7"),
        (123e-20, b"1.23e-18"),
        (1.5, b"1.5"),
        (-0.5, b"-0.5"),
        (100.0, b"100"),
        (2**60, b"1152921504606847000"),  # exact double; ES drops digits
    ],
)
def test_es_number_formatting_edges(value: float, expected: bytes) -> None:
    assert canonical_bytes(value) == expected


# --- behaviour ----------------------------------------------------------------


def test_key_order_independent() -> None:
    a = {"b": 1, "a": [1, 2, {"y": None, "x": True}], "c": "s"}
    b = {"c": "s", "a": [1, 2, {"x": True, "y": None}], "b": 1}
    assert canonical_bytes(a) == canonical_bytes(b)
    assert canonical_bytes(a) == b'{"a":[1,2,{"x":true,"y":null}],"b":1,"c":"s"}'


def test_no_whitespace_and_tuple_as_array() -> None:
    assert canonical_bytes({"a": (1, "x", None), "b": {}}) == b'{"a":[1,"x",null],"b":{}}'
    assert canonical_bytes([]) == b"[]"


def test_nan_error_has_nested_path() -> None:
    data = {"outer": [{"ok": 1}, {"numbers": [1.0, 2.0, math.nan]}]}
    with pytest.raises(CanonicalJSONError) as excinfo:
        canonical_bytes(data)
    assert str(excinfo.value) == ("NaN is not allowed in canonical JSON (at /outer/1/numbers/2)")


def test_path_escapes_pointer_tokens() -> None:
    with pytest.raises(CanonicalJSONError, match=re.escape("(at /a~1b/c~0d)")):
        canonical_bytes({"a/b": {"c~d": math.inf}})


def test_error_is_value_error() -> None:
    assert issubclass(CanonicalJSONError, ValueError)


@pytest.mark.parametrize("key", [1, None, (1, 2), b"bytes"])
def test_non_str_keys_rejected(key: Any) -> None:
    with pytest.raises(CanonicalJSONError, match=r"keys must be str.*\(at /x\)"):
        canonical_bytes({"x": {key: 1}})


def test_unsupported_type_rejected_with_name_and_path() -> None:
    with pytest.raises(CanonicalJSONError, match=r"set.*\(at /a/0\)"):
        canonical_bytes({"a": [{1, 2}]})
    with pytest.raises(CanonicalJSONError, match="bytes"):
        canonical_bytes(b"raw")


def test_lone_surrogate_rejected() -> None:
    with pytest.raises(CanonicalJSONError, match=r"surrogate.*\(at /s\)"):
        canonical_bytes({"s": "a\ud800b"})
    with pytest.raises(CanonicalJSONError, match="surrogate"):
        canonical_bytes({"\udc00": 1})


def test_string_escaping_matches_ecmascript() -> None:
    assert canonical_bytes("\x00\x1f\x7f\u2028") == b'"\\u0000\\u001f\x7f\xe2\x80\xa8"'
    assert canonical_bytes("\b\t\n\f\r") == b'"\\b\\t\\n\\f\\r"'
    assert canonical_bytes("</script>") == b'"</script>"'


def test_integer_representability() -> None:
    assert canonical_bytes(2**53) == b"9007199254740992"
    assert canonical_bytes(-(2**53)) == b"-9007199254740992"
    for bad in (2**53 + 1, -(2**53) - 1, 10**400):
        with pytest.raises(CanonicalJSONError, match="not exactly representable"):
            canonical_bytes({"n": [bad]})


def test_bool_is_not_int() -> None:
    assert canonical_bytes(True) == b"true"
    assert canonical_bytes(False) == b"false"
    assert canonical_bytes(1) == b"1"
    assert canonical_bytes(0) == b"0"
    assert canonical_bytes([True, 1, None]) == b"[true,1,null]"


def test_integral_float() -> None:
    assert canonical_bytes(1.0) == b"1"
    assert canonical_bytes(-0.0) == b"0"


def test_circular_reference_rejected() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(CanonicalJSONError, match="circular"):
        canonical_bytes(loop)


def test_shared_subtree_is_not_a_cycle() -> None:
    shared = [1, 2]
    assert canonical_bytes({"a": shared, "b": shared}) == b'{"a":[1,2],"b":[1,2]}'


def test_deep_nesting_does_not_recurse() -> None:
    deep: Any = 0
    for _ in range(MAX_DEPTH):
        deep = [deep]
    assert canonical_bytes(deep) == b"[" * MAX_DEPTH + b"0" + b"]" * MAX_DEPTH


@pytest.mark.parametrize("container", [list, lambda inner: {"k": inner}], ids=["list", "dict"])
def test_nesting_is_bounded_so_what_is_hashed_can_be_read_back(container: Any) -> None:
    # json.loads and pydantic recurse: a value they cannot read back must not get an id.
    def nested(depth: int) -> Any:
        value: Any = 0
        for _ in range(depth):
            value = container([value]) if container is list else container(value)
        return value

    assert json.loads(canonical_bytes(nested(MAX_DEPTH))) == nested(MAX_DEPTH)
    for depth in (MAX_DEPTH + 1, 5000):
        with pytest.raises(CanonicalJSONError, match=f"nested deeper than {MAX_DEPTH} levels"):
            canonical_bytes(nested(depth))


class _Inner(pydantic.BaseModel):
    value: float


class _Model(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    zeta: int
    alpha_name: str = pydantic.Field(alias="alphaName")
    optional: str | None = None
    inner: _Inner


def test_pydantic_model_canonicalises_like_its_dump() -> None:
    model = _Model(zeta=2, alphaName="x", inner=_Inner(value=4.5))
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert canonical_bytes(model) == canonical_bytes(dumped)
    assert canonical_bytes(model) == b'{"alphaName":"x","inner":{"value":4.5},"zeta":2}'
    # Models nested inside plain containers are handled too.
    assert canonical_bytes({"m": [model]}) == canonical_bytes({"m": [dumped]})


def test_sha256_helpers() -> None:
    obj = {"b": 1, "a": 2}
    digest = sha256_hex(obj)
    assert digest == sha256_bytes_hex(b'{"a":2,"b":1}')
    assert sha256_id("rev", obj) == f"rev:sha256:{digest}"
    assert re.fullmatch(r"rev:sha256:[0-9a-f]{64}", sha256_id("rev", obj))
    # Known vector: SHA-256 of the empty string.
    assert sha256_bytes_hex(b"") == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )


@pytest.mark.parametrize("prefix", ["", "Rev", "1rev", "rev:x", "re v", "rév"])
def test_sha256_id_bad_prefix(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        sha256_id(prefix, {})


def test_sha256_id_accepts_valid_prefixes() -> None:
    for prefix in ("rev", "manifest_v2", "a-b", "x9"):
        assert sha256_id(prefix, None).startswith(f"{prefix}:sha256:")


# --- properties -----------------------------------------------------------------

# Lone surrogates (category Cs) are rejected by design, so keep them out.
_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_text, children, max_size=5),
    max_leaves=25,
)


@settings(max_examples=200)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_round_trip(x: float) -> None:
    assert float(canonical_bytes(x).decode()) == x


def _parse_int(text: str) -> int | float:
    # JCS numbers are doubles: a large float such as 3.612560033048819e16 is
    # printed as "36125600330488190", which is that double, not that integer.
    value = int(text)
    return value if abs(value) <= 2**53 else float(value)


@settings(max_examples=200)
@given(_json_values)
def test_json_round_trip_and_idempotence(data: Any) -> None:
    out = canonical_bytes(data)
    parsed = json.loads(out, parse_int=_parse_int)
    assert parsed == data
    # Canonicalising the parsed output again must be a fixed point.
    assert canonical_bytes(parsed) == out


def test_large_integral_float_reads_back_as_same_double() -> None:
    # Regression example found by Hypothesis.
    out = canonical_bytes(3.612560033048819e16)
    assert out == b"36125600330488190"
    assert float(out) == 3.612560033048819e16


# -- the fast path (the C json encoder when its output is already canonical) ----------------

from aira_core import canonical as _canonical  # noqa: E402

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1e-4, 9.99e-5, 1e16, 1e21, 0.1, 20.0, 1e-7, 123456.789])
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=4),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_json_values)
def test_fast_path_is_byte_identical_to_the_general_serialiser(value: Any) -> None:
    """Whatever the fast path accepts, it prints exactly as the RFC 8785 serialiser."""
    fast = _canonical._fast_path(value)
    if fast is not None:
        assert fast == _canonical._serialise(value)
    assert canonical_bytes(value) == _canonical._serialise(value)


def test_fast_path_declines_what_it_cannot_print_exactly() -> None:
    for value in ({"\U0001f600": 1, "\ufb33": 2}, [1e-5], [1e16 + 2.5], [2**53 + 1], {1: 2}):
        assert _canonical._fast_path(value) is None
    assert _canonical._fast_path({"a": [20.0, 0.5, -0.0]}) == b'{"a":[20,0.5,0]}'


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b'{"a": 1, "a": 2}', "duplicate-key"),
        (b'{"a": NaN}', "syntax"),
        (b'{"a": 1e999}', "syntax"),
        (b'{"a": ' + b"1" * 5000 + b"}", "not-canonical"),
        (b'{"a": 9007199254740993}', "not-canonical"),
        (b'"\\ud800"', "not-canonical"),
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "syntax"),  # too deep, however deep
        (b"[" * 100_000, "syntax"),
        (b"\xff\xfe{\x00}\x00", "syntax"),  # UTF-16 with a BOM: JSON text is UTF-8
        (b"{", "syntax"),
    ],
)
def test_the_strict_reader_refuses_what_has_no_canonical_form(data: bytes, kind: str) -> None:
    with pytest.raises(StrictJSONError) as caught:
        loads_strict(data, "thing.json")
    assert caught.value.kind == kind
    assert "thing.json" in str(caught.value)


def test_the_strict_reader_returns_the_value_and_its_canonical_bytes() -> None:
    # a UTF-8 byte order mark, as some editors write, is skipped (RFC 8259 §8.1 allows it)
    value, canonical = loads_strict(b'\xef\xbb\xbf{"b": 1.0, "a": [true, null]}')
    assert value == {"b": 1.0, "a": [True, None]}
    assert canonical == b'{"a":[true,null],"b":1}'
