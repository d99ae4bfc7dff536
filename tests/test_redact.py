"""redact(): what must never reach a message, a log or a store is removed from exception
texts before they become diagnostics — credentials and private absolute paths — and
ordinary text passes unchanged."""

from __future__ import annotations

import json

import pytest

from aira_core.diagnostics import redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("failed: Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
        ("headers={'Authorization': 'Bearer abcdefghijkl'}", "abcdefghijkl"),
        ("401 for key sk-live-0123456789abcdef", "sk-live-0123456789abcdef"),
        ("key=sk-ant-api03-abcdefgh12345", "sk-ant-api03-abcdefgh12345"),
        ("api_key=abc123secretvalue; retrying", "abc123secretvalue"),
        ("GET https://b.s3.example/x?X-Amz-Signature=deadbeef1234&y=1", "deadbeef1234"),
        ("client_secret: 0a1b2c3d4e5f6g7h", "0a1b2c3d4e5f6g7h"),
    ],
)
def test_credentials_are_removed(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "<redacted>" in out


def test_the_value_of_a_credential_variable_is_removed_whatever_its_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "plain words 1234")
    assert redact("the provider said 'plain words 1234' is wrong") == (
        "the provider said '<redacted>' is wrong"
    )


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=4096",
        "capsule 29049 > 24000 host tokens: trimmed",
        "monkey=banana",
        "budgetTokens: 32000/200000",
        "signature: SIGNATURE_INVALID",
        "FILLET_RADIUS_TOO_LARGE: radius 6 mm does not fit",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_every_diagnostic_message_is_redacted() -> None:
    # Messages echo user input and exception texts into output, stores and trajectories.
    from aira_core.diagnostics import AiraError, Diagnostic

    found = Diagnostic(code="QUERY_TARGET_UNKNOWN", message="'sk-ant-api03-abcdefgh' is no body")
    assert found.message == "'<redacted>' is no body"
    assert "abcdefghijkl" not in str(AiraError("X", "Authorization: Bearer abcdefghijkl"))


# -- the forms issue 13 found unredacted, and the other credential formats -----------------------

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
    "-----END RSA PRIVATE KEY-----"
)


CREDENTIALS = [
    ('{"Authorization": "Basic dXNlcjpodW50ZXIy"}', "dXNlcjpodW50ZXIy"),
    ("'Authorization': 'Basic dXNlcjpodW50ZXIy'", "dXNlcjpodW50ZXIy"),
    ("proxy-authorization=Digest abc123def456", "abc123def456"),
    ('token="t0kenvalue99"', "t0kenvalue99"),
    ("{'token': 'a1b2c3d4e5'}", "a1b2c3d4e5"),
    ("key=abc123def456", "abc123def456"),
    ("secret_key=onlyletters", "onlyletters"),
    ("private_key=hunter2!", "hunter2!"),
    ('"client_secret": "with spaces in it"', "with spaces in it"),
    ("db_password: hunter", "hunter"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0"),
    ("gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "A1b2C3d4E5f6G7h8I9j0"),
    ("github_pat_11ABCDEFG0_abcdefghijklmnopqrstuv", "abcdefghijklmnopqrstuv"),
    ("id AKIAIOSFODNN7EXAMPLE used", "IOSFODNN7EXAMPLE"),
    ("ASIAY34FZKBOKMUTVV7A", "Y34FZKBOKMUTVV7A"),
    ("clone https://alice:pa55word@example.com/repo.git", "pa55word"),
    ("deepseek sk-0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ("sk-proj-abcdefgh12345678", "abcdefgh12345678"),
    ("xoxb-123456789012-abcdefghijkl", "abcdefghijkl"),
    ("https://acct.blob.core.windows.net/c?sv=2024&sig=AbC%2Fdef", "AbC%2Fdef"),
    ("https://x/o?X-Amz-Credential=AKID/2026/s3&X-Amz-Security-Token=FQoG", "FQoG"),
    (PEM, "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu"),
    (
        PEM.split("-----END")[0],
        "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu",
    ),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFU",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFU",
    ),
    ("Basic dXNlcjpodW50ZXIy, anywhere", "dXNlcjpodW50ZXIy"),
    ("password=hunter2 and /home/alice/notes.txt", "alice"),
    ("C:\\Users\\carol\\key.pem", "carol"),
]


@pytest.mark.parametrize("name", ["secret_key", "private_key", "password", "api_key"])
@pytest.mark.parametrize("value", ["x", "ab", "hunter2"])
def test_a_credential_named_as_such_is_removed_however_short(name: str, value: str) -> None:
    assert redact(f"{name}={value}") == f"{name}=<redacted>"
    assert redact(f'"{name}": "{value}"') == f'"{name}": "<redacted>"'


@pytest.mark.parametrize(("text", "secret"), CREDENTIALS)
def test_every_credential_format_is_removed(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert redact(out) == out  # redacting again changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "Authorization: Bearer abcdefghijklmnop",
        "/home/alice/x",
        "password=hunter2",
    ],
)
def test_a_credential_quoted_as_json_or_repr_is_removed(text: str) -> None:
    # Messages quote values with json.dumps or repr(): "\n" before a token is no word boundary
    # the redactor may rely on.
    secret = text[-10:]
    for quoted in (json.dumps(f"x\n{text}"), repr(f"x\n{text}"), json.dumps({"v": f"a\n{text}"})):
        assert secret not in redact(quoted), quoted


@pytest.mark.parametrize(
    "text",
    [
        "rev:sha256:1442b44f7cf76e73f19895994f95ee4c370520b0afdbdd2a4c8a5db582e0c5e2",
        "blk:sha256:abc123 lock:sha256:0a1b2c plan:sha256:ffee",
        "key=rev:sha256:1442b44f7cf76e73f1",
        "cap:exact.fillet@1 validate.volumeRange@1.0.0 query.massProperties@1.0.0",
        "b:plate n:extrude1 p:hole_d a:1e6687194feb",
        "radius 6 mm, 0.2 cm, 45 deg, volume 57197.9 mm3",
        "authorization: allowed",
        "authoringLockHash=lock:sha256:abc123",
        "design a keyway; basic shapes; Basic extrusion",
        "token budget 32000, tokens: 96k",
        "the signature is SIGNATURE_INVALID; key id 0a1b2c3d4e5f6a7b",
        "https://example.com/home/index.html?page=2&sort=asc",
        "--dir /var/tmp/x and /usr/tmp",
        "publicKey=AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        '{"axis": {"value": "Z"}, "face": {"select": ">Z"}}',
    ],
)
def test_cad_text_and_ids_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_the_fast_test_never_skips_a_text_the_rules_would_change() -> None:
    # redact() runs the rules only when a literal anchor occurs: every rule's match must hold
    # one, in a value and in its JSON alike.
    from aira_core.diagnostics import _redactor, may_hold_secrets

    redactor = _redactor()
    samples = [text for text, _ in CREDENTIALS]
    for text in samples:
        for form in (text, json.dumps(text), text.upper(), text.title()):
            full = redactor.pattern.sub(redactor._replace, form)
            if full != form:
                assert may_hold_secrets(form), form
                assert redact(form) == full


def test_redact_value_redacts_every_string_keys_included() -> None:
    from aira_core.diagnostics import redact_value

    value = {"token=abc123def456": ["ghp_A1b2C3d4E5f6G7h8I9j0", ("sk-abcdefghijkl", 3)], "n": 1.5}
    out = redact_value(value)
    assert out == {"token=<redacted>": ["<redacted>", ("<redacted>", 3)], "n": 1.5}
    assert redact_value(["b:plate", 2, None, True]) == ["b:plate", 2, None, True]


def test_every_field_of_a_diagnostic_is_redacted_also_in_a_copy() -> None:
    from aira_core.diagnostics import Diagnostic

    secret = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2"
    d = Diagnostic(
        code="X",
        message=secret,
        subject=secret,
        pointer=f"/{secret}",
        affected=[secret],
        expected={secret: secret},
        actual=[secret],
        cause=secret,
        repairs=[secret],
    )
    assert secret not in d.model_dump_json() and secret not in str(d)
    copied = d.model_copy(update={"subject": secret, "phase": secret, "actual": {"k": secret}})
    assert secret not in copied.model_dump_json()
    assert d.code == "X"


def test_json_output_is_redacted_as_a_last_line() -> None:
    from aira_core.cli._output import _json_text

    out = _json_text({"uncertainty": {"referenceResolution": {"b:AKIAIOSFODNN7EXAMPLE": "x"}}})
    assert "IOSFODNN7EXAMPLE" not in out and json.loads(out)
    plain = {"rev": "rev:sha256:" + "ab" * 32, "items": [{"label": "plate", "value": 8}]}
    assert json.loads(_json_text(plain)) == plain


def test_private_paths_are_named_not_shown(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import tempfile

    monkeypatch.setenv("AIRA_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert redact(f"wrote {tmp_path}/home/runs/x") == "wrote $AIRA_HOME/runs/x"
    assert redact(f"cannot read {tempfile.gettempdir()}/y") == "cannot read <tmp>/y"
    assert redact(json.dumps(f"a\n{tmp_path}/home/z")) == json.dumps("a\n$AIRA_HOME/z")


def test_redaction_changes_nothing_of_the_bundled_demo_scripts() -> None:
    # The demo's decisions, intents and starting documents hold no credential: redacting
    # them (as load_script does) changes no byte, so the demo's task ids, trajectories and
    # head revisions are what they were.
    from importlib import resources

    from aira_core.diagnostics import redact_value
    from aira_core.step.runner import BUNDLED

    for name in BUNDLED:
        raw = json.loads(
            resources.files("aira_core.step").joinpath("scripts", f"{name}.json").read_text()
        )
        assert redact_value(raw) == raw, name
