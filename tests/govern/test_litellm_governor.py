"""The LiteLLM hook's logic (``Governor``) without LiteLLM, through the proxy's async entry
points: a binding verified once per token still refused from the exact second it expires,
a refusal recorded (a store that cannot record it is a 503 with Retry-After, nothing sent),
each attempt's pending row committed before the attempt is let out, one row per call.

The request is shaped as LiteLLM's proxy hands it to ``async_pre_call_hook`` (the client's
headers and body under ``proxy_server_request``); the real proxy runs in
test_litellm_proxy.py and test_litellm_hostile.py."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from reasonwire.errors import HookRefused, StoreUnavailable
from reasonwire.govern.binding import HEADER, KeyRing, issue
from reasonwire.govern.carry import CONVERSATION_HEADER
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.govern.litellm_hook import CALL_ID_KEY, Governor, _with_cost
from reasonwire.govern.policy import OrgPolicy
from tests.govern.conftest import SUBJECT_CLAIMS, make_registry

MODEL = "sim-chat-all"  # the model of SUBJECT_CLAIMS' route
ANSWER: Any = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": MODEL,
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Done.", "reasoning_content": "plan"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
}


class DownStore(SQLiteStore):
    """A store whose writes fail once ``down`` is set (its reads of fixed values are cached)."""

    down = False

    def record(self, row: EvidenceRow) -> None:
        if self.down:
            raise StoreUnavailable("planted: the database is down")
        super().record(row)


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing.generate("k1")


def governor(ring: KeyRing, **kw: Any) -> Governor:
    policy = OrgPolicy(allowed=frozenset({"low", "medium"}), maximum="medium")
    store = kw.pop("store", None) or SQLiteStore()
    return Governor(make_registry("http://127.0.0.1:9/v1"), policy, ring, store, **kw)


def request(ring: KeyRing, conv: str = "c1", **over: Any) -> Any:
    """A chat completion as LiteLLM passes it to the hook, bound to ``conv``."""
    token = over.pop("token", None) or issue(ring, **{**SUBJECT_CLAIMS, "conversation_id": conv})
    headers = {HEADER: token, CONVERSATION_HEADER: over.pop("header_conv", conv)}
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **over}
    return {**body, "proxy_server_request": {"headers": headers, "body": dict(body)}}


def call(gov: Governor, data: Any) -> Any:
    """One call through the hook's async entry points, as the proxy makes them: the request,
    the attempt (its pending row), the answer. Returns the client's answer once the call's
    row is completed (nothing waits for the completion: it is written on a store thread)."""

    async def run() -> Any:
        out = await gov.apre_call(data, "acompletion")
        attempt = {"model": MODEL, "metadata": out["metadata"]}
        await gov.aattempt_start(attempt)
        gov.attempt_answered(out, ANSWER)
        return gov.answer(out, ANSWER)

    answer = asyncio.run(run())
    settled(gov, data["proxy_server_request"]["headers"][CONVERSATION_HEADER], 0)
    return answer


def settled(gov: Governor, conv: str, n: int) -> list[tuple[str, str | None]]:
    """(outcome, reason) of the conversation's rows once ``n`` rows exist and none is
    ``pending`` (a completion is written on a store thread, after the client's answer), or as
    they are after a 10 s deadline."""
    deadline = time.monotonic() + 10
    while True:
        rows = gov.store.rows(conv)
        done = len(rows) >= n and all(r.outcome != "pending" for r in rows)
        if done or time.monotonic() > deadline:
            return [(r.outcome, r.reason) for r in rows]
        time.sleep(0.01)


def test_each_call_is_forwarded_projected_and_recorded_once(ring: KeyRing) -> None:
    gov = governor(ring)
    token = issue(ring, **SUBJECT_CLAIMS)
    for _ in range(3):
        answer = call(gov, request(ring, token=token))
        assert answer["choices"][0]["message"] == {"role": "assistant", "content": "Done."}
    assert gov.verified.hits == 2  # one token: verified once, then served from the cache
    rows = gov.store.rows("c1")
    assert [(r.outcome, r.resolved, r.status_code) for r in rows] == [("forwarded", "low", 200)] * 3


def test_a_refusal_is_recorded(ring: KeyRing) -> None:
    gov = governor(ring)
    call(gov, request(ring))
    with pytest.raises(HookRefused) as info:
        call(gov, request(ring, header_conv="c1", conv="other"))  # a binding for another conv
    assert (info.value.status, info.value.reason) == (403, "conversation-mismatch")
    refused = [r for r in gov.store.rows("c1") if r.outcome == "refused"]
    assert [r.reason for r in refused] == ["conversation-mismatch"]
    with pytest.raises(HookRefused) as info:
        call(gov, request(ring, fallbacks=["x"]))  # a client picking its own routing
    assert (info.value.status, info.value.reason) == (400, "routing-field")
    assert [r.reason for r in gov.store.rows("c1") if r.outcome == "refused"] == [
        "conversation-mismatch",
        "routing-field",
    ]


def test_a_refusal_with_the_store_down_is_a_503(ring: KeyRing) -> None:
    store = DownStore()
    gov = governor(ring, store=store)
    call(gov, request(ring))
    store.down = True
    with pytest.raises(HookRefused) as info:
        call(gov, request(ring, fallbacks=["x"]))
    assert (info.value.status, info.value.reason) == (503, "store-unavailable")
    assert info.value.headers == {"Retry-After": "1"}


def test_the_pending_row_is_committed_before_the_attempt_is_let_out(ring: KeyRing) -> None:
    store = DownStore()
    gov = governor(ring, store=store)
    call(gov, request(ring))

    async def attempt() -> list[str]:
        out = await gov.apre_call(request(ring), "acompletion")
        gov.attempt_start({"model": MODEL, "metadata": out["metadata"]})
        outcomes = [r.outcome for r in gov.store.rows("c1")]
        store.down = True  # the first attempt's row is written when the call is admitted
        out2 = await gov.apre_call(request(ring), "acompletion")
        with pytest.raises(StoreUnavailable):  # no row: the attempt is not let out
            gov.attempt_start({"model": MODEL, "metadata": out2["metadata"]})
        return outcomes

    assert asyncio.run(attempt()) == ["forwarded", "pending"]
    assert CALL_ID_KEY == "reasonwire_call_id"


def test_an_expired_binding_is_refused_though_cached(
    ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    gov = governor(ring)
    t0 = int(time.time()) - 10
    token = issue(ring, **SUBJECT_CLAIMS, ttl_seconds=60, now=t0)
    headers = {HEADER: token, CONVERSATION_HEADER: "c1"}
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}

    def data() -> Any:
        return {**body, "proxy_server_request": {"headers": dict(headers), "body": dict(body)}}

    monkeypatch.setattr("time.time", lambda: t0 + 59)
    call(gov, data())
    call(gov, data())
    assert gov.verified.hits == 1
    monkeypatch.setattr("time.time", lambda: t0 + 60)
    with pytest.raises(HookRefused) as info:
        call(gov, data())
    assert info.value.reason == "binding-expired"
    assert [r.reason for r in gov.store.rows("c1") if r.outcome == "refused"] == ["binding-expired"]


class StuckStore(SQLiteStore):
    """A store whose writes wait until released (a locked database), once ``stuck`` is set."""

    stuck = False

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def record(self, row: EvidenceRow) -> None:
        if self.stuck:
            self.release.wait(30)
        super().record(row)


def test_a_store_that_does_not_answer_within_the_budget_is_a_503(ring: KeyRing) -> None:
    """Store work runs off the event loop and is waited for at most ``store_timeout``."""
    store = StuckStore()
    gov = governor(ring, store=store, store_timeout=0.05)
    call(gov, request(ring))
    store.stuck = True
    try:
        with pytest.raises(HookRefused) as info:
            call(gov, request(ring, fallbacks=["x"]))  # refused: its row cannot be written
        assert (info.value.status, info.value.reason) == (503, "store-unavailable")
    finally:
        store.release.set()


class LiteLLMResponse:
    """What the hook reads of a LiteLLM response object: its hidden params."""

    def __init__(self, hidden: Any) -> None:
        self._hidden_params = hidden


def test_only_litellm_s_cost_figure_rides_along_the_answer() -> None:
    """LiteLLM's proxy takes a dict answer's ``_hidden_params`` (and removes them before
    sending): the hook hands it the cost it already computed, and nothing else of the
    response's hidden params (its upstream's address, relayed headers)."""
    hidden = {
        "response_cost": 0.0,
        "api_base": "http://10.0.0.7/v1",
        "additional_headers": {"llm_provider-set-cookie": "s=1"},
        "model_id": "m1",
    }
    answer = _with_cost({"id": "x"}, LiteLLMResponse(hidden))
    assert answer == {"id": "x", "_hidden_params": {"response_cost": 0.0}}
    for hidden_now in ({"response_cost": None}, {"response_cost": True}, {}, None, "x"):
        assert _with_cost({"id": "x"}, LiteLLMResponse(hidden_now)) == {"id": "x"}
    assert _with_cost(None, LiteLLMResponse(hidden)) is None  # no call of the hook's
