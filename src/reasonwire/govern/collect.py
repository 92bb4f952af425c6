"""Building the method's evidence file (schema 2 of :mod:`.validator`) from a gateway run's
evidence rows, and nothing else: every claim cites the call ids it rests on, every figure is
one the provider reported (``None`` stays ``None``), and whatever the rows cannot show is left
out or stated as it is, so that the validator refuses it instead of the collector inventing it.

What is read from the rows (SQLite or PostgreSQL, the gateway's :class:`EvidenceStore`):

- the subject: the one runtime (exact version) and route the forwarded rows name, with the
  qualification ids they were authorised under; the runtime's source pin and the route's
  mapping id come from the registry;
- one observation per proposed level (by default every level the runtime, route and policy
  have in common): one forwarded call that asked for that level explicitly, with its usage
  units, cost status and latency (the first such call within the latency bound);
- Auto: the forwarded calls that asked for Auto, and what they resolved to;
- resume: the subject conversation with the most forwarded turns; effort constant across
  them; a later turn asking for another effort or intent refused;
- isolation: the largest set of subject conversations in flight at one moment; a forwarded
  call whose task is not its conversation's, or a call id recorded twice, is a crossing;
- negative cases: refusals by reason (:data:`.validator.NEGATIVE_REASONS`), each with no
  upstream call;
- hidden reasoning: the vault's reasoning strings (``--vault-db``) and given markers are
  searched for, raw and JSON-escaped, in the files given per place (transcript, activity,
  logs, artifacts; the evidence rows themselves are an artifact). A place with no file given
  is not checked, and so not claimed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from reasonwire.errors import CollectError
from reasonwire.govern.evidence import EvidenceRow
from reasonwire.govern.levels import LEVELS, rank
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry
from reasonwire.govern.validator import HIDDEN_PLACES, NEGATIVE_CASES, NEGATIVE_REASONS, mapping_id
from reasonwire.wire.model import JSON, JsonObject

MAX_CITED = 20
"""Call ids cited per claim (the first ones; the claim holds for all it counts)."""
MIN_MARKER = 24
"""Hidden-reasoning strings shorter than this are not searched for (type names, ids)."""
CHANGE_REFUSALS = ("effort-changed", "intent-changed")


@dataclass
class CollectOptions:
    deployment_id: str
    runtime_id: str | None = None
    runtime_version: str | None = None
    route_id: str | None = None
    levels: Sequence[str] | None = None
    latency_bound_ms: float = 30_000.0
    hidden_markers: Sequence[str] = ()
    places: dict[str, list[Path]] = field(default_factory=dict)
    limitations: Sequence[str] = ()


def _cite(rows: Iterable[EvidenceRow]) -> list[str]:
    return [r.call_id for r in rows][:MAX_CITED]


def _subject_rows(rows: list[EvidenceRow], opts: CollectOptions) -> list[EvidenceRow]:
    forwarded = [r for r in rows if r.outcome == "forwarded"]
    keys = Counter((r.runtime_id, r.runtime_version, r.route_id) for r in forwarded)
    chosen = [
        k
        for k in keys
        if (opts.runtime_id is None or k[0] == opts.runtime_id)
        and (opts.runtime_version is None or k[1] == opts.runtime_version)
        and (opts.route_id is None or k[2] == opts.route_id)
    ]
    if not chosen:
        raise CollectError("no forwarded call in the evidence rows matches the subject")
    if len(chosen) > 1:
        found = "; ".join(f"{a} {b} on {c}" for a, b, c in sorted(chosen, key=str))
        raise CollectError(
            f"the rows name several subjects ({found}): choose one with --runtime, "
            "--runtime-version and --route"
        )
    key = chosen[0]
    return [r for r in forwarded if (r.runtime_id, r.runtime_version, r.route_id) == key]


def _usage(row: EvidenceRow) -> dict[str, int | None] | None:
    if row.usage_status != "reported":
        return None
    return {
        "input_uncached_tokens": row.input_uncached,
        "cache_read_tokens": row.cache_read,
        "cache_write_tokens": row.cache_write,
        "output_tokens": row.output_tokens,
        "reasoning_tokens": row.reasoning_tokens,
    }


def _observation(row: EvidenceRow, level: str) -> JsonObject:
    return {
        "level": level,
        "requested": row.requested,
        "resolved": row.resolved,
        "evidence_call_ids": [row.call_id],
        "stream": bool(row.stream),
        "usage_status": row.usage_status,
        "usage": _usage(row),
        "cost_status": row.cost_status,
        "cost_usd": row.cost_usd,
        "latency": {"total_ms": row.latency_ms, "first_byte_ms": row.ttfb_ms},
    }


def _by_conversation(rows: Iterable[EvidenceRow]) -> dict[str, list[EvidenceRow]]:
    out: dict[str, list[EvidenceRow]] = {}
    for r in rows:
        if r.conversation_id:
            out.setdefault(r.conversation_id, []).append(r)
    return out


def _resume(all_rows: list[EvidenceRow], subject: list[EvidenceRow]) -> JsonObject:
    convs = _by_conversation(subject)
    everything = _by_conversation(all_rows)

    def refused_change(conv: str) -> list[EvidenceRow]:
        return [
            r
            for r in everything.get(conv, [])
            if r.outcome == "refused" and r.reason in CHANGE_REFUSALS
        ]

    if not convs:
        return {"turns": 0, "effort_constant": False, "changed_effort_refused": False}
    best = max(convs, key=lambda c: (bool(refused_change(c)), len(convs[c])))
    turns = convs[best]
    refusals = refused_change(best)
    return {
        "turns": len(turns),
        "effort_constant": len({r.resolved for r in turns}) == 1,
        "changed_effort_refused": bool(refusals),
        "evidence_call_ids": _cite([*turns, *refusals]),
    }


def _isolation(all_rows: list[EvidenceRow], subject: list[EvidenceRow]) -> JsonObject:
    """The most subject conversations in flight at one moment (forwarded calls as intervals
    from their start to start + latency), and crossings among them."""
    events: list[tuple[float, int, str]] = []
    for r in subject:
        if r.conversation_id and r.latency_ms is not None:
            events.append((r.ts, 1, r.conversation_id))
            events.append((r.ts + r.latency_ms / 1000.0, -1, r.conversation_id))
    events.sort(key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    live: Counter[str] = Counter()
    best: set[str] = set()
    for _, delta, conv in events:
        live[conv] += delta
        if live[conv] <= 0:
            del live[conv]
        if len(live) > len(best):
            best = set(live)
    group = [r for r in subject if r.conversation_id in best]
    crossed_bindings = 0
    for rows in _by_conversation(group).values():
        task = rows[0].task_id
        crossed_bindings += sum(1 for r in rows if r.task_id != task)
    ids = Counter(r.call_id for r in all_rows)
    crossed_rows = sum(n - 1 for n in ids.values() if n > 1)
    return {
        "conversations": len(best),
        "crossed_bindings": crossed_bindings,
        "crossed_evidence_rows": crossed_rows,
        "evidence_call_ids": _cite(group),
    }


def _negative_cases(rows: list[EvidenceRow]) -> JsonObject:
    out: JsonObject = {}
    for case in NEGATIVE_CASES:
        reasons = NEGATIVE_REASONS[case]
        hits = [
            r
            for r in rows
            if r.outcome == "refused" and r.reason in reasons and r.status_code is None
        ]
        if hits:
            out[case] = {
                "outcome": "failed-closed",
                "reason": hits[0].reason,
                "evidence_call_ids": _cite(hits),
            }
    return out


def strings_in(value: JSON, min_length: int = MIN_MARKER) -> Iterator[str]:
    """Every string of at least ``min_length`` characters in a JSON value (keys excluded)."""
    if isinstance(value, str):
        if len(value) >= min_length:
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_in(v, min_length)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v, min_length)


def _files(paths: Iterable[Path]) -> Iterator[Path]:
    for p in paths:
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.is_file())
        else:
            yield p


def _needles(markers: Iterable[str]) -> list[bytes]:
    out: set[bytes] = set()
    for m in markers:
        out.add(m.encode("utf-8"))
        out.add(orjson.dumps(m)[1:-1])  # as it appears inside a JSON string
    return sorted(out, key=len)


def _present(data: bytes, needles: list[bytes]) -> bool:
    return any(n in data for n in needles)


def hidden_reasoning(
    markers: Sequence[str], places: dict[str, list[Path]], rows: list[EvidenceRow]
) -> dict[str, str]:
    """``absent`` / ``present`` for each place that was given a file; the evidence rows are
    always part of ``artifacts``. Nothing is claimed without a marker to search for. OSError
    when a given file cannot be read."""
    needles = _needles(markers)
    if not needles:
        return {}
    out: dict[str, str] = {}
    for place in HIDDEN_PLACES:
        given = places.get(place, [])
        if not given and place != "artifacts":
            continue
        blobs: Iterator[bytes] = (f.read_bytes() for f in _files(given))
        if place == "artifacts":
            rows_text = orjson.dumps([r.__dict__ for r in rows])
            blobs = iter([rows_text, *blobs])
        out[place] = "present" if any(_present(b, needles) for b in blobs) else "absent"
    return out


def collect(
    rows: list[EvidenceRow],
    registry: Registry,
    policy: OrgPolicy,
    *,
    head: str,
    options: CollectOptions,
) -> JsonObject:
    """The evidence document (schema 2) for the rows' one subject. Raises
    :class:`CollectError` when there is no subject, or the registry does not know it."""
    subject = _subject_rows(rows, options)
    rt_id, rt_version, route_id = (
        subject[0].runtime_id,
        subject[0].runtime_version,
        subject[0].route_id,
    )
    adapter = next(
        (a for a in registry.adapters if a.runtime_id == rt_id and a.version == rt_version),
        None,
    )
    route = registry.routes.get(route_id or "")
    if adapter is None or route is None:
        raise CollectError(f"the registry has no record of {rt_id} {rt_version} on {route_id}")
    if adapter.pin is None:
        raise CollectError(
            f"{rt_id} {rt_version} has no pin in the registry (version, source tag and commit, "
            "artifact checksums): evidence names exactly what ran"
        )
    quals_rt = {r.runtime_qualification for r in subject}
    quals_route = {r.route_qualification for r in subject}
    if len(quals_rt) != 1 or len(quals_route) != 1:
        raise CollectError("the subject's rows disagree on their qualification ids")
    if options.levels is not None:
        proposed = list(options.levels)
    else:
        proposed = [
            lv
            for lv in LEVELS
            if lv in adapter.levels
            and lv in route.levels
            and lv in policy.allowed
            and rank(lv) <= rank(policy.maximum)
        ]
    observations = []
    bound = options.latency_bound_ms
    for lv in proposed:
        explicit = [r for r in subject if r.requested == lv and r.resolved == lv]
        within = [r for r in explicit if r.latency_ms is not None and r.latency_ms <= bound]
        picks = within or explicit
        if picks:
            observations.append(_observation(picks[0], lv))
    auto_rows = [r for r in subject if r.requested == "auto"]
    resolved = sorted({str(r.resolved) for r in auto_rows}, key=lambda lv: lv != policy.maximum)
    doc: JsonObject = {
        "schema_version": 2,
        "source_commit": head,
        "subject": {
            "runtime_id": rt_id,
            "runtime_version": rt_version,
            "runtime_qualification_id": quals_rt.pop(),
            "route_id": route_id,
            "route_qualification_id": quals_route.pop(),
            "runtime_source_tag": adapter.pin.source_tag,
            "runtime_source_commit": adapter.pin.source_commit,
            "deployment_id": options.deployment_id,
            "mapping_id": mapping_id(route),
        },
        "proposed_levels": proposed,
        "latency_bound_ms": bound,
        "observations": observations,
    }
    if auto_rows:
        # Any Auto call that did not reach the maximum is the one reported.
        doc["auto_resolution"] = {
            "org_maximum": policy.maximum,
            "resolved": resolved[-1],
            "evidence_call_ids": _cite(auto_rows),
        }
    doc["resume"] = _resume(rows, subject)
    doc["isolation"] = _isolation(rows, subject)
    doc["negative_cases"] = _negative_cases(rows)
    doc["hidden_reasoning"] = hidden_reasoning(options.hidden_markers, options.places, rows)
    doc["limitations"] = [*options.limitations, *_limitations(doc, options, len(rows))]
    return doc


def _limitations(doc: JsonObject, opts: CollectOptions, n_rows: int) -> list[str]:
    out = [
        f"collected from {n_rows} evidence rows of deployment {opts.deployment_id}; each "
        "observation is one call, and usage is what the provider reported (the gateway "
        "counts no tokens)",
    ]
    unavailable = [o["level"] for o in doc["observations"] if o["usage_status"] != "reported"]
    if unavailable:
        out.append(f"no provider-reported usage at {', '.join(unavailable)}")
    costs = Counter(o["cost_status"] for o in doc["observations"])
    if costs:
        out.append("cost: " + ", ".join(f"{n} {status}" for status, n in sorted(costs.items())))
    checked = sorted(doc["hidden_reasoning"])
    if checked:
        out.append(
            f"hidden reasoning searched for {len(set(opts.hidden_markers))} known strings "
            f"(at least {MIN_MARKER} characters) in the given {', '.join(checked)} only"
        )
    return out
