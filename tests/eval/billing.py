"""A loopback provider that bills every call, for the payer's tests.

It forwards each POST to the simulator and answers with the simulator's body plus a bill of
``cost`` USD per call: in ``usage.cost`` (how OpenRouter and LiteLLM's proxy report it in the
body) or in the ``x-litellm-response-cost`` header (LiteLLM's proxy, docs.litellm.ai
/docs/proxy/response_headers). It bills a call once its answer is ready, whether or not the
client is still there to read it (a provider charges for the work, not for the delivery), and
counts every request body it received: how many times each unique body came is the test's
measure of "paid twice". ``delay`` holds each answer that long, so a run can be killed with
calls in flight; ``hold_after`` answers that many calls and holds every later one until
``ledger.release`` is set, so a kill test finds calls in flight however loaded the machine is.
It runs in the test's process; the harness may run in a child process.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import httpx

COST_HEADER = "x-litellm-response-cost"


@dataclass
class Ledger:
    """What the stub received and billed."""

    bodies: Counter[str] = field(default_factory=Counter)  # sha256 of a request body -> times
    billed: list[float] = field(default_factory=list)  # one entry per billed (200) answer
    billed_by: Counter[str] = field(default_factory=Counter)  # body -> USD billed for it
    answered: int = 0  # answers computed (any status), delivered or not
    incomplete: int = 0  # requests cut short by the client's death (not received, not billed)
    taken: int = 0  # requests that reached the answering step (for ``hold_after``)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def requests(self) -> int:
        return sum(self.bodies.values())

    @property
    def total(self) -> float:
        return sum(self.billed)


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@contextmanager
def billing_stub(
    upstream: str,
    cost: float,
    how: str = "usage",
    delay: float = 0.0,
    catalog: list[dict[str, Any]] | None = None,
    hold_after: int | None = None,
) -> Iterator[tuple[str, Ledger]]:
    """Serve on a free loopback port; yields (its base URL with ``upstream``'s path, ledger).
    ``how``: ``usage`` (body) or ``header``. ``catalog``: what ``GET .../models`` lists
    (None: the simulator's)."""
    parts = urlsplit(upstream)
    origin = f"{parts.scheme}://{parts.netloc}"
    ledger = Ledger()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            try:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client is gone (killed): the call is billed all the same
                pass

        def do_GET(self) -> None:
            if catalog is not None and self.path.endswith("/models"):
                self._send(200, json.dumps({"data": catalog}).encode(), {})
                return
            resp = httpx.get(origin + self.path, timeout=30.0)
            self._send(resp.status_code, resp.content, {})

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(size) if size else b""
            if len(body) < size:  # the client died mid-request: nothing to answer or bill
                with ledger.lock:
                    ledger.incomplete += 1
                return
            d = digest(body)
            with ledger.lock:
                ledger.bodies[d] += 1
            keep = {"content-type", "x-sim-fault", "anthropic-version"}
            headers = {k: v for k, v in self.headers.items() if k.lower() in keep}
            resp = httpx.post(origin + self.path, content=body, headers=headers, timeout=120.0)
            if delay:
                time.sleep(delay)
            if hold_after is not None:
                with ledger.lock:
                    place = ledger.taken
                    ledger.taken += 1
                if place >= hold_after:
                    ledger.release.wait()
            out_headers: dict[str, str] = {}
            content = resp.content
            if resp.status_code == 200:
                data = resp.json()
                if how == "usage":
                    usage = data.get("usage")
                    if isinstance(usage, dict):
                        usage["cost"] = cost
                    content = json.dumps(data).encode()
                else:
                    out_headers[COST_HEADER] = repr(cost)
                with ledger.lock:
                    ledger.billed.append(cost)
                    ledger.billed_by[d] += cost
            with ledger.lock:
                ledger.answered += 1
            self._send(resp.status_code, content, out_headers)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{parts.path}", ledger
    finally:
        ledger.release.set()
        server.shutdown()
        server.server_close()
