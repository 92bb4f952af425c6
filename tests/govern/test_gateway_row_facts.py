"""A refusal's evidence row holds what the gateway's checks had established when it refused,
in the order they run (attempt; the verified binding; its route's qualification; the
runtime's qualification from the policy; the resolved level; the admitted body), and nothing
after. Expected values are literals of the test registry (tests/govern/conftest.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from reasonwire.govern.evidence import EvidenceRow
from tests.govern.conftest import World, new_conv
from tests.govern.test_gateway_refusals import Harness, _call

FIELDS = (
    "attempt",
    "key_id",
    "task_id",
    "runtime_id",
    "runtime_version",
    "route_id",
    "requested",
    "route_qualification",
    "runtime_qualification",
    "resolved",
)


@pytest.fixture
async def gw(world: World) -> AsyncIterator[Harness]:
    harness = Harness(world)
    yield harness
    await harness.gw.aclose()


def _facts(row: EvidenceRow) -> dict[str, Any]:
    return {f: getattr(row, f) for f in FIELDS}


def _binding(conv: str, **over: Any) -> dict[str, Any]:
    """The facts of a verified binding issued by the harness for ``conv``."""
    return {
        "attempt": 1,
        "key_id": "k1",
        "task_id": "t-" + conv,
        "runtime_id": "hermes",
        "runtime_version": "1.4.2",
        "route_id": "chat/sim-chat-all",
        "requested": "low",
        "route_qualification": None,
        "runtime_qualification": None,
        "resolved": None,
        **over,
    }


async def _only_row(gw: Harness, conv: str) -> EvidenceRow:
    (row,) = gw.store.rows(conv)
    return row


@pytest.mark.parametrize(
    ("case", "reason", "known"),
    [
        # the binding is verified, then found to be another conversation's
        ("other-conversation", "conversation-mismatch", {}),
        # the route is found (its qualification known), then it speaks another dialect
        ("other-endpoint", "provider-mismatch", {"route_qualification": "Q-ROUTE-sim-chat-all"}),
        # the policy resolved the request (the runtime's qualification known), then the
        # binding's ceiling is not the policy's
        (
            "other-ceiling",
            "ceiling-mismatch",
            {
                "route_qualification": "Q-ROUTE-sim-chat-all",
                "runtime_qualification": "Q-RT-hermes-1.4.2",
            },
        ),
        # authorised at a level, then the body names another model
        (
            "other-model",
            "provider-mismatch",
            {
                "route_qualification": "Q-ROUTE-sim-chat-all",
                "runtime_qualification": "Q-RT-hermes-1.4.2",
                "resolved": "low",
            },
        ),
    ],
)
async def test_a_refusal_row_holds_the_facts_known_when_it_refused(
    gw: Harness, case: str, reason: str, known: dict[str, Any]
) -> None:
    conv = new_conv()
    bound = conv + "-other" if case == "other-conversation" else conv
    claims = {"ceiling": "high"} if case == "other-ceiling" else {}
    kw: dict[str, Any] = {}
    if case == "other-endpoint":
        kw["path"] = "/v1/messages"
    if case == "other-model":
        kw["body"] = {"model": "sim-qwen3", "messages": [{"role": "user", "content": conv}]}
    resp = await _call(gw, conv, gw.token(bound, **claims), **kw)
    assert resp.json()["error"]["code"] == reason
    row = await _only_row(gw, conv)
    assert (row.outcome, row.reason, row.conversation_id) == ("refused", reason, conv)
    assert _facts(row) == _binding(bound, **known)


async def test_a_refusal_before_the_binding_holds_no_binding_fact(gw: Harness) -> None:
    conv = new_conv()
    resp = await _call(gw, conv, gw.token(conv), headers={"x-reasonwire-attempt": "0"})
    assert resp.json()["error"]["code"] == "bad-attempt"
    row = await _only_row(gw, conv)
    assert (row.conversation_id, row.dialect) == (conv, "chat")
    assert _facts(row) == dict.fromkeys(FIELDS)


async def test_a_forwarded_row_names_the_unknown_fields_the_admission_dropped(
    gw: Harness,
) -> None:
    conv = new_conv()
    body = {
        "model": "sim-chat-all",
        "messages": [{"role": "user", "content": conv}],
        "zz_unknown": 1,
        "aa_unknown": 2,
    }
    resp = await _call(gw, conv, gw.token(conv), body=body)
    assert resp.status_code == 200, resp.text
    row = await _only_row(gw, conv)
    assert (row.outcome, row.reason) == (
        "forwarded",
        "unknown fields dropped: aa_unknown,zz_unknown",
    )
    assert _facts(row) == _binding(
        conv,
        route_qualification="Q-ROUTE-sim-chat-all",
        runtime_qualification="Q-RT-hermes-1.4.2",
        resolved="low",
    )
