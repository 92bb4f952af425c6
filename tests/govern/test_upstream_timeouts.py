"""The upstream client's read timeout bounds each wait for the upstream: a server that never
answers, or stops in the middle of a body, is a TransportError, never a hung request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from reasonwire.errors import TransportError
from reasonwire.govern.upstream import UpstreamPool

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


# A client without its timer would wait forever: each test ends at 60 s instead of the suite's
# 900 s default (the reads under test time out after 0.2 s).
pytestmark = pytest.mark.timeout(60)


async def _serve(handler: Handler) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1/x"


async def _silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    await reader.read()  # never answers; returns when the client closes


async def _half_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
    await writer.drain()
    await reader.read()  # the other 7 bytes never come


async def _half_chunk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n")
    await writer.drain()
    await reader.read()  # no next chunk, no terminating 0-size chunk


async def test_no_answer_is_a_transport_error() -> None:
    server, url = await _serve(_silent)
    pool = UpstreamPool(read_timeout=0.2)
    try:
        with pytest.raises(TransportError, match="TimeoutError"):
            await pool.post(url, b"{}", {})
    finally:
        await pool.aclose()
        server.close()


@pytest.mark.parametrize("handler", [_half_body, _half_chunk])
async def test_a_stalled_body_is_a_transport_error(handler: Handler) -> None:
    server, url = await _serve(handler)
    pool = UpstreamPool(read_timeout=0.2)
    try:
        resp = await pool.post(url, b"{}", {})
        with pytest.raises(TransportError, match="TimeoutError"):
            await resp.read()
        await resp.aclose()
    finally:
        await pool.aclose()
        server.close()
