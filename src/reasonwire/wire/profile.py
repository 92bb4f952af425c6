"""Profiles: what one vendor or route does differently inside a dialect, merged in layers.

One wire API serves many vendors (Chat Completions: OpenAI, OpenRouter, DeepSeek, vLLM,
llama.cpp, Z.ai, Cerebras, Gemini's compatibility layer...). Their differences are data: a
:class:`Profile` per vendor, layered on the dialect's ``default`` profile, then on the route's
own overrides (a route record or a TOML route file). Every capability field says why it
exists. A layer changes only the fields it sets (a field left at its class default inherits);
``controls`` accumulate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from reasonwire.errors import ConfigError
from reasonwire.wire.facts import Control
from reasonwire.wire.model import JSON, JsonObject

LEVEL = "<level>"
"""Placeholder in :attr:`Profile.effort_value`: replaced by the effort level as written."""


@dataclass(frozen=True, slots=True)
class Profile:
    """How one vendor family or route treats reasoning on its dialect."""

    name: str = "default"
    returns: tuple[str, ...] | None = None
    """Carrier fields sent back on an assistant message (and so the ones the route reads).
    ``None``: every carrier field that was received. Why: servers ignore or refuse fields
    they do not read (llama.cpp answers ``reasoning_content: null`` with 500)."""
    effort_path: tuple[str, ...] = ()
    """Key path in the request body that expresses effort. Why: ``reasoning_effort`` on one
    vendor is ``reasoning: {effort}`` or ``thinking: {type}`` on another."""
    effort_value: JSON = LEVEL
    """The value put at :attr:`effort_path` (:data:`LEVEL` stands for the level; a dict is
    deep-merged with what is there). With an empty path a dict merges at the body's root
    (DeepSeek V4: ``thinking`` and ``reasoning_effort`` together); ``None`` sends no effort
    field (a route whose model always thinks and documents no effort control)."""
    max_tokens_field: str = "max_tokens"
    """The output-length field the route understands (some refuse ``max_tokens``)."""
    required_on_tool_calls: tuple[str, ...] = ()
    """Carrier fields the route requires on every assistant message with tool calls. Why:
    DeepSeek and Kimi K2 thinking answer 400 without them. A received message is never
    padded: its reasoning goes back as it came, and one that came without goes back without
    (``""`` would pass the check and carry nothing, hiding that reasoning was lost; such
    routes also set :attr:`keeps_across_turns` so nothing is dropped). Only a message built
    from neutral parts, which has no such field to carry (foreign history, the harness's
    arms without reasoning, strip), sends ``""`` so that the route accepts it."""
    replay_drop: tuple[str, ...] = ()
    """Keys of a received assistant message the route documents must not be sent back
    (everything else is replayed as received, in order). Why: a raw replay keeps vendor
    fields other peers drop (``thinking_blocks``, ``provider_specific_fields``,
    ``extra_content``); a route that refuses one names it here."""
    keeps_across_turns: bool = False
    """The server requires the reasoning of earlier tool-call turns in every later request,
    across user turns too (DeepSeek thinking mode answers 400 without it). Why: an agent
    that drops reasoning at the end of a turn (the documented default elsewhere) must not
    do so on such a route."""
    request_defaults: Mapping[str, JSON] = field(default_factory=lambda: MappingProxyType({}))
    """Body fields merged into every request before ``extra_body`` (Responses' include of
    encrypted reasoning for stateless replay)."""
    think_tags: bool = False
    """The model may write its reasoning inline as ``<think>...</think>`` in ``content``
    (open models behind a server without a reasoning parser). Why: a governed client must
    not see it, so the gateway's projection cuts those blocks, in streams too."""
    controls: tuple[Control, ...] = ()
    """Vendor request fields that set reasoning or the model, beyond the dialect's own
    inventory. Why: the gateway strips every one of them; the route fragment is the only
    source of effort."""
    effort_levels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Requested effort level -> the level the server runs, as the vendor documents its own
    mapping (the request carries the level as written). Empty: each level runs as written.
    Why: a ladder that climbs levels must know which requested levels the server treats as
    one (DeepSeek V4 runs ``medium`` as ``high``)."""
    source: str = ""
    """Where this vendor's facts are documented (URLs, recordings). Why: every wire fact
    cites its source, so a changed vendor behaviour can be checked against it."""
    note: str = ""
    """One line for people: what this vendor does."""

    def effective_level(self, level: str) -> str:
        """The level the server runs when asked for ``level`` (:attr:`effort_levels`)."""
        return self.effort_levels.get(level, level)

    def returns_field(self, name: str) -> bool:
        """True when a replay to this route carries the field ``name``."""
        return self.returns is None or name in self.returns

    def effort_fragment(self, level: str) -> dict[str, JSON]:
        """The body fragment that asks this route for ``level`` of effort."""
        value: JSON = _fill(self.effort_value, level)
        for key in reversed(self.effort_path):
            value = {key: value}
        return value if isinstance(value, dict) else {}

    def layer(self, over: Profile) -> Profile:
        """This profile with ``over``'s explicitly set fields on top (controls accumulate)."""
        # field name -> another profile's value for it: as heterogeneous as the fields, so
        # typed as the keyword arguments of ``dataclasses.replace`` are
        changes: dict[str, Any] = {}
        # Effort is one fact, a path and the value put there: a layer that sets either sets
        # both (``effort_path=()`` with a dict value merges at the body's root; a ``None``
        # value sends no effort field at all).
        effort = any(getattr(over, n) != _DEFAULTS[n] for n in _EFFORT_FIELDS)
        for f in dataclasses.fields(Profile):
            value = getattr(over, f.name)
            if f.name in _EFFORT_FIELDS:
                if effort:
                    changes[f.name] = value
            elif f.name == "controls":
                if value:
                    changes["controls"] = self.controls + tuple(
                        c for c in value if c not in self.controls
                    )
            elif value != _DEFAULTS[f.name]:
                changes[f.name] = value
        return dataclasses.replace(self, **changes)

    def with_overrides(self, overrides: Mapping[str, JSON]) -> Profile:
        """The route layer: field -> value from a route record or TOML file (lists become
        tuples). Unknown fields are a :class:`~reasonwire.errors.ConfigError`."""
        known = {f.name for f in dataclasses.fields(Profile)} - {"controls", "name"}
        changes: JsonObject = {}
        for key, value in overrides.items():
            if key not in known:
                raise ConfigError(
                    f"unknown profile field {key!r}; expected one of: {', '.join(sorted(known))}"
                )
            changes[key] = tuple(value) if isinstance(value, list) else value
        return dataclasses.replace(self, **changes)


def _fill(template: JSON, level: str) -> JSON:
    if template == LEVEL:
        return level
    if isinstance(template, dict):
        return {k: _fill(v, level) for k, v in template.items()}
    return template


_EFFORT_FIELDS = ("effort_path", "effort_value")

_DEFAULTS: dict[str, object] = {
    f.name: getattr(Profile(), f.name) for f in dataclasses.fields(Profile)
}
"""Each field's class default: a layer that leaves a field at it inherits the field."""


__all__ = ["LEVEL", "Profile"]
