"""``eval models``: catalog filtering with reasons, against the simulator's real catalog."""

from __future__ import annotations

from reasonwire.eval._catalog import classify, fetch_catalog, select
from reasonwire.eval._embedded import sim_routes
from reasonwire.sim import SimServer


def test_catalog_skips_with_reasons(sim: SimServer) -> None:
    route = sim_routes(sim.base_url, sim.root_url)["chat"]
    entries = fetch_catalog(route, None)
    verdicts = {e["id"]: classify(e) for e in entries}
    assert "alias" in verdicts["~sim/chat-latest"].reason
    assert "batch" in verdicts["sim-gpt:batch"].reason
    assert "not text" in verdicts["sim-image"].reason
    assert "no reasoning parameter" in verdicts["sim-plain"].reason
    assert verdicts["sim-qwen3"].keep
    cheap = {c.id for c in select(entries, "portal-max:1")}
    priced = {e["id"]: float(e["pricing"]["completion"]) * 1e6 for e in entries}
    kept = {i for i, c in verdicts.items() if c.keep}
    assert cheap == {i for i in kept if priced[i] <= 1}
    assert "sim-qwen3" in cheap and "sim-openrouter" not in cheap
