"""The embedded default targets: every simulator behaviour and the real llama.cpp server.

``reasonwire eval run`` with no route measures these, so the first command a reader runs
shows the whole method against known truths without a key or a network.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace

from reasonwire.eval.runner import Target
from reasonwire.routes import BUILTIN_ROUTES, LaneRule, Route
from reasonwire.wire.model import DialectName

LOCAL_TEMPLATE = "Qwen-Qwen3-0.6B"
LOCAL_MODEL = "qwen3-0.6b-template"
SIM_LANES = LaneRule({"gen-": "openrouter"}, default="direct")


def sim_routes(base_url: str, root_url: str) -> dict[DialectName, Route]:
    """One route per dialect on a running simulator (Gemini lives under ``/v1beta``)."""
    chat = replace(BUILTIN_ROUTES["sim"], base_url=base_url, lanes=SIM_LANES)
    return {
        "chat": chat,
        "responses": Route("sim-responses", "responses", base_url, local=True),
        "anthropic": Route(
            "sim-anthropic",
            "anthropic",
            base_url,
            local=True,
            auth_header="x-api-key",
            auth_scheme="",
            headers={"anthropic-version": "2023-06-01"},
        ),
        "gemini": Route("sim-gemini", "gemini", root_url + "/v1beta", local=True),
        "interactions": Route("sim-interactions", "interactions", root_url + "/v1beta", local=True),
    }


def sim_targets(base_url: str, root_url: str, priced: bool = False) -> list[Target]:
    """One target per simulator behaviour. The simulator is loopback, so it is free; with
    ``priced`` each target carries the sim's price list instead (budget tests: a paid
    provider played by the simulator)."""
    from reasonwire.eval.budget import Price
    from reasonwire.sim.behaviours import BEHAVIOURS
    from reasonwire.sim.pricing import PRICES

    routes = sim_routes(base_url, root_url)
    return [
        Target(routes[b.dialect], m, Price(*PRICES.get(m, (0.0, 0.0))) if priced else None)
        for m, b in BEHAVIOURS.items()
    ]


def local_target(base_url: str) -> Target:
    return Target(replace(BUILTIN_ROUTES["local-llama"], base_url=base_url), LOCAL_MODEL)


def start_embedded(stack: ExitStack, seed: int, local: bool) -> list[Target]:
    """Start the simulator (and the local server) inside ``stack``; their targets."""
    from reasonwire.sim import SimServer

    sim = stack.enter_context(SimServer(seed=seed))
    targets = sim_targets(sim.base_url, sim.root_url)
    if local:
        from reasonwire.localserver.server import LocalServer

        server = stack.enter_context(LocalServer(LOCAL_TEMPLATE, quiet=False))
        targets.append(local_target(server.base_url))
    return targets
