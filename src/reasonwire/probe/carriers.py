"""Carrier identity across a session: which earlier call produced a carrier a request re-sends.

Why: a re-sent opaque carrier (``encrypted_content``, a signature) is billed as input, but its
size in bytes says nothing about its size in tokens. The call that produced it knows: its
``reasoningTokens`` are what the carrier stands for (the OpenAI recordings show the next
call's input growing by the prior call's reasoning tokens). So each row records digests of the
opaque carriers its answer produced (``producedCarriers``) and of the carriers its request sent
back (``sentCarriers``); the report joins the two by digest across the session's ledger
(:mod:`reasonwire.probe.report`).

How, with no dialect knowledge here: the dialect's ``request_carriers`` says which carriers a
request holds and their byte sizes; the carrier *values* are found by walking the request's
string leaves in document order and taking, for each carrier, the first unclaimed string of
exactly its byte size (its size is the string's UTF-8 bytes, ``wire.vault.sized``). A carrier
whose value is not a string (a JSON object) has no digest and stays unattributed. On the
answer side every string leaf of an opaque carrier of at least :data:`MIN_DIGEST_BYTES` is
digested (the encrypted blob, the signature, the item id, the readable summary or thinking
text it holds), so a request that re-sends any of them is tied to the carrier.

Digests are the first 16 hex digits of SHA-256 (never the value: the ledger holds no
reasoning), see :func:`digest`. A text carrier is counted in tokens with the route's
tokenizer when the caller gives one (:class:`Tokenizer`), else only its bytes are kept and
the report estimates. With the route's *prompt counter* instead (:class:`PromptCounter`: a
count endpoint such as llama-server's ``/apply-template`` + ``/tokenize``), each text carrier
counts what the server bills for it: the prompt's tokens minus the prompt's tokens with that
carrier emptied - the template's framing around it included, and 0 when the template drops
it (Qwen3 keeps reasoning only after the last user message). :class:`CountEndpoint` is that
counter for a route whose dialect has a count endpoint (``Dialect.count``: OpenAI's
``/responses/input_tokens``, Anthropic's ``/messages/count_tokens``, Gemini's
``:countTokens``), bound to each observed request (:func:`bind_counter`).

A text inside a JSON object that holds an opaque carrier (a thinking block's text beside its
signature, a reasoning item's summary beside its ``encrypted_content``) is re-sent *with* that
carrier: the report counts it with the carrier when the carrier is tied to its producer, and
emptying a signed text gives a request the provider refuses. So no prompt count is asked for
it (it keeps its bytes and is estimated when the report does need it), and a request that
re-sends no other text carrier sends no count call at all.

Where a carrier sits is the dialect's to say (``SentCarrier.earlier_turn``: before the
request's last user message); the row keeps it with the dialect's documented verdict for it
(``Dialect.earlier_turns``: dropped, kept, unknown), which the report applies. An async
transport runs the request side off its event loop when the counter makes network calls
(:func:`off_the_loop`).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qsl, urlencode

import httpx

from reasonwire.wire.count_tokens import count_body, count_path, parse_count
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.facts import EarlierTurns, SentCarrier
from reasonwire.wire.model import JSON, RequestOptions, Turn

MIN_DIGEST_BYTES = 16
"""Shorter string leaves of a carrier (``"reasoning"``, ``"thinking"``, a status) are not
digested: they repeat across calls and would tie unrelated carriers together."""

MAX_WALK_NODES = 200_000
"""The request walk stops after this many JSON nodes (a huge history): carriers not reached
keep their bytes and get no digest."""


@dataclass(frozen=True, slots=True)
class Tokenizer:
    """A route's own token counter for reasoning text (``name`` is written in the row)."""

    name: str
    count: Callable[[str], int]


@dataclass(frozen=True, slots=True)
class PromptCounter:
    """A route's own count of a whole request's prompt tokens (``count(body)``; ``name`` is
    written in the row). Why: a chat template wraps re-sent reasoning in framing tokens
    (``<think>``...``</think>``) or drops it, so the tokens of the text alone miss the bill;
    the server's own count of the request with and without the carrier does not. Called on the
    caller's path once per request plus once per re-sent text carrier (at most
    :data:`MAX_COUNTED_CARRIERS`): meant for a local server's count endpoint."""

    name: str
    count: Callable[[Any], int]


COUNT_TIMEOUT = 10.0
"""Seconds a :class:`CountEndpoint` waits for one count answer (the caller's request waits
with it); a timeout leaves the estimate."""

_NOT_FORWARDED = frozenset(
    {"host", "content-length", "content-type", "content-encoding", "transfer-encoding",
     "connection", "accept", "accept-encoding", "expect"}
)  # fmt: skip
"""Request headers a count call does not copy from the observed call: they describe that
call's body and connection. Every other header (the key, ``anthropic-version``, a gateway's
routing headers) goes with the count call as it went with the call."""


class ObservedRequest(Protocol):
    """What a count call takes from the observed request: an ``httpx.Request`` (or the same
    class of an httpx fork some SDKs ship, ``reasonwire._httpcompat``)."""

    @property
    def url(self) -> object: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


@dataclass(frozen=True, slots=True)
class CountEndpoint(PromptCounter):
    """A :class:`PromptCounter` backed by the dialect's own count endpoint, bound to each
    observed request by the transport (:func:`bind_counter`): the count request goes to the
    same base URL (and query, but ``alt``), with the same headers (the key included; never
    written anywhere), carrying the fields the endpoint accepts (``wire.count_tokens``).
    Why: a provider's count is what it bills for the prompt, template and drops included, so
    the difference with and without a re-sent text is measured, not estimated. A route whose
    dialect has no count endpoint uses ``fallback`` (the route's tokenizer, when known), else
    keeps the bytes estimate. ``client`` sends the count calls (default: a plain httpx client,
    created on first use); they are made on the caller's path before the call is sent (for an
    async client in a worker thread, :func:`off_the_loop`: the event loop keeps running), so
    :data:`COUNT_TIMEOUT` bounds each one, and at most ``1 +`` :data:`MAX_COUNTED_CARRIERS` are
    made per request."""

    name: str = "count endpoint"
    count: Callable[[Any], int] = field(default=lambda body: _unbound())
    client: httpx.Client | None = None
    timeout: float = COUNT_TIMEOUT
    fallback: Tokenizer | None = None

    def bind(self, request: ObservedRequest, dialect: Dialect) -> Tokenizer | PromptCounter | None:
        """The counter for one observed ``request`` of ``dialect`` (``fallback`` when the
        dialect has no count endpoint)."""
        spec = dialect.count
        if spec is None:
            return self.fallback
        url = httpx.URL(str(request.url))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        query = [(k, v) for k, v in parse_qsl(url.query.decode()) if k != "alt"]
        http = self.client
        timeout = self.timeout
        name = f"{dialect.name} {spec.path}"

        def count(body: JSON) -> int:
            model = dialect.model_in_request(url.path, body)
            if not isinstance(body, dict) or not model:
                raise ValueError("no model in the request")
            base = _base_path(dialect, url.path, model)
            if base is None:
                raise ValueError("not the dialect's generation path")
            target = url.copy_with(
                path=base + count_path(spec, model), query=urlencode(query).encode()
            )
            payload: dict[str, JSON] = count_body(spec, body)
            client = http or _shared_client()
            resp = client.post(target, json=payload, headers=headers, timeout=timeout)
            if resp.status_code != 200:
                raise ValueError(f"count endpoint answered {resp.status_code}")
            return parse_count(spec, resp.content)

        return PromptCounter(name, count)


def _unbound() -> int:
    raise ValueError("a CountEndpoint counts only requests the transport binds it to")


def _base_path(dialect: Dialect, path: str, model: str) -> str | None:
    """``path`` without the dialect's generation path for ``model`` (either stream form)."""
    for stream in (False, True):
        gen = dialect.request_path(RequestOptions(model=model, stream=stream)).split("?")[0]
        if path.lower().endswith(gen.lower()):
            return path[: len(path) - len(gen)]
    return None


_CLIENT: list[httpx.Client] = []
_CLIENT_LOCK = threading.Lock()


def _shared_client() -> httpx.Client:
    """One plain client for every :class:`CountEndpoint` without its own (connections kept)."""
    with _CLIENT_LOCK:
        if not _CLIENT:
            _CLIENT.append(httpx.Client(timeout=COUNT_TIMEOUT))
        return _CLIENT[0]


def bind_counter(
    tokenizer: Tokenizer | PromptCounter | None, request: ObservedRequest, dialect: Dialect
) -> Tokenizer | PromptCounter | None:
    """The counter to use for one observed request: a :class:`CountEndpoint` bound to it
    (its fallback when the route has no count endpoint, None when the request cannot be read:
    the call is still observed, its texts estimated), any other counter as given."""
    if isinstance(tokenizer, CountEndpoint):
        try:
            return tokenizer.bind(request, dialect)
        except Exception:
            return None
    return tokenizer


_R = TypeVar("_R")


async def off_the_loop(
    counter: Tokenizer | PromptCounter | None, call: Callable[[Any], _R], request: Any
) -> _R:
    """``call(request)`` (the probe's request side) for an async transport: in a worker thread
    when ``counter`` may make network calls (a :class:`PromptCounter`: a count endpoint, up to
    :data:`COUNT_TIMEOUT` each), so the event loop runs other tasks meanwhile; inline
    otherwise, and outside asyncio (trio), where there is no thread hand-off to await."""
    if isinstance(counter, PromptCounter):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return call(request)
        return await asyncio.to_thread(call, request)
    return call(request)


MAX_COUNTED_CARRIERS = 16
"""Text carriers per request a :class:`PromptCounter` measures (each costs one count call);
the rest keep their bytes and are estimated."""


_URLSAFE = str.maketrans("-_", "+/")


def digest(text: str) -> str:
    """The ledger's digest of a carrier string: 16 hex digits of SHA-256 of its UTF-8, read
    in one base64 alphabet: ``-``/``_`` as ``+``/``/`` and trailing ``=`` dropped. Why: a
    client may send a signature back re-encoded in the URL-safe alphabet (the pydantic-ai
    Gemini recording ``pai__test_google__test_google_model_thinking_part.yaml`` returns
    ``thoughtSignature`` with ``-``/``_`` where the answer had ``+``/``/``); both are the
    same carrier."""
    norm = text.translate(_URLSAFE).rstrip("=")
    return hashlib.sha256(norm.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _strings(value: Any, budget: list[int]) -> Iterator[str]:
    """String leaves of ``value`` in document order (dict values, not keys)."""
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        budget[0] -= 1
        if budget[0] < 0:
            return
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def produced_carriers(turn: Turn | None) -> list[dict[str, Any]]:
    """The row's ``producedCarriers``: each opaque carrier of the answer with its byte size,
    the bytes of readable text it holds and the digests of its string leaves."""
    if turn is None:
        return []
    out: list[dict[str, Any]] = []
    for c in turn.carriers:
        if not c.opaque:
            continue
        digests: list[str] = []
        for s in _strings(c.value, [MAX_WALK_NODES]):
            if _utf8_len(s) >= MIN_DIGEST_BYTES:
                d = digest(s)
                if d not in digests:
                    digests.append(d)
        entry: dict[str, Any] = {"kind": c.kind, "bytes": c.size, "digests": digests}
        if c.text:
            entry["textBytes"] = _utf8_len(c.text)
        out.append(entry)
    return out


def _leaves(value: Any, budget: list[int]) -> Iterator[tuple[Any, Any, str]]:
    """(container, key, string) of each string leaf of ``value``, in :func:`_strings`' order."""
    stack: list[tuple[Any, Any, Any]] = [(None, None, value)]
    while stack:
        parent, key, node = stack.pop()
        budget[0] -= 1
        if budget[0] < 0:
            return
        if isinstance(node, str):
            yield parent, key, node
        elif isinstance(node, dict):
            stack.extend((node, k, v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((node, i, v) for i, v in reversed(list(enumerate(node))))


def _holders(body: JSON) -> dict[int, JSON]:
    """Each JSON container of ``body`` (by id) -> the container holding it (bounded walk)."""
    out: dict[int, JSON] = {}
    stack: list[JSON] = [body]
    budget = MAX_WALK_NODES
    while stack and budget > 0:
        node = stack.pop()
        budget -= 1
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                out[id(child)] = node
                stack.append(child)
    return out


def _inside(parent: JSON, holders: dict[int, JSON], signed: set[int]) -> bool:
    """Whether ``parent`` (a text leaf's container) or a container holding it is one of the
    ``signed`` objects (those holding an opaque carrier)."""
    node: JSON | None = parent
    seen = 0
    while node is not None and seen <= MAX_WALK_NODES:
        if id(node) in signed:
            return True
        node = holders.get(id(node))
        seen += 1
    return False


def _entry(
    c: SentCarrier, body: Any, earlier: EarlierTurns | None, model: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"kind": c.kind, "bytes": c.size, "opaque": c.opaque}
    if c.earlier_turn:
        entry["earlierTurn"] = True
        if earlier is not None:
            held = body if isinstance(body, dict) else None
            entry["earlierTurns"] = earlier.verdict_for(model, held, c.kind)
    return entry


def _count_in_prompt(
    body: Any, found: list[tuple[dict[str, Any], Any, Any]], counter: PromptCounter
) -> None:
    """Each found text carrier's ``tokenCount``: the prompt's tokens minus the prompt's tokens
    with that one carrier emptied (the body is the probe's own parsed copy: each leaf is
    emptied in place and put back). A failing count leaves the bytes estimate for that
    carrier and every later one: an endpoint that failed (down, refusing, timing out) is not
    asked again for this request."""
    try:
        whole = int(counter.count(body))
    except Exception:
        return
    for entry, parent, key in found[:MAX_COUNTED_CARRIERS]:
        value = parent[key]
        parent[key] = ""
        try:
            without = int(counter.count(body))
        except Exception:
            return
        finally:
            parent[key] = value
        entry["tokenCount"] = max(whole - without, 0)
        entry["tokenizer"] = counter.name
        entry["promptCount"] = True


def sent_carriers(
    body: Any,
    sent: list[SentCarrier],
    tokenizer: Tokenizer | PromptCounter | None = None,
    earlier: EarlierTurns | None = None,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """The row's ``sentCarriers``: each carrier the request sends back, in order, with its
    kind, bytes, opacity, the digest of its value when found, and for a text carrier its
    token count when ``tokenizer`` is given (``tokenCount``, ``tokenizer``): the tokens of its
    text, or with a :class:`PromptCounter` what it adds to the prompt (``promptCount``: the
    server's own count). A carrier from an earlier turn is marked ``earlierTurn`` and, given
    the dialect's rule ``earlier`` (for ``model``), carries its verdict (``earlierTurns``:
    dropped, kept or unknown) for the report."""
    out: list[dict[str, Any]] = [_entry(c, body, earlier, model) for c in sent]
    if not sent or not isinstance(body, dict):
        return out
    waiting: dict[int, list[int]] = {}
    for i, c in enumerate(sent):
        waiting.setdefault(c.size, []).append(i)
    left = len(sent)
    in_prompt: list[tuple[dict[str, Any], Any, Any]] = []
    signed: set[int] = set()  # the objects holding an opaque carrier
    for parent, key, s in _leaves(body, [MAX_WALK_NODES]):
        if not s:
            continue
        slots = waiting.get(_utf8_len(s))
        if not slots:
            continue
        i = slots.pop(0)
        entry = out[i]
        entry["digest"] = digest(s)
        if entry["opaque"]:
            signed.add(id(parent))
        elif isinstance(tokenizer, PromptCounter):
            in_prompt.append((entry, parent, key))
        elif tokenizer is not None:
            try:
                entry["tokenCount"] = int(tokenizer.count(s))
                entry["tokenizer"] = tokenizer.name
            except Exception:  # a tokenizer failure leaves the bytes estimate
                pass
        left -= 1
        if left == 0:
            break
    if in_prompt and signed:
        holders = _holders(body)
        in_prompt = [f for f in in_prompt if not _inside(f[1], holders, signed)]
    if in_prompt and isinstance(tokenizer, PromptCounter):
        _count_in_prompt(body, in_prompt, tokenizer)
    return out


__all__ = [
    "COUNT_TIMEOUT",
    "MAX_COUNTED_CARRIERS",
    "MIN_DIGEST_BYTES",
    "CountEndpoint",
    "ObservedRequest",
    "PromptCounter",
    "Tokenizer",
    "bind_counter",
    "digest",
    "off_the_loop",
    "produced_carriers",
    "sent_carriers",
]
