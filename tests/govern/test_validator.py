"""The evidence validator and ``reasonwire qualify validate``."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reasonwire.errors import EvidenceError
from reasonwire.govern.cli.qualify import app
from reasonwire.govern.validator import HIDDEN_PLACES, NEGATIVE_CASES, validate_text


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    r = tmp_path / "repo"
    r.mkdir()
    git = ["git", "-C", str(r), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (r / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return r, head.stdout.strip()


def good(head: str) -> dict[str, Any]:
    obs = [
        {
            "level": lv,
            "requested": lv,
            "resolved": lv,
            "evidence_call_ids": [f"call-{lv}"],
            "usage_status": "reported",
            "usage": {"input_tokens": 10, "output_tokens": 20, "reasoning_tokens": 5},
            "cost_status": "estimated",
            "cost_usd": 0.0001,
        }
        for lv in ("low", "medium")
    ]
    obs[1].update(usage_status="unavailable", usage=None, cost_status="unavailable", cost_usd=None)
    return {
        "schema_version": 1,
        "source_commit": head,
        "subject": {
            "runtime_id": "hermes",
            "runtime_version": "1.4.2",
            "runtime_qualification_id": "Q-RT-1",
            "route_id": "chat/sim-chat-all",
            "route_qualification_id": "Q-ROUTE-1",
        },
        "proposed_levels": ["low", "medium"],
        "observations": obs,
        "auto_resolution": {"org_maximum": "medium", "resolved": "medium"},
        "resume": {"turns": 2, "effort_constant": True, "changed_effort_refused": True},
        "isolation": {"conversations": 200, "crossed_bindings": 0, "crossed_evidence_rows": 0},
        "negative_cases": {c: {"outcome": "failed-closed", "reason": "x"} for c in NEGATIVE_CASES},
        "hidden_reasoning": {p: "absent" for p in HIDDEN_PLACES},
        "limitations": ["simulator upstream only"],
    }


def test_good_evidence_passes_and_says_what_passing_means(
    repo: tuple[Path, str], tmp_path: Path
) -> None:
    r, head = repo
    f = tmp_path / "ev.json"
    f.write_text(json.dumps(good(head)))
    res = CliRunner().invoke(app, ["validate", "--evidence", str(f), "--repo", str(r)])
    assert res.exit_code == 0, res.output
    assert (
        f"PASS: hermes 1.4.2 on chat/sim-chat-all, levels low, medium, commit {head}" in res.output
    )
    assert "not prove the observations are true" in res.output


def _mut(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = doc
    for p in parents:
        node = node[int(p)] if p.isdigit() else node[p]
    if value is _DEL:
        del node[last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return doc


_DEL = object()

BAD = [
    ("unknown field", "extra_field", True, "extra_field"),
    ("unknown nested field", "subject.note", "x", "subject.note"),
    ("other commit", "source_commit", "0" * 40, "is not the repo HEAD"),
    ("requested != resolved", "observations.0.resolved", "medium", "requested low resolved medium"),
    ("missing level", "proposed_levels", ["low", "medium", "high"], "level high: 0 observations"),
    ("auto not max", "auto_resolution.resolved", "low", "Auto did not resolve"),
    ("resume changed", "resume.effort_constant", False, "resume"),
    ("crossed", "isolation.crossed_evidence_rows", 1, "crossed"),
    ("negative accepted", "negative_cases.expired.outcome", "accepted", "expired was accepted"),
    ("negative missing", "negative_cases.alg-none", _DEL, "alg-none is missing"),
    ("hidden present", "hidden_reasoning.logs", "present", "hidden reasoning in logs"),
    ("hidden unchecked", "hidden_reasoning.artifacts", _DEL, "artifacts: not checked"),
    (
        "made-up zero",
        "observations.1.usage",
        {"input_tokens": 0, "output_tokens": 0},
        "usage unavailable but figures",
    ),
    ("usage status", "observations.0.usage_status", "zero", "usage_status"),
    ("cost without status", "observations.1.cost_usd", 0.0, "cost_usd must be given iff"),
    ("no limitations", "limitations", [], "limitations"),
    ("string for int", "resume.turns", "2", "resume.turns"),
]


@pytest.mark.parametrize(("name", "path", "value", "expect"), BAD, ids=[b[0] for b in BAD])
def test_incomplete_evidence_fails(
    repo: tuple[Path, str], name: str, path: str, value: Any, expect: str
) -> None:
    _, head = repo
    with pytest.raises(EvidenceError) as e:
        validate_text(json.dumps(_mut(good(head), path, value)), head)
    assert expect in str(e.value), e.value.problems


SECRETS = [
    ("Authorization: Bear" + "er abcdefghijklmnop", "bearer token"),
    ("sk-" + "proj-abcdefghijklmnop1234", "sk- key"),  # built so no key-shaped text is tracked
    ("ey" + "JhbGciOiJFZERTQSJ9.eyJjb252IjoiYyJ9.c2lnbmF0dXJlLXNpZw", "JWS-shaped token"),
    ("the API key was rotated", "api key mention"),
]


@pytest.mark.parametrize(("secret", "kind"), SECRETS)
def test_credentials_rejected_before_parsing_and_never_echoed(
    repo: tuple[Path, str], tmp_path: Path, secret: str, kind: str
) -> None:
    r, head = repo
    doc = good(head)
    doc["limitations"].append(secret)
    f = tmp_path / "ev.json"
    f.write_text(json.dumps(doc, indent=1) + "{ not even json")
    res = CliRunner().invoke(app, ["validate", "--evidence", str(f), "--repo", str(r)])
    assert res.exit_code == 1
    assert f"likely credential ({kind})" in res.output
    assert secret not in res.output and secret.split()[-1] not in res.output
    assert "not even json" not in res.output  # refused before parsing


def test_not_a_repo_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "ev.json"
    f.write_text("{}")
    res = CliRunner().invoke(app, ["validate", "--evidence", str(f), "--repo", str(tmp_path)])
    assert res.exit_code == 2 and "not a git repository" in res.output
    res = CliRunner().invoke(app, ["validate", "--evidence", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "cannot read evidence file" in res.output


# -- repeated keys and nesting ----------------------------------------------------------------


def _with_member(doc: dict[str, Any], where: str, member: str) -> str:
    """``doc`` as JSON with ``member`` (raw JSON text) written again at the end of the
    object ``where`` (``""``: the root): a repeat no ``dict`` can hold."""
    node: Any = doc
    parts = [p for p in where.split(".") if p]
    for p in parts:
        node = node[int(p)] if p.isdigit() else node[p]
    node["@@"] = "@@"
    return json.dumps(doc).replace('"@@": "@@"', member)


DUPLICATES = [
    ("negative case outcome", "negative_cases.tampered", '"outcome": "failed-closed"', "outcome"),
    ("root", "", '"schema_version": 1', "schema_version"),
    ("array element", "observations.0", '"level": "low"', "level"),
    ("escaped name", "resume", '"turns": 2, "\\u0074urns": 3', "turns"),
]


@pytest.mark.parametrize(
    ("name", "where", "member", "key"), DUPLICATES, ids=[d[0] for d in DUPLICATES]
)
def test_a_repeated_key_is_refused_anywhere(
    repo: tuple[Path, str], tmp_path: Path, name: str, where: str, member: str, key: str
) -> None:
    r, head = repo
    doc = good(head)
    if name == "negative case outcome":
        doc["negative_cases"]["tampered"]["outcome"] = "accepted"  # the example
    text = _with_member(doc, where, member)
    if name == "negative case outcome":
        assert '"outcome": "accepted", "reason": "x", "outcome": "failed-closed"' in text
    with pytest.raises(EvidenceError) as e:
        validate_text(text, head)
    shown = where or "(root)"
    assert e.value.problems == [f"duplicate key '{key}' in {shown}"]
    f = tmp_path / "ev.json"
    f.write_text(text)
    res = CliRunner().invoke(app, ["validate", "--evidence", str(f), "--repo", str(r)])
    assert res.exit_code == 1 and "duplicate key" in res.output and "PASS" not in res.output


def test_repeated_key_names_shown_only_when_plain(repo: tuple[Path, str]) -> None:
    _, head = repo
    text = _with_member(good(head), "", '"Odd Name!": 1, "Odd Name!": 2')
    with pytest.raises(EvidenceError) as e:
        validate_text(text, head)
    assert e.value.problems == ["duplicate key (a name not shown) in (root)"]


def _nested(head: str, depth: int) -> str:
    """Good evidence with one more member nested ``depth`` deep (the root counts 1)."""
    return _with_member(good(head), "", '"extra": ' + "[" * (depth - 1) + "]" * (depth - 1))


def test_nesting_bound(repo: tuple[Path, str]) -> None:
    """32 levels are parsed (then refused for the unknown field), 33 are refused unread; a
    bracket inside a string does not count."""
    _, head = repo
    with pytest.raises(EvidenceError) as e:
        validate_text(_nested(head, 32), head)
    assert e.value.problems == ["extra: Extra inputs are not permitted"]
    with pytest.raises(EvidenceError) as e:
        validate_text(_nested(head, 33), head)
    assert e.value.problems == ["(root): nested 33 deep, more than 32"]
    doc = good(head)
    doc["limitations"].append("[" * 40 + "{" * 40 + '"')
    validate_text(json.dumps(doc), head)  # passes
