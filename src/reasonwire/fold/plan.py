"""``fold plan``: per route and model, what to do with replayed reasoning text, from the
consumption matrix (does the provider read the field?) and the probe ledger (what share of
billed input is re-sent reasoning?).

Decisions:

- ``drop``: every measured text verdict of the pair is ``accepted-ignored`` (the provider
  takes the field and does not read it): send nothing (the text carriers go out empty);
- ``fold``: the field is consumed (``consumes-all-turns``, ``in-loop-only`` or
  ``cross-turn-only`` on some lane) and the ledger's re-sent reasoning text is at least
  ``threshold_pct`` % of billed input (estimate: sent text bytes / 4 per token, as ``probe
  report``; only calls that reported usage count);
- ``keep``: consumed, and cheaper than that;
- ``unknown``: not measured - no text verdict (missing, rejected, failed, incomplete), a
  dialect without a foldable text carrier, or a consumed field without ledger rows.

Which verdicts speak for a pair: the text variants that send a carrier of a kind the model
returned on turn 1 (``turn1.carriers``), else every single-carrier text variant of the
dialect. Ledger rows match a pair when their ``provider`` is the route name (or the host of
the built-in route's base URL) and their ``model`` is the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from reasonwire.errors import ConfigError, UnknownDialect
from reasonwire.probe.ledger import read_rows, row_usage
from reasonwire.probe.report import BYTES_PER_TOKEN
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.model import JSON, JsonObject
from reasonwire.wire.registry import get_dialect

MATRIX_SCHEMA = "reasonwire.eval.matrix/1"
DEFAULT_THRESHOLD_PCT = 10.0
CONSUMED = frozenset({"consumes-all-turns", "in-loop-only", "cross-turn-only"})
IGNORED = frozenset({"accepted-ignored"})

Decision = Literal["drop", "fold", "keep", "unknown"]


@dataclass(frozen=True, slots=True)
class PlanLine:
    """One (route, model): the decision, why, and the ledger figures it rests on."""

    route: str
    model: str
    dialect: str
    decision: Decision
    why: str
    share: float | None = None
    calls: int = 0

    @property
    def key(self) -> str:
        """The ``route/model`` entry the settings use for this pair."""
        return f"{self.route}/{self.model}"


def read_matrix(path: str | Path) -> JsonObject:
    """The harness's ``matrix.json``; ConfigError (one line) when missing or not one."""
    p = Path(path).expanduser()
    try:
        data: JSON = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read matrix {p}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"matrix {p} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != MATRIX_SCHEMA:
        raise ConfigError(f"matrix {p}: expected a {MATRIX_SCHEMA} document (eval report)")
    rows = data.get("rows")
    if not isinstance(rows, list):
        raise ConfigError(f"matrix {p}: 'rows' is not a list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ConfigError(f"matrix {p}: rows[{i}] is not an object")
        if not all(isinstance(row.get(k), str) for k in ("route", "model", "dialect")):
            raise ConfigError(f"matrix {p}: rows[{i}] needs string 'route', 'model', 'dialect'")
    return data


def read_ledger(path: str | Path) -> list[JsonObject]:
    """Every row of the probe ledger directory ``path`` (archives too); ConfigError when
    the directory does not exist."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise ConfigError(f"no probe ledger directory at {p}")
    return read_rows(p).rows


def _variants_for(row: JsonObject) -> list[str]:
    """The text variants whose verdicts speak for this row's model (see module doc)."""
    try:
        dialect = get_dialect(row["dialect"])
    except UnknownDialect:
        return []
    single = {name: specs[0][0] for name, specs in dialect.variants.text.items() if len(specs) == 1}
    turn1 = row.get("turn1")
    carriers = turn1.get("carriers") if isinstance(turn1, dict) else None
    returned = {
        str(c.get("kind")) for c in carriers or () if isinstance(c, dict) and not c.get("opaque")
    }
    chosen = [name for name, kind in single.items() if kind in returned]
    return chosen or list(single)


def _consumption(rows: list[JsonObject]) -> tuple[str, str]:
    """('consumed' | 'ignored' | 'unknown', the verdicts seen) over a pair's lane rows."""
    seen: list[str] = []
    for row in rows:
        text = row.get("text")
        if not isinstance(text, dict):
            continue
        for variant in _variants_for(row):
            entry = text.get(variant)
            if isinstance(entry, dict) and isinstance(entry.get("verdict"), str):
                seen.append(f"{variant}={entry['verdict']}")
    verdicts = [s.partition("=")[2] for s in seen]
    shown = ", ".join(dict.fromkeys(seen)) or "no text verdict"
    if any(v in CONSUMED for v in verdicts):
        return "consumed", shown
    if verdicts and all(v in IGNORED for v in verdicts):
        return "ignored", shown
    return "unknown", shown


def _route_hosts(route: str) -> set[str]:
    from reasonwire.routes import BUILTIN_ROUTES

    names = {route}
    found = BUILTIN_ROUTES.get(route)
    if found is not None and found.base_url:
        names.add(urlsplit(found.base_url).netloc)
    return names


def _share(ledger: Iterable[JsonObject], route: str, model: str) -> tuple[float | None, int]:
    """Estimated re-sent reasoning text share of billed input, over the pair's ledger rows
    that reported usage; (None, 0) without any."""
    names = _route_hosts(route)
    billed = 0
    sent = 0
    calls = 0
    for row in ledger:
        if row.get("provider") not in names or row.get("model") != model:
            continue
        usage = row_usage(row)
        if usage is None:
            continue
        calls += 1
        billed += usage.billed_input
        for entry in (row.get("sentReasoning") or {}).values():
            if isinstance(entry, dict) and not entry.get("opaque"):
                value = entry.get("bytes")
                sent += value if isinstance(value, int) and not isinstance(value, bool) else 0
    if calls == 0 or billed <= 0:
        return None, calls
    return sent / BYTES_PER_TOKEN / billed, calls


def make_plan(
    matrix: JsonObject,
    ledger: list[JsonObject],
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
) -> list[PlanLine]:
    """One :class:`PlanLine` per (route, model) of the matrix, in matrix order."""
    if not 0 <= threshold_pct <= 100:
        raise ConfigError(f"fold plan: threshold must be 0..100 %, not {threshold_pct}")
    pairs: dict[tuple[str, str], list[JsonObject]] = {}
    for row in matrix.get("rows") or ():
        pairs.setdefault((row["route"], row["model"]), []).append(row)
    out: list[PlanLine] = []
    for (route, model), rows in pairs.items():
        dialect = rows[0]["dialect"]
        try:
            foldable = bool(get_dialect(dialect).fold_where)
        except UnknownDialect:
            foldable = False
        if not foldable:
            out.append(PlanLine(route, model, dialect, "unknown",
                                "no foldable text carrier in this dialect"))  # fmt: skip
            continue
        state, verdicts = _consumption(rows)
        if state == "ignored":
            out.append(PlanLine(route, model, dialect, "drop", f"ignored ({verdicts})"))
            continue
        if state == "unknown":
            out.append(PlanLine(route, model, dialect, "unknown", f"not measured ({verdicts})"))
            continue
        share, calls = _share(ledger, route, model)
        if share is None:
            why = f"consumed ({verdicts}); no ledger calls with usage"
            out.append(PlanLine(route, model, dialect, "unknown", why, None, calls))
            continue
        pct = share * 100
        if pct >= threshold_pct:
            why = f"consumed ({verdicts}); re-sent {pct:.1f}% >= {threshold_pct:g}% of billed"
            out.append(PlanLine(route, model, dialect, "fold", why, share, calls))
        else:
            why = f"consumed ({verdicts}); re-sent {pct:.1f}% < {threshold_pct:g}% of billed"
            out.append(PlanLine(route, model, dialect, "keep", why, share, calls))
    return out


def plan_settings(lines: list[PlanLine], base: FoldSettings | None = None) -> FoldSettings:
    """The settings that implement ``lines``: fold the ``fold`` pairs, drop the ``drop``
    pairs, nothing anywhere else (``providers`` is the explicit list, possibly empty)."""
    base = base or FoldSettings()
    fold = frozenset(line.key for line in lines if line.decision == "fold")
    drop = frozenset(line.key for line in lines if line.decision == "drop")
    return FoldSettings(
        enabled=bool(fold or drop), floor_chars=base.floor_chars, head_chars=base.head_chars,
        tail_chars=base.tail_chars, providers=fold, drop=drop,
    )  # fmt: skip


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in sorted(values)) + "]"


def settings_toml(settings: FoldSettings, header: str = "") -> str:
    """``settings`` as a ``[fold]`` TOML table (read back by ``load_fold_settings``)."""
    lines = [f"# {ln}" for ln in header.splitlines()]
    lines += [
        "[fold]",
        f"enabled = {'true' if settings.enabled else 'false'}",
        f"floor-chars = {settings.floor_chars}",
        f"head-chars = {settings.head_chars}",
        f"tail-chars = {settings.tail_chars}",
    ]
    if settings.providers is not None:
        lines.append(f"providers = {_toml_list(settings.providers)}")
    lines.append(f"drop = {_toml_list(settings.drop)}")
    return "\n".join(lines) + "\n"


__all__ = [
    "CONSUMED",
    "DEFAULT_THRESHOLD_PCT",
    "IGNORED",
    "MATRIX_SCHEMA",
    "PlanLine",
    "make_plan",
    "plan_settings",
    "read_ledger",
    "read_matrix",
    "settings_toml",
]
