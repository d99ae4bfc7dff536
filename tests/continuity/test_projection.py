"""The Guard's projection hash: the research vectors (computed by running the Guard's own
canonical.mjs), hand-spelled edge vectors, the proof that canonical_bytes gives the Guard's
bytes on the projection's domain, and the refusals outside it."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from aira_continuity.errors import CONTRACT_HASH_MISMATCH, CONTRACT_OUTSIDE_DOMAIN, WireError
from aira_continuity.projection import (
    check_snapshot,
    lite_ref,
    projection_bytes,
    projection_sha256,
    requirement_ref,
)
from aira_continuity.wire import TaskContractLite, read
from aira_core.canonical import canonical_bytes
from tests.continuity.samples import NO_LOCAL_INSTALL, sample


def contract(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "objective": "Ship a verified artifact without changing the requested outcome.",
        "primary_object": "the requested project",
        "delivery_surface": ["repository"],
        "scope": {"include": ["workspace"], "exclude": []},
        "must_and_must_not": {"must": ["preserve objective"], "must_not": []},
        "authorization": {"allowed": [], "requires_user": [], "forbidden": []},
        "completion_evidence": [{"requirement": "evidence:test", "acceptable_sources": ["test"]}],
    }
    return {**base, **changes}


# The four projection vectors of /tmp/research19/vectors (Guard 0.2.2 canonical.mjs on Node 20).
VECTORS = [
    (  # test-support/helpers.mjs makeContract()
        contract(),
        "d2c0a95db39a2a0bd222442b6e24f9faec8662ed5184cbeda23c6f3125c81eb1",
    ),
    (  # examples/contracts/no-local-install.json
        NO_LOCAL_INSTALL,
        "25e99dcd88ed6125a4807b7e15afd7bcf04e7c89448a23d8b3d90f6e7caca44a",
    ),
    (  # bin/efg.mjs demo()
        {
            "objective": "Demonstrate a deterministic no-local-install contract.",
            "primary_object": "the demonstration workspace",
            "delivery_surface": ["terminal"],
            "scope": {"include": ["demonstration"], "exclude": ["local installation"]},
            "must_and_must_not": {
                "must": ["Show one allowed and one blocked action."],
                "must_not": [],
            },
            "authorization": {
                "allowed": ["action:read"],
                "requires_user": [],
                "forbidden": ["action:install_local"],
            },
            "completion_evidence": [
                {"requirement": "evidence:test", "acceptable_sources": ["test"]}
            ],
        },
        "403fbe6ff51e058a597a91340977e6c73113140a9162907877467242507b0f9c",
    ),
    (  # docs/integration-contract.md example projection
        contract(
            objective="Exact user-requested outcome",
            primary_object="Object being changed or delivered",
            must_and_must_not={"must": [], "must_not": []},
            completion_evidence=[
                {
                    "requirement": "Evidence required for completion",
                    "acceptable_sources": ["test"],
                }
            ],
        ),
        "d5ecf57a96ebc4e99d942158b59c807b3def2ee490b89ccb7a7234bcdf98a8ca",
    ),
]

MAKE_CONTRACT_CANONICAL = (
    b'{"authorization":{"allowed":[],"forbidden":[],"requires_user":[]},'
    b'"completion_evidence":[{"acceptable_sources":["test"],"requirement":"evidence:test"}],'
    b'"delivery_surface":["repository"],"must_and_must_not":{"must":["preserve objective"],'
    b'"must_not":[]},"objective":"Ship a verified artifact without changing the requested '
    b'outcome.","primary_object":"the requested project","scope":{"exclude":[],'
    b'"include":["workspace"]}}'
)


@pytest.mark.parametrize(("projection", "expected"), VECTORS)
def test_research_vectors(projection: dict[str, Any], expected: str) -> None:
    assert projection_sha256(projection) == expected
    assert lite_ref(projection) == "lite:" + expected[:20]
    # the wire model hashes as its JSON value, whatever order it was given in
    model = read(TaskContractLite, dict(reversed(list(projection.items()))))
    assert model.sha256() == expected == projection_sha256(model)


def test_the_canonical_bytes_are_the_guards() -> None:
    assert projection_bytes(contract()) == MAKE_CONTRACT_CANONICAL


def test_a_hash_changes_with_any_byte() -> None:
    changed = contract(
        objective="Ship a verified artifact without changing the requested outcome. "
    )
    assert projection_sha256(changed) != VECTORS[0][1]  # the hash does not trim
    swapped = contract(delivery_surface=["b", "a"])
    assert projection_sha256(swapped) != projection_sha256(contract(delivery_surface=["a", "b"]))


# Hand-spelled edge vectors: the expected bytes are written out by the JS rules (keys by UTF-16
# code units, JSON.stringify escapes, non-ASCII raw), not produced by the code under test.
EDGES = [
    (  # U+1F600 (D83D DE00) sorts before U+FF61 by UTF-16, after it by code point
        {"\uff61": "1", "\U0001f600": "2", "b": "3", "B": "4", "a": "5", "\u00e9": "6"},
        '{"B":"4","a":"5","b":"3","\u00e9":"6","\U0001f600":"2","\uff61":"1"}',
    ),
    (  # nested objects sorted too, arrays kept in order
        {"z": [{"y": "1", "x": "2"}, "b", "a"], "a": {"\U00010000": "", "\ue000": ""}},
        '{"a":{"\U00010000":"","\ue000":""},"z":[{"x":"2","y":"1"},"b","a"]}',
    ),
    (  # JSON.stringify escapes only quote, backslash and C0 controls; / DEL U+2028 raw
        {"s": '\x00\x01\b\t\n\f\r\x1f\x7f"\\/\u2028\u2029\u00e9\U0001f600'},
        '{"s":"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\x7f\\"\\\\/\u2028\u2029\u00e9\U0001f600"}',
    ),
    (  # CJK text and an astral key in a real projection field
        contract(objective="交付已测试的零件", scope={"include": ["工作区"], "exclude": []}),
        None,
    ),
]


@pytest.mark.parametrize(("value", "spelled"), EDGES)
def test_edge_vectors(value: dict[str, Any], spelled: str | None) -> None:
    data = projection_bytes(value)
    if spelled is not None:
        assert data == spelled.encode("utf-8")
    assert projection_sha256(value) == hashlib.sha256(data).hexdigest()
    assert b"\\u" not in data.replace(b"\\u0000", b"").replace(b"\\u0001", b"").replace(
        b"\\u001f", b""
    )  # non-ASCII is raw, never \u-escaped


def test_the_escape_vector_of_the_research() -> None:
    # the Guard's hash of {"s": <controls, quote, backslash, slash, DEL, U+2028/9, é, 😀>}
    value = {"s": '\x00\x01\b\t\n\f\r\x1f\x7f"\\/\u2028\u2029\u00e9\U0001f600'}
    assert projection_sha256(value) == (
        "355a9ef6d916ab80d224b3e62b721d765002448d78e12e383ef88e1ee4662926"
    )


def test_rfc_8785_orders_keys_as_the_guard_does() -> None:
    # The research's key-order vector holds numbers, outside the projection: canonical_bytes
    # itself gives the Guard's bytes and hash for it, the proof that the key order is shared.
    value = {"\uff61": 1, "\U0001f600": 2, "b": 3, "B": 4, "a": 5, "\u00e9": 6}
    data = canonical_bytes(value)
    assert data == '{"B":4,"a":5,"b":3,"\u00e9":6,"\U0001f600":2,"\uff61":1}'.encode()
    assert hashlib.sha256(data).hexdigest() == (
        "0cb217a113d26b229258c7cc4e10324aaba2f7a2344f0eafd8a262e230e2adca"
    )


def test_where_rfc_8785_and_the_guard_part_ways_is_refused() -> None:
    # JS puts array-index keys first ({"2":..,"10":..,"-1":..,"01":..,"a":..,"b":..});
    # RFC 8785 sorts them as strings. The Guard's bytes for this value:
    guard = b'{"2":3,"10":2,"-1":5,"01":6,"a":4,"b":1}'
    value = {"b": 1, "10": 2, "2": 3, "a": 4, "-1": 5, "01": 6}
    assert canonical_bytes(value) != guard
    assert hashlib.sha256(guard).hexdigest() == (
        "6b4d5061cdf439cfbaad882de6431a440498785097134391d3de6036c950edf6"
    )
    with pytest.raises(WireError) as exc:
        projection_sha256({"b": "1", "10": "2"})
    assert (exc.value.code, exc.value.diagnostic.pointer) == (CONTRACT_OUTSIDE_DOMAIN, "/10")


def test_keys_that_only_look_numeric_are_in_the_domain() -> None:
    # not array indices: sorted as strings by both
    value = {"01": "a", "-1": "b", "4294967295": "c", "1.5": "d"}
    assert projection_bytes(value) == b'{"-1":"b","01":"a","1.5":"d","4294967295":"c"}'


@pytest.mark.parametrize(
    ("value", "pointer"),
    [
        ("evidence:test", None),  # the Guard would hash the raw text, without quotes
        (["a"], None),
        (None, None),
        ({"a": 1}, "/a"),
        ({"a": 1.5}, "/a"),
        ({"a": True}, "/a"),
        ({"a": None}, "/a"),
        ({"a": ["x", {"b": 0}]}, "/a/1/b"),
        ({"a": "x\ud800"}, "/a"),
        ({"k\udc00": "x"}, None),
        ({"2": "x"}, "/2"),
        ({"a": {"4294967294": "x"}}, "/a/4294967294"),
        ({1: "x"}, None),
        ({"a": b"bytes"}, "/a"),
    ],
)
def test_outside_the_domain(value: Any, pointer: str | None) -> None:
    with pytest.raises(WireError) as exc:
        projection_sha256(value)
    assert exc.value.code == CONTRACT_OUTSIDE_DOMAIN
    assert exc.value.diagnostic.pointer == pointer
    assert exc.value.diagnostic.message


def test_deep_nesting_is_refused_not_recursed() -> None:
    value: Any = "x"
    for _ in range(10_000):
        value = {"a": value}
    with pytest.raises(WireError) as exc:
        projection_sha256(value)
    assert exc.value.code == CONTRACT_OUTSIDE_DOMAIN


def test_requirement_refs() -> None:
    assert requirement_ref(0, "evidence:test") == "requirement:0:c1186dbb68175ef1"
    text = "A human has verified the released UI"
    assert requirement_ref(1, text) == "requirement:1:42291f66e326122b"
    for index, requirement in ((-1, "x"), (True, "x"), (0, "x\ud800"), (0, 5)):
        with pytest.raises(WireError) as exc:
            requirement_ref(index, requirement)  # type: ignore[arg-type]
        assert exc.value.code == CONTRACT_OUTSIDE_DOMAIN


def test_check_snapshot() -> None:
    document = sample("provider-contract")
    assert check_snapshot(document) == document["envelope"]["snapshot_sha256"]
    document["projection"]["scope"]["exclude"] = []
    with pytest.raises(WireError) as exc:
        check_snapshot(document)
    assert (exc.value.code, exc.value.diagnostic.pointer) == (
        CONTRACT_HASH_MISMATCH,
        "/envelope/snapshot_sha256",
    )
    del document["envelope"]["snapshot_sha256"]
    with pytest.raises(WireError, match="missing"):
        check_snapshot(document)
    with pytest.raises(WireError) as exc:
        check_snapshot({"projection": {}})
    assert exc.value.code == CONTRACT_HASH_MISMATCH
