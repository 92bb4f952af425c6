"""The async runner: every (route, model) measured concurrently, calls bounded per route.

A run writes a :class:`~reasonwire.eval._records.RunStart` record, measures every target with
the method (:mod:`reasonwire.eval._steps`: which cells, in which order) through one executor
(:mod:`reasonwire.eval._executor`: HTTP, retries, the 401 protocol, the resume cache, the
budget, one :class:`~reasonwire.eval._records.CallRecord` per call), and ends with a
:class:`~reasonwire.eval._records.RunEnd` record, also when it fails. A re-run with the same
``--out`` resumes: every recorded answer is reused, nothing is paid twice.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace
from pathlib import Path

import httpx

from reasonwire import credentials
from reasonwire.eval._config import EvalConfig, RunResult, Target
from reasonwire.eval._executor import Executor
from reasonwire.eval._fold_step import FoldStep
from reasonwire.eval._records import CALLS, Records, RunEnd, RunStart, TargetRef, read_jsonl
from reasonwire.eval._steps import Method, estimate_cells
from reasonwire.eval.fixture import make_fixture
from reasonwire.eval.lock import RunLock
from reasonwire.fold.trace import FoldTrace, make_fold_trace
from reasonwire.http import make_async_client
from reasonwire.method.verdicts import Thresholds
from reasonwire.wire.model import ABSENT


async def arun_eval(cfg: EvalConfig) -> RunResult:
    """Run the method over ``cfg.targets``; records under ``cfg.out`` (see module doc)."""
    fold_trace = None if cfg.fold is None else make_fold_trace(cfg.seed, cfg.fold)
    records = Records(cfg.out)  # fails before any call when --out is unwritable
    try:
        with RunLock(records.out, cfg.wait, cfg.on_wait):
            return await _arun(cfg, records, fold_trace)
    finally:
        records.close()


async def _arun(cfg: EvalConfig, records: Records, fold_trace: FoldTrace | None) -> RunResult:
    """The run itself, holding ``--out`` (:class:`~reasonwire.eval.lock.RunLock`)."""
    fx = make_fixture(cfg.seed)
    run_id = uuid.uuid4().hex[:12]
    executor = Executor(cfg, records, run_id, fx.fixture_id, fx.trace_tokens_estimate)
    method = Method(cfg, executor, fx)
    fold = None if fold_trace is None else FoldStep(method, fold_trace)

    async def measure(target: Target) -> None:
        await method.model(target)
        if fold is not None:
            await fold.model(target)

    records.append(
        RunStart(
            run_id=run_id,
            fixture_id=fx.fixture_id,
            seed=cfg.seed,
            canary=fx.canary,
            trace_chars=len(fx.trace),
            T=fx.trace_tokens_estimate,
            thresholds=Thresholds(cfg.consume_ratio, cfg.opaque_min, cfg.lane_attempts),
            budget_usd=cfg.budget,
            effort=cfg.effort,
            max_tokens=cfg.max_tokens,
            workers=cfg.workers,
            want_direct=tuple(sorted(cfg.want_direct)),
            targets=tuple(TargetRef(t.route.name, t.route.dialect, t.model) for t in cfg.targets),
            lane_defaults={t.route.name: t.route.lanes.default for t in cfg.targets},
            versions=_versions(),
            label=cfg.label,
            t=time.time(),
            fold=ABSENT if fold_trace is None else fold_trace.setup(),
        )
    )
    started = time.monotonic()
    progress = None
    if cfg.progress:
        from reasonwire.eval._progress import Progress

        progress = Progress(cfg.targets, executor)
    limits = httpx.Limits(max_connections=max(cfg.workers * 4, 16), max_keepalive_connections=64)
    try:
        async with make_async_client(
            transport=cfg.transport, timeout=cfg.timeout, http2=False, limits=limits
        ) as client:
            executor.client = client
            if progress is not None:
                progress.start()
            results = await asyncio.gather(
                *(measure(t) for t in cfg.targets), return_exceptions=True
            )
            for t, r in zip(cfg.targets, results, strict=True):
                if isinstance(r, BaseException):
                    if not isinstance(r, Exception):
                        raise r
                    method.note(t, "run", f"{type(r).__name__}: {credentials.redact(str(r))}")
    finally:
        if progress is not None:
            progress.stop()
        elapsed = time.monotonic() - started
        records.append(
            RunEnd(
                run_id=run_id,
                sent=executor.stats.sent,
                reused=executor.stats.reused,
                errors=executor.stats.errors,
                budget_stopped=executor.stopped,
                elapsed_s=round(elapsed, 3),
                t=time.time(),
                in_flight=executor.budget.found_in_flight or ABSENT,
            )
        )
    budget = executor.budget
    budget.spent()  # catch up with the last settlements
    return RunResult(
        out=cfg.out,
        run_id=run_id,
        sent=executor.stats.sent,
        reused=executor.stats.reused,
        errors=executor.stats.errors,
        spent_usd=executor.budget.spent(),
        budget_stopped=executor.stopped,
        elapsed_s=elapsed,
        calls_per_model=dict(executor.per_model),
        unknown_price=tuple(sorted(executor.unknown_price)),
        billed_usd=budget.billed,
        estimated_usd=budget.estimated,
        in_flight_usd=budget.interrupted_usd,
        in_flight=budget.found_in_flight,
        not_resent=executor.stats.not_resent,
        in_flight_likely_usd=budget.likely_in_flight(),
        stop_reason=executor.stop_reason,
    )


def run_eval(cfg: EvalConfig) -> RunResult:
    """The synchronous entry: :func:`arun_eval` in a fresh event loop."""
    return asyncio.run(arun_eval(cfg))


def _versions() -> dict[str, str]:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("reasonwire", "httpx"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def load_done(out: Path) -> int:
    """Number of finished call records under ``out`` (for messages and tests)."""
    return sum(1 for r in read_jsonl(out / CALLS) if r.get("type") == "call")


__all__ = [
    "EvalConfig",
    "RunResult",
    "Target",
    "arun_eval",
    "estimate_cells",
    "replace",
    "run_eval",
]
