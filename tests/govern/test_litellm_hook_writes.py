"""The LiteLLM hook's evidence writes that go to its store threads (most stores here override
their writes, which sends every write there; the writes made on the proxy's loop, and their
way back to a thread: test_litellm_hook_on_loop.py).

The first attempt's pending row is written when the hook admits a call (on the same store
thread, right after answering the proxy) and waited for by the attempt: evidence first still
holds (no attempt without its committed row, the async entry point included), and a call that
never gets an attempt - LiteLLM ends it first, the hook stops waiting for its admission or
for the row, the call is forgotten - leaves no row ``pending``: the row is closed ``refused``
with the reason, once its write is committed. An attempt's completion is written on a store
thread that nobody waits for; a later attempt's row only after the previous one's completion.

Expected rows come from the rules in ``Governor``'s docstrings (outcome ``refused`` for an
attempt never let out, the reason strings the module writes), not from the code's output."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from reasonwire.errors import HookRefused, StoreUnavailable
from reasonwire.govern import litellm_governor
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from tests.govern.test_litellm_governor import (
    ANSWER,
    MODEL,
    DownStore,
    StuckStore,
    call,
    governor,
    request,
    settled,
)


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing.generate("k1")


def attempt_of(out: Any) -> Any:
    return {"model": MODEL, "metadata": out["metadata"]}


def test_the_first_attempt_s_row_is_committed_when_the_call_is_admitted(ring: KeyRing) -> None:
    gov = governor(ring)
    out = gov.pre_call(request(ring), "acompletion")
    (row,) = gov.store.rows("c1")  # before any attempt: the row is there, pending
    assert (row.outcome, row.attempt) == ("pending", 1)
    gov.attempt_start(attempt_of(out))
    gov.attempt_answered(out, ANSWER)
    gov.answer(out, ANSWER)
    assert settled(gov, "c1", 1) == [("forwarded", None)]
    assert [r.call_id for r in gov.store.rows("c1")] == [row.call_id]  # the same row, completed


def test_a_store_down_at_admission_lets_no_attempt_out_from_the_loop(ring: KeyRing) -> None:
    store = DownStore()
    gov = governor(ring, store=store)
    call(gov, request(ring))  # the conversation's effort fixed while the store is up

    async def run() -> None:
        store.down = True
        out = await gov.apre_call(request(ring), "acompletion")  # admitted: no store needed
        with pytest.raises(HookRefused) as info:
            await gov.aattempt_start(attempt_of(out))
        assert (info.value.status, info.value.reason) == (503, "store-unavailable")

    asyncio.run(run())
    assert [r.outcome for r in gov.store.rows("c1")] == ["forwarded"]


def test_a_later_attempt_writes_its_own_row_before_it_goes(ring: KeyRing) -> None:
    store = DownStore()
    gov = governor(ring, store=store)

    async def run() -> None:
        out = await gov.apre_call(request(ring), "acompletion")
        await gov.aattempt_start(attempt_of(out))
        gov.attempt_failed(out, RuntimeError("a 429"))
        store.down = True
        with pytest.raises(HookRefused) as info:  # the retry: no row, so not let out
            await gov.aattempt_start(attempt_of(out))
        assert info.value.status == 503
        store.down = False
        await gov.aattempt_start(attempt_of(out))
        gov.attempt_answered(out, ANSWER)

    asyncio.run(run())
    settled(gov, "c1", 2)
    rows = gov.store.rows("c1")
    # attempts are LiteLLM's, numbered as it starts them: its second was not let out
    assert [(r.outcome, r.attempt) for r in rows] == [("upstream-error", 1), ("forwarded", 3)]


class Refused(Exception):
    status_code = 429


def test_a_call_litellm_fails_before_any_attempt_leaves_no_pending_row(ring: KeyRing) -> None:
    gov = governor(ring)

    async def run() -> None:
        out = await gov.apre_call(request(ring), "acompletion")
        assert gov.failed(out, Refused()) is True  # one of the hook's calls

    asyncio.run(run())
    assert settled(gov, "c1", 1) == [("refused", "litellm refused: Refused")]
    assert gov.store.rows("c1")[0].status_code == 429


def test_a_call_answered_without_an_attempt_leaves_no_pending_row(ring: KeyRing) -> None:
    gov = governor(ring)

    async def run() -> None:
        out = await gov.apre_call(request(ring), "acompletion")
        gov.answer(out, ANSWER)

    asyncio.run(run())
    reason = "litellm ended the call before any upstream attempt"
    assert settled(gov, "c1", 1) == [("refused", reason)]


def test_a_forgotten_call_s_unsent_row_is_closed(
    ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(litellm_governor, "_MAX_PENDING", 1)
    gov = governor(ring)
    gov.pre_call(request(ring), "acompletion")
    gov.pre_call(request(ring), "acompletion")  # the first call is forgotten
    # pre_call commits its row before it returns, so the closing ran already
    rows = [(r.outcome, r.reason) for r in gov.store.rows("c1")]
    assert sorted(rows, key=str) == [
        ("pending", None),  # the second call's, still waiting for its attempt
        ("refused", "no outcome reported by litellm"),
    ]


def test_an_attempt_that_stops_waiting_for_its_row_closes_it_once_written(
    ring: KeyRing,
) -> None:
    store = StuckStore()
    gov = governor(ring, store=store, store_timeout=0.05)
    call(gov, request(ring))
    store.stuck = True

    async def run() -> None:
        out = await gov.apre_call(request(ring), "acompletion")  # its row's write is stuck
        with pytest.raises(HookRefused) as info:
            await gov.aattempt_start(attempt_of(out))
        assert (info.value.status, info.value.reason) == (503, "store-unavailable")

    try:
        asyncio.run(run())
    finally:
        store.release.set()
    reason = "store-unavailable: the hook stopped waiting"
    assert settled(gov, "c1", 2) == [("forwarded", None), ("refused", reason)]


def test_the_sync_attempt_stops_waiting_within_the_budget(ring: KeyRing) -> None:
    store = StuckStore()
    gov = governor(ring, store=store, store_timeout=0.05)
    call(gov, request(ring))
    store.stuck = True
    out, admitted = gov._pre_call(request(ring), "acompletion", None)  # row not yet written
    assert admitted is not None and admitted.prepared is not None
    gov.executor.submit(gov._write_prepared, admitted, admitted.prepared)  # stuck
    try:
        with pytest.raises(StoreUnavailable):
            gov.attempt_start(attempt_of(out))
    finally:
        store.release.set()
    reason = "store-unavailable: the hook stopped waiting"
    assert settled(gov, "c1", 2) == [("forwarded", None), ("refused", reason)]


class SlowFirstCall(SQLiteStore):
    """A store whose first fixing of a conversation's effort waits until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def _first(self, table: str, column: str, conv: str, value: str) -> str:
        self.release.wait(30)
        return super()._first(table, column, conv, value)


def test_an_admission_the_loop_stopped_waiting_for_lets_nothing_out(ring: KeyRing) -> None:
    """The loop gives up first: the store thread, admitting later, registers no call and
    writes no row (the client has its 503)."""
    store = SlowFirstCall()
    gov = governor(ring, store=store, store_timeout=0.05)

    async def run() -> None:
        with pytest.raises(HookRefused) as info:
            await gov.apre_call(request(ring), "acompletion")
        assert info.value.status == 503

    try:
        asyncio.run(run())
    finally:
        store.release.set()
    gov.executor.shutdown(wait=True)  # the admission has finished
    assert gov.store.rows("c1") == []
    assert gov._calls == {}


def test_an_admission_answered_too_late_closes_its_row(
    ring: KeyRing, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store thread admits first, but its answer reaches the loop after the budget: the
    loop ends the call, and its first row is closed ``refused`` once written."""
    gov = governor(ring, store_timeout=0.05)
    late = threading.Event()
    settle = litellm_governor._settle

    def slow_settle(*args: Any) -> None:
        late.wait(30)  # until the loop has given up
        settle(*args)

    monkeypatch.setattr(litellm_governor, "_settle", slow_settle)

    errors: list[object] = []

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: errors.append(context))
        with pytest.raises(HookRefused) as info:
            await gov.apre_call(request(ring), "acompletion")
        assert info.value.status == 503
        late.set()
        while not gov.store.rows("c1"):  # the thread answers the loop, then writes the row
            await asyncio.sleep(0.01)
        # the late answer was queued on the loop before the write: it runs now, dropped
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    try:
        asyncio.run(run())
    finally:
        late.set()
    assert errors == []
    gov.executor.shutdown(wait=True)
    reason = "store-unavailable: the hook stopped waiting"
    assert settled(gov, "c1", 1) == [("refused", reason)]
    assert gov._calls == {}


class SlowCompletion(SQLiteStore):
    """A store whose completions wait until released (at most 10 s), noting whether they were
    released or gave up; or fail, once ``down`` is set."""

    down = False

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.released: list[bool] = []

    def complete(self, row: EvidenceRow) -> None:
        if self.down:
            raise StoreUnavailable("planted: the database is down")
        self.released.append(self.release.wait(10))
        super().complete(row)


def test_nobody_waits_for_a_completion(ring: KeyRing) -> None:
    """The attempt's report returns while its row's completion is still held: had it waited,
    the write would have given up waiting for the release (set only after the report)."""
    store = SlowCompletion()
    gov = governor(ring, store=store)
    store.release.set()
    call(gov, request(ring))
    store.release.clear()

    async def run() -> Any:
        out = await gov.apre_call(request(ring), "acompletion")
        await gov.aattempt_start(attempt_of(out))
        gov.attempt_answered(out, ANSWER)
        store.release.set()  # only now
        return gov.answer(out, ANSWER)

    answer = asyncio.run(run())
    assert answer["choices"][0]["message"]["content"] == "Done."
    assert settled(gov, "c1", 2) == [("forwarded", None), ("forwarded", None)]
    assert store.released == [True, True]


def test_a_completion_the_store_cannot_commit_leaves_the_row_pending(ring: KeyRing) -> None:
    """The client still gets its answer; the row says an upstream call was made whose outcome
    was never recorded."""
    store = SlowCompletion()
    store.release.set()
    gov = governor(ring, store=store)

    async def run() -> Any:
        out = await gov.apre_call(request(ring), "acompletion")
        await gov.aattempt_start(attempt_of(out))
        store.down = True
        gov.attempt_answered(out, ANSWER)
        return gov.answer(out, ANSWER)

    assert asyncio.run(run())["choices"][0]["message"]["content"] == "Done."
    gov.executor.shutdown(wait=True)  # the completion was tried
    assert [r.outcome for r in gov.store.rows("c1")] == ["pending"]


def test_a_retry_s_row_is_written_after_the_previous_attempt_s_completion(
    ring: KeyRing,
) -> None:
    """One pending row per call at a time: when the retry's row is written, the failed
    attempt's row is already completed (read by the store itself at that moment)."""
    seen: list[list[str]] = []

    class Watching(SlowCompletion):
        def record(self, row: EvidenceRow) -> None:
            seen.append([r.outcome for r in self.rows("c1")])
            super().record(row)

    store = Watching()
    gov = governor(ring, store=store)
    store.release.set()

    async def run() -> None:
        out = await gov.apre_call(request(ring), "acompletion")
        await gov.aattempt_start(attempt_of(out))
        store.release.clear()  # the failed attempt's completion is held...
        gov.attempt_failed(out, RuntimeError("a 500"))
        retry = asyncio.ensure_future(gov.aattempt_start(attempt_of(out)))
        await asyncio.sleep(0.2)  # (time for a retry that did not wait to write its row)
        store.release.set()  # ... until the retry is on its way
        await retry
        gov.attempt_answered(out, ANSWER)

    asyncio.run(run())
    assert seen == [[], ["upstream-error"]]
    assert settled(gov, "c1", 2) == [
        ("upstream-error", "upstream: RuntimeError"),
        ("forwarded", None),
    ]


def test_a_retry_goes_out_though_the_previous_attempt_s_completion_failed(ring: KeyRing) -> None:
    """An attempt that ended without a report is completed by the next attempt (on its store
    thread); a store that cannot commit that completion leaves that row pending, and the next
    attempt, whose own row commits, still goes out."""
    store = SlowCompletion()
    store.release.set()
    gov = governor(ring, store=store)

    async def run() -> Any:
        out = await gov.apre_call(request(ring), "acompletion")
        await gov.aattempt_start(attempt_of(out))
        store.down = True  # completions fail, inserts still commit
        return await gov.aattempt_start(attempt_of(out))  # no report of the first

    assert asyncio.run(run())["max_retries"] == 0  # let out
    assert [(r.outcome, r.attempt) for r in gov.store.rows("c1")] == [
        ("pending", 1),
        ("pending", 2),
    ]
