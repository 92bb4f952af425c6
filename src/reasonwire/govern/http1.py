"""A lean HTTP/1.1 server for one ASGI app: what ``reasonwire gateway serve`` runs on.

Why not uvicorn: the gateway answers on loopback to one kind of client, and under load the
server layer (uvicorn's protocol, its ASGI cycle, its middleware) was a quarter of the
gateway's CPU per call (profiled under wrk). This server does what the gateway needs and what
HTTP/1.1 requires of an origin server, on an ``asyncio.Protocol`` and the ``httptools``
(llhttp) parser, and nothing else: no WebSocket, no HTTP/2, no TLS (loopback), no proxy
headers, no access log. The app is any ASGI 3 app (``http`` scopes; the gateway is one), so
the gateway keeps running under any ASGI server, and uvicorn stays one option away
(``gateway serve --server uvicorn``).

The rules, with the RFC 9112 (HTTP/1.1) and RFC 9110 (HTTP semantics) sections they come from:

- Framing of a request (9112 §6): llhttp reads ``Content-Length`` and chunked
  ``Transfer-Encoding`` bodies. A request with both, with a ``Transfer-Encoding`` whose last
  coding is not ``chunked``, or with an invalid or repeated ``Content-Length``, is answered
  ``400`` and the connection closed (9112 §6.1, §6.3: the request smuggling rules). Trailer
  fields are read and dropped (9110 §6.5.1: never merged into the header section).
- A malformed request line or field, obsolete line folding included (9112 §5.2), is answered
  ``400`` and the connection closed (9112 §2.2, §3); an HTTP/1.1 request without exactly one
  ``Host`` field likewise (9112 §3.2). A request head longer than :attr:`Limits.max_head`
  bytes is answered ``431`` (RFC 6585 §5; ``414`` when the request target alone is over it,
  9110 §15.5.15), and one with more than :attr:`Limits.max_fields` fields ``431``, both
  closed: past them nothing is buffered.
- Persistence (9112 §9.3): HTTP/1.1 connections stay open between requests unless either side
  says ``Connection: close``; HTTP/1.0 ones are closed after each response (``connection:
  close`` is sent). Pipelined requests (9112 §9.3.2) are answered in the order received: a
  request that arrives while another is being answered waits (and the connection stops reading
  until it starts). An idle connection is closed after :attr:`Limits.keep_alive` seconds, and
  so is one whose request head is still incomplete then (answered ``408``, 9110 §15.5.9).
- Responses: a response the app gives a ``content-length`` is sent as it is, head and body in
  one write when the body comes in one message; a response without one is sent chunked to an
  HTTP/1.1 client (9112 §7.1) and delimited by closing the connection for HTTP/1.0 (9112 §6.3,
  a server never sends ``Transfer-Encoding`` to a 1.0 client, §6.1). ``HEAD`` answers and
  204/304 carry no body (9110 §6.4.1). Every response carries ``Date`` (9110 §6.6.1: an origin
  server with a clock sends it). A ``100 Continue`` is sent when the app first asks for the body
  of a request that expects one (9110 §10.1.1).
- The body is handed to the app as it arrives; the connection stops reading while more than
  :attr:`Limits.body_buffer` bytes wait unread (the app reads at its pace). A response that ends
  before its request body was read to the end closes the connection, after a short lingering
  read that keeps the client's unsent bytes from resetting the response (9112 §9.6).
- Writes wait while the transport's buffer is full (``pause_writing``/``resume_writing``), so
  a stream to a slow client holds the relay, not memory. A client that leaves is the app's
  ``http.disconnect`` (the gateway's relay cancels its upstream call on it); the app's sends
  after that are dropped.
- An app that fails before its response starts is answered ``500`` and the connection closed;
  one that fails mid-response has its connection closed (the client sees the body cut).
- Stopping (:func:`serve`): the listening socket closes, idle connections close, requests in
  flight are finished (their connections close after them) for up to ``grace`` seconds, then
  the rest are closed; then ``on_close`` runs (the gateway writes its outbox).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
import urllib.parse
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import cast

import httptools

from reasonwire.errors import _Refused
from reasonwire.govern.asgi import Message, Receive, Scope, Send

log = logging.getLogger(__name__)

App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Limits:
    """What the server itself bounds (the app bounds the rest: the gateway's own header and
    body limits are smaller, and refuse with an evidence row)."""

    max_head: int = 64 * 1024
    """Bytes of request line and header fields."""
    max_fields: int = 256
    """Header fields in one request."""
    body_buffer: int = 64 * 1024
    """Bytes of request body held unread before the connection stops reading."""
    keep_alive: float = 5.0
    """Seconds an idle connection (or an incomplete request head) is kept."""
    linger: float = 2.0
    """Seconds a connection closing before its request body ended keeps reading (and
    dropping) what the client still sends."""


_REASON = {s.value: s.phrase.encode("ascii") for s in HTTPStatus}
_STATUS_LINE = {code: b"HTTP/1.1 %d %s\r\n" % (code, phrase) for code, phrase in _REASON.items()}
_NO_BODY_STATUS = frozenset({204, 304})
_CR, _LF, _COLON = b"\r\n:"
"""Byte values, for ``in`` on bytes: an int is looked for in a few tens of nanoseconds, a
one-byte ``bytes`` in ~250 (CPython 3.11 takes the buffer protocol's slow path); five
such checks per response field were most of ``_head``'s time, measured."""
# how a response body is framed (9112 §6.3)
_NONE, _LENGTH, _CHUNKED, _UNTIL_CLOSE = range(4)


def _status_line(status: int) -> bytes:
    return _STATUS_LINE.get(status) or b"HTTP/1.1 %d \r\n" % status


class _Clock:
    """The ``Date`` field, formatted once a second (9110 §5.6.7 IMF-fixdate)."""

    __slots__ = ("_field", "_second")

    def __init__(self) -> None:
        self._second = -1
        self._field = b""

    def field(self) -> bytes:
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._field = b"date: " + formatdate(now, usegmt=True).encode("ascii") + b"\r\n"
        return self._field


_CLOCK = _Clock()


def _plain(status: int, *, close: bool = True) -> bytes:
    """A whole plain-text response written by the server itself (the app never saw the
    request)."""
    text = _REASON.get(status, b"Error")
    head = [_status_line(status), _CLOCK.field()]
    head.append(b"content-type: text/plain; charset=utf-8\r\n")
    head.append(b"content-length: %d\r\n" % len(text))
    if close:
        head.append(b"connection: close\r\n")
    return b"".join(head) + b"\r\n" + text


class _Exchange:
    """One request and its response: the app's ``receive`` and ``send``."""

    __slots__ = (
        "body",
        "buffered",
        "conn",
        "continue_expected",
        "disconnected",
        "finished",
        "head",
        "head_only",
        "keep_alive",
        "length",
        "mode",
        "more_body",
        "request_read",
        "scope",
        "sent",
        "started",
        "wakeup",
    )

    def __init__(
        self, conn: _Connection, scope: Scope, keep_alive: bool, continue_expected: bool
    ) -> None:
        self.conn = conn
        self.scope = scope
        self.keep_alive = keep_alive
        self.continue_expected = continue_expected
        self.body: list[bytes] = []
        self.buffered = 0
        self.more_body = True  # the request body is still arriving
        self.request_read = False  # its last http.request message was handed over
        self.disconnected = False
        self.wakeup: asyncio.Event | None = None
        self.started = False
        self.finished = False  # the response's last body message was sent
        self.head: bytes | None = None  # built at http.response.start, written with the body
        self.head_only = scope["method"] == "HEAD"
        self.mode = _NONE
        self.length = 0
        self.sent = 0

    def _wake(self) -> None:
        if self.wakeup is not None:
            self.wakeup.set()

    async def receive(self) -> Message:
        if self.continue_expected:
            self.continue_expected = False
            if not self.disconnected and not self.finished and self.more_body:
                self.conn.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        while True:
            if self.disconnected or self.finished:
                return {"type": "http.disconnect"}
            if not self.request_read and (self.body or not self.more_body):
                data = self.body[0] if len(self.body) == 1 else b"".join(self.body)
                self.body.clear()
                self.buffered = 0
                self.request_read = not self.more_body
                self.conn.resume()
                return {"type": "http.request", "body": data, "more_body": self.more_body}
            self.conn.resume()
            if self.wakeup is None:
                self.wakeup = asyncio.Event()
            self.wakeup.clear()
            await self.wakeup.wait()

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.started:
                raise RuntimeError("http.response.start sent twice")
            self.head = self._head(message["status"], message.get("headers", []))
            self.started = True
        elif kind == "http.response.body":
            if not self.started or self.finished:
                raise RuntimeError("http.response.body outside a response")
            more = bool(message.get("more_body", False))
            await self._body(message.get("body", b""), more)
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    def _head(self, status: int, headers: list[tuple[bytes, bytes]]) -> bytes:
        """The status line and fields: the app's, less those the server writes itself
        (framing, ``Connection``, ``Date``); fields with CR, LF or a colon in the name are
        the app's error (they would split the head)."""
        if status < 200 or status > 999:
            raise RuntimeError(f"status {status} is not a final response status")
        out = [_status_line(status)]
        bodiless = status in _NO_BODY_STATUS
        length: int | None = None
        for name, value in headers:
            low = name.lower()
            if _CR in low or _LF in low or _COLON in low or _CR in value or _LF in value:
                raise RuntimeError(f"invalid response header {low!r}")
            if low == b"content-length":
                text = value.strip()
                if not (text.isdigit() and text.isascii()):
                    raise RuntimeError(f"invalid content-length {value!r}")
                length = int(text)
                if bodiless:
                    continue  # never on 204/304 (9110 §8.6)
            elif low == b"transfer-encoding" or low == b"date":
                continue  # the server frames the body and dates the response itself
            elif low == b"connection":
                if b"close" in value.lower():
                    self.keep_alive = False
                continue
            out.append(low + b": " + value + b"\r\n")
        if bodiless or self.head_only:
            self.mode = _NONE
        elif length is not None:
            self.mode, self.length = _LENGTH, length
        elif self.scope["http_version"] == "1.1":
            self.mode = _CHUNKED
            out.append(b"transfer-encoding: chunked\r\n")
        else:
            self.mode = _UNTIL_CLOSE
            self.keep_alive = False
        if self.more_body:  # answered before the request body ended: closed after
            self.keep_alive = False
        conn = self.conn
        if not self.keep_alive or (conn.closing and not conn.waiting):
            out.append(b"connection: close\r\n")
        out.append(_CLOCK.field())
        out.append(b"\r\n")
        return b"".join(out)

    async def _body(self, body: bytes, more: bool) -> None:
        mode = self.mode
        if mode == _LENGTH:
            self.sent += len(body)
            if self.sent > self.length:
                self.finished = True
                self.conn.abort()
                raise RuntimeError("response body longer than its content-length")
            data = body
        elif mode == _CHUNKED:
            # an empty message is no chunk: a zero-size chunk would end the body (9112 §7.1)
            data = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
            if not more:
                data += b"0\r\n\r\n"
        elif mode == _UNTIL_CLOSE:
            data = body
        else:
            data = b""
        if self.head is not None:
            data = self.head + data
            self.head = None
        if not more:
            self.finished = True
            if mode == _LENGTH and self.sent != self.length:
                self.keep_alive = False  # shorter than announced: the close shows it
        conn = self.conn
        if self.disconnected:
            return
        if data:
            conn.write(data)
        if not more:
            conn.answered(self)
        elif conn.writing_paused:
            await conn.drain()


class _Connection(asyncio.Protocol):
    """One client connection: parses requests, runs the app on each, in order."""

    def __init__(self, server: _Server) -> None:
        self.server = server
        self.app = server.app
        self.limits = server.limits
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.client: tuple[str, int] | None = None
        self.local: tuple[str, int] | None = None
        # the request being parsed
        self.url = b""
        self.fields: list[tuple[bytes, bytes]] = []
        self.hosts = 0
        self.in_head = False
        self.head_bytes = 0
        self.head_wire = 0
        self.expects = False
        self.parsing: _Exchange | None = None  # receives the body being parsed
        # the request being answered, and the ones waiting behind it
        self.active: _Exchange | None = None
        self.task: asyncio.Task[None] | None = None
        self.waiting: deque[_Exchange] = deque()
        self.refused: int | None = None  # a status to answer once the waiting ones are
        self.closing = False  # no new request will be read
        self.lingering = False
        self.reading_paused = False
        self.writing_paused = False
        self.writable: asyncio.Event | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.idle_since = 0.0  # when the connection last became idle

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports have asyncio.Transport's methods without subclassing it
        self.transport = cast(asyncio.Transport, transport)
        self.client = _address(transport.get_extra_info("peername"))
        self.local = _address(transport.get_extra_info("sockname"))
        self.server.connections.add(self)
        self._idle_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)
        self.closing = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for ex in (self.active, self.parsing):
            if ex is not None:
                ex.disconnected = True
                ex._wake()
        self.waiting.clear()
        if self.writable is not None:
            self.writable.set()
        self.server.forget(self)

    def eof_received(self) -> bool | None:
        # The client sent its last byte (a half-close): requests read so far are answered,
        # then the connection closes (returning True keeps the write side open).
        self.closing = True
        if self.lingering:
            self.close()  # the client has sent all it will: the lingering read is over
        elif self.in_head or self.parsing is not None:
            self._refuse(400)  # a request cut short (9112 §8: an incomplete message)
        elif self.active is None:
            self.close()
        return True

    def pause_writing(self) -> None:
        self.writing_paused = True
        if self.writable is None:
            self.writable = asyncio.Event()
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.writable is not None:
            self.writable.set()

    def data_received(self, data: bytes) -> None:
        if self.lingering or self.refused is not None:
            return  # after a refusal or while closing: what comes is dropped
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError:
            self._refuse(self._callback_status)
        except httptools.HttpParserUpgrade:
            self._upgrade()
        except httptools.HttpParserError:
            self._refuse(400)
        else:
            if self.in_head:  # a head still incomplete: what it holds so far counts
                self.head_wire += len(data)
                if self.head_wire > self.limits.max_head:
                    self._refuse(431)
        # Requests start once the bytes that came with their head were parsed whole, so a
        # request refused by what follows its head (a bad framing, a bad first chunk) never
        # reaches the app.
        if self.active is None and self.waiting and not self._closed():
            self._start(self.waiting.popleft())
        if self.waiting:
            self.pause_reading()  # pipelined requests wait their turn, unread past them

    def _upgrade(self) -> None:
        """llhttp stops at a request with ``Upgrade`` (or CONNECT), and hands what follows
        its head over as another protocol's bytes: its body too. This server speaks no other
        protocol, so it ignores the Upgrade (RFC 9110 §7.8) where that loses nothing: a
        request without a body is answered as usual, then the connection closes; one that
        declares a body is refused (400), as its body cannot be read."""
        self.closing = True
        self.pause_reading()
        ex = self.waiting[-1] if self.waiting else None
        if ex is None:
            return
        for name, value in ex.scope["headers"]:
            if name == b"transfer-encoding" or (name == b"content-length" and value != b"0"):
                self.waiting.pop()
                self._refuse(400)
                return
        ex.more_body = False

    # -- llhttp callbacks --------------------------------------------------------------------

    _callback_status = 400

    def _callback_refuse(self, status: int) -> None:
        self._callback_status = status
        raise _Refused(status)

    def on_message_begin(self) -> None:
        self.in_head = True
        self.head_bytes = 0
        self.head_wire = 0
        self.url = b""
        self.fields = []
        self.hosts = 0
        self.expects = False

    def on_url(self, url: bytes) -> None:
        self.url += url
        self.head_bytes += len(url)
        if len(self.url) > self.limits.max_head:
            self._callback_refuse(414)

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.in_head:
            return  # a trailer field: read and dropped (9110 §6.5.1)
        fields = self.fields
        self.head_bytes += len(name) + len(value) + 4
        if len(fields) >= self.limits.max_fields or self.head_bytes > self.limits.max_head:
            self._callback_refuse(431)
        name = name.lower()
        value = value.rstrip(b" \t")  # llhttp keeps trailing whitespace (9110 §5.5: not value)
        if name == b"host":
            self.hosts += 1
        elif name == b"expect" and value.lower() == b"100-continue":
            self.expects = True
        fields.append((name, value))

    def on_headers_complete(self) -> None:
        self.in_head = False
        parser = self.parser
        version = parser.get_http_version()
        if version != "1.1" and version != "1.0":
            # llhttp reads a request line without a version as HTTP/0.9, and takes 2.0:
            # neither is HTTP/1.x (RFC 9110 §15.6.6)
            self._callback_refuse(505)
        if self.hosts > 1 or (version == "1.1" and self.hosts != 1):
            self._callback_refuse(400)  # 9112 §3.2
        url = self.url
        if url[:1] == b"/":
            raw_path, _, query = url.partition(b"?")
        elif url.startswith((b"http://", b"https://")):  # absolute-form (9112 §3.2.2)
            parsed = httptools.parse_url(url)
            raw_path, query = parsed.path or b"/", parsed.query or b""
        else:  # asterisk-form, authority-form: no path the app serves
            raw_path, query = url, b""
        path = raw_path.decode("latin-1")
        if "%" in path:
            path = urllib.parse.unquote(path)
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": version,
            "server": self.local,
            "client": self.client,
            "scheme": "http",
            "method": parser.get_method().decode("ascii"),
            "root_path": "",
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "headers": self.fields,
        }
        keep_alive = version == "1.1" and parser.should_keep_alive() and not self.closing
        ex = _Exchange(self, scope, keep_alive, self.expects and version == "1.1")
        self.parsing = ex
        self.waiting.append(ex)  # started once this read is parsed (see data_received)

    def on_body(self, body: bytes) -> None:
        ex = self.parsing
        if ex is None or ex.finished:
            return  # its response is out already: the rest of its body is dropped
        ex.body.append(body)
        ex.buffered += len(body)
        if ex.buffered > self.limits.body_buffer:
            self.pause_reading()
        ex._wake()

    def on_message_complete(self) -> None:
        ex = self.parsing
        self.parsing = None
        if ex is not None:
            ex.more_body = False
            ex._wake()

    # -- running the app -----------------------------------------------------------------------

    def _start(self, ex: _Exchange) -> None:
        self.active = ex
        self.task = self.loop.create_task(self._run(ex))

    async def _run(self, ex: _Exchange) -> None:
        try:
            await self.app(ex.scope, ex.receive, ex.send)
        except Exception:
            log.exception("the app failed on %s %s", ex.scope["method"], ex.scope["path"])
            self._failed(ex)
        except asyncio.CancelledError:
            self._failed(ex)
            raise
        else:
            if not ex.finished:
                if ex.started:
                    log.error("the app returned before its response ended")
                self._failed(ex)

    def _failed(self, ex: _Exchange) -> None:
        if ex.finished or ex.disconnected:
            return
        ex.finished = True
        if not ex.started:
            self.write(_plain(500))
            self.closing = True
            self.close()
        else:
            self.abort()

    def answered(self, ex: _Exchange) -> None:
        """The response to ``ex`` was written whole: the next request, or the end."""
        if ex is not self.active:
            return
        self.active = None
        if not ex.keep_alive:
            self.closing = True
            if ex.more_body and self.parsing is ex:
                self._linger()
            else:
                self.close()
        elif self.waiting:
            self._start(self.waiting.popleft())
            self.resume()
        elif self.refused is not None:
            self.write(_plain(self.refused))
            self.close()
        elif self.closing:
            self.close()
        else:
            self.resume()
            self._idle_timer()

    # -- reading and writing ---------------------------------------------------------------

    def pause_reading(self) -> None:
        if not self.reading_paused and self.transport is not None:
            self.reading_paused = True
            self.transport.pause_reading()

    def resume(self) -> None:
        """Read again, unless a request waits its turn or unread body fills the buffer."""
        if not self.reading_paused or self.closing or self.waiting or self.transport is None:
            return
        ex = self.parsing
        if ex is not None and ex.buffered > self.limits.body_buffer:
            return
        self.reading_paused = False
        self.transport.resume_reading()

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    async def drain(self) -> None:
        writable = self.writable
        if writable is not None and self.writing_paused:
            await writable.wait()

    def _closed(self) -> bool:
        return self.transport is None or self.transport.is_closing()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def _linger(self) -> None:
        """Close after a response that did not wait for its request's body: stop writing,
        read and drop what the client still sends for a moment, then close (closing at once
        with unread bytes would reset the connection under the response, 9112 §9.6)."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self.lingering = True
        self.resume_reading_anyway()
        if transport.can_write_eof():
            transport.write_eof()
        if self.timer is not None:
            self.timer.cancel()
        self.timer = self.loop.call_later(self.limits.linger, self.close)

    def resume_reading_anyway(self) -> None:
        if self.reading_paused and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()

    def _refuse(self, status: int) -> None:
        """A request the server answers itself (``status``), after those before it; the
        connection then closes."""
        self.closing = True
        self.in_head = False
        self.pause_reading()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        pending = self.parsing
        self.parsing = None
        if pending is not None:  # its body broke: that request is not answered
            if pending is self.active:
                pending.disconnected = True  # the app reads http.disconnect
                pending._wake()
                self.active = None
                if pending.started:  # a response is under way: cut it
                    self.abort()
                    return
            elif pending in self.waiting:
                self.waiting.remove(pending)
        if self.active is None and not self.waiting:
            self.write(_plain(status))
            self.close()
        else:
            self.refused = status

    def _idle_timer(self) -> None:
        """The connection is idle from now: closed :attr:`Limits.keep_alive` seconds later
        unless a request comes first. One timer per connection, set again only when it fires
        before its time (:meth:`_idle`): a keep-alive connection answering request after
        request makes and cancels no timer per request (profiled: ~1% of a call)."""
        self.idle_since = self.loop.time()
        if self.timer is None:
            self.timer = self.loop.call_at(self.idle_since + self.limits.keep_alive, self._idle)

    def _idle(self) -> None:
        self.timer = None
        if self.active is not None or self.waiting:
            return  # a request came: the next idle spell sets the timer again
        due = self.idle_since + self.limits.keep_alive
        if self.loop.time() < due:  # idle again since the timer was set
            self.timer = self.loop.call_at(due, self._idle)
            return
        if self.in_head:  # a request head that never ended
            self.write(_plain(408))
        self.closing = True
        self.close()

    def stop(self) -> None:
        """The server is stopping: no new request; closes now when idle."""
        self.closing = True
        if self.active is None and not self.waiting:
            self.close()


def _address(info: object) -> tuple[str, int] | None:
    if isinstance(info, tuple) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return None


class _Server:
    """The connections of one listening socket."""

    def __init__(self, app: App, limits: Limits, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.limits = limits
        self.loop = loop
        self.connections: set[_Connection] = set()
        self._gone = asyncio.Event()

    def forget(self, conn: _Connection) -> None:
        if not self.connections:
            self._gone.set()

    async def stop(self, grace: float) -> None:
        """Idle connections close now, busy ones after their response, the rest after
        ``grace`` seconds."""
        for conn in list(self.connections):
            conn.stop()
        if self.connections:
            self._gone.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._gone.wait(), grace)
        for conn in list(self.connections):
            conn.abort()
        tasks = [c.task for c in list(self.connections) if c.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


class Stopper:
    """What stops :func:`serve`: :meth:`stop` may be called from a signal handler or another
    thread, before the loop runs (then it never starts serving) or while it runs."""

    def __init__(self) -> None:
        self.requested = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def stop(self) -> None:
        self.requested = True
        loop, event = self._loop, self._event
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed already
                loop.call_soon_threadsafe(event.set)

    async def wait(self) -> None:
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if not self.requested:
            await self._event.wait()


async def serve(
    app: App,
    sock: socket.socket,
    stopper: Stopper,
    *,
    limits: Limits | None = None,
    on_close: Callable[[], Awaitable[None]] | None = None,
    grace: float = 10.0,
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stopper`` is stopped (see the module
    doc for the order of stopping); ``ready`` is called once connections are accepted."""
    loop = asyncio.get_running_loop()
    state = _Server(app, limits or Limits(), loop)
    server = await loop.create_server(lambda: _Connection(state), sock=sock)
    try:
        if ready is not None:
            ready()
        await stopper.wait()
    finally:
        server.close()
        await state.stop(grace)
        if on_close is not None:
            await on_close()


def run(
    app: App,
    sock: socket.socket,
    stopper: Stopper,
    *,
    limits: Limits | None = None,
    on_close: Callable[[], Awaitable[None]] | None = None,
    ready: Callable[[], None] | None = None,
) -> None:
    """:func:`serve` on a new event loop (uvloop's when installed: less CPU per call)."""
    try:
        import uvloop
    except ModuleNotFoundError:
        factory = None
    else:
        factory = uvloop.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(serve(app, sock, stopper, limits=limits, on_close=on_close, ready=ready))
