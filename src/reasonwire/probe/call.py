"""One observed call: counts what passes, builds the ledger row, writes it once.

A :class:`CallObserver` is created per call and shared with nothing else. Its methods never
raise: anything that goes wrong inside the probe is kept as a note in the row (``probeError``)
and the bytes keep flowing to the caller untouched.

Counting is incremental: chunks are fed to the dialect's own stream decoder (``wire/``) as
they pass, in batches of at most :data:`DECODE_BATCH` bytes, so when the call ends at most one
batch is left to decode - the turn is then assembled (pieces joined) and the row written. The
decoder is fed through its ``absorb`` where it has one (nobody reads the events here, so it may
take uniform runs of events in bulk; Chat Completions does). Durability: the row is written by
:meth:`CallObserver.finish`, which the wrapped stream calls in a ``finally`` when it ends, is
closed, fails or is abandoned, so the row is on disk (one ``O_APPEND`` write) by the time the
caller's response is closed. A non-streaming body is kept (up to :data:`MAX_PARSE_BYTES`) and
parsed once at the end, as the caller's own client parses it. Which of the three a call is in
(decoding a stream, buffering a body, counting bytes only) is its :data:`Mode`.

Ledger row (one JSON line per model call), the method's keys first, in this order::

    {"ts": "2026-09-10T12:00:00.000Z", "sessionId", "provider", "model", "purpose",
     "reasoningBytes", "textBytes",
     "usage": {"inputTokens", "outputTokens", "totalTokens", "cacheReadTokens",
               "cacheWriteTokens", "reasoningTokens"},          # omitted without usage
     ...our keys: "dialect", "stream", "status", "httpStatus", "toolBytes", "wireBytes",
     "sentReasoningBytes", "sentReasoning", "sentCarriers", "producedCarriers",
     "requestModel", "responseModel", "durationMs", "error", "probeError"}

``ts`` is the call's start in UTC with milliseconds and ``Z``. ``inputTokens`` is uncached
input only; billed input = ``inputTokens + cacheReadTokens + cacheWriteTokens``. The four
billing figures are 0 when the provider reported usage without that figure (it billed none
of it); ``totalTokens`` and ``reasoningTokens`` are the provider's own figures and are absent
when it did not report them (never computed). ``sentCarriers`` lists each carrier the request
sent back (kind, bytes, opaque, digest; a text carrier's ``tokenCount`` when the route's
tokenizer was given, ``promptCount`` when that count is the server's own; ``earlierTurn``
and the dialect's documented verdict ``earlierTurns`` for a carrier sent back from an earlier
turn) and ``producedCarriers`` each opaque carrier the answer returned (kind, bytes, digests):
the report ties the two by digest (:mod:`reasonwire.probe.carriers`).
``model`` is the answer's model, else the request's; ``requestModel`` and ``responseModel``
keep each apart (``None`` when not known), for the OTel GenAI attributes.
Rows written before this schema (``uncached``, ``cacheRead``, ``billedInput``...,
``+00:00``) stay readable: see :func:`reasonwire.probe.ledger.row_usage`.
"""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType

from reasonwire.errors import TruncatedStream
from reasonwire.probe.carriers import produced_carriers, sent_carriers
from reasonwire.wire.dialect import Dialect, StreamDecoder
from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import DialectName, JsonObject, Turn, Usage
from reasonwire.wire.registry import get_dialect

# A non-streaming body larger than this is passed through but not parsed.
MAX_PARSE_BYTES = 64 * 1024 * 1024

# Stream chunks are decoded once at least this many bytes wait. Why: a provider flushes one
# SSE event per chunk, and the decoder's fixed cost per call then outweighs its cost per
# byte (one-event chunks cost about 2.7x what 64 KB chunks cost per MB). The lag is bounded:
# at most this much is left to decode when the call ends (about 0.2 ms), so there is no
# end-of-call spike, and a chunk is counted within 32 KB of passing.
DECODE_BATCH = 32 * 1024


def ts_utc(epoch: float) -> str:
    """``2026-09-10T12:00:00.000Z``: UTC, milliseconds, ``Z``."""
    stamp = datetime.fromtimestamp(epoch, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def usage_row(usage: Usage | None, dialect: Dialect | None = None) -> dict[str, int] | None:
    """The method's usage object (key order fixed; see the module docstring)."""
    if usage is None:
        return None
    out = {"inputTokens": usage.input_uncached or 0, "outputTokens": usage.output or 0}
    total = dialect.total_tokens(usage) if dialect is not None else None
    if total is not None:
        out["totalTokens"] = total
    out["cacheReadTokens"] = usage.cache_read or 0
    out["cacheWriteTokens"] = usage.cache_write or 0
    if usage.reasoning is not None:
        out["reasoningTokens"] = usage.reasoning
    return out


def sent_row(carriers: list[SentCarrier]) -> dict[str, JsonObject]:
    out: dict[str, JsonObject] = {}
    for c in carriers:
        entry = out.setdefault(c.kind, {"bytes": 0, "count": 0, "opaque": c.opaque})
        entry["bytes"] += c.size
        entry["count"] += 1
    return out


def _nbytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass
class Decoding:
    """Counting a stream: chunks wait in ``pending`` until a batch of :data:`DECODE_BATCH`
    bytes is fed to the dialect's incremental decoder (through ``absorb``)."""

    decoder: StreamDecoder
    absorb: Callable[[bytes], object]
    pending: list[bytes] = field(default_factory=list)
    pending_bytes: int = 0


@dataclass
class Buffering:
    """Counting one JSON body: its chunks are kept (up to :data:`MAX_PARSE_BYTES`) and
    parsed once at the end, as the caller's own client parses it."""

    chunks: list[bytes] = field(default_factory=list)


@dataclass(frozen=True)
class BytesOnly:
    """Counting bytes only: an error body, an encoding not decoded, a body too large, or a
    decoder that failed. A stream decoder made before that keeps the turn it saw so far."""

    decoder: StreamDecoder | None = None


Mode = Decoding | Buffering | BytesOnly
"""How a :class:`CallObserver` counts what passes, one of three (a failure moves any mode to
:class:`BytesOnly`, never back)."""


class CallObserver:
    """Counts one call. Create, :meth:`feed` chunks, then :meth:`finish` exactly once.

    :meth:`feed` decodes the chunk at once (the dialect's incremental decoder) and
    :meth:`finish` builds the row and hands it to ``writer`` before it returns. As a context
    manager it does both ends: ``with obs as feed:`` feeds each chunk, and on leaving the
    call is marked complete (no exception), failed (an exception) or abandoned (the consumer
    closed the generator), then finished.
    """

    def __init__(
        self,
        *,
        session_id: str,
        dialect: DialectName,
        provider: str | None,
        model: str | None,
        purpose: str | None,
        stream: bool,
        sent: list[SentCarrier] | None = None,
        sent_entries: list[JsonObject] | None = None,
        http_status: int | None = None,
        content_encoding: str | None = None,
        writer: RowWriter | None = None,
    ) -> None:
        self.session_id = session_id
        self.dialect: DialectName = dialect
        self.provider = provider
        self.model = model
        self.purpose = purpose
        self.stream = stream
        self.sent = sent or []
        self.sent_entries = (
            sent_entries if sent_entries is not None else sent_carriers(None, self.sent)
        )
        self.http_status = http_status
        self.started = time.time()
        self.ended: float | None = None
        self.wire_bytes = 0
        self.complete = False
        self.status: str | None = None
        self.error: str | None = None
        self.probe_error: str | None = None
        self.row: JsonObject | None = None
        self._writer = writer
        self._lock = threading.Lock()
        self._finished = False
        self._dialect: Dialect | None = None
        self.decoded_bytes = 0
        """Stream bytes handed to the decoder so far (at most :data:`DECODE_BATCH` behind
        :attr:`wire_bytes` while the call runs)."""
        self._inflate: zlib._Decompress | None = None
        self.mode: Mode = BytesOnly()
        try:
            self._dialect = get_dialect(dialect)
            enc = (content_encoding or "").strip().lower()
            if enc in ("gzip", "x-gzip"):
                self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            elif enc == "deflate":
                self._inflate = zlib.decompressobj()
            elif enc not in ("", "identity"):
                self.probe_error = f"content-encoding {enc} not decoded: bytes not counted"
            if http_status is not None and http_status >= 400:
                pass  # an error body holds no turn: count its bytes only
            elif stream:
                decoder = self._dialect.stream_decoder()
                # a decoder may take events in bulk when nobody reads them (see absorb)
                absorb = getattr(decoder, "absorb", decoder.feed)
                self.mode = BytesOnly(decoder) if self.probe_error else Decoding(decoder, absorb)
            elif self.probe_error is None:
                self.mode = Buffering()
        except Exception as exc:  # the probe never breaks a call
            self._stop(exc)

    def _stop(self, why: BaseException | str) -> None:
        """Count bytes only from now on, with a note saying why."""
        mode = self.mode
        self.mode = BytesOnly(mode.decoder if not isinstance(mode, Buffering) else None)
        self.probe_error = why if isinstance(why, str) else f"{type(why).__name__}: {why}"

    # -- the call's path ---------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Count ``chunk`` (decoded incrementally, in batches of :data:`DECODE_BATCH`
        bytes). Never raises."""
        n = len(chunk)
        self.wire_bytes += n
        mode = self.mode
        if isinstance(mode, Decoding):
            mode.pending.append(chunk)
            mode.pending_bytes += n
            if mode.pending_bytes >= DECODE_BATCH:
                self._drain(mode)
        elif isinstance(mode, Buffering):
            try:
                data = self._inflate.decompress(chunk) if self._inflate is not None else chunk
                if self.wire_bytes > MAX_PARSE_BYTES:
                    self._stop("body too large to parse: bytes not counted")
                else:
                    mode.chunks.append(data)
            except Exception as exc:
                self._stop(exc)

    def _drain(self, mode: Decoding) -> None:
        """Decode what waits. Never raises: a decoder error stops counting, with a note."""
        pending = mode.pending
        if not pending:
            return
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        self.decoded_bytes += mode.pending_bytes
        mode.pending = []
        mode.pending_bytes = 0
        try:
            if self._inflate is not None:
                data = self._inflate.decompress(data)
            mode.absorb(data)
        except Exception as exc:
            self._stop(exc)

    def mark_complete(self) -> None:
        self.complete = True

    def mark_failed(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = f"{type(exc).__name__}: {exc}"

    def __enter__(self) -> Callable[[bytes], None]:
        return self.feed

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if exc is None:
                self.mark_complete()
            elif not isinstance(exc, GeneratorExit):  # the consumer walked away: not a failure
                self.mark_failed(exc)
        finally:
            self.finish()

    def finish(self, status: str | None = None) -> None:
        """Build the row and write it, once; it is on disk when this returns (unless the
        ledger cannot be written: the probe never fails a call). Never raises."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        try:
            self.ended = time.time()
            self.build_and_write(status)
        except Exception:
            pass

    def build_and_write(self, status: str | None = None) -> JsonObject | None:
        """Build the row and hand it to the writer. Never raises."""
        row: JsonObject | None = None
        try:
            row = self.row = self._row(status)
            if self._writer is not None:
                self._writer(row)
        except Exception:  # ledger I/O (read-only dir, disk full) never reaches the caller
            pass
        return row

    def _turn(self) -> tuple[Turn | None, str | None]:
        """The turn seen (complete or partial) and the decoder's complaint, if any."""
        if isinstance(self.mode, Decoding):
            self._drain(self.mode)
        mode = self.mode
        if isinstance(mode, BytesOnly):
            if mode.decoder is not None:
                try:
                    return mode.decoder.partial_turn(), None
                except Exception:
                    return None, None
            return None, None
        if isinstance(mode, Decoding):
            decoder = mode.decoder
            if self._inflate is not None:
                decoder.feed(self._inflate.flush())
            try:
                for ev in decoder.close():
                    turn = getattr(ev, "turn", None)
                    if isinstance(turn, Turn):
                        return turn, None
            except TruncatedStream as exc:
                partial = exc.partial if isinstance(exc.partial, Turn) else None
                return partial or decoder.partial_turn(), str(exc)
            except Exception as exc:
                return decoder.partial_turn(), f"{type(exc).__name__}: {exc}"
            return decoder.partial_turn(), None
        if self.http_status is None:  # no response came: nothing to parse
            return None, None
        body = b"".join(mode.chunks)
        if self._inflate is not None:
            body += self._inflate.flush()
        self.mode = BytesOnly()
        if not body.strip():
            return None, "empty body"
        try:
            return get_dialect(self.dialect).parse_response(body), None
        except Exception as exc:
            return None, f"{type(exc).__name__}: {exc}"

    def _row(self, status: str | None) -> JsonObject:
        turn, complaint = None, None
        try:
            turn, complaint = self._turn()
        except Exception as exc:
            complaint = f"{type(exc).__name__}: {exc}"
        if status is None:
            if self.error is not None:
                status = "failed"
            elif self.http_status is not None and self.http_status >= 400:
                status = "http_error"
            elif complaint is None and (turn is not None or self.complete):
                status = "ok"  # the answer's terminal event came (an SDK may close after it)
            elif not self.complete:
                status = "aborted"
            else:
                status = "incomplete"
        reasoning = text = tools = 0
        usage = None
        produced: list[JsonObject] = []
        model = self.model
        if turn is not None:
            reasoning = _nbytes(turn.reasoning_text)
            text = _nbytes(turn.text)
            tools = sum(_nbytes(tc.arguments) for tc in turn.tool_calls)
            usage = usage_row(turn.usage, self._dialect)
            model = turn.model or model
            try:
                produced = produced_carriers(turn)
            except Exception as exc:
                self.probe_error = self.probe_error or f"{type(exc).__name__}: {exc}"
        error = self.error
        if error is None and self.http_status is not None and self.http_status >= 400:
            error = f"HTTP {self.http_status}"
        if error is None and complaint is not None and status != "aborted":
            error = complaint
        row: JsonObject = {
            "ts": ts_utc(self.started),
            "sessionId": self.session_id,
            "provider": self.provider,
            "model": model,
            "purpose": self.purpose,
            "reasoningBytes": reasoning,
            "textBytes": text,
        }
        if usage is not None:
            row["usage"] = usage
        row.update(
            {
                "dialect": self.dialect,
                "stream": self.stream,
                "status": status,
                "httpStatus": self.http_status,
                "toolBytes": tools,
                "wireBytes": self.wire_bytes,
                "sentReasoningBytes": sum(c.size for c in self.sent),
                "sentReasoning": sent_row(self.sent),
                "sentCarriers": self.sent_entries,
                "producedCarriers": produced,
                "requestModel": self.model,
                "responseModel": turn.model if turn is not None else None,
                "durationMs": round(((self.ended or time.time()) - self.started) * 1000, 1),
            }
        )
        if error is not None:
            row["error"] = error[:500]
        if self.probe_error is not None:
            row["probeError"] = self.probe_error[:500]
        return row


def relay(chunks: Iterable[bytes], obs: CallObserver) -> Iterator[bytes]:
    """Yield ``chunks`` unchanged and in order, counting each before it is handed on; the
    row is written when the iteration ends, whichever way (``obs`` as a context manager)."""
    with obs as feed:
        for chunk in chunks:
            feed(chunk)
            yield chunk


async def arelay(chunks: AsyncIterable[bytes], obs: CallObserver) -> AsyncIterator[bytes]:
    """:func:`relay` for an async iterable."""
    with obs as feed:
        async for chunk in chunks:
            feed(chunk)
            yield chunk


RowWriter = Callable[[JsonObject], None]
"""Takes a finished row (see :mod:`reasonwire.probe.recorder`)."""
