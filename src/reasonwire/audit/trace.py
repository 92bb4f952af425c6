"""From recorded exchanges to what happened to every reasoning carrier, request by request.

1. **Issued carriers.** Each successful generation answer is parsed by its dialect object
   (``parse_response`` or ``stream_decoder``) into a :class:`~reasonwire.wire.model.Turn`. Every
   string of a carrier's value that holds reasoning state (a signature, encrypted content, a
   thought signature, reasoning text, a reasoning item id) becomes one tagged :class:`Atom`
   (``r<exchange>.<n>``), traced by its exact value. Short identifier-like strings inside a
   carrier (``"type": "thinking"``) are labels, not state, and are not traced.
2. **Home.** The dialect's ``replay(turn)`` is what a perfect client sends back. An atom's
   *home* in a later request is found from that replay: the replayed message (item, content)
   holding it is located in the request by its other strings (tool call ids, visible text,
   arguments, names), the nearest enclosing object that has such anchors being the atom's
   host (a Gemini ``functionCall`` part for its signature; the whole message for a thinking
   block). An item without anchors (a Responses reasoning item) sits where its replay
   neighbour puts it. Newer answers are located first and each located message belongs to one
   answer only, so identical carriers of two answers are told apart by position.
3. **Verdict** of each atom in each later request of the same dialect:

   - ``kept``: the exact string sits at its home (keys compared across ``snake_case`` /
     ``camelCase``, which the providers accept alike);
   - ``server``: not sent, but held by the server: the request continues, through the
     dialect's ``previous_response_id``-style field, a chain that includes the answer; or it
     names the atom's item by reference - an object holding nothing but the item's own ``id``
     and a type label (a Responses ``item_reference``, as the Vercel AI SDK sends with
     store=true) - and the answer was stored (the dialect's ``store`` switch on in the
     request that produced it). Reports count it as kept: the server uses the stored item;
   - ``moved``: the exact string is in the request, elsewhere (another JSON path, possibly
     on another message);
   - ``altered``: at its home (or anywhere, when re-encoded or embedded in a larger string)
     sits a different string: first differing byte offset, excerpts, lengths, and
     ``reencoded`` when both decode to the same bytes as base64 (a re-encoding is an
     alteration even where a provider tolerates it);
   - ``dropped``: none of the above.

   Each observation has a ``scope``: ``in_loop`` while no final answer (an answer without tool
   calls) came between the issuing answer and the request, ``cross_turn`` after. Bytes of
   atoms present in a ``cross_turn`` request are the re-sent cost.

Nothing here names a provider: shapes come from the dialect objects, the rest is generic JSON.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from reasonwire.audit._json import (
    MISSING,
    Path,
    byte_diff,
    fmt,
    nkey,
    nodes,
    npath,
    same_b64,
    strings,
    under,
)
from reasonwire.audit.recorder import Exchange
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.model import JSON, Carrier, Done, JsonObject, Turn
from reasonwire.wire.registry import dialect_for_path

LABEL = re.compile(r"^[A-Za-z0-9_.\-]{0,23}$")
"""A short identifier-like string (``thinking``, ``reasoning.text``, ``unknown``): a label."""

PLACEHOLDER = re.compile(r"^[A-Za-z_]{4,64}$")
"""A word-only string standing where an opaque carrier was (a documented stand-in such as a
validator skip value): the carrier is dropped, not altered."""

STATUSES = ("kept", "server", "moved", "altered", "dropped")
SCOPES = ("in_loop", "cross_turn")


@dataclass(frozen=True)
class Atom:
    """One traced string of a carrier handed out by the simulator."""

    id: str
    response: int
    dialect: str
    carrier: str
    kind: str
    value: str
    opaque: bool
    response_path: str
    item: int | None
    ipath: Path
    host: Path | None  # path of the host inside the item (None: locate by neighbour)

    @property
    def size(self) -> int:
        return len(self.value.encode("utf-8"))

    def as_dict(self) -> JsonObject:
        preview = self.value if len(self.value) <= 40 else self.value[:37] + "..."
        return {
            "id": self.id,
            "response": self.response,
            "dialect": self.dialect,
            "carrier": self.carrier,
            "kind": self.kind,
            "opaque": self.opaque,
            "bytes": self.size,
            "sha256": hashlib.sha256(self.value.encode("utf-8")).hexdigest()[:16],
            "preview": preview,
            "response_path": self.response_path,
            "replay_path": None if self.item is None else fmt((self.item, *self.ipath)),
        }


class Anchors(NamedTuple):
    """What locates one object of a replay inside a later request body, outside the carriers:
    its ``strong`` strings (ids, text, arguments: not a label), ``every`` string under it
    (labels such as a function name too), and its ``keys``."""

    strong: frozenset[str]
    every: frozenset[str]
    keys: frozenset[str]


Status = Literal["dropped", "kept", "moved", "altered", "server"]
"""What became of a traced string in a later request: not found; exact at its place; exact at
another path or on another message; different bytes; held by the server (a stored chain, or a
reference to the stored item)."""


@dataclass
class Issued:
    """One successful answer: its turn, the ideal replay and the atoms it handed out."""

    response: int
    dialect: Dialect
    turn: Turn
    items: list[JSON]
    atoms: list[Atom]
    anchors: dict[tuple[int, Path], Anchors]
    stored: bool = False  # the server keeps this answer's items (its request had store on)

    @property
    def final(self) -> bool:
        return not self.turn.tool_calls


def _is_label(s: str) -> bool:
    return LABEL.match(s) is not None


def parse_turn(dialect: Dialect, ex: Exchange) -> Turn:
    """The answer of one exchange as a Turn (streams through the dialect's decoder)."""
    ctype = ex.response_headers.get("content-type", "")
    if "text/event-stream" in ctype or dialect.streams_as_json(ex.path):
        dec = dialect.stream_decoder()
        events = [*dec.feed(ex.response_body), *dec.close()]
        for ev in events:
            if isinstance(ev, Done):
                return ev.turn
        return dec.partial_turn()
    return dialect.parse_response(ex.response_body)


def _find(items: Sequence[JSON], value: JSON, used: set[Path]) -> Path | None:
    for j, item in enumerate(items):
        for p, node in nodes(item, (j,)):
            if p not in used and type(node) is type(value) and node == value:
                return p
    return None


def _at(value: JSON, path: Path) -> JSON:
    """The node at ``path`` (exact keys and indexes) inside a replay item."""
    for part in path:
        if isinstance(value, list) and isinstance(part, int):
            value = value[part]
            continue
        if not (isinstance(value, dict) and isinstance(part, str)):
            raise KeyError(f"{path!r} does not lead through this item")
        value = value[part]
    return value


def issue(response: int, dialect: Dialect, turn: Turn, stored: bool = False) -> Issued:
    """Tag every traced string of ``turn``'s carriers and find its place in the replay."""
    items = list(dialect.replay(turn))
    roots: list[Path] = []
    found: list[tuple[Carrier, Path | None]] = []
    for c in turn.carriers:
        root = _find(items, c.value, set(roots))
        if root is not None:
            roots.append(root)
        found.append((c, root))

    def in_carrier(p: Path) -> bool:
        return any(p[: len(r)] == r for r in roots)

    anchors: dict[tuple[int, Path], Anchors] = {}

    def anchors_of(j: int, sub: Path) -> Anchors:
        key = (j, sub)
        if key not in anchors:
            node = _at(items[j], sub)
            leaves = [s for p, s in strings(node, (j, *sub)) if not in_carrier(p) and s]
            keys = frozenset(nkey(k) for k in node) if isinstance(node, dict) else frozenset()
            anchors[key] = Anchors(
                strong=frozenset(s for s in leaves if not _is_label(s)),
                every=frozenset(leaves),
                keys=keys,
            )
        return anchors[key]

    atoms: list[Atom] = []
    for c, root in found:
        for inner, s in strings(c.value):
            if not s or _is_label(s):
                continue
            keys = [k for k in inner if isinstance(k, str)]
            kind = ".".join([c.kind, *keys])
            item: int | None = None
            ipath: Path = ()
            host: Path | None = None
            if root is not None:
                item = int(root[0])
                ipath = (*root[1:], *inner)
                # the innermost enclosing object with anchors of its own hosts the atom:
                # strong anchors (ids, text, arguments) first, else labels (a function name)
                for strong_only in (True, False):
                    for cut in range(len(ipath) - 1, -1, -1):
                        sub = ipath[:cut]
                        if not isinstance(_at(items[item], sub), dict):
                            continue
                        own = anchors_of(item, sub)
                        if own.strong if strong_only else own.every:
                            host = sub
                            break
                    if host is not None:
                        break
            rpath = c.path + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in inner)
            atoms.append(
                Atom(
                    id=f"r{response}.{len(atoms) + 1}",
                    response=response,
                    dialect=dialect.name,
                    carrier=c.kind,
                    kind=kind,
                    value=s,
                    opaque=not any(ch.isspace() for ch in s),
                    response_path=rpath,
                    item=item,
                    ipath=ipath,
                    host=host,
                )
            )
    for j in range(len(items)):
        anchors_of(j, ())
    return Issued(response, dialect, turn, items, atoms, anchors, stored)


# ------------------------------------------------------------------------------------------
# one request
# ------------------------------------------------------------------------------------------


@dataclass
class _Node:
    path: Path
    order: int
    leaves: frozenset[str]
    keys: frozenset[str]
    size: int


class _Index:
    """Every object of a request body with the strings under it, and where strings occur."""

    def __init__(self, body: JSON) -> None:
        self.body = body
        self.dicts: list[_Node] = []
        self.occ: dict[str, list[Path]] = {}
        self.leaves: list[tuple[Path, str]] = []
        self._walk(body, (), [0])

    def _walk(self, node: JSON, path: Path, counter: list[int]) -> list[str]:
        counter[0] += 1
        order = counter[0]
        if isinstance(node, str):
            self.occ.setdefault(node, []).append(path)
            self.leaves.append((path, node))
            return [node]
        out: list[str] = []
        if isinstance(node, dict):
            for k, v in node.items():
                out.extend(self._walk(v, (*path, str(k)), counter))
            self.dicts.append(
                _Node(path, order, frozenset(out), frozenset(nkey(str(k)) for k in node), len(out))
            )
        elif isinstance(node, list):
            for i, v in enumerate(node):
                out.extend(self._walk(v, (*path, i), counter))
        return out

    def pick(
        self,
        anchors: Anchors,
        atoms: frozenset[str],
        within: Path | None,
        taken: Iterable[Path],
    ) -> Path | None:
        """The object that best matches a replayed object with these anchors."""
        strong, every, keys = anchors.strong, anchors.every, anchors.keys
        taken = list(taken)
        best: tuple[tuple[int, ...], Path] | None = None
        for n in self.dicts:
            if within is not None and not under(n.path, within):
                continue
            if any(under(n.path, t) or under(t, n.path) for t in taken):
                continue
            s = len((strong or every) & n.leaves)
            k = len(keys & n.keys)
            if not s or (keys and not k):
                continue
            score = (s, len(atoms & n.leaves), len(every & n.leaves), k, -n.size, n.order)
            if best is None or score > best[0]:
                best = (score, n.path)
        return best[1] if best else None


def resolve(root: JSON, path: Path) -> tuple[Path, JSON]:
    """(real path, node) for ``path`` read with :func:`nkey` keys; node MISSING if absent."""
    node = root
    real: list[str | int] = []
    for p in path:
        if isinstance(p, int):
            if not isinstance(node, list) or not 0 <= p < len(node):
                return tuple(real), MISSING
            node = node[p]
            real.append(p)
            continue
        if not isinstance(node, dict):
            return tuple(real), MISSING
        key = p if p in node else next((k for k in node if nkey(str(k)) == nkey(p)), None)
        if key is None:
            return tuple(real), MISSING
        node = node[key]
        real.append(str(key))
    return tuple(real), node


@dataclass
class Observation:
    atom: Atom
    scope: str
    status: Status = "dropped"
    expected: Path | None = None
    found: Path | None = None
    item: Path | None = None
    diff: JsonObject | None = None
    note: str = ""
    visible: frozenset[str] = frozenset()
    ref: Path | None = None  # an object referencing the atom's stored item by its id

    @property
    def present_bytes(self) -> int:
        if self.status in ("kept", "moved"):
            return self.atom.size
        if self.status == "altered" and self.diff:
            return int(self.diff["got_bytes"])
        return 0

    def as_dict(self) -> JsonObject:
        out: JsonObject = {
            "carrier": self.atom.id,
            "kind": self.atom.kind,
            "scope": self.scope,
            "status": self.status,
            "expected_path": None if self.expected is None else fmt(self.expected),
            "found_path": None if self.found is None else fmt(self.found),
            "message_path": None if self.item is None else fmt(self.item),
            "bytes": self.present_bytes,
        }
        if self.found is not None and self.item is not None:
            out["same_message"] = under(self.found, self.item)
        if self.diff is not None:
            out["diff"] = self.diff
        if self.note:
            out["note"] = self.note
        if self.scope == "cross_turn" and self.present_bytes:
            out["resent_bytes"] = self.present_bytes
        return out


def observe(
    body: JSON,
    prior: Sequence[Issued],
    finals: Sequence[int],
    request: int,
    server_held: set[int],
) -> list[Observation]:
    """What happened, in request ``request`` (``body``), to every atom of ``prior``."""
    idx = _Index(body)
    taken: dict[Path, int] = {}
    item_paths: dict[tuple[int, int], Path] = {}
    obs: list[Observation] = []
    for iss in sorted(prior, key=lambda i: -i.response):
        others = [p for p, who in taken.items() if who != iss.response]
        own_atoms = frozenset(a.value for a in iss.atoms)
        located: dict[int, Path] = {}
        for j in range(len(iss.items)):
            anchors = iss.anchors[(j, ())]
            if not anchors.strong:
                continue
            p = idx.pick(anchors, own_atoms, None, others)
            if p is not None:
                located[j] = p
        for j in range(len(iss.items)):
            if j in located:
                continue
            for jj in sorted(located, key=lambda x: abs(x - j)):
                base = located[jj]
                if base and isinstance(base[-1], int):
                    cand = (*base[:-1], base[-1] + (j - jj))
                    _, node = resolve(body, cand)
                    if isinstance(node, dict) and not any(
                        under(cand, t) or under(t, cand) for t in others
                    ):
                        located[j] = cand
                    break
        for j in range(len(iss.items)):
            anchors = iss.anchors[(j, ())]
            if j in located or anchors.strong or not anchors.every:
                continue
            p = idx.pick(anchors, own_atoms, None, [*others, *located.values()])
            if p is not None:
                located[j] = p
        for j, p in located.items():
            taken[p] = iss.response
            item_paths[(iss.response, j)] = p
        cross = any(iss.response <= f < request for f in finals)
        refs = _references(idx, iss) if iss.stored else {}
        for a in iss.atoms:
            o = Observation(a, "cross_turn" if cross else "in_loop")
            if a.item is not None:
                o.ref = refs.get(a.item)
            if a.item is not None:
                o.visible = iss.anchors[(a.item, ())].every
            if a.item is not None and a.item in located:
                o.item = located[a.item]
                if a.host is not None:
                    hp = (
                        o.item
                        if not a.host
                        else idx.pick(iss.anchors[(a.item, a.host)], own_atoms, o.item, others)
                    )
                    if hp is not None:
                        o.expected = (*hp, *a.ipath[len(a.host) :])
                else:
                    o.expected = (*o.item, *a.ipath)
            obs.append(o)
    _classify(idx, obs, server_held)
    return obs


_REF_KEYS = frozenset({nkey("type"), nkey("id")})


def _references(idx: _Index, iss: Issued) -> dict[int, Path]:
    """Replay item -> the request object that references it by id (see ``server``).

    Only the item's own ``id`` and labels sit in such an object, and its keys are ``id`` and
    at most a ``type``: the item itself, sent whole but stripped of its carrier, still has its
    other keys (``summary``, ``arguments``, ...) and is not a reference."""
    out: dict[int, Path] = {}
    for j, item in enumerate(iss.items):
        iid = item.get("id") if isinstance(item, dict) else None
        if not isinstance(iid, str) or _is_label(iid):
            continue
        for p in idx.occ.get(iid, []):
            if not p or p[-1] != "id":
                continue
            _, node = resolve(idx.body, p[:-1])
            if not isinstance(node, dict) or not {nkey(str(k)) for k in node} <= _REF_KEYS:
                continue
            if all(isinstance(v, str) and (v == iid or _is_label(v)) for v in node.values()):
                out[j] = p[:-1]
                break
    return out


def _classify(idx: _Index, obs: list[Observation], server_held: set[int]) -> None:
    claimed: set[Path] = set()
    body = idx.body
    # 1. exact at home
    for o in obs:
        if o.expected is None:
            continue
        real, node = resolve(body, o.expected)
        if node is not MISSING and node == o.atom.value and real not in claimed:
            o.status, o.found = "kept", real
            claimed.add(real)
    # 2. exact elsewhere
    for o in obs:
        if o.status != "dropped":
            continue
        spots = [p for p in idx.occ.get(o.atom.value, []) if p not in claimed]
        if not spots:
            continue
        if o.item is not None:
            spots.sort(key=lambda p: not under(p, o.item or ()))
        o.found = spots[0]
        claimed.add(o.found)
        tail = npath(o.atom.ipath)
        if o.expected is None and npath(o.found)[-len(tail) :] == tail and tail:
            o.status, o.note = "kept", "its message was not located; the path inside matches"
        else:
            o.status = "moved"
    # 3. a different string at home, or re-encoded / embedded anywhere
    for o in obs:
        if o.status != "dropped":
            continue
        if o.expected is not None:
            real, node = resolve(body, o.expected)
            if node is None or node == "":
                o.found = real
                o.note = "its field is sent " + ("null" if node is None else "as an empty string")
                continue
            if isinstance(node, str) and node in o.visible:
                continue  # visible content of the message shifted into the spot: not the atom
            if isinstance(node, str) and o.atom.opaque and PLACEHOLDER.match(node):
                o.found = real
                o.note = f"replaced by the placeholder {node!r}"
                continue
            if isinstance(node, str) and real not in claimed:
                o.status, o.found, o.diff = "altered", real, byte_diff(o.atom.value, node)
                claimed.add(real)
                continue
        for p, s in idx.leaves:
            if p in claimed:
                continue
            if same_b64(o.atom.value, s) or (
                len(o.atom.value) >= 24 and o.atom.value in s and s != o.atom.value
            ):
                o.status, o.found, o.diff = "altered", p, byte_diff(o.atom.value, s)
                if not o.diff["reencoded"]:
                    o.note = "embedded in a larger string"
                claimed.add(p)
                break
    # 4. held by the server (a stored chain, or a reference to the stored item), else dropped
    for o in obs:
        if o.status == "dropped" and o.ref is not None and o.atom.response not in server_held:
            o.status, o.item = "server", o.ref
            o.note = (o.note + "; " if o.note else "") + (
                f"its item is sent as a reference by id ({fmt(o.ref)}) to the item the server "
                "stored"
            )
        elif o.status == "dropped" and o.atom.response in server_held:
            o.status = "server"
        elif o.status != "server" and o.atom.response in server_held:
            o.note = (o.note + "; " if o.note else "") + "also held by the server"


# ------------------------------------------------------------------------------------------
# a whole recording
# ------------------------------------------------------------------------------------------


@dataclass
class RequestRecord:
    index: int
    method: str
    path: str
    dialect: str | None
    variant: str | None
    model: str | None
    status: int
    stream: bool
    request_bytes: int
    error: str | None = None
    issued: list[str] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    final: bool | None = None
    parse_error: str | None = None

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300

    def as_dict(self) -> JsonObject:
        loop = sum(o.present_bytes for o in self.observations if o.scope == "in_loop")
        cross = sum(o.present_bytes for o in self.observations if o.scope == "cross_turn")
        return {
            "index": self.index,
            "method": self.method,
            "path": self.path,
            "dialect": self.dialect,
            "variant": self.variant,
            "model": self.model,
            "stream": self.stream,
            "status": self.status,
            "accepted": self.accepted,
            "error": self.error,
            "final_answer": self.final,
            "request_bytes": self.request_bytes,
            "carrier_bytes": {"in_loop": loop, "cross_turn": cross},
            "issued": [*self.issued],
            "observations": [o.as_dict() for o in self.observations],
            **({"parse_error": self.parse_error} if self.parse_error else {}),
        }


@dataclass
class Trace:
    requests: list[RequestRecord]
    atoms: list[Atom]

    def as_dict(self) -> JsonObject:
        return {
            "requests": [r.as_dict() for r in self.requests],
            "carriers": [a.as_dict() for a in self.atoms],
        }


def variant_of(dialect: Dialect, body: JSON) -> str:
    """The column a request belongs to: the dialect, plus its server-state switch if any."""
    spec = dialect.server_state
    if spec is None or not isinstance(body, dict):
        return dialect.name
    value = body.get(spec.store_field, spec.store_default)
    return f"{dialect.name} {spec.store_field}={json.dumps(value)}"


def analyse(exchanges: Sequence[Exchange]) -> Trace:
    """Trace every carrier of every answer through every later request."""
    records: list[RequestRecord] = []
    issued: list[Issued] = []
    atoms: list[Atom] = []
    finals: dict[str, list[int]] = {}
    response_of: dict[str, int] = {}  # response id -> exchange index
    previous_of: dict[int, str] = {}  # exchange index -> previous response id it sent
    for ex in exchanges:
        d = dialect_for_path(ex.path)
        try:
            body: JSON = json.loads(ex.request_body) if ex.request_body else None
        except ValueError:
            body = None
        rec = RequestRecord(
            index=ex.index,
            method=ex.method,
            path=ex.url_path,
            dialect=d.name if d else None,
            variant=variant_of(d, body) if d else None,
            model=d.model_in_request(ex.path, body) if d else None,
            status=ex.status,
            stream=False,
            request_bytes=len(ex.request_body),
        )
        records.append(rec)
        if d is None:
            continue
        ctype = ex.response_headers.get("content-type", "")
        rec.stream = "text/event-stream" in ctype or d.streams_as_json(ex.path)
        if isinstance(body, dict):
            held: set[int] = set()
            spec = d.server_state
            if spec is not None:
                prev = body.get(spec.previous_field)
                seen: set[int] = set()
                while isinstance(prev, str) and prev in response_of:
                    k = response_of[prev]
                    if k in seen:
                        break
                    seen.add(k)
                    held.add(k)
                    prev = previous_of.get(k)
                if isinstance(body.get(spec.previous_field), str):
                    previous_of[ex.index] = body[spec.previous_field]
            prior = [i for i in issued if i.dialect.name == d.name]
            rec.observations = observe(body, prior, finals.get(d.name, []), ex.index, held)
        if rec.accepted:
            try:
                turn = parse_turn(d, ex)
            except Exception as exc:  # a body the dialect cannot read is evidence too
                rec.parse_error = f"{type(exc).__name__}: {exc}"[:300]
                continue
            spec = d.server_state
            stored = (
                spec is not None
                and isinstance(body, dict)
                and body.get(spec.store_field, spec.store_default) is True
            )
            iss = issue(ex.index, d, turn, stored)
            issued.append(iss)
            atoms.extend(iss.atoms)
            rec.issued = [a.id for a in iss.atoms]
            rec.final = iss.final
            if iss.final:
                finals.setdefault(d.name, []).append(ex.index)
            if turn.response_id:
                response_of[turn.response_id] = ex.index
        else:
            try:
                info = d.error_info(json.loads(ex.response_body))
            except ValueError:
                info = None
            text = (
                info.message
                if info and info.message
                else ex.response_body[:300].decode("utf-8", "replace")
            )
            rec.error = text[:500]
    return Trace(records, atoms)


__all__ = ["SCOPES", "STATUSES", "Atom", "Observation", "RequestRecord", "Trace", "analyse"]
