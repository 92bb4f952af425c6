"""The Gemini Interactions API served by the gateway: the official google-genai SDK as the
client, the simulator as upstream. A thought step's summary (readable reasoning) never reaches
the client; its signature does, comes back on its step (stateless) and is accepted; the
client's own thinking controls are removed and only the signed level reaches the upstream;
a stored interaction continues by ``previous_interaction_id``."""

from __future__ import annotations

from typing import Any

import pytest
from google import genai
from google.genai import types
from google.genai._interactions import APIStatusError  # the SDK's Interactions errors

from tests.govern.conftest import UPSTREAM_KEY, World, new_conv
from tests.govern.test_gateway_sdks import PROBE, RUNTIME_KEY, _forwarded

ROUTE = "interactions/sim-gemini-interactions"
MODEL = "sim-gemini-interactions"
TOOLS: Any = [
    {"type": "function", "name": "lookup", "description": "Look up.",
     "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}
]  # fmt: skip
FORGED: Any = {"thinking_level": "xhigh", "thinking_summaries": "auto"}
"""A client that sets the vendor's own controls: the summaries would be readable reasoning,
``xhigh`` more effort than the binding allows."""


def _client(world: World, conv: str, level: str = "medium") -> genai.Client:
    headers = world.headers(conv, world.token(conv, ROUTE, level))  # type: ignore[arg-type]
    return genai.Client(
        api_key=RUNTIME_KEY,
        http_options=types.HttpOptions(base_url=world.url, api_version="v1beta", headers=headers),
    )


def _steps_of(client: genai.Client, stream: bool, **kw: Any) -> tuple[list[Any], str]:
    """The answer's steps as the SDK hands them to the application, and what it saw."""
    if not stream:
        got = client.interactions.create(model=MODEL, tools=TOOLS, generation_config=FORGED, **kw)
        return [s.model_dump(mode="json", exclude_none=True) for s in got.steps or []], (
            got.model_dump_json()
        )
    steps: dict[int, Any] = {}
    args: dict[int, str] = {}
    seen = []
    for ev in client.interactions.create(
        model=MODEL, tools=TOOLS, generation_config=FORGED, stream=True, **kw
    ):
        seen.append(ev.model_dump_json())
        data = ev.model_dump(mode="json", exclude_none=True)
        if data["event_type"] == "step.start":
            steps[data["index"]] = data["step"]
        elif data["event_type"] == "step.delta":
            delta = data["delta"]
            if delta["type"] == "thought_signature":
                steps[data["index"]]["signature"] = delta["signature"]
            elif delta["type"] == "arguments_delta":
                args[data["index"]] = args.get(data["index"], "") + delta["arguments"]
    for i, text in args.items():
        import json

        steps[i]["arguments"] = json.loads(text)
    return [steps[i] for i in sorted(steps)], "\n".join(seen)


@pytest.mark.parametrize("stream", [False, True])
def test_stateless_tool_loop_through_gateway(world: World, stream: bool) -> None:
    conv = new_conv()
    client = _client(world, conv)
    ask = {"type": "user_input", "content": [{"type": "text", "text": f"[{conv}] Lyon?"}]}
    steps, seen_by_client = _steps_of(client, stream, input=[ask], store=False)
    thoughts = [s for s in steps if s["type"] == "thought"]
    assert thoughts and all(t.get("signature") for t in thoughts)  # the opaque state kept
    assert "summary" not in seen_by_client  # the readable summary hidden
    (call,) = [s for s in steps if s["type"] == "function_call"]
    result = {"type": "function_result", "call_id": call["id"], "name": "lookup",
              "result": "1. " + PROBE}  # fmt: skip
    final, _ = _steps_of(client, False, input=[ask, *steps, result], store=False)
    assert [s["type"] for s in final][-1] == "model_output"
    ups = world.recorder.find(conv)
    assert len(ups) == 2
    for u in ups:
        # the client's controls were removed; the binding's level was injected
        assert u["body"]["generation_config"] == {"thinking_level": "medium"}
        assert u["headers"].get("x-goog-api-key") == UPSTREAM_KEY
    sent = [s for s in ups[1]["body"]["input"] if s["type"] == "thought"]
    assert [s["signature"] for s in sent] == [t["signature"] for t in thoughts]
    rows = _forwarded(world, conv)
    assert [(r.dialect, r.resolved) for r in rows] == [("interactions", "medium")] * 2


def test_stored_interaction_continues_by_id_through_gateway(world: World) -> None:
    conv = new_conv()
    client = _client(world, conv)
    first = client.interactions.create(
        model=MODEL, tools=TOOLS, input=f"[{conv}] Population of Lyon?"
    )
    assert first.id and first.status == "requires_action"
    (call,) = [s for s in first.steps or [] if s.type == "function_call"]
    final = client.interactions.create(
        model=MODEL, tools=TOOLS, previous_interaction_id=first.id,
        input=[{"type": "function_result", "call_id": call.id, "name": "lookup",
                "result": "1. " + PROBE}],
    )  # fmt: skip
    assert final.status == "completed"
    ups = [u for u in world.recorder.seen if u["body"].get("previous_interaction_id") == first.id]
    (continued,) = ups  # the server holds the history: only the tool result goes up
    assert [s["type"] for s in continued["body"]["input"]] == ["function_result"]
    assert continued["body"]["generation_config"] == {"thinking_level": "medium"}


def test_an_altered_signature_is_refused_in_googles_error_shape(world: World) -> None:
    conv = new_conv()
    client = _client(world, conv)
    ask = {"type": "user_input", "content": [{"type": "text", "text": f"[{conv}] Lyon?"}]}
    steps, _ = _steps_of(client, False, input=[ask], store=False)
    for s in steps:
        if s["type"] == "thought":
            s["signature"] = s["signature"][:-8] + "AAAAAAA="
    (call,) = [s for s in steps if s["type"] == "function_call"]
    result = {"type": "function_result", "call_id": call["id"], "name": "lookup", "result": "x"}
    with pytest.raises(APIStatusError) as err:
        _steps_of(client, False, input=[ask, *steps, result], store=False)
    assert err.value.status_code == 400
    # the gateway's own error object: the upstream's status, in Google's shape the SDK parsed
    assert err.value.body == {"error": {"code": "INVALID_ARGUMENT", "status": "INVALID_ARGUMENT",
        "message": "the upstream answered 400 (INVALID_ARGUMENT, INVALID_ARGUMENT)"}}  # fmt: skip


def test_a_refusal_comes_in_googles_error_shape(world: World) -> None:
    client = genai.Client(
        api_key=RUNTIME_KEY,
        http_options=types.HttpOptions(base_url=world.url, api_version="v1beta"),
    )  # no binding
    with pytest.raises(APIStatusError) as err:
        client.interactions.create(model=MODEL, input="hi")
    assert err.value.status_code == 403 and "binding-missing" in str(err.value)
