"""The ``reasonwire localserver`` commands, run as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from reasonwire.localserver.cli import app
from reasonwire.localserver.model import model_path

pytestmark = pytest.mark.localserver

_RUN_APP = "from reasonwire.localserver.cli import app; app()"


def test_model_command_prints_the_cached_model() -> None:
    result = CliRunner().invoke(app, ["model", "--template", "Qwen-Qwen3-0.6B"])
    assert result.exit_code == 0, result.output
    assert Path(result.stdout.strip()) == model_path("Qwen-Qwen3-0.6B")


def test_model_command_rejects_an_unknown_template() -> None:
    result = CliRunner().invoke(app, ["model", "--template", "No-Such-Model"])
    assert result.exit_code == 2
    assert "unknown template 'No-Such-Model'" in result.output
    assert "Traceback" not in result.output


def test_model_list_marks_approximate_vocabularies() -> None:
    result = CliRunner().invoke(app, ["model", "--template", "x", "--list"])
    assert result.exit_code == 0
    rows = dict(line.split("\t", 1) for line in result.stdout.strip().splitlines())
    assert rows["Qwen-Qwen3-0.6B"].startswith("qwen2\texact")
    assert rows["openai-gpt-oss-120b"].startswith("llama-bpe\tapproximate")


def test_serve_prints_base_url_and_stops_on_ctrl_c() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUN_APP, "serve", "--template", "Qwen-Qwen3-0.6B"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1"), base_url
        assert httpx.get(base_url.removesuffix("/v1") + "/health").status_code == 200
        children = _children(proc.pid)
        assert children, "serve runs llama-server as a child"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 0  # a bound for a loaded machine, not a timing check
        for pid in children:
            assert not Path(f"/proc/{pid}").exists() or _zombie(pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_serve_error_is_clean_without_traceback() -> None:
    env = {**os.environ, "REASONWIRE_LLAMA_SERVER": "/nonexistent/llama-server"}
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_APP, "serve", "--template", "Qwen-Qwen3-0.6B"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "binary not found" in proc.stderr
    assert "Traceback" not in proc.stderr
