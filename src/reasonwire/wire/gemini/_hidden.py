"""The carriers a Gemini request sends back on its model turns (for the probe)."""

from __future__ import annotations

from collections.abc import Mapping

from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON
from reasonwire.wire.vault import carriers_by_turn, present, sized


def request_carriers(body: Mapping[str, JSON]) -> list[SentCarrier]:
    return carriers_by_turn(body.get("contents") or (), _starts_turn, _model_carriers)


def _model_carriers(content: JSON) -> list[SentCarrier]:
    """The thought parts and signatures of one model content."""
    out: list[SentCarrier] = []
    if not isinstance(content, dict) or content.get("role") != "model":
        return out
    for part in content.get("parts") or ():
        if not isinstance(part, dict):
            continue
        if part.get("thought") is True and present(part.get("text")):
            out.append(SentCarrier("thought", sized(part["text"]), False))
        for key in ("thoughtSignature", "thought_signature"):
            if present(part.get(key)):
                out.append(SentCarrier("thoughtSignature", sized(part[key]), True))
    return out


def _starts_turn(content: JSON) -> bool:
    """A user content with text (a new turn), not only function responses."""
    if not isinstance(content, dict) or content.get("role", "user") != "user":
        return False
    return any(isinstance(p, dict) and "text" in p for p in content.get("parts") or ())
