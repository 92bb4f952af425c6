"""``reasonwire fold plan``: decisions from a matrix and a ledger (synthetic rows at the
threshold's boundary, old and new ledger rows), the settings it writes, and one line + exit
code 2 for bad or missing files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reasonwire.fold import load_fold_settings, make_plan, plan_settings
from reasonwire.fold.cli import app
from reasonwire.probe.ledger import append_row

SCHEMA = "reasonwire.eval.matrix/1"


def row(route: str, model: str, dialect: str, verdicts: dict[str, str],
        kinds: tuple[str, ...] = (), lane: str = "direct") -> dict[str, Any]:  # fmt: skip
    return {
        "route": route, "model": model, "dialect": dialect, "lane": lane,
        "text": {v: {"verdict": x} for v, x in {"none": "baseline", **verdicts}.items()},
        "opaque": {},
        "turn1": {"carriers": [{"kind": k, "opaque": False} for k in kinds]} if kinds else None,
    }  # fmt: skip


def ledger_row(route: str, model: str, billed: int, sent_text: int, new: bool = True,
               opaque: int = 0) -> dict[str, Any]:  # fmt: skip
    usage = (
        {"inputTokens": billed - 10, "outputTokens": 5, "cacheReadTokens": 10,
         "cacheWriteTokens": 0}
        if new
        else {"uncached": billed, "cacheRead": None, "cacheWrite": None, "billedInput": billed,
              "output": 5, "reasoning": None}
    )  # fmt: skip
    sent: dict[str, Any] = {"reasoning_content": {"bytes": sent_text, "count": 1, "opaque": False}}
    if opaque:
        sent["encrypted_content"] = {"bytes": opaque, "count": 1, "opaque": True}
    return {"sessionId": "s", "provider": route, "model": model, "usage": usage,
            "sentReasoning": sent}  # fmt: skip


RC = "reasoning_content"
ALL_IN = "consumes-all-turns"
IGN = "accepted-ignored"
LOOP = "in-loop-only"
MATRIX = {
    "schema": SCHEMA,
    "rows": [
        row("r", "hot", "chat", {RC: LOOP, "reasoning": IGN}, (RC,)),
        row("r", "edge", "chat", {RC: ALL_IN}, (RC,)),
        row("r", "below", "chat", {RC: ALL_IN}, (RC,)),
        row("r", "cold", "chat", {RC: ALL_IN}, (RC,)),
        row("r", "deaf", "chat", {RC: IGN, "reasoning": IGN, "reasoning_details": IGN,
                                  "all": IGN}),
        row("r", "lanes", "chat", {RC: IGN}, (RC,)),
        row("r", "lanes", "chat", {RC: LOOP}, (RC,), "gw"),
        row("r", "gap", "chat", {RC: "incomplete"}, (RC,)),
        row("r", "refused", "chat", {RC: "rejected"}, (RC,)),
        row("r", "unlogged", "chat", {RC: LOOP}, (RC,)),
        row("r", "claude", "anthropic", {}),
        row("r", "gpt", "responses", {"summary_item": LOOP, "content_item": IGN},
            ("summary_text",)),
    ],
}  # fmt: skip
EXPECT = {
    "hot": "fold", "edge": "fold", "below": "keep", "cold": "keep", "deaf": "drop",
    "lanes": "fold", "gap": "unknown", "refused": "unknown", "unlogged": "unknown",
    "claude": "unknown", "gpt": "fold",
}  # fmt: skip


def _ledger(d: Path) -> Path:
    rows = [
        ledger_row("r", "hot", 1000, 2000),  # 500 tokens of 1000: 50%
        ledger_row("r", "edge", 1000, 400),  # exactly 10%: fold (>=)
        ledger_row("r", "below", 1000, 399),  # 9.975%: keep
        ledger_row("r", "cold", 1000, 40, new=False),  # an old-format row: 1%
        ledger_row("r", "cold", 1000, 0),
        ledger_row("r", "lanes", 100, 400),
        ledger_row("r", "gpt", 100, 400, opaque=10_000),  # opaque bytes do not count
        {"sessionId": "s", "provider": "r", "model": "unlogged", "sentReasoning": {}},  # no usage
    ]
    for r in rows:
        append_row(d, "s", r, 1 << 20)
    return d


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    m = tmp_path / "matrix.json"
    m.write_text(json.dumps(MATRIX))
    return m, _ledger(tmp_path / "ledger")


def test_decisions(files: tuple[Path, Path]) -> None:
    from reasonwire.fold.plan import read_ledger, read_matrix

    m, d = files
    lines = make_plan(read_matrix(m), read_ledger(d), 10.0)
    assert {x.model: x.decision for x in lines} == EXPECT
    by = {x.model: x for x in lines}
    assert by["edge"].share == pytest.approx(0.10) and by["below"].share < 0.10
    assert by["cold"].calls == 2 and by["cold"].share == pytest.approx(10 / 2000)
    assert "no ledger calls" in by["unlogged"].why
    assert by["gpt"].share == pytest.approx(1.0)


def test_threshold_is_configurable(files: tuple[Path, Path]) -> None:
    from reasonwire.fold.plan import read_ledger, read_matrix

    m, d = files
    lines = make_plan(read_matrix(m), read_ledger(d), 0.5)
    assert {x.model: x.decision for x in lines}["cold"] == "fold"  # 0.5% >= 0.5%
    with pytest.raises(Exception, match="threshold"):
        make_plan(read_matrix(m), read_ledger(d), 101)


def test_cli_prints_and_writes_settings(files: tuple[Path, Path], tmp_path: Path) -> None:
    m, d = files
    out = tmp_path / "fold.toml"
    res = CliRunner().invoke(app, ["plan", "--matrix", str(m), "--ledger", str(d),
                                   "--out", str(out), "--floor-chars", "9000"])  # fmt: skip
    assert res.exit_code == 0, res.output
    printed = {ln.split()[1]: ln.split()[0] for ln in res.output.splitlines()[:-1]}
    assert printed == {f"r/{k}": v for k, v in EXPECT.items()}
    s = load_fold_settings(out)
    assert s.enabled and s.floor_chars == 9000 and (s.head_chars, s.tail_chars) == (4000, 2000)
    assert s.providers == {"r/hot", "r/edge", "r/lanes", "r/gpt"} and s.drop == {"r/deaf"}
    for model, decision in EXPECT.items():
        want = {"fold": "fold", "drop": "drop"}.get(decision)
        assert s.action("r", "host", model) == want, model
    js = CliRunner().invoke(app, ["plan", "--matrix", str(m), "--ledger", str(d),
                                  "--out", str(out), "--json"])  # fmt: skip
    assert js.exit_code == 0 and len(json.loads(js.output)["plan"]) == len(EXPECT)


def test_nothing_to_do_writes_disabled_settings(tmp_path: Path) -> None:
    lines = make_plan({"schema": SCHEMA, "rows": [row("r", "c", "anthropic", {})]}, [])
    s = plan_settings(lines)
    assert not s.enabled and s.providers == frozenset() and s.action("r", None, "c") is None


@pytest.mark.parametrize(
    ("matrix_text", "ledger_exists", "extra", "needle"),
    [
        (None, True, [], "cannot read matrix"),
        ("{", True, [], "not valid JSON"),
        ('{"schema": "other"}', True, [], "expected a reasonwire.eval.matrix/1"),
        ('{"schema": "reasonwire.eval.matrix/1", "rows": [1]}', True, [], "rows[0]"),
        ('{"schema": "reasonwire.eval.matrix/1", "rows": []}', False, [], "no probe ledger"),
        ('{"schema": "reasonwire.eval.matrix/1", "rows": []}', True,
         ["--floor-chars", "6000"], "greater than"),
        ('{"schema": "reasonwire.eval.matrix/1", "rows": []}', True,
         ["--threshold-pct", "-1"], "threshold"),
    ],
)  # fmt: skip
def test_bad_files_one_line_exit_2(tmp_path: Path, matrix_text: str | None, ledger_exists: bool,
                                   extra: list[str], needle: str) -> None:  # fmt: skip
    m = tmp_path / "m.json"
    if matrix_text is not None:
        m.write_text(matrix_text)
    d = tmp_path / "ledger"
    if ledger_exists:
        d.mkdir()
    res = CliRunner().invoke(app, ["plan", "--matrix", str(m), "--ledger", str(d),
                                   "--out", str(tmp_path / "o.toml"), *extra])  # fmt: skip
    assert res.exit_code == 2
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in res.output
    assert not (tmp_path / "o.toml").exists()


def test_unwritable_out(files: tuple[Path, Path], tmp_path: Path) -> None:
    m, d = files
    res = CliRunner().invoke(app, ["plan", "--matrix", str(m), "--ledger", str(d),
                                   "--out", str(tmp_path / "no" / "dir" / "o.toml")])  # fmt: skip
    assert res.exit_code == 2 and "cannot write" in res.output
