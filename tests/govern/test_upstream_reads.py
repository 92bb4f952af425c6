"""How the upstream client (``govern.upstream``) reads an answer: the read timeout bounds each
wait for the upstream, not the whole answer (a slow stream whose bytes keep coming is read to
its end); a body larger than the client's buffer is read whole (reading stops while it waits
unread and starts again); an interim ``1xx`` answer is skipped for the final one (RFC 9110
15.2); a connection is reused only after a complete answer that keeps it open."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from reasonwire.errors import TransportError
from reasonwire.govern.upstream import UpstreamPool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _until(check: Callable[[], bool]) -> None:
    """Poll ``check`` on the loop (a 10 s deadline)."""
    deadline = asyncio.get_running_loop().time() + 10
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.005)


async def _serve(handler: Handler) -> tuple[asyncio.Server, str, list[int]]:
    """A server running ``handler`` per request; the list counts connections."""
    connections: list[int] = []

    async def each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(each, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/x", connections


async def _trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
    for i in range(12):  # 12 x 0.1 s: longer than the read timeout, each gap well within it
        await asyncio.sleep(0.1)
        writer.write(b"1\r\n%d\r\n" % (i % 10))
        await writer.drain()
    writer.write(b"0\r\n\r\n")


BIG = bytes(range(256)) * 4096  # 1 MiB, sixteen times the client's buffer


async def _big(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(BIG) + BIG)
    await writer.drain()


async def _interim(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 100 Continue\r\nx-interim: 1\r\n\r\n"
        b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\nx-final: 1\r\n\r\n{}"
    )


async def _closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Says it closes, and leaves the closing to the client (a server may close later)."""
    writer.write(b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}")


async def test_the_timeout_bounds_each_wait_not_the_whole_answer() -> None:
    server, url, _ = await _serve(_trickle)
    pool = UpstreamPool(read_timeout=0.6)
    try:
        resp = await pool.post(url, b"{}", {})
        assert await resp.read() == b"012345678901"
        await resp.aclose()
    finally:
        await pool.aclose()
        server.close()


async def test_a_body_larger_than_the_buffer_is_read_whole_by_both_readers() -> None:
    server, url, connections = await _serve(_big)
    pool = UpstreamPool(read_timeout=30)
    try:
        resp = await pool.post(url, b"{}", {})
        await _until(lambda: resp._conn.paused)  # the buffer filled: reading stopped
        assert b"".join([chunk async for chunk in resp.aiter()]) == BIG
        await resp.aclose()
        resp = await pool.post(url, b"{}", {})
        await _until(lambda: resp._conn.paused)
        assert await resp.read() == BIG
        await resp.aclose()
    finally:
        await pool.aclose()
        server.close()
    assert len(connections) == 1  # kept open between the two


async def test_an_interim_answer_is_skipped() -> None:
    server, url, _ = await _serve(_interim)
    pool = UpstreamPool(read_timeout=30)
    try:
        resp = await pool.post(url, b"{}", {})
        assert (resp.status_code, await resp.read()) == (201, b"{}")
        assert "x-final" in resp.headers and "x-interim" not in resp.headers
        await resp.aclose()
    finally:
        await pool.aclose()
        server.close()


async def test_a_connection_the_upstream_says_it_closes_is_not_reused() -> None:
    server, url, connections = await _serve(_closing)
    pool = UpstreamPool(read_timeout=30)
    try:
        for _ in range(3):
            resp = await pool.post(url, b"{}", {})
            assert await resp.read() == b"{}"
            await resp.aclose()
    finally:
        await pool.aclose()
        server.close()
    assert len(connections) == 3


async def _cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
    await writer.drain()
    writer.close()


async def test_a_body_cut_short_is_a_transport_error() -> None:
    server, url, _ = await _serve(_cut)
    pool = UpstreamPool(read_timeout=30)
    try:
        resp = await pool.post(url, b"{}", {})
        with pytest.raises(TransportError, match="mid-body"):
            await resp.read()
        await resp.aclose()
    finally:
        await pool.aclose()
        server.close()


async def _until_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{"a":')
    await writer.drain()
    writer.write(b"1}")
    await writer.drain()
    writer.close()


async def test_a_body_without_a_length_ends_with_the_connection() -> None:
    """Neither Content-Length nor chunked: the body is what comes until the upstream
    closes (RFC 9112 6.3), and that connection is not used again."""
    server, url, connections = await _serve(_until_close)
    pool = UpstreamPool(read_timeout=30)
    try:
        for _ in range(2):
            resp = await pool.post(url, b"{}", {})
            assert await resp.read() == b'{"a":1}'
            await resp.aclose()
    finally:
        await pool.aclose()
        server.close()
    assert len(connections) == 2


async def _long_head(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\n" + b"x-pad: " + b"a" * (70 * 1024) + b"\r\n")
    await writer.drain()
    await reader.read()


async def test_a_response_head_over_64_kib_is_refused() -> None:
    server, url, _ = await _serve(_long_head)
    pool = UpstreamPool(read_timeout=30)
    try:
        with pytest.raises(TransportError, match="LimitOverrunError"):
            await pool.post(url, b"{}", {})
    finally:
        await pool.aclose()
        server.close()


async def _twice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst"
        b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond"
    )


async def _twice_apart(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfirst")
    await writer.drain()
    await asyncio.sleep(0.05)
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecond")


@pytest.mark.parametrize("handler", [_twice, _twice_apart])
async def test_a_second_answer_to_one_request_is_not_read_and_the_connection_is_dropped(
    handler: Handler,
) -> None:
    server, url, connections = await _serve(handler)
    pool = UpstreamPool(read_timeout=30)
    try:
        for _ in range(2):
            resp = await pool.post(url, b"{}", {})
            assert await resp.read() == b"first"
            await resp.aclose()
            await asyncio.sleep(0.3)  # idle in the pool while the stray answer arrives
    finally:
        await pool.aclose()
        server.close()
    assert len(connections) == 2


async def _garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"SMTP ready\r\n\r\n")


async def _garbage_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n")


async def test_a_malformed_head_or_body_is_a_transport_error() -> None:
    for handler, where in ((_garbage, "answer"), (_garbage_body, "body")):
        server, url, _ = await _serve(handler)
        pool = UpstreamPool(read_timeout=30)
        try:
            with pytest.raises(TransportError, match=f"upstream {where}"):
                resp = await pool.post(url, b"{}", {})
                await resp.read()
        finally:
            await pool.aclose()
            server.close()
