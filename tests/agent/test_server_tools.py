"""The agent over recorded Claude server-tool traffic, from a loopback stub (issue 24, point 2).

The stub (a real HTTP server on 127.0.0.1) answers each request with the next recorded
response, bytes as recorded. The agent keeps carriers across turns for the recorded model
(a cross-turn policy), so its follow-up request must carry the assistant turn exactly as
the model sent it: thinking text and signature, text, the ``server_tool_use`` block and the
tool's result block, in order. Expected blocks come from the recording: the recorded second
request where there is one (the advisor file), else the blocks assembled from the recorded
stream's events by ``tests/wire/server_tool_oracle.py``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from reasonwire import agent
from reasonwire.agent.policy import CrossTurnPolicy
from tests.agent.conftest import FAST, key
from tests.conformance.corpus import Interaction, load_cassette
from tests.govern.conftest import ThreadServer
from tests.wire.server_tool_oracle import (
    ADVISOR,
    SERVER_TOOL_TYPES,
    STREAM,
    assembled,
    sse_events,
)


class Stub:
    """ASGI app: each POST gets the next recorded response; every request body is kept."""

    def __init__(self, replies: list[Interaction]) -> None:
        self.replies = list(replies)
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        parts, more = [], True
        while more:
            msg = await receive()
            parts.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        with self._lock:
            self.bodies.append(b"".join(parts))
            it = self.replies.pop(0)
        if it.streamed:
            assert it.response_text is not None
            body, ctype = it.response_text.encode("utf-8"), b"text/event-stream"
        else:
            body, ctype = json.dumps(it.response_json).encode(), b"application/json"
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": it.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[ThreadServer] = []

    def start(replies: list[Interaction]) -> tuple[Stub, str]:
        stub = Stub(replies)
        srv = ThreadServer(stub).__enter__()
        servers.append(srv)
        return stub, srv.url

    yield start
    for srv in servers:
        srv.__exit__(None, None, None)


def _user_texts(request: Any) -> list[str]:
    return [
        b["text"]
        for m in request["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "text"
    ]


def _assistant(body: Any) -> list[Any]:
    (msg,) = [m for m in body["messages"] if m["role"] == "assistant"]
    return list(msg["content"])


def test_follow_up_after_the_recorded_stream_carries_every_block_as_received(serve: Any) -> None:
    (it,) = load_cassette(STREAM)
    assert it.response_text is not None
    stub, url = serve([it, it])  # turn 2's answer: the same recording again (any answer does)
    model_id = it.request["model"]
    model = agent.anthropic(
        model_id,
        base_url=url,
        key=key,
        retries=FAST,
        extra_body={"tools": it.request["tools"]},  # the server tool, declared as recorded
    )
    bot = agent.Agent(model, cross_turn=CrossTurnPolicy.from_pairs([("anthropic", model_id)]))
    (task,) = _user_texts(it.request)
    first = bot.run(task, stream=True)
    events = sse_events(it.response_text)
    blocks = assembled(events)
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    assert first.answer == "".join(texts)
    bot.run("And times two?", stream=True)
    assert len(stub.bodies) == 2
    one, two = (json.loads(b) for b in stub.bodies)
    assert one["tools"] == it.request["tools"]
    sent = _assistant(two)
    assert sent == blocks  # thinking text + signature, server_tool_use, result, text
    assert [b["type"] for b in sent] == [b["type"] for b in blocks]
    (thinking,) = [b for b in sent if b["type"] == "thinking"]
    signatures = [
        e.data["delta"]["signature"]
        for e in events
        if e.data["type"] == "content_block_delta" and e.data["delta"]["type"] == "signature_delta"
    ]
    assert thinking["signature"] == "".join(signatures) != ""
    for block in blocks:
        if block["type"] in SERVER_TOOL_TYPES:
            assert orjson.dumps(block) in stub.bodies[1]  # byte for byte in the request


def test_follow_up_equals_the_recorded_second_request(serve: Any) -> None:
    """The advisor recording has its own turn 2: the agent's is the same, message for
    message (the empty-text thinking block with its signature, the server-tool blocks)."""
    first, second = load_cassette(ADVISOR)
    stub, url = serve([first, second])
    model_id = first.request["model"]
    model = agent.anthropic(
        model_id,
        effort="none",  # the recorded requests set no thinking
        base_url=url,
        key=key,
        retries=FAST,
        max_tokens=first.request["max_tokens"],
        extra_body={"tools": first.request["tools"]},
    )
    bot = agent.Agent(model, cross_turn=CrossTurnPolicy.from_pairs([("anthropic", model_id)]))
    (task,) = _user_texts(first.request)
    bot.run(task)
    *_, follow = _user_texts(second.request)
    result = bot.run(follow)
    assert result.answer == "".join(
        b["text"] for b in second.response_json["content"] if b["type"] == "text"
    )
    ours = json.loads(stub.bodies[1])
    assert ours["messages"] == second.request["messages"]
    for key_ in ("model", "max_tokens", "tools", "stream"):
        assert ours[key_] == second.request[key_]
    assert "thinking" not in ours


# -- adaptive thinking on the simulator ------------------------------------------------------

EFFORTS = ("low", "medium", "high", "xhigh", "max")
"""The anthropic SDK's ``OutputConfigParam.effort`` values (2.16.0: "Valid values are `low`,
`medium`, `high`, `xhigh`, or `max`")."""


@pytest.mark.parametrize("effort", [*EFFORTS, "minimal", "maximum"])
def test_simulator_takes_the_documented_effort_levels_only(sim_server: Any, effort: str) -> None:
    """The agent sends adaptive thinking + ``output_config.effort`` for a level outside the
    budget table; the simulator accepts the five documented values and refuses any other."""
    import httpx

    from reasonwire.errors import BadRequest

    sent: list[Any] = []
    with httpx.Client(event_hooks={"request": [lambda r: sent.append(r)]}) as c:
        model = agent.anthropic(
            "sim-claude",
            effort=effort,
            base_url=sim_server.root_url,
            key=key,
            http_client=c,
            retries=FAST,
        )
        bot = agent.Agent(model)
        if effort in EFFORTS:
            assert bot.run("What is 2 + 2?").answer
        else:
            with pytest.raises(BadRequest, match=r"output_config\.effort"):
                bot.run("What is 2 + 2?")
    body = json.loads(sent[0].content)
    if effort not in ("low", "medium", "high"):  # the agent's budget table covers those
        assert body["thinking"] == {"type": "adaptive"}
        assert body["output_config"] == {"effort": effort}


def test_simulator_refuses_a_budget_on_adaptive_thinking(sim_server: Any) -> None:
    from reasonwire.errors import BadRequest

    model = agent.anthropic(
        "sim-claude",
        effort="adaptive",
        base_url=sim_server.root_url,
        key=key,
        retries=FAST,
        extra_body={"thinking": {"budget_tokens": 2048}},
    )
    with pytest.raises(BadRequest, match="budget_tokens"):
        agent.Agent(model).run("What is 2 + 2?")
    ok = agent.anthropic("sim-claude", effort="adaptive", base_url=sim_server.root_url, key=key)
    assert agent.Agent(ok).run("What is 2 + 2?").answer
