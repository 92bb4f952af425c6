from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.probe import flush
from reasonwire.sim.pytest_plugin import sim_server  # noqa: F401  (the shared fixture)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in ("REASONWIRE_PROBE", "REASONWIRE_PROBE_PROVIDERS", "REASONWIRE_PROBE_CAP_MB",
                 "REASONWIRE_PROBE_CONFIG"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REASONWIRE_HOME", str(tmp_path / "home"))
    yield
    # Rows land from the probe worker: drain it while this test's patches are still in place,
    # so no task of this test runs under the next test's environment.
    assert flush(timeout=30)


class Capture:
    """The innermost wrapper: records the raw bytes of each response as the network gave them.

    ``pkg`` is ``httpx`` or its ``httpx2`` fork (the anthropic SDK accepts only the fork)."""

    def __init__(self, pkg: Any = httpx) -> None:
        self.pkg = pkg
        self.inner = pkg.HTTPTransport()
        self.bodies: list[bytes] = []
        self.requests: list[bytes] = []

    def handle_request(self, request: Any) -> Any:
        self.requests.append(request.content)
        resp = self.inner.handle_request(request)
        sink: list[bytes] = []
        self.bodies.append(b"")
        idx = len(self.bodies) - 1
        inner_stream = resp.stream
        bodies = self.bodies

        class _S(self.pkg.SyncByteStream):  # type: ignore[misc,name-defined]
            def __iter__(self) -> Iterator[bytes]:
                for chunk in inner_stream:
                    sink.append(chunk)
                    bodies[idx] = b"".join(sink)
                    yield chunk

            def close(self) -> None:
                inner_stream.close()

        resp.stream = _S()
        return resp


@pytest.fixture
def capture() -> Capture:
    return Capture()


@pytest.fixture
def capture2() -> Capture:
    return Capture(pytest.importorskip("httpx2"))


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger"
