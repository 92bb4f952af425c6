"""The contract every wire dialect module fulfils, and the registry that finds them.

Code above ``wire/`` asks :func:`get_dialect` for a dialect by name (a route record says which)
and calls these methods; it never branches on a provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from reasonwire.wire.model import (
    JSON,
    Assistant,
    Dialect,
    Message,
    RequestOptions,
    StreamEvent,
    Turn,
)


@runtime_checkable
class StreamDecoder(Protocol):
    """Incremental decoder: bytes in, neutral events out.

    ``feed`` accepts any split of the byte stream; ``close`` flushes and returns the final
    events, ending with :class:`~reasonwire.wire.model.Done`, or raises
    :class:`~reasonwire.errors.TruncatedStream` (with the partial turn) when the stream ended
    before its terminal event. ``partial_turn`` returns what was assembled so far at any time.
    """

    def feed(self, data: bytes) -> list[StreamEvent]: ...

    def close(self) -> list[StreamEvent]: ...

    def partial_turn(self) -> Turn: ...


class WireDialect(Protocol):
    """One wire API: request building, response parsing, stream decoding, replay."""

    name: Dialect

    def request_path(self, options: RequestOptions) -> str:
        """Path below the base URL (``/chat/completions``, ``/models/m:generateContent``)."""
        ...

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        """The JSON body for ``messages``; assistant turns replay their native payload."""
        ...

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        """Parse a non-streaming response body (bytes, text, or already-decoded JSON)."""
        ...

    def stream_decoder(self) -> StreamDecoder:
        """A fresh incremental decoder for one streamed response."""
        ...

    def replay(self, message: Assistant | Turn) -> list[JSON]:
        """The assistant payload to send back, every carrier exactly as received."""
        ...

    def strip(self, message: Assistant | Turn) -> list[JSON]:
        """The same payload with every reasoning carrier removed."""
        ...


_REGISTRY: dict[str, WireDialect] = {}


def register(dialect: WireDialect) -> WireDialect:
    _REGISTRY[dialect.name] = dialect
    return dialect


def get_dialect(name: str) -> WireDialect:
    """The dialect called ``name`` (``chat``, ``responses``, ``anthropic``, ``gemini``)."""
    from reasonwire.errors import UnknownDialect
    from reasonwire.wire import anthropic, chat, gemini, responses  # noqa: F401  (registers)

    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownDialect(
            f"unknown dialect {name!r}; expected one of: {', '.join(sorted(_REGISTRY))}"
        ) from None
