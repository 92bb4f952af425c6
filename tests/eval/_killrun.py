"""Helper for the kill -9 test: run the harness against a fresh simulator until killed."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from reasonwire.eval import EvalConfig, run_eval
from reasonwire.eval._embedded import sim_targets
from reasonwire.sim import SimServer

MODELS = ("sim-qwen3", "sim-openrouter", "sim-gpt", "sim-claude", "sim-gemini", "sim-o-strict")


def targets(sim: SimServer, slow_ms: int) -> list:  # type: ignore[type-arg]
    out = []
    for t in sim_targets(sim.base_url, sim.root_url, priced=True):
        if t.model in MODELS:
            headers = {"x-sim-fault": f"slow:{slow_ms}"} if slow_ms else {}
            out.append(replace(t, route=replace(t.route, headers=headers)))
    return out


if __name__ == "__main__":
    with SimServer(seed=0) as sim:
        run_eval(
            EvalConfig(targets=targets(sim, int(sys.argv[2])), out=Path(sys.argv[1]), workers=2)
        )
