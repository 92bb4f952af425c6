"""The Responses API dialect (``POST {base}/responses``): OpenAI, OpenRouter, xAI, DeepSeek."""

from reasonwire.wire.responses._dialect import (
    DIALECT,
    PROFILES,
    TEXT_CARRIER_KINDS,
    ResponsesDialect,
    reasoning_input_item,
    tool_spec,
)
from reasonwire.wire.responses._parse import error_message
from reasonwire.wire.responses._stream import ResponsesStreamDecoder

__all__ = [
    "DIALECT",
    "PROFILES",
    "TEXT_CARRIER_KINDS",
    "ResponsesDialect",
    "ResponsesStreamDecoder",
    "error_message",
    "reasoning_input_item",
    "tool_spec",
]
