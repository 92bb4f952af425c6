"""What the gateway reads on every call although it keeps what it made of it: the upstream
credential (a key changed in the environment is sent on the next call, the upstream headers
made from the old one are not reused) and the client headers a dialect forwards."""

from __future__ import annotations

import httpx
import pytest

from tests.govern.conftest import UPSTREAM_KEY_ENV, World, new_conv


def _post(world: World, path: str, body: dict[str, object], headers: dict[str, str]) -> int:
    """A call through the served gateway (its own server and event loop)."""
    return httpx.post(world.url + path, json=body, headers=headers, timeout=30).status_code


def test_a_changed_upstream_key_is_sent_on_the_next_call(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = new_conv()
    headers = world.headers(conv, world.token(conv, "chat/sim-deepseek", "low"))
    body = {"model": "sim-deepseek", "messages": [{"role": "user", "content": f"[{conv}] hi"}]}
    first, second = "sk-first-rotated-upstream-0001", "sk-second-rotated-upstream-02"
    keys = [first, second, first]
    for key in keys:
        monkeypatch.setenv(UPSTREAM_KEY_ENV, key)
        assert _post(world, "/v1/chat/completions", body, headers) == 200
    sent = [seen["headers"].get("authorization") for seen in world.recorder.find(conv)]
    # compared, never shown: a failure must not print a key
    assert [s == f"Bearer {k}" for s, k in zip(sent, keys, strict=True)] == [True, True, True]


def test_a_forwarded_client_header_is_sent_as_each_call_has_it(world: World) -> None:
    conv = new_conv()
    headers = world.headers(conv, world.token(conv, "anthropic/sim-claude", "low"))
    body = {
        "model": "sim-claude",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": f"[{conv}] hi"}],
    }
    for version in ("2023-06-01", None, "2023-01-01"):
        extra = {"anthropic-version": version} if version else {}
        status = _post(world, "/v1/messages", body, headers | extra)
        assert status == 200, [(r.outcome, r.reason) for r in world.store.rows(conv)]
    sent = [seen["headers"].get("anthropic-version") for seen in world.recorder.find(conv)]
    assert sent == ["2023-06-01", None, "2023-01-01"]
