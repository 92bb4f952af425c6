"""The public API, pinned: a change here is a deliberate, reviewed change of the API."""

from __future__ import annotations

import inspect

import reasonwire
import reasonwire.credentials
import reasonwire.errors
import reasonwire.http
import reasonwire.wire

TOP = [
    "DIALECTS",
    "Assistant",
    "AuthError",
    "BadRequest",
    "BudgetExceeded",
    "Carrier",
    "CarrierComplete",
    "ConfigError",
    "CredentialError",
    "Done",
    "MalformedBody",
    "Message",
    "Native",
    "NotFound",
    "PolicyRefusal",
    "ProviderError",
    "RateLimited",
    "ReasoningDelta",
    "ReasonwireError",
    "RequestOptions",
    "SSEDecoder",
    "SSEEvent",
    "ServerError",
    "StreamError",
    "StreamEvent",
    "System",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolResult",
    "ToolSpec",
    "TransportError",
    "TruncatedStream",
    "Turn",
    "UnknownDialect",
    "Usage",
    "UsageEvent",
    "User",
    "WireError",
    "__version__",
    "get_dialect",
]

WIRE = [
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

HTTP = [
    "DEFAULT_RETRY",
    "NO_RETRY",
    "REQUEST_ID_HEADERS",
    "RetryPolicy",
    "apost_json",
    "astream_post",
    "default_timeout",
    "encode_body",
    "error_from_response",
    "make_async_client",
    "make_client",
    "post_json",
    "provider_message",
    "request_id",
    "retry_after_seconds",
    "safe_url",
    "stream_post",
]

CREDENTIALS = [
    "REDACTED",
    "SECRET_FIELDS",
    "AuthFileKey",
    "DotenvKey",
    "EnvKey",
    "KeySource",
    "parse_dotenv",
    "parse_source",
    "read_key",
    "redact",
    "redact_obj",
    "register_secret",
]


def test_top_level_all_is_pinned() -> None:
    assert reasonwire.__all__ == TOP
    for name in TOP:
        assert hasattr(reasonwire, name), name


def test_wire_all_is_pinned() -> None:
    assert reasonwire.wire.__all__ == WIRE
    for name in WIRE:
        assert hasattr(reasonwire.wire, name), name


def test_http_and_credentials_all_are_pinned() -> None:
    assert reasonwire.http.__all__ == HTTP
    assert reasonwire.credentials.__all__ == CREDENTIALS
    for mod, names in ((reasonwire.http, HTTP), (reasonwire.credentials, CREDENTIALS)):
        for name in names:
            assert hasattr(mod, name), name


def test_top_level_names_are_the_same_objects() -> None:
    for name in TOP:
        if name in WIRE:
            assert getattr(reasonwire, name) is getattr(reasonwire.wire, name)
        elif name != "__version__":
            assert getattr(reasonwire, name) is getattr(reasonwire.errors, name)


def test_exception_tree() -> None:
    e = reasonwire
    assert issubclass(e.ProviderError, e.ReasonwireError)
    for cls in (e.BadRequest, e.AuthError, e.NotFound, e.RateLimited, e.ServerError):
        assert issubclass(cls, e.ProviderError)
    for cls in (e.MalformedBody, e.TruncatedStream, e.UnknownDialect):
        assert issubclass(cls, e.WireError)
    for cls in (e.ConfigError, e.CredentialError, e.TransportError, e.BudgetExceeded):
        assert issubclass(cls, e.ReasonwireError) and not issubclass(cls, e.ProviderError)


def test_every_dialect_is_registered() -> None:
    for name in reasonwire.DIALECTS:
        d = reasonwire.get_dialect(name)
        assert d.name == name
        assert isinstance(d.stream_decoder(), reasonwire.wire.StreamDecoder)


def test_key_signatures() -> None:
    sig = inspect.signature(reasonwire.http.post_json)
    assert list(sig.parameters)[:4] == ["client", "url", "body", "headers"]
    assert sig.parameters["retries"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(reasonwire.credentials.redact).parameters) == ["text"]
