"""The gateway's HTTP/1.1 server (:mod:`reasonwire.govern.http1`) against real clients: httpx,
raw sockets for what no well-behaved client sends.

Expected values come from the HTTP/1.1 rules (RFC 9112) and HTTP semantics (RFC 9110), cited
per test, never from the server's code; responses are read with this file's own framing reader
(:func:`_responses`, RFC 9112 §6.3 and §7.1). No timing assertions: a wait is a poll with a
deadline, a bound for a loaded machine.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from reasonwire.govern import http1

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")

WAIT = 20.0  # seconds: a bound for a loaded machine, not a timing check


@dataclass
class Seen:
    """What the test app saw, across its calls (read from the test thread)."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    events: dict[str, threading.Event] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)

    def event(self, name: str) -> threading.Event:
        return self.events.setdefault(name, threading.Event())


async def _read_body(receive: Any, seen: Seen | None = None) -> bytes:
    parts = []
    while True:
        message = await receive()
        if seen is not None:
            seen.messages.append(dict(message))
        if message["type"] == "http.disconnect":
            raise ConnectionError("client left")
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def _answer(send: Any, body: bytes, status: int = 200, headers: Any = ()) -> None:
    head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": [*head, *headers]})
    await send({"type": "http.response.body", "body": body})


def echo_app(seen: Seen) -> Any:
    """Answers what it was sent: method, path, query, headers, body, client address."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = await _read_body(receive, seen)
        info = {
            "method": scope["method"],
            "path": scope["path"],
            "raw_path": scope["raw_path"].decode("latin-1"),
            "query": scope["query_string"].decode("latin-1"),
            "version": scope["http_version"],
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
            "body": body.decode("latin-1"),
            "client": list(scope["client"]),
        }
        seen.requests.append(info)
        await _answer(send, json.dumps(info).encode())

    return app


@contextmanager
def served(app: Any, **limits: Any) -> Iterator[int]:
    """``app`` under the server on a free loopback port, in a thread; stopped at the end."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    stopper = http1.Stopper()
    ready = threading.Event()
    thread = threading.Thread(
        target=http1.run,
        args=(app, sock, stopper),
        kwargs={"limits": http1.Limits(**limits), "ready": ready.set},
        daemon=True,
    )
    thread.start()
    assert ready.wait(WAIT), "server did not start"
    try:
        yield sock.getsockname()[1]
    finally:
        stopper.stop()
        thread.join(WAIT)
        sock.close()
        assert not thread.is_alive(), "server did not stop"


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    return s


def _until_closed(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a timeout fails)."""
    out = bytearray()
    while True:
        try:
            part = s.recv(1 << 20)
        except ConnectionResetError:
            return bytes(out)
        if not part:
            return bytes(out)
        out += part


def raw(port: int, data: bytes) -> bytes:
    """Send ``data`` on a new connection; everything received until the server closes."""
    with _connect(port) as s:
        s.sendall(data)
        return _until_closed(s)


@dataclass
class Resp:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.headers if k == name]
        assert len(values) <= 1, (name, values)
        return values[0] if values else None


def _responses(data: bytes, head_only: bool = False) -> list[Resp]:
    """The responses in ``data``, framed by RFC 9112 §6.3: no body for HEAD and 204/304, a
    chunked body (§7.1) when Transfer-Encoding ends in chunked, else Content-Length bytes,
    else everything to the end."""
    out = []
    while data:
        head, sep, data = data.partition(b"\r\n\r\n")
        assert sep, f"incomplete head {head!r}"
        lines = head.decode("latin-1").split("\r\n")
        m = re.fullmatch(r"HTTP/1\.1 (\d{3}) .*", lines[0])
        assert m, lines[0]
        status = int(m.group(1))
        headers = []
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            assert colon and name == name.strip(), line
            headers.append((name.lower(), value.strip()))
        fields = dict(headers)
        if head_only or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif fields.get("transfer-encoding", "").lower().endswith("chunked"):
            body = b""
            while True:
                size_line, _, data = data.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    trailer, _, data = data.partition(b"\r\n")
                    assert trailer == b"", trailer
                    break
                body, data = body + data[:size], data[size:]
                assert data[:2] == b"\r\n", data[:10]
                data = data[2:]
        elif "content-length" in fields:
            n = int(fields["content-length"])
            body, data = data[:n], data[n:]
            assert len(body) == n, "body shorter than content-length"
        else:
            body, data = data, b""
        out.append(Resp(status, headers, body))
    return out


def _one(data: bytes) -> Resp:
    (resp,) = _responses(data)
    return resp


def _poll(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.005)


POST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n"


def _post(body: bytes, *extra: bytes, close: bool = False) -> bytes:
    fields = b"".join(e + b"\r\n" for e in extra)
    conn = b"Connection: close\r\n" if close else b""
    return POST + fields + conn + b"Content-Length: %d\r\n\r\n" % len(body) + body


# -- persistence, framing of requests (RFC 9112 §6, §7, §9) ---------------------------------


def test_a_keep_alive_connection_serves_many_requests() -> None:
    """RFC 9112 §9.3: HTTP/1.1 connections persist unless ``close`` is signalled."""
    seen = Seen()
    with served(echo_app(seen)) as port, httpx.Client() as client:
        got = [
            client.post(f"http://127.0.0.1:{port}/v1/x", content=b"n%d" % i).json()
            for i in range(5)
        ]
    assert [g["body"] for g in got] == ["n0", "n1", "n2", "n3", "n4"]
    assert len({tuple(g["client"]) for g in got}) == 1  # one connection for all five


def test_connection_close_is_answered_then_closed() -> None:
    """RFC 9112 §9.6: the request with ``Connection: close`` is the last; the response says
    ``close`` and the server closes after it."""
    with served(echo_app(Seen())) as port:
        resp = _one(raw(port, _post(b"{}", close=True)))
    assert resp.status == 200 and resp.header("connection") == "close"


@pytest.mark.parametrize("asked", [b"", b"Connection: keep-alive\r\n"])
def test_http_1_0_is_answered_and_closed(asked: bytes) -> None:
    """RFC 9112 §9.3: an HTTP/1.0 connection does not persist by default (and this server
    keeps none: it says ``close`` even to a 1.0 client asking for keep-alive, §9.3 allows it)."""
    with served(echo_app(Seen())) as port:
        data = raw(port, b"POST /a HTTP/1.0\r\n" + asked + b"Content-Length: 2\r\n\r\nhi")
    resp = _one(data)
    assert resp.status == 200 and resp.header("connection") == "close"
    assert json.loads(resp.body)["version"] == "1.0"


def test_a_chunked_request_body_reaches_the_app_whole() -> None:
    """RFC 9112 §7.1: chunk sizes in hex, extensions ignored (§7.1.1); trailer fields
    (§7.1.2) are not header fields of the request (RFC 9110 §6.5.1)."""
    seen = Seen()
    body = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: t\r\n\r\n"
    head = POST + b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    with served(echo_app(seen)) as port:
        resp = _one(raw(port, head + body))
    info = json.loads(resp.body)
    assert info["body"] == "Wikipedia in\r\n\r\nchunks."
    assert "x-trailer" not in {k for k, _ in info["headers"]}


def test_a_body_sent_in_pieces_reaches_the_app_in_order() -> None:
    seen = Seen()
    with served(echo_app(seen)) as port, _connect(port) as s:
        s.sendall(POST + b"Content-Length: 10\r\nConnection: close\r\n\r\n")
        for piece in (b"01234", b"567", b"89"):
            s.sendall(piece)
        resp = _one(_until_closed(s))
    assert json.loads(resp.body)["body"] == "0123456789"


@pytest.mark.parametrize(
    ("name", "request_bytes"),
    [
        # RFC 9112 §6.1 / §6.3 (3): Transfer-Encoding and Content-Length together (smuggling)
        (
            "te-and-cl",
            POST
            + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            + b"GET / HTTP/1.1\r\n\r\n",
        ),
        (
            "cl-and-te",
            POST + b"Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
        ),
        # §6.3 (4): a request whose last transfer coding is not chunked
        ("te-not-chunked", POST + b"Transfer-Encoding: gzip\r\n\r\nabc"),
        ("te-chunked-then-gzip", POST + b"Transfer-Encoding: chunked, gzip\r\n\r\n"),
        # §6.3 (5): an invalid Content-Length, or two different ones
        ("cl-two-values", POST + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd"),
        ("cl-list", POST + b"Content-Length: 3, 4\r\n\r\nabcd"),
        ("cl-sign", POST + b"Content-Length: +3\r\n\r\nabc"),
        ("cl-negative", POST + b"Content-Length: -1\r\n\r\n"),
        ("cl-letters", POST + b"Content-Length: abc\r\n\r\n"),
        ("cl-overflow", POST + b"Content-Length: 99999999999999999999999\r\n\r\n"),
        # §7.1: a chunk size that is not hex
        ("chunk-size", POST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
        # §5.1: whitespace between a field name and its colon
        ("space-before-colon", b"POST / HTTP/1.1\r\nHost : gw\r\nContent-Length: 0\r\n\r\n"),
        # §5.2: obsolete line folding
        ("obs-fold", b"POST / HTTP/1.1\r\nHost: gw\r\nX-A: a\r\n  b\r\nContent-Length: 0\r\n\r\n"),
        # §3: a malformed request line
        ("bad-method", b"P(ST / HTTP/1.1\r\nHost: gw\r\n\r\n"),
        ("bare-lf", b"POST / HTTP/1.1\nHost: gw\n\n"),
        ("nul-in-value", b"POST / HTTP/1.1\r\nHost: gw\r\nX-A: a\x00b\r\n\r\n"),
        # §3.2: an HTTP/1.1 request without Host, or with two
        ("no-host", b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
        ("two-hosts", b"POST / HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n"),
        ("two-hosts-1.0", b"POST / HTTP/1.0\r\nHost: a\r\nHost: b\r\nContent-Length: 0\r\n\r\n"),
    ],
)
def test_a_malformed_or_ambiguous_request_is_400_and_closed(
    name: str, request_bytes: bytes
) -> None:
    """RFC 9112 §6.3: a message whose length cannot be determined unambiguously is a 400
    and the connection is closed (nothing after it is read as another request); the app
    never sees it."""
    seen = Seen()
    with served(echo_app(seen)) as port:
        data = raw(port, request_bytes)  # returns once the server closed the connection
    resp = _one(data)
    assert resp.status == 400, name
    assert resp.header("connection") == "close"
    assert seen.requests == [] and seen.messages == []


@pytest.mark.parametrize(
    "line", [b"POST /", b"POST / HTTP/0.9", b"POST / HTTP/2.0"], ids=["none", "0.9", "2.0"]
)
def test_a_request_not_in_http_1_is_505(line: bytes) -> None:
    """RFC 9110 §15.6.6: 505 for a major version the server does not speak (a request line
    without a version is HTTP/0.9's, RFC 9112 §2.3 and Appendix C.1)."""
    seen = Seen()
    with served(echo_app(seen)) as port:
        resp = _one(raw(port, line + b"\r\nHost: gw\r\n\r\n"))
    assert resp.status == 505 and seen.requests == []


def test_a_request_cut_in_its_head_is_400() -> None:
    """RFC 9112 §8: a message cut short is incomplete; the server does not act on it."""
    seen = Seen()
    with served(echo_app(seen)) as port, _connect(port) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: gw\r\nContent-Le")
        s.shutdown(socket.SHUT_WR)
        resp = _one(_until_closed(s))
    assert resp.status == 400 and seen.requests == []


def test_a_request_cut_in_its_body_reaches_the_app_as_a_disconnect() -> None:
    seen = Seen()
    with served(echo_app(seen)) as port, _connect(port) as s:
        s.sendall(POST + b"Content-Length: 10\r\n\r\n01234")
        _poll(lambda: len(seen.messages) >= 1, "the first part read")
        s.shutdown(socket.SHUT_WR)
        _until_closed(s)
        _poll(lambda: seen.messages[-1]["type"] == "http.disconnect", "a disconnect")
    assert seen.messages[0] == {"type": "http.request", "body": b"01234", "more_body": True}
    assert seen.requests == []


# -- sizes ------------------------------------------------------------------------------------


def test_a_head_past_the_limit_is_431_and_closed() -> None:
    """RFC 6585 §5: request header fields too large; nothing past the limit is buffered."""
    seen = Seen()
    with served(echo_app(seen), max_head=4096) as port:
        big = POST + b"X-Big: " + b"a" * 8192 + b"\r\nContent-Length: 0\r\n\r\n"
        resp = _one(raw(port, big))
        small = _one(raw(port, _post(b"{}", b"X-Ok: " + b"a" * 3000, close=True)))
    assert resp.status == 431 and resp.header("connection") == "close"
    assert small.status == 200 and len(seen.requests) == 1


def test_a_head_that_never_ends_is_431() -> None:
    """A header field sent forever is cut at the limit, not held in memory."""
    total = 256 << 20  # past any socket buffers: only a server reading it all takes it all
    with served(echo_app(Seen()), max_head=4096) as port, _connect(port) as s:
        s.sendall(POST + b"X-Big: ")
        sent = 0
        try:
            while sent < total:
                s.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = _until_closed(s)
    assert sent < total  # the server stopped reading long before
    if data:  # unless the close reset it first, the client got the refusal
        assert _one(data).status == 431


def test_too_many_fields_is_431() -> None:
    """``max_fields`` fields pass (Host and Content-Length count), one more is 431."""
    seen = Seen()
    with served(echo_app(seen), max_fields=10) as port:

        def send(n: int) -> Resp:
            fields = b"".join(b"X-F%d: v\r\n" % i for i in range(n))
            return _one(
                raw(port, POST + fields + b"Connection: close\r\nContent-Length: 0\r\n\r\n")
            )

        ok, refused = send(7), send(8)  # 7 + Host, Connection, Content-Length = 10
    assert (ok.status, refused.status) == (200, 431) and len(seen.requests) == 1


def test_a_target_past_the_limit_is_414() -> None:
    """RFC 9110 §15.5.15: URI Too Long."""
    with served(echo_app(Seen()), max_head=4096) as port:
        resp = _one(raw(port, b"POST /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: gw\r\n\r\n"))
    assert resp.status == 414


# -- pipelining (RFC 9112 §9.3.2) ---------------------------------------------------------


def test_pipelined_requests_are_answered_in_order() -> None:
    """RFC 9112 §9.3.2: a server MAY process pipelined requests in parallel but MUST send
    the responses in the order the requests were received. The first one here is slower."""
    seen = Seen()
    first_may_answer = threading.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = await _read_body(receive)
        seen.requests.append({"path": scope["path"]})
        if scope["path"] == "/1":
            while not first_may_answer.is_set():
                await asyncio.sleep(0.005)
        await _answer(send, scope["path"].encode() + b":" + body)

    reqs = [
        b"POST /%d HTTP/1.1\r\nHost: gw\r\nContent-Length: 1\r\n%s\r\n%d"
        % (i, b"Connection: close\r\n" if i == 3 else b"", i)
        for i in (1, 2, 3)
    ]
    with served(app) as port, _connect(port) as s:
        s.sendall(b"".join(reqs))
        _poll(lambda: len(seen.requests) == 1, "the first request started")
        assert seen.requests == [{"path": "/1"}]  # the next waits for its turn
        first_may_answer.set()
        data = _until_closed(s)
    assert [r.body for r in _responses(data)] == [b"/1:1", b"/2:2", b"/3:3"]
    assert seen.requests == [{"path": "/1"}, {"path": "/2"}, {"path": "/3"}]


def test_a_bad_request_after_good_pipelined_ones_is_400_after_their_answers() -> None:
    with served(echo_app(Seen())) as port:
        data = raw(port, _post(b"a") + _post(b"b") + b"GARBAGE\r\n\r\n")
    got = _responses(data)
    assert [r.status for r in got] == [200, 200, 400]
    assert [json.loads(r.body)["body"] for r in got[:2]] == ["a", "b"]


# -- timeouts -----------------------------------------------------------------------------------


def test_an_idle_keep_alive_connection_is_closed() -> None:
    """RFC 9112 §9.8: a server may close an idle connection (here after ``keep_alive``)."""
    with served(echo_app(Seen()), keep_alive=0.2) as port, _connect(port) as s:
        s.sendall(_post(b"{}"))
        data = _until_closed(s)  # the answer, then the close after the idle time
    resp = _one(data)
    assert resp.status == 200 and resp.header("connection") is None


def test_the_idle_time_counts_from_the_last_answer() -> None:
    """A connection answered again before its idle time ran out stays open for a whole idle
    time after that answer, not until the first idle time would have ended."""
    seen = Seen()
    with served(echo_app(seen), keep_alive=1.0) as port, _connect(port) as s:
        for _ in range(2):
            time.sleep(0.6)  # idle, within the idle time (the first would end at 1.0 s)
            s.sendall(_post(b"{}"))
            got = b""
            while b"\r\n\r\n" not in got or not got.endswith(b"}"):
                part = s.recv(1 << 16)
                assert part, "the connection was closed while it was in use"
                got += part
            assert _one(got).status == 200
    assert len(seen.requests) == 2


def test_a_request_longer_than_the_idle_time_is_answered() -> None:
    """The idle time counts only while no request is under way."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        await asyncio.sleep(0.6)  # three idle times
        await _answer(send, b"{}")

    with served(app, keep_alive=0.2) as port, _connect(port) as s:
        s.sendall(_post(b"{}"))
        resp = _one(_until_closed(s))
    assert resp.status == 200 and resp.body == b"{}"


def test_a_head_that_stalls_is_408_and_closed() -> None:
    """RFC 9110 §15.5.9: 408 Request Timeout for a request head that never completes."""
    seen = Seen()
    with served(echo_app(seen), keep_alive=0.2) as port, _connect(port) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: gw\r\n")
        resp = _one(_until_closed(s))
    assert resp.status == 408 and seen.requests == []


# -- responses ------------------------------------------------------------------------------


def test_a_whole_response_keeps_its_length_and_a_date() -> None:
    """RFC 9110 §8.6 (Content-Length as given) and §6.6.1 (an origin server with a clock
    sends Date, in the IMF-fixdate format of §5.6.7)."""
    with served(echo_app(Seen())) as port:
        resp = _one(raw(port, _post(b"{}", close=True)))
    assert int(resp.header("content-length") or -1) == len(resp.body)
    assert resp.header("transfer-encoding") is None
    date = resp.header("date") or ""
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT", date)
    assert abs(email.utils.parsedate_to_datetime(date).timestamp() - time.time()) < 3600


def stream_app(chunks: list[bytes], seen: Seen | None = None) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for c in chunks:
            await send({"type": "http.response.body", "body": c, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return app


def test_a_stream_is_chunked_and_an_empty_message_is_no_chunk() -> None:
    """RFC 9112 §7.1: a response without a length to an HTTP/1.1 client is chunked, and a
    zero-size chunk ends it: an empty body message in the middle must not write one."""
    chunks = [b"data: 1\n\n", b"", b"data: 2\n\n" * 100]
    with served(stream_app(chunks)) as port:
        data = raw(port, _post(b"{}", close=True))
        with httpx.Client() as client:
            r = client.post(f"http://127.0.0.1:{port}/s", content=b"{}")
    resp = _one(data)
    assert resp.header("transfer-encoding") == "chunked"
    assert resp.body == b"".join(chunks) and data.count(b"\r\n0\r\n\r\n") == 1
    assert data.endswith(b"\r\n0\r\n\r\n")
    assert r.content == b"".join(chunks)


def test_a_stream_to_http_1_0_ends_with_the_connection() -> None:
    """RFC 9112 §6.1: no Transfer-Encoding to a 1.0 client; §6.3 (8): the close ends it."""
    with served(stream_app([b"a", b"b"])) as port:
        data = raw(port, b"POST / HTTP/1.0\r\nContent-Length: 0\r\n\r\n")
    resp = _one(data)
    assert resp.header("transfer-encoding") is None and resp.body == b"ab"


def test_head_and_204_have_no_body() -> None:
    """RFC 9110 §9.3.2 (HEAD: no content) and §15.3.5 (204: no content)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        status = 204 if scope["path"] == "/204" else 405
        await _answer(send, b"should not be sent", status)

    with served(app) as port:
        head = raw(port, b"HEAD /x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
        nobody = raw(port, b"POST /204 HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
    (h,) = _responses(head, head_only=True)
    assert h.status == 405 and h.body == b"" and h.header("content-length") == "18"
    (n,) = _responses(nobody)
    assert n.status == 204 and n.header("content-length") is None
    assert nobody.endswith(b"\r\n\r\n")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (b"x-split", b"a\r\nx-injected: 1"),
        (b"x-cr", b"a\rb"),
        (b"x-lf", b"a\nb"),
        (b"x-in\rname", b"v"),
        (b"x-in\nname", b"v"),
        (b"x-colon:name", b"v"),
    ],
    ids=["crlf-value", "cr-value", "lf-value", "cr-name", "lf-name", "colon-name"],
)
def test_a_response_field_that_would_split_the_head_is_the_apps_error(
    name: bytes, value: bytes
) -> None:
    """RFC 9110 §5.1 / §5.5: a field name is a token (no CR, LF or colon) and a value holds
    no CR or LF; the server never writes such a field (it would inject others): the app's
    error, answered 500, the field nowhere in the answer."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": [(name, value)]})
        await send({"type": "http.response.body", "body": b"ok"})

    with served(app) as port:
        got = raw(port, b"POST /x HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
    (r,) = _responses(got)
    assert r.status == 500
    assert b"x-injected" not in got and name not in got


def test_100_continue_is_sent_when_the_app_reads_the_body() -> None:
    """RFC 9110 §10.1.1: a client that sends ``Expect: 100-continue`` waits for the 100
    before its body."""
    seen = Seen()
    with served(echo_app(seen)) as port, _connect(port) as s:
        s.sendall(POST + b"Expect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")
        interim = b""
        while b"\r\n\r\n" not in interim:
            part = s.recv(1024)
            assert part, "closed before 100 Continue"
            interim += part
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n")
        s.sendall(b"hi")
        rest = interim.partition(b"\r\n\r\n")[2] + _until_closed(s)
    assert json.loads(_one(rest).body)["body"] == "hi"


def test_the_server_frames_responses_itself() -> None:
    """An app's Transfer-Encoding, Connection and Date fields are replaced by the server's
    own (the framing is the server's, RFC 9112 §6.1); a field with CR or LF is the app's
    error: 500, never a split head."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        headers = [(b"transfer-encoding", b"gzip"), (b"date", b"yesterday")]
        if scope["path"] == "/inject":
            headers.append((b"x-a", b"1\r\nset-cookie: s=1"))
        await _answer(send, b"{}", 200, headers)

    with served(app) as port:
        ok = _one(raw(port, b"POST / HTTP/1.1\r\nHost: g\r\nConnection: close\r\n\r\n"))
        bad = raw(port, b"POST /inject HTTP/1.1\r\nHost: g\r\nConnection: close\r\n\r\n")
    assert ok.header("transfer-encoding") is None and ok.header("date") != "yesterday"
    assert ok.body == b"{}"
    assert _one(bad).status == 500 and b"set-cookie" not in bad


def test_an_app_failing_before_its_response_is_500_and_closed() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    with served(app) as port:
        resp = _one(raw(port, _post(b"{}")))
    assert resp.status == 500 and resp.header("connection") == "close"


def test_an_app_failing_mid_stream_cuts_the_body() -> None:
    """The client must see the stream end badly: no last chunk (RFC 9112 §7.1)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"part", "more_body": True})
        raise RuntimeError("boom")

    with served(app) as port:
        data = raw(port, _post(b"{}"))
        with httpx.Client() as client, pytest.raises(httpx.RemoteProtocolError):
            client.post(f"http://127.0.0.1:{port}/", content=b"{}")
    assert b"part" in data and not data.endswith(b"0\r\n\r\n")


def test_a_response_shorter_than_its_length_closes_the_connection() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        head = [(b"content-length", b"10")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": b"short"})

    with served(app, keep_alive=WAIT * 3) as port, _connect(port) as s:
        s.sendall(_post(b"{}"))
        data = _until_closed(s)  # closed at once: the client sees 5 of 10 bytes
    assert data.endswith(b"\r\n\r\nshort")


@pytest.mark.parametrize("idle", [5.0, 0.2])
def test_an_early_answer_closes_after_the_client_finished_sending(idle: float) -> None:
    """An answer before the request body ended (a 413) ends the connection, and the client
    still reads it whole (RFC 9112 §9.6: a server closes its side first and keeps reading,
    so the client's unsent bytes do not reset the answer). The lingering read lasts past the
    connection's idle time (``idle`` 0.2 s: the client pauses longer than that)."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _answer(send, b'{"error": "too large"}', 413)

    answer = b'{"error": "too large"}'
    with served(app, linger=WAIT, keep_alive=idle) as port, _connect(port) as s:
        s.sendall(POST + b"Content-Length: 4000000\r\n\r\n" + b"x" * 1000)
        data = b""
        while not data.endswith(answer):
            part = s.recv(65536)
            assert part, "closed before the answer"
            data += part
        if idle < 1:
            time.sleep(idle * 3)  # the client pauses past the idle time, still lingering
        for _ in range(100):  # the rest of the body: read and dropped, no reset
            s.sendall(b"x" * 39_990)
        s.shutdown(socket.SHUT_WR)
        assert _until_closed(s) == b""
    resp = _one(data)
    assert resp.status == 413 and resp.header("connection") == "close"
    assert resp.body == answer


# -- disconnects and flow control ---------------------------------------------------------------


def test_a_client_leaving_mid_stream_is_a_disconnect_for_the_app() -> None:
    """The ASGI ``http.disconnect`` once the client is gone (the gateway cancels its upstream
    call on it)."""
    seen = Seen()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        seen.event("sent").set()
        message = await receive()
        seen.messages.append(dict(message))
        seen.event("told").set()

    with served(app) as port:
        s = _connect(port)
        s.sendall(_post(b"{}"))
        assert seen.event("sent").wait(WAIT)
        s.close()
        assert seen.event("told").wait(WAIT)
    assert seen.messages == [{"type": "http.disconnect"}]


def test_a_stream_to_a_client_that_does_not_read_waits_for_it() -> None:
    """Write flow control: while the client reads nothing, the app's ``send`` waits once the
    socket and transport buffers are full, instead of holding the whole stream in memory."""
    chunk, total = b"x" * (1 << 20), 32  # MiB: more than the socket buffers hold
    state = {"sent": 0, "in_send": False, "done": False}

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for _ in range(total):
            state["in_send"] = True
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            state["in_send"] = False
            state["sent"] += 1
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        state["done"] = True

    with served(app) as port, _connect(port) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        s.sendall(_post(b"{}", close=True))
        last = [-1]

        def stuck() -> bool:
            if state["done"]:
                return True
            same = state["in_send"] and state["sent"] == last[0]
            last[0] = state["sent"]
            if same:
                time.sleep(0.05)  # and still the same after a while: waiting on the client
                return bool(state["in_send"] and state["sent"] == last[0])
            return False

        _poll(stuck, "the app waiting or done")
        assert not state["done"] and state["sent"] < total // 2
        received = _until_closed(s)
    assert state["done"] and received.count(b"x") == total << 20  # everything, in the end


def test_a_body_the_app_does_not_read_yet_is_not_read_ahead() -> None:
    """Read flow control: while the app does not ask for the body, the server stops reading
    it past a small buffer (the client's sends then wait), instead of holding it in memory."""
    total = 32 << 20  # more than the socket buffers hold
    may_read = threading.Event()
    got: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while not may_read.is_set():
            await asyncio.sleep(0.005)
        got.append(len(await _read_body(receive)))
        await _answer(send, b"{}")

    sent = [0]

    def upload(s: socket.socket) -> None:
        s.sendall(POST + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % total)
        piece = b"y" * 65536
        while sent[0] < total:
            s.sendall(piece)
            sent[0] += len(piece)

    with served(app) as port, _connect(port) as s:
        uploader = threading.Thread(target=upload, args=(s,), daemon=True)
        uploader.start()
        last = [-1]

        def stalled() -> bool:
            if sent[0] >= total:
                return True
            same = sent[0] == last[0]
            last[0] = sent[0]
            if same:
                time.sleep(0.05)  # and still the same after a while: the client waits
                return sent[0] == last[0]
            return False

        _poll(stalled, "the upload waiting or done")
        assert sent[0] < total // 2
        may_read.set()
        uploader.join(WAIT)
        resp = _one(_until_closed(s))
    assert resp.status == 200 and got == [total]


# -- the app's view --------------------------------------------------------------------------


def test_the_scope_names_the_request() -> None:
    """ASGI ``http`` scope: path percent-decoded, raw_path and query as sent; header names
    lower-case (RFC 9110 §5.1: case-insensitive), trailing whitespace not part of a value
    (§5.5); absolute-form targets (RFC 9112 §3.2.2) give their path and query."""
    seen = Seen()
    with served(echo_app(seen)) as port:
        raw(port, b"POST /a%20b/c?x=1&y=%20 HTTP/1.1\r\nHost: gw\r\nX-Case: V  \r\n"
                  b"Connection: close\r\n\r\n")  # fmt: skip
        raw(port, b"POST http://gw/v1/p?q=2 HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n")
    first, second = seen.requests
    assert (first["path"], first["raw_path"], first["query"]) == ("/a b/c", "/a%20b/c", "x=1&y=%20")
    assert ["x-case", "V"] in first["headers"] and first["method"] == "POST"
    assert (second["path"], second["query"]) == ("/v1/p", "q=2")


def test_an_upgrade_without_a_body_is_answered_as_plain_http_then_closed() -> None:
    """RFC 9110 §7.8: a server may ignore Upgrade; what follows on the connection is
    another protocol's, never read as another request."""
    seen = Seen()
    with served(echo_app(seen)) as port:
        data = raw(
            port,
            b"POST /u HTTP/1.1\r\nHost: gw\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
            b"GET /smuggled HTTP/1.1\r\nHost: gw\r\n\r\n",
        )
    resp = _one(data)
    assert resp.status == 200 and resp.header("connection") == "close"
    assert [r["path"] for r in seen.requests] == ["/u"]


def test_an_upgrade_with_a_body_is_400() -> None:
    """Its body cannot be told from the other protocol's bytes (the parser hands both over
    as one), so the request is refused rather than answered without its body."""
    seen = Seen()
    with served(echo_app(seen)) as port:
        data = raw(
            port, POST + b"Connection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\nhi"
        )
    assert _one(data).status == 400 and seen.requests == []


def test_stopping_finishes_requests_in_flight_and_runs_on_close() -> None:
    """Stopping: the request being answered is answered (and told ``connection: close``),
    idle connections close, then ``on_close`` runs."""
    release, arrived, closed = threading.Event(), threading.Event(), threading.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _read_body(receive)
        arrived.set()
        while not release.is_set():
            await asyncio.sleep(0.005)
        await _answer(send, b"{}")

    async def on_close() -> None:
        closed.set()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    stopper, ready = http1.Stopper(), threading.Event()
    thread = threading.Thread(
        target=http1.run,
        args=(app, sock, stopper),
        # idle connections are kept long: only the stop closes the idle one here
        kwargs={"on_close": on_close, "ready": ready.set, "limits": http1.Limits(keep_alive=WAIT)},
        daemon=True,
    )
    thread.start()
    assert ready.wait(WAIT)
    with _connect(port) as busy, _connect(port) as idle:
        busy.sendall(_post(b"{}"))
        assert arrived.wait(WAIT)
        stopper.stop()
        assert _until_closed(idle) == b""  # the idle one is closed
        release.set()
        resp = _one(_until_closed(busy))
    thread.join(WAIT)
    sock.close()
    assert resp.status == 200 and resp.header("connection") == "close"
    assert closed.is_set() and not thread.is_alive()


def test_a_stop_requested_before_serving_ends_it_at_once() -> None:
    """A signal may land between the URL line and the loop's start: the stop is kept and
    seen when serving starts (the loop never waits for a second one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    stopper = http1.Stopper()
    stopper.stop()
    thread = threading.Thread(target=http1.run, args=(echo_app(Seen()), sock, stopper))
    thread.start()
    thread.join(WAIT)
    sock.close()
    assert not thread.is_alive()
