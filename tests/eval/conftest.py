"""Shared fixtures: one full harness run against the simulator (every behaviour)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._embedded import sim_targets
from reasonwire.sim import SimServer


@pytest.fixture(scope="session")
def sim() -> Iterator[SimServer]:
    with SimServer(seed=0) as server:
        yield server


@pytest.fixture(scope="session")
def sim_run(
    sim: SimServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("sim-run")
    cfg = EvalConfig(
        targets=sim_targets(sim.base_url, sim.root_url), out=out, workers=8, lane_attempts=12
    )
    run_eval(cfg)
    return out, build_matrix(out)
