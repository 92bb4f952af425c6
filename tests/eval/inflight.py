"""A loopback pass-through that counts requests in flight, for checks that cannot hang on load.

Put between the harness and a real server, it forwards every request unchanged and records the
most POSTs it ever held at once. "Never more in flight than the server has slots" is then a
count, true or false on any machine, where a wall-clock comparison of two runs is not.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import httpx

_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "host", "content-length"})


class InFlight:
    """The counter: ``now`` requests held, ``peak`` the most ever held at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.posts = 0

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.posts += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


@contextmanager
def counting_proxy(upstream: str) -> Iterator[tuple[str, InFlight]]:
    """Serve on a free loopback port; yields (the proxy's URL with ``upstream``'s path, counter)."""
    parts = urlsplit(upstream)
    origin = f"{parts.scheme}://{parts.netloc}"
    counter = InFlight()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self, method: str) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(size) if size else b""
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            counted = method == "POST"
            if counted:
                counter.enter()
            try:
                with httpx.Client(timeout=120.0) as client:
                    resp = client.request(method, origin + self.path, content=body, headers=headers)
            finally:
                if counted:
                    counter.leave()
            self.send_response(resp.status_code)
            for k, v in resp.headers.items():
                if k.lower() not in _HOP and k.lower() != "content-encoding":
                    self.send_header(k, v)
            self.send_header("content-length", str(len(resp.content)))
            self.end_headers()
            self.wfile.write(resp.content)

        def do_GET(self) -> None:
            self._forward("GET")

        def do_POST(self) -> None:
            self._forward("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        yield f"http://127.0.0.1:{port}{parts.path}", counter
    finally:
        server.shutdown()
        server.server_close()
