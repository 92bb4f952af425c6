"""What llama-server does with replayed reasoning, measured in real prompt tokens.

Each server renders the real chat template (``--jinja``) and tokenizes with the real vocab, so
``usage.prompt_tokens`` deltas show which reasoning fields a template consumes, and where.
"""

from __future__ import annotations

from typing import Any

import pytest

from reasonwire.localserver.model import resolve_template
from reasonwire.localserver.pytest_plugin import LocalServerFactory
from reasonwire.localserver.server import LocalServer

from .conversation import (
    PROBE,
    TOOLS,
    across_messages,
    independent_count,
    loop_messages,
    post_chat,
    prompt_tokens,
    render,
)

pytestmark = pytest.mark.localserver

QWEN3 = "Qwen-Qwen3-0.6B"
EVERY_TURN = "Bielik-11B-v3.0-Instruct"  # renders reasoning_content on every assistant turn
NO_TURN = "Qwen-Qwen2.5-7B-Instruct"  # has no reasoning slot at all


def test_probe_is_about_1600_chars() -> None:
    assert len(PROBE) == 1600


def test_qwen3_reasoning_content_counts_in_the_loop(qwen3_server: LocalServer) -> None:
    base = prompt_tokens(qwen3_server, loop_messages())
    probed = prompt_tokens(qwen3_server, loop_messages("reasoning_content", PROBE))
    delta = probed - base
    assert 300 <= delta <= 420, delta  # ~350 tokens of English prose


def test_qwen3_reasoning_content_dropped_across_turns(qwen3_server: LocalServer) -> None:
    base = prompt_tokens(qwen3_server, across_messages())
    probed = prompt_tokens(qwen3_server, across_messages("reasoning_content", PROBE))
    assert probed == base


@pytest.mark.parametrize("field", ["reasoning", "reasoning_details"])
def test_qwen3_other_reasoning_fields_are_accepted_and_ignored(
    qwen3_server: LocalServer, field: str
) -> None:
    value = PROBE if field == "reasoning" else [{"type": "reasoning.text", "text": PROBE}]
    base = prompt_tokens(qwen3_server, loop_messages())
    assert prompt_tokens(qwen3_server, loop_messages(field, value)) == base


def test_qwen3_null_reasoning_content_is_a_server_error(qwen3_server: LocalServer) -> None:
    resp = post_chat(qwen3_server, loop_messages("reasoning_content", None))
    assert resp.status_code == 500, resp.text


def _check_against_independent_count(server: LocalServer, messages: list[dict[str, Any]]) -> int:
    """The server's count equals jinja2 rendering + the same vocab, and its rendering ours."""
    assert server.model_file is not None
    template = resolve_template(server.template)
    applied = server.post("/apply-template", {"messages": messages, "tools": TOOLS})
    assert applied.status_code == 200, applied.text
    assert applied.json()["prompt"] == render(template, server.model_file, messages)
    counted = prompt_tokens(server, messages)
    assert counted == independent_count(template, server.model_file, messages)
    return counted


@pytest.mark.parametrize("template", [QWEN3, EVERY_TURN, NO_TURN])
def test_counts_match_an_independent_rendering(
    local_servers: LocalServerFactory, template: str
) -> None:
    server = local_servers(template)
    for messages in (
        loop_messages(),
        loop_messages("reasoning_content", PROBE),
        across_messages(),
        across_messages("reasoning_content", PROBE),
    ):
        _check_against_independent_count(server, messages)


def test_every_turn_template_counts_reasoning_across_turns(
    local_servers: LocalServerFactory,
) -> None:
    server = local_servers(EVERY_TURN)
    loop = prompt_tokens(server, loop_messages("reasoning_content", PROBE)) - prompt_tokens(
        server, loop_messages()
    )
    across = prompt_tokens(server, across_messages("reasoning_content", PROBE)) - prompt_tokens(
        server, across_messages()
    )
    assert 300 <= loop <= 420, loop
    assert across == loop


def test_no_turn_template_never_counts_reasoning(local_servers: LocalServerFactory) -> None:
    server = local_servers(NO_TURN)
    for build in (loop_messages, across_messages):
        assert prompt_tokens(server, build("reasoning_content", PROBE)) == prompt_tokens(
            server, build()
        )


def test_server_adds_an_empty_description_to_tools_without_one(qwen3_server: LocalServer) -> None:
    # A real normalisation that changes counts: llama-server renders tools it has re-serialised.
    bare = {"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}
    body = {"messages": loop_messages(), "tools": [bare]}
    prompt = qwen3_server.post("/apply-template", body).json()["prompt"]
    assert '{"name": "ping", "description": "", "parameters": {"type": "object"}}' in prompt
