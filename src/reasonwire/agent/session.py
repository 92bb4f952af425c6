"""The per-user-turn session: the wire-level tail of one tool loop.

A :class:`Session` starts with the conversation before the turn plus the new user message and
holds, for this turn only, every assistant step as received (``Turn.as_message()``, native
payload and carriers) and the tool results sent after it. Each request is built from that
state by the dialect, so every carrier goes back exactly as it arrived; the session ends with
the turn and never enters the neutral transcript.

State changes only on success: :meth:`prepare` builds and encodes the next request body once
and caches the bytes; :meth:`commit` (a parsed answer) and :meth:`add_results` (tool results)
are the only mutations and both drop the cache. A request that fails leaves the session as it
was, so sending again sends the very same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reasonwire.agent.models import Model
from reasonwire.agent.strategy import Strategy, strategy_for
from reasonwire.errors import MalformedBody
from reasonwire.http import encode_body
from reasonwire.wire.fold import fold_request
from reasonwire.wire.model import (
    Message,
    RequestOptions,
    ToolResult,
    ToolSpec,
    Turn,
)


@dataclass(frozen=True, slots=True)
class Prepared:
    """One request ready to send: the URL and the exact body bytes."""

    url: str
    body: bytes
    stream: bool


class Session:
    """Wire state of one user turn (see the module docstring)."""

    def __init__(
        self,
        model: Model,
        history: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        strategy: Strategy | None = None,
        previous_id: str | None = None,
        since: Sequence[Message] | None = None,
    ) -> None:
        """``history`` ends with the new user message. ``previous_id`` (server state only)
        continues a stored conversation, sending ``since`` (default: the last message)."""
        self.model = model
        self.strategy = strategy or strategy_for(model)
        self._tools = tuple(tools)
        self._history: tuple[Message, ...] = tuple(history)
        self._tail: list[Message] = []
        self._previous = previous_id if self.strategy.kind == "server_state" else None
        if self._previous is not None:
            self._since: list[Message] = list(since if since is not None else self._history[-1:])
        else:
            self._since = []
        self._turns: list[Turn] = []
        self._cache: Prepared | None = None
        self._extra = dict(model.extra_body)
        self._extra.update(self.strategy.body_fields)

    @property
    def turns(self) -> tuple[Turn, ...]:
        """Every answer committed in this turn, in order."""
        return tuple(self._turns)

    @property
    def tail(self) -> tuple[Message, ...]:
        """The wire-level tail: assistant steps with their native payloads, tool results."""
        return tuple(self._tail)

    @property
    def previous_id(self) -> str | None:
        return self._previous

    @property
    def user(self) -> Message:
        """The message that opened this turn."""
        return self._history[-1]

    def messages(self) -> list[Message]:
        """The transcript the next request is built from."""
        if self._previous is not None:
            return list(self._since)
        return [*self._history, *self._tail]

    def prepare(self, *, stream: bool = False) -> Prepared:
        """The next request (built once per state; a retry gets the same bytes)."""
        cached = self._cache
        if cached is not None and cached.stream == stream:
            return cached
        extra = self._extra
        if self._previous is not None:
            assert self.strategy.previous_field is not None
            extra = {**extra, self.strategy.previous_field: self._previous}
        options = RequestOptions(
            model=self.model.name,
            max_tokens=self.model.max_tokens,
            effort=self.model.effort,
            tools=self._tools,
            stream=stream,
            extra_body=extra,
        )
        dialect = self.model.dialect
        body = dialect.build_request(self.messages(), options, self.strategy.profile)
        if self.model.fold is not None:  # Stage 1 fold of replayed reasoning text (off by default)
            body, _ = fold_request(dialect, body, self.model.fold, route=self.model.route.name)
        prepared = Prepared(
            self.model.url(dialect.request_path(options)), encode_body(body), stream
        )
        self._cache = prepared
        return prepared

    def commit(self, turn: Turn) -> None:
        """Record a successful answer: its native payload joins the tail."""
        if self.strategy.kind == "server_state" and not turn.response_id:
            raise MalformedBody(
                "the answer has no response id, so the stored conversation cannot be "
                "continued (use store=False)"
            )
        self._turns.append(turn)
        self._tail.append(turn.as_message())
        if self.strategy.kind == "server_state":
            self._previous = turn.response_id
            self._since = []
        self._cache = None

    def add_results(self, results: Sequence[ToolResult]) -> None:
        """Tool results for the last answer's calls, in call order."""
        self._tail.extend(results)
        if self._previous is not None:
            self._since.extend(results)
        self._cache = None


__all__ = ["Prepared", "Session"]
