"""The Gemini dialect (``POST {base}/models/{model}:generateContent`` and its stream)."""

from reasonwire.wire.gemini._dialect import (
    DIALECT,
    NO_EFFORT,
    SCHEMA_FIELD,
    STAND_IN_SIGNATURE,
    GeminiDialect,
)
from reasonwire.wire.gemini._parse import same_signature, synthetic_call_id
from reasonwire.wire.gemini._stream import GeminiStreamDecoder

__all__ = [
    "DIALECT",
    "NO_EFFORT",
    "SCHEMA_FIELD",
    "STAND_IN_SIGNATURE",
    "GeminiDialect",
    "GeminiStreamDecoder",
    "same_signature",
    "synthetic_call_id",
]
