"""Chat Completions reasoning a governed client cannot hold: the vault's keys and re-attaching
the originals, and the carriers a request sends back (for the probe).

The vault key of an assistant message is its first tool call id (the client returns it), or a
hash of its text when it made no call. See :mod:`reasonwire.wire.vault` for the design.
"""

from __future__ import annotations

from collections.abc import Mapping

from reasonwire.wire.chat._facts import CARRIER_FIELDS, TOOL_CALL_CARRIER
from reasonwire.wire.chat._parse import THINKING_PART, is_thinking_part, joined_text, thinking_text
from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON, JsonObject, Turn
from reasonwire.wire.vault import (
    Lookup,
    carriers_by_turn,
    present,
    sent_turns,
    sized,
    text_key,
)


def _key(tool_call_ids: list[str], text: str) -> str:
    return "tc:" + tool_call_ids[0] if tool_call_ids else text_key(text)


def _visible(content: JSON) -> str:
    """The visible text of a message content, the vault key's text: the string, or its
    ``text``-typed parts joined."""
    return joined_text(content, _is_text_part)


def _is_text_part(part: JsonObject) -> bool:
    return part.get("type") == "text"


def _native_content(turn: Turn) -> JSON:
    items = turn.native.items if turn.native.dialect == "chat" else ()
    message = items[0] if items and isinstance(items[0], dict) else {}
    return message.get("content")


def vault_entries(turn: Turn) -> list[tuple[str, JSON]]:
    """The reasoning fields of the answer and, when its content list holds Magistral thinking
    parts, that whole list as received (the client sees it without them)."""
    fields: dict[str, JSON] = {
        c.kind: c.value
        for c in turn.carriers
        if c.kind in CARRIER_FIELDS and c.path.startswith("choices[0].")
    }
    content = _native_content(turn)
    if isinstance(content, list) and any(map(is_thinking_part, content)):
        fields["content"] = content
    if not fields:
        return []
    ids = [tc.id for tc in turn.tool_calls if tc.id]
    return [(_key(ids, _visible(content) if content is not None else turn.text), fields)]


def reattach(body: JsonObject, lookup: Lookup) -> int:
    n = 0
    for msg in sent_turns(body, "messages", "assistant"):
        for f in CARRIER_FIELDS:
            msg.pop(f, None)
        content = msg.get("content")
        if isinstance(content, list):  # a thinking part the vault did not give cannot be genuine
            content = msg["content"] = [p for p in content if not is_thinking_part(p)]
        ids = [
            str(tc["id"])
            for tc in msg.get("tool_calls") or ()
            if isinstance(tc, dict) and tc.get("id")
        ]
        found = lookup(_key(ids, _visible(content)))
        if isinstance(found, dict):
            original = found.get("content")
            msg.update({k: v for k, v in found.items() if k != "content"})
            if isinstance(original, list) and _visible(original) == _visible(content):
                msg["content"] = original  # the thinking parts back in place, as received
            n += 1
    return n


def request_carriers(body: Mapping[str, JSON]) -> list[SentCarrier]:
    return carriers_by_turn(body.get("messages") or (), _is_user, _message_carriers)


def _is_user(msg: JSON) -> bool:
    return isinstance(msg, dict) and msg.get("role") == "user"


def _message_carriers(msg: JSON) -> list[SentCarrier]:
    """Every carrier field, detail, thinking part and tool-call carrier of one assistant
    message."""
    out: list[SentCarrier] = []
    if not isinstance(msg, dict) or msg.get("role") != "assistant":
        return out
    for field in ("reasoning_content", "reasoning"):
        if present(msg.get(field)):
            out.append(SentCarrier(field, sized(msg[field]), False))
    for detail in msg.get("reasoning_details") or ():
        if not isinstance(detail, dict):
            continue
        kind = str(detail.get("type") or "reasoning_details")
        for key, opaque in (("text", False), ("summary", False), ("data", True)):
            if present(detail.get(key)):
                out.append(SentCarrier(kind, sized(detail[key]), opaque))
        if present(detail.get("signature")):
            out.append(SentCarrier(kind + ".signature", sized(detail["signature"]), True))
    content = msg.get("content")
    for part in content if isinstance(content, list) else ():
        if is_thinking_part(part) and present(thinking_text(part)):
            out.append(SentCarrier(THINKING_PART, sized(thinking_text(part)), False))
    for call in msg.get("tool_calls") or ():
        if isinstance(call, dict) and present(call.get(TOOL_CALL_CARRIER)):
            out.append(SentCarrier(TOOL_CALL_CARRIER, sized(call[TOOL_CALL_CARRIER]), True))
    return out
