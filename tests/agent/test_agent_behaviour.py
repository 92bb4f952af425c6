"""Retry safety, typed refusals, effort and extra_body on every request, parallel calls,
keys, tools and the cross-turn policy."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from reasonwire import agent
from reasonwire.errors import BadRequest, ConfigError, TransportError
from reasonwire.http import RetryPolicy
from reasonwire.sim.server import SimServer
from reasonwire.wire.model import ToolSpec
from tests.agent.conftest import FAST, SIM_MODELS, TEST_KEY, TOOLS, Recorder, key
from tests.agent.test_recorded_loops import CASES
from tests.conformance.corpus import load_cassette

# -- retry safety -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_a_500_then_success_resends_byte_identical_bodies(name: str) -> None:
    interactions = load_cassette(name)
    make_model, tools, stream, _ = CASES[name]
    sent: list[bytes] = []
    queue = list(interactions)
    failed_once: set[int] = set()

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        n = len(interactions) - len(queue)
        if n not in failed_once:  # every request fails once first
            failed_once.add(n)
            return httpx.Response(500, json={"error": {"message": "upstream hiccup"}})
        it = queue.pop(0)
        if it.streamed:
            assert it.response_text is not None
            return httpx.Response(
                200,
                content=it.response_text.encode(),
                headers={"content-type": "text/event-stream"},
            )
        return httpx.Response(200, json=it.response_json)

    with httpx.Client(transport=httpx.MockTransport(handler)) as client:
        bot = agent.Agent(make_model(client), tools)
        bot.run("recorded task", stream=stream)
    assert len(sent) == 2 * len(interactions)
    for i in range(0, len(sent), 2):
        assert sent[i] == sent[i + 1]
    assert len(set(sent)) == len(interactions)


def test_a_failed_step_leaves_the_session_and_transcript_unchanged(
    sim_server: SimServer,
) -> None:
    """No retries: the second request dies; resuming the session sends the same bytes."""
    sent: list[bytes] = []
    inner = httpx.HTTPTransport()
    broken = {"on": False}

    class Flaky(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request.content)
            if broken["on"]:
                broken["on"] = False
                raise httpx.ConnectError("connection reset", request=request)
            return inner.handle_request(request)

    with httpx.Client(transport=Flaky()) as client:
        model = agent.anthropic(
            "sim-claude", base_url=sim_server.root_url, key=key, http_client=client, retries=0
        )
        bot = agent.Agent(model, TOOLS)
        s = bot.session("What is the weather in Paris?")
        turn = agent.transport.send(model, s.prepare())
        s.commit(turn)
        s.add_results([agent.tools.run_call(bot.tools, c) for c in turn.tool_calls])
        broken["on"] = True
        with pytest.raises(TransportError):
            bot.run_session(s)
        assert len(s.turns) == 1 and bot.transcript == ()
        result = bot.run_session(s)
    assert sent[1] == sent[2]
    assert result.rounds == 2 and len(bot.transcript) == 6


# -- rejected options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "extra", "word"),
    [
        ("sim-o-strict", {"temperature": 0.2}, "temperature"),
        ("sim-plain", {"reasoning_effort": "high"}, "reasoning_effort"),
    ],
)
def test_a_rejected_option_is_a_typed_fatal_error(
    sim_server: SimServer, recorder: Recorder, model_id: str, extra: dict[str, Any], word: str
) -> None:
    with recorder.client() as c:
        model = agent.openai_compatible(
            base_url=sim_server.base_url, model=model_id, extra_body=extra, http_client=c,
            retries=RetryPolicy(retries=3, backoff_base=0.0, jitter=0.0),
        )  # fmt: skip
        with pytest.raises(BadRequest) as err:
            agent.Agent(model, TOOLS).run("What is the weather in Paris?")
    assert err.value.status == 400
    assert word in (err.value.provider_message or "")
    assert len(recorder.bodies) == 1  # not retried


def test_responses_context_option_refused_by_the_model(
    sim_server: SimServer, recorder: Recorder
) -> None:
    with recorder.client() as c:
        model = agent.openai(
            "sim-gpt", base_url=sim_server.base_url, key=key, http_client=c, retries=FAST,
            extra_body={"reasoning": {"context": "all_turns"}},
        )  # fmt: skip
        with pytest.raises(BadRequest) as err:
            agent.Agent(model, TOOLS).run("hi")
    assert err.value.status == 400 and len(recorder.bodies) == 1
    assert json.loads(recorder.bodies[0])["reasoning"] == {
        "effort": "medium",
        "summary": "auto",
        "context": "all_turns",
    }


# -- effort and extra_body ------------------------------------------------------------------


@pytest.mark.parametrize("label", list(SIM_MODELS))
def test_extra_body_reaches_every_request(
    sim_server: SimServer, recorder: Recorder, label: str
) -> None:
    with recorder.client() as c:
        base = SIM_MODELS[label](sim_server, c)
        from dataclasses import replace

        model = replace(base, extra_body={"metadata": {"run": "agent-test"}})
        agent.Agent(model, TOOLS).run("What is the weather in Paris?")
    assert len(recorder.bodies) == 3
    for i in range(3):
        assert recorder.json(i)["metadata"] == {"run": "agent-test"}


def _first_body(model: agent.Model) -> Any:
    return json.loads(agent.Agent(model, TOOLS).session("hi").prepare().body)


def test_effort_defaults_map_to_each_dialect_field() -> None:
    assert _first_body(agent.openai("m"))["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert _first_body(agent.openai("m"))["store"] is True
    orr = _first_body(agent.openrouter("m"))
    assert "reasoning" not in orr and orr["store"] is False
    assert orr["include"] == ["reasoning.encrypted_content"]
    assert _first_body(agent.openrouter("m", api="chat"))["model"] == "m"
    assert "reasoning" not in _first_body(agent.openrouter("m", api="chat"))
    assert _first_body(agent.anthropic("m"))["thinking"] == {"type": "adaptive"}
    assert "thinking" not in _first_body(agent.anthropic("m", effort="none"))
    gem = _first_body(agent.gemini("m", effort="low"))
    assert gem["generationConfig"]["thinkingConfig"]["thinkingLevel"] == "low"
    ds = _first_body(agent.from_route("deepseek", "deepseek-reasoner", effort="high"))
    assert ds["thinking"] == {"type": "enabled"}
    assert _first_body(agent.openai("m", effort="xhigh"))["reasoning"]["effort"] == "xhigh"
    nostore = _first_body(agent.openai("m", store=False, extra_body={"include": ["x"]}))
    assert nostore["include"] == ["x", "reasoning.encrypted_content"]


def test_key_is_read_at_call_time_and_never_kept() -> None:
    calls: list[int] = []

    def source() -> str:
        calls.append(1)
        return TEST_KEY

    model = agent.anthropic("m", key=source)
    assert TEST_KEY not in repr(model) and not calls
    assert model.headers()["x-api-key"] == TEST_KEY and calls == [1]
    body = agent.Agent(model, TOOLS).session("hi").prepare().body
    assert TEST_KEY.encode() not in body


def test_unknown_profile_and_missing_base_url_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        agent.openai_compatible(base_url="http://127.0.0.1:1/v1", model="m", profile="nope")
    with pytest.raises(ConfigError):
        agent.Agent(agent.from_route("sim", "m"), TOOLS).session("hi").prepare()


# -- parallel tool calls ----------------------------------------------------------------------

PARALLEL: dict[str, tuple[Any, Any, Any]] = {
    "chat": (
        lambda c: agent.openai_compatible(
            base_url="http://mock/v1", model="m", profile="deepseek", http_client=c
        ),
        {"id": "c-1", "object": "chat.completion", "model": "m", "choices": [{
            "index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "reasoning_content": "both at once",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}},
                ]}}]},
        {"id": "c-2", "object": "chat.completion", "model": "m", "choices": [{
            "index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "done"}}]},
    ),
    "responses": (
        lambda c: agent.openai("m", store=False, key=key, http_client=c, base_url="http://mock"),
        {"id": "resp_1", "object": "response", "status": "completed", "model": "m", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC"},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "a",
             "arguments": "{}", "status": "completed"},
            {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "b",
             "arguments": "{}", "status": "completed"}]},
        {"id": "resp_2", "object": "response", "status": "completed", "model": "m", "output": [
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "done", "annotations": []}]}]},
    ),
    "anthropic": (
        lambda c: agent.anthropic("m", key=key, http_client=c, base_url="http://mock"),
        {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
         "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 5},
         "content": [
            {"type": "thinking", "thinking": "both", "signature": "SIG"},
            {"type": "tool_use", "id": "c1", "name": "a", "input": {}},
            {"type": "tool_use", "id": "c2", "name": "b", "input": {}}]},
        {"id": "msg_2", "type": "message", "role": "assistant", "model": "m",
         "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 5},
         "content": [{"type": "text", "text": "done"}]},
    ),
    "gemini": (
        lambda c: agent.gemini("m", key=key, http_client=c, base_url="http://mock"),
        {"candidates": [{"finishReason": "STOP", "content": {"role": "model", "parts": [
            {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": "U0lH"},
            {"functionCall": {"name": "b", "args": {}}}]}}]},
        {"candidates": [{"finishReason": "STOP",
                         "content": {"role": "model", "parts": [{"text": "done"}]}}]},
    ),
}  # fmt: skip


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("dialect", list(PARALLEL))
def test_parallel_calls_of_one_step_all_run_and_go_back_together(dialect: str, mode: str) -> None:
    make, first, final = PARALLEL[dialect]
    sent: list[Any] = []
    answers = [first, final]

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=answers[len(sent) - 1])

    ran: list[str] = []
    if mode == "sync":

        def a() -> str:
            ran.append("a")
            return "A"

        def b() -> str:
            ran.append("b")
            return "B"

        with httpx.Client(transport=httpx.MockTransport(handler)) as c:
            result = agent.Agent(make(c), [a, b]).run("go")
    else:
        both = asyncio.Event()

        async def a() -> str:  # waits for b: finishes only if both run concurrently
            ran.append("a")
            await asyncio.wait_for(both.wait(), 2)
            return "A"

        async def b() -> str:
            ran.append("b")
            both.set()
            return "B"

        async def go() -> agent.RunResult:
            async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as c:
                return await agent.Agent(make(c), [a, b]).arun("go")

        result = asyncio.run(go())
    assert sorted(ran) == ["a", "b"] and result.answer == "done"
    follow = json.dumps(sent[1])
    assert follow.index('"A"') < follow.index('"B"')  # results in call order
    calls = [m for m in result.transcript if type(m).__name__ == "ToolResult"]
    assert [(m.name, m.content) for m in calls] == [("a", "A"), ("b", "B")]  # type: ignore[attr-defined]
    if dialect in ("anthropic", "gemini"):  # one user message holding both results
        msgs = sent[1]["messages" if dialect == "anthropic" else "contents"]
        assert len(msgs[-1]["content" if dialect == "anthropic" else "parts"]) == 2


# -- tools and policy -----------------------------------------------------------------------


def test_tool_schema_from_signature_and_failures_go_to_the_model() -> None:
    @agent.tool
    def find(city: str, limit: int = 3, tags: list[str] | None = None) -> list[str]:
        """Find places in a city.

        More text that is not the description."""
        raise ValueError("no such city")

    assert find.spec == ToolSpec(
        name="find",
        description="Find places in a city.",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "limit": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["city"],
        },
    )
    from reasonwire.wire.model import ToolCall

    res = agent.tools.run_call({"find": find}, ToolCall("c1", "find", '{"city": "X"}'))
    assert res.content == "error: ValueError: no such city"
    unknown = agent.tools.run_call({}, ToolCall("c2", "nope", "{}"))
    assert unknown.content.startswith("error: unknown tool")


def test_no_branch_on_a_provider_or_route_name_in_agent() -> None:
    """Strategies come from dialects and route data: no comparison against a name literal
    other than the dialect and api choices themselves."""
    import ast
    from pathlib import Path

    allowed = {"chat", "responses", "server_state", "replay", "consumed"}  # dialects, verdicts
    root = Path(agent.__file__).parent
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    if isinstance(operand, ast.Constant) and isinstance(operand.value, str):
                        assert operand.value in allowed, (path.name, operand.value)
