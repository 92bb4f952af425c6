"""credentials.py: env, dotenv and auth-file sources read at call time; redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonwire import credentials
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
from reasonwire.secrets_scan import KINDS, format_path, scan_json, scan_text
from tests.govern.planted import Planted, by_label, planted


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
        "ey" + "JhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXZhbHVl",
        "xai" + "-0123456789abcdefghijklmnop",
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


# --------------------------------------------------------------------------------------------
# The one detector (reasonwire.secrets_scan), as redaction uses it
# --------------------------------------------------------------------------------------------


PLANTED = planted()


def _clean(out: str, p: Planted) -> bool:
    return not any(f in out for f in p.fragments())


@pytest.mark.parametrize("p", PLANTED, ids=[p.label for p in PLANTED])
def test_every_shape_is_found_and_redacted(p: Planted) -> None:
    text = f"Error: {p.text} was rejected"
    found = scan_text(text)
    assert [m.kind for m in found] == [p.kind]
    m = found[0]
    assert p.value in text[m.start : m.end]  # the span covers the value...
    assert not any(f in repr(found) for f in p.fragments())  # ...the match never holds it
    out = redact(text)
    assert _clean(out, p) and REDACTED in out and out.endswith(" was rejected")
    assert p.kind in KINDS


def _escape_all(s: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in s)


@pytest.mark.parametrize("p", PLANTED, ids=[p.label for p in PLANTED])
def test_shapes_found_after_json_unescaping(p: Planted) -> None:
    doc = json.dumps({"error": {"message": "bad key " + p.text + " here"}})
    fully = doc.replace(p.value, _escape_all(p.value))  # every character a \\u escape
    first = doc.replace(p.value, _escape_all(p.value[:1]) + p.value[1:])
    double = json.dumps({"body": doc})  # JSON in a JSON string: backslashes escaped again
    for raw in (fully, first, double, json.dumps({"body": fully})):
        assert p.value not in raw or raw is double  # the escaped forms hide it from a raw scan
        assert [m.kind for m in scan_text(raw)] == [p.kind], raw[:80]
        out = redact(raw)
        assert _clean(out, p) and _escape_all(p.value[:8]) not in out
        assert not any(f in json.dumps(json.loads(out)) for f in p.fragments())
        json.loads(out)  # the whole escaped span went: the document still parses


def test_token_split_by_escaped_slashes() -> None:
    tok = "ab12" + "\\/" + "cd34" + "\\/" + "ef56gh78"  # a base64 token as PHP writes it
    raw = '{"h": "Bearer ' + tok + '"}'
    assert [m.kind for m in scan_text(raw)] == ["bearer token"]
    out = redact(raw)
    assert (
        "ef56gh78" not in out and "cd34" not in out and json.loads(out)["h"] == "Bearer [redacted]"
    )


def test_redact_obj_unescapes_keys_and_values() -> None:
    p = by_label("hf")
    rec = {_escape_all(p.value): "x", "nested": [{"t": "see " + _escape_all(p.value)}]}
    out = json.dumps(redact_obj(rec))
    assert _clean(out, p) and _escape_all(p.value[:4]) not in out


def test_loaded_secret_found_escaped() -> None:
    secret = "odd-loaded-secret-" + "q7" * 6
    register_secret(secret)
    assert secret[5:] not in redact('{"echo": "' + _escape_all(secret) + '"}')


def test_near_misses_survive() -> None:
    pub = "-----" + "BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----" + "END PUBLIC KEY-----"
    for text in (
        "uses sk-learn and a task-list",
        "bearer tokens are checked; Bearer authentication is optional",
        "hf_hub_download and ghp_short",
        "carrier EpEgCo4gAb4+9vvWAKIA" + "QX7Z3ABCDEFG1234" + "QuEnsZnNuSXJaINVVvcoApg6Y==",
        pub,  # a public key is not a secret
        "path\\to\\file \\n and \\u00e9",
    ):
        assert scan_text(text) == [], text
        assert redact(text) == text


def test_pem_without_end_redacts_the_rest() -> None:
    text = "key: -----" + "BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + "x" * 50
    assert redact(text) == "key: " + REDACTED


def test_scan_json_paths_never_values() -> None:
    p, q = by_label("akia"), by_label("google")
    doc = {"a": [{"b": p.text}], q.value: {"c": "fine"}, "Authorization": "anything-at-all"}
    hits = scan_json(doc)
    assert {(h.kind, h.path, h.in_key) for h in hits} == {
        (p.kind, ("a", 0, "b"), False),
        (q.kind, (), True),
        ("value of a secret-named field", ("Authorization",), False),
    }
    assert format_path((q.value, "c")) == "[redacted].c"
    assert format_path(("a", 0, "b")) == "a.0.b" and format_path(()) == "(root)"
    assert format_path(("we ird\n",)) == '"we ird\\n"'
    assert not any(f in repr(hits) for f in p.fragments() + q.fragments())


def test_no_key_shaped_literal_is_tracked() -> None:
    here = Path(__file__).parent
    files = [Path(__file__), *sorted((here / "govern").glob("test_*secret*.py"))]
    files += [here / "govern" / "planted.py", here / "govern" / "test_keys_revocation.py"]
    files += [here / "govern" / "test_cli_errors.py", here / "govern" / "test_validator.py"]
    for f in files:
        if f.exists():
            assert scan_text(f.read_text(encoding="utf-8")) == [], f


# -- linear time: measured in bench/bench_secrets.py (1x / 4x / 16x with a baseline), not here


def test_a_key_given_as_a_variable_name_is_never_shown(tmp_path: Path) -> None:
    """A key pasted where a variable name belongs (``AKIA...``, ``hf_...`` are valid names)
    is reported by length only."""
    dotenv = tmp_path / ".env"
    dotenv.write_text("OTHER=1\n")
    for key in ("AKIA" + "QWERTYUIOPASDFGH", "hf_" + "a1B2" * 9, "ghp_" + "Z9y8" * 9):
        for source in (credentials.EnvKey(key), credentials.DotenvKey(str(dotenv), key)):
            with pytest.raises(credentials.CredentialError) as err:
                credentials.read_key(source)
            leaked = key in str(err.value)
            assert not leaked, "the key was shown"  # never the value, even in this failure
            assert "characters" in str(err.value)
    with pytest.raises(credentials.CredentialError, match="RW_SURELY_UNSET_VARIABLE"):
        credentials.read_key(credentials.EnvKey("RW_SURELY_UNSET_VARIABLE"))


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        ("Groq API key", "gsk_" + "a1B2c3D4" * 6),  # Groq: keys start with gsk_
        ("Cerebras API key", "csk-" + "q9w8e7r6" * 6),
        ("NVIDIA API key", "nvapi-" + "Zx_9-Yw8" * 8),
        ("Replicate API token", "r8_" + "M4n5B6v7" * 5),  # Replicate: 40 chars, r8_ first
    ],
)
def test_provider_keys_are_found_and_redacted(kind: str, key: str) -> None:
    """The one detector knows the key prefixes of every provider in the routes table
    (sources in ``govern/validator.py`` PROVIDER_KEYS): redaction removes what the evidence
    validator refuses."""
    text = f"upstream said: bad key {key} (retry)"
    assert [m.kind for m in scan_text(text)] == [kind]
    assert key not in redact(text) and "(retry)" in redact(text)
    assert scan_text(f"x{key}") == []  # glued to a key character: not a key's start
