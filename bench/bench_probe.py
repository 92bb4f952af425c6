# ruff: noqa: E501  (the embedded loopback server is one script string)
"""Probe overhead and ledger concurrency, measured against the unwrapped transport in one run.

1. A streamed Chat Completions answer (reasoning and text deltas, usage at the end) from a
   loopback HTTP server in a separate process, read with ``iter_raw`` through
   ``httpx.HTTPTransport`` unwrapped and wrapped in ``ProbeTransport``, runs interleaved,
   median of N. The probe counts as the chunks pass and writes the row when the response
   closes, so the caller's wall time (until the ``with`` block is left) includes everything:
   the row is checked to be on disk right then, without any flush. Server modes:
   - ``paced`` (the goal, <= 2%): one ``send`` per SSE event, as a provider flushes each
     token, at ``--rate`` MB/s (default 5). That is far above any provider's pace: a chat
     chunk is ~150 bytes per token, so 5 MB/s is ~33,000 tokens/s, ten times the fastest
     serving speeds published (a few thousand tokens/s);
   - ``flood`` (information): one ``send`` per event, back to back, as fast as the server
     process can (~100 MB/s here). Both cores are then busy (server and caller), so the
     counter's CPU shows up in the caller's wall time nearly one for one;
   - ``bulk`` (information): the whole body in 1 MB writes (client CPU-bound).
   For each mode the close time is printed too: from the last byte read to the row on disk
   (the end-of-call cost; counting is incremental, so it stays flat).
2. 8 threads x 1000 calls through ``ProbeTransport`` into one session file: every row parses,
   none is lost.

Run: ``.venv/bin/python bench/bench_probe.py [--mb 50] [--paced-mb 10] [--rate 5] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from reasonwire.probe import ProbeTransport, flush, read_rows

SERVER = r"""
import socket, sys, threading, time
body = open(sys.argv[1], "rb").read()
events = body.split(b"\n\n")
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16); print(s.getsockname()[1], flush=True)
def handle(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d: return
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    n = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
    while len(rest) < n: rest += c.recv(65536)
    line = head.split(b"\r\n")[0]
    flood = b"/flood/" in line
    paced = b"/paced/" in line
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(body))
    if paced:
        rate = float(sys.argv[2]) * 1e6
        t0 = time.monotonic(); sent = 0
        for ev in events[:-1]:
            c.sendall(ev + b"\n\n"); sent += len(ev) + 2
            ahead = sent / rate - (time.monotonic() - t0)
            if ahead > 0.002: time.sleep(ahead)
        if events[-1]: c.sendall(events[-1])
    elif flood:
        for ev in events[:-1]: c.sendall(ev + b"\n\n")
        if events[-1]: c.sendall(events[-1])
    else:
        mv = memoryview(body)
        for i in range(0, len(body), 1 << 20): c.sendall(mv[i:i + (1 << 20)])
    c.close()
while True:
    c, _ = s.accept(); threading.Thread(target=handle, args=(c,), daemon=True).start()
"""


def make_body(mb: int) -> bytes:
    unit = []
    for i in range(10):
        unit.append({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
                     "model": "bench-model", "choices": [{"index": 0, "delta": {
                         "reasoning_content": f"considering step {i} of the plan, "}}]})  # fmt: skip
        unit.append({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1,
                     "model": "bench-model", "choices": [{"index": 0, "delta": {
                         "content": "the answer is é 😀 "}}]})  # fmt: skip
    one = "".join("data: " + json.dumps(e, ensure_ascii=False) + "\n\n" for e in unit).encode()
    last = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "bench-model",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 999}}  # fmt: skip
    tail = ("data: " + json.dumps(last) + "\n\ndata: [DONE]\n\n").encode()
    return one * ((mb * 1_000_000) // len(one)) + tail


def read_all(client: httpx.Client, url: str) -> tuple[int, float]:
    """Bytes read, and the close time: from the last byte read to the ``with`` block left
    (for the probe: the row written)."""
    n = 0
    with client.stream("POST", url, json={"model": "bench-model", "messages": []}) as r:
        for chunk in r.iter_raw():
            n += len(chunk)
        last = time.perf_counter()
    return n, time.perf_counter() - last


def overhead(port: int, mode: str, runs: int, size: int, ledger: Path) -> float:
    url = f"http://127.0.0.1:{port}/{mode}/v1/chat/completions"
    session = f"bench-{mode}"

    def plain() -> httpx.Client:  # a fresh connection per run: the server closes each one
        return httpx.Client(transport=httpx.HTTPTransport(), timeout=120)

    def probed() -> httpx.Client:
        t = ProbeTransport(session, ledger_dir=ledger, inner=httpx.HTTPTransport())
        return httpx.Client(transport=t, timeout=120)

    read_all(plain(), url)  # warm both paths
    read_all(probed(), url)
    t_plain: list[float] = []
    t_probe: list[float] = []
    c_plain: list[float] = []
    c_probe: list[float] = []
    e_plain: list[float] = []
    e_probe: list[float] = []
    for i in range(runs):
        for which in ("plain", "probe") if i % 2 == 0 else ("probe", "plain"):
            client = plain() if which == "plain" else probed()
            before = len(read_rows(ledger).rows) if which == "probe" else 0
            c0 = time.thread_time()
            t0 = time.perf_counter()
            got, end = read_all(client, url)
            dt = time.perf_counter() - t0
            dc = time.thread_time() - c0
            assert got == size
            if which == "probe":
                # durable: the row is on disk when the response is closed, no flush needed
                assert len(read_rows(ledger).rows) == before + 1
                t_probe.append(dt)
                c_probe.append(dc)
                e_probe.append(end)
            else:
                t_plain.append(dt)
                c_plain.append(dc)
                e_plain.append(end)
            client.close()
    a, b = statistics.median(t_plain), statistics.median(t_probe)
    ca, cb = statistics.median(c_plain), statistics.median(c_probe)
    rows = [r for r in read_rows(ledger).rows if r["sessionId"] == session]
    last = rows[-1]
    ratio = b / a
    print(f"[{mode}] {size / 1e6:.1f} MB x {runs} runs (median, interleaved)")
    print(
        f"  unwrapped  {a * 1000:8.1f} ms  ({size / a / 1e6:7.1f} MB/s)  caller CPU {ca * 1000:.0f} ms"
    )
    print(f"  probe      {b * 1000:8.1f} ms  ({size / b / 1e6:7.1f} MB/s)  caller CPU {cb * 1000:.0f} ms"
          "  (wall time until the row is on disk)")  # fmt: skip
    print(f"  ratio      {ratio:.3f}  overhead {(ratio - 1) * 100:+.1f}%"
          + ("   (goal <= 2%)" if mode == "paced" else "   (information)"))  # fmt: skip
    print(
        f"  counting   {(cb - ca) * 1000 / (size / 1e6):.2f} ms CPU per MB on the caller's thread"
    )
    ea, eb = statistics.median(e_plain), statistics.median(e_probe)
    print(f"  close      unwrapped {ea * 1000:.2f} ms, probe {eb * 1000:.2f} ms"
          "  (last byte read -> response closed, row on disk)")  # fmt: skip
    print(f"  row: status={last['status']} reasoningBytes={last['reasoningBytes']} "
          f"textBytes={last['textBytes']} wireBytes={last['wireBytes']} usage={last.get('usage')}")  # fmt: skip
    return ratio


def concurrency(threads: int, calls: int, ledger: Path) -> None:
    body = (
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"r"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"t"}}],"model":"m"}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    def work(w: int) -> None:
        t = ProbeTransport("shared-session", purpose=f"w{w}", ledger_dir=ledger,
                           inner=httpx.MockTransport(handler))  # fmt: skip
        with httpx.Client(transport=t) as c:
            for _ in range(calls):
                with c.stream("POST", "http://up/v1/chat/completions", json={"model": "m"}) as r:
                    r.read()

    t0 = time.perf_counter()
    ts = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    path = ledger / "shared-session.jsonl"
    lines = path.read_bytes().splitlines()
    parsed = [json.loads(line) for line in lines]  # raises if any line is torn
    per = {f"w{w}": 0 for w in range(threads)}
    for r in parsed:
        per[r["purpose"]] += 1
    ok = len(parsed) == threads * calls and all(v == calls for v in per.values())
    print(f"[concurrency] {threads} threads x {calls} calls -> {len(lines)} lines, "
          f"{len(parsed)} parsed, expected {threads * calls}, per thread {sorted(set(per.values()))}"
          f" -> {'OK' if ok else 'LOST ROWS'}  ({dt:.2f} s, {len(parsed) / dt:.0f} rows/s)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=5)  # median of >= 3
    ap.add_argument("--rate", type=float, default=5.0, help="MB/s of the paced mode")
    ap.add_argument("--paced-mb", type=int, default=10)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--calls", type=int, default=1000)
    args = ap.parse_args()
    args.runs = max(3, args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "ledger"
        ratios: dict[str, float] = {}
        for mode, mb in (("paced", args.paced_mb), ("flood", args.mb), ("bulk", args.mb)):
            body = make_body(mb)
            (Path(tmp) / "body").write_bytes(body)
            srv = subprocess.Popen([sys.executable, "-c", SERVER, str(Path(tmp) / "body"),
                                    str(args.rate)], stdout=subprocess.PIPE, text=True)  # fmt: skip
            try:
                assert srv.stdout is not None
                port = int(srv.stdout.readline())
                ratios[mode] = overhead(port, mode, args.runs, len(body), ledger)
            finally:
                srv.kill()
        print("ratios (probe / unwrapped, caller's wall time until the row is on disk): "
              + ", ".join(f"{m} {r:.3f}" for m, r in ratios.items()))  # fmt: skip
        concurrency(args.threads, args.calls, Path(tmp) / "conc")
        assert flush(60)  # archive housekeeping, if any, before the directory goes


if __name__ == "__main__":
    socket.setdefaulttimeout(120)
    main()
