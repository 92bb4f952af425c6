"""``Agent.stream`` / ``Agent.astream``: typed events, the same result as ``run``, errors raised
to the iterating caller, and nothing left running after an early break: the caller pulls the
run along in its own thread, so the run stops where the caller stops."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import Any

import httpx
import pytest

from reasonwire import agent
from reasonwire.errors import BadRequest, CredentialError
from reasonwire.sim.server import SimServer
from reasonwire.wire.model import StreamEvent, TextDelta
from tests.agent.conftest import FAST, SIM_MODELS, TOOLS, Recorder

TASK = "What is the weather in Paris?"


def _check_order(events: list[agent.AgentEvent], result: agent.RunResult) -> None:
    """Per request: deltas, then its usage, then its calls; results after calls; result last."""
    assert isinstance(events[-1], agent.ResultEvent)
    assert sum(isinstance(e, agent.ResultEvent) for e in events) == 1
    requests = [e for e in events if isinstance(e, agent.RequestUsage)]
    assert [e.request for e in requests] == list(range(result.requests))
    assert tuple(e.usage for e in requests) == result.usage
    last_seen = -1
    for e in events[:-1]:
        if isinstance(e, agent.TextEvent | agent.ReasoningEvent):
            assert e.request == last_seen + 1  # a delta belongs to the request in flight
        if isinstance(e, agent.RequestUsage):
            last_seen = e.request
        if isinstance(e, agent.ToolCallEvent):
            assert e.request == last_seen
        if isinstance(e, agent.ToolResultEvent):
            assert e.request == last_seen
    calls = [e.call for e in events if isinstance(e, agent.ToolCallEvent)]
    outs = [e.result for e in events if isinstance(e, agent.ToolResultEvent)]
    assert [c.id for c in calls] == [r.tool_call_id for r in outs]
    assert len(calls) == result.rounds
    final = result.requests - 1
    text = "".join(e.text for e in events if isinstance(e, agent.TextEvent) and e.request == final)
    assert text == result.answer


@pytest.mark.parametrize("label", list(SIM_MODELS))
def test_sync_stream_yields_typed_events_and_the_result_of_run(
    sim_server: SimServer, label: str
) -> None:
    with Recorder().client() as c:
        expected = agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS).run(TASK)
        bot = agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS)
        raw: list[StreamEvent] = []
        threads: set[threading.Thread] = set()

        def seen(ev: StreamEvent) -> None:
            raw.append(ev)
            threads.add(threading.current_thread())

        events = list(bot.stream(TASK, on_event=seen))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.as_dict() == expected.as_dict()
    assert result.transcript == expected.transcript == bot.transcript
    _check_order(events, result)
    assert any(isinstance(e, TextDelta) for e in raw)  # on_event still sees the wire events
    assert threads == {threading.current_thread()}  # the run is pulled, no worker thread


@pytest.mark.parametrize("label", list(SIM_MODELS))
def test_async_stream_yields_typed_events_and_the_result_of_run(
    sim_server: SimServer, label: str
) -> None:
    async def go() -> tuple[agent.RunResult, list[agent.AgentEvent]]:
        rec = Recorder()
        async with rec.async_client() as c:
            expected = await agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS).arun(TASK)
            bot = agent.Agent(SIM_MODELS[label](sim_server, c), TOOLS)
            return expected, [e async for e in bot.astream(TASK)]

    expected, events = asyncio.run(go())
    result = events[-1].result  # type: ignore[union-attr]
    assert result.as_dict() == expected.as_dict()
    _check_order(events, result)


def test_reasoning_is_streamed_where_visible(sim_server: SimServer) -> None:
    bot = agent.Agent(SIM_MODELS["anthropic-thinking"](sim_server, None), TOOLS)
    assert any(isinstance(e, agent.ReasoningEvent) and e.text for e in bot.stream(TASK))
    hidden = agent.Agent(SIM_MODELS["anthropic-redacted"](sim_server, None), TOOLS)
    assert not any(isinstance(e, agent.ReasoningEvent) for e in hidden.stream(TASK))


# -- early break ------------------------------------------------------------------------------


def test_breaking_out_stops_the_run_and_leaves_no_thread(
    sim_server: SimServer, recorder: Recorder
) -> None:
    before = threading.active_count()
    with recorder.client() as c:
        bot = agent.Agent(SIM_MODELS["anthropic-thinking"](sim_server, c), TOOLS)
        for ev in bot.stream(TASK):
            if isinstance(ev, agent.TextEvent | agent.ReasoningEvent):
                break
        assert threading.active_count() == before
        assert len(recorder.bodies) == 1  # the loop did not go on to the next request
        assert bot.transcript == ()  # an unfinished run changes nothing
        # The agent is usable again afterwards.
        events = list(bot.stream(TASK))
    assert isinstance(events[-1], agent.ResultEvent) and threading.active_count() == before


def test_breaking_out_at_a_tool_call_runs_no_tool(
    sim_server: SimServer, recorder: Recorder
) -> None:
    ran: list[str] = []

    def lookup(city: str) -> str:
        """Look a city up."""
        ran.append(city)
        return "found"

    with recorder.client() as c:
        bot = agent.Agent(SIM_MODELS["chat-deepseek"](sim_server, c), [lookup, TOOLS[1]])
        stream = bot.stream(TASK)
        for ev in stream:
            if isinstance(ev, agent.ToolCallEvent):
                break
        stream.close()  # what a for loop's break does when the iterator is collected
    assert len(recorder.bodies) == 1 and ran == []  # the run stopped where the caller did
    assert bot.transcript == ()


PARALLEL_SSE = b"".join(
    b"data: " + json.dumps(chunk).encode() + b"\n\n"
    for chunk in (
        {"id": "c-1", "object": "chat.completion.chunk", "model": "m", "choices": [{
            "index": 0, "finish_reason": None, "delta": {"role": "assistant", "tool_calls": [
                {"index": 0, "id": "c1", "type": "function",
                 "function": {"name": "a", "arguments": "{}"}},
                {"index": 1, "id": "c2", "type": "function",
                 "function": {"name": "b", "arguments": "{}"}}]}}]},
        {"id": "c-1", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {}}]},
    )
) + b"data: [DONE]\n\n"  # fmt: skip


def test_breaking_out_between_parallel_calls_runs_no_further_call() -> None:
    """The sync driver runs a step's calls one after the other, each result an event before
    the next call: a caller that stops at the first result stops the second call."""
    ran: list[str] = []

    def a() -> str:
        ran.append("a")
        return "A"

    def b() -> str:
        ran.append("b")
        return "B"

    def sse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=PARALLEL_SSE, headers={"content-type": "text/event-stream"}
        )

    with httpx.Client(transport=httpx.MockTransport(sse)) as c:
        model = agent.openai_compatible(base_url="http://mock/v1", model="m", http_client=c)
        stream = agent.Agent(model, [a, b]).stream("go")
        seen: list[str] = []
        for ev in stream:
            seen.append(ev.type)
            if isinstance(ev, agent.ToolResultEvent):
                break
        stream.close()
    assert seen == ["usage", "tool_call", "tool_call", "tool_result"] and ran == ["a"]


def test_a_stream_never_iterated_starts_nothing(sim_server: SimServer, recorder: Recorder) -> None:
    with recorder.client() as c:
        it = agent.Agent(SIM_MODELS["chat-deepseek"](sim_server, c), TOOLS).stream(TASK)
        it.close()
    assert recorder.bodies == []


def test_async_early_break_stops_the_run(sim_server: SimServer, recorder: Recorder) -> None:
    """Closing the iterator stops the run: no further request, and no task left running (the
    only tasks a close leaves are the event loop's finalisers of httpx's own byte iterators,
    which end within a few loop ticks without I/O)."""

    async def go() -> tuple[set[asyncio.Task[Any]], agent.Agent]:
        async with recorder.async_client() as c:
            bot = agent.Agent(SIM_MODELS["gemini"](sim_server, c), TOOLS)
            async with contextlib.aclosing(bot.astream(TASK)) as it:
                async for ev in it:
                    if isinstance(ev, agent.TextEvent | agent.ReasoningEvent):
                        break
            others: set[asyncio.Task[Any]] = set()
            for _ in range(20):  # loop ticks, not time
                others = asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]
                if not others:
                    break
                await asyncio.sleep(0)
            return others, bot

    others, bot = asyncio.run(go())
    assert others == set()
    assert len(recorder.bodies) == 1 and bot.transcript == ()


# -- errors -----------------------------------------------------------------------------------


def _bad_option(sim: SimServer, c: Any) -> agent.Model:
    return agent.openai_compatible(
        base_url=sim.base_url, model="sim-o-strict", extra_body={"temperature": 0.2},
        http_client=c, retries=FAST,
    )  # fmt: skip


def test_sync_stream_raises_the_runs_errors(sim_server: SimServer) -> None:
    with pytest.raises(BadRequest) as err:
        list(agent.Agent(_bad_option(sim_server, None), TOOLS).stream(TASK))
    assert err.value.status == 400
    with pytest.raises(CredentialError):  # no ANTHROPIC_API_KEY: raised from the worker
        list(agent.Agent(agent.anthropic("sim-claude", base_url=sim_server.root_url)).stream("hi"))
    limited = agent.Agent(SIM_MODELS["gemini"](sim_server, None), TOOLS, max_rounds=1)
    with pytest.raises(agent.ToolLoopLimit):
        list(limited.stream(TASK))

    def boom(ev: StreamEvent) -> None:
        raise ValueError("from on_event")

    bot = agent.Agent(SIM_MODELS["gemini"](sim_server, None), TOOLS)
    with pytest.raises(ValueError, match="from on_event"):
        list(bot.stream(TASK, on_event=boom))


def test_an_error_inside_a_200_stream_is_raised_typed() -> None:
    sse = b'data: {"error": {"message": "overloaded mid-answer", "type": "server_error"}}\n\n'

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=sse, headers={"content-type": "text/event-stream"})

    async def drain(model: agent.Model) -> None:
        async for _ in agent.Agent(model, TOOLS).astream("go"):
            pass

    def model(c: Any) -> agent.Model:
        return agent.openai_compatible(base_url="http://mock/v1", model="m", http_client=c)

    with httpx.Client(transport=httpx.MockTransport(answer)) as c:
        with pytest.raises(agent.StreamFailed) as err:
            list(agent.Agent(model(c), TOOLS).stream("go"))
        assert (err.value.status, err.value.provider_message) == (200, "overloaded mid-answer")
        with pytest.raises(agent.StreamFailed):
            agent.Agent(model(c), TOOLS).run("go", stream=True)

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as c:
            await drain(model(c))

    with pytest.raises(agent.StreamFailed):
        asyncio.run(go())


def test_events_before_an_error_are_delivered_first(sim_server: SimServer) -> None:
    limited = agent.Agent(SIM_MODELS["anthropic-thinking"](sim_server, None), TOOLS, max_rounds=1)
    seen: list[str] = []
    with pytest.raises(agent.ToolLoopLimit):
        for ev in limited.stream(TASK):
            seen.append(ev.type)
    assert seen.count("tool_result") == 1 and seen.count("usage") == 2


def test_async_stream_raises_the_runs_errors(sim_server: SimServer) -> None:
    async def go(bot: agent.Agent) -> None:
        async for _ in bot.astream(TASK):
            pass

    with pytest.raises(BadRequest):
        asyncio.run(go(agent.Agent(_bad_option(sim_server, None), TOOLS)))
    with pytest.raises(agent.ToolLoopLimit):
        asyncio.run(go(agent.Agent(SIM_MODELS["gemini"](sim_server, None), TOOLS, max_rounds=1)))


# -- the result -------------------------------------------------------------------------------


def test_result_usage_per_request_and_total(sim_server: SimServer) -> None:
    result = agent.Agent(SIM_MODELS["anthropic-thinking"](sim_server, None), TOOLS).run(TASK)
    assert result.requests == 3 and all(u is not None for u in result.usage)
    total = result.total_usage
    for f in ("input_uncached", "cache_read", "cache_write", "output", "reasoning"):
        per = [getattr(u, f) for u in result.usage if u is not None]
        present = [p for p in per if p is not None]
        assert getattr(total, f) == (sum(present) if present else None)  # absent stays None
    assert total.cache_read  # the simulator's prompt cache is hit on the later requests
    as_json = result.as_dict()
    assert as_json["total_usage"] == total.as_dict()
    assert len(as_json["usage"]) == 3


@pytest.mark.parametrize("label", list(SIM_MODELS))
def test_messages_are_the_dialects_own_and_the_provider_takes_them(
    sim_server: SimServer, recorder: Recorder, label: str
) -> None:
    """``result.messages()`` is what the dialect builds for the neutral transcript; sent as
    the history of a new turn, the provider accepts it."""
    with recorder.client() as c:
        model = SIM_MODELS[label](sim_server, c)
        result = agent.Agent(model, TOOLS, system="Be brief.").run(TASK)
        fields = result.messages()
        body = model.dialect.build_request(
            list(result.transcript),
            agent.events.RequestOptions(model=model.name),
            model.route.profile,
        )
        for k, v in fields.items():
            assert body[k] == v
        assert set(fields) & {"messages", "input", "contents"}
        # A new turn built on this history (neutral) goes through.
        follow = agent.Agent(model, TOOLS, system="Be brief.")
        follow._transcript[:] = list(result.transcript)
        assert follow.run("And in Rome?").rounds == 2
    assert all(s == 200 for s in recorder.statuses)


def test_messages_for_another_dialect(sim_server: SimServer) -> None:
    result = agent.Agent(SIM_MODELS["chat-deepseek"](sim_server, None), TOOLS).run(TASK)
    assert "messages" in result.messages()
    assert "input" in result.messages("responses")
    assert "contents" in result.messages("gemini")
    anth = result.messages("anthropic")
    assert [m["role"] for m in anth["messages"]][:2] == ["user", "assistant"]


def test_old_fields_still_work() -> None:
    r = agent.RunResult("a", (), 0, ())
    assert (r.answer, r.transcript, r.rounds, r.usage) == ("a", (), 0, ())
    assert r.total_usage == agent.events.Usage()
