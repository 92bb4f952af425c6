"""The continuation strategy per dialect, from the dialect's server-state facts: Responses
stateless asks for the encrypted reasoning (``include``), Interactions stateless asks for
nothing (its thought steps always carry the signature, Google's thinking page: "signature ...
Always present"), and with ``store`` on both continue from the last id."""

from __future__ import annotations

from reasonwire import agent
from reasonwire.agent.strategy import strategy_for


def test_responses_stateless_asks_for_encrypted_reasoning() -> None:
    s = strategy_for(agent.openai("m", store=False, api_key="sk-test-strategy-0000000000"))
    assert s.kind == "replay"
    assert s.body_fields == {"store": False, "include": ["reasoning.encrypted_content"]}


def test_interactions_stateless_asks_for_nothing_more() -> None:
    model = agent.gemini_interactions("m", store=False, api_key="k-test-strategy-000000000")
    s = strategy_for(model)
    assert s.kind == "replay" and s.body_fields == {"store": False}


def test_interactions_stored_continues_from_the_interaction_id() -> None:
    s = strategy_for(agent.gemini_interactions("m", api_key="k-test-strategy-000000000"))
    assert s.kind == "server_state"
    assert s.previous_field == "previous_interaction_id" and s.body_fields == {"store": True}
