"""A fifth dialect added by one module (``toy_dialect.py``) and one registry line: inspect,
the probe, the agent loop and the gateway's projection all work with it unchanged."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import orjson
import pytest

from reasonwire.agent import Agent
from reasonwire.agent.models import Model
from reasonwire.doctor.inspect import inspect_bytes
from reasonwire.probe import ProbeTransport
from reasonwire.routes import Route
from reasonwire.wire import registry
from tests.probe.streams import flushed_rows

MIND = "the toy thinks the lighthouse is north"  # readable reasoning: hidden from clients
SEAL = "c2VhbC1vcGFxdWUtc3RhdGUtMDAx"  # opaque: must come back byte for byte


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(registry.TABLE, "toy", "tests.wire.toy_dialect")  # the one line
    yield
    registry._LOADED.pop("toy", None)


class _ToyServer(BaseHTTPRequestHandler):
    """The toy provider: a tool call with mind + seal, then an answer only if the bot turn
    came back with the seal exact (else 400, as signed providers do)."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        _ToyServer.seen.append(body)
        turns = body["turns"]
        if turns[-1]["who"] == "tool":
            bot = turns[-2]
            if bot.get("seal") != SEAL:
                self._send(400, {"error": {"message": "seal missing or altered"}})
                return
            answer = {"toy": 1, "id": "t2", "say": f"it is {turns[-1]['say']}",
                      "usage": {"in": 40, "out": 5}}  # fmt: skip
        else:
            answer = {"toy": 1, "id": "t1", "say": "", "mind": MIND, "seal": SEAL,
                      "calls": [{"id": "c1", "fn": "weather", "args": '{"city": "Oslo"}'}],
                      "usage": {"in": 20, "out": 9}}  # fmt: skip
        if body.get("live"):
            raw = b"".join(
                b"data: " + orjson.dumps(e) + b"\n\n"
                for e in ({"toy": 1, "piece": answer["say"]}, {"toy": 1, "done": answer})
            )
            self._send(200, raw, "text/event-stream")
        else:
            self._send(200, answer)

    def _send(self, status: int, body: Any, ctype: str = "application/json") -> None:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture()
def toy_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ToyServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _ToyServer.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def weather(city: str) -> str:
    """Weather for a city."""
    return "sunny in " + city


@pytest.mark.parametrize("stream", [False, True])
def test_agent_loop_replays_the_toy_seal(toy_url: str, stream: bool) -> None:
    model = Model(route=Route("toy", "toy", toy_url, local=True), name="toy-1")
    result = Agent(model, tools=[weather]).run("weather in Oslo?", stream=stream)
    assert result.answer == "it is sunny in Oslo"
    second = _ToyServer.seen[1]["turns"]
    assert second[-2]["seal"] == SEAL and second[-2]["mind"] == MIND  # replayed as received


def test_inspect_detects_and_decodes_a_saved_toy_body(tmp_path: Path) -> None:
    saved = orjson.dumps({"toy": 1, "id": "t1", "say": "", "mind": MIND, "seal": SEAL,
                          "calls": [{"id": "c1", "fn": "weather", "args": "{}"}]})  # fmt: skip
    found = inspect_bytes(saved)
    assert found.dialect == "toy" and found.form == "json"
    assert [(c.kind, c.value, c.opaque) for c in found.turn.carriers] == [
        ("mind", MIND, False),
        ("seal", SEAL, True),
    ]


def test_probe_counts_toy_calls(toy_url: str, tmp_path: Path) -> None:
    request = {"model": "toy-1", "turns": [
        {"who": "user", "say": "q"},
        {"who": "bot", "say": "", "mind": MIND, "seal": SEAL,
         "calls": [{"id": "c1", "fn": "weather", "args": "{}"}]},
        {"who": "tool", "re": "c1", "say": "sunny"},
    ]}  # fmt: skip
    with httpx.Client(transport=ProbeTransport("toy-s", ledger_dir=tmp_path)) as client:
        resp = client.post(toy_url + "/toy/ask", json=request)
    assert resp.status_code == 200
    (row,) = flushed_rows(tmp_path).rows
    assert row["dialect"] == "toy" and row["model"] == "toy-1"
    assert row["usage"]["inputTokens"] == 40 and row["usage"]["outputTokens"] == 5
    assert row["sentReasoningBytes"] == len(MIND.encode()) + len(SEAL)  # re-sent carriers


def test_gateway_projection_hides_toy_mind_keeps_seal() -> None:
    toy = registry.get_dialect("toy")
    answer = {"toy": 1, "id": "t1", "say": "hi", "mind": MIND, "seal": SEAL, "secret": MIND}
    seen = toy.project_body(answer)
    assert seen == {"toy": 1, "id": "t1", "say": "hi", "seal": SEAL}
    events = [{"toy": 1, "piece": "hi", "mind": MIND}, {"toy": 1, "done": answer}]
    raw = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)
    for cut in range(1, len(raw), 7):
        proj = toy.stream_projector()
        out = proj.feed(raw[:cut]) + proj.feed(raw[cut:]) + proj.close()
        assert MIND.encode() not in out and SEAL.encode() in out and b'"piece":"hi"' in out
    assert b"error" in toy.stream_projector().fail("cut")
