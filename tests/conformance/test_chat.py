"""Chat Completions dialect against recorded provider traffic (DeepSeek, Z.ai, Cerebras,
OpenRouter, Snowflake, and vercel's DeepSeek fixtures).

1. every recorded response parses; the carriers the recording holds are found, values as
   received; usage figures equal the recorded ones;
2. multi-request recordings: the transcript rebuilt with our replay of response N gives the
   carriers recorded request N+1 sent, value for value;
3. streams: the assembled Turn holds what the chunks say, and equals a parse of its own raw;
4. hypothesis: any split of a recorded stream decodes the same; replay keeps carriers identical.
"""

from __future__ import annotations

import functools
import itertools
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.wire import chat
from reasonwire.wire.chat._facts import ALL_CARRIER_FIELDS, CARRIER_FIELDS
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    Done,
    Message,
    RequestOptions,
    StreamEvent,
    System,
    ToolCall,
    ToolResult,
    Turn,
    User,
)

from .corpus import (
    Interaction,
    chunks_as_sse,
    corpus_files,
    load_cassette,
    load_chunks,
    load_json,
)

D = chat.ChatDialect()

# Which profile describes each recorded route, and which carrier kinds each recorded
# response holds (from the MANIFEST and a reading of the files).
CASSETTES: dict[str, tuple[str, list[set[str]]]] = {
    "pai__test_deepseek__test_deepseek_deferred_capability_with_thinking.yaml": (
        "deepseek",
        [{"reasoning_content"}] * 3,
    ),
    "pai__test_deepseek__test_deepseek_model_thinking_stream.yaml": (
        "deepseek",
        [{"reasoning_content"}],
    ),
    "pai__test_zai__test_zai_preserved_thinking_round_trip.yaml": (
        "zai",
        [{"reasoning_content"}] * 2,
    ),
    "pai__test_cerebras__test_cerebras_thinking_part_survives_multiturn.yaml": (
        "cerebras",
        [{"reasoning"}] * 2,
    ),
    "pai__test_openrouter__test_openrouter_streaming_reasoning.yaml": (
        "openrouter",
        [{"reasoning", "reasoning_details"}],
    ),
    "pai__test_openrouter__test_openrouter_stream_with_reasoning.yaml": (
        "openrouter",
        [{"reasoning_details"}],
    ),
    "pai__test_openrouter__test_openrouter_thinking_high_emits_effort_high.yaml": (
        "openrouter",
        [{"reasoning", "reasoning_details"}],
    ),
    "pai__test_openrouter__test_openrouter_preserve_reasoning_block.yaml": (
        "openrouter",
        [set(), {"reasoning", "reasoning_details"}],
    ),
    "pai__test_snowflake__test_snowflake_thinking.yaml": (
        "snowflake",
        [{"reasoning_details"}, set()],
    ),
    # cassettes-2026/
    "pai__test_openrouter__test_openrouter_with_reasoning.yaml": (
        "openrouter",
        [{"reasoning", "reasoning_details"}],
    ),
    "pai__test_zai__test_zai_glm_5_3_reasoning_effort.yaml": (
        "zai",
        [{"reasoning_content"}] * 2,
    ),
    "pai__test_zai__test_zai_thinking_stream.yaml": (
        "zai",
        [{"reasoning_content"}],
    ),
    # Magistral: thinking parts in a content list (route on the default profile)
    "pai__test_mistral__test_mistral_model_thinking_part_iter.yaml": (
        "default",
        [{"thinking"}],
    ),
}

MY_PATTERNS = (
    "pai__test_deepseek__*",
    "pai__test_zai__*",
    "pai__test_cerebras__*",
    "pai__test_openrouter__*",
    "pai__test_snowflake__*",
    "pai__test_mistral__*",
)


GAPS_2026: set[str] = set()
"""cassettes-2026 Chat recordings whose expectations are not written yet (issue 24, point 4):
their parse test is a strict xfail, so it turns into a failure the day it passes."""


def _cassettes() -> list[Any]:
    names = sorted({n for p in MY_PATTERNS for n in corpus_files(p)})
    if not names:
        return sorted(CASSETTES)  # empty corpus: the loaders skip with a message
    gap = pytest.mark.xfail(strict=True, reason="issue 24: 2026 Chat expectations not written")
    return [pytest.param(n, marks=gap) if n in GAPS_2026 else n for n in names]


def test_every_corpus_file_of_this_dialect_is_covered() -> None:
    names = {n for p in MY_PATTERNS for n in corpus_files(p)}
    if not names:
        pytest.skip("conformance corpus not found")
    assert names == set(CASSETTES) | GAPS_2026


# -- helpers ---------------------------------------------------------------------------------


def _stream_turn(data: bytes, cuts: list[int] | None = None) -> tuple[Turn, list[StreamEvent]]:
    dec = D.stream_decoder()
    events: list[StreamEvent] = []
    points = [0, *sorted(cuts or []), len(data)]
    for a, b in itertools.pairwise(points):
        events.extend(dec.feed(data[a:b]))
    events.extend(dec.close())
    last = events[-1]
    assert isinstance(last, Done)
    return last.turn, events


def _turn(it: Interaction) -> Turn:
    if it.streamed:
        assert it.response_text is not None
        return _stream_turn(it.response_text.encode("utf-8"))[0]
    return D.parse_response(it.response_json)


def _payloads(text: str) -> list[dict[str, Any]]:
    """The JSON chunks of a recorded SSE body, read independently of the decoder."""
    out = []
    for line in text.splitlines():
        if line.startswith("data: ") and line[6:].strip() != "[DONE]":
            out.append(json.loads(line[6:]))
    return out


def _recorded_message(it: Interaction) -> dict[str, Any]:
    msg = it.response_json["choices"][0]["message"]
    assert isinstance(msg, dict)
    return msg


# -- 1. every response parses; carriers and usage as recorded --------------------------------


@pytest.mark.parametrize("name", _cassettes())
def test_responses_parse_with_recorded_carriers_and_usage(name: str) -> None:
    _, expected_kinds = CASSETTES[name]
    interactions = load_cassette(name)
    assert len(interactions) == len(expected_kinds)
    for it, kinds in zip(interactions, expected_kinds, strict=True):
        turn = _turn(it)
        assert {c.kind for c in turn.carriers} == kinds
        assert all(c.dialect == "chat" for c in turn.carriers)
        if it.streamed:
            assert it.response_text is not None
            chunks = _payloads(it.response_text)
            usage = next(c["usage"] for c in reversed(chunks) if c.get("usage"))
        else:
            msg = _recorded_message(it)
            for c in turn.carriers:
                assert c.value is msg[c.kind]
                assert c.path == f"choices[0].message.{c.kind}"
            usage = it.response_json["usage"]
            assert turn.text == msg["content"]
            assert turn.response_id == it.response_json["id"]
        assert turn.usage is not None
        assert turn.usage.raw == usage
        assert turn.usage.output == usage["completion_tokens"]
        assert turn.usage.billed_input == usage["prompt_tokens"]
        assert turn.usage.reasoning == usage.get("completion_tokens_details", {}).get(
            "reasoning_tokens"
        )
        cached = usage.get("prompt_cache_hit_tokens")
        if cached is None:
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        assert turn.usage.cache_read == cached
        if "prompt_cache_miss_tokens" in usage:
            assert turn.usage.input_uncached == usage["prompt_cache_miss_tokens"]
        assert turn.usage.cost_usd == usage.get("cost")


def test_reasoning_details_opacity_is_decided_per_entry() -> None:
    turns = [
        _turn(it)
        for it in load_cassette(
            "pai__test_openrouter__test_openrouter_preserve_reasoning_block.yaml"
        )
    ]
    details = next(c for c in turns[1].carriers if c.kind == "reasoning_details")
    kinds = [(e["type"], chat.detail_is_opaque(e)) for e in details.value]
    assert kinds == [("reasoning.summary", False), ("reasoning.encrypted", True)]
    assert details.opaque
    # the readable part is the summary, the same text OpenRouter puts in `reasoning`
    assert (
        details.text
        == turns[1].reasoning_text
        == _recorded_message(
            load_cassette("pai__test_openrouter__test_openrouter_preserve_reasoning_block.yaml")[1]
        )["reasoning"]
    )
    signed = _turn(
        load_cassette("pai__test_openrouter__test_openrouter_thinking_high_emits_effort_high.yaml")[
            0
        ]
    )
    sig = next(c for c in signed.carriers if c.kind == "reasoning_details")
    assert sig.opaque and sig.value[0]["signature"].startswith("Eu")


def test_vercel_deepseek_body_and_stream() -> None:
    body = load_json("vercel__deepseek__deepseek-tool-call.json")
    whole = D.parse_response(json.dumps(body).encode("utf-8"))
    streamed, events = _stream_turn(
        chunks_as_sse("vercel__deepseek__deepseek-tool-call.chunks.txt")
    )
    msg = body["choices"][0]["message"]
    assert whole.reasoning_text == msg["reasoning_content"]
    assert [c.kind for c in whole.carriers] == ["reasoning_content"]
    assert whole.tool_calls == (
        ToolCall("call_00_9V0vrf86Pc9aelHCJMZqnJBo", "weather", '{"location": "San Francisco"}'),
    )
    assert whole.usage is not None
    assert (whole.usage.input_uncached, whole.usage.cache_read) == (19, 320)
    # the stream is a different call of the same prompt: same tool and arguments text
    chunks = load_chunks("vercel__deepseek__deepseek-tool-call.chunks.txt")
    rc = "".join(
        c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks if c["choices"]
    )
    assert streamed.reasoning_text == rc
    assert [(t.name, t.arguments) for t in streamed.tool_calls] == [
        (t.name, t.arguments) for t in whole.tool_calls
    ]
    assert streamed.tool_calls[0].id == "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF"
    assert streamed.finish_reason == "tool_calls"  # no [DONE] in the fixture: finish ends it
    assert streamed.usage is not None and streamed.usage.raw == chunks[-1]["usage"]
    assert "".join(e.arguments for e in events if e.type == "tool_call") == (
        streamed.tool_calls[0].arguments
    )


# -- 2. replay of response N == carriers of recorded request N+1 -----------------------------


def _neutral(recorded: dict[str, Any]) -> Message:
    """A recorded request message that did not come from a recorded response, as neutral."""
    role = recorded["role"]
    if role == "system":
        return System(recorded["content"])
    if role == "user":
        return User(recorded["content"])
    if role == "tool":
        return ToolResult(recorded["tool_call_id"], "", recorded["content"])
    # an assistant turn the client made up (DeepSeek: pydantic-ai's synthetic tool call)
    calls = tuple(
        ToolCall(c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in recorded.get("tool_calls") or ()
    )
    carriers = tuple(
        Carrier("chat", f, f"messages.{f}", recorded[f], False, text=recorded[f])
        for f in ("reasoning_content", "reasoning")
        if isinstance(recorded.get(f), str)
    )
    return Assistant(text=recorded.get("content") or "", tool_calls=calls, carriers=carriers)


def _effort_of(request: dict[str, Any]) -> str | None:
    for probe in (request.get("reasoning"), request.get("thinking")):
        if isinstance(probe, dict):
            return str(probe.get("effort", "high"))
    return None


FRESH_REQUESTS = {"pai__test_zai__test_zai_glm_5_3_reasoning_effort.yaml"}
"""Multi-request recordings whose later requests start a new conversation instead of
continuing the earlier one (GLM-5.3: request 2 sends the same lone user message with other
thinking settings; see :func:`test_glm_5_3_requests_are_two_fresh_calls`)."""

MULTI = [n for n, (_, kinds) in CASSETTES.items() if len(kinds) > 1 and n not in FRESH_REQUESTS]


@pytest.mark.parametrize("name", MULTI)
def test_next_request_carries_our_replay(name: str) -> None:
    profile, _ = CASSETTES[name]
    interactions = load_cassette(name)
    turns = [_turn(it) for it in interactions]
    for n in range(len(interactions) - 1):
        prev_req = interactions[n].request
        next_req = interactions[n + 1].request
        # rebuild request N+1 from neutral messages, the assistant answers from our parses
        answers = {len(interactions[k].request["messages"]): turns[k] for k in range(n + 1)}
        transcript: list[Message] = []
        for i, recorded in enumerate(next_req["messages"]):
            turn = answers.get(i)
            transcript.append(turn.as_message() if turn is not None else _neutral(recorded))
        options = RequestOptions(model=next_req["model"], effort=_effort_of(next_req))
        ours = D.build_request(transcript, options, profile=profile)
        assert len(ours["messages"]) == len(next_req["messages"])
        for mine, theirs in zip(ours["messages"], next_req["messages"], strict=True):
            assert mine["role"] == theirs["role"]
            assert mine.get("content") == theirs.get("content")
            for field in ALL_CARRIER_FIELDS:
                assert mine.get(field) == theirs.get(field), (name, n, field)
            assert [
                (c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in mine.get("tool_calls") or ()
            ] == [
                (c["id"], c["function"]["name"], c["function"]["arguments"])
                for c in theirs.get("tool_calls") or ()
            ]
        # the assistant message for response N, carrier by carrier, is the parsed object
        mine = ours["messages"][len(prev_req["messages"])]
        native = turns[n].native.items[0]
        for field in CARRIER_FIELDS:
            if field in mine:
                assert mine[field] is native[field]
        for key in ("reasoning", "thinking"):
            if key in next_req:
                assert ours[key] == next_req[key]


def test_recorded_replays_hold_the_carriers_the_manifest_names() -> None:
    """What each route's recorded follow-up actually sent back (not what it could have)."""
    sent = {}
    for name in MULTI:
        interactions = load_cassette(name)
        kinds: set[str] = set()
        for it in interactions[1:]:
            for m in it.request["messages"]:
                if m["role"] == "assistant":
                    kinds |= {f for f in ALL_CARRIER_FIELDS if m.get(f) is not None}
        sent[name.split("__")[1]] = kinds
    assert sent == {
        "test_deepseek": {"reasoning_content"},
        "test_zai": {"reasoning_content"},
        "test_cerebras": {"reasoning"},
        "test_openrouter": set(),  # preserve_reasoning_block: response 1 had no reasoning
        "test_snowflake": {"reasoning_details"},
    }


def test_openrouter_preserve_block_second_answer_replays_whole() -> None:
    """The recorded follow-up came before any reasoning; our replay of the answer that did
    carry reasoning_details (summary + encrypted) sends the list back as received."""
    name = "pai__test_openrouter__test_openrouter_preserve_reasoning_block.yaml"
    interactions = load_cassette(name)
    assistant = interactions[1].request["messages"][1]
    assert assistant == {"content": "Hello! How can I help you today?", "role": "assistant"}
    turn = _turn(interactions[1])
    [msg] = D.replay(turn, profile="openrouter")
    recorded = _recorded_message(interactions[1])
    assert msg["reasoning_details"] is recorded["reasoning_details"]
    assert msg["reasoning"] is recorded["reasoning"]
    assert "reasoning_details" not in D.replay(turn, profile="deepseek")[0]


# -- 3. streams ----------------------------------------------------------------------------


STREAMS = [n for n in CASSETTES if "stream" in n]


@pytest.mark.parametrize("name", STREAMS)
def test_stream_assembles_recorded_final_state(name: str) -> None:
    [it] = load_cassette(name)
    assert it.response_text is not None
    chunks = _payloads(it.response_text)
    turn, events = _stream_turn(it.response_text.encode("utf-8"))
    deltas = [c["choices"][0]["delta"] for c in chunks if c.get("choices")]
    content = "".join(d.get("content") or "" for d in deltas)
    assert turn.text == content
    assert "".join(e.text for e in events if e.type == "text") == content
    for field in ("reasoning_content", "reasoning"):
        pieces = [d[field] for d in deltas if isinstance(d.get(field), str)]
        carrier = [c for c in turn.carriers if c.kind == field]
        assert [c.value for c in carrier] == (["".join(pieces)] if pieces else [])
    # Z.ai chunks leave finish_reason out until the last one (not even ``null``)
    finals = [c["choices"][0].get("finish_reason") for c in chunks if c.get("choices")]
    assert turn.finish_reason == next(f for f in finals if f is not None)
    assert turn.usage is not None
    assert turn.usage.raw == next(c["usage"] for c in reversed(chunks) if c.get("usage"))
    assert [e.carrier for e in events if e.type == "carrier"] == list(turn.carriers)
    # the stream Turn equals the Turn of the same answer as one body
    whole = D.parse_response(json.dumps(turn.raw))
    assert whole.text == turn.text
    assert whole.reasoning_text == turn.reasoning_text
    assert whole.tool_calls == turn.tool_calls
    assert [c.value for c in whole.carriers] == [c.value for c in turn.carriers]
    assert whole.usage == turn.usage


def test_openrouter_stream_reasoning_details_merge_to_one_signed_block() -> None:
    """The merged value the recorded Anthropic-via-OpenRouter stream must replay as."""
    [it] = load_cassette("pai__test_openrouter__test_openrouter_streaming_reasoning.yaml")
    assert it.response_text is not None
    fragments = [
        f
        for c in _payloads(it.response_text)
        for f in (c["choices"][0]["delta"].get("reasoning_details") or [])
    ]
    assert len(fragments) == 6
    signatures = [f["signature"] for f in fragments if f.get("signature")]
    assert len(signatures) == 1  # the first fragment opens with signature "" (not the value)
    turn = _stream_turn(it.response_text.encode("utf-8"))[0]
    details = next(c for c in turn.carriers if c.kind == "reasoning_details")
    assert details.value == [
        {
            "type": "reasoning.text",
            "text": "".join(f.get("text", "") for f in fragments),
            "signature": signatures[0],
            "format": "anthropic-claude-v1",
            "index": 0,
        }
    ]
    assert details.value[0]["text"] == turn.reasoning_text
    assert details.opaque
    [msg] = D.replay(turn, profile="openrouter")
    assert msg["reasoning_details"] is details.value


def test_openrouter_encrypted_stream_keeps_data_whole() -> None:
    [it] = load_cassette("pai__test_openrouter__test_openrouter_stream_with_reasoning.yaml")
    assert it.response_text is not None
    [fragment] = [
        f
        for c in _payloads(it.response_text)
        for f in (c["choices"][0]["delta"].get("reasoning_details") or [])
    ]
    turn = _stream_turn(it.response_text.encode("utf-8"))[0]
    [details] = turn.carriers
    assert details.value == [fragment]
    assert details.opaque and details.text is None
    assert turn.reasoning_text == ""


# -- 4. hypothesis -------------------------------------------------------------------------


@functools.cache
def _stream_bytes() -> dict[str, bytes]:
    out = {}
    for name in STREAMS:
        for it in load_cassette(name):
            assert it.response_text is not None
            out[name] = it.response_text.encode("utf-8")
    out["vercel"] = chunks_as_sse("vercel__deepseek__deepseek-tool-call.chunks.txt")
    out["alibaba"] = chunks_as_sse(ALIBABA_CHUNKS)
    [magistral] = load_cassette(MAGISTRAL)
    assert magistral.response_text is not None
    out[MAGISTRAL] = magistral.response_text.encode("utf-8")
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_split_of_a_recorded_stream_decodes_the_same(data: st.DataObject) -> None:
    streams = _stream_bytes()
    name = data.draw(st.sampled_from(sorted(streams)))
    raw = streams[name]
    whole_turn, whole_events = _stream_turn(raw)
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=40))
    split_turn, split_events = _stream_turn(raw, cuts)
    assert split_events == whole_events
    assert split_turn == whole_turn


@functools.cache
def _bodies() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for name in CASSETTES:
        for it in load_cassette(name):
            if not it.streamed:
                out.append((name, it.response_json))
    out.append(("vercel", load_json("vercel__deepseek__deepseek-tool-call.json")))
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_replay_of_parse_keeps_every_carrier_identical(data: st.DataObject) -> None:
    bodies = _bodies()
    _name, body = data.draw(st.sampled_from(bodies), label="body")
    profile = data.draw(st.sampled_from(sorted(chat.CHAT_PROFILES)), label="profile")
    encoded = data.draw(st.booleans(), label="from bytes")
    turn = D.parse_response(json.dumps(body).encode("utf-8") if encoded else body)
    recorded = body["choices"][0]["message"]
    [msg] = D.replay(turn, profile=profile)
    prof = chat.CHAT_PROFILES[profile]
    for c in turn.carriers:
        if c.kind in CARRIER_FIELDS:
            assert c.value == recorded[c.kind]
            if prof.returns_field(c.kind):
                assert msg[c.kind] is c.value
                if isinstance(c.value, str):
                    assert msg[c.kind].encode("utf-8") == recorded[c.kind].encode("utf-8")
            else:
                assert c.kind not in msg
    assert msg.get("reasoning_content", "") is not None
    for field in CARRIER_FIELDS:
        if field not in {c.kind for c in turn.carriers}:
            assert field not in msg
    [stripped] = D.strip(turn, profile=profile)
    assert not set(ALL_CARRIER_FIELDS) & set(stripped)


@pytest.mark.parametrize("name", STREAMS)
def test_absorb_leaves_the_recorded_streams_state(name: str) -> None:
    """The probe's bulk path (``absorb``) on each recorded stream, whole and one event per
    chunk, ends in the general path's state."""
    [it] = load_cassette(name)
    assert it.response_text is not None
    data = it.response_text.encode("utf-8")
    events = [e + b"\n\n" for e in data.split(b"\n\n") if e]
    general = D.stream_decoder()
    for e in events:
        general.feed(e)
    for chunks in ([data], events):
        bulk = D.stream_decoder()
        for c in chunks:
            bulk.absorb(c)  # type: ignore[attr-defined]
        assert bulk.assembled() == general.assembled()  # type: ignore[attr-defined]


# -- cassettes-2026: Qwen3 (DashScope) and Magistral ------------------------------------------


ALIBABA_JSON = "vercel__alibaba__alibaba-reasoning.json"
ALIBABA_CHUNKS = "vercel__alibaba__alibaba-reasoning.chunks.txt"


def test_qwen3_max_reasoning_content_body_and_stream() -> None:
    """qwen3-max on DashScope's compatible mode: ``message.reasoning_content`` beside
    ``content`` (MANIFEST); the stream opens with ``reasoning_content: ""`` and ends with a
    ``finish_reason`` chunk, then a usage-only chunk with ``choices: []``."""
    body = load_json(ALIBABA_JSON)
    msg = body["choices"][0]["message"]
    whole = D.parse_response(json.dumps(body).encode("utf-8"))
    assert [c.kind for c in whole.carriers] == ["reasoning_content"]
    assert whole.carriers[0].value == msg["reasoning_content"]
    assert not whole.carriers[0].opaque
    assert whole.reasoning_text == msg["reasoning_content"]
    assert whole.text == msg["content"]
    assert whole.usage is not None
    assert (whole.usage.output, whole.usage.reasoning) == (
        body["usage"]["completion_tokens"],
        body["usage"]["completion_tokens_details"]["reasoning_tokens"],
    )
    [replayed] = D.replay(whole, profile="qwen")
    assert replayed["reasoning_content"] is whole.carriers[0].value
    assert replayed["reasoning_content"].encode("utf-8") == msg["reasoning_content"].encode("utf-8")

    chunks = load_chunks(ALIBABA_CHUNKS)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    rc = "".join(d.get("reasoning_content") or "" for d in deltas)
    text = "".join(d.get("content") or "" for d in deltas)
    streamed, events = _stream_turn(chunks_as_sse(ALIBABA_CHUNKS))
    assert [c.kind for c in streamed.carriers] == ["reasoning_content"]
    assert streamed.reasoning_text == rc
    assert streamed.text == text
    assert "".join(e.text for e in events if e.type == "reasoning") == rc
    assert streamed.finish_reason == "stop"
    assert streamed.usage is not None and streamed.usage.raw == chunks[-1]["usage"]
    assert (
        streamed.usage.reasoning
        == chunks[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"]
    )


MAGISTRAL = "pai__test_mistral__test_mistral_model_thinking_part_iter.yaml"


def test_magistral_thinking_parts_stream() -> None:
    """magistral-medium streams ``delta.content`` as a string or as a LIST of parts; the
    thinking parts are ``{"type": "thinking", "thinking": [{"type": "text", "text"}]}``
    (MANIFEST). Expectations read off the chunks: the visible text is every string piece and
    text part, the reasoning every thinking part's inner text, in order."""
    [it] = load_cassette(MAGISTRAL)
    assert it.response_text is not None
    chunks = _payloads(it.response_text)
    visible: list[str] = []
    thought: list[str] = []
    for c in chunks:
        content = c["choices"][0]["delta"].get("content") if c.get("choices") else None
        if isinstance(content, str):
            visible.append(content)
        for part in content if isinstance(content, list) else ():
            if part["type"] == "thinking":
                thought.extend(t["text"] for t in part["thinking"])
            else:
                visible.append(part["text"])
    assert thought and visible  # the recording holds both
    turn, events = _stream_turn(it.response_text.encode("utf-8"))
    assert turn.text == "".join(visible)
    assert turn.reasoning_text == "".join(thought)
    assert "".join(e.text for e in events if e.type == "reasoning") == "".join(thought)
    assert "".join(e.text for e in events if e.type == "text") == "".join(visible)
    [carrier] = turn.carriers
    assert (carrier.kind, carrier.opaque, carrier.path) == (
        "thinking",
        False,
        "choices[0].message.content[0]",
    )
    assert carrier.value == {
        "type": "thinking",
        "thinking": [{"type": "text", "text": "".join(thought)}],
    }
    assert turn.finish_reason == "stop"
    assert turn.usage is not None and turn.usage.raw == chunks[-1]["usage"]
    assert turn.usage.reasoning is None  # Mistral reports no reasoning_tokens
    # the stream Turn equals the Turn of the same answer as one body (Mistral's list form)
    whole = D.parse_response(json.dumps(turn.raw))
    assert (whole.text, whole.reasoning_text) == (turn.text, turn.reasoning_text)
    assert [c.value for c in whole.carriers] == [carrier.value]
    # replay: the thinking part goes back in place; strip leaves the text part only
    [msg] = D.replay(turn)
    assert msg["content"] == [carrier.value, {"type": "text", "text": "".join(visible)}]
    assert msg["content"][0] is carrier.value
    [stripped] = D.strip(turn)
    assert stripped["content"] == [{"type": "text", "text": "".join(visible)}]
    [other] = D.replay(turn, profile="deepseek")  # a route that does not read thinking parts
    assert other["content"] == stripped["content"]


def test_glm_5_3_requests_are_two_fresh_calls() -> None:
    """GLM-5.3: request 2 is not a continuation of request 1 (it sends the same lone user
    message again, with ``thinking: {clear_thinking: false}`` only and no reasoning_effort),
    so there is no replay to compare; each answer carries its own reasoning_content."""
    first, second = load_cassette("pai__test_zai__test_zai_glm_5_3_reasoning_effort.yaml")
    assert first.request["messages"] == second.request["messages"]
    assert [m["role"] for m in second.request["messages"]] == ["user"]
    assert first.request["reasoning_effort"] == "max"
    assert first.request["thinking"] == {"type": "enabled", "clear_thinking": False}
    assert second.request["thinking"] == {"clear_thinking": False}
    assert "reasoning_effort" not in second.request
    for it in (first, second):
        turn = _turn(it)
        rc = _recorded_message(it)["reasoning_content"]
        assert [c.value for c in turn.carriers] == [rc]
        assert turn.reasoning_text == rc
