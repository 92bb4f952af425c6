"""End to end on the simulator: the harness measures consumption (a real matrix.json), the
probe measures what re-sent reasoning costs (a real ledger), ``fold plan`` decides, and the
settings it writes drive the fold transport."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from typer.testing import CliRunner

from reasonwire.eval import EvalConfig, run_eval
from reasonwire.eval._embedded import sim_targets
from reasonwire.eval.matrix import write_reports
from reasonwire.fold import FoldTransport, load_fold_settings
from reasonwire.fold.cli import app
from reasonwire.probe import ProbeTransport
from reasonwire.sim.server import SimServer
from reasonwire.wire.fold import MARKER_RE
from tests.fold.conftest import Sent
from tests.fold.test_sdks import KEY, TASK, TOOLS, long_trace

MODELS = {"sim-qwen3", "sim-chat-ignore", "sim-claude"}


@pytest.fixture(scope="module")
def sim() -> Any:
    with SimServer(seed=0) as server:
        yield server


@pytest.fixture(scope="module")
def matrix(sim: SimServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fold-matrix")
    targets = [t for t in sim_targets(sim.base_url, sim.root_url) if t.model in MODELS]
    run_eval(EvalConfig(targets=targets, out=out))
    write_reports(out)
    return out / "matrix.json"


def _replay(sim: SimServer, model: str, transport: Any) -> tuple[Any, list[Any]]:
    """Turn 1, then turn 2 replaying a 30000-character reasoning trace, through
    ``transport``; returns turn 2's usage and the history sent."""
    plain = openai.OpenAI(base_url=sim.base_url, api_key=KEY, max_retries=0)
    first = plain.chat.completions.create(
        model=model, messages=[{"role": "user", "content": TASK}], tools=TOOLS
    )
    msg = first.choices[0].message.model_dump(exclude_none=True)
    msg["reasoning_content"] = long_trace(str(msg.get("reasoning_content", "")))
    history: Any = [{"role": "user", "content": TASK}, msg,
                    {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"],
                     "content": "513,000"}]  # fmt: skip
    client = openai.OpenAI(base_url=sim.base_url, api_key=KEY, max_retries=0,
                           http_client=httpx.Client(transport=transport))  # fmt: skip
    second = client.chat.completions.create(model=model, messages=history, tools=TOOLS)
    return second.usage, history


def test_plan_from_real_matrix_and_ledger(sim: SimServer, matrix: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    for model in ("sim-qwen3", "sim-chat-ignore"):
        _replay(sim, model, ProbeTransport("agent", ledger_dir=ledger, provider="sim"))
    out = tmp_path / "fold.toml"
    res = CliRunner().invoke(app, ["plan", "--matrix", str(matrix), "--ledger", str(ledger),
                                   "--out", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    decided = {ln.split()[1]: ln.split()[0] for ln in res.output.splitlines()[:-1]}
    assert decided == {
        "sim/sim-qwen3": "fold",  # consumed in the loop, re-sent reasoning is most of input
        "sim/sim-chat-ignore": "drop",  # accepted and never read
        "sim-anthropic/sim-claude": "unknown",  # signed thinking: nothing to fold
    }, res.output
    settings = load_fold_settings(out)

    sent = Sent(httpx)
    before, _ = _replay(sim, "sim-qwen3", httpx.HTTPTransport())
    after, _ = _replay(sim, "sim-qwen3", FoldTransport(out, inner=sent, route="sim"))
    rc = json.loads(sent.bodies[-1])["messages"][1]["reasoning_content"]
    assert MARKER_RE.search(rc) and len(rc) <= settings.head_chars + settings.tail_chars + 60
    assert after.prompt_tokens < before.prompt_tokens

    sent = Sent(httpx)
    ign_before, _ = _replay(sim, "sim-chat-ignore", httpx.HTTPTransport())
    ign_after, _ = _replay(sim, "sim-chat-ignore", FoldTransport(settings, inner=sent,
                                                                 route="sim"))  # fmt: skip
    assert json.loads(sent.bodies[-1])["messages"][1]["reasoning_content"] == ""  # dropped
    assert ign_after.prompt_tokens == ign_before.prompt_tokens  # it was never read anyway
