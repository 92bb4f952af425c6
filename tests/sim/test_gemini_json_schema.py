"""A function declared with ``parameters_json_schema`` through the official google-genai SDK is
called with arguments that follow that schema, not with ``{}``.

Sources: the Gemini / Vertex AI REST reference, ``FunctionDeclaration.parametersJsonSchema``:
"Describes the parameters to the function in JSON Schema format. The schema must describe an
object where the properties are the parameters to the function ... mutually exclusive with
parameters" (docs.cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration);
WIRE.md > "Gemini field-name spelling": the REST surface accepts lowerCamelCase and snake_case
alike, and google-genai sends ``parameters_json_schema`` in snake_case. The request body is
read off the wire here, so the test also proves which spelling the SDK used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

from reasonwire.sim.server import SimServer

KEY = "sim-not-a-real-key"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "note": {"type": "string"},
    },
    "required": ["city", "days", "units"],
}
PY_TYPES: dict[str, type] = {"string": str, "integer": int}


def conforms(args: dict[str, Any], schema: dict[str, Any]) -> bool:
    """A small oracle, written apart from the simulator: required keys present, no unknown
    keys, each value of its declared type and inside its enum."""
    props = schema["properties"]
    if not set(schema["required"]) <= set(args) or not set(args) <= set(props):
        return False
    for name, value in args.items():
        spec = props[name]
        if type(value) is not PY_TYPES[spec["type"]]:
            return False
        if "enum" in spec and value not in spec["enum"]:
            return False
    return True


@pytest.fixture
def wire() -> Iterator[tuple[genai.Client, list[dict[str, Any]]]]:
    sent: list[dict[str, Any]] = []

    def keep(request: httpx.Request) -> None:
        sent.append(json.loads(request.read()))

    with SimServer(seed=0) as server, httpx.Client(event_hooks={"request": [keep]}) as http:
        client = genai.Client(
            api_key=KEY,
            http_options=types.HttpOptions(
                base_url=server.root_url, api_version="v1beta", httpx_client=http
            ),
        )
        yield client, sent


def test_parameters_json_schema_shapes_the_call(
    wire: tuple[genai.Client, list[dict[str, Any]]],
) -> None:
    client, sent = wire
    lookup = types.FunctionDeclaration(
        name="forecast", description="Weather forecast.", parameters_json_schema=SCHEMA
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[lookup])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    answer = client.models.generate_content(
        model="sim-gemini", contents="What will the weather be in Lyon?", config=config
    )
    (decl,) = sent[0]["tools"][0]["functionDeclarations"]
    assert decl["parameters_json_schema"] == SCHEMA and "parameters" not in decl  # snake_case
    calls = answer.function_calls or []
    assert [c.name for c in calls] == ["forecast"]
    args = calls[0].args or {}
    assert args != {} and conforms(args, SCHEMA), args
    assert not conforms({}, SCHEMA)  # the oracle refuses what the old simulator sent
