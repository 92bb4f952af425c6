"""The OpenAI-compatible Chat Completions dialect (``POST {base}/chat/completions``)."""

from reasonwire.wire.chat._dialect import DIALECT, ChatDialect
from reasonwire.wire.chat._facts import CARRIER_FIELDS, TOOL_CALL_CARRIER
from reasonwire.wire.chat._parse import detail_is_opaque
from reasonwire.wire.chat._profiles import CHAT_PROFILES, ChatProfile, get_profile
from reasonwire.wire.chat._stream import ChatStreamDecoder, DetailsMerger, merge_reasoning_details

__all__ = [
    "CARRIER_FIELDS",
    "CHAT_PROFILES",
    "DIALECT",
    "TOOL_CALL_CARRIER",
    "ChatDialect",
    "ChatProfile",
    "ChatStreamDecoder",
    "DetailsMerger",
    "detail_is_opaque",
    "get_profile",
    "merge_reasoning_details",
]
