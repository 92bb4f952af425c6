"""A Chat Completions client on a Responses upstream: the gateway translates the request, the
answer and the stream, injects the signed effort, keeps the reasoning items in the vault and
puts them back whole on the next request. The official openai SDK's chat client, a two-round
tool loop, streaming and not, against the simulator's Responses model (which checks the
encrypted items and their pairing)."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import pytest

from tests.govern.conftest import World, new_conv
from tests.govern.test_gateway_sdks import CHAT_TOOLS, PROBE, RUNTIME_KEY, _forwarded, _mentions

ROUTE = "chat-via-responses/sim-gpt"


def _ask(client: openai.OpenAI, messages: list[Any], stream: bool) -> tuple[Any, str]:
    kw: Any = {
        "model": "sim-gpt",
        "messages": messages,
        "tools": CHAT_TOOLS,
        "reasoning_effort": "low",
    }  # fmt: skip  (a forged control: stripped)
    if not stream:
        answer = client.chat.completions.create(**kw)
        return answer.choices[0].message, answer.model_dump_json()
    chunks = list(client.chat.completions.create(stream=True, **kw))
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls: dict[int, dict[str, Any]] = {}
    for c in chunks:
        for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            empty = {"name": "", "arguments": ""}
            call = calls.setdefault(tc.index, {"id": tc.id, "type": "function", "function": empty})
            call["function"]["name"] += (tc.function.name or "") if tc.function else ""
            call["function"]["arguments"] += (tc.function.arguments or "") if tc.function else ""
    msg: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return openai.types.chat.ChatCompletionMessage.model_validate(msg), "\n".join(
        c.model_dump_json() for c in chunks
    )


@pytest.mark.parametrize("stream", [False, True])
def test_chat_client_two_round_tool_loop_on_responses(world: World, stream: bool) -> None:
    conv = new_conv()
    client = openai.OpenAI(
        base_url=world.url + "/v1",
        api_key=RUNTIME_KEY,
        max_retries=0,
        default_headers=world.headers(conv, world.token(conv, ROUTE, "medium")),
    )
    messages: list[Any] = [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]
    seen_by_client = ""
    for round_ in range(2):
        msg, raw = _ask(client, messages, stream)
        seen_by_client += raw
        assert msg.tool_calls, msg
        messages.append(msg.model_dump(exclude_none=True))
        result = "next tool: lookup" if round_ == 0 else "2. " + PROBE
        messages.append({"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": result})
    final, raw = _ask(client, messages, stream)
    ups = world.recorder.find(conv)
    assert len(ups) == 3
    word = final.content  # read back by the upstream from the vaulted encrypted reasoning
    assert word and word != "NONE" and not _mentions(seen_by_client, word)
    seen_by_client += raw
    for hidden in ("encrypted_content", "summary_text", "reasoning_text", "rs_"):
        assert hidden not in seen_by_client
    # Upstream: Responses bodies, the signed effort only, the reasoning items put back whole.
    assert all(u["path"] == "/v1/responses" for u in ups)
    assert [u["body"]["reasoning"] for u in ups] == [{"effort": "medium"}] * 3
    assert all("reasoning_effort" not in u["body"] for u in ups)
    first_items = [i for i in ups[1]["body"]["input"] if i.get("type") == "reasoning"]
    assert first_items and all(i.get("encrypted_content") for i in first_items)
    assert json.dumps(first_items[0]) in json.dumps(ups[2]["body"]["input"])
    deadline = time.monotonic() + 30  # a stream's row is completed when the relay finishes
    while [r.outcome for r in world.store.rows(conv)] != ["forwarded"] * 3:
        assert time.monotonic() < deadline, world.store.rows(conv)
        time.sleep(0.02)
    rows = _forwarded(world, conv)
    assert [r.carriers_reattached for r in rows] == [0, 1, 2]
    assert [(r.usage_status, r.stream) for r in rows] == [("reported", stream)] * 3
