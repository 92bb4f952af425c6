"""Registry, policy, binding, controls, hidden-reasoning vault helpers and the evidence store."""

from __future__ import annotations

import json
import time
from typing import Any

import jwt
import pytest

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.binding import KeyRing, issue, verify
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.govern.evidence import fill_usage as usage_fields
from reasonwire.govern.levels import parse_requested, rank
from reasonwire.govern.policy import OrgPolicy, resolve
from reasonwire.govern.registry import RouteRegistration, RuntimeAdapter
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.model import Usage
from reasonwire.wire.registry import get_dialect
from tests.govern.conftest import make_registry


def test_levels() -> None:
    assert parse_requested(" High ") == "high" and parse_requested("AUTO") == "auto"
    with pytest.raises(ValueError, match="unknown effort level"):
        parse_requested("max")
    assert rank("low") < rank("medium") < rank("high")
    with pytest.raises(ValueError):
        rank("none")


def test_registry_exact_pins_and_fail_closed() -> None:
    reg = make_registry("http://127.0.0.1:1/v1")
    assert reg.adapter("hermes", "1.4.2").qualification_id == "Q-RT-hermes-1.4.2"
    for version, reason in [
        ("1.4.3", "runtime-version-unknown"),
        ("1.4", "runtime-version-unknown"),
        ("1.5.0-rc1", "runtime-not-qualified"),
    ]:
        with pytest.raises(PolicyRefusal) as e:
            reg.adapter("hermes", version)
        assert e.value.reason == reason
    with pytest.raises(PolicyRefusal, match="runtime-unknown"):
        reg.adapter("codex", "1.4.2")
    discovery = RuntimeAdapter("x", "1", "discovery", "", frozenset({"low"}))
    assert discovery.offered_levels() == frozenset()
    with pytest.raises(ValueError, match="unknown levels"):
        reg.add_route(
            RouteRegistration("r", "p", "m", "chat", "u", "q", {"max": {}})  # type: ignore[dict-item]
        )
    reg.revoke("chat/sim-chat-all")
    with pytest.raises(PolicyRefusal, match="route-revoked"):
        reg.route("chat/sim-chat-all")
    with pytest.raises(PolicyRefusal, match="route-unknown"):
        reg.route("chat/none")


def test_policy_intersection_and_auto() -> None:
    reg = make_registry("http://127.0.0.1:1/v1")
    reg.adapters.append(
        RuntimeAdapter("lite", "2", "qualified", "Q-lite", frozenset({"low", "medium"}))
    )
    pol = OrgPolicy(frozenset({"low", "medium", "high"}), "high")
    kw = {"route_id": "chat/sim-chat-all"}
    assert (
        resolve(
            reg, pol, runtime_id="hermes", runtime_version="1.4.2", requested="auto", **kw
        ).resolved
        == "high"
    )
    # Auto is capped by the adapter's review.
    r = resolve(reg, pol, runtime_id="lite", runtime_version="2", requested="auto", **kw)
    assert (r.resolved, r.ceiling) == ("medium", "medium")
    with pytest.raises(PolicyRefusal, match="level-not-qualified"):
        resolve(reg, pol, runtime_id="lite", runtime_version="2", requested="high", **kw)
    low_org = OrgPolicy(frozenset({"low", "high"}), "high")  # medium not allowed
    with pytest.raises(PolicyRefusal, match="level-not-qualified"):
        resolve(
            reg, low_org, runtime_id="hermes", runtime_version="1.4.2", requested="medium", **kw
        )
    capped = OrgPolicy(frozenset({"low", "medium", "high"}), "low")
    with pytest.raises(PolicyRefusal, match="over-policy"):
        resolve(reg, capped, runtime_id="hermes", runtime_version="1.4.2", requested="medium", **kw)
    none = OrgPolicy(frozenset({"high"}), "high")
    with pytest.raises(PolicyRefusal, match="no-common-level"):
        resolve(
            reg,
            none,
            runtime_id="hermes",
            runtime_version="1.4.2",
            requested="auto",
            route_id="chat/sim-plain",
        )


def _claims() -> dict[str, str]:
    return {
        "conversation_id": "c1",
        "task_id": "t1",
        "runtime_id": "hermes",
        "runtime_version": "1.4.2",
        "route_id": "chat/x",
        "requested": "auto",
        "ceiling": "high",
    }


def test_binding_roundtrip_rotation_and_refusals(tmp_path: object) -> None:
    ring = KeyRing.generate("k1")
    tok = issue(ring, **_claims())  # type: ignore[arg-type]
    b = verify(ring, tok)
    assert (b.conversation_id, b.requested, b.ceiling, b.key_id) == ("c1", "auto", "high", "k1")
    assert b.nonce and b.expires_at > time.time()
    assert issue(ring, **_claims()) != tok  # type: ignore[arg-type]  # a fresh nonce each time
    ring.rotate("k2")
    assert verify(ring, tok).key_id == "k1"
    assert verify(ring, issue(ring, **_claims())).key_id == "k2"  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ring.rotate("k1")
    ring.retire("k1")
    with pytest.raises(PolicyRefusal, match="binding-unknown-key"):
        verify(ring, tok)
    hs = jwt.encode(
        {"conv": "c1"},
        "secret-secret-secret-secret-secret",
        algorithm="HS256",
        headers={"kid": "k2"},
    )
    with pytest.raises(PolicyRefusal, match="binding-bad-alg"):
        verify(ring, hs)
    missing = jwt.encode(
        {"conv": "c1"}, ring.private["k2"], algorithm="EdDSA", headers={"kid": "k2"}
    )
    with pytest.raises(PolicyRefusal, match="binding-invalid"):
        verify(ring, missing)
    bad_level = issue(ring, **{**_claims(), "requested": "max"})  # type: ignore[arg-type]
    with pytest.raises(PolicyRefusal, match="unknown effort level"):
        verify(ring, bad_level)


def test_keyring_pem_roundtrip(tmp_path: pytest.TempPathFactory) -> None:
    from pathlib import Path

    d = Path(str(tmp_path))
    ring = KeyRing.generate("k7")
    ring.save_dir(d)
    assert oct((d / "k7.key.pem").stat().st_mode & 0o777) == "0o600"
    (d / "k7.key.pem").unlink()  # a verifier holds public keys only
    public = KeyRing.load_dir(d)
    assert public.private == {} and verify(public, issue(ring, **_claims())).key_id == "k7"  # type: ignore[arg-type]


def strip_controls(dialect: str, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return get_dialect(dialect).strip_controls(body)


def is_non_escalating(dialect: str, removed: dict[str, Any]) -> bool:
    return get_dialect(dialect).is_non_escalating(removed)


def test_strip_controls_copy_on_write() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "reasoning_effort": "high",
        "chat_template_kwargs": {"enable_thinking": True, "other": 1},
        "generationConfig": {"thinkingConfig": {"thinkingLevel": "high"}, "temperature": 0},
    }
    before = json.dumps(body)
    out, removed = strip_controls("chat", body)
    assert json.dumps(body) == before  # the caller's body is untouched
    assert out["messages"] is body["messages"]  # history not copied
    # Any template kwarg may be a thinking switch or budget, any generationConfig field a
    # foreign dialect's thinking config: the whole objects go.
    assert "chat_template_kwargs" not in out and "generationConfig" not in out
    assert removed == {
        "reasoning_effort": "high",
        "chat_template_kwargs": {"enable_thinking": True, "other": 1},
        "generationConfig": {"thinkingConfig": {"thinkingLevel": "high"}, "temperature": 0},
    }
    nested = {"output_config": {"effort": "high", "format": {"type": "json"}}}
    only = strip_controls("anthropic", nested)[0]
    assert only == {"output_config": {"format": {"type": "json"}}}
    assert "output_config" not in strip_controls("anthropic", {"output_config": {"effort": 1}})[0]
    assert is_non_escalating("chat", {"reasoning_effort": "none"})
    assert not is_non_escalating("chat", {"reasoning_effort": "none", "thinking": {}})
    assert not is_non_escalating("chat", {"reasoning_effort": None})
    assert not is_non_escalating("anthropic", {"reasoning_effort": "none"})
    assert not is_non_escalating("chat", {})
    frag = {"reasoning": {"effort": "low"}}
    merged = deep_merge({"reasoning": {"summary": "auto"}}, frag)
    assert merged == {"reasoning": {"summary": "auto", "effort": "low"}}
    merged["reasoning"]["effort"] = "x"
    assert frag == {"reasoning": {"effort": "low"}}  # route data never aliased


ANTHROPIC_BODY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "secret plan", "signature": "SIG1"},
        {"type": "redacted_thinking", "data": "OPAQUE"},
        {"type": "text", "text": "hi"},
    ],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 5},
}


def test_vault_anthropic_scrub_and_reattach() -> None:
    body = json.loads(json.dumps(ANTHROPIC_BODY))
    turn = get_dialect("anthropic").parse_response(body)
    entries = dict(get_dialect("anthropic").vault_entries(turn))
    body = get_dialect("anthropic").project_body(body)
    assert "secret plan" not in json.dumps(body)
    assert body["content"][0] == {"type": "thinking", "thinking": "", "signature": "SIG1"}
    assert body["content"][1] == {"type": "redacted_thinking", "data": "OPAQUE"}
    assert entries["sig:SIG1"] == ANTHROPIC_BODY["content"][0]  # the vault kept the original
    req = {
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": body["content"]},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "forged", "signature": "NOPE"}],
            },
        ]
    }
    assert get_dialect("anthropic").reattach(req, entries.get) == 1
    assert req["messages"][1]["content"][0] == ANTHROPIC_BODY["content"][0]
    assert req["messages"][2]["content"] == []  # unknown plaintext never forwarded


def test_stream_scrubber_any_split_drops_only_reasoning() -> None:
    events = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "secret"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "S"},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "visible"},
        },
    ]
    raw = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    for cut in range(1, len(raw)):
        s = get_dialect("anthropic").stream_projector()
        out = s.feed(raw[:cut]) + s.feed(raw[cut:]) + s.close()
        assert b"secret" not in out and b"visible" in out and b'"signature":"S"' in out
        assert out.count(b"event: ") == 3


def test_usage_fields_never_make_up_zero() -> None:
    row = EvidenceRow(outcome="forwarded", conversation_id="c")
    usage_fields(row, None, {"output": 1.0})
    assert (row.usage_status, row.output_tokens, row.cost_status, row.cost_usd) == (
        "unavailable",
        None,
        "unavailable",
        None,
    )
    row = EvidenceRow(outcome="forwarded", conversation_id="c")
    usage_fields(row, Usage(input_uncached=1000, output=2000, cost_usd=0.5), {"output": 1.0})
    assert (row.usage_status, row.cost_status, row.cost_usd, row.cache_read) == (
        "reported",
        "confirmed",
        0.5,
        None,
    )
    row = EvidenceRow(outcome="forwarded", conversation_id="c")
    usage_fields(
        row, Usage(input_uncached=1_000_000, output=500_000), {"input_uncached": 1.0, "output": 4.0}
    )
    assert (row.cost_status, row.cost_usd) == ("estimated", 3.0)


@pytest.mark.parametrize(
    ("usage", "status", "cost"),
    [
        (Usage(), "unavailable", None),
        (Usage(reasoning=9), "unavailable", None),  # a breakdown alone is no usage report
        (Usage(input_uncached=2_000_000), "reported", 2.0),
        (Usage(cache_read=1_000_000), "reported", 0.0),  # no price for cached input here
        (Usage(cache_write=3), "reported", 0.0),
        (Usage(output=250_000), "reported", 1.0),
    ],
)
def test_usage_is_reported_when_any_figure_of_it_is(
    usage: Usage, status: str, cost: float | None
) -> None:
    row = EvidenceRow(outcome="forwarded", conversation_id="c")
    usage_fields(row, usage, {"input_uncached": 1.0, "output": 4.0})
    assert (row.usage_status, row.cost_usd) == (status, cost)


def test_sqlite_store_roundtrip_and_fixed_effort(tmp_path: pytest.TempPathFactory) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "e.sqlite"
    store = SQLiteStore(path)
    store.record(EvidenceRow(outcome="refused", conversation_id="a", reason="binding-expired"))
    store.record(
        EvidenceRow(outcome="forwarded", conversation_id="b", stream=True, output_tokens=7)
    )
    assert store.fix_effort("a", "low") == "low"
    assert store.fix_effort("a", "high") == "low"
    store.close()
    again = SQLiteStore(path)  # a second replica/process sees the same facts
    assert again.fix_effort("a", "medium") == "low"
    rows = again.rows()
    assert [(r.conversation_id, r.reason, r.stream, r.output_tokens) for r in rows] == [
        ("a", "binding-expired", False, None),
        ("b", None, True, 7),
    ]
    assert again.rows("b")[0].usage_status == "unavailable"


async def test_next_request_waits_for_the_streams_vault_entries() -> None:
    """The client sees a stream's last bytes before the gateway stores its vault entries; a
    request that follows at once for the same conversation must wait for them (else the
    reasoning it needs is not re-attached: DeepSeek's 400 for a missing reasoning_content)."""
    import asyncio
    from types import SimpleNamespace

    from reasonwire.govern.gateway import Gateway

    gw: Any = SimpleNamespace(_unsettled={})
    settled = asyncio.Event()
    gw._unsettled.setdefault("c1", []).append(settled)
    waiter = asyncio.create_task(Gateway._settled(gw, "c1"))
    other = asyncio.create_task(Gateway._settled(gw, "c2"))
    await asyncio.wait_for(other, 10)  # another conversation never waits (deadline, no sleep)
    for _ in range(10):  # the waiter's turns of the loop: it only ends when its event is set
        await asyncio.sleep(0)
    assert not waiter.done()
    Gateway._settle(gw, "c1", settled)
    await asyncio.wait_for(waiter, 1)
    assert gw._unsettled == {}
