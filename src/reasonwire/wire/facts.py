"""Typed facts a dialect object holds: carrier kinds, controls, error info, server state,
harness variants, carriers found in a request. Plain frozen data, no behaviour."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from reasonwire.wire.model import JSON


@dataclass(frozen=True, slots=True)
class CarrierKind:
    """One kind of reasoning carrier this dialect sends and expects back.

    ``opaque`` carriers (signatures, encrypted content) must return byte for byte and are
    never shown or folded; text carriers are readable reasoning. ``where`` says where the
    carrier sits in an answer, as a JSON path pattern.
    """

    name: str
    opaque: bool
    where: str


@dataclass(frozen=True, slots=True)
class Control:
    """A request field (``path`` of keys into the body) or header that can set, raise, budget
    or switch reasoning, or change which model runs.

    ``source`` names the vendor documentation the entry comes from; ``what`` says what it does.
    ``header`` controls are request headers (``path`` holds the lower-case header name).
    """

    path: tuple[str, ...]
    source: str
    what: str
    header: bool = False

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What an error body says: message, type and code, each ``None`` when absent."""

    message: str | None
    type: str | None = None
    code: str | None = None


@dataclass(frozen=True, slots=True)
class ServerState:
    """How a dialect's servers can keep a conversation (all field names are the dialect's).

    ``stateful_profile`` / ``stateless_profile`` name the request profile used with and
    without ``store``; ``stateless_include`` lists what a stateless replay must ask for.
    """

    store_field: str
    previous_field: str
    store_default: bool
    stateful_profile: str
    stateless_profile: str
    stateless_include: tuple[str, ...]
    include_field: str = "include"


CarrierSpec = tuple[str, Callable[[str], JSON]]
"""(carrier kind, trace -> carrier value): one carrier of a harness text variant."""


@dataclass(frozen=True, slots=True)
class Variants:
    """The consumption harness's variants for this dialect.

    ``text``: variant name -> carriers on the fixture's tool-call turn (``none`` is the
    baseline; empty when the dialect cannot send unsigned reasoning, with ``none_reason``).
    ``opaque_extras``: extra turn-2 pairs of the opaque step (name -> body fragment).
    ``stand_in``: the dialect documents a stand-in for a signature (a third turn-2 request).
    """

    text: Mapping[str, tuple[CarrierSpec, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    none_reason: str = ""
    opaque_extras: Mapping[str, Mapping[str, JSON]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    stand_in: bool = False


GOOGLE_RPC_STATUS: Mapping[int, str] = MappingProxyType(
    {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        413: "INVALID_ARGUMENT",
        429: "RESOURCE_EXHAUSTED",
        431: "INVALID_ARGUMENT",
        500: "INTERNAL",
        502: "UNAVAILABLE",
        503: "UNAVAILABLE",
    }
)
"""HTTP status -> the google.rpc code name Google's error bodies carry (Gemini's
generateContent and Interactions APIs alike)."""

GOOGLE_RPC_STATUSES = frozenset(
    {
        "INVALID_ARGUMENT",
        "FAILED_PRECONDITION",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "RESOURCE_EXHAUSTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DEADLINE_EXCEEDED",
    }
)
"""The ``error.status`` names (``google.rpc.Code``, googleapis ``google/rpc/code.proto``)
the gateway passes on as written for both Google APIs, Gemini ``generateContent`` and
Interactions: each one's ``ERROR_TYPES``. Every other status is derived from the HTTP status
(:data:`GOOGLE_RPC_STATUS`)."""

BASELINE = "none"
"""The variant without any carrier."""


@dataclass(frozen=True, slots=True)
class SentCarrier:
    """One reasoning carrier in a request: its kind, byte size and whether it is opaque."""

    kind: str
    size: int
    opaque: bool
    earlier_turn: bool = False
    """The carrier sits before the request's last user message (an earlier turn), not in the
    current turn's tool loop. Why: servers treat the two apart (:class:`EarlierTurns`)."""


EarlierVerdict = Literal["dropped", "kept", "unknown"]
"""What a server does with reasoning re-sent from an earlier turn: leaves it out of the
prompt (not billed), keeps it in the prompt (billed), or not known."""


@dataclass(frozen=True, slots=True)
class EarlierTurns:
    """The documented rule for reasoning a request re-sends from an earlier turn, per dialect.

    ``verdict`` is the dialect's rule; ``models`` overrides it per model (the first entry whose
    text the model id contains, lower case, wins: a provider whose newer models keep earlier
    reasoning); ``kinds`` overrides it per carrier kind (a readable text billed where the
    opaque carrier beside it is not); ``kept_when`` names request fields (key path, value) with
    which the server keeps it. ``source`` cites where each part is documented. Why: the probe
    must not count as billed a carrier the server drops, nor call measured one it may drop.
    """

    verdict: EarlierVerdict
    source: str
    models: tuple[tuple[str, EarlierVerdict], ...] = ()
    kept_when: tuple[tuple[tuple[str, ...], str], ...] = ()
    kinds: tuple[tuple[str, EarlierVerdict], ...] = ()

    def verdict_for(
        self, model: str | None, body: Mapping[str, JSON] | None, kind: str = ""
    ) -> EarlierVerdict:
        """The verdict for a carrier of ``kind`` in a request of ``model`` with ``body``."""
        for path, want in self.kept_when:
            node: JSON = dict(body) if body is not None else None
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            if node == want:
                return "kept"
        name = (model or "").lower()
        for part, verdict in self.models:
            if part in name:
                return verdict
        for k, verdict in self.kinds:
            if k == kind:
                return verdict
        return self.verdict


UNKNOWN_EARLIER_TURNS = EarlierTurns("unknown", "no documented rule for this dialect")
"""The rule of a dialect that documents none."""


__all__ = [
    "BASELINE",
    "GOOGLE_RPC_STATUS",
    "GOOGLE_RPC_STATUSES",
    "UNKNOWN_EARLIER_TURNS",
    "CarrierKind",
    "CarrierSpec",
    "Control",
    "EarlierTurns",
    "EarlierVerdict",
    "ErrorInfo",
    "SentCarrier",
    "ServerState",
    "Variants",
]
