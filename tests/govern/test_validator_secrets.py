"""Evidence carrying a credential is refused naming only the kind and the JSON path; no output
(stdout, stderr, exception text) holds the planted value. The scan's linear time is measured in
``bench/bench_validator.py`` (1x/4x/16x inputs, the ratio printed), not asserted here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonwire.errors import EvidenceError
from reasonwire.govern.cli.qualify import app
from reasonwire.govern.validator import validate_text
from tests.govern.planted import Planted, by_label, planted
from tests.govern.test_validator import good, repo  # noqa: F401  (repo is a fixture)

PLANTED = planted()


def _frags(p: Planted) -> list[str]:
    return p.fragments()


Repo = tuple[Path, str]


def _refused(r: Repo, tmp_path: Path, text: str, secrets: list[str]) -> str:
    """Run the validator on ``text`` (function and CLI); return every output, checked clean."""
    root, head = r
    with pytest.raises(EvidenceError) as info:
        validate_text(text, head)
    f = tmp_path / "ev.json"
    f.write_text(text, encoding="utf-8")
    res = CliRunner().invoke(app, ["validate", "--evidence", str(f), "--repo", str(root)])
    assert res.exit_code == 1, res.output
    outputs = [str(info.value), *info.value.problems, repr(info.value), res.output, res.stderr]
    for out in outputs:
        for s in secrets:
            assert s not in out, "a planted credential was printed"
    return res.output


@pytest.mark.parametrize("p", PLANTED, ids=[p.label for p in PLANTED])
def test_each_kind_in_limitations_refused_by_path(r: Repo, tmp_path: Path, p: Planted) -> None:
    doc = good(r[1])
    doc["limitations"].append("seen: " + p.text)
    out = _refused(r, tmp_path, json.dumps(doc), _frags(p))
    assert f"likely credential ({p.kind}) at limitations.1" in out


def test_hf_token_in_runtime_id(r: Repo, tmp_path: Path) -> None:
    p = by_label("hf")
    doc = good(r[1])
    doc["subject"]["runtime_id"] = p.value
    out = _refused(r, tmp_path, json.dumps(doc), _frags(p))
    assert "likely credential (Hugging Face token) at subject.runtime_id" in out
    assert "PASS" not in out


@pytest.mark.parametrize("label", ["akia", "asia", "google"])
def test_aws_and_google_keys_in_limitations(r: Repo, tmp_path: Path, label: str) -> None:
    p = by_label(label)
    doc = good(r[1])
    doc["limitations"] = [f"ran with {p.value} in the environment"]
    out = _refused(r, tmp_path, json.dumps(doc), _frags(p))
    assert f"likely credential ({p.kind}) at limitations.0" in out


def test_credential_shaped_key_names_are_not_printed(r: Repo, tmp_path: Path) -> None:
    sk, gh, bearer = by_label("sk-proj"), by_label("ghp"), by_label("bearer")
    doc = good(r[1])
    doc[sk.value] = True  # a key-shaped top-level field
    doc["negative_cases"][gh.value] = {"outcome": "failed-closed", "reason": bearer.text}
    out = _refused(r, tmp_path, json.dumps(doc), _frags(sk) + _frags(gh) + _frags(bearer))
    assert "likely credential (sk- key) in a key name at (root)" in out
    assert "likely credential (GitHub token) in a key name at negative_cases" in out
    # a value under a key-shaped key: the path masks that key
    assert "likely credential (bearer token) at negative_cases.[redacted].reason" in out


def test_unknown_case_names_shown_only_when_plain(r: Repo) -> None:
    head = r[1]
    doc = good(head)
    doc["negative_cases"]["made-up"] = {"outcome": "failed-closed", "reason": "x"}
    doc["negative_cases"]["Odd Name: hunter2!"] = {"outcome": "failed-closed", "reason": "x"}
    doc["hidden_reasoning"]["Somewhere Else"] = "absent"
    with pytest.raises(EvidenceError) as info:
        validate_text(json.dumps(doc), head)
    assert "unknown negative case 'made-up'" in info.value.problems
    assert "unknown negative case (a name not shown)" in info.value.problems
    assert "unknown hidden-reasoning place (a name not shown)" in info.value.problems
    assert "hunter2" not in str(info.value) and "Somewhere" not in str(info.value)


def _escape_all(s: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in s)


@pytest.mark.parametrize("label", ["sk-proj", "hf", "akia", "jws"])
def test_json_escaped_credential_refused(r: Repo, tmp_path: Path, label: str) -> None:
    p = by_label(label)
    doc = good(r[1])
    doc["subject"]["runtime_version"] = "@@"
    text = json.dumps(doc).replace('"@@"', '"' + _escape_all(p.value) + '"')
    assert p.value not in text  # only the escaped spelling is in the file
    out = _refused(r, tmp_path, text, [*_frags(p), _escape_all(p.value[:6])])
    assert f"likely credential ({p.kind}) at subject.runtime_version" in out


def test_escaped_slashes_do_not_hide_a_token(r: Repo, tmp_path: Path) -> None:
    doc = good(r[1])
    doc["limitations"] = ["@@"]
    tok = "ab12" + "\\/" + "cd34" + "\\/" + "ef56gh78"
    text = json.dumps(doc).replace('"@@"', '"Authorization: Bear' + "er " + tok + '"')
    out = _refused(r, tmp_path, text, ["ef56gh78", "cd34"])
    assert "likely credential (bearer token) at limitations.0" in out


def test_a_repeated_key_does_not_hide_a_credential(r: Repo, tmp_path: Path) -> None:
    p = by_label("xai")
    doc = good(r[1])
    body = json.dumps(doc)
    text = body[:-1] + ', "limitations": ["' + p.value + '"], "limitations": ["fine"]}'
    assert json.loads(text)["limitations"] == ["fine"]  # a plain parse sees no credential
    out = _refused(r, tmp_path, text, _frags(p))
    assert "likely credential (xai- key) at limitations.0" in out


def test_not_json_reports_a_line(r: Repo, tmp_path: Path) -> None:
    p = by_label("pem")
    text = '{\n  "a": 1,\n' + p.text + "\n"  # not a document: the raw scan still sees it
    out = _refused(r, tmp_path, text, _frags(p))
    assert "likely credential (PEM private key) on line 3" in out


def test_secret_named_field_refused_whatever_its_value(r: Repo, tmp_path: Path) -> None:
    doc = good(r[1])
    doc["subject"]["Authorization"] = "plain-words-not-a-shape"
    out = _refused(r, tmp_path, json.dumps(doc), ["plain-words-not-a-shape"])
    assert "likely credential (value of a secret-named field) at subject.Authorization" in out


def test_many_credentials_are_counted_not_all_listed(r: Repo, tmp_path: Path) -> None:
    p = by_label("sk")
    doc = good(r[1])
    doc["limitations"] = [p.value + "x" * i for i in range(50)]
    out = _refused(r, tmp_path, json.dumps(doc), _frags(p))
    assert out.count("likely credential (sk- key)") == 20
    assert "... and 30 more likely credentials" in out


@pytest.fixture
def r(repo: Repo) -> Repo:  # noqa: F811
    return repo


# -- provider key prefixes (the validator's table) --------------------------------------------
# Shapes from the providers' statements (sources in validator.PROVIDER_KEYS), written here apart
# from the code and built at run time so no key-shaped literal is tracked.
_BODY = "Qx7Rm2Sn5Tb8Vw3YzKp4"  # 20 key characters: the least each rule takes
PREFIXED = [
    ("groq", "Groq API key", "gs" + "k_"),
    ("cerebras", "Cerebras API key", "cs" + "k-"),
    ("cerebras-underscore", "Cerebras API key", "cs" + "k_"),
    ("nvidia", "NVIDIA API key", "nva" + "pi-"),
    ("replicate", "Replicate API token", "r" + "8_"),
]


@pytest.mark.parametrize(("label", "kind", "prefix"), PREFIXED, ids=[p[0] for p in PREFIXED])
def test_provider_key_prefixes_are_refused(
    r: Repo, tmp_path: Path, label: str, kind: str, prefix: str
) -> None:
    key = prefix + _BODY + "aB3xQ9kZ7mW2aB3xQ9kZ7mW2"
    doc = good(r[1])
    doc["limitations"].append(f"ran with {key} set")
    out = _refused(r, tmp_path, json.dumps(doc), [key, key[:16], key[-12:]])
    assert f"likely credential ({kind}) at limitations.1" in out


@pytest.mark.parametrize(("label", "kind", "prefix"), PREFIXED, ids=[p[0] for p in PREFIXED])
def test_provider_prefix_boundary(r: Repo, label: str, kind: str, prefix: str) -> None:
    """20 key characters after the prefix are a key, 19 are not; a prefix glued to a longer
    run (a carrier, an id) is not a key either."""
    head = r[1]
    for text, refused in (
        (prefix + _BODY, True),
        (prefix + _BODY[:-1], False),
        ("x" + prefix + _BODY, False),
        ("-" + prefix + _BODY, False),
        ("/" + prefix + _BODY, True),
    ):
        doc = good(head)
        doc["limitations"].append(text)
        try:
            validate_text(json.dumps(doc), head)
            problems: list[str] = []
        except EvidenceError as e:
            problems = e.problems
        assert any(kind in p for p in problems) is refused, (text, problems)


def test_every_keyed_route_is_in_the_prefix_table() -> None:
    """Each built-in route that needs a key has a row saying how its keys open (or that no
    prefix is documented), named by the route's provider."""
    from reasonwire.govern.validator import PROVIDER_KEYS
    from reasonwire.routes import BUILTIN_ROUTES

    providers = " ".join(row[0] for row in PROVIDER_KEYS)
    for name, route in BUILTIN_ROUTES.items():
        if route.key is not None:
            assert name.split("-")[0] in providers, name
    for provider, prefix, finder, source in PROVIDER_KEYS:
        assert prefix and finder and source, provider
