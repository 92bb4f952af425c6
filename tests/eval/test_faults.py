"""Faults: resume after kill -9, budget exhaustion, unwritable --out, no key in any file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import reasonwire
from reasonwire.errors import ConfigError
from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._records import read_jsonl
from reasonwire.routes import route_from_table
from reasonwire.sim import SimServer

from ._killrun import targets

HERE = Path(__file__).parent


def _stable(matrix: dict[str, Any]) -> Any:
    m = dict(matrix)
    # spend differs by design: calls in flight at a kill are counted (and sent again once);
    # the billing tests (test_payer.py) check those figures against the provider's bill
    for k in ("generated_at", "out", "spent_usd", "spent_billed_usd", "spent_estimated_usd",
              "in_flight"):  # fmt: skip
        m.pop(k)
    m["run"] = {k: v for k, v in m["run"].items() if k not in ("runs", "run_ids")}
    for row in m["rows"]:
        if row.get("turn1"):
            row["turn1"] = {k: v for k, v in row["turn1"].items() if k != "response_id"}
    return m


def _keys(out: Path) -> list[str]:
    return [r["key"] for r in read_jsonl(out / "calls.jsonl") if r.get("type") == "call"]


def test_rerun_resumes_and_pays_nothing_twice(sim: SimServer, tmp_path: Path) -> None:
    cfg = EvalConfig(targets=targets(sim, 0), out=tmp_path, workers=4)
    first = run_eval(cfg)
    m1 = build_matrix(tmp_path)
    second = run_eval(cfg)
    assert first.sent > 30 and second.sent == 0 and second.reused == first.sent
    assert _stable(build_matrix(tmp_path)) == _stable(m1)
    keys = _keys(tmp_path)
    assert len(keys) == len(set(keys)) == first.sent


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_gives_the_same_matrix(tmp_path: Path) -> None:
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    # the child imports the reasonwire under test (its src dir first), then tests.eval
    src = Path(reasonwire.__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(HERE.parent.parent)]))
    cmd = [sys.executable, "-m", "tests.eval._killrun"]
    subprocess.run(
        [*cmd, str(clean), "0"], check=True, env=env, cwd=HERE.parent.parent, timeout=120
    )
    proc = subprocess.Popen([*cmd, str(killed), "40"], env=env, cwd=HERE.parent.parent)
    try:
        deadline = time.monotonic() + 60
        while len(_keys(killed)) < 15 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = len(_keys(killed))
    total = len(_keys(clean))
    assert 15 <= before < total
    subprocess.run(
        [*cmd, str(killed), "0"], check=True, env=env, cwd=HERE.parent.parent, timeout=120
    )
    keys = _keys(killed)
    assert len(keys) == len(set(keys)) == total  # every call once, none paid twice
    assert _stable(build_matrix(killed)) == _stable(build_matrix(clean))


def test_budget_exhaustion_stops_cleanly(sim: SimServer, tmp_path: Path) -> None:
    limit = 0.02
    res = run_eval(EvalConfig(targets=targets(sim, 0), out=tmp_path, budget=limit, workers=4))
    assert res.budget_stopped
    stops = [r for r in read_jsonl(tmp_path / "runs.jsonl") if r["type"] == "budget_stop"]
    # one record per (route, model) the budget stopped (the others went on while they fit)
    stopped = [(s["route"], s["model"]) for s in stops]
    assert stops and len(stopped) == len(set(stopped))
    assert all(s["limit_usd"] == limit and s["committed_usd"] <= limit for s in stops)
    assert all(s["committed_usd"] + s["next_call_worst_usd"] > limit for s in stops)
    settled = sum(
        r["cost_usd"] for r in read_jsonl(tmp_path / "cost.jsonl") if r["type"] == "settle"
    )
    assert 0 < settled <= limit
    assert res.sent > 0
    # a second run sharing --out counts the first run's spend and sends nothing more
    again = run_eval(EvalConfig(targets=targets(sim, 0), out=tmp_path, budget=limit, workers=4))
    assert again.budget_stopped and again.sent < res.sent
    settled = sum(
        r["cost_usd"] for r in read_jsonl(tmp_path / "cost.jsonl") if r["type"] == "settle"
    )
    assert settled <= limit
    build_matrix(tmp_path)  # the partial matrix still builds


def test_unwritable_out_fails_before_any_call(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    route = route_from_table("custom", {"kind": "chat", "base_url": "http://127.0.0.1:9/v1"})
    from reasonwire.eval import Target

    cfg = EvalConfig(
        targets=[Target(route, "m")], out=blocker / "out", transport=httpx.MockTransport(handler)
    )
    with pytest.raises(ConfigError, match="not writable"):
        run_eval(cfg)
    assert seen == []


def test_no_key_material_in_any_output_file(
    sim: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "canary-key-7f3e9a1c5b2d8e4f"
    monkeypatch.setenv("RW_TEST_CANARY_KEY", key)
    route = route_from_table(
        "custom", {"kind": "chat", "base_url": sim.base_url, "key_env": "RW_TEST_CANARY_KEY"}
    )
    from reasonwire.eval import Target

    sent: list[str] = []

    class Spy(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request.headers.get("authorization", ""))
            return await super().handle_async_request(request)

    cfg = EvalConfig(
        targets=[Target(route, m) for m in ("sim-qwen3", "sim-r1", "sim-openrouter")],
        out=tmp_path, transport=Spy(),
    )  # fmt: skip
    res = run_eval(cfg)
    from reasonwire.eval import write_reports

    write_reports(tmp_path)
    assert res.sent > 0 and sent and all(h == f"Bearer {key}" for h in sent)
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert {"calls.jsonl", "cost.jsonl", "runs.jsonl", "matrix.json", "matrix.md"} <= {
        p.name for p in files
    }
    for p in files:
        assert key not in p.read_text(errors="replace"), p.name
    assert json.loads((tmp_path / "matrix.json").read_text())["rows"]
