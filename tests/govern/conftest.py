"""A governed world for gateway tests: the simulator as upstream (wrapped so the test can see
exactly what reached it), a registry, a policy, a key ring and a gateway on loopback."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest
import uvicorn

from reasonwire.govern import http1
from reasonwire.govern.binding import HEADER, KeyRing
from reasonwire.govern.control import project
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import CONVERSATION_HEADER, Gateway, StoreSettings
from reasonwire.govern.levels import LEVELS, Requested
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration, RuntimeAdapter
from reasonwire.sim.app import build_app

UPSTREAM_KEY_ENV = "RW_GOVERN_TEST_UPSTREAM_KEY"
UPSTREAM_KEY = "sk-gateway-own-upstream-credential-0001"
RUNTIME = ("hermes", "1.4.2")

ANTHROPIC_BUDGET = {"low": 1024, "medium": 4096, "high": 16000}
RUNTIME_KEY = "runtime-holds-no-provider-key"  # what an agent runtime holds: no provider key
CHAT_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
ANTHROPIC_TOOLS: Any = [
    {
        "name": "lookup",
        "description": "Look up.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]
RESPONSES_TOOLS: Any = [
    {
        "type": "function",
        "name": "lookup",
        "strict": False,
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


class Recorder:
    """ASGI middleware: every request body and header set the upstream received, and the
    answer's body bytes (``answer``, filled in as it is sent)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            msg = await receive()
            chunks.append(msg.get("body", b""))
            more = msg.get("more_body", False)
        raw = b"".join(chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        with self._lock:
            self.seen.append(
                {
                    "path": scope["path"],
                    "headers": headers,
                    "body": json.loads(raw or b"{}"),
                    "text": raw.decode(),
                    "request": raw,
                    "answer": b"",
                }
            )
            entry = self.seen[-1]
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if sent:
                return await receive()  # wait for the real disconnect
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        async def keep(message: Any) -> None:
            if message["type"] == "http.response.body":
                entry["answer"] += message.get("body", b"")
            await send(message)

        await self.app(scope, replay, keep)

    def find(self, marker: str) -> list[dict[str, Any]]:
        """Requests whose body mentions ``marker`` (tests put the conversation id there)."""
        with self._lock:
            return [s for s in self.seen if marker in s["text"]]


LOGLEVEL = "warning"


class ThreadServer:
    """Any ASGI app in a background thread on a free loopback port, under uvicorn or under
    the gateway's own HTTP/1.1 server (``server="builtin"``, what ``gateway serve`` runs)."""

    def __init__(self, app: Any, server: str = "uvicorn") -> None:
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says
        # TCP, and without it every small response waits ~40 ms for a delayed ACK.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._ready = threading.Event()
        self._stopper = http1.Stopper()
        self._server: uvicorn.Server | None = None
        if server == "uvicorn":
            cfg = uvicorn.Config(
                app, log_level=LOGLEVEL, access_log=False, lifespan="on", timeout_keep_alive=120
            )
            self._server = uvicorn.Server(cfg)
            self._thread = threading.Thread(
                target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
            )
        else:
            self._thread = threading.Thread(
                target=http1.run,
                args=(app, self._sock, self._stopper),
                kwargs={
                    "limits": http1.Limits(keep_alive=120),
                    "on_close": getattr(app, "aclose", None),
                    "ready": self._ready.set,
                },
                daemon=True,
            )

    def __enter__(self) -> ThreadServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not (self._server.started if self._server else self._ready.is_set()):
            assert self._thread.is_alive() and time.monotonic() < deadline, "server did not start"
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._stopper.stop()
        self._thread.join(timeout=5)
        self._sock.close()


def make_registry(upstream: str) -> Registry:
    reg = Registry(
        adapters=[
            RuntimeAdapter(*RUNTIME, "qualified", "Q-RT-hermes-1.4.2", frozenset(LEVELS)),
            RuntimeAdapter("hermes", "1.4.1", "qualified", "Q-RT-hermes-1.4.1", frozenset(LEVELS)),
            RuntimeAdapter("hermes", "1.5.0-rc1", "discovery", "", frozenset(LEVELS)),
        ]
    )
    common: dict[str, Any] = {"upstream_base_url": upstream, "credential_env": UPSTREAM_KEY_ENV}
    for model in ("sim-deepseek", "sim-chat-all", "sim-openrouter"):
        reg.add_route(
            RouteRegistration(
                route_id=f"chat/{model}",
                provider="sim",
                model=model,
                dialect="chat",
                qualification_id=f"Q-ROUTE-{model}",
                levels={lv: {"reasoning_effort": lv} for lv in LEVELS},
                price_per_mtok={"input_uncached": 1.0, "output": 4.0},
                **common,
            )
        )
    reg.add_route(
        RouteRegistration(
            route_id="responses/sim-gpt",
            provider="sim",
            model="sim-gpt",
            dialect="responses",
            qualification_id="Q-ROUTE-sim-gpt",
            levels={lv: {"reasoning": {"effort": lv}} for lv in LEVELS},
            **common,
        )
    )
    reg.add_route(
        RouteRegistration(  # Chat Completions clients, Responses upstream (the gateway translates)
            route_id="chat-via-responses/sim-gpt",
            provider="sim",
            model="sim-gpt",
            dialect="responses",
            client_dialect="chat",
            qualification_id="Q-ROUTE-sim-gpt-chat",
            levels={lv: {"reasoning": {"effort": lv}} for lv in LEVELS},
            **common,
        )
    )
    reg.add_route(
        RouteRegistration(
            route_id="gemini/sim-gemini",
            provider="sim",
            model="sim-gemini",
            dialect="gemini",
            qualification_id="Q-ROUTE-sim-gemini",
            levels={
                lv: {"generationConfig": {"thinkingConfig": {"thinkingLevel": lv}}} for lv in LEVELS
            },
            auth_header="x-goog-api-key",
            auth_scheme="",
            upstream_base_url=upstream.removesuffix("/v1") + "/v1beta",
            credential_env=UPSTREAM_KEY_ENV,
        )
    )
    reg.add_route(
        RouteRegistration(
            route_id="interactions/sim-gemini-interactions",
            provider="sim",
            model="sim-gemini-interactions",
            dialect="interactions",
            qualification_id="Q-ROUTE-sim-gemini-interactions",
            levels={lv: {"generation_config": {"thinking_level": lv}} for lv in LEVELS},
            auth_header="x-goog-api-key",
            auth_scheme="",
            upstream_base_url=upstream.removesuffix("/v1") + "/v1beta",
            credential_env=UPSTREAM_KEY_ENV,
        )
    )
    reg.add_route(
        RouteRegistration(
            route_id="anthropic/sim-claude",
            provider="sim",
            model="sim-claude",
            dialect="anthropic",
            qualification_id="Q-ROUTE-sim-claude",
            levels={
                lv: {"thinking": {"type": "enabled", "budget_tokens": ANTHROPIC_BUDGET[lv]}}
                for lv in LEVELS
            },
            auth_header="x-api-key",
            auth_scheme="",
            **common,
        )
    )
    # A route qualified only up to medium (for the no-common-level / not-qualified cases).
    reg.add_route(
        RouteRegistration(
            route_id="chat/sim-plain",
            provider="sim",
            model="sim-plain",
            dialect="chat",
            qualification_id="Q-ROUTE-sim-plain",
            levels={"low": {}},
            **common,
        )
    )
    return reg


POLICY = OrgPolicy(allowed=frozenset({"low", "medium", "high"}), maximum="high")


@dataclass
class World:
    gateway: Gateway
    recorder: Recorder
    ring: KeyRing
    url: str
    store: SQLiteStore
    extra: dict[str, Any] = field(default_factory=dict)

    def token(self, conv: str, route_id: str, requested: Requested = "medium", **kw: Any) -> str:
        return project(
            self.gateway.registry,
            self.gateway.policy,
            self.ring,
            conversation_id=conv,
            task_id=kw.pop("task_id", "task-" + conv),
            runtime_id=kw.pop("runtime_id", RUNTIME[0]),
            runtime_version=kw.pop("runtime_version", RUNTIME[1]),
            route_id=route_id,
            requested=requested,
            **kw,
        )

    def headers(self, conv: str, token: str) -> dict[str, str]:
        return {HEADER: token, CONVERSATION_HEADER: conv}

    def openai_client(self, conv: str, route_id: str, level: Requested) -> openai.OpenAI:
        """The official openai client on the gateway, with a binding for ``level``."""
        return openai.OpenAI(
            base_url=self.url + "/v1",
            api_key=RUNTIME_KEY,
            max_retries=0,
            default_headers=self.headers(conv, self.token(conv, route_id, level)),
        )

    def anthropic_client(self, conv: str, route_id: str, level: Requested) -> anthropic.Anthropic:
        """The official anthropic client on the gateway, with a binding for ``level``."""
        return anthropic.Anthropic(
            base_url=self.url,
            api_key=RUNTIME_KEY,
            max_retries=0,
            default_headers=self.headers(conv, self.token(conv, route_id, level)),
        )


def anthropic_tool_reply(content: Any, output: str) -> list[dict[str, Any]]:
    """Turn 2 of a tool loop: the assistant's blocks as received, then the result of its
    ``tool_use`` (the third block: thinking, text, tool_use)."""
    tool = content[2]
    assert tool.type == "tool_use"
    return [
        {"role": "assistant", "content": [b.model_dump() for b in content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool.id, "content": output}],
        },
    ]


def new_conv() -> str:
    return "conv-" + uuid.uuid4().hex[:12]


ROOMY = StoreSettings(timeout=60.0)
"""The store bound for worlds whose tests are not about it. The default 2 s budget is the
operator's promise (503 past it, tested at its boundary with a fake clock in
test_evidence_first.py and with a stalled database in test_store_faults.py); a machine running
two suites beside a CPU hog once took longer than 2 s for a SQLite commit, and a hostile test
about think tags got that 503 instead of its answer."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    mp = pytest.MonkeyPatch()
    mp.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    recorder = Recorder(build_app(seed=0))
    with ThreadServer(recorder) as upstream:
        ring = KeyRing.generate("k1")
        store = SQLiteStore(tmp_path_factory.mktemp("ev") / "evidence.sqlite")
        gw = Gateway(make_registry(upstream.url + "/v1"), POLICY, ring, store, store_settings=ROOMY)
        with ThreadServer(gw.app, server="builtin") as gsrv:
            yield World(gw, recorder, ring, gsrv.url, store)
    store.close()
    mp.undo()


SUBJECT_CLAIMS: dict[str, Any] = {
    "conversation_id": "c1",
    "task_id": "t1",
    "runtime_id": RUNTIME[0],
    "runtime_version": RUNTIME[1],
    "route_id": "chat/sim-chat-all",
    "requested": "low",
    "ceiling": "medium",
}
"""One governed turn's binding subject on the test registry's chat route (the binding tests'
claims start from it)."""
