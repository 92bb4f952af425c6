"""pytest fixture ``sim_server``: one simulator per test session on a free loopback port.

Enable with ``pytest_plugins = ["reasonwire.sim.pytest_plugin"]`` in a conftest.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reasonwire.sim.server import SimServer


@pytest.fixture(scope="session")
def sim_server() -> Iterator[SimServer]:
    with SimServer(seed=0) as server:
        yield server
