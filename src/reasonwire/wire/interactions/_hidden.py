"""The carriers an interactions request sends back in its ``input`` steps (for the probe)."""

from __future__ import annotations

from collections.abc import Mapping

from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.interactions._parse import summary_texts
from reasonwire.wire.model import JSON
from reasonwire.wire.vault import present, sized


def request_carriers(body: Mapping[str, JSON]) -> list[SentCarrier]:
    steps = body.get("input")
    if not isinstance(steps, list):
        return []
    out: list[SentCarrier] = []
    for step in steps:
        if not isinstance(step, dict) or step.get("type") not in ("thought", "function_call"):
            continue
        if present(step.get("signature")):
            out.append(SentCarrier("thought_signature", sized(step["signature"]), True))
        if step.get("type") == "thought":
            out.extend(SentCarrier("thought_summary", sized(t), False) for t in summary_texts(step))
    return out
