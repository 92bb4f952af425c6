"""Typed records: files written before the records were typed read back and write again
byte for byte; older layouts still read; a record that does not fit is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonwire.errors import ConfigError
from reasonwire.eval._records import (
    CALLS,
    COST,
    RUNS,
    Answered,
    CallRecord,
    Failed,
    Records,
    RunStart,
    TRecord,
    Unparsed,
    decode_record,
    read_records,
)
from reasonwire.wire.model import ABSENT

V1 = Path(__file__).parent / "data" / "records-v1"
"""Records written by the harness before this change: a simulator run (every dialect, lanes,
a budget stop) and a mock route failing every way a call can (transport, malformed body
after a 200, 401 after the key was re-read, 400)."""


def _line(rec: object) -> str:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("name", [CALLS, COST, RUNS])
def test_files_of_the_untyped_writer_round_trip_byte_for_byte(name: str) -> None:
    lines = (V1 / name).read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        rec = decode_record(json.loads(line))
        assert rec is not None
        assert _line(rec.to_json()) == line


def test_every_call_layout_is_its_own_result_class() -> None:
    results = [r.result for r in read_records(V1 / CALLS) if isinstance(r, CallRecord)]
    kinds = {type(r).__name__ for r in results}
    assert kinds == {"Answered", "Unparsed", "Failed"}
    unparsed = [r for r in results if isinstance(r, Unparsed)]
    assert {r.error_kind for r in unparsed} == {"malformed"} and unparsed[0].status == 200
    failed = {r.error_kind for r in results if isinstance(r, Failed)}
    assert failed == {"provider", "transport", "auth"}
    turn1 = [r for r in results if isinstance(r, Answered) and r.raw is not ABSENT]
    assert turn1 and all(r.reasoning_excerpt is not ABSENT for r in turn1)


def test_older_layouts_read() -> None:
    """Turn-2 records written before ``t1_lane`` existed, and keys a newer writer adds."""
    line = next(
        ln
        for ln in (V1 / CALLS).read_text().splitlines()
        if '"t1_lane"' in ln and '"ok":true' in ln
    )
    old = json.loads(line)
    del old["t1_lane"]
    rec = CallRecord.from_json(old)
    assert rec.cell.t1_lane is ABSENT
    assert _line(rec.to_json()) == _line(old)
    newer = {**json.loads(line), "added_later": {"x": 1}}
    assert CallRecord.from_json(newer).to_json() == newer


def test_runs_records_are_typed() -> None:
    recs = list(read_records(V1 / RUNS))
    start = next(r for r in recs if isinstance(r, RunStart))
    assert start.thresholds.consume_ratio == 0.5 and start.targets
    counted = [r for r in recs if isinstance(r, TRecord) and r.count is not ABSENT]
    assert counted and counted[0].count.with_ - counted[0].count.without == counted[0].T
    noted = [r for r in recs if isinstance(r, TRecord) and r.T_note is not ABSENT]
    assert noted and noted[0].count is ABSENT


def test_a_record_that_does_not_fit_is_refused_by_path() -> None:
    line = (V1 / CALLS).read_text().splitlines()[0]
    bad = json.loads(line)
    bad["attempt"] = "0"
    with pytest.raises(ConfigError, match=r"calls\.jsonl line 1: attempt: expected an integer"):
        decode_record(bad, "calls.jsonl line 1")
    missing = json.loads(line)
    del missing["T"]
    with pytest.raises(ConfigError, match="missing key 'T'"):
        decode_record(missing)
    assert decode_record({"type": "from-a-newer-writer"}) is None


def test_the_writer_appends_one_redacted_line_per_record(tmp_path: Path) -> None:
    records = Records(tmp_path)
    try:
        for rec in read_records(V1 / RUNS):
            records.append(rec)
    finally:
        records.close()
    assert (tmp_path / RUNS).read_text() == (V1 / RUNS).read_text()
    assert (tmp_path / CALLS).read_text() == ""
