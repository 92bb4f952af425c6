"""The only code that knows provider JSON shapes: neutral types, SSE, one object per dialect.

``get_dialect(name)`` returns the :class:`Dialect` object of a wire API; everything above
``wire/`` asks it instead of knowing a provider (see ``DIALECTS.md`` beside this file).
"""

from reasonwire.wire.dialect import Dialect, StreamDecoder, StreamProjector
from reasonwire.wire.facts import (
    CarrierKind,
    Control,
    ErrorInfo,
    SentCarrier,
    ServerState,
    Variants,
)
from reasonwire.wire.model import (
    ABSENT,
    DIALECTS,
    JSON,
    Assistant,
    Carrier,
    CarrierComplete,
    DialectName,
    Done,
    Message,
    Native,
    ReasoningDelta,
    RequestOptions,
    StreamError,
    StreamEvent,
    System,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    ToolSpec,
    Turn,
    Usage,
    UsageEvent,
    User,
)
from reasonwire.wire.profile import Profile
from reasonwire.wire.registry import detect, dialect_for_path, dialects, get_dialect
from reasonwire.wire.sse import SSEDecoder, SSEEvent

__all__ = [
    "ABSENT",
    "DIALECTS",
    "JSON",
    "Assistant",
    "Carrier",
    "CarrierComplete",
    "CarrierKind",
    "Control",
    "Dialect",
    "DialectName",
    "Done",
    "ErrorInfo",
    "Message",
    "Native",
    "Profile",
    "ReasoningDelta",
    "RequestOptions",
    "SSEDecoder",
    "SSEEvent",
    "SentCarrier",
    "ServerState",
    "StreamDecoder",
    "StreamError",
    "StreamEvent",
    "StreamProjector",
    "System",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolResult",
    "ToolSpec",
    "Turn",
    "Usage",
    "UsageEvent",
    "User",
    "Variants",
    "detect",
    "dialect_for_path",
    "dialects",
    "get_dialect",
]
