"""The OCCT geometry in-process (as the worker runs it): real CadQuery solids against
closed-form values, the bracket, the failure codes and incremental re-evaluation."""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest

pytest.importorskip("cadquery")

from occt_docs import body, codes, doc, evaluate, node, v

from aira_kernel_occt import geometry

BOX = "exact.box@1.0.0"
CYLINDER = "exact.cylinder@1.0.0"
SPHERE = "exact.sphere@1.0.0"
FILLET = "exact.fillet@1.0.0"
CHAMFER = "exact.chamfer@1.0.0"
CUT = "exact.cut@1.0.0"
UNION = "exact.union@1.0.0"
TRANSLATE = "exact.translate@1.0.0"

REL = 1e-9


# -- primitives ---------------------------------------------------------------------------------

PRIMITIVES = [
    pytest.param(
        node("n", BOX, length=v(40), width=v(30), height=v(10)),
        40 * 30 * 10,
        2 * (40 * 30 + 40 * 10 + 30 * 10),
        (-20, -15, -5, 20, 15, 5),
        id="box-centered",
    ),
    pytest.param(
        node("n", BOX, length=v(20), width=v(20), height=v(20), centered=v(False)),
        8000,
        2400,
        (0, 0, 0, 20, 20, 20),
        id="box-corner",
    ),
    pytest.param(
        node("n", CYLINDER, radius=v(5), height=v(20)),
        math.pi * 25 * 20,
        2 * math.pi * 5 * 20 + 2 * math.pi * 25,
        (-5, -5, 0, 5, 5, 20),
        id="cylinder",
    ),
    pytest.param(
        node("n", SPHERE, radius=v(10)),
        4 / 3 * math.pi * 1000,
        4 * math.pi * 100,
        (-10, -10, -10, 10, 10, 10),
        id="sphere",
    ),
]


@pytest.mark.parametrize(("primitive", "volume", "area", "box"), PRIMITIVES)
def test_primitives_match_closed_form_values(
    primitive: dict[str, Any], volume: float, area: float, box: tuple[float, ...]
) -> None:
    result = evaluate(doc([primitive], {"b": "n"}))
    assert result["diagnostics"] == [] and result["evaluatedNodes"] == ["n"]
    body = result["bodies"]["b"]
    assert body["valid"] is True
    assert body["volume"] == pytest.approx(volume, rel=REL)
    assert body["area"] == pytest.approx(area, rel=REL)
    assert body["boundingBox"] == pytest.approx(box, abs=1e-7)


def test_units_and_parameters_are_converted_to_millimetres() -> None:
    result = evaluate(
        doc(
            [node("n", BOX, length={"param": "len"}, width=v(3, "cm"), height=v(0.01, "m"))],
            {"b": "n"},
            parameters=[{"id": "len", "label": "len", "type": "Length", "unit": "in", "value": 2}],
        )
    )
    assert result["bodies"]["b"]["boundingBox"] == pytest.approx(
        (-25.4, -15, -5, 25.4, 15, 5), abs=1e-9
    )


def test_a_unit_of_the_wrong_dimension_is_unit_mismatch() -> None:
    result = evaluate(doc([node("n", CYLINDER, radius=v(5, "deg"), height=v(2))], {"b": "n"}))
    assert codes(result) == [("UNIT_MISMATCH", "n")]
    assert result["bodies"]["b"] == {"valid": False}


# -- the bracket --------------------------------------------------------------------------------

HOLES = [(-30, -12), (-30, 12), (30, -12), (30, 12)]


def bracket(hole_radius: float = 3.0, length: float = 80.0, fillet: float = 4.0) -> dict[str, Any]:
    """Box 80 × 40 × 10, its vertical edges filleted r 4 (before the holes, so the selector
    '|Z' sees only the outer edges), then four through holes r 3 at (±30, ±12), each a cut
    of a cylinder moved into place. Parameters ``len`` and ``hole``; the body's tip is the
    last cut and the fillet's selection reads the body as it was before the fillet."""
    nodes = [
        node("box", BOX, length={"param": "len"}, width=v(40), height=v(10)),
        node(
            "round",
            FILLET,
            target={"node": "box"},
            edges={"body": "bracket", "select": "|Z", "entity": "Edge"},
            radius=v(fillet),
        ),
    ]
    previous = "round"
    for i, (x, y) in enumerate(HOLES):
        nodes += [
            node(f"pin{i}", CYLINDER, radius={"param": "hole"}, height=v(30)),
            node(f"at{i}", TRANSLATE, target={"node": f"pin{i}"}, x=v(x), y=v(y), z=v(-15)),
            node(f"cut{i}", CUT, target={"node": previous}, tool={"node": f"at{i}"}),
        ]
        previous = f"cut{i}"
    parameters = [
        {"id": "len", "label": "length", "type": "Length", "unit": "mm", "value": length},
        {"id": "hole", "label": "hole", "type": "Length", "unit": "mm", "value": hole_radius},
        {"id": "vmax", "label": "largest volume", "type": "Real", "value": 100},
    ]
    return doc(nodes, {"bracket": previous}, parameters)


ALL_BUT_TWINS = ["box", "round", "pin0", *(f"{k}{i}" for k in ("at", "cut") for i in range(4))]


def bracket_volume(hole_radius: float = 3.0, length: float = 80.0, fillet: float = 4.0) -> float:
    corners = 4 * (1 - math.pi / 4) * fillet**2 * 10
    holes = 4 * math.pi * hole_radius**2 * 10
    return length * 40 * 10 - corners - holes


def test_the_bracket_matches_its_analytic_volume() -> None:
    result = evaluate(bracket())
    assert result["diagnostics"] == []
    body = result["bodies"]["bracket"]
    assert body["valid"] is True
    assert body["volume"] == pytest.approx(bracket_volume(), rel=1e-6)
    assert body["boundingBox"] == pytest.approx((-40, -20, -5, 40, 20, 5), abs=1e-7)
    # the four cylinders are one computation: pin1…pin3 are served from pin0's cache entry
    assert result["resultHash"] and sorted(result["evaluatedNodes"]) == sorted(ALL_BUT_TWINS)


def test_changing_one_leaf_parameter_reevaluates_only_downstream_nodes() -> None:
    cache: dict[str, Any] = {}
    first = evaluate(bracket(), cache)
    assert sorted(first["evaluatedNodes"]) == sorted(ALL_BUT_TWINS)
    assert evaluate(bracket(), cache)["evaluatedNodes"] == []

    holes = evaluate(bracket(hole_radius=2.5), cache)
    assert sorted(holes["evaluatedNodes"]) == sorted(
        ["pin0", *(f"{k}{i}" for k in ("at", "cut") for i in range(4))]
    )
    assert holes["bodies"]["bracket"]["volume"] == pytest.approx(
        bracket_volume(hole_radius=2.5), rel=1e-6
    )

    longer = evaluate(bracket(hole_radius=2.5, length=90), cache)
    assert sorted(longer["evaluatedNodes"]) == ["box", "cut0", "cut1", "cut2", "cut3", "round"]
    assert longer["bodies"]["bracket"]["volume"] == pytest.approx(
        bracket_volume(hole_radius=2.5, length=90), rel=1e-6
    )
    assert longer["resultHash"] != holes["resultHash"]

    back = evaluate(bracket(), cache)  # every node of the first revision is still cached
    assert back["evaluatedNodes"] == [] and back["resultHash"] == first["resultHash"]


# -- failures -----------------------------------------------------------------------------------


def test_a_fillet_radius_that_does_not_fit_is_fillet_radius_too_large() -> None:
    result = evaluate(bracket(fillet=25))
    assert codes(result) == [("FILLET_RADIUS_TOO_LARGE", "round")]
    assert "25" in result["diagnostics"][0]["message"]
    assert result["bodies"]["bracket"] == {"valid": False}
    assert result["resultHash"] is None


def test_a_chamfer_that_does_not_fit_is_chamfer_too_large() -> None:
    result = evaluate(
        doc(
            [
                node("box", BOX, length=v(40), width=v(30), height=v(10)),
                node(
                    "bevel",
                    CHAMFER,
                    target={"node": "box"},
                    edges={"body": "plate", "select": ">Z", "entity": "Edge"},
                    length=v(20),
                ),
            ],
            {"plate": "bevel"},
        )
    )
    assert codes(result) == [("CHAMFER_TOO_LARGE", "bevel")]


def rounded(op: str, size: float) -> dict[str, Any]:
    """Box 20 × 10 × 5, its four vertical edges filleted (radius) or chamfered (length)
    ``size``: both fit below 5 mm, half the smaller side, where two of them would meet."""
    name = "radius" if op == FILLET else "length"
    return doc(
        [
            node("box", BOX, length=v(20), width=v(10), height=v(5)),
            node(
                "round",
                op,
                target={"node": "box"},
                edges={"body": "b", "select": "|Z", "entity": "Edge"},
                **{name: v(size)},
            ),
        ],
        {"b": "round"},
    )


LIMIT = 5.0
"""The true limit of :func:`rounded`'s fillet and chamfer (half the smaller side, mm)."""
FIT_WITHIN = max(geometry.FIT_TOLERANCE, geometry.FIT_TOLERANCE * LIMIT)
"""How far below the limit the reported largest size may be (0.01 mm or 1 %)."""


@pytest.mark.parametrize(
    ("op", "code", "name", "limit", "removed"),
    [
        (
            FILLET,
            "FILLET_RADIUS_TOO_LARGE",
            "radius",
            "maxRadius",
            lambda r: 20 * (1 - math.pi / 4) * r**2,
        ),
        (CHAMFER, "CHAMFER_TOO_LARGE", "length", "maxLength", lambda c: 10 * c**2),
    ],
    ids=["fillet", "chamfer"],
)
def test_a_refusal_for_size_carries_the_largest_size_that_fits(
    op: str, code: str, name: str, limit: str, removed: Any
) -> None:
    refused = evaluate(rounded(op, 8))
    assert codes(refused) == [(code, "round")]
    (found,) = refused["diagnostics"]
    largest = found["expected"][limit]
    assert found["actual"] == {name: 8.0} and set(found["expected"]) == {limit}
    assert LIMIT - FIT_WITHIN <= largest < LIMIT
    assert f"the largest {name} that fits is {largest:g} mm" in found["message"]
    # what a repair makes of it builds, with the analytic volume
    fitted = body(evaluate(rounded(op, round(largest * 0.9, 2))), "b")
    size = round(largest * 0.9, 2)
    assert fitted["volume"] == pytest.approx(20 * 10 * 5 - removed(size), rel=1e-6)


def test_a_result_that_fails_the_check_is_searched_like_an_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenCASCADE builds the fillet but the result fails the node's validity check (here: a
    check that refuses radii above 3 mm, read back from the volume): the search uses the
    same check, so the largest radius it reports is one the check accepts."""
    check = geometry.solid_problem

    def stricter(shape: Any) -> str | None:
        radius = math.sqrt(max(0.0, 1000 - shape.Volume()) / (20 * (1 - math.pi / 4)))
        return "the result fails the BRep check" if radius > 3 else check(shape)

    monkeypatch.setattr(geometry, "solid_problem", stricter)
    (found,) = evaluate(rounded(FILLET, 4))["diagnostics"]
    assert found["code"] == "FILLET_RADIUS_TOO_LARGE"
    assert "did not produce a valid solid" in found["message"]
    assert 3 - max(0.01, 0.03) <= found["expected"]["maxRadius"] <= 3
    assert found["actual"] == {"radius": 4.0}


def test_a_refusal_with_no_size_that_fits_has_no_expected_value() -> None:
    """The vertical edges of a rounded box are the seams between its round and flat faces
    (tangent): no fillet fits there, whatever its radius."""
    again = doc(
        [
            node("box", BOX, length=v(20), width=v(20), height=v(20)),
            *(
                node(
                    nid,
                    FILLET,
                    target={"node": target},
                    edges={"body": "b", "select": "|Z", "entity": "Edge"},
                    radius=v(r),
                )
                for nid, target, r in (("round", "box", 7.5), ("again", "round", 8))
            ),
        ],
        {"b": "again"},
    )
    (found,) = evaluate(again)["diagnostics"]
    assert (found["code"], found["subject"]) == ("FILLET_RADIUS_TOO_LARGE", "again")
    assert "expected" not in found and found["actual"] == {"radius": 8.0}
    assert "no smaller radius fits either (none tried down to 0.015625 mm)" in found["message"]


@pytest.mark.parametrize("limit", [7.3, 0.9, 0.4, 0.02])
def test_the_search_stays_within_its_attempts_and_reports_only_sizes_that_fit(
    limit: float,
) -> None:
    tried: list[float] = []

    def fits(size: float) -> bool:
        tried.append(size)
        return size < limit

    largest, _ = geometry._largest_fit(fits, 10.0)
    assert len(tried) <= geometry.FIT_ATTEMPTS
    assert largest is not None and largest < limit
    if limit > 10 / 32:  # within the attempts, the stated tolerance
        assert limit - largest <= max(0.01, 0.01 * largest)
    assert geometry._largest_fit(lambda size: False, 10.0) == (None, 10 / 2**9)


def test_a_cut_that_removes_everything_is_boolean_empty_result() -> None:
    result = evaluate(
        doc(
            [
                node("small", BOX, length=v(10), width=v(10), height=v(10)),
                node("big", BOX, length=v(50), width=v(50), height=v(50)),
                node("cut", CUT, target={"node": "small"}, tool={"node": "big"}),
            ],
            {"part": "cut", "block": "big"},
        )
    )
    assert codes(result) == [("BOOLEAN_EMPTY_RESULT", "cut")]
    assert result["bodies"]["part"] == {"valid": False}
    assert result["bodies"]["block"]["valid"] is True  # the rest of the document still builds


def test_a_selector_that_selects_nothing_is_selection_empty() -> None:
    def fillet_doc(select: str) -> dict[str, Any]:
        return doc(
            [
                node("box", BOX, length=v(40), width=v(30), height=v(10)),
                node(
                    "round",
                    FILLET,
                    target={"node": "box"},
                    edges={"body": "plate", "select": select, "entity": "Edge"},
                    radius=v(2),
                ),
            ],
            {"plate": "round"},
        )

    assert codes(evaluate(fillet_doc("%CIRCLE"))) == [("SELECTION_EMPTY", "round")]
    assert codes(evaluate(fillet_doc("|Z and >Z"))) == [("SELECTION_EMPTY", "round")]
    assert codes(evaluate(fillet_doc(">>>"))) == [("SELECTION_INVALID", "round")]
    ok = evaluate(fillet_doc("|Z and >X"))  # the two vertical edges at x = +20
    assert ok["diagnostics"] == []
    assert ok["bodies"]["plate"]["volume"] == pytest.approx(
        12000 - 2 * (1 - math.pi / 4) * 4 * 10, rel=REL
    )


def test_an_unknown_operation_is_kernel_operation_unknown_and_stops_only_its_users() -> None:
    result = evaluate(
        doc(
            [
                node("box", BOX, length=v(10), width=v(10), height=v(10)),
                node("loft", "exact.draft@1.0.0", target={"node": "box"}),
                node("moved", TRANSLATE, target={"node": "loft"}, z=v(5)),
            ],
            {"a": "box", "b": "moved"},
        )
    )
    assert codes(result) == [("KERNEL_OPERATION_UNKNOWN", "loft")]  # reported once, upstream
    assert result["bodies"]["a"]["valid"] is True
    assert result["bodies"]["b"] == {"valid": False}


def test_an_input_out_of_its_declared_range_never_reaches_opencascade() -> None:
    result = evaluate(doc([node("n", SPHERE, radius=v(-1))], {"b": "n"}))
    assert codes(result) == [("KERNEL_INPUT_INVALID", "n")]


# -- queries, validators, exports ----------------------------------------------------------------


def test_queries_measure_the_body() -> None:
    document = doc(
        [
            node("box", BOX, length=v(20), width=v(10), height=v(4), centered=v(False)),
            node("up", TRANSLATE, target={"node": "box"}, z=v(6)),
        ],
        {"block": "up"},
    )
    cache: dict[str, Any] = {}
    mass = geometry.query(document, "query.massProperties@1.0.0", {"target": "block"}, cache)
    assert mass["diagnostics"] == []
    assert mass["data"]["volume"] == pytest.approx(800, rel=REL)
    assert mass["data"]["area"] == pytest.approx(2 * (200 + 80 + 40), rel=REL)
    assert mass["data"]["centerOfMass"] == pytest.approx([10, 5, 8], abs=1e-9)
    box = geometry.query(document, "query.boundingBox@1.0.0", {"target": "block"}, cache)
    assert box["data"]["boundingBox"] == pytest.approx([0, 0, 6, 20, 10, 10], abs=1e-9)
    assert box["data"]["size"] == pytest.approx([20, 10, 4], abs=1e-9)
    missing = geometry.query(document, "query.boundingBox@1.0.0", {"target": "nope"}, cache)
    assert [d["code"] for d in missing["diagnostics"]] == ["QUERY_TARGET_UNKNOWN"]


def test_validators_report_what_they_measured() -> None:
    document = bracket()
    cache: dict[str, Any] = {}
    ok = geometry.validate(
        document,
        {"id": "a1", "validatorRef": "validate.solidValidity@1.0.0", "target": "bracket"},
        cache,
    )
    assert ok["passed"] is True and ok["measured"]["closedShells"] is True
    too_big = geometry.validate(
        document,
        {
            "id": "a2",
            "validatorRef": "validate.volumeRange@1.0.0",
            "target": "bracket",
            "args": {"min": v(1000), "max": {"param": "vmax"}},
        },
        cache,
    )
    assert too_big["passed"] is False
    assert [(d["code"], d["subject"]) for d in too_big["diagnostics"]] == [
        ("VOLUME_OUT_OF_RANGE", "a2")
    ]
    # a Length parameter is no volume: refused, not read as mm³
    mismatched = geometry.validate(
        document,
        {
            "id": "a3",
            "validatorRef": "validate.volumeRange@1.0.0",
            "target": "bracket",
            "args": {"min": v(1000), "max": {"param": "len"}},
        },
        cache,
    )
    assert [(d["code"], d["subject"]) for d in mismatched["diagnostics"]] == [
        ("AMIR_TYPE_MISMATCH", "a3")
    ]
    assert too_big["measured"]["volume"] == pytest.approx(bracket_volume(), rel=1e-6)


def test_exports_write_step_and_binary_stl() -> None:
    cache: dict[str, Any] = {}
    step = geometry.export(bracket(), "step", None, cache)
    assert step["diagnostics"] == [] and step["data"].startswith(b"ISO-10303-21")
    stl = geometry.export(bracket(), "stl", "bracket", cache)["data"]
    (triangles,) = struct.unpack("<I", stl[80:84])
    assert triangles > 100 and len(stl) == 84 + 50 * triangles
    unknown = geometry.export(bracket(), "obj", None, cache)
    assert unknown["data"] == b"" and unknown["diagnostics"][0]["code"] == "KERNEL_EXPORT_FAILED"
