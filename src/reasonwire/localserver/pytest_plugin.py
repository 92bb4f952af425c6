"""Pytest fixtures for real local servers, usable from any test directory.

Enable with ``pytest_plugins = ["reasonwire.localserver.pytest_plugin"]`` in a conftest, or
call :func:`local_server_factory` from your own session fixture. One server per template per
session: starting is cheap (~1 s) but not free, and the prompt cache does not change
``usage.prompt_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from reasonwire.localserver.server import LocalServer

LocalServerFactory = Callable[[str], LocalServer]


def local_server_factory() -> tuple[LocalServerFactory, Callable[[], None]]:
    """A ``get(template)`` that starts at most one server per template, and a ``close()``."""
    servers: dict[str, LocalServer] = {}

    def get(template: str) -> LocalServer:
        server = servers.get(template)
        if server is None or not server.alive():
            server = LocalServer(template, quiet=False).start()
            servers[template] = server
        return server

    def close() -> None:
        for server in servers.values():
            server.stop()
        servers.clear()

    return get, close


@pytest.fixture(scope="session")
def local_servers() -> Iterator[LocalServerFactory]:
    """Session fixture: call it with a template stem (or path) to get its running server."""
    get, close = local_server_factory()
    try:
        yield get
    finally:
        close()


@pytest.fixture(scope="session")
def qwen3_server(local_servers: LocalServerFactory) -> LocalServer:
    """The llama-server for the real Qwen3-0.6B chat template."""
    return local_servers("Qwen-Qwen3-0.6B")
