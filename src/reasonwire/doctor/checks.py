"""The checks: each reads conversations of native items and yields :class:`Finding` objects.

Per assistant turn: the structure of every opaque carrier (:mod:`.framing`, families from
:data:`.facts.RULES`), then the carriers a provider requires and the session lacks (the
rules of :class:`.facts.Rules`, the Chat ones from the route's wire Profile).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from reasonwire.doctor import framing
from reasonwire.doctor.facts import ENVELOPES, KIND_OF_FINDING, RULES, STAND_INS, URLSAFE_OK, Opaque
from reasonwire.doctor.model import Conversation, Document, Finding, Item, Message
from reasonwire.wire.model import JSON
from reasonwire.wire.registry import get_dialect

FIX: dict[str, str] = {
    "truncated": "the carrier lost characters; it cannot be restored: drop the block "
    "(earlier turn) or close the tool loop (--out repairs)",
    "undecodable": "the carrier is not what the provider returned; drop it (--out)",
    "merged": "two carriers were joined into one; drop the block (--out)",
    "reencoded": "re-encode the same bytes in the provider's base64 alphabet (--out)",
    "placeholder": "a tool replaced the carrier with a note; drop the block (--out)",
    "empty": "the carrier is empty; drop the block (--out)",
    "missing_signature": "a thinking block without its signature is refused; drop it (--out)",
    "missing_thought_signature": "the first functionCall of the step needs its "
    "thoughtSignature back; restore it from the original answer (it cannot be made up)",
    "missing_reasoning_content": "send back the reasoning_content the model returned with "
    "this tool call; it cannot be made up",
    "padded_reasoning_content": "the reasoning of this tool-call turn was replaced by an "
    "empty string: accepted, but the model no longer sees its reasoning",
    "thinking_not_first": "the last assistant message of an open tool loop must start with "
    "its thinking block: restore it, or close the loop (--out)",
    "changed": "not what the provider returned (compared with the originals): restore the "
    "original block, or drop it (--out)",
    "reordered": "the blocks of one answer must come back in the order it gave them: "
    "restore the order, or drop them (--out)",
    "reasoning_unpaired": "replay the reasoning item only with the item that followed it, "
    "unchanged (with its id); else drop the reasoning item (--out)",
    "reasoning_item_absent": "with store=false the server keeps nothing: send the reasoning "
    "item with its encrypted_content, or drop the reference (--out)",
}


@dataclass(frozen=True, slots=True)
class Hit:
    """A finding before it has a file: where in which message, and the item it is about."""

    message: Message
    item: Item | None
    path: str
    kind: str
    detail: str
    holder: JSON = None
    """The object holding the carrier (the item, or a part inside it)."""
    key: str = ""
    """The carrier's key in ``holder`` (the native name)."""
    parent: list[JSON] | None = None
    """The list inside the item holding ``holder``, when the carrier is nested."""


Found = tuple[str, JSON, JSON, str, "list[JSON] | None"]


def _get(
    value: JSON, path: tuple[str, ...], at: str, parent: list[JSON] | None = None
) -> Iterator[Found]:
    """(json path, holder, value, last key, list holding the holder) for each value at
    ``path`` under ``value``."""
    if not path:
        return
    head, rest = path[0], path[1:]
    if head == "[]":
        if isinstance(value, list):
            for i, v in enumerate(value):
                yield from _get(v, rest, f"{at}[{i}]", value)
        return
    if not isinstance(value, dict) or head not in value:
        return
    if not rest:
        yield f"{at}.{head}", value, value[head], head, parent
    else:
        yield from _get(value[head], rest, f"{at}.{head}", parent)


def _matches(item: JSON, match: tuple[str, str] | None) -> bool:
    return isinstance(item, dict) and (match is None or item.get(match[0]) == match[1])


def carrier_problem(spec: Opaque, value: JSON, dialect: str) -> framing.Problem | None:
    """What is wrong with one opaque carrier value, or None."""
    if not isinstance(value, str):
        return framing.Problem("undecodable", f"a {type(value).__name__}, not a string")
    if value == "":
        return framing.Problem("empty", "the carrier is an empty string")
    if value in STAND_INS.get(spec.family, frozenset()):
        return None
    if framing.is_placeholder(value):
        return framing.Problem("placeholder", f"holds {value[:40]!r}, not an opaque token")
    if spec.family in ENVELOPES:
        return framing.check_protobuf(
            value, ENVELOPES[spec.family], urlsafe_ok=URLSAFE_OK[spec.family]
        )
    return framing.check_fernet(value)


def opaque_specs(msg: Message) -> Iterator[tuple[Item, Opaque]]:
    """Each item of ``msg`` with each opaque-carrier rule of its dialect that matches it."""
    rules = RULES.get(msg.dialect)
    if rules is None:
        return
    for item in msg.items:
        for spec in rules.opaque:
            if _matches(item.value, spec.match):
                yield item, spec


def opaque_hits(msg: Message) -> Iterator[Hit]:
    """Structural damage of every opaque carrier in one message."""
    for item, spec in opaque_specs(msg):
        found = list(_get(item.value, spec.path, item.path))
        if not found and spec.required:
            key = item.keys.get(spec.path[-1], spec.path[-1])
            yield Hit(
                msg,
                item,
                f"{item.path}.{key}",
                "missing_signature",
                f"{spec.match[1] if spec.match else 'item'} without its {key}",
            )
        for path, holder, value, last, parent in found:
            if value is None:
                continue  # null: no carrier sent (the store rule judges absence)
            problem = carrier_problem(spec, value, msg.dialect)
            if problem is not None:
                path = path.rsplit(".", 1)[0] + "." + item.keys.get(last, last)
                yield Hit(
                    msg,
                    item,
                    path,
                    problem.kind,
                    f"{spec.kind}: {problem.detail}",
                    holder,
                    last,
                    parent,
                )


def _is(item: JSON, marker: tuple[str, str | None] | None) -> bool:
    if marker is None or not isinstance(item, dict):
        return False
    key, value = marker
    if value is None:
        found = item.get(key)
        return bool(found) if isinstance(found, list) else key in item
    return item.get(key) == value


def _open_loop(conv: Conversation, dialect: str) -> Message | None:
    """The last assistant message when everything after it is tool results (a loop the next
    request continues), else None."""
    rules = RULES[dialect]
    for msg in reversed(conv.messages):
        if msg.role == "assistant":
            calls = any(_is(i.value, rules.tool_call) for i in msg.items)
            return msg if calls else None
        if not msg.items or not all(_is(i.value, rules.tool_result) for i in msg.items):
            return None
    return None


def loop_hits(conv: Conversation) -> Iterator[Hit]:
    """Thinking must open the last assistant message of an open tool loop (thinking on)."""
    if conv.thinking is not True:
        return
    last = next((m for m in reversed(conv.messages) if m.role == "assistant"), None)
    if last is None or not RULES[last.dialect].first_in_loop:
        return
    msg = _open_loop(conv, last.dialect)
    if msg is None or not msg.items:
        return
    first = msg.items[0].value
    kinds = RULES[msg.dialect].first_in_loop
    if not (isinstance(first, dict) and first.get("type") in kinds):
        typ = first.get("type") if isinstance(first, dict) else type(first).__name__
        yield Hit(
            msg,
            msg.items[0],
            msg.items[0].path,
            "thinking_not_first",
            f"open tool loop with thinking on: the message starts with {typ!r}, not "
            f"{' or '.join(kinds)}",
        )


def step_hits(conv: Conversation) -> Iterator[Hit]:
    """The first tool-call item of each step of the current turn carries its signature."""
    current: list[Message] = []
    for msg in conv.messages:
        if msg.role != "assistant" and not any(
            _is(i.value, RULES[msg.dialect].tool_result) for i in msg.items
        ):
            current = []  # a user message starts a new turn; only its steps are validated
        elif msg.role == "assistant":
            current.append(msg)
    for msg in current:
        rules = RULES[msg.dialect]
        key = rules.first_call_signed
        if key is None:
            continue
        first = next((i for i in msg.items if _is(i.value, rules.tool_call)), None)
        if first is not None and key not in first.value:
            yield Hit(
                msg,
                first,
                f"{first.path}.{key}",
                "missing_thought_signature",
                f"the step's first function call has no {key}",
            )


def tool_turn_hits(conv: Conversation) -> Iterator[Hit]:
    """Chat routes whose Profile lists ``required_on_tool_calls`` (DeepSeek, Kimi thinking):
    every assistant tool-call message carries those fields, with content."""
    if conv.profile is None:
        return
    for msg in conv.messages:
        if msg.role != "assistant":
            continue
        rules = RULES[msg.dialect]
        if not rules.text_carriers:
            continue
        required = get_dialect(msg.dialect).profile(conv.profile).required_on_tool_calls
        for item in msg.items:
            if not _is(item.value, rules.tool_call):
                continue
            for name in required:
                value = item.value.get(name)
                if name not in item.value or value is None:
                    yield Hit(
                        msg,
                        item,
                        f"{item.path}.{name}",
                        "missing_reasoning_content",
                        f"tool-call turn without {name} ({conv.profile} refuses it: 400)",
                    )
                elif isinstance(value, str) and not value.strip():
                    yield Hit(
                        msg,
                        item,
                        f"{item.path}.{name}",
                        "padded_reasoning_content",
                        f"{name} is {value!r} on a tool-call turn",
                    )


def store_hits(conv: Conversation) -> Iterator[Hit]:
    """With server state off, every reasoning item carries its sealed content and nothing
    refers to a stored item."""
    for msg in conv.messages:
        rules = RULES[msg.dialect]
        state = get_dialect(msg.dialect).server_state
        if state is None or not (rules.store_items or rules.reference):
            continue
        store = state.store_default if conv.store is None else conv.store
        if store:
            continue
        for item in msg.items:
            v = item.value
            if not isinstance(v, dict):
                continue
            for typ, key in rules.store_items:
                if v.get("type") == typ and v.get(key) is None:
                    yield Hit(
                        msg,
                        item,
                        item.path,
                        "reasoning_item_absent",
                        f"{typ} item {v.get('id', '')!s} without {key} under store=false",
                    )
            ref = rules.reference
            if ref and v.get("type") == ref[0] and str(v.get("id", "")).startswith(ref[1]):
                yield Hit(
                    msg,
                    item,
                    item.path,
                    "reasoning_item_absent",
                    f"reference to {v.get('id')} under store=false: the server kept nothing",
                )


def pair_hits(conv: Conversation) -> Iterator[Hit]:
    """An item the server pairs with the one it produced (Responses reasoning) is followed
    by a model item that still has its id."""
    for msg in conv.messages:
        pair = RULES[msg.dialect].paired
        if pair is None:
            continue
        items = msg.items
        for n, item in enumerate(items):
            v = item.value
            if not (isinstance(v, dict) and v.get("type") == pair[0]):
                continue
            if not str(v.get("id", "")).startswith(pair[1]):
                continue
            nxt = items[n + 1].value if n + 1 < len(items) else None
            if not (isinstance(nxt, dict) and nxt.get("id")):
                yield Hit(
                    msg,
                    item,
                    item.path,
                    "reasoning_unpaired",
                    f"{pair[0]} item {v.get('id')} is not followed by the item it produced "
                    "(its id is gone: the message was rewritten or dropped)",
                )


CONVERSATION_CHECKS: tuple[Callable[[Conversation], Iterator[Hit]], ...] = (
    loop_hits,
    step_hits,
    tool_turn_hits,
    store_hits,
    pair_hits,
)


def hits(conv: Conversation, turn: int = 0) -> list[Hit]:
    """Every finding of one conversation, its assistant turns numbered on from ``turn``
    (the turns of the conversations before it in the file)."""
    out: list[Hit] = []
    for msg in conv.messages:
        if msg.role == "assistant":
            turn += 1
        msg.turn = turn
        out.extend(opaque_hits(msg))  # a sealed item can sit in any role (compaction input)
    for check in CONVERSATION_CHECKS:
        out.extend(check(conv))
    return out


def to_findings(doc: Document, name: str, found: list[Hit]) -> list[Finding]:
    """Hits as findings of file ``name``, in file order."""
    out: list[Finding] = []
    profile = {id(m): c.profile for c in doc.conversations for m in c.messages}
    for hit in found:
        line = hit.item.line if hit.item is not None else hit.message.line
        out.append(
            Finding(
                name,
                line if doc.line_oriented else None,
                hit.path,
                hit.kind,
                KIND_OF_FINDING.get(hit.kind, "error"),
                hit.message.provider or profile.get(id(hit.message)) or hit.message.dialect,
                hit.detail,
                FIX.get(hit.kind, ""),
                hit.message.turn,
            )
        )
    out.sort(key=lambda f: (f.line or 0, f.path))
    return out


def document_structure_hits(doc: Document) -> list[Hit]:
    """The structural hits of every conversation, turns numbered through the file."""
    out: list[Hit] = []
    turn = 0
    for conv in doc.conversations:
        out.extend(hits(conv, turn))
        turn = max((m.turn for m in conv.messages), default=turn)
    return out


def findings(doc: Document, name: str) -> list[Finding]:
    """Every structural finding of a document, in file order."""
    return to_findings(doc, name, document_structure_hits(doc))
