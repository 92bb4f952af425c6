"""The build's concurrency lock and leftovers of a killed build (no compiler run here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reasonwire.localserver import build

pytestmark = pytest.mark.localserver

_WAITER = """
import sys
from pathlib import Path
from reasonwire.localserver.build import _lock
with _lock(Path(sys.argv[1]), quiet=False):
    print("acquired", flush=True)
"""


@pytest.mark.timeout(60)  # a waiter that never says it waits: fail, do not hang
def test_second_builder_waits_for_the_lock(tmp_path: Path) -> None:
    lock = tmp_path / "build.lock"
    with build._lock(lock, quiet=True):
        waiter = subprocess.Popen(
            [sys.executable, "-c", _WAITER, str(lock)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert waiter.stderr is not None
        said = waiter.stderr.readline()  # returns once the waiter has found the lock held
        assert "waiting for another process building llama-server" in said
        assert waiter.poll() is None, "the second process must block while the lock is held"
    out, _ = waiter.communicate(timeout=30)
    assert out.strip() == "acquired"


def test_killed_build_leftovers_are_not_trusted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONWIRE_CACHE", str(tmp_path))
    monkeypatch.delenv("REASONWIRE_LLAMA_SERVER", raising=False)
    half = build.server_dir() / "bin" / f".{build.BINARY_NAME}.tmp-12345"
    half.parent.mkdir(parents=True)
    half.write_bytes(b"\x7fELF half written")
    (build.server_dir() / "build.tmp-abc").mkdir()
    assert build.cached_server_binary() is None
    build._remove_leftovers(build.server_dir())
    assert not half.exists()
    assert not (build.server_dir() / "build.tmp-abc").exists()
