"""Responses reasoning a governed client cannot hold (vault keys: the reasoning item id), and
the carriers a request sends back (for the probe)."""

from __future__ import annotations

from collections.abc import Mapping

from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON, JsonObject, Turn
from reasonwire.wire.vault import Lookup, carriers_by_turn, present, sized


def _opaque_only(item: JSON) -> JSON:
    """A reasoning item without its summary and reasoning text (opaque parts kept)."""
    out = {k: v for k, v in item.items() if k != "content"}
    if "summary" in out:
        out["summary"] = []
    return out


def vault_entries(turn: Turn) -> list[tuple[str, JSON]]:
    return [
        ("rs:" + str(c.value["id"]), c.value)
        for c in turn.carriers
        if isinstance(c.value, dict) and c.value.get("type") == "reasoning" and c.value.get("id")
    ]


def reattach(body: JsonObject, lookup: Lookup) -> int:
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    n = 0
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("type") != "reasoning":
            continue
        found = lookup("rs:" + str(item.get("id")))
        if found is not None:
            items[i] = found
            n += 1
        else:
            items[i] = _opaque_only(item)
    return n


def request_carriers(body: Mapping[str, JSON]) -> list[SentCarrier]:
    items = body.get("input")
    if not isinstance(items, list):
        return []
    return carriers_by_turn(items, _is_user_message, _reasoning_carriers)


def _is_user_message(item: JSON) -> bool:
    return (
        isinstance(item, dict)
        and item.get("type", "message") == "message"
        and item.get("role") == "user"
    )


def _reasoning_carriers(item: JSON) -> list[SentCarrier]:
    """The summary, reasoning text and encrypted content of one reasoning item."""
    out: list[SentCarrier] = []
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return out
    for part_key in ("summary", "content"):
        for part in item.get(part_key) or ():
            if isinstance(part, dict) and present(part.get("text")):
                kind = str(part.get("type") or part_key)
                out.append(SentCarrier(kind, sized(part["text"]), False))
    if present(item.get("encrypted_content")):
        out.append(SentCarrier("encrypted_content", sized(item["encrypted_content"]), True))
    return out
