"""A server on a local port, started by a ``with`` block and stopped when the block ends.

The simulator's server thread and the local servers' child processes are used the same way
(``with SimServer() as sim: sim.base_url``, ``with LocalServer(...) as server:``); the ``with``
protocol and the URLs are written here once, over their own ``start``, ``stop``, ``host`` and
``port``.
"""

from __future__ import annotations

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
