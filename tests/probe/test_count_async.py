"""The async probe transport does not block the event loop while a count endpoint answers.

A loopback stub serves a Responses route: its generation path answers at once, its count
endpoint (``/v1/responses/input_tokens``) records that a count arrived and then holds its
answer until another task on the client's event loop has run. If the probe made the count
call on the loop, that task could not run before the count was answered (the stub gives up
holding after a bound, only so that the failing case ends): the order of the recorded events
shows which happened, no timing is asserted.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from reasonwire.probe import AsyncProbeTransport, flush
from reasonwire.probe.carriers import CountEndpoint
from reasonwire.probe.ledger import read_rows

TRACE = "First the key, then the value: the lookup needs both before it can answer."
HOLD_BOUND = 10.0
"""Seconds the stub holds a count at most (the blocking case then ends; never asserted)."""
WITH, WITHOUT = 120, 100
"""The stub's counts of the request with and without the re-sent reasoning text."""


class Stub:
    def __init__(self) -> None:
        self.events: list[str] = []
        self.release = threading.Event()
        self.lock = threading.Lock()

    def log(self, event: str) -> None:
        with self.lock:
            self.events.append(event)


def _handler(stub: Stub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if urlsplit(self.path).path.endswith("/responses/input_tokens"):
                if TRACE in json.dumps(body):
                    stub.log("count received")
                    stub.release.wait(HOLD_BOUND)
                    stub.log("count answered")
                    answer: dict[str, Any] = {"object": "response.input_tokens",
                                              "input_tokens": WITH}  # fmt: skip
                else:
                    answer = {"object": "response.input_tokens", "input_tokens": WITHOUT}
            else:
                answer = {"id": "resp_1", "object": "response", "model": body["model"],
                          "status": "completed", "output": [
                              {"type": "message", "role": "assistant", "content": [
                                  {"type": "output_text", "text": "About 522000."}]}],
                          "usage": {"input_tokens": WITH, "output_tokens": 3,
                                    "total_tokens": WITH + 3}}  # fmt: skip
            raw = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


@pytest.fixture
def stub() -> Iterator[tuple[Stub, str]]:
    state = Stub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


BODY = {
    "model": "gpt-stub",
    "store": False,
    "input": [
        {"role": "user", "content": "Find the population of Lyon."},
        {"type": "reasoning", "summary": [],
         "content": [{"type": "reasoning_text", "text": TRACE}]},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "522000"},
    ],
}  # fmt: skip


def test_another_task_runs_while_the_count_is_pending(
    stub: tuple[Stub, str], tmp_path: Path
) -> None:
    state, url = stub

    async def main() -> int:
        loop = asyncio.get_running_loop()

        async def other() -> None:
            deadline = loop.time() + HOLD_BOUND
            while "count received" not in state.events and loop.time() < deadline:
                await asyncio.sleep(0.005)
            state.log("other task ran")
            state.release.set()

        transport = AsyncProbeTransport(
            "a", ledger_dir=tmp_path, tokenizer=CountEndpoint(timeout=HOLD_BOUND * 2)
        )
        async with httpx.AsyncClient(transport=transport, base_url=url) as http:
            waiter = asyncio.create_task(other())
            resp = await http.post("/v1/responses", json=BODY)
            await resp.aread()
            await waiter
        return resp.status_code

    assert asyncio.run(main()) == 200
    assert state.events == ["count received", "other task ran", "count answered"]
    assert flush(timeout=30)
    (row,) = read_rows(tmp_path).rows
    (entry,) = row["sentCarriers"]
    assert entry["tokenCount"] == WITH - WITHOUT
