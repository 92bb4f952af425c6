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

``Agent.stream(text)`` and ``Agent.astream(text)`` run the same loop on the streaming endpoint
and yield typed events (:mod:`reasonwire.agent.events`) ending with the result. The sync
iterator runs the loop in a worker thread feeding a queue; the async one in a task feeding an
``asyncio.Queue``. An exception of the run is raised to the iterating caller; a caller that
stops iterating early stops the run (at its next event: the request in flight is closed, a
running tool finishes first) and no thread or task outlives the iterator.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from reasonwire.agent.events import (
    AgentEvent,
    ReasoningEvent,
    RequestUsage,
    ResultEvent,
    RunResult,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from reasonwire.agent.models import Model
from reasonwire.agent.policy import CrossTurnPolicy
from reasonwire.agent.session import Session
from reasonwire.agent.tools import Tool, arun_call, as_tools, run_call
from reasonwire.agent.transport import EventSink, asend, send
from reasonwire.errors import ToolLoopLimit
from reasonwire.http import make_async_client
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.model import (
    Assistant,
    Message,
    ReasoningDelta,
    StreamEvent,
    System,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
    User,
)


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


Emit = Callable[[AgentEvent], None]

_DELTAS: dict[type, Callable[[Any, int], AgentEvent]] = {
    TextDelta: lambda ev, i: TextEvent(ev.text, i),
    ReasoningDelta: lambda ev, i: ReasoningEvent(ev.text, i),
}
"""Wire stream events an iterating caller sees, as agent events."""


class _Stopped(BaseException):
    """The iterating caller went away: unwinds the worker's run (not an ``Exception``, so no
    retry loop or tool wrapper takes it for a failure)."""


@dataclass(frozen=True, slots=True)
class _Failure:
    error: BaseException


_END = object()

_BUFFER = 16
"""Events the sync stream's worker may run ahead of the iterating caller: the run does not
race far past what the caller has read, so breaking out stops it close to where it was."""


def _sink(on_event: EventSink | None, emit: Emit | None, request: int) -> EventSink | None:
    """The transport's event sink: the caller's ``on_event`` and, when iterating, the
    agent events (every wire event passes ``emit``'s stop check)."""
    if emit is None:
        return on_event

    def sink(ev: StreamEvent) -> None:
        if on_event is not None:
            on_event(ev)
        make = _DELTAS.get(type(ev))
        if make is not None:
            emit(make(ev, request))

    return sink


def _turn_events(emit: Emit | None, turn: Turn, request: int) -> None:
    if emit is None:
        return
    emit(RequestUsage(request, turn.usage, turn.finish_reason))
    for call in turn.tool_calls:
        emit(ToolCallEvent(call, request))


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

    # -- sync ---------------------------------------------------------------------------

    def _drive(
        self, session: Session, stream: bool, on_event: EventSink | None, emit: Emit | None
    ) -> RunResult:
        while True:
            request = len(session.turns)
            calls = _pending(session)
            if calls:
                self._check_rounds(session)
                results: list[ToolResult] = []
                for call in calls:
                    results.append(run_call(self.tools, call))
                    if emit is not None:
                        emit(ToolResultEvent(results[-1], request - 1))
                session.add_results(results)
            sink = _sink(on_event, emit, request)
            turn = send(self.model, session.prepare(stream=stream), sink)
            session.commit(turn)
            _turn_events(emit, turn, request)
            if not turn.tool_calls:
                return self._finish(session)

    def run_session(
        self, session: Session, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """Drive ``session`` to a final answer (resumable after a failure)."""
        return self._drive(session, stream, on_event, None)

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
        items: queue.Queue[object] = queue.Queue(maxsize=_BUFFER)
        stop = threading.Event()

        def check() -> None:
            if stop.is_set():
                raise _Stopped

        def emit(ev: AgentEvent) -> None:
            check()
            items.put(ev)

        def guarded(ev: StreamEvent) -> None:
            check()
            if on_event is not None:
                on_event(ev)

        def work() -> None:
            try:
                items.put(ResultEvent(self._drive(session, True, guarded, emit)))
            except _Stopped:
                pass
            except BaseException as exc:  # raised to the iterating caller
                items.put(_Failure(exc))
            finally:
                items.put(_END)

        worker = threading.Thread(target=work, name="reasonwire-agent-stream", daemon=True)
        worker.start()
        try:
            while True:
                item = items.get()
                if item is _END:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield cast(AgentEvent, item)
        finally:
            stop.set()
            while worker.is_alive():
                try:
                    items.get_nowait()  # room for a worker blocked on a full queue
                except queue.Empty:
                    worker.join(0.05)  # busy in a read or a tool: it stops at its next event

    def stream(self, user_text: str, *, on_event: EventSink | None = None) -> Iterator[AgentEvent]:
        """Run one user turn on the streaming endpoint and yield its events: text and
        reasoning deltas, each request's usage, complete tool calls, tool results, and last
        the :class:`~reasonwire.agent.events.ResultEvent` (``for ev in bot.stream(text)``).

        Nothing is sent before the first ``next()``. Breaking out of the loop stops the run
        and waits for its worker thread; an error of the run is raised from the iteration.
        ``on_event`` still sees every raw wire event."""
        return self.stream_session(self.session(user_text), on_event=on_event)

    # -- async --------------------------------------------------------------------------

    async def _arun(
        self, session: Session, stream: bool, on_event: EventSink | None, emit: Emit | None
    ) -> RunResult:
        own = self.model.own_async_client()
        if own is not None:
            return await self._adrive(session, own, stream, on_event, emit)
        async with make_async_client() as client:
            return await self._adrive(session, client, stream, on_event, emit)

    async def arun_session(
        self, session: Session, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """The async twin of :meth:`run_session`; parallel calls run concurrently."""
        return await self._arun(session, stream, on_event, None)

    async def _adrive(
        self,
        session: Session,
        client: Any,
        stream: bool,
        on_event: EventSink | None,
        emit: Emit | None,
    ) -> RunResult:
        while True:
            request = len(session.turns)
            calls = _pending(session)
            if calls:
                self._check_rounds(session)
                results: list[ToolResult] = list(
                    await asyncio.gather(*(arun_call(self.tools, c) for c in calls))
                )
                if emit is not None:
                    for result in results:
                        emit(ToolResultEvent(result, request - 1))
                session.add_results(results)
            sink = _sink(on_event, emit, request)
            turn = await asend(self.model, session.prepare(stream=stream), client, sink)
            session.commit(turn)
            _turn_events(emit, turn, request)
            if not turn.tool_calls:
                return self._finish(session)

    async def arun(
        self, user_text: str, *, stream: bool = False, on_event: EventSink | None = None
    ) -> RunResult:
        """The async twin of :meth:`run`."""
        return await self.arun_session(self.session(user_text), stream=stream, on_event=on_event)

    async def astream_session(
        self, session: Session, *, on_event: EventSink | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The async twin of :meth:`stream_session`."""
        items: asyncio.Queue[object] = asyncio.Queue()

        async def work() -> None:
            try:
                items.put_nowait(ResultEvent(await self._arun(session, True, on_event, emit)))
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # raised to the iterating caller
                items.put_nowait(_Failure(exc))
            finally:
                items.put_nowait(_END)

        emit: Emit = items.put_nowait
        task = asyncio.create_task(work())
        try:
            while True:
                item = await items.get()
                if item is _END:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield cast(AgentEvent, item)
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def astream(
        self, user_text: str, *, on_event: EventSink | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The async twin of :meth:`stream` (``async for ev in bot.astream(text)``). The run
        is a task feeding a queue; leaving the loop early cancels it (close the iterator with
        ``contextlib.aclosing`` to have that happen at once rather than when it is collected)."""
        return self.astream_session(self.session(user_text), on_event=on_event)


__all__ = ["Agent", "RunResult"]
