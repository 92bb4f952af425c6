"""Gemini served by the gateway like the other dialects: the google-genai SDK as the client,
the simulator as upstream. Thought parts never reach the client; thought signatures do, come
back on the parts they came on and are accepted; only the signed thinking level reaches the
upstream; errors come back in Google's error shape."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google import genai
from google.genai import errors, types

from tests.govern.conftest import UPSTREAM_KEY, World, new_conv
from tests.govern.test_gateway_sdks import PROBE, RUNTIME_KEY, _forwarded

ROUTE = "gemini/sim-gemini"


def _client(world: World, conv: str, level: str = "medium") -> genai.Client:
    headers = world.headers(conv, world.token(conv, ROUTE, level))  # type: ignore[arg-type]
    return genai.Client(
        api_key=RUNTIME_KEY,
        http_options=types.HttpOptions(base_url=world.url, api_version="v1beta", headers=headers),
    )


def _config() -> types.GenerateContentConfig:
    lookup = types.FunctionDeclaration(
        name="lookup",
        description="Look up.",
        parameters=types.Schema(
            type=types.Type.OBJECT, properties={"q": types.Schema(type=types.Type.STRING)}
        ),
    )
    return types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[lookup])],
        # a forged control: the client asks for a budget; only the route's level goes up
        thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=24576),
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


@pytest.mark.parametrize("stream", [False, True])
def test_google_genai_tool_loop_through_gateway(world: World, stream: bool) -> None:
    conv = new_conv()
    client, config = _client(world, conv), _config()
    contents: list[Any] = [
        types.Content(role="user", parts=[types.Part(text=f"[{conv}] Population of Lyon?")])
    ]
    if stream:
        parts: list[types.Part] = []
        seen = []
        for chunk in client.models.generate_content_stream(
            model="sim-gemini", contents=contents, config=config
        ):
            seen.append(chunk.model_dump_json())
            assert chunk.candidates and chunk.candidates[0].content
            parts += chunk.candidates[0].content.parts or []
        model_turn = types.Content(role="model", parts=parts)
        seen_by_client = "\n".join(seen)
    else:
        first = client.models.generate_content(model="sim-gemini", contents=contents, config=config)
        assert first.candidates and first.candidates[0].content
        model_turn = first.candidates[0].content
        seen_by_client = first.model_dump_json()
    assert model_turn.parts
    assert not any(p.thought for p in model_turn.parts)  # thought parts hidden
    call_parts = [p for p in model_turn.parts if p.function_call]
    assert call_parts and call_parts[0].thought_signature  # the opaque part kept
    contents += [
        model_turn,
        types.Content(
            role="user",
            parts=[
                types.Part.from_function_response(name="lookup", response={"result": "1. " + PROBE})
            ],
        ),
    ]
    final = client.models.generate_content(model="sim-gemini", contents=contents, config=config)
    assert final.text
    ups = world.recorder.find(conv)
    assert len(ups) == 2
    upstream_thoughts = [
        p["text"]
        for c in ups[0:1]
        for p in json.loads(json.dumps(c["body"])).get("contents", [{}])[0].get("parts", [])
        if p.get("thought")
    ]
    assert not upstream_thoughts
    for u in ups:
        assert u["body"]["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "medium"}
        assert u["headers"].get("x-goog-api-key") == UPSTREAM_KEY
    sig = ups[1]["body"]["contents"][1]["parts"]
    assert any(p.get("thoughtSignature") or p.get("thought_signature") for p in sig)
    assert "thoughtsTokenCount" in seen_by_client or "thoughts_token_count" in seen_by_client
    rows = _forwarded(world, conv)
    assert [(r.dialect, r.resolved) for r in rows] == [("gemini", "medium")] * 2


def test_google_genai_sees_a_refusal_in_its_own_error_shape(world: World) -> None:
    conv = new_conv()
    client = genai.Client(
        api_key=RUNTIME_KEY,
        http_options=types.HttpOptions(base_url=world.url, api_version="v1beta"),
    )  # no binding
    with pytest.raises(errors.ClientError) as err:
        client.models.generate_content(model="sim-gemini", contents="hi")
    assert err.value.code == 403 and "binding-missing" in str(err.value)
    del conv
