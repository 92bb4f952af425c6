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

The loop's steps are written once, in httpx's auth-flow shape: :meth:`Agent._flow` is a
generator that yields what to do next (run these tool calls, send this request) and receives
what came back (the results, the answer), without I/O; a sync and an async driver run the
steps and yield the typed events (:mod:`reasonwire.agent.events`) ending with the result.
``run`` and ``arun`` drain a driver; ``stream`` and ``astream`` hand it to the caller, who
pulls the run along: nothing is sent before the first event is asked for, and a caller that
stops iterating (``break``, ``close()``, ``contextlib.aclosing``) stops the run where it is:
the request in flight is closed, no further tool runs, and nothing keeps running behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Sequence,
)
from contextlib import aclosing, asynccontextmanager, closing
from dataclasses import dataclass, replace
from typing import TypeAlias

import httpx

from reasonwire.agent.events import (
    AgentEvent,
    ResultEvent,
    RunResult,
    ToolResultEvent,
    agent_events,
)
from reasonwire.agent.models import Model
from reasonwire.agent.policy import CrossTurnPolicy
from reasonwire.agent.session import Prepared, Session
from reasonwire.agent.tools import Tool, arun_call, as_tools, run_call
from reasonwire.agent.transport import EventSink, aexchange, answer, exchange
from reasonwire.errors import ToolLoopLimit
from reasonwire.http import make_async_client
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.model import (
    Assistant,
    Message,
    StreamEvent,
    System,
    ToolCall,
    ToolResult,
    ToolSpec,
    Turn,
    User,
)

_ToolLike: TypeAlias = Tool | Callable[..., object] | tuple[Callable[..., object], ToolSpec]
"""What ``Agent(tools=...)`` takes: a :class:`Tool`, a plain callable, or a (callable, spec)."""


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


@dataclass(frozen=True, slots=True)
class _RunTools:
    """Step: run ``calls`` (asked for by request ``request``); reply with their results in
    call order."""

    calls: tuple[ToolCall, ...]
    request: int


@dataclass(frozen=True, slots=True)
class _Send:
    """Step: send ``prepared`` as request number ``request``; reply with its answer."""

    prepared: Prepared
    request: int


_Step: TypeAlias = _RunTools | _Send
_Reply: TypeAlias = tuple[ToolResult, ...] | Turn
_Flow: TypeAlias = Generator[_Step, _Reply, RunResult]


def _advance(flow: _Flow, reply: _Reply) -> _Step | RunResult:
    """The flow's next step after ``reply``, or the run's result when it is done."""
    try:
        return flow.send(reply)
    except StopIteration as end:
        result: RunResult = end.value
        return result


def _observed(wire: StreamEvent, step: _Send, on_event: EventSink | None) -> Iterator[AgentEvent]:
    """What the caller sees of one wire event: ``on_event`` gets it (streams only), then the
    agent events it stands for."""
    if on_event is not None and step.prepared.stream:
        on_event(wire)
    return agent_events(wire, step.request)


def _result(events: Iterable[AgentEvent]) -> RunResult:
    for event in events:
        if isinstance(event, ResultEvent):
            return event.result
    raise AssertionError("a run ends with its result")  # pragma: no cover


@asynccontextmanager
async def _async_client(model: Model) -> AsyncIterator[httpx.AsyncClient]:
    """The caller's async client, or one opened and closed around the run."""
    own = model.own_async_client()
    if own is not None:
        yield own
        return
    async with make_async_client() as client:
        yield client


class Agent:
    """A model, its tools, and the neutral conversation so far."""

    def __init__(
        self,
        model: Model,
        tools: Sequence[_ToolLike] = (),
        *,
        system: str | None = None,
        max_rounds: int = 16,
        cross_turn: CrossTurnPolicy | None = None,
        fold: FoldSettings | None = None,
    ) -> None:
        """``fold``: fold long replayed reasoning text before it is sent (head + tail kept,
        opaque carriers never touched; see :mod:`reasonwire.wire.fold`). Off by default."""
        self.model = model if fold is None else replace(model, fold=fold)
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
        """Carriers go past the end of a turn when the route's profile requires it, or the
        cross-turn policy (from the consumption matrix) says the model reads them."""
        route = self.model.route
        if self.model.dialect.profile(route.profile).keeps_across_turns:
            return True
        pol = self.cross_turn
        return pol is not None and pol.keeps(route.name, self.model.name)

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
            model=self.model.name,
            dialect=self.model.route.dialect,
            profile=self.model.route.profile,
        )

    def _check_rounds(self, session: Session) -> None:
        if sum(1 for t in session.turns if t.tool_calls) > self.max_rounds:
            raise ToolLoopLimit(f"the model was still calling tools after {self.max_rounds} rounds")

    def _flow(self, session: Session, stream: bool) -> _Flow:
        """The tool loop, once and without I/O: yields the next step, receives its reply,
        returns the result. Pending calls (a session resumed after a failure) run first;
        past ``max_rounds`` rounds of calls the run ends with :class:`ToolLoopLimit`."""
        while True:
            request = len(session.turns)
            calls = _pending(session)
            if calls:
                self._check_rounds(session)
                results = yield _RunTools(calls, request - 1)
                assert isinstance(results, tuple)  # the drivers reply to each step in kind
                session.add_results(results)
            turn = yield _Send(session.prepare(stream=stream), request)
            assert isinstance(turn, Turn)
            session.commit(turn)
            if not turn.tool_calls:
                return self._finish(session)

    # -- sync ---------------------------------------------------------------------------

    def _events(
        self, session: Session, stream: bool, on_event: EventSink | None
    ) -> Iterator[AgentEvent]:
        """The sync driver of :meth:`_flow`: tools one after the other, each result an event
        before the next tool runs."""
        flow = self._flow(session, stream)
        step: _Step | RunResult = next(flow)
        while not isinstance(step, RunResult):
            reply: _Reply
            if isinstance(step, _RunTools):
                results: list[ToolResult] = []
                for call in step.calls:
                    results.append(run_call(self.tools, call))
                    yield ToolResultEvent(results[-1], step.request)
                reply = tuple(results)
            else:
                last: StreamEvent | None = None
                with closing(exchange(self.model, step.prepared)) as wire:
                    for last in wire:  # a caller that stops here closes the request at once
                        yield from _observed(last, step, on_event)
                reply = answer(last)
            step = _advance(flow, reply)
        yield ResultEvent(step)

    def run_session(
        self, session: Session, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """Drive ``session`` to a final answer (resumable after a failure)."""
        return _result(self._events(session, stream, on_event))

    def run(
        self, user_text: str, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """Run one user turn to its final answer (``stream`` uses the streaming endpoint;
        ``on_event`` sees every stream event: text, reasoning and tool-call deltas...)."""
        return self.run_session(self.session(user_text), stream=stream, on_event=on_event)

    def stream_session(
        self, session: Session, *, on_event: EventSink | None = None
    ) -> Iterator[AgentEvent]:
        """Drive ``session`` on the streaming endpoint, yielding its events (see
        :meth:`stream`)."""
        return self._events(session, True, on_event)

    def stream(self, user_text: str, *, on_event: EventSink | None = None) -> Iterator[AgentEvent]:
        """Run one user turn on the streaming endpoint and yield its events: text and
        reasoning deltas, each request's usage, complete tool calls, tool results, and last
        the :class:`~reasonwire.agent.events.ResultEvent` (``for ev in bot.stream(text)``).

        Nothing is sent before the first ``next()``. Breaking out of the loop stops the run
        (the request in flight is closed, no further tool runs); an error of the run is
        raised from the iteration. ``on_event`` still sees every raw wire event."""
        return self.stream_session(self.session(user_text), on_event=on_event)

    # -- async --------------------------------------------------------------------------

    async def _aevents(
        self, session: Session, stream: bool, on_event: EventSink | None
    ) -> AsyncGenerator[AgentEvent, None]:
        """The async driver of :meth:`_flow`: the parallel calls of a step run concurrently,
        their results are events once all have run."""
        flow = self._flow(session, stream)
        step: _Step | RunResult = next(flow)
        async with _async_client(self.model) as client:
            while not isinstance(step, RunResult):
                reply: _Reply
                if isinstance(step, _RunTools):
                    reply = tuple(
                        await asyncio.gather(*(arun_call(self.tools, c) for c in step.calls))
                    )
                    for result in reply:
                        yield ToolResultEvent(result, step.request)
                else:
                    last: StreamEvent | None = None
                    async with aclosing(aexchange(self.model, step.prepared, client)) as wire:
                        async for last in wire:
                            for event in _observed(last, step, on_event):
                                yield event
                    reply = answer(last)
                step = _advance(flow, reply)
        yield ResultEvent(step)

    async def arun_session(
        self, session: Session, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """The async twin of :meth:`run_session`; parallel calls run concurrently."""
        async with aclosing(self._aevents(session, stream, on_event)) as events:
            async for event in events:
                if isinstance(event, ResultEvent):
                    return event.result
        raise AssertionError("a run ends with its result")  # pragma: no cover

    async def arun(
        self, user_text: str, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """The async twin of :meth:`run`."""
        return await self.arun_session(self.session(user_text), stream=stream, on_event=on_event)

    def astream_session(
        self, session: Session, *, on_event: EventSink | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The async twin of :meth:`stream_session`."""
        return self._aevents(session, True, on_event)

    def astream(
        self, user_text: str, *, on_event: EventSink | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The async twin of :meth:`stream` (``async for ev in bot.astream(text)``). Leaving
        the loop early stops the run when the iterator is closed (close it with
        ``contextlib.aclosing`` to have that happen at once rather than when it is
        collected)."""
        return self.astream_session(self.session(user_text), on_event=on_event)


__all__ = ["Agent", "RunResult"]
