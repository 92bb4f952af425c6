"""The wrapping transport base (``reasonwire._wrapping``): one policy, two drivers.

The rule under test is httpx's ``Auth.auth_flow`` contract, which the base adopts: the flow
yields each request to send, receives each response, has the inner transport's exception
thrown in at the ``yield``, and its return value is what the caller gets. Each case runs on
the sync and the async driver with the same flow, and must behave the same.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import httpx
import pytest

from reasonwire._wrapping import AsyncWrappingTransport, Flow, WrappingTransport
from reasonwire.sim.server import SimServer


class Boom(Exception):
    pass


class Tagging:
    """Adds a header to the request; on a 503 sends it once more; keeps what it saw."""

    def __init__(self, recover: bool = False) -> None:
        self.seen: list[int] = []
        self.thrown: list[BaseException] = []
        self.recover = recover

    def flow(self, request: httpx.Request) -> Flow:
        request.headers["x-tag"] = "1"
        try:
            response = yield request
        except Boom as exc:
            self.thrown.append(exc)
            if self.recover:
                return httpx.Response(599, text="recovered")
            raise
        self.seen.append(response.status_code)
        if response.status_code == 503:
            response = yield request
            self.seen.append(response.status_code)
        return response


def _handler(statuses: list[int], sent: list[httpx.Request]) -> Callable[..., httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        status = statuses.pop(0)
        if status == 0:
            raise Boom("down")
        return httpx.Response(status, text=str(status))

    return handle


def _send_sync(policy: Tagging, statuses: list[int], sent: list[httpx.Request]) -> httpx.Response:
    inner = httpx.MockTransport(_handler(statuses, sent))
    with httpx.Client(transport=WrappingTransport(policy, inner)) as client:
        return client.get("http://test/x")


def _send_async(policy: Tagging, statuses: list[int], sent: list[httpx.Request]) -> httpx.Response:
    async def go() -> httpx.Response:
        inner = httpx.MockTransport(_handler(statuses, sent))
        async with httpx.AsyncClient(transport=AsyncWrappingTransport(policy, inner)) as client:
            return await client.get("http://test/x")

    return asyncio.run(go())


SENDERS = {"sync": _send_sync, "async": _send_async}


@pytest.mark.parametrize("mode", sorted(SENDERS))
def test_the_request_the_flow_yields_is_sent(mode: str) -> None:
    sent: list[httpx.Request] = []
    response = SENDERS[mode](Tagging(), [200], sent)
    assert response.status_code == 200 and response.text == "200"
    assert [r.headers.get("x-tag") for r in sent] == ["1"]


@pytest.mark.parametrize("mode", sorted(SENDERS))
def test_a_flow_that_yields_twice_sends_twice_and_returns_its_answer(mode: str) -> None:
    sent: list[httpx.Request] = []
    policy = Tagging()
    response = SENDERS[mode](policy, [503, 201], sent)
    assert len(sent) == 2 and policy.seen == [503, 201]
    assert response.status_code == 201


@pytest.mark.parametrize("mode", sorted(SENDERS))
def test_the_inner_exception_is_thrown_into_the_flow_and_reaches_the_caller(mode: str) -> None:
    policy = Tagging()
    with pytest.raises(Boom, match="down") as caught:
        SENDERS[mode](policy, [0], [])
    assert policy.thrown == [caught.value]  # the very object the caller sees
    assert policy.seen == []


@pytest.mark.parametrize("mode", sorted(SENDERS))
def test_a_flow_that_handles_the_exception_answers_instead(mode: str) -> None:
    response = SENDERS[mode](Tagging(recover=True), [0], [])
    assert response.status_code == 599 and response.text == "recovered"


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(seed=0) as server:
        yield server


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
def test_the_default_inner_comes_from_the_clients_package(sim: SimServer, package: str) -> None:
    """No inner given: the wrapper makes the package's own transport on the first request,
    so an ``httpx2`` client (the anthropic SDK's) works through it, once per wrapper."""
    pkg = pytest.importorskip(package)
    policy = Tagging()
    transport = WrappingTransport(policy)
    with pkg.Client(transport=transport) as client:
        assert client.get(sim.base_url + "/models").status_code == 200
        first = transport._inner
        assert client.get(sim.base_url + "/models").status_code == 200
    assert type(first).__module__.partition(".")[0] == package
    assert transport._inner is first and policy.seen == [200, 200]


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
def test_the_async_default_inner_comes_from_the_clients_package(
    sim: SimServer, package: str
) -> None:
    pkg = pytest.importorskip(package)
    policy = Tagging()
    transport = AsyncWrappingTransport(policy)

    async def go() -> None:
        async with pkg.AsyncClient(transport=transport) as client:
            assert (await client.get(sim.base_url + "/models")).status_code == 200

    asyncio.run(go())
    assert type(transport._inner).__module__.partition(".")[0] == package
    assert policy.seen == [200]
