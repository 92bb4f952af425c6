"""Run the simulator in-process: uvicorn in a background thread on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time
from typing import Self

import uvicorn
from starlette.types import ASGIApp

from reasonwire._running import Running
from reasonwire.errors import TransportError
from reasonwire.sim.app import build_app


class SimServer(Running):
    """Context manager: ``with SimServer(seed=0) as sim: httpx.get(sim.base_url + "/models")``.

    ``base_url`` ends in ``/v1`` (OpenAI, Anthropic and OpenRouter-style clients append their
    paths); ``root_url`` is the bare origin (Gemini clients add ``/v1beta``).
    """

    def __init__(
        self, seed: int = 0, host: str = "127.0.0.1", port: int = 0, app: ASGIApp | None = None
    ) -> None:
        """``app``: an ASGI app to serve instead of the simulator (one wrapping it, such as
        the audit's recorder)."""
        self.seed = seed
        self.host = host
        # IPPROTO_TCP explicitly: asyncio only disables Nagle's algorithm on sockets whose
        # proto is TCP; without it every response waits ~40 ms for delayed ACKs.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(
            build_app(seed) if app is None else app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            http="h11",
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise TransportError(f"simulator did not start on {self.root_url}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sock.close()
