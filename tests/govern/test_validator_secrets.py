"""Evidence carrying a credential is refused naming only the kind and the JSON path; no output
(stdout, stderr, exception text) holds the planted value, and the scan is linear."""

from __future__ import annotations

import json
import random
import string
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reasonwire.govern.qualify_cli import app
from reasonwire.govern.validator import EvidenceError, validate_text
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


# -- linear time ------------------------------------------------------------------------------


def _b64(n: int) -> str:
    rnd = random.Random(3)
    return "".join(rnd.choices(string.ascii_letters + string.digits + "+/", k=n))


def _doc_with(head: str, filler: str) -> str:
    doc: dict[str, Any] = good(head)
    doc["limitations"].append(filler)
    return json.dumps(doc)


FILLERS = {
    "base64 in a value": _b64,
    "eyJ in a value": lambda n: "eyJ" * (n // 3),
    "eyJab. in a value": lambda n: "eyJab." * (n // 6),
    "hf_ in a value": lambda n: "hf_" * (n // 3),
}


@pytest.mark.timeout(60)  # a quadratic scan takes hours here: fail, do not hang
@pytest.mark.parametrize("name", list(FILLERS))
def test_validator_is_linear(r: Repo, name: str) -> None:
    head = r[1]
    times = []
    for n in (500_000, 2_000_000):
        text = _doc_with(head, FILLERS[name](n))
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            with pytest.raises(EvidenceError):  # refused: the schema or the filler
                validate_text(text, "0" * 40)
            best = min(best, time.perf_counter() - t0)
        times.append(best)
    print(f"\nvalidate {name}: 0.5 MB {times[0] * 1e3:.1f} ms, 2 MB {times[1] * 1e3:.1f} ms")
    assert times[1] < 2.0
    if times[0] > 0.005:
        assert times[1] / times[0] < 8, times  # 4x the input; quadratic would be 16x


@pytest.mark.timeout(60)  # a quadratic scan takes hours here: fail, do not hang
def test_validator_linear_on_raw_base64(r: Repo) -> None:
    head = r[1]
    for n in (1_000_000, 2_000_000):
        text = _b64(n)  # not JSON at all
        t0 = time.perf_counter()
        with pytest.raises(EvidenceError):
            validate_text(text, head)
        took = time.perf_counter() - t0
        print(f"\nvalidate raw base64 {n / 1e6:.0f} MB: {took * 1e3:.1f} ms")
        assert took < 2.0


@pytest.fixture
def r(repo: Repo) -> Repo:  # noqa: F811
    return repo
