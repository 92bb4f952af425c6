"""The report read in byte ranges by two processes and written from per-process pieces
(``eval report``) against the plain ways: the records a stdlib ``json.loads`` pass finds, and
the files written from the whole matrix (``write_all``).

The records are a real simulator run's, each tagged with its line number (``seq``, a key the
reader keeps), plus hostile lines: escaped and non-ASCII keys, a key spelled with ``\\u``
escapes that decodes to an existing one, reversed key order, a duplicated key (the last one
counts), NaN and a 30-digit integer (the stdlib fallback), lines that are not records, and a
last line without its newline (a killed writer's: skipped even though it parses). The run's
targets gain one that has no record (it still gets its row).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import reasonwire.eval._shards as shards_mod
import reasonwire.eval.matrix as matrix_mod
from reasonwire.eval._report_files import write_report
from reasonwire.eval._report_html import write_all
from reasonwire.eval._shards import cut, owner, read_range, scan
from reasonwire.wire.model import ABSENT
from tests.eval.slim_oracle import rows_both_ways, written_records

SHARES = (0.0, 0.05, 0.3, 0.45, 0.5, 0.7, 0.95, 1.0)
"""Where the first range ends, as a share of the file (the report uses FIRST_SHARE)."""


def _dump(rec: dict[str, Any], **kw: Any) -> str:
    return json.dumps(rec, ensure_ascii=kw.get("ascii", False), separators=(",", ":"))


def _hostile(calls: list[dict[str, Any]], fid: str) -> list[str]:
    """Lines a careless byte reader would get wrong; each record line has its ``seq``."""
    answered = next(r for r in calls if r.get("ok") and r.get("step") == "text")
    failed = next((r for r in calls if not r.get("ok")), answered)
    model = str(answered["model"])
    lines = [
        _dump({**answered, "model": 'q"uote\\back'}),
        _dump({**answered, "model": "模型-é-😀", "route": "ré"}),
        # the same key as ``model``, every character of it spelled as an escape
        _dump({**answered, "model": model}, ascii=True).replace(
            f'"model":"{model}"', '"model":"' + "".join(f"\\u{ord(c):04x}" for c in model) + '"'
        ),
        _dump(dict(reversed(list({**failed}.items())))),  # the writer's key order reversed
        # a duplicated key: json.loads keeps the last one
        '{"model":"decoy",' + _dump({**answered, "model": "dup-real"})[1:],
        _dump({**answered, "model": "nan-cost"}).replace('"elapsed_s":', '"elapsed_s":NaN,"x":'),
        _dump({**answered, "model": "big-int", "attempt": 10**30}),
        _dump({**answered, "fixture_id": "another-fixture"}),
        _dump({"type": "note", "route": "sim", "model": model, "fixture_id": fid}),
        "not json",
        "[1, 2]",
        "42",
        "",
        '{"type":"call","route":"sim","model":"unterminated"',
        "   ",
    ]
    return lines


@pytest.fixture(scope="module")
def hostile_dir(
    sim_run: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The simulator run's records, ``seq``-tagged, with the hostile lines spread through
    them and a torn last line."""
    src, _ = sim_run
    out = tmp_path_factory.mktemp("hostile")
    runs = [json.loads(x) for x in (src / "runs.jsonl").read_text().splitlines() if x.strip()]
    start = next(r for r in runs if r["type"] == "run_start")
    start["targets"].append({"route": "sim", "dialect": "chat", "model": "never-called"})
    (out / "runs.jsonl").write_text("".join(_dump(r) + "\n" for r in runs), encoding="utf-8")
    recs = [json.loads(x) for x in (src / "calls.jsonl").read_text().splitlines() if x.strip()]
    fid = str(recs[0]["fixture_id"])
    lines = [_dump(r) for r in recs]
    bad = _hostile(recs, fid)
    step = max(1, len(lines) // len(bad))
    for i, line in enumerate(bad):
        lines.insert(i * (step + 1), line)
    tagged = []
    for n, line in enumerate(lines):
        if line.startswith("{") and line.endswith("}") and '"type":"call"' in line:
            line = line[:-1] + f',"seq":{n}}}'
        tagged.append(line)
    torn = _dump({**recs[-1], "model": "torn", "seq": len(tagged)})  # complete, no newline
    body = "\n".join(tagged) + "\n" + torn
    (out / "calls.jsonl").write_text(body, encoding="utf-8")
    return out


def _reference(calls: Path, fid: str) -> dict[tuple[str, str], list[int]]:
    """Every call record's ``seq`` per (route, model) in file order, by stdlib json.loads over
    the complete lines (written apart from the reader under test)."""
    out: dict[tuple[str, str], list[int]] = {}
    for rec in written_records(calls, fid):
        out.setdefault((str(rec.get("route")), str(rec.get("model"))), []).append(rec["seq"])
    return out


def _fid(out: Path) -> str:
    return matrix_mod.plan(out).ctx.fid


def _seqs(
    own: dict[tuple[str, str], list[dict[str, Any]]], order: object, shard: object
) -> dict[Any, Any]:
    return {k: [r["seq"] for r in recs] for k, recs in own.items() if recs}


def test_the_reference_sees_the_hostile_lines(hostile_dir: Path) -> None:
    """The oracle itself: the escaped spelling decodes to an existing key, the duplicated key
    keeps its last value, the fallback-only lines are records, the rest are not."""
    ref = _reference(hostile_dir / "calls.jsonl", _fid(hostile_dir))
    models = {m for _, m in ref}
    assert {'q"uote\\back', "模型-é-😀", "dup-real", "nan-cost", "big-int"} <= models
    assert not {"decoy", "torn", "unterminated"} & models
    assert ("ré", "模型-é-😀") in ref
    assert json.loads((hostile_dir / "calls.jsonl").read_bytes().rsplit(b"\n", 1)[1])


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("share", SHARES)
def test_each_key_gets_all_its_records_in_file_order_once(
    hostile_dir: Path, monkeypatch: pytest.MonkeyPatch, processes: int, share: float
) -> None:
    """Whatever the cut, every record reaches exactly one process, with its key's other
    records, in file order; the keys come in file order after the targets."""
    monkeypatch.setattr(shards_mod, "FIRST_SHARE", share)
    monkeypatch.setattr(shards_mod, "_CHUNK", 777)  # lines cross chunk boundaries
    for name in ("_READ", "_TURN1_READ"):  # the tag stays
        monkeypatch.setattr(shards_mod, name, getattr(shards_mod, name) | {"seq"})
    calls, fid = hostile_dir / "calls.jsonl", _fid(hostile_dir)
    ref = _reference(calls, fid)
    targets = matrix_mod.plan(hostile_dir).targets
    s = scan(calls, fid, processes, targets, _seqs)
    got: dict[Any, Any] = {}
    for part in s.results:
        assert not set(part) & set(got), "a key built twice"
        got.update(part)
    assert got == ref
    assert s.ncalls == sum(len(v) for v in ref.values())
    assert list(s.discovered) == list(ref)  # first records' order
    assert list(s.order) == [*targets, *(k for k in ref if k not in targets)]


@pytest.fixture(scope="module")
def reruns_dir(
    sim_run: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The simulator run's records, after each of them again as another run's retry
    (``attempt`` 2, a newer ``t``: two processes sharing ``--out``) whose text variants were
    sent with other parameters (``params_sig``) and whose replays answered on another lane:
    a variant is measured only against its baseline's parameters, and a mode that answered
    off its lane says in how many attempts."""
    src, _ = sim_run
    out = tmp_path_factory.mktemp("reruns")
    shutil.copy(src / "runs.jsonl", out / "runs.jsonl")
    recs = [json.loads(x) for x in (src / "calls.jsonl").read_text().splitlines() if x.strip()]
    again = []
    for r in recs:
        r = {**r, "attempt": 2, "t": float(r.get("t") or 0.0) + 1.0}
        if r.get("step") == "text" and r.get("variant") != "none":
            r["params_sig"] = '[["temperature"], [], []]'
            r["billed_input"] = int(r.get("billed_input") or 0) + 1000
        elif r.get("step") == "opaque" and r.get("position") != "turn1" and r.get("ok"):
            # a mode of its own, answered on another lane than its turn 1's
            r.update(variant="retried", t1_lane=r.get("t1_lane") or r["lane"], lane="other")
        again.append(r)
    (out / "calls.jsonl").write_text("".join(_dump(r) + "\n" for r in again + recs))
    return out


@pytest.mark.parametrize("which", ["hostile", "sim", "reruns", "v1"])
def test_the_rows_of_the_slimmed_records_are_those_of_the_records_as_written(
    hostile_dir: Path, sim_run: tuple[Path, dict[str, Any]], reruns_dir: Path, which: str
) -> None:
    """The reader keeps of each call record only the fields a row reads (memory: the report
    bar): every (route, model)'s rows are the same as from the whole records (the hostile
    lines, a simulator run of every behaviour, the same with later retries under other
    parameters, records of the first record format)."""
    src = {
        "hostile": hostile_dir,
        "sim": sim_run[0],
        "reruns": reruns_dir,
        "v1": Path(__file__).parent / "data" / "records-v1",
    }
    slim, whole, n = rows_both_ways(src[which])
    assert n > 0 and '"verdict"' in whole
    if which == "reruns":
        assert "in 3 attempt(s)" in whole
    assert slim == whole


@pytest.mark.skipif(
    sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11),
    reason="the layout of CPython 3.11's key-sharing instance dicts",
)
def test_the_slimmed_records_share_one_key_table(
    sim_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """The reader keeps each record as a key-sharing dict (``_shards._Kept``: the report's
    memory), whatever the order of the record's fields: each is smaller than the same record
    as a plain dict, all have one size (the key table holds every field from the first
    record on), and an empty ``fix_notes`` is the empty tuple. (That the rows stay the
    same is the oracle's test above.)"""
    src = sim_run[0]
    lines = [json.loads(x) for x in (src / "calls.jsonl").read_text().splitlines() if x]
    # every other record with its fields in the reverse order
    flipped = [dict(reversed(r.items())) if i % 2 else r for i, r in enumerate(lines)]
    calls = tmp_path / "calls.jsonl"
    calls.write_text("".join(json.dumps(r) + "\n" for r in flipped))
    fid = str(lines[0]["fixture_id"])
    recs = [r for rs in read_range(calls, 0, calls.stat().st_size, fid).recs.values() for r in rs]
    assert len(recs) == sum(r.get("type") == "call" for r in lines) > 100
    bigger = [r for r in recs if sys.getsizeof(r) >= sys.getsizeof(dict(r))]
    assert bigger == []
    # one key table holding every field from the first record on: one values size for all
    assert len({sys.getsizeof(r) for r in recs}) == 1
    empty = [r for r in recs if "fix_notes" in r and not r["fix_notes"]]
    assert empty and all(r["fix_notes"] == () for r in empty)


@pytest.mark.parametrize("share", SHARES)
def test_the_cut_is_a_line_start(hostile_dir: Path, share: float) -> None:
    calls = hostile_dir / "calls.jsonl"
    raw = calls.read_bytes()
    at = cut(calls, share)
    assert at in (0, len(raw)) or raw[at - 1 : at] == b"\n"
    assert at >= int(len(raw) * share) or at == len(raw)
    assert b"\n" not in raw[int(len(raw) * share) : max(at - 1, int(len(raw) * share))]


def test_a_key_goes_to_the_range_holding_more_of_it() -> None:
    table = {(3, 1): 0, (1, 3): 1, (2, 2): 0, (0, 5): 1, (5, 0): 0, (1, 1): 0}
    assert {k: owner(*k) for k in table} == table


def _stamped(d: Path, name: str) -> bytes:
    raw = (d / name).read_bytes().replace(str(d).encode(), b"<out>")
    return re.sub(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", b"<generated_at>", raw)


@pytest.fixture(scope="module")
def many_dir(
    sim_run: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Copies of the simulator run under renamed models: more rows than the page details."""
    from tests.eval.test_report_html import _replicate

    out = tmp_path_factory.mktemp("many") / "run"
    _replicate(sim_run[0], out, 30)
    return out


@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("which", ["hostile", "sim", "many"])
def test_the_report_files_equal_those_of_the_whole_matrix(
    hostile_dir: Path,
    sim_run: tuple[Path, dict[str, Any]],
    many_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sharded: bool,
    which: str,
) -> None:
    """``eval report``'s pieces joined give the bytes ``write_all`` renders from the whole
    matrix (one process, no fork), on the simulator run and the hostile records."""
    import reasonwire.eval._report_html as html_mod

    src = {"hostile": hostile_dir, "sim": sim_run[0], "many": many_dir}[which]
    whole, pieces = tmp_path / "whole", tmp_path / "pieces"
    for d in (whole, pieces):
        d.mkdir()
        for name in ("calls.jsonl", "runs.jsonl"):
            shutil.copy(src / name, d / name)
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 1 << 62)
    monkeypatch.setattr(html_mod, "_FORK_ROWS", 1 << 62)
    write_all(whole)
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 0 if sharded else 1 << 62)
    if sharded:
        assert matrix_mod._shards(pieces / "calls.jsonl") == min(2, os.cpu_count() or 1)
    write_report(pieces)
    if which == "many":  # the page details the first rows of each dialect only
        assert 'class="cap"' in (pieces / "report.html").read_text()
    for name in ("matrix.json", "matrix.md", "report.html"):
        assert _stamped(pieces, name) == _stamped(whole, name), name


@pytest.mark.parametrize("which", ["hostile", "sim"])
def test_every_row_is_a_matrix_row_written_back_byte_for_byte(
    hostile_dir: Path, sim_run: tuple[Path, dict[str, Any]], which: str
) -> None:
    """The rows are made as JSON without their records (``json_maker``): read back through
    the schema (``from_json``: every field checked against its type) and written again by
    the record encoder, each row is the same text."""
    from reasonwire.method.codec import from_json, to_json
    from reasonwire.method.matrix import MatrixRow

    src = {"hostile": hostile_dir, "sim": sim_run[0]}[which]
    rows = matrix_mod.build_matrix(src)["rows"]
    assert len(rows) > 1
    for made in rows:
        assert json.dumps(to_json(from_json(MatrixRow, made))) == json.dumps(made)


def test_the_matrix_is_the_same_read_by_one_or_two_processes(
    hostile_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 1 << 62)
    one = matrix_mod.build_matrix(hostile_dir)
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 0)
    two = matrix_mod.build_matrix(hostile_dir)
    one.pop("generated_at"), two.pop("generated_at")
    assert json.dumps(one) == json.dumps(two)
    models = [r["model"] for r in one["rows"]]
    assert {'q"uote\\back', "模型-é-😀", "dup-real", "big-int", "never-called"} <= set(models)


def test_a_failure_in_the_second_process_is_raised_in_the_first(hostile_dir: Path) -> None:
    first = os.getpid()

    def finish(own: object, order: object, shard: object) -> int:
        if os.getpid() != first:
            raise ValueError("boom in the second process")
        return 0

    calls = hostile_dir / "calls.jsonl"
    with pytest.raises(ValueError, match="boom in the second process"):
        scan(calls, _fid(hostile_dir), 2, {}, finish)


def _row_facts(recs: list[dict[str, Any]], want_direct: bool = False) -> list[Any]:
    from reasonwire.eval._rows import rows_of
    from reasonwire.method.verdicts import Thresholds

    rows = rows_of(("r", "m"), "no-such-dialect", recs, [], (100, "chars/4", None), "",
                   Thresholds(0.5, 25, 12), "direct", want_direct)  # fmt: skip
    return [(r["lane"], r["verdict"], r["calls"], r["cost_usd"], tuple(r["params_fix"]),
             r.get("price", ABSENT)) for r in rows]  # fmt: skip


def test_a_row_without_carrier_entries_is_failed_only_when_a_call_failed() -> None:
    """The rule of ``row_verdict`` (no carrier entry: ``baseline-failed`` when a call of the
    row failed, else ``incomplete``), with the row's shared facts from every record: calls,
    cost summed, parameter fixes sorted once each, the weakest price, the lanes answers
    landed on (sorted)."""
    ok = {"step": "opaque", "position": "turn1", "ok": True, "lane": "direct", "cost_usd": 0.25,
          "fix_notes": ["b", "a"], "price": "listed"}  # fmt: skip
    failed = {"step": "opaque", "position": "turn1", "ok": False, "status": 500,
              "cost_usd": 0.5, "fix_notes": ["a"], "price": "unknown"}  # fmt: skip
    assert _row_facts([ok]) == [("direct", "incomplete", 1, 0.25, ("a", "b"), "listed")]
    assert _row_facts([ok, failed]) == [
        ("direct", "baseline-failed", 2, 0.75, ("a", "b"), "unknown")
    ]
    other = {**ok, "lane": "via-proxy", "price": "free"}
    assert _row_facts([other, ok]) == [
        ("direct", "incomplete", 2, 0.5, ("a", "b"), "listed"),
        ("via-proxy", "incomplete", 2, 0.5, ("a", "b"), "listed"),
    ]
    # no record: nothing spent, written as matrix.json always has (``0``, not ``0.0``)
    (row,) = _row_facts([])
    assert row == ("direct", "incomplete", 0, 0, (), ABSENT) and repr(row[3]) == "0"
    # want_direct and no answer on the direct lane: its row is appended, and neither row
    # speaks for the direct lane
    assert [f[:2] for f in _row_facts([other], want_direct=True)] == [
        ("via-proxy", "direct-lane-not-reached"),
        ("direct", "direct-lane-not-reached"),
    ]


def _gemini_rows(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from reasonwire.eval._rows import rows_of
    from reasonwire.method.verdicts import Thresholds

    return rows_of(("r", "m"), "gemini", recs, [], (100, "chars/4", None), "",
                   Thresholds(0.5, 25, 12), "direct", False)  # fmt: skip


def _text(position: str, variant: str, billed: int, sig: str = "p1", **kw: Any) -> dict[str, Any]:
    return {"step": "text", "position": position, "variant": variant, "wording": "probe",
            "params_sig": sig, "ok": True, "lane": "direct", "billed_input": billed,
            "status": 200, **kw}  # fmt: skip


def test_a_variant_is_measured_with_its_baseline_s_wording_and_parameters() -> None:
    """A text variant's answer counts only beside the baseline of the same probe wording and
    parameters (an answer sent before a parameter fix, ``params_sig`` p0, is another
    experiment): delta = 1100 - 1000 against T = 100 is consumed (>= 0.5 T)."""
    recs = [
        _text("in_loop", "thought_part", 5000, sig="p0"),  # before the fix: not compared
        _text("in_loop", "none", 1000),
        _text("cross_turn", "none", 1000),
        _text("in_loop", "thought_part", 1100),
        _text("cross_turn", "thought_part", 1010),
    ]
    (row,) = _gemini_rows(recs)
    cell = row["text"]["thought_part"]
    assert (cell["in_loop"]["delta"], cell["in_loop"]["outcome"]) == (100, "consumed")
    assert (cell["cross_turn"]["delta"], cell["cross_turn"]["outcome"]) == (10, "dropped")
    assert cell["verdict"] == "in-loop-only"


def test_a_row_s_errors_are_sorted_by_step_position_variant_error() -> None:
    """Step, then position, then variant (here against their alphabetical order: the
    in-loop baseline ``none`` after the cross-turn ``thought_part``), then the message."""
    failed = {"ok": False, "lane": None, "status": 400, "error_kind": "provider"}
    recs = [
        _text("in_loop", "none", 0, **failed, error="d"),
        _text("cross_turn", "none", 1000),
        {"step": "opaque", "position": "in_loop", "variant": "verbatim", "wording": "probe",
         **failed, "error": "c"},
        _text("cross_turn", "thought_part", 0, **failed, error="b"),
        _text("cross_turn", "thought_part", 0, **failed, error="a"),
    ]  # fmt: skip
    (row,) = _gemini_rows(recs)
    assert [(e["step"], e["position"], e["variant"], e["error"]) for e in row["errors"]] == [
        ("opaque", "in_loop", "verbatim", "c"),
        ("text", "cross_turn", "thought_part", "a"),
        ("text", "in_loop", "none", "d"),
    ]


def test_an_opaque_position_reads_only_its_last_wording() -> None:
    """A neutral-wording rerun comes after the probe's: only its records count, so a
    stripped answer of the probe wording is no baseline for the rerun's verbatim one (no
    stripped or stand-in answer: ``required``)."""

    def op(position: str, mode: str, wording: str, billed: int) -> dict[str, Any]:
        return {"step": "opaque", "position": position, "variant": mode, "wording": wording,
                "ok": True, "lane": "direct", "billed_input": billed}  # fmt: skip

    recs = [
        op(p, mode, "probe", 900 if mode == "stripped" else 1000)
        for p in ("in_loop", "cross_turn")
        for mode in ("verbatim", "stripped")
    ] + [op(p, "verbatim", "neutral", 1000) for p in ("in_loop", "cross_turn")]
    (row,) = _gemini_rows(recs)
    entry = row["opaque"]["replay"]
    for p in ("in_loop", "cross_turn"):
        assert (entry[p]["wording"], entry[p]["stripped_input"], entry[p]["delta"],
                entry[p]["outcome"]) == ("neutral", None, None, "required")  # fmt: skip


def _sums(calls: Path, fid: str) -> tuple[float, float, int]:
    """The fixture's call records' cost, billed cost (``cost_estimate`` false) and count, by
    stdlib json.loads over the complete lines (as :func:`_reference` reads them)."""
    spent = billed = 0.0
    n = 0
    for rec in written_records(calls, fid):
        cost = float(rec.get("cost_usd") or 0.0)
        spent += cost
        billed += cost if rec.get("cost_estimate") is False else 0.0
        n += 1
    return spent, billed, n


@pytest.mark.parametrize("processes", [1, 2])
def test_each_process_knows_the_file_s_sums_and_swaps_with_the_other(
    hostile_dir: Path, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    """``finish`` gets its process, the sums over the whole file (in both processes, before
    either is done) and a swap that hands each what the other sent."""
    monkeypatch.setattr(shards_mod, "FIRST_SHARE", 0.5)
    calls, fid = hostile_dir / "calls.jsonl", _fid(hostile_dir)
    spent, billed, n = _sums(calls, fid)

    def finish(own: object, order: object, shard: shards_mod.Shard) -> tuple[Any, ...]:
        got = shard.swap(f"from {shard.me}") if shard.processes > 1 else None
        return shard.me, shard.processes, shard.ncalls, shard.spent, shard.billed, got

    s = scan(calls, fid, processes, {}, finish)
    assert [r[:3] for r in s.results] == [(i, processes, n) for i in range(processes)]
    for r in s.results:
        assert r[3] == pytest.approx(spent) and r[4] == pytest.approx(billed)
    assert [r[5] for r in s.results] == (["from 1", "from 0"] if processes > 1 else [None])
    assert (s.ncalls, s.spent, s.billed) == s.results[0][2:5]


def test_a_failure_of_the_second_process_is_raised_from_the_first_s_swap(
    hostile_dir: Path,
) -> None:
    first = os.getpid()

    def finish(own: object, order: object, shard: shards_mod.Shard) -> object:
        if os.getpid() != first:
            raise ValueError("boom before the swap")
        return shard.swap("never answered")

    with pytest.raises(ValueError, match="boom before the swap"):
        scan(hostile_dir / "calls.jsonl", _fid(hostile_dir), 2, {}, finish)


def test_a_failure_of_the_first_process_before_its_swap_does_not_leave_the_second_waiting(
    hostile_dir: Path,
) -> None:
    """The second process waits in its swap; the first raises instead: the first's error
    comes out of ``scan`` and the second ends (``scan`` joins it), within a deadline."""
    import threading

    first = os.getpid()
    raised: list[BaseException] = []

    def finish(own: object, order: object, shard: shards_mod.Shard) -> object:
        if os.getpid() == first:
            raise ValueError("boom in the first process")
        return shard.swap("waiting")

    def run() -> None:
        try:
            scan(hostile_dir / "calls.jsonl", _fid(hostile_dir), 2, {}, finish)
        except BaseException as exc:
            raised.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "scan still waiting for the second process"
    assert [str(e) for e in raised] == ["boom in the first process"]


def _front_and_back(run: Path) -> None:
    """Rewrite a run's records so that the two processes' keys alternate in the report's
    order (the run's targets) whatever the run: the records of every other target first, in
    file order (at a cut inside them, most of each such key's records are in the first
    range), then the others' (the second range). The simulator's own order comes from 8
    concurrent workers: at a 0.3 cut the owners changed only once in 2 runs of 40."""
    runs = [json.loads(x) for x in (run / "runs.jsonl").read_text().splitlines() if x.strip()]
    start = next(r for r in runs if r["type"] == "run_start")
    rank = {(t["route"], t["model"]): i for i, t in enumerate(start["targets"])}
    front, back = [], []
    for line in (run / "calls.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        at = rank.get((rec.get("route"), rec.get("model")), 0)
        (front if at % 2 == 0 else back).append(line)
    (run / "calls.jsonl").write_text("".join(x + "\n" for x in front + back), encoding="utf-8")


@pytest.mark.parametrize("share", [0.05, 0.3, 0.5, 0.95])
@pytest.mark.parametrize("which", ["hostile", "sim"])
def test_keys_of_both_processes_in_any_order_give_the_whole_matrix_s_files(
    hostile_dir: Path,
    sim_run: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    share: float,
    which: str,
) -> None:
    """Each process writes its own keys' ``matrix.json`` text where it sits: whatever the cut,
    and with the keys of the two processes alternating in the order (the simulator writes its
    models' records interleaved, so most keys sit in both ranges), the files are those written
    from the whole matrix in one process."""
    import reasonwire.eval._report_html as html_mod

    src = {"hostile": hostile_dir, "sim": sim_run[0]}[which]
    whole, pieces = tmp_path / "whole", tmp_path / "pieces"
    for d in (whole, pieces):
        d.mkdir()
        for name in ("calls.jsonl", "runs.jsonl"):
            shutil.copy(src / name, d / name)
        if which == "sim":
            _front_and_back(d)
    (pieces / "matrix.json").write_bytes(b"x" * 10_000_000)  # an old file: written over, cut
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 1 << 62)
    monkeypatch.setattr(html_mod, "_FORK_ROWS", 1 << 62)
    write_all(whole)
    monkeypatch.setattr(shards_mod, "FIRST_SHARE", share)
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 0)
    first = os.getpid()
    s = scan(pieces / "calls.jsonl", _fid(pieces), 2, matrix_mod.plan(pieces).targets,
             lambda own, order, shard: sorted(own))  # fmt: skip
    owners = [0 if k in s.results[0] else 1 for k in s.order]
    assert os.getpid() == first
    if 0.05 < share < 0.95:
        assert sum(a != b for a, b in itertools.pairwise(owners)) >= 2, owners
    write_report(pieces)
    for name in ("matrix.json", "matrix.md", "report.html"):
        assert _stamped(pieces, name) == _stamped(whole, name), name


def test_a_dialect_s_opaque_columns_are_every_pair_of_its_rows_sorted() -> None:
    """matrix.md's opaque columns of a dialect: each pair any of its rows names, once, in
    sorted order (both processes' rows: the report unites what each saw)."""
    from reasonwire.eval.matrix import md_extras

    rows = [
        {"replay+reasoning.context": {}, "replay": {}},
        {},
        {"replay+z": {}, "replay+a": {}, "replay": {}},
        {"replay+m": {}},
    ]
    assert md_extras(r.keys() for r in rows) == [
        "replay",
        "replay+a",
        "replay+m",
        "replay+reasoning.context",
        "replay+z",
    ]
    assert md_extras([]) == []


@pytest.mark.parametrize("sharded", [False, True])
def test_a_report_failing_after_it_began_writing_leaves_no_mixed_matrix_json(
    hostile_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded: bool
) -> None:
    """``matrix.json`` is written over the old report's bytes; a failure after that began
    leaves it empty (an old report's tail under a new head would still read as a report),
    and a failure before it began leaves the old report as it was."""
    import reasonwire.eval._report_files as files_mod

    for name in ("calls.jsonl", "runs.jsonl"):
        shutil.copy(hostile_dir / name, tmp_path / name)
    old = b'{"old": "report"}' + b" " * 1_000_000
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 0 if sharded else 1 << 62)

    def boom(*_: object, **__: object) -> None:
        raise ValueError("boom while writing")

    (tmp_path / "matrix.json").write_bytes(old)
    with monkeypatch.context() as m:  # before: the rows are built before anything is written
        m.setattr(files_mod, "key_rows", boom)
        with pytest.raises(ValueError, match="boom while writing"):
            write_report(tmp_path)
    assert (tmp_path / "matrix.json").read_bytes() == old
    with monkeypatch.context() as m:  # after: matrix.md is made once matrix.json is written
        m.setattr(files_mod, "md_document", boom)
        with pytest.raises(ValueError, match="boom while writing"):
            write_report(tmp_path)
    assert (tmp_path / "matrix.json").read_bytes() == b""


def test_a_process_s_keys_land_where_they_sit_in_gathered_writes_of_few_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_place`` writes this process's keys' text among the other's (left as they were),
    each key's after a ``,\\n`` but the first's: with at most ``_IOV_MAX`` pieces per write and
    writes that take only part of what they are given (as ``pwritev`` may), every byte still
    lands once, where the layout puts it (expected file built here from that rule)."""
    import reasonwire.eval._report_files as files_mod

    order = {("r", f"m{i}"): "chat" for i in range(60)}
    keys = list(order)
    theirs = {k for i, k in enumerate(keys) if i % 7 in (2, 3) or i >= 55}
    texts = {k: memoryview(f"<{k[1]}:{'x' * (i % 5)}>".encode()) for i, k in enumerate(keys)
             if k not in theirs}  # fmt: skip
    sizes = {k: 3 + len(k[1]) + i % 5 for i, k in enumerate(keys)}  # theirs: as long
    start = 11
    path = tmp_path / "matrix.json"
    path.write_bytes(b"?" * 2000)
    expected = bytearray(b"?" * 2000)
    at = start
    for i, k in enumerate(keys):
        if i:
            if k not in theirs:
                expected[at : at + 2] = b",\n"
            at += 2
        if k not in theirs:
            expected[at : at + sizes[k]] = bytes(texts[k])
        at += sizes[k]
    calls: list[int] = []
    real = os.pwritev

    def some(fd: int, bufs: list[memoryview], offset: int) -> int:
        calls.append(len(bufs))
        assert len(calls) < 10_000, "no progress"
        return real(fd, [bytes(bufs[0])[:3]], offset)  # three bytes of the first piece at most

    monkeypatch.setattr(files_mod, "_IOV_MAX", 4)
    monkeypatch.setattr(os, "pwritev", some)
    assert files_mod._place(path, order, texts, sizes, start) == at
    assert path.read_bytes() == bytes(expected)
    assert max(calls) == 4 and len(calls) > 4


@pytest.mark.parametrize("sharded", [False, True])
def test_each_process_frees_its_records_as_their_rows_are_built(
    many_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sharded: bool
) -> None:
    """Each process builds its keys with ``free``: each key's records leave ``own`` as its
    rows are made, and (two processes) nothing else holds them (the range's own groups were
    let go once the other's records were sent), so they are freed before the swap; the rows
    are those built without ``free``. The second process says what it saw in a file. The
    records are copies of a run under other models, one after the other: most keys sit in
    one range only, so their records reach ``finish`` in the list their range read them into."""
    import gc

    import reasonwire.eval._report_files as files_mod

    out = tmp_path / "out"
    out.mkdir()
    for name in ("calls.jsonl", "runs.jsonl"):
        shutil.copy(many_dir / name, out / name)
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 0 if sharded else 1 << 62)
    first = os.getpid()
    seen = tmp_path / "seen"
    real = files_mod.key_rows

    def spy(own: dict[Any, Any], order: Any, ctx: Any, **kw: Any) -> Any:
        # the most dicts holding any one key's records
        holders = max(
            len([r for r in gc.get_referrers(v) if isinstance(r, dict)]) for v in own.values() if v
        )
        kept = {k: list(v) for k, v in own.items()}
        got = real(own, order, ctx, **kw)
        assert got == real(kept, order, ctx)
        which = "first" if os.getpid() == first else "second"
        with seen.open("a") as fh:
            fh.write(f"{which} {kw.get('free', False)} {len(own)} {holders}\n")
        return got

    monkeypatch.setattr(files_mod, "key_rows", spy)
    write_report(out)
    lines = sorted(seen.read_text().splitlines())
    if sharded:
        assert lines == ["first True 0 1", "second True 0 1"]
    else:  # alone: the range's groups hold them too
        assert lines == ["first True 0 2"]


@pytest.mark.parametrize(
    ("in_loop", "cross_turn", "cell"),
    [
        ({"delta": 3, "outcome": "dropped"}, {"delta": None, "outcome": "missing"},
         "V (3/-)"),
        # a refusal in the loop with its status: that one is named, not the later one
        ({"delta": None, "outcome": "rejected", "status": 400, "error": "bad | field x"},
         {"delta": None, "outcome": "rejected", "status": 500, "error": "other"},
         "V (-/-): 400 bad / field x"),
        # a failed position without status or error: the next one's is named
        ({"delta": None, "outcome": "baseline-failed"},
         {"delta": 7, "outcome": "rejected", "status": None, "error": "only words"},
         "V (-/7): no status only words"),
        # an opaque position's errors per mode: the first mode's with either
        ({"delta": 0, "outcome": "rejected", "errors": {
            "verbatim": {"status": None, "error": None},
            "stripped": {"status": 429, "error": "one two three four five six seven eight nine"},
            "stand_in": {"status": 503, "error": "later"},
        }}, {"delta": 1, "outcome": "consumed"},
         "V (0/1): 429 one two three four five six seven eight ..."),
        ({"delta": None, "outcome": "rejected"}, {"delta": None, "outcome": "baseline-failed"},
         "V (-/-)"),
    ],
)  # fmt: skip
def test_a_cell_names_its_deltas_and_the_first_failed_position_s_status(
    in_loop: dict[str, Any], cross_turn: dict[str, Any], cell: str
) -> None:
    """A ``matrix.md`` cell: the verdict, both positions' deltas (``-`` when none), and for
    the first refused or failed position that has a status or an error, that status (``no
    status``) and the error's first eight words (a table cell: ``|`` written ``/``)."""
    entry = {"verdict": "V", "in_loop": in_loop, "cross_turn": cross_turn}
    assert matrix_mod._fmt(entry, "delta") == cell


def test_a_matrix_md_line_is_its_cells_in_order() -> None:
    """One row's ``matrix.md`` line, written out by hand: route, model, lane, verdict, a cell
    per text variant, the opaque pair columns the dialect has (empty where the row has
    none), the turn-1 carrier kinds sorted, then the notes (``|`` written ``/``)."""
    from reasonwire.eval.matrix import md_row

    cell = {"verdict": "V", "in_loop": {"delta": 1}, "cross_turn": {"delta": 2}}
    row: dict[str, Any] = {
        "route": "r", "model": "m", "lane": "direct", "verdict": "in-loop-only",
        "text": {"a": cell}, "opaque": {"replay": cell},
        "turn1": {"carriers": [{"kind": "z"}, {"kind": "b"}, {"kind": "z"}]},
        "notes": ["note | one"], "params_fix": ["fix"], "T_source": "count-endpoint", "T": 9,
        "errors": [],
    }  # fmt: skip
    line = md_row(row, ["a", "b"]).line(["replay", "replay+x"])
    assert line == (
        "| r | m | direct | in-loop-only | V (1/2) |  | V (1/2) |  | b, z | "
        "T = 9 (count endpoint); note / one; fix |"
    )
