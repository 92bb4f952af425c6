"""The simulator's designed truth as verdicts (shared by the ground-truth tests).

The truth is the sim's own data (``BEHAVIOURS[model].truth``: per carrier kind, consumed /
dropped / rejected in the loop and across turns; ``lanes`` for a lane-switching route). The
two positions become one verdict by the method's table, written out here as literals (not by
the method's own ``combine``, which the harness under test uses).
"""

from __future__ import annotations

from reasonwire.eval._embedded import SIM_LANES
from reasonwire.sim.behaviours import Behaviour

VERDICT: dict[tuple[str, str], str] = {
    # (in the loop, across turns) -> the verdict word: a refusal in either position wins, then
    # where the carrier was read (the vocabulary in method/verdicts.py, its docstrings)
    ("consumed", "consumed"): "consumes-all-turns",
    ("consumed", "dropped"): "in-loop-only",
    ("dropped", "consumed"): "cross-turn-only",
    ("dropped", "dropped"): "accepted-ignored",
    ("rejected", "consumed"): "rejected",
    ("rejected", "dropped"): "rejected",
    ("consumed", "rejected"): "rejected",
    ("dropped", "rejected"): "rejected",
    ("rejected", "rejected"): "rejected",
}

# text variant -> the sim truth keys whose carriers it sends
VARIANT_KEYS = {
    "reasoning_content": ("reasoning_content",),
    "reasoning": ("reasoning",),
    "reasoning_details": ("reasoning_details",),
    "all": ("reasoning_content", "reasoning", "reasoning_details"),
    "summary_item": ("summary_text",),
    "thought_part": ("thought",),
}


def expected(beh: Behaviour, keys: tuple[str, ...]) -> str | None:
    truths = [beh.truth[k] for k in keys if k in beh.truth]
    if not truths:
        return None

    def pos(vals: list[str]) -> str:
        if "rejected" in vals:
            return "rejected"
        return "consumed" if "consumed" in vals else "dropped"

    return VERDICT[pos([t.in_loop for t in truths]), pos([t.cross_turn for t in truths])]


def opaque_expected(beh: Behaviour) -> str | None:
    """Replaying turn 1's own carriers: the truth of the kinds the behaviour emits."""
    return expected(beh, tuple(k for k in beh.emits if k in beh.truth))


def lane_behaviour(beh: Behaviour, lane: str) -> Behaviour:
    if not beh.lanes:
        return beh
    for prefix, sub in beh.lanes.items():
        if SIM_LANES.lane(prefix + "x") == lane:
            return sub
    raise AssertionError(f"{beh.model}: no lane behaviour for {lane}")
