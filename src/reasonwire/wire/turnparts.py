"""What a parser gathers from the parts of one answer, and the :class:`Turn` it makes.

Anthropic content blocks, Gemini parts and Responses output items differ in shape, but each
parser collects the same four things in order (visible text, reasoning text, tool calls,
carriers) and reads the id and model name of the answer the same way, so that is written
once here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reasonwire.wire.model import JSON, Carrier, DialectName, Native, ToolCall, Turn, Usage


def _text_or_none(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


@dataclass
class TurnParts:
    """The pieces of one answer, in the order its parts came."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    carriers: list[Carrier] = field(default_factory=list)

    def turn(
        self,
        native: Native,
        raw: Mapping[str, JSON],
        *,
        usage: Usage | None,
        finish: JSON,
        names: tuple[str, str] = ("id", "model"),
        reasoning_join: str = "",
    ) -> Turn:
        """The Turn of these pieces: text joined with no separator (what stream deltas add up
        to), reasoning joined with ``reasoning_join``; the answer's id and model are the
        string values of ``raw`` under ``names``, ``finish`` its finish reason when a string."""
        dialect: DialectName = native.dialect
        return Turn(
            dialect=dialect,
            text="".join(self.text),
            reasoning_text=reasoning_join.join(self.reasoning),
            tool_calls=tuple(self.calls),
            carriers=tuple(self.carriers),
            usage=usage,
            response_id=_text_or_none(raw.get(names[0])),
            model=_text_or_none(raw.get(names[1])),
            finish_reason=_text_or_none(finish),
            native=native,
            raw=raw,
        )


__all__ = ["TurnParts"]
