"""The LiteLLM hook keeps the gateway's promise against a hostile upstream and a hostile client,
on the real proxy (its own venv, ``make lane-litellm``).

The upstream is :class:`tests.govern.hostile.HostileUpstream`: it plants every hidden-reasoning
shape (a unique canary each, ``shared/WIRE.md``), ``<think>`` text across chunk borders, echoes
the proxy's upstream key in headers (``set-cookie`` too) and error bodies, answers 500 and 429
so LiteLLM retries, and counts what reached it. The client is raw HTTP (headers and bytes as
sent) or the openai SDK. Checked from outside the hook: no canary and no key in anything the
client receives; one evidence row per request the upstream saw (LiteLLM's own retries
included) and one per refused attempt; the bound model is the only one the upstream is asked
for; client routing and retry fields never reach LiteLLM's router.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from reasonwire.govern.binding import HEADER, KeyRing
from reasonwire.govern.control import project
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.govern.litellm_hook import check_proxy_config
from tests.govern.conftest import ThreadServer
from tests.govern.hostile import (
    Canaries,
    HostileUpstream,
    Reply,
    Seen,
    Visible,
    chat_json,
    chat_stream,
    chat_text_stream,
    new_conv,
    upstream_key,
)
from tests.govern.test_litellm_proxy import PYTHON, ROOT, RUNTIME

pytestmark = pytest.mark.skipif(
    not (PYTHON.exists() and (PYTHON.parent / "litellm").exists()),
    reason=f"no LiteLLM venv at {PYTHON.parent.parent}: make lane-litellm",
)

KEY_ENV = "RW_LITELLM_HOSTILE_KEY"
BOUND, OTHER = "h-chat", "h-other"
RETRIES = 2  # router_settings.num_retries below: 1 + 2 upstream attempts per failing model

POLICY_MODULE = f"""
from reasonwire.govern.levels import LEVELS
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration, RuntimeAdapter

REGISTRY = Registry(
    adapters=[RuntimeAdapter("hermes", "1.4.2", "qualified", "Q-RT-hermes", frozenset(LEVELS))]
)
for model in ({BOUND!r}, {OTHER!r}):
    REGISTRY.add_route(
        RouteRegistration(
            route_id="chat/" + model,
            provider="hostile",
            model=model,
            dialect="chat",
            upstream_base_url="http://litellm-calls-the-upstream/v1",
            qualification_id="Q-ROUTE-" + model,
            levels={{lv: {{"reasoning_effort": lv}} for lv in LEVELS}},
            price_per_mtok={{"input_uncached": 1.0, "output": 4.0}},
        )
    )
POLICY = OrgPolicy(allowed=frozenset({{"low", "medium", "high"}}), maximum="high")
"""


def _config(upstream: str, extra_general: str = "") -> str:
    models = "".join(
        f"""
  - model_name: {m}
    litellm_params:
      model: openai/{m}
      api_base: {upstream}
      api_key: os.environ/{KEY_ENV}
"""
        for m in (BOUND, OTHER)
    )
    return f"""model_list:{models}
router_settings:
  num_retries: {RETRIES}
  retry_after: 0
  disable_cooldowns: true
  fallbacks: [{{"{BOUND}": ["{OTHER}"]}}]
litellm_settings:
  callbacks: reasonwire.govern.litellm_hook.proxy_handler
general_settings:
  {extra_general or "disable_spend_logs: true"}
"""


@dataclass
class World:
    url: str
    ring: KeyRing
    db: Path
    upstream: HostileUpstream
    key: str
    master_key: str
    registry: Any
    policy: Any
    log: Path

    def token(self, conv: str, requested: Any = "medium", route: str = BOUND) -> str:
        return project(
            self.registry,
            self.policy,
            self.ring,
            conversation_id=conv,
            task_id="task-" + conv,
            runtime_id=RUNTIME[0],
            runtime_version=RUNTIME[1],
            route_id="chat/" + route,
            requested=requested,
        )

    def headers(self, conv: str, **extra: str) -> dict[str, str]:
        return {
            "authorization": f"Bearer {self.master_key}",
            HEADER: self.token(conv),
            "x-reasonwire-conversation": conv,
            **extra,
        }

    def body(self, conv: str, **extra: Any) -> dict[str, Any]:
        return {
            "model": BOUND,
            "messages": [{"role": "user", "content": f"[{conv}] Where is Lyon?"}],
            **extra,
        }

    def post(self, conv: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        return httpx.post(
            self.url + "/v1/chat/completions",
            json=body,
            headers=self.headers(conv, **headers),
            timeout=60,
        )

    def stream(self, conv: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        with httpx.stream(
            "POST",
            self.url + "/v1/chat/completions",
            json={**body, "stream": True},
            headers=self.headers(conv),
            timeout=60,
        ) as r:
            return r.status_code, dict(r.headers), r.read()

    def rows(self, conv: str, n: int, timeout: float = 20.0) -> list[EvidenceRow]:
        deadline = time.monotonic() + timeout
        while True:
            store = SQLiteStore(self.db)
            try:
                rows = store.rows(conv)
            finally:
                store.close()
            settled = all(r.outcome != "pending" for r in rows)  # completions nobody waits for
            if (len(rows) >= n and settled) or time.monotonic() > deadline:
                time.sleep(0.3)  # then once more: a late extra row must show too
                store = SQLiteStore(self.db)
                try:
                    return store.rows(conv)
                finally:
                    store.close()
            time.sleep(0.1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(
    tmp: Path, upstream_url: str, key: str, general: str = ""
) -> tuple[subprocess.Popen[bytes], str, Path, str]:
    """The proxy process, its URL and log (it may exit at once: the caller checks)."""
    name = "rw_hostile_policy_" + uuid.uuid4().hex[:8]
    (tmp / f"{name}.py").write_text(POLICY_MODULE)
    cfg = tmp / "config.yaml"
    cfg.write_text(_config(upstream_url + "/v1", general))
    port = _free_port()
    log = tmp / "litellm.log"
    master = "sk-" + secrets.token_hex(32)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))},
        "PYTHONPATH": os.pathsep.join([str(tmp), str(ROOT / "src")]),
        KEY_ENV: key,
        "REASONWIRE_POLICY": name,
        "REASONWIRE_KEYS": str(tmp / "keys"),
        "REASONWIRE_EVIDENCE": str(tmp / "evidence.sqlite"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_TELEMETRY": "False",
        "LITELLM_MASTER_KEY": master,
    }
    args = [str(PYTHON.parent / "litellm"), "--config", str(cfg), "--host", "127.0.0.1"]
    args += ["--port", str(port), "--num_workers", "1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return proc, f"http://127.0.0.1:{port}", log, master


def _wait(proc: Any, url: str, log: Path) -> bool:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(url + "/health/liveliness", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the LiteLLM proxy did not start: {log.read_text()[-3000:]}")


def _stop(proc: Any) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _keys(tmp: Path) -> KeyRing:
    ring = KeyRing.generate("k1")
    ring.save_dir(tmp / "keys")
    for f in (tmp / "keys").glob("*.key.pem"):
        f.unlink()  # the proxy verifies: public keys only
    SQLiteStore(tmp / "evidence.sqlite").close()
    return ring


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("litellm-hostile")
    ring = _keys(tmp)
    ns: dict[str, Any] = {}
    exec(POLICY_MODULE, ns)
    upstream = HostileUpstream()
    key = upstream_key()
    with ThreadServer(upstream) as server:
        proc, url, log, master = _start(tmp, server.url, key)
        try:
            if not _wait(proc, url, log):
                pytest.fail(f"the LiteLLM proxy exited: {log.read_text()[-3000:]}")
            yield World(
                url,
                ring,
                tmp / "evidence.sqlite",
                upstream,
                key,
                master,
                ns["REGISTRY"],
                ns["POLICY"],
                log,
            )
        finally:
            _stop(proc)


# -- what the client must never see -----------------------------------------------------------


def _echo_key(reply: Reply) -> Any:
    """``reply`` with the request's own Authorization echoed in response headers."""

    def answer(seen: Seen) -> Reply:
        auth = seen.headers.get("authorization", "")
        headers = [*reply.headers, ("x-echo-auth", auth), ("set-cookie", "s=" + auth)]
        return Reply(
            status=reply.status,
            body=reply.body,
            chunks=reply.chunks,
            content_type=reply.content_type,
            headers=headers,
        )

    return answer


def _error_echoing_key(status: int) -> Any:
    def answer(seen: Seen) -> Reply:
        auth = seen.headers.get("authorization", "")
        body = {"error": {"message": f"bad key {auth}", "type": "server_error", "code": auth}}
        return Reply(
            status=status,
            body=json.dumps(body).encode(),
            headers=[("x-echo-auth", auth), ("set-cookie", "s=" + auth)],
        )

    return answer


def _litellm_json(c: Canaries, v: Visible) -> Reply:
    """:func:`chat_json` with a ``logprobs`` LiteLLM can parse (its own model refuses a token
    entry without ``logprob``/``bytes`` and answers 500 before any hook sees the answer)."""
    reply = chat_json(c, v)
    body = re.sub(
        rb'"logprobs": \{"content": \[\{"token": "cnry[0-9a-f]+"\}\]\}',
        b'"logprobs": null',
        reply.body,
    )
    assert body != reply.body
    return Reply(body=body)


def _no_leak(w: World, c: Canaries | None, headers: dict[str, str], body: bytes) -> None:
    text = body.decode("utf-8", "replace") + json.dumps(headers)
    assert w.key not in text, "the upstream key reached the client"
    assert w.key[-16:] not in text
    if c is not None:
        assert c.leaked(text) == {}, "hidden reasoning reached the client"
    relayed = [h for h in headers if h.lower().startswith("llm_provider-")]
    assert relayed == [], relayed
    assert "set-cookie" not in {h.lower() for h in headers}


def _attempts(w: World, conv: str) -> list[Seen]:
    return w.upstream.find(conv)


# -- hidden reasoning, JSON and stream --------------------------------------------------------


def test_json_hidden_reasoning_and_key_echoes_never_reach_the_client(w: World) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, _echo_key(_litellm_json(c, v)))
    r = w.post(conv, w.body(conv))
    assert r.status_code == 200, r.text
    _no_leak(w, c, dict(r.headers), r.content)
    assert "_hidden_params" not in r.json()  # the cost the hook hands LiteLLM stays there
    msg = r.json()["choices"][0]["message"]
    assert msg["content"] == v.text
    assert msg["tool_calls"][0]["id"] == v.call_id
    assert msg["tool_calls"][0]["function"]["arguments"] == v.args
    (row,) = w.rows(conv, 1)
    assert (row.outcome, row.status_code, row.stream) == ("forwarded", 200, False)
    assert row.usage_status == "reported" and row.output_tokens == v.output_tokens
    assert len(_attempts(w, conv)) == 1


def test_stream_hidden_reasoning_and_key_echoes_never_reach_the_client(w: World) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, _echo_key(chat_stream(c, v)))
    status, headers, raw = w.stream(conv, w.body(conv))
    assert status == 200, raw[:500]
    _no_leak(w, c, headers, raw)
    text = ""
    for line in raw.decode().splitlines():
        if line.startswith("data: {"):
            for ch in json.loads(line[6:]).get("choices") or ():
                text += (ch.get("delta") or {}).get("content") or ""
    assert text == v.text
    assert raw.rstrip().endswith(b"data: [DONE]")
    (row,) = w.rows(conv, 1)
    assert (row.outcome, row.stream) == ("forwarded", True)
    assert row.usage_status == "reported" and row.output_tokens == v.output_tokens


THINK_SPLITS = [
    ["<think>", "@H@", "</think>", "@V@"],
    ["<thi", "nk>@H@</th", "ink>@V@"],
    ["<think>@H@", "</think>@V@"],
    ["<", "think", ">", "@H@<", "/think>", "@V@"],
]


@pytest.mark.parametrize("pieces", THINK_SPLITS, ids=["whole", "split-tags", "two", "chars"])
def test_think_text_is_cut_across_chunk_borders(w: World, pieces: list[str]) -> None:
    conv, c = new_conv(), Canaries()
    hidden, visible = c("think text"), "visible-" + secrets.token_hex(4)
    parts = [p.replace("@H@", hidden).replace("@V@", visible) for p in pieces]
    w.upstream.plan(conv, Reply(chunks=chat_text_stream(parts), content_type="text/event-stream"))
    status, headers, raw = w.stream(conv, w.body(conv))
    assert status == 200
    _no_leak(w, c, headers, raw)
    assert visible in raw.decode()


def test_think_text_is_cut_in_json(w: World) -> None:
    conv, c = new_conv(), Canaries()
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": BOUND,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": f"<think>{c('think')}</think>ok"},
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    w.upstream.plan(conv, Reply(body=json.dumps(body).encode()))
    r = w.post(conv, w.body(conv))
    _no_leak(w, c, dict(r.headers), r.content)
    assert r.json()["choices"][0]["message"]["content"] == "ok"


def test_the_openai_sdk_reads_the_projected_stream(w: World) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, chat_stream(c, v))
    client = openai.OpenAI(
        base_url=w.url + "/v1",
        api_key=w.master_key,
        max_retries=0,
        default_headers={k: v for k, v in w.headers(conv).items() if k != "authorization"},
    )
    text, calls = "", []
    for chunk in client.chat.completions.create(stream=True, **w.body(conv)):
        for ch in chunk.choices:
            text += ch.delta.content or ""
            calls += [tc.id for tc in ch.delta.tool_calls or () if tc.id]
    assert text == v.text and calls == [v.call_id]


# -- errors and LiteLLM's own retries ---------------------------------------------------------


@pytest.mark.parametrize("status", [500, 401])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_upstream_errors_echoing_the_key_are_the_hooks_own(
    w: World, status: int, stream: bool
) -> None:
    conv = new_conv()
    w.upstream.plan(conv, _error_echoing_key(status))
    if stream:
        got, headers, raw = w.stream(conv, w.body(conv))
    else:
        r = w.post(conv, w.body(conv))
        got, headers, raw = r.status_code, dict(r.headers), r.content
    assert got == status, raw[:300]
    _no_leak(w, None, headers, raw)
    assert b"bad key" not in raw  # the upstream's body is never relayed
    assert b"upstream-error" in raw
    seen = _attempts(w, conv)
    assert {s.body["model"] for s in seen} == {BOUND}  # the fallback model never called
    rows = w.rows(conv, len(seen))
    sent = [r for r in rows if r.outcome == "upstream-error"]
    assert len(sent) == len(seen), [(r.outcome, r.reason) for r in rows]
    assert all(r.status_code == status for r in sent)
    if status == 500:
        assert len(seen) == 1 + RETRIES  # LiteLLM retried: each attempt has its row
        refused = [r for r in rows if r.outcome == "refused"]  # the fallback hop(s), unsent
        assert refused and {r.reason for r in refused} == {
            "provider-mismatch: a fallback to another model"
        }


def test_429_then_200_is_two_attempts_and_two_rows(w: World) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, _error_echoing_key(429), _litellm_json(c, v))
    r = w.post(conv, w.body(conv))
    assert r.status_code == 200, r.text
    _no_leak(w, c, dict(r.headers), r.content)
    assert len(_attempts(w, conv)) == 2
    rows = w.rows(conv, 2)
    assert [(x.outcome, x.status_code) for x in rows] == [
        ("upstream-error", 429),
        ("forwarded", 200),
    ]
    assert len({x.call_id for x in rows}) == 2 and rows[1].attempt == 2


# -- the client picks nothing -----------------------------------------------------------------

ROUTING = [
    ("fallbacks", {"fallbacks": [OTHER]}, {}),
    ("num_retries", {"num_retries": 3}, {}),
    ("max_retries", {"max_retries": 5}, {}),
    ("extra_headers", {"extra_headers": {"anthropic-beta": "x"}}, {}),
    ("metadata", {"metadata": {"tags": ["free"]}}, {}),
    ("num_retries header", {}, {"x-litellm-num-retries": "3"}),
    ("tags header", {}, {"x-litellm-tags": "free"}),
]


@pytest.mark.parametrize(("name", "extra", "headers"), ROUTING, ids=[r[0] for r in ROUTING])
def test_client_routing_and_retry_fields_are_refused(
    w: World, name: str, extra: dict[str, Any], headers: dict[str, str]
) -> None:
    conv = new_conv()
    r = w.post(conv, w.body(conv, **extra), **headers)
    assert r.status_code == 400, r.text
    assert "routing-field" in r.text
    assert _attempts(w, conv) == []
    (row,) = w.rows(conv, 1)
    assert (row.outcome, row.reason) == ("refused", "routing-field")


LITELLM_REFUSES = [
    ("api_base", {"api_base": "http://127.0.0.1:9/v1"}),
    ("base_url", {"base_url": "http://127.0.0.1:9/v1"}),
    ("model_list", {"model_list": [{"model_name": BOUND}]}),
]


@pytest.mark.parametrize(("name", "extra"), LITELLM_REFUSES, ids=[r[0] for r in LITELLM_REFUSES])
def test_client_credentials_and_model_lists_are_refused_by_litellm_and_recorded(
    w: World, name: str, extra: dict[str, Any]
) -> None:
    """LiteLLM's own auth check refuses these before any hook runs (with the required
    settings); the hook leaves its answer and records the refusal."""
    conv = new_conv()
    before = len(_litellm_refusals(w))
    r = w.post(conv, w.body(conv, **extra))
    assert r.status_code == 400, r.text
    assert "litellm-refused" in r.text
    assert _attempts(w, conv) == []
    deadline = time.monotonic() + 10
    while len(_litellm_refusals(w)) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    # LiteLLM's auth stage passes the body only: the row cannot name the conversation
    assert len(_litellm_refusals(w)) == before + 1


def _litellm_refusals(w: World) -> list[EvidenceRow]:
    store = SQLiteStore(w.db)
    try:
        return [
            r
            for r in store.rows()
            if r.conversation_id is None and r.reason == "litellm refused: ValueError"
        ]
    finally:
        store.close()


def test_unknown_and_vendor_fields_never_reach_the_upstream(w: World) -> None:
    conv = new_conv()
    w.upstream.plan(conv, _litellm_json(Canaries(), Visible()))
    extra = {
        "reasoning_format": "raw",
        "thinking_budget_tokens": 9000,
        "max_reasoning_tokens": 9000,
        "reasoning_budget": 9000,
        "reasoning_effort": "high",
        "chat_template_kwargs": {"enable_thinking": True},
    }
    r = w.post(conv, w.body(conv, **extra))
    assert r.status_code == 200, r.text
    (seen,) = _attempts(w, conv)
    assert set(seen.body) & set(extra) == {"reasoning_effort"}
    assert seen.body["reasoning_effort"] == "medium"  # the route's fragment, not the client's
    assert "anthropic-beta" not in seen.headers
    (row,) = w.rows(conv, 1)
    assert row.reason is not None and "reasoning_budget" in row.reason


def test_a_malformed_body_is_refused_before_the_upstream(w: World) -> None:
    conv = new_conv()
    r = w.post(conv, {"model": BOUND, "messages": f"[{conv}] not a list"})
    assert r.status_code == 400 and "malformed-body" in r.text
    assert _attempts(w, conv) == []


# -- the vault --------------------------------------------------------------------------------


def test_opaque_carriers_stay_server_side_and_come_back_next_turn(w: World) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, _litellm_json(c, v))
    first = w.post(conv, w.body(conv))
    assert first.status_code == 200
    _no_leak(w, c, dict(first.headers), first.content)
    history = [
        *w.body(conv)["messages"],
        first.json()["choices"][0]["message"],
        {"role": "tool", "tool_call_id": v.call_id, "content": "1. Lyon"},
    ]
    w.upstream.plan(conv, _litellm_json(Canaries(), Visible()))
    second = w.post(conv, {"model": BOUND, "messages": history})
    assert second.status_code == 200, second.text
    sent = _attempts(w, conv)[-1]
    assert c.leaked(sent.text), "the vaulted reasoning was not put back upstream"
    rows = w.rows(conv, 2)
    assert rows[-1].carriers_reattached >= 1


def test_a_streamed_turns_carriers_come_back_next_turn(w: World) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, chat_stream(c, v))
    status, headers, raw = w.stream(conv, w.body(conv))
    assert status == 200
    _no_leak(w, c, headers, raw)
    history = [
        *w.body(conv)["messages"],
        {
            "role": "assistant",
            "content": v.text,
            "tool_calls": [
                {
                    "id": v.call_id,
                    "type": "function",
                    "function": {"name": "lookup", "arguments": v.args},
                }
            ],
        },
        {"role": "tool", "tool_call_id": v.call_id, "content": "1. Lyon"},
    ]
    w.upstream.plan(conv, _litellm_json(Canaries(), Visible()))
    second = w.post(conv, {"model": BOUND, "messages": history})
    assert second.status_code == 200, second.text
    assert c.leaked(_attempts(w, conv)[-1].text), "the streamed reasoning was not put back"
    assert w.rows(conv, 2)[-1].carriers_reattached >= 1


def test_a_stream_429_then_200_is_two_rows(w: World) -> None:
    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, _error_echoing_key(429), chat_stream(c, v))
    status, headers, raw = w.stream(conv, w.body(conv))
    assert status == 200
    _no_leak(w, c, headers, raw)
    assert len(_attempts(w, conv)) == 2
    rows = w.rows(conv, 2)
    assert [(x.outcome, x.status_code, x.stream) for x in rows] == [
        ("upstream-error", 429, True),
        ("forwarded", 200, True),
    ]


# -- the settings the hook requires -----------------------------------------------------------


def test_the_config_check_names_each_unsafe_setting(w: World) -> None:
    good: dict[str, Any] = {"model_list": [{"model_name": BOUND, "litellm_params": {}}]}
    assert check_proxy_config(good, w.registry) == []
    bad = {
        "general_settings": {"forward_client_headers_to_llm_api": True},
        "litellm_settings": {
            "model_group_settings": {"forward_client_headers_to_llm_api": [BOUND]}
        },
        "model_list": [
            {
                "model_name": BOUND,
                "litellm_params": {"configurable_clientside_auth_params": ["api_base"]},
            },
            {
                "model_name": "not-governed",
                "litellm_params": {"configurable_clientside_auth_params": ["api_base"]},
            },
        ],
    }
    problems = check_proxy_config(bad, w.registry)
    assert len(problems) == 3, problems
    assert any("general_settings.forward_client_headers_to_llm_api" in p for p in problems)
    assert any("model_group_settings" in p for p in problems)
    assert any(f"model {BOUND}: configurable_clientside_auth_params" in p for p in problems)


def test_the_proxy_refuses_to_start_when_client_headers_would_be_forwarded(
    tmp_path: Path,
) -> None:
    _keys(tmp_path)
    proc, url, log, _ = _start(
        tmp_path, "http://127.0.0.1:9", upstream_key(), "forward_client_headers_to_llm_api: true"
    )
    try:
        started = _wait(proc, url, log)
        if started:  # LiteLLM may defer loading the callback: the first request then fails
            r = httpx.post(url + "/v1/chat/completions", json={}, timeout=30)
            assert r.status_code != 200
        assert "refuses to start" in log.read_text(errors="replace")
    finally:
        _stop(proc)


@pytest.fixture
def w(world: World) -> World:
    return world


# -- evidence first ---------------------------------------------------------------------------


def test_no_upstream_attempt_without_a_committed_row(w: World) -> None:
    """Evidence first: an attempt's row is committed (``pending``) before the attempt goes
    out. With the evidence database held locked by another writer the hook cannot commit, so
    the upstream sees no request and the client gets 503 with Retry-After within the store
    budget; once the lock is gone the next request is served and evidenced."""
    import sqlite3

    conv, c, v = new_conv(), Canaries(), Visible()
    w.upstream.plan(conv, _litellm_json(c, v), _litellm_json(c, v))
    holder = sqlite3.connect(w.db, timeout=30, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        r = w.post(conv, w.body(conv))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert r.status_code == 503, r.text
    assert r.headers.get("retry-after") == "1"
    _no_leak(w, c, dict(r.headers), r.content)
    assert _attempts(w, conv) == []  # nothing was sent without its row
    again = w.post(conv, w.body(conv))
    assert again.status_code == 200, again.text
    assert len(_attempts(w, conv)) == 1
    assert [x.outcome for x in w.rows(conv, 1) if x.outcome != "refused"] == ["forwarded"]


def test_each_attempt_s_row_is_committed_before_the_attempt_arrives(w: World) -> None:
    """At the moment the upstream receives an attempt, that attempt's row is already in the
    evidence database, ``pending`` (read by the upstream itself, from another connection)."""
    conv, c, v = new_conv(), Canaries(), Visible()
    seen_rows: list[list[str]] = []

    def answer(seen: Seen) -> Reply:
        store = SQLiteStore(w.db)
        try:
            seen_rows.append([r.outcome for r in store.rows(conv) if r.outcome != "refused"])
        finally:
            store.close()
        return _litellm_json(c, v)

    w.upstream.plan(conv, _error_echoing_key(500), answer)
    r = w.post(conv, w.body(conv))
    assert r.status_code == 200, r.text
    # the second attempt arrives: the first is completed, the second committed as pending
    assert seen_rows == [["upstream-error", "pending"]]
    assert [x.outcome for x in w.rows(conv, 2)] == ["upstream-error", "forwarded"]
