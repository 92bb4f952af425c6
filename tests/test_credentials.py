"""credentials.py: env, dotenv and auth-file sources read at call time; redaction."""

from __future__ import annotations

import json
from collections.abc import Callable
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
from reasonwire.errors import ConfigError, CredentialError, ServerError
from reasonwire.routes import route_from_table
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
    for spec in ("", "dotenv:nofragment", "dotenv:#x", "authfile:#x", "ftp:thing", "1BAD"):
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


# --------------------------------------------------------------------------------------------
# The one key model: sources, the dotenv fallback, the re-read rule, the heuristics
# --------------------------------------------------------------------------------------------


def _planted_key(tag: str) -> str:
    """A key-free value long enough to be registered (no key-shaped literal is tracked)."""
    return f"rwtest-{tag}-" + "0a1b2c3d" * 3


def test_each_source_kind_reads_its_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_key, dot_key, auth_key = _planted_key("env"), _planted_key("dot"), _planted_key("auth")
    monkeypatch.setenv("RW_MODEL_KEY", env_key)
    dotenv = tmp_path / "keys.env"
    dotenv.write_text(f"RW_DOT_KEY={dot_key}\n")
    auth = tmp_path / "auth.json"
    auth.write_text(json.dumps({"p": {"key": auth_key}}))
    table = [
        (EnvKey("RW_MODEL_KEY"), env_key),
        (DotenvKey(str(dotenv), "RW_DOT_KEY"), dot_key),
        (AuthFileKey(str(auth), ("p.key",)), auth_key),
    ]
    for source, want in table:
        assert read_key(source) == want
        assert credentials.read_first([source]) == want


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: EnvKey("RW_UNSET_KEY"), "environment variable RW_UNSET_KEY is not set"),
        (lambda d: DotenvKey(str(d / "keys.env"), "ABSENT"), "ABSENT is not set in dotenv file"),
        (lambda d: AuthFileKey(str(d / "auth.json"), ("p.none",)), "no key at p.none in auth file"),
    ],
)  # fmt: skip
def test_a_missing_key_names_its_source(
    tmp_path: Path, make: Callable[[Path], credentials.KeySource], message: str
) -> None:
    (tmp_path / "keys.env").write_text("OTHER=1\n")
    (tmp_path / "auth.json").write_text(json.dumps({"p": {"key": ""}}))
    source = make(tmp_path)
    with pytest.raises(CredentialError, match=message):
        read_key(source)
    assert credentials.read_first([source]) is None  # absent: nothing, not an error


def test_a_variable_not_set_is_read_from_the_named_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_file, from_env = _planted_key("file"), _planted_key("environ")
    dotenv = tmp_path / "keys.env"
    dotenv.write_text(f"RW_FALLBACK_KEY={from_file}\nRW_SECOND_KEY={from_file}x\n")
    monkeypatch.delenv("RW_FALLBACK_KEY", raising=False)
    monkeypatch.delenv("RW_SECOND_KEY", raising=False)
    src = EnvKey("RW_FALLBACK_KEY")
    assert read_key(src, dotenv=str(dotenv)) == from_file
    missing = tmp_path / "missing.env"
    with pytest.raises(CredentialError) as err:
        read_key(src, dotenv=str(missing))  # a missing file holds nothing
    assert str(err.value).endswith(f"RW_FALLBACK_KEY is not set (nor in dotenv file {missing})")
    with pytest.raises(CredentialError) as err:
        read_key(src)  # no dotenv named: the environment only
    assert str(err.value) == "environment variable RW_FALLBACK_KEY is not set"
    # every variable of the environment wins over every dotenv entry, in order
    both = [EnvKey("RW_FALLBACK_KEY"), EnvKey("RW_SECOND_KEY")]
    monkeypatch.setenv("RW_SECOND_KEY", from_env)
    assert credentials.read_first(both, dotenv=str(dotenv)) == from_env
    monkeypatch.delenv("RW_SECOND_KEY")
    assert credentials.read_first(both, dotenv=str(dotenv)) == from_file
    monkeypatch.setenv("RW_FALLBACK_KEY", from_env)
    assert read_key(src, dotenv=str(dotenv)) == from_env


def test_a_key_that_cannot_go_in_a_header_is_refused_without_showing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spaced = _planted_key("a") + " " + _planted_key("b")
    monkeypatch.setenv("RW_SPACED_KEY", spaced)
    with pytest.raises(CredentialError, match="environment variable RW_SPACED_KEY") as err:
        read_key(EnvKey("RW_SPACED_KEY"))
    assert _planted_key("a") not in str(err.value) and "cannot be sent in a header" in str(
        err.value
    )
    assert credentials.check_key("  " + _planted_key("c") + "\n", "x") == _planted_key("c")
    assert redact(_planted_key("c")) == REDACTED  # registered as it was read


def test_only_a_file_can_change_under_a_running_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-read rule (issue 26): a 401 is worth a wait and a second read only when the key
    comes from a file its owner can rewrite meanwhile."""
    monkeypatch.setenv("RW_SET_KEY", "x")
    monkeypatch.delenv("RW_UNSET_KEY", raising=False)
    dotenv = str(tmp_path / "keys.env")
    table = [
        (None, None, False),  # no key at all
        (EnvKey("RW_SET_KEY"), None, False),
        (EnvKey("RW_SET_KEY"), dotenv, False),  # the environment's value is the one read
        (EnvKey("RW_UNSET_KEY"), None, False),
        (EnvKey("RW_UNSET_KEY"), dotenv, True),  # read from the dotenv file
        (DotenvKey(dotenv, "K"), None, True),
        (AuthFileKey(str(tmp_path / "auth.json"), ("a.b",)), None, True),
    ]
    for source, fallback, want in table:
        assert credentials.can_change(source, dotenv=fallback) is want, (source, fallback)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("OPENAI_API_KEY", "a string of 14 characters"),  # a variable name: words
        ("x", "a string of 1 character"),
        ("sk-" + "short", "a key-shaped string of 8 characters"),  # a known prefix
        ("AKIA" + "QWERTYUIOPASDFGH", "a key-shaped string of 20 characters"),
        ("abcDEF123" * 3, "a key-shaped string of 27 characters"),  # a long mix of cases, digits
        ("abcDEF123", "a string of 9 characters"),  # the same mix, too short to be a key
        ("abcDEF1234" * 2, "a key-shaped string of 20 characters"),  # from 20 characters
        ("abcDEF123" * 2 + "4", "a string of 19 characters"),
        # a path mixes cases and digits too: described on the safe side (check_name's
        # path=True judges a path by prefixes and shapes only)
        ("/home/Me/keys2024/.env", "a key-shaped string of 22 characters"),
    ],
)
def test_the_secret_heuristics(text: str, kind: str) -> None:
    assert credentials.describe(text) == kind
    assert credentials.looks_like_key(text) is ("key-shaped" in kind)


def test_names_that_look_like_keys_are_refused() -> None:
    credentials.check_name("OPENAI_API_KEY", "key_env=")
    credentials.check_name("/home/Me/keys2024/.env", "a path", path=True)  # paths mix cases
    for bad, path in (
        ("sk-" + "k" * 30, False),
        ("abcDEF123" * 3, False),
        ("hf_" + "a1B2" * 9, True),
    ):
        with pytest.raises(ConfigError) as err:
            credentials.check_name(bad, "where", path=path)
        assert bad not in str(err.value) and "looks like a key" in str(err.value)
    assert credentials.check_env_name("RW_OK", "key_env=") == "RW_OK"
    for bad_name in ("not a name", "1ABC", b"RW_OK"):
        with pytest.raises(ConfigError, match="takes the name of an environment variable"):
            credentials.check_env_name(bad_name, "key_env=")


def test_routes_take_one_key_source(tmp_path: Path) -> None:
    base = {"kind": "chat", "base_url": "http://h/v1"}
    assert route_from_table("a", {**base, "key_env": "RW_K"}).key == EnvKey("RW_K")
    auth = route_from_table("b", {**base, "auth_file": "/a.json", "key_paths": ["p.k"]})
    assert auth.key == AuthFileKey("/a.json", ("p.k",))
    dot = route_from_table("c", {**base, "key": "dotenv:/k.env#RW_K"})
    assert dot.key == DotenvKey("/k.env", "RW_K")
    assert route_from_table("d", base).key is None
    with pytest.raises(ConfigError, match="one key source, not key_env and auth_file"):
        route_from_table("e", {**base, "key_env": "RW_K", "auth_file": "/a.json"})
    with pytest.raises(ConfigError, match="bad key source"):
        route_from_table("f", {**base, "key": "ftp:x"})
    for key, value, what in (
        ("key_env", 3, "a string"),
        ("key_paths", "p.k", "a list of strings"),
        ("headers", {"x-a": 1}, "a table of strings"),
        ("auth_scheme", None, "a string"),
    ):
        extra = {"auth_file": "/a.json"} if key == "key_paths" else {}
        with pytest.raises(ConfigError, match=f"route g: {key} must be {what}"):
            route_from_table("g", {**base, **extra, key: value})


def test_the_auth_header_rule_is_the_routes_for_the_gateway_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A gateway registration's upstream is a route record: the same header shapes
    (``authorization: Bearer K``; ``x-api-key: K``) and the key from its variable."""
    from reasonwire.govern.registry import RouteRegistration

    key = _planted_key("gw")
    monkeypatch.setenv("RW_GW_KEY", key)
    common = {"provider": "p", "model": "m", "qualification_id": "q", "levels": {}}
    bearer = RouteRegistration(
        "r1", dialect="chat", upstream_base_url="http://up/v1/", credential_env="RW_GW_KEY",
        **common,
    )  # fmt: skip
    plain = RouteRegistration(
        "r2", dialect="anthropic", upstream_base_url="http://up/v1", credential_env="RW_GW_KEY",
        auth_header="x-api-key", auth_scheme="", headers={"anthropic-version": "2023-06-01"},
        **common,
    )  # fmt: skip
    none = RouteRegistration("r3", dialect="chat", upstream_base_url="http://up", **common)
    for reg, want in (
        (bearer, {"authorization": "Bearer " + key}),
        (plain, {"x-api-key": key, "anthropic-version": "2023-06-01"}),
        (none, {}),
    ):
        assert reg.upstream.auth_headers(reg.upstream.read_key(dotenv=None)) == want
    assert bearer.upstream.base_url == "http://up/v1"
    assert key not in repr(bearer)


def test_a_source_named_after_a_key_is_refused_without_showing_it() -> None:
    key = "hf_" + "a1B2" * 9
    fine = [EnvKey("RW_K"), DotenvKey("/home/Me/.env", "RW_K"), AuthFileKey("/a.json", ("p.k",))]
    for source in fine:
        assert credentials.check_source(source) is source
    bad = [EnvKey(key), DotenvKey("/x.env", key), DotenvKey(key, "RW_K")]
    bad += [AuthFileKey(key, ("p.k",)), AuthFileKey("/a.json", ("p.k", key))]
    for source in bad:
        with pytest.raises(ConfigError) as err:
            credentials.check_source(source)
        assert key not in str(err.value) and "looks like a key" in str(err.value)


def test_a_key_read_again_is_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the same value again gives the same header value (stripped); a value that
    cannot go in a header is refused on every read, before and after a good one."""
    monkeypatch.setenv("RW_TEST_KEY", "bad value 0004")
    with pytest.raises(CredentialError, match="cannot be sent in a header"):
        read_key("RW_TEST_KEY")
    monkeypatch.setenv("RW_TEST_KEY", "  spaced-value-0003\t")
    assert read_key("RW_TEST_KEY") == "spaced-value-0003"
    assert read_key("RW_TEST_KEY") == "spaced-value-0003"
    assert redact("a spaced-value-0003 b") == f"a {REDACTED} b"
    monkeypatch.setenv("RW_TEST_KEY", "bad value 0004")
    with pytest.raises(CredentialError, match="cannot be sent in a header"):
        read_key("RW_TEST_KEY")
