"""Text-carrier variants per dialect, read from the dialect objects (``Dialect.variants``).

A variant names the carriers that ride on the fixture's tool-call turn. Each is a neutral
:class:`~reasonwire.wire.model.Carrier` whose ``kind`` is the field, item or part the dialect
expresses it as; the dialect's ``build_request`` turns it into bytes, so the request of a
variant differs from the ``none`` baseline only in that carrier. The facts themselves live in
``wire/<dialect>/_facts.py``; these tables are views over the registry for the harness.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reasonwire.wire.facts import BASELINE, CarrierSpec
from reasonwire.wire.model import JSON, Carrier, DialectName
from reasonwire.wire.registry import dialects, get_dialect

TEXT_VARIANTS: Mapping[DialectName, Mapping[str, tuple[CarrierSpec, ...]]] = MappingProxyType(
    {d.name: d.variants.text for d in dialects()}
)
"""Every text variant per dialect; ``none`` is the baseline."""

NO_TEXT_VARIANTS_REASON: Mapping[DialectName, str] = MappingProxyType(
    {d.name: d.variants.none_reason for d in dialects() if d.variants.none_reason}
)

OPAQUE_EXTRAS: Mapping[DialectName, Mapping[str, Mapping[str, JSON]]] = MappingProxyType(
    {d.name: d.variants.opaque_extras for d in dialects() if d.variants.opaque_extras}
)
"""Extra turn-2 request pairs of the opaque step, per dialect: name -> body fragment merged
into both the verbatim and the stripped request (a 400 is a result)."""

OPAQUE_STAND_IN: frozenset[DialectName] = frozenset(
    d.name for d in dialects() if d.variants.stand_in
)
"""Dialects with a documented stand-in for a signature: the opaque step sends a third turn-2
request built without the received carriers, which the dialect marks with its stand-in."""


def variants_for(dialect: DialectName) -> tuple[str, ...]:
    """The variant names of ``dialect``, baseline first (empty when it has none)."""
    return tuple(get_dialect(dialect).variants.text)


def carriers_for(dialect: DialectName, variant: str, trace: str) -> tuple[Carrier, ...]:
    """The neutral carriers of one variant, holding ``trace``."""
    try:
        specs = get_dialect(dialect).variants.text[variant]
    except KeyError:
        raise ValueError(f"{dialect} has no text variant {variant!r}") from None
    return tuple(
        Carrier(dialect=dialect, kind=kind, path=f"fixture.{kind}", value=make(trace), opaque=False)
        for kind, make in specs
    )


__all__ = [
    "BASELINE",
    "NO_TEXT_VARIANTS_REASON",
    "OPAQUE_EXTRAS",
    "OPAQUE_STAND_IN",
    "TEXT_VARIANTS",
    "carriers_for",
    "variants_for",
]
