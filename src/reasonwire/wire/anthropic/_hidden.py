"""Anthropic reasoning a governed client cannot hold (vault key: the thinking block's
signature, which the client returns), and the carriers a request sends back (for the probe)."""

from __future__ import annotations

from collections.abc import Mapping

from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON, JsonObject, Turn
from reasonwire.wire.vault import Lookup, carriers_by_turn, present, sent_turns, sized


def vault_entries(turn: Turn) -> list[tuple[str, JSON]]:
    return [
        ("sig:" + str(c.value["signature"]), c.value)
        for c in turn.carriers
        if isinstance(c.value, dict)
        and c.value.get("type") == "thinking"
        and c.value.get("signature")
    ]


def reattach(body: JsonObject, lookup: Lookup) -> int:
    n = 0
    for msg in sent_turns(body, "messages", "assistant"):
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        kept: list[JSON] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "thinking":
                found = lookup("sig:" + str(block.get("signature")))
                if found is None:
                    continue  # unknown plaintext thinking: not genuine, never forwarded
                kept.append(found)
                n += 1
            else:
                kept.append(block)
        msg["content"] = kept
    return n


def request_carriers(body: Mapping[str, JSON]) -> list[SentCarrier]:
    return carriers_by_turn(body.get("messages") or (), _starts_turn, _message_carriers)


def _message_carriers(msg: JSON) -> list[SentCarrier]:
    """The thinking blocks of one assistant message."""
    out: list[SentCarrier] = []
    if not isinstance(msg, dict) or msg.get("role") != "assistant":
        return out
    content = msg.get("content")
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "thinking":
            if present(block.get("thinking")):
                out.append(SentCarrier("thinking", sized(block["thinking"]), False))
            if present(block.get("signature")):
                out.append(SentCarrier("signature", sized(block["signature"]), True))
        elif block.get("type") == "redacted_thinking" and present(block.get("data")):
            out.append(SentCarrier("redacted_thinking", sized(block["data"]), True))
    return out


def _starts_turn(msg: JSON) -> bool:
    """A user message with content other than tool results (a new turn)."""
    if not isinstance(msg, dict) or msg.get("role") != "user":
        return False
    content = msg.get("content")
    return isinstance(content, str) or (
        isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") != "tool_result" for b in content)
    )
