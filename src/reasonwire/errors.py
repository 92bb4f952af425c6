"""The one exception tree of reasonwire.

::

    ReasonwireError
    ├── ConfigError            bad option, route, settings file or path (before any call)
    │   ├── TemplateRenderError  a chat template refused the messages or failed to render
    │   └── EvidenceError      an evidence file that cannot be accepted (every problem listed)
    ├── CredentialError        a key source is missing or unreadable (never shows the key)
    ├── WireError              bytes that do not decode as the expected dialect
    │   ├── MalformedBody      a JSON body or SSE payload that is not valid JSON / not the shape
    │   ├── TruncatedStream    a stream that ended before its terminal event
    │   ├── UnknownDialect     input whose dialect cannot be detected
    │   ├── ShapeError         a request body without the dialect's request shape
    │   └── FastLoadRefused    the fast JSON loader cannot promise json.loads's value
    ├── ProviderError          the provider answered with an error status
    │   ├── BadRequest         4xx other than 401/403/404/429 (carries the provider's message)
    │   ├── AuthError          401 / 403
    │   ├── NotFound           404
    │   ├── RateLimited        429 (``retry_after`` seconds when the provider said)
    │   ├── ServerError        5xx
    │   └── StreamFailed       an error event inside a stream whose status was 200
    ├── TransportError         connection refused/dropped, timeout (no HTTP status)
    │   └── StaleConnection    a reused keep-alive connection failed before any answer byte
    ├── BudgetExceeded         a call would overshoot the spending budget
    ├── PolicyRefusal          governance refused (fail closed), with the reason
    ├── HookRefused            the LiteLLM hook refused a call (status, reason, headers)
    ├── StoreUnavailable       the evidence store or vault cannot read or commit
    ├── CollectError           evidence rows that cannot make an evidence file at all
    ├── ToolLoopLimit          the model kept calling tools past ``max_rounds``
    ├── MissingExtra           an optional dependency is not installed (a ModuleNotFoundError)
    ├── Unreadable             a doctor input that is no session of any known format
    └── SimError               an error answer of the simulator, in the dialect's error shape

Internal signals (``_private``: raised and caught inside one module, never reaching a caller)
live here too, so that every exception reasonwire defines is in this one tree.

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


class ShapeError(WireError, ValueError):
    """A request body does not have the dialect's request shape (a ``ValueError`` too)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class FastLoadRefused(WireError, ValueError):
    """The fast JSON loader cannot promise ``json.loads``'s value: use the exact path (a
    ``ValueError``, which is what the stream decoders catch to take it)."""


class TransportError(ReasonwireError):
    """No HTTP answer: connection refused or dropped, or a timeout."""


class StaleConnection(TransportError):
    """A reused keep-alive connection failed before any byte of an answer was read (the
    server had closed it, or closed it on this request). The request may be sent again on
    a fresh connection; the gateway does so under a new evidence row (one row per attempt,
    each committed before its bytes go out)."""


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


class EvidenceError(ConfigError):
    """The evidence file cannot be accepted; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class HookRefused(ReasonwireError):
    """A call the LiteLLM hook refused: the HTTP status and the reason (the row is already
    recorded, or, for ``store-unavailable``, could not be), and any response headers
    (``Retry-After``)."""

    def __init__(
        self, status: int, reason: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message
        self.headers = headers


class StoreUnavailable(ReasonwireError):
    """The store could not read or commit (database down, connection broken, locked past its
    bound). The gateway answers 503 with ``Retry-After`` and makes no upstream call."""


class CollectError(ReasonwireError):
    """The rows cannot make an evidence file at all (no subject); ``str()`` is one line."""


class MissingExtra(ReasonwireError, ModuleNotFoundError):
    """An optional dependency is not installed; ``str()`` is the one-line message. Also a
    ``ModuleNotFoundError``, so ``except ImportError`` keeps working. Made by
    :mod:`reasonwire._extras`, which knows the extras and writes the message."""

    def __init__(self, message: str, *, extra: str, feature: str, module: str) -> None:
        super().__init__(message, name=module)
        self.extra = extra
        self.feature = feature


class Unreadable(ReasonwireError):
    """A doctor input is not a session of any known format (exit 2, one line)."""


class SimError(ReasonwireError):
    """An error answer of the simulator; the dialect module renders it in its own error
    shape."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        etype: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.etype = etype
        self.headers = headers or {}


# -- internal signals: raised and caught inside one module -----------------------------------


class _StoreDown(StoreUnavailable):
    """Raised inside the gateway when a store step before the upstream call failed or ran
    past the request's store time budget."""


class _WouldWait(ReasonwireError):
    """Raised inside the gateway when a store read tried on the event loop would have to
    wait; the work is done again on a store thread."""


class _CodecMismatch(ReasonwireError):
    """A value that does not fit its record type (:mod:`reasonwire.method.codec`); ``path``
    grows (reversed) as it propagates."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.path: list[str] = []


class _RaisedByTemplate(ReasonwireError):
    """What ``raise_exception(...)`` raises inside a chat template
    (:mod:`reasonwire.templates.render`)."""


class _DroppedConnection(ReasonwireError):
    """Raised inside a simulator response body to make the server cut the connection (fault
    ``drop``, :mod:`reasonwire.sim.app`)."""


class _ClientDisconnect(ReasonwireError):
    """The client left before its request body was read to the end
    (:mod:`reasonwire.govern.asgi`)."""


class _Refused(ReasonwireError):
    """Raised from an HTTP parser callback of the gateway's server (:mod:`reasonwire.govern.
    http1`): answer the status it was given and close."""


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
