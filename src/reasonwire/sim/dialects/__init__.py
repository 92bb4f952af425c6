"""Per-dialect request reading and response/stream building for the simulator.

Each module exposes ``handle(body, behaviour, state, model, stream)`` returning a
:class:`Reply` (or raising :class:`~reasonwire.sim.engine.SimError`) and ``error_body(err)``
rendering an error in that provider's shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reasonwire.errors import SimError

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject


@dataclass
class Reply:
    """A JSON body (``body``) or a list of SSE frames (``events``); a stream that may also be
    delivered as a progressive JSON array (Gemini without ``alt=sse``) keeps its payloads in
    ``items``, one per SSE frame."""

    body: JSON = None
    events: list[bytes] | None = None
    items: list[JSON] | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def dumps(obj: JSON) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def sse(data: JSON, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"{head}data: {payload}\n\n".encode()


def text_of(content: JSON) -> str:
    """Visible text of a message content: a string or a list of text parts/blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                t = part.get("text")
                if isinstance(t, str):
                    out.append(t)
                elif isinstance(part.get("content"), str | list):
                    out.append(text_of(part["content"]))
                elif isinstance(part.get("output"), str):
                    out.append(part["output"])
        return "\n".join(out)
    return ""


def need_dict(body: JSON, what: str = "request body") -> JsonObject:
    if not isinstance(body, dict):
        raise SimError(400, f"{what} must be a JSON object")
    return body


def need_list(value: JSON, name: str) -> list[JSON]:
    if not isinstance(value, list):
        raise SimError(400, f"'{name}' must be an array", param=name)
    return value


def check_params(body: JsonObject, rejects: Mapping[str, str]) -> None:
    """400 for a parameter this model refuses (key path with dots)."""
    for path, message in rejects.items():
        node: JSON = body
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            raise SimError(400, message, param=path, code="unsupported_parameter")
