"""A run id per turn-1 capture, and the report keeping the newest.

Two runs of the same (route, model) write into one results directory (two processes sharing
``--out``, or the records of two machines put together): each captured its own turn 1 and
replayed it. The method's rule: the row is the newest capture's, verbatim and stripped both
replaying that capture, never one run's verbatim against the other's stripped.

Run ``old`` replays a carrier the stub reads (delta 100: consumed); run ``new``, later, one it
ignores (delta 0: dropped). Each run goes to its own directory against its own loopback stub;
the test then writes both into one directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._records import read_jsonl
from reasonwire.eval.runner import Target
from reasonwire.routes import Route

from .anthropic_stub import Stub, serve


def _run(stub: Stub, out: Path) -> list[dict[str, Any]]:
    with serve(stub) as url:
        # the stub's port differs between runs: a route marked local keeps it out of the keys
        route = Route("stub", "anthropic", url, local=True)
        run_eval(EvalConfig(targets=[Target(route, "claude-stub")], out=out, workers=2))
    return [r for r in read_jsonl(out / "calls.jsonl") if r.get("type") == "call"]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("captures")
    _run(Stub(read=100, thought="Old thought.", signature="b2xk"), base / "old")
    _run(Stub(read=0, thought="New thought.", signature="bmV3"), base / "new")
    return base / "old", base / "new"


def _legacy(lines: list[str]) -> list[str]:
    """Call records as written before ``t1_run`` existed (the key taken out)."""
    out = []
    for line in lines:
        rec = json.loads(line)
        rec.pop("t1_run", None)
        out.append(json.dumps(rec, separators=(",", ":")) + "\n")
    return out


def _merge(out: Path, old: Path, new: Path, order: str, legacy: bool = False) -> None:
    """One directory holding both runs' records. ``interleaved``: both turn 1s first, then
    the new run's turn 2s, then the old run's (as two processes sharing ``--out`` may write
    them); ``new-first``: every line of the new run before the old run's."""
    out.mkdir()
    calls_old, calls_new = _lines(old / "calls.jsonl"), _lines(new / "calls.jsonl")
    if legacy:  # the old run was measured before this version: its records name no capture
        calls_old = _legacy(calls_old)
    if order == "interleaved":
        t1 = [line for line in calls_old + calls_new if '"position":"turn1"' in line]
        rest = [line for line in calls_new + calls_old if '"position":"turn1"' not in line]
        calls = t1 + rest
    else:
        calls = calls_new + calls_old
    (out / "calls.jsonl").write_text("".join(calls))
    runs = _lines(old / "runs.jsonl") + _lines(new / "runs.jsonl")
    (out / "runs.jsonl").write_text("".join(runs))


def test_each_replay_names_the_run_of_the_capture_it_replays(two_runs: tuple[Path, Path]) -> None:
    for run in two_runs:
        calls = [r for r in read_jsonl(run / "calls.jsonl") if r.get("type") == "call"]
        (t1,) = [r for r in calls if r["position"] == "turn1"]
        turn2 = [r for r in calls if r["position"] != "turn1"]
        assert len(turn2) == 4
        assert {r["t1_run"] for r in turn2} == {t1["run_id"]}


@pytest.mark.parametrize("legacy", [False, True], ids=["both-named", "old-unnamed"])
@pytest.mark.parametrize("order", ["interleaved", "new-first"])
def test_the_report_keeps_the_newest_capture(
    two_runs: tuple[Path, Path], tmp_path: Path, order: str, legacy: bool
) -> None:
    old, new = two_runs
    (new_t1,) = [r for r in read_jsonl(new / "calls.jsonl") if r.get("position") == "turn1"]
    _merge(tmp_path / "both", old, new, order, legacy)
    (row,) = build_matrix(tmp_path / "both")["rows"]
    assert row["turn1"]["response_id"] == new_t1["response_id"]
    for position in ("in_loop", "cross_turn"):
        cell = row["opaque"]["replay"][position]
        assert (cell["verbatim_input"], cell["stripped_input"]) == (300, 300)
        assert cell["delta"] == 0 and cell["outcome"] == "dropped"
    assert row["verdict"] == "accepted-ignored"


def test_each_run_alone_is_its_own_verdict(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = two_runs
    assert build_matrix(old)["rows"][0]["verdict"] == "consumes-all-turns"
    assert build_matrix(new)["rows"][0]["verdict"] == "accepted-ignored"
    # records that name no capture (written before t1_run) are still their capture's replays
    (tmp_path / "calls.jsonl").write_text("".join(_legacy(_lines(old / "calls.jsonl"))))
    (tmp_path / "runs.jsonl").write_text((old / "runs.jsonl").read_text())
    (row,) = build_matrix(tmp_path)["rows"]
    assert row["verdict"] == "consumes-all-turns"
    assert row["opaque"]["replay"]["in_loop"]["delta"] == 100


def test_a_resumed_turn1_keeps_the_run_id_of_its_capture(tmp_path: Path) -> None:
    """A run stopped after turn 1 (here: its turn-2 records taken out), then resumed: turn 1
    is answered from the records, and the replays sent now name the run that captured it."""
    stub = Stub()
    first = _run(stub, tmp_path)
    (t1,) = [r for r in first if r["position"] == "turn1"]
    calls = tmp_path / "calls.jsonl"
    calls.write_text("".join(line for line in _lines(calls) if '"position":"turn1"' in line))
    again = _run(stub, tmp_path)
    turn2 = [r for r in again if r["position"] != "turn1"]
    assert len(turn2) == 4 and {r["run_id"] for r in turn2} != {t1["run_id"]}
    assert {r["t1_run"] for r in turn2} == {t1["run_id"]}
    assert [r for r in again if r["position"] == "turn1"] == [t1]  # not sent again
