"""``reasonwire sim serve`` as a user runs it: a real process, its URL line, Ctrl-C.

The rule under test: once the URL line is printed, the port accepts connections and a
SIGINT or SIGTERM at any moment (the instant the line is read included) ends the server
with exit 0 and nothing on stderr - no traceback, no uvicorn exit 3.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys

import httpx
import pytest

from tests.serve_process import RUN, finish

_URL = re.compile(r"^reasonwire sim: (http://127\.0\.0\.1:(\d+))/v1 \(gemini: \1/v1beta\)$")


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", RUN, "sim", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGINT, signal.SIGINT, signal.SIGTERM])
def test_a_signal_the_instant_the_url_is_printed_ends_it_cleanly(sig: signal.Signals) -> None:
    proc = _start("--port", "0")
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    proc.send_signal(sig)
    match = _URL.match(line)
    assert match, line
    assert int(match.group(2)) > 0, "--port 0 prints the port it got"
    assert finish(proc) == (0, "")


def test_the_printed_port_serves_before_ctrl_c() -> None:
    proc = _start("--port", "0")
    assert proc.stdout is not None
    match = _URL.match(proc.stdout.readline().strip())
    assert match
    try:
        models = httpx.get(f"{match.group(1)}/v1/models", timeout=30).json()
        assert {"sim-claude", "sim-gemini"} <= {m["id"] for m in models["data"]}
    finally:
        proc.send_signal(signal.SIGINT)
    assert finish(proc) == (0, "")


def test_a_port_in_use_is_one_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = _start("--port", str(port))
        code, err = finish(proc)
    assert code == 2
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert err.count("\n") == 1 and "Traceback" not in err
