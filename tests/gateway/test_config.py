"""Provider settings (aira_core.gateway.config): providers.toml read through the one input
reader, every bad file a PROVIDER_CONFIG_INVALID naming the file and key path and never a
value, every API key registered with the redactor (diagnostics.register_secret)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aira_core.diagnostics import AiraError, Diagnostic, redact, redact_value, register_secret
from aira_core.gateway.chat import Prices
from aira_core.gateway.config import PROVIDERS_FILE, ProviderSettings, key_from_env, load_settings
from aira_core.gateway.http import DEFAULT_TIMEOUTS, Timeouts

VALID = """
[providers.deepseek]
base_url = "https://api.deepseek.com/"
models = ["deepseek-flash", "deepseek-v4-pro"]
api_key_env = "AIRA_TEST_DEEPSEEK_API_KEY"
timeouts = { connect = 5, read = 600 }

[providers.deepseek.prices.deepseek-flash]
hit = 0.006
miss = 0.30
output = 1.2

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
models = ["tiny.gguf"]
transport = "json"
api_key = "local-plain-secret-value-42"
"""


def write(home: Path, text: str | bytes) -> Path:
    path = home / PROVIDERS_FILE
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def invalid(home: Path, text: str | bytes) -> AiraError:
    write(home, text)
    with pytest.raises(AiraError) as info:
        load_settings(home)
    return info.value


def test_no_file_is_no_providers(tmp_path: Path) -> None:
    assert load_settings(tmp_path) == {}


def test_a_valid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRA_TEST_DEEPSEEK_API_KEY", " env-key-value-0815 \n")
    write(tmp_path, VALID)
    got = load_settings(tmp_path)
    assert set(got) == {"deepseek", "local"}
    ds = got["deepseek"]
    assert ds == ProviderSettings(
        name="deepseek",
        base_url="https://api.deepseek.com",
        models=("deepseek-flash", "deepseek-v4-pro"),
        api_key="env-key-value-0815",
        api_key_env="AIRA_TEST_DEEPSEEK_API_KEY",
        transport="tool",
        timeouts=Timeouts(connect=5.0, read=600.0),
        prices={"deepseek-flash": Prices(0.006, 0.30, 1.2)},
    )
    assert not ds.key_missing
    local = got["local"]
    assert (local.transport, local.api_key, local.timeouts, local.prices) == (
        "json",
        "local-plain-secret-value-42",
        DEFAULT_TIMEOUTS,
        {},
    )
    for key in ("env-key-value-0815", "local-plain-secret-value-42"):
        assert key not in repr(got)  # settings never show a key
        assert redact(f"x {key} y") == "x <redacted> y"  # and it is scrubbed everywhere


def test_an_unset_key_variable_is_a_missing_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIRA_TEST_DEEPSEEK_API_KEY", raising=False)
    write(tmp_path, VALID)
    ds = load_settings(tmp_path)["deepseek"]
    assert ds.api_key is None and ds.key_missing


def test_a_key_from_the_environment_is_stripped_and_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one reader of a key variable (the settings file's ``api_key_env`` and a
    provider's own both use it): a blank or unset variable is no key. The variable's name
    is not credential-like, so only the registration scrubs the key."""
    monkeypatch.setenv("AIRA_TEST_LLM_ACCESS", "\t shapeless words of a key \n")
    assert key_from_env("AIRA_TEST_LLM_ACCESS") == "shapeless words of a key"
    assert redact("a shapeless words of a key b") == "a <redacted> b"
    monkeypatch.setenv("AIRA_TEST_LLM_ACCESS", "  ")
    assert key_from_env("AIRA_TEST_LLM_ACCESS") is None
    monkeypatch.delenv("AIRA_TEST_LLM_ACCESS")
    assert key_from_env("AIRA_TEST_LLM_ACCESS") is None


def test_every_key_is_optional_and_kind_defaults_to_the_name(tmp_path: Path) -> None:
    write(
        tmp_path, '[providers.deepseek]\n[providers.ollama]\nkind = "openai"\noptions = { x = 1 }\n'
    )
    got = load_settings(tmp_path)
    assert got["deepseek"] == ProviderSettings(name="deepseek", kind="deepseek")
    assert (got["deepseek"].base_url, got["deepseek"].models) == (None, ())
    assert (got["ollama"].kind, dict(got["ollama"].options)) == ("openai", {"x": 1})


def test_an_empty_file_and_an_empty_providers_table(tmp_path: Path) -> None:
    write(tmp_path, "")
    assert load_settings(tmp_path) == {}
    write(tmp_path, "[providers]\n")
    assert load_settings(tmp_path) == {}


HEAD = '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\n'
BAD = [
    ("not toml", 'base_url = "x\n', "is not valid TOML (at line 1"),
    ("not utf-8", b'[providers.a]\nbase_url = "\xff"\n', "is not UTF-8"),
    ("unknown top key", "[other]\nx = 1\n", "other is not a setting"),
    ("providers not a table", "providers = 3\n", "providers must be a table"),
    (
        "bad name",
        '[providers."Big Name"]\nbase_url = "http://x"\nmodels = ["m"]\n',
        "not a provider name",
    ),
    ("provider not a table", "[providers]\na = 1\n", "providers.a must be a table"),
    (
        "unknown key",
        HEAD + 'model = "m"\n',
        "providers.a.model is not a setting",
    ),
    ("bad kind", HEAD + 'kind = "Open AI"\n', "providers.a.kind must be a provider plugin"),
    ("options not a table", HEAD + "options = 3\n", "providers.a.options must be a table"),
    (
        "bad base_url",
        '[providers.a]\nbase_url = "ftp://x"\nmodels = ["m"]\n',
        "providers.a.base_url must be an http",
    ),
    (
        "base_url with a key",
        '[providers.a]\nbase_url = "https://x/?key=s3cr3tvalue9"\nmodels = ["m"]\n',
        "query",
    ),
    ("base_url not a string", '[providers.a]\nbase_url = 7\nmodels = ["m"]\n', "base_url must be"),
    ("models not a list", '[providers.a]\nmodels = "m"\n', "providers.a.models must be"),
    ("empty model name", '[providers.a]\nmodels = [""]\n', "models must be"),
    (
        "model twice",
        '[providers.a]\nbase_url = "http://x"\nmodels = ["m", "m"]\n',
        "names a model twice",
    ),
    (
        "both keys",
        HEAD + 'api_key = "aaaaaaaaaaaa"\napi_key_env = "K"\n',
        "both set",
    ),
    (
        "key not a string",
        HEAD + "api_key = 12345678\n",
        "api_key must be",
    ),
    (
        "bad env name",
        HEAD + 'api_key_env = "NOT A NAME"\n',
        "api_key_env must be",
    ),
    (
        "bad transport",
        HEAD + 'transport = "Tool Calls"\n',
        "transport must be",
    ),
    (
        "timeouts not a table",
        HEAD + "timeouts = 5\n",
        "timeouts must be a table",
    ),
    (
        "unknown timeout",
        HEAD + "timeouts = { total = 5 }\n",
        "timeouts.total is not a timeout",
    ),
    (
        "zero timeout",
        HEAD + "timeouts = { read = 0 }\n",
        "timeouts.read must be a positive",
    ),
    (
        "bool timeout",
        HEAD + "timeouts = { read = true }\n",
        "timeouts.read must be",
    ),
    (
        "inf timeout",
        HEAD + "timeouts = { read = inf }\n",
        "timeouts.read must be",
    ),
    (
        "price of another model",
        HEAD + "[providers.a.prices.z]\nhit = 0\nmiss = 0\noutput = 0\n",
        "prices.z is not one of",
    ),
    (
        "price incomplete",
        HEAD + "[providers.a.prices.m]\nhit = 0\n",
        "exactly hit, miss, output",
    ),
    (
        "negative price",
        HEAD + "[providers.a.prices.m]\nhit = -1\nmiss = 0\noutput = 0\n",
        "prices.m.hit must be a number",
    ),
]


@pytest.mark.parametrize(("case", "text", "says"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_file_is_a_stable_code_naming_file_and_key_path(
    tmp_path: Path, case: str, text: str | bytes, says: str
) -> None:
    err = invalid(tmp_path, text)
    assert err.code == "PROVIDER_CONFIG_INVALID"
    message = err.diagnostic.message
    assert says in message, message
    assert message.startswith(f"{PROVIDERS_FILE} in AIRA_HOME")
    assert str(tmp_path) not in message and "Traceback" not in message


def test_a_message_never_quotes_a_value(tmp_path: Path) -> None:
    secret = "zz-value-never-shown-31337"
    cases = [
        f'[providers.a]\nbase_url = "{secret}"\nmodels = ["m"]\n',
        f'[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\ntransport = "{secret} x"\n',
        f'[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\napi_key = "{secret}"\nmodel = 1\n',
        f'[providers.a]\nbase_url = "http://x"\nmodels = "{secret}"\n',
        f'[providers.a]\nbase_url = "http://x" "{secret}"\n',  # a TOML syntax error beside it
    ]
    for text in cases:
        err = invalid(tmp_path, text)
        assert secret not in str(err) and secret not in err.diagnostic.model_dump_json()


def test_a_key_in_a_file_that_fails_is_still_registered(tmp_path: Path) -> None:
    key = "odd-shaped-key-in-a-broken-file"
    invalid(tmp_path, f'[providers.a]\napi_key = "{key}"\nmodels = 3\n')
    assert redact(key) == "<redacted>"


def test_the_error_points_at_the_key(tmp_path: Path) -> None:
    err = invalid(
        tmp_path, '[providers.a]\nbase_url = "http://x"\nmodels = ["m"]\ntimeouts = { read = -1 }\n'
    )
    assert err.diagnostic.pointer == "/providers/a/timeouts/read"


def test_the_one_input_reader_refuses_what_is_not_a_small_regular_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / PROVIDERS_FILE).mkdir()
    with pytest.raises(AiraError) as info:
        load_settings(tmp_path)
    assert info.value.code == "INPUT_NOT_FILE"
    (tmp_path / PROVIDERS_FILE).rmdir()
    monkeypatch.setenv("AIRA_MAX_KEY_BYTES", "100")
    write(tmp_path, "# " + "x" * 200 + "\n")
    with pytest.raises(AiraError) as info:
        load_settings(tmp_path)
    assert info.value.code == "INPUT_TOO_LARGE"


def test_an_unreadable_file_is_invalid(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    path = write(tmp_path, VALID)
    path.chmod(0)
    try:
        with pytest.raises(AiraError) as info:
            load_settings(tmp_path)
    finally:
        path.chmod(0o600)
    assert info.value.code == "PROVIDER_CONFIG_INVALID"
    assert "providers.toml" in str(info.value) and str(tmp_path) not in str(info.value)


def test_a_dangling_symlink_is_not_no_file(tmp_path: Path) -> None:
    (tmp_path / PROVIDERS_FILE).symlink_to(tmp_path / "gone.toml")
    with pytest.raises(AiraError) as info:
        load_settings(tmp_path)
    assert info.value.code == "PROVIDER_CONFIG_INVALID"


# -- diagnostics.register_secret --------------------------------------------------------------


def test_register_secret_scrubs_a_value_of_any_shape_everywhere() -> None:
    value = "harmless looking words"  # no anchor, no key shape: only registration finds it
    text = f"error: {value}!"
    assert redact(text) == text  # not yet registered (and the compiled pattern is cached)
    register_secret(value)
    assert redact(text) == "error: <redacted>!"
    assert redact_value({"k": [value], value: 1}) == {"k": ["<redacted>"], "<redacted>": 1}
    assert Diagnostic(code="X_Y", message=f"m {value}").message == "m <redacted>"
    register_secret(value)  # twice is once
    assert redact(text) == "error: <redacted>!"


def test_register_secret_ignores_short_values() -> None:
    register_secret("1234567")
    register_secret("")
    assert redact("pin 1234567 ok") == "pin 1234567 ok"


def test_registered_and_environment_secrets_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "environment-held-value-1")
    register_secret("registered-held-value-2")
    assert redact("environment-held-value-1 registered-held-value-2") == "<redacted> <redacted>"
