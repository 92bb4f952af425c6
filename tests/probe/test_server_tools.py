"""The probe over the recorded Claude server-tool traffic (cassettes-2026, issue 24 point 2).

Expected figures are computed here from the recording by a small oracle of its own (the SSE
events' ``thinking_delta`` / ``text_delta`` texts, the JSON answer's text blocks, the request's
thinking signatures), never by the probe or the wire decoders: reasoning bytes are the
thinking text, text bytes the text blocks; a server tool's input and result are neither
reasoning nor text nor a client tool call (the server ran it), and a replayed server-tool
block is not sent reasoning.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reasonwire.probe import observe_bytes
from tests.conformance.corpus import load_cassette
from tests.probe.streams import rows_now

STREAM = "pai__test_anthropic__test_anthropic_code_execution_tool_stream.yaml"
ADVISOR = "pai__test_anthropic__test_anthropic_advisor_tool_message_replay.yaml"


def _datas(text: str) -> list[Any]:
    out = []
    for block in text.split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data:"):
                out.append(json.loads(line[5:]))
    return out


def _utf8(parts: list[str]) -> int:
    return len("".join(parts).encode("utf-8"))


def _stream_oracle(text: str) -> dict[str, int]:
    deltas = [d["delta"] for d in _datas(text) if d["type"] == "content_block_delta"]
    finals = [d for d in _datas(text) if d["type"] == "message_delta"]
    return {
        "reasoning": _utf8([d["thinking"] for d in deltas if d["type"] == "thinking_delta"]),
        "text": _utf8([d["text"] for d in deltas if d["type"] == "text_delta"]),
        "server_input": _utf8(
            [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
        ),
        "input": finals[-1]["usage"]["input_tokens"],
        "output": finals[-1]["usage"]["output_tokens"],
    }


@pytest.mark.parametrize("step", [1, 7, 97, 4096])
def test_stream_counts_thinking_and_text_not_the_server_tool(tmp_path: Path, step: int) -> None:
    (it,) = load_cassette(STREAM)
    assert it.response_text is not None
    raw = it.response_text.encode("utf-8")
    chunks = [raw[i : i + step] for i in range(0, len(raw), step)]
    want = _stream_oracle(it.response_text)
    assert want["reasoning"] > 0 and want["text"] > 0 and want["server_input"] > 0
    got = list(
        observe_bytes(
            iter(chunks),
            dialect="anthropic",
            session_id="srv",
            request_body=json.dumps(it.request).encode(),
            ledger_dir=tmp_path,
        )
    )
    assert b"".join(got) == raw  # the stream passes unchanged
    (row,) = rows_now(tmp_path).rows
    assert row["status"] == "ok" and "error" not in row
    assert row["reasoningBytes"] == want["reasoning"]
    assert row["textBytes"] == want["text"]
    assert row["toolBytes"] == 0  # the server_tool_use input is no call of the client's
    assert row["usage"]["inputTokens"] == want["input"]
    assert row["usage"]["outputTokens"] == want["output"]
    assert row["wireBytes"] == len(raw)


def test_json_turn_2_counts_sent_signature_not_server_tool_blocks(tmp_path: Path) -> None:
    first, second = load_cassette(ADVISOR)
    # The answer of turn 1: text blocks only are text; the thinking block has no text.
    body = json.dumps(first.response_json).encode()
    list(
        observe_bytes(
            [body],
            dialect="anthropic",
            session_id="adv",
            stream=False,
            request_body=json.dumps(first.request).encode(),
            ledger_dir=tmp_path,
        )
    )
    # Turn 2 sends the recorded request back: its only reasoning is the thinking signature.
    list(
        observe_bytes(
            [json.dumps(second.response_json).encode()],
            dialect="anthropic",
            session_id="adv",
            stream=False,
            request_body=json.dumps(second.request).encode(),
            ledger_dir=tmp_path,
        )
    )
    row1, row2 = rows_now(tmp_path).rows
    blocks = first.response_json["content"]
    assert row1["reasoningBytes"] == _utf8(
        [b["thinking"] for b in blocks if b["type"] == "thinking"]
    )
    assert row1["reasoningBytes"] == 0  # display omitted: empty text, a signature
    assert row1["textBytes"] == _utf8([b["text"] for b in blocks if b["type"] == "text"])
    assert row1["toolBytes"] == 0
    assert row1["usage"]["inputTokens"] == first.response_json["usage"]["input_tokens"]
    assert row1["sentReasoningBytes"] == 0

    sent = [
        b
        for m in second.request["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "thinking"
    ]
    signatures = _utf8([b["signature"] for b in sent])
    assert signatures > 0
    assert row2["sentReasoningBytes"] == signatures
    assert row2["sentReasoning"] == {"signature": {"bytes": signatures, "count": 1, "opaque": True}}
