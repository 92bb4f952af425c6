"""A small program using the official google-genai SDK: the Interactions API, store=false, a
hand tool loop resending every step (thought signatures included).

It knows nothing of reasonwire: the audit points GOOGLE_GEMINI_BASE_URL at the simulator.
With ``--strip`` it drops the thought steps before resending (what a careless client does)."""

import os
import sys

from google import genai

client = genai.Client()
model = os.environ.get("REASONWIRE_AUDIT_INTERACTIONS_MODEL", "sim-gemini-interactions")
strip = "--strip" in sys.argv
tools = [
    {
        "type": "function",
        "name": "lookup",
        "description": "Look a city up.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
steps: list = [{"type": "user_input", "content": [{"type": "text", "text": "Weather in Paris?"}]}]
for _ in range(4):
    got = client.interactions.create(
        model=model,
        input=steps,
        tools=tools,
        store=False,
        generation_config={"thinking_level": "medium"},
    )
    out = [s.model_dump(mode="json", exclude_none=True) for s in got.steps or []]
    steps += [s for s in out if not (strip and s["type"] == "thought")]
    calls = [s for s in out if s["type"] == "function_call"]
    if not calls:
        print(got.steps[-1].content[0].text if got.steps else "")
        break
    for c in calls:
        steps.append(
            {"type": "function_result", "call_id": c["id"], "name": c["name"], "result": "sunny"}
        )
