# mypy: ignore-errors
"""Scenario: the anthropic SDK's tool runner (``client.beta.messages.tool_runner`` with
``@beta_tool`` functions), extended thinking on. One runner per user turn; the second runner
starts from the history the first one kept on its thread (the runner has no public accessor
for it) plus the new user message.

By default this SDK version's runner keeps the conversation on the server (beta header
``message-threads-2026-08-12``, body ``thread: {type: create|continue, previous_message_id}``),
which the simulator does not implement; the scenario asks for ``thread=False`` (the SDK's
documented switch), so the runner replays the history itself and that replay is measured."""

from __future__ import annotations

from _common import MAX_TOKENS, MODEL, THINKING_BUDGET, forecast, lookup, run
from anthropic import Anthropic, beta_tool

TOOLS = [beta_tool(lookup), beta_tool(forecast)]


def runner_loop():
    client = Anthropic()
    history = []

    def say(text: str) -> str:
        nonlocal history
        runner = client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=MAX_TOKENS,
            thinking={"type": "enabled", "budget_tokens": THINKING_BUDGET},
            tools=TOOLS,
            messages=[*history, {"role": "user", "content": text}],
            thread=False,
        )
        last = runner.until_done()
        history = list(runner._thread.messages)
        return "".join(b.text for b in last.content if b.type == "text")

    return say


run({"anthropic": runner_loop})
