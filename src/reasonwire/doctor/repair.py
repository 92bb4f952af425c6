"""Repairs, written into a new file in the same format, each by a documented provider rule.

Never in place and never inventing a carrier: a damaged carrier is dropped where the
provider ignores it anyway, re-encoded when only its alphabet changed, or, in the last
assistant message of an open tool loop (where Anthropic requires the signed block), the loop
is closed: that message and its tool results go, so the next request carries no block the
provider cannot verify and the model redoes the step. What no rule repairs (a missing
reasoning_content or thought signature: only the original answer had it) stays a finding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from reasonwire.doctor import against, framing
from reasonwire.doctor.checks import Hit, _open_loop
from reasonwire.doctor.facts import RULES
from reasonwire.doctor.model import Change, Conversation, Document, Item, Message
from reasonwire.doctor.report import document_hits
from reasonwire.wire.model import JSON, JsonObject

DROP_KINDS = frozenset(
    {
        "truncated",
        "undecodable",
        "merged",
        "placeholder",
        "empty",
        "missing_signature",
        "changed",
        "reordered",
    }
)
"""Damage to a carrier that no rule can undo: the block holding it goes (or the loop closes)."""

SOURCES = {
    "drop-earlier-thinking": "Anthropic extended thinking: thinking blocks of earlier "
    "assistant turns are stripped from context and may be omitted",
    "close-open-loop": "Anthropic extended thinking with tool use: the last assistant "
    "message of a tool loop must be sent back with its thinking block unmodified; without "
    "it the loop is ended and the step redone",
    "restore-alphabet": "the provider returned standard base64 (every recorded signature); "
    "the same bytes in that alphabet",
    "drop-unverifiable-item": "OpenAI reasoning (store=false): an item is replayed only with "
    "its encrypted_content; an unusable one is omitted",
    "drop-unpaired-reasoning": "OpenAI Responses: a reasoning item needs its following item; "
    "the same history without it is accepted (recording pai__test_openai_responses__test_"
    "openai_responses_thinking_with_modified_history.yaml, request 3: 200)",
    "drop-earlier-signature": "Gemini thought signatures: only the current turn's are validated",
}


@dataclass
class Plan:
    """What a repair run did and what it could not do."""

    changes: list[Change]
    unrepaired: list[Hit]


def _remove(container: list[JSON] | None, obj: JSON) -> bool:
    if container is None:
        return False
    for i, v in enumerate(container):
        if v is obj:
            del container[i]
            return True
    return False


def _drop_item(doc: Document, item: Item) -> None:
    if item.container is None and item.doc_line is not None and doc.line_oriented:
        doc.dropped.add(item.doc_line)  # the line is the item (Codex response_item)
        return
    if _remove(item.container, item.origin) and item.doc_line is not None:
        doc.dirty.add(item.doc_line)


def _change(item: Item | None, path: str, action: str, rule: str) -> Change:
    return Change(item.line if item else None, path, action, rule, SOURCES[rule])


def _current_turn(conv: Conversation, msg: Message) -> bool:
    """True when no user text comes after ``msg`` (its step belongs to the current turn)."""
    after = conv.messages[conv.messages.index(msg) + 1 :]
    rules = RULES[msg.dialect]
    for m in after:
        if m.role != "assistant" and not all(
            isinstance(i.value, dict) and _tool_result(i.value, rules.tool_result) for i in m.items
        ):
            return False
    return True


def _tool_result(value: JsonObject, marker: tuple[str, str | None] | None) -> bool:
    if marker is None:
        return False
    key, want = marker
    return key in value if want is None else value.get(key) == want


def _close_loop(doc: Document, conv: Conversation, msg: Message, out: list[Change]) -> None:
    start = conv.messages.index(msg)
    for m in conv.messages[start:]:
        for item in list(m.items):
            _drop_item(doc, item)
        what = "the loop's last assistant message" if m is msg else "its tool results"
        out.append(
            Change(m.line, m.path, f"dropped {what}", "close-open-loop", SOURCES["close-open-loop"])
        )
    del conv.messages[start:]


def _fix(doc: Document, conv: Conversation, hit: Hit) -> Change | None:
    item = hit.item
    if item is None or item.origin is None:
        return None
    if hit.kind == "reencoded" and hit.holder is not None:
        value = hit.holder.get(hit.key)
        if not isinstance(value, str):
            return None
        family_urlsafe = not ("-" in value or "_" in value)
        fixed = framing.reencode(value, to_urlsafe=family_urlsafe)
        target = item.origin if hit.holder is item.value else hit.holder
        target[item.keys.get(hit.key, hit.key)] = fixed
        if item.doc_line is not None:
            doc.dirty.add(item.doc_line)
        return _change(item, hit.path, "re-encoded in the provider's alphabet", "restore-alphabet")
    if hit.kind in ("reasoning_item_absent",):
        _drop_item(doc, item)
        return _change(item, hit.path, "dropped the item", "drop-unverifiable-item")
    if hit.kind in ("reasoning_unpaired",):
        _drop_item(doc, item)
        return _change(item, hit.path, "dropped the reasoning item", "drop-unpaired-reasoning")
    if hit.kind not in DROP_KINDS:
        return None
    msg = hit.message
    rules = RULES[msg.dialect]
    if rules.first_in_loop:  # (the open loop's own message is closed by repair())
        _drop_item(doc, item)
        msg.items.remove(item)
        return _change(item, hit.path, "dropped the thinking block", "drop-earlier-thinking")
    if rules.first_call_signed:
        if _current_turn(conv, msg) or hit.holder is None:
            return None
        del hit.holder[hit.key]
        if item.doc_line is not None:
            doc.dirty.add(item.doc_line)
        return _change(item, hit.path, "removed the signature", "drop-earlier-signature")
    if rules.store_items:
        if hit.parent is not None and hit.holder is not None:
            _remove(hit.parent, hit.holder)
            if item.doc_line is not None:
                doc.dirty.add(item.doc_line)
            return _change(item, hit.path, "dropped the sealed part", "drop-unverifiable-item")
        _drop_item(doc, item)
        return _change(item, hit.path, "dropped the item", "drop-unverifiable-item")
    return None


def repair(doc: Document, known: against.Originals | None = None) -> Plan:
    """Apply every rule that applies to ``doc`` (in memory); the hits no rule repairs.
    ``known``: original carrier digests (--against), so changed carriers are repaired too."""
    changes: list[Change] = []
    unrepaired: list[Hit] = []
    every = document_hits(doc, known)
    for conv in doc.conversations:
        mine = {id(m) for m in conv.messages}
        found = [h for h in every if id(h.message) in mine]
        last = next((m for m in reversed(conv.messages) if m.role == "assistant"), None)
        loop = _open_loop(conv, last.dialect) if last is not None else None
        loop = (
            loop
            if conv.thinking and loop is not None and RULES[loop.dialect].first_in_loop
            else None
        )
        close = False
        for hit in found:
            if (
                loop is not None
                and hit.message is loop
                and (hit.kind in DROP_KINDS or hit.kind == "thinking_not_first")
            ):
                close = True
                continue
            change = _fix(doc, conv, hit)
            if change is None:
                unrepaired.append(hit)
            else:
                changes.append(change)
        if close and loop is not None:
            _close_loop(doc, conv, loop, changes)
    _drop_emptied_lines(doc)
    return Plan(changes, unrepaired)


def _drop_emptied_lines(doc: Document) -> None:
    """A line-oriented record whose message lost every block goes too (an empty content
    list is refused: Anthropic requires non-empty content)."""
    if not doc.line_oriented:
        _drop_emptied_messages(doc.whole)
        return
    for n in list(doc.dirty):
        rec = doc.lines[n - 1]
        message = rec.get("message") if isinstance(rec, dict) else None
        if isinstance(message, dict) and message.get("content") == []:
            doc.dropped.add(n)
    _relink(doc)


def _relink(doc: Document) -> None:
    """Records chained by ``uuid``/``parentUuid`` (Claude Code) keep their chain: a child of a
    dropped record points at that record's parent."""
    parent_of: JsonObject = {}
    for n in doc.dropped:
        rec = doc.lines[n - 1]
        if isinstance(rec, dict) and isinstance(rec.get("uuid"), str) and "parentUuid" in rec:
            parent_of[rec["uuid"]] = rec["parentUuid"]
    if not parent_of:
        return
    for n, rec in enumerate(doc.lines, 1):
        if n in doc.dropped or not isinstance(rec, dict):
            continue
        parent = rec.get("parentUuid")
        seen = 0
        while isinstance(parent, str) and parent in parent_of and seen < len(parent_of):
            parent = parent_of[parent]
            seen += 1
        if seen:
            rec["parentUuid"] = parent
            doc.dirty.add(n)


def _drop_emptied_messages(whole: JSON) -> None:
    bodies = whole if isinstance(whole, list) else [whole]
    for body in bodies:
        if not isinstance(body, dict):
            continue
        for key in ("messages", "contents"):
            history = body.get(key)
            if isinstance(history, list):
                body[key] = [
                    m
                    for m in history
                    if not (
                        isinstance(m, dict) and (m.get("content") == [] or m.get("parts") == [])
                    )
                ]


def serialise(doc: Document) -> bytes:
    """The document in its own format: untouched lines byte for byte."""
    if doc.rows is not None:
        return _serialise_sqlite(doc)
    if not doc.line_oriented:
        return (json.dumps(doc.whole, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    out: list[str] = []
    for n, raw in enumerate(doc.raw_lines, 1):
        if n in doc.dropped:
            continue
        if n in doc.dirty:
            end = "\n" if raw.endswith("\n") else ""
            line = json.dumps(doc.lines[n - 1], ensure_ascii=False, separators=(",", ":"))
            out.append(line + end)
        else:
            out.append(raw)
    return "".join(out).encode("utf-8")


def _serialise_sqlite(doc: Document) -> bytes:
    """A copy of the session database with the changed rows updated, dropped ones deleted."""
    import shutil
    import sqlite3
    import tempfile
    from pathlib import Path

    from reasonwire.doctor.readers import AGENTS_TABLE

    assert doc.rows is not None
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "session.db"
        shutil.copyfile(doc.path, copy)
        con = sqlite3.connect(copy)
        try:
            for n in sorted(doc.dropped):
                con.execute(f"DELETE FROM {AGENTS_TABLE} WHERE id = ?", (doc.rows[n - 1],))
            for n in sorted(doc.dirty - doc.dropped):
                data = json.dumps(doc.lines[n - 1], ensure_ascii=False)
                con.execute(
                    f"UPDATE {AGENTS_TABLE} SET message_data = ? WHERE id = ?",
                    (data, doc.rows[n - 1]),
                )
            con.commit()
        finally:
            con.close()
        return copy.read_bytes()


def changes_json(changes: Iterable[Change]) -> list[JsonObject]:
    return [c.as_json() for c in changes]
