"""The authorisation runs on the event loop, without a store-thread hop, only when the store
has nothing to do for it: the outbox is empty (earlier writes go first, in order) and both of
the conversation's fixed values (effort, intent) are cached. Anything else takes the hop."""

from __future__ import annotations

import pytest

from reasonwire.govern.binding import KeyRing
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.policy import OrgPolicy
from tests.govern.conftest import make_registry


@pytest.fixture
def gw() -> Gateway:
    policy = OrgPolicy(allowed=frozenset({"low", "medium"}), maximum="medium")
    return Gateway(make_registry("http://127.0.0.1:9/v1"), policy, KeyRing.generate("k1"))


def test_a_new_conversation_takes_the_store_hop(gw: Gateway) -> None:
    assert not gw._authorise_inline("c1")
    assert not gw._authorise_inline(None)


def test_both_fixed_values_cached_is_the_fast_path(gw: Gateway) -> None:
    store = gw.store
    assert isinstance(store, SQLiteStore)
    store.fix_effort("c1", "low")
    assert not gw._authorise_inline("c1")  # the intent is not fixed yet
    store.fix_intent("c1", "low")
    assert gw._authorise_inline("c1")
    assert not gw._authorise_inline("c2")


@pytest.mark.parametrize("queue", ["_outbox", "_refusals"])
def test_a_waiting_write_sends_the_authorisation_to_the_store(gw: Gateway, queue: str) -> None:
    gw.store.fix_effort("c1", "low")
    gw.store.fix_intent("c1", "low")
    getattr(gw, queue).append(lambda: None)  # a write waiting for the store
    assert not gw._authorise_inline("c1")
