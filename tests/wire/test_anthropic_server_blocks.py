"""Server-tool blocks in the Anthropic request and visible shapes, against the anthropic SDK.

The oracle is the official SDK's own types (``anthropic.types``, the vendor's description of
each block): a block built with them and dumped as the API sends it must pass the visible
projection unchanged and be accepted unchanged in an assistant turn of a client request;
an extra field (where reasoning could ride) is dropped, and a server-tool block is dropped
from a user turn. The two recorded block kinds are covered from the recordings in
``tests/govern/test_gateway_server_tools.py``; these are the SDK-only kinds and variants.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import types as t

from reasonwire.wire.registry import get_dialect

D = get_dialect("anthropic")


def _dump(model: Any) -> dict[str, Any]:
    out = model.model_dump(mode="json", exclude_none=True)
    assert isinstance(out, dict)
    return out


CALLER = t.ServerToolCaller20260120(type="code_execution_20260120", tool_id="srvtoolu_prog")
BLOCKS = {
    "server_tool_use with a caller": t.ServerToolUseBlock(
        type="server_tool_use",
        id="srvtoolu_1",
        name="web_search",
        input={"query": "Lyon population"},
        caller=CALLER,
    ),
    "web search results": t.WebSearchToolResultBlock(
        type="web_search_tool_result",
        tool_use_id="srvtoolu_1",
        content=[
            t.WebSearchResultBlock(
                type="web_search_result",
                url="https://example.org/lyon",
                title="Lyon",
                encrypted_content="EqgfCioIARgB",
                page_age="2 days ago",
            )
        ],
    ),
    "web search error": t.WebSearchToolResultBlock(
        type="web_search_tool_result",
        tool_use_id="srvtoolu_1",
        content=t.WebSearchToolResultError(
            type="web_search_tool_result_error", error_code="max_uses_exceeded"
        ),
    ),
    "code execution": t.CodeExecutionToolResultBlock(
        type="code_execution_tool_result",
        tool_use_id="srvtoolu_2",
        content=t.CodeExecutionResultBlock(
            type="code_execution_result",
            stdout="4\n",
            stderr="",
            return_code=0,
            content=[t.CodeExecutionOutputBlock(type="code_execution_output", file_id="file_1")],
        ),
    ),
    "encrypted code execution": t.CodeExecutionToolResultBlock(
        type="code_execution_tool_result",
        tool_use_id="srvtoolu_2",
        content=t.EncryptedCodeExecutionResultBlock(
            type="encrypted_code_execution_result",
            encrypted_stdout="ZW5j",
            stderr="",
            return_code=0,
            content=[],
        ),
    ),
    "bash error": t.BashCodeExecutionToolResultBlock(
        type="bash_code_execution_tool_result",
        tool_use_id="srvtoolu_3",
        content=t.BashCodeExecutionToolResultError(
            type="bash_code_execution_tool_result_error", error_code="execution_time_exceeded"
        ),
    ),
    "advisor redacted": t.beta.BetaAdvisorToolResultBlock(
        type="advisor_tool_result",
        tool_use_id="srvtoolu_4",
        content=t.beta.BetaAdvisorRedactedResultBlock(
            type="advisor_redacted_result", encrypted_content="c2VhbGVk", stop_reason="end_turn"
        ),
    ),
    "advisor error": t.beta.BetaAdvisorToolResultBlock(
        type="advisor_tool_result",
        tool_use_id="srvtoolu_4",
        content=t.beta.BetaAdvisorToolResultError(
            type="advisor_tool_result_error", error_code="overloaded"
        ),
    ),
}


def _message(content: list[Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5",
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _request(assistant: list[Any], user_extra: tuple[Any, ...] = ()) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-5",
        "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi"}, *user_extra]},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": "Go on."},
        ],
    }


@pytest.mark.parametrize("name", list(BLOCKS))
def test_sdk_block_is_visible_and_replayable_unchanged(name: str) -> None:
    block = _dump(BLOCKS[name])
    projected = D.project_body(_message([block]))
    assert isinstance(projected, dict)
    assert projected["content"] == [block]
    body = _request([block])
    assert D.validate_request(body)["messages"] == body["messages"]


@pytest.mark.parametrize("name", list(BLOCKS))
def test_unnamed_fields_dropped_and_no_server_block_from_a_user_turn(name: str) -> None:
    block = _dump(BLOCKS[name])
    planted = dict(block, thinking="cnry-top")
    if isinstance(planted.get("content"), dict):
        planted["content"] = dict(planted["content"], reasoning="cnry-nested")
    projected = D.project_body(_message([planted]))
    assert isinstance(projected, dict)
    assert projected["content"] == [block]
    shaped = D.validate_request(_request([planted], (block,)))
    assert shaped["messages"] == _request([block])["messages"]
