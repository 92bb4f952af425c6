"""Turn 1's result: a capture, a reason there is nothing to replay, or a budget stop, each
with its rule (the method's docstring): a budget stop leaves no note (the stop is recorded
already), nothing-to-replay leaves one ``opaque`` note naming why, a capture goes to turn 2.

The executor is a stand-in that answers every call the same way, so the tests need no server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from reasonwire.eval._cells import CallOutcome, Cell
from reasonwire.eval._config import EvalConfig, Target
from reasonwire.eval._embedded import local_target
from reasonwire.eval._params import route_params
from reasonwire.eval._records import Note
from reasonwire.eval._steps import (
    BudgetStopped,
    Captured,
    Method,
    NothingToReplay,
    _ModelState,
)
from reasonwire.eval.fixture import make_fixture


class _Executor:
    """Answers every call with ``outcome``; keeps what the method appends."""

    def __init__(self, outcome: CallOutcome) -> None:
        self.outcome = outcome
        self.records: list[Any] = []
        self.run_id = "run-1"
        self.calls: list[Cell] = []

    async def call(self, cell: Cell, target: Target) -> CallOutcome:
        self.calls.append(cell)
        return self.outcome

    def over_budget(self, target: Target) -> bool:
        return False


def _method(outcome: CallOutcome, tmp_path: Path) -> tuple[Method, _Executor, Target]:
    target = local_target("http://127.0.0.1:9/v1")
    cfg = EvalConfig(targets=[target], out=tmp_path)
    x = _Executor(outcome)
    return Method(cfg, x, make_fixture()), x, target  # type: ignore[arg-type]


def _state(cfg: EvalConfig, target: Target) -> _ModelState:
    return _ModelState(params=route_params(target.route, target.model, "low", cfg.max_tokens))


def _answered(ok: bool, turn: Any = None, lane: str = "", run_id: str = "run-0") -> CallOutcome:
    """An outcome whose record says only what turn 1 reads (ok, status, error, lane, run)."""
    rec = SimpleNamespace(ok=ok, status=200 if ok else 500, error=None if ok else "boom")
    rec.lane, rec.run_id = lane, run_id
    return CallOutcome(record=rec, turn=turn)  # type: ignore[arg-type]


def test_a_budget_stop_is_its_own_result_and_leaves_no_note(tmp_path: Path) -> None:
    method, x, target = _method(CallOutcome(record=None), tmp_path)
    state = _state(method.cfg, target)
    assert asyncio.run(method.turn1(target, state, None)) == BudgetStopped()
    assert len(x.calls) == 1  # the ladder stops at the stop, it does not climb
    asyncio.run(method.opaque_on(target, state, None))
    assert x.records == []


def test_a_failed_turn_1_is_nothing_to_replay_and_one_note(tmp_path: Path) -> None:
    method, x, target = _method(_answered(ok=False), tmp_path)
    state = _state(method.cfg, target)
    why = "turn 1 failed at effort low: 500 boom"
    assert asyncio.run(method.turn1(target, state, None)) == NothingToReplay(why)
    asyncio.run(method.opaque_on(target, state, None))
    assert x.records == [
        Note(
            run_id="run-1",
            fixture_id=method.fixture.fixture_id,
            route=target.route.name,
            model=target.model,
            step="opaque",
            reason=why,
        )
    ]


def test_a_tool_call_with_a_carrier_is_captured(tmp_path: Path) -> None:
    turn = SimpleNamespace(tool_calls=["a call"], carriers=["a carrier"])
    method, _, target = _method(_answered(ok=True, turn=turn, lane="lane-a"), tmp_path)
    found = asyncio.run(method.turn1(target, _state(method.cfg, target), None))
    assert found == Captured(turn, "low", "lane-a", "run-0")  # type: ignore[arg-type]
