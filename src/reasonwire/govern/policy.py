"""Resolving the effort a turn may use: the intersection of what the runtime adapter
qualified, what the route qualified, what the organisation allows, capped at its maximum.

``Auto`` means the organisation's allowed maximum (still within the intersection). Effort is
fixed when a conversation is created; a later turn asking for another level is refused.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.levels import LEVELS, Level, Requested, rank
from reasonwire.govern.registry import Registry


@dataclass(frozen=True)
class OrgPolicy:
    allowed: frozenset[Level]
    maximum: Level


@dataclass(frozen=True)
class Resolution:
    requested: Requested
    resolved: Level
    ceiling: Level
    runtime_qualification: str
    route_qualification: str


def resolve(
    registry: Registry,
    policy: OrgPolicy,
    *,
    runtime_id: str,
    runtime_version: str,
    route_id: str,
    requested: Requested,
) -> Resolution:
    """Resolve ``requested`` or raise :class:`PolicyRefusal` with the reason."""
    adapter = registry.adapter(runtime_id, runtime_version)
    route = registry.route(route_id)
    offered = adapter.offered_levels()
    usable = [
        lv
        for at, lv in enumerate(LEVELS)  # at: rank(lv)
        if lv in offered
        and lv in route.levels
        and lv in policy.allowed
        and at <= rank(policy.maximum)
    ]
    if not usable:
        raise PolicyRefusal("no-common-level", f"{runtime_id} {runtime_version} on {route_id}")
    ceiling = usable[-1]
    if requested == "auto":
        resolved: Level = ceiling
    else:
        if requested not in usable:
            reason = (
                "over-policy" if rank(requested) > rank(policy.maximum) else "level-not-qualified"
            )
            raise PolicyRefusal(reason, f"{requested} not in {', '.join(usable)}")
        resolved = requested
    return Resolution(
        requested, resolved, ceiling, adapter.qualification_id, route.qualification_id
    )


class ConversationEfforts:
    """Remembers the effort each conversation was created with (thread-safe)."""

    def __init__(self) -> None:
        self._fixed: dict[str, Level] = {}
        self._lock = threading.Lock()

    def fix(self, conversation_id: str, level: Level) -> Level:
        with self._lock:
            current = self._fixed.setdefault(conversation_id, level)
        if current != level:
            raise PolicyRefusal(
                "effort-changed",
                f"conversation {conversation_id} was created at {current}, turn asks {level}",
            )
        return current
