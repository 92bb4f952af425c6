"""200 concurrent conversations at different levels and dialects through one gateway: no
binding, upstream request, answer or evidence row crosses from one conversation to another."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from reasonwire.govern.levels import LEVELS
from reasonwire.wire.registry import get_dialect
from tests.govern.conftest import World, new_conv
from tests.govern.oracle import found_controls

ROUTES = [
    ("chat/sim-chat-all", "/v1/chat/completions"),
    ("responses/sim-gpt", "/v1/responses"),
    ("anthropic/sim-claude", "/v1/messages"),
]
N = 200


def _text(route_id: str, raw: bytes, turn_stream: bool) -> str:
    """The answer's visible text, decoded by the route's dialect (streams assembled)."""
    dialect = get_dialect(route_id.split("/")[0])
    if not turn_stream:
        return dialect.parse_response(raw).text
    dec = dialect.stream_decoder()
    dec.feed(raw)
    done = [e for e in dec.close() if e.type == "done"]
    assert done
    return done[0].turn.text  # type: ignore[union-attr]


def _body(route_id: str, model: str, conv: str, stream: bool) -> dict[str, Any]:
    msg = [{"role": "user", "content": f"say {conv}"}]
    key = "input" if route_id.startswith("responses") else "messages"
    body: dict[str, Any] = {"model": model, key: msg, "reasoning_effort": "high"}
    if route_id.startswith("anthropic"):
        body["max_tokens"] = 20000
    if stream:
        body["stream"] = True
    return body


async def test_200_concurrent_conversations_do_not_cross(world: World) -> None:
    plan = []
    for i in range(N):
        conv = new_conv()
        route_id, path = ROUTES[i % len(ROUTES)]
        level = LEVELS[(i // len(ROUTES)) % len(LEVELS)]
        plan.append((conv, route_id, path, level, world.token(conv, route_id, level)))

    limits = httpx.Limits(max_connections=N)
    async with httpx.AsyncClient(base_url=world.url, timeout=60, limits=limits) as client:

        async def converse(conv: str, route_id: str, path: str, token: str, i: int) -> list[str]:
            model = world.gateway.registry.routes[route_id].model
            answers = []
            for turn in range(2):  # first turn and a resumed turn with the same binding
                body = _body(route_id, model, conv, stream=(i + turn) % 2 == 1)
                r = await client.post(path, json=body, headers=world.headers(conv, token))
                assert r.status_code == 200, r.text
                answers.append(_text(route_id, r.content, turn_stream=(i + turn) % 2 == 1))
            return answers

        results = await asyncio.gather(
            *(converse(c, r, p, t, i) for i, (c, r, p, _, t) in enumerate(plan))
        )

    convs = {c for c, *_ in plan}
    for (conv, route_id, _, level, _), answers in zip(plan, results, strict=True):
        route = world.gateway.registry.routes[route_id]
        for text in answers:  # each answer echoes its own conversation, and no other
            assert conv in text
            assert not any(other in text for other in convs - {conv})
        seen = world.recorder.find(conv)
        assert len(seen) == 2
        expected = found_controls(route.dialect, dict(route.levels[level]))  # type: ignore[index]
        for s in seen:
            assert found_controls(route.dialect, s["body"]) == expected
            assert not any(o in json.dumps(s["body"]) for o in convs - {conv})
        rows = world.store.rows(conv)
        assert len(rows) == 2
        for row in rows:
            assert row.outcome == "forwarded"
            assert (row.conversation_id, row.task_id) == (conv, "task-" + conv)
            assert (row.route_id, row.requested, row.resolved) == (route_id, level, level)
            assert row.route_qualification == route.qualification_id
            assert row.usage_status == "reported"
    all_rows = [r for r in world.store.rows() if r.conversation_id in convs]
    assert len(all_rows) == 2 * N
    assert len({r.call_id for r in all_rows}) == 2 * N
