"""The payer's numbers (issue 26): spend is the provider's bill, on any address; the budget
holds at its cap and does not stop below it; one run per ``--out``; a call in flight at an
interruption is counted and sent again once, no more.

The provider is :mod:`tests.eval.billing`: the simulator behind a loopback stub that bills a
fixed ``C`` per answered call (``usage.cost`` or LiteLLM's cost header) and counts every
request body it receives. Expected figures come from the stub's ledger and from the rules as
stated (a call's worst case is its output allowance at the declared price when the prompt is
free), never from the harness's own arithmetic.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import reasonwire
from reasonwire.errors import ConfigError
from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._records import Intent, Records, read_jsonl
from reasonwire.eval._report_html import render_html
from reasonwire.eval.budget import Budget
from reasonwire.eval.cli import app
from reasonwire.eval.matrix import render_md
from reasonwire.eval.runner import Target
from reasonwire.routes import Route
from reasonwire.sim import SimServer

from .billing import Ledger, billing_stub

C = 0.004  # USD the stub bills per call (the figures: 15 calls, $0.06)
ENV = {"COLUMNS": "250", "NO_COLOR": "1"}
HERE = Path(__file__).parent


def _calls(out: Path) -> list[dict[str, Any]]:
    return [r for r in read_jsonl(out / "calls.jsonl") if r.get("type") == "call"]


# -- 1. spend = the bill -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["usage", "header"])
@pytest.mark.parametrize("local", [False, True])
def test_a_loopback_provider_that_bills_is_counted(
    sim: SimServer, tmp_path: Path, how: str, local: bool
) -> None:
    """A loopback route (declared local or not) whose provider reports a cost: every call
    counts what it billed; the summary, matrix and report show it as billed."""
    with billing_stub(sim.base_url, C, how=how) as (url, ledger):
        route = Route("mine", "chat", url, local=local)
        res = run_eval(EvalConfig(targets=[Target(route, "sim-qwen3")], out=tmp_path, workers=4))
    n = len(ledger.billed)
    assert n > 5 and res.sent == n == ledger.requests == len(ledger.bodies)  # none twice
    assert res.billed_usd == pytest.approx(ledger.total, rel=1e-12, abs=1e-15)
    assert res.spent_usd == pytest.approx(ledger.total, rel=1e-12, abs=1e-15)
    assert res.estimated_usd == 0 and res.unknown_price == ()
    assert {(r["price"], r["cost_usd"], r["cost_estimate"]) for r in _calls(tmp_path)} == {
        ("billed", C, False)
    }
    matrix = build_matrix(tmp_path)
    assert matrix["spent_billed_usd"] == pytest.approx(ledger.total, rel=1e-9)
    assert matrix["spent_estimated_usd"] == 0
    want = f"${C * n:.4f} spent (${C * n:.4f} billed by the provider, $0.0000 estimated)"
    assert want in render_md(matrix) and want in render_html(matrix)


def test_the_budget_applies_on_a_loopback_address(sim: SimServer, tmp_path: Path) -> None:
    """The issue's case: --budget 0.01 against a loopback provider billing $0.004 a call. The
    route has no price, so each call is reserved at the unknown price's worst case: over the
    cap, nothing is sent; and what is spent never goes over it."""
    with billing_stub(sim.base_url, C) as (url, ledger):
        route = Route("mine", "chat", url)
        res = run_eval(EvalConfig(targets=[Target(route, "sim-qwen3")], out=tmp_path, budget=0.01))
    assert res.budget_stopped and ledger.total <= 0.01
    assert "price is unknown" in res.stop_reason and "--budget $0.01" in res.stop_reason
    assert res.spent_usd == pytest.approx(ledger.total, abs=1e-15)


def _priced_route(url: str, per_token: float) -> Route:
    """A route declaring its price: prompt free, completion ``per_token`` (so a call's worst
    case is its output allowance times ``per_token``, whatever its prompt)."""
    return Route("mine", "chat", url, price=(0.0, per_token))


MAX_TOKENS = 512
PER_TOKEN = 1e-5
W = MAX_TOKENS * PER_TOKEN  # a call's worst case: the full output allowance at the price


def _capped(sim: SimServer, out: Path, limit: float, workers: int) -> tuple[Any, Ledger]:
    with billing_stub(sim.base_url, C) as (url, ledger):
        target = Target(_priced_route(url, PER_TOKEN), "sim-qwen3")
        cfg = EvalConfig(
            targets=[target], out=out, budget=limit, workers=workers, max_tokens=MAX_TOKENS
        )
        return run_eval(cfg), ledger


def test_the_cap_boundary(sim: SimServer, tmp_path: Path) -> None:
    """The k-th call is sent exactly when (k-1) settled calls plus its worst case fit the cap:
    at the cap, k calls; a hair below, k-1. With 4 calls in flight the count is the same:
    reservations in flight make a call wait, never stop the run."""
    full, ledger = _capped(sim, tmp_path / "full", 10.0, 1)
    n = len(ledger.billed)
    assert not full.budget_stopped and n > 6
    reserves = [r["usd"] for r in read_jsonl(tmp_path / "full" / "cost.jsonl")
                if r["type"] == "reserve"]  # fmt: skip
    assert reserves and all(u == pytest.approx(W, rel=1e-12) for u in reserves)
    k = 5
    at_cap = C * (k - 1) + W
    for workers in (1, 4):
        res, led = _capped(sim, tmp_path / f"at-{workers}", at_cap, workers)
        assert res.budget_stopped and len(led.billed) == k == res.sent, workers
        assert led.total <= at_cap
        res, led = _capped(sim, tmp_path / f"below-{workers}", at_cap - 1e-9, workers)
        assert res.budget_stopped and len(led.billed) == k - 1 == res.sent, workers
    # the cap that allows the whole run: no stop, though 4 worst cases in flight at once
    # (4 * W) exceed what is left of it near the end
    whole = C * (n - 1) + W
    assert whole - C * (n - 4) < 4 * W
    res, led = _capped(sim, tmp_path / "whole", whole, 4)
    assert not res.budget_stopped and len(led.billed) == n


def test_a_reservation_waits_for_the_calls_in_flight(tmp_path: Path) -> None:
    """Two reservations fill the cap; a third waits (not refused) and is granted when one
    settles under its reservation; a reservation that cannot fit even with nothing in
    flight is refused at once."""
    budget = Budget(Records(tmp_path), 1.0)

    async def scenario() -> list[Any]:
        a = await budget.reserve(0.5, "a", "r", "m")
        b = await budget.reserve(0.5, "b", "r", "m")  # exactly at the cap: granted
        assert a and b
        third = asyncio.ensure_future(budget.reserve(0.5, "c", "r", "m"))
        await asyncio.sleep(0)
        waiting = not third.done()
        budget.settle(a, 0.25, False, "a", "m")  # 0.25 + 0.5 (b) + 0.5 (c) > 1: still waits
        await asyncio.sleep(0)
        still = not third.done()
        budget.settle(b, 0.25, False, "b", "m")  # 0.5 + 0.5 = 1: fits
        c = await third
        refused = await budget.reserve(0.5 + 2**-20, "d", "r", "m")  # 0.5 + 0.5 + more
        return [waiting, still, c is not None, refused]

    assert asyncio.run(scenario()) == [True, True, True, None]


def test_committed_is_what_is_spent_plus_the_open_reservations(tmp_path: Path) -> None:
    """What a budget stop records as committed: the settled cost (0.125) plus the reservation
    still open (0.25), not the settled cost alone."""
    budget = Budget(Records(tmp_path), 1.0)

    async def scenario() -> tuple[float, float]:
        a = await budget.reserve(0.5, "a", "r", "m")
        b = await budget.reserve(0.25, "b", "r", "m")
        assert a and b
        budget.settle(a, 0.125, False, "a", "m")
        return budget.committed(), budget.spent()

    assert asyncio.run(scenario()) == (0.375, 0.125)


# -- 2. never pay twice ------------------------------------------------------------------------


def _cost_lines(out: Path, lines: list[dict[str, Any]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "cost.jsonl").open("a") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")


def _killed_call(rid: str, key: str, usd: float, sent: bool) -> list[dict[str, Any]]:
    """The cost records a run killed mid-call leaves (the documented sequence: a reserve, then
    an intent once the call is sent, and no settle)."""
    recs: list[dict[str, Any]] = [
        {"type": "reserve", "rid": rid, "usd": usd, "key": key, "route": "r", "model": "m"}
    ]
    if sent:
        recs.append({"type": "intent", "rid": rid, "key": key, "pid": 1})
    return recs


def test_an_intent_without_a_record_is_spent_and_sent_again_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _cost_lines(out, _killed_call("1-1", "k1", 0.25, sent=True))
    _cost_lines(out, _killed_call("1-2", "k2", 0.5, sent=False))  # never sent: released
    first = Budget(Records(out), 10.0)
    assert first.found_in_flight == 1
    assert first.spent() == 0.25 and first.interrupted_usd == 0.25 and first.estimated == 0
    assert first.resends_left("k1") and first.resends_left("k2")
    assert first.committed() == 0.25  # nothing left reserved
    # the resent call is killed in flight again: it is not sent a third time
    _cost_lines(out, _killed_call("2-1", "k1", 0.25, sent=True))
    second = Budget(Records(out), 10.0)
    assert second.found_in_flight == 1 and second.spent() == 0.5
    assert not second.resends_left("k1") and second.resends_left("k2")
    assert Budget(Records(out), 10.0).found_in_flight == 0  # settled once, by the first resume


def test_a_call_recorded_but_killed_before_its_settlement_is_not_in_flight(
    tmp_path: Path,
) -> None:
    """Killed between writing a call's record and its settlement: its run's record says what
    it cost; it is settled from it (billed), not counted as in flight."""
    out = tmp_path / "out"
    recs = _killed_call("1-1", "k1", 0.25, sent=True)
    recs[1]["run_id"] = "run1"
    _cost_lines(out, recs)
    budget = Budget(Records(out), 10.0, "run2", {("k1", "run1"): (C, False)})
    assert budget.found_in_flight == 0 and budget.billed == C and budget.spent() == C
    # a record of another run (an earlier failure sent again) says nothing of this intent
    _cost_lines(out, [{**r, "rid": "2-1", "run_id": "run2"} for r in recs])
    again = Budget(Records(out), 10.0, "run3", {("k1", "run1"): (C, False)})
    assert again.found_in_flight == 1 and again.interrupted_usd == 0.25


def test_a_torn_last_line_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "cost.jsonl").write_text('{"type":"settle","rid":"1"}\n{"type":"reserve","ri')
    records = Records(out)
    records.append(Intent(rid="2-1", key="k", pid=1))
    records.close()
    assert [r["rid"] for r in read_jsonl(out / "cost.jsonl")] == ["1", "2-1"]


def _child_env() -> dict[str, str]:
    src = Path(reasonwire.__file__).resolve().parents[1]
    path = os.pathsep.join([str(src), str(HERE.parent.parent)])
    return dict(os.environ, PYTHONPATH=path, COLUMNS="400", NO_COLOR="1")


def _cli(url: str, out: Path, *extra: str) -> list[str]:
    exe = Path(sys.executable).parent / "reasonwire"
    return [
        sys.executable, str(exe), "eval", "run", "--no-progress", "--route", "custom",
        "--kind", "chat", "--base-url", url, "--models", "sim-qwen3,sim-r1", "--workers", "4",
        "--out", str(out), *extra,
    ]  # fmt: skip


def _poll(cond: Any, what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize("at", [2, 9])
def test_kill_9_then_resume_pays_only_the_calls_in_flight(
    sim: SimServer, tmp_path: Path, at: int
) -> None:
    """A real ``reasonwire eval run`` killed with calls in flight, a second run started while
    the first holds ``--out`` (refused, nothing sent), then the same command to the end: the
    stub saw each unique body once, plus once more for those in flight at the kill only; the
    printed bill is the stub's bill, the calls in flight named and counted apart."""
    out = tmp_path / "out"
    env = _child_env()
    # the stub answers ``at`` calls and holds the rest until the kill: the first run cannot
    # finish before it is killed, however slowly the second run starts on a loaded machine
    with billing_stub(sim.base_url, C, hold_after=at) as (url, ledger):
        proc = subprocess.Popen(_cli(url, out), env=env, stdout=subprocess.DEVNULL)
        try:
            _poll(lambda: len(_calls(out)) >= 1, "the run recorded a call")
            second = subprocess.run(
                _cli(url, out), env=env, capture_output=True, text=True, timeout=120
            )
            assert second.returncode == 2
            err = " ".join(second.stderr.split())
            assert f"is in use by another run (pid {proc.pid} on" in err, err
            assert len(second.stderr.strip().splitlines()) == 1
            # killed once ``at`` calls are recorded, with calls in flight
            _poll(lambda: len(_calls(out)) >= at and ledger.requests > len(_calls(out)),
                  "calls in flight")  # fmt: skip
            assert proc.poll() is None, "the run finished before it could be killed"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
            ledger.release.set()  # the held calls are answered and billed, no one to read them
        _poll(lambda: ledger.answered == ledger.requests, "the stub answered all it got")
        phase1 = set(ledger.bodies)
        assert all(v == 1 for v in ledger.bodies.values())
        recorded1 = _calls(out)
        unrecorded = len(phase1) - len(recorded1)  # sent, answered, never seen by the harness
        assert unrecorded >= 1
        # what the stub billed for the answers the killed run never recorded
        unseen = ledger.total - C * sum(r["price"] == "billed" for r in recorded1)
        done = subprocess.run(_cli(url, out), env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
    # sent twice: exactly the calls in flight at the kill, never more
    twice = {d for d, n in ledger.bodies.items() if n == 2}
    assert max(ledger.bodies.values()) <= 2 and twice <= phase1
    assert len(twice) == unrecorded
    line = done.stdout.strip().splitlines()[-1]
    m = re.search(r"(\d+) call\(s\) were in flight at the interruption", line)
    assert m, line
    in_flight = int(m.group(1))
    # journaled as sent: those the stub answered, and any cut short by the kill
    assert unrecorded <= in_flight <= 4  # --workers 4 on one route
    spent = re.search(
        r"\$([\d.]+) spent \(\$([\d.]+) billed by the provider, \$([\d.]+) estimated", line
    )
    assert spent, line
    billed_printed = float(spent.group(2))
    records = _calls(out)
    # every unique call recorded once
    assert len(records) == len({r["key"] for r in records}) == len(ledger.bodies)
    billed_records = [r for r in records if r["price"] == "billed"]
    assert billed_printed == pytest.approx(round(C * len(billed_records), 4), abs=1e-9)
    # the stub billed the recorded calls, and the unrecorded ones in flight at the kill
    assert ledger.total == pytest.approx(C * len(billed_records) + unseen, rel=1e-9)
    assert float(spent.group(3)) > 0 and "reserved for calls in flight at an interruption" in line
    # likely: each call in flight at its model's mean bill, and the stub bills C for every call
    likely = re.search(r"likely \$([\d.]+) at their models' mean bill", line)
    assert likely and float(likely.group(1)) == pytest.approx(round(C * in_flight, 4), abs=1e-9)


@contextmanager
def _held(out: Path, info: dict[str, Any]) -> Iterator[int]:
    """Hold ``out``'s run lock as another run would: the lock file, flocked, holding who."""
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, json.dumps(info).encode())
    try:
        yield fd
    finally:
        os.close(fd)


def test_a_second_run_on_a_held_out_says_who_and_sends_nothing(
    sim: SimServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    holder = {"pid": 4242, "host": "elsewhere", "t": 0}
    with billing_stub(sim.base_url, C) as (url, ledger), _held(out, holder):
        route = Route("mine", "chat", url)
        with pytest.raises(ConfigError) as err:
            run_eval(EvalConfig(targets=[Target(route, "sim-qwen3")], out=out))
        res = CliRunner().invoke(
            app, ["run", "--no-progress", "--route", "custom", "--kind", "chat",
                  "--base-url", url, "--models", "sim-qwen3", "--out", str(out)], env=ENV,
        )  # fmt: skip
    msg = str(err.value)
    assert "pid 4242 on elsewhere, started 1970-01-01 00:00:00 UTC" in msg and "--wait" in msg
    assert "\n" not in msg
    assert res.exit_code == 2 and "pid 4242 on elsewhere" in res.output
    assert ledger.requests == 0 and _calls(out) == []


def test_wait_blocks_until_the_holder_is_done_then_resumes(sim: SimServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    told: list[str] = []
    with billing_stub(sim.base_url, C) as (url, ledger):
        route = Route("mine", "chat", url)
        first = run_eval(EvalConfig(targets=[Target(route, "sim-qwen3")], out=out))
        with _held(out, {"pid": 4242, "host": "h", "t": 0}) as fd:

            def release(who: str) -> None:  # the holder ends as the waiter starts waiting
                told.append(who)
                fcntl.flock(fd, fcntl.LOCK_UN)

            cfg = EvalConfig(
                targets=[Target(route, "sim-qwen3")], out=out, wait=True, on_wait=release
            )
            again = run_eval(cfg)
    assert told and "pid 4242 on h" in told[0]
    assert again.sent == 0 and again.reused == first.sent
    assert ledger.requests == first.sent == len(ledger.bodies)


# -- 3. an empty catalog -----------------------------------------------------------------------


def test_an_empty_catalog_is_a_clear_line_and_exit_2(sim: SimServer, tmp_path: Path) -> None:
    with billing_stub(sim.base_url, C, catalog=[]) as (url, ledger):
        res = CliRunner().invoke(
            app, ["run", "--no-progress", "--route", "custom", "--kind", "chat",
                  "--base-url", url, "--out", str(tmp_path / "out")], env=ENV,
        )  # fmt: skip
        routes = tmp_path / "routes.toml"
        routes.write_text(f'[routes.mine]\nkind = "chat"\nbase_url = "{url}"\n')
        listed = CliRunner().invoke(
            app, ["models", "--route", "mine", "--routes-file", str(routes)], env=ENV
        )
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "lists no model" in lines[0] and url in lines[0], res.output
    assert ledger.requests == 0
    assert listed.exit_code == 2 and "lists no model" in listed.output


def test_a_call_in_flight_at_two_interruptions_is_not_sent_a_third_time(
    sim: SimServer, tmp_path: Path
) -> None:
    """The records two kills leave for one call (its first send and its one resend, both in
    flight): the next run does not send it, says so, and sends every other call."""
    with billing_stub(sim.base_url, C) as (url, ledger):
        route = Route("mine", "chat", url, local=True)
        target = Target(route, "sim-qwen3")
        full = run_eval(EvalConfig(targets=[target], out=tmp_path / "full"))
        turn2 = [r for r in _calls(tmp_path / "full") if r["position"] != "turn1"]
        key = turn2[-1]["key"]
        out = tmp_path / "out"
        _cost_lines(out, _killed_call("1-1", key, 0.25, sent=True))
        interrupted = {"type": "settle", "rid": "1-1", "cost_usd": 0.25, "estimate": True,
                       "key": key, "model": "sim-qwen3", "interrupted": True}  # fmt: skip
        _cost_lines(out, [interrupted, *_killed_call("2-1", key, 0.25, sent=True)])
        before = ledger.requests
        res = run_eval(EvalConfig(targets=[target], out=out))
    assert res.not_resent == 1 and res.in_flight == 1
    assert key not in {r["key"] for r in _calls(out)}
    assert res.sent == full.sent - 1 == ledger.requests - before
    assert res.spent_usd == pytest.approx(0.5 + C * res.sent, rel=1e-9)


def test_a_call_failing_unexpectedly_does_not_keep_others_waiting(tmp_path: Path) -> None:
    """Room for one call at a time; the call holding it fails with an unexpected exception
    while another waits for room. The waiter is told (no hang): the failed call's outcome is
    unknown, so its reservation stays counted, the run stops on the budget, and the next run
    counts that call as in flight."""
    import httpx

    from reasonwire.eval.budget import Price
    from reasonwire.eval.runner import arun_eval

    async def handler(request: httpx.Request) -> httpx.Response:
        if json.loads(request.content)["model"] == "m1":
            await asyncio.sleep(0.2)  # m2 is waiting for room by now
            raise RuntimeError("a bug between the request and its record")
        return httpx.Response(200, json={
            "id": "chatcmpl-1", "object": "chat.completion", "model": "m2",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "NONE"}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        })  # fmt: skip

    route = Route("paid", "chat", "https://api.example.invalid/v1")
    price = Price(0.0, PER_TOKEN)
    cfg = EvalConfig(
        targets=[Target(route, "m1", price), Target(route, "m2", price)], out=tmp_path,
        budget=1.5 * W, workers=2, max_tokens=MAX_TOKENS, transport=httpx.MockTransport(handler),
    )  # fmt: skip
    res = asyncio.run(asyncio.wait_for(arun_eval(cfg), 120))
    assert res.budget_stopped and res.sent == 0
    assert Budget(Records(tmp_path), 1.0).found_in_flight == 1


def test_a_declared_local_gateway_bills_per_model(sim: SimServer, tmp_path: Path) -> None:
    """One declared-local route, two models: the simulator's OpenRouter behaviour reports
    ``usage.cost`` (billed: counted), Qwen3 reports none (free, and not priced as unknown
    because its neighbour bills)."""
    route = Route("gw", "chat", sim.base_url, local=True)
    targets = [Target(route, "sim-openrouter"), Target(route, "sim-qwen3")]
    res = run_eval(EvalConfig(targets=targets, out=tmp_path, workers=4))
    recs = _calls(tmp_path)
    billed = [r for r in recs if r["model"] == "sim-openrouter" and r["ok"]]
    assert billed and all(r["price"] == "billed" for r in billed)
    assert all(r["cost_usd"] == r["usage"]["cost_usd"] > 0 for r in billed)
    free = [r for r in recs if r["model"] == "sim-qwen3"]
    assert free and {(r["price"], r["cost_usd"]) for r in free} == {("free", 0.0)}
    assert res.unknown_price == () and res.estimated_usd == 0
    assert res.billed_usd == pytest.approx(sum(r["cost_usd"] for r in recs), rel=1e-9)


def test_a_model_that_cannot_fit_does_not_stop_the_others(sim: SimServer, tmp_path: Path) -> None:
    """The cap allows every call of one model and no call of another (its worst case alone is
    over the cap): the first is measured whole, the second is stopped and said so."""
    from reasonwire.eval.budget import Price

    with billing_stub(sim.base_url, C) as (url, ledger):
        route = Route("mine", "chat", url)
        cheap = Target(route, "sim-qwen3", Price(0.0, PER_TOKEN))
        alone = run_eval(EvalConfig(targets=[cheap], out=tmp_path / "alone", workers=4,
                                    max_tokens=MAX_TOKENS))  # fmt: skip
        dear = Target(route, "sim-r1", Price(0.0, 1.0))  # $512 worst case
        cap = C * (alone.sent - 1) + W  # exactly what the cheap model needs
        res = run_eval(EvalConfig(targets=[cheap, dear], out=tmp_path / "both", workers=4,
                                  max_tokens=MAX_TOKENS, budget=cap))  # fmt: skip
    per_model = Counter(r["model"] for r in _calls(tmp_path / "both"))
    assert per_model == {"sim-qwen3": alone.sent}
    assert ledger.requests == 2 * alone.sent  # nothing of sim-r1 reached the provider
    stops = [r for r in read_jsonl(tmp_path / "both" / "runs.jsonl") if r["type"] == "budget_stop"]
    assert [(s["model"], s["next_call_worst_usd"]) for s in stops] == [("sim-r1", MAX_TOKENS)]
    assert res.budget_stopped and "sim-r1" in res.stop_reason


def _run_cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["run", "--no-progress", *args], env=ENV)
    return res.exit_code, res.output


def test_local_declares_a_custom_route_free(sim: SimServer, tmp_path: Path) -> None:
    base = ["--route", "custom", "--kind", "chat", "--base-url", sim.base_url,
            "--models", "sim-qwen3"]  # fmt: skip
    code, output = _run_cli(*base, "--local", "--out", str(tmp_path / "a"))
    assert code == 0, output
    last = output.strip().splitlines()[-1]
    assert "$0.0000 spent ($0.0000 billed by the provider, $0.0000 estimated)" in last
    code, output = _run_cli(*base, "--out", str(tmp_path / "b"))
    assert code == 0 and "price unknown for custom/sim-qwen3" in output.strip().splitlines()[-1]
    code, output = _run_cli("--route", "local", "--local", "--models", "m",
                            "--out", str(tmp_path / "c"))  # fmt: skip
    assert code == 2 and "--local only applies to --route custom" in output


def test_a_declared_local_route_is_reserved_as_paid_until_it_answers_unbilled(
    sim: SimServer, tmp_path: Path
) -> None:
    """Declared local, but it bills: before its first answer nobody knows, so its calls are
    reserved as paid ones and the cap holds (two models billing $0.006 a call, cap $0.01)."""
    with billing_stub(sim.base_url, 0.006) as (url, ledger):
        route = Route("mine", "chat", url, local=True)
        targets = [Target(route, "sim-qwen3"), Target(route, "sim-r1")]
        res = run_eval(EvalConfig(targets=targets, out=tmp_path, budget=0.01, workers=4))
    assert ledger.total <= 0.01 and res.budget_stopped


def test_a_declared_local_route_answering_unbilled_is_reserved_at_nothing(
    sim: SimServer, tmp_path: Path
) -> None:
    route = Route("mine", "chat", sim.base_url, local=True)  # sim-qwen3 reports no cost
    run_eval(EvalConfig(targets=[Target(route, "sim-qwen3")], out=tmp_path, workers=1))
    reserves = [r["usd"] for r in read_jsonl(tmp_path / "cost.jsonl") if r["type"] == "reserve"]
    assert len(reserves) > 2 and reserves[0] > 0 and set(reserves[1:]) == {0.0}
