"""Ground truth: against the simulator, every verdict equals the behaviour's designed truth.

The truth is the sim's own data (``BEHAVIOURS[model].truth``: per carrier kind, consumed /
dropped / rejected in the loop and across turns); nothing here restates expected verdicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasonwire.eval._embedded import SIM_LANES
from reasonwire.eval._records import CALLS, read_jsonl
from reasonwire.sim.behaviours import BEHAVIOURS
from tests.eval.truth import VARIANT_KEYS, lane_behaviour, opaque_expected
from tests.eval.truth import expected as _expected


def test_every_behaviour_has_a_row(sim_run: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = sim_run
    assert {r["model"] for r in matrix["rows"]} == set(BEHAVIOURS)


def test_text_verdicts_equal_truth(sim_run: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = sim_run
    checked = 0
    for row in matrix["rows"]:
        beh = lane_behaviour(BEHAVIOURS[row["model"]], row["lane"])
        for variant, entry in row["text"].items():
            if variant == "none" or variant not in VARIANT_KEYS:
                continue
            want = _expected(beh, VARIANT_KEYS[variant])
            if want is None:
                continue
            assert entry["verdict"] == want, (row["model"], row["lane"], variant, entry)
            checked += 1
    assert checked >= 40


def test_opaque_verdicts_equal_truth(sim_run: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = sim_run
    checked = 0
    for row in matrix["rows"]:
        beh = BEHAVIOURS[row["model"]]
        if not beh.reasons and not beh.lanes:
            assert "replay" not in row["opaque"], row
            continue
        want = opaque_expected(lane_behaviour(beh, row["lane"]))
        assert want is not None, beh.model
        assert row["opaque"]["replay"]["verdict"] == want, (beh.model, row["lane"], row["opaque"])
        extra = row["opaque"].get("replay+all_turns")
        if extra is not None:
            assert extra["verdict"] == (want if beh.all_turns_ok else "rejected"), beh.model
        checked += 1
    assert checked >= 17


def test_lane_rows_replay_their_own_lane(sim_run: tuple[Path, dict[str, Any]]) -> None:
    """sim-portal: a row per lane, each with its own turn 1 and opaque cells whose verbatim
    and stripped answers both landed on that lane (the truth differs per lane)."""
    out, matrix = sim_run
    rows = {r["lane"]: r for r in matrix["rows"] if r["model"] == "sim-portal"}
    lanes = {SIM_LANES.lane(p + "x") for p in BEHAVIOURS["sim-portal"].lanes}
    assert set(rows) == lanes
    calls = [
        r
        for r in read_jsonl(out / CALLS)
        if r.get("model") == "sim-portal" and r.get("step") == "opaque" and r.get("ok")
    ]
    for lane, row in rows.items():
        assert row["turn1"] is not None and row["turn1"]["lane"] == lane
        sub = lane_behaviour(BEHAVIOURS["sim-portal"], lane)
        kinds = {c["kind"] for c in row["turn1"]["carriers"]}
        assert kinds == set(sub.emits), (lane, kinds)
        for pos in ("in_loop", "cross_turn"):
            cell = row["opaque"]["replay"][pos]
            used = [
                r
                for r in calls
                if r.get("t1_lane") == lane
                and r.get("position") == pos
                and r.get("lane") == lane
                and r.get("billed_input") in (cell["verbatim_input"], cell["stripped_input"])
            ]
            assert {r["variant"] for r in used} == {"verbatim", "stripped"}, (lane, pos)
    # the second lane's turn 1 was resampled onto it (attempt 0 is the first lane's)
    t1_attempts = {r["lane"]: r["attempt"] for r in calls if r.get("position") == "turn1"}
    assert set(t1_attempts) == lanes and max(t1_attempts.values()) >= 1


def test_canary_recall_follows_consumption(sim_run: tuple[Path, dict[str, Any]]) -> None:
    """The sim names the word exactly when the trace reached the prompt."""
    _, matrix = sim_run
    for row in matrix["rows"]:
        for variant, entry in row["text"].items():
            for pos in ("in_loop", "cross_turn"):
                cell = entry[pos]
                if cell.get("outcome") in ("consumed", "dropped") and variant != "none":
                    assert cell["canary"] == (cell["outcome"] == "consumed"), (row, variant, pos)


def test_probe_fallbacks_and_parameter_fixes(sim_run: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = sim_run
    rows = {(r["model"], r["lane"]): r for r in matrix["rows"]}
    for model in ("sim-grok-refuse", "sim-chat-filter"):
        assert rows[(model, "direct")]["wording"] == {"in_loop": "neutral", "cross_turn": "neutral"}
    assert rows[("sim-qwen3", "direct")]["wording"]["in_loop"] == "probe"
    assert any("max_completion_tokens" in n for n in rows[("sim-o-strict", "direct")]["params_fix"])
    assert any("reasoning_effort" in n for n in rows[("sim-plain", "direct")]["params_fix"])
    assert any("thinkingLevel" in n for n in rows[("sim-gemini-25", "direct")]["params_fix"])
    assert matrix["no_text_variants"]["anthropic"]


def test_rejections_keep_status_and_exact_error(sim_run: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = sim_run
    row = next(r for r in matrix["rows"] if r["model"] == "sim-r1")
    cell = row["text"]["reasoning_content"]["in_loop"]
    assert cell["outcome"] == "rejected" and cell["status"] == 400
    assert "not allowed in input messages" in cell["error"]


def test_row_verdict_follows_the_method(sim_run: tuple[Path, dict[str, Any]]) -> None:
    """Every row carries the method's one verdict, derived from its carrier entries; it is the
    first column after the lane in matrix.md and in the HTML report."""
    from reasonwire.eval._report_html import render_html
    from reasonwire.eval.matrix import render_md
    from reasonwire.method.verdicts import HARNESS_VERDICTS, Outcome, model_verdict

    _, matrix = sim_run
    words = {str(v) for v in HARNESS_VERDICTS}
    seen = set()
    for row in matrix["rows"]:
        assert row["verdict"] in words, row["model"]
        seen.add(row["verdict"])
        if row["verdict"] == "direct-lane-not-reached":
            continue
        entries = [
            (Outcome(e["in_loop"]["outcome"]), Outcome(e["cross_turn"]["outcome"]))
            for v, e in row["text"].items()
            if v != "none"
        ] + [
            (Outcome(e["in_loop"]["outcome"]), Outcome(e["cross_turn"]["outcome"]))
            for e in row["opaque"].values()
        ]
        if entries:
            assert row["verdict"] == model_verdict(entries), row["model"]
    assert {"consumes-all-turns", "in-loop-only", "accepted-ignored"} <= seen
    md = render_md(matrix)
    assert "| route | model | lane | verdict |" in md
    for row in matrix["rows"]:
        assert f"| {row['model']} | {row['lane']} | {row['verdict']} |" in md, row["model"]
    html = render_html(matrix)
    assert 'data-row-verdict="' in html


def test_matrix_md_and_report_say_why(sim_run: tuple[Path, dict[str, Any]]) -> None:
    """A refused cell shows its status and the provider's first words; the report shows a
    note as a note, apart from the red errors."""
    import re

    from reasonwire.eval._report_html import render_html
    from reasonwire.eval.matrix import render_md

    _, matrix = sim_run
    md = render_md(matrix)
    r1 = next(line for line in md.splitlines() if "| sim-r1 |" in line)
    assert "rejected (-/-): 400 The `reasoning_content` field is not allowed" in r1
    assert "error(s), first: " in r1 and ": 400 " in r1
    html = render_html(matrix)
    note = "unsigned thinking cannot be sent"
    assert re.search(r'<small class="note"[^>]*>note: [^<]*' + note, html)
    assert not re.search(r'<span class="err"[^>]*>[^<]*' + note, html)
    assert re.search(r'<span class="err" [^>]*>\d+ error\(s\): 400 ', html)
