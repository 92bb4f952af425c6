"""``Agent(fold=...)``: long replayed reasoning text is folded before it is sent (the sim's
reasoning is short, so the thresholds are small here), opaque carriers are sent untouched,
and the simulator's validators still accept every request."""

from __future__ import annotations

import pytest

from reasonwire import agent
from reasonwire.sim.server import SimServer
from reasonwire.wire.fold import FoldSettings
from tests.agent.conftest import SIM_MODELS, TOOLS, Recorder

SMALL = FoldSettings(enabled=True, floor_chars=60, head_chars=20, tail_chars=10)


def test_text_carrier_folded_in_the_loop(sim_server: SimServer, recorder: Recorder) -> None:
    with recorder.client() as c:
        bot = agent.Agent(SIM_MODELS["chat-deepseek"](sim_server, c), TOOLS, fold=SMALL)
        result = bot.run("What is the weather in Paris?")
    assert recorder.statuses == [200, 200, 200] and result.rounds == 2
    sent = recorder.json(1)["messages"]
    replayed = next(m for m in sent if m.get("role") == "assistant")["reasoning_content"]
    head, _, rest = replayed.partition("\n\n[... ")
    assert len(head) == 20 and rest.endswith(" is fjord.")  # head and 10-char tail kept
    assert "characters folded ...]" in rest


@pytest.mark.parametrize("label", ["anthropic-thinking", "responses-replay", "gemini"])
def test_opaque_carriers_untouched_and_accepted(
    sim_server: SimServer, recorder: Recorder, label: str
) -> None:
    with recorder.client() as c:
        plain = agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS).run("Weather in Oslo?")
    bodies_plain = list(recorder.bodies)
    recorder.bodies.clear()
    recorder.statuses.clear()
    with recorder.client() as c:
        folded = agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS, fold=SMALL).run(
            "Weather in Oslo?"
        )
    assert recorder.statuses == [200] * len(recorder.statuses) and folded.answer == plain.answer
    if label == "anthropic-thinking":  # signed thinking: byte-identical requests
        assert recorder.bodies == bodies_plain
