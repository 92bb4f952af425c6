"""Hidden reasoning and the vault: the design, and the small helpers every dialect shares.

A governed client must not see plaintext reasoning, yet continuity needs it back: an
Anthropic ``thinking`` block's signature covers its text, and DeepSeek-style
``reasoning_content`` must come back as text after a tool call, so a client that never saw
the text cannot return it. The gateway therefore shows the client only the dialect's visible
projection (which keeps every opaque part: signature, ``encrypted_content``, item id), stores
the exact original carriers per conversation under a key the client does carry back
(signature, reasoning item id, tool call id), and re-attaches the originals on the way up.
Reasoning the client sends that is not in the vault is removed (it cannot be genuine).

Each dialect object says where its keys are (``vault_entries`` / ``reattach``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON, JsonObject, canonical_bytes

Lookup = Callable[[str], JSON | None]
"""key -> the exact original carrier value, or None."""


def text_key(text: str) -> str:
    """The vault key of a message known only by its text."""
    return "tx:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def present(value: JSON) -> bool:
    return value is not None and value != ""


def sent_turns(body: Mapping[str, JSON], key: str, role: str) -> Iterator[JsonObject]:
    """The model's own turns a request sends back: the objects of the history ``body[key]``
    whose ``role`` is ``role`` (anything else in the history is passed over)."""
    for msg in body.get(key) or ():
        if isinstance(msg, dict) and msg.get("role") == role:
            yield msg


def carriers_by_turn(
    history: Sequence[JSON],
    starts_turn: Callable[[JSON], bool],
    carriers_of: Callable[[JSON], Iterable[SentCarrier]],
) -> list[SentCarrier]:
    """The carriers a request's ``history`` sends back, in order: ``carriers_of`` each entry
    (nothing for an entry that is not the model's), those before the last entry that
    ``starts_turn`` (a new user turn) marked ``earlier_turn``, as the probe reports them."""
    last_user = max((i for i, entry in enumerate(history) if starts_turn(entry)), default=-1)
    out: list[SentCarrier] = []
    for at, entry in enumerate(history):
        found = carriers_of(entry)
        if at < last_user:
            found = [replace(c, earlier_turn=True) for c in found]
        out.extend(found)
    return out


def sized(value: JSON) -> int:
    """UTF-8 bytes of a string carrier as sent; compact JSON bytes of any other value."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    return len(canonical_bytes(value))


__all__ = ["Lookup", "carriers_by_turn", "present", "sent_turns", "sized", "text_key"]
