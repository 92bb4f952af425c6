"""Text-carrier variants per dialect, as data.

A variant names the carriers that ride on the fixture's tool-call turn. Each is a neutral
:class:`~reasonwire.wire.model.Carrier` whose ``kind`` is the field, item or part the dialect
expresses it as; the dialect's ``build_request`` turns it into bytes, so the request of a
variant differs from the ``none`` baseline only in that carrier.

Anthropic has no text variant: thinking without a valid signature cannot be sent, so the
Anthropic row is measured by the opaque step only (turn 1 live, signed blocks replayed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from reasonwire.wire.model import JSON, Carrier, Dialect

BASELINE = "none"

CarrierSpec = tuple[str, Callable[[str], JSON]]
"""(carrier kind, trace -> carrier value)."""


def _text(trace: str) -> JSON:
    return trace


def _details(trace: str) -> JSON:
    return [{"type": "reasoning.text", "text": trace, "format": "unknown", "index": 0}]


_RC: CarrierSpec = ("reasoning_content", _text)
_R: CarrierSpec = ("reasoning", _text)
_RD: CarrierSpec = ("reasoning_details", _details)

TEXT_VARIANTS: Mapping[Dialect, Mapping[str, tuple[CarrierSpec, ...]]] = MappingProxyType(
    {
        "chat": MappingProxyType(
            {
                BASELINE: (),
                "reasoning_content": (_RC,),
                "reasoning": (_R,),
                "reasoning_details": (_RD,),
                "all": (_RC, _R, _RD),
            }
        ),
        "responses": MappingProxyType(
            {
                BASELINE: (),
                "summary_item": (("summary_text", _text),),
                "content_item": (("reasoning_text", _text),),
            }
        ),
        "gemini": MappingProxyType({BASELINE: (), "thought_part": (("thought", _text),)}),
        "anthropic": MappingProxyType({}),
    }
)
"""Every text variant per dialect; ``none`` is the baseline."""

NO_TEXT_VARIANTS_REASON: Mapping[Dialect, str] = MappingProxyType(
    {"anthropic": "unsigned thinking cannot be sent: Anthropic is measured by the opaque step"}
)

OPAQUE_EXTRAS: Mapping[Dialect, Mapping[str, Mapping[str, JSON]]] = MappingProxyType(
    {"responses": MappingProxyType({"all_turns": {"reasoning": {"context": "all_turns"}}})}
)
"""Extra turn-2 request pairs of the opaque step, per dialect: name -> body fragment merged
into both the verbatim and the stripped request (a 400 is a result)."""


OPAQUE_STAND_IN: frozenset[Dialect] = frozenset({"gemini"})
"""Dialects with a documented stand-in for a signature: the opaque step sends a third turn-2
request built without the received carriers, which the dialect marks with its stand-in."""


def variants_for(dialect: Dialect) -> tuple[str, ...]:
    """The variant names of ``dialect``, baseline first (empty when it has none)."""
    table = TEXT_VARIANTS.get(dialect, {})
    return tuple(table) if table else ()


def carriers_for(dialect: Dialect, variant: str, trace: str) -> tuple[Carrier, ...]:
    """The neutral carriers of one variant, holding ``trace``."""
    try:
        specs = TEXT_VARIANTS[dialect][variant]
    except KeyError:
        raise ValueError(f"{dialect} has no text variant {variant!r}") from None
    return tuple(
        Carrier(dialect=dialect, kind=kind, path=f"fixture.{kind}", value=make(trace), opaque=False)
        for kind, make in specs
    )
