"""Simulated models: each model id is one documented provider behaviour (data, not code: the
table is ``behaviours.toml`` beside this module, read once at import).

Every :class:`Behaviour` cites the WIRE.md rule it imitates (``rule``) and carries its designed
``truth``: for each carrier kind the client can replay, whether the model consumes it in the
loop (``in_loop``) and across turns (``cross_turn``), or rejects the request (``rejected``).
The dialect handlers read these same fields to decide what goes into the prompt, so the truth
the consumption harness is graded against is exactly what the server does.

Carrier kinds in ``truth``: chat ``reasoning_content`` / ``reasoning`` / ``reasoning_details``;
responses ``encrypted_content`` / ``summary_text``; anthropic ``thinking`` /
``redacted_thinking``; gemini ``thoughtSignature`` / ``thought``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject

Verdict = Literal["consumed", "dropped", "rejected"]
SimDialect = Literal["chat", "responses", "anthropic", "gemini", "interactions"]


@dataclass(frozen=True)
class FieldTruth:
    """What the model does with one replayed carrier kind."""

    in_loop: Verdict
    cross_turn: Verdict


@dataclass(frozen=True)
class Behaviour:
    """One simulated model. Flags other than ``truth`` switch documented quirks on."""

    model: str
    dialect: SimDialect
    description: str
    rule: str  # the WIRE.md section and sentence this imitates
    truth: Mapping[str, FieldTruth]
    emits: tuple[str, ...] = ()  # carrier kinds the model returns
    reasons: bool = True
    lanes: Mapping[str, Behaviour] = field(default_factory=dict)  # id prefix -> lane
    id_prefix: str = ""
    reject_params: Mapping[str, str] = field(default_factory=dict)  # key path -> message
    require_after_tool: bool = False
    missing_message: str = ""  # the vendor's own 400 text when require_after_tool trips
    tool_turns_only: bool = False
    null_500: bool = False
    refuse_probe: bool = False
    filter_probe: bool = False
    all_turns_ok: bool = False
    skip_reasoning_at_low: bool = False
    cost: bool = False
    cache: bool = True
    provider: str | None = None


_SECTIONS: Mapping[str, str] = MappingProxyType(
    {
        "chat": "WIRE.md > OpenAI-compatible Chat Completions",
        "responses": "WIRE.md > Responses API",
        "anthropic": "WIRE.md > Anthropic Messages",
        "gemini": "WIRE.md > Gemini",
        "w26": "WIRE.md > The 2026 wire",
        "gateways": "WIRE.md > Gateways and lanes",
    }
)
"""The WIRE.md section a table entry ``cites``; its ``rule`` is quoted from there."""


def _verdict(value: JSON) -> Verdict:
    if value not in get_args(Verdict):
        raise ValueError(f"behaviours.toml: {value!r} is not one of {get_args(Verdict)}")
    verdict: Verdict = value
    return verdict


def _behaviour(entry: JsonObject, lanes: Mapping[str, Behaviour]) -> Behaviour:
    """One table entry as a :class:`Behaviour` (unknown keys fail: ``Behaviour`` has none)."""
    fields = dict(entry)
    if fields["dialect"] not in get_args(SimDialect):
        raise ValueError(f"behaviours.toml: {fields['model']}: unknown dialect")
    fields["rule"] = f"{_SECTIONS[fields.pop('cites')]}: {fields['rule']}"
    fields["truth"] = MappingProxyType(
        {kind: FieldTruth(*map(_verdict, pair)) for kind, pair in fields["truth"].items()}
    )
    fields["emits"] = tuple(fields.get("emits", ()))
    if "lanes" in fields:
        fields["lanes"] = MappingProxyType({p: lanes[n] for p, n in fields["lanes"].items()})
    if "reject_params" in fields:
        fields["reject_params"] = MappingProxyType(dict(fields["reject_params"]))
    return Behaviour(**fields)


def _load() -> tuple[Behaviour, ...]:
    text = resources.files(__package__).joinpath("behaviours.toml").read_text("utf-8")
    table = tomllib.loads(text)
    lanes = {lane.pop("name"): _behaviour(lane, {}) for lane in table["lane"]}
    return tuple(_behaviour(entry, lanes) for entry in table["model"])


#: every simulated model id -> its behaviour
BEHAVIOURS: Mapping[str, Behaviour] = MappingProxyType({b.model: b for b in _load()})
