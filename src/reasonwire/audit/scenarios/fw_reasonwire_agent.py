# mypy: ignore-errors
"""Scenario: reasonwire's own agent (reasonwire.agent), every dialect it speaks."""

from __future__ import annotations

from _common import BASE_URL, KEY, MODEL, ROOT_URL, STREAM, TOOLS, run

from reasonwire import agent


def _conversation(model: agent.Model):
    # Audited with carriers kept across turns (the policy a consumption matrix gives for a
    # model that reads them); the default drops them at the end of a turn unless the route's
    # profile requires them (DeepSeek).
    keep = agent.CrossTurnPolicy.from_pairs([(model.route.name, model.name)])
    bot = agent.Agent(model, list(TOOLS.values()), cross_turn=keep)

    def say(text: str) -> str:
        return bot.run(text, stream=STREAM).answer

    return say


def _key() -> str:
    return KEY


run(
    {
        "chat": lambda: _conversation(
            agent.openai_compatible(
                base_url=BASE_URL, model=MODEL, profile="deepseek", effort="high", key=_key
            )
        ),
        "responses-store": lambda: _conversation(agent.openai(MODEL, base_url=BASE_URL, key=_key)),
        "responses-nostore": lambda: _conversation(
            agent.openai(MODEL, store=False, base_url=BASE_URL, key=_key)
        ),
        "anthropic": lambda: _conversation(agent.anthropic(MODEL, base_url=ROOT_URL, key=_key)),
        "gemini": lambda: _conversation(
            agent.gemini(MODEL, effort="high", base_url=ROOT_URL, key=_key)
        ),
    }
)
