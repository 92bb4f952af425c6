"""The typed matrix reader against a ``matrix.json`` the harness wrote before rows were typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonwire.errors import ConfigError
from reasonwire.method.codec import to_json
from reasonwire.method.matrix import (
    TextMeasured,
    TextUnanswered,
    TextUnbased,
    read_matrix,
)
from reasonwire.method.verdicts import Outcome, Verdict

V1 = Path(__file__).parent / "data" / "matrix-v1.json"
"""Rows of every dialect, two lanes of a lane-switching route, failed and missing baselines
(a budget stop), written by the untyped matrix builder."""


def test_a_matrix_of_the_untyped_builder_reads_and_writes_back_in_key_order() -> None:
    data = json.loads(V1.read_text())
    matrix = read_matrix(V1)
    assert json.dumps(to_json(matrix)) == json.dumps(data)
    layouts = {
        type(p) for r in matrix.rows for e in r.text.values() for p in (e.in_loop, e.cross_turn)
    }
    assert layouts == {TextMeasured, TextUnanswered, TextUnbased}
    verdicts = {e.verdict for r in matrix.rows for e in (*r.text.values(), *r.opaque.values())}
    assert Verdict.BASELINE in verdicts and Verdict.DIRECT_LANE_NOT_REACHED in verdicts
    row = matrix.rows[0]
    assert row.text["none"].in_loop.outcome is Outcome.BASELINE
    assert row.turn1 is not None and row.turn1.carriers[0].kind


def test_a_matrix_written_before_T_was_counted_reads(tmp_path: Path) -> None:
    data = json.loads(V1.read_text())
    del data["run"]["T_source"]
    for row in data["rows"]:
        del row["T_source"], row["T_note"]
    old = tmp_path / "matrix.json"
    old.write_text(json.dumps(data))
    matrix = read_matrix(old)
    assert {r.T_source for r in matrix.rows} == {"chars/4"}
    assert matrix.run.T_source == "chars/4" and all(r.T_note is None for r in matrix.rows)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["rows"][0].update(route=None), r"rows\[0\]\.route: expected a string"),
        (lambda d: d["rows"][1].pop("text"), r"rows\[1\]: missing key 'text'"),
        (
            lambda d: d["rows"][0]["text"]["none"].update(verdict="great"),
            r"rows\[0\]\.text\.none\.verdict: expected a Verdict, got 'great'",
        ),
        (lambda d: d.update(rows={}), "rows: expected an array, got an object"),
    ],
)
def test_a_row_that_does_not_fit_is_refused_by_path(
    tmp_path: Path, edit: object, message: str
) -> None:
    data = json.loads(V1.read_text())
    edit(data)  # type: ignore[operator]
    bad = tmp_path / "matrix.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message):
        read_matrix(bad)


def test_a_matrix_without_row_verdicts_reads_and_a_new_one_has_them() -> None:
    data = json.loads(V1.read_text())
    assert all("verdict" not in r for r in data["rows"])
    matrix = read_matrix(V1)
    assert all(not r.verdict for r in matrix.rows)
    from dataclasses import replace

    row = replace(matrix.rows[0], verdict=Verdict.IN_LOOP_ONLY)
    out = to_json(row)
    assert list(out)[:5] == ["route", "model", "dialect", "lane", "verdict"]
    assert out["verdict"] == "in-loop-only"
