"""Gemini dialect against recorded traffic (pai__test_google__*, vercel__google__*)."""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonwire.wire.gemini import DIALECT, STAND_IN_SIGNATURE, same_signature
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    CarrierComplete,
    Done,
    Native,
    ReasoningDelta,
    RequestOptions,
    System,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
    User,
)
from reasonwire.wire.sse import iter_sse
from tests.conformance import corpus

PAI = corpus.corpus_files("pai__test_google__*.yaml")
VERCEL_JSON = "vercel__google__google-tool-call-gemini3.json"
VERCEL_CHUNKS = "vercel__google__google-tool-call-gemini3.chunks.txt"
THINKING = "pai__test_google__test_google_model_thinking_part.yaml"
ITER = "pai__test_google__test_google_model_thinking_part_iter.yaml"
STREAM_TOOL = "pai__test_google__test_google_streaming_tool_call_thought_signature.yaml"
FOREIGN = "pai__test_google__test_thinking_with_tool_calls_from_other_model.yaml"


def _gemini(it: corpus.Interaction) -> bool:
    return "generativelanguage.googleapis.com" in it.uri


def _array(payloads: list[str]) -> bytes:
    """Frame payloads the way ``streamGenerateContent`` without ``alt=sse`` sends them."""
    return ("[" + ",\r\n".join(payloads) + "]").encode("utf-8")


def _sse_payloads(text: str) -> list[str]:
    return [ev.data for ev in iter_sse([text.encode("utf-8")])]


def _streams() -> list[tuple[str, bytes]]:
    """Every recorded stream in both wire forms: (label, bytes)."""
    out: list[tuple[str, bytes]] = []
    for name in PAI:
        for i, it in enumerate(corpus.load_cassette(name)):
            if _gemini(it) and it.streamed:
                assert it.response_text is not None
                out.append((f"{name}#{i}:sse", it.response_text.encode("utf-8")))
                out.append((f"{name}#{i}:array", _array(_sse_payloads(it.response_text))))
    if VERCEL_CHUNKS in corpus.corpus_files(VERCEL_CHUNKS):
        lines = [
            ln
            for ln in corpus.corpus_path(VERCEL_CHUNKS).read_text("utf-8").splitlines()
            if ln.strip()
        ]
        out.append((f"{VERCEL_CHUNKS}:sse", corpus.chunks_as_sse(VERCEL_CHUNKS)))
        out.append((f"{VERCEL_CHUNKS}:array", _array(lines)))
    return out


STREAMS = _streams()
STREAM_IDS = [label for label, _ in STREAMS]


def _decode(data: bytes, cuts: list[int] | None = None) -> tuple[Turn, list[Any]]:
    dec = DIALECT.stream_decoder()
    events: list[Any] = []
    bounds = [0, *sorted(set(cuts or [])), len(data)]
    for a, b in itertools.pairwise(bounds):
        events.extend(dec.feed(data[a:b]))
    events.extend(dec.close())
    assert isinstance(events[-1], Done)
    return events[-1].turn, events


def _payloads_of(label: str, data: bytes) -> list[dict[str, Any]]:
    if label.endswith(":array"):
        decoded = json.loads(data)
        assert isinstance(decoded, list)
        return decoded
    return [json.loads(p) for p in _sse_payloads(data.decode("utf-8"))]


def _expected_usage(meta: dict[str, Any]) -> tuple[int, int | None, int | None, int | None]:
    prompt = meta["promptTokenCount"]
    cached = meta.get("cachedContentTokenCount")
    cands, thoughts = meta.get("candidatesTokenCount"), meta.get("thoughtsTokenCount")
    output = None if cands is None and thoughts is None else (cands or 0) + (thoughts or 0)
    return prompt - (cached or 0), cached, output, thoughts


def _check_usage(turn: Turn, meta: dict[str, Any]) -> None:
    assert turn.usage is not None
    u = turn.usage
    assert (u.input_uncached, u.cache_read, u.output, u.reasoning) == _expected_usage(meta)
    assert u.raw == meta


# ------------------------------------------------------------------------------------------
# 1. every recorded response parses; MANIFEST carriers found; usage as recorded
# ------------------------------------------------------------------------------------------


def _nonstream_bodies() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name in PAI:
        for i, it in enumerate(corpus.load_cassette(name)):
            if _gemini(it) and not it.streamed:
                out.append((f"{name}#{i}", it.response_json))
    if corpus.corpus_files(VERCEL_JSON):
        out.append((VERCEL_JSON, corpus.load_json(VERCEL_JSON)))
    return out


BODIES = _nonstream_bodies()


def test_corpus_present() -> None:
    corpus.corpus_dir()
    listed = corpus.manifest_entries()
    assert set(PAI) == {n for n in listed if n.startswith("pai__test_google__")}, PAI
    # every generateContent recording gives at least one JSON body; the stream set is unchanged
    # since 2025 (cassettes-2026 adds no Gemini stream)
    bodies = [n for n, f in listed.items() if f.get("provider") == "Gemini generateContent"]
    assert len(STREAMS) == 8 and len({b[0].split("#")[0] for b in BODIES}) >= len(bodies)


@pytest.mark.parametrize(("label", "body"), BODIES, ids=[b[0] for b in BODIES])
def test_nonstream_parses_with_carriers_and_usage(label: str, body: Any) -> None:
    turn = DIALECT.parse_response(json.dumps(body).encode("utf-8"))
    parts = body["candidates"][0]["content"]["parts"]
    sigs = [(i, p["thoughtSignature"]) for i, p in enumerate(parts) if "thoughtSignature" in p]
    thoughts = [(i, p) for i, p in enumerate(parts) if p.get("thought") is True]
    assert sigs, "MANIFEST lists thoughtSignature for every Gemini file"
    got_sigs = [c for c in turn.carriers if c.kind == "thoughtSignature"]
    assert [(c.path, c.value) for c in got_sigs] == [
        (f"candidates[0].content.parts[{i}].thoughtSignature", s) for i, s in sigs
    ]
    assert all(c.opaque for c in got_sigs)
    got_thoughts = [c for c in turn.carriers if c.kind == "thought"]
    assert [(c.path, c.value) for c in got_thoughts] == [
        (f"candidates[0].content.parts[{i}]", p) for i, p in thoughts
    ]
    assert turn.reasoning_text == "".join(p["text"] for _, p in thoughts)
    assert turn.text == "".join(
        p["text"] for p in parts if "text" in p and p.get("thought") is not True
    )
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        (c["name"], c["args"]) for c in calls
    ]
    for c in got_sigs:
        if "functionCall" in parts[int(c.path.split("[")[2].split("]")[0])]:
            assert c.tool_call_id in {t.id for t in turn.tool_calls}
    _check_usage(turn, body["usageMetadata"])
    assert turn.finish_reason == body["candidates"][0]["finishReason"]
    assert turn.response_id == body["responseId"]
    assert turn.native.items == tuple(parts)


def test_thinking_manifest_carriers() -> None:
    """MANIFEST: thought:true parts in the thinking_part recordings, streamed and not."""
    turn = DIALECT.parse_response(corpus.load_cassette(THINKING)[0].response_json)
    assert [c.kind for c in turn.carriers] == ["thought", "thoughtSignature"]
    stream = next(data for label, data in STREAMS if label.startswith(ITER))
    st_turn, _ = _decode(stream)
    assert [c.kind for c in st_turn.carriers] == ["thought", "thoughtSignature"]


# ------------------------------------------------------------------------------------------
# 3. a stream assembles the text, calls, carriers and usage of its final state
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("label", "data"), STREAMS, ids=STREAM_IDS)
def test_stream_final_state(label: str, data: bytes) -> None:
    turn, events = _decode(data)
    payloads = _payloads_of(label, data)
    parts = [p for pl in payloads for p in pl["candidates"][0]["content"]["parts"]]
    visible = "".join(p.get("text", "") for p in parts if p.get("thought") is not True)
    thought = "".join(p["text"] for p in parts if p.get("thought") is True)
    assert turn.text == visible
    assert turn.reasoning_text == thought
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == visible
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == thought
    sigs = [p["thoughtSignature"] for p in parts if "thoughtSignature" in p]
    assert [c.value for c in turn.carriers if c.kind == "thoughtSignature"] == sigs
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        (c["name"], c["args"]) for c in calls
    ]
    _check_usage(turn, payloads[-1]["usageMetadata"])
    assert turn.finish_reason == payloads[-1]["candidates"][0]["finishReason"]
    # Every carrier of the final turn was announced once, with the same value.
    announced = [e.carrier for e in events if isinstance(e, CarrierComplete)]
    assert sorted(announced, key=lambda c: c.path) == sorted(turn.carriers, key=lambda c: c.path)
    # Turn.raw is the non-streaming body shape: parsing it gives the same turn.
    assert DIALECT.parse_response(turn.raw) == turn


def test_sse_and_array_forms_agree() -> None:
    corpus.corpus_dir()  # without the corpus STREAMS is empty: skip, do not fail
    by_source: dict[str, dict[str, Turn]] = {}
    for label, data in STREAMS:
        source, form = label.rsplit(":", 1)
        by_source.setdefault(source, {})[form] = _decode(data)[0]
    assert len(by_source) == 4
    for forms in by_source.values():
        assert forms["sse"] == forms["array"]


def test_streamed_text_merges_like_nonstream_answer() -> None:
    """The iter stream's 4 thought chunks become one thought part and the visible chunks
    join the signed first text chunk: the [thought, text+signature] shape of the
    non-streaming answer in the thinking_part recording."""
    corpus.corpus_dir()
    stream = next(data for label, data in STREAMS if label.startswith(ITER))
    turn, _ = _decode(stream)
    nonstream = corpus.load_cassette(THINKING)[0].response_json
    shape = [sorted(p) for p in nonstream["candidates"][0]["content"]["parts"]]
    assert [sorted(p) for p in turn.native.items] == shape


@pytest.mark.parametrize(("label", "body"), BODIES, ids=[b[0] for b in BODIES])
def test_nonstream_body_restreamed_decodes_to_same_turn(label: str, body: Any) -> None:
    """Cut each recorded answer into stream chunks the way Gemini streams (signature on the
    first chunk of its part, text in pieces, a closing empty text with finishReason) and
    check the decoder rebuilds the non-streamed turn."""
    cand = body["candidates"][0]
    chunks: list[dict[str, Any]] = []
    for part in cand["content"]["parts"]:
        if isinstance(part.get("text"), str) and len(part["text"]) > 3:
            text, step = part["text"], max(1, len(part["text"]) // 5)
            for k in range(0, len(text), step):
                piece = {key: v for key, v in part.items() if key != "thoughtSignature"}
                piece["text"] = text[k : k + step]
                if k == 0 and "thoughtSignature" in part:
                    piece["thoughtSignature"] = part["thoughtSignature"]
                chunks.append(piece)
        else:
            chunks.append(part)
    meta = {k: v for k, v in body.items() if k != "candidates"}
    payloads = [
        {"candidates": [{"content": {"parts": [c], "role": "model"}, "index": 0}], **meta}
        for c in chunks
    ]
    last = {k: v for k, v in cand.items() if k != "content"}
    payloads.append(
        {"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, **last}], **meta}
    )
    data = "".join(f"data: {json.dumps(p)}\r\n\r\n" for p in payloads).encode("utf-8")
    streamed, _ = _decode(data)
    direct = DIALECT.parse_response(body)
    assert streamed.text == direct.text
    assert streamed.reasoning_text == direct.reasoning_text
    assert streamed.tool_calls == direct.tool_calls
    assert [(c.kind, c.path, c.value) for c in streamed.carriers] == [
        (c.kind, c.path, c.value) for c in direct.carriers
    ]
    assert streamed.usage == direct.usage
    assert streamed.native.items == direct.native.items


# ------------------------------------------------------------------------------------------
# 2. recorded request N+1 carries exactly our replay of response N
# ------------------------------------------------------------------------------------------


def _assert_parts_match(ours: list[Any], recorded: list[Any]) -> None:
    """Same part positions and keys; thought parts and text equal; signatures same bytes."""
    assert len(ours) == len(recorded)
    for mine, theirs in zip(ours, recorded, strict=True):
        keys = set(theirs) - {"functionCall"}
        assert set(mine) - {"functionCall"} == keys
        for key in keys - {"thoughtSignature"}:
            assert mine[key] == theirs[key]
        if "thoughtSignature" in theirs:
            assert same_signature(mine["thoughtSignature"], theirs["thoughtSignature"])
        if "functionCall" in theirs:
            fc_mine, fc_theirs = mine["functionCall"], theirs["functionCall"]
            assert (fc_mine["name"], fc_mine["args"]) == (fc_theirs["name"], fc_theirs["args"])


def test_thinking_part_replay_across_turns() -> None:
    first, second = corpus.load_cassette(THINKING)
    turn = DIALECT.parse_response(first.response_json)
    req0, req1 = first.request, second.request
    transcript = [
        System(req0["systemInstruction"]["parts"][0]["text"]),
        User(req0["contents"][0]["parts"][0]["text"]),
        turn.as_message(),
        User(req1["contents"][2]["parts"][0]["text"]),
    ]
    body = DIALECT.build_request(transcript, RequestOptions(model="gemini-3-pro-preview"))
    assert [c["role"] for c in body["contents"]] == [c["role"] for c in req1["contents"]]
    ours = body["contents"][1]["parts"]
    recorded = req1["contents"][1]["parts"]
    _assert_parts_match(ours, recorded)
    # The SDK re-encoded the signature urlsafe; we send the string exactly as received.
    sig = turn.carriers[1].value
    assert ours[1]["thoughtSignature"] is sig
    assert recorded[1]["thoughtSignature"] != sig
    assert same_signature(recorded[1]["thoughtSignature"], sig)
    # Carriers are the received objects themselves.
    assert ours[0] is turn.carriers[0].value


def test_streaming_tool_loop_replay() -> None:
    first, second = corpus.load_cassette(STREAM_TOOL)
    assert first.response_text is not None
    turn, _ = _decode(first.response_text.encode("utf-8"))
    (call,) = turn.tool_calls
    req1 = second.request
    recorded_result = req1["contents"][2]["parts"][0]["functionResponse"]
    transcript = [
        User(first.request["contents"][0]["parts"][0]["text"]),
        turn.as_message(),
        ToolResult(call.id, call.name, recorded_result["response"]["return_value"]),
    ]
    body = DIALECT.build_request(transcript, RequestOptions(model="gemini-3-pro-preview"))
    assert [c["role"] for c in body["contents"]] == [c["role"] for c in req1["contents"]]
    # The closing empty text part is not sent back, in the recording or by us.
    _assert_parts_match(body["contents"][1]["parts"], req1["contents"][1]["parts"])
    ours_result = body["contents"][2]["parts"][0]["functionResponse"]
    assert ours_result["name"] == recorded_result["name"]
    assert "id" not in ours_result  # the call had no id from Gemini; ours is synthetic
    # Turn 2 stream parses with its own usage (the tool loop's growing prompt).
    assert second.response_text is not None
    turn2, _ = _decode(second.response_text.encode("utf-8"))
    assert turn2.usage is not None and turn.usage is not None
    assert turn2.usage.input_uncached is not None and turn.usage.input_uncached is not None
    assert turn2.usage.input_uncached > turn.usage.input_uncached


def test_foreign_history_gets_stand_in_on_first_function_call() -> None:
    """Request 3 of the cross-provider recording sends OpenAI history to Gemini 3.

    The recorder (pydantic-ai) put base64("context_engineering_is_the_way_to_go") on the
    function call; our documented stand-in is "skip_thought_signature_validator". Both are
    stand-ins Google documents; we assert our rule at the recorded position.
    """
    interactions = corpus.load_cassette(FOREIGN)
    openai_first, gemini = interactions[0], interactions[2]
    output = openai_first.response_json["output"]
    fc = next(item for item in output if item["type"] == "function_call")
    reasoning = next(item for item in output if item["type"] == "reasoning")
    assistant = Assistant(
        tool_calls=(ToolCall(fc["call_id"], fc["name"], fc["arguments"]),),
        carriers=(Carrier("responses", "reasoning_item", "output[0]", reasoning, opaque=True),),
        native=Native("responses", tuple(output)),
    )
    req = gemini.request
    recorded_result = req["contents"][2]["parts"][0]["functionResponse"]
    transcript = [
        User(req["contents"][0]["parts"][0]["text"]),
        assistant,
        ToolResult(fc["call_id"], fc["name"], recorded_result["response"]["return_value"]),
    ]
    body = DIALECT.build_request(transcript, RequestOptions(model="gemini-3-pro-preview"))
    ours = body["contents"][1]["parts"]
    recorded = req["contents"][1]["parts"]
    assert [sorted(p) for p in ours] == [sorted(p) for p in recorded]
    assert ours[0]["thoughtSignature"] == STAND_IN_SIGNATURE
    assert base64.b64decode(recorded[0]["thoughtSignature"]) == (
        b"context_engineering_is_the_way_to_go"
    )
    assert ours[0]["functionCall"] == recorded[0]["functionCall"]
    assert "encrypted_content" not in json.dumps(body)
    assert body["contents"][2]["parts"][0]["functionResponse"]["id"] == recorded_result["id"]
    # Gemini's answer to it parses: a signed final_result call.
    turn = DIALECT.parse_response(gemini.response_json)
    assert [c.kind for c in turn.carriers] == ["thoughtSignature"]
    assert turn.carriers[0].tool_call_id == turn.tool_calls[0].id


def test_same_signature_on_recorded_pair() -> None:
    first, second = corpus.load_cassette(THINKING)
    a = first.response_json["candidates"][0]["content"]["parts"][1]["thoughtSignature"]
    b = second.request["contents"][1]["parts"][1]["thoughtSignature"]
    assert a != b and same_signature(a, b) and same_signature(b, a)
    other = second.response_json["candidates"][0]["content"]["parts"][1]["thoughtSignature"]
    assert not same_signature(a, other)


# ------------------------------------------------------------------------------------------
# 4. any split decodes to the same turn; replay keeps every carrier identical
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("label", "data"), STREAMS, ids=STREAM_IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_split_same_turn(label: str, data: bytes, draw: st.DataObject) -> None:
    whole, _ = _decode(data)
    cuts = draw.draw(st.lists(st.integers(0, len(data)), max_size=30))
    split, _ = _decode(data, cuts)
    assert split == whole


def _replay_holds_carriers(turn: Turn) -> None:
    (content,) = DIALECT.replay(turn)
    parts = content["parts"]
    assert content["role"] == "model"
    for c in turn.carriers:
        index = int(c.path.split("parts[")[1].split("]")[0])
        if c.kind == "thought":
            assert parts[index] is c.value
        else:
            assert parts[index]["thoughtSignature"] is c.value
    # strip: no thought part, no signature, nothing else lost.
    (stripped,) = DIALECT.strip(turn)
    assert not any(p.get("thought") for p in stripped["parts"])
    assert not any("thoughtSignature" in p for p in stripped["parts"])
    assert len(stripped["parts"]) == len(parts) - sum(c.kind == "thought" for c in turn.carriers)
    # Each part goes back exactly as received: a signature where one came, none where none
    # came (Gemini 3 parallel calls sign only the first functionCall; a copied signature on
    # the others is not what was received).
    received = turn.native.items
    assert len(parts) == len(received)
    for mine, theirs in zip(parts, received, strict=True):
        assert mine is theirs
        assert ("thoughtSignature" in mine) == ("thoughtSignature" in theirs)


@pytest.mark.parametrize(("label", "data"), STREAMS, ids=STREAM_IDS)
def test_stream_replay_keeps_carriers(label: str, data: bytes) -> None:
    _replay_holds_carriers(_decode(data)[0])


@pytest.mark.parametrize(("label", "body"), BODIES, ids=[b[0] for b in BODIES])
def test_body_replay_keeps_carriers(label: str, body: Any) -> None:
    raw = json.dumps(body, ensure_ascii=False)
    turn = DIALECT.parse_response(raw)
    _replay_holds_carriers(turn)
    # Byte-identical: the replayed JSON contains each carrier's exact serialisation.
    replayed = json.dumps(DIALECT.replay(turn.as_message()), ensure_ascii=False)
    for c in turn.carriers:
        assert json.dumps(c.value, ensure_ascii=False) in replayed


PARALLEL = "pai__test_google__test_google_instructions_only_with_tool_calls.yaml"
"""Gemini 3 tool loop whose first answer holds three parallel functionCall parts, only the
first signed (MANIFEST; Google, https://ai.google.dev/gemini-api/docs/thought-signatures:
"parallel function calls: only the first functionCall part has the signature ... you must
return the signature in the exact part where it was received")."""


def test_parallel_calls_one_signature_replayed_as_received_through_the_loop() -> None:
    """Requests 2..5 of the recording, rebuilt from our replay of responses 1..N: the model
    contents have the recorded parts, keys and signature positions (the SDK re-encodes
    signatures, so bytes are compared with :func:`same_signature`)."""
    interactions = corpus.load_cassette(PARALLEL)
    first = interactions[0].response_json["candidates"][0]["content"]["parts"]
    signed = ["thoughtSignature" in p for p in first if "functionCall" in p]
    assert signed == [True, False, False]  # read off the recording
    req0 = interactions[0].request
    transcript: list[Any] = [
        System(req0["systemInstruction"]["parts"][0]["text"]),
        User(req0["contents"][0]["parts"][0]["text"]),
    ]
    for n in range(len(interactions) - 1):
        turn = DIALECT.parse_response(interactions[n].response_json)
        transcript.append(turn.as_message())
        recorded_next = interactions[n + 1].request["contents"]
        # contents: user, then (model, user of functionResponses) per step
        results = recorded_next[2 + 2 * n]["parts"]
        for call, result in zip(turn.tool_calls, results, strict=True):
            value = result["functionResponse"]["response"]["return_value"]
            transcript.append(ToolResult(call.id, call.name, value))
        body = DIALECT.build_request(transcript, RequestOptions(model="gemini-3-flash-preview"))
        ours, theirs = body["contents"], recorded_next
        assert [c["role"] for c in ours] == [c["role"] for c in theirs]
        for mine, recorded in zip(ours, theirs, strict=True):
            if recorded["role"] == "model":
                _assert_parts_match(mine["parts"], recorded["parts"])
        # the parallel step: the first call signed with the received string, the others bare
        step = ours[1]["parts"]
        assert step[0]["thoughtSignature"] == first[0]["thoughtSignature"]
        assert [("thoughtSignature" in p) for p in step] == signed


def test_signature_on_a_plain_text_part_is_kept_in_replay() -> None:
    """The thinking_part recording's answer is [thought, text + thoughtSignature]: the
    signature rides on a visible text part (Google: a response without a function call
    carries its signature on the last part; "pass it back exactly as received"). Replay
    keeps it on that text part; the recorded follow-up sent it there too."""
    first, second = corpus.load_cassette(THINKING)
    parts = first.response_json["candidates"][0]["content"]["parts"]
    text_part = parts[-1]
    assert "thoughtSignature" in text_part and text_part.get("thought") is not True
    assert isinstance(text_part.get("text"), str) and "functionCall" not in text_part
    turn = DIALECT.parse_response(first.response_json)
    (content,) = DIALECT.replay(turn)
    assert content["parts"][-1]["thoughtSignature"] == text_part["thoughtSignature"]
    assert content["parts"][-1]["text"] == text_part["text"]
    recorded = second.request["contents"][1]["parts"][-1]
    assert same_signature(recorded["thoughtSignature"], text_part["thoughtSignature"])
