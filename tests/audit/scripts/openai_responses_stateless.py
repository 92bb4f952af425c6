"""A small program using the official openai SDK: Responses, store=false, a hand tool loop.

It knows nothing of reasonwire: the audit points OPENAI_BASE_URL at the simulator."""

import os

from openai import OpenAI

client = OpenAI()
model = os.environ.get("REASONWIRE_AUDIT_RESPONSES_MODEL", "sim-gpt")
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
items: list = [{"role": "user", "content": "What is the weather in Paris?"}]
for _ in range(4):
    r = client.responses.create(
        model=model,
        input=items,
        tools=tools,
        store=False,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "medium", "summary": "auto"},
    )
    items += r.output
    calls = [o for o in r.output if o.type == "function_call"]
    if not calls:
        print(r.output_text)
        break
    for c in calls:
        items.append({"type": "function_call_output", "call_id": c.call_id, "output": "sunny"})
