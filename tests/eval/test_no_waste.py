"""No wasted call after a failed baseline: a model stops at its first failed in-loop baseline
(404, 401 after the key re-read, no connection); a route whose base URL does not answer stops
whole, saying which URL failed."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from reasonwire.credentials import EnvKey
from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._embedded import sim_routes
from reasonwire.eval._records import read_jsonl
from reasonwire.eval.runner import Target
from reasonwire.http import RetryPolicy
from reasonwire.routes import Route
from reasonwire.sim import SimServer


def _calls(out: Path) -> Counter[str]:
    return Counter(r["model"] for r in read_jsonl(out / "calls.jsonl") if r.get("type") == "call")


def _notes(out: Path) -> list[str]:
    return [str(r["reason"]) for r in read_jsonl(out / "runs.jsonl") if r.get("type") == "note"]


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_404_baseline_costs_one_call_and_the_route_goes_on(
    sim: SimServer, tmp_path: Path
) -> None:
    route = sim_routes(sim.base_url, sim.root_url)["chat"]
    targets = [Target(route, "sim-image"), Target(route, "sim-qwen3")]
    run_eval(EvalConfig(targets=targets, out=tmp_path, workers=4))
    calls = _calls(tmp_path)
    assert calls["sim-image"] == 1
    assert calls["sim-qwen3"] > 1
    rows = {r["model"]: r for r in build_matrix(tmp_path)["rows"]}
    assert rows["sim-image"]["verdict"] == "baseline-failed"
    assert any(n.startswith("baseline: baseline-failed: 404") for n in rows["sim-image"]["notes"])
    assert rows["sim-qwen3"]["verdict"] != "baseline-failed"


def test_a_dead_base_url_stops_the_whole_route(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{_dead_port()}/v1"
    route = Route("deadroute", "chat", base, local=True)
    targets = [Target(route, "m1"), Target(route, "m2"), Target(route, "m3")]
    cfg = EvalConfig(targets=targets, out=tmp_path, workers=1, retries=RetryPolicy(retries=0))
    run_eval(cfg)
    assert sum(_calls(tmp_path).values()) == 1  # the first refusal stops the route
    notes = _notes(tmp_path)
    assert any(base in n and "no connection" in n for n in notes), notes
    rows = build_matrix(tmp_path)["rows"]
    assert [r["verdict"] for r in rows[:1]] == ["baseline-failed"]


def test_a_401_after_the_key_reread_costs_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RW_TEST_KEY", "sk-test-000000000000")
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        return httpx.Response(401, json={"error": {"message": "invalid key"}})

    async def no_wait(_: float) -> None:
        await asyncio.sleep(0)

    route = replace(Route("keyed", "chat", "http://api.invalid/v1"), key=EnvKey("RW_TEST_KEY"))
    cfg = EvalConfig(
        targets=[Target(route, "m1")],
        out=tmp_path,
        transport=httpx.MockTransport(handler),
        sleep=no_wait,
        dotenv=str(tmp_path / "none.env"),
    )
    run_eval(cfg)
    assert _calls(tmp_path)["m1"] == 1
    # the key comes from the environment, which cannot change under the run: no wait, and
    # no second request with the same key (an auth file's key is re-read: test_auth_and_T)
    assert len(sent) == 1
    (row,) = build_matrix(tmp_path)["rows"]
    assert row["verdict"] == "baseline-failed"


def test_calls_in_flight_never_exceed_the_route_slots(sim: SimServer, tmp_path: Path) -> None:
    """A route's ``slots`` caps calls in flight below ``--workers`` (a loopback llama.cpp
    server advertises its own: ``/props`` ``total_slots``)."""
    inflight = peak = 0

    class Counting(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            nonlocal inflight, peak
            inflight += 1
            peak = max(peak, inflight)
            try:
                resp = await super().handle_async_request(request)
                await resp.aread()
                return resp
            finally:
                inflight -= 1

    route = replace(sim_routes(sim.base_url, sim.root_url)["chat"], slots=2)
    targets = [Target(route, f"sim-qwen3@slow:{20 + i}") for i in range(3)]
    run_eval(EvalConfig(targets=targets, out=tmp_path, workers=8, transport=Counting()))
    assert peak == 2
