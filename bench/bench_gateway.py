"""Governed-effort gateway bars: added latency over a direct call, stream time to first byte,
and throughput against LiteLLM's proxy forwarding to the same upstream, in one run.

Processes (each its own, one worker): a minimal asyncio upstream answering a fixed chat
completion (with ``reasoning_content`` and usage) or a fixed SSE stream; ``reasonwire gateway
serve`` with a generated policy module and key; LiteLLM's proxy (from a separate venv, default
/tmp/litellm-venv; ``--litellm PATH`` to its ``litellm`` executable) when installed. Latency is
measured sequentially with one keep-alive client; throughput with wrk (1 thread, 32
connections) when on PATH.

    .venv/bin/python bench/bench_gateway.py [--requests 2000] [--seconds 10]
"""

# ruff: noqa: E501  (the upstream and policy sources embedded below are kept verbatim)
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
MODEL = "bench-model"

UPSTREAM = r"""
import asyncio, json, sys
BODY = json.dumps({"id": "chatcmpl-b", "object": "chat.completion", "created": 1, "model": "bench-model",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done.",
  "reasoning_content": "hidden plan"}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}}).encode()
chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "hidden"}}]},
          {"choices": [{"index": 0, "delta": {"content": "Done."}}]},
          {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
          {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}}]
SSE = b"".join(b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1,
  "model": "bench-model", **c}).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
def resp(ctype, body):
    return (b"HTTP/1.1 200 OK\r\ncontent-type: " + ctype + b"\r\ncontent-length: " +
            str(len(body)).encode() + b"\r\n\r\n" + body)
JSON_RESP, SSE_RESP = resp(b"application/json", BODY), resp(b"text/event-stream", SSE)
class P(asyncio.Protocol):
    def connection_made(self, t): self.t, self.buf = t, b""
    def data_received(self, d):
        self.buf += d
        while True:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if not sep: return
            n = 0
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length": n = int(v)
            if len(rest) < n: return
            body, self.buf = rest[:n], rest[n:]
            self.t.write(SSE_RESP if b'"stream": true' in body or b'"stream":true' in body else JSON_RESP)
async def main():
    loop = asyncio.get_running_loop()
    srv = await loop.create_server(P, "127.0.0.1", int(sys.argv[1]))
    print("ready", flush=True)
    await srv.serve_forever()
try:
    asyncio.run(main())
except KeyboardInterrupt:  # the bench stops it with SIGINT
    pass
"""

POLICY = """
import os
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration, RuntimeAdapter
REGISTRY = Registry(adapters=[RuntimeAdapter("bench", "1", "qualified", "Q-RT", frozenset({"low", "medium", "high"}))])
REGISTRY.add_route(RouteRegistration(route_id="bench", provider="bench", model="bench-model",
    dialect="chat", upstream_base_url=os.environ["BENCH_UPSTREAM"], qualification_id="Q-ROUTE",
    levels={lv: {"reasoning_effort": lv} for lv in ("low", "medium", "high")},
    credential_env="BENCH_UPSTREAM_KEY"))
POLICY = OrgPolicy(frozenset({"low", "medium", "high"}), "high")
"""

LITELLM_CONFIG = """
model_list:
  - model_name: bench-model
    litellm_params:
      model: openai/bench-model
      api_base: {upstream}
      api_key: sk-bench-upstream-not-real
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: process exited with {proc.returncode}")
        try:
            u = httpx.URL(url)
            with socket.create_connection((u.host, u.port or 80), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not start")


def latencies(url: str, headers: dict[str, str], n: int, stream: bool) -> list[float]:
    """Per-request seconds: whole response (non-stream) or first body byte (stream)."""
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body["stream"] = True
    data = json.dumps(body).encode()
    hdrs = {"content-type": "application/json", **headers}
    out = []
    with httpx.Client(timeout=30) as c:
        for i in range(n + 50):
            t0 = time.perf_counter()
            with c.stream("POST", url, content=data, headers=hdrs) as r:
                it = r.iter_raw()
                next(it)
                t1 = time.perf_counter()
                for _ in it:
                    pass
                t2 = time.perf_counter()
            assert r.status_code == 200, r.status_code
            if i >= 50:  # warm-up excluded
                out.append((t1 if stream else t2) - t0)
    return out


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))] * 1000


def wrk(url: str, headers: dict[str, str], seconds: int, tmp: Path) -> float | None:
    exe = shutil.which("wrk")
    if exe is None:
        return None
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    lua = tmp / "post.lua"
    hdr = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in headers.items())
    lua.write_text(
        f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
        f'wrk.headers["Content-Type"] = "application/json"\n{hdr}'
    )
    res = subprocess.run(
        [exe, "-t1", "-c32", f"-d{seconds}s", "-s", str(lua), url],
        capture_output=True,
        text=True,
        check=True,
    )
    if "Non-2xx" in res.stdout:
        raise RuntimeError(f"wrk saw errors against {url}:\n{res.stdout}")
    m = re.search(r"Requests/sec:\s+([\d.]+)", res.stdout)
    return float(m.group(1)) if m else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--litellm", default="/tmp/litellm-venv/bin/litellm")
    args = ap.parse_args()
    procs: list[subprocess.Popen[bytes]] = []
    tmp = Path(tempfile.mkdtemp(prefix="rw-bench-gw-"))
    try:
        up_port, gw_port, ll_port = free_port(), free_port(), free_port()
        (tmp / "up.py").write_text(UPSTREAM)
        procs.append(subprocess.Popen([PY, str(tmp / "up.py"), str(up_port)]))
        upstream = f"http://127.0.0.1:{up_port}"
        wait_ready(upstream, procs[-1])

        sys.path.insert(0, str(ROOT / "src"))
        from reasonwire.govern.binding import KeyRing, issue

        ring = KeyRing.generate("bench")
        ring.save_dir(tmp / "keys")
        (tmp / "keys" / "bench.key.pem").unlink()  # the gateway holds the public key only
        (tmp / "bench_policy.py").write_text(POLICY)
        env = {
            **os.environ,
            "PYTHONPATH": str(tmp),
            "BENCH_UPSTREAM": upstream + "/v1",
            "BENCH_UPSTREAM_KEY": "sk-bench-upstream-not-real",
        }
        gw_cmd = [
            PY,
            "-c",
            "from reasonwire.cli import main; main()",
            "gateway",
            "serve",
            "--policy",
            "bench_policy",
            "--keys",
            str(tmp / "keys"),
            "--evidence",
            str(tmp / "ev.sqlite"),
            "--port",
            str(gw_port),
        ]
        procs.append(subprocess.Popen(gw_cmd, env=env))
        gateway = f"http://127.0.0.1:{gw_port}"
        wait_ready(gateway, procs[-1])
        token = issue(
            ring,
            conversation_id="bench-conv",
            task_id="t",
            runtime_id="bench",
            runtime_version="1",
            route_id="bench",
            requested="medium",
            ceiling="high",
            ttl_seconds=3600,
        )
        gh = {"x-reasonwire-binding": token, "x-reasonwire-conversation": "bench-conv"}

        direct = latencies(upstream + "/v1/chat/completions", {}, args.requests, False)
        via = latencies(gateway + "/v1/chat/completions", gh, args.requests, False)
        d_s = latencies(upstream + "/v1/chat/completions", {}, args.requests // 2, True)
        v_s = latencies(gateway + "/v1/chat/completions", gh, args.requests // 2, True)
        print(f"non-streaming, {args.requests} sequential requests (ms):")
        print(f"  direct   p50 {pct(direct, 50):.3f}  p99 {pct(direct, 99):.3f}")
        print(f"  gateway  p50 {pct(via, 50):.3f}  p99 {pct(via, 99):.3f}")
        print(
            f"  added    p50 {pct(via, 50) - pct(direct, 50):.3f}  (bar < 1 ms)  "
            f"p99 {pct(via, 99) - pct(direct, 99):.3f}  (bar < 5 ms)"
        )
        print(f"stream time to first byte, {len(d_s)} requests (ms):")
        print(
            f"  direct p50 {pct(d_s, 50):.3f}  gateway p50 {pct(v_s, 50):.3f}  "
            f"delta {pct(v_s, 50) - pct(d_s, 50):.3f}  (bar <= 1 ms)"
        )

        ours = wrk(gateway + "/v1/chat/completions", gh, args.seconds, tmp)
        bare = wrk(upstream + "/v1/chat/completions", {}, args.seconds, tmp)
        if ours is None:
            print("wrk not on PATH: throughput not measured (apt-get install wrk)")
            return
        print(f"throughput, wrk 1 thread 32 connections {args.seconds}s (req/s):")
        print(f"  bare upstream        {bare:,.0f}")
        print(f"  reasonwire gateway   {ours:,.0f}")
        ll = Path(args.litellm)
        if not ll.exists():
            print(
                f"  LiteLLM proxy: not installed at {ll}; ratio vs bare upstream "
                f"{ours / (bare or 1):.2f}"
            )
            return
        (tmp / "litellm.yaml").write_text(LITELLM_CONFIG.format(upstream=upstream + "/v1"))
        ll_env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_MASTER_KEY": "sk-bench-master-not-real",
            "LITELLM_LOG": "ERROR",
        }
        procs.append(
            subprocess.Popen(
                [
                    str(ll),
                    "--config",
                    str(tmp / "litellm.yaml"),
                    "--port",
                    str(ll_port),
                    "--num_workers",
                    "1",
                ],
                env=ll_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        litellm = f"http://127.0.0.1:{ll_port}"
        wait_ready(litellm, procs[-1], timeout=180)
        lh = {"Authorization": "Bearer sk-bench-master-not-real"}
        for _ in range(50):  # warm-up; LiteLLM answers only once its router is ready
            try:
                if (
                    httpx.post(
                        litellm + "/v1/chat/completions",
                        headers=lh,
                        timeout=30,
                        json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                    ).status_code
                    == 200
                ):
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        theirs = wrk(litellm + "/v1/chat/completions", lh, args.seconds, tmp)
        print(f"  LiteLLM proxy        {theirs:,.0f}")
        print(f"  ratio gateway / LiteLLM: {ours / (theirs or 1):.1f}x  (target >= 10x)")
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
