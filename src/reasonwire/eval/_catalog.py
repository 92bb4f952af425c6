"""``eval models``: a route's catalog, filtered to the ids worth measuring, with reasons.

Skipped, each with its reason: aliases (``~`` ids, which move between models), ``:batch``
variants (same model, another queue), models whose output is not text, and models whose
catalog entry shows no reasoning parameter. ``--models portal-max:4`` (or ``max:4``) selects
every kept id whose completion price is at most $4 per 1M tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from reasonwire.errors import ConfigError, ReasonwireError
from reasonwire.eval.budget import Price
from reasonwire.routes import Route
from reasonwire.wire.model import JsonObject

REASONING_PARAMS = frozenset(
    {"reasoning", "include_reasoning", "reasoning_effort", "thinking", "thinkingConfig"}
)


@dataclass(frozen=True)
class CatalogEntry:
    id: str
    keep: bool
    reason: str
    price: Price | None


def _price(entry: JsonObject) -> Price | None:
    pricing = entry.get("pricing")
    if not isinstance(pricing, dict):
        return None
    try:
        return Price(float(pricing.get("prompt", 0)), float(pricing.get("completion", 0)))
    except (TypeError, ValueError):
        return None


def classify(entry: JsonObject) -> CatalogEntry:
    """Keep or skip one catalog entry, with the reason."""
    mid = str(entry.get("id", ""))
    price = _price(entry)
    if mid.startswith("~"):
        return CatalogEntry(mid, False, "alias (moves between models)", price)
    if mid.endswith(":batch"):
        return CatalogEntry(mid, False, "batch variant of another id", price)
    arch = entry.get("architecture")
    outs = arch.get("output_modalities") if isinstance(arch, dict) else None
    if isinstance(outs, list) and outs and outs != ["text"]:
        return CatalogEntry(mid, False, f"output is not text ({'+'.join(map(str, outs))})", price)
    params = entry.get("supported_parameters")
    if isinstance(params, list) and not REASONING_PARAMS & set(map(str, params)):
        return CatalogEntry(mid, False, "no reasoning parameter in the catalog entry", price)
    return CatalogEntry(mid, True, "", price)


def fetch_catalog(route: Route, key: str | None, timeout: float = 30.0) -> list[JsonObject]:
    """The raw catalog entries of ``route`` (``GET base_url + catalog_path``)."""
    if not route.catalog_path:
        raise ConfigError(f"route {route.name} has no catalog path")
    url = route.base_url + route.catalog_path
    try:
        resp = httpx.get(url, headers=route.auth_headers(key), timeout=timeout)
    except httpx.HTTPError as exc:
        raise ReasonwireError(f"catalog of {route.name}: {type(exc).__name__}") from None
    if resp.status_code >= 400:
        raise ReasonwireError(f"catalog of {route.name}: HTTP {resp.status_code}")
    data = resp.json()
    items = data.get("data") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ReasonwireError(f"catalog of {route.name}: unexpected shape")
    return [e for e in items if isinstance(e, dict)]


def select(entries: list[JsonObject], spec: str | None) -> list[CatalogEntry]:
    """Kept entries matching ``spec``: None = all kept, ``[portal-]max:N`` = completion price
    up to $N per 1M tokens, else a comma list of ids (kept or not: the user asked)."""
    classified = [classify(e) for e in entries]
    if spec is None:
        return [c for c in classified if c.keep]
    head, _, limit = spec.partition(":")
    if head in ("max", "portal-max") and not limit:
        raise ConfigError(f"--models {spec!r}: give the price limit, e.g. {head}:4")
    if head in ("max", "portal-max") and limit:
        try:
            cap = float(limit) / 1e6
        except ValueError:
            raise ConfigError(f"--models {spec!r}: the limit must be a number") from None
        return [c for c in classified if c.keep and c.price and c.price.completion <= cap]
    wanted = [m.strip() for m in spec.split(",") if m.strip()]
    if not wanted:
        raise ConfigError(f"--models {spec!r}: no model id (give ids, a comma list, or max:N)")
    by_id = {c.id: c for c in classified}
    return [by_id.get(m, CatalogEntry(m, True, "", None)) for m in wanted]
