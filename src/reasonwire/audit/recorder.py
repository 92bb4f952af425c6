"""The recording simulator: every exchange of a program with the simulator, kept in order.

:class:`Recording` is an ASGI middleware around the simulator's app: it sees each request's
method, path, query and body as the server read it, and each response's status, headers and
body bytes as the server sent them (streams included, chunk by chunk). Credential headers are
never kept. :class:`AuditServer` runs the wrapped simulator on a free loopback port in a
background thread, like :class:`reasonwire.sim.SimServer`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reasonwire.credentials import SECRET_FIELDS
from reasonwire.sim.server import SimServer


@dataclass
class Exchange:
    """One request and the simulator's answer, as bytes on the wire."""

    index: int
    method: str
    path: str
    query: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""
    elapsed_ms: float = 0.0
    complete: bool = False

    @property
    def url_path(self) -> str:
        return self.path + (f"?{self.query}" if self.query else "")


def _headers(raw: Iterable[tuple[bytes, bytes]] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in raw or ():
        name = k.decode("latin-1").lower()
        if name.replace("-", "_") in SECRET_FIELDS:
            continue
        out[name] = v.decode("latin-1")
    return out


class Recording:
    """ASGI middleware: ``Recording(app)``; :attr:`exchanges` grows as requests arrive."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    def snapshot(self) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        with self._lock:
            ex = Exchange(
                index=len(self.exchanges),
                method=str(scope.get("method", "")),
                path=str(scope.get("path", "")),
                query=bytes(scope.get("query_string", b"")).decode("latin-1"),
                request_headers=_headers(scope.get("headers")),
                request_body=b"",
            )
            self.exchanges.append(ex)
        body = bytearray()
        out = bytearray()
        start = time.monotonic()

        async def rec_receive() -> Message:
            msg = await receive()
            if msg.get("type") == "http.request":
                body.extend(msg.get("body", b""))
                ex.request_body = bytes(body)
            return msg

        async def rec_send(msg: Message) -> None:
            if msg.get("type") == "http.response.start":
                ex.status = int(msg.get("status", 0))
                ex.response_headers = _headers(msg.get("headers"))
            elif msg.get("type") == "http.response.body":
                out.extend(msg.get("body", b""))
                ex.response_body = bytes(out)
                if not msg.get("more_body", False):
                    ex.complete = True
            await send(msg)

        try:
            await self.app(scope, rec_receive, rec_send)
        finally:
            ex.elapsed_ms = round((time.monotonic() - start) * 1000, 2)


class AuditServer(SimServer):
    """The simulator behind :class:`Recording`, on a loopback port, in a background thread
    (the simulator's own server; ``base_url`` / ``root_url`` as there)."""

    def __init__(self, seed: int = 0, host: str = "127.0.0.1") -> None:
        from reasonwire.sim.app import build_app

        self.recording = Recording(build_app(seed))
        super().__init__(seed, host, app=self.recording)

    @property
    def exchanges(self) -> list[Exchange]:
        return self.recording.snapshot()
