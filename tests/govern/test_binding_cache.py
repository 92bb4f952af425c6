"""The gateway's per-token cache of verified bindings (``Gateway._verify``) takes its fast
path on a repeated token and refuses whatever :func:`verify` would refuse: a token expired
at the exact second of its ``exp``, a binding for another conversation, an altered token, a
key revoked or replaced under the same key id after the token was cached."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.binding import HEADER, KeyRing, issue
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import CONVERSATION_HEADER, Gateway
from reasonwire.govern.policy import OrgPolicy
from tests.govern.conftest import SUBJECT_CLAIMS, make_registry

# Issue time of every token here (exp = T0 + TTL); in the past, as PyJWT checks iat against
# its own clock, which the tests do not move.
T0 = int(time.time()) - 10
TTL = 60
CLAIMS: dict[str, Any] = {**SUBJECT_CLAIMS, "ttl_seconds": TTL, "now": T0}


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing.generate("k1")


@pytest.fixture
def gw(ring: KeyRing) -> Gateway:
    policy = OrgPolicy(allowed=frozenset({"low", "medium"}), maximum="medium")
    # no upstream listens on port 9: these calls are refused or fail before it matters
    return Gateway(make_registry("http://127.0.0.1:9/v1"), policy, ring, SQLiteStore())


def _at(monkeypatch: pytest.MonkeyPatch, now: float) -> None:
    monkeypatch.setattr("time.time", lambda: now)


def _refused(gw: Gateway, token: str) -> str:
    with pytest.raises(PolicyRefusal) as info:
        gw._bindings.verify(token)
    return info.value.reason


def test_a_repeated_token_is_a_cache_hit(
    gw: Gateway, ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, T0 + 1)
    token = issue(ring, **CLAIMS)
    first = gw._bindings.verify(token)
    assert gw.binding_cache_hits == 0
    assert gw._bindings.verify(token) == first
    assert gw.binding_cache_hits == 1


def test_expired_at_the_exact_second_even_when_cached(
    gw: Gateway, ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = issue(ring, **CLAIMS)
    _at(monkeypatch, T0 + TTL - 1)
    gw._bindings.verify(token)
    gw._bindings.verify(token)
    assert gw.binding_cache_hits == 1
    _at(monkeypatch, T0 + TTL)  # RFC 7519: exp is the first second it is no longer valid
    assert _refused(gw, token) == "binding-expired"
    assert gw.binding_cache_hits == 1


def test_an_altered_token_is_not_served_from_the_cache(
    gw: Gateway, ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, T0 + 1)
    token = issue(ring, **CLAIMS)
    gw._bindings.verify(token)
    head, claims, sig = token.split(".")
    altered = f"{head}.{claims}.{'A' if sig[0] != 'A' else 'B'}{sig[1:]}"
    assert _refused(gw, altered) == "binding-bad-signature"
    assert gw.binding_cache_hits == 0


def test_a_revoked_key_misses_the_cache(
    gw: Gateway, ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, T0 + 1)
    token = issue(ring, **CLAIMS)
    gw._bindings.verify(token)
    ring.revoke("k1")
    assert _refused(gw, token) == "binding-revoked-key"
    assert gw.binding_cache_hits == 0


def test_a_key_replaced_under_the_same_id_misses_the_cache(
    gw: Gateway, ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, T0 + 1)
    token = issue(ring, **CLAIMS)
    gw._bindings.verify(token)
    other = KeyRing.generate("k1")  # a new key pair published as k1
    ring.public = {"k1": other.public["k1"]}
    assert _refused(gw, token) == "binding-bad-signature"
    assert gw.binding_cache_hits == 0


async def test_a_cached_binding_for_another_conversation_is_refused(
    gw: Gateway, ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, T0 + 1)
    token = issue(ring, **CLAIMS)
    gw._bindings.verify(token)  # cached for c1
    body = {"model": "sim-chat-all", "messages": [{"role": "user", "content": "hi"}]}
    transport = httpx.ASGITransport(app=gw.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            resp = await c.post(
                "/v1/chat/completions",
                json=body,
                headers={HEADER: token, CONVERSATION_HEADER: "c2"},
            )
    finally:
        await gw.aclose()
    assert gw.binding_cache_hits == 1  # the fast path was taken, and still refused
    assert resp.status_code == 403
    assert resp.json()["error"]["code"] == "conversation-mismatch"
