"""The Gemini Interactions dialect against its real recordings (``cassettes-2026/
vercel__google-interactions__*``, response-only fixtures of the Vercel AI SDK).

Expected values come from the files themselves, read here with ``json`` by a small oracle
written apart from the dialect (no dialect function computes an expectation): the steps,
signatures and usage counters of each answer, and the stream's events assembled by the
documented rule (step.start opens a step, ``thought_signature`` sets the signature,
``arguments_delta`` pieces join into the call's arguments).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from reasonwire.doctor.cli import inspect_command
from reasonwire.errors import MalformedBody, TruncatedStream
from reasonwire.wire import get_dialect
from reasonwire.wire.model import Done, Turn
from tests.conformance.corpus import (
    PRESENT,
    chunks_as_sse,
    corpus_path,
    load_chunks,
    load_json,
    manifest_dialect,
    manifest_entries,
)

pytestmark = pytest.mark.skipif(not PRESENT, reason="conformance corpus not present")

DIALECT = get_dialect("interactions")
FILES = (
    sorted(n for n in manifest_entries() if manifest_dialect(n) == "interactions")
    if PRESENT
    else []
)
BODIES = [n for n in FILES if n.endswith(".json")]
STREAMS = [n for n in FILES if n.endswith(".chunks.txt")]
runner = CliRunner()
app = typer.Typer(pretty_exceptions_enable=False)
app.command()(inspect_command)


def test_manifest_lists_the_interactions_files() -> None:
    assert len(BODIES) == 2 and len(STREAMS) == 1, FILES


# -- the oracle ---------------------------------------------------------------------------


def oracle_steps(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream's answer steps, assembled by the rule in the module docstring."""
    steps: dict[int, dict[str, Any]] = {}
    args: dict[int, str] = {}
    for ev in events:
        if ev["event_type"] == "step.start":
            steps[ev["index"]] = dict(ev["step"])
        elif ev["event_type"] == "step.delta":
            delta = ev["delta"]
            if delta["type"] == "thought_signature":
                steps[ev["index"]]["signature"] = delta["signature"]
            elif delta["type"] == "arguments_delta":
                args[ev["index"]] = args.get(ev["index"], "") + delta["arguments"]
    for i, text in args.items():
        steps[i]["arguments"] = json.loads(text)
    return [steps[i] for i in sorted(steps)]


def oracle_usage(usage: dict[str, int]) -> dict[str, int]:
    """Billed input, cache reads, output and reasoning as the counters say (thought tokens
    are billed as output and reported apart: total = input + output + thought)."""
    assert usage["total_tokens"] == (
        usage["total_input_tokens"] + usage["total_output_tokens"] + usage["total_thought_tokens"]
    )
    return {
        "billed_input": usage["total_input_tokens"],
        "cache_read": usage["total_cached_tokens"],
        "output": usage["total_output_tokens"] + usage["total_thought_tokens"],
        "reasoning": usage["total_thought_tokens"],
    }


def _signatures(steps: list[dict[str, Any]]) -> list[str]:
    return [s["signature"] for s in steps if s.get("signature")]


def _completed(events: list[dict[str, Any]]) -> dict[str, Any]:
    (done,) = [e for e in events if e["event_type"] == "interaction.completed"]
    interaction: dict[str, Any] = done["interaction"]
    return interaction


def _decode(data: bytes, cuts: list[int] | None = None) -> Turn:
    dec = DIALECT.stream_decoder()
    at = 0
    for cut in sorted(cuts or []):
        dec.feed(data[at:cut])
        at = cut
    dec.feed(data[at:])
    (done,) = [e for e in dec.close() if isinstance(e, Done)]
    return done.turn


# -- whole answers ------------------------------------------------------------------------


@pytest.mark.parametrize("name", BODIES)
def test_body_parses_to_the_recorded_steps(name: str) -> None:
    body = load_json(name)
    turn = DIALECT.parse_response(corpus_path(name).read_bytes())
    assert turn.dialect == "interactions"
    assert turn.response_id == body["id"]
    assert turn.finish_reason == body["status"]
    calls = [s for s in body["steps"] if s["type"] == "function_call"]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        (s["id"], s["name"], s["arguments"]) for s in calls
    ]
    texts = [c["text"] for s in body["steps"] if s["type"] == "model_output" for c in s["content"]]
    assert turn.text == "".join(texts)
    assert [c.value for c in turn.carriers if c.opaque] == _signatures(body["steps"])
    assert turn.usage is not None
    got = turn.usage.as_dict()
    assert {k: got[k] for k in oracle_usage(body["usage"])} == oracle_usage(body["usage"])
    assert DIALECT.total_tokens(turn.usage) == body["usage"]["total_tokens"]


@pytest.mark.parametrize("name", BODIES)
def test_body_replay_is_byte_exact_and_strip_drops_reasoning(name: str) -> None:
    body = load_json(name)
    turn = DIALECT.parse_response(corpus_path(name).read_bytes())
    assert json.dumps(DIALECT.replay(turn)) == json.dumps(body["steps"])
    stripped = DIALECT.strip(turn)
    assert [s["type"] for s in stripped] == [
        s["type"] for s in body["steps"] if s["type"] != "thought"
    ]
    assert not any("signature" in s for s in stripped)


@pytest.mark.parametrize("name", BODIES)
def test_follow_up_request_sends_every_signature_back(name: str) -> None:
    """Stateless (``store: false``): the next request's input holds the answer's steps as
    received, so each signature rides on its own step."""
    from reasonwire.wire.model import RequestOptions, ToolResult, User

    body = load_json(name)
    turn = DIALECT.parse_response(corpus_path(name).read_bytes())
    results = [ToolResult(c.id, c.name, '{"temp": 8}') for c in turn.tool_calls]
    req = DIALECT.build_request(
        [User("weather in SF?"), turn.as_message(), *results],
        RequestOptions(model=body["model"], extra_body={"store": False}),
    )
    sent = req["input"][1 : 1 + len(body["steps"])]
    assert json.dumps(sent) == json.dumps(body["steps"])
    assert [s["call_id"] for s in req["input"][1 + len(body["steps"]) :]] == [
        s["id"] for s in body["steps"] if s["type"] == "function_call"
    ]
    assert [c.size for c in DIALECT.request_carriers(req) if c.opaque] == [
        len(s.encode()) for s in _signatures(body["steps"])
    ]


# -- the stream ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_stream_assembles_the_recorded_steps(name: str) -> None:
    events = load_chunks(name)
    turn = _decode(chunks_as_sse(name))
    steps = oracle_steps(events)
    assert json.dumps(DIALECT.replay(turn)) == json.dumps(steps)
    completed = _completed(events)
    assert turn.response_id == completed["id"]
    assert turn.finish_reason == completed["status"] == "requires_action"
    assert [c.value for c in turn.carriers if c.opaque] == _signatures(steps)
    assert turn.usage is not None
    got = turn.usage.as_dict()
    assert {k: got[k] for k in oracle_usage(completed["usage"])} == oracle_usage(completed["usage"])
    assert [(c.name, json.loads(c.arguments)) for c in turn.tool_calls] == [
        (s["name"], s["arguments"]) for s in steps if s["type"] == "function_call"
    ]


@pytest.mark.parametrize("name", STREAMS)
def test_stream_every_two_piece_split_gives_the_same_turn(name: str) -> None:
    data = chunks_as_sse(name)
    whole = _decode(data)
    for cut in range(len(data) + 1):
        assert _decode(data, [cut]) == whole, cut


@pytest.mark.parametrize("name", STREAMS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_stream_any_split_gives_the_same_turn(name: str, draw: st.DataObject) -> None:
    data = chunks_as_sse(name)
    cuts = draw.draw(st.lists(st.integers(0, len(data)), max_size=30))
    assert _decode(data, cuts) == _decode(data)


@pytest.mark.parametrize("name", STREAMS)
def test_stream_cut_before_completion_is_truncated_with_the_partial_turn(name: str) -> None:
    events = load_chunks(name)
    cut = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events[:-1])
    dec = DIALECT.stream_decoder()
    dec.feed(cut)
    with pytest.raises(TruncatedStream) as err:
        dec.close()
    partial = err.value.partial
    assert isinstance(partial, Turn)
    assert [c.value for c in partial.carriers if c.opaque] == _signatures(oracle_steps(events))


def test_malformed_event_is_a_clear_error() -> None:
    dec = DIALECT.stream_decoder()
    with pytest.raises(MalformedBody, match="not JSON"):
        dec.feed(b'data: {"event_type": "step.start", \n\n')
    dec = DIALECT.stream_decoder()
    with pytest.raises(MalformedBody, match=r"before its step\.start"):
        dec.feed(b'data: {"event_type": "step.stop", "index": 3}\n\n')


# -- inspect ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_inspect_json_reports_dialect_carriers_and_usage(name: str, tmp_path: Any) -> None:
    if name.endswith(".chunks.txt"):
        events = load_chunks(name)
        usage, steps = _completed(events)["usage"], oracle_steps(events)
        path = tmp_path / "stream.sse"
        path.write_bytes(chunks_as_sse(name))
    else:
        body = load_json(name)
        usage, steps = body["usage"], body["steps"]
        path = corpus_path(name)
    result = runner.invoke(app, [str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dialect"] == "interactions"
    opaque = [c for c in report["carriers"] if c["opaque"]]
    assert len(opaque) == len(_signatures(steps))
    want = oracle_usage(usage)
    assert {k: report["usage"][k] for k in want} == want
