"""Carrier digests (reasonwire.probe.carriers): what is digested, at its limits.

Digests are recomputed here with hashlib (16 hex digits of SHA-256 of the UTF-8 value, as the
module documents), never with the module's own function.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from reasonwire.probe import carriers
from reasonwire.probe.carriers import Tokenizer, produced_carriers, sent_carriers
from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import Carrier, Native, Turn


def _d(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()[:16]


def _turn(*cs: Carrier) -> Turn:
    return Turn("responses", "", "", (), tuple(cs), None, None, None, None,
                Native("responses", ()))  # fmt: skip


def test_string_leaves_of_at_least_16_bytes_are_digested() -> None:
    short, edge = "x" * 15, "y" * 16
    value = {"type": "reasoning", "id": edge, "encrypted_content": "E" * 40,
             "summary": [{"type": "summary_text", "text": short}]}  # fmt: skip
    (entry,) = produced_carriers(_turn(Carrier("responses", "reasoning_item", "output[0]",
                                               value, True, text=short)))  # fmt: skip
    assert entry["digests"] == [_d(edge), _d("E" * 40)]  # 15 bytes and "reasoning": not
    assert entry["kind"] == "reasoning_item" and entry["textBytes"] == 15


def test_multibyte_length_is_counted_in_utf8_bytes() -> None:
    eight = "é" * 8  # 16 UTF-8 bytes, 8 characters
    (entry,) = produced_carriers(_turn(Carrier("gemini", "thoughtSignature", "p", eight, True)))
    assert entry["digests"] == [_d(eight)] and entry["bytes"] == 16


def test_text_carriers_of_an_answer_are_not_produced_carriers() -> None:
    text = Carrier("chat", "reasoning_content", "choices[0]", "t" * 40, False, text="t" * 40)
    assert produced_carriers(_turn(text)) == []


def test_sent_carriers_take_the_first_unclaimed_string_of_their_size() -> None:
    sig1, sig2, thinking = "S" * 20, "T" * 20, "I think " * 5
    body = {"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": thinking, "signature": sig1},
            {"type": "thinking", "thinking": "", "signature": sig2}]}]}  # fmt: skip
    sent = [SentCarrier("thinking", 40, False), SentCarrier("signature", 20, True),
            SentCarrier("signature", 20, True)]  # fmt: skip
    got = sent_carriers(body, sent, Tokenizer("words", lambda s: len(s.split())))
    assert [e.get("digest") for e in got] == [_d(thinking), _d(sig1), _d(sig2)]
    assert got[0]["tokenCount"] == 10 and got[0]["tokenizer"] == "words"
    assert "tokenCount" not in got[1]  # an opaque carrier is never tokenized


def test_a_carrier_whose_value_is_not_found_keeps_its_bytes_only() -> None:
    got = sent_carriers({"input": []}, [SentCarrier("extra_content", 33, True)])
    assert got == [{"kind": "extra_content", "bytes": 33, "opaque": True}]


def test_a_failing_tokenizer_leaves_the_estimate() -> None:
    def boom(_: str) -> int:
        raise RuntimeError("no")

    (e,) = sent_carriers({"m": "a" * 10}, [SentCarrier("r", 10, False)], Tokenizer("b", boom))
    assert e["digest"] == _d("a" * 10) and "tokenCount" not in e


@pytest.mark.parametrize(("limit", "found"), [(3, True), (2, False)])
def test_the_walk_stops_at_its_node_limit(
    monkeypatch: pytest.MonkeyPatch, limit: int, found: bool
) -> None:
    """{"a": [s]} is three nodes (the dict, the list, the string): a limit of 3 reaches the
    string, 2 does not."""
    monkeypatch.setattr(carriers, "MAX_WALK_NODES", limit)
    body: Any = {"a": ["z" * 20]}
    (e,) = sent_carriers(body, [SentCarrier("sig", 20, True)])
    assert ("digest" in e) is found


def test_both_base64_alphabets_give_one_digest() -> None:
    """A signature sent back in the URL-safe alphabet (``-_``, no padding) is the carrier the
    answer held in the standard one (``+/``, padded)."""
    std, urlsafe = "Ab+/Cd+/Ef+/Gh+/Ij==", "Ab-_Cd-_Ef-_Gh-_Ij"
    (made,) = produced_carriers(_turn(Carrier("gemini", "thoughtSignature", "p", std, True)))
    (sent,) = sent_carriers({"s": urlsafe}, [SentCarrier("thoughtSignature", 18, True)])
    assert made["digests"] == [sent["digest"]] == [_d("Ab+/Cd+/Ef+/Gh+/Ij")]
    (other,) = sent_carriers({"s": "Ab-_Cd-_Ef-_Gh-_Ik"}, [SentCarrier("t", 18, True)])
    assert other["digest"] != sent["digest"]
