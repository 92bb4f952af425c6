"""Reasoning controls a client can put in a request, per dialect, as data.

The governance gateway strips every one of these from a client's body and injects only the
value a signed binding authorises. Keeping the list here keeps provider knowledge in ``wire/``.

A control is a path of keys into the request body. ``("chat_template_kwargs",
"enable_thinking")`` removes only that nested key (and the parent when it ends up empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasonwire.wire.model import DIALECTS, JSON, Dialect

ControlPath = tuple[str, ...]

_ALL: tuple[ControlPath, ...] = (
    ("reasoning",),
    ("reasoning_effort",),
    ("thinking",),
    ("think",),
    ("output_config",),
    ("chat_template_kwargs", "enable_thinking"),
    ("chat_template_kwargs", "thinking"),
    ("chat_template_kwargs", "reasoning_effort"),
    ("include_reasoning",),
    ("enable_thinking",),
    ("thinking_budget",),
    ("generationConfig", "thinkingConfig"),
    ("generation_config", "thinking_config"),
)

CONTROL_PATHS: Mapping[Dialect, tuple[ControlPath, ...]] = {d: _ALL for d in DIALECTS}
"""Every reasoning control, for every dialect: fields of other dialects are stripped too (a
client that sends Anthropic's ``thinking`` to a chat route is still trying to set effort, and
an OpenAI-compatible server may honour a foreign field)."""

NON_ESCALATING: Mapping[Dialect, Mapping[str, JSON]] = {
    "chat": {"reasoning_effort": "none"},
}
"""Exact top-level values a client may keep on a request that does not enable governed
reasoning: they can only lower effort, never raise it."""


def strip_controls(
    dialect: Dialect, body: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, JSON]]:
    """``body`` without any reasoning control, and the removed values by dotted name.

    Only the dicts along a removed path are copied (copy-on-write): the caller's body is never
    changed and a large history is not deep-copied.
    """
    out: dict[str, Any] = dict(body)
    removed: dict[str, JSON] = {}
    for path in CONTROL_PATHS[dialect]:
        found, value = _pop_path(out, path)
        if found:
            removed[".".join(path)] = value
    return out, removed


def _pop_path(body: dict[str, Any], path: ControlPath) -> tuple[bool, JSON]:
    node: Any = body
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict) or path[-1] not in node:
        return False, None
    # Present: copy each parent on the way down (copy-on-write), delete, prune emptied parents.
    parents: list[tuple[dict[str, Any], str]] = []
    node = body
    for key in path[:-1]:
        child = dict(node[key])
        node[key] = child
        parents.append((node, key))
        node = child
    value = node.pop(path[-1])
    for parent, key in reversed(parents):
        if not parent[key]:
            del parent[key]
    return True, value


def is_non_escalating(dialect: Dialect, removed_values: Mapping[str, JSON]) -> bool:
    """True when every control the client sent is an allowed non-escalating value."""
    allowed = NON_ESCALATING.get(dialect, {})
    return bool(removed_values) and all(
        k in allowed and allowed[k] == v for k, v in removed_values.items()
    )


STREAM_USAGE: Mapping[Dialect, Mapping[str, Any]] = {
    "chat": {"stream_options": {"include_usage": True}},
}
"""What a streamed request needs so the provider reports usage at the end (merged by the
gateway so evidence has reported figures rather than none)."""


def wants_stream(dialect: Dialect, body: Mapping[str, Any]) -> bool:
    """Whether a request body asks for a streamed answer (Gemini says so in its path)."""
    return dialect != "gemini" and body.get("stream") is True
