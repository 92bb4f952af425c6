"""A loopback Anthropic Messages stub whose every figure the test chooses, written apart from
the harness and the simulator (it shares no code with either).

- Turn 1 (no ``tool_result`` in the messages): a ``thinking`` block with a signature, a text
  block and a ``tool_use`` of the tool offered; usage ``input_tokens`` = :attr:`base`.
- Turn 2: ``input_tokens`` = :attr:`base` + :attr:`read` when the request carries a
  ``thinking`` block (the verbatim replay), else :attr:`base` (the stripped one): the
  verbatim/stripped delta is exactly :attr:`read`.
- With :attr:`refuse`, a request whose last message names "earlier reasoning" (the probe
  wording; the neutral wording avoids it) is refused: a stop reason is answered ``200`` in the
  documented refusal form of the Messages API, with that ``stop_reason`` and no ``usage``:
  ``{"role": "assistant", "content": [{"type": "text", "text": "Hello.."}], "stop_reason":
  "refusal"}`` (Anthropic, "Streaming refusals", platform.claude.com/docs/en/test-and-evaluate/
  strengthen-guardrails/handle-streaming-refusals; WIRE.md: "Anthropic may return a
  content_filter stop with no usage"); ``"403"`` is the other refusal WIRE.md records (xAI
  answers 403 "I'm sorry, I can't help with that request.").

Every request body is kept in :attr:`bodies` (turn-1 prompt checks).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Stub:
    base: int = 300
    read: int = 100
    refuse: str | None = None  # the probe's refusal: a stop_reason, or "403"
    thought: str = "I add the numbers first, then I call get_weather."
    signature: str = "c2lnbmF0dXJlLW9uZQ=="
    bodies: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.bodies.append(body)
            n = len(self.bodies)
        msgs = body.get("messages") or []
        blocks = [b for m in msgs if isinstance(m.get("content"), list) for b in m["content"]]
        last = json.dumps(msgs[-1]) if msgs else ""
        if self.refuse and "earlier reasoning" in last:
            if self.refuse == "403":
                why = "I'm sorry, I can't help with that request."
                return {"status": 403, "type": "error",
                        "error": {"type": "permission_error", "message": why}}  # fmt: skip
            return {
                "role": "assistant",
                "content": [{"type": "text", "text": "Hello.."}],
                "stop_reason": self.refuse,
            }
        msg: dict[str, Any] = {"id": f"msg_stub{n:06d}", "type": "message", "role": "assistant",
                               "model": body.get("model")}  # fmt: skip
        if not any(b.get("type") == "tool_result" for b in blocks):
            tool = (body.get("tools") or [{}])[0].get("name", "get_weather")
            msg["content"] = [
                {"type": "thinking", "thinking": self.thought, "signature": self.signature},
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_stub1", "name": tool,
                 "input": {"city": "Lisbon"}},
            ]  # fmt: skip
            msg["stop_reason"] = "tool_use"
            msg["usage"] = {"input_tokens": self.base, "output_tokens": 40}
            return msg
        carried = any(b.get("type") == "thinking" for b in blocks)
        msg["content"] = [{"type": "text", "text": "NONE"}]
        msg["stop_reason"] = "end_turn"
        msg["usage"] = {
            "input_tokens": self.base + (self.read if carried else 0),
            "output_tokens": 2,
        }
        return msg


@contextmanager
def serve(stub: Stub) -> Iterator[str]:
    """Serve ``stub`` on a free loopback port; yields the base URL (``.../v1``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(size) or b"{}")
            if not self.path.endswith("/messages"):
                data, status = b'{"type":"error","error":{"type":"not_found_error"}}', 404
            else:
                answer = stub.answer(body)
                status = int(answer.pop("status", 200))
                data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
