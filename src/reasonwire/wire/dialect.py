"""One wire API as one object: :class:`Dialect`, and the typed facts it owns.

Everything the code knows about one wire API lives on its dialect object (in
``wire/<dialect>/``): request build, parse, stream decode, replay and strip; which fields carry
reasoning (:class:`CarrierKind`); every request field or header that can set, raise or budget
reasoning (:class:`Control`, with the documented source of each); the request shape a client
body must have and the visible projection, an allow-list of what a governed client may see of
an answer (:mod:`reasonwire.wire.shape`); the error shape; the count endpoint; server-side
state; detection of a saved body; the harness's text variants. Code above ``wire/`` asks the
object (:func:`reasonwire.wire.get_dialect`) and never names a provider.

Vendor differences inside one dialect are :class:`~reasonwire.wire.profile.Profile` layers
(dialect default -> vendor -> route), not subclasses.

A new dialect is one module that builds a :class:`Dialect` subclass instance called
``DIALECT`` plus one line in :data:`reasonwire.wire.registry.TABLE` (see ``DIALECTS.md`` in
this folder).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import orjson

from reasonwire.errors import ShapeError
from reasonwire.wire.controls import strip_paths
from reasonwire.wire.count_tokens import CountSpec
from reasonwire.wire.facts import (
    UNKNOWN_EARLIER_TURNS,
    CarrierKind,
    Control,
    EarlierTurns,
    ErrorInfo,
    SentCarrier,
    ServerState,
    Variants,
)
from reasonwire.wire.model import (
    JSON,
    Assistant,
    Carrier,
    DialectName,
    JsonObject,
    Message,
    RequestOptions,
    StreamEvent,
    Turn,
    Usage,
)
from reasonwire.wire.profile import Profile
from reasonwire.wire.projection import SSEProjector, encode_event
from reasonwire.wire.shape import Shape, TextFilter, project, validate
from reasonwire.wire.thinktags import cut_think
from reasonwire.wire.vault import Lookup

if TYPE_CHECKING:
    from reasonwire.wire.facts import SentCarrier


@runtime_checkable
class StreamDecoder(Protocol):
    """Incremental decoder: bytes in, neutral events out.

    ``feed`` accepts any split of the byte stream; ``close`` flushes and returns the final
    events, ending with :class:`~reasonwire.wire.model.Done`, or raises
    :class:`~reasonwire.errors.TruncatedStream` (with the partial turn) when the stream ended
    before its terminal event. ``partial_turn`` returns what was assembled so far at any time.

    A decoder may also offer ``absorb(data) -> None``: ``feed`` for a caller that reads no
    events (the probe), free to take runs of events in bulk, leaving the same state.
    """

    def feed(self, data: bytes) -> list[StreamEvent]: ...

    def close(self) -> list[StreamEvent]: ...

    def partial_turn(self) -> Turn: ...


class SentCarriers(Protocol):
    """Finds the reasoning carriers a request body sends back (a dialect's ``_hidden``
    module)."""

    def request_carriers(self, body: Mapping[str, JSON]) -> list[SentCarrier]: ...


class CarrierVault(Protocol):
    """Keeps the reasoning a governed client may not read and puts it back (a dialect's
    ``_hidden`` module, where its answers carry such reasoning)."""

    def vault_entries(self, turn: Turn) -> list[tuple[str, JSON]]: ...

    def reattach(self, body: JsonObject, lookup: Lookup) -> int: ...


class StreamProjector(Protocol):
    """Bytes of an upstream stream in, only what a governed client may see out.

    ``fail(reason)`` returns the bytes of the dialect's own error event, sent instead of a
    clean end when the upstream stream was cut or malformed.
    """

    def feed(self, chunk: bytes) -> bytes: ...

    def close(self) -> bytes: ...

    def fail(self, reason: str) -> bytes: ...


class Dialect:
    """One wire API. Subclasses set the data attributes and implement the wire functions.

    The defaults here are the common OpenAI-style conventions; a dialect overrides what
    differs. Nothing in this class names a provider.
    """

    name: DialectName
    path_pattern: re.Pattern[str]
    """Matches the URL path (query stripped) of a generation request in this dialect."""
    gateway_path: str | None = None
    """The path the governance gateway serves this dialect on (None: not served)."""
    gateway_path_pattern: re.Pattern[str] | None = None
    """Or a pattern, for a dialect that puts the model in the path (Gemini)."""
    carriers: tuple[CarrierKind, ...] = ()
    earlier_turns: EarlierTurns = UNKNOWN_EARLIER_TURNS
    """What the servers do with reasoning re-sent from an earlier turn (the probe's figures)."""
    controls: tuple[Control, ...] = ()
    non_escalating: Mapping[str, JSON] = MappingProxyType({})
    """Exact top-level control values a client may keep: they can only lower effort."""
    stream_usage: Mapping[str, JSON] = MappingProxyType({})
    """What a streamed request needs so that the provider reports usage at the end."""
    forwarded_headers: tuple[str, ...] = ()
    """Client headers a gateway may pass upstream: protocol versions, never auth or features."""
    count: CountSpec | None = None
    server_state: ServerState | None = None
    variants: Variants = Variants()
    request_shape: Shape | None = None
    """The client request body a gateway accepts (allow-list; see :mod:`wire.shape`)."""
    visible_body: Shape | None = None
    """What a governed client may see of a whole answer (allow-list)."""
    error_types: frozenset[str] = frozenset()
    """Provider error ``type``/``code`` values that may be shown to a governed client."""
    profiles: Mapping[str, Profile] = MappingProxyType({})
    """Vendor profiles by name; ``default`` is the dialect's base layer."""
    usage_total: str | None = None
    """The key of the provider's usage object (``Usage.raw``) that holds its own total token
    figure, if the API reports one (None: no total is reported, and none is computed)."""
    fold_where: Mapping[str, str] = MappingProxyType({})
    """Text carriers a client may shorten before replaying them (``wire.fold``): carrier kind
    (a non-opaque :attr:`carriers` name) -> where it sits in a *request* body, in the
    ``where`` path syntax (``key``, ``key[i]`` every element, ``(k=v)`` element filter,
    ``(!k)`` key absent or null). A text that shares its object with a signature is signed and
    must not be listed (or must be excluded by a ``(!signature)`` filter)."""

    def __init_subclass__(cls, facts: ModuleType | None = None, **kwargs: object) -> None:
        """``class X(Dialect, facts=_facts)`` takes each attribute of :data:`FACT_NAMES` from
        the dialect's ``_facts`` module, where the module defines it and the class body does
        not: the facts are data in one module, and the class does not restate them. The
        module's ``detects`` function, if any, answers :meth:`detects`."""
        super().__init_subclass__(**kwargs)
        if facts is None:
            return
        for attr, constant in FACT_NAMES:
            if attr not in cls.__dict__ and hasattr(facts, constant):
                setattr(cls, attr, getattr(facts, constant))
        detect: Callable[[JSON], bool] | None = getattr(facts, "detects", None)
        if detect is not None:
            cls._detect = staticmethod(detect)

    # -- wire functions (each dialect implements) ------------------------------------------

    def request_path(self, options: RequestOptions) -> str:
        raise NotImplementedError

    def build_request(
        self, messages: Sequence[Message], options: RequestOptions, profile: str | None = None
    ) -> dict[str, JSON]:
        raise NotImplementedError

    def parse_response(self, body: bytes | str | JSON) -> Turn:
        raise NotImplementedError

    decoder: Callable[[], StreamDecoder] | None = None
    """Makes the decoder of one stream (the decoder class); None: :meth:`stream_decoder` is
    written by the dialect."""

    def stream_decoder(self) -> StreamDecoder:
        """A new decoder for one streamed answer."""
        if self.decoder is None:
            raise NotImplementedError
        return self.decoder()

    def replay(self, message: Assistant | Turn) -> list[JSON]:
        raise NotImplementedError

    def strip(self, message: Assistant | Turn) -> list[JSON]:
        raise NotImplementedError

    _detect: Callable[[JSON], bool] | None = None
    """The ``detects`` function of the dialect's ``_facts`` module, when it has one."""

    def detects(self, payload: JSON) -> bool:
        """True when one JSON body or stream payload has this dialect's shape."""
        return self._detect is not None and self._detect(payload)

    sent_carriers: SentCarriers | None = None
    """Where :meth:`request_carriers` looks (None: a request sends none back)."""
    vault: CarrierVault | None = None
    """Where :meth:`vault_entries` and :meth:`reattach` work (None: nothing is vaulted)."""

    def request_carriers(self, body: Mapping[str, JSON]) -> list[SentCarrier]:
        """Every reasoning carrier a request body sends back on its assistant turns."""
        found = self.sent_carriers
        return found.request_carriers(body) if found is not None else []

    def vault_entries(self, turn: Turn) -> list[tuple[str, JSON]]:
        """(key, exact original) pairs of a finished turn's carriers a client cannot return."""
        return self.vault.vault_entries(turn) if self.vault is not None else []

    def reattach(self, body: JsonObject, lookup: Lookup) -> int:
        """Put vaulted carriers back into a request's history in place; drop reasoning the
        vault does not know (it cannot be genuine). Returns how many were re-attached."""
        return self.vault.reattach(body, lookup) if self.vault is not None else 0

    stream_shape: Shape | None = None
    """Each stream event a governed client may see (allow-list); None: no stream projection."""
    stream_literals: frozenset[str] = frozenset()
    """Event data passed as written (``[DONE]``)."""

    def stream_error(self, reason: str) -> bytes:
        """The event that ends a projected stream whose upstream was cut or malformed (the
        dialect's own error event, so SDKs raise instead of seeing a clean finish)."""
        body = self.error_body(502, "upstream-stream", reason, ErrorInfo(None))
        return encode_event("message", orjson.dumps(body))

    def stream_projector(self, profile: Profile | None = None) -> StreamProjector:
        """The visible projection of a stream: :attr:`stream_shape` per event, ``<think>``
        blocks cut when the route's profile says the model writes them."""
        if self.stream_shape is None:
            raise NotImplementedError(f"the {self.name} dialect has no stream projection")
        return SSEProjector(
            self.stream_shape,
            self.stream_error,
            think_tags=profile is not None and profile.think_tags,
            literal=self.stream_literals,
        )

    def error_body(self, status: int, reason: str, message: str, info: ErrorInfo | None) -> JSON:
        """The gateway's own error object in this dialect's shape (OpenAI style by default:
        ``error.message`` / ``type`` / ``code``; ``type: error`` lets Anthropic SDKs read it)."""
        etype = info.type if info and info.type in self.error_types else _STATUS_TYPES.get(status)
        code = info.code if info and info.code in self.error_types else reason
        return {
            "type": "error",
            "error": {"type": etype or "api_error", "code": code, "message": message},
        }

    # -- facts with a common default -------------------------------------------------------

    def matches_path(self, path: str) -> bool:
        return self.path_pattern.search(path.split("?", 1)[0].rstrip("/")) is not None

    def streams_as_json(self, path: str) -> bool:
        """True when a stream on ``path`` may arrive as ``application/json`` (a JSON array)."""
        return False

    def model_in_request(self, path: str, body: JSON) -> str | None:
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            return str(body["model"])
        return None

    def wants_stream(self, body: Mapping[str, JSON]) -> bool:
        return body.get("stream") is True

    def stream_requested(self, path: str, body: Mapping[str, JSON]) -> bool:
        """Whether a request to ``path`` with ``body`` asks for a streamed answer."""
        return self.wants_stream(body)

    def serves_gateway_path(self, path: str) -> bool:
        if self.gateway_path is not None and path == self.gateway_path:
            return True
        return self.gateway_path_pattern is not None and bool(self.gateway_path_pattern.match(path))

    def error_info(self, payload: JSON) -> ErrorInfo | None:
        """Message, type and code of an error body: ``{"error": {..}}``, ``{"error": ".."}``,
        ``{"message": ..}``, ``{"detail": ..}``, or a list holding one such object."""
        return read_error(payload)

    def profile(self, name: str | None = None, **overrides: JSON) -> Profile:
        """The profile layers merged: dialect default -> vendor ``name`` -> route overrides."""
        base = self.profiles.get("default", Profile())
        if name is not None and name != "default":
            vendor = self.profiles.get(name)
            if vendor is None:
                from reasonwire.errors import ConfigError

                raise ConfigError(
                    f"unknown {self.name} profile {name!r}; expected one of: "
                    f"{', '.join(sorted(self.profiles))}"
                )
            base = base.layer(vendor)
        return base.with_overrides(overrides) if overrides else base

    def strip_controls(
        self, body: Mapping[str, JSON], profile: Profile | None = None
    ) -> tuple[JsonObject, dict[str, JSON]]:
        """``body`` without any control of the inventory (and the profile's vendor ones), and
        the removed values by dotted name. Copy-on-write: ``body`` is never changed."""
        paths = _body_paths(self.controls)
        if profile is not None and profile.controls:
            paths += _body_paths(profile.controls)  # a new tuple: the cached one stays
        return strip_paths(body, paths)

    def is_non_escalating(self, removed: Mapping[str, JSON]) -> bool:
        """True when every control the client sent is an allowed lowering value."""
        allowed = self.non_escalating
        return bool(removed) and all(k in allowed and allowed[k] == v for k, v in removed.items())

    def validate_request(self, body: JSON) -> JsonObject:
        """The client body checked against :attr:`request_shape`, unknown fields dropped.

        Raises :class:`~reasonwire.wire.shape.ShapeError` naming the first violation's path.
        """
        if self.request_shape is None:
            raise ShapeError("$", f"the {self.name} dialect accepts no client requests")
        out = validate(self.request_shape, body)
        assert isinstance(out, dict)
        return out

    def project_body(self, body: JSON, profile: Profile | None = None) -> JSON:
        """A whole answer reduced to :attr:`visible_body` (text cut of think tags when the
        profile says the model emits them)."""
        if self.visible_body is None:
            return {}
        return project(self.visible_body, body, _text_filter(profile))

    def total_tokens(self, usage: Usage | None) -> int | None:
        """The provider's own total token figure of ``usage`` (None when not reported)."""
        if usage is None or self.usage_total is None or not isinstance(usage.raw, dict):
            return None
        value = usage.raw.get(self.usage_total)
        return value if type(value) is int else None

    def text_carriers(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.carriers if not c.opaque)

    def is_opaque(self, carrier: Carrier) -> bool:
        return carrier.opaque


FACT_NAMES: tuple[tuple[str, str], ...] = (
    ("path_pattern", "PATH"),
    ("carriers", "CARRIERS"),
    ("earlier_turns", "EARLIER_TURNS"),
    ("fold_where", "FOLD_WHERE"),
    ("controls", "CONTROLS"),
    ("non_escalating", "NON_ESCALATING"),
    ("stream_usage", "STREAM_USAGE"),
    ("forwarded_headers", "FORWARDED_HEADERS"),
    ("count", "COUNT"),
    ("server_state", "SERVER_STATE"),
    ("variants", "VARIANTS"),
    ("request_shape", "REQUEST"),
    ("visible_body", "VISIBLE"),
    ("stream_literals", "STREAM_LITERALS"),
    ("error_types", "ERROR_TYPES"),
)
"""A :class:`Dialect` attribute and the ``_facts`` module constant that holds it. Not listed:
the gateway path (a string on one API, a pattern on another) and the stream shape (named
after what each stream carries), which a dialect sets itself."""


_PATHS: dict[int, tuple[tuple[Control, ...], tuple[tuple[str, ...], ...]]] = {}


def _body_paths(controls: tuple[Control, ...]) -> tuple[tuple[str, ...], ...]:
    """The body paths of ``controls`` (header controls left out), made once per inventory
    (by identity, the inventory kept beside its paths): a dialect's or profile's controls
    are fixed data, stripped from every request."""
    hit = _PATHS.get(id(controls))
    if hit is not None and hit[0] is controls:
        return hit[1]
    paths = tuple(c.path for c in controls if not c.header)
    if len(_PATHS) >= 256:
        _PATHS.clear()
    _PATHS[id(controls)] = (controls, paths)
    return paths


def _text_filter(profile: Profile | None) -> TextFilter | None:
    if profile is None or not profile.think_tags:
        return None
    return cut_think


_STATUS_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "api_error",
}


def read_error(payload: JSON) -> ErrorInfo | None:
    """The common error shapes (see :meth:`Dialect.error_info`)."""
    if isinstance(payload, list) and payload:
        payload = payload[0]
    if not isinstance(payload, dict):
        return None
    err = payload.get("error")
    if isinstance(err, dict):
        msg = err.get("message")
        etype = err.get("type") if isinstance(err.get("type"), str) else err.get("status")
        code = err.get("code")
        return ErrorInfo(
            msg if isinstance(msg, str) and msg else None,
            etype if isinstance(etype, str) else None,
            str(code) if isinstance(code, str | int) and not isinstance(code, bool) else None,
        )
    if isinstance(err, str) and err:
        return ErrorInfo(err)
    for key in ("message", "detail"):
        msg = payload.get(key)
        if isinstance(msg, str) and msg:
            return ErrorInfo(msg)
    return None


__all__ = ["Dialect", "StreamDecoder", "StreamProjector", "read_error"]
