from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from reasonwire.sim.pytest_plugin import sim_server  # noqa: F401  (the shared fixture)
from reasonwire.sim.server import SimServer


@pytest.fixture
def client(sim_server: SimServer) -> Iterator[httpx.Client]:  # noqa: F811
    with httpx.Client(base_url=sim_server.root_url, timeout=10) as c:
        yield c
