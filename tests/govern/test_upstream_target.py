"""The upstream hop's request head (``govern.upstream.UpstreamPool``): the request target is
the URL's path and query, the ``Host`` header its host with the port when the URL names one
(RFC 9112 3.2, RFC 9110 7.2), the same on every call to one URL (the pool keeps what it parsed
per URL); a URL that is not http(s) with a host is refused on every call."""

from __future__ import annotations

import asyncio

import pytest

from reasonwire.errors import TransportError
from reasonwire.govern.upstream import UpstreamPool

ANSWER = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


async def _heads(urls_for: list[str], calls: int) -> list[list[bytes]]:
    """The request line and host header of each call, as the server received them."""
    seen: list[list[bytes]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            lines = head.split(b"\r\n")
            length = next(
                int(v) for k, _, v in (x.partition(b": ") for x in lines) if k == b"content-length"
            )
            await reader.readexactly(length)
            seen.append([lines[0], *(x for x in lines if x.lower().startswith(b"host:"))])
            writer.write(ANSWER)
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = UpstreamPool()
    try:
        for _ in range(calls):
            for url in urls_for:
                resp = await pool.post(url.format(port=port), b"{}", {"x-a": "1"})
                assert await resp.read() == b"{}"
                await resp.aclose()
    finally:
        await pool.aclose()
        server.close()
        await server.wait_closed()
    return [[line.replace(str(port).encode(), b"PORT") for line in h] for h in seen]


async def test_the_request_line_and_host_header_of_a_url_with_a_port_and_a_query() -> None:
    heads = await _heads(["http://127.0.0.1:{port}/v1beta/models/m:go?alt=sse&x=1"], calls=3)
    assert (
        heads == [[b"POST /v1beta/models/m:go?alt=sse&x=1 HTTP/1.1", b"host: 127.0.0.1:PORT"]] * 3
    )


async def test_a_url_without_a_path_posts_to_the_root() -> None:
    heads = await _heads(["http://127.0.0.1:{port}"], calls=2)
    assert heads == [[b"POST / HTTP/1.1", b"host: 127.0.0.1:PORT"]] * 2


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "http:///x", "127.0.0.1:80/x"])
async def test_a_url_that_is_not_http_with_a_host_is_refused_every_time(url: str) -> None:
    pool = UpstreamPool()
    try:
        for _ in range(2):
            with pytest.raises(TransportError, match="must be http"):
                await pool.post(url, b"{}", {})
    finally:
        await pool.aclose()
