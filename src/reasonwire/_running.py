"""A server on a local port, started by a ``with`` block and stopped when the block ends.

The simulator's server thread and the local servers' child processes are used the same way
(``with SimServer() as sim: sim.base_url``, ``with LocalServer(...) as server:``); the ``with``
protocol and the URLs are written here once, over their own ``start``, ``stop``, ``host`` and
``port``.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import Self


class Running:
    """Mixin: ``__enter__`` is :meth:`start`, ``__exit__`` is :meth:`stop`."""

    host: str
    port: int

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT`` (Gemini clients add ``/v1beta``; llama.cpp's own endpoints:
        /health, /tokenize...)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://HOST:PORT/v1``."""
        return f"{self.root_url}/v1"

    def start(self) -> Self:
        """Start and return ``self`` once ready."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop; safe to call when not started or already stopped."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class StopSignals:
    """``with StopSignals() as stop:`` SIGINT and SIGTERM set ``stop.requested`` (and call
    ``on_stop``) instead of raising ``KeyboardInterrupt`` wherever the main thread happens to be.

    Why: a foreground server prints its URL and whoever reads that line may signal it at once.
    As an exception, a signal that lands before the server's own handlers are in place (an
    import, uvicorn's or asyncio's setup) ends the process with a traceback and exit 3 or 130,
    or after startup in whatever cleanup it interrupts; as a flag it is seen by the serving
    loop whenever it comes, and the server stops the one orderly way. The previous handlers
    are restored when the block ends.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, on_stop: Callable[[], None] | None = None) -> None:
        self.requested = False
        self._on_stop = on_stop
        self._previous: dict[int, signal._HANDLER] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
        if self._on_stop is not None:
            self._on_stop()

    def __enter__(self) -> Self:
        self._previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when the host is an IPv6 literal; port 0
    picks a free one). A foreground server binds before it prints its URL, so the URL names
    the port it got and accepts connections as soon as it is read."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio disables Nagle's algorithm only on sockets whose proto
    # is TCP (see sim/server.py).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def authority(host: str, port: int) -> str:
    """``host:port`` for a URL (an IPv6 literal in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
