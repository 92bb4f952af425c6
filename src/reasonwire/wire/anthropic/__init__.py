"""The Anthropic Messages dialect (``POST {base}/messages``)."""

from reasonwire.wire.anthropic._dialect import (
    BUDGETS,
    DEFAULT_MAX_TOKENS,
    DIALECT,
    AnthropicDialect,
    thinking_fields,
)
from reasonwire.wire.anthropic._stream import AnthropicStreamDecoder

__all__ = [
    "BUDGETS",
    "DEFAULT_MAX_TOKENS",
    "DIALECT",
    "AnthropicDialect",
    "AnthropicStreamDecoder",
    "thinking_fields",
]
