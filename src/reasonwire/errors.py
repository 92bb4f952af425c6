"""The one exception tree of reasonwire.

::

    ReasonwireError
    ├── ConfigError            bad option, route, settings file or path (before any call)
    ├── CredentialError        a key source is missing or unreadable (never shows the key)
    ├── WireError              bytes that do not decode as the expected dialect
    │   ├── MalformedBody      a JSON body or SSE payload that is not valid JSON / not the shape
    │   ├── TruncatedStream    a stream that ended before its terminal event
    │   └── UnknownDialect     input whose dialect cannot be detected
    ├── ProviderError          the provider answered with an error status
    │   ├── BadRequest         4xx other than 401/403/404/429 (carries the provider's message)
    │   ├── AuthError          401 / 403
    │   ├── NotFound           404
    │   ├── RateLimited        429 (``retry_after`` seconds when the provider said)
    │   └── ServerError        5xx
    ├── TransportError         connection refused/dropped, timeout (no HTTP status)
    ├── BudgetExceeded         a call would overshoot the spending budget
    └── PolicyRefusal          governance refused (fail closed), with the reason

Provider errors carry the HTTP status, an excerpt of the provider's error body and the request
id, never a key: messages pass through :func:`reasonwire.credentials.redact` before they are
stored on the exception.
"""

from __future__ import annotations

from typing import Any

_EXCERPT = 500


class ReasonwireError(Exception):
    """Base of every error reasonwire raises on purpose."""


class ConfigError(ReasonwireError):
    """A bad option, route, settings file or output path, found before any call is made."""


class CredentialError(ReasonwireError):
    """A key could not be read from its source. The message names the source, never the key."""


class WireError(ReasonwireError):
    """Bytes that do not decode as the expected dialect."""


class MalformedBody(WireError):
    """A JSON body or SSE payload that is not valid JSON or not the dialect's shape."""


class TruncatedStream(WireError):
    """A stream ended before its terminal event. ``partial`` holds what was decoded so far."""

    def __init__(self, message: str, partial: Any = None) -> None:
        super().__init__(message)
        self.partial = partial


class UnknownDialect(WireError):
    """Input whose dialect (or stream vs JSON form) cannot be detected."""


class TransportError(ReasonwireError):
    """No HTTP answer: connection refused or dropped, or a timeout."""


class BudgetExceeded(ReasonwireError):
    """A call would overshoot the spending budget; nothing was sent."""


class PolicyRefusal(ReasonwireError):
    """Governance refused a request (fail closed). ``reason`` is a short machine word."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class ProviderError(ReasonwireError):
    """The provider answered with an error status.

    ``status`` is the HTTP status, ``body_excerpt`` the first 500 characters of the error body
    (already redacted), ``provider_message`` the error message the provider put in its JSON
    when it did, ``request_id`` the provider's request id header when present,
    ``retry_after`` the seconds the provider asked to wait (``Retry-After``; any status may
    carry it, a 503 often does) when it did.
    """

    def __init__(
        self,
        status: int,
        body_excerpt: str = "",
        *,
        provider_message: str | None = None,
        request_id: str | None = None,
        url: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        from reasonwire.redaction import redact

        self.status = status
        self.retry_after = retry_after
        self.body_excerpt = redact(body_excerpt[:_EXCERPT])
        self.provider_message = redact(provider_message) if provider_message else None
        self.request_id = request_id
        self.url = url
        detail = self.provider_message or self.body_excerpt
        where = f" from {url}" if url else ""
        rid = f" (request id {request_id})" if request_id else ""
        super().__init__(f"HTTP {status}{where}{rid}: {detail}")


class BadRequest(ProviderError):
    """A 4xx other than 401/403/404/429; the provider's message says which field it refused."""


class AuthError(ProviderError):
    """401 or 403."""


class NotFound(ProviderError):
    """404: unknown model or endpoint."""


class RateLimited(ProviderError):
    """429. ``retry_after`` holds the seconds the provider asked for, when it did."""


class ServerError(ProviderError):
    """5xx."""


class StreamFailed(ProviderError):
    """The provider reported an error inside a stream whose HTTP status was 200."""


class ToolLoopLimit(ReasonwireError):
    """The model kept calling tools past ``max_rounds``."""


class TemplateRenderError(ConfigError):
    """A chat template refused the messages or failed to render; ``str()`` is its message."""


def provider_error_for(status: int) -> type[ProviderError]:
    """The exception class for an HTTP error status."""
    if status == 429:
        return RateLimited
    if status in (401, 403):
        return AuthError
    if status == 404:
        return NotFound
    if status >= 500:
        return ServerError
    return BadRequest
