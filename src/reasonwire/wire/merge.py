"""The one deep merge the dialects use for ``extra_body``, profile defaults and effort fragments."""

from __future__ import annotations

import copy
from collections.abc import Mapping

from reasonwire.wire.model import JSON, JsonObject


def deep_merge(base: JsonObject, extra: Mapping[str, JSON]) -> JsonObject:
    """Merge ``extra`` into ``base`` in place and return ``base``.

    Mappings merge key by key; anything else replaces. Nested dicts of ``base`` are copied
    before they change and values from ``extra`` are deep-copied, so neither the caller's
    ``extra_body`` nor a dict shared with another request is ever modified through the result.
    """
    for key, value in extra.items():
        if type(value) in _ATOMIC:  # what deepcopy returns as it is, without its dispatch
            base[key] = value
            continue
        current = base.get(key)
        if isinstance(value, Mapping):
            base[key] = deep_merge(dict(current) if isinstance(current, dict) else {}, value)
        else:
            base[key] = copy.deepcopy(value)
    return base


_ATOMIC = frozenset({str, int, float, bool, type(None)})
"""Immutable JSON scalars: ``copy.deepcopy`` returns them unchanged (exact types only)."""
