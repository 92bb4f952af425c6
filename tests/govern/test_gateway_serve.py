"""``reasonwire gateway serve`` as an operator runs it: a real process, its URL line, real
SDK clients through it, Ctrl-C.

The rule (as for ``sim serve``, tests/sim/test_serve_cli.py): the socket is bound before the
URL line is printed, and SIGINT or SIGTERM at any moment after it (the instant the line is
read included) ends the gateway with exit 0 and nothing on stderr. Both HTTP servers are held
to it: the built-in one (the default) and uvicorn (``--server uvicorn``).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from reasonwire.govern.binding import HEADER, KeyRing
from reasonwire.govern.control import project
from reasonwire.govern.gateway import CONVERSATION_HEADER
from reasonwire.sim.app import build_app
from tests.govern.conftest import (
    POLICY,
    RUNTIME,
    RUNTIME_KEY,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    ThreadServer,
    make_registry,
    new_conv,
)
from tests.govern.test_cli_errors import GOOD_POLICY
from tests.serve_process import RUN, finish

ROOT = Path(__file__).resolve().parents[2]
_URL = re.compile(r"^reasonwire gateway: (http://127\.0\.0\.1:(\d+))$")
SERVERS = ["builtin", "uvicorn"]


def _policy(tmp_path: Path, upstream: str) -> str:
    name = "rw_serve_policy_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{name}.py").write_text(
        GOOD_POLICY.replace(
            "REGISTRY = Registry()",
            "from tests.govern.conftest import make_registry\n"
            f"REGISTRY = make_registry({upstream!r})",
        ).replace(
            "POLICY = OrgPolicy(allowed=frozenset({'low'}), maximum='low')",
            "from tests.govern.conftest import POLICY",
        )
    )
    return name


def _start(
    tmp_path: Path, *args: str, upstream: str = "http://127.0.0.1:9/v1"
) -> subprocess.Popen[str]:
    keys = tmp_path / "keys"
    if not keys.exists():
        ring = KeyRing.generate("k1")
        ring.save_dir(keys)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), str(ROOT / "src")]),
        UPSTREAM_KEY_ENV: UPSTREAM_KEY,
    }
    cmd = [sys.executable, "-c", RUN, "gateway", "serve", "--policy", _policy(tmp_path, upstream)]
    cmd += ["--keys", str(keys), "--evidence", str(tmp_path / "ev.sqlite"), *args]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )


def _url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    match = _URL.match(line)
    assert match, line
    assert int(match.group(2)) > 0, "--port 0 prints the port it got"
    return match.group(1)


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGINT, signal.SIGTERM])
def test_a_signal_the_instant_the_url_is_printed_ends_it_cleanly(
    tmp_path: Path, server: str, sig: signal.Signals
) -> None:
    proc = _start(tmp_path, "--port", "0", "--server", server)
    _url(proc)
    proc.send_signal(sig)
    assert finish(proc) == (0, "")


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with ThreadServer(build_app(seed=0)) as up:
        yield up.url + "/v1"


@pytest.mark.parametrize("server", SERVERS)
def test_sdk_clients_through_the_served_gateway(tmp_path: Path, upstream: str, server: str) -> None:
    """The openai SDK (JSON and a stream) and a plain httpx client through the real process;
    every call leaves its evidence row; Ctrl-C then exits 0 with nothing on stderr."""
    proc = _start(tmp_path, "--port", "0", "--server", server, upstream=upstream)
    try:
        url = _url(proc)
        ring = KeyRing.load_dir(tmp_path / "keys")
        conv = new_conv()
        token = project(
            make_registry(upstream),
            POLICY,
            ring,
            conversation_id=conv,
            task_id="t-" + conv,
            runtime_id=RUNTIME[0],
            runtime_version=RUNTIME[1],
            route_id="chat/sim-deepseek",
            requested="medium",
        )
        headers = {HEADER: token, CONVERSATION_HEADER: conv}
        client = openai.OpenAI(
            base_url=url + "/v1", api_key=RUNTIME_KEY, max_retries=0, default_headers=headers
        )
        messages: list[openai.types.chat.ChatCompletionMessageParam] = [
            {"role": "user", "content": f"[{conv}] Find the population of Lyon."}
        ]
        answer = client.chat.completions.create(model="sim-deepseek", messages=messages)
        assert answer.choices[0].message.content
        assert getattr(answer.choices[0].message, "reasoning_content", None) is None
        stream = client.chat.completions.create(
            model="sim-deepseek", messages=messages, stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text
        refused = httpx.post(url + "/v1/chat/completions", json={"model": "x"}, timeout=30)
        assert refused.status_code == 403  # no binding: refused by the gateway, not the server
    finally:
        proc.send_signal(signal.SIGINT)
        code, err = finish(proc)
    assert (code, err) == (0, "")
    with sqlite3.connect(tmp_path / "ev.sqlite") as db:
        outcomes = sorted(r[0] for r in db.execute("SELECT outcome FROM evidence"))
    assert outcomes == ["forwarded", "forwarded", "refused"]


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, err = finish(_start(tmp_path, "--port", str(port)))
    assert code == 2
    assert err.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_an_unknown_server_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, err = finish(_start(tmp_path, "--port", "0", "--server", "gunicorn"))
    assert (code, err) == (2, "error: --server must be builtin, uvicorn or auto, not 'gunicorn'\n")
