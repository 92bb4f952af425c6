"""A small program speaking Anthropic Messages with httpx by hand (two tool rounds).

``--break`` drops the thinking block from the replayed assistant turn, as buggy clients do."""

import os
import sys

import httpx

base = os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages"
headers = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
body = {
    "model": os.environ.get("REASONWIRE_AUDIT_ANTHROPIC_MODEL", "sim-claude"),
    "max_tokens": 1024,
    "thinking": {"type": "enabled", "budget_tokens": 512},
    "tools": [
        {"name": "lookup", "description": "Look up.", "input_schema": schema},
        {"name": "forecast", "description": "Forecast.", "input_schema": schema},
    ],
    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
}
results = {"lookup": "found; next tool: forecast", "forecast": "sunny"}
with httpx.Client(timeout=10) as http:
    for _ in range(4):
        r = http.post(base, json=body, headers=headers)
        if r.status_code != 200:
            print("refused:", r.status_code, r.text[:200])
            sys.exit(1)
        answer = r.json()
        uses = [b for b in answer["content"] if b["type"] == "tool_use"]
        if not uses:
            print("".join(b.get("text", "") for b in answer["content"]))
            break
        content = answer["content"]
        if "--break" in sys.argv:
            content = [b for b in content if b["type"] != "thinking"]
        body["messages"] += [
            {"role": "assistant", "content": content},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": u["id"], "content": results[u["name"]]}
                    for u in uses
                ],
            },
        ]
