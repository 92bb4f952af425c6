"""What the README shows runs: its probe example, executed as written against the simulator
(the SDKs' base-URL variables point at it), puts one ledger row per call, one per SDK."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from reasonwire.sim.server import SimServer
from tests.probe.streams import flushed_rows

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(after: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(after)
    found = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert found, f"no python block after {after!r}"
    return "\n".join(line[2:] if line.startswith("  ") else line for line in found[1].splitlines())


def test_the_probe_example_runs_with_each_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = _block("- Stream probe")
    with SimServer(seed=0) as sim:
        env = {
            "REASONWIRE_HOME": str(tmp_path), "OPENAI_BASE_URL": sim.base_url,
            "OPENAI_API_KEY": "sk-readme-test-0000000000", "ANTHROPIC_BASE_URL": sim.root_url,
            "ANTHROPIC_API_KEY": "sk-ant-readme-test-000000", "GEMINI_API_KEY": "readme-test",
            "GOOGLE_GEMINI_BASE_URL": sim.root_url,
        }  # fmt: skip
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
        scope: dict[str, Any] = {}
        exec(compile(code, "README.md", "exec"), scope)
        scope["client"].chat.completions.create(
            model="sim-qwen3", messages=[{"role": "user", "content": "hi"}]
        )
        scope["claude"].messages.create(
            model="sim-claude", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
        scope["gemini"].models.generate_content(model="sim-gemini", contents="hi")
    rows = flushed_rows(tmp_path / "probe").rows
    assert [r["dialect"] for r in rows] == ["chat", "anthropic", "gemini"]
    assert {r["sessionId"] for r in rows} == {"s1"} and {r["status"] for r in rows} == {"ok"}
