from __future__ import annotations

from typing import Any

from reasonwire.sim.pytest_plugin import sim_server  # noqa: F401  (the shared fixture)


class Sent:
    """The innermost transport of a test: records each request body as it went out.

    ``pkg`` is ``httpx`` or its ``httpx2`` fork (the anthropic SDK accepts only the fork)."""

    def __init__(self, pkg: Any) -> None:
        self.inner = pkg.HTTPTransport()
        self.bodies: list[bytes] = []

    def handle_request(self, request: Any) -> Any:
        self.bodies.append(request.read())
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()
