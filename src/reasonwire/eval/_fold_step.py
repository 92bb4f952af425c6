"""The fold step (``eval run --fold``): is a folded carrier still read, and what does it save?

It runs after the method has measured a (route, model), and only where the fold has
something to show: for each text variant (field) the method found consumed in the loop on a
lane (delta >= ``consume_ratio`` x T against that lane's baseline). A field the model ignores
or refuses gets a note and no call; so does a route the fold settings do not apply to.

Per lane it sends, in the loop, with the long trace of :mod:`reasonwire.fold.trace` and
its every-word probe:

- ``baseline``: no carrier (the byte-identical reference of both replays; one per lane);
- ``unfolded``: each consumed field holding the whole long trace;
- ``folded``: the same request after ``fold_request`` (the agent's own fold path, in
  :meth:`reasonwire.eval._cells.Cell.body`), so the bytes compared are the bytes an agent with
  the fold on would send.

Each cell goes through the executor like any other: recorded, resumable, paid from the
budget. On a multi-lane route every request is resampled onto the lane (as the opaque step
does): a delta across lanes would compare two upstreams.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import replace
from urllib.parse import urlsplit

from reasonwire.eval._cells import CallOutcome, Cell
from reasonwire.eval._config import Target
from reasonwire.eval._records import Answered
from reasonwire.eval._variants import BASELINE, variants_for
from reasonwire.fold.trace import FOLD_PROBES, FoldTrace
from reasonwire.method.verdicts import Outcome, Thresholds

from reasonwire.eval._steps import Method, _ModelState  # isort: skip


class FoldStep:
    """The fold step over one run's method (see the module docstring)."""

    def __init__(self, method: Method, trace: FoldTrace) -> None:
        self.m = method
        self.trace = trace

    def cell(
        self, target: Target, state: _ModelState, variant: str, mode: str, attempt: int = 0
    ) -> Cell:
        """A fold-step cell: the method's in-loop text cell with the long trace and the
        every-word probe; a ``folded`` one carries the settings its body is folded with."""
        base = self.m.text_cell(target, state, "in_loop", variant, attempt,
                                trace=self.trace.text, probes=FOLD_PROBES)  # fmt: skip
        return replace(
            base, step="fold", fold_mode=mode, fold_id=self.trace.fold_id,
            fold=self.trace.settings if mode == "folded" else None,
        )  # fmt: skip

    def consumed(self, target: Target, state: _ModelState) -> dict[str, set[str]]:
        """Field -> the lanes on which the method found it consumed in the loop (this run's
        answers, sent or reused, with the model's final wording and parameter fixes)."""
        T = self.m.x.T.get((target.route.name, target.model), (self.m.x.t_estimate, ""))[0]
        th = Thresholds(self.m.cfg.consume_ratio)  # the method's own rule, as the matrix applies it
        wording = state.wording.get("in_loop", "probe")
        base: dict[str, int] = {}
        answers: list[tuple[str, str, int]] = []
        for res in self.m.x.done_outcomes():
            rec = res.record
            if rec is None or not isinstance(rec.result, Answered) or not rec.ok:
                continue
            c = rec.cell
            if (
                (c.route, c.model, c.step, c.position) != (target.route.name, target.model,
                                                           "text", "in_loop")
                or c.wording != wording
                or c.params_sig != state.fix.signature()
                or rec.result.billed_input is None
            ):  # fmt: skip
                continue
            if c.variant == BASELINE:
                base.setdefault(rec.result.lane, rec.result.billed_input)
            else:
                answers.append((c.variant, rec.result.lane, rec.result.billed_input))
        out: dict[str, set[str]] = {}
        for variant, lane, billed in answers:
            if lane in base and th.text_outcome(billed - base[lane], T) == Outcome.CONSUMED:
                out.setdefault(variant, set()).add(lane)
        return out

    async def model(self, target: Target) -> None:
        """The fold step of one (route, model); nothing when the method did not get its
        baseline (no state) or the run is stopped."""
        state = self.m.states.get((target.route.name, target.model))
        if state is None or self.m.x.over_budget(target) or self.m.route_stopped(target):
            return
        host = urlsplit(target.route.base_url).netloc or None
        if self.trace.settings.action(target.route.name, host, target.model) is None:
            self.m.note(target, "fold", "the fold settings do not apply here (providers): "
                        "no fold call")  # fmt: skip
            return
        fields = [v for v in variants_for(target.route.dialect) if v != BASELINE]
        consumed = self.consumed(target, state)
        for v in fields:
            if v not in consumed:
                self.m.note(target, "fold", f"{v}: not consumed in the loop unfolded, "
                            "nothing to show: no fold call")  # fmt: skip
        todo: list[str] = []
        for v in fields:
            if v not in consumed:
                continue
            report = self.cell(target, state, v, "folded").folding()[1]
            if report.changed:
                todo.append(v)
            else:
                self.m.note(target, "fold", f"{v}: the fold changes nothing ({report.reason}): "
                            "no fold call")  # fmt: skip
        lanes = sorted({lane for v in todo for lane in consumed[v]})
        await asyncio.gather(
            *(self.lane(target, state, lane, [v for v in todo if lane in consumed[v]])
              for lane in lanes)
        )  # fmt: skip

    async def lane(self, target: Target, state: _ModelState, lane: str, fields: list[str]) -> None:
        """Baseline, then every field unfolded and folded, all on ``lane``. ``state`` is the
        step's own copy of the method's: a refused every-word probe switches its wording to
        ``neutral`` (once, as the method does) without touching the method's."""
        pin = lane if target.route.lanes.prefixes else None
        state = replace(state, wording=dict(state.wording))
        base = await self.on_lane(target, pin, BASELINE, "baseline", state)
        refused = base.status == 403 or base.filtered
        if refused and state.wording.get("in_loop", "probe") != "neutral":
            state.wording["in_loop"] = "neutral"
            base = await self.on_lane(target, pin, BASELINE, "baseline", state)
        if not self.usable(target, base, pin, BASELINE, "baseline"):
            return
        outs = await asyncio.gather(
            *(
                self.on_lane(target, pin, v, mode, state)
                for v in fields
                for mode in ("unfolded", "folded")
            )
        )
        for (v, mode), res in zip(
            [(v, mode) for v in fields for mode in ("unfolded", "folded")], outs, strict=True
        ):
            self.usable(target, res, pin, v, mode)

    def on_lane(
        self, target: Target, pin: str | None, variant: str, mode: str, state: _ModelState
    ) -> Awaitable[CallOutcome]:
        """One fold cell through the method's lane resampling."""
        return self.m.on_lane(
            lambda attempt: self.cell(target, state, variant, mode, attempt), target, pin
        )

    def usable(
        self, target: Target, res: CallOutcome | None, pin: str | None, variant: str, mode: str
    ) -> bool:
        """True for an answer on the lane; else False, noted (a budget stop is recorded)."""
        if res is None or res.skipped:
            return False
        if res.ok and (pin is None or res.lane == pin):
            return True
        where = f" on lane {pin}" if pin else ""
        why = f"{res.status or 'no status'} {res.error}" if not res.ok else "off the lane"
        self.m.note(target, "fold", f"{variant} {mode}{where}: no usable answer ({why})")
        return False


__all__ = ["FoldStep"]
