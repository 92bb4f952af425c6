"""The carriers a Gemini request sends back on its model turns (for the probe)."""

from __future__ import annotations

from collections.abc import Mapping

from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON
from reasonwire.wire.vault import present, sent_turns, sized


def request_carriers(body: Mapping[str, JSON]) -> list[SentCarrier]:
    out: list[SentCarrier] = []
    for content in sent_turns(body, "contents", "model"):
        for part in content.get("parts") or ():
            if not isinstance(part, dict):
                continue
            if part.get("thought") is True and present(part.get("text")):
                out.append(SentCarrier("thought", sized(part["text"]), False))
            for key in ("thoughtSignature", "thought_signature"):
                if present(part.get(key)):
                    out.append(SentCarrier("thoughtSignature", sized(part[key]), True))
    return out
