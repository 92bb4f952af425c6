"""The Anthropic Messages dialect against recorded provider traffic (read from the corpus).

1. every recorded Anthropic response parses; the MANIFEST's carriers are there; usage figures
   equal the recorded ones;
2. multi-request recordings: our request N+1, built from the recorded transcript and our parse
   of response N, is the recorded request N+1 (signed blocks byte-equal, same positions);
3. streams: the assembled turn holds what the recording's events say, in the non-streamed
   block shape (key order included), and equals the non-streamed parse of the same answer;
4. hypothesis: any split of a recorded stream decodes to the same turn; replay(parse(x))
   returns every carrier as the very object received.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.wire.anthropic import BUDGETS, DIALECT
from reasonwire.wire.model import (
    Assistant,
    Carrier,
    Done,
    Message,
    Native,
    RequestOptions,
    System,
    ToolResult,
    ToolSpec,
    Turn,
    User,
    canonical_bytes,
)
from tests.conformance.corpus import (
    CORPUS,
    chunks_as_sse,
    corpus_dir,
    corpus_files,
    load_cassette,
    load_json,
    manifest_dialect,
    manifest_entries,
)
from tests.wire.test_anthropic import decode, sse_from_message

FILES = corpus_files("pai__test_anthropic__*") + corpus_files("vercel__anthropic__*")
REASONING = ("thinking", "redacted_thinking")
FOREIGN = "pai__test_anthropic__test_anthropic_model_thinking_part_from_other_model.yaml"


def _files() -> list[str]:
    return FILES or ["<corpus absent>"]


def _need(name: str) -> None:
    if name == "<corpus absent>":
        corpus_dir()  # skips with the reason


@dataclass(frozen=True)
class Recorded:
    """One recorded Anthropic answer: a JSON body or a raw SSE stream."""

    label: str
    body: Any = None
    stream: bytes | None = None


def anthropic_answers(name: str) -> list[Recorded]:
    if name.endswith(".json"):
        return [Recorded(name, body=load_json(name))]
    if name.endswith(".chunks.txt"):
        return [Recorded(name, stream=chunks_as_sse(name))]
    out = []
    for i, it in enumerate(load_cassette(name)):
        if "api.anthropic.com" not in it.uri:
            continue
        label = f"{name}#{i + 1}"
        if it.streamed:
            assert it.response_text is not None
            out.append(Recorded(label, stream=it.response_text.encode("utf-8")))
        else:
            out.append(Recorded(label, body=it.response_json))
    return out


def turn_of(rec: Recorded) -> Turn:
    if rec.stream is None:
        return DIALECT.parse_response(rec.body)
    return decode(rec.stream)[1]


def manifest_carriers() -> dict[str, str]:
    """FILE -> carriers line, from the corpus MANIFEST."""
    text = (CORPUS.parent / "MANIFEST.md").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for block in text.split("FILE: ")[1:]:
        name = block.split("\n", 1)[0].strip()
        found = re.search(r"^\s*carriers:\s*(.*)$", block, re.M)
        out[name] = found.group(1) if found else ""
    return out


def scan_stream(data: bytes) -> dict[str, Any]:
    """A deliberately naive, independent reading of a recorded stream's events."""
    payloads = [
        json.loads(line[5:])
        for line in data.decode("utf-8").splitlines()
        if line.startswith("data:")
    ]
    seen: dict[str, Any] = {"text": "", "thinking": "", "signatures": [], "redacted": []}
    usage: dict[str, Any] = {}
    for p in payloads:
        if p["type"] == "message_start":
            usage.update(p["message"]["usage"])
        elif p["type"] == "message_delta":
            usage.update(p.get("usage") or {})
            seen["stop_reason"] = p["delta"]["stop_reason"]
        elif (
            p["type"] == "content_block_start" and p["content_block"]["type"] == "redacted_thinking"
        ):
            seen["redacted"].append(p["content_block"]["data"])
        elif p["type"] == "content_block_delta":
            d = p["delta"]
            if d["type"] == "text_delta":
                seen["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                seen["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                seen["signatures"].append(d["signature"])
    seen["usage"] = usage
    return seen


# --------------------------------------------------------------------------------------------
# 1. every recorded response parses; carriers and usage as recorded
# --------------------------------------------------------------------------------------------


def test_corpus_holds_the_nine_anthropic_files() -> None:
    """Every recording the MANIFEST says speaks Anthropic is one this module reads, and the
    other way round (the count comes from the MANIFEST's provider lines, not a number here)."""
    corpus_dir()
    listed = {n for n in manifest_entries() if manifest_dialect(n) == "anthropic"}
    present = {n for n in listed if n in set(corpus_files())}
    assert present == listed, f"listed in the MANIFEST but absent: {sorted(listed - present)}"
    # the one mixed recording (a Responses answer, then an Anthropic request) is read here too
    mixed = {n for n in FILES if "-> Anthropic" in manifest_entries()[n]["provider"]}
    assert mixed == {FOREIGN}
    assert set(FILES) == listed | mixed


@pytest.mark.parametrize("name", _files())
def test_recorded_answers_parse_with_manifest_carriers_and_usage(name: str) -> None:
    _need(name)
    wanted = manifest_carriers()[name]
    answers = anthropic_answers(name)
    assert answers, f"{name}: no Anthropic answer found"
    kinds: set[str] = set()
    for rec in answers:
        turn = turn_of(rec)
        kinds |= {c.kind for c in turn.carriers}
        assert all(c.dialect == "anthropic" and c.opaque for c in turn.carriers)
        if rec.body is not None:
            blocks = rec.body["content"]
            usage = rec.body["usage"]
            assert [c.value for c in turn.carriers] == [b for b in blocks if b["type"] in REASONING]
            assert turn.text == "".join(b["text"] for b in blocks if b["type"] == "text")
            assert turn.finish_reason == rec.body["stop_reason"]
            assert turn.response_id == rec.body["id"]
        else:
            seen = scan_stream(rec.stream or b"")
            usage = seen["usage"]
        assert turn.usage is not None
        assert turn.usage.input_uncached == usage["input_tokens"]
        assert turn.usage.cache_read == usage["cache_read_input_tokens"]
        assert turn.usage.cache_write == usage["cache_creation_input_tokens"]
        assert turn.usage.output == usage["output_tokens"]
        assert turn.usage.reasoning == (usage.get("output_tokens_details") or {}).get(
            "thinking_tokens"
        )
        for c in turn.carriers:
            if c.kind == "thinking":
                assert c.value["signature"] and c.text == c.value["thinking"]
                assert c.text in turn.reasoning_text
            else:
                assert c.value["data"] and c.text is None
    if "anthropic.signature" in wanted:
        assert "thinking" in kinds, f"{name}: MANIFEST lists a signature, none found"
    if "redacted_thinking" in wanted:
        assert "redacted_thinking" in kinds, f"{name}: MANIFEST lists redacted_thinking"


def test_signature_prefixes_old_and_new_both_parse() -> None:
    corpus_dir()
    old = turn_of(
        anthropic_answers("pai__test_anthropic__test_anthropic_tool_with_thinking.yaml")[0]
    )
    new = turn_of(
        anthropic_answers("vercel__anthropic__anthropic-claude-opus-5-reasoning-high.1.json")[0]
    )
    assert old.carriers[0].value["signature"].startswith("Eq")
    assert new.carriers[0].value["signature"].startswith("CAIS")
    assert new.usage is not None and new.usage.reasoning is not None


# --------------------------------------------------------------------------------------------
# 2. requests: ours equal the recorded ones; replayed blocks byte-equal, same positions
# --------------------------------------------------------------------------------------------

_LEVEL = {budget: level for level, budget in BUDGETS.items()}


def options_for(req: dict[str, Any]) -> RequestOptions:
    """Our options for a recorded request: the effort level when our table has it."""
    extra: dict[str, Any] = {}
    effort = None
    thinking = req.get("thinking")
    adaptive = thinking is not None and thinking.get("type") == "adaptive"
    if adaptive and "output_config" not in req:
        effort = "adaptive"
    elif adaptive and set(req["output_config"]) == {"effort"}:
        effort = req["output_config"]["effort"]  # the level as the API spells it
    elif thinking and thinking.get("type") == "enabled" and thinking["budget_tokens"] in _LEVEL:
        effort = _LEVEL[thinking["budget_tokens"]]
    elif thinking is not None:
        extra["thinking"] = thinking
    if adaptive and effort is not None and set(thinking) - {"type"}:
        # thinking.display (summarized | omitted) is not an effort: sent through extra_body
        extra["thinking"] = {k: v for k, v in thinking.items() if k != "type"}
    if "tool_choice" in req:
        extra["tool_choice"] = req["tool_choice"]
    server = [t for t in req.get("tools", ()) if "input_schema" not in t]
    if server:
        extra["tools"] = server  # server tools have no neutral form
    return RequestOptions(
        model=req["model"],
        max_tokens=req["max_tokens"],
        effort=effort,
        tools=tuple(
            ToolSpec(t["name"], t.get("description", ""), t["input_schema"])
            for t in req.get("tools", ())
            if "input_schema" in t
        ),
        stream=req.get("stream", False),
        extra_body=extra,
    )


def transcript_for(req: dict[str, Any], assistants: list[Assistant]) -> list[Message]:
    """The neutral transcript behind a recorded request, with our assistant messages."""
    out: list[Message] = []
    if isinstance(req.get("system"), str):
        out.append(System(req["system"]))
    mine = iter(assistants)
    for m in req["messages"]:
        if m["role"] == "assistant":
            out.append(next(mine))
            continue
        for b in m["content"]:
            if b["type"] == "text":
                out.append(User(b["text"]))
            else:
                assert b["type"] == "tool_result"
                out.append(ToolResult(b["tool_use_id"], "", b["content"]))
    return out


def without_is_error(req: dict[str, Any]) -> dict[str, Any]:
    """The recorded request minus ``is_error: false`` on tool results (we never send it)."""
    req = json.loads(json.dumps(req))
    for m in req["messages"]:
        for b in m["content"]:
            if b.get("type") == "tool_result" and b.get("is_error") is False:
                del b["is_error"]
    return req


def _single_provider_pai() -> list[str]:
    return [n for n in corpus_files("pai__test_anthropic__*") if n != FOREIGN] or [
        "<corpus absent>"
    ]


@pytest.mark.parametrize("name", _single_provider_pai())
def test_our_requests_are_the_recorded_requests(name: str) -> None:
    _need(name)
    interactions = load_cassette(name)
    assistants: list[Assistant] = []
    for it in interactions:
        ours = DIALECT.build_request(
            transcript_for(it.request, assistants), options_for(it.request)
        )
        assert ours == without_is_error(it.request)
        if it.streamed:
            assert it.response_text is not None
            assistants.append(decode(it.response_text.encode("utf-8"))[1].as_message())
        else:
            assistants.append(DIALECT.parse_response(it.response_json).as_message())


def _multi() -> list[str]:
    names = [
        n
        for n in corpus_files("pai__test_anthropic__*")
        if n != FOREIGN and len(load_cassette(n)) > 1
    ]
    return names or ["<corpus absent>"]


@pytest.mark.parametrize("name", _multi())
def test_replayed_reasoning_blocks_are_the_recorded_ones(name: str) -> None:
    _need(name)
    first, second = load_cassette(name)[:2]
    turn = DIALECT.parse_response(first.response_json)
    replayed = DIALECT.replay(turn)
    recorded = [m for m in second.request["messages"] if m["role"] == "assistant"]
    assert len(recorded) == 1 and len(replayed) == 1
    ours_blocks, rec_blocks = replayed[0]["content"], recorded[0]["content"]
    assert [b["type"] for b in ours_blocks] == [b["type"] for b in rec_blocks]
    positions = [i for i, b in enumerate(rec_blocks) if b["type"] in REASONING]
    assert positions, f"{name}: request 2 replays no reasoning block"
    assert positions == [i for i, b in enumerate(ours_blocks) if b["type"] in REASONING]
    for i in positions:
        assert ours_blocks[i] == rec_blocks[i]
        opaque = "signature" if rec_blocks[i]["type"] == "thinking" else "data"
        assert ours_blocks[i][opaque].encode("utf-8") == rec_blocks[i][opaque].encode("utf-8")
        assert any(ours_blocks[i] is c.value for c in turn.carriers)


def test_foreign_history_reaches_anthropic_without_reasoning_blocks() -> None:
    corpus_dir()
    first, second = load_cassette(FOREIGN)[:2]
    assert "api.openai.com" in first.uri and "api.anthropic.com" in second.uri
    recorded = second.request
    for m in recorded["messages"]:
        assert all(b["type"] not in REASONING for b in m["content"])

    output = first.response_json["output"]
    reasoning = [item for item in output if item["type"] == "reasoning"]
    visible = "".join(
        part["text"]
        for item in output
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )
    foreign = Assistant(
        text=visible,
        carriers=tuple(
            Carrier(
                "responses",
                "reasoning_item",
                f"output[{output.index(item)}]",
                item,
                True,
                "".join(s["text"] for s in item["summary"]),
            )
            for item in reasoning
        ),
        native=Native("responses", tuple(output)),
    )
    assert foreign.carriers, "response 1 should hold a reasoning item"
    for keep in (True, False):
        ours = DIALECT.build_request(
            transcript_for(recorded, [foreign]),
            dataclasses.replace(options_for(recorded), keep_carriers=keep),
        )
        assistant = [m for m in ours["messages"] if m["role"] == "assistant"]
        assert assistant == [{"role": "assistant", "content": [{"type": "text", "text": visible}]}]
        assert all(b["type"] not in REASONING for m in ours["messages"] for b in m["content"])
        # everything but the assistant turn is the recorded request (pai adds tagged text)
        assert ours["system"] == recorded["system"]
        assert ours["thinking"] == recorded["thinking"]
        assert [m for m in ours["messages"] if m["role"] == "user"] == [
            m for m in recorded["messages"] if m["role"] == "user"
        ]
        # the visible answer is sent as the recorded request sends it
        assert recorded["messages"][1]["content"][-1] == {"type": "text", "text": visible}


# --------------------------------------------------------------------------------------------
# 3. streams: assembled state as recorded, shaped like the non-streamed answer
# --------------------------------------------------------------------------------------------


def _streams() -> list[str]:
    return [n for n in FILES if any(r.stream for r in anthropic_answers(n))] or ["<corpus absent>"]


@pytest.mark.parametrize("name", _streams())
def test_streamed_turn_holds_what_the_events_say(name: str) -> None:
    _need(name)
    for rec in anthropic_answers(name):
        assert rec.stream is not None
        seen = scan_stream(rec.stream)
        turn = decode(rec.stream)[1]
        assert turn.text == seen["text"]
        assert turn.reasoning_text == seen["thinking"]
        assert turn.finish_reason == seen["stop_reason"]
        thinking = [c for c in turn.carriers if c.kind == "thinking"]
        redacted = [c for c in turn.carriers if c.kind == "redacted_thinking"]
        assert [c.value["signature"] for c in thinking] == seen["signatures"]
        assert [c.value["data"] for c in redacted] == seen["redacted"]
        assert turn.raw["content"] == list(turn.native.items)
        assert turn.raw["usage"]["output_tokens"] == seen["usage"]["output_tokens"]


def test_streamed_thinking_block_has_the_non_streamed_key_order() -> None:
    corpus_dir()
    body = load_json("vercel__anthropic__anthropic-claude-opus-5-reasoning-high.1.json")
    reference = [list(b) for b in body["content"] if b["type"] == "thinking"]
    assert reference == [["type", "thinking", "signature"]]
    for name in _streams():
        for rec in anthropic_answers(name):
            turn = decode(rec.stream or b"")[1]
            for c in turn.carriers:
                if c.kind == "thinking":
                    assert list(c.value) == reference[0]


def _bodies() -> list[str]:
    return [n for n in FILES if any(r.body is not None for r in anthropic_answers(n))] or [
        "<corpus absent>"
    ]


@pytest.mark.parametrize("name", _bodies())
def test_stream_of_a_recorded_answer_equals_its_parse(name: str) -> None:
    _need(name)
    for rec in anthropic_answers(name):
        if rec.body is None:
            continue
        ref = DIALECT.parse_response(rec.body)
        for piece in (1, 5, 64):
            turn = decode(sse_from_message(rec.body, piece=piece))[1]
            assert (turn.text, turn.reasoning_text) == (ref.text, ref.reasoning_text)
            assert turn.tool_calls == ref.tool_calls
            assert turn.carriers == ref.carriers
            assert turn.usage is not None and ref.usage is not None
            assert turn.usage.as_dict() == ref.usage.as_dict()
            assert list(turn.native.items) == list(ref.native.items)
            assert (turn.finish_reason, turn.response_id) == (ref.finish_reason, ref.response_id)


# --------------------------------------------------------------------------------------------
# 4. hypothesis: splits and replay
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", _streams())
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_split_of_a_recorded_stream_decodes_the_same(name: str, data: st.DataObject) -> None:
    _need(name)
    for rec in anthropic_answers(name):
        raw = rec.stream or b""
        whole = decode(raw)
        cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=40), label="cuts")
        split = decode(raw, cuts)
        assert split[1] == whole[1]
        assert [e for e in split[0] if not isinstance(e, Done)] == [
            e for e in whole[0] if not isinstance(e, Done)
        ]


@pytest.mark.parametrize("name", _files())
def test_replay_of_parse_returns_every_carrier_object(name: str) -> None:
    _need(name)
    for rec in anthropic_answers(name):
        turn = turn_of(rec)
        content = DIALECT.replay(turn)[0]["content"]
        received = rec.body["content"] if rec.body is not None else turn.raw["content"]
        assert canonical_bytes(content) == canonical_bytes(received)
        for c in turn.carriers:
            index = int(c.path[len("content[") : -1])
            assert content[index] is c.value
            assert canonical_bytes(content[index]) == canonical_bytes(received[index])
        stripped = DIALECT.strip(turn)
        assert [b for b in stripped[0]["content"] if b["type"] in REASONING] == []


# --------------------------------------------------------------------------------------------
# 5. server tools (2026 recordings): provider-run blocks are neither carriers nor calls
# --------------------------------------------------------------------------------------------

SERVER_STREAM = "pai__test_anthropic__test_anthropic_code_execution_tool_stream.yaml"
ADVISOR = "pai__test_anthropic__test_anthropic_advisor_tool_message_replay.yaml"


def recorded_stream_blocks(data: bytes) -> dict[int, dict[str, Any]]:
    """Content blocks read naively off a recorded stream: each start block, with its
    ``input_json_delta`` pieces joined and decoded into ``input``."""
    blocks: dict[int, dict[str, Any]] = {}
    parts: dict[int, str] = {}
    for line in data.decode("utf-8").splitlines():
        if not line.startswith("data:"):
            continue
        p = json.loads(line[5:])
        if p["type"] == "content_block_start":
            blocks[p["index"]] = p["content_block"]
        elif p["type"] == "content_block_delta" and p["delta"]["type"] == "input_json_delta":
            parts[p["index"]] = parts.get(p["index"], "") + p["delta"]["partial_json"]
    for i, raw in parts.items():
        blocks[i]["input"] = json.loads(raw)
    return blocks


def test_server_tool_stream_keeps_the_blocks_and_asks_the_agent_to_run_nothing() -> None:
    corpus_dir()
    (it,) = load_cassette(SERVER_STREAM)
    assert it.response_text is not None
    raw = it.response_text.encode("utf-8")
    events, turn = decode(raw)
    expected = recorded_stream_blocks(raw)
    server = [b for b in expected.values() if b["type"] == "server_tool_use"]
    results = [b for b in expected.values() if b["type"].endswith("_tool_result")]
    assert server and results
    assert server[0]["input"] == {"command": 'echo "65465-6544 * 65464-6+1.02255" | bc -l'}
    # not a call the agent runs, not reasoning
    assert turn.tool_calls == ()
    assert not [e for e in events if type(e).__name__ == "ToolCallDelta"]
    assert [c.kind for c in turn.carriers] == ["thinking"]
    # kept in order, each block in the non-streamed shape (same keys, same order)
    native = list(turn.native.items)
    assert [b["type"] for b in native] == [expected[i]["type"] for i in sorted(expected)]
    for i in sorted(expected):
        assert list(native[i]) == list(expected[i])
        if expected[i]["type"] not in ("thinking", "text"):  # those fill from their deltas
            assert canonical_bytes(native[i]) == canonical_bytes(expected[i])
    replayed = DIALECT.replay(turn)[0]["content"]
    assert canonical_bytes(replayed) == canonical_bytes(native)
    stripped = DIALECT.strip(turn)[0]["content"]
    assert [b["type"] for b in stripped] == [b["type"] for b in native if b["type"] != "thinking"]


def test_advisor_answer_holds_a_signature_only_thinking_block_and_no_tool_call() -> None:
    corpus_dir()
    first = load_cassette(ADVISOR)[0].response_json
    turn = DIALECT.parse_response(first)
    (thinking,) = turn.carriers
    assert thinking.value["thinking"] == "" and thinking.value["signature"]
    assert turn.reasoning_text == "" and turn.tool_calls == ()
    assert turn.text == "".join(b["text"] for b in first["content"] if b["type"] == "text")
    # billed input is usage.input_tokens (plus cache fields), never the sum of iterations[]
    assert turn.usage is not None
    assert turn.usage.billed_input == first["usage"]["input_tokens"]
    assert turn.usage.billed_input != sum(x["input_tokens"] for x in first["usage"]["iterations"])
    assert turn.usage.reasoning == first["usage"]["output_tokens_details"]["thinking_tokens"]
