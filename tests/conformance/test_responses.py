"""Conformance of the Responses dialect against recorded provider traffic.

The recordings are the truth. Where the recording client (the peer) re-serialised items before
sending them back, the difference is named in ``_peer_view`` and asserted, never hidden:

- the peer drops optional fields it does not model: ``status`` on input items, ``logprobs``
  on output_text parts, an empty ``content: []`` on reasoning items;
- the recorder normalised typographic quotes in request bodies (see MANIFEST.md).

Encrypted content strings are compared exactly, without any normalisation.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonwire.errors import MalformedBody
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    CarrierComplete,
    Done,
    ReasoningDelta,
    RequestOptions,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolResult,
    Turn,
    User,
    canonical_bytes,
)
from reasonwire.wire.responses import DIALECT, error_message
from reasonwire.wire.sse import iter_sse
from tests.conformance.corpus import (
    Interaction,
    chunks_as_sse,
    corpus_dir,
    corpus_files,
    load_cassette,
    load_json,
)

OPENAI = "pai__test_openai_responses__test_openai_responses_"
TOOL_CALLS = OPENAI + "thinking_with_tool_calls.yaml"
PHASE = OPENAI + "phase_streamed_on_part_start.yaml"
MODIFIED = OPENAI + "thinking_with_modified_history.yaml"
STREAM_USAGE = OPENAI + "streaming_usage.yaml"
EFFORT = OPENAI + "reasoning_effort.yaml"
DEEPSEEK = "pai__test_deepseek_responses__test_deepseek_responses_replay_own_reasoning_history.yaml"
ANTHROPIC_X = "pai__test_anthropic__test_anthropic_model_thinking_part_from_other_model.yaml"
GOOGLE_X = "pai__test_google__test_thinking_with_tool_calls_from_other_model.yaml"
VERCEL_JSON = "vercel__openai__openai-reasoning-encrypted-content.1.json"
VERCEL_CHUNKS = "vercel__openai__openai-reasoning-encrypted-content.1.chunks.txt"
PHASE_LIVE = OPENAI + "phase_live.yaml"
PART_ITER = OPENAI + "thinking_part_iter.yaml"
CONTEXT = OPENAI + "reasoning_context_default_wire_contract(default-supported).yaml"
DEEPSEEK_STREAM = "pai__test_deepseek_responses__test_deepseek_responses(function_tool_stream).yaml"
PROGRAMMATIC = "vercel__openai__programmatic-tool-calling.1.chunks.txt"

# (file, interaction) -> (reasoning carriers, opaque ones, tool calls): what each recorded
# response holds (MANIFEST.md plus reading the recordings).
EXPECTED: dict[tuple[str, int], tuple[int, int, int]] = {
    (TOOL_CALLS, 0): (1, 1, 1),
    (TOOL_CALLS, 1): (0, 0, 0),
    (PHASE, 0): (1, 1, 1),
    (PHASE, 1): (0, 0, 0),
    (MODIFIED, 0): (1, 1, 0),
    (MODIFIED, 2): (1, 1, 0),
    (STREAM_USAGE, 0): (1, 1, 1),
    (EFFORT, 0): (1, 0, 0),
    (DEEPSEEK, 0): (1, 1, 0),
    (DEEPSEEK, 1): (1, 1, 0),
    (ANTHROPIC_X, 0): (1, 1, 0),
    (GOOGLE_X, 0): (1, 1, 1),
    (GOOGLE_X, 1): (1, 1, 0),
    # cassettes-2026 (MANIFEST "cassettes-2026/"): reasoning + commentary message + call
    (PHASE_LIVE, 0): (1, 1, 1),
    (PHASE_LIVE, 1): (0, 0, 0),
    (PART_ITER, 0): (1, 1, 0),  # one reasoning item, summary over 8 parts
    (CONTEXT, 0): (0, 0, 0),  # reasoning_tokens 0: no reasoning item
    (DEEPSEEK_STREAM, 0): (1, 0, 1),  # encrypted_content null: readable only
    (DEEPSEEK_STREAM, 1): (0, 0, 0),
}

QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


# ------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------


def _interaction(name: str, i: int) -> Interaction:
    return load_cassette(name)[i]


def _decode(raw: bytes, cuts: list[int] | None = None) -> tuple[list[StreamEvent], Turn]:
    dec = DIALECT.stream_decoder()
    events: list[StreamEvent] = []
    pos = 0
    for cut in sorted(cuts or []):
        events += dec.feed(raw[pos:cut])
        pos = cut
    events += dec.feed(raw[pos:])
    events += dec.close()
    last = events[-1]
    assert isinstance(last, Done)
    return events, last.turn


def _payloads(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(ev.data) for ev in iter_sse([raw])]


def _turn_of(it: Interaction) -> tuple[Turn, dict[str, Any]]:
    """The Turn and the recorded final response object (body, or response.completed)."""
    if it.streamed:
        assert it.response_text is not None
        raw = it.response_text.encode("utf-8")
        _, turn = _decode(raw)
        final = next(p for p in _payloads(raw) if p["type"] == "response.completed")["response"]
        return turn, final
    return DIALECT.parse_response(it.response_json), it.response_json


def _responses_interactions() -> list[tuple[str, int]]:
    out = []
    for name in (*corpus_files(OPENAI + "*"), *corpus_files("pai__test_deepseek_responses__*")):
        out += [(name, i) for i in range(len(load_cassette(name)))]
    out += [(ANTHROPIC_X, 0), (GOOGLE_X, 0), (GOOGLE_X, 1)]
    return [(n, i) for n, i in out if (n, i) != (MODIFIED, 1)]  # the 400: own test below


def _peer_view(value: Any) -> Any:
    """An item as the recording peer re-serialised it (see the module docstring)."""
    if isinstance(value, str):
        return value.translate(QUOTES)
    if isinstance(value, list):
        return [_peer_view(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k in ("status", "logprobs"):
            continue
        if k == "content" and v == [] and value.get("type") == "reasoning":
            continue
        out[k] = _peer_view(v)
    return out


def _reasoning(items: list[Any]) -> list[dict[str, Any]]:
    return [x for x in items if isinstance(x, dict) and x.get("type") == "reasoning"]


def _split_vercel() -> list[bytes]:
    """The vercel chunk file holds four responses of one tool loop back to back."""
    streams: list[list[str]] = []
    for block in chunks_as_sse(VERCEL_CHUNKS).decode("utf-8").split("\n\n"):
        if not block.strip():
            continue
        if "event: response.created\n" in block:
            streams.append([])
        streams[-1].append(block + "\n\n")
    return ["".join(s).encode("utf-8") for s in streams]


def _streams() -> list[tuple[str, bytes]]:
    out = []
    for name, i in (
        (PHASE, 0),
        (PHASE, 1),
        (STREAM_USAGE, 0),
        (PART_ITER, 0),
        (DEEPSEEK_STREAM, 0),
        (DEEPSEEK_STREAM, 1),
    ):
        if corpus_files(name):
            text = _interaction(name, i).response_text
            assert text is not None
            out.append((f"{name}#{i}", text.encode("utf-8")))
    if corpus_files(VERCEL_CHUNKS):
        out += [(f"{VERCEL_CHUNKS}#{k}", s) for k, s in enumerate(_split_vercel())]
    if corpus_files(PROGRAMMATIC):
        out.append((PROGRAMMATIC, chunks_as_sse(PROGRAMMATIC)))
    return out


# ------------------------------------------------------------------------------------------
# 1. every recorded response parses; carriers and usage are what the recording shows
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "index"), _responses_interactions())
def test_recorded_response_parses(name: str, index: int) -> None:
    it = _interaction(name, index)
    assert it.status == 200
    turn, final = _turn_of(it)
    n_reasoning, n_opaque, n_calls = EXPECTED[(name, index)]
    assert len(turn.carriers) == n_reasoning
    assert sum(c.opaque for c in turn.carriers) == n_opaque
    assert len(turn.tool_calls) == n_calls

    for i, item in enumerate(final["output"]):
        if item["type"] == "reasoning":
            (carrier,) = [c for c in turn.carriers if c.path == f"output[{i}]"]
            assert carrier.kind == "reasoning_item"
            assert carrier.opaque == bool(item.get("encrypted_content"))
            texts = [p["text"] for p in item["summary"]]
            texts += [p["text"] for p in item.get("content") or []]
            for text in texts:
                assert text in (carrier.text or "")
                assert text in turn.reasoning_text
            if not it.streamed:
                assert carrier.value is item  # the very object received
        if item["type"] == "function_call":
            assert any(
                c.id == item["call_id"]
                and c.name == item["name"]
                and c.arguments == item["arguments"]
                for c in turn.tool_calls
            )

    usage = final["usage"]
    assert turn.usage is not None
    assert turn.usage.billed_input == usage["input_tokens"]
    assert turn.usage.cache_read == usage["input_tokens_details"]["cached_tokens"]
    assert turn.usage.output == usage["output_tokens"]
    assert turn.usage.reasoning == usage["output_tokens_details"]["reasoning_tokens"]
    assert turn.usage.raw == usage
    assert turn.response_id == final["id"]
    assert turn.model == final["model"]
    assert turn.finish_reason == "completed"


def test_recorded_figures() -> None:
    """A few figures read off the recordings by hand (MANIFEST: input 63 -> 147)."""
    if not corpus_files(PHASE):
        pytest.skip("corpus absent")
    first, _ = _turn_of(_interaction(PHASE, 0))
    second, _ = _turn_of(_interaction(PHASE, 1))
    assert (
        first.usage and first.usage.billed_input,
        second.usage and second.usage.billed_input,
    ) == (
        63,
        147,
    )
    assert first.text == "I\u2019ll check the capital lookup tool for \u201cPotatoLand.\u201d"
    assert second.text == "The capital of PotatoLand is **Potato City**."
    tool_loop, _ = _turn_of(_interaction(TOOL_CALLS, 1))
    assert tool_loop.usage is not None
    assert (tool_loop.usage.input_uncached, tool_loop.usage.cache_read) == (39, 2048)
    effort, _ = _turn_of(_interaction(EFFORT, 0))
    assert effort.carriers[0].value == {
        "id": "rs_67e539329f808191ae793066c0ee20800e395386ebcf3a62",
        "summary": [],
        "type": "reasoning",
    }
    assert effort.carriers[0].text is None and effort.reasoning_text == ""


def test_vercel_json_body() -> None:
    if not corpus_files(VERCEL_JSON):
        pytest.skip("corpus absent")
    body = load_json(VERCEL_JSON)
    turn = DIALECT.parse_response(json.dumps(body).encode("utf-8"))
    (carrier,) = turn.carriers
    assert carrier.opaque and carrier.value == body["output"][0]
    assert carrier.value["encrypted_content"] == body["output"][0]["encrypted_content"]
    assert turn.reasoning_text == body["output"][0]["summary"][0]["text"]
    assert turn.text == "12 + 7 = 19\n19 \u00d7 3 = 57\n57 \u00d7 10 = 570\n\nFinal result: 570"
    assert turn.usage is not None
    assert turn.usage.as_dict() == {
        "input_uncached": 865,
        "cache_read": 0,
        "cache_write": None,
        "billed_input": 865,
        "output": 163,
        "reasoning": 128,
        "cost_usd": None,
    }


# ------------------------------------------------------------------------------------------
# 2. multi-request recordings: our replay of response N is what request N+1 sent
# ------------------------------------------------------------------------------------------


def _next_input(
    name: str, n: int, options: RequestOptions | None = None
) -> tuple[list[Any], list[Any], Turn]:
    """Our input for request n+1 (user, our assistant turn, the recorded tool outputs) and the
    recorded one."""
    req = _interaction(name, n).request
    nxt = _interaction(name, n + 1).request
    turn, _ = _turn_of(_interaction(name, n))
    transcript: list[Any] = [User(m["content"]) for m in req["input"] if m.get("role") == "user"]
    transcript.append(turn.as_message())
    for item in nxt["input"]:
        if item.get("type") == "function_call_output":
            name_ = next(c.name for c in turn.tool_calls if c.id == item["call_id"])
            transcript.append(ToolResult(item["call_id"], name_, item["output"]))
    body = DIALECT.build_request(transcript, options or RequestOptions(model=req["model"]))
    return body["input"], nxt["input"], turn


@pytest.mark.parametrize(
    ("name", "n"), [(TOOL_CALLS, 0), (GOOGLE_X, 0), (PHASE, 0), (PHASE_LIVE, 0)]
)
def test_tool_loop_replay_matches_next_request(name: str, n: int) -> None:
    if not corpus_files(name):
        pytest.skip("corpus absent")
    ours, recorded, turn = _next_input(name, n)
    assert _interaction(name, n + 1).status == 200  # the provider accepted that replay
    # reasoning items: the same values, the encrypted strings byte-equal
    assert [_peer_view(x) for x in _reasoning(ours)] == [
        _peer_view(x) for x in _reasoning(recorded)
    ]
    for mine, theirs in zip(_reasoning(ours), _reasoning(recorded), strict=True):
        assert mine["encrypted_content"] == theirs["encrypted_content"]
        assert any(mine is c.value for c in turn.carriers)  # not a copy
    # the whole input, item for item, modulo the peer's dropped optional fields
    assert [_peer_view(x) for x in ours] == [_peer_view(x) for x in recorded]


def test_stream_replay_uses_done_item_not_completed_copy() -> None:
    """OpenAI re-encrypts per serialisation: response.completed carries a different (same
    length) encrypted string than output_item.done. Request 2 replayed the done copy and got
    a 200, and that is the copy our Turn carries."""
    if not corpus_files(PHASE):
        pytest.skip("corpus absent")
    raw = _interaction(PHASE, 0).response_text
    assert raw is not None
    payloads = _payloads(raw.encode("utf-8"))
    done = [p["item"] for p in payloads if p["type"] == "response.output_item.done"]
    completed = next(p for p in payloads if p["type"] == "response.completed")["response"]
    for d, c in zip(done, completed["output"], strict=True):
        assert {k: v for k, v in d.items() if k != "encrypted_content"} == {
            k: v for k, v in c.items() if k != "encrypted_content"
        }
    assert done[0]["encrypted_content"] != completed["output"][0]["encrypted_content"]
    assert len(done[0]["encrypted_content"]) == len(completed["output"][0]["encrypted_content"])
    turn, _ = _turn_of(_interaction(PHASE, 0))
    sent = _reasoning(_interaction(PHASE, 1).request["input"])[0]["encrypted_content"]
    assert turn.carriers[0].value["encrypted_content"] == done[0]["encrypted_content"] == sent


def test_phase_commentary_message_replayed_with_its_phase() -> None:
    """gpt-5.5 (phase_live): the commentary message item comes back in request 2 with
    ``phase`` kept, between its reasoning item and its function_call (MANIFEST)."""
    if not corpus_files(PHASE_LIVE):
        pytest.skip("corpus absent")
    first, second = load_cassette(PHASE_LIVE)
    turn, _ = _turn_of(first)
    (message,) = [x for x in DIALECT.replay(turn) if x.get("type") == "message"]
    assert message["phase"] == "commentary"
    recorded = [x for x in second.request["input"] if x.get("type") == "message"]
    assert [x.get("phase") for x in recorded] == ["commentary"]
    assert turn.text == first.response_json["output"][1]["content"][0]["text"]
    final, _ = _turn_of(second)
    assert second.response_json["output"][0]["phase"] == "final_answer"
    assert final.text == second.response_json["output"][0]["content"][0]["text"]


def test_added_and_done_encrypted_content_differ_and_done_is_replayed() -> None:
    """programmatic-tool-calling (MANIFEST): the reasoning item's encrypted_content in
    response.output_item.added differs from the one in .done; WIRE.md: take the done value."""
    if not corpus_files(PROGRAMMATIC):
        pytest.skip("corpus absent")
    raw = chunks_as_sse(PROGRAMMATIC)
    payloads = _payloads(raw)

    def enc(kind: str) -> str:
        (item,) = [
            p["item"] for p in payloads if p["type"] == kind and p["item"]["type"] == "reasoning"
        ]
        value = item["encrypted_content"]
        assert isinstance(value, str)
        return value

    added, done = enc("response.output_item.added"), enc("response.output_item.done")
    assert added != done
    _, turn = _decode(raw)
    (carrier,) = turn.carriers
    assert carrier.value["encrypted_content"] == done
    (replayed,) = _reasoning(DIALECT.replay(turn))
    assert replayed["encrypted_content"] == done
    completed = next(p for p in payloads if p["type"] == "response.completed")["response"]
    assert completed["reasoning"]["context"] == "all_turns"
    assert turn.usage is not None
    assert (turn.usage.billed_input, turn.usage.output, turn.usage.reasoning) == (631, 87, 37)


def test_deepseek_stream_reasoning_text_replayed_in_loop() -> None:
    """DeepSeek V4 Responses stream: reasoning arrives as response.reasoning_text.delta; the
    item (encrypted_content null, content[reasoning_text]) went back in request 2 (accepted)."""
    if not corpus_files(DEEPSEEK_STREAM):
        pytest.skip("corpus absent")
    first, second = load_cassette(DEEPSEEK_STREAM)
    assert first.response_text is not None
    raw = first.response_text.encode("utf-8")
    deltas = "".join(
        p["delta"] for p in _payloads(raw) if p["type"] == "response.reasoning_text.delta"
    )
    events, turn = _decode(raw)
    assert deltas and turn.reasoning_text == deltas
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == deltas
    (carrier,) = turn.carriers
    # the streamed done item has no encrypted_content key; the peer added ``null``: we keep
    # the item as received
    assert not carrier.opaque and "encrypted_content" not in carrier.value
    (theirs,) = _reasoning(second.request["input"])
    assert theirs["encrypted_content"] is None
    (ours,) = _reasoning(DIALECT.replay(turn))
    assert ours is carrier.value
    assert ours["id"] == theirs["id"] and ours["content"] == theirs["content"]
    assert second.status == 200


def test_modified_history_400_and_text_fallback() -> None:
    if not corpus_files(MODIFIED):
        pytest.skip("corpus absent")
    first, second, third = load_cassette(MODIFIED)
    turn = DIALECT.parse_response(first.response_json)
    (carrier,) = turn.carriers
    # request 2 replayed the reasoning item exactly as our replay does ...
    assert _reasoning(second.request["input"]) == _reasoning(DIALECT.replay(turn))
    # ... but after its message item had been replaced by edited text: refused.
    assert second.status == 400
    expected = (
        f"Item '{carrier.value['id']}' of type 'reasoning' was provided without its "
        "required following item."
    )
    assert error_message(second.response_json) == expected
    assert second.response_json["error"]["param"] == "input"
    with pytest.raises(MalformedBody, match="without its required following item"):
        DIALECT.parse_response(second.response_json)
    # We never build that half-kept shape: edited history has no native payload, so the
    # reasoning item goes with it; the strip of the original turn drops it and every id.
    edited = Assistant(text="The meaning of life is 42", carriers=turn.carriers)
    assert _reasoning(DIALECT.replay(edited)) == []
    assert DIALECT.replay(edited) == [{"role": "assistant", "content": "The meaning of life is 42"}]
    stripped = DIALECT.strip(turn)
    assert _reasoning(stripped) == [] and all("id" not in x for x in stripped)
    # request 3 (accepted) fell back to tagged text: no reasoning item, no encrypted content
    assert third.status == 200
    assert _reasoning(third.request["input"]) == []
    assert "encrypted_content" not in json.dumps(third.request["input"])
    think = third.request["input"][1]
    assert think == {"role": "assistant", "content": f"<think>\n{turn.reasoning_text}\n</think>"}
    # our foreign-history form of the same text is a readable summary item without id
    foreign = Assistant(
        text="The meaning of life is 42",
        carriers=(Carrier("responses", "summary_text", "x", turn.reasoning_text, False),),
    )
    assert DIALECT.replay(foreign)[0] == {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": turn.reasoning_text}],
    }


def test_deepseek_reasoning_history_replay() -> None:
    """DeepSeek's Responses endpoint returns readable reasoning_text and an
    ``encrypted_content`` that is just ``<response id>-<n>``. The peer sent it back as
    ``null`` (with the text and id) and was accepted; we keep the value as received."""
    if not corpus_files(DEEPSEEK):
        pytest.skip("corpus absent")
    first, second = load_cassette(DEEPSEEK)
    turn = DIALECT.parse_response(first.response_json)
    (carrier,) = turn.carriers
    assert carrier.value["encrypted_content"] == f"{first.response_json['id']}-0"
    ours = _reasoning(DIALECT.replay(turn))
    theirs = _reasoning(second.request["input"])[-1]  # earlier ones are synthetic history
    assert len(ours) == 1 and ours[0] is carrier.value
    assert ours[0]["id"] == theirs["id"]
    assert ours[0]["content"] == theirs["content"] and ours[0]["summary"] == theirs["summary"]
    assert theirs["encrypted_content"] is None
    assert ours[0]["encrypted_content"] == carrier.value["encrypted_content"]
    assert second.status == 200
    # the recorded synthetic reasoning items (summary and content both) parse as text carriers
    synth = {"output": _reasoning(first.request["input"]), "id": "x", "model": "m"}
    parsed = DIALECT.parse_response(synth)
    assert (
        parsed.reasoning_text
        == "inspect inputs\n\ninspect inputs\n\ninspect views\n\ninspect views"
    )
    assert not any(c.opaque for c in parsed.carriers)  # encrypted_content null: readable only


# ------------------------------------------------------------------------------------------
# 3. streams: the assembled Turn holds what the stream's own final events say
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "raw"), _streams(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_stream_assembles_final_state(label: str, raw: bytes) -> None:
    events, turn = _decode(raw)
    payloads = _payloads(raw)
    completed = next(p for p in payloads if p["type"] == "response.completed")["response"]
    done = {
        p["output_index"]: p["item"] for p in payloads if p["type"] == "response.output_item.done"
    }
    assert list(turn.native.items) == [done[i] for i in sorted(done)]
    assert turn.raw["id"] == completed["id"] and turn.raw["usage"] == completed["usage"]
    texts = "".join(p["text"] for p in payloads if p["type"] == "response.output_text.done")
    assert turn.text == texts == "".join(e.text for e in events if isinstance(e, TextDelta))
    args = [
        p["arguments"] for p in payloads if p["type"] == "response.function_call_arguments.done"
    ]
    assert [c.arguments for c in turn.tool_calls] == args
    streamed_args: dict[int, str] = {}
    for e in events:
        if isinstance(e, ToolCallDelta):
            streamed_args[e.index] = streamed_args.get(e.index, "") + e.arguments
    assert [streamed_args[i] for i in sorted(streamed_args)] == args
    done_kinds = ("response.reasoning_summary_text.done", "response.reasoning_text.done")
    summaries = [p["text"] for p in payloads if p["type"] in done_kinds]
    assert turn.reasoning_text == "\n\n".join(summaries)
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "".join(summaries)
    pads = [p["obfuscation"] for p in payloads if "obfuscation" in p]
    assert all(pad not in turn.reasoning_text for pad in pads if len(pad) > 6)
    announced = [e.carrier for e in events if isinstance(e, CarrierComplete)]
    assert announced == list(turn.carriers)
    # output_item.added's encrypted_content is incomplete and never used
    for p in payloads:
        if p["type"] == "response.output_item.added" and p["item"].get("encrypted_content"):
            assert all(
                c.value["encrypted_content"] != p["item"]["encrypted_content"]
                for c in turn.carriers
            )
    # the same answer read as a non-streamed body gives the same Turn (modulo the
    # re-encrypted copy of encrypted_content in response.completed)
    body = DIALECT.parse_response(completed)
    assert (body.text, body.reasoning_text, body.tool_calls, body.usage) == (
        turn.text,
        turn.reasoning_text,
        turn.tool_calls,
        turn.usage,
    )
    assert [_no_enc(c.value) for c in body.carriers] == [_no_enc(c.value) for c in turn.carriers]


def _no_enc(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != "encrypted_content"}


def test_vercel_stream_tool_loop_shape() -> None:
    if not corpus_files(VERCEL_CHUNKS):
        pytest.skip("corpus absent")
    turns = [_decode(s)[1] for s in _split_vercel()]
    assert [len(t.tool_calls) for t in turns] == [1, 1, 1, 0]
    assert [t.usage.billed_input if t.usage else None for t in turns] == [134, 221, 260, 299]
    assert turns[0].reasoning_text.startswith("**Calculating step-by-step using calculator**")
    assert turns[0].carriers[0].opaque
    assert turns[-1].text == "The final result is **570**."


def test_stream_without_completed_is_truncated() -> None:
    if not corpus_files(PHASE):
        pytest.skip("corpus absent")
    from reasonwire.errors import TruncatedStream

    raw = _interaction(PHASE, 0).response_text
    assert raw is not None
    cut = raw.index("event: response.function_call_arguments.delta")
    dec = DIALECT.stream_decoder()
    dec.feed(raw[:cut].encode("utf-8"))
    with pytest.raises(TruncatedStream) as info:
        dec.close()
    partial = info.value.partial
    assert isinstance(partial, Turn)
    assert partial.text.startswith("I\u2019ll check the capital")
    assert partial.tool_calls[0].name == "get_capital" and partial.tool_calls[0].arguments == ""
    assert partial.carriers[0].opaque  # the reasoning item was done before the cut
    assert partial.usage is None


# ------------------------------------------------------------------------------------------
# 4. properties: any split decodes the same; replay keeps carriers byte-identical
# ------------------------------------------------------------------------------------------

STREAMS = _streams()


@pytest.mark.skipif(not STREAMS, reason="conformance corpus absent")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_split_decodes_the_same(data: st.DataObject) -> None:
    label, raw = data.draw(st.sampled_from(STREAMS), label="stream")
    n = data.draw(st.integers(min_value=0, max_value=40), label="cuts")
    cuts = data.draw(st.lists(st.integers(0, len(raw)), min_size=n, max_size=n), label="at")
    _, whole = _decode(raw)
    events, split = _decode(raw, cuts)
    assert split == whole, label
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == whole.text


def test_byte_by_byte_decode() -> None:
    corpus_dir()  # skips without the corpus rather than pass on no streams
    for label, raw in STREAMS[:2]:
        _, whole = _decode(raw)
        _, bytewise = _decode(raw, list(range(len(raw))))
        assert bytewise == whole, label


@pytest.mark.parametrize(("name", "index"), _responses_interactions())
def test_replay_keeps_every_item_byte_identical(name: str, index: int) -> None:
    turn, final = _turn_of(_interaction(name, index))
    replayed = DIALECT.replay(turn)
    assert all(a is b for a, b in zip(replayed, turn.native.items, strict=True))
    body = DIALECT.build_request([User("q"), turn.as_message()], RequestOptions(model="m"))
    wire = json.loads(json.dumps(body))
    for carrier in turn.carriers:
        assert canonical_bytes(carrier.value) in canonical_bytes(body["input"])
        assert carrier.value in wire["input"]
    if not _interaction(name, index).streamed:
        assert [canonical_bytes(x) for x in replayed] == [
            canonical_bytes(x) for x in final["output"]
        ]


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
_item = st.fixed_dictionaries(
    {
        "id": st.from_regex(r"rs_[0-9a-f]{8}", fullmatch=True),
        "type": st.just("reasoning"),
        "summary": st.lists(
            st.fixed_dictionaries({"type": st.just("summary_text"), "text": _text}), max_size=3
        ),
    },
    optional={
        "encrypted_content": st.one_of(st.none(), st.text(max_size=60)),
        "content": st.lists(
            st.fixed_dictionaries({"type": st.just("reasoning_text"), "text": _text}), max_size=2
        ),
        "status": st.sampled_from(["completed", "in_progress"]),
        "x_extra": st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    },
)


@pytest.mark.no_corpus
@settings(max_examples=150, deadline=None)
@given(items=st.lists(_item, min_size=1, max_size=3), seed=st.integers(0, 2**16))
def test_replay_of_parsed_items_is_identical(items: list[dict[str, Any]], seed: int) -> None:
    rng = random.Random(seed)
    call = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}"}
    output = [*items, call] if rng.random() < 0.5 else items
    text = json.dumps({"id": "r", "model": "m", "output": output}, ensure_ascii=rng.random() < 0.5)
    turn = DIALECT.parse_response(text.encode("utf-8"))
    assert [c.value for c in turn.carriers] == items
    replayed = DIALECT.replay(turn)
    assert [canonical_bytes(x) for x in replayed] == [canonical_bytes(x) for x in output]
    for item, carrier in zip(items, turn.carriers, strict=True):
        enc = item.get("encrypted_content")
        assert carrier.opaque == (isinstance(enc, str) and enc != "")
        assert list(carrier.value) == list(item)  # key order kept
