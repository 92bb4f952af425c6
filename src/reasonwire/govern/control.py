"""Control: project a conversation's effort into a signed per-turn binding.

Projection resolves the requested level against the registry and the organisation policy and
signs the result; the gateway re-checks everything on every call (a route revoked after
projection, a policy lowered since, a key retired), so a binding is necessary, not sufficient.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Unpack

from reasonwire.govern.binding import KeyRing, Subject, issue
from reasonwire.govern.policy import OrgPolicy, resolve
from reasonwire.govern.registry import Registry


def project(
    registry: Registry,
    policy: OrgPolicy,
    ring: KeyRing,
    *,
    ttl_seconds: int = 900,
    now: float | None = None,
    **subject: Unpack[Subject],
) -> str:
    """Resolve and sign; raises :class:`~reasonwire.errors.PolicyRefusal` when not allowed."""
    res = resolve(
        registry,
        policy,
        runtime_id=subject["runtime_id"],
        runtime_version=subject["runtime_version"],
        route_id=subject["route_id"],
        requested=subject["requested"],
    )
    return issue(ring, ceiling=res.ceiling, ttl_seconds=ttl_seconds, now=now, **subject)


def minter(
    registry: Registry,
    policy: OrgPolicy,
    ring: KeyRing,
    *,
    ttl_seconds: int = 900,
    **subject: Unpack[Subject],
) -> Callable[[], str]:
    """A callable that projects a fresh binding for the conversation each time it is called
    (one per turn: :class:`reasonwire.govern.carry.Carry` calls it). The requested intent is
    the one the conversation was created with; resolution runs again on every call, so a
    policy or registry change since the last turn is seen."""

    def mint() -> str:
        return project(registry, policy, ring, ttl_seconds=ttl_seconds, **subject)

    return mint
