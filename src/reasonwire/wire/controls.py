"""Removing control fields from a request body: the engine. The inventories are data on each
dialect object (``wire/<dialect>/_controls.py``) and its vendor profiles.

A control is a path of keys into the request body. ``("chat_template_kwargs",
"enable_thinking")`` removes only that nested key (and the parent when it ends up empty).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reasonwire.wire.model import JSON, JsonObject

ControlPath = tuple[str, ...]


def strip_paths(
    body: Mapping[str, JSON], paths: Iterable[ControlPath]
) -> tuple[JsonObject, dict[str, JSON]]:
    """``body`` without the values at ``paths``, and the removed values by dotted name.

    Only the dicts along a removed path are copied (copy-on-write): the caller's body is never
    changed and a large history is not deep-copied.
    """
    out: JsonObject = dict(body)
    removed: dict[str, JSON] = {}
    for path in paths:
        if path[0] not in out:  # the common case: the body sets nothing under this name
            continue
        found, value = _pop_path(out, path)
        if found:
            removed[".".join(path)] = value
    return out, removed


def _pop_path(body: JsonObject, path: ControlPath) -> tuple[bool, JSON]:
    node: JSON = body
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict) or path[-1] not in node:
        return False, None
    # Present: copy each parent on the way down (copy-on-write), delete, prune emptied parents.
    parents: list[tuple[JsonObject, str]] = []
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


__all__ = ["ControlPath", "strip_paths"]
