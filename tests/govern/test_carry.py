"""Carrying bindings from SDK clients: ``reasonwire.govern.carry`` transports add the binding
and conversation headers to every call, per conversation (no process-global state), with a
fresh binding per resumed turn; the requested intent is fixed at conversation creation."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import jwt
import openai
import pytest

import reasonwire.govern
from reasonwire.errors import PolicyRefusal
from reasonwire.govern import carry
from reasonwire.govern.binding import HEADER, verify
from reasonwire.govern.carry import ATTEMPT_HEADER, CONVERSATION_HEADER, Carry
from reasonwire.govern.control import minter
from reasonwire.govern.evidence import SQLiteStore, check_intent
from reasonwire.govern.gateway import ATTEMPT_HEADER as GW_ATTEMPT
from reasonwire.govern.gateway import CONVERSATION_HEADER as GW_CONVERSATION
from tests.govern.conftest import RUNTIME, World, new_conv

RUNTIME_KEY = "runtime-holds-no-provider-key"


def _mint(world: World, conv: str, route: str, requested: Any = "medium", **kw: Any) -> Any:
    return minter(
        world.gateway.registry,
        world.gateway.policy,
        world.ring,
        conversation_id=conv,
        task_id="task-" + conv,
        runtime_id=RUNTIME[0],
        runtime_version=RUNTIME[1],
        route_id=route,
        requested=requested,
        **kw,
    )


def test_header_names_are_the_gateways() -> None:
    assert (CONVERSATION_HEADER, ATTEMPT_HEADER) == (GW_CONVERSATION, GW_ATTEMPT)
    assert reasonwire.govern.carry is carry and callable(carry)


def test_headers_replace_the_callers_and_retries_count_as_attempts() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={})

    c = carry("conv-a", "token-a")
    client = c.client(transport=httpx.MockTransport(answer))
    client.post(
        "http://gw/v1/chat/completions",
        headers={HEADER: "forged", CONVERSATION_HEADER: "conv-b", "x-stainless-retry-count": "2"},
    )
    client.get("http://gw/other")
    assert [r.headers[HEADER] for r in seen] == ["token-a", "token-a"]
    assert [r.headers[CONVERSATION_HEADER] for r in seen] == ["conv-a", "conv-a"]
    assert seen[0].headers[ATTEMPT_HEADER] == "3" and ATTEMPT_HEADER not in seen[1].headers
    with pytest.raises(RuntimeError, match="give a minter"):
        c.new_turn()
    assert c.new_turn("token-a2") == "token-a2" and c.turns == 2


def test_minted_per_turn_and_refreshed_near_expiry(world: World) -> None:
    conv = new_conv()
    calls: list[str] = []
    base = _mint(world, conv, "chat/sim-chat-all", ttl_seconds=20)  # inside the refresh margin

    def mint() -> str:
        calls.append("x")
        return str(base())

    c = Carry(conv, mint)
    assert c.turns == 0 and not calls  # nothing minted before the first request
    t1 = c.token
    t2 = c.token  # 20 s left < the 30 s margin: the same turn gets a fresh token
    assert t1 != t2 and c.turns == 1 and len(calls) == 2
    c.new_turn()
    assert c.turns == 2
    b = verify(world.ring, c.token)
    assert (b.conversation_id, b.requested) == (conv, "medium")
    with pytest.raises(ValueError):
        Carry("", "t")


def test_openai_sdk_resumed_turns_get_a_new_binding_each(world: World) -> None:
    conv = new_conv()
    c = carry(conv, _mint(world, conv, "chat/sim-chat-all", "auto"))
    client = openai.OpenAI(
        base_url=world.url + "/v1", api_key=RUNTIME_KEY, max_retries=0, http_client=c.client()
    )
    tokens = []
    for turn in range(3):
        if turn:
            c.new_turn()
        tokens.append(c.token)
        r = client.chat.completions.create(
            model="sim-chat-all",
            messages=[{"role": "user", "content": f"[{conv}] turn {turn}"}],
            extra_body={"reasoning_effort": "low"},  # forged: stripped
        )
        assert r.choices[0].message.content
    assert len(set(tokens)) == 3
    nonces = {jwt.decode(t, options={"verify_signature": False})["nonce"] for t in tokens}
    assert len(nonces) == 3
    rows = world.store.rows(conv)
    assert [(r.outcome, r.requested, r.resolved) for r in rows] == [
        ("forwarded", "auto", "high")
    ] * 3
    ups = world.recorder.find(conv)
    assert [u["body"]["reasoning_effort"] for u in ups] == ["high"] * 3
    assert all(HEADER not in u["headers"] for u in ups)  # the binding stops at the gateway


def test_two_conversations_in_one_process_never_cross(world: World) -> None:
    """Many threads, each with its own conversation and SDK client, at once: every row and
    every upstream request belongs to its own conversation, task and level."""
    levels = ["low", "medium", "high"]
    convs = [new_conv() for _ in range(12)]
    barrier = threading.Barrier(len(convs))
    errors: list[BaseException] = []

    def run(i: int, conv: str) -> None:
        try:
            c = carry(conv, _mint(world, conv, "chat/sim-chat-all", levels[i % 3]))
            client = openai.OpenAI(
                base_url=world.url + "/v1",
                api_key=RUNTIME_KEY,
                max_retries=0,
                http_client=c.client(),
            )
            barrier.wait(timeout=30)
            for turn in range(2):
                if turn:
                    c.new_turn()
                client.chat.completions.create(
                    model="sim-chat-all",
                    messages=[{"role": "user", "content": f"[{conv}] turn {turn}"}],
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(convs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for i, conv in enumerate(convs):
        rows = world.store.rows(conv)
        assert [(r.outcome, r.task_id, r.resolved) for r in rows] == [
            ("forwarded", "task-" + conv, levels[i % 3])
        ] * 2
        ups = world.recorder.find(conv)
        assert [u["body"]["reasoning_effort"] for u in ups] == [levels[i % 3]] * 2


async def test_async_sdk_client(world: World) -> None:
    convs = [new_conv(), new_conv()]
    carries = [carry(c, _mint(world, c, "chat/sim-chat-all", "low")) for c in convs]
    clients = [
        openai.AsyncOpenAI(
            base_url=world.url + "/v1",
            api_key=RUNTIME_KEY,
            max_retries=0,
            http_client=c.async_client(),
        )
        for c in carries
    ]
    await asyncio.gather(
        *(
            cl.chat.completions.create(
                model="sim-chat-all", messages=[{"role": "user", "content": f"[{conv}] hi"}]
            )
            for cl, conv in zip(clients, convs, strict=True)
        )
    )
    for conv in convs:
        assert [r.outcome for r in world.store.rows(conv)] == ["forwarded"]
    for cl in clients:
        await cl.close()


# -- the requested intent, fixed at creation -------------------------------------------------


def test_check_intent_fixes_then_refuses_another() -> None:
    store = SQLiteStore()
    check_intent(store, "c", "auto")
    check_intent(store, "c", "auto")
    with pytest.raises(PolicyRefusal) as e:
        check_intent(store, "c", "high")
    assert e.value.reason == "intent-changed"
    assert "created asking auto" in e.value.detail
    check_intent(store, "other", "high")  # per conversation


def test_gateway_refuses_a_turn_with_another_intent(world: World) -> None:
    """Created at Auto (which resolves to High): a later turn asking High resolves to the
    same level, yet is another intent, and is refused."""
    conv = new_conv()
    c = carry(conv, _mint(world, conv, "chat/sim-chat-all", "auto"))
    client = openai.OpenAI(
        base_url=world.url + "/v1", api_key=RUNTIME_KEY, max_retries=0, http_client=c.client()
    )

    def ask() -> Any:
        return client.chat.completions.create(
            model="sim-chat-all", messages=[{"role": "user", "content": f"[{conv}] hi"}]
        )

    ask()
    c.new_turn(world.token(conv, "chat/sim-chat-all", "high"))
    with pytest.raises(openai.PermissionDeniedError) as e:
        ask()
    assert "intent-changed" in str(e.value)
    c.new_turn(world.token(conv, "chat/sim-chat-all", "auto"))
    ask()
    assert [(r.outcome, r.reason) for r in world.store.rows(conv)] == [
        ("forwarded", None),
        ("refused", "intent-changed"),
        ("forwarded", None),
    ]
