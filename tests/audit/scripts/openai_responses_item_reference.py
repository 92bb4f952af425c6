"""A small program using the official openai SDK: Responses, store=true, a hand tool loop that
sends every earlier output item back as an ``item_reference`` (the way the Vercel AI SDK's
``@ai-sdk/openai`` does with store=true), never the item itself. With ``--break`` it leaves
the reasoning items out (references to the calls and messages only), which the server refuses
(the pairing rule).

It knows nothing of reasonwire: the audit points OPENAI_BASE_URL at the simulator."""

import os
import sys

from openai import OpenAI

broken = "--break" in sys.argv
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
for turn in range(2):
    if turn:
        items.append({"role": "user", "content": "And tomorrow?"})
    for _ in range(4):
        r = client.responses.create(
            model=model,
            input=items,
            tools=tools,
            store=True,
            include=["reasoning.encrypted_content"],
            reasoning={"effort": "medium", "summary": "auto"},
        )
        items += [
            {"type": "item_reference", "id": o.id}
            for o in r.output
            if not (broken and o.type == "reasoning")
        ]
        calls = [o for o in r.output if o.type == "function_call"]
        if not calls:
            print(r.output_text)
            break
        for c in calls:
            items.append({"type": "function_call_output", "call_id": c.call_id, "output": "sunny"})
