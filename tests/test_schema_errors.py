"""aira_core/schema_errors.py: the errors of a value against a JSON Schema, in
python-jsonschema's words, which is imported only for a value that has errors."""

from __future__ import annotations

import subprocess
import sys

from jsonschema import Draft202012Validator

from aira_core.schema_errors import schema_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "length": {"type": "number", "exclusiveMinimum": 0},
        "edges": {
            "type": "object",
            "properties": {"body": {"type": "string", "pattern": "^b:"}},
            "required": ["body"],
        },
        "count": {"type": "integer", "minimum": 1},
    },
    "required": ["length"],
    "additionalProperties": False,
}


def test_a_valid_value_has_no_errors_and_an_invalid_one_has_the_references() -> None:
    assert schema_errors(SCHEMA, {"length": 2, "edges": {"body": "b:plate"}, "count": 2.0}) == []
    bad = {"length": -1, "edges": {"body": "plate"}, "extra": 1}
    found = schema_errors(SCHEMA, bad)
    expected = sorted(
        Draft202012Validator(SCHEMA).iter_errors(bad), key=lambda e: [str(p) for p in e.path]
    )
    assert [(e.message, list(e.path)) for e in found] == [
        (e.message, list(e.path)) for e in expected
    ]
    assert len(found) == 3


def test_a_value_the_fast_validator_cannot_take_is_judged_by_the_reference() -> None:
    # a tuple is no JSON the Rust validator reads; python-jsonschema says what it says
    assert schema_errors({"type": "array"}, (1, 2)) != []
    assert schema_errors({"type": "object"}, {"a": object()}) == []


def test_a_valid_value_does_not_import_python_jsonschema() -> None:
    code = (
        "import sys\n"
        "from aira_core.schema_errors import schema_errors\n"
        "assert schema_errors({'type': 'object', 'required': ['a']}, {'a': 1}) == []\n"
        "print('jsonschema' in sys.modules)\n"
        "assert schema_errors({'type': 'object', 'required': ['a']}, {}) != []\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
