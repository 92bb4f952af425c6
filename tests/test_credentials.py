"""credentials.py: env, dotenv and auth-file sources read at call time; redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonwire.credentials import (
    REDACTED,
    AuthFileKey,
    DotenvKey,
    EnvKey,
    parse_dotenv,
    parse_source,
    read_key,
    redact,
    redact_obj,
    register_secret,
)
from reasonwire.errors import CredentialError, ServerError


def test_env_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RW_TEST_KEY", "first-value-0001")
    assert read_key(EnvKey("RW_TEST_KEY")) == "first-value-0001"
    monkeypatch.setenv("RW_TEST_KEY", "second-value-0002")
    assert read_key("env:RW_TEST_KEY") == "second-value-0002"  # no caching
    monkeypatch.delenv("RW_TEST_KEY")
    with pytest.raises(CredentialError, match="environment variable RW_TEST_KEY is not set"):
        read_key("RW_TEST_KEY")


def test_dotenv_parser() -> None:
    text = """
# comment
export OPENAI_API_KEY=plain-value-123  # trailing comment
A='single # not a comment'
B="double \\"quoted\\" \\n line"
  C = spaced
D=
not a line
E=x=y
"""
    got = parse_dotenv(text)
    assert got == {
        "OPENAI_API_KEY": "plain-value-123",
        "A": "single # not a comment",
        "B": 'double "quoted" \n line',
        "C": "spaced",
        "D": "",
        "E": "x=y",
    }


def test_dotenv_source(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text('export DEEPSEEK_API_KEY="dotenv-secret-value-42"\nEMPTY=\n', encoding="utf-8")
    assert read_key(DotenvKey(str(env), "DEEPSEEK_API_KEY")) == "dotenv-secret-value-42"
    assert read_key(f"dotenv:{env}#DEEPSEEK_API_KEY") == "dotenv-secret-value-42"
    with pytest.raises(CredentialError, match="EMPTY is not set in dotenv file"):
        read_key(DotenvKey(str(env), "EMPTY"))
    with pytest.raises(CredentialError, match="dotenv file not found"):
        read_key(DotenvKey(str(tmp_path / "missing.env"), "X"))


def test_auth_file_fallback(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    src = parse_source(f"authfile:{auth}#providers.nous.agent_key|access_token")
    assert src == AuthFileKey(
        str(auth), ("providers.nous.agent_key", "providers.nous.access_token")
    )
    auth.write_text(json.dumps({"providers": {"nous": {"access_token": "tok-fallback-777"}}}))
    assert read_key(src) == "tok-fallback-777"
    auth.write_text(
        json.dumps({"providers": {"nous": {"agent_key": "agent-primary-888", "access_token": "t"}}})
    )
    assert read_key(src) == "agent-primary-888"  # re-read: the file changed
    auth.write_text(json.dumps({"providers": {"nous": {"agent_key": ""}}}))
    with pytest.raises(CredentialError) as info:
        read_key(src)
    assert "providers.nous.agent_key or providers.nous.access_token" in str(info.value)
    assert str(auth) in str(info.value)


def test_auth_file_malformed_does_not_quote_contents(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text('{"providers": {"nous": {"agent_key": "leaky-secret-value-5"')
    with pytest.raises(CredentialError) as info:
        read_key(AuthFileKey(str(auth), ("providers.nous.agent_key",)))
    assert "not valid JSON" in str(info.value)
    assert "leaky" not in str(info.value)


def test_bad_source_spec() -> None:
    for spec in ("", "dotenv:nofragment", "authfile:#x", "ftp:thing", "1BAD"):
        with pytest.raises(CredentialError, match="bad key source"):
            parse_source(spec)


def test_loaded_keys_are_redacted_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    odd = "nous-0f1e2d3c4b5a69788796a5b4"  # not key-shaped
    monkeypatch.setenv("RW_ODD_KEY", odd)
    assert redact(f"x {odd} y") == f"x {odd} y"  # not key-shaped: kept until it is loaded
    read_key("env:RW_ODD_KEY")
    assert redact(f"key={odd}!") == f"key={REDACTED}!"
    err = ServerError(500, f'{{"echo": "{odd}"}}', provider_message=f"bad {odd}")
    assert odd not in str(err) and odd not in err.body_excerpt


@pytest.mark.parametrize(
    "secret",
    [
        "sk-" + "proj-abcdefghijklmnopqrstuvwx",  # built: no key-shaped text is tracked
        "sk-" + "ant-api03-AbCdEfGhIjKlMnOpQrStUv",
        "AI" + "zaSyA1234567890abcdefghijklmnopqrstuv",
        "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXZhbHVl",
        "xai-0123456789abcdefghijklmnop",
    ],
)
def test_key_shapes_redacted(secret: str) -> None:
    assert secret not in redact(f"Error: key {secret} rejected")
    assert "Bearer [redacted]" in redact(f"Authorization: Bearer {secret}")


def test_base64_carriers_survive() -> None:
    # a signature that happens to contain "AIza" and "sk-"-free base64 is left alone
    sig = "EpEgCo4gAb4+9vvWAI" + "zaSyA1234567890abcdefghijklmnopqrstuv/QuEnsZnNuSXJaINVVvcoApg6Y=="
    assert redact(sig) == sig
    assert redact("uses sk-learn and a task-list") == "uses sk-learn and a task-list"


def test_redact_obj() -> None:
    register_secret("registered-record-secret-1")
    rec = {
        "headers": {"Authorization": "Bearer whatever", "X-Goog-Api-Key": "g", "accept": "json"},
        "api_key": "short",
        "items": [{"text": "has registered-record-secret-1 inside"}, 3, None, ("t", "u")],
        "carrier": {"signature": "EqQBCkYIBxgCKkB"},
    }
    out = redact_obj(rec)
    assert out == {
        "headers": {"Authorization": REDACTED, "X-Goog-Api-Key": REDACTED, "accept": "json"},
        "api_key": REDACTED,
        "items": [{"text": f"has {REDACTED} inside"}, 3, None, ["t", "u"]],
        "carrier": {"signature": "EqQBCkYIBxgCKkB"},
    }
    assert rec["api_key"] == "short"  # the input is not modified


def test_short_values_not_registered() -> None:
    register_secret("abc")
    assert redact("abc abc") == "abc abc"
