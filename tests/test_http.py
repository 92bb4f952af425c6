"""http.py against a local httpx MockTransport: retries, Retry-After, typed errors, no keys."""

from __future__ import annotations

import email.utils
import json
from collections.abc import Callable

import httpx
import pytest

from reasonwire.errors import (
    AuthError,
    BadRequest,
    NotFound,
    RateLimited,
    ServerError,
    TransportError,
)
from reasonwire.http import (
    NO_RETRY,
    RetryPolicy,
    apost_json,
    astream_post,
    make_async_client,
    make_client,
    post_json,
    provider_message,
    retry_after_seconds,
    stream_post,
)

KEY = "rw-test-9f8e7d6c5b4a39281706"  # not key-shaped: only the header registry can hide it
URL = "https://api.example.test/v1/chat/completions"


class Server:
    """A scripted sequence of answers; records every request it saw."""

    def __init__(self, *answers: Callable[[httpx.Request], httpx.Response]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(request)


def status(
    code: int, body: object = None, **headers: str
) -> Callable[[httpx.Request], httpx.Response]:
    def answer(request: httpx.Request) -> httpx.Response:
        if body is None:
            return httpx.Response(code, headers=headers)
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.Response(code, content=content, headers=headers)

    return answer


def refuse(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def echo_key(request: httpx.Request) -> httpx.Response:
    auth = request.headers.get("authorization", "")
    body = {"error": {"message": f"Incorrect API key provided: {auth}", "type": "auth"}}
    return httpx.Response(401, json=body, headers={"x-request-id": "req_123"})


def client_for(server: Server) -> httpx.Client:
    return make_client(transport=httpx.MockTransport(server))


def test_429_with_retry_after_then_success() -> None:
    server = Server(
        status(429, {"error": {"message": "slow down"}}, **{"retry-after": "3"}),
        status(200, {"ok": True}),
    )
    waits: list[float] = []
    with client_for(server) as client:
        resp = post_json(
            client, URL, {"a": 1}, {"authorization": f"Bearer {KEY}"}, sleep=waits.append
        )
    assert resp.json() == {"ok": True}
    assert waits == [3.0]
    assert len(server.requests) == 2
    assert server.requests[0].content == b'{"a":1}'
    assert server.requests[0].headers["content-type"] == "application/json"


def test_retry_after_http_date_and_cap() -> None:
    now = 1_767_225_600.0  # 2026-01-01T00:00:00Z: a fixed clock, no wall-time window
    when = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds(httpx.Headers({"retry-after": when}), now=now) == 30.0
    server = Server(status(503, b"busy", **{"retry-after": "3600"}), status(200, {}))
    waits: list[float] = []
    with client_for(server) as client:
        post_json(
            client, URL, {}, retries=RetryPolicy(retries=1, retry_after_cap=5), sleep=waits.append
        )
    assert waits == [5]
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "1500"})) == 1.5
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None


def test_500s_exhausted_raise_server_error_with_status_and_excerpt() -> None:
    server = Server(
        status(502, b"<html>bad gateway " + b"x" * 2000 + b"</html>", **{"request-id": "r-9"})
    )
    waits: list[float] = []
    with client_for(server) as client, pytest.raises(ServerError) as info:
        post_json(client, URL, {}, retries=3, sleep=waits.append)
    err = info.value
    assert err.status == 502
    assert err.body_excerpt.startswith("<html>bad gateway")
    assert len(err.body_excerpt) == 500
    assert err.request_id == "r-9"
    assert len(server.requests) == 4
    # exponential backoff with jitter: each wait within +-25% of 0.5 * 2**n
    assert len(waits) == 3
    for n, w in enumerate(waits):
        assert 0.375 * 2**n <= w <= 0.625 * 2**n


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(retries=10, backoff_base=1, backoff_max=4, jitter=0)
    assert [policy.delay(n) for n in range(5)] == [1, 2, 4, 4, 4]


@pytest.mark.parametrize(
    ("code", "cls"),
    [(400, BadRequest), (401, AuthError), (403, AuthError), (404, NotFound), (422, BadRequest)],
)
def test_client_errors_are_not_retried(code: int, cls: type[Exception]) -> None:
    body = {"error": {"message": "Unsupported parameter: 'temperature'", "code": "x"}}
    server = Server(status(code, body))
    with client_for(server) as client, pytest.raises(cls) as info:
        post_json(client, URL, {}, sleep=lambda s: None)
    assert len(server.requests) == 1
    assert "Unsupported parameter: 'temperature'" in str(info.value)


def test_rate_limited_carries_retry_after() -> None:
    server = Server(status(429, {"error": "quota"}, **{"retry-after": "7"}))
    with client_for(server) as client, pytest.raises(RateLimited) as info:
        post_json(client, URL, {}, retries=NO_RETRY)
    assert info.value.retry_after == 7.0
    assert info.value.provider_message == "quota"


def test_connection_errors_become_transport_error() -> None:
    server = Server(refuse)
    waits: list[float] = []
    with client_for(server) as client, pytest.raises(TransportError) as info:
        post_json(client, URL + "?key=" + KEY, {}, retries=2, sleep=waits.append)
    assert len(server.requests) == 3
    assert "ConnectError" in str(info.value)
    assert KEY not in str(info.value)
    assert info.value.__cause__ is None


def test_connection_error_then_success() -> None:
    server = Server(refuse, status(200, {"fine": 1}))
    with client_for(server) as client:
        assert post_json(client, URL, {}, sleep=lambda s: None).json() == {"fine": 1}


def test_no_key_in_exception_even_when_server_echoes_it() -> None:
    server = Server(echo_key)
    with client_for(server) as client, pytest.raises(AuthError) as info:
        post_json(client, URL, {}, {"Authorization": f"Bearer {KEY}"})
    err = info.value
    for text in (str(err), repr(err), err.body_excerpt, err.provider_message or "", repr(err.args)):
        assert KEY not in text
    assert err.request_id == "req_123"
    assert "Incorrect API key provided" in str(err)


def test_no_key_in_exception_x_api_key_header() -> None:
    other = "zz-anthropic-like-0123456789abcdef"

    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text=f"bad key {request.headers['x-api-key']}")

    with client_for(Server(echo)) as client, pytest.raises(BadRequest) as info:
        post_json(client, URL, {}, {"x-api-key": other})
    assert other not in str(info.value)


def test_provider_message_shapes() -> None:
    assert provider_message(b'{"error": {"message": "m1"}}') == "m1"
    assert provider_message(b'{"error": "m2"}') == "m2"
    assert provider_message(b'{"message": "m3"}') == "m3"
    assert provider_message(b'[{"error": {"code": 400, "message": "m4"}}]') == "m4"
    assert provider_message(b"<html>") is None
    assert provider_message(b'{"error": {"code": 1}}') is None


def test_stream_post_yields_bytes_and_types_errors() -> None:
    sse = b'data: {"x": 1}\n\ndata: [DONE]\n\n'
    server = Server(
        status(500, b"oops"),
        status(200, sse, **{"content-type": "text/event-stream"}),
        status(404, b"no"),
    )
    with client_for(server) as client:
        with stream_post(client, URL, {"stream": True}, sleep=lambda s: None) as resp:
            assert b"".join(resp.iter_bytes()) == sse
        with pytest.raises(NotFound), stream_post(client, URL, {}, retries=0) as resp:
            pass
    assert len(server.requests) == 3


def test_stream_post_error_before_first_byte_is_typed_and_body_read() -> None:
    body = {"error": {"message": "model not found"}}
    server = Server(status(404, body))
    with (
        client_for(server) as client,
        pytest.raises(NotFound) as info,
        stream_post(client, URL, {}) as _,
    ):
        pass
    assert info.value.provider_message == "model not found"


def test_stream_post_drop_mid_body_is_transport_error_not_retried() -> None:
    class Dropping(httpx.SyncByteStream):
        def __iter__(self):  # type: ignore[no-untyped-def]
            yield b"data: {}\n\n"
            raise httpx.ReadError("peer closed")

    server = Server(lambda r: httpx.Response(200, stream=Dropping()))
    got: list[bytes] = []
    with (
        client_for(server) as client,
        pytest.raises(TransportError),
        stream_post(client, URL, {}) as resp,
    ):
        for chunk in resp.iter_bytes():
            got.append(chunk)
    assert got == [b"data: {}\n\n"]
    assert len(server.requests) == 1


async def test_async_post_and_stream() -> None:
    server = Server(status(429, {}, **{"retry-after": "0"}), status(200, {"ok": 1}))
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    async with make_async_client(transport=httpx.MockTransport(server)) as client:
        resp = await apost_json(client, URL, {"q": "é"}, sleep=sleep)
        assert resp.json() == {"ok": 1}
        assert json.loads(server.requests[0].content) == {"q": "é"}
        async with astream_post(client, URL, {}, sleep=sleep) as sresp:
            chunks = [c async for c in sresp.aiter_bytes()]
        assert b"".join(chunks) == b'{"ok": 1}'
    assert waits == [0.0]


async def test_async_errors_typed() -> None:
    server = Server(refuse)
    async with make_async_client(transport=httpx.MockTransport(server)) as client:
        with pytest.raises(TransportError):
            await apost_json(client, URL, {}, retries=0)
        with pytest.raises(TransportError):
            async with astream_post(client, URL, {}, retries=0):
                pass
    server2 = Server(echo_key)
    async with make_async_client(transport=httpx.MockTransport(server2)) as client:
        with pytest.raises(AuthError) as info:
            await apost_json(client, URL, {}, {"authorization": f"Bearer {KEY}"})
    assert KEY not in str(info.value)


def test_make_client_defaults() -> None:
    with make_client() as client:
        assert client.timeout.connect == 10.0
        assert client.timeout.read == 300.0
    with make_client(timeout=5.0) as client:
        assert client.timeout.read == 5.0
