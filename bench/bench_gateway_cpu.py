"""The gateway's own CPU per call, below the server layer: its ASGI app driven in process (no
uvicorn, no sockets) with a canned upstream answer, a SQLite evidence file, the bench policy
and binding of ``bench_gateway.py``. CPU time (``time.process_time``), not wall time, so the
figure holds on a loaded machine; JSON calls and streams, one at a time and 32 at once (where
the evidence rows of calls in flight together share a commit).

Why beside ``bench_gateway.py``: there a call's CPU is the server's, the sockets' and the
gateway's together, measured under wrk; here only what the gateway's own code costs.

    .venv/bin/python bench/bench_gateway_cpu.py [--calls 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from bench_gateway import POLICY, bench_token
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.upstream import UpstreamPool, UpstreamResponse

ANSWER = json.dumps(
    {
        "id": "chatcmpl-b",
        "object": "chat.completion",
        "created": 1,
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Done.",
                    "reasoning_content": "hidden plan",
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
).encode()
_CHUNKS = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "hidden"}}]},
    {"choices": [{"index": 0, "delta": {"content": "Done."}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}},
]
STREAM = (
    b"".join(
        b"data: "
        + json.dumps(
            {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "bench-model"} | c
        ).encode()
        + b"\n\n"
        for c in _CHUNKS
    )
    + b"data: [DONE]\n\n"
)


class Canned(UpstreamResponse):
    """The upstream's answer, already received: the body in one piece."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.status_code = 200
        self.headers = {"content-type": content_type, "content-length": str(len(body))}
        self._body = body

    async def read(self) -> bytes:
        return self._body

    async def aiter(self) -> AsyncIterator[bytes]:
        yield self._body

    async def aclose(self) -> None:
        return None


class CannedPool(UpstreamPool):
    """An upstream that answers at once (after one loop turn, as a socket read would take)."""

    async def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, retry_stale: bool = True
    ) -> UpstreamResponse:
        await asyncio.sleep(0)
        if b'"stream":true' in body:
            return Canned(STREAM, "text/event-stream")
        return Canned(ANSWER, "application/json")


def _gateway(tmp: Path) -> tuple[Gateway, str]:
    ring = KeyRing.generate("bench")
    ring.save_dir(tmp / "keys")
    (tmp / "keys" / "bench.key.pem").unlink()
    (tmp / "bench_policy.py").write_text(POLICY)
    sys.path.insert(0, str(tmp))
    os.environ["BENCH_UPSTREAM"] = "http://127.0.0.1:9/v1"  # never reached: the pool is canned
    os.environ["BENCH_UPSTREAM_KEY"] = "sk-bench-upstream-not-real"
    import bench_policy  # type: ignore[import-not-found]

    # A key directory younger than the filesystem's timestamp granularity is re-read on every
    # call (binding._RACY_NS, 2 s): a served gateway's keys are older than that.
    time.sleep(2.2)
    gw = Gateway(
        bench_policy.REGISTRY,
        bench_policy.POLICY,
        KeyRing.load_dir(tmp / "keys"),
        SQLiteStore(tmp / "evidence.sqlite"),
        upstream=CannedPool(),
    )
    return gw, bench_token(ring)


async def _call(gw: Gateway, token: str, stream: bool) -> None:
    body = json.dumps(
        {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
        | ({"stream": True} if stream else {}),
        separators=(",", ":"),
    ).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-reasonwire-binding", token.encode()),
            (b"x-reasonwire-conversation", b"bench-conv"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    sent: list[dict[str, object]] = []
    read = False

    async def receive() -> dict[str, object]:
        nonlocal read
        if not read:
            read = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays (a relayed stream listens for it)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    await gw.app(scope, receive, send)  # type: ignore[arg-type]
    if sent[0].get("status") != 200:
        raise SystemExit(f"the gateway answered {sent[0]}")


async def _cpu_per_call(gw: Gateway, token: str, calls: int, together: int, stream: bool) -> float:
    for _ in range(200):  # warm: imports, caches, the conversation's fixed effort
        await _call(gw, token, stream)
    start = time.process_time()
    for _ in range(calls // together):
        await asyncio.gather(*(_call(gw, token, stream) for _ in range(together)))
    return (time.process_time() - start) / (calls // together * together) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=4000)
    args = ap.parse_args()
    try:
        import uvloop

        uvloop.install()  # as uvicorn runs the served gateway when the govern extra is in
    except ImportError:
        pass
    gw, token = _gateway(Path(tempfile.mkdtemp(prefix="rw-bench-gw-cpu-")))
    print(f"{'calls':<28}{'together':>10}{'CPU per call':>16}")
    for stream in (False, True):
        for together in (1, 32):
            us = asyncio.run(_cpu_per_call(gw, token, args.calls, together, stream))
            kind = "stream" if stream else "JSON"
            print(f"{kind:<28}{together:>10}{us:>13.0f} us")


if __name__ == "__main__":
    main()
