"""One small reader per session format: file bytes in, :class:`~.model.Document` out, its
conversations holding provider-native history items with their location.

Formats (``--format``): ``claude-code`` (~/.claude/projects JSONL), ``codex`` (Codex CLI
rollout JSONL), ``gemini-cli`` (the CLI's recorded ``.responses`` JSONL of
generateContentStream calls), ``pi`` (pi coding-agent session JSONL), ``kimi-code`` (Kimi
Code wire JSONL), ``request`` (provider request bodies: one JSON body, a list of them, or
JSON lines; the dialect is found by shape or named with ``--format <dialect>``), and
``response`` (a saved answer or stream, decoded by the dialect's own parser, as
``reasonwire inspect`` does). Each layout below was read off the real files in
``../shared/sessions`` (MANIFEST.md names their sources).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from reasonwire.doctor.model import Conversation, Document, Item, Message
from reasonwire.errors import Unreadable
from reasonwire.wire.model import JSON, JsonObject
from reasonwire.wire.registry import get_dialect, names

# -- tables (data) ---------------------------------------------------------------------------

PI_API_DIALECT = {
    # pi-mono packages/ai: the ``api`` field of each assistant message names its wire API
    "anthropic-messages": "anthropic",
    "openai-responses": "responses",
    "openai-completions": "chat",
    "google-generative-ai": "gemini",
}
PI_THINKING_OFF = "off"
"""pi's ``thinkingLevel`` with thinking disabled (session and thinking_level_change records)."""

RESPONSES_USER_TYPES = frozenset(
    {"function_call_output", "custom_tool_call_output", "tool_search_output", "input_text"}
)
"""Responses input item types that are not the model's (besides user/developer messages)."""
INTERACTIONS_USER_TYPES = frozenset({"user_input", "function_result"})


@dataclass(frozen=True)
class Layout:
    """Where a dialect keeps its native items, in a request and in a decoded answer."""

    history: str
    """The request key holding the replayed history."""
    items: str
    """How the history holds items: ``content``/``parts`` (a message's list of blocks or
    parts), ``message`` (the message is the item), ``flat`` (the history is the items)."""
    answer: str
    """Where the native items of a decoded answer sit in its body."""


LAYOUTS = {
    "anthropic": Layout("messages", "content", "$.content"),
    "chat": Layout("messages", "message", "$.choices[0].message"),
    "gemini": Layout("contents", "parts", "$.candidates[0].content.parts"),
    "responses": Layout("input", "flat", "$.output"),
    "interactions": Layout("input", "flat", "$.steps"),
}
HISTORY_KEY = {d: layout.history for d, layout in LAYOUTS.items()}
"""dialect -> the request key holding the replayed history."""
SHARED_KEY_ORDER = {
    # request key -> (the dialect it is when its blocks say so, the dialect otherwise)
    "messages": ("anthropic", "chat"),
    "input": ("interactions", "responses"),
}
USER_TYPES = {"responses": RESPONSES_USER_TYPES, "interactions": INTERACTIONS_USER_TYPES}
REASONING_IN_SIGNATURE = {"responses": True}
"""pi APIs whose thinking block keeps the whole reasoning item as JSON in thinkingSignature
(pi-mono packages/ai openai-responses provider)."""
ANTHROPIC_BLOCKS = frozenset(
    {"thinking", "redacted_thinking", "tool_use", "tool_result", "server_tool_use"}
)
"""Content block types only the Anthropic Messages API uses (tells it from Chat)."""
THINKING_ON = frozenset({"enabled", "adaptive"})
"""Anthropic ``thinking.type`` values that turn thinking on (extended / adaptive thinking)."""

PYDANTIC_AI_DIALECT = {
    # pydantic-ai ``provider_name`` of a ModelResponse / ThinkingPart -> wire dialect; its
    # ThinkingPart.signature is "Anthropic signature, Google thought_signature, OpenAI
    # encrypted_content" (pydantic_ai.messages.ThinkingPart docstring)
    "anthropic": "anthropic",
    "google-gla": "gemini",
    "google-vertex": "gemini",
    "openai": "responses",
}

FORMATS = (
    "claude-code",
    "codex",
    "gemini-cli",
    "gemini-chat",
    "pi",
    "kimi-code",
    "pydantic-ai",
    "agents-sdk",
    "request",
    "response",
)


# -- helpers ---------------------------------------------------------------------------------


def _json_lines(text: str) -> tuple[list[str], list[JSON]]:
    raw = text.splitlines(keepends=True)
    parsed: list[JSON] = []
    for line in raw:
        s = line.strip()
        if not s:
            parsed.append(None)
            continue
        try:
            parsed.append(orjson.loads(s))
        except orjson.JSONDecodeError:
            parsed.append(_loads(s))  # what orjson refuses and json takes (NaN, big ints)
    return raw, parsed


SQLITE_MAGIC = b"SQLite format 3\x00"


def _loads(text: str) -> JSON:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _whole(text: str) -> JSON:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _records(doc: Document) -> Iterator[tuple[int, JsonObject]]:
    for n, rec in enumerate(doc.lines, 1):
        if isinstance(rec, dict):
            yield n, rec


def _str(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


# -- claude code -----------------------------------------------------------------------------


def read_claude_code(doc: Document) -> None:
    """``type: user|assistant`` records hold ``message`` (Anthropic Messages shape). One API
    message may span several records (one per content block, same ``message.id``); they are
    joined back into one message."""
    msgs: list[Message] = []
    last_id: str | None = None
    thinking = False
    for n, rec in _records(doc):
        message = rec.get("message")
        if rec.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue
        role = "assistant" if message.get("role") == "assistant" else "user"
        content = message.get("content")
        items: list[Item] = []
        if isinstance(content, list):
            for i, block in enumerate(content):
                items.append(Item(block, f"$.message.content[{i}]", n, block, content, n))
                if isinstance(block, dict) and block.get("type") == "thinking":
                    thinking = True
        mid = _str(message.get("id"))
        if role == "assistant" and msgs and msgs[-1].role == role and mid and mid == last_id:
            msgs[-1].items.extend(items)
        else:
            msgs.append(
                Message(role, items, "anthropic", n, "$.message", _str(message.get("model")))
            )
        last_id = mid if role == "assistant" else None
    doc.conversations.append(Conversation(msgs, thinking=thinking or None))


# -- codex -----------------------------------------------------------------------------------


def _flat_role(item: JSON, user_types: frozenset[str]) -> str:
    """Whose a flat history item is: a message by its role, anything else by its type."""
    if not isinstance(item, dict):
        return "user"
    if item.get("type") == "message" or "role" in item:
        return "assistant" if item.get("role") in ("assistant", "model") else "user"
    return "user" if item.get("type") in user_types else "assistant"


def _responses_role(item: JSON) -> str:
    return _flat_role(item, RESPONSES_USER_TYPES)


def _group(items: list[tuple[Item, str]], dialect: str) -> list[Message]:
    """Consecutive items of one role become one message (a Responses turn is its items)."""
    out: list[Message] = []
    for item, role in items:
        if out and out[-1].role == role:
            out[-1].items.append(item)
        else:
            out.append(Message(role, [item], dialect, item.line, item.path))
    return out


CODEX_STORE = False
"""Codex CLI sends ``store: false`` and asks for ``reasoning.encrypted_content`` (codex-rs
core client, ``store: false`` with ``include``); its rollouts keep the sealed reasoning for
replay, so a reasoning item without usable encrypted_content cannot be resolved."""


def read_codex(doc: Document) -> None:
    """``response_item`` payloads are Responses input items; a ``compacted`` record replaces
    the history with its ``replacement_history`` (a new conversation from there)."""
    current: list[tuple[Item, str]] = []
    convs: list[list[tuple[Item, str]]] = [current]
    for n, rec in _records(doc):
        payload = rec.get("payload")
        if rec.get("type") == "response_item" and isinstance(payload, dict):
            current.append(
                (Item(payload, "$.payload", n, payload, None, n), _responses_role(payload))
            )
        elif rec.get("type") == "compacted" and isinstance(payload, dict):
            history = payload.get("replacement_history")
            current = []
            convs.append(current)
            if isinstance(history, list):
                for i, it in enumerate(history):
                    path = f"$.payload.replacement_history[{i}]"
                    current.append((Item(it, path, n, it, history, n), _responses_role(it)))
    for items in convs:
        if items:
            doc.conversations.append(Conversation(_group(items, "responses"), store=CODEX_STORE))


# -- gemini cli ------------------------------------------------------------------------------


def read_gemini_cli(doc: Document) -> None:
    """Each line is one model call (``{"method", "response": [chunks]}``): one step, its
    parts gathered from every chunk's first candidate in order."""
    msgs: list[Message] = []
    for n, rec in _records(doc):
        chunks = rec.get("response")
        if not isinstance(chunks, list):
            continue
        items: list[Item] = []
        for ci, chunk in enumerate(chunks):
            cands = chunk.get("candidates") if isinstance(chunk, dict) else None
            if not isinstance(cands, list) or not cands or not isinstance(cands[0], dict):
                continue
            parts = (cands[0].get("content") or {}).get("parts")
            if isinstance(parts, list):
                for pi, part in enumerate(parts):
                    path = f"$.response[{ci}].candidates[0].content.parts[{pi}]"
                    items.append(Item(part, path, n, part, parts, n))
        msgs.append(Message("assistant", items, "gemini", n, "$.response"))
    doc.conversations.append(Conversation(msgs))


# -- pi --------------------------------------------------------------------------------------


def _pi_item(block: JSON, dialect: str) -> tuple[JSON, dict[str, str]]:
    """A pi content block as the native item of its API (and the key renames)."""
    if not isinstance(block, dict):
        return block, {}
    typ = block.get("type")
    if typ == "thinking":
        sig = block.get("thinkingSignature")
        if REASONING_IN_SIGNATURE.get(dialect, False):
            try:
                item = json.loads(sig) if isinstance(sig, str) else None
            except json.JSONDecodeError:
                item = None
            return (item if isinstance(item, dict) else {"type": "reasoning"}), {}
        value: JsonObject = {"type": "thinking", "thinking": block.get("thinking")}
        if "thinkingSignature" in block:
            value["signature"] = sig
        return value, {"signature": "thinkingSignature"}
    if typ == "toolCall":
        return {"type": "tool_use", "id": block.get("id")}, {}
    return block, {}


def read_pi(doc: Document) -> None:
    """``message`` records: user, assistant (``api`` names the wire API of that turn;
    ``thinking``/``thinkingSignature``/``toolCall`` blocks), toolResult. ``thinkingLevel``
    (session header, thinking_level_change) says whether thinking was on."""
    msgs: list[Message] = []
    level: str | None = None
    for n, rec in _records(doc):
        if "thinkingLevel" in rec:
            level = _str(rec.get("thinkingLevel"))
        message = rec.get("message")
        if rec.get("type") != "message" or not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if role == "assistant":
            dialect = PI_API_DIALECT.get(str(message.get("api")), "anthropic")
            items = []
            for i, block in enumerate(blocks):
                value, keys = _pi_item(block, dialect)
                items.append(Item(value, f"$.message.content[{i}]", n, block, blocks, n, keys))
            msgs.append(
                Message(
                    "assistant",
                    items,
                    dialect,
                    n,
                    "$.message",
                    _str(message.get("model")),
                    _str(message.get("provider")),
                )
            )
        elif role == "toolResult":
            value = {"type": "tool_result", "tool_use_id": message.get("toolCallId")}
            msgs.append(
                Message("user", [Item(value, "$.message", n, message, None, n)], "anthropic", n)
            )
        else:
            msgs.append(Message("user", [], "anthropic", n))
    thinking = None if level is None else level != PI_THINKING_OFF
    doc.conversations.append(Conversation(msgs, thinking=thinking))


# -- kimi code -------------------------------------------------------------------------------


def read_kimi_code(doc: Document) -> None:
    """``context.append_loop_event`` events of one (turnId, step) make one assistant Chat
    message: ``think`` parts are its reasoning_content, ``text`` its content, ``tool.call``
    its tool_calls; ``tool.result`` events are tool messages. ``llm.request.provider``
    names the route (a Chat profile of the wire dialect)."""
    msgs: list[Message] = []
    steps: dict[tuple[str, str], Message] = {}
    provider: str | None = None
    for n, rec in _records(doc):
        typ = rec.get("type")
        if typ == "llm.request":
            provider = _str(rec.get("provider")) or provider
            continue
        if typ == "context.append_message":
            msgs.append(Message("user", [], "chat", n))
            continue
        event = rec.get("event")
        if typ != "context.append_loop_event" or not isinstance(event, dict):
            continue
        etype = event.get("type")
        key = (str(event.get("turnId")), str(event.get("step")))
        if etype == "tool.result":
            value = {"role": "tool", "tool_call_id": event.get("toolCallId")}
            msgs.append(Message("user", [Item(value, "$.event", n, event, None, n)], "chat", n))
            continue
        if etype not in ("content.part", "tool.call"):
            continue
        msg = steps.get(key)
        if msg is None:
            value = {"role": "assistant", "content": ""}
            msg = Message("assistant", [Item(value, "$.event", n, event, None, n)], "chat", n)
            steps[key] = msg
            msgs.append(msg)
        native = msg.items[0].value
        part = event.get("part") if etype == "content.part" else None
        if isinstance(part, dict) and part.get("type") == "think":
            native["reasoning_content"] = native.get("reasoning_content", "") + str(
                part.get("think", "")
            )
        elif isinstance(part, dict) and part.get("type") == "text":
            native["content"] += str(part.get("text", ""))
        elif etype == "tool.call":
            native.setdefault("tool_calls", []).append(
                {"id": event.get("toolCallId"), "type": "function"}
            )
    profiles = get_dialect("chat").profiles
    profile = provider if provider in profiles else None
    doc.conversations.append(Conversation(msgs, profile=profile))


# -- pydantic-ai -----------------------------------------------------------------------------


def _pai_views(parts: list[JSON], dialect: str) -> list[tuple[JSON, dict[str, str], JSON]]:
    """(native view, key renames, file object) of one ModelResponse's parts: a signed
    ThinkingPart is the dialect's carrier item; for Gemini the signature belongs on the
    part after it (pydantic-ai's google model sends a ThinkingPart's signature as the next
    part's thought_signature), so the view of that part carries it, pointing at the
    ThinkingPart as the object a repair edits."""
    out: list[tuple[JSON, dict[str, str], JSON]] = []
    carry: JsonObject | None = None
    on_next = PAI_SIGNATURE_ON_NEXT.get(dialect, False)
    for part in parts:
        kind = part.get("part_kind") if isinstance(part, dict) else None
        sig = part.get("signature") if isinstance(part, dict) else None
        key = PAI_SIGNED_KEY[dialect]
        view: JsonObject = {"type": kind}
        keys: dict[str, str] = {}
        origin: JSON = part
        if kind == "thinking" and sig is not None:
            view = dict(PAI_SIGNED[dialect])
            if on_next:
                carry = part
            else:
                view[key], keys = sig, {key: "signature"}
                view["id"] = part.get("id")
        elif kind == "tool-call":
            view = dict(PAI_TOOL_CALL[dialect])
            if carry is not None:
                view[key], keys, origin = carry["signature"], {key: "signature"}, carry
            carry = None
        elif kind == "tool-return":
            view = dict(PAI_TOOL_RESULT[dialect])
        out.append((view, keys, origin))
    return out


PAI_SIGNED: dict[str, JsonObject] = {
    "anthropic": {"type": "thinking"},
    "gemini": {"thought": True},
    "responses": {"type": "reasoning"},
}
PAI_SIGNED_KEY = {
    "anthropic": "signature",
    "gemini": "thoughtSignature",
    "responses": "encrypted_content",
}
PAI_SIGNATURE_ON_NEXT = {"gemini": True}
PAI_TOOL_CALL: dict[str, JsonObject] = {
    "anthropic": {"type": "tool_use"},
    "gemini": {"functionCall": {}},
    "responses": {"type": "function_call", "id": "fc"},
}
PAI_TOOL_RESULT: dict[str, JsonObject] = {
    "anthropic": {"type": "tool_result"},
    "gemini": {"functionResponse": {}},
    "responses": {"type": "function_call_output"},
}


def read_pydantic_ai(doc: Document) -> None:
    """A pydantic-ai message history dump (``ModelMessagesTypeAdapter``): a JSON list of
    ``{"kind": "request"|"response", "parts": [...]}``; a response's ``provider_name``
    says whose carriers its parts hold."""
    history = doc.whole
    if not isinstance(history, list):
        raise Unreadable(f"{doc.path.name}: a pydantic-ai history is a JSON list")
    msgs: list[Message] = []
    dialect = "anthropic"
    signed = False  # a signed Anthropic thinking block: thinking was on
    for i, m in enumerate(history):
        if not isinstance(m, dict) or not isinstance(m.get("parts"), list):
            continue
        parts = m["parts"]
        named = PYDANTIC_AI_DIALECT.get(str(m.get("provider_name")))
        dialect = named or dialect
        role = "assistant" if m.get("kind") == "response" else "user"
        items = []
        views = _pai_views(parts, dialect)
        for j, (view, keys, origin) in enumerate(views):
            k = next((n for n, p in enumerate(parts) if p is origin), j)  # where it is written
            items.append(Item(view, f"$[{i}].parts[{k}]", None, origin, parts, None, keys))
            signed = signed or (view.get("type") == "thinking" and "signature" in view)
        if role == "user":  # a user prompt starts a new turn: no items the rules read
            items = [it for it in items if it.value.get("type") != "user-prompt"]
        msgs.append(Message(role, items, dialect, None, f"$[{i}]", _str(m.get("model_name"))))
    doc.conversations.append(Conversation(msgs, thinking=signed or None))


def read_gemini_chat(doc: Document) -> None:
    """A Gemini CLI saved chat (``/chat save <tag>`` writes ``checkpoint-<tag>.json``): the
    history as the API's ``Content[]``, ``JSON.stringify(conversation, null, 2)`` (gemini-cli
    ``packages/core/src/core/logger.ts``, ``saveCheckpoint``): generateContent contents, with
    every ``thoughtSignature`` on the part it came on."""
    history = doc.whole
    if not isinstance(history, list):
        raise Unreadable(f"{doc.path.name}: a Gemini CLI saved chat is a JSON list")
    msgs: list[Message] = []
    for i, entry in enumerate(history):
        if not isinstance(entry, dict) or not isinstance(entry.get("parts"), list):
            continue
        parts = entry["parts"]
        role = "assistant" if entry.get("role") == "model" else "user"
        items = [Item(p, f"$[{i}].parts[{j}]", None, p, parts, None) for j, p in enumerate(parts)]
        msgs.append(Message(role, items, "gemini", None, f"$[{i}]"))
    doc.conversations.append(Conversation(msgs))


def _is_gemini_chat(rec: JsonObject) -> bool:
    return rec.get("role") in ("user", "model") and isinstance(rec.get("parts"), list)


def _is_pydantic_ai(rec: JsonObject) -> bool:
    return rec.get("kind") in ("request", "response") and isinstance(rec.get("parts"), list)


# -- OpenAI Agents SDK -----------------------------------------------------------------------

AGENTS_ITEM_TYPES = frozenset(
    {"message", "reasoning", "function_call", "function_call_output", "item_reference"}
)
"""Responses input item types (``TResponseInputItem``) an Agents SDK session stores."""
AGENTS_TABLE = "agent_messages"
"""SQLiteSession's default table: one ``message_data`` JSON item per row (openai-agents
src/agents/memory/sqlite_session.py)."""


def read_agents_sdk(doc: Document) -> None:
    """Agents SDK session items (``session.get_items()`` as a JSON list or JSON lines, or
    a SQLiteSession database, rows read as lines): Responses input items in order."""
    entries: list[tuple[int | None, str, JSON, list[JSON] | None]]
    if doc.line_oriented:
        entries = [(n, "$", rec, None) for n, rec in _records(doc)]
    elif isinstance(doc.whole, list):
        entries = [(None, f"$[{i}]", it, doc.whole) for i, it in enumerate(doc.whole)]
    else:
        raise Unreadable(f"{doc.path.name}: Agents SDK items are a JSON list")
    pairs = []
    for n, path, it, container in entries:
        line: int | None = n
        if doc.rows is not None and n is not None:  # a database row: its id, not a line
            path, line = f"{AGENTS_TABLE}[id={doc.rows[n - 1]}]", None
        item = Item(it, path, line, it, container, n)
        pairs.append((item, _responses_role(it)))
    doc.conversations.append(Conversation(_group(pairs, "responses")))


LIST_ONLY = frozenset({"agents-sdk", "gemini-chat"})
"""Formats detected only in a JSON list (their items look like other formats' records;
JSON lines of them need ``--format``)."""


def _is_agents_item(rec: JsonObject) -> bool:
    return rec.get("type") in AGENTS_ITEM_TYPES or (
        "role" in rec and "content" in rec and "parts" not in rec and "message" not in rec
    )


def sqlite_rows(path: Path) -> list[tuple[int, str]]:
    """(rowid, message_data) of an Agents SDK SQLite session, in order."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = con.execute(f"SELECT id, message_data FROM {AGENTS_TABLE} ORDER BY id")
            return [(int(r[0]), str(r[1])) for r in rows]
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise Unreadable(f"{path.name}: not an Agents SDK session database ({exc})") from None


# -- plain request bodies --------------------------------------------------------------------


def request_dialect(body: JSON) -> str | None:
    """The dialect of a request body, by its history key and block shapes."""
    if not isinstance(body, dict):
        return None
    found = [d for d, key in HISTORY_KEY.items() if isinstance(body.get(key), list)]
    if len(found) <= 1:
        return found[0] if found else None
    history = body.get(HISTORY_KEY[found[0]]) or []
    blocks = {
        b.get("type")
        for m in history
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict)
    }
    steps = {i.get("type") for i in history if isinstance(i, dict)}
    marked, other = SHARED_KEY_ORDER[HISTORY_KEY[found[0]]]
    says = bool(blocks & ANTHROPIC_BLOCKS) or isinstance(body.get("thinking"), dict)
    says = says or bool(steps & INTERACTIONS_USER_TYPES)
    return marked if says else other


def _profile_for(model: JSON) -> str | None:
    """The Chat profile a model name belongs to (the longest profile name it contains)."""
    if not isinstance(model, str):
        return None
    hits = [p for p in get_dialect("chat").profiles if p in model.lower()]
    return max(hits, key=len) if hits else None


def _request_conversation(
    body: JsonObject, dialect: str, prefix: str, line: int | None, profile: str | None
) -> Conversation:
    key = HISTORY_KEY[dialect]
    history = body.get(key)
    assert isinstance(history, list)
    msgs: list[Message] = []
    layout = LAYOUTS[dialect].items
    flat = layout == "flat"
    pairs: list[tuple[Item, str]] = []
    for i, entry in enumerate(history):
        path = f"{prefix}.{key}[{i}]"
        if flat:
            role = _flat_role(entry, USER_TYPES[dialect])
            pairs.append((Item(entry, path, line, entry, history, line), role))
            continue
        if not isinstance(entry, dict):
            continue
        role = "assistant" if entry.get("role") in ("assistant", "model") else "user"
        if layout == "message":
            items = [Item(entry, path, line, entry, history, line)]
            msgs.append(Message(role, items, dialect, line, path))
            continue
        seq = entry.get(layout)
        items = []
        if isinstance(seq, list):
            for j, it in enumerate(seq):
                items.append(Item(it, f"{path}.{layout}[{j}]", line, it, seq, line))
        msgs.append(Message(role, items, dialect, line, path))
    if flat:
        msgs = _group(pairs, dialect)
    thinking_cfg = body.get("thinking")
    thinking = isinstance(thinking_cfg, dict) and thinking_cfg.get("type") in THINKING_ON
    state = get_dialect(dialect).server_state
    store = body.get(state.store_field) if state is not None else None
    return Conversation(
        msgs,
        thinking=thinking,
        store=store if isinstance(store, bool) else None,
        profile=profile or _profile_for(body.get("model")),
    )


def read_requests(doc: Document, dialect: str | None, profile: str | None) -> None:
    """Request bodies: a JSON object, a list of them, or one per line."""
    bodies: list[tuple[int | None, str, JSON]]
    if doc.line_oriented:
        bodies = [(n, "$", rec) for n, rec in _records(doc)]
    elif isinstance(doc.whole, list):
        bodies = [(None, f"$[{i}]", b) for i, b in enumerate(doc.whole)]
    else:
        bodies = [(None, "$", doc.whole)]
    for n, prefix, body in bodies:
        d = dialect or request_dialect(body)
        if (
            d is None
            or not isinstance(body, dict)
            or not isinstance(body.get(HISTORY_KEY[d]), list)
        ):
            raise Unreadable(f"{doc.path.name}: {prefix} is not a request body of any dialect")
        doc.conversations.append(_request_conversation(body, d, prefix, n, profile))


# -- saved answers and streams ---------------------------------------------------------------


def read_response(doc: Document, data: bytes, dialect: str | None) -> None:
    """A response body or stream capture, decoded by the dialect (``reasonwire inspect``)."""
    from reasonwire.doctor.inspect import inspect_bytes
    from reasonwire.errors import ReasonwireError

    try:
        ins = inspect_bytes(data, dialect)
    except ReasonwireError as exc:
        raise Unreadable(f"{doc.path.name}: {exc}") from None
    d = ins.dialect
    known = LAYOUTS.get(d)
    prefix = known.answer if known else "$"
    native = list(ins.turn.native.items)
    whole = known is not None and known.items == "message"
    items = [Item(v, prefix if whole else f"{prefix}[{i}]", None) for i, v in enumerate(native)]
    doc.conversations.append(Conversation([Message("assistant", items, d, None, prefix)]))


# -- detection -------------------------------------------------------------------------------


def _is_claude_code(rec: JsonObject) -> bool:
    return "sessionId" in rec or ("parentUuid" in rec and "message" in rec)


def _is_codex(rec: JsonObject) -> bool:
    return "payload" in rec and rec.get("type") in (
        "session_meta", "response_item", "turn_context", "event_msg", "compacted"
    )  # fmt: skip


def _is_gemini_cli(rec: JsonObject) -> bool:
    return "method" in rec and isinstance(rec.get("response"), list)


def _is_pi(rec: JsonObject) -> bool:
    msg = rec.get("message")
    return (rec.get("type") == "session" and "cwd" in rec and "sessionId" not in rec) or (
        rec.get("type") == "message" and isinstance(msg, dict) and "api" in msg
    )


def _is_kimi(rec: JsonObject) -> bool:
    typ = rec.get("type")
    return isinstance(typ, str) and (
        typ.startswith("context.") or typ.startswith("llm.") or "protocol_version" in rec
    )


def _is_request(rec: JsonObject) -> bool:
    return request_dialect(rec) is not None


DETECT: tuple[tuple[str, Callable[[JsonObject], bool]], ...] = (
    ("pydantic-ai", _is_pydantic_ai),
    ("codex", _is_codex),
    ("gemini-cli", _is_gemini_cli),
    ("gemini-chat", _is_gemini_chat),
    ("pi", _is_pi),
    ("kimi-code", _is_kimi),
    ("claude-code", _is_claude_code),
    ("request", _is_request),
    ("agents-sdk", _is_agents_item),
)
"""Session formats in detection order, each with a test on one record."""


def detect_format(doc: Document) -> str:
    """The format whose record test most of the first 50 records pass; ``response`` else."""
    recs = [r for _, r in _records(doc)][:50]
    if not doc.line_oriented:
        recs = doc.whole[:50] if isinstance(doc.whole, list) else [doc.whole]
        recs = [r for r in recs if isinstance(r, dict)]
    best, score = "response", 0
    for name, test in DETECT:
        if name in LIST_ONLY and not isinstance(doc.whole, list):
            continue
        hits = sum(1 for r in recs if test(r))
        if hits > score:
            best, score = name, hits
    return best


WHOLE_READERS: dict[str, Callable[[Document], None]] = {"pydantic-ai": read_pydantic_ai}
"""Readers of formats that are one JSON document."""
READERS: dict[str, Callable[[Document], None]] = {
    "claude-code": read_claude_code,
    "codex": read_codex,
    "gemini-cli": read_gemini_cli,
    "pi": read_pi,
    "kimi-code": read_kimi_code,
}
WHOLE_READERS["agents-sdk"] = read_agents_sdk
WHOLE_READERS["gemini-chat"] = read_gemini_chat


def parse(path: Path, data: bytes, fmt: str | None = None, profile: str | None = None) -> Document:
    """Read ``data`` (the bytes of ``path``) in format ``fmt`` (None: detect). A dialect name
    as ``fmt`` means request bodies of that dialect."""
    if data.startswith(SQLITE_MAGIC):
        rows = sqlite_rows(path)
        doc = Document(path, "agents-sdk")
        doc.rows = [r for r, _ in rows]
        doc.raw_lines = [t + "\n" for _, t in rows]
        doc.lines = [_loads(t) for _, t in rows]
        read_agents_sdk(doc)
        return doc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise Unreadable(f"{path.name}: the file is empty")
    doc = Document(path, fmt or "")
    try:
        doc.whole = _whole(text)
        doc.line_oriented = False
    except json.JSONDecodeError:
        doc.raw_lines, doc.lines = _json_lines(text)
        if not any(isinstance(r, dict) for r in doc.lines):
            if fmt is None or fmt == "response":
                doc.format = "response"
                read_response(doc, data, None)
                return doc
            raise Unreadable(f"{path.name}: neither JSON nor JSON lines") from None
    dialect = fmt if fmt in names() else None
    chosen = "request" if dialect else (fmt or detect_format(doc))
    doc.format = fmt or chosen
    if chosen == "request":
        read_requests(doc, dialect, profile)
    elif chosen == "response":
        read_response(doc, data, None)
    elif chosen in WHOLE_READERS:
        WHOLE_READERS[chosen](doc)
    elif chosen in READERS:
        if not doc.line_oriented:
            raise Unreadable(f"{path.name}: a {chosen} session is JSON lines")
        READERS[chosen](doc)
    else:
        raise Unreadable(f"unknown format {fmt!r}; expected one of: {', '.join(FORMATS + names())}")
    return doc
