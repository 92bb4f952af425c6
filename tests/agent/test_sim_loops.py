"""Full tool loops (two tool rounds, then an answer) against the simulator's strict rules.

The simulator checks what real providers check: Anthropic thinking signatures, Responses
reasoning/item pairing and ``store``, DeepSeek's required ``reasoning_content`` after tool
calls, Gemini's ``thoughtSignature`` on the first ``functionCall``, OpenRouter's sealed
``reasoning_details``, llama.cpp's 500 on ``reasoning_content: null``. Every strategy runs
sync and async, streamed and not, and must get only 200s. A negative control per strategy
shows the rules are live: the same request with one carrier altered is refused.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from reasonwire import agent
from reasonwire.http import encode_body
from reasonwire.sim.server import SimServer
from reasonwire.wire.model import Carrier
from tests.agent.conftest import FAST, SIM_MODELS, TOOLS, Recorder, key


def _run(
    label: str, sim: SimServer, rec: Recorder, stream: bool, mode: str
) -> tuple[agent.Session, agent.RunResult, list[Any]]:
    events: list[Any] = []
    if mode == "sync":
        with rec.client() as c:
            a = agent.Agent(SIM_MODELS[label](sim, c), TOOLS)
            s = a.session("What is the weather in Paris?")
            r = a.run_session(s, stream=stream, on_event=events.append)
    else:
        import asyncio

        async def go() -> tuple[agent.Session, agent.RunResult]:
            async with rec.async_client() as c:
                a = agent.Agent(SIM_MODELS[label](sim, c), TOOLS)
                s = a.session("What is the weather in Paris?")
                return s, await a.arun_session(s, stream=stream, on_event=events.append)

        s, r = asyncio.run(go())
    return s, r, events


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("label", list(SIM_MODELS))
def test_two_tool_rounds_then_answer(
    sim_server: SimServer, recorder: Recorder, label: str, stream: bool, mode: str
) -> None:
    s, result, events = _run(label, sim_server, recorder, stream, mode)
    assert recorder.statuses == [200, 200, 200]
    assert result.rounds == 2
    assert "sunny in city value" in result.answer  # the simulator fills arguments by schema
    assert bool(events) is stream
    turns = s.turns
    assert [len(t.tool_calls) for t in turns] == [1, 1, 0]
    assert [t.tool_calls[0].name for t in turns[:2]] == ["lookup", "weather"]
    for t in turns[:2]:
        assert t.carriers, f"{label}: the simulator reasons on every tool step"
    for k in (1, 2):
        body = recorder.json(k)
        if s.strategy.kind == "server_state":
            assert s.strategy.previous_field is not None
            assert body[s.strategy.previous_field] == turns[k - 1].response_id
            assert body["store"] is True
            # only the tool result goes: the server holds the rest
            (result,) = body["input"]
            assert result["type"] in ("function_call_output", "function_result")
            assert result["call_id"] == turns[k - 1].tool_calls[0].id
        else:
            for prev in turns[:k]:
                for c in prev.carriers:
                    assert encode_body(c.value) in recorder.bodies[k], (label, k, c.kind)


def _longest(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest(v) for v in value), default=0)
    return 0


def _tamper(value: Any) -> Any:
    """``value`` with one character of its longest string changed."""
    if isinstance(value, str):
        mid = len(value) // 2
        return value[:mid] + ("A" if value[mid] != "A" else "B") + value[mid + 1 :]
    if isinstance(value, dict):
        key = max(value, key=lambda k: _longest(value[k]))
        return {**value, key: _tamper(value[key])}
    if isinstance(value, list):
        i = max(range(len(value)), key=lambda j: _longest(value[j]))
        return [*value[:i], _tamper(value[i]), *value[i + 1 :]]
    raise AssertionError(f"cannot tamper {value!r}")


def _post(rec: Recorder, i: int, content: bytes) -> httpx.Response:
    headers = {k: v for k, v in rec.headers[i].items() if k.lower() != "content-length"}
    return httpx.post(rec.urls[i], content=content, headers=headers)


def _victim(carriers: tuple[Carrier, ...]) -> Carrier | None:
    opaque = [c for c in carriers if c.opaque]
    return opaque[0] if opaque else None


@pytest.mark.parametrize(
    "label",
    [k for k in SIM_MODELS if k not in ("responses-store", "interactions-store", "chat-llamacpp")],
)
def test_altered_carrier_is_refused(sim_server: SimServer, recorder: Recorder, label: str) -> None:
    """Negative control: the rules checked above are live in the simulator."""
    s, _, _ = _run(label, sim_server, recorder, False, "sync")
    sent = recorder.bodies[1]
    victim = _victim(s.turns[0].carriers)
    if victim is None:  # a readable carrier that the route requires: leave it out
        body = json.loads(sent)
        msg = next(m for m in body["messages"] if m.get("role") == "assistant")
        kinds = [c.kind for c in s.turns[0].carriers]
        for k in kinds:
            msg.pop(k, None)
        altered = encode_body(body)
    else:
        altered = sent.replace(encode_body(victim.value), encode_body(_tamper(victim.value)))
    assert altered != sent
    resp = _post(recorder, 1, altered)
    assert resp.status_code == 400, resp.text


def test_server_state_with_unknown_previous_id_is_refused(
    sim_server: SimServer, recorder: Recorder
) -> None:
    _run("responses-store", sim_server, recorder, False, "sync")
    body = recorder.json(1)
    body["previous_response_id"] = "resp_" + "0" * 40
    resp = _post(recorder, 1, encode_body(body))
    assert resp.status_code in (400, 404), resp.text


KEEPS_ACROSS_TURNS = {"chat-deepseek"}
"""DeepSeek thinking mode: after a tool call, reasoning_content must come back in every later
request (WIRE.md; the API answers 400 without it), so that profile keeps it across turns."""


@pytest.mark.parametrize("label", sorted(KEEPS_ACROSS_TURNS))
def test_deepseek_profile_keeps_reasoning_across_turns(
    sim_server: SimServer, recorder: Recorder, label: str
) -> None:
    with recorder.client() as c:
        a = agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS)
        s1 = a.session("What is the weather in Paris?")
        a.run_session(s1)
        a.run("And in Rome?")
    assert recorder.statuses == [200] * 6
    turn2_first = recorder.bodies[3]
    texts = [c.value for t in s1.turns for c in t.carriers if c.kind == "reasoning_content"]
    assert texts and all(encode_body(v) in turn2_first for v in texts)


@pytest.mark.parametrize("label", sorted(set(SIM_MODELS) - KEEPS_ACROSS_TURNS))
def test_second_user_turn_starts_from_the_neutral_transcript(
    sim_server: SimServer, recorder: Recorder, label: str
) -> None:
    """By default the opaque tail ends with the turn: turn 2 sends no carrier of turn 1,
    and the provider still accepts it."""
    with recorder.client() as c:
        a = agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS)
        s1 = a.session("What is the weather in Paris?")
        first = a.run_session(s1)
        second = a.run("And in Rome?")
    assert recorder.statuses == [200] * 6
    assert second.rounds == 2
    turn2_first = recorder.bodies[3]
    assert b"previous_response_id" not in turn2_first
    for t in s1.turns:
        for carrier in t.carriers:
            assert encode_body(carrier.value) not in turn2_first, carrier.kind
    kinds = [type(m).__name__ for m in second.transcript]
    assert kinds == ["User", "Assistant", "ToolResult", "Assistant", "ToolResult", "Assistant"] * 2
    for m in second.transcript:
        assert getattr(m, "carriers", ()) == () and getattr(m, "native", None) is None
    assert first.transcript == second.transcript[:6]


def test_opus_47_takes_effort_as_adaptive_and_refuses_a_budget(sim_server: SimServer) -> None:
    """Claude Opus 4.7 refuses ``enabled`` + ``budget_tokens`` with a 400 (WIRE.md, the 2026
    wire; Bedrock's "Adaptive thinking" page): the agent asks it for effort as adaptive thinking
    with ``output_config.effort``, and the loop completes; the budget form is refused."""
    rec = Recorder()
    model = agent.anthropic(
        "claude-opus-4-7-sim", effort="high", base_url=sim_server.root_url, key=key,
        http_client=rec.client(), retries=FAST,
    )  # fmt: skip
    result = agent.Agent(model, tools=TOOLS).run("Find Oslo with lookup.")
    assert result.answer
    first = rec.json(0)
    assert (first["thinking"], first["output_config"]) == ({"type": "adaptive"}, {"effort": "high"})
    budget = {**first, "thinking": {"type": "enabled", "budget_tokens": 2048}}
    budget.pop("output_config")
    refused = _post(rec, 0, encode_body(budget))
    assert refused.status_code == 400 and "thinking.type.adaptive" in refused.text
