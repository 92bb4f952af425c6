"""Every negative case is refused with a clear reason, recorded as evidence, and never reaches
the upstream. The gateway runs in-process (ASGI transport); the upstream is the recorded
simulator from the module's world."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import jwt
import pytest

from reasonwire.govern.binding import HEADER, KeyRing, issue
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import ATTEMPT_HEADER, CONVERSATION_HEADER, Gateway
from reasonwire.govern.policy import OrgPolicy
from tests.govern.conftest import ROOMY, RUNTIME, World, make_registry, new_conv

STRICT = OrgPolicy(allowed=frozenset({"low", "medium"}), maximum="medium")


class Harness:
    def __init__(self, world: World) -> None:
        self.world = world
        self.ring = KeyRing.generate("k1")
        upstream = world.gateway.registry.routes["chat/sim-chat-all"].upstream_base_url
        self.store = SQLiteStore()
        self.gw = Gateway(
            make_registry(upstream), STRICT, self.ring, self.store, store_settings=ROOMY
        )

    def token(self, conv: str, **over: Any) -> str:
        claims: dict[str, Any] = {
            "conversation_id": conv,
            "task_id": "t-" + conv,
            "runtime_id": RUNTIME[0],
            "runtime_version": RUNTIME[1],
            "route_id": "chat/sim-chat-all",
            "requested": "low",
            "ceiling": "medium",
        }
        ring = over.pop("ring", self.ring)
        claims.update(over)
        return issue(ring, **claims)


@pytest.fixture
async def h(world: World) -> AsyncIterator[Harness]:
    harness = Harness(world)
    yield harness
    await harness.gw.aclose()


async def _call(
    h: Harness,
    conv: str,
    token: str | None,
    *,
    path: str = "/v1/chat/completions",
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    hdrs = {CONVERSATION_HEADER: conv, **(headers or {})}
    if token is not None:
        hdrs[HEADER] = token
    payload = body or {"model": "sim-chat-all", "messages": [{"role": "user", "content": conv}]}
    transport = httpx.ASGITransport(app=h.gw.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
        return await c.post(path, json=payload, headers=hdrs)


def _tamper(token: str) -> str:
    head, payload, sig = token.split(".")
    claims = jwt.api_jws.base64url_decode(payload.encode())
    forged = claims.replace(b'"low"', b'"high"')
    assert forged != claims
    return ".".join([head, jwt.utils.base64url_encode(forged).decode(), sig])


def _alg_none(token: str) -> str:
    claims = jwt.decode(token, options={"verify_signature": False})
    return jwt.encode(claims, None, algorithm="none", headers={"kid": "k1"})


CASES: dict[str, tuple[str, Callable[[Harness, str], tuple[str | None, dict[str, Any]]]]] = {
    "tampered": ("binding-bad-signature", lambda h, c: (_tamper(h.token(c)), {})),
    "expired": (
        "binding-expired",
        lambda h, c: (h.token(c, ttl_seconds=60, now=time.time() - 3600), {}),
    ),
    "alg-none": ("binding-bad-alg", lambda h, c: (_alg_none(h.token(c)), {})),
    "wrong-key-same-kid": (
        "binding-bad-signature",
        lambda h, c: (h.token(c, ring=KeyRing.generate("k1")), {}),
    ),
    "unknown-kid": (
        "binding-unknown-key",
        lambda h, c: (h.token(c, ring=KeyRing.generate("k9")), {}),
    ),
    "missing": ("binding-missing", lambda h, c: (None, {})),
    "garbage": ("binding-malformed", lambda h, c: ("not-a-token", {})),
    "other-conversation": ("conversation-mismatch", lambda h, c: (h.token(c + "-other"), {})),
    "stale-runtime-version": (
        "runtime-version-unknown",
        lambda h, c: (h.token(c, runtime_version="1.4.0"), {}),
    ),
    "runtime-in-discovery": (
        "runtime-not-qualified",
        lambda h, c: (h.token(c, runtime_version="1.5.0-rc1"), {}),
    ),
    "unknown-runtime": ("runtime-unknown", lambda h, c: (h.token(c, runtime_id="other"), {})),
    "unsupported-route": ("route-unknown", lambda h, c: (h.token(c, route_id="chat/nope"), {})),
    "provider-mismatch-endpoint": (
        "provider-mismatch",
        lambda h, c: (h.token(c), {"path": "/v1/messages"}),
    ),
    "provider-mismatch-model": (
        "provider-mismatch",
        lambda h, c: (
            h.token(c),
            {"body": {"model": "sim-qwen3", "messages": [{"role": "user", "content": c}]}},
        ),
    ),
    "over-policy-level": (
        "over-policy",
        lambda h, c: (h.token(c, requested="high", ceiling="high"), {}),
    ),
    "ceiling-not-policy": ("ceiling-mismatch", lambda h, c: (h.token(c, ceiling="high"), {})),
    "level-not-qualified-on-route": (
        "level-not-qualified",
        lambda h, c: (
            h.token(c, route_id="chat/sim-plain", requested="medium", ceiling="low"),
            {"body": {"model": "sim-plain", "messages": [{"role": "user", "content": c}]}},
        ),
    ),
    "bad-attempt": ("bad-attempt", lambda h, c: (h.token(c), {"headers": {ATTEMPT_HEADER: "0"}})),
    "malformed-body": ("malformed-body", lambda h, c: (h.token(c), {"body_raw": True})),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_refused_recorded_and_never_forwarded(h: Harness, case: str) -> None:
    reason, make = CASES[case]
    conv = new_conv()
    token, kw = make(h, conv)
    if kw.pop("body_raw", False):
        hdrs = {CONVERSATION_HEADER: conv, HEADER: token or ""}
        transport = httpx.ASGITransport(app=h.gw.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            resp = await c.post(
                "/v1/chat/completions", content=b"{not json " + conv.encode(), headers=hdrs
            )
    else:
        resp = await _call(h, conv, token, **kw)
    assert resp.status_code in (400, 403), resp.text
    err = resp.json()["error"]
    assert err["code"] == reason, err
    assert err["message"].startswith(f"reasonwire gateway refused: {reason}")
    rows = h.store.rows(conv)
    assert [(r.outcome, r.reason) for r in rows] == [("refused", reason)]
    assert h.world.recorder.find(conv) == []
    if token:
        assert token not in resp.text  # the binding is never echoed


async def test_route_revoked_after_projection(h: Harness) -> None:
    conv = new_conv()
    token = h.token(conv)
    ok = await _call(h, conv, token)
    assert ok.status_code == 200, ok.text
    h.gw.registry.revoke("chat/sim-chat-all")
    resp = await _call(h, conv, token)
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "route-revoked"
    rows = h.store.rows(conv)
    assert [(r.outcome, r.reason) for r in rows] == [
        ("forwarded", None),
        ("refused", "route-revoked"),
    ]
    assert len(h.world.recorder.find(conv)) == 1


async def test_effort_is_fixed_at_conversation_creation(h: Harness) -> None:
    conv = new_conv()
    assert (await _call(h, conv, h.token(conv, requested="low"))).status_code == 200
    resp = await _call(h, conv, h.token(conv, requested="medium"))
    assert resp.json()["error"]["code"] == "effort-changed"
    # Auto resolves to medium here: also a change, also refused.
    resp = await _call(h, conv, h.token(conv, requested="auto"))
    assert resp.json()["error"]["code"] == "effort-changed"
    assert (await _call(h, conv, h.token(conv, requested="low"))).status_code == 200
    assert [r.reason for r in h.store.rows(conv)] == [
        None,
        "effort-changed",
        "effort-changed",
        None,
    ]


async def test_retired_key_stops_verifying_even_when_cached(h: Harness) -> None:
    conv = new_conv()
    token = h.token(conv)
    assert (await _call(h, conv, token)).status_code == 200
    h.ring.rotate("k2")
    assert (await _call(h, conv, token)).status_code == 200  # old keys still verify
    h.ring.retire("k1")
    resp = await _call(h, conv, token)
    assert resp.json()["error"]["code"] == "binding-unknown-key"
    assert (await _call(h, conv, h.token(conv))).status_code == 200  # signed by k2


async def test_missing_upstream_credential_is_an_error_not_a_keyless_call(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.govern.conftest import UPSTREAM_KEY_ENV

    monkeypatch.delenv(UPSTREAM_KEY_ENV)
    conv = new_conv()
    resp = await _call(h, conv, h.token(conv))
    assert resp.status_code == 502 and resp.json()["error"]["code"] == "credential-unavailable"
    assert h.world.recorder.find(conv) == []
    assert [(r.outcome, r.reason) for r in h.store.rows(conv)] == [
        ("upstream-error", "credential-unavailable")
    ]
