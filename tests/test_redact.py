"""redact(): what must never reach a message, a log or a store is removed from exception
texts before they become diagnostics — credentials and private absolute paths — and
ordinary text passes unchanged."""

from __future__ import annotations

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
