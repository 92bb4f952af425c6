"""The per-token cache of verified bindings (``VerifiedBindings``, the LiteLLM hook's) takes its
fast path on a repeated token and refuses whatever :func:`verify` would refuse: a token
expired at the exact second of its ``exp`` (RFC 7519 4.1.4), an altered token, a key revoked
or replaced under the same key id after the token was cached."""

from __future__ import annotations

import pytest

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.binding import KeyRing, issue
from reasonwire.govern.verified import VerifiedBindings
from tests.govern.test_binding_cache import CLAIMS, T0, TTL, _at


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing.generate("k1")


def _refused(cache: VerifiedBindings, token: str) -> str:
    with pytest.raises(PolicyRefusal) as info:
        cache.verify(token)
    return info.value.reason


def test_a_repeated_token_is_a_hit(ring: KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, T0 + 1)
    cache = VerifiedBindings(ring)
    token = issue(ring, **CLAIMS)
    first = cache.verify(token)
    assert (first.conversation_id, first.requested, first.key_id) == ("c1", "low", "k1")
    assert cache.hits == 0
    assert cache.verify(token) == first
    assert cache.hits == 1


def test_expired_at_the_exact_second_even_when_cached(
    ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = VerifiedBindings(ring)
    token = issue(ring, **CLAIMS)
    _at(monkeypatch, T0 + TTL - 1)  # the last second it is valid
    cache.verify(token)
    cache.verify(token)
    assert cache.hits == 1
    _at(monkeypatch, T0 + TTL)  # exp: the first second it is no longer valid
    assert _refused(cache, token) == "binding-expired"
    assert cache.hits == 1


def test_an_altered_token_is_not_served(ring: KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, T0 + 1)
    cache = VerifiedBindings(ring)
    token = issue(ring, **CLAIMS)
    cache.verify(token)
    head, claims, sig = token.split(".")
    altered = f"{head}.{claims}.{'A' if sig[0] != 'A' else 'B'}{sig[1:]}"
    assert _refused(cache, altered) == "binding-bad-signature"
    assert cache.hits == 0


def test_a_revoked_key_misses(ring: KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, T0 + 1)
    cache = VerifiedBindings(ring)
    token = issue(ring, **CLAIMS)
    cache.verify(token)
    ring.revoke("k1")
    assert _refused(cache, token) == "binding-revoked-key"
    assert cache.hits == 0


def test_a_key_replaced_under_the_same_id_misses(
    ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at(monkeypatch, T0 + 1)
    cache = VerifiedBindings(ring)
    token = issue(ring, **CLAIMS)
    cache.verify(token)
    other = KeyRing.generate("k1")  # a new key pair published as k1
    ring.public = {"k1": other.public["k1"]}
    assert _refused(cache, token) == "binding-bad-signature"
    assert cache.hits == 0


def test_a_refused_token_is_never_kept(ring: KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = VerifiedBindings(ring)
    token = issue(ring, **CLAIMS)
    _at(monkeypatch, T0 + TTL)
    assert _refused(cache, token) == "binding-expired"
    _at(monkeypatch, T0 + 1)  # the clock back: the token verifies again, uncached
    cache.verify(token)
    assert cache.hits == 0


def test_the_limit_bounds_what_is_kept(ring: KeyRing, monkeypatch: pytest.MonkeyPatch) -> None:
    _at(monkeypatch, T0 + 1)
    cache = VerifiedBindings(ring, limit=2)
    tokens = [issue(ring, **CLAIMS) for _ in range(3)]  # three nonces: three tokens
    for token in tokens:
        cache.verify(token)
    cache.verify(tokens[2])  # kept: the cache started again when the third came in
    cache.verify(tokens[0])  # dropped then: verified again
    assert cache.hits == 1
