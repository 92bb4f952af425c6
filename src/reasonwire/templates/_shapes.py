"""The documented message shapes a scan tries, fewest changes from the wire form first.

Each delta compares two renders of the same shape: tool-call arguments as an object (what
vLLM and llama.cpp pass to templates) or as the JSON string of the wire; ``content: null``
or ``""`` on the tool-call turn; the system message separate or merged into the first user
message; tool-call ids as on the wire or as 9 alphanumerics (Mistral's rule); the extra
documented kwargs ``functions``/``datetime`` (Firefunction); finally the same shapes in the
llama.cpp-compatible environment (:func:`reasonwire.templates.render.render_llama_cpp_compat`).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Final

from reasonwire.wire.model import JsonObject


@dataclass(frozen=True)
class Shape:
    """One documented way to present the same conversation to a template."""

    args_object: bool = True
    empty_content: bool = False
    merge_system: bool = False
    short_ids: bool = False
    extra_kwargs: bool = False
    compat: bool = False

    def label(self) -> str:
        parts = ["args=object" if self.args_object else "args=string"]
        if self.empty_content:
            parts.append("content=''")
        if self.merge_system:
            parts.append("system-in-user")
        if self.short_ids:
            parts.append("ids=9-alnum")
        if self.extra_kwargs:
            parts.append("kwargs=functions,datetime")
        if self.compat:
            parts.append("env=llama.cpp-compat")
        return ",".join(parts)


def _shapes() -> list[Shape]:
    out: list[Shape] = []
    for compat in (False, True):
        combos = [
            Shape(a, c, m, i, k, compat)
            for a, c, m, i, k in itertools.product(
                (True, False), (False, True), *([(False, True)] * 3)
            )
        ]
        # fewest changes from the wire form first, then the declared order of the dimensions
        combos.sort(
            key=lambda s: (
                (not s.args_object)
                + s.empty_content
                + s.merge_system
                + s.short_ids
                + s.extra_kwargs
            )
        )
        out.extend(combos)
    return out


SHAPES: Final = tuple(_shapes())
_SHORT_ID = "a1B2c3D4e"
_DATETIME = "09 Nov 2026"


def shape_kwargs(shape: Shape, tools: list[JsonObject]) -> JsonObject:
    """The template kwargs a shape adds (Firefunction's ``functions`` and ``datetime``)."""
    if not shape.extra_kwargs:
        return {}
    return {
        "functions": json.dumps([t["function"] for t in tools], indent=2),
        "datetime": _DATETIME,
    }


def apply_shape(messages: list[JsonObject], shape: Shape) -> list[JsonObject]:
    """The messages as ``shape`` presents them (copies; the fixture's dicts are untouched)."""
    out = [dict(m) for m in messages]
    for msg in out:
        if msg.get("tool_calls"):
            calls = []
            for call in msg["tool_calls"]:
                call = dict(call)
                fn = dict(call["function"])
                if shape.args_object and isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.loads(fn["arguments"])
                call["function"] = fn
                if shape.short_ids:
                    call["id"] = _SHORT_ID
                calls.append(call)
            msg["tool_calls"] = calls
            if shape.empty_content and msg.get("content") is None:
                msg["content"] = ""
        if shape.short_ids and msg.get("role") == "tool":
            msg["tool_call_id"] = _SHORT_ID
    if shape.merge_system and out and out[0].get("role") == "system":
        system = out.pop(0)
        first_user = next((m for m in out if m.get("role") == "user"), None)
        if first_user is not None:
            first_user["content"] = f"{system['content']}\n\n{first_user['content']}"
    return out
