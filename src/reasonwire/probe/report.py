"""Aggregate ledger rows per session and model: how much reasoning flows, and what share of
billed input was reasoning sent back.

The denominator is billed input (uncached + cache read + cache write), never uncached input
alone: a re-sent carrier is often served from cache and is still paid for. Output-side
reasoning tokens say what the model thought, not what re-sending costs, so they are shown
apart. Rows of both ledger schemas are read (:func:`reasonwire.probe.ledger.row_usage`).
Re-sent reasoning tokens are an *estimate*: the request side is measured in bytes (the
probe does not tokenize), divided by :data:`BYTES_PER_TOKEN`. Opaque carriers (signatures,
encrypted content) are reported in bytes and not converted, since their token cost is not
known from their size.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from reasonwire.probe.ledger import row_usage

BYTES_PER_TOKEN = 4.0
"""Bytes of reasoning text per token used for the estimate (a common figure for English
text with BPE tokenizers; CJK text has fewer bytes per token, so more tokens than estimated)."""


@dataclass
class Group:
    session: str
    model: str
    calls: int = 0
    failed: int = 0
    reasoning_bytes: int = 0
    text_bytes: int = 0
    tool_bytes: int = 0
    reasoning_tokens: int = 0
    billed_input: int = 0
    calls_with_usage: int = 0
    sent_text_bytes: int = 0
    sent_opaque_bytes: int = 0

    @property
    def est_resent_tokens(self) -> float:
        return self.sent_text_bytes / BYTES_PER_TOKEN

    @property
    def resent_share(self) -> float | None:
        """Estimated share of billed input that was re-sent reasoning text (None: no usage)."""
        if self.billed_input <= 0:
            return None
        return self.est_resent_tokens / self.billed_input

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["est_resent_reasoning_tokens"] = round(self.est_resent_tokens, 1)
        out["resent_share_of_billed_input"] = self.resent_share
        return out


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def aggregate(rows: Iterable[dict[str, Any]]) -> list[Group]:
    """One group per (session, model), in first-seen order."""
    groups: dict[tuple[str, str], Group] = {}
    for row in rows:
        key = (str(row.get("sessionId") or "-"), str(row.get("model") or "-"))
        g = groups.get(key)
        if g is None:
            g = groups[key] = Group(*key)
        g.calls += 1
        if row.get("status") not in ("ok", None):
            g.failed += 1
        g.reasoning_bytes += _int(row.get("reasoningBytes"))
        g.text_bytes += _int(row.get("textBytes"))
        g.tool_bytes += _int(row.get("toolBytes"))
        usage = row_usage(row)
        if usage is not None:
            g.calls_with_usage += 1
            g.reasoning_tokens += usage.reasoning or 0
            g.billed_input += usage.billed_input
        sent = row.get("sentReasoning")
        if isinstance(sent, dict):
            for entry in sent.values():
                if not isinstance(entry, dict):
                    continue
                if entry.get("opaque"):
                    g.sent_opaque_bytes += _int(entry.get("bytes"))
                else:
                    g.sent_text_bytes += _int(entry.get("bytes"))
    return list(groups.values())


def report_json(groups: list[Group], skipped: int, files: int) -> dict[str, Any]:
    return {
        "bytes_per_token": BYTES_PER_TOKEN,
        "note": (
            "est_resent_reasoning_tokens is an estimate: sent reasoning text bytes / "
            f"{BYTES_PER_TOKEN}; share denominator is billed input "
            "(uncached + cache read + cache write); opaque carriers are bytes only"
        ),
        "files": files,
        "skipped_lines": skipped,
        "groups": [g.as_dict() for g in groups],
    }
