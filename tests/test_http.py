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
    ProviderError,
    RateLimited,
    ServerError,
    TransportError,
)
from reasonwire.http import (
    NO_RETRY,
    Attempt,
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


# -- the retry flow, without I/O: outcomes fed in, decisions read out ---------------------------
# Expected delays are the documented rule written out: the n-th retry (n from 0) waits
# min(backoff_max, backoff_base * 2**n) times a factor in [1 - jitter, 1 + jitter], or the
# provider's Retry-After capped at retry_after_cap.

STEADY = RetryPolicy(retries=2, backoff_base=0.5, backoff_max=8.0, jitter=0.0)


def decisions(policy: RetryPolicy, *failures: ProviderError | TransportError) -> list[Attempt]:
    """The attempts the flow asks for when each attempt fails with the next of ``failures``."""
    flow = policy.flow()
    out = [next(flow)]
    for failure in failures:
        try:
            out.append(flow.send(failure))
        except StopIteration:
            break
    return out


def test_flow_retries_up_to_the_count_and_no_further() -> None:
    busy = ServerError(503)
    assert decisions(STEADY, busy, busy, busy, busy) == [
        Attempt(0, 0.0),
        Attempt(1, 0.5),
        Attempt(2, 1.0),
    ]  # retries=2: three attempts in all, the third failure is final
    assert decisions(RetryPolicy(retries=0), busy) == [Attempt(0, 0.0)]
    long = RetryPolicy(retries=6, backoff_base=0.5, backoff_max=4.0, jitter=0.0)
    delays = [a.delay for a in decisions(long, *[busy] * 7)[1:]]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504, 529, 408, 409])
def test_flow_retries_the_retry_statuses(code: int) -> None:
    assert decisions(STEADY, ProviderError(code))[-1] == Attempt(1, 0.5)


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422, 501])
def test_flow_stops_at_other_statuses(code: int) -> None:
    assert decisions(STEADY, ProviderError(code, retry_after=1.0)) == [Attempt(0, 0.0)]


def test_flow_connection_failures_back_off_unless_told_not_to() -> None:
    down = TransportError("ConnectError")
    assert decisions(STEADY, down, down) == [Attempt(0, 0.0), Attempt(1, 0.5), Attempt(2, 1.0)]
    never = RetryPolicy(retries=2, retry_connection_errors=False)
    assert decisions(never, down) == [Attempt(0, 0.0)]


@pytest.mark.parametrize(
    ("asked", "waited"),
    [(0.0, 0.0), (3.0, 3.0), (4.999, 4.999), (5.0, 5.0), (5.001, 5.0), (3600.0, 5.0)],
)
def test_flow_retry_after_is_honoured_up_to_its_cap(asked: float, waited: float) -> None:
    policy = RetryPolicy(retries=1, backoff_base=0.5, jitter=0.0, retry_after_cap=5.0)
    assert decisions(policy, RateLimited(429, retry_after=asked))[-1] == Attempt(1, waited)
    assert decisions(policy, ServerError(503, retry_after=asked))[-1] == Attempt(1, waited)


def test_flow_without_retry_after_backs_off() -> None:
    assert decisions(STEADY, RateLimited(429, retry_after=None))[-1] == Attempt(1, 0.5)


def test_retry_after_date_in_the_past_means_now() -> None:
    now = 1_800_000_000.0
    past = email.utils.formatdate(now - 30, usegmt=True)
    waited = retry_after_seconds(httpx.Headers({"retry-after": past}), now=now)
    assert waited == 0.0
    assert decisions(STEADY, ServerError(503, retry_after=waited))[-1] == Attempt(1, 0.0)
    future = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds(httpx.Headers({"retry-after": future}), now=now) == 30.0


@pytest.mark.parametrize(("factor", "expected"), [("low", 0.75), ("high", 1.25)])
def test_flow_jitter_spans_its_documented_range(
    monkeypatch: pytest.MonkeyPatch, factor: str, expected: float
) -> None:
    """Retry 1 of base 0.5 is 1.0 s, jitter 0.25 scales it by a factor in [0.75, 1.25]."""
    asked: list[tuple[float, float]] = []

    def uniform(lo: float, hi: float) -> float:
        asked.append((lo, hi))
        return lo if factor == "low" else hi

    monkeypatch.setattr("reasonwire.http.random.uniform", uniform)
    policy = RetryPolicy(retries=2, backoff_base=0.5, jitter=0.25)
    got = decisions(policy, ServerError(500), ServerError(500))
    assert [a.delay for a in got[1:]] == [0.5 * expected, 1.0 * expected]
    assert asked == [(0.75, 1.25), (0.75, 1.25)]


def test_flow_jitter_draws_stay_in_range() -> None:
    policy = RetryPolicy(retries=1, backoff_base=2.0, jitter=0.5)
    delays = {decisions(policy, ServerError(500))[-1].delay for _ in range(200)}
    assert all(1.0 <= d <= 3.0 for d in delays)
    assert len(delays) > 1  # drawn, not fixed


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


def test_any_error_status_carries_retry_after() -> None:
    server = Server(status(503, b"busy", **{"retry-after": "2"}))
    with client_for(server) as client, pytest.raises(ServerError) as info:
        post_json(client, URL, {}, retries=NO_RETRY)
    assert info.value.retry_after == 2.0
    with client_for(Server(status(500, b"x"))) as client, pytest.raises(ServerError) as info:
        post_json(client, URL, {}, retries=NO_RETRY)
    assert info.value.retry_after is None


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


def test_an_error_status_url_loses_its_query_values() -> None:
    server = Server(status(400, {"error": {"message": "bad field"}}))
    with client_for(server) as client, pytest.raises(BadRequest) as info:
        post_json(client, URL + "?alt=sse&key=" + KEY, {})
    assert info.value.url == URL + "?alt=...&key=..."
    assert KEY not in str(info.value) and KEY not in repr(info.value.args)


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


def test_a_retry_sleeps_even_for_zero_seconds() -> None:
    """The driver's ``sleep`` is where a caller sees every retry, a ``Retry-After: 0`` too."""
    server = Server(status(429, {}, **{"retry-after": "0"}), status(200, {"ok": 1}))
    waits: list[float] = []
    with client_for(server) as client:
        post_json(client, URL, {}, sleep=waits.append)
    assert waits == [0.0] and len(server.requests) == 2


def test_a_per_call_timeout_reaches_the_request_and_none_keeps_the_clients() -> None:
    seen: list[dict[str, float | None]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return httpx.Response(200, json={})

    with make_client(transport=httpx.MockTransport(answer), timeout=7.0) as client:
        post_json(client, URL, {}, timeout=2.5)
        with stream_post(client, URL, {}, timeout=httpx.Timeout(1.0, read=9.0)):
            pass
        post_json(client, URL, {})
    assert seen == [
        {"connect": 2.5, "read": 2.5, "write": 2.5, "pool": 2.5},
        {"connect": 1.0, "read": 9.0, "write": 1.0, "pool": 1.0},
        {"connect": 7.0, "read": 7.0, "write": 7.0, "pool": 7.0},
    ]


async def test_astream_post_drop_mid_body_is_transport_error_not_retried() -> None:
    class Dropping(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[no-untyped-def]
            yield b"data: {}\n\n"
            raise httpx.ReadError("peer closed")

    server = Server(lambda r: httpx.Response(200, stream=Dropping()))
    got: list[bytes] = []
    async with make_async_client(transport=httpx.MockTransport(server)) as client:
        with pytest.raises(TransportError) as info:
            async with astream_post(client, URL, {}) as resp:
                async for chunk in resp.aiter_bytes():
                    got.append(chunk)
    assert got == [b"data: {}\n\n"] and len(server.requests) == 1
    assert "ReadError" in str(info.value)


def test_make_client_defaults() -> None:
    with make_client() as client:
        assert client.timeout.connect == 10.0
        assert client.timeout.read == 300.0
    with make_client(timeout=5.0) as client:
        assert client.timeout.read == 5.0
