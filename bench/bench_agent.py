"""Agent bar: per-tool-round overhead of ``reasonwire.agent`` over a bare request, < 1 ms.

One user turn = two tool rounds then an answer (three requests). The responses are canned:
recorded once from the in-process simulator, then served by an ``httpx.MockTransport`` in the
same process, so no network or server time enters the figures. The peer, measured in the same
run with the same client and transport, posts the very same request bytes (recorded from the
agent) and reads the same response bytes, doing nothing else. The difference is what the agent
adds per turn (building bodies, encoding, parsing or stream decoding, carrier bookkeeping,
tool dispatch); divided by the two tool rounds it is the figure the bar is about.

    .venv/bin/python bench/bench_agent.py [--turns 400]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx

from reasonwire import agent
from reasonwire.sim import SimServer

KEY = "sk-bench-0123456789abcdefghij"


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: found; next tool: weather"


def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


TOOLS = (lookup, weather)

Factory = Callable[[str, str, httpx.Client], agent.Model]
CASES: dict[str, Factory] = {
    "responses store=true": lambda b, r, c: agent.openai(
        "sim-gpt", base_url=b, key=lambda: KEY, http_client=c, retries=0
    ),
    "responses store=false": lambda b, r, c: agent.openai(
        "sim-gpt", store=False, base_url=b, key=lambda: KEY, http_client=c, retries=0
    ),
    "chat deepseek": lambda b, r, c: agent.openai_compatible(
        base_url=b, model="sim-deepseek", profile="deepseek", effort="high", http_client=c,
        retries=0,
    ),
    "chat openrouter": lambda b, r, c: agent.openai_compatible(
        base_url=b, model="sim-openrouter", profile="openrouter", effort="high",
        http_client=c, retries=0,
    ),
    "anthropic": lambda b, r, c: agent.anthropic(
        "sim-claude", base_url=r, key=lambda: KEY, http_client=c, retries=0
    ),
    "gemini": lambda b, r, c: agent.gemini(
        "sim-gemini", effort="high", base_url=r, key=lambda: KEY, http_client=c,
        retries=0,
    ),
}  # fmt: skip


class Capture(httpx.BaseTransport):
    """Forwards to the simulator and keeps (request bytes, response bytes, content type)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.log: list[tuple[str, bytes, bytes, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        resp = self.inner.handle_request(request)
        body = resp.read()
        ctype = resp.headers.get("content-type", "application/json")
        self.log.append((str(request.url), request.content, body, ctype))
        return httpx.Response(resp.status_code, content=body, headers={"content-type": ctype})


def canned(log: list[tuple[str, bytes, bytes, str]]) -> httpx.MockTransport:
    answers = [(body, ctype) for _, _, body, ctype in log]
    n = {"i": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        body, ctype = answers[n["i"] % len(answers)]
        n["i"] += 1
        return httpx.Response(200, content=body, headers={"content-type": ctype})

    return httpx.MockTransport(handler)


def timed(fn: Callable[[], Any], turns: int) -> float:
    """Median seconds of ``fn`` over ``turns`` runs (after a warm-up)."""
    for _ in range(min(20, turns)):
        fn()
    samples = []
    for _ in range(turns):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def bench_case(sim: SimServer, label: str, stream: bool, turns: int) -> tuple[float, float]:
    factory = CASES[label]
    cap = Capture()
    with httpx.Client(transport=cap) as c:
        agent.Agent(factory(sim.base_url, sim.root_url, c), TOOLS).run("Weather?", stream=stream)
    assert len(cap.log) == 3, f"{label}: expected 3 requests, got {len(cap.log)}"
    requests = [(url, body) for url, body, _, _ in cap.log]
    with httpx.Client(transport=canned(cap.log)) as client:
        model = factory(sim.base_url, sim.root_url, client)
        headers = model.headers()
        headers["content-type"] = "application/json"

        def with_agent() -> None:
            r = agent.Agent(model, TOOLS).run("Weather?", stream=stream)
            assert r.rounds == 2

        def bare() -> None:
            for url, body in requests:
                if stream:
                    with client.stream("POST", url, content=body, headers=headers) as resp:
                        for _ in resp.iter_bytes():
                            pass
                else:
                    client.post(url, content=body, headers=headers).read()

        # same bytes: the agent's requests against the canned answers equal the recorded ones
        sent: list[bytes] = []
        client.event_hooks["request"] = [lambda req: sent.append(req.content)]
        with_agent()
        client.event_hooks["request"] = []
        assert sent == [b for _, b in requests], f"{label}: agent bytes differ from recording"
        t_bare = timed(bare, turns)
        t_agent = timed(with_agent, turns)
    return t_bare, t_agent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=400)
    args = ap.parse_args()
    print(f"{'strategy':24} {'mode':6} {'bare ms/turn':>12} {'agent ms/turn':>13} "
          f"{'overhead ms/round':>17} {'ratio':>6}")  # fmt: skip
    worst = 0.0
    with SimServer(seed=0) as sim:
        for label in CASES:
            for stream in (False, True):
                t_bare, t_agent = bench_case(sim, label, stream, args.turns)
                per_round = (t_agent - t_bare) / 2 * 1000
                worst = max(worst, per_round)
                print(
                    f"{label:24} {'stream' if stream else 'json':6} {t_bare * 1000:12.3f} "
                    f"{t_agent * 1000:13.3f} {per_round:17.3f} {t_agent / t_bare:6.2f}"
                )
    verdict = "PASS" if worst < 1.0 else "FAIL"
    print(f"worst overhead per tool round: {worst:.3f} ms (bar < 1 ms): {verdict}")


if __name__ == "__main__":
    main()
