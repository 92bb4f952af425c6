"""``--want-direct`` on the lane-switching sim route: resampling reaches the direct lane and
measures it against the direct lane's own truth; a route whose direct lane no answer reaches
ends every row ``direct-lane-not-reached``, never a pass."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._embedded import SIM_LANES, sim_targets
from reasonwire.eval._records import CALLS, RUNS, read_jsonl
from reasonwire.eval.runner import Target
from reasonwire.routes import LaneRule
from reasonwire.sim import SimServer
from reasonwire.sim.behaviours import BEHAVIOURS
from tests.eval.truth import VARIANT_KEYS, expected, lane_behaviour, opaque_expected

MODEL = "sim-portal"


def _portal(sim: SimServer, lanes: LaneRule = SIM_LANES) -> list[Target]:
    t = next(t for t in sim_targets(sim.base_url, sim.root_url) if t.model == MODEL)
    return [replace(t, route=replace(t.route, lanes=lanes))]


def test_want_direct_resamples_onto_the_direct_lane(sim: SimServer, tmp_path: Path) -> None:
    cfg = EvalConfig(
        targets=_portal(sim), out=tmp_path, lane_attempts=12, want_direct=frozenset({MODEL})
    )
    run_eval(cfg)
    matrix = build_matrix(tmp_path)
    rows = {r["lane"]: r for r in matrix["rows"]}
    direct = rows[SIM_LANES.default]
    truth = lane_behaviour(BEHAVIOURS[MODEL], SIM_LANES.default)
    for variant, entry in direct["text"].items():
        if variant in VARIANT_KEYS:
            assert entry["verdict"] == expected(truth, VARIANT_KEYS[variant]), (variant, entry)
    assert direct["opaque"]["replay"]["verdict"] == opaque_expected(truth)
    assert direct["turn1"]["lane"] == SIM_LANES.default
    # every other lane row is marked, never a pass
    for lane, row in rows.items():
        if lane != SIM_LANES.default:
            verdicts = {e["verdict"] for e in (*row["text"].values(), *row["opaque"].values())}
            assert verdicts == {"direct-lane-not-reached"}, (lane, verdicts)
    calls = [r for r in read_jsonl(tmp_path / CALLS) if r.get("type") == "call"]
    # the opaque step ran on the direct lane only: no turn 2 replays an OpenRouter turn 1
    assert {r.get("t1_lane") for r in calls if r["step"] == "opaque"} <= {None, "direct"}
    # resampling happened: some cell needed more than its first attempt to land
    assert any(r["attempt"] > 0 and r.get("lane") == "direct" for r in calls)


def test_direct_lane_not_reached(sim: SimServer, tmp_path: Path) -> None:
    """Both sim lanes mapped off the route's direct lane: resampling gives up after
    ``lane_attempts`` and every row says so."""
    off = LaneRule({"gen-": "openrouter", "chatcmpl-": "upstream"}, default="direct")
    cfg = EvalConfig(
        targets=_portal(sim, off), out=tmp_path, lane_attempts=2, want_direct=frozenset({MODEL})
    )
    run_eval(cfg)
    matrix = build_matrix(tmp_path)
    rows = {r["lane"]: r for r in matrix["rows"]}
    assert "direct" in rows
    for lane, row in rows.items():
        verdicts = {e["verdict"] for e in (*row["text"].values(), *row["opaque"].values())}
        assert verdicts == {"direct-lane-not-reached"}, (lane, verdicts)
    calls = [r for r in read_jsonl(tmp_path / CALLS) if r.get("type") == "call"]
    assert max(r["attempt"] for r in calls if r["step"] == "text") == 2
    assert max(r["attempt"] for r in calls if r["position"] == "turn1") == 2
    assert not [r for r in calls if r["step"] == "opaque" and r["position"] != "turn1"]
    notes = [r["reason"] for r in read_jsonl(tmp_path / RUNS) if r.get("type") == "note"]
    assert any("did not land on lane direct" in n for n in notes), notes
