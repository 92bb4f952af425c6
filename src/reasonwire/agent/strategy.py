"""Continuation strategies: how the wire tail of a tool loop goes back to the provider.

Two strategies cover every dialect, chosen from data (the dialect name, the route profile and
the ``store`` option), never from a provider name:

- **replay** (every dialect): each request carries the whole turn so far, every assistant
  step as its native payload (``Turn.as_message()``), so the dialect's ``replay`` sends the
  carriers exactly as received: Chat the complete raw assistant message with the profile's
  fields, Anthropic the raw content blocks in order, Gemini the parts with each
  ``thoughtSignature`` where it came, Responses (store false) every raw output item.
- **server_state** (dialects whose object has ``server_state``, with ``store`` on): the
  server keeps the turn; after the first answer a request carries only what is new (the tool
  results) and the id of the last successful response.

A dialect with server state asks, when ``store`` is off, for the fields a stateless replay
needs (``include: ["reasoning.encrypted_content"]`` for Responses): added automatically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from reasonwire.agent.models import Model
from reasonwire.wire.facts import ServerState
from reasonwire.wire.model import JSON
from reasonwire.wire.registry import get_dialect


@dataclass(frozen=True, slots=True)
class Strategy:
    """What the session does: ``kind``, the dialect profile, and fields added to every body.

    ``previous_field`` names the body field for the last response id (server_state only).
    """

    kind: Literal["replay", "server_state"]
    profile: str | None
    body_fields: Mapping[str, JSON] = field(default_factory=dict)
    previous_field: str | None = None


def _merge_include(extra: Mapping[str, JSON], spec: ServerState) -> dict[str, JSON]:
    out = dict(extra)
    have = out.get(spec.include_field)
    items = list(have) if isinstance(have, list) else []
    for want in spec.stateless_include:
        if want not in items:
            items.append(want)
    out[spec.include_field] = items
    return out


def strategy_for(model: Model) -> Strategy:
    """The strategy for ``model``, from its dialect, route profile and ``store``."""
    spec = get_dialect(model.route.dialect).server_state
    if spec is None:
        return Strategy("replay", model.route.profile)
    store = spec.store_default if model.store is None else model.store
    if store:
        return Strategy(
            "server_state",
            model.route.profile or spec.stateful_profile,
            {spec.store_field: True},
            spec.previous_field,
        )
    body: dict[str, JSON] = {spec.store_field: False}
    if spec.stateless_include:  # a dialect whose stateless answers carry everything asks none
        body[spec.include_field] = _merge_include(model.extra_body, spec)[spec.include_field]
    return Strategy("replay", model.route.profile or spec.stateless_profile, body)


__all__ = ["Strategy", "strategy_for"]
