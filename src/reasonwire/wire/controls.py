"""Reasoning controls a client can put in a request, per dialect, as data.

The governance gateway strips every one of these from a client's body and injects only the
value a signed binding authorises. Keeping the list here keeps provider knowledge in ``wire/``.

A control is a path of keys into the request body. ``("chat_template_kwargs",
"enable_thinking")`` removes only that nested key (and the parent when it ends up empty).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from reasonwire.wire.model import JSON, Dialect

ControlPath = tuple[str, ...]

_COMMON: tuple[ControlPath, ...] = (
    ("reasoning",),
    ("reasoning_effort",),
    ("thinking",),
    ("think",),
    ("output_config",),
    ("chat_template_kwargs", "enable_thinking"),
    ("chat_template_kwargs", "thinking"),
    ("include_reasoning",),
    ("enable_thinking",),
)

CONTROL_PATHS: Mapping[Dialect, tuple[ControlPath, ...]] = {
    "chat": _COMMON,
    "responses": _COMMON,
    "anthropic": _COMMON,
    "gemini": (
        *_COMMON,
        ("generationConfig", "thinkingConfig"),
        ("generation_config", "thinking_config"),
    ),
}
"""Every reasoning control per dialect. Fields of other dialects are listed too: a client
that sends Anthropic's ``thinking`` to a chat route is still trying to set effort."""

NON_ESCALATING: Mapping[Dialect, Mapping[str, JSON]] = {
    "chat": {"reasoning_effort": "none"},
}
"""Exact top-level values a client may keep on a request that does not enable governed
reasoning: they can only lower effort, never raise it."""


def strip_controls(dialect: Dialect, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of ``body`` without any reasoning control, and the dotted names removed."""
    out: dict[str, Any] = copy.deepcopy(dict(body))
    removed: list[str] = []
    for path in CONTROL_PATHS[dialect]:
        if _pop_path(out, path):
            removed.append(".".join(path))
    return out, removed


def _pop_path(body: dict[str, Any], path: ControlPath) -> bool:
    parents: list[tuple[dict[str, Any], str]] = []
    node: Any = body
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return False
        parents.append((node, key))
        node = node[key]
    if not isinstance(node, dict) or path[-1] not in node:
        return False
    del node[path[-1]]
    for parent, key in reversed(parents):
        child = parent[key]
        if isinstance(child, dict) and not child:
            del parent[key]
    return True


def is_non_escalating(dialect: Dialect, removed_values: Mapping[str, JSON]) -> bool:
    """True when every control the client sent is an allowed non-escalating value."""
    allowed = NON_ESCALATING.get(dialect, {})
    return bool(removed_values) and all(
        k in allowed and allowed[k] == v for k, v in removed_values.items()
    )


def merge_fragment(body: dict[str, Any], fragment: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge a route's effort fragment (e.g. ``{"reasoning": {"effort": "low"}}``)."""
    for key, value in fragment.items():
        if isinstance(value, Mapping) and isinstance(body.get(key), dict):
            merge_fragment(body[key], value)
        else:
            body[key] = copy.deepcopy(value)
    return body
