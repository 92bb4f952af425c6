"""What a governed client may see of usage arrives: ``usage.prompt_tokens_details.cached_tokens``
(the cache reads a payer reconciles a bill with) passes the visible projection unchanged, JSON
and stream, equal to what the upstream answered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.govern.conftest import World, new_conv

SYSTEM = "You answer questions about cities. " * 60  # a prefix long enough to be cached


@pytest.mark.parametrize("stream", [False, True])
def test_cached_tokens_reach_the_client(world: World, stream: bool) -> None:
    conv = new_conv()
    client = world.openai_client(conv, "chat/sim-deepseek", "low")
    messages: Any = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"[{conv}] Hello."},
    ]
    if stream:
        usage = None
        with client.chat.completions.create(
            model="sim-deepseek", messages=messages, stream=True,
            stream_options={"include_usage": True},
        ) as s:  # fmt: skip
            for chunk in s:
                usage = chunk.usage or usage
    else:
        usage = client.chat.completions.create(model="sim-deepseek", messages=messages).usage
    assert usage is not None and usage.prompt_tokens_details is not None
    (up,) = world.recorder.find(conv)
    answer = up["answer"].decode()
    if stream:
        frames = [ln[6:] for ln in answer.splitlines() if ln.startswith("data: {")]
        sent = [json.loads(f)["usage"] for f in frames if json.loads(f).get("usage")][-1]
    else:
        sent = json.loads(answer)["usage"]
    cached = sent["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0
    assert usage.prompt_tokens_details.cached_tokens == cached
