"""Gemini's ``:streamGenerateContent`` without ``alt=sse``: a JSON array whose elements are
flushed one by one. The project's Gemini stream decoder reads it over real HTTP into the same
Turn as the SSE form of the same request (google-genai always asks for ``alt=sse``, so it
cannot be the client here)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from reasonwire.sim.app import build_app
from reasonwire.wire.model import Done, StreamEvent, TextDelta, Turn
from reasonwire.wire.registry import get_dialect

TASK = "Find the population of Lyon."
PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "lookup",
                "description": "Look up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ]
    }
]
CFG = {"thinkingConfig": {"includeThoughts": True}}
PATH = "/v1beta/models/sim-gemini:streamGenerateContent"


def _body(contents: list[Any]) -> dict[str, Any]:
    return {"contents": contents, "tools": TOOLS, "generationConfig": CFG}


def _decode(chunks: list[bytes]) -> tuple[Turn, list[StreamEvent]]:
    dec = get_dialect("gemini").stream_decoder()
    events = [e for c in chunks for e in dec.feed(c)]
    tail = dec.close()
    done = tail[-1]
    assert isinstance(done, Done)
    return done.turn, events + tail


def _stream(client: httpx.Client, query: str, body: dict[str, Any]) -> tuple[bytes, list[bytes]]:
    with client.stream("POST", PATH + query, json=body) as r:
        assert r.status_code == 200, r.read()
        ctype = r.headers["content-type"]
        chunks = list(r.iter_raw())
    return ctype.encode(), chunks


def _loop(first: Turn) -> list[Any]:
    return [
        {"role": "user", "parts": [{"text": TASK}]},
        {"role": "model", "parts": first.raw["candidates"][0]["content"]["parts"]},
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "lookup", "response": {"result": "522000. " + PROBE}}}
            ],
        },
    ]


@pytest.mark.parametrize("step", ["tool_call", "answer"])
def test_array_stream_decodes_to_the_sse_turn(client: httpx.Client, step: str) -> None:
    body = _body([{"role": "user", "parts": [{"text": TASK}]}])
    if step == "answer":  # the second turn of the loop: thought chunks, then text chunks
        plain = client.post(PATH.replace("streamGenerateContent", "generateContent"), json=body)
        first = get_dialect("gemini").parse_response(plain.content)
        body = _body(_loop(first))
    sse_type, sse_chunks = _stream(client, "?alt=sse", body)
    arr_type, arr_chunks = _stream(client, "", body)
    assert sse_type.startswith(b"text/event-stream") and arr_type.startswith(b"application/json")
    raw = b"".join(arr_chunks)
    assert raw.startswith(b"[{") and raw.endswith(b"}]")
    items = json.loads(raw)
    sse_items = [
        json.loads(line[6:]) for line in b"".join(sse_chunks).split(b"\n") if line[:6] == b"data: "
    ]
    assert len(items) > 2 and items == sse_items  # the same payloads, element for element
    assert raw.count(b",\r\n{") == len(items) - 1
    sse_turn, _ = _decode(sse_chunks)
    arr_turn, events = _decode(arr_chunks)
    assert arr_turn == sse_turn
    assert arr_turn.carriers and (arr_turn.tool_calls if step == "tool_call" else arr_turn.text)
    if step == "answer":
        assert any(isinstance(e, TextDelta) for e in events)
    # fed byte by byte, the decoder gives the same turn (no framing assumption)
    assert _decode([raw[i : i + 1] for i in range(len(raw))])[0] == sse_turn


def test_array_elements_are_flushed_one_by_one() -> None:
    """At the ASGI level (no TCP coalescing): one body message per element, the first opening
    the array, the others led by ``,\\r\\n``, then the closing bracket; the decoder yields the
    first element's events before the array is closed."""
    app = build_app(seed=0)
    raw = json.dumps(_body([{"role": "user", "parts": [{"text": TASK}]}])).encode()
    sent: list[dict[str, Any]] = []
    requests = [{"type": "http.request", "body": raw, "more_body": False}]
    finished = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await finished.wait()  # the client stays connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            finished.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "root_path": "",
    }

    async def serve() -> None:
        await asyncio.wait_for(app(scope, receive, send), 10)  # type: ignore[arg-type]

    asyncio.run(serve())
    bodies = [m["body"] for m in sent if m["type"] == "http.response.body" and m.get("body")]
    assert len(bodies) >= 3
    assert bodies[0].startswith(b"[{") and bodies[-1] == b"]"
    assert all(b.startswith(b",\r\n{") for b in bodies[1:-1])
    for b in bodies[:-1]:
        json.loads(b.lstrip(b"[,\r\n"))  # each message holds exactly one whole element
    dec = get_dialect("gemini").stream_decoder()
    assert dec.feed(bodies[0])  # the first element is decoded before the rest arrives
