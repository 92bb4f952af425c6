"""Ground truth: against the simulator, every verdict equals the behaviour's designed truth.

The truth is the sim's own data (``BEHAVIOURS[model].truth``: per carrier kind, consumed /
dropped / rejected in the loop and across turns); nothing here restates expected verdicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reasonwire.eval.embedded import SIM_LANES
from reasonwire.eval.verdict import combine
from reasonwire.sim.behaviours import BEHAVIOURS, Behaviour

# text variant -> the sim truth keys whose carriers it sends
VARIANT_KEYS = {
    "reasoning_content": ("reasoning_content",),
    "reasoning": ("reasoning",),
    "reasoning_details": ("reasoning_details",),
    "all": ("reasoning_content", "reasoning", "reasoning_details"),
    "summary_item": ("summary_text",),
    "thought_part": ("thought",),
}
OUTCOME = {"consumed": "consumed", "dropped": "dropped", "rejected": "rejected"}


def _expected(beh: Behaviour, keys: tuple[str, ...]) -> str | None:
    truths = [beh.truth[k] for k in keys if k in beh.truth]
    if not truths:
        return None

    def pos(vals: list[str]) -> str:
        if "rejected" in vals:
            return "rejected"
        return "consumed" if "consumed" in vals else "dropped"

    return combine(pos([t.in_loop for t in truths]), pos([t.cross_turn for t in truths]))


def _lane_behaviour(beh: Behaviour, lane: str) -> Behaviour:
    if not beh.lanes:
        return beh
    for prefix, sub in beh.lanes.items():
        if SIM_LANES.lane(prefix + "x") == lane:
            return sub
    raise AssertionError(f"{beh.model}: no lane behaviour for {lane}")


def test_every_behaviour_has_a_row(sim_run: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = sim_run
    assert {r["model"] for r in matrix["rows"]} == set(BEHAVIOURS)


def test_text_verdicts_equal_truth(sim_run: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = sim_run
    checked = 0
    for row in matrix["rows"]:
        beh = _lane_behaviour(BEHAVIOURS[row["model"]], row["lane"])
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
        if beh.lanes or not beh.reasons:
            assert "replay" not in row["opaque"] or beh.lanes, row
            continue
        want = _expected(beh, tuple(k for k in beh.emits if k in beh.truth))
        assert want is not None, beh.model
        assert row["opaque"]["replay"]["verdict"] == want, (beh.model, row["opaque"])
        extra = row["opaque"].get("replay+all_turns")
        if extra is not None:
            assert extra["verdict"] == (want if beh.all_turns_ok else "rejected"), beh.model
        checked += 1
    assert checked >= 15


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
