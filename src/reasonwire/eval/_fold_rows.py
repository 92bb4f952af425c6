"""Rows of the matrix's fold section: the fold evidence of one (route, model), per lane and
field, from its fold-step call records (``step`` ``fold``, the setup's ``fold_id``).

Per lane, both replays of a field are compared with the fold baseline that landed on the same
lane (same every-word probe wording and parameter fixes): the unfolded replay's delta against
``consume_ratio`` x ``T_unfolded``, the folded replay's against ``consume_ratio`` x the folded
text's own T (chars/4 of what was sent). Call records come in as JSON (see
:mod:`reasonwire.eval.matrix`).
"""

from __future__ import annotations

from reasonwire.eval._rows import Rec
from reasonwire.eval._variants import BASELINE, TEXT_VARIANTS
from reasonwire.method.fixture import canary_hit, chars4
from reasonwire.method.matrix import FoldRecall, FoldRow, FoldSetup, RowError
from reasonwire.method.verdicts import Outcome, Thresholds
from reasonwire.wire.model import JsonObject

MODES = ("unfolded", "folded")


def _pick(recs: list[Rec], lane: str) -> tuple[Rec | None, Rec | None]:
    """(the answer on ``lane``, else None; the last failure, else None)."""
    ok = [r for r in recs if r.get("ok") and r.get("lane") == lane]
    failed = [r for r in recs if not r.get("ok")]
    return (ok[0] if ok else None), (failed[-1] if failed else None)


def _expected(kept: str, action: str | None) -> bool | None:
    """Should the folded reply name a canary the fold left ``kept`` (head / tail / folded /
    straddles)? A dropped carrier holds nothing; a straddling sentence may go either way."""
    if action == "drop":
        return False
    return {"head": True, "tail": True, "folded": False}.get(kept)


def fold_rows_of(
    k: tuple[str, str], dialect: str, recs: list[Rec], setup: FoldSetup, th: Thresholds
) -> list[FoldRow]:
    """The fold rows of one (route, model) (see the module docstring)."""
    mine = [r for r in recs if r.get("step") == "fold" and r.get("fold_id") == setup.fold_id]
    if not mine:
        return []
    fields = [v for v in TEXT_VARIANTS.get(dialect, {}) if v != BASELINE]
    lanes = sorted({str(r["lane"]) for r in mine if r.get("ok") and r.get("lane")})
    rows: list[FoldRow] = []
    for lane in lanes:
        bases = [r for r in mine if r.get("fold_mode") == "baseline"]
        base = next((r for r in reversed(bases) if r.get("ok") and r.get("lane") == lane), None)
        if base is None:
            continue
        gen = (base.get("wording"), base.get("params_sig"))
        same = [r for r in mine if (r.get("wording"), r.get("params_sig")) == gen]
        for field in fields:
            of = [r for r in same if r.get("variant") == field]
            landed = any(r.get("ok") and r.get("lane") == lane for r in of)
            if not landed and not (len(lanes) == 1 and of):
                continue  # resampled onto another lane only: that lane's row speaks for it
            rows.append(_row(k, dialect, lane, field, base, of, setup, th))
    return rows


def _row(
    k: tuple[str, str],
    dialect: str,
    lane: str,
    field: str,
    base: Rec,
    recs: list[Rec],
    setup: FoldSetup,
    th: Thresholds,
) -> FoldRow:
    base_in = int(base["billed_input"])
    answer: dict[str, Rec | None] = {}
    inputs: dict[str, int | None] = {}
    deltas: dict[str, int | None] = {}
    outcomes: dict[str, Outcome] = {}
    errors: list[RowError] = []
    facts: JsonObject = {}
    for mode in MODES:
        ok, failed = _pick([r for r in recs if r.get("fold_mode") == mode], lane)
        answer[mode] = ok
        if mode == "folded":
            src = ok or failed
            facts = dict(src.get("fold") or {}) if src is not None else {}
        if ok is not None:
            inputs[mode] = int(ok["billed_input"])
            deltas[mode] = inputs[mode] - base_in  # type: ignore[operator]
            continue
        inputs[mode] = deltas[mode] = None
        outcomes[mode] = Outcome.MISSING
        if failed is not None:
            if failed.get("error_kind") == "provider":
                outcomes[mode] = Outcome.REJECTED
            errors.append(RowError("fold", field, mode, failed.get("status"), failed.get("error")))
    T_folded = chars4(int(facts["sent"])) if "sent" in facts else setup.T_folded
    Ts = {"unfolded": setup.T_unfolded, "folded": T_folded}
    for mode in MODES:
        d = deltas[mode]
        if d is not None:
            outcomes[mode] = th.text_outcome(d, Ts[mode])
    action = facts.get("action")
    recall: list[FoldRecall] = []
    for c in setup.canaries:
        seen = {
            mode: None if a is None else canary_hit(str(a.get("reply") or ""), c.word)
            for mode, a in answer.items()
        }
        recall.append(FoldRecall(c.region, c.word, _expected(c.kept, action), seen["unfolded"],
                                 seen["folded"]))  # fmt: skip
    as_expected: bool | None = None  # the unfolded replay must be read for recall to tell
    if answer["folded"] is not None and outcomes["unfolded"] == Outcome.CONSUMED:
        as_expected = all(r.expected is None or r.folded == r.expected for r in recall)
    saved = None
    share = None
    u, f = inputs["unfolded"], inputs["folded"]
    if u is not None and f is not None:
        saved = u - f
        du = deltas["unfolded"]
        share = round(saved / du, 3) if du else None
    removed = setup.trace_chars - int(facts.get("kept", setup.kept_chars))
    return FoldRow(
        route=k[0],
        model=k[1],
        dialect=dialect,
        lane=lane,
        field=field,
        action=action,
        wording=base.get("wording"),
        baseline_input=base_in,
        unfolded_input=u,
        folded_input=f,
        unfolded_delta=deltas["unfolded"],
        folded_delta=deltas["folded"],
        unfolded_outcome=outcomes["unfolded"],
        folded_outcome=outcomes["folded"],
        T_unfolded=setup.T_unfolded,
        T_folded=T_folded,
        saved_tokens=saved,
        saved_share=share,
        folded_share=round(removed / setup.trace_chars, 3),
        recall=tuple(recall),
        recall_as_expected=as_expected,
        errors=tuple(errors),
    )


__all__ = ["fold_rows_of"]
