"""The agent: a tool loop over a :class:`~reasonwire.agent.session.Session` per user turn.

``Agent.run(text)`` sends the turn, executes every tool call of an answer (parallel calls of
one step all run, results go back together in call order), and repeats until an answer
without calls. Application code never sees response ids, thinking blocks, signatures or
reasoning items: they live in the session and end with the turn. What the agent keeps across
turns is the neutral transcript (system text, user text, assistant text and function calls,
tool results), unless an opt-in :class:`CrossTurnPolicy` says the (route, model) consumes
carriers in later turns, in which case the native steps are kept as well.

A run that fails (a typed error from the provider or the transport) leaves the transcript
unchanged. To resume instead of restarting, drive the session yourself:
``s = agent.session(text)``; ``agent.run_session(s)``; on failure call it again: the session
sends the same bytes it sent before, because only successful answers change it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reasonwire.agent.models import Model
from reasonwire.agent.policy import CrossTurnPolicy
from reasonwire.agent.session import Session
from reasonwire.agent.tools import Tool, arun_call, as_tools, run_call
from reasonwire.agent.transport import EventSink, asend, send
from reasonwire.errors import ReasonwireError
from reasonwire.http import make_async_client
from reasonwire.wire.model import Assistant, Message, System, ToolCall, ToolResult, Usage, User


class ToolLoopLimit(ReasonwireError):
    """The model kept calling tools past ``max_rounds``."""


@dataclass(frozen=True)
class RunResult:
    """The final answer, the neutral transcript so far, and per-request usage of this run."""

    answer: str
    transcript: tuple[Message, ...]
    rounds: int
    usage: tuple[Usage | None, ...]


def _neutral(msg: Message) -> Message:
    if isinstance(msg, Assistant):
        return Assistant(text=msg.text, tool_calls=msg.tool_calls)
    return msg


def _pending(session: Session) -> tuple[ToolCall, ...]:
    """Calls of the last answer still waiting for results."""
    tail = session.tail
    if tail and isinstance(tail[-1], Assistant):
        return tail[-1].tool_calls
    return ()


class Agent:
    """A model, its tools, and the neutral conversation so far."""

    def __init__(
        self,
        model: Model,
        tools: Sequence[Any] = (),
        *,
        system: str | None = None,
        max_rounds: int = 16,
        cross_turn: CrossTurnPolicy | None = None,
    ) -> None:
        self.model = model
        self.tools: dict[str, Tool] = as_tools(tools)
        self._specs = tuple(t.spec for t in self.tools.values())
        self.max_rounds = max_rounds
        self.cross_turn = cross_turn
        start: list[Message] = [System(system)] if system else []
        self._transcript: list[Message] = list(start)
        self._wire: list[Message] = list(start)
        self._last_id: str | None = None

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The provider-neutral conversation: visible text and function calls only."""
        return tuple(self._transcript)

    def _keeps(self) -> bool:
        pol = self.cross_turn
        return pol is not None and pol.keeps(self.model.route.name, self.model.name)

    def session(self, user_text: str) -> Session:
        """A fresh session for one user turn (nothing is sent yet)."""
        user = User(user_text)
        if self._keeps():
            return Session(self.model, [*self._wire, user], self._specs, previous_id=self._last_id)
        return Session(self.model, [*self._transcript, user], self._specs)

    def _finish(self, session: Session) -> RunResult:
        turns = session.turns
        user = session.user
        self._transcript.append(user)
        self._transcript.extend(_neutral(m) for m in session.tail)
        if self._keeps():
            self._wire.append(user)
            self._wire.extend(session.tail)
            self._last_id = turns[-1].response_id
        rounds = sum(1 for t in turns if t.tool_calls)
        return RunResult(
            answer=turns[-1].text,
            transcript=tuple(self._transcript),
            rounds=rounds,
            usage=tuple(t.usage for t in turns),
        )

    def _check_rounds(self, session: Session) -> None:
        if sum(1 for t in session.turns if t.tool_calls) > self.max_rounds:
            raise ToolLoopLimit(f"the model was still calling tools after {self.max_rounds} rounds")

    # -- sync ---------------------------------------------------------------------------

    def run_session(
        self, session: Session, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """Drive ``session`` to a final answer (resumable after a failure)."""
        while True:
            calls = _pending(session)
            if calls:
                self._check_rounds(session)
                session.add_results([run_call(self.tools, c) for c in calls])
            turn = send(self.model, session.prepare(stream=stream), on_event)
            session.commit(turn)
            if not turn.tool_calls:
                return self._finish(session)

    def run(
        self, user_text: str, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """Run one user turn to its final answer (``stream`` uses the streaming endpoint;
        ``on_event`` sees every stream event: text, reasoning and tool-call deltas...)."""
        return self.run_session(self.session(user_text), stream=stream, on_event=on_event)

    # -- async --------------------------------------------------------------------------

    async def arun_session(
        self, session: Session, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """The async twin of :meth:`run_session`; parallel calls run concurrently."""
        own = self.model.own_async_client()
        if own is not None:
            return await self._adrive(session, own, stream, on_event)
        async with make_async_client() as client:
            return await self._adrive(session, client, stream, on_event)

    async def _adrive(
        self, session: Session, client: Any, stream: bool, on_event: EventSink | None
    ) -> RunResult:
        while True:
            calls = _pending(session)
            if calls:
                self._check_rounds(session)
                results: list[ToolResult] = list(
                    await asyncio.gather(*(arun_call(self.tools, c) for c in calls))
                )
                session.add_results(results)
            turn = await asend(self.model, session.prepare(stream=stream), client, on_event)
            session.commit(turn)
            if not turn.tool_calls:
                return self._finish(session)

    async def arun(
        self, user_text: str, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """The async twin of :meth:`run`."""
        return await self.arun_session(self.session(user_text), stream=stream, on_event=on_event)


__all__ = ["Agent", "RunResult", "ToolLoopLimit"]
