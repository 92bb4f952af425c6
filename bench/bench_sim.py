"""Simulator bars: `reasonwire sim serve` start-up time and non-streaming chat throughput.

Throughput is measured with wrk (64 connections, 2 threads) against a server process of its
own; the peer is a bare starlette app (one JSON route, same uvicorn settings) measured in the
same run, so the printed ratio shows the simulator's own cost. Without wrk a Python load
generator in a separate process is used instead (and says so).

    .venv/bin/python bench/bench_sim.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
BODY = {
    "model": "sim-qwen3",
    "messages": [
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "user", "content": "Roll a die for me and tell me the result."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "roll_dice",
                "description": "Roll a six-sided die.",
                "parameters": {"type": "object", "properties": {"sides": {"type": "integer"}}},
            },
        }
    ],
}
PEER = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
async def ep(request):
    await request.body()
    return Response(b'{"ok":true}', media_type="application/json")
app = Starlette(routes=[Route("/v1/chat/completions", ep, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", http="h11",
            access_log=False, lifespan="off")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_CLIENT = httpx.Client(timeout=2.0)  # made once: a new client per poll costs ~40 ms of TLS setup


def wait_up(url: str, deadline_s: float = 20.0) -> float:
    """Poll until the first chat request is answered 200 (not merely until the port opens)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < deadline_s:
        try:
            if _CLIENT.post(url, json=BODY).status_code == 200:
                return time.perf_counter() - t0
        except httpx.TransportError:
            time.sleep(0.005)
    raise SystemExit(f"server at {url} did not come up")


def start(cmd: list[str], url: str) -> tuple[subprocess.Popen[bytes], float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_up(url)
    return proc, time.perf_counter() - t0


def wrk(url: str, seconds: int) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(
            'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
            f"wrk.body = {json.dumps(json.dumps(BODY))}\n"
        )
        script = f.name
    try:
        out = subprocess.run(
            ["wrk", "-t2", "-c64", f"-d{seconds}s", "-s", script, url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script)
    if "Non-2xx" in out:
        raise SystemExit(f"non-2xx answers under load:\n{out}")
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return float(m.group(1)) if m else 0.0


PYLOAD = """
import asyncio, json, sys, time, httpx
url, seconds, body = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
async def worker(client, stop, n):
    while time.perf_counter() < stop:
        r = await client.post(url, json=body); r.raise_for_status(); n[0] += 1
async def main():
    n = [0]
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=64)) as c:
        stop = time.perf_counter() + seconds
        await asyncio.gather(*(worker(c, stop, n) for _ in range(64)))
    print(n[0] / seconds)
asyncio.run(main())
"""


def pyload(url: str, seconds: int) -> float:
    out = subprocess.run(
        [PY, "-c", PYLOAD, url, str(seconds), json.dumps(BODY)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(out.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10)
    args = ap.parse_args()
    load = wrk if shutil.which("wrk") else pyload
    if load is pyload:
        print("wrk not found: using a Python load generator in a separate process (weaker)")
    exe = str(Path(PY).parent / "reasonwire")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    startups = []
    for _ in range(2):  # extra cold starts; the figure is the median of three
        p2 = free_port()
        proc, t = start(
            [exe, "sim", "serve", "--port", str(p2)], f"http://127.0.0.1:{p2}/v1/chat/completions"
        )
        proc.terminate()
        proc.wait()
        startups.append(t)
    sim, t = start([exe, "sim", "serve", "--port", str(port)], url)
    startup = sorted([*startups, t])[1]
    try:
        sim_rps = load(url, args.seconds)
    finally:
        sim.terminate()
        sim.wait()
    pport = free_port()
    purl = f"http://127.0.0.1:{pport}/v1/chat/completions"
    peer, peer_startup = start([PY, "-c", PEER, str(pport)], purl)
    try:
        peer_rps = load(purl, args.seconds)
    finally:
        peer.terminate()
        peer.wait()
    print(
        f"startup (median of 3) sim serve: {startup * 1000:7.0f} ms   "
        f"bare starlette peer: {peer_startup * 1000:7.0f} ms   ratio {startup / peer_startup:.2f}"
    )
    print(
        f"chat non-streaming, 64 connections ({load.__name__}): sim {sim_rps:8.0f} req/s   "
        f"peer {peer_rps:8.0f} req/s   ratio {sim_rps / peer_rps:.2f}"
    )
    print(
        f"bars: startup < 1 s: {'PASS' if startup < 1 else 'FAIL'}; "
        f">= 1000 req/s: {'PASS' if sim_rps >= 1000 else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
