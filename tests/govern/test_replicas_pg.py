"""Two gateway replicas on one PostgreSQL database (evidence store and vault): a conversation
moves between replicas mid tool loop and keeps its reasoning carriers (the simulator's
DeepSeek behaviour answers 400 without them), its fixed effort, and one evidence trail.

Needs ``Gateway(..., vault=...)``; skipped until the gateway takes it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest

from reasonwire.govern import carry
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.control import project
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.stores import PostgresEvidenceStore, PostgresVault
from reasonwire.sim.app import build_app
from tests import pg
from tests.govern.conftest import (
    POLICY,
    ROOMY,
    RUNTIME,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    Recorder,
    ThreadServer,
    make_registry,
    new_conv,
)

TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."


@dataclass
class Replicas:
    urls: list[str]
    gateways: list[Gateway]
    stores: list[PostgresEvidenceStore]
    ring: KeyRing
    recorder: Recorder

    def token(self, conv: str, requested: Any, route: str = "chat/sim-deepseek") -> str:
        return project(
            self.gateways[0].registry,
            self.gateways[0].policy,
            self.ring,
            conversation_id=conv,
            task_id="task-" + conv,
            runtime_id=RUNTIME[0],
            runtime_version=RUNTIME[1],
            route_id=route,
            requested=requested,
        )

    def client(self, replica: int, conv: str, token: str) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=self.urls[replica] + "/v1",
            api_key="runtime-holds-no-provider-key",
            max_retries=0,
            http_client=carry(conv, token).client(),
        )


@pytest.fixture(scope="module")
def replicas() -> Iterator[Replicas]:
    dsn = pg.fresh_dsn()
    mp = pytest.MonkeyPatch()
    mp.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    recorder = Recorder(build_app(seed=0))
    ring = KeyRing.generate("k1")
    opened: list[Any] = []
    with ThreadServer(recorder) as upstream:
        gws, servers, stores = [], [], []
        for _ in range(2):
            store, vault = PostgresEvidenceStore(dsn), PostgresVault(dsn)
            opened += [store, vault]
            stores.append(store)
            gw = Gateway(
                make_registry(upstream.url + "/v1"),
                POLICY,
                ring,
                store,
                vault=vault,
                store_settings=ROOMY,
            )
            gws.append(gw)
            servers.append(ThreadServer(gw.app).__enter__())
        try:
            yield Replicas([s.url for s in servers], gws, stores, ring, recorder)
        finally:
            for s in servers:
                s.__exit__(None, None, None)
            for o in opened:
                o.close()
    mp.undo()
    pg.drop(dsn)


def _tool_loop(r: Replicas, conv: str, first: int, second: int, level: str = "low") -> str:
    token = r.token(conv, level)
    messages: list[Any] = [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]
    a = r.client(first, conv, token).chat.completions.create(
        model="sim-deepseek", messages=messages, tools=TOOLS
    )
    msg = a.choices[0].message
    assert msg.tool_calls and "reasoning_content" not in a.model_dump_json()
    messages += [
        msg.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "1. " + PROBE},
    ]
    b = r.client(second, conv, r.token(conv, level)).chat.completions.create(
        model="sim-deepseek", messages=messages, tools=TOOLS
    )
    return str(b.choices[0].message.content)


def test_a_conversation_moves_between_replicas_with_its_carriers(replicas: Replicas) -> None:
    conv = new_conv()
    answer = _tool_loop(replicas, conv, 0, 1)
    ups = replicas.recorder.find(conv)
    assert len(ups) == 2
    assert "reasoning_content" in str(ups[1]["body"]["messages"][1])  # re-attached by replica 1
    assert answer != "NONE" and answer in str(ups[1]["body"])  # the word from the vault
    for store in replicas.stores:  # one trail, seen from either replica
        rows = store.rows(conv)
        assert [(x.outcome, x.resolved) for x in rows] == [("forwarded", "low")] * 2
        assert rows[1].carriers_reattached == 1


def test_effort_fixed_on_one_replica_holds_on_the_other(replicas: Replicas) -> None:
    conv = new_conv()
    msg = [{"role": "user", "content": f"[{conv}] hi"}]
    replicas.client(
        0, conv, replicas.token(conv, "low", "chat/sim-chat-all")
    ).chat.completions.create(model="sim-chat-all", messages=msg)
    other = replicas.client(1, conv, replicas.token(conv, "high", "chat/sim-chat-all"))
    with pytest.raises(openai.PermissionDeniedError) as e:
        other.chat.completions.create(model="sim-chat-all", messages=msg)
    assert "effort-changed" in str(e.value)
    assert [x.reason for x in replicas.stores[0].rows(conv)] == [None, "effort-changed"]


def test_concurrent_conversations_across_replicas(replicas: Replicas) -> None:
    convs = [new_conv() for _ in range(8)]
    results: dict[str, str] = {}
    errors: list[BaseException] = []

    def run(i: int, conv: str) -> None:
        try:
            results[conv] = _tool_loop(replicas, conv, i % 2, (i + 1) % 2, ("low", "high")[i % 2])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(convs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for i, conv in enumerate(convs):
        assert results[conv] != "NONE"
        rows = replicas.stores[1].rows(conv)
        assert [(x.task_id, x.resolved) for x in rows] == [
            ("task-" + conv, ("low", "high")[i % 2])
        ] * 2
