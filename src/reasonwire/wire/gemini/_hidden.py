"""The carriers a Gemini request sends back on its model turns (for the probe)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON
from reasonwire.wire.vault import present, sized


def request_carriers(body: Mapping[str, JSON]) -> list[SentCarrier]:
    out: list[SentCarrier] = []
    contents = body.get("contents") or ()
    last_user = max((i for i, c in enumerate(contents) if _starts_turn(c)), default=-1)
    for at, content in enumerate(contents):
        if not isinstance(content, dict) or content.get("role") != "model":
            continue
        first = len(out)
        for part in content.get("parts") or ():
            if not isinstance(part, dict):
                continue
            if part.get("thought") is True and present(part.get("text")):
                out.append(SentCarrier("thought", sized(part["text"]), False))
            for key in ("thoughtSignature", "thought_signature"):
                if present(part.get(key)):
                    out.append(SentCarrier("thoughtSignature", sized(part[key]), True))
        if at < last_user:
            out[first:] = [replace(c, earlier_turn=True) for c in out[first:]]
    return out


def _starts_turn(content: JSON) -> bool:
    """A user content with text (a new turn), not only function responses."""
    if not isinstance(content, dict) or content.get("role", "user") != "user":
        return False
    return any(isinstance(p, dict) and "text" in p for p in content.get("parts") or ())
