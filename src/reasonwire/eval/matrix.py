"""The matrix: verdicts per (route, model, lane), computed from the records alone.

:func:`build_matrix` reads ``runs.jsonl`` and ``calls.jsonl`` of an output directory (so a
resumed or repeated run gives the same matrix) and returns a plain dict, documented below,
that ``matrix.json``, ``matrix.md`` and the HTML report are rendered from.

Matrix dict (``schema`` ``reasonwire.eval.matrix/1``)::

    {
      "schema", "generated_at", "out",
      "run": {seed, canary, T (the chars/4 estimate), T_source, trace_chars, fixture_id,
              effort, max_tokens, budget_usd, versions, runs (count), run_ids},
      "thresholds": {consume_ratio, opaque_min, lane_attempts},
      "variants": {dialect: [variant, ...]},          # text variants, "none" first
      "no_text_variants": {dialect: reason},          # e.g. anthropic
      "spent_usd", "calls", "budget_stops": [record, ...],
      "rows": [row, ...],
    }
    row = {
      "route", "model", "dialect", "lane",
      "T", "T_source" ("chars/4" | "count-endpoint"), "T_note" (why not counted, or None),
      "text": {variant: {"verdict", "in_loop": pos, "cross_turn": pos}},
      "opaque": {"replay" | "replay+all_turns": {"verdict", "in_loop": opos, "cross_turn": opos}},
      "turn1": {"effort", "response_id", "lane", "tool_calls", "carriers": [..]} | None,
                # this lane's turn 1 (the one its opaque cells replay)
      "wording": {position: "probe" | "neutral"}, "params_fix": [note, ...],
      "notes": [str, ...], "errors": [{"step", "variant", "position", "status", "error"}],
      "calls", "cost_usd",
    }
    pos  = {"outcome", "delta", "input", "baseline_input", "ratio", "canary", "wording",
            "status", "error"}
    opos = {"outcome", "delta", "verbatim_input", "stripped_input", "stand_in_input",
            "canary", "wording", "errors": {mode: {"status", "error"}}}
    # an opaque position compares verbatim and stripped answers that both landed on this
    # lane, replaying this lane's turn 1 (records carry ``t1_lane``)

Outcomes and verdicts are defined in :mod:`reasonwire.eval.verdict`.
"""

from __future__ import annotations

import gc
import os
import re
import time
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from reasonwire.errors import ConfigError
from reasonwire.eval.fixture import POSITIONS, canary_hit
from reasonwire.eval.records import CALLS, RUNS, read_jsonl
from reasonwire.eval.variants import BASELINE, NO_TEXT_VARIANTS_REASON, TEXT_VARIANTS
from reasonwire.eval.verdict import Thresholds, combine

SCHEMA = "reasonwire.eval.matrix/1"
_CANARY = re.compile(r"The verification word for this task is ([A-Za-z]+)\.")

Rec = dict[str, Any]


def _err(rec: Rec) -> dict[str, Any]:
    return {"status": rec.get("status"), "error": rec.get("error")}


def _text_cells(
    recs: list[Rec], lane: str, canary: str, T: int, th: Thresholds, variants: Iterable[str]
) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    out: dict[str, Any] = {}
    wording: dict[str, str] = {}
    errors: list[dict[str, Any]] = []
    per_pos: dict[str, dict[str, Any]] = {}
    for position in POSITIONS:
        at = [r for r in recs if r.get("position") == position]
        bases = [r for r in at if r.get("variant") == BASELINE]
        ok_bases = [r for r in bases if r.get("ok") and r.get("lane") == lane]
        cells: dict[str, Any] = {}
        if not ok_bases:
            # an answer on another lane says nothing of this one: only a failure is reported
            failed = [r for r in bases if not r.get("ok")]
            last = failed[-1] if failed else None
            for v in variants:
                cells[v] = {
                    "outcome": "baseline-failed" if last else "missing",
                    **(_err(last) if last else {"status": None, "error": None}),
                    "wording": last.get("wording") if last else None,
                }
            if last:
                errors.append({"step": "text", "variant": BASELINE, "position": position,
                               **_err(last)})  # fmt: skip
            per_pos[position] = cells
            continue
        base = ok_bases[-1]
        gen = (base.get("wording"), base.get("params_sig"))
        wording[position] = str(base.get("wording"))
        by_variant: dict[Any, list[Rec]] = defaultdict(list)
        for r in at:
            if (r.get("wording"), r.get("params_sig")) == gen:
                by_variant[r.get("variant")].append(r)
        for v in variants:
            mine = by_variant.get(v, [])
            oks = [r for r in mine if r.get("ok") and r.get("lane") == lane]
            cell: dict[str, Any] = {"wording": gen[0], "baseline_input": base.get("billed_input")}
            if v == BASELINE:
                oks = [base]
            if oks:
                r = oks[0]
                delta = int(r["billed_input"]) - int(base["billed_input"])
                cell.update(
                    outcome=th.text_outcome(delta, T) if v != BASELINE else "baseline",
                    delta=delta,
                    input=r.get("billed_input"),
                    ratio=round(delta / T, 3) if T else None,
                    canary=canary_hit(str(r.get("reply") or ""), canary),
                    status=r.get("status"),
                    error=None,
                )
            else:
                failed = [r for r in mine if not r.get("ok") and r.get("lane") in (None, lane)]
                if failed:
                    f = failed[-1]
                    kind = "rejected" if f.get("error_kind") == "provider" else "missing"
                    cell.update(outcome=kind, delta=None, canary=None, **_err(f))
                    errors.append({"step": "text", "variant": v, "position": position, **_err(f)})
                else:
                    cell.update(outcome="missing", delta=None, canary=None, status=None, error=None)
            cells[v] = cell
        per_pos[position] = cells
    for v in variants:
        entry: dict[str, Any] = {p: per_pos[p][v] for p in POSITIONS}
        if v == BASELINE:
            entry["verdict"] = "baseline"
        else:
            entry["verdict"] = combine(entry["in_loop"]["outcome"], entry["cross_turn"]["outcome"])
        out[v] = entry
    return out, wording, errors


def _pick(at: list[Rec], lane: str) -> tuple[Rec | None, dict[str, Any] | None]:
    """One mode's record on ``lane``: the answer that landed there, else the last error (an
    error has no lane), else (the last off-lane answer, why it does not count)."""
    on = [r for r in at if r.get("ok") and r.get("lane") == lane]
    if on:
        return on[-1], None
    failed = [r for r in at if not r.get("ok")]
    if failed:
        return failed[-1], None
    if at:
        n = max(int(r.get("attempt") or 0) for r in at) + 1
        return None, {"status": None, "error": f"did not land on lane {lane} in {n} attempt(s)"}
    return None, None


def _opaque_cells(
    recs: list[Rec], lane: str, th: Thresholds, word: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The opaque entries of ``lane``: turn-2 records replaying a turn 1 of this lane (their
    ``t1_lane``; records written before it existed fall back to their own lane), each mode's
    answer taken on this lane only, so verbatim and stripped compare one upstream."""
    out: dict[str, Any] = {}
    errors: list[dict[str, Any]] = []
    mine = [
        r
        for r in recs
        if r.get("position") != "turn1" and (r.get("t1_lane") or r.get("lane")) in (None, lane)
    ]
    extras = sorted({str(r.get("extra") or "") for r in mine})
    for extra in extras:
        name = "replay" + (f"+{extra}" if extra else "")
        entry: dict[str, Any] = {}
        for position in POSITIONS:
            at = [
                r for r in mine if r.get("position") == position and (r.get("extra") or "") == extra
            ]
            if not at:
                continue
            wording = at[-1].get("wording")  # a neutral-wording rerun comes after the probe's
            at = [r for r in at if r.get("wording") == wording]
            modes: dict[str, Rec] = {}
            off: dict[str, dict[str, Any]] = {}
            for mode in dict.fromkeys(str(r.get("variant")) for r in at):
                rec, why = _pick([r for r in at if r.get("variant") == mode], lane)
                if rec is not None:
                    modes[mode] = rec
                elif why is not None:
                    off[mode] = why
            v, s, si = modes.get("verbatim"), modes.get("stripped"), modes.get("stand_in")
            opos: dict[str, Any] = {
                "verbatim_input": v.get("billed_input") if v else None,
                "stripped_input": s.get("billed_input") if s else None,
                "stand_in_input": si.get("billed_input") if si else None,
                "wording": wording,
                "errors": {**{m: _err(r) for m, r in modes.items() if not r.get("ok")}, **off},
                "delta": None,
                "canary": None,
            }
            base_ok = (s and s.get("ok")) or (si and si.get("ok"))
            if v is None or (not base_ok and ("stripped" in off or "stand_in" in off)):
                opos["outcome"] = "missing"
            elif not v.get("ok"):
                # an extra pair refused whole (e.g. reasoning.context) is a result: rejected
                refused = bool(extra) and v.get("error_kind") == "provider"
                opos["outcome"] = "rejected" if base_ok or refused else "baseline-failed"
            else:
                base = s if s and s.get("ok") else si if si and si.get("ok") else None
                if word:
                    opos["canary"] = canary_hit(str(v.get("reply") or ""), word)
                if base is None:
                    opos["outcome"] = "required"
                else:
                    delta = int(v["billed_input"]) - int(base["billed_input"])
                    opos["delta"] = delta
                    opos["outcome"] = th.opaque_outcome(delta)
            for m, e in opos["errors"].items():
                errors.append({"step": "opaque", "variant": m, "position": position, **e})
            entry[position] = opos
        if all(p in entry for p in POSITIONS):
            entry["verdict"] = combine(entry["in_loop"]["outcome"], entry["cross_turn"]["outcome"])
            out[name] = entry
    return out, errors


_UNUSED = ("raw", "usage", "error_body", "key", "elapsed_s", "t", "T_source", "cost_estimate")
"""Call-record keys the matrix never reads: dropped as records are loaded (memory)."""


@dataclass(frozen=True)
class _Context:
    """What row building needs besides the call records (all from ``runs.jsonl``)."""

    fid: Any
    dialects: dict[tuple[str, str], str]
    notes: dict[tuple[str, str], list[str]]
    t_of: dict[tuple[str, str], Rec]
    T: int
    canary: str
    th: Thresholds
    lane_defaults: dict[str, str]
    want_direct: frozenset[str]


@dataclass
class _Part:
    """One shard's result: rows of its (route, model) keys, and what every shard counts."""

    rows: dict[tuple[str, str], list[Rec]]
    discovered: list[tuple[tuple[str, str], str]]
    spent: float
    ncalls: int


_SHARD_MIN_BYTES = 64 << 20
"""Below this a calls file is read in one process: forking costs more than it saves."""


def _shards(calls: Path) -> int:
    """Two processes on a large file where fork exists (the report bar: 1M records < 20 s)."""
    try:
        big = calls.stat().st_size >= _SHARD_MIN_BYTES
    except OSError:
        return 1
    return min(2, os.cpu_count() or 1) if big and hasattr(os, "fork") else 1


def _shard_of(k: tuple[str, str], shards: int) -> int:
    return zlib.crc32(f"{k[0]}\0{k[1]}".encode()) % shards if shards > 1 else 0


def _scan(calls: Path, ctx: _Context, shard: int, shards: int) -> _Part:
    """Read every call record; keep (slimmed) only those of this shard's keys; build their
    rows. Each shard parses the whole file, but keeping records (memory) and building rows
    (the larger costs) is split, so two shards run in about half the time of one."""
    groups: dict[tuple[str, str], list[Rec]] = defaultdict(list)
    discovered: list[tuple[tuple[str, str], str]] = []
    seen: set[tuple[str, str]] = set(ctx.dialects)
    mine: dict[tuple[str, str], bool] = {}
    spent = 0.0
    ncalls = 0
    fid = ctx.fid
    for rec in read_jsonl(calls):
        if rec.get("type") != "call" or rec.get("fixture_id") != fid:
            continue
        k = (str(rec.get("route")), str(rec.get("model")))
        if k not in seen:
            seen.add(k)
            discovered.append((k, str(rec.get("dialect"))))
        keep = mine.get(k)
        if keep is None:
            keep = mine[k] = _shard_of(k, shards) == shard
        if not keep:
            continue
        for unused in _UNUSED:
            rec.pop(unused, None)
        if rec.get("position") != "turn1":
            rec.pop("carriers", None)
        groups[k].append(rec)
        spent += float(rec.get("cost_usd") or 0.0)
        ncalls += 1
    dialects = dict(ctx.dialects)
    dialects.update(discovered)
    rows = {k: _key_rows(k, dialects[k], recs, ctx) for k, recs in groups.items()}
    return _Part(rows, discovered, spent, ncalls)


def _key_rows(k: tuple[str, str], dialect: str, recs: list[Rec], ctx: _Context) -> list[Rec]:
    t_rec = ctx.t_of.get(k) or {}
    t_row = (int(t_rec.get("T") or ctx.T), str(t_rec.get("T_source") or "chars/4"),
             t_rec.get("T_note"))  # fmt: skip
    return _rows(k, dialect, recs, ctx.notes.get(k, []), t_row, ctx.canary, ctx.th,
                 ctx.lane_defaults.get(k[0], "direct"), k[1] in ctx.want_direct)  # fmt: skip


def _scan_sharded(calls: Path, ctx: _Context, shards: int) -> list[_Part]:
    """Shard 0 in this process, the others in forked children (their rows come back
    pickled; records never cross a process boundary)."""
    if shards == 1:
        return [_scan(calls, ctx, 0, 1)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=shards - 1, mp_context=fork) as pool:
        others = [pool.submit(_scan, calls, ctx, i, shards) for i in range(1, shards)]
        first = _scan(calls, ctx, 0, shards)
        return [first, *(f.result() for f in others)]


def build_matrix(out_dir: str | Path) -> dict[str, Any]:
    """The matrix dict of the records under ``out_dir`` (schema in the module docstring).

    The cyclic GC is paused while the records are loaded: they are plain acyclic dicts, and
    with it running, a million of them trigger full collections that cost several times the
    JSON parsing (the report bar is 1,000,000 records in under 20 s).
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build_matrix(out_dir)
    finally:
        if paused:
            gc.enable()


def _build_matrix(out_dir: str | Path) -> dict[str, Any]:
    out = Path(out_dir).expanduser()
    runs = list(read_jsonl(out / RUNS))
    starts = [r for r in runs if r.get("type") == "run_start"]
    if not starts:
        raise ConfigError(f"no run records under {out} (expected {RUNS}); run `eval run` first")
    last = starts[-1]
    fid = last.get("fixture_id")
    mine = [r for r in starts if r.get("fixture_id") == fid]
    th_raw = last.get("thresholds") or {}
    th = Thresholds(
        consume_ratio=float(th_raw.get("consume_ratio", 0.5)),
        opaque_min=int(th_raw.get("opaque_min", 25)),
    )
    T = int(last.get("T") or 1)
    canary = str(last.get("canary") or "")
    want_direct: set[str] = set()
    lane_defaults: dict[str, str] = {}
    dialects: dict[tuple[str, str], str] = {}
    order: list[tuple[str, str]] = []
    for s in mine:
        want_direct.update(s.get("want_direct") or [])
        lane_defaults.update(s.get("lane_defaults") or {})
        for t in s.get("targets") or []:
            k = (str(t["route"]), str(t["model"]))
            if k not in dialects:
                order.append(k)
            dialects[k] = str(t["dialect"])
    notes: dict[tuple[str, str], list[str]] = defaultdict(list)
    t_of: dict[tuple[str, str], Rec] = {}
    for r in runs:
        if r.get("type") == "T" and r.get("fixture_id") == fid:
            t_of[(str(r.get("route")), str(r.get("model")))] = r  # the last measurement wins
    for r in runs:
        if r.get("type") == "note" and r.get("fixture_id") == fid:
            msg = f"{r.get('step')}: {r.get('reason')}"
            k = (str(r.get("route")), str(r.get("model")))
            if msg not in notes[k]:
                notes[k].append(msg)
    ctx = _Context(fid, dict(dialects), dict(notes), t_of, T, canary, th, lane_defaults,
                   frozenset(want_direct))  # fmt: skip
    calls = out / CALLS
    parts = _scan_sharded(calls, ctx, _shards(calls))
    spent = sum(part.spent for part in parts)
    ncalls = sum(part.ncalls for part in parts)
    for k, dialect in parts[0].discovered:  # every shard sees every key, in file order
        if k not in dialects:
            order.append(k)
            dialects[k] = dialect
    by_key: dict[tuple[str, str], list[Rec]] = {}
    for part in parts:
        by_key.update(part.rows)
    for k in order:  # targets without a single record still get their (unmeasured) rows
        if k not in by_key:
            by_key[k] = _key_rows(k, dialects[k], [], ctx)
    rows = [row for k in order for row in by_key[k]]
    return {
        "schema": SCHEMA,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "out": str(out),
        "run": {
            "seed": last.get("seed"),
            "canary": canary,
            "T": T,
            "T_source": "chars/4",
            "trace_chars": last.get("trace_chars"),
            "fixture_id": fid,
            "effort": last.get("effort"),
            "max_tokens": last.get("max_tokens"),
            "budget_usd": last.get("budget_usd"),
            "versions": last.get("versions"),
            "runs": len(mine),
            "run_ids": [s.get("run_id") for s in mine],
        },
        "thresholds": {
            "consume_ratio": th.consume_ratio,
            "opaque_min": th.opaque_min,
            "lane_attempts": th_raw.get("lane_attempts"),
        },
        "variants": {d: list(v) for d, v in TEXT_VARIANTS.items() if v},
        "no_text_variants": dict(NO_TEXT_VARIANTS_REASON),
        "spent_usd": round(spent, 8),
        "calls": ncalls,
        "budget_stops": [r for r in runs if r.get("type") == "budget_stop"],
        "rows": rows,
    }


def _rows(
    k: tuple[str, str],
    dialect: str,
    recs: list[Rec],
    notes: list[str],
    t_row: tuple[int, str, Any],
    canary: str,
    th: Thresholds,
    default_lane: str,
    want_direct: bool,
) -> list[dict[str, Any]]:
    T, T_source, T_note = t_row
    lanes = sorted({str(r["lane"]) for r in recs if r.get("ok") and r.get("lane")})
    multi = bool(lanes) and (len(lanes) > 1 or lanes[0] != default_lane)
    if want_direct and default_lane not in lanes:
        lanes.append(default_lane)
    if not lanes:
        lanes = [default_lane]
    text_recs = [r for r in recs if r.get("step") == "text"]
    op_recs = [r for r in recs if r.get("step") == "opaque"]
    turn1s = [
        r
        for r in op_recs
        if r.get("position") == "turn1"
        and r.get("ok")
        and r.get("tool_calls")
        and r.get("carriers")
    ]
    variants = list(TEXT_VARIANTS.get(dialect, {}))
    fixes = sorted({n for r in recs for n in (r.get("fix_notes") or [])})
    rows = []
    for lane in lanes:
        # turn 1 of this lane: its carriers are what this lane's opaque cells replay
        t1 = next((r for r in reversed(turn1s) if r.get("lane") == lane), None)
        word = None
        if t1 is not None:
            m = _CANARY.search(str(t1.get("reasoning_excerpt") or ""))
            word = m.group(1) if m else None
        text, wording, errs = _text_cells(text_recs, lane, canary, T, th, variants)
        opaque, oerrs = _opaque_cells(op_recs, lane, th, word)
        if want_direct and lane != default_lane and (multi or default_lane not in lanes):
            for entry in (*text.values(), *opaque.values()):
                entry["verdict"] = "direct-lane-not-reached"
        if (
            want_direct
            and lane == default_lane
            and not any(r.get("lane") == lane and r.get("ok") for r in recs)
        ):
            for entry in (*text.values(), *opaque.values()):
                entry["verdict"] = "direct-lane-not-reached"
        rows.append(
            {
                "route": k[0],
                "model": k[1],
                "dialect": dialect,
                "lane": lane,
                "T": T,
                "T_source": T_source,
                "T_note": T_note,
                "text": text,
                "opaque": opaque,
                "turn1": None
                if t1 is None
                else {
                    "effort": t1.get("effort"),
                    "response_id": t1.get("response_id"),
                    "lane": t1.get("lane"),
                    "tool_calls": t1.get("tool_calls"),
                    "carriers": t1.get("carriers"),
                },
                "wording": wording,
                "params_fix": fixes,
                "notes": list(notes),
                "errors": sorted(
                    errs + oerrs,
                    key=lambda e: (e["step"], e["position"], e["variant"], str(e.get("error"))),
                ),
                "calls": len(recs),
                "cost_usd": round(sum(float(r.get("cost_usd") or 0.0) for r in recs), 8),
            }
        )
    return rows


def render_md(matrix: dict[str, Any]) -> str:
    """``matrix.md``: one table per dialect, then the thresholds and run metadata."""
    lines = ["# reasonwire consumption matrix", ""]
    th = matrix["thresholds"]
    run = matrix["run"]
    lines.append(
        f"T = {run['T']} tokens ({run['T_source']}, trace {run['trace_chars']} chars; a row "
        "whose route has a token count endpoint uses its measured T); "
        f"consumed when delta >= {th['consume_ratio']} * T (text) or > {th['opaque_min']} "
        f"tokens (opaque, verbatim vs stripped). Canary word: `{run['canary']}`. Seed "
        f"{run['seed']}, {run['runs']} run(s), {matrix['calls']} calls, "
        f"${matrix['spent_usd']:.4f} spent."
    )
    lines.append("")
    by_dialect: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in matrix["rows"]:
        by_dialect[row["dialect"]].append(row)
    for dialect, rows in by_dialect.items():
        variants = [v for v in matrix["variants"].get(dialect, []) if v != BASELINE]
        extras = sorted({e for r in rows for e in r["opaque"]})
        lines.append(f"## {dialect}")
        if dialect in matrix["no_text_variants"]:
            lines.append(f"Text variants: none ({matrix['no_text_variants'][dialect]}).")
        lines.append("")
        head = ["route", "model", "lane", *variants, *extras, "turn-1 carriers", "notes"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for r in rows:
            cells = [r["route"], r["model"], r["lane"]]
            for v in variants:
                e = r["text"].get(v)
                cells.append(_fmt(e, "delta") if e else "")
            for x in extras:
                e = r["opaque"].get(x)
                cells.append(_fmt(e, "delta") if e else "")
            kinds = sorted({c["kind"] for c in (r["turn1"] or {}).get("carriers") or []})
            cells.append(", ".join(kinds) or "-")
            extra = list(r["notes"]) + list(r["params_fix"])
            if r.get("T_source") == "count-endpoint":
                extra.insert(0, f"T = {r['T']} (count endpoint)")
            if r["errors"]:
                extra.append(f"{len(r['errors'])} error(s)")
            cells.append("; ".join(extra).replace("|", "/")[:200])
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
        lines.append("")
    if matrix["budget_stops"]:
        lines.append(f"Budget stop: {len(matrix['budget_stops'])} record(s); cells left empty.")
    return "\n".join(lines) + "\n"


def _fmt(entry: dict[str, Any], key: str) -> str:
    d = [entry[p].get(key) for p in POSITIONS]
    ds = "/".join("-" if x is None else str(x) for x in d)
    return f"{entry['verdict']} ({ds})"


def write_reports(out_dir: str | Path) -> dict[str, Any]:
    """Write ``matrix.json`` and ``matrix.md`` under ``out_dir``; return the matrix."""
    out = Path(out_dir).expanduser()
    matrix = build_matrix(out)
    write_matrix_files(out, matrix)
    return matrix


def write_matrix_files(out: Path, matrix: dict[str, Any]) -> None:
    """``matrix.json`` and ``matrix.md`` for a built matrix."""
    # orjson: the stdlib's indented encoder is pure Python (~8x slower on a large matrix)
    (out / "matrix.json").write_bytes(orjson.dumps(matrix, option=orjson.OPT_INDENT_2) + b"\n")
    (out / "matrix.md").write_text(render_md(matrix))
