"""Failure cases of the process manager: clear errors and no orphan processes."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from reasonwire.errors import ConfigError, TransportError
from reasonwire.localserver import build, server
from reasonwire.localserver.server import LocalServer

pytestmark = pytest.mark.localserver


_MARK = "REASONWIRE_TEST_ORPHAN_MARK"


def _llama_server_pids(mark: str) -> set[int]:
    """The llama-server processes that inherited ``mark`` (read from /proc).

    Servers started by other test runs on the same machine carry another mark (or none), so
    they are never taken for orphans of this test.
    """
    needle = f"{_MARK}={mark}".encode()
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
            if not argv0.endswith(b"/llama-server"):
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ:
            pids.add(int(entry.name))
    return pids


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0); it holds no port and no memory.
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.fixture
def no_new_servers(monkeypatch: pytest.MonkeyPatch) -> object:
    mark = f"{os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv(_MARK, mark)
    yield None
    leftover = {pid for pid in _llama_server_pids(mark) if not _gone(pid)}
    assert not leftover, f"orphan llama-server processes: {leftover}"


def test_clean_stop_leaves_no_process(no_new_servers: None) -> None:
    with LocalServer() as srv:
        pid = srv.pid
        assert pid is not None
        assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
    assert _gone(pid)


def test_port_in_use_is_a_clear_error(no_new_servers: None) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} .*in use"):
            LocalServer(port=port).start()


def test_port_taken_after_the_check_is_reported_by_the_server(
    no_new_servers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race our own check cannot close: the port is taken between check and bind.
    monkeypatch.setattr(server, "port_in_use", lambda port: False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"could not bind port {port}"):
            LocalServer(port=port).start()


def test_crash_mid_request_is_a_clear_error(no_new_servers: None) -> None:
    with LocalServer() as srv:
        pid = srv.pid
        assert pid is not None
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
        killer.start()
        body = {
            "messages": [{"role": "user", "content": "Write forever."}],
            "max_tokens": 15000,
            "ignore_eos": True,
        }
        with pytest.raises(TransportError, match="killed by signal 9 during POST") as info:
            srv.post("/v1/chat/completions", body)
        killer.join()
        # the crash itself ended the POST (the connection dropped), not the client's timeout
        # (120 s, long after the kill): the error's cause is a transport error, not a timeout
        cause = info.value.__context__
        assert isinstance(cause, httpx.TransportError), repr(cause)
        assert not isinstance(cause, httpx.TimeoutException), repr(cause)
    assert _gone(pid)


def test_missing_binary_is_a_clear_error(no_new_servers: None, tmp_path: Path) -> None:
    missing = tmp_path / "llama-server"
    with pytest.raises(ConfigError, match="binary not found"):
        LocalServer(binary=missing).start()


def test_unbuilt_binary_without_build_is_a_clear_error(
    no_new_servers: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONWIRE_CACHE", str(tmp_path))
    monkeypatch.delenv("REASONWIRE_LLAMA_SERVER", raising=False)
    with pytest.raises(ConfigError, match="reasonwire localserver build"):
        LocalServer(build_if_missing=False).start()


def test_missing_build_tools_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONWIRE_CACHE", str(tmp_path))
    monkeypatch.delenv("REASONWIRE_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="cmake, ninja, g\\+\\+"):
        build.build_server(quiet=True)
    assert not build.server_binary_path().exists()
