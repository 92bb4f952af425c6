"""A small oracle over the recorded Claude server-tool traffic (cassettes-2026), written apart
from the wire decoders: an SSE splitter, the streaming docs' block assembly, and the visible
projection rule for a block. Shared by the gateway, agent and probe tests of issue 24."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

STREAM = "pai__test_anthropic__test_anthropic_code_execution_tool_stream.yaml"
ADVISOR = "pai__test_anthropic__test_anthropic_advisor_tool_message_replay.yaml"
SERVER_TOOL_TYPES = ("server_tool_use", "bash_code_execution_tool_result", "advisor_tool_result")
"""Every server-tool block type of the two recordings (read them: the other block types
there are text and thinking)."""


@dataclass(frozen=True)
class Event:
    name: str | None
    raw: str
    """The data line as recorded (whitespace included)."""

    @property
    def data(self) -> Any:
        return json.loads(self.raw)

    @property
    def compact(self) -> bytes:
        """The recorded data as compact JSON, keys in the recorded order."""
        return orjson.dumps(self.data)


def sse_events(text: str) -> list[Event]:
    out: list[Event] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            out.append(Event(name, "\n".join(data)))
    return out


def client_events(raw: bytes) -> list[tuple[str | None, bytes]]:
    """(event name, data bytes exactly as the client received them)."""
    out: list[tuple[str | None, bytes]] = []
    for block in raw.split(b"\n\n"):
        name, data = None, b""
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                name = line[7:].decode()
            elif line.startswith(b"data: "):
                data = line[6:]
        if data:
            out.append((name, data))
    return out


def assembled(events: list[Event]) -> list[dict[str, Any]]:
    """The message's content blocks from the recorded stream: each start block, its text,
    thinking, signature and input JSON deltas joined in order (the streaming docs' rule)."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for ev in events:
        d = ev.data
        if d["type"] == "content_block_start":
            blocks[d["index"]] = dict(d["content_block"])
        elif d["type"] == "content_block_delta":
            i, delta = d["index"], d["delta"]
            kind = delta["type"]
            if kind == "text_delta":
                blocks[i]["text"] += delta["text"]
            elif kind == "thinking_delta":
                blocks[i]["thinking"] += delta["thinking"]
            elif kind == "signature_delta":
                blocks[i]["signature"] += delta["signature"]
            elif kind == "input_json_delta":
                partial[i] = partial.get(i, "") + delta["partial_json"]
        elif d["type"] == "content_block_stop" and partial.get(d["index"]):
            blocks[d["index"]]["input"] = json.loads(partial[d["index"]])
    return [blocks[i] for i in sorted(blocks)]


def visible_block(block: dict[str, Any]) -> dict[str, Any]:
    """The projection rule for one block: thinking keeps its key with no text."""
    return dict(block, thinking="") if block["type"] == "thinking" else block


def thinking_texts(events: list[Event]) -> list[str]:
    return [
        e.data["delta"]["thinking"]
        for e in events
        if e.data["type"] == "content_block_delta" and e.data["delta"]["type"] == "thinking_delta"
    ]
