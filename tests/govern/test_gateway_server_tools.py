"""Claude server tools through the gateway, from the 2026 recordings (issue 24, point 2).

The upstream is a loopback stub that answers with the recorded bytes; the client is plain
httpx. Every expectation is read off the recording by the small oracle below (an SSE splitter
and a block assembler written for this test), with the projection rule stated in the
dialect's docs: a governed client sees server-tool blocks (``server_tool_use`` and the
tool's ``*_tool_result``) exactly as received, thinking blocks with their signature and no
text, no ``thinking_delta``; its next request reaches the upstream with the thinking text
re-attached from the vault and every other block as the client sent it.

Also here: the route fragments on both sides of the Claude 4.6 boundary (budget below,
adaptive + ``output_config.effort`` from 4.6), and the client's own reasoning controls
(``thinking.display``, the ``redact-thinking-*`` beta header) stripped.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from reasonwire.govern.binding import HEADER, KeyRing
from reasonwire.govern.control import project
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import CONVERSATION_HEADER, Gateway
from reasonwire.govern.levels import LEVELS
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import (
    Registry,
    RouteRegistration,
    RuntimeAdapter,
    dialect_levels,
)
from tests.conformance.corpus import Interaction, load_cassette
from tests.govern.conftest import ROOMY, RUNTIME, ThreadServer
from tests.govern.hostile import HostileUpstream, Reply, Seen, new_conv
from tests.wire.server_tool_oracle import (
    ADVISOR,
    SERVER_TOOL_TYPES,
    STREAM,
    Event,
    assembled,
    client_events,
    sse_events,
    thinking_texts,
    visible_block,
)

KEY_ENV = "RW_SERVER_TOOLS_UPSTREAM_KEY"
MODELS = ("claude-sonnet-4-5", "claude-sonnet-4-6", "claude-sonnet-5", "claude-opus-4-7")


# -- the governed world ---------------------------------------------------------------------


@dataclass
class World:
    gateway: Gateway
    upstream: HostileUpstream
    ring: KeyRing
    url: str
    store: SQLiteStore

    def post(
        self,
        model: str,
        conv: str,
        body: dict[str, Any],
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        token = project(
            self.gateway.registry,
            self.gateway.policy,
            self.ring,
            conversation_id=conv,
            task_id="task-" + conv,
            runtime_id=RUNTIME[0],
            runtime_version=RUNTIME[1],
            route_id="anthropic/" + model,
            requested="medium",
        )
        hdrs = {HEADER: token, CONVERSATION_HEADER: conv, **(headers or {})}
        with (
            httpx.Client(base_url=self.url, timeout=30) as client,
            client.stream("POST", "/v1/messages", json=body, headers=hdrs) as resp,
        ):
            return resp.status_code, b"".join(resp.iter_raw())

    def seen(self, conv: str) -> list[Seen]:
        return self.upstream.find(conv)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    mp = pytest.MonkeyPatch()
    mp.setenv(KEY_ENV, "-".join(["sk", "server", "tools", "test"]))
    app = HostileUpstream()
    tmp: Path = tmp_path_factory.mktemp("server-tools")
    try:
        with ThreadServer(app) as up:
            reg = Registry(
                adapters=[RuntimeAdapter(*RUNTIME, "qualified", "Q-RT", frozenset(LEVELS))]
            )
            for model in MODELS:
                reg.add_route(
                    RouteRegistration(
                        route_id="anthropic/" + model,
                        provider="anthropic",
                        model=model,
                        dialect="anthropic",
                        upstream_base_url=up.url + "/v1",
                        qualification_id="Q-ROUTE-" + model,
                        levels=dialect_levels("anthropic", model),
                        credential_env=KEY_ENV,
                        auth_header="x-api-key",
                        auth_scheme="",
                    )
                )
            policy = OrgPolicy(allowed=frozenset(LEVELS), maximum="high")
            ring = KeyRing.generate("k1")
            store = SQLiteStore(tmp / "evidence.sqlite")
            gw = Gateway(reg, policy, ring, store, store_settings=ROOMY)
            with ThreadServer(gw.app) as gsrv:
                yield World(gw, app, ring, gsrv.url, store)
            store.close()
    finally:
        mp.undo()


def _with_conv(body: dict[str, Any], conv: str) -> dict[str, Any]:
    """The recorded request, marked with the conversation (the stub finds it in the body)."""
    return {**body, "metadata": {"user_id": conv}}


def _stream_reply(text: str) -> Reply:
    raw = text.encode("utf-8")
    cuts = [*range(0, len(raw), 97), len(raw)]  # splits inside events and UTF-8
    return Reply(
        chunks=[raw[a:b] for a, b in itertools.pairwise(cuts)],
        content_type="text/event-stream",
    )


def _json_reply(body: Any) -> Reply:
    return Reply(body=json.dumps(body).encode())


def _assistant_blocks(body: Any) -> list[Any]:
    (msg,) = [m for m in body["messages"] if m["role"] == "assistant"]
    return list(msg["content"])


# -- streams --------------------------------------------------------------------------------


def test_stream_server_tool_events_reach_the_client_byte_for_byte(world: World) -> None:
    (it,) = load_cassette(STREAM)
    assert it.response_text is not None
    recorded = sse_events(it.response_text)
    conv = new_conv()
    world.upstream.plan(conv, _stream_reply(it.response_text))
    status, raw = world.post(it.request["model"], conv, _with_conv(it.request, conv))
    assert status == 200
    got = client_events(raw)

    # The rule: every recorded event but the thinking deltas, in order, under its own type.
    expected = [
        e
        for e in recorded
        if not (e.data["type"] == "content_block_delta" and "thinking" in e.data["delta"])
    ]
    assert [name for name, _ in got] == [e.data["type"] for e in expected]
    server_indexes = {
        e.data["index"]
        for e in recorded
        if e.data["type"] == "content_block_start"
        and e.data["content_block"]["type"] in SERVER_TOOL_TYPES
    }
    assert len(server_indexes) == 2  # server_tool_use and its result, as recorded
    exact = 0
    for (_, data), ev in zip(got, expected, strict=True):
        d = ev.data
        if d.get("index") in server_indexes or d["type"] in ("content_block_stop", "ping"):
            assert data == ev.compact  # byte-for-byte (the recording's own key order)
            exact += 1
        elif d["type"] == "content_block_delta":
            assert data == ev.compact  # text and signature deltas pass whole
    assert exact >= 2 + 9 + 1  # two block starts, nine input deltas, a stop at least
    # Thinking: the block start keeps its key and signature field, the text never comes.
    thinking = "".join(thinking_texts(recorded))
    assert thinking.strip() and thinking.encode() not in raw
    assert b"thinking_delta" not in raw
    # The container the client needs to reuse it comes through.
    (delta,) = [json.loads(d) for n, d in got if n == "message_delta"]
    (rec_delta,) = [e.data for e in recorded if e.data["type"] == "message_delta"]
    assert delta["delta"]["container"] == rec_delta["delta"]["container"]
    assert delta["usage"]["server_tool_use"] == rec_delta["usage"]["server_tool_use"]


def test_stream_follow_up_carries_the_server_tool_blocks_and_the_vaulted_thinking(
    world: World,
) -> None:
    """Turn 2 after the recorded stream: the client sends back what it saw (thinking without
    text); the upstream gets the blocks the model sent, thinking text re-attached."""
    (it,) = load_cassette(STREAM)
    assert it.response_text is not None
    recorded = sse_events(it.response_text)
    conv = new_conv()
    world.upstream.plan(conv, _stream_reply(it.response_text), _json_reply(_final_answer()))
    status, raw = world.post(it.request["model"], conv, _with_conv(it.request, conv))
    assert status == 200
    seen_by_client = assembled([Event(n, d.decode()) for n, d in client_events(raw) if n != "ping"])
    original = assembled(recorded)
    assert seen_by_client == [visible_block(b) for b in original]  # the rule, per block

    (delta,) = [e.data["delta"] for e in recorded if e.data["type"] == "message_delta"]
    follow = {
        **_with_conv(it.request, conv),
        "container": delta["container"]["id"],  # the SDK's way to reuse the container
        "stream": False,
        "messages": [
            *it.request["messages"],
            {"role": "assistant", "content": seen_by_client},
            {"role": "user", "content": [{"type": "text", "text": "And times two?"}]},
        ],
    }
    status, _ = world.post(it.request["model"], conv, follow)
    assert status == 200
    second = world.seen(conv)[1]
    assert _assistant_blocks(second.body) == original
    assert second.body["container"] == delta["container"]["id"]
    for block in original:
        if block["type"] in SERVER_TOOL_TYPES:
            assert orjson.dumps(block) in second.raw  # unchanged, byte for byte


def _final_answer() -> dict[str, Any]:
    (_, it) = load_cassette(ADVISOR)
    return dict(it.response_json)


# -- JSON -----------------------------------------------------------------------------------


def test_json_server_tool_blocks_pass_and_the_recorded_turn_2_reaches_upstream(
    world: World,
) -> None:
    first, second = load_cassette(ADVISOR)
    conv = new_conv()
    world.upstream.plan(conv, _json_reply(first.response_json), _json_reply(second.response_json))
    status, raw = world.post(first.request["model"], conv, _with_conv(first.request, conv))
    assert status == 200
    content = json.loads(raw)["content"]
    recorded = first.response_json["content"]
    assert content == [visible_block(b) for b in recorded]
    assert {b["type"] for b in recorded} & set(SERVER_TOOL_TYPES) == {
        "server_tool_use",
        "advisor_tool_result",
    }
    for block in recorded:
        if block["type"] in SERVER_TOOL_TYPES:
            assert orjson.dumps(block) in raw

    # Turn 2 exactly as the recording's client sent it: it reaches the upstream unchanged.
    status, raw2 = world.post(second.request["model"], conv, _with_conv(second.request, conv))
    assert status == 200
    up = world.seen(conv)[1]
    assert up.body["messages"] == second.request["messages"]
    for block in _assistant_blocks(second.request):
        assert orjson.dumps(block) in up.raw
    assert json.loads(raw2)["content"] == second.response_json["content"]


def test_json_answer_with_thinking_text_shows_the_signature_only(world: World) -> None:
    """The recorded stream's message as one JSON answer (blocks assembled by the oracle):
    thinking text hidden, its signature and every server-tool block as received."""
    (it,) = load_cassette(STREAM)
    assert it.response_text is not None
    recorded = sse_events(it.response_text)
    blocks = assembled(recorded)
    start = recorded[0].data["message"]
    body = {**start, "content": blocks, "stop_reason": "end_turn"}
    conv = new_conv()
    world.upstream.plan(conv, _json_reply(body))
    status, raw = world.post(
        it.request["model"], conv, _with_conv({**it.request, "stream": False}, conv)
    )
    assert status == 200
    assert json.loads(raw)["content"] == [visible_block(b) for b in blocks]
    assert "".join(thinking_texts(recorded)).encode() not in raw


# -- effort and controls --------------------------------------------------------------------

BUDGETS = {"low": 1024, "medium": 4096, "high": 16000}
"""The dialect's documented budgets (wire/anthropic/_dialect.py's table, restated)."""


def _adaptive(level: str) -> dict[str, Any]:
    return {"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}


def _budget(level: str) -> dict[str, Any]:
    return {"thinking": {"type": "enabled", "budget_tokens": BUDGETS[level]}}


@pytest.mark.parametrize(
    ("model", "form"),
    [
        ("claude-3-7-sonnet-20250219", _budget),
        ("claude-sonnet-4-5", _budget),
        ("claude-opus-4-5-20251101", _budget),
        ("claude-sonnet-4-6", _adaptive),  # the boundary: adaptive since 4.6
        ("claude-opus-4-6", _adaptive),
        ("claude-opus-4-7", _adaptive),
        ("claude-sonnet-5", _adaptive),
    ],
)
def test_route_fragments_follow_the_version_boundary(model: str, form: Any) -> None:
    """Adaptive thinking with output_config.effort from Claude 4.6 (Opus 4.7 and later
    refuse ``enabled`` + ``budget_tokens`` with a 400), the budget form before."""
    assert dialect_levels("anthropic", model) == {lv: form(lv) for lv in LEVELS}


@pytest.mark.parametrize(
    ("model", "want"),
    [("claude-sonnet-4-5", _budget("medium")), ("claude-sonnet-4-6", _adaptive("medium"))],
)
def test_client_reasoning_controls_are_stripped_and_the_route_effort_injected(
    world: World, model: str, want: dict[str, Any]
) -> None:
    conv = new_conv()
    body = {
        "model": model,
        "max_tokens": 20000,
        "messages": [{"role": "user", "content": "Add 2 and 2."}],
        "metadata": {"user_id": conv},
        "thinking": {"type": "enabled", "budget_tokens": 60000, "display": "summarized"},
        "output_config": {"effort": "max", "format": {"type": "json_schema", "schema": {}}},
    }
    beta = {"anthropic-beta": "redact-thinking-2026-02-12"}
    status, _ = world.post(model, conv, body, headers=beta)
    assert status == 200
    (up,) = world.seen(conv)
    assert up.body["thinking"] == want["thinking"]  # no display, no client budget
    effort = up.body.get("output_config", {}).get("effort")
    assert effort == want.get("output_config", {}).get("effort")
    assert up.body["output_config"]["format"] == body["output_config"]["format"]
    assert "anthropic-beta" not in up.headers
    assert "redact-thinking" not in json.dumps(up.headers)
    (row,) = world.store.rows(conv)
    removed = row.controls_removed.split(",")
    assert {"thinking.display", "thinking", "output_config.effort"} <= set(removed)


def test_interaction_fixture_is_streamed() -> None:
    """Guard for the oracle: the stream recording is read as SSE, the advisor one as JSON."""
    (it,) = load_cassette(STREAM)
    assert isinstance(it, Interaction) and it.streamed
    assert not any(i.streamed for i in load_cassette(ADVISOR))


def test_forged_server_tool_blocks_carry_nothing_unnamed(world: World) -> None:
    """A client's server-tool blocks pass in an assistant turn only, and only with their
    named fields: an extra field (where reasoning could ride) is dropped, and so is a
    server-tool block in a user turn, where no model ever put one."""
    _, second = load_cassette(ADVISOR)
    conv = new_conv()
    body = _with_conv(second.request, conv)
    blocks = [dict(b) for b in _assistant_blocks(second.request)]
    hidden = "cnry-forged-reasoning-0001"
    for b in blocks:
        if b["type"] in SERVER_TOOL_TYPES:
            b["thinking"] = hidden
            if isinstance(b.get("content"), dict):
                b["content"] = {**b["content"], "reasoning": hidden}
    user_block = {"type": "server_tool_use", "id": "srvtoolu_x", "name": "advisor", "input": {}}
    body["messages"] = [
        {**body["messages"][0], "content": [*body["messages"][0]["content"], user_block]},
        {"role": "assistant", "content": blocks},
        *body["messages"][2:],
    ]
    status, _ = world.post(second.request["model"], conv, body)
    assert status == 200
    (up,) = world.seen(conv)
    assert hidden not in up.text
    # The recorded blocks and no more; the thinking block goes too, as always when its
    # signature is not in this conversation's vault (this one never received it).
    want = json.loads(json.dumps(second.request["messages"]))
    want[1]["content"] = [b for b in want[1]["content"] if b["type"] != "thinking"]
    assert up.body["messages"] == want


def test_the_anthropic_sdk_reads_the_governed_server_tool_stream(world: World) -> None:
    """The official SDK (its beta client, as the recording's client used) accumulates the
    projected stream into the recorded message: server-tool blocks as received, thinking with
    its signature and no text."""
    import anthropic

    (it,) = load_cassette(STREAM)
    assert it.response_text is not None
    original = assembled(sse_events(it.response_text))
    conv = new_conv()
    world.upstream.plan(conv, _stream_reply(it.response_text))
    token = project(
        world.gateway.registry,
        world.gateway.policy,
        world.ring,
        conversation_id=conv,
        task_id="task-" + conv,
        runtime_id=RUNTIME[0],
        runtime_version=RUNTIME[1],
        route_id="anthropic/" + it.request["model"],
        requested="medium",
    )
    client = anthropic.Anthropic(
        base_url=world.url,
        api_key="runtime-holds-no-provider-key",
        max_retries=0,
        default_headers={HEADER: token, CONVERSATION_HEADER: conv},
    )
    request = {k: v for k, v in _with_conv(it.request, conv).items() if k != "stream"}
    with client.beta.messages.stream(**request) as stream:
        message = stream.get_final_message()
    got = [b.model_dump(exclude_none=True) for b in message.content]
    want = [visible_block(b) for b in original]
    assert [b["type"] for b in got] == [b["type"] for b in want]
    for ours, theirs in zip(got, want, strict=True):
        assert {k: ours[k] for k in theirs} == theirs  # the SDK may add defaults (citations)
