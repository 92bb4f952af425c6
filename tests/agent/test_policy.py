"""The opt-in cross-turn policy, read from a matrix.json the harness wrote in a real run
against the simulator, and the agent loop it steers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonwire import agent
from reasonwire.errors import ConfigError
from reasonwire.eval import EvalConfig, run_eval
from reasonwire.eval._embedded import sim_routes, sim_targets
from reasonwire.eval.matrix import write_reports
from reasonwire.sim.server import SimServer
from tests.agent.conftest import TOOLS, Recorder, key

MODELS = {"sim-claude", "sim-claude-preserve", "sim-gpt", "sim-gpt-allturns", "sim-qwen3"}


@pytest.fixture(scope="module")
def matrix_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("policy-matrix")
    with SimServer(seed=0) as sim:
        targets = [t for t in sim_targets(sim.base_url, sim.root_url) if t.model in MODELS]
        run_eval(EvalConfig(targets=targets, out=out))
    matrix = write_reports(out)
    return out / "matrix.json", matrix


def test_policy_follows_the_real_matrix(matrix_file: tuple[Path, dict[str, Any]]) -> None:
    path, matrix = matrix_file
    policy = agent.CrossTurnPolicy.from_matrix(path)
    rows = {r["model"]: r for r in matrix["rows"]}
    # opaque replay consumed across turns: keep; consumed in the loop only: drop
    assert rows["sim-claude-preserve"]["opaque"]["replay"]["verdict"] == "consumes-all-turns"
    assert policy.keeps("sim-anthropic", "sim-claude-preserve")
    assert rows["sim-claude"]["opaque"]["replay"]["verdict"] == "in-loop-only"
    assert not policy.keeps("sim-anthropic", "sim-claude")
    assert policy.keeps("sim-responses", "sim-gpt-allturns")
    assert not policy.keeps("sim-responses", "sim-gpt")
    # a readable carrier's text verdict: sim-qwen3 returns reasoning_content, in-loop-only
    kinds = {c["kind"] for c in rows["sim-qwen3"]["turn1"]["carriers"]}
    assert "reasoning_content" in kinds
    assert rows["sim-qwen3"]["text"]["reasoning_content"]["verdict"] == "in-loop-only"
    assert not policy.keeps("sim", "sim-qwen3")
    # names only count as a pair
    assert not policy.keeps("sim-responses", "sim-claude-preserve")
    assert policy.keep == {
        ("sim-anthropic", "sim-claude-preserve"),
        ("sim-responses", "sim-gpt-allturns"),
    }


def test_text_verdict_of_the_returned_kind_keeps(
    matrix_file: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """A row whose opaque step is empty but whose returned readable kind is consumed across
    turns keeps; a lane that rejects the same kind vetoes the pair."""
    _, matrix = matrix_file
    row = json.loads(json.dumps(next(r for r in matrix["rows"] if r["model"] == "sim-qwen3")))
    row["opaque"] = {}
    row["text"]["reasoning_content"]["verdict"] = "consumes-all-turns"
    doc = {**matrix, "rows": [row]}
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    assert agent.CrossTurnPolicy.from_matrix(path).keeps("sim", "sim-qwen3")
    # a verdict for a kind the model does not return does not count
    row["text"]["reasoning_content"]["verdict"] = "in-loop-only"
    row["text"]["reasoning"]["verdict"] = "consumes-all-turns"
    path.write_text(json.dumps(doc))
    assert not agent.CrossTurnPolicy.from_matrix(path).keeps("sim", "sim-qwen3")
    row["text"]["reasoning_content"]["verdict"] = "consumes-all-turns"
    other = json.loads(json.dumps(row))
    other["lane"] = "openrouter"
    other["text"]["reasoning_content"]["verdict"] = "rejected"
    path.write_text(json.dumps({**matrix, "rows": [row, other]}))
    assert not agent.CrossTurnPolicy.from_matrix(path).keeps("sim", "sim-qwen3")


def test_policy_refuses_other_documents(tmp_path: Path) -> None:
    for text in ("[1]", '{"rows": []}', '{"schema": "reasonwire.eval.matrix/1", "rows": 3}', "{"):
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ConfigError):
            agent.CrossTurnPolicy.from_matrix(bad)
    with pytest.raises(ConfigError):
        agent.CrossTurnPolicy.from_matrix(tmp_path / "missing.json")


def test_agent_keeps_carriers_across_turns_as_the_matrix_says(
    matrix_file: tuple[Path, dict[str, Any]], sim_server: SimServer
) -> None:
    path, _ = matrix_file
    policy = agent.CrossTurnPolicy.from_matrix(path)
    route = sim_routes(sim_server.base_url, sim_server.root_url)["anthropic"]
    for model_id, kept in (("sim-claude-preserve", True), ("sim-claude", False)):
        rec = Recorder()
        with rec.client() as c:
            model = agent.from_route(route, model_id, effort="adaptive", key=key, http_client=c)
            bot = agent.Agent(model, TOOLS, cross_turn=policy)
            s = bot.session("What is the weather in Paris?")
            bot.run_session(s)
            bot.run("And in Rome?")
        assert rec.statuses == [200] * len(rec.statuses) and len(rec.statuses) >= 4
        turn2 = rec.bodies[len(s.turns)]
        carriers = [c for t in s.turns for c in t.carriers]
        assert carriers
        for carrier in carriers:
            raw = json.dumps(carrier.value, separators=(",", ":")).encode()
            assert (raw in turn2) is kept, model_id
        assert all(getattr(m, "native", None) is None for m in bot.transcript)
