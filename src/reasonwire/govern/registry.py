"""Runtime adapters and route registrations: data in code, reviewed like code.

A runtime is eligible only at the exact version an adapter record pins, and only once that
record is ``qualified``; a ``discovery`` record exposes no effort options. A route (an exact
provider/model registration) separately qualifies each level and says what the level means on
its wire, as a body fragment the gateway merges in. Nothing here widens a match: a new client
version needs a new record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.levels import LEVELS, Level
from reasonwire.wire.model import DialectName

ReviewState = Literal["discovery", "qualified"]


@dataclass(frozen=True)
class RuntimeAdapter:
    runtime_id: str
    version: str
    review_state: ReviewState
    qualification_id: str
    levels: frozenset[Level]

    def offered_levels(self) -> frozenset[Level]:
        """Levels the runtime may offer: none at all while still in discovery."""
        return self.levels if self.review_state == "qualified" else frozenset()


@dataclass(frozen=True)
class RouteRegistration:
    """An exact provider/model route. ``levels`` maps each qualified level to the body
    fragment that expresses it on ``dialect`` (e.g. chat ``{"reasoning_effort": "high"}``).

    The gateway authenticates upstream with the key in environment variable
    ``credential_env`` (read at call time), sent as ``auth_header: auth_scheme key``."""

    route_id: str
    provider: str
    model: str
    dialect: DialectName
    upstream_base_url: str
    qualification_id: str
    levels: Mapping[Level, Mapping[str, Any]]
    credential_env: str | None = None
    revoked: bool = False
    auth_header: str = "authorization"
    auth_scheme: str = "Bearer"
    headers: Mapping[str, str] = field(default_factory=dict)
    price_per_mtok: Mapping[str, float] | None = None
    profile: str | None = None
    """The vendor profile layer of the dialect (``vllm``, ``openrouter``...): which vendor
    controls are stripped and whether ``<think>`` blocks are cut from visible text."""
    profile_fields: Mapping[str, Any] = field(default_factory=dict)
    """The route layer: profile fields overridden for this route only."""
    """USD per million tokens by usage figure (``input_uncached``, ``cache_read``,
    ``cache_write``, ``output``) for an *estimated* cost when the provider reports none."""


@dataclass
class Registry:
    """Adapters and routes. Lookups are exact; anything unknown is a refusal."""

    adapters: list[RuntimeAdapter] = field(default_factory=list)
    routes: dict[str, RouteRegistration] = field(default_factory=dict)

    def adapter(self, runtime_id: str, version: str) -> RuntimeAdapter:
        for a in self.adapters:
            if a.runtime_id == runtime_id and a.version == version:
                if a.review_state != "qualified":
                    raise PolicyRefusal(
                        "runtime-not-qualified",
                        f"{runtime_id} {version} is in discovery: no effort options",
                    )
                return a
        known = sorted({a.version for a in self.adapters if a.runtime_id == runtime_id})
        if known:
            raise PolicyRefusal(
                "runtime-version-unknown",
                f"{runtime_id} {version} has no adapter record (known: {', '.join(known)})",
            )
        raise PolicyRefusal("runtime-unknown", f"no adapter for runtime {runtime_id!r}")

    def route(self, route_id: str) -> RouteRegistration:
        r = self.routes.get(route_id)
        if r is None:
            raise PolicyRefusal("route-unknown", f"route {route_id!r} is not registered")
        if r.revoked:
            raise PolicyRefusal("route-revoked", f"route {route_id!r} was revoked")
        return r

    def add_route(self, route: RouteRegistration) -> None:
        unknown = set(route.levels) - set(LEVELS)
        if unknown:
            raise ValueError(f"route {route.route_id}: unknown levels {sorted(unknown)}")
        self.routes[route.route_id] = route

    def revoke(self, route_id: str) -> None:
        r = self.route(route_id)
        self.routes[route_id] = replace(r, revoked=True)
